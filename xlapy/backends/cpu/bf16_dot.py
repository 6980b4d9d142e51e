"""bf16 matrix products: packed GEMMs built on ``vdpbf16ps`` (AVX512-BF16) or on f32 FMAs.

A ``dot`` whose two operands are ``bf16`` and whose result is ``f32`` or ``bf16`` (JAX's
``preferred_element_type=f32``, or a plain bf16 dot) is computed here on CPUs with
AVX-512: every product is summed in f32 and a bf16 result is rounded once at the end, as
XLA:CPU and the interpreter do. Two kernels (:func:`dot_operand`):

- ``vdpbf16ps`` on bf16 pairs (below), where the CPU has AVX512-BF16 and that
  instruction multiplies faster than FMAs do: one ``vdpbf16ps`` does the work of two
  ``vfmadd231ps``, so it doubles the rate where a core issues one 512-bit instruction a
  cycle (AMD Zen 4) and gains nothing where it issues two FMAs a cycle but one
  ``vdpbf16ps`` (Intel's AVX-512 cores, where the bf16 GEMM ran at 0.56-0.70x the f32
  one);
- the f32 FMA kernel, the operands widened to f32 (exactly) while they are packed
  (``packed_kernels.py``), elsewhere.

Which one is faster is measured once per process on the first bf16 dot
(:func:`dpbf16_faster`: both kernels on one product in cache); ``XLAPY_BF16_DOT=dpbf16``
or ``=fma`` picks one, ``=off`` (or a CPU without AVX-512) leaves the dot on ``blas.py``'s
path (operands converted to f32, ``sgemm``, rounded once): :func:`make_bf16_dot_thunk`
returns None and the caller keeps its own thunk. That is the only hook in the dot
dispatch (``blas.make_dot_thunk``).

The kernel
----------
``vdpbf16ps acc, a, b`` adds, in each of its 16 f32 lanes ``i``, ``a[2i]*b[2i] +
a[2i+1]*b[2i+1]`` to ``acc[i]``. The GEMM ``C[M,N] = A[M,K] B[K,N]`` therefore packs
both operands as pairs along K (``packed_kernels.py`` has the layout and the generated
code): ``B`` in panels of ``16*NV`` columns, one 64-byte load per pair row and zmm word;
``A`` (as ``A^T``) in panels of ``MR`` rows, one broadcast 32-bit word per row. The
packer is generated too and reads any layout, so a transposed operand (the K-major
activations or the ``[N, K]`` gradients of a weight-gradient product) costs no more to
pack than a row-major one. The microkernel keeps an ``MR x NV`` block of 16-lane
accumulators in registers (:data:`SHAPES`: 6x4, 12x2 or 14x1 zmm, chosen by N) over
all of K and stores it, rounded to bf16 when the result is bf16, straight into the
result buffer.

Threads: the dot thunk runs ``packed_gemm``'s native driver (one call per pool thread,
the threads taking ``B``-panel packing units, then row-block units of every matrix in the
batch, from one shared counter), prepared once per operand geometry and rebound to each
call's arrays (``packed_gemm.PackedGemm``). :func:`bf16_matmul` shares work out from
Python instead: whole matrices per thread when the batch has enough of them, else row
blocks after the threads have packed ``B``'s panels together.

Numerics: ``vdpbf16ps`` treats bf16 denormal inputs as zero and flushes f32 denormal
results, and ``vcvtneps2bf16`` does the same when rounding to bf16 (oneDNN's and XLA's
bf16 paths on these CPUs do the same); the FMA kernel keeps denormals. The sum order
differs from ``sgemm``'s, so results agree with the interpreter to f32 rounding, not
bitwise.
"""
from __future__ import annotations

import functools
import logging
import time
from math import prod
from typing import TYPE_CHECKING, Callable, Sequence

import ml_dtypes
import numpy as np

from ...config import env_bf16_dot
from ...hlo.ir import HloInstruction
from ...hlo.types import BF16, F32
from .packed_kernels import SHAPES
from .packed_gemm import (PackedGemm, Scratch, host_has_avx512, pack_panels, packed_matmul,
                          packs_well, result_view)
from .thread_pool import cores, shared_pool

if TYPE_CHECKING:                      # blas.py imports this module
    from .blas import DotDims

log = logging.getLogger(__name__)

#: ``XLAPY_BF16_DOT``: ``dpbf16`` / ``fma`` pick the kernel, ``off`` keeps every bf16 dot
#: on the f32 BLAS path (for comparisons); unset: the kernel measured faster.
ENV_SWITCH = "XLAPY_BF16_DOT"
#: ``vdpbf16ps`` is chosen when it takes at most this fraction of the FMA kernel's time.
DPBF16_MARGIN = 0.8

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)


# --------------------------------------------------------------------------- availability
def host_has_avx512_bf16() -> bool:
    """Whether LLVM's host features include AVX512-BF16 (``vdpbf16ps``)."""
    from .jit_engine import host_target
    return "+avx512bf16" in host_target().features.split(",")


def _product_seconds(operand: str, a: np.ndarray, bm: np.ndarray, out: np.ndarray) -> float:
    """The shortest of five timings of three products on one thread."""
    scratch = Scratch()
    packed_matmul(a, bm, operand, scratch=scratch, out=out, dynamic=True)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(3):
            packed_matmul(a, bm, operand, scratch=scratch, out=out, dynamic=True)
        best = min(best, time.perf_counter() - t0)
    return best


@functools.lru_cache(maxsize=None)
def dpbf16_faster() -> bool:
    """Whether the ``vdpbf16ps`` GEMM beats the FMA GEMM on this CPU by
    :data:`DPBF16_MARGIN`: both time the same product (192 x 512 x 128, in cache) on one
    thread, once per process."""
    if not host_has_avx512_bf16():
        return False
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, 192, 512)).astype(_BF16)
    bm = rng.standard_normal((1, 512, 128)).astype(_BF16)
    out = np.empty((1, 192, 128), _F32)
    pairs = _product_seconds("bf16", a, bm, out)
    widened = _product_seconds("bf16w", a, bm, out)
    log.debug("bf16 dot kernels: vdpbf16ps %.1f us, FMA %.1f us a product",
              pairs / 3e-6, widened / 3e-6)
    return pairs <= DPBF16_MARGIN * widened


def dot_operand() -> str | None:
    """The ``packed_gemm`` operand kind bf16 dots run as: ``"bf16"`` (``vdpbf16ps`` on
    pairs), ``"bf16w"`` (FMA on operands widened to f32), or None (``blas.py``'s path):
    ``XLAPY_BF16_DOT``, else the faster kernel (:func:`dpbf16_faster`) on CPUs with
    AVX-512."""
    choice = env_bf16_dot()
    if choice == "off" or not host_has_avx512():
        return None
    if choice == "fma":
        return "bf16w"
    if choice == "dpbf16" and host_has_avx512_bf16():
        return "bf16"
    return "bf16" if dpbf16_faster() else "bf16w"


def pack_pairs(x: np.ndarray, width: int, name: str = "", scratch: Scratch | None = None
               ) -> np.ndarray:
    """``x`` ([B, K, N] bf16, any strides) as ``[B * ceil(N/width), ceil(K/2), width]``
    uint32 pair panels (``packed_kernels.py``'s layout), zero-padded, 64-byte aligned."""
    return pack_panels(x, width, "bf16", name, scratch)


def bf16_matmul(a: np.ndarray, bm: np.ndarray, threads: int = 1,
                parallel: Callable | None = None, scratch: Scratch | None = None,
                out: np.ndarray | None = None) -> np.ndarray:
    """``a @ bm`` for bf16 ``[B, M, K]`` and ``[B, K, N]``, summed in f32. The result is
    written into ``out`` (f32 or bf16, C-contiguous, ``B*M*N`` elements) when given and
    returned as ``[B, M, N]``; else a new f32 array. ``parallel(items, work)`` runs work
    items on threads (``threads`` of them)."""
    return packed_matmul(a, bm, "bf16", threads, parallel, scratch, out)


# ------------------------------------------------------------------------------ the hook
def handles(instr: HloInstruction) -> bool:
    """A dense, static-shaped dot of two bf16 operands with an f32 or bf16 result."""
    if instr.opcode != "dot" or len(instr.operands) != 2:
        return False
    et = instr.shape.element_type
    return (all(o.shape.is_array and o.shape.element_type == BF16
                for o in instr.operands)
            and et in (F32, BF16))


def upcast_wanted(instr: HloInstruction) -> bool:
    """Whether the CPU pipeline runs the bf16 dot ``instr`` as an f32 dot on converted
    operands (``passes/change_op_data_type.py``): when no packed kernel takes bf16 dots
    (:func:`dot_operand` None: ``blas.py`` would convert the operands itself, one
    NumPy pass each per call) and, with the FMA kernel, for products whose right operand
    the packed kernel does not suit (``packed_gemm.packs_well``: longer than ``F32_MAX_K``
    along K, or wider than its packed-panel budget): the f32 path gives those to
    OpenBLAS, which blocks K and N, where the packed kernel keeps whole ``K x 64`` panels
    and streams all of ``B`` per row unit (docs/performance.md, "bf16 steps on an Intel
    host"). The widening converts fuse into the operands' producers or run as loops; the
    same product either way (exact bf16 x bf16 products, f32 sums)."""
    if not handles(instr) or instr.shape.is_dynamic:
        return False
    operand = dot_operand()
    if operand is None:
        return True
    if operand != "bf16w":
        return False
    from .blas import dot_dims          # blas.py imports this module
    dims = dot_dims(instr)
    lhs, rhs = instr.operands[0].shape, instr.operands[1].shape
    return not packs_well(prod(lhs.dims[d] for d in dims.lhs_contract),
                          prod(rhs.dims[d] for d in dims.rhs_free))


class Bf16DotThunk:
    """``thunk(operands, out)`` for one bf16 dot (``blas.py``'s calling convention)."""

    def __init__(self, instr: HloInstruction, dims: "DotDims", operand: str = "bf16") -> None:
        self.dims = dims
        #: the packed GEMM's operand kind (:func:`dot_operand`)
        self.operand = operand
        self.out_dtype = instr.shape.element_type.dtype
        self.scratch = Scratch()
        #: the prepared product per operand geometry and result view (``PackedGemm``)
        self.gemms: dict[tuple, PackedGemm] = {}

    def __call__(self, operands: Sequence[np.ndarray], out: np.ndarray) -> None:
        lhs, rhs = operands
        d = self.dims
        bsz = prod(lhs.shape[i] for i in d.lhs_batch)
        m = prod(lhs.shape[i] for i in d.lhs_free)
        k = prod(lhs.shape[i] for i in d.lhs_contract)
        n = prod(rhs.shape[i] for i in d.rhs_free)
        if out.size == 0:
            return
        if k == 0:
            out.fill(0)
            return
        a = lhs.transpose(d.lhs_perm).reshape(bsz, m, k)      # views where they can be
        bm = rhs.transpose(d.rhs_perm).reshape(bsz, k, n)
        threads = cores() if 2 * bsz * m * n * k >= 2 * 64**3 else 1
        direct = result_view(out, (bsz, m, n), (_F32, _BF16)) is not None
        target = out if direct else self.scratch.get("c", (bsz, m, n), _F32)
        key = (a.shape, a.strides, bm.shape, bm.strides, target.dtype, threads)
        gemm = self.gemms.get(key)
        if gemm is None:
            gemm = self.gemms.setdefault(key, PackedGemm(self.operand))
        gemm(a, bm, target, threads, shared_pool() if threads > 1 else None)
        if not direct:
            np.copyto(out, target.reshape(out.shape), casting="unsafe")


def make_bf16_dot_thunk(instr: HloInstruction, dims: "DotDims") -> Bf16DotThunk | None:
    """The native bf16 thunk for ``instr``, or None (not a bf16 dot, no AVX-512, or
    ``XLAPY_BF16_DOT=off``): the caller then uses its own path. ``dims`` are the dot's
    ``blas.DotDims``."""
    if not handles(instr):
        return None
    operand = dot_operand()
    return None if operand is None else Bf16DotThunk(instr, dims, operand)


__all__ = ["bf16_matmul", "make_bf16_dot_thunk", "handles", "upcast_wanted",
           "dot_operand", "dpbf16_faster", "DPBF16_MARGIN",
           "host_has_avx512_bf16", "pack_pairs", "Bf16DotThunk", "SHAPES",
           "Scratch"]
