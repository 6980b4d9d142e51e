"""W4 MNIST training steps and W5 the CIFAR-10 CNN training step (float32), compiled vs peers.

- W4a: the seed's model, 784 -> 10 dense, softmax cross-entropy, Adam, batch 100;
- W4b: 784-512-512-10 ReLU MLP, Adam, batch 256;
- W5: the seed's Keras CIFAR-10 CNN (conv32 same, conv32, pool, conv64 same, conv64, pool,
  dense512, dense10; dropout left out in every implementation), RMSprop, batch 256.

Each step is forward, loss, gradients and the optimizer update as one function of
(params, optimizer state, x, y). Columns: xlapy ``jit`` on ``--backend``, the same step run
eagerly op by op (``xlapy eager``: TensorFlow's ``jit_compile=False`` baseline), and JAX
``jit``. Every implementation starts from the same parameters and must give the same loss.

``--compile`` measures compile time instead: cold (empty disk cache) and warm (the disk
cache filled by a first process, read by three more; the median), each the time of
``jit(step).lower(*args)`` (trace, cache lookup, passes and LLVM or loading) in a new
process with the backend's modules already imported (their import time is a column of
its own).

``--profile`` prints XLA's per-instruction execution profile (``--xla_hlo_profile``) of the
xlapy W5 step (or of the first workload ``--only`` names, e.g. ``--only W4b``) instead: the
step compiled with profiling, ``--warmup`` untimed calls, then ``--repeat`` profiled calls;
``--profile-rows N`` limits the table to the slowest N rows.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/training.py
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/training.py --compile
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/training.py --profile
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import numpy as np

import harness


# --------------------------------------------------------------------------- the models
def namespace(kind: str) -> SimpleNamespace:
    """The array module and the few ops the models need, for "xlapy" or "jax"."""
    if kind == "jax":
        import jax
        import jax.numpy as jnp

        def conv(x, w, padding):
            return jax.lax.conv_general_dilated(x, w, (1, 1), padding,
                                                dimension_numbers=("NHWC", "HWIO", "NHWC"))

        def pool(x):
            return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                         "VALID")
        return SimpleNamespace(np=jnp, value_and_grad=jax.value_and_grad, conv=conv, pool=pool,
                               logsumexp=jax.nn.logsumexp, tree_map=jax.tree_util.tree_map)
    import xlapy
    import xlapy.nn as xnn
    import xlapy.numpy as xnp

    def conv(x, w, padding):
        return xlapy.lax.conv_general_dilated(x, w, (1, 1), padding,
                                              dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def pool(x):
        return xnn.max_pool(x, (2, 2), strides=(2, 2), padding="VALID")
    return SimpleNamespace(np=xnp, value_and_grad=xlapy.value_and_grad, conv=conv, pool=pool,
                           logsumexp=xnn.logsumexp, tree_map=xlapy.tree_map)


def cross_entropy(ns: SimpleNamespace, logits: Any, y: Any) -> Any:
    logp = logits - ns.logsumexp(logits, axis=1, keepdims=True)
    return -ns.np.mean(ns.np.sum(logp * y, axis=1))


def mlp_loss(ns: SimpleNamespace, params: list, x: Any, y: Any) -> Any:
    h = x
    for i, (w, b) in enumerate(params):
        h = ns.np.matmul(h, w) + b
        if i < len(params) - 1:
            h = ns.np.maximum(h, 0.0)
    return cross_entropy(ns, h, y)


def cnn_loss(ns: SimpleNamespace, params: dict, x: Any, y: Any) -> Any:
    relu = lambda t: ns.np.maximum(t, 0.0)  # noqa: E731
    h = relu(ns.conv(x, params["c1"], "SAME") + params["b1"])
    h = relu(ns.conv(h, params["c2"], "VALID") + params["b2"])
    h = ns.pool(h)
    h = relu(ns.conv(h, params["c3"], "SAME") + params["b3"])
    h = relu(ns.conv(h, params["c4"], "VALID") + params["b4"])
    h = ns.pool(h)
    h = ns.np.reshape(h, (h.shape[0], -1))
    h = relu(ns.np.matmul(h, params["d1"]) + params["e1"])
    return cross_entropy(ns, ns.np.matmul(h, params["d2"]) + params["e2"], y)


def adam_step(ns: SimpleNamespace, loss: Callable, lr: float = 1e-3) -> Callable:
    def step(params, m, v, t, x, y):
        value, g = ns.value_and_grad(lambda p: loss(ns, p, x, y))(params)
        t = t + 1.0
        m = ns.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = ns.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        scale = lr * ns.np.sqrt(1.0 - 0.999 ** t) / (1.0 - 0.9 ** t)
        params = ns.tree_map(lambda p, a, b: p - scale * a / (ns.np.sqrt(b) + 1e-7), params, m, v)
        return params, m, v, t, value
    return step


def rmsprop_step(ns: SimpleNamespace, loss: Callable, lr: float = 1e-4,
                 decay: float = 1e-6) -> Callable:
    def step(params, ms, t, x, y):
        value, g = ns.value_and_grad(lambda p: loss(ns, p, x, y))(params)
        lr_t = lr / (1.0 + decay * t)
        ms = ns.tree_map(lambda a, b: 0.9 * a + 0.1 * b * b, ms, g)
        params = ns.tree_map(lambda p, a, b: p - lr_t * b / (ns.np.sqrt(a) + 1e-7),
                             params, ms, g)
        return params, ms, t + 1.0, value
    return step


# ----------------------------------------------------------------------- data and params
def _glorot(rng: np.random.Generator, shape: tuple, fan_in: int, fan_out: int) -> np.ndarray:
    lim = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-lim, lim, shape).astype(np.float32)


def mlp_problem(sizes: Sequence[int], batch: int) -> tuple:
    rng = np.random.default_rng(0)
    params = [(_glorot(rng, (a, b), a, b), np.zeros(b, np.float32))
              for a, b in zip(sizes[:-1], sizes[1:])]
    x = rng.random((batch, sizes[0]), dtype=np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    zeros = [(np.zeros_like(w), np.zeros_like(b)) for w, b in params]
    return (params, zeros, [(np.zeros_like(w), np.zeros_like(b)) for w, b in params],
            np.float32(0.0), x, y)


def cnn_problem(batch: int) -> tuple:
    rng = np.random.default_rng(0)
    p = {}
    for i, (k, cin, cout) in enumerate([(3, 3, 32), (3, 32, 32), (3, 32, 64), (3, 64, 64)], 1):
        p[f"c{i}"] = _glorot(rng, (k, k, cin, cout), k * k * cin, k * k * cout)
        p[f"b{i}"] = np.zeros(cout, np.float32)
    p["d1"], p["e1"] = _glorot(rng, (2304, 512), 2304, 512), np.zeros(512, np.float32)
    p["d2"], p["e2"] = _glorot(rng, (512, 10), 512, 10), np.zeros(10, np.float32)
    x = rng.random((batch, 32, 32, 3), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return p, {k: np.zeros_like(v) for k, v in p.items()}, np.float32(0.0), x, y


WORKLOADS = {
    "W4a seed MNIST 784-10 Adam": (lambda ns: adam_step(ns, mlp_loss),
                                   lambda smoke: mlp_problem((784, 10), 8 if smoke else 100),
                                   "batch 100"),
    "W4b MLP 784-512-512-10 Adam": (lambda ns: adam_step(ns, mlp_loss),
                                    lambda smoke: mlp_problem((784, 32, 32, 10) if smoke else
                                                              (784, 512, 512, 10),
                                                              8 if smoke else 256),
                                    "batch 256"),
    "W5 CIFAR-10 CNN RMSprop": (lambda ns: rmsprop_step(ns, cnn_loss),
                                lambda smoke: cnn_problem(2 if smoke else 256), "batch 256"),
}


# ---------------------------------------------------------------------- implementations
def _loss_of(result: Any) -> np.ndarray:
    return np.asarray(result[-1], np.float64)


def xlapy_impls(name: str, args: tuple, backend: str) -> list[harness.Impl]:
    import xlapy
    make, _, _ = WORKLOADS[name]
    step = make(namespace("xlapy"))
    jit = harness.jitted_impl(xlapy.jit(step, backend=backend), args, backend, _loss_of)
    return [jit, harness.Impl("eager", lambda: _loss_of(step(*args)))]


def jax_impl(name: str, args: tuple) -> harness.Impl:
    if not harness.jax_available():
        return harness.Impl("jax", None, note="jax is not installed")
    import jax
    make, _, _ = WORKLOADS[name]
    step = jax.jit(make(namespace("jax")))
    dargs = jax.device_put(args)
    t0 = time.perf_counter()
    try:
        step.lower(*dargs).compile()
    except Exception as e:
        return harness.failed_impl("jax", "compile", e)
    compile_s = time.perf_counter() - t0
    return harness.Impl("jax", lambda: _loss_of(jax.block_until_ready(step(*dargs))), compile_s)


#: ``--only``: run just the workloads whose name contains one of these strings
ONLY: list[str] = []


def build_cases(s: harness.Settings) -> list[harness.Case]:
    cases = []
    for name, (_, problem, size) in WORKLOADS.items():
        if ONLY and not any(part in name for part in ONLY):
            continue
        args = problem(s.smoke)
        impls = xlapy_impls(name, args, s.backend)
        if s.jax:
            impls.append(jax_impl(name, args))
        first = next((i for i in impls if i.call is not None), None)
        reference = first.call() if first is not None else np.float64(0)
        cases.append(harness.Case(name, "smoke" if s.smoke else size, reference, impls,
                                  rtol=2e-4, atol=1e-5))
    return cases


def format_table(results: Sequence[harness.CaseResult], backend: str) -> str:
    cell, comp, ratio = harness.time_cell, harness.compile_cell, harness.ratio_cell
    lines = [f"| workload | size | xlapy jit ({backend}) | compile s | xlapy eager | JAX jit | "
             "JAX compile s | eager/jit | xlapy/JAX |", "|" + "---|" * 9]
    for c in results:
        r = c.results
        lines.append(f"| {c.workload} | {c.size} | {cell(r.get('xlapy'))} | "
                     f"{comp(r.get('xlapy'))} | {cell(r.get('eager'))} | {cell(r.get('jax'))} | "
                     f"{comp(r.get('jax'))} | {ratio(c.ratio('eager', 'xlapy'))} | "
                     f"{ratio(c.ratio('xlapy', 'jax'))} |")
    notes = harness.notes(results)
    return "\n".join(lines + ([""] + notes if notes else []))


# ------------------------------------------------------------------------- compile time
_COMPILE_CHILD = """
import json, sys, time
sys.path.insert(0, {here!r})
import training, xlapy
from xlapy.client.backends import get_backend
t0 = time.perf_counter()
backend = get_backend({backend!r})
t1 = time.perf_counter()
name = {name!r}
make, problem, _ = training.WORKLOADS[name]
args = problem(False)
t2 = time.perf_counter()
xlapy.jit(make(training.namespace("xlapy")), backend={backend!r}).lower(*args)
t3 = time.perf_counter()
timings = getattr(backend, "last_timings", None)
print(json.dumps({{"backend_import": t1 - t0, "compile": t3 - t2,
                  "path": getattr(timings, "path", "?")}}))
"""


def compile_times(backend: str) -> None:
    """Cold and warm compile times, each in a new process (module docstring).

    The children write Python bytecode caches as an installed package has them
    (``PYTHONDONTWRITEBYTECODE`` is dropped from their environment): otherwise every new
    process compiles xlapy's sources again, which is not compile time. Loading the
    backend's modules (llvmlite, OpenBLAS) is reported on its own.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    print("| workload | cold compile s | warm compile s (disk cache, new process) | "
          "backend import s |")
    print("|---|---|---|---|")
    for name in WORKLOADS:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, XLAPY_CACHE_DIR=cache)
            for var in ("XLAPY_DISABLE_CACHE", "PYTHONDONTWRITEBYTECODE"):
                env.pop(var, None)
            code = _COMPILE_CHILD.format(here=here, name=name, backend=backend)
            runs = [json.loads(subprocess.run([sys.executable, "-c", code], env=env,
                                              check=True, capture_output=True,
                                              text=True).stdout.splitlines()[-1])
                    for _ in range(4)]
        cold, warm = runs[0], runs[1:]
        if cold["path"] != "fresh" or any(r["path"] != "disk" for r in warm):
            print(f"# {name}: unexpected cache paths {[r['path'] for r in runs]}")
        print(f"| {name} | {cold['compile']:.2f} | "
              f"{statistics.median(r['compile'] for r in warm):.3f} | "
              f"{statistics.median(r['backend_import'] for r in warm):.3f} |")


# ------------------------------------------------------------------------------ profile
PROFILED_WORKLOAD = "W5 CIFAR-10 CNN RMSprop"


def print_profile(backend: str, warmup: int, calls: int, rows: int | None,
                  smoke: bool = False) -> None:
    """The W5 step (or the first workload ``--only`` selects) compiled with
    ``--xla_hlo_profile``: its profile over ``calls`` calls."""
    import xlapy
    from xlapy.client import get_backend
    from xlapy.config import debug_options
    name = next((n for n in WORKLOADS if any(part in n for part in ONLY)), PROFILED_WORKLOAD)
    make, problem, size = WORKLOADS[name]
    args = problem(smoke)
    module = xlapy.jit(make(namespace("xlapy")), backend=backend).lower(*args).hlo_module
    with debug_options(xla_hlo_profile=True):
        exe = get_backend(backend).compile(module)
    flat = [np.asarray(a) for a in xlapy.tree_flatten(args)[0]]
    for _ in range(warmup):
        exe.execute(flat)
    exe.reset_profile()
    for _ in range(max(1, calls)):
        exe.execute(flat)
    print(f"# {name}, {'smoke' if smoke else size}: --xla_hlo_profile after "
          f"{warmup} warm-up calls")
    print(exe.profile_text(rows))


def main(argv: Sequence[str] | None = None) -> int:
    p = harness.parser(__doc__.splitlines()[0], default_repeat=7)
    p.add_argument("--compile", action="store_true", help="measure compile times only")
    p.add_argument("--profile", action="store_true",
                   help="print the per-instruction profile of the xlapy W5 step, or of the first "
                        "workload --only selects (cpu backend)")
    p.add_argument("--profile-rows", type=int, default=None, metavar="N",
                   help="with --profile: only the slowest N rows")
    p.add_argument("--only", action="append", default=[], metavar="TEXT",
                   help="only the workloads whose name contains TEXT (repeatable), e.g. W4b")
    args = p.parse_args(argv)
    ONLY[:] = args.only
    if args.profile:
        backend = harness.setup(args)
        if backend != "cpu":
            print("--profile needs the cpu backend", file=sys.stderr)
            return 2
        harness.print_header(harness.machine_header())
        print_profile(backend, args.warmup, 1 if args.smoke else args.repeat,
                      args.profile_rows, smoke=args.smoke)
        return 0
    if args.compile:
        backend = harness.setup(args)
        harness.print_header(harness.machine_header())
        compile_times(backend)
        return 0
    return harness.run(args, build_cases, format_table)


if __name__ == "__main__":
    sys.exit(main())
