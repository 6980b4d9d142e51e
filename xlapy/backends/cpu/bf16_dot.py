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
a[2i+1]*b[2i+1]`` to ``acc[i]``. The GEMM ``C[M,N] = A[M,K] B[K,N]`` therefore takes

- ``A`` row-major with K padded to even: each 32-bit word is a pair ``(A[m,2p],
  A[m,2p+1])``, broadcast to all lanes (an ``A`` stored K-major, as the transposed
  activations of a weight gradient, is packed like ``B`` instead: rows of pairs);
- ``B`` packed by pairs of rows: ``Bp[p, n] = (B[2p, n], B[2p+1, n])`` as 32-bit words,
  so one 64-byte load is the pair row of 16 columns (rows padded past a power of two);
- ``C`` as an f32 ``[Mp, Np]`` scratch, M padded to the register block, N to the group.

The microkernel keeps an ``MR x NV`` block of 16-lane f32 accumulators in registers
(:data:`SHAPES`: 6x4, 12x2 or 14x1 zmm, chosen by N) over a block of :data:`KC` pairs,
so a ``KC x 16*NV`` panel of ``B`` stays in L1 while all row blocks stream past it. The
driver loops (batch, column group, K block, row block) are generated too; the work is
split over the runtime's pool by batch or by row blocks. Packing and the final copy (or
rounding to bf16) are NumPy.

Numerics: ``vdpbf16ps`` treats bf16 denormal inputs as zero and flushes f32 denormal
results (oneDNN's and XLA's bf16 paths on these CPUs do the same); the sum order differs
from ``sgemm``'s, so results agree with the interpreter to f32 rounding, not bitwise.
"""
from __future__ import annotations

import ctypes
import logging
import os
import threading
from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING, Any, Callable, Sequence

import ml_dtypes
import numpy as np
from llvmlite import ir

from ...hlo.ir import HloInstruction
from ...hlo.types import BF16, F32
from .kernel_support import c64, carried_loop, for_loop

if TYPE_CHECKING:                      # blas.py imports this module
    from .blas import DotDims

log = logging.getLogger(__name__)

#: Pairs of K per block: a ``KC x 64`` bf16 panel of B (``KC * 256`` bytes) fits L1.
KC = 96
#: ``NV -> MR``: zmm columns per register block and the rows that fill the registers.
SHAPES = {4: 6, 2: 12, 1: 14}
#: ``XLAPY_BF16_DOT=off`` keeps every bf16 dot on the f32 BLAS path (for comparisons).
ENV_SWITCH = "XLAPY_BF16_DOT"

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)
_ARGS = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 14
_lock = threading.Lock()
_loaded: dict | None = None


# --------------------------------------------------------------------------- availability
def host_has_avx512_bf16() -> bool:
    """Whether LLVM's host features include AVX512-BF16 (``vdpbf16ps``)."""
    from .jit_engine import host_target
    return "+avx512bf16" in host_target().features.split(",")


def native_enabled() -> bool:
    """The native kernel is used: the CPU has AVX512-BF16 and ``XLAPY_BF16_DOT`` is not
    ``off``."""
    return os.environ.get(ENV_SWITCH, "").lower() != "off" and host_has_avx512_bf16()


# ------------------------------------------------------------------------------ the code
class _BFloat(ir.Type):
    """LLVM's ``bfloat`` (llvmlite has no class for it); only used in vector types."""

    def _to_string(self) -> str:
        return "bfloat"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _BFloat)

    def __hash__(self) -> int:
        return hash("bfloat")


def kernel_name(nv: int) -> str:
    return f"xlapy_bf16_gemm_{SHAPES[nv]}x{nv}"


def _emit_gemm(module: ir.Module, nv: int) -> None:
    """``void name(a, bp, c, sa, sb, ldb, sc, lda, aps, kpairs, ldc, groups, b0, b1, m0, m1,
    kc)``.

    For batches ``[b0, b1)`` and row blocks ``[m0, m1)``: ``c[b] = a[b] @ b[b]`` with
    ``a`` as i32 pairs (row stride ``lda``, pair stride ``aps``: row-major pairs or, for
    a K-major operand, rows of pairs like ``bp``'s), ``bp`` packed pair rows (stride
    ``ldb`` zmm words; module docstring), ``c`` f32 (row stride ``ldc``); ``sa``, ``sb``,
    ``sc`` are batch strides in elements of those types (pairs, zmm words, floats)."""
    mr = SHAPES[nv]
    f32, i32 = ir.FloatType(), ir.IntType(32)
    v16f, v16i = ir.VectorType(f32, 16), ir.VectorType(i32, 16)
    v32b = ir.VectorType(_BFloat(), 32)
    dp_name = "llvm.x86.avx512bf16.dpbf16ps.512"
    dp = module.globals.get(dp_name) or ir.Function(
        module, ir.FunctionType(v16f, [v16f, v32b, v32b]), name=dp_name)
    i64 = ir.IntType(64)
    fnty = ir.FunctionType(ir.VoidType(), [i32.as_pointer(), v16i.as_pointer(),
                                           f32.as_pointer()] + [i64] * 14)
    fn = ir.Function(module, fnty, name=kernel_name(nv))
    (a, bp, c, sa, sb, ldb, sc, lda, aps, kpairs, ldc, groups, b0, b1, m0, m1, kc) = fn.args
    for arg in (a, bp, c):
        arg.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    zero = ir.Constant(v16f, [0.0] * 16)
    undef_i = ir.Constant(v16i, None)
    splat = ir.Constant(ir.VectorType(i32, 16), [0] * 16)
    nkb = b.sdiv(b.add(kpairs, b.sub(kc, c64(1))), kc)

    def batch(bi: ir.Value) -> None:
        ab = b.gep(a, [b.mul(bi, sa)])
        bb = b.gep(bp, [b.mul(bi, sb)])
        cb = b.gep(c, [b.mul(bi, sc)])

        def group(g: ir.Value) -> None:
            panel = b.gep(bb, [b.mul(g, c64(nv))])
            col0 = b.mul(g, c64(16 * nv))

            def kblock(kbi: ir.Value) -> None:
                p0 = b.mul(kbi, kc)
                p1 = b.select(b.icmp_signed("<", b.add(p0, kc), kpairs), b.add(p0, kc), kpairs)
                first = b.icmp_signed("==", kbi, c64(0))

                def rows(mb: ir.Value) -> None:
                    row0 = b.mul(mb, c64(mr))
                    cptr = [[b.bitcast(b.gep(cb, [b.add(b.mul(b.add(row0, c64(r)), ldc),
                                                         b.add(col0, c64(16 * v)))]),
                                       v16f.as_pointer()) for v in range(nv)]
                            for r in range(mr)]
                    init = [b.select(first, zero, b.load(cptr[r][v], align=4))
                            for r in range(mr) for v in range(nv)]
                    arow = [b.gep(ab, [b.mul(b.add(row0, c64(r)), lda)]) for r in range(mr)]

                    def step(p: ir.Value, acc: list) -> list:
                        bv = [b.bitcast(b.load(b.gep(panel, [b.add(b.mul(p, ldb), c64(v))]),
                                               align=64), v32b) for v in range(nv)]
                        out = list(acc)
                        for r in range(mr):
                            word = b.load(b.gep(arow[r], [b.mul(p, aps)]), align=4)
                            av = b.bitcast(b.shuffle_vector(b.insert_element(undef_i, word,
                                                                             c64(0)),
                                                            undef_i, splat), v32b)
                            for v in range(nv):
                                out[r * nv + v] = b.call(dp, [acc[r * nv + v], av, bv[v]])
                        return out
                    final = carried_loop(b, p0, p1, init, step, "p")
                    for r in range(mr):
                        for v in range(nv):
                            b.store(final[r * nv + v], cptr[r][v], align=4)
                for_loop(b, m0, m1, rows, "mb")
            for_loop(b, c64(0), nkb, kblock, "kb")
        for_loop(b, c64(0), groups, group, "g")
    for_loop(b, b0, b1, batch, "b")
    b.ret_void()


def _kernels() -> dict[int, Callable]:
    """``NV -> ctypes function`` of the compiled GEMMs (compiled once per process)."""
    global _loaded
    with _lock:
        if _loaded is None:
            from .jit_engine import engine
            eng = engine()
            module = eng.new_module("xlapy_bf16_dot")
            for nv in SHAPES:
                _emit_gemm(module, nv)
            names = [kernel_name(nv) for nv in SHAPES]
            code = eng.load(eng.compile([str(module)], names).objects, names)
            proto = ctypes.CFUNCTYPE(None, *_ARGS)
            _loaded = {"code": code,
                       **{nv: proto(code.address(kernel_name(nv))) for nv in SHAPES}}
        return {nv: _loaded[nv] for nv in SHAPES}


# ------------------------------------------------------------------------------ packing
def columns_per_group(n: int) -> int:
    """``NV`` for ``n`` output columns: the widest register block that is not mostly
    padding."""
    return 4 if n > 40 else 2 if n > 16 else 1


class Scratch:
    """Packing and result buffers kept between calls (per thread): no page faults on
    fresh memory each call, and the zero padding, never written, is filled only once."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, name: str, shape: tuple, dtype: Any) -> np.ndarray:
        """A zero-filled 64-byte aligned ``shape`` array the first time, then the same."""
        bufs = self._local.__dict__.setdefault("bufs", {})
        buf = bufs.get(name)
        if buf is None or buf.shape != shape or buf.dtype != dtype:
            buf = bufs[name] = aligned_empty(shape, dtype)
            buf.fill(0)
        return buf


def pack_lhs(a: np.ndarray, mp: int, scratch: Scratch | None = None) -> np.ndarray:
    """``a`` ([B, M, K] bf16, any strides) as [B, Mp, Kp/2] uint32 pairs, zero-padded."""
    bsz, m, k = a.shape
    shape = (bsz, mp, k + (k & 1))
    out = scratch.get("a", shape, np.uint16) if scratch else np.zeros(shape, np.uint16)
    out[:, :m, :k] = a.view(np.uint16)
    return out.view(np.uint32)


def rhs_stride(n: int, nv: int) -> int:
    """Words per packed pair row of B: the columns padded to whole groups, plus one
    cache line when there are several groups (a power-of-two stride would map the rows
    of a panel to the same L1 sets)."""
    groups = -(-n // (16 * nv))
    return groups * 16 * nv + (16 if groups > 1 else 0)


def pack_pairs(x: np.ndarray, width: int, name: str, scratch: Scratch | None = None
               ) -> np.ndarray:
    """``x`` ([B, K, N] bf16, any strides) as [B, Kp/2, width] uint32 pairs (the low half
    from row ``2p``, the high half from row ``2p+1``), zero-padded, 64-byte aligned."""
    bsz, k, n = x.shape
    kp = (k + 1) // 2
    bits = x.view(np.uint16)
    shape = (bsz, kp, width)
    if scratch is not None:
        out = scratch.get(name, shape, np.uint32)
    else:
        out = aligned_empty(shape, np.uint32)
        out.fill(0)
    halves = out.view(np.uint16).reshape(bsz, kp, -1, 2)
    halves[:, :, :n, 0] = bits[:, 0::2, :]
    halves[:, :k // 2, :n, 1] = bits[:, 1::2, :]
    return out


def pack_rhs(bm: np.ndarray, nv: int, scratch: Scratch | None = None) -> np.ndarray:
    """``bm`` ([B, K, N] bf16) as [B, Kp/2, stride] uint32 pairs (:func:`pack_pairs`)."""
    return pack_pairs(bm, rhs_stride(bm.shape[2], nv), "b", scratch)


def k_major(a: np.ndarray) -> bool:
    """Whether ``a`` ([B, M, K]) is stored with K outermost (e.g. the transposed
    activations of a weight gradient): then it is packed as K pairs of rows."""
    return a.shape[1] > 1 and a.shape[2] > 1 and abs(a.strides[2]) > abs(a.strides[1])


def aligned_empty(shape: tuple, dtype: Any, align: int = 64) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on an ``align``-byte line."""
    dtype = np.dtype(dtype)
    nbytes = prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + align, np.uint8)
    start = -raw.ctypes.data % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


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


def bf16_matmul(a: np.ndarray, bm: np.ndarray, threads: int = 1,
                parallel: Callable | None = None, scratch: Scratch | None = None
                ) -> np.ndarray:
    """``a @ bm`` for bf16 ``[B, M, K]`` and ``[B, K, N]``, summed in f32: an f32
    ``[B, M, N]`` array (a view of ``scratch``'s buffer when given: valid until the next
    call). ``parallel(items, work)`` runs work items on threads."""
    bsz, m, k = a.shape
    n = bm.shape[2]
    g = _Geometry(bsz, m, k, n)
    nv, mr = g.nv, g.mr
    mp = g.mblocks * mr
    kpairs = (k + 1) // 2
    if k_major(a):                   # [B, Kp/2, Mp] pairs: rows at stride 1, pairs at Mp
        ap = pack_pairs(a.transpose(0, 2, 1), mp, "a", scratch)
        lda, aps = 1, mp
    else:
        ap = pack_lhs(a, mp, scratch)
        lda, aps = kpairs, 1
    bpk = pack_rhs(bm, nv, scratch)
    width = g.groups * 16 * nv
    cshape = (bsz, g.mblocks * mr, width)
    c = scratch.get("c", cshape, _F32) if scratch else np.empty(cshape, _F32)
    fn = _kernels()[nv]
    pa, pb, pc = ap.ctypes.data, bpk.ctypes.data, c.ctypes.data
    fixed = (ap[0].size, bpk[0].size // 16, bpk.shape[2] // 16, c[0].size, lda, aps, kpairs,
             width, g.groups)

    def work(item: tuple, state: dict | None = None) -> None:
        fn(pa, pb, pc, *fixed, *item, KC)
    items = pieces(g, threads)
    if parallel is None or len(items) == 1:
        for item in items:
            work(item)
    else:
        parallel(items, work)
    return c[:, :m, :n]


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
        from .thunks import cores, shared_pool
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
        c = bf16_matmul(a, bm, threads, shared_pool().parallel_for if threads > 1 else None,
                        self.scratch)
        np.copyto(out, c.reshape(out.shape), casting="unsafe")


def make_bf16_dot_thunk(instr: HloInstruction, dims: "DotDims") -> Bf16DotThunk | None:
    """The native bf16 thunk for ``instr``, or None (not a bf16 dot, or no AVX512-BF16,
    or ``XLAPY_BF16_DOT=off``): the caller then uses its own path. ``dims`` are the
    dot's ``blas.DotDims``."""
    if not handles(instr) or not native_enabled():
        return None
    return Bf16DotThunk(instr, dims)


__all__ = ["bf16_matmul", "make_bf16_dot_thunk", "handles", "native_enabled",
           "host_has_avx512_bf16", "pack_lhs", "pack_rhs", "pack_pairs", "k_major",
           "Bf16DotThunk", "KC", "SHAPES", "Scratch"]
