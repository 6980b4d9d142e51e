"""Device section of ``benchmarks/gpu_check.py``: row softmax and layernorm against JAX.

``section(ctx, be)`` times row softmax and layernorm (f32) at ``[16384, 4096]``,
``[65536, 1024]``, ``[4096, 16384]`` and ``[262144, 128]`` (small shapes in the simulator
rehearsal) on the backend and on JAX's GPU backend in the same run: xlapy with CUDA events,
call + synchronize (wall) and calls back to back (loop); JAX wall and loop. For the first
shape it also times the looped sweep (row tiling off: each phase re-reads the row) as the
before figure, and prints ``ptxas -v``'s register and spill lines of the kernels for
``sm_80`` and ``sm_90``; then column sums (bias gradients) at ``[1024, 4096]``,
``[16384, 1024]`` and ``[65536, 256]``. Run alone::

    python3 -c "import sys; sys.path[:0] = ['benchmarks', 'tests']; import gpu_check as g, \\
gpu_check_rows as r; r.section(g, g.environment())"
"""
from __future__ import annotations

import re

import numpy as np

SHAPES = [(16384, 4096), (65536, 1024), (4096, 16384), (262144, 128)]
SIM_SHAPES = [(64, 4096), (256, 1024), (16, 16384), (1024, 128)]


def _ptxas_lines(ctx, text: str) -> None:
    from xlapy.backends.gpu import GpuBackend
    from xlapy.backends.gpu.ptx import ptxas_check, ptxas_path
    from xlapy.hlo import parse_module
    if ptxas_path() is None:
        ctx.say("  ptxas not installed: no register report")
        return
    ptx = GpuBackend().compiler_ir(parse_module(text), "ptx")
    for arch in ("sm_80", "sm_90"):
        try:
            report = ptxas_check(ptx, arch)
        except Exception as e:  # noqa: BLE001 - reported, the timings go on
            ctx.say(f"  ptxas {arch} FAILED: {str(e)[:300]}")
            continue
        regs = re.findall(r"Used (\d+) registers", report)
        spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
        ctx.say(f"  ptxas {arch}: registers {','.join(regs)}; spill stores/loads "
                f"{','.join(f'{a}/{b}' for a, b in spills)}")


def _softmax_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _layernorm_ref(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(1, keepdims=True)
    var = ((x - mu) ** 2).mean(1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def section(ctx, be) -> None:
    """Row softmax and layernorm against JAX (module docstring)."""
    from gpu_programs import layernorm_text, softmax_text
    from xlapy.backends.gpu import row_tile
    ctx.say("== row reductions: softmax and layernorm vs JAX (benchmarks/gpu_check_rows.py)")
    reps = 3 if ctx.SIM else 10
    rng = np.random.default_rng(3)
    jax_ok = True
    for n, (r, c) in enumerate(SIM_SHAPES if ctx.SIM else SHAPES):
        if ctx.left() < 15:
            ctx.say("  (stopped: time budget)")
            return
        x = rng.standard_normal((r, c), dtype=np.float32)
        g = rng.standard_normal(c, dtype=np.float32)
        b = rng.standard_normal(c, dtype=np.float32)
        # the first shape against float64, the others against float32 NumPy (faster)
        xr = x.astype(np.float64) if n == 0 else x
        jobs = [("softmax", softmax_text(r, c), [x], _softmax_ref(xr),
                 lambda a: ctx._jax().nn.softmax(a, axis=-1)),
                ("layernorm", layernorm_text(r, c), [x, g, b], _layernorm_ref(xr, g, b),
                 _jax_layernorm(ctx))]
        for name, text, args, want, fn in jobs:
            if n == 0:
                _ptxas_lines(ctx, text)
                saved = row_tile.MAX_THREAD_ELEMENTS
                row_tile.MAX_THREAD_ELEMENTS = 0       # the looped sweep: before
                try:
                    before = ctx.ours(be, text, args, reps)
                finally:
                    row_tile.MAX_THREAD_ELEMENTS = saved
                ctx.say(f"  {name} [{r},{c}] looped sweep (each phase reads the row): "
                        f"{before[0] * 1e3:.3f} ms events, {before[2] * 1e3:.3f} loop")
            mine = ctx.ours(be, text, args, reps, want, 1e-5)
            ref = ctx.jax_time(fn, args, reps) if jax_ok else None
            jax_ok = jax_ok and (ref is not None or ctx.SIM)
            nbytes = 2 * x.nbytes
            ctx.row(f"{name} [{r},{c}] rows", mine, ref,
                    f"[{nbytes / mine[0] / 1e9:.0f} GB/s read+write]")
    columns(ctx, be, reps)


COLUMN_SHAPES = [(1024, 4096), (16384, 1024), (65536, 256)]
SIM_COLUMN_SHAPES = [(256, 512), (1024, 64)]


def column_sum_text(r: int, c: int) -> str:
    """``sum(x, axis=0)`` of ``f32[r, c]``: a bias gradient."""
    from gpu_programs import ADD
    return (f"HloModule colsum\n{ADD}ENTRY e {{\n x = f32[{r},{c}] parameter(0)\n"
            f" z = f32[] constant(0)\n"
            f" ROOT s = f32[{c}] reduce(x, z), dimensions={{0}}, to_apply=add\n}}\n")


def columns(ctx, be, reps: int) -> None:
    """Column sums (bias gradients, ``column_reduction.py``) against JAX."""
    rng = np.random.default_rng(4)
    for r, c in SIM_COLUMN_SHAPES if ctx.SIM else COLUMN_SHAPES:
        if ctx.left() < 10:
            ctx.say("  (stopped: time budget)")
            return
        x = rng.standard_normal((r, c), dtype=np.float32)
        mine = ctx.ours(be, column_sum_text(r, c), [x], reps, x.sum(0, dtype=np.float64),
                        1e-5)
        ref = ctx.jax_time(lambda a: ctx._jnp().sum(a, axis=0), [x], reps)
        ctx.row(f"column sum [{r},{c}] axis 0", mine, ref,
                f"[{x.nbytes / mine[0] / 1e9:.0f} GB/s read]")


def _jax_layernorm(ctx):
    def ln(a, gg, bb):
        jnp = ctx._jnp()
        m = jnp.mean(a, axis=1, keepdims=True)
        v = jnp.mean((a - m) ** 2, axis=1, keepdims=True)
        return (a - m) * ctx._jax().lax.rsqrt(v + 1e-5) * gg + bb
    return ln
