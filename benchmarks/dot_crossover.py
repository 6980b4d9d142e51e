"""BLAS numbers behind xlapy's dot thunk (xlapy/backends/cpu/blas.py).

Measures, on OpenBLAS from scipy-openblas32 as xlapy calls it (ctypes):

1. ``sgemm``/``dgemm`` GFLOP/s for square sizes: OpenBLAS's own threads, one thread (as
   xlapy runs it) and the dot thunk, which cuts a product into one piece per core;
2. the crossover between NumPy's ``matmul`` into ``out`` and the BLAS call, through the dot
   thunk itself (``SMALL_DOT_FLOPS`` forced to 0 and to infinity);
3. ``M == 1`` / ``N == 1`` / vector-vector shapes: ``sgemm`` against ``sgemv`` and ``sdot``;
4. batched dots: one ``sgemm_batch_strided`` call against a Python loop of ``sgemm`` calls
   and NumPy's batched ``matmul``;
5. generated small-GEMM kernels (``dot_emitter.py``) against the dot thunk, each a compiled
   one-dot module run through the executable (``MAX_KERNEL_MACS`` forced to -1 for the
   thunk), for the shapes of recurrent cells and MLP layers in three orientations
   (``A @ B``, ``A @ B^T``, ``A^T @ B``).

Run without OpenBLAS tuning variables so the numbers describe this machine's own kernel::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/dot_crossover.py

``--quick`` runs fewer sizes. Times are the minimum over several repeats of back-to-back calls.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from typing import Callable

import numpy as np

from xlapy.backends.cpu import blas, blas_lib
from xlapy.hlo.ir import HloInstruction
from xlapy.hlo.shape import Shape


def settle() -> None:
    """Let idle OpenBLAS threads of the other library stop spinning (NumPy links its own
    OpenBLAS; two busy thread pools on two cores slow each other down by 10-100x)."""
    time.sleep(0.3)


def per_call(fn: Callable[[], object], min_time: float = 0.05, repeats: int = 5) -> float:
    """Seconds per call: the best of ``repeats`` samples of back-to-back calls."""
    settle()
    fn()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / repeats or number >= 1 << 20:
            break
        number *= 4
    best = dt / number
    for _ in range(repeats - 1):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def header() -> None:
    env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                      "OPENBLAS_NUM_THREADS") if k in os.environ}
    lib = blas.library()
    print(f"# OpenBLAS {lib.path}")
    print(f"# corename {lib.corename()}, threads {lib.num_threads()}, "
          f"cores {os.cpu_count()}, env {env or 'no OPENBLAS_* variables'}")
    try:
        from threadpoolctl import threadpool_info
        for info in threadpool_info():
            if info.get("user_api") == "blas":
                print(f"# threadpoolctl: {info.get('prefix')} {info.get('version')} kernel "
                      f"{info.get('architecture')} threads {info.get('num_threads')}")
    except ImportError:
        print("# threadpoolctl not installed")


def gemm_rates(sizes: list[int]) -> None:
    """Square products: OpenBLAS's own threads, one thread (how xlapy runs it), the dot
    thunk (one thread a piece on the runtime's pool) and NumPy's matmul."""
    lib = blas.library()
    threads = os.cpu_count() or 1
    print("\n## square GEMM (C = A @ B, row-major), GFLOP/s")
    print(f"| n | sgemm {threads} OpenBLAS threads | sgemm 1 thread | dot thunk (pool) | "
          f"dgemm {threads} OpenBLAS threads | NumPy f32 matmul |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for n in sizes:
        rates = []
        for dtype, nthreads in ((np.float32, threads), (np.float32, 1), (np.float64, threads)):
            a = rng.standard_normal((n, n)).astype(dtype)
            b = rng.standard_normal((n, n)).astype(dtype)
            c = np.empty((n, n), dtype)
            fn = lib.gemm[np.dtype(dtype)]
            pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data

            def call() -> None:
                fn(101, 111, 111, n, n, n, 1.0, pa, n, pb, n, 0.0, pc, n)
            lib.set_num_threads(nthreads)
            try:
                t = per_call(call, min_time=0.3 if n >= 512 else 0.05)
            finally:
                lib.set_num_threads(1)
            rates.append(2 * n**3 / t / 1e9)
            if dtype is np.float32 and nthreads == 1:
                assert np.allclose(c, a @ b, rtol=1e-3, atol=1e-3 * n)
                thunk = blas.make_dot_thunk(_dot_instr(n, n, n))
                tt = per_call(lambda: thunk([a, b], c), min_time=0.3 if n >= 512 else 0.05)
                tn = per_call(lambda: np.matmul(a, b, out=c), min_time=0.3 if n >= 512 else 0.05)
        print(f"| {n} | {rates[0]:.0f} | {rates[1]:.0f} | {2 * n**3 / tt / 1e9:.0f} | "
              f"{rates[2]:.0f} | {2 * n**3 / tn / 1e9:.0f} |")


def _dot_instr(m: int, k: int, n: int, batch: int = 0, et: str = "f32") -> HloInstruction:
    b = (batch,) if batch else ()
    p0 = HloInstruction("parameter", Shape.array(et, b + (m, k)), parameter_number=0)
    p1 = HloInstruction("parameter", Shape.array(et, b + (k, n)), parameter_number=1)
    bd = (0,) if batch else ()
    nb = len(b)
    return HloInstruction("dot", Shape.array(et, b + (m, n)), [p0, p1], {
        "lhs_batch_dims": bd, "lhs_contracting_dims": (nb + 1,),
        "rhs_batch_dims": bd, "rhs_contracting_dims": (nb,)})


def thunk_time(instr: HloInstruction, small_flops: float, arrays) -> float:
    old = blas.SMALL_DOT_FLOPS
    blas.SMALL_DOT_FLOPS = small_flops
    try:
        thunk = blas.make_dot_thunk(instr)
        a, b, c = arrays
        return per_call(lambda: thunk([a, b], c), min_time=0.05)
    finally:
        blas.SMALL_DOT_FLOPS = old


def crossover(sizes: list[int]) -> None:
    print("\n## dot thunk: NumPy matmul path vs BLAS path (f32 [n,n] x [n,n], same view "
          "objects each call)")
    print("| n | NumPy path us | BLAS path us | faster |")
    print("|---|---|---|---|")
    rng = np.random.default_rng(1)
    for n in sizes:
        instr = _dot_instr(n, n, n)
        arrays = (rng.standard_normal((n, n)).astype(np.float32),
                  rng.standard_normal((n, n)).astype(np.float32), np.empty((n, n), np.float32))
        tn = thunk_time(instr, float("inf"), arrays)
        tb = thunk_time(instr, 0, arrays)
        print(f"| {n} | {tn * 1e6:.2f} | {tb * 1e6:.2f} | {'NumPy' if tn < tb else 'BLAS'} |")
    print("\n(fresh arrays each call add ~0.9 us per array to the BLAS path: "
          f"{per_call(lambda: arrays[0].ctypes.data) * 1e6:.2f} us for arr.ctypes.data)")


def vector_shapes(sizes: list[int]) -> None:
    lib = blas.library()
    i, p, f = ctypes.c_int, ctypes.c_void_p, ctypes.c_float
    gemv = lib.lib.scipy_cblas_sgemv
    gemv.argtypes = [i, i, i, i, f, p, i, p, i, f, p, i]
    gemv.restype = None
    sdot = lib.lib.scipy_cblas_sdot
    sdot.argtypes = [i, p, i, p, i]
    sdot.restype = ctypes.c_float
    print("\n## matrix-vector and vector-vector: sgemm vs sgemv / sdot (us per call)")
    print("| shape | sgemm | sgemv or sdot |")
    print("|---|---|---|")
    rng = np.random.default_rng(2)
    for n in sizes:
        a = rng.standard_normal((n, n)).astype(np.float32)
        x = rng.standard_normal(n).astype(np.float32)
        y = np.empty(n, np.float32)
        pa, px, py = a.ctypes.data, x.ctypes.data, y.ctypes.data
        row = blas_lib.MatrixArg(False, n)
        mv = blas_lib.GemmCall(np.dtype(np.float32), n, 1, n, row, blas_lib.MatrixArg(False, 1), 1)
        t_gemm = per_call(lambda: mv.run(pa, px, py))
        t_gemv = per_call(lambda: gemv(101, 111, n, n, 1.0, pa, n, px, 1, 0.0, py, 1))
        print(f"| [{n},{n}] x [{n}] | {t_gemm * 1e6:.2f} | {t_gemv * 1e6:.2f} |")
        vv = blas_lib.GemmCall(np.dtype(np.float32), 1, 1, n, blas_lib.MatrixArg(False, n),
                           blas_lib.MatrixArg(False, 1), 1)
        t_g = per_call(lambda: vv.run(px, pa, py))
        t_d = per_call(lambda: sdot(n, px, 1, pa, 1))
        print(f"| [{n}] . [{n}] | {t_g * 1e6:.2f} | {t_d * 1e6:.2f} |")


def batched(cases: list[tuple[int, int]]) -> None:
    print("\n## batched [b, n, n] x [b, n, n] (us per call)")
    print("| b x n | gemm_batch_strided | loop of sgemm | numpy matmul | dot thunk |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(3)
    for bsz, n in cases:
        a = rng.standard_normal((bsz, n, n)).astype(np.float32)
        b = rng.standard_normal((bsz, n, n)).astype(np.float32)
        c = np.empty((bsz, n, n), np.float32)
        arg = blas_lib.MatrixArg(False, n)
        one = blas_lib.GemmCall(np.dtype(np.float32), n, n, n, arg, arg, n)
        many = blas_lib.GemmCall(np.dtype(np.float32), n, n, n, arg, arg, n, bsz,
                                 n * n, n * n, n * n)
        pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
        step = n * n * 4
        t_batch = per_call(lambda: many.run(pa, pb, pc))
        assert np.allclose(c, a @ b, rtol=1e-3, atol=1e-3 * n)

        def loop() -> None:
            for j in range(bsz):
                one.run(pa + j * step, pb + j * step, pc + j * step)
        t_loop = per_call(loop)
        t_np = per_call(lambda: np.matmul(a, b, out=c))
        thunk = blas.make_dot_thunk(_dot_instr(n, n, n, batch=bsz))
        t_thunk = per_call(lambda: thunk([a, b], c))
        print(f"| {bsz} x {n} | {t_batch * 1e6:.1f} | {t_loop * 1e6:.1f} | {t_np * 1e6:.1f} | "
              f"{t_thunk * 1e6:.1f} |")


#: (M, K, N): batch-1 and batch-32 recurrent-cell and MLP shapes, then larger products
KERNEL_SHAPES = [(1, 256, 256), (1, 784, 512), (32, 64, 512), (32, 128, 512), (32, 512, 128),
                 (512, 32, 128), (64, 256, 256), (128, 128, 512), (256, 512, 10),
                 (128, 256, 256), (256, 256, 256), (256, 512, 512), (256, 784, 512)]


def _oriented_module(m: int, k: int, n: int, orient: str) -> str:
    lhs, lc = ((m, k), 1) if orient != "tn" else ((k, m), 0)
    rhs, rc = ((k, n), 0) if orient != "nt" else ((n, k), 1)
    return (f"HloModule kernel_vs_blas\nENTRY main {{\n"
            f"  a = f32[{lhs[0]},{lhs[1]}] parameter(0)\n"
            f"  b = f32[{rhs[0]},{rhs[1]}] parameter(1)\n"
            f"  ROOT d = f32[{m},{n}] dot(a, b), lhs_contracting_dims={{{lc}}}, "
            f"rhs_contracting_dims={{{rc}}}\n}}\n")


def kernels_vs_thunk(shapes: list[tuple[int, int, int]]) -> None:
    from xlapy.backends.cpu import dot_kernel_plan as dot_emitter
    from xlapy.backends.cpu.compiler import CpuBackend
    from xlapy.hlo import parse_module
    print("\n## generated kernel vs the dot thunk (us per executable call, GFLOP/s)\n")
    print("| M x K x N | orientation | kernel us | thunk us | kernel GFLOP/s | thunk GFLOP/s |")
    print("|---|---|---|---|---|---|")
    limit = dot_emitter.MAX_KERNEL_MACS
    rng = np.random.default_rng(0)
    try:
        for m, k, n in shapes:
            for orient in ("nn", "nt", "tn"):
                module = parse_module(_oriented_module(m, k, n, orient))
                args = [rng.standard_normal(p.shape.dims).astype(np.float32)
                        for p in module.entry.parameters]
                times = []
                for macs in (1 << 62, -1):
                    dot_emitter.MAX_KERNEL_MACS = macs
                    exe = CpuBackend(use_disk_cache=False).compile(module)
                    times.append(per_call(lambda: exe.execute(args)))
                flops = 2 * m * n * k
                print(f"| {m} x {k} x {n} | {orient} | {times[0] * 1e6:.1f} | "
                      f"{times[1] * 1e6:.1f} | {flops / times[0] / 1e9:.0f} | "
                      f"{flops / times[1] / 1e9:.0f} |")
    finally:
        dot_emitter.MAX_KERNEL_MACS = limit


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes")
    ap.add_argument("--kernels", action="store_true", help="only the generated kernels (5.)")
    args = ap.parse_args(argv)
    header()
    if args.quick:
        gemm_rates([64, 256, 1024])
        crossover([8, 32, 64])
        vector_shapes([256])
        batched([(64, 32)])
        kernels_vs_thunk([(32, 64, 512), (32, 128, 512), (256, 512, 512)])
    elif args.kernels:
        kernels_vs_thunk(KERNEL_SHAPES)
    else:
        gemm_rates([64, 128, 256, 512, 1024, 2048])
        crossover([2, 4, 8, 16, 24, 32, 40, 48, 64, 96, 128])
        vector_shapes([64, 512, 4096])
        batched([(256, 8), (64, 32), (16, 128)])
        kernels_vs_thunk(KERNEL_SHAPES)


if __name__ == "__main__":
    main(sys.argv[1:])
