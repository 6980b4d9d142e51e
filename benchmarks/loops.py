"""W8: loops that carry large state, xlapy against JAX jit.

- ``fori_loop row writes``: a ``fori_loop`` of 100 trips, each writing one row of 256 floats
  into a carried f32[R, 256] (``dynamic_update_slice``); run at R = 1,000 and R = 10,000.
  When the loop state stays in place the time depends on the rows written, not on R.
- ``LSTM scan fwd+bwd``: the gradient of ``sum(h_t^2)`` over a ``lax.scan`` LSTM
  (T 50, batch 32, input 64, hidden 128) with respect to its weights: a forward scan that
  stacks its residuals and a backward scan that reads them and accumulates the weight
  gradients.

Columns: ``xlapy (JAX HLO)`` runs the module JAX lowers (``jax.jit(f).lower(...)``, HLO text)
on xlapy's backend through ``backend.compile(...).execute(...)``; ``xlapy jit`` traces the
same function written against ``xlapy.numpy``/``xlapy.lax``; ``JAX jit`` is JAX on its device
arrays. Every answer is checked against a float64 NumPy reference.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/loops.py
"""
from __future__ import annotations

import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

import harness

TRIPS, WIDTH = 100, 256
LSTM_SIZES = {"T": 50, "B": 32, "I": 64, "H": 128}
SMOKE_LSTM = {"T": 4, "B": 2, "I": 3, "H": 4}


# ----------------------------------------------------------------------------- workloads
def row_writes(lax: Any, trips: int) -> Callable[[Any, Any], Any]:
    """``fori_loop`` writing row ``i`` of ``rows`` at row ``97 i mod R`` of ``buf``."""
    def f(buf: Any, rows: Any) -> Any:
        height = buf.shape[0]

        def body(i: Any, b: Any) -> Any:
            return lax.dynamic_update_slice(b, rows[i][None, :], ((i * 97) % height, 0))
        return lax.fori_loop(0, trips, body, buf)
    return f


def row_writes_reference(buf: np.ndarray, rows: np.ndarray, trips: int) -> np.ndarray:
    out = buf.astype(np.float64)
    for i in range(trips):
        out[(i * 97) % buf.shape[0]] = rows[i]
    return out


def lstm_grad(xp: Any, lax: Any, nn: Any, grad: Any, hidden: int) -> Callable[..., Any]:
    """``grad`` of ``sum(h_t^2)`` of a scan LSTM with respect to ``(wx, wh, b)``."""
    def loss(wx: Any, wh: Any, b: Any, xs: Any) -> Any:
        batch = xs.shape[1]

        def cell(carry: Any, x: Any) -> Any:
            h, c = carry
            z = xp.matmul(x, wx) + xp.matmul(h, wh) + b
            i, f, g, o = xp.split(z, 4, axis=-1)
            c = nn.sigmoid(f) * c + nn.sigmoid(i) * xp.tanh(g)
            h = nn.sigmoid(o) * xp.tanh(c)
            return (h, c), h
        zeros = xp.zeros((batch, hidden), dtype=xs.dtype)
        _, hs = lax.scan(cell, (zeros, zeros), xs)
        return xp.sum(hs * hs)
    return grad(loss, argnums=(0, 1, 2))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def lstm_reference(wx: np.ndarray, wh: np.ndarray, b: np.ndarray,
                   xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The LSTM loss's weight gradients by hand, in float64 (backpropagation through time)."""
    wx, wh, b, xs = (a.astype(np.float64) for a in (wx, wh, b, xs))
    steps, batch, _ = xs.shape
    hidden = wh.shape[0]
    h = np.zeros((batch, hidden))
    c = np.zeros((batch, hidden))
    saved = []
    for t in range(steps):
        z = xs[t] @ wx + h @ wh + b
        i, f, g, o = (_sigmoid(z[:, :hidden]), _sigmoid(z[:, hidden:2 * hidden]),
                      np.tanh(z[:, 2 * hidden:3 * hidden]), _sigmoid(z[:, 3 * hidden:]))
        c_prev, h_prev = c, h
        c = f * c + i * g
        h = o * np.tanh(c)
        saved.append((h_prev, c_prev, i, f, g, o, c, h))
    dwx, dwh, db = np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(b)
    dh_next, dc_next = np.zeros((batch, hidden)), np.zeros((batch, hidden))
    for t in reversed(range(steps)):
        h_prev, c_prev, i, f, g, o, c, h = saved[t]
        dh = 2.0 * h + dh_next
        tc = np.tanh(c)
        dc = dh * o * (1.0 - tc * tc) + dc_next
        dz = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                             dc * i * (1 - g * g), dh * tc * o * (1 - o)], axis=1)
        dwx += xs[t].T @ dz
        dwh += h_prev.T @ dz
        db += dz.sum(axis=0)
        dh_next = dz @ wh.T
        dc_next = dc * f
    return dwx, dwh, db


# ----------------------------------------------------------------------------- implementations
def jax_hlo_impl(fn: Callable[..., Any], args: Sequence[np.ndarray], backend: str
                 ) -> harness.Impl:
    """The module JAX lowers for ``fn``, compiled and run by xlapy's ``backend``."""
    name = "xlapy (JAX HLO)"
    if not harness.jax_available():
        return harness.Impl(name, None, note="jax is not installed")
    import jax

    from xlapy.client import get_backend
    from xlapy.hlo import parse_module
    try:
        text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
        t0 = time.perf_counter()
        exe = get_backend(backend).compile(parse_module(text))
        compile_s = time.perf_counter() - t0
    except Exception as e:
        return harness.failed_impl(name, "compile", e)
    fallbacks = getattr(exe, "fallback_opcodes", lambda: [])()
    note = f"fallback thunks: {', '.join(fallbacks)}" if fallbacks else ""
    return harness.Impl(name, lambda: exe.execute(list(args)), compile_s, note=note)


def jax_jit_impl(fn: Callable[..., Any], args: Sequence[np.ndarray]) -> harness.Impl:
    if not harness.jax_available():
        return harness.Impl("JAX jit", None, note="jax is not installed")
    import jax
    dargs = [jax.device_put(a) for a in args]
    t0 = time.perf_counter()
    try:
        jax.jit(fn).lower(*dargs).compile()
    except Exception as e:
        return harness.failed_impl("JAX jit", "compile", e)
    compile_s = time.perf_counter() - t0
    jitted = jax.jit(fn)
    return harness.Impl("JAX jit", lambda: jax.block_until_ready(jitted(*dargs)), compile_s)


def xlapy_jit_impl(fn: Callable[..., Any], args: Sequence[np.ndarray], backend: str
                   ) -> harness.Impl:
    import xlapy
    impl = harness.jitted_impl(xlapy.jit(fn, backend=backend), args, backend)
    impl.name = "xlapy jit"
    return impl


def impls_for(make: Callable[[str], Callable[..., Any]], args: list[np.ndarray],
              s: harness.Settings) -> list[harness.Impl]:
    """The three columns for a workload built by ``make(library)`` (``"jax"``/``"xlapy"``)."""
    out = []
    if s.jax:
        out.append(jax_hlo_impl(make("jax"), args, s.backend))
    out.append(xlapy_jit_impl(make("xlapy"), args, s.backend))
    if s.jax:
        out.append(jax_jit_impl(make("jax"), args))
    return out


def _libraries(which: str) -> tuple[Any, Any, Any, Any]:
    if which == "jax":
        import jax
        import jax.numpy as jnp
        return jnp, jax.lax, jax.nn, jax.grad
    import xlapy
    import xlapy.lax
    import xlapy.nn
    import xlapy.numpy as xnp
    return xnp, xlapy.lax, xlapy.nn, xlapy.grad


def build_cases(s: harness.Settings) -> list[harness.Case]:
    rng = np.random.default_rng(8)
    cases = []
    heights = [64] if s.smoke else [1000, 10000]
    trips = 8 if s.smoke else TRIPS
    for height in heights:
        buf = rng.standard_normal((height, WIDTH)).astype(np.float32)
        rows = rng.standard_normal((trips, WIDTH)).astype(np.float32)
        impls = impls_for(lambda lib: row_writes(_libraries(lib)[1], trips), [buf, rows], s)
        cases.append(harness.Case(f"fori_loop {trips} row writes", f"f32[{height},{WIDTH}]",
                                  row_writes_reference(buf, rows, trips), impls,
                                  rtol=0.0, atol=0.0))
    n = SMOKE_LSTM if s.smoke else LSTM_SIZES
    args = [(rng.standard_normal((n["I"], 4 * n["H"])) * 0.1).astype(np.float32),
            (rng.standard_normal((n["H"], 4 * n["H"])) * 0.1).astype(np.float32),
            (rng.standard_normal(4 * n["H"]) * 0.1).astype(np.float32),
            rng.standard_normal((n["T"], n["B"], n["I"])).astype(np.float32)]
    impls = impls_for(lambda lib: lstm_grad(*_libraries(lib), hidden=n["H"]), args, s)
    cases.append(harness.Case("LSTM scan fwd+bwd",
                              f"T{n['T']} B{n['B']} I{n['I']} H{n['H']}",
                              lstm_reference(*args), impls, rtol=1e-3, atol=1e-3))
    return cases


def format_table(results: Sequence[harness.CaseResult], backend: str) -> str:
    lines = [f"| workload | size | xlapy (JAX HLO, {backend}) | xlapy jit | JAX jit | "
             "xlapy (JAX HLO)/JAX | xlapy jit/JAX |", "|" + "---|" * 7]
    for c in results:
        r = c.results
        lines.append(
            f"| {c.workload} | {c.size} | {harness.time_cell(r.get('xlapy (JAX HLO)'))} | "
            f"{harness.time_cell(r.get('xlapy jit'))} | {harness.time_cell(r.get('JAX jit'))} | "
            f"{harness.ratio_cell(c.ratio('xlapy (JAX HLO)', 'JAX jit'))} | "
            f"{harness.ratio_cell(c.ratio('xlapy jit', 'JAX jit'))} |")
    extra = harness.notes(results)
    return "\n".join(lines + ([""] + extra if extra else []))


def main(argv: Sequence[str] | None = None) -> int:
    p = harness.parser(__doc__.splitlines()[0], default_repeat=15)
    args = p.parse_args(argv)
    args.no_c = True
    return harness.run(args, build_cases, format_table)


if __name__ == "__main__":
    sys.exit(main())
