"""Dispatch overhead: a cached ``xlapy.jit`` call of a tiny function vs eager ops vs JAX.

Inputs are f32[16], so every time here is overhead: argument checking and cache lookup in the
front end, the backend's ``execute`` (pointer tables, output allocation, the native call),
and wrapping the result. Rows:

- ``numpy``: the same expression in NumPy (the floor: a few ufunc calls);
- ``xlapy eager``: op by op on xlapy Arrays (one cached one-op executable per op);
- ``xlapy jit``: the cached jitted call, as a user makes it (NumPy arrays in, Array out);
  this takes jit's fast path (a signature of the arguments' types, shapes and dtypes looked
  up directly); ``--full-path`` turns the fast path off, so the row shows the full path
  (binding, pytree flattening, full cache key, argument conversion);
- ``xlapy execute()``: the backend executable alone, without the jit front end;
- ``jax jit`` / ``jax eager``: the same on JAX device arrays.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/jit_overhead.py
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

import numpy as np

import harness

SIZE = 16


def one_arg(xp: Any, x: Any) -> Any:
    return x + 1.0


def three_args(xp: Any, x: Any, y: Any, z: Any) -> Any:
    return x + y * z


def xlapy_impls(fn: Callable[..., Any], args: list[np.ndarray],
                backend: str) -> list[harness.Impl]:
    import xlapy
    import xlapy.numpy as xnp
    from xlapy.client import get_backend

    jit = harness.xlapy_impl(fn, args, backend)
    jit.name = "xlapy jit"
    xlapy.set_default_backend(backend)           # eager ops run on the same backend
    arrays = [xnp.asarray(a) for a in args]
    eager = harness.Impl("xlapy eager", lambda: fn(xnp, *arrays))
    try:
        jitted = xlapy.jit(lambda *a: fn(xnp, *a), backend=backend)
        exe = get_backend(backend).compile(jitted.lower(*args).hlo_module)
        execute = harness.Impl("xlapy execute()", lambda: exe.execute(args))
    except Exception as e:
        execute = harness.failed_impl("xlapy execute()", "compile", e)
    return [jit, execute, eager]


def jax_impls(fn: Callable[..., Any], args: list[np.ndarray]) -> list[harness.Impl]:
    if not harness.jax_available():
        return [harness.Impl("jax jit", None, note="jax is not installed")]
    import jax
    import jax.numpy as jnp

    jit = harness.jax_impl(fn, args)
    jit.name = "jax jit"
    dargs = [jax.device_put(a) for a in args]
    eager = harness.Impl("jax eager", lambda: jax.block_until_ready(fn(jnp, *dargs)))
    return [jit, eager]


def build_cases(s: harness.Settings) -> list[harness.Case]:
    rng = np.random.default_rng(1)
    cases = []
    for name, fn, n in (("x + 1", one_arg, 1), ("x + y*z", three_args, 3)):
        args = [rng.random(SIZE, dtype=np.float32) for _ in range(n)]
        impls = [harness.Impl("numpy", lambda fn=fn, args=args: fn(np, *args))]
        impls += xlapy_impls(fn, args, s.backend)
        if s.jax:
            impls += jax_impls(fn, args)
        ref = fn(np, *[a.astype(np.float64) for a in args])
        cases.append(harness.Case(f"{name}, {n} arg{'s' * (n > 1)}", f"f32[{SIZE}]", ref,
                                  impls, rtol=1e-6, atol=1e-7))
    return cases


def format_table(results: Sequence[harness.CaseResult], backend: str) -> str:
    lines = [f"| call (backend {backend}) | implementation | median per call | IQR | "
             "/ JAX jit |", "|---|---|---|---|---|"]
    for c in results:
        for name, r in c.results.items():
            if r.stats is None:
                lines.append(f"| {c.workload} | {name} | {r.status}: {r.detail} | - | - |")
                continue
            ratio = c.ratio(name, "jax jit")
            lines.append(f"| {c.workload} | {name} | {harness.fmt_time(r.stats.median)} | "
                         f"{harness.fmt_time(r.stats.iqr)} | "
                         f"{'-' if ratio is None else f'{ratio:.2f}'} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = harness.parser(__doc__.splitlines()[0], default_repeat=15)
    p.add_argument("--full-path", action="store_true",
                   help="turn jit's fast path off: every xlapy jit call takes the full path")
    args = p.parse_args(argv)
    args.warmup = max(args.warmup, 100)
    args.no_c = True
    import xlapy
    from xlapy.frontend.jit import set_fast_path_enabled
    if args.full_path:
        print("# jit fast path off (--full-path)")
    set_fast_path_enabled(not args.full_path)
    previous = xlapy.default_backend()          # xlapy_impls sets it for the eager column
    try:
        return harness.run(args, build_cases, format_table,
                           legend="each the mean of many calls")
    finally:
        set_fast_path_enabled(True)
        xlapy.set_default_backend(previous)


if __name__ == "__main__":
    sys.exit(main())
