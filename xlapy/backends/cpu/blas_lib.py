"""OpenBLAS (``scipy-openblas32``) through ctypes, and how strided NumPy arrays map to it.

The library is loaded once with ctypes (symbols carry the ``scipy_`` prefix, integers are
32-bit); ctypes releases the GIL during every call. ``library()`` gives the loaded library:
``?gemm``, ``?gemm_batch_strided``, ``?gemv`` and ``?dot`` entry points by NumPy dtype, the
kernel name (``corename()``) and the thread count.

OpenBLAS's own threads never run: the runtime's pool (``thread_pool.ThreadPool``) is the
only source of parallelism. After a multi-threaded call OpenBLAS's idle threads spin (2^28
cycles) before they sleep; the pool's threads, which run the generated kernels and the
split convolutions right after, then shared the cores with them (figures:
docs/performance.md, "Measurements behind the CPU backend's constants"). So OpenBLAS runs
one thread, and large products are cut into pieces for the pool (:meth:`GemmCall.pieces`)
that each pack the shared operand again. ``openblas_threads.py`` can instead let OpenBLAS
thread a single product with its threads' parts run on the pool's threads (on request:
``XLAPY_CPU_OPENBLAS_THREADS=1``).

Geometry: a group of array dims that collapses into one strided dim is a :class:`Strided`;
a matrix is passed to row-major BLAS unchanged when it is row-major (unit column stride,
leading dim = row stride) or column-major (the transpose flag, leading dim = column
stride); a column-major result is computed as ``C^T = B^T A^T``. :func:`plan_matmul`
picks the call with the fewest dense copies for a batch of products, :func:`plan_vector`
a ``gemv``/``dot`` for matrix-vector and vector-vector products, and :func:`matmul_into`
does ``c = a @ b`` for plain 2-D/3-D arrays.
"""
from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass, replace
from itertools import product
from math import prod
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import InvalidArgumentError, ShapeError

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
#: Products (all matrices of a batch together) of at least this many flops are cut into
#: pieces for the pool's threads (:meth:`GemmCall.pieces`): below it a split product was
#: slower than one thread (docs/performance.md, "Measurements behind the CPU backend's
#: constants").
PARALLEL_GEMM_FLOPS = 2 * 256**3
_INT32_MAX = 2**31 - 1


# --------------------------------------------------------------------------------------------
# the library

class _Library:
    """``libscipy_openblas`` loaded with ctypes; the ``?gemm`` entry points by dtype."""

    def __init__(self) -> None:
        import scipy_openblas32
        path = os.path.join(scipy_openblas32.get_lib_dir(),
                            f"lib{scipy_openblas32.get_library()}.so")
        self.path = path
        self.lib = ctypes.CDLL(path)
        prefix = "scipy_"
        i, p = ctypes.c_int, ctypes.c_void_p
        self.gemm: dict[np.dtype, Callable] = {}
        self.gemm_batch: dict[np.dtype, Callable] = {}
        self.gemv: dict[np.dtype, Callable] = {}
        self.dot: dict[np.dtype, Callable] = {}
        # complex routines take alpha and beta by pointer
        for ch, dtype, scalar in (("s", np.float32, ctypes.c_float),
                                  ("d", np.float64, ctypes.c_double),
                                  ("c", np.complex64, p), ("z", np.complex128, p)):
            dt = np.dtype(dtype)
            self.gemm[dt] = self._fn(f"{prefix}cblas_{ch}gemm",
                                     [i, i, i, i, i, i, scalar, p, i, p, i, scalar, p, i])
            self.gemm_batch[dt] = self._fn(f"{prefix}cblas_{ch}gemm_batch_strided",
                                           [i, i, i, i, i, i, scalar, p, i, i, p, i, i, scalar,
                                            p, i, i, i])
            self.gemv[dt] = self._fn(f"{prefix}cblas_{ch}gemv",
                                     [i, i, i, i, scalar, p, i, p, i, scalar, p, i])
            if ch in "sd":
                self.dot[dt] = self._fn(f"{prefix}cblas_{ch}dot", [i, p, i, p, i], scalar)
            else:     # the complex dot writes its result through a pointer
                self.dot[dt] = self._fn(f"{prefix}cblas_{ch}dotu_sub", [i, p, i, p, i, p])
        self._set_threads = getattr(self.lib, f"{prefix}openblas_set_num_threads")
        self._set_threads.argtypes = [i]
        self._get_threads = getattr(self.lib, f"{prefix}openblas_get_num_threads")
        self._get_threads.restype = i
        self._corename = getattr(self.lib, f"{prefix}openblas_get_corename")
        self._corename.restype = ctypes.c_char_p
        # alpha/beta for the complex routines are passed by pointer
        self.complex_scalars: dict[np.dtype, tuple[int, int, int]] = {}
        self._keep = []
        for dtype in (np.complex64, np.complex128):
            arr = np.array([1, 0, 1], dtype=dtype)   # alpha = 1, beta = 0, beta = 1
            self._keep.append(arr)
            base, size = arr.ctypes.data, arr.itemsize
            self.complex_scalars[np.dtype(dtype)] = (base, base + size, base + 2 * size)
        self._set_threads(1)            # the runtime's pool parallelises (module docstring)

    def _fn(self, name: str, argtypes: list, restype: Any = None) -> Callable:
        fn = getattr(self.lib, name)
        fn.argtypes = argtypes
        fn.restype = restype
        return fn

    def corename(self) -> str:
        return self._corename().decode()

    def num_threads(self) -> int:
        return int(self._get_threads())

    def alpha_beta(self, dtype: np.dtype, beta: int) -> tuple:
        """``(alpha=1, beta)`` as the routine for ``dtype`` takes them."""
        if dtype.kind == "c":
            one, zero, one_b = self.complex_scalars[dtype]
            return one, (one_b if beta else zero)
        return 1.0, float(beta)

    def set_num_threads(self, n: int) -> None:
        """Set OpenBLAS's own thread count (xlapy keeps it at 1, see the module docstring;
        ``benchmarks/dot_crossover.py`` compares it with the split calls)."""
        self._set_threads(n)


_LIB: _Library | None = None
_LIB_LOCK = threading.Lock()


def library() -> _Library:
    """The loaded OpenBLAS library (loaded on first use)."""
    global _LIB
    if _LIB is None:
        with _LIB_LOCK:
            if _LIB is None:
                _LIB = _Library()
    return _LIB


BLAS_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


# --------------------------------------------------------------------------------------------
# matrix geometry

@dataclass(frozen=True)
class Strided:
    """A group of dims collapsed into one: ``size`` elements ``stride`` elements apart.

    ``stride`` is ``None`` when ``size <= 1`` (any stride describes it)."""

    size: int
    stride: int | None


def collapse(shape: Sequence[int], strides: Sequence[int], dims: Sequence[int],
             itemsize: int) -> Strided | None:
    """``dims`` of an array (byte ``strides``) as one strided dim, row-major over ``dims``
    in the given order, or None when they do not collapse."""
    size = prod(shape[d] for d in dims)
    real = [d for d in dims if shape[d] != 1]
    if size <= 1 or not real:
        return Strided(size, None)
    if any(strides[d] % itemsize for d in real):
        return None
    for outer, inner in zip(real, real[1:]):
        if strides[outer] != strides[inner] * shape[inner]:
            return None
    return Strided(size, strides[real[-1]] // itemsize)


@dataclass(frozen=True)
class MatrixArg:
    """How a ``rows x cols`` matrix is passed to row-major BLAS: transposed? leading dim."""

    trans: bool
    ld: int


def matrix_arg(rows: Strided, cols: Strided) -> MatrixArg | None:
    """BLAS description of the matrix with element ``(i, j)`` at ``i*rows.stride +
    j*cols.stride``, or None when it is neither row- nor column-major."""
    r, c = rows.size, cols.size
    rs, cs = rows.stride, cols.stride
    if (c <= 1 or cs == 1) and (r <= 1 or (rs is not None and rs >= c)):
        ld = rs if r > 1 else max(1, c)
        return MatrixArg(False, ld) if ld <= _INT32_MAX else None
    if (r <= 1 or rs == 1) and (c <= 1 or (cs is not None and cs >= r)):
        ld = cs if c > 1 else max(1, r)
        return MatrixArg(True, ld) if ld <= _INT32_MAX else None
    return None


@dataclass(frozen=True)
class GemmCall:
    """``C[b] = op(A[b]) @ op(B[b])`` (+ ``C[b]`` with ``beta=1``) in row-major BLAS terms;
    pointers are given per call, everything else is fixed. Strides are in elements."""

    dtype: np.dtype
    m: int
    n: int
    k: int
    a: MatrixArg
    b: MatrixArg
    ldc: int
    batch: int = 1
    stride_a: int = 0
    stride_b: int = 0
    stride_c: int = 0

    @property
    def matrix_flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def run(self, a_ptr: int, b_ptr: int, c_ptr: int, beta: int = 0) -> None:
        lib = library()
        alpha, beta_v = lib.alpha_beta(self.dtype, beta)
        ta = _TRANS if self.a.trans else _NO_TRANS
        tb = _TRANS if self.b.trans else _NO_TRANS
        if self.batch == 1:
            lib.gemm[self.dtype](_ROW_MAJOR, ta, tb, self.m, self.n, self.k, alpha, a_ptr,
                                 self.a.ld, b_ptr, self.b.ld, beta_v, c_ptr, self.ldc)
        elif self.dtype.kind != "c":
            lib.gemm_batch[self.dtype](_ROW_MAJOR, ta, tb, self.m, self.n, self.k, alpha,
                                       a_ptr, self.a.ld, self.stride_a, b_ptr, self.b.ld,
                                       self.stride_b, beta_v, c_ptr, self.ldc,
                                       self.stride_c, self.batch)
        else:
            # c/zgemm_batch_strided read the batch strides in units of real numbers
            fn, item = lib.gemm[self.dtype], self.dtype.itemsize
            for i in range(self.batch):
                fn(_ROW_MAJOR, ta, tb, self.m, self.n, self.k, alpha,
                   a_ptr + i * self.stride_a * item, self.a.ld, b_ptr + i * self.stride_b * item,
                   self.b.ld, beta_v, c_ptr + i * self.stride_c * item, self.ldc)

    def pieces(self, workers: int) -> list[tuple["GemmCall", int, int, int]] | None:
        """The call cut into pieces for ``workers`` threads (``(call, a, b, c byte
        offsets)`` each), or None when it runs whole on one thread: below
        :data:`PARALLEL_GEMM_FLOPS` in all, or with one worker. A batch of at least
        ``workers`` matrices is cut along the batch (up to 4 pieces a worker, so that
        uneven pieces even out); fewer matrices are each cut into blocks
        (:meth:`split_product`)."""
        if workers <= 1 or self.batch * self.matrix_flops < PARALLEL_GEMM_FLOPS:
            return None
        if self.batch >= workers:
            return self.split(min(self.batch, 4 * workers))
        per_matrix = -(-workers // self.batch)
        item, single = self.dtype.itemsize, replace(self, batch=1)
        return [(call, oa + i * self.stride_a * item, ob + i * self.stride_b * item,
                 oc + i * self.stride_c * item)
                for i in range(self.batch)
                for call, oa, ob, oc in single.split_product(per_matrix)]

    def split_product(self, pieces: int) -> list[tuple["GemmCall", int, int, int]]:
        """One product (batch 1) cut into up to ``pieces`` calls computing blocks of C's
        columns (of its rows when M > N, so that the smaller operand is the one every
        piece packs again): ``(call, a, b, c byte offsets)`` each."""
        item, along_n = self.dtype.itemsize, self.n >= self.m
        size = self.n if along_n else self.m
        out = []
        for i in range(pieces):
            lo, hi = size * i // pieces, size * (i + 1) // pieces
            if hi <= lo:
                continue
            if along_n:
                b_off = lo * self.b.ld if self.b.trans else lo
                out.append((replace(self, n=hi - lo), 0, b_off * item, lo * item))
            else:
                a_off = lo if self.a.trans else lo * self.a.ld
                out.append((replace(self, m=hi - lo), a_off * item, 0, lo * self.ldc * item))
        return out

    def split(self, pieces: int) -> list[tuple["GemmCall", int, int, int]]:
        """The batch cut into ``pieces`` calls: ``(call, a, b, c byte offsets)`` each."""
        item = self.dtype.itemsize
        out = []
        for i in range(pieces):
            lo, hi = self.batch * i // pieces, self.batch * (i + 1) // pieces
            if hi > lo:
                out.append((replace(self, batch=hi - lo), lo * self.stride_a * item,
                            lo * self.stride_b * item, lo * self.stride_c * item))
        return out


class NativePieces:
    """Single-matrix ``f32``/``f64`` :class:`GemmCall` pieces as one native pool job: a
    table of ``cblas_?gemm`` argument rows (``native_pool.GEMM_FIELDS``) that the pool's
    threads take row by row without the GIL (``ThreadPool.run`` with one part per row),
    so a thread that starts late takes fewer pieces. Only the operand addresses change
    between calls."""

    def __init__(self, pieces: Sequence[tuple["GemmCall", int, int, int]]) -> None:
        from .native_pool import GEMM_FIELDS, GEMM_WORDS, gemm_calls, native_address
        call0 = pieces[0][0]
        kind = "s" if call0.dtype == np.float32 else "d"
        lib = library()
        one = (np.float32(1).view(np.int32).item() if kind == "s"
               else np.float64(1).view(np.int64).item())
        self.rows = np.zeros((len(pieces), GEMM_WORDS), np.int64)
        col = {f: i for i, f in enumerate(GEMM_FIELDS)}
        self.a, self.b, self.c = col["a"], col["b"], col["c"]
        fn = native_address(lib.gemm[call0.dtype])
        for row, (call, _, _, _) in zip(self.rows, pieces):
            row[[col[f] for f in ("fn", "order", "transa", "transb", "m", "n", "k", "alpha",
                                  "lda", "ldb", "beta", "ldc")]] = [
                fn, _ROW_MAJOR, _TRANS if call.a.trans else _NO_TRANS,
                _TRANS if call.b.trans else _NO_TRANS, call.m, call.n, call.k, one,
                call.a.ld, call.b.ld, 0, call.ldc]
        self.offsets = np.array([p[1:] for p in pieces], np.int64).T.copy()
        self.fn = gemm_calls(kind)
        self.address = self.rows.ctypes.data
        self.count = len(pieces)

    @staticmethod
    def usable(pieces: Sequence[tuple["GemmCall", int, int, int]] | None) -> bool:
        """Whether :class:`NativePieces` takes these pieces (real dtype, one matrix each)."""
        return bool(pieces) and all(p[0].batch == 1 and p[0].dtype in (np.float32, np.float64)
                                    for p in pieces)

    def run(self, pool: Any, a_ptr: int, b_ptr: int, c_ptr: int) -> None:
        """Every piece on ``pool`` (a ``ThreadPool``) for these operand addresses."""
        rows, (oa, ob, oc) = self.rows, self.offsets
        np.add(oa, a_ptr, out=rows[:, self.a])
        np.add(ob, b_ptr, out=rows[:, self.b])
        np.add(oc, c_ptr, out=rows[:, self.c])
        pool.run(self.fn, self.address, self.count, parts=self.count)


def plan_gemm(dtype: np.dtype, batch: int, a_rows: Strided, a_cols: Strided, b_rows: Strided,
              b_cols: Strided, c_rows: Strided, c_cols: Strided,
              batch_strides: tuple[int | None, int | None, int | None] = (0, 0, 0)
              ) -> tuple[GemmCall, bool] | None:
    """A call computing ``C = A @ B`` for the given geometries, and whether it swaps the
    operands (``C^T = B^T A^T``, so ``a_ptr``/``b_ptr`` must be passed swapped); None when an
    array does not fit BLAS or a size exceeds 32-bit BLAS integers."""
    m, k, n = a_rows.size, a_cols.size, b_cols.size
    if max(m, n, k, batch) > _INT32_MAX or any(s is not None and abs(s) > _INT32_MAX
                                                for s in batch_strides):
        return None
    if batch > 1 and (any(s is None or s < 0 for s in batch_strides) or batch_strides[2] == 0):
        return None         # operands may repeat a matrix (stride 0), outputs may not
    sa, sb, sc = ((s or 0) for s in batch_strides)
    c_row = matrix_arg(c_rows, c_cols)
    if c_row is not None and not c_row.trans:
        a, b = matrix_arg(a_rows, a_cols), matrix_arg(b_rows, b_cols)
        if a is None or b is None:
            return None
        return GemmCall(dtype, m, n, k, a, b, c_row.ld, batch, sa, sb, sc), False
    c_col = matrix_arg(c_cols, c_rows)     # C^T row-major
    if c_col is not None and not c_col.trans:
        bt, at = matrix_arg(b_cols, b_rows), matrix_arg(a_cols, a_rows)
        if at is None or bt is None:
            return None
        return GemmCall(dtype, n, m, k, bt, at, c_col.ld, batch, sb, sa, sc), True
    return None


@dataclass(frozen=True)
class VectorCall:
    """A product with a vector side, for one (unbatched) matrix product ``C = A @ B``:
    ``?gemv`` when ``M == 1`` or ``N == 1`` (``y = op(X) v``), ``?dot`` when both are 1.
    ``x_is_a`` says whether the matrix ``X`` is ``A`` (then the vector is ``B``)."""

    dtype: np.dtype
    rows: int            # gemv: rows/cols of the row-major matrix passed; dot: 1, k
    cols: int
    trans: bool
    ld: int
    incv: int            # stride of the vector operand
    incy: int            # stride of the result
    x_is_a: bool

    def run(self, a_ptr: int, b_ptr: int, c_ptr: int, out: np.ndarray) -> None:
        lib = library()
        x_ptr, v_ptr = (a_ptr, b_ptr) if self.x_is_a else (b_ptr, a_ptr)
        if self.rows == 0:       # vector-vector
            fn = lib.dot[self.dtype]
            if self.dtype.kind == "c":
                fn(self.cols, x_ptr, self.ld, v_ptr, self.incv, c_ptr)
            else:
                out[...] = fn(self.cols, x_ptr, self.ld, v_ptr, self.incv)
            return
        alpha, beta = lib.alpha_beta(self.dtype, 0)
        lib.gemv[self.dtype](_ROW_MAJOR, _TRANS if self.trans else _NO_TRANS, self.rows,
                             self.cols, alpha, x_ptr, self.ld, v_ptr, self.incv, beta, c_ptr,
                             self.incy)


def _inc(v: Strided) -> int | None:
    """A BLAS vector increment for a strided vector (positive, 32-bit), or None."""
    if v.size <= 1:
        return 1
    return v.stride if v.stride is not None and 0 < v.stride <= _INT32_MAX else None


def plan_vector(dtype: np.dtype, a: "Geometry", b: "Geometry", c: "Geometry") -> VectorCall | None:
    """A ``gemv``/``dot`` call for an unbatched product with ``M == 1`` or ``N == 1``."""
    (_, a_rows, a_cols), (_, b_rows, b_cols), (_, c_rows, c_cols) = a, b, c
    m, k, n = a_rows.size, a_cols.size, b_cols.size
    if max(m, n, k) > _INT32_MAX:
        return None
    if m == 1 and n == 1:
        inc_a, inc_b = _inc(a_cols), _inc(b_rows)
        if inc_a is None or inc_b is None:
            return None
        return VectorCall(dtype, 0, k, False, inc_a, inc_b, 1, True)
    if n == 1:      # C[:, 0] = A @ B[:, 0]
        mat, vec, res, x_is_a = matrix_arg(a_rows, a_cols), _inc(b_rows), _inc(c_rows), True
        shape = (m, k)
    elif m == 1:    # C[0, :] = B^T @ A[0, :]
        mat, vec, res, x_is_a = matrix_arg(b_cols, b_rows), _inc(a_cols), _inc(c_cols), False
        shape = (n, k)
    else:
        return None
    if mat is None or vec is None or res is None:
        return None
    rows, cols = (shape[1], shape[0]) if mat.trans else shape
    return VectorCall(dtype, rows, cols, mat.trans, mat.ld, vec, res, x_is_a)


Geometry = tuple[Strided, Strided, Strided]   # (batch, rows, cols) of a batched matrix


def geometry(x: np.ndarray, batch_dims: Sequence[int], row_dims: Sequence[int],
             col_dims: Sequence[int]) -> Geometry | None:
    """``x`` as a batch of matrices (each group of dims collapsed), or None."""
    parts = [collapse(x.shape, x.strides, g, x.itemsize) for g in (batch_dims, row_dims, col_dims)]
    if any(p is None for p in parts):
        return None
    return parts[0], parts[1], parts[2]


def dense_geometry(batch: int, rows: int, cols: int) -> Geometry:
    """A contiguous ``[batch, rows, cols]`` array."""
    return Strided(batch, rows * cols), Strided(rows, cols), Strided(cols, 1)


@dataclass(frozen=True)
class MatmulPlan:
    """A GEMM call plus which arrays must first be made dense (copied to contiguous
    ``[batch, rows, cols]``; for ``c``: computed in a temporary and copied out)."""

    call: GemmCall
    swap: bool
    copy_a: bool
    copy_b: bool
    temp_c: bool


def plan_matmul(dtype: np.dtype, batch: int, m: int, k: int, n: int, a: Geometry | None,
                b: Geometry | None, c: Geometry | None) -> MatmulPlan | None:
    """The plan with the fewest dense copies for ``C[batch,m,n] = A[batch,m,k] @ B[batch,k,n]``
    given each array's geometry (None: the array must be copied); None only when even dense
    arrays exceed 32-bit BLAS sizes."""
    dense = (dense_geometry(batch, m, k), dense_geometry(batch, k, n), dense_geometry(batch, m, n))
    given = (a, b, c)
    for flags in sorted(product((False, True), repeat=3), key=sum):
        if any(not f and g is None for f, g in zip(flags, given)):
            continue
        ga, gb, gc = (d if f else g for f, g, d in zip(flags, given, dense))
        planned = plan_gemm(dtype, batch, ga[1], ga[2], gb[1], gb[2], gc[1], gc[2],
                            (ga[0].stride, gb[0].stride, gc[0].stride))
        if planned is not None:
            return MatmulPlan(planned[0], planned[1], *flags)
    return None


# --------------------------------------------------------------------------------------------
# plain matrix products (used by the convolution thunk and the benchmarks)

def matmul_into(a: np.ndarray, b: np.ndarray, c: np.ndarray, accumulate: bool = False) -> None:
    """``c = a @ b`` (``c += a @ b`` with ``accumulate``) through BLAS, for 2-D or equally
    batched 3-D arrays of one BLAS dtype; arrays that do not fit BLAS are copied first."""
    if not (a.dtype == b.dtype == c.dtype) or c.dtype not in BLAS_DTYPES:
        raise InvalidArgumentError(f"matmul_into needs one BLAS dtype, got {a.dtype}, "
                                   f"{b.dtype}, {c.dtype}")
    if a.ndim == 2 and b.ndim == 2 and c.ndim == 2:
        a, b, c = a[None], b[None], c[None]
    if a.ndim != 3 or b.ndim != 3 or c.ndim != 3:
        raise ShapeError(f"matmul_into: needs 2-D or 3-D arrays, got {a.shape}, {b.shape}, "
                         f"{c.shape}")
    batch, m, k = a.shape
    n = b.shape[2]
    if b.shape[:2] != (batch, k) or c.shape != (batch, m, n):
        raise ShapeError(f"matmul_into: shapes {a.shape} @ {b.shape} -> {c.shape} do not fit")
    if batch == 0 or m == 0 or n == 0:
        return
    if k == 0:
        if not accumulate:
            c.fill(0)
        return
    dims = ((0,), (1,), (2,))
    plan = plan_matmul(c.dtype, batch, m, k, n, geometry(a, *dims), geometry(b, *dims),
                       geometry(c, *dims))
    if plan is None:
        res = np.matmul(a, b)
        if accumulate:
            c += res
        else:
            c[...] = res
        return
    if plan.copy_a:
        a = np.ascontiguousarray(a)
    if plan.copy_b:
        b = np.ascontiguousarray(b)
    target = np.array(c, order="C") if plan.temp_c else c
    pa, pb = a.ctypes.data, b.ctypes.data
    if plan.swap:
        pa, pb = pb, pa
    plan.call.run(pa, pb, target.ctypes.data, beta=1 if accumulate else 0)
    if plan.temp_c:
        c[...] = target



__all__ = ["library", "BLAS_DTYPES", "Strided", "collapse", "MatrixArg", "matrix_arg", "GemmCall",
           "NativePieces",
           "plan_gemm", "VectorCall", "plan_vector", "Geometry", "geometry", "dense_geometry",
           "MatmulPlan", "plan_matmul", "matmul_into", "PARALLEL_GEMM_FLOPS"]
