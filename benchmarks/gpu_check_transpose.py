"""``gpu_check`` section: the tiled transpose kernels (``xlapy/backends/gpu/transpose.py``).

Times, on the card and against JAX in the same run, a bare transpose ``f32[8192,8192]``
and the MLP weight update ``w - 0.01 * transpose(g)`` at ``f32[4096,4096]``, each as a
fraction of the backend's own device-to-device copy bandwidth at the same size (bytes
read plus written over the kernel's CUDA-event time), and the same programs with the
tiled emitter switched off (the per-element loop kernel) for the before/after. The
simulator rehearsal (``GPU_CHECK_BACKEND=gpu_sim``) runs it at small sizes.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np


def _transpose_text(n: int) -> str:
    return (f"HloModule transpose\nENTRY e {{\n x = f32[{n},{n}] parameter(0)\n"
            f" ROOT y = f32[{n},{n}] transpose(x), dimensions={{1,0}}\n}}\n")


def _update_text(n: int) -> str:
    return (f"HloModule weight_update\nENTRY e {{\n w = f32[{n},{n}] parameter(0)\n"
            f" g = f32[{n},{n}] parameter(1)\n lr = f32[] constant(0.01)\n"
            f" lb = f32[{n},{n}] broadcast(lr), dimensions={{}}\n"
            f" s = f32[{n},{n}] multiply(g, lb)\n"
            f" t = f32[{n},{n}] transpose(s), dimensions={{1,0}}\n"
            f" ROOT o = f32[{n},{n}] subtract(w, t)\n}}\n")


@contextmanager
def _untiled():
    """Compile with the tiled transpose emitter declining (the loop kernel instead)."""
    from xlapy.backends.gpu import transpose
    saved = transpose.TransposeEmitter.emit
    transpose.TransposeEmitter.emit = lambda self, name, instr: None     # type: ignore
    try:
        yield
    finally:
        transpose.TransposeEmitter.emit = saved                          # type: ignore


def _copy_bandwidth(ctx, be, nbytes: int, reps: int) -> float:
    dev = be.device
    src, dst = dev.alloc(nbytes), dev.alloc(nbytes)
    try:
        t = ctx.median_time(lambda: dev.d2d(dst, src, nbytes), ctx.timer(be), reps)
    finally:
        dev.free(src)
        dev.free(dst)
    bw = 2 * nbytes / t
    ctx.say(f"  d2d copy of {nbytes / 1e6:.0f} MB: {t * 1e3:.3f} ms = {bw / 1e9:.1f} GB/s")
    return bw


def section(ctx, be) -> None:
    """Benchmark the tiled transposes (module docstring)."""
    ctx.say("== tiled transposes (gpu_check_transpose.py)")
    reps = 3 if ctx.SIM else 10
    n_t, n_w = (256, 256) if ctx.SIM else (8192, 4096)
    rng = np.random.default_rng(5)
    jobs = []
    x = rng.standard_normal((n_t, n_t), dtype=np.float32)
    jobs.append((f"transpose f32[{n_t},{n_t}]", _transpose_text(n_t), [x],
                 x.T.astype(np.float64), lambda a: a.T, 2))
    w = rng.standard_normal((n_w, n_w), dtype=np.float32)
    g = rng.standard_normal((n_w, n_w), dtype=np.float32)
    jobs.append((f"weight update w-0.01*g.T f32[{n_w},{n_w}]", _update_text(n_w), [w, g],
                 w.astype(np.float64) - np.float32(0.01).astype(np.float64) *
                 g.T.astype(np.float64), lambda a, b: a - 0.01 * b.T, 3))
    for name, text, args, want, fn, arrays in jobs:
        if ctx.left() < 20:
            ctx.say("  (skipped: out of time)")
            return
        nbytes = args[0].nbytes
        copy_bw = _copy_bandwidth(ctx, be, nbytes, reps)
        mine = ctx.ours(be, text, args, reps, want, tol=1e-6)
        bw = arrays * nbytes / mine[0]
        ctx.row(name, mine, ctx.jax_time(fn, args, reps),
                f"[{bw / 1e9:.0f} GB/s = {bw / copy_bw * 100:.0f}% of copy]")
        if ctx.left() < 15:
            continue
        with _untiled():
            loop = ctx.ours(be, text, args, reps, want, tol=1e-6)
        lbw = arrays * nbytes / loop[0]
        ctx.say(f"  the same with the loop kernel (untiled): {loop[0] * 1e3:.3f} ms events "
                f"[{lbw / 1e9:.0f} GB/s = {lbw / copy_bw * 100:.0f}% of copy]; tiled "
                f"{loop[0] / mine[0]:.2f}x faster")
        ctx.TABLE.append((f"  {name} untiled", f"{loop[0] * 1e3:.3f} ms", "",
                          f"tiled {loop[0] / mine[0]:.2f}x"))


def main() -> None:
    """This section alone: ``python3 benchmarks/gpu_check_transpose.py`` from the repository
    root (``GPU_CHECK_BACKEND=gpu_sim`` for the rehearsal; ``--models`` adds gpu_check's
    MLP step and transformer block with the MLP step's per-thunk profile)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import gpu_check as ctx
    be = ctx.environment()
    section(ctx, be)
    if "--models" in sys.argv:
        ctx.models(be, 3 if ctx.SIM else 10)
    for name, a, b, c in ctx.TABLE:
        ctx.say(f"{name:44s} {a:26s} {b:24s} {c}")
    ctx.save()


if __name__ == "__main__":
    main()
