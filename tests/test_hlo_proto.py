"""HloModuleProto: text -> proto -> text is unchanged; JAX's protos load and run; XLA loads
xlapy's; dumps with --xla_dump_hlo_as_proto; the *_serialized compiler IR stages."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("google.protobuf")

from conformance import all_cases  # noqa: E402
from xlapy.client import compare_outputs, get_backend  # noqa: E402
from xlapy.client.run import flatten_result, prepare_argument  # noqa: E402
from xlapy.errors import HloParseError  # noqa: E402
from xlapy.hlo import parse_module  # noqa: E402
from xlapy.hlo.proto import (module_from_proto_bytes, module_from_proto_text,  # noqa: E402
                             module_to_hlo_proto_bytes, module_to_proto_bytes,
                             module_to_proto_text)

FUNCTIONS = Path(__file__).resolve().parent / "data" / "stablehlo" / "functions"
MODULES = [pytest.param(c.path / f, id=f"{c.name}-{f.split('.')[1]}")
           for c in all_cases() for f in ("module.hlo", "module.optimized.hlo")]


@pytest.mark.parametrize("path", MODULES)
def test_conformance_module_round_trips_unchanged(path):
    text = path.read_text()
    module = parse_module(text)
    expected = module.to_text()
    assert module_from_proto_bytes(module_to_proto_bytes(module)).to_text() == expected
    assert module_from_proto_text(module_to_proto_text(module)).to_text() == expected
    assert parse_module(module_to_hlo_proto_bytes(module)).to_text() == expected


def _run(module, args, backend="interpreter"):
    params = module.entry.parameters
    args = [prepare_argument(np.asarray(a).astype(p.shape.dtype), p.shape, f"argument {i}")
            for i, (a, p) in enumerate(zip(args, params))]
    return flatten_result(get_backend(backend).compile(module).execute(args))


@pytest.mark.parametrize("pb", sorted(FUNCTIONS.glob("*.hlo.pb")), ids=lambda p: p.stem)
def test_jax_written_protos_run_with_jax_outputs(pb):
    data = np.load(str(pb).replace(".hlo.pb", ".npz"))
    args = [data[k] for k in sorted((k for k in data.files if k.startswith("arg")),
                                    key=lambda k: int(k[3:]))]
    outs = [data[k] for k in sorted((k for k in data.files if k.startswith("out")),
                                    key=lambda k: int(k[3:]))]
    module = parse_module(pb.read_bytes())
    bad = compare_outputs(_run(module, args), outs, 1e-4, 1e-4)
    assert not bad, [m.message for m in bad]


@pytest.mark.peers
def test_live_jax_proto_of_corpus_cases():
    """JAX's proto of each JAX corpus case loads and gives XLA's outputs."""
    jax = pytest.importorskip("jax")
    sys.path.insert(0, str(Path(__file__).parent))
    from make_stablehlo_cases import case_arguments, case_function
    checked = 0
    for case in all_cases():
        if case.info.get("source") != "jax" or case.name.startswith("train_"):
            continue
        fn, donate = case_function(case.info)
        lowered = jax.jit(fn, donate_argnums=donate).lower(*case_arguments(case))
        module = parse_module(lowered.compiler_ir("hlo").as_serialized_hlo_module_proto())
        args, expected = case.inputs_and_outputs([p.shape for p in module.entry.parameters])
        bad = compare_outputs(_run(module, args), expected, case.rtol, case.atol)
        assert not bad, (case.name, [m.message for m in bad])
        checked += 1
    assert checked >= 40


def _without_negative_zero(text: str) -> str:
    # XLA's own text parser reads the literal "-0" as +0; xlapy keeps the sign
    return re.sub(r"(?<![\w.])-0(?![\w.])", "0", text)


@pytest.mark.peers
@pytest.mark.parametrize("path", MODULES[::9])
def test_xla_loads_xlapy_protos(path):
    pytest.importorskip("jax")
    from jax._src.lib import xla_client as xc
    text = path.read_text()
    mine = module_to_proto_bytes(parse_module(text))
    theirs = xc.hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()

    def printed(proto: bytes) -> str:
        body = parse_module(xc.XlaComputation(proto).as_hlo_text()).to_text()
        body = re.sub(r"\n(FileNames|FunctionNames|FileLocations|StackFrames)\n(.+\n)*", "\n",
                      body.split("\n", 1)[1])
        return _without_negative_zero(re.sub(r" stack_frame_id=\d+", "", body))
    assert printed(mine) == printed(theirs)


def test_bad_protos_are_parse_errors(tmp_path):
    with pytest.raises(HloParseError):
        parse_module(b"\x08\x96\x01 not a proto \xff\xff")
    with pytest.raises(HloParseError):
        module_from_proto_text('name: "m" computations { nonsense')
    m = parse_module("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n")
    from xlapy.hlo.proto import xlapy_hlo_pb2 as pb
    proto = pb.HloModuleProto.FromString(module_to_proto_bytes(m))
    proto.computations[0].instructions[0].opcode = "frobnicate"
    with pytest.raises(HloParseError, match="unknown opcode 'frobnicate'"):
        module_from_proto_bytes(proto.SerializeToString())


def test_dump_writes_protos_with_one_module_number(tmp_path):
    code = ("import numpy as np, xlapy, xlapy.numpy as xnp\n"
            "f = xlapy.jit(lambda x: xnp.sum(xnp.exp(x) * 2.0), backend='cpu')\n"
            "f(np.ones(8, np.float32))\n")
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={tmp_path} --xla_dump_hlo_as_proto "
                                     "--xla_dump_hlo_as_text --xla_dump_hlo_pass_re=.*")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    files = sorted(os.listdir(tmp_path))
    assert {f.split(".")[0] for f in files} == {"module_0001"}
    pbs = [f for f in files if f.endswith(".hlo.pb")]
    assert any("before_optimizations" in f for f in pbs)
    assert any(re.search(r"\.\d{4}\..*after_", f) for f in pbs)       # per-pass protos
    for name in pbs:
        text = (tmp_path / name.replace(".hlo.pb", ".txt")).read_text()
        assert parse_module((tmp_path / name).read_bytes()).to_text() == text


def test_serialized_compiler_ir_stages():
    import xlapy
    import xlapy.numpy as xnp
    f = xlapy.jit(lambda x: xnp.tanh(x) @ x)
    x = np.arange(9, dtype=np.float32).reshape(3, 3) / 9
    lowered = f.lower(x)
    raw = lowered.compiler_ir("hlo_serialized")
    assert isinstance(raw, bytes)
    assert parse_module(raw).to_text() == lowered.compiler_ir("hlo")
    opt = lowered.compiler_ir("optimized_hlo_serialized")
    (out,) = xlapy.run_hlo(opt, [x])
    np.testing.assert_allclose(out, np.tanh(x) @ x, rtol=1e-5)
    getter = xlapy.function(lambda v: xnp.sum(v), jit_compile=True).get_compiler_ir(x)
    assert isinstance(getter(stage="hlo_serialized"), bytes)


def test_convert_tool_writes_and_reads_protos(tmp_path):
    src = tmp_path / "m.hlo"
    src.write_text(MODULES[0].values[0].read_text())
    pb, pbtxt = tmp_path / "m.pb", tmp_path / "m.pbtxt"
    for out, form in ((pb, "pb"), (pbtxt, "pbtxt")):
        r = subprocess.run([sys.executable, "-m", "xlapy", "convert", str(src), "--to", form,
                            "-o", str(out)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    for path in (pb, pbtxt):
        r = subprocess.run([sys.executable, "-m", "xlapy", "convert", str(path)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == parse_module(src.read_text()).to_text().strip()
    data = MODULES[0].values[0].parent / "data.npz"
    r = subprocess.run([sys.executable, "-m", "xlapy", "run_hlo_module", str(pb),
                        "--input_data", str(data)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "expected outputs match" in r.stdout, r.stdout + r.stderr


def test_damaged_protos_give_typed_errors_only():
    """Bytes changed at random either still read (and print) or raise an XlapyError."""
    import random
    from xlapy.errors import XlapyError
    rng = random.Random(5)
    protos = [module_to_proto_bytes(parse_module(p.values[0].read_text())) for p in MODULES[:8]]
    for _ in range(300):
        data = bytearray(rng.choice(protos))
        for _ in range(rng.randrange(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            module_from_proto_bytes(bytes(data)).to_text()
        except XlapyError:
            pass
