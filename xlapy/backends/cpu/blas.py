"""HLO ``dot`` for the CPU backend: a library thunk calling OpenBLAS (``scipy-openblas32``).

Calling convention (shared with the runtime)
--------------------------------------------
``make_dot_thunk(instr)`` returns ``thunk(operands, out) -> None``:

- ``operands`` is ``[lhs, rhs]``: NumPy arrays whose ``.shape`` is the operand's *logical*
  dims and whose ``.dtype`` is its element type's dtype. Any strides are accepted: views
  whose strides follow the HLO layout (a column-major ``f32[M,K]{0,1}`` arrives as an
  ``(M, K)`` array with strides ``(4, 4*M)``), non-contiguous slices, negative or zero
  strides. Operands are only read.
- ``out`` follows the same convention for the result shape. The thunk writes every element
  of ``out`` in place (its previous contents are ignored, NaN garbage included) and never
  rebinds it. ``out`` must not overlap the operands.

``supports_dot(instr)`` says whether ``make_dot_thunk`` accepts the instruction (any
static-shaped dense ``dot``; not ``sparsity``).

How a dot runs
--------------
The dimension numbers split each operand into batch, free and contracting dims, so the dot
is a batch of matrix products ``C[b] = A[b] @ B[b]`` with ``A`` = lhs as ``[B, M, K]``,
``B`` = rhs as ``[B, K, N]`` and ``C`` = out as ``[B, M, N]`` (result dims are batch, lhs
free, rhs free). When a group of dims collapses into one strided dim in an array and its
matrix is row- or column-major (one unit stride), the array is passed to BLAS as it is,
with the transpose flag and leading dimension that describe it; a column-major output is
computed as ``C^T = B^T A^T``. Only arrays that do not fit are copied (to a contiguous
``[B, M, K]``/``[B, K, N]``/``[B, M, N]``). A plan is made once per combination of array
dims, strides and dtypes (``DotThunk.plans``).

Paths (benchmarks/dot_crossover.py; 2 cores, OpenBLAS 0.3.34 SkylakeX kernel):

- ``M*N*K < SMALL_DOT_FLOPS`` (64^3) per matrix: ``numpy.matmul`` into ``out``, cheaper
  through the thunk than the BLAS path (the ctypes call and the one-thread switch below).
  Below 64^3 NumPy's own OpenBLAS stays single-threaded, so its thread pool does not wake up.
  A batch of such products of at least ``PARALLEL_SMALL_BATCH_FLOPS`` in all (attention's
  per-head products) is cut along the batch into one slice per core, each a
  ``numpy.matmul`` on the runtime's pool (NumPy releases the GIL in it).
- one product: ``?gemm`` straight on the arrays; from ``PARALLEL_GEMM_FLOPS`` (256^3) it
  is cut into one block of C's columns (rows when M > N) per core, each a ``?gemm`` on the
  runtime's pool (``GemmCall.pieces``); f32/f64 pieces run as one native pool job
  (``blas_lib.NativePieces``: the threads take pieces from a shared counter without the
  GIL, so a thread the host runs late leaves its piece to the others). OpenBLAS itself
  runs one thread (``blas_lib``'s docstring says why); with
  ``XLAPY_CPU_OPENBLAS_THREADS=1`` a single f32/f64 product instead runs as one OpenBLAS
  call that OpenBLAS threads itself, its threads' parts handed to the pool
  (``openblas_threads.py``: the threads share the packed operand).
- on hosts with AVX-512, f32 products from ``PARALLEL_GEMM_FLOPS`` with ``K <= 1024`` and
  fewer matrices than cores: the generated packed GEMM (``packed_gemm.py``), whose
  threads share one packing of ``B`` and take row blocks of ``A`` as work units, instead
  of split OpenBLAS calls that each pack the shared operand again
  (``XLAPY_F32_GEMM=openblas`` keeps them in OpenBLAS; while PyTorch's MKL takes the
  process's products they stay there unless ``XLAPY_F32_GEMM=packed``).
- ``M == 1`` or ``N == 1``: ``?gemv``; ``M == N == 1``: ``?dot`` (both faster than
  ``sgemm`` on such shapes).

The figures behind these paths are in docs/performance.md ("Measurements behind the CPU
backend's constants").
- batches: ``?gemm_batch_strided`` (complex ones: one ``?gemm`` per matrix), the batch cut
  over the pool's threads from ``PARALLEL_GEMM_FLOPS`` in all (with fewer matrices than
  threads, each product is cut into blocks instead).

Element types: ``f32``/``f64``/``c64``/``c128`` results run in ``s/d/c/z`` BLAS; ``f16``,
``bf16`` and the f8 types convert the operands to the result type, multiply in f32 with
``sgemm`` and round once (XLA:CPU's and the interpreter's numerics; two bf16 operands
go to ``bf16_dot.py``'s AVX512-BF16 kernel instead when the CPU has it); integer and
``pred`` results multiply in 64-bit integers and wrap modulo 2^bits. ``operand_precision`` and
``algorithm`` do not change CPU results.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Callable, Sequence

import numpy as np

from ...errors import ExecutionError, InvalidArgumentError, ShapeError, UnimplementedError
from ...hlo.ir import HloInstruction
from ...hlo.types import ElementType
from ..interpreter.evaluator import describe
from ..interpreter.linalg import wrap_integers
from .bf16_dot import Bf16DotThunk, make_bf16_dot_thunk
from . import openblas_threads
from .blas_lib import (BLAS_DTYPES, MatmulPlan, NativePieces, VectorCall, dense_geometry,
                       geometry, library, matmul_into, plan_matmul, plan_vector)
from .packed_gemm import PackedGemm, f32_wanted
from .process_blas import in_use as process_blas_in_use, process_gemm
from .thread_pool import cores, shared_pool, team_usable
from .thunks import address_of

#: Below this many multiply-adds per matrix (M*N*K) numpy.matmul beats the ctypes call.
SMALL_DOT_FLOPS = 64 * 64 * 64
#: A batch of small products (below SMALL_DOT_FLOPS each) with at least this many flops in
#: all is cut along the batch over the pool's threads.
PARALLEL_SMALL_BATCH_FLOPS = 2 * 128 ** 3
_F32 = np.dtype(np.float32)


# --------------------------------------------------------------------------------------------
# dot

@dataclass(frozen=True)
class DotDims:
    """A dot's dims: lhs (batch, free, contracting), rhs (batch, contracting, free)."""

    lhs_batch: tuple[int, ...]
    lhs_free: tuple[int, ...]
    lhs_contract: tuple[int, ...]
    rhs_batch: tuple[int, ...]
    rhs_contract: tuple[int, ...]
    rhs_free: tuple[int, ...]

    @property
    def lhs_perm(self) -> list[int]:
        return [*self.lhs_batch, *self.lhs_free, *self.lhs_contract]

    @property
    def rhs_perm(self) -> list[int]:
        return [*self.rhs_batch, *self.rhs_contract, *self.rhs_free]


def dot_dims(instr: HloInstruction) -> DotDims:
    """The dimension numbers of ``instr``, checked against its operand and result shapes."""
    if instr.opcode != "dot" or len(instr.operands) != 2:
        raise InvalidArgumentError(f"{describe(instr)}: expected a dot with 2 operands")
    ls, rs = instr.operands[0].shape, instr.operands[1].shape
    if not (ls.is_array and rs.is_array and instr.shape.is_array):
        raise InvalidArgumentError(f"{describe(instr)}: dot operands and result must be arrays")

    def get(name: str) -> tuple[int, ...]:
        return tuple(int(d) for d in instr.attr(name, ()) or ())

    lb, lc = get("lhs_batch_dims"), get("lhs_contracting_dims")
    rb, rc = get("rhs_batch_dims"), get("rhs_contracting_dims")
    for name, dims, shape in (("lhs", lb + lc, ls), ("rhs", rb + rc, rs)):
        if len(set(dims)) != len(dims) or any(not 0 <= d < shape.rank for d in dims):
            raise ShapeError(f"{describe(instr)}: {name} batch/contracting dims {dims} are "
                             f"repeated or out of range for {shape}")
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise ShapeError(f"{describe(instr)}: batch/contracting dim lists differ in length "
                         f"(lhs {lb}/{lc}, rhs {rb}/{rc})")
    for kind, a, b in (("batch", lb, rb), ("contracting", lc, rc)):
        for da, db in zip(a, b):
            if ls.dims[da] != rs.dims[db]:
                raise ShapeError(f"{describe(instr)}: lhs {kind} dim {da} (size {ls.dims[da]}) "
                                 f"!= rhs {kind} dim {db} (size {rs.dims[db]})")
    lf = tuple(d for d in range(ls.rank) if d not in lb and d not in lc)
    rf = tuple(d for d in range(rs.rank) if d not in rb and d not in rc)
    expect = tuple(ls.dims[d] for d in lb + lf) + tuple(rs.dims[d] for d in rf)
    if expect != instr.shape.dims:
        raise ShapeError(f"{describe(instr)}: operands {ls} and {rs} give result dims {expect}, "
                         f"not {instr.shape.dims}")
    return DotDims(lb, lf, lc, rb, rc, rf)


def static_arrays(instr: HloInstruction) -> bool:
    """Whether ``instr``'s result and operands are all static-shaped arrays."""
    return all(s.is_array and not s.is_dynamic
               for s in (instr.shape, *(o.shape for o in instr.operands)))


def supports_dot(instr: HloInstruction) -> bool:
    """Whether :func:`make_dot_thunk` handles ``instr`` (a dense, static-shaped dot)."""
    if instr.opcode != "dot" or len(instr.operands) != 2 or instr.attr("sparsity") is not None:
        return False
    if not static_arrays(instr):
        return False
    try:
        dot_dims(instr)
    except InvalidArgumentError:
        return False
    return True


def compute_dtype(et: ElementType) -> np.dtype | None:
    """The BLAS dtype a result of type ``et`` is computed in, or None for the integer path."""
    if et.is_complex:
        return np.dtype(np.complex64 if et.bits == 64 else np.complex128)
    if et.is_floating:
        return np.dtype(np.float64 if et.bits == 64 else np.float32)
    return None


def to_result_type(x: np.ndarray, et: ElementType) -> np.ndarray:
    """An operand converted to the result type, as XLA does before a dot."""
    return x if x.dtype == et.dtype else x.astype(et.dtype)


class _BlasDotPlan:
    """How one dot runs for one combination of operand/output dims, strides and dtypes."""

    def __init__(self, dims: DotDims, acc: np.dtype, et: ElementType,
                 lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> None:
        self.dims, self.acc, self.et = dims, acc, et
        d = dims
        self.batch = prod(lhs.shape[i] for i in d.lhs_batch)
        self.m = prod(lhs.shape[i] for i in d.lhs_free)
        self.k = prod(lhs.shape[i] for i in d.lhs_contract)
        self.n = prod(rhs.shape[i] for i in d.rhs_free)
        self.shape3 = ((self.batch, self.m, self.k), (self.batch, self.k, self.n),
                       (self.batch, self.m, self.n))
        self.empty = self.batch == 0 or self.m == 0 or self.n == 0
        self.zero = not self.empty and self.k == 0
        self.small = self.m * self.n * self.k < SMALL_DOT_FLOPS
        # the output is written directly when it has the compute dtype (and, for the NumPy
        # path, when it reshapes to [B, M, N] without a copy)
        self.out_direct = out.dtype == acc
        if self.out_direct and self.small and not self.empty:
            self.out_direct = np.may_share_memory(out.reshape(self.shape3[2]), out)
        self.plan: MatmulPlan | None = None
        self.vector: VectorCall | None = None
        self.pieces: list[tuple] | None = None
        self.external: Callable[[int, int, int], None] | None = None
        self.native: NativePieces | None = None
        self.packed: PackedGemm | None = None
        self.batch_slices = self._batch_slices()
        if self.empty or self.zero or (self.small and not self._process_batch(lhs, rhs, out)):
            return
        if self.external is not None:
            return
        if (acc == _F32 and lhs.dtype == rhs.dtype == acc and et.dtype == acc
                and f32_wanted(self.batch, self.m, self.k, self.n, process_blas_in_use())):
            self.packed = PackedGemm()
            self.threads = cores()
            self.out_direct = out.flags.c_contiguous
            return
        nb, nlf = len(d.lhs_batch), len(d.lhs_free)
        def usable(x: np.ndarray) -> bool:
            return x.dtype == acc and et.dtype == acc
        ga = geometry(lhs, d.lhs_batch, d.lhs_free, d.lhs_contract) if usable(lhs) else None
        gb = geometry(rhs, d.rhs_batch, d.rhs_contract, d.rhs_free) if usable(rhs) else None
        gc = (geometry(out, range(nb), range(nb, nb + nlf), range(nb + nlf, out.ndim))
              if self.out_direct else None)
        self.plan = plan_matmul(acc, self.batch, self.m, self.k, self.n, ga, gb, gc)
        if self.plan is None:       # beyond 32-bit BLAS sizes: NumPy
            self.small = True
            if self.out_direct:
                self.out_direct = np.may_share_memory(out.reshape(self.shape3[2]), out)
            return
        if self.batch == 1 and (self.m == 1 or self.n == 1):
            p = self.plan
            final = [dense_geometry(1, r, c) if copy else g for copy, g, (r, c) in
                     ((p.copy_a, ga, (self.m, self.k)), (p.copy_b, gb, (self.k, self.n)),
                      (p.temp_c, gc, (self.m, self.n)))]
            self.vector = plan_vector(acc, *final)
        # one call on the process's BLAS (threaded by itself on the OpenMP team), or
        # OpenBLAS pieces while the pool backs off from that team
        if self.vector is None:
            self.external = process_gemm(self.plan.call)
            self._plan_pieces()

    def _process_batch(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> bool:
        """Plan a batch of small products as one call of the process's BLAS
        (``process_blas``) when the arrays need no copies; whether it is planned so."""
        d, acc = self.dims, self.acc
        if self.batch <= 1 or not process_blas_in_use() or \
                not (lhs.dtype == rhs.dtype == out.dtype == acc == self.et.dtype):
            return False
        nb, nlf = len(d.lhs_batch), len(d.lhs_free)
        plan = plan_matmul(acc, self.batch, self.m, self.k, self.n,
                           geometry(lhs, d.lhs_batch, d.lhs_free, d.lhs_contract),
                           geometry(rhs, d.rhs_batch, d.rhs_contract, d.rhs_free),
                           geometry(out, range(nb), range(nb, nb + nlf), range(nb + nlf, out.ndim)))
        if plan is None or plan.copy_a or plan.copy_b or plan.temp_c:
            return False
        self.external = process_gemm(plan.call)
        if self.external is None:
            return False
        self.plan, self.small, self.batch_slices, self.out_direct = plan, False, None, True
        self._plan_pieces()
        return True

    def _plan_pieces(self) -> None:
        """The plan's call cut for the pool's threads (when large enough), as one native
        job where the pieces allow."""
        self.pieces = self.plan.call.pieces(cores())
        if NativePieces.usable(self.pieces):
            self.native = NativePieces(self.pieces)

    def _batch_slices(self) -> list[slice] | None:
        """The batch cut into one slice per core for a batch of small products written
        straight into the output, or None (one ``numpy.matmul``)."""
        workers = min(cores(), self.batch)
        if not (self.small and self.out_direct and not self.empty and not self.zero) or \
                workers <= 1 or \
                2 * self.batch * self.m * self.n * self.k < PARALLEL_SMALL_BATCH_FLOPS:
            return None
        return [slice(self.batch * i // workers, self.batch * (i + 1) // workers)
                for i in range(workers)]

    def summary(self) -> str:
        """One line: the path this plan takes (for tests and debugging)."""
        if self.empty or self.zero:
            return "empty" if self.empty else "zeros"
        if self.small:
            return f"numpy parallel={len(self.batch_slices)}" if self.batch_slices else "numpy"
        if self.packed is not None:
            return f"packed f32 batch={self.batch} copies={'none' if self.out_direct else 'out'}"
        p = self.plan
        kind = ("dot" if self.vector.rows == 0 else "gemv") if self.vector else \
            ("gemm process-blas" if self.external else "gemm")
        if self.pieces is not None:
            kind += f" parallel={len(self.pieces)}"
        copies = [n for n, f in (("lhs", p.copy_a), ("rhs", p.copy_b), ("out", p.temp_c)) if f]
        return f"{kind} batch={self.batch} copies={','.join(copies) or 'none'}"

    def operand(self, x: np.ndarray, perm: list[int], shape3: tuple[int, int, int],
                dense: bool) -> np.ndarray:
        """An operand as ``[B, rows, cols]`` of the compute dtype (contiguous if ``dense``)."""
        x = to_result_type(x, self.et).transpose(perm)
        if x.dtype != self.acc or dense:
            x = np.ascontiguousarray(x, dtype=self.acc)
        return x.reshape(shape3)

    def run(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> None:
        if self.empty:
            return
        if self.zero:
            out.fill(0)
            return
        d = self.dims
        if self.packed is not None:
            self._packed(lhs, rhs, out)
            return
        if self.small:
            a = self.operand(lhs, d.lhs_perm, self.shape3[0], False)
            b = self.operand(rhs, d.rhs_perm, self.shape3[1], False)
            if self.batch_slices is not None:
                self._small_batch(a, b, out.reshape(self.shape3[2]))
            elif self.out_direct:
                np.matmul(a, b, out=out.reshape(self.shape3[2]))
            else:     # IEEE results (inf, nan) as compiled code gives them: no warnings
                with np.errstate(all="ignore"):
                    np.copyto(out, np.matmul(a, b).reshape(out.shape), casting="unsafe")
            return
        plan = self.plan
        if plan.copy_a:
            lhs = self.operand(lhs, d.lhs_perm, self.shape3[0], True)
        if plan.copy_b:
            rhs = self.operand(rhs, d.rhs_perm, self.shape3[1], True)
        target = np.empty(self.shape3[2], dtype=self.acc) if plan.temp_c else out
        pa, pb, pc = address_of(lhs), address_of(rhs), address_of(target)
        if self.vector is not None:          # works on the unswapped lhs and rhs
            self.vector.run(pa, pb, pc, target)
        elif plan.swap:
            self._gemm(pb, pa, pc)
        else:
            self._gemm(pa, pb, pc)
        if plan.temp_c:
            np.copyto(out, target.reshape(out.shape), casting="unsafe")


    def _packed(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> None:
        """The generated f32 GEMM on views of the operands (copied only where their dims
        do not collapse), into ``out`` or a temporary copied out."""
        d = self.dims
        a = lhs.transpose(d.lhs_perm).reshape(self.shape3[0])
        b = rhs.transpose(d.rhs_perm).reshape(self.shape3[1])
        target = out if self.out_direct else self.packed.scratch.get("c", self.shape3[2],
                                                                      self.acc)
        self.packed(a, b, target, self.threads, shared_pool())
        if not self.out_direct:
            np.copyto(out, target.reshape(out.shape))

    def _small_batch(self, a: np.ndarray, b: np.ndarray, out3: np.ndarray) -> None:
        def work(part: slice, state: dict) -> None:
            np.matmul(a[part], b[part], out=out3[part])
        shared_pool().parallel_for(self.batch_slices, work)

    def _gemm(self, pa: int, pb: int, pc: int) -> None:
        if self.external is not None and process_blas_in_use() and team_usable():
            self.external(pa, pb, pc)
            return
        if self.pieces is None:
            self.plan.call.run(pa, pb, pc)
            return
        pool = shared_pool()
        if self.native is not None and self.plan.call.batch == 1 and \
                openblas_threads.usable(pool):
            with openblas_threads.threaded(pool.size):
                self.plan.call.run(pa, pb, pc)
            return
        if self.native is not None and pool.native:
            self.native.run(pool, pa, pb, pc)
            return

        def work(piece: tuple, state: dict) -> None:
            call, oa, ob, oc = piece
            call.run(pa + oa, pb + ob, pc + oc)
        shared_pool().parallel_for(self.pieces, work)


def _integer_dot(dims: DotDims, et: ElementType, lhs: np.ndarray, rhs: np.ndarray,
                 out: np.ndarray) -> None:
    """Integer/pred results: products summed in 64 bits, wrapped to ``et`` (XLA semantics)."""
    acc = np.uint64 if et.is_unsigned_integral and et.bits == 64 else np.int64
    batch = prod(lhs.shape[i] for i in dims.lhs_batch)
    m = prod(lhs.shape[i] for i in dims.lhs_free)
    k = prod(lhs.shape[i] for i in dims.lhs_contract)
    n = prod(rhs.shape[i] for i in dims.rhs_free)
    a = np.asarray(lhs).transpose(dims.lhs_perm).astype(acc).reshape(batch, m, k)
    b = np.asarray(rhs).transpose(dims.rhs_perm).astype(acc).reshape(batch, k, n)
    res = np.matmul(a, b).reshape(out.shape)
    np.copyto(out, wrap_integers(res, et), casting="unsafe")


class DotThunk:
    """``thunk(operands, out)`` for one dot instruction (see the module docstring).

    A plan is made per combination of array dims, strides and dtypes and kept in ``plans``
    (``plan.summary()`` says which path it takes)."""

    def __init__(self, instr: HloInstruction) -> None:
        self.dims = dot_dims(instr)
        self.et = instr.shape.element_type
        self.acc = compute_dtype(self.et)
        self.expect = [o.shape.dims for o in instr.operands] + [instr.shape.dims]
        self.where = describe(instr)
        self.plans: dict[tuple, _BlasDotPlan] = {}

    def check(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> None:
        got = [lhs.shape, rhs.shape, out.shape]
        if got != self.expect:
            raise ExecutionError(f"{self.where}: dot thunk got arrays of dims {got}, expected "
                                 f"{self.expect}")
        if out.dtype != self.et.dtype:
            raise ExecutionError(f"{self.where}: output array has dtype {out.dtype}, expected "
                                 f"{self.et.dtype}")

    def __call__(self, operands: Sequence[np.ndarray], out: np.ndarray) -> None:
        lhs, rhs = operands
        if self.acc is None:
            self.check(lhs, rhs, out)
            _integer_dot(self.dims, self.et, lhs, rhs, out)
            return
        key = (lhs.shape, lhs.strides, lhs.dtype, rhs.shape, rhs.strides, rhs.dtype,
               out.shape, out.strides, out.dtype)
        plan = self.plans.get(key)
        if plan is None:
            self.check(lhs, rhs, out)
            plan = _BlasDotPlan(self.dims, self.acc, self.et, lhs, rhs, out)
            self.plans[key] = plan
        plan.run(lhs, rhs, out)


def make_dot_thunk(instr: HloInstruction) -> "DotThunk | Bf16DotThunk":
    """A thunk computing ``instr`` (an HLO dot) from operand views into ``out`` (see the
    module docstring for the calling convention)."""
    if not supports_dot(instr):
        dot_dims(instr)   # raises the precise shape error when there is one
        raise UnimplementedError(f"{describe(instr)}: the BLAS dot thunk does not handle "
                                 f"dynamic shapes or sparse dots")
    # hook: two bf16 operands run on AVX512-BF16 when the CPU has it (bf16_dot.py)
    native = make_bf16_dot_thunk(instr, dot_dims(instr))
    if native is not None:
        return native
    return DotThunk(instr)


__all__ = ["supports_dot", "make_dot_thunk", "DotThunk", "dot_dims", "DotDims", "compute_dtype",
           "to_result_type", "SMALL_DOT_FLOPS", "PARALLEL_SMALL_BATCH_FLOPS", "library",
           "matmul_into", "BLAS_DTYPES"]
