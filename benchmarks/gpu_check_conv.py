"""The convolution section of the prepared GPU check (``benchmarks/gpu_check.py`` runs
``section(ctx, be)``): CNN convolutions as JAX lowers them -- a ResNet layer (batch 64,
56x56x64, 3x3 -> 64) and the seed CIFAR CNN's layers (batch 64: 32x32x3 -> 32 same,
32x32x32 -> 32 valid), each forward, input gradient and weight gradient -- on the backend
(the implicit-GEMM kernel of ``xlapy/backends/gpu/conv_gemm.py``, and each layer also as
im2col + cuBLAS where cuBLAS is found; no cuDNN), checked
against JAX on the CPU in float64 and timed against JAX's GPU backend (cuDNN) in the same
run, both in full f32 (``precision=highest``; JAX's default TF32 time is printed beside).
The simulator rehearsal (``GPU_CHECK_BACKEND=gpu_sim``) uses batch 2 and 8x8 images.
"""
from __future__ import annotations

import numpy as np

#: (name, batch, height/width, input channels, output channels, padding)
LAYERS = [("resnet 56x56x64->64", 64, 56, 64, 64, "SAME"),
          ("cifar c2 32x32x32->32", 64, 32, 32, 32, "VALID"),
          ("cifar c1 32x32x3->32", 64, 32, 3, 32, "SAME")]
SIM_LAYERS = [("resnet-like 8x8x16->16", 2, 8, 16, 16, "SAME"),
              ("cifar c1-like 8x8x3->8", 2, 8, 3, 8, "SAME")]


def _jobs(batch: int, hw: int, cin: int, cout: int, pad: str, rng) -> list:
    """(kind, fn, args) of the forward, input-gradient and weight-gradient convolutions."""
    import jax
    from jax import lax
    dn = ("NHWC", "HWIO", "NHWC")

    def fwd(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), pad, dimension_numbers=dn)
    x = rng.standard_normal((batch, hw, hw, cin)).astype(np.float32)
    w = (rng.standard_normal((3, 3, cin, cout)) / np.sqrt(9 * cin)).astype(np.float32)
    out = jax.eval_shape(fwd, x, w).shape
    dy = rng.standard_normal(out).astype(np.float32)

    def input_grad(g, k):      # the primal's zeros only give the shape (the vjp is linear)
        return jax.vjp(lambda v: fwd(v, k), jax.numpy.zeros(x.shape, g.dtype))[1](g)[0]

    def weight_grad(v, g):
        return jax.vjp(lambda k: fwd(v, k), jax.numpy.zeros(w.shape, g.dtype))[1](g)[0]
    return [("fwd", fwd, [x, w]), ("dgrad", input_grad, [dy, w]),
            ("wgrad", weight_grad, [x, dy])]


def section(ctx, be) -> None:
    """Run the convolutions (module docstring) and add their rows to ``ctx.TABLE``."""
    ctx.say("== convolutions (xlapy: its implicit-GEMM kernel, and im2col + cuBLAS where "
            "found; no cuDNN) vs JAX's GPU backend (cuDNN)")
    try:
        import jax  # noqa: F401
    except ImportError:
        ctx.say("  jax is not installed: no convolution programs to lower")
        return
    from xlapy.backends.gpu import conv_im2col, convolution
    from xlapy.hlo import parse_module
    rng = np.random.default_rng(5)
    reps = 3 if ctx.SIM else 10
    for li, (name, batch, hw, cin, cout, pad) in enumerate(SIM_LAYERS if ctx.SIM else LAYERS):
        for kind, fn, args in _jobs(batch, hw, cin, cout, pad, rng):
            if ctx.left() < 12:
                ctx.say("  (out of time: the remaining convolutions are skipped)")
                return
            text = ctx.lowered_from_jax(fn, args)
            if text is None:
                return
            module = parse_module(text)
            convs = [i for c in module.computations for i in c.instructions
                     if i.opcode == "convolution"]
            specs = [convolution.conv_spec(i) for i in convs]
            flops = sum(2.0 * s.groups * s.batch_groups * s.m * s.opg * s.k
                        for s in specs if s is not None)
            ctx.say(f"  {name} {kind}: " + "; ".join(
                f"{i.attr('dim_labels').to_text()} {i.shape.dims}" for i in convs))
            try:
                want = ctx.jax_reference(fn, args)
            except Exception as e:  # noqa: BLE001
                ctx.say("  no float64 reference:", type(e).__name__, str(e)[:200])
                want = None
            jax = ctx.jax_time(fn, args, reps)
            mine = ctx.ours(be, text, args, reps, want, tol=1e-4)
            ctx.row(f"conv {name} {kind} b{batch}", mine, jax,
                    f"full fp32 both {_rate(flops, mine[0])}")
            if not ctx.SIM:        # the other path: im2col + cuBLAS where it applies
                conv_im2col.OVER_TILED = True
                try:
                    other = ctx.ours(be, text, args, reps, want, tol=1e-4)
                finally:
                    conv_im2col.OVER_TILED = False
                ctx.row(f"conv {name} {kind} b{batch} im2col+cuBLAS", other, jax,
                        f"full fp32 both {_rate(flops, other[0])}")
            if li == 0 and not ctx.SIM:
                tf32 = ctx.jax_time(fn, args, reps, "default")
                if tf32:
                    ctx.say(f"  (jax at its default precision (TF32): {tf32[0] * 1e3:.3f} ms "
                            f"wall, {tf32[1] * 1e3:.3f} ms loop)")


def _rate(flops: float, seconds: float) -> str:
    return f"[{flops / seconds / 1e12:.3f} TFLOP/s]" if flops and seconds else ""
