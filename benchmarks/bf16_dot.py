"""The bf16 dot thunk (``xlapy/backends/cpu/bf16_dot.py``: the ``vdpbf16ps`` GEMM or the
FMA GEMM on widened operands, whichever this CPU runs faster, or the one
``XLAPY_BF16_DOT=dpbf16|fma`` names) against the f32 BLAS dot thunk on the products of the
W7 BERT-style step.

Each shape runs as the CPU backend runs a dot: the f32 thunk (``blas.DotThunk``,
OpenBLAS ``sgemm`` split over the pool) on f32 operands, the bf16 thunk on the same
values rounded to bf16 (f32 result). Samples alternate between the two (medians of
``--repeat`` samples); GFLOP/s counts 2*M*N*K per product.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/bf16_dot.py
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Callable, Sequence

import ml_dtypes
import numpy as np

from machine import check_openblas_env, machine_header

# (what, batch, M, K, N, layout): the step's forward, input-gradient and weight-gradient
# products; layout "nn" row-major operands, "tn" the lhs stored [K, M] (a weight
# gradient's activations), "nt" the rhs stored [N, K] (an input gradient's weights)
SHAPES = [("qkv projection", 1, 2048, 256, 768, "nn"), ("ffn up", 1, 2048, 256, 1024, "nn"),
          ("ffn down", 1, 2048, 1024, 256, "nn"),
          ("ffn up, weight grad", 1, 256, 2048, 1024, "tn"),
          ("ffn down, input grad", 1, 2048, 256, 1024, "nt"),
          ("ffn up, input grad", 1, 2048, 1024, 256, "nt"),
          ("mlm head", 1, 2048, 256, 1024, "nn"), ("attention scores", 64, 128, 64, 128, "nt"),
          ("attention context", 64, 128, 128, 64, "nn"),
          ("attention, value grad", 64, 128, 128, 64, "tn")]


def thunks(batch: int, m: int, k: int, n: int, layout: str = "nn"
           ) -> tuple[Callable, Callable]:
    """(f32 call, bf16 call) running the two dot thunks on random operands stored as
    ``layout`` says (see :data:`SHAPES`)."""
    from xlapy.backends.cpu import bf16_dot, blas
    from xlapy.hlo.ir import HloInstruction
    from xlapy.hlo.shape import Shape
    lt, rt = layout[0] == "t", layout[1] == "t"
    lshape = (batch, k, m) if lt else (batch, m, k)
    rshape = (batch, n, k) if rt else (batch, k, n)

    def dot(et: str) -> HloInstruction:
        p0 = HloInstruction("parameter", Shape.array(et, lshape), parameter_number=0)
        p1 = HloInstruction("parameter", Shape.array(et, rshape), parameter_number=1)
        return HloInstruction("dot", Shape.array("f32", (batch, m, n)), [p0, p1], dict(
            lhs_batch_dims=(0,), lhs_contracting_dims=(1 if lt else 2,), rhs_batch_dims=(0,),
            rhs_contracting_dims=(2 if rt else 1,)))
    rng = np.random.default_rng(0)
    a = rng.standard_normal(lshape).astype(np.float32)
    b = rng.standard_normal(rshape).astype(np.float32)
    ab, bb = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    out32, out16 = np.empty((batch, m, n), np.float32), np.empty((batch, m, n), np.float32)
    f32 = blas.DotThunk(dot("f32"))
    bf16 = blas.make_dot_thunk(dot("bf16"))
    if not isinstance(bf16, bf16_dot.Bf16DotThunk):
        raise SystemExit("this CPU has no AVX-512 (or XLAPY_BF16_DOT=off): nothing to "
                         "compare")
    return (lambda: f32([a, b], out32)), (lambda: bf16([ab, bb], out16))


def sample(call: Callable, number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        call()
    return (time.perf_counter() - t0) / number


def start(description: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """``--repeat``/``--number`` of an alternating-samples benchmark, after the OpenBLAS
    environment check; prints the machine line."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--number", type=int, default=5, help="calls per sample")
    args = p.parse_args(argv)
    check_openblas_env(allow=False)
    h = machine_header(measure_busy=False)
    load = ", ".join(f"{v:.2f}" for v in h["load_average"])
    print(f"# {h['cpu']} (LLVM: {h['llvm_host_cpu']}), {h['cores']} cores; load average "
          f"{load}; {args.repeat} alternating samples of {args.number} calls, medians")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    from xlapy.backends.cpu import bf16_dot
    args = start(__doc__.splitlines()[0], argv)
    kernel = {"bf16": "vdpbf16ps", "bf16w": "FMA, widened"}.get(bf16_dot.dot_operand() or "",
                                                               "none")
    print(f"| product | B x M x K x N, layout | f32 BLAS thunk | bf16 thunk ({kernel}) | "
          "speed-up |")
    print("|---|---|---|---|---|")
    for what, batch, m, k, n, layout in SHAPES:
        f32, bf16 = thunks(batch, m, k, n, layout)
        f32(), bf16()
        times: dict[str, list[float]] = {"f32": [], "bf16": []}
        for _ in range(args.repeat):
            times["f32"].append(sample(f32, args.number))
            times["bf16"].append(sample(bf16, args.number))
        flops = 2.0 * batch * m * k * n
        t32, t16 = (statistics.median(times[x]) for x in ("f32", "bf16"))
        print(f"| {what} | {batch}x{m}x{k}x{n} {layout} | {t32 * 1e3:.2f} ms ({flops / t32 / 1e9:.0f} "
              f"GFLOP/s) | {t16 * 1e3:.2f} ms ({flops / t16 / 1e9:.0f} GFLOP/s) | "
              f"{t32 / t16:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
