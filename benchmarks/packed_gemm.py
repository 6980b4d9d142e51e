"""The generated packed f32 GEMM (``xlapy/backends/cpu/packed_gemm.py``, the default on
AVX-512 hosts) against OpenBLAS split over the pool (``XLAPY_F32_GEMM=openblas``) on W4b's
products.

Each shape runs through the CPU backend's dot thunk (``blas.DotThunk``) twice: with the
plan made under ``XLAPY_F32_GEMM=openblas`` (``sgemm`` pieces on the pool's threads, each
packing the shared operand) and with the plan made under ``XLAPY_F32_GEMM=packed`` (one
packing of ``B`` shared by the threads, row units from an atomic counter). Samples alternate between the two
(medians of ``--repeat`` samples); GFLOP/s counts 2*M*N*K per product.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/packed_gemm.py
"""
from __future__ import annotations

import os
import statistics
import sys
from typing import Callable, Sequence

import numpy as np

from bf16_dot import sample, start

# (what, M, K, N, layout): W4b's five large products; "nn" row-major operands, "tn" the
# lhs stored [K, M] (a weight gradient's activations), "nt" the rhs stored [N, K]
W4B = [("layer 1 forward", 256, 784, 512, "nn"), ("layer 2 forward", 256, 512, 512, "nn"),
       ("layer 2 input grad", 256, 512, 512, "nt"),
       ("layer 1 weight grad", 784, 256, 512, "tn"),
       ("layer 2 weight grad", 512, 256, 512, "tn")]


def calls(m: int, k: int, n: int, layout: str) -> tuple[Callable, Callable]:
    """(OpenBLAS call, packed call): the dot thunk's two plans on the same operands."""
    from xlapy.backends.cpu import blas, packed_gemm
    from xlapy.hlo.ir import HloInstruction
    from xlapy.hlo.shape import Shape
    lt, rt = layout[0] == "t", layout[1] == "t"
    lshape, rshape = ((k, m) if lt else (m, k)), ((n, k) if rt else (k, n))
    operands = [HloInstruction("parameter", Shape.array("f32", s), parameter_number=i)
                for i, s in enumerate((lshape, rshape))]
    instr = HloInstruction("dot", Shape.array("f32", (m, n)), operands, dict(
        lhs_contracting_dims=(0 if lt else 1,), rhs_contracting_dims=(1 if rt else 0,)))
    rng = np.random.default_rng(0)
    a = rng.standard_normal(lshape).astype(np.float32)
    b = rng.standard_normal(rshape).astype(np.float32)
    outs = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
    plain, packed = blas.DotThunk(instr), blas.DotThunk(instr)
    before = os.environ.get(packed_gemm.F32_ENV_SWITCH)
    try:                                        # the plans are made on the first call
        os.environ[packed_gemm.F32_ENV_SWITCH] = "openblas"
        plain([a, b], outs[0])
        os.environ[packed_gemm.F32_ENV_SWITCH] = "packed"
        packed([a, b], outs[1])
    finally:
        os.environ.pop(packed_gemm.F32_ENV_SWITCH)
        if before is not None:
            os.environ[packed_gemm.F32_ENV_SWITCH] = before
    if "packed" not in next(iter(packed.plans.values())).summary():
        raise SystemExit("the packed f32 GEMM needs AVX-512: nothing to compare")
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-4, atol=1e-3 * np.sqrt(k))
    return (lambda: plain([a, b], outs[0])), (lambda: packed([a, b], outs[1]))


def main(argv: Sequence[str] | None = None) -> int:
    args = start(__doc__.splitlines()[0], argv)
    print("| product | M x K x N | OpenBLAS split | packed | packed/OpenBLAS |")
    print("|---|---|---|---|---|")
    total = [0.0, 0.0]
    for what, m, k, n, layout in W4B:
        pair = calls(m, k, n, layout)
        times: list[list[float]] = [[], []]
        for _ in range(args.repeat):
            for i, call in enumerate(pair):
                times[i].append(sample(call, args.number))
        med = [statistics.median(t) for t in times]
        total = [total[0] + med[0], total[1] + med[1]]
        gf = [2 * m * n * k / t / 1e9 for t in med]
        print(f"| {what} ({layout}) | {m}x{k}x{n} | {med[0] * 1e3:.3f} ms ({gf[0]:.0f} GF/s) "
              f"| {med[1] * 1e3:.3f} ms ({gf[1]:.0f} GF/s) | {med[1] / med[0]:.2f} |")
    print(f"| all five | | {total[0] * 1e3:.2f} ms | {total[1] * 1e3:.2f} ms | "
          f"{total[1] / total[0]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
