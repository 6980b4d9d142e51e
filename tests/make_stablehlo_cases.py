"""Re-make the StableHLO texts of the JAX conformance cases in ``tests/data/stablehlo``.

For every case of the real-XLA conformance corpus (``tests/conformance.py`` finds it) whose
``case.json`` says ``"source": "jax"``, the stored Python source is executed (its ``@jcase``
decorator only records the function and its options here), the function is lowered by JAX
0.10.2 with the case's own inputs (``data.npz``), and ``jax.jit(f).lower(*args).as_text()``
(StableHLO, what JAX exchanges) is written to ``conformance/<case>.mlir``. The expected
outputs stay the corpus's ``data.npz`` (XLA's own results).

The further round-trip functions of ``tests/stablehlo_functions.py`` are written to
``functions/<name>.mlir`` with ``functions/<name>.npz`` (inputs ``arg0..`` and JAX's outputs
``out0..``) and ``functions/<name>.hlo.pb`` (the serialized HloModuleProto JAX writes,
``compiler_ir('hlo').as_serialized_hlo_module_proto()``), so the tests also run where JAX
is absent. ``spmd/`` holds ``shard_map``/``pmap`` programs over 4 devices. Usage::

    python tests/make_stablehlo_cases.py [output_dir]
"""
from __future__ import annotations

import re
import sys
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conformance import all_cases  # noqa: E402

DEFAULT_OUT = HERE / "data" / "stablehlo"


def case_function(info: dict):
    """``(function, donate_argnums)`` of one JAX corpus case, from its stored source."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    recorded: dict = {}

    def jcase(category, description, inputs=None, donate=(), **options):
        def record(fn):
            recorded["fn"], recorded["donate"] = fn, tuple(donate)
            return fn
        return record

    namespace = {"jax": jax, "jnp": jnp, "lax": lax, "np": np, "jcase": jcase}
    exec(compile(info["python_source"], f"<case {info['name']}>", "exec"), namespace)
    return recorded["fn"], recorded["donate"]


def case_arguments(case) -> list:
    """The case's inputs with the dtypes of ``entry_params``, regrouped into the function's
    arguments by ``arg_paths`` (``args[0]['W1']``: a pytree of dicts and sequences)."""
    import ast
    import ml_dtypes
    data = np.load(case.path / "data.npz")
    root: dict = {}
    paths = case.info.get("arg_paths") or [f"args[{i}]" for i in
                                           range(len(case.info["entry_params"]))]
    for i, ((dtype, _dims), path) in enumerate(zip(case.info["entry_params"], paths)):
        dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
        keys = [ast.literal_eval(k) for k in re.findall(r"\[([^\]]+)\]", path)]
        node = root
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = np.asarray(data[f"arg{i}"]).astype(dt)

    def rebuild(node):
        if not isinstance(node, dict):
            return node
        if all(isinstance(k, int) for k in node):
            return [rebuild(node[k]) for k in sorted(node)]
        return {k: rebuild(v) for k, v in node.items()}
    return rebuild(root)


def lower_text(fn, args, donate=(), x64: bool = False) -> str:
    """``jax.jit(fn).lower(*args).as_text()`` (x64 enabled for the lowering when asked)."""
    import jax
    was = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", bool(x64))
    try:
        return jax.jit(fn, donate_argnums=donate).lower(*args).as_text()
    finally:
        jax.config.update("jax_enable_x64", was)


def write_conformance(out: Path) -> int:
    folder = out / "conformance"
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for case in all_cases():
        if case.info.get("source") != "jax":
            continue
        fn, donate = case_function(case.info)
        text = lower_text(fn, case_arguments(case), donate, case.info.get("x64", False))
        (folder / f"{case.name}.mlir").write_text(text)
        n += 1
    return n


def write_functions(out: Path) -> int:
    import jax
    from stablehlo_functions import load
    FUNCTIONS = load()
    folder = out / "functions"
    folder.mkdir(parents=True, exist_ok=True)
    for name, (fn, make_args) in FUNCTIONS.items():
        args = make_args(np.random.RandomState(zlib.crc32(name.encode())))
        (folder / f"{name}.mlir").write_text(lower_text(fn, args))
        lowered = jax.jit(fn).lower(*args)           # the HloModuleProto JAX writes
        (folder / f"{name}.hlo.pb").write_bytes(
            lowered.compiler_ir("hlo").as_serialized_hlo_module_proto())
        result = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
        arrays = {f"arg{i}": a for i, a in enumerate(args)}
        arrays.update({f"out{i}": np.asarray(r) for i, r in enumerate(result)})
        np.savez_compressed(folder / f"{name}.npz", **arrays)
    return len(FUNCTIONS)


def write_spmd(out: Path) -> int:
    """``shard_map``/``pmap`` programs over 4 CPU devices (run in a child process: the device
    count must be set before JAX starts) to ``spmd/<name>.mlir``."""
    import os
    import subprocess
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    subprocess.run([sys.executable, __file__, "--spmd-child", str(out / "spmd")], env=env,
                   check=True)
    return len(list((out / "spmd").glob("*.mlir")))


def _spmd_child(folder: Path) -> None:
    import jax
    from jax import lax
    from jax.sharding import Mesh, PartitionSpec as P
    folder.mkdir(parents=True, exist_ok=True)
    mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("a", "b"))
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    programs = {
        "shard_map_psum": jax.jit(jax.shard_map(lambda v: lax.psum(v, "b"), mesh=mesh,
                                                in_specs=P("a", "b"), out_specs=P("a", "b"))),
        "shard_map_gather_permute": jax.jit(jax.shard_map(
            lambda v: lax.all_gather(v, "a", tiled=True)
            + lax.ppermute(v, "b", [(0, 1), (1, 0)]).sum(),
            mesh=mesh, in_specs=P("a", "b"), out_specs=P(None, "b"), check_vma=False)),
    }
    for name, fn in programs.items():
        (folder / f"{name}.mlir").write_text(fn.lower(x).as_text())
    pmapped = jax.pmap(lambda v: lax.psum(v, "i") * v, axis_name="i")
    (folder / "pmap_psum.mlir").write_text(pmapped.lower(np.ones((4, 3), np.float32)).as_text())


def main(argv: list[str]) -> int:
    if argv[:1] == ["--spmd-child"]:
        _spmd_child(Path(argv[1]))
        return 0
    out = Path(argv[0]) if argv else DEFAULT_OUT
    n = write_conformance(out)
    m = write_functions(out)
    k = write_spmd(out)
    print(f"wrote {n} conformance cases, {m} functions and {k} SPMD programs to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
