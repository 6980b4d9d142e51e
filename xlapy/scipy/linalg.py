"""``xlapy.scipy.linalg``: ``jax.scipy.linalg``'s functions on float32/complex64 matrices
(LAPACK custom-calls where a decomposition is needed, compositions otherwise)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import primitives_linalg as PL
from ..frontend.core import Array
from ..frontend.tracing import concrete_int
from .. import numpy as xnp
from ..numpy import linalg as NL


def _mat(a: Any, name: str, square: bool = True) -> Array:
    return NL._matrix(a, name, square)


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Array:
    """The Cholesky factor (upper by default, as SciPy)."""
    L = NL.cholesky(_mat(a, "cholesky"))
    return L if lower else xnp.conj(xnp.swapaxes(L, -1, -2))


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Array, bool]:
    """``(c, lower)`` for :func:`cho_solve` (``c`` holds the factor in one triangle)."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Array:
    """Solve ``A x = b`` from ``cho_factor``'s ``(c, lower)``."""
    c, lower = c_and_lower
    c = _mat(c, "cho_solve")
    bb = xnp.asarray(b).astype(c.dtype)
    vec = bb.ndim == c.ndim - 1
    rhs = bb[..., None] if vec else bb
    if lower:
        y = solve_triangular(c, rhs, lower=True)
        x = solve_triangular(c, y, trans="C", lower=True)
    else:
        y = solve_triangular(c, rhs, trans="C", lower=False)
        x = solve_triangular(c, y, lower=False)
    return x[..., 0] if vec else x


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False,
                     debug: Any = None, check_finite: bool = True) -> Array:
    """Solve ``op(a) x = b`` for triangular ``a`` (``trans``: 0/N, 1/T, 2/C)."""
    A = _mat(a, "solve_triangular")
    bb = xnp.asarray(b).astype(A.dtype)
    t = {0: "N", 1: "T", 2: "C", "N": "N", "T": "T", "C": "C"}.get(trans)
    if t is None:
        raise InvalidArgumentError(f"solve_triangular: trans must be 0, 1, 2, N, T or C, got "
                                   f"{trans!r}")
    vec = bb.ndim == A.ndim - 1
    rhs = bb[..., None] if vec else bb
    if rhs.shape[:-2] != A.shape[:-2]:
        batch = xnp.broadcast_shapes(rhs.shape[:-2], A.shape[:-2])
        A = xnp.broadcast_to(A, batch + A.shape[-2:])
        rhs = xnp.broadcast_to(rhs, batch + rhs.shape[-2:])
    x = PL.triangular_solve(A, rhs, left_side=True, lower=lower, transpose_a=t,
                            unit_diagonal=unit_diagonal)
    return x[..., 0] if vec else x


def lu_factor(a: Any, overwrite_a: bool = False,
              check_finite: bool = True) -> tuple[Array, Array]:
    """``(lu, piv)``: packed LU factors and LAPACK's row interchanges."""
    lu, piv, _ = PL.lu(_mat(a, "lu_factor", square=False))
    return lu, piv


def _pivots_to_permutation(piv: Array, n: int) -> Array:
    """LAPACK's row interchanges (row ``i`` swapped with ``piv[i]``, in order) as the
    permutation of the rows (batched over leading dims)."""
    piv = xnp.asarray(piv).astype(np.int32)
    iota = xnp.broadcast_to(xnp.arange(n, dtype=np.int32), piv.shape[:-1] + (n,))
    perm = iota
    for i in range(piv.shape[-1]):
        p = piv[..., i:i + 1]
        a = perm[..., i:i + 1]
        b = xnp.take_along_axis(perm, p, axis=-1)
        perm = xnp.where(iota == i, b, xnp.where(iota == p, a, perm))
    return perm


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0,
             overwrite_b: bool = False, check_finite: bool = True) -> Array:
    """Solve with ``lu_factor``'s result (``trans`` 0: ``A x = b``, 1: ``A^T``, 2: ``A^H``)."""
    lu, piv = lu_and_piv
    lu = _mat(lu, "lu_solve")
    n = lu.shape[-1]
    perm = _pivots_to_permutation(piv, n)
    bb = xnp.asarray(b).astype(lu.dtype)
    vec = bb.ndim == lu.ndim - 1
    rhs = bb[..., None] if vec else bb
    if trans == 0:
        rows = xnp.take_along_axis(rhs, perm[..., :, None], axis=-2)
        y = solve_triangular(lu, rows, lower=True, unit_diagonal=True)
        x = solve_triangular(lu, y, lower=False)
    elif trans in (1, 2):
        t = "T" if trans == 1 else "C"
        y = solve_triangular(lu, rhs, trans=t, lower=False)
        z = solve_triangular(lu, y, trans=t, lower=True, unit_diagonal=True)
        x = xnp.take_along_axis(z, xnp.argsort(perm, axis=-1)[..., :, None], axis=-2)
    else:
        raise InvalidArgumentError(f"lu_solve: trans must be 0, 1 or 2, got {trans!r}")
    return x[..., 0] if vec else x


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False,
       check_finite: bool = True) -> Any:
    """``(p, l, u)`` with ``a = p @ l @ u`` (or ``(p @ l, u)`` with ``permute_l``)."""
    A = _mat(a, "lu", square=False)
    packed, _, perm = PL.lu(A)
    m, n = A.shape[-2:]
    k = min(m, n)
    L = xnp.tril(packed[..., :, :k], -1) + xnp.eye(m, k, dtype=A.dtype)
    U = xnp.triu(packed[..., :k, :])
    P = xnp.swapaxes(xnp.eye(m, dtype=A.dtype)[perm], -1, -2)
    if permute_l:
        return xnp.matmul(P, L), U
    return P, L, U


def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True) -> Any:
    """SciPy's ``qr`` (``mode``: full, economic, r)."""
    if pivoting:
        raise InvalidArgumentError("qr: pivoting is not supported")
    A = _mat(a, "qr", square=False)
    if mode not in ("full", "economic", "r"):
        raise InvalidArgumentError(f"qr: mode must be full, economic or r, got {mode!r}")
    q, r = PL.qr(A, full_matrices=mode == "full")
    if mode == "r":
        return (r,)
    return q, r


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
        overwrite_a: bool = False, check_finite: bool = True,
        lapack_driver: str = "gesdd") -> Any:
    """``(u, s, vh)`` or ``s``."""
    return NL.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True,
         eigvals: Any = None, type: int = 1, check_finite: bool = True) -> Any:
    """Eigenvalues (and vectors) of a Hermitian matrix (``b`` must be None)."""
    if b is not None:
        raise InvalidArgumentError("eigh: the generalized problem (b) is not supported")
    w, v = NL.eigh(a, UPLO="L" if lower else "U")
    return w if eigvals_only else (w, v)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    """The matrix inverse."""
    return NL.inv(a)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    """The determinant."""
    return NL.det(a)


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: bool = False, check_finite: bool = True,
          assume_a: str = "gen") -> Array:
    """Solve ``a x = b`` (``assume_a``: gen, sym, her or pos)."""
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    if assume_a not in ("gen", "sym", "her"):
        raise InvalidArgumentError(f"solve: unknown assume_a {assume_a!r}")
    return NL.solve(a, b)


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Array:
    """The matrix exponential (Padé-13 with scaling and squaring)."""
    a = _mat(A, "expm")
    b = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.)
    norm1 = xnp.max(xnp.sum(xnp.abs(a), axis=-2), axis=-1)
    theta13 = 5.371920351148152
    s = xnp.maximum(0, xnp.ceil(xnp.log2(xnp.maximum(norm1, 1e-30) / theta13)))
    s = xnp.minimum(s, max_squarings)
    scale = xnp.exp2(-s)[..., None, None].astype(a.dtype)
    a = a * scale
    n = a.shape[-1]
    ident = xnp.broadcast_to(xnp.eye(n, dtype=a.dtype), a.shape)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * ident)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + \
        b[0] * ident
    r = NL.solve(v - u, v + u)
    steps = int(max_squarings)
    si = s.astype(np.int32)
    for i in range(steps):
        sq = r @ r
        r = xnp.where((si > i)[..., None, None], sq, r)
    return r


# --------------------------------------------------------------- special matrices
def block_diag(*arrs: Any) -> Array:
    """A block-diagonal matrix of the (at most 2-D) arguments."""
    if not arrs:
        return xnp.zeros((1, 0), np.float32)
    blocks = [xnp.atleast_2d(a) for a in arrs]
    dt = xnp.result_type(*blocks)
    rows = sum(b.shape[0] for b in blocks)
    cols = sum(b.shape[1] for b in blocks)
    out = xnp.zeros((rows, cols), dt)
    r = c = 0
    for bl in blocks:
        out = out.at[r:r + bl.shape[0], c:c + bl.shape[1]].set(bl.astype(dt))
        r, c = r + bl.shape[0], c + bl.shape[1]
    return out


def toeplitz(c: Any, r: Any = None) -> Array:
    """The Toeplitz matrix with first column ``c`` and first row ``r``."""
    c = xnp.ravel(c)
    r = xnp.conj(c) if r is None else xnp.ravel(r)
    m, n = c.shape[0], r.shape[0]
    vals = xnp.concatenate([c[::-1], r[1:]])
    idx = (np.arange(n)[None, :] - np.arange(m)[:, None]) + (m - 1)
    return vals[xnp.asarray(idx.astype(np.int32))]


def hankel(c: Any, r: Any = None) -> Array:
    """The Hankel matrix with first column ``c`` and last row ``r``."""
    c = xnp.ravel(c)
    r = xnp.zeros_like(c) if r is None else xnp.ravel(r)
    m, n = c.shape[0], r.shape[0]
    vals = xnp.concatenate([c, r[1:]])
    idx = np.arange(m)[:, None] + np.arange(n)[None, :]
    return vals[xnp.asarray(idx.astype(np.int32))]


def circulant(c: Any) -> Array:
    """The circulant matrix whose first column is ``c``."""
    c = xnp.ravel(c)
    n = c.shape[0]
    idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % n
    return c[xnp.asarray(idx.astype(np.int32))]


def companion(a: Any) -> Array:
    """The companion matrix of polynomial coefficients ``a`` (first row ``-a[1:]/a[0]``)."""
    a = xnp.ravel(a)
    n = a.shape[0]
    if n < 2:
        raise ShapeError("companion: need at least two coefficients")
    first = -a[1:] / a[0]
    return xnp.concatenate([first[None], xnp.eye(n - 2, n - 1, dtype=first.dtype)], 0)


def hilbert(n: int) -> Array:
    """The Hilbert matrix ``1 / (i + j + 1)``."""
    n = concrete_int(n, "hilbert n")
    i = np.arange(n)
    return xnp.asarray((1.0 / (i[:, None] + i[None, :] + 1)).astype(np.float32))


def pascal(n: int, kind: str = "symmetric") -> Array:
    """The Pascal matrix (``symmetric``, ``lower`` or ``upper``)."""
    n = concrete_int(n, "pascal n")
    i = np.arange(n)
    sym = np.array([[math.comb(a + b, a) for b in i] for a in i], np.float64)
    low = np.array([[math.comb(a, b) for b in i] for a in i], np.float64)
    out = {"symmetric": sym, "lower": low, "upper": low.T}.get(kind)
    if out is None:
        raise InvalidArgumentError(f"pascal: kind must be symmetric, lower or upper, got "
                                   f"{kind!r}")
    return xnp.asarray(out.astype(np.float32))


def hadamard(n: int, dtype: Any = np.float32) -> Array:
    """The Hadamard matrix of order ``n`` (a power of 2)."""
    n = concrete_int(n, "hadamard n")
    if n < 1 or n & (n - 1):
        raise InvalidArgumentError("hadamard: n must be a positive power of 2")
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return xnp.asarray(h.astype(dtype))


def dft(n: int, scale: str | None = None) -> Array:
    """The DFT matrix ``exp(-2 pi i j k / n)`` (``scale``: None, ``sqrtn`` or ``n``)."""
    n = concrete_int(n, "dft n")
    j = np.arange(n)
    m = np.exp(-2j * np.pi * np.outer(j, j) / n)
    if scale == "sqrtn":
        m = m / math.sqrt(n)
    elif scale == "n":
        m = m / n
    elif scale is not None:
        raise InvalidArgumentError(f"dft: scale must be None, sqrtn or n, got {scale!r}")
    return xnp.asarray(m.astype(np.complex64))


def sqrtm(A: Any, blocksize: int = 1) -> Array:
    """The principal square root of a Hermitian positive semi-definite matrix (through its
    eigendecomposition; general matrices need the Schur form, not available)."""
    w, v = NL.eigh(A)
    r = v * xnp.sqrt(xnp.maximum(w, 0))[..., None, :].astype(v.dtype)
    return r @ xnp.conj(xnp.swapaxes(v, -1, -2))


def polar(a: Any, side: str = "right", *, method: str = "svd", eps: Any = None,
          max_iterations: Any = None) -> tuple[Array, Array]:
    """``(u, p)`` with ``a = u p`` (``side='right'``) or ``a = p u``, from the SVD."""
    A = _mat(a, "polar", square=False)
    u, s, vh = NL.svd(A, full_matrices=False)
    unitary = u @ vh
    sd = s[..., None, :].astype(A.dtype)
    if side == "right":
        p = (xnp.conj(xnp.swapaxes(vh, -1, -2)) * sd) @ vh
    elif side == "left":
        p = (u * sd) @ xnp.conj(xnp.swapaxes(u, -1, -2))
    else:
        raise InvalidArgumentError(f"polar: side must be right or left, got {side!r}")
    return unitary, p


def invhilbert(n: int, exact: bool = False) -> Array:
    """The inverse of the ``n x n`` Hilbert matrix (float32; ``exact`` is not supported)."""
    if exact:
        raise InvalidArgumentError("invhilbert: exact=True is not supported")
    n = concrete_int(n, "invhilbert n")
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            s = i + j
            out[i, j] = ((-1) ** s * (s + 1) * math.comb(n + i, n - j - 1)
                         * math.comb(n + j, n - i - 1) * math.comb(s, i) ** 2)
    return xnp.asarray(out.astype(np.float32))


def invpascal(n: int, kind: str = "symmetric", exact: bool = False) -> Array:
    """The inverse of :func:`pascal` (integers stored as float32)."""
    if exact:
        raise InvalidArgumentError("invpascal: exact=True is not supported")
    n = concrete_int(n, "invpascal n")
    i = np.arange(n)
    low = np.array([[(-1) ** (a + b) * math.comb(a, b) for b in i] for a in i], np.float64)
    out = {"symmetric": low.T @ low, "lower": low, "upper": low.T}.get(kind)
    if out is None:
        raise InvalidArgumentError(f"invpascal: kind must be symmetric, lower or upper, got "
                                   f"{kind!r}")
    return xnp.asarray(out.astype(np.float32))


def helmert(n: int, full: bool = False) -> Array:
    """The Helmert matrix of order ``n`` (without its first row unless ``full``)."""
    n = concrete_int(n, "helmert n")
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    d = np.arange(n) * np.arange(1, n + 1)
    h[0] = 1
    d[0] = n
    h = h / np.sqrt(d)[:, None]
    return xnp.asarray((h if full else h[1:]).astype(np.float32))


def leslie(f: Any, s: Any) -> Array:
    """The Leslie matrix of fecundities ``f`` (length n) and survival rates ``s`` (n - 1)."""
    f, s = xnp.ravel(f), xnp.ravel(s)
    n = f.shape[0]
    if s.shape[0] != n - 1:
        raise ShapeError("leslie: s must have one element fewer than f")
    dt = xnp.result_type(f, s)
    sub = xnp.concatenate([xnp.diag(s.astype(dt)), xnp.zeros((n - 1, 1), dt)], 1)
    return xnp.concatenate([f.astype(dt)[None], sub], 0)


def fiedler(a: Any) -> Array:
    """The Fiedler matrix ``|a[i] - a[j]|``."""
    a = xnp.ravel(a)
    return xnp.abs(a[:, None] - a[None, :])



def fiedler_companion(a: Any) -> Array:
    """The Fiedler companion matrix of polynomial coefficients ``a`` (highest power first):
    pentadiagonal, with the polynomial's roots as eigenvalues (SciPy's layout)."""
    a = xnp.ravel(a)
    if a.shape[0] <= 2:
        if a.shape[0] == 2:
            return xnp.reshape(-(a[1] / a[0]), (1, 1))
        return xnp.zeros((0, 0), a.dtype)
    a = a / a[0]
    n = a.shape[0] - 1
    c = xnp.zeros((n, n), a.dtype)

    def at(rows: range, cols: range) -> tuple:
        return (xnp.asarray(np.asarray(rows, np.int32)), xnp.asarray(np.asarray(cols, np.int32)))
    if len(range(3, n, 2)):
        c = c.at[at(range(3, n, 2), range(1, n - 2, 2))].set(1.0)
    if len(range(2, n, 2)):
        c = c.at[at(range(2, n, 2), range(1, n - 1, 2))].set(-a[3::2])
    if len(range(0, n - 2, 2)):
        c = c.at[at(range(0, n - 2, 2), range(2, n, 2))].set(1.0)
    c = c.at[at(range(0, n - 1, 2), range(1, n, 2))].set(-a[2::2])
    return c.at[0, 0].set(-a[1]).at[1, 0].set(1.0)


def convolution_matrix(a: Any, n: int, mode: str = "full") -> Array:
    """The matrix ``A`` with ``A @ v == convolve(a, v, mode)`` for ``v`` of length ``n``."""
    from ..numpy import convolve
    n = concrete_int(n, "convolution_matrix n")
    a = xnp.ravel(a)
    if n <= 0 or a.shape[0] == 0:
        raise InvalidArgumentError("convolution_matrix: n and len(a) must be positive")
    eye = np.eye(n, dtype=np.float32)
    cols = [convolve(a, xnp.asarray(eye[i]).astype(a.dtype), mode) for i in range(n)]
    return xnp.stack(cols, axis=1)


from ._linalg_more import (eigh_tridiagonal, expm_frechet, hessenberg,  # noqa: E402,F401
                           qr_multiply, rsf2csf, solve_sylvester)
