"""``xlapy.numpy.linalg``: NumPy's linear algebra on LAPACK custom-calls, as JAX on CPU.

Factorizations are the primitives of :mod:`xlapy.frontend.primitives_linalg` (``potrf``,
``getrf``, ``geqrf``/``orgqr``, ``syevd``, ``gesdd``, ``trsm`` custom-calls, with gradient
rules); everything else here composes them with ordinary ops, so ``solve``, ``inv``,
``det``, ``slogdet``, ``pinv``, ``lstsq`` and ``norm`` are differentiable too. All functions
accept stacks of matrices (leading batch dimensions).

Differences from NumPy, as in JAX: integer inputs compute in ``float32`` (x64 is off) and
``float16``/``bfloat16`` are rejected (LAPACK has no such kernels); a singular or
non-positive-definite input gives NaNs/infinities instead of raising ``LinAlgError``;
``cholesky`` and ``eigh`` read a symmetrized ``(a + a^H) / 2``; ``solve`` treats ``b`` as a
vector only when it is 1-D (NumPy 2's rule); ``lstsq`` always returns the residuals of
``m > n`` problems (NumPy leaves them empty when the rank is deficient).
"""
from __future__ import annotations

import builtins
from typing import Any, NamedTuple, Sequence

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import dtypes, lax
from ..frontend import lax_composite
from ..frontend import primitives_linalg as PL
from ..frontend.core import Array
from ..frontend.tracing import concrete_int
from . import _reductions as R
from ._array_extra import diagonal as _diagonal
from ._elementwise import _const, asarray, broadcast_shapes, broadcast_to, conj, promote
from ._linalg import matmul, outer as _outer, tensordot
from ._reductions import normalize_axis


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


def _matrix(a: Any, name: str, square: bool = True) -> Array:
    (x,) = promote(a, to_inexact=True)
    if x.dtype not in (np.float32, np.complex64):
        raise InvalidArgumentError(f"xnp.linalg.{name}: unsupported dtype {x.dtype} (LAPACK "
                                   "kernels take float32 and complex64)")
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        raise ShapeError(f"xnp.linalg.{name}: expected a {'square ' if square else ''}matrix "
                         f"or a stack of them, got {x.type_text()}")
    return lax.convert_element_type(x, x.dtype, False)


def matrix_transpose(x: Any) -> Array:
    """Like numpy.linalg.matrix_transpose (swap the last two axes)."""
    a = asarray(x)
    if a.ndim < 2:
        raise ShapeError("matrix_transpose needs at least 2 dimensions")
    return lax.transpose(a, tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2))


def _herm(x: Array) -> Array:
    return conj(matrix_transpose(x))


def _symmetrize(x: Array) -> Array:
    return lax.mul(lax.add(x, _herm(x)), _const(0.5, x))


def _eye(n: int, like: Array, batch: tuple[int, ...] = ()) -> Array:
    rows = lax.broadcasted_iota(np.int32, batch + (n, n), len(batch))
    cols = lax.broadcasted_iota(np.int32, batch + (n, n), len(batch) + 1)
    return lax.convert_element_type(lax.eq(rows, cols), like.dtype)


# ------------------------------------------------------------------------ factorizations
def cholesky(a: Any, *, upper: bool = False) -> Array:
    """Like numpy.linalg.cholesky: the lower factor (``upper=True``: its conjugate
    transpose) of ``(a + a^H) / 2``; NaN if that is not positive definite."""
    x = _matrix(a, "cholesky")
    ell = PL.cholesky(_symmetrize(x))
    return _herm(ell) if upper else ell


def qr(a: Any, mode: str = "reduced") -> Any:
    """Like numpy.linalg.qr with modes ``reduced``, ``complete`` and ``r``."""
    if mode not in ("reduced", "complete", "r"):
        raise InvalidArgumentError(f"xnp.linalg.qr: mode must be 'reduced', 'complete' or "
                                   f"'r', got {mode!r}")
    x = _matrix(a, "qr", square=False)
    q, r = PL.qr(x, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def eigh(a: Any, UPLO: str = "L", symmetrize_input: bool = True) -> EighResult:
    """Like numpy.linalg.eigh: ascending eigenvalues and eigenvectors (columns) of the
    Hermitian ``a`` (symmetrized first, as JAX; ``UPLO`` picks the triangle otherwise)."""
    if UPLO not in ("L", "U"):
        raise InvalidArgumentError(f"xnp.linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    x = _matrix(a, "eigh")
    if symmetrize_input:
        x = _symmetrize(x)
    elif UPLO == "U":
        x = _herm(x)
    v, w = PL.eigh(x)
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: str = "L") -> Array:
    """Like numpy.linalg.eigvalsh."""
    return eigh(a, UPLO).eigenvalues


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
        hermitian: bool = False) -> Any:
    """Like numpy.linalg.svd (``gesdd``); ``hermitian`` is accepted and ignored."""
    x = _matrix(a, "svd", square=False)
    if not compute_uv:
        return PL.svd(x, compute_uv=False)
    s, u, vh = PL.svd(x, full_matrices=full_matrices)
    return SVDResult(u, s, vh)


def svdvals(x: Any) -> Array:
    """Like numpy.linalg.svdvals (descending singular values)."""
    return svd(x, compute_uv=False)


# ------------------------------------------------------------------------------ solving
def _lu_solve(lu: Array, perm: Array, b: Array) -> Array:
    idx = lax.broadcast_in_dim(perm, b.shape, tuple(range(perm.ndim)))
    pb = lax_composite.take_along_axis(b, idx, b.ndim - 2)
    y = PL.triangular_solve(lu, pb, lower=True, unit_diagonal=True)
    return PL.triangular_solve(lu, y, lower=False)


def solve(a: Any, b: Any) -> Array:
    """Like numpy.linalg.solve (LU with partial pivoting, then two triangular solves);
    ``b`` is one vector per matrix only when it is 1-D (NumPy 2)."""
    x = _matrix(a, "solve")
    (rhs,) = promote(b)
    dt, _ = dtypes.promote_types((x.dtype, False), (rhs.dtype, False))
    dt = dt if dtypes.is_inexact(dt) else dtypes.DEFAULT_FLOAT
    x, rhs = lax.convert_element_type(x, dt), lax.convert_element_type(rhs, dt)
    vector = rhs.ndim == 1
    if vector:
        rhs = lax.reshape(rhs, rhs.shape + (1,))
    if rhs.shape[-2] != x.shape[-1]:
        raise ShapeError(f"xnp.linalg.solve: {x.type_text()} and right-hand side "
                         f"{asarray(b).type_text()} do not fit")
    batch = broadcast_shapes(x.shape[:-2], rhs.shape[:-2])
    x = broadcast_to(x, batch + x.shape[-2:])
    rhs = broadcast_to(rhs, batch + rhs.shape[-2:])
    lu, _, perm = PL.lu(x)
    out = _lu_solve(lu, perm, rhs)
    return lax.reshape(out, out.shape[:-1]) if vector else out


def inv(a: Any) -> Array:
    """Like numpy.linalg.inv (``solve`` with the identity)."""
    x = _matrix(a, "inv")
    return solve(x, _eye(x.shape[-1], x, x.shape[:-2]))


def slogdet(a: Any) -> SlogdetResult:
    """Like numpy.linalg.slogdet, from the LU factorization: ``(0, -inf)`` when singular."""
    x = _matrix(a, "slogdet")
    n = x.shape[-1]
    if n == 0:
        ones = lax.full_like(x, 1, shape=x.shape[:-2])
        return SlogdetResult(ones, lax.full_like(lax.abs(ones), 0))
    lu, pivots, _ = PL.lu(x)
    d = _diagonal(lu, 0, -2, -1)
    absd = lax.abs(d)
    zero = R.any(lax.eq(d, lax.full_like(d, 0)), axis=-1)
    iota = lax.broadcasted_iota(np.int32, pivots.shape, pivots.ndim - 1)
    swaps = R.sum(lax.convert_element_type(lax.ne(pivots, iota), np.int32), axis=-1)
    if dtypes.is_complex(d.dtype):
        unit = lax.div(d, lax.complex(absd, lax.full_like(absd, 0)))
        phase = R.prod(unit, axis=-1)
        parity = lax.convert_element_type(swaps, absd.dtype)
    else:
        negatives = R.sum(lax.convert_element_type(lax.lt(d, lax.full_like(d, 0)), np.int32),
                          axis=-1)
        phase = None
        parity = lax.convert_element_type(lax.add(swaps, negatives), d.dtype)
    odd = lax.rem(parity, lax.full_like(parity, 2))
    sign = lax.sub(lax.full_like(odd, 1), lax.mul(lax.full_like(odd, 2), odd))
    if phase is not None:
        sign = lax.mul(phase, lax.complex(sign, lax.full_like(sign, 0)))
    logdet = R.sum(lax.log(absd), axis=-1)
    sign = lax.select(zero, lax.full_like(sign, 0), sign)
    logdet = lax.select(zero, lax.full_like(logdet, -np.inf), logdet)
    return SlogdetResult(sign, logdet)


def det(a: Any) -> Array:
    """Like numpy.linalg.det: ``sign * exp(logabsdet)`` of ``slogdet``."""
    sign, logdet = slogdet(a)
    mag = lax.exp(logdet)
    if dtypes.is_complex(sign.dtype):
        mag = lax.complex(mag, lax.full_like(mag, 0))
    return lax.mul(sign, mag)


def matrix_power(a: Any, n: int) -> Array:
    """Like numpy.linalg.matrix_power (a static exponent; negative ones invert first)."""
    x = asarray(a)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"xnp.linalg.matrix_power: expected square matrices, got "
                         f"{x.type_text()}")
    n = concrete_int(n, "matrix_power exponent")
    if n == 0:
        return broadcast_to(_eye(x.shape[-1], x), x.shape)
    if n < 0:
        x, n = inv(x), -n
    result, square = None, x
    while True:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if not n:
            return result
        square = matmul(square, square)


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Array:
    """Like numpy.linalg.pinv (from the SVD; the default cutoff is JAX's
    ``max(m, n) * eps * largest singular value``)."""
    x = _matrix(a, "pinv", square=False)
    m, n = x.shape[-2:]
    tol = rcond if rcond is not None else rtol
    if tol is None:
        tol = builtins.max(m, n) * float(dtypes.finfo(x.dtype).eps)
    if builtins.min(m, n) == 0:
        return lax.full_like(x, 0, shape=x.shape[:-2] + (n, m))
    s, u, vh = PL.svd(x, full_matrices=False)
    from ._elementwise import multiply
    cutoff = multiply(lax.convert_element_type(asarray(tol), s.dtype),
                      R.max(s, axis=-1, keepdims=True))
    keep = lax.gt(s, broadcast_to(cutoff, s.shape))
    safe = lax.select(keep, s, lax.full_like(s, 1))
    s_inv = lax.select(keep, lax.div(lax.full_like(s, 1), safe), lax.full_like(s, 0))
    scaled = lax.mul(_herm(vh), _as(lax.broadcast_in_dim(s_inv, vh.shape[:-2] + (n, s.shape[-1]),
                                                        tuple(range(s.ndim - 1)) + (s.ndim,)),
                                    vh))
    return matmul(scaled, _herm(u))


def _as(x: Array, like: Array) -> Array:
    if dtypes.is_complex(like.dtype) and not dtypes.is_complex(x.dtype):
        return lax.complex(x, lax.full_like(x, 0))
    return x


def lstsq(a: Any, b: Any, rcond: Any = None) -> tuple[Array, Array, Array, Array]:
    """Like numpy.linalg.lstsq for one matrix: ``(x, residuals, rank, s)`` via the SVD
    (singular values below ``rcond * s[0]`` are dropped; default ``eps * max(m, n)``)."""
    x = _matrix(a, "lstsq", square=False)
    (rhs,) = promote(b, to_inexact=True)
    rhs = lax.convert_element_type(rhs, x.dtype)
    if x.ndim != 2 or rhs.ndim not in (1, 2) or rhs.shape[0] != x.shape[0]:
        raise ShapeError(f"xnp.linalg.lstsq: cannot fit {x.type_text()} to "
                         f"{rhs.type_text()}")
    m, n = x.shape
    vector = rhs.ndim == 1
    if vector:
        rhs = lax.reshape(rhs, (m, 1))
    if rcond is None:
        rcond = float(dtypes.finfo(x.dtype).eps) * builtins.max(m, n)
    s, u, vh = PL.svd(x, full_matrices=False)
    k = s.shape[0]
    if k == 0:
        sol = lax.full_like(x, 0, shape=(n, rhs.shape[1]))
        rank = asarray(np.int32(0))
    else:
        cut = lax.mul(lax.convert_element_type(asarray(rcond), s.dtype), s[0])
        keep = lax.ge(s, broadcast_to(cut, s.shape))
        rank = R.sum(lax.convert_element_type(keep, np.int32))
        safe = lax.select(keep, s, lax.full_like(s, 1))
        s_inv = lax.select(keep, lax.div(lax.full_like(s, 1), safe), lax.full_like(s, 0))
        utb = matmul(_herm(u), rhs)
        sol = matmul(_herm(vh), lax.mul(utb, _as(lax.broadcast_in_dim(s_inv, utb.shape, (0,)),
                                                 utb)))
    if m > n:
        r = lax.sub(rhs, matmul(x, sol))
        ra = lax.abs(r)
        resid = R.sum(lax.mul(ra, ra), axis=0)
    else:
        resid = lax.full_like(lax.abs(sol), 0, shape=(0,))
    if vector:
        sol = lax.reshape(sol, (n,))
    return sol, resid, rank, s


def matrix_rank(M: Any, rtol: Any = None, *, tol: Any = None) -> Array:
    """Like numpy.linalg.matrix_rank: singular values above ``tol`` (default
    ``max(m, n) * eps * s.max()``); a 1-D input has rank 1 unless all zeros."""
    x = asarray(M)
    if x.ndim < 2:
        return lax.convert_element_type(R.any(lax.ne(x, lax.full_like(x, 0))), np.int32)
    s = svdvals(x)
    if tol is None:
        r = rtol if rtol is not None else builtins.max(x.shape[-2:]) * float(
            dtypes.finfo(s.dtype).eps)
        tol = lax.mul(lax.convert_element_type(asarray(r), s.dtype), R.max(s, axis=-1))
    else:
        tol = lax.convert_element_type(asarray(tol), s.dtype)
    tol = lax.broadcast_in_dim(tol, s.shape, tuple(range(tol.ndim))) if tol.ndim else \
        lax.broadcast_in_dim(tol, s.shape, ())
    return R.sum(lax.convert_element_type(lax.gt(s, tol), np.int32), axis=-1)


def multi_dot(arrays: Sequence[Any]) -> Array:
    """Like numpy.linalg.multi_dot (multiplied left to right)."""
    xs = list(arrays)
    if len(xs) < 2:
        raise InvalidArgumentError("multi_dot needs at least two arrays")
    out = xs[0]
    for y in xs[1:]:
        out = matmul(out, y)
    return out


# -------------------------------------------------------------------------------- norms
def _abs2(x: Array) -> Array:
    a = lax.abs(x)
    return lax.mul(a, a)


def vector_norm(x: Any, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Array:
    """Like numpy.linalg.vector_norm (all axes by default)."""
    (v,) = promote(x, to_inexact=True)
    if axis is None:
        out = vector_norm(lax.reshape(v, (v.size,)), 0, False, ord)
        return lax.reshape(out, (1,) * v.ndim) if keepdims else out
    a = lax.abs(v)
    kw = dict(axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        return lax.sqrt(R.sum(lax.mul(a, a), **kw))
    if ord == np.inf:
        return R.max(a, **kw)
    if ord == -np.inf:
        return R.min(a, **kw)
    if ord == 0:
        return R.sum(lax.convert_element_type(lax.ne(a, lax.full_like(a, 0)), a.dtype), **kw)
    if ord == 1:
        return R.sum(a, **kw)
    if isinstance(ord, str):
        raise InvalidArgumentError(f"invalid norm order {ord!r} for vectors")
    p = float(ord)
    powered = R.sum(lax.pow(a, lax.full_like(a, p)), **kw)
    return lax.pow(powered, lax.full_like(powered, 1.0 / p))


def matrix_norm(x: Any, keepdims: bool = False, ord: Any = "fro") -> Array:
    """Like numpy.linalg.matrix_norm (over the last two axes)."""
    v = asarray(x)
    return norm(v, ord, axis=(-2, -1), keepdims=keepdims)


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Array:
    """Like numpy.linalg.norm: vector orders (``None``/2, ``inf``, ``-inf``, 0, 1, p) and
    matrix orders (``None``/``'fro'``, ``'nuc'``, ``inf``, ``-inf``, 1, -1, 2, -2; the
    last two and ``'nuc'`` from the singular values)."""
    (v,) = promote(x, to_inexact=True)
    if axis is None:
        if ord is None:
            out = lax.sqrt(R.sum(_abs2(v)))
            return lax.reshape(out, (1,) * v.ndim) if keepdims else out
        if v.ndim not in (1, 2):
            raise InvalidArgumentError("xnp.linalg.norm: improper number of dimensions to norm")
        axis = tuple(range(v.ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if len(axes) == 1:
        return vector_norm(v, normalize_axis(axes[0], v.ndim), keepdims, ord)
    if len(axes) != 2:
        raise InvalidArgumentError("xnp.linalg.norm: improper number of dimensions to norm")
    r, c = (normalize_axis(a, v.ndim) for a in axes)
    if r == c:
        raise InvalidArgumentError("xnp.linalg.norm: duplicate axes given")
    a = lax.abs(v)
    if ord is None or ord == "fro":
        out = lax.sqrt(R.sum(lax.mul(a, a), axis=(r, c)))
    elif ord in (1, -1):
        col_sums = R.sum(a, axis=r, keepdims=True)
        out = (R.max if ord == 1 else R.min)(col_sums, axis=(r, c))
    elif ord in (np.inf, -np.inf):
        row_sums = R.sum(a, axis=c, keepdims=True)
        out = (R.max if ord == np.inf else R.min)(row_sums, axis=(r, c))
    elif ord in (2, -2, "nuc"):
        rest = [d for d in range(v.ndim) if d not in (r, c)]
        s = svdvals(lax.transpose(v, rest + [r, c]))
        out = R.sum(s, axis=-1) if ord == "nuc" else (R.max if ord == 2 else R.min)(s, axis=-1)
    else:
        raise InvalidArgumentError(f"invalid norm order {ord!r} for matrices")
    if keepdims:
        out = lax.reshape(out, tuple(1 if d in (r, c) else s for d, s in enumerate(v.shape)))
    return out


# ------------------------------------------------------------ NumPy 2 array-API helpers
def diagonal(x: Any, *, offset: int = 0) -> Array:
    """Like numpy.linalg.diagonal (of the last two axes)."""
    return _diagonal(x, offset, -2, -1)


def trace(x: Any, *, offset: int = 0, dtype: Any = None) -> Array:
    """Like numpy.linalg.trace (of the last two axes)."""
    return R.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def outer(x1: Any, x2: Any) -> Array:
    """Like numpy.linalg.outer (1-D operands only)."""
    if asarray(x1).ndim != 1 or asarray(x2).ndim != 1:
        raise ShapeError("xnp.linalg.outer: operands must be 1-D")
    return _outer(x1, x2)


def vecdot(x1: Any, x2: Any, *, axis: int = -1) -> Array:
    """Like numpy.linalg.vecdot: ``sum(conj(x1) * x2, axis)``."""
    from ._elementwise import multiply
    return R.sum(multiply(conj(x1), x2), axis=axis)


def cross(x1: Any, x2: Any, *, axis: int = -1) -> Array:
    """Like numpy.linalg.cross (3-vectors only)."""
    from ._array_extra import cross as _cross
    a, b = asarray(x1), asarray(x2)
    if a.shape[axis] != 3 or b.shape[axis] != 3:
        raise ShapeError("xnp.linalg.cross: both inputs must be 3-vectors along axis")
    return _cross(a, b, axis=axis)


def eig(a: Any) -> EigResult:
    """Eigenvalues and right eigenvectors of general square matrices (always complex;
    LAPACK ``geev``, not differentiable)."""
    from ..frontend.primitives_eig import eig as _eig
    w, v = _eig(_matrix(a, "eig"))
    return EigResult(w, v)


def eigvals(a: Any) -> Array:
    """Eigenvalues of general square matrices (complex)."""
    from ..frontend.primitives_eig import eig as _eig
    return _eig(_matrix(a, "eigvals"), compute_right_eigenvectors=False)[0]


def cond(x: Any, p: Any = None) -> Array:
    """The condition number of ``x`` in norm ``p`` (2-norm via singular values when
    ``p`` is None, 2 or -2; ``inf`` for singular matrices)."""
    a = _matrix(x, "cond", square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = svd(a, compute_uv=False)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    else:
        r = norm(a, p, axis=(-2, -1)) * norm(inv(a), p, axis=(-2, -1))
    from ._elementwise import isnan, where
    return where(isnan(r), _const(np.inf, r), r)


def tensorinv(a: Any, ind: int = 2) -> Array:
    """The inverse of ``a`` under ``tensordot(., ., ind)``."""
    x = asarray(a)
    ind = concrete_int(ind, "tensorinv ind")
    if ind <= 0:
        raise InvalidArgumentError(f"tensorinv: ind must be a positive integer, got {ind}")
    head, tail = x.shape[:ind], x.shape[ind:]
    rows, cols = int(np.prod(head)), int(np.prod(tail))
    if rows != cols:
        raise ShapeError(f"tensorinv: the first {ind} dims and the rest of {x.type_text()} "
                         "must have equal products")
    return lax.reshape(inv(lax.reshape(x, (rows, cols))), tail + head)


def tensorsolve(a: Any, b: Any, axes: Sequence[int] | None = None) -> Array:
    """``x`` with ``tensordot(a, x, x.ndim) == b``."""
    x = asarray(a)
    if axes is not None:
        axes = [normalize_axis(i, x.ndim) for i in axes]
        rest = [i for i in range(x.ndim) if i not in axes]
        x = lax.transpose(x, tuple(rest + axes))
    bb = asarray(b)
    out_shape = x.shape[bb.ndim:]
    n = int(np.prod(out_shape))
    if int(np.prod(x.shape[:bb.ndim])) != n:
        raise ShapeError(f"tensorsolve: {x.type_text()} cannot be solved for {bb.type_text()}")
    sol = solve(lax.reshape(x, (n, n)), lax.reshape(bb, (n,)))
    return lax.reshape(sol, out_shape)


__all__ = ["cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "solve", "inv", "slogdet",
           "det", "matrix_power", "pinv", "lstsq", "matrix_rank", "multi_dot", "norm",
           "vector_norm", "matrix_norm", "matrix_transpose", "diagonal", "trace", "outer",
           "vecdot", "cross", "matmul", "tensordot", "eig", "eigvals", "cond", "tensorinv",
           "tensorsolve", "SlogdetResult", "EighResult", "EigResult", "QRResult",
           "SVDResult"]
