"""bf16 matrix products on AVX512-BF16: a packed GEMM built on ``vdpbf16ps``.

A ``dot`` whose two operands are ``bf16`` and whose result is ``f32`` or ``bf16`` (JAX's
``preferred_element_type=f32``, or a plain bf16 dot) is computed here when the host CPU
has AVX512-BF16 (``+avx512bf16`` in LLVM's host features): every product is summed in
f32 and a bf16 result is rounded once at the end, as XLA:CPU and the interpreter do.
Without the instructions the dot stays on ``blas.py``'s path (operands converted to f32,
``sgemm``, rounded once): :func:`make_bf16_dot_thunk` returns None and the caller keeps
its own thunk. That is the only hook in the dot dispatch (``blas.make_dot_thunk``).

The kernel
----------
``vdpbf16ps acc, a, b`` adds, in each of its 16 f32 lanes ``i``, ``a[2i]*b[2i] +
a[2i+1]*b[2i+1]`` to ``acc[i]``. The GEMM ``C[M,N] = A[M,K] B[K,N]`` therefore packs
both operands as pairs along K (``bf16_kernels.py`` has the layout and the generated
code): ``B`` in panels of ``16*NV`` columns, one 64-byte load per pair row and zmm word;
``A`` (as ``A^T``) in panels of ``MR`` rows, one broadcast 32-bit word per row. The
packer is generated too and reads any layout, so a transposed operand (the K-major
activations or the ``[N, K]`` gradients of a weight-gradient product) costs no more to
pack than a row-major one. The microkernel keeps an ``MR x NV`` block of 16-lane
accumulators in registers (:data:`SHAPES`: 6x4, 12x2 or 14x1 zmm, chosen by N) over
all of K and stores it, rounded to bf16 when the result is bf16, straight into the
result buffer.

Threads: a product with several matrices in its batch gives each thread whole matrices
(packing included); a single matrix is shared by row blocks, after the threads have
packed ``B``'s panels together (each thread then packs the ``A`` panels of its own rows).

Numerics: ``vdpbf16ps`` treats bf16 denormal inputs as zero and flushes f32 denormal
results, and ``vcvtneps2bf16`` does the same when rounding to bf16 (oneDNN's and XLA's
bf16 paths on these CPUs do the same); the sum order differs from ``sgemm``'s, so
results agree with the interpreter to f32 rounding, not bitwise.
"""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING, Any, Callable, Sequence

import ml_dtypes
import numpy as np

from ...errors import InvalidArgumentError
from ...hlo.ir import HloInstruction
from ...hlo.types import BF16, F32
from .bf16_kernels import SHAPES, kernel
from .thread_pool import cores, shared_pool
from .thunks import aligned_empty

if TYPE_CHECKING:                      # blas.py imports this module
    from .blas import DotDims

log = logging.getLogger(__name__)

#: ``XLAPY_BF16_DOT=off`` keeps every bf16 dot on the f32 BLAS path (for comparisons).
ENV_SWITCH = "XLAPY_BF16_DOT"

#: A shared ``B`` smaller than this (elements) is packed by the calling thread alone: the
#: pool's hand-off would cost more than the packing it shares.
SHARED_PACK_ELEMENTS = 1 << 17

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)


# --------------------------------------------------------------------------- availability
def host_has_avx512_bf16() -> bool:
    """Whether LLVM's host features include AVX512-BF16 (``vdpbf16ps``)."""
    from .jit_engine import host_target
    return "+avx512bf16" in host_target().features.split(",")


def native_enabled() -> bool:
    """The native kernel is used: the CPU has AVX512-BF16 and ``XLAPY_BF16_DOT`` is not
    ``off``."""
    return os.environ.get(ENV_SWITCH, "").lower() != "off" and host_has_avx512_bf16()


# ------------------------------------------------------------------------------ packing
def columns_per_group(n: int) -> int:
    """``NV`` for ``n`` output columns: the widest register block that is not mostly
    padding."""
    return 4 if n > 40 else 2 if n > 16 else 1


class Scratch:
    """Packing and result buffers kept between calls (per thread): no page faults on
    fresh memory each call."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, name: str, shape: tuple, dtype: Any) -> np.ndarray:
        """A 64-byte aligned ``shape`` array (zero-filled when new), the same each call."""
        bufs = self._local.__dict__.setdefault("bufs", {})
        buf = bufs.get(name)
        if buf is None or buf.shape != shape or buf.dtype != dtype:
            buf = bufs[name] = _aligned(shape, dtype, zero=True)
        return buf


class _Packed:
    """One operand ready for the packer: ``x`` ([B, K, W*G] bf16 view, any strides) and
    the panels' width ``W``; :meth:`run` packs panels ``[u0, u1)`` into ``out``."""

    def __init__(self, x: np.ndarray, width: int, out: np.ndarray) -> None:
        if any(st % 2 for st in x.strides):        # not on bf16 boundaries: copy once
            x = np.ascontiguousarray(x)
        self.x, self.out, self.width = x, out, width
        bsz, k, n = x.shape
        self.groups = -(-n // width)
        self.units = bsz * self.groups
        self.args = (x.ctypes.data, out.ctypes.data, *(st // 2 for st in x.strides), k, n,
                     (k + 1) // 2)

    def run(self, u0: int, u1: int) -> None:
        if u1 > u0:
            kernel(("pack", self.width))(*self.args, u0, u1, 0)


def pack_pairs(x: np.ndarray, width: int, name: str = "", scratch: Scratch | None = None
               ) -> np.ndarray:
    """``x`` ([B, K, N] bf16, any strides) as ``[B * ceil(N/width), ceil(K/2), width]``
    uint32 pair panels (``bf16_kernels.py``'s layout), zero-padded, 64-byte aligned."""
    bsz, k, n = x.shape
    shape = (bsz * -(-n // width), (k + 1) // 2, width)
    out = scratch.get(name, shape, np.uint32) if scratch else _aligned(shape, np.uint32)
    job = _Packed(x, width, out)
    job.run(0, job.units)
    return out


def _aligned(shape: tuple, dtype: Any, zero: bool = False) -> np.ndarray:
    """A C-contiguous ``shape`` array whose data starts on a 64-byte line."""
    dtype = np.dtype(dtype)
    return aligned_empty(prod(shape) * dtype.itemsize, zero=zero).view(dtype).reshape(shape)


# -------------------------------------------------------------------------------- thunk
@dataclass(frozen=True)
class _Geometry:
    batch: int
    m: int
    k: int
    n: int

    @property
    def nv(self) -> int:
        return columns_per_group(self.n)

    @property
    def mr(self) -> int:
        return SHAPES[self.nv]

    @property
    def mblocks(self) -> int:
        return -(-self.m // self.mr)

    @property
    def groups(self) -> int:
        return -(-self.n // (16 * self.nv))


def pieces(g: _Geometry, threads: int) -> list[tuple[int, int, int, int]]:
    """``(b0, b1, m0, m1)`` work items: batches shared out when there are enough of them,
    else each matrix's row blocks."""
    if g.batch >= threads:
        step = -(-g.batch // threads)
        return [(b, min(b + step, g.batch), 0, g.mblocks) for b in range(0, g.batch, step)]
    per = max(1, -(-g.mblocks // max(1, threads // g.batch)))
    return [(b, b + 1, m, min(m + per, g.mblocks))
            for b in range(g.batch) for m in range(0, g.mblocks, per)]


def _split(units: int, parts: int) -> list[tuple[int, int]]:
    step = -(-units // max(1, parts))
    return [(u, min(u + step, units)) for u in range(0, units, step)]


def _result_view(out: np.ndarray | None, shape: tuple) -> np.ndarray | None:
    """``out`` as the kernel's ``[B, M, N]`` result (f32 or bf16, contiguous columns), or
    None when it cannot be written directly."""
    if out is None or out.dtype not in (_F32, _BF16) or not out.flags.c_contiguous:
        return None
    return out.reshape(shape)


def bf16_matmul(a: np.ndarray, bm: np.ndarray, threads: int = 1,
                parallel: Callable | None = None, scratch: Scratch | None = None,
                out: np.ndarray | None = None) -> np.ndarray:
    """``a @ bm`` for bf16 ``[B, M, K]`` and ``[B, K, N]``, summed in f32. The result is
    written into ``out`` (f32 or bf16, C-contiguous, ``B*M*N`` elements) when given and
    returned as ``[B, M, N]``; else a new f32 array. ``parallel(items, work)`` runs work
    items on threads (``threads`` of them)."""
    bsz, m, k = a.shape
    n = bm.shape[2]
    g = _Geometry(bsz, m, k, n)
    nv, mr = g.nv, g.mr
    kpairs = (k + 1) // 2
    res = _result_view(out, (bsz, m, n))
    if res is None:
        if out is not None:
            raise InvalidArgumentError(
                f"bf16_matmul: out must be a C-contiguous f32 or bf16 array of {bsz}x{m}x{n}"
                f" elements, got {out.dtype} {out.shape} with strides {out.strides}")
        res = np.empty((bsz, m, n), _F32)

    def buf(name: str, shape: tuple) -> np.ndarray:
        return scratch.get(name, shape, np.uint32) if scratch else \
            _aligned(shape, np.uint32)
    ap = buf("a", (bsz * g.mblocks, kpairs, mr))
    bp = buf("b", (bsz * g.groups, kpairs, 16 * nv))
    pack_a = _Packed(a.transpose(0, 2, 1), mr, ap)
    pack_b = _Packed(bm, 16 * nv, bp)
    fn = kernel((nv, "bf16" if res.dtype == _BF16 else "f32"))
    fixed = (ap.ctypes.data, bp.ctypes.data, res.ctypes.data, g.mblocks * kpairs * mr,
             g.groups * kpairs * nv, kpairs, g.groups)
    tail = (m * n, n, m, n, g.mblocks, 0)

    def work(item: tuple, state: dict | None = None) -> None:
        b0, b1, m0, m1 = item
        if b1 - b0 > 1 or m1 - m0 == g.mblocks:       # whole matrices: pack B here too
            pack_b.run(b0 * g.groups, b1 * g.groups)
        pack_a.run(b0 * g.mblocks + m0, (b1 - 1) * g.mblocks + m1)
        fn(*fixed, b0, b1, m0, m1, *tail)

    items = pieces(g, threads)
    serial = parallel is None or len(items) <= 1
    if items and items[0][3] - items[0][2] != g.mblocks:   # rows shared: pack B first
        if serial or bsz * k * n < SHARED_PACK_ELEMENTS:
            pack_b.run(0, pack_b.units)
        else:
            parallel(_split(pack_b.units, threads), lambda it, st=None: pack_b.run(*it))
    if serial:
        for item in items:
            work(item)
    else:
        parallel(items, work)
    return res


# ------------------------------------------------------------------------------ the hook
def handles(instr: HloInstruction) -> bool:
    """A dense, static-shaped dot of two bf16 operands with an f32 or bf16 result."""
    if instr.opcode != "dot" or len(instr.operands) != 2:
        return False
    et = instr.shape.element_type
    return (all(o.shape.is_array and o.shape.element_type == BF16
                for o in instr.operands)
            and et in (F32, BF16))


class Bf16DotThunk:
    """``thunk(operands, out)`` for one bf16 dot (``blas.py``'s calling convention)."""

    def __init__(self, instr: HloInstruction, dims: "DotDims") -> None:
        self.dims = dims
        self.out_dtype = instr.shape.element_type.dtype
        self.scratch = Scratch()

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
        direct = _result_view(out, (bsz, m, n)) is not None
        target = out if direct else self.scratch.get("c", (bsz, m, n), _F32)
        bf16_matmul(a, bm, threads, shared_pool().parallel_for if threads > 1 else None,
                    self.scratch, target)
        if not direct:
            np.copyto(out, target.reshape(out.shape), casting="unsafe")


def make_bf16_dot_thunk(instr: HloInstruction, dims: "DotDims") -> Bf16DotThunk | None:
    """The native bf16 thunk for ``instr``, or None (not a bf16 dot, or no AVX512-BF16,
    or ``XLAPY_BF16_DOT=off``): the caller then uses its own path. ``dims`` are the
    dot's ``blas.DotDims``."""
    if not handles(instr) or not native_enabled():
        return None
    return Bf16DotThunk(instr, dims)


__all__ = ["bf16_matmul", "make_bf16_dot_thunk", "handles", "native_enabled",
           "host_has_avx512_bf16", "pack_pairs", "Bf16DotThunk", "SHAPES",
           "Scratch"]
