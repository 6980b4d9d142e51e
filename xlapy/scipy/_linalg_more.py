"""``jax.scipy.linalg`` compositions: :func:`expm_frechet` (the forward derivative of
``expm``), :func:`qr_multiply` (``Q`` of a QR factorization applied to a matrix) and
:func:`hessenberg` (Householder reduction with LAPACK's reflector convention)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import dtypes
from ..frontend.autodiff_forward import jvp
from ..frontend.core import Array
from .. import numpy as xnp
from ..numpy._elementwise import promote


def expm_frechet(A: Any, E: Any, *, method: str | None = None,
                 compute_expm: bool = True) -> Any:
    """The Frechet derivative of ``expm`` at ``A`` in direction ``E``:
    ``(expm(A), L(A, E))``, or ``L(A, E)`` alone with ``compute_expm=False``."""
    from .linalg import expm
    a, e = xnp.asarray(A), xnp.asarray(E)
    a, e = promote(a, e, to_inexact=True) if a.shape == e.shape else (a, e)
    for name, m in (("A", a), ("E", e)):
        if m.ndim < 2 or m.shape[-2] != m.shape[-1]:
            raise ShapeError(f"expm_frechet: {name} must be a (batched) square matrix, got "
                             f"{m.type_text()}")
    if a.shape != e.shape:
        raise ShapeError(f"expm_frechet: A and E must have the same shape, got "
                         f"{a.type_text()} and {e.type_text()}")
    if method not in (None, "SPS", "blockEnlarge"):
        raise InvalidArgumentError(f"expm_frechet: unknown method {method!r}")
    expm_a, frechet = jvp(lambda m: expm(m, upper_triangular=False, max_squarings=16),
                          (a,), (e,))
    return (expm_a, frechet) if compute_expm else frechet


def qr_multiply(a: Any, c: Any, mode: str = "right", pivoting: bool = False,
                conjugate: bool = False, overwrite_a: bool = False,
                overwrite_c: bool = False) -> tuple[Array, Array]:
    """``(c @ Q, R)`` (``mode="right"``) or ``(Q @ c, R)`` (``"left"``) for the
    economic QR factorization ``a = Q R`` (``conjugate`` uses ``conj(Q)``; a 1-D ``c``
    is a row for ``right`` and a column for ``left``)."""
    from .linalg import qr
    if pivoting:
        raise InvalidArgumentError("qr_multiply: pivoting is not supported (no pivoted QR)")
    if mode not in ("right", "left"):
        raise InvalidArgumentError(f"qr_multiply: mode must be 'right' or 'left', got {mode!r}")
    a, c = xnp.asarray(a), xnp.asarray(c)
    dt = xnp.result_type(a, c)
    (a,) = promote(a.astype(dt), to_inexact=True)
    c = c.astype(a.dtype)
    onedim = c.ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise ShapeError(f"qr_multiply: Q of {a.type_text()} has {k} columns but c has "
                         f"{c.shape[-2]} rows")
    if mode == "right" and c.shape[-1] != m:
        raise ShapeError(f"qr_multiply: Q of {a.type_text()} has {m} rows but c has "
                         f"{c.shape[-1]} columns")
    q, r = qr(a, mode="economic")
    if conjugate:
        q = xnp.conj(q)
    cq = c @ q if mode == "right" else q @ c
    if onedim:
        cq = xnp.ravel(cq)
    return cq, xnp.triu(r)


def _householder(x: Array) -> tuple[Array, Array]:
    """LAPACK's ``larfg`` for the vector ``x``: ``(v, tau)`` with ``v[0] = 1`` and
    ``(I - tau v v^H)^H x = beta e_0`` (``tau = 0`` when nothing needs reflecting)."""
    alpha, rest = x[0], x[1:]
    xnorm2 = xnp.sum(xnp.abs(rest) ** 2)
    re = xnp.real(alpha)
    norm = xnp.sqrt(re * re + xnp.imag(alpha) ** 2 + xnorm2)
    beta = -xnp.where(re >= 0, norm, -norm)
    skip = (xnorm2 == 0) & (xnp.imag(alpha) == 0)
    safe_beta = xnp.where(skip, 1.0, beta).astype(x.dtype)
    denom = xnp.where(skip, xnp.ones_like(alpha), alpha - safe_beta)
    tau = xnp.where(skip, xnp.zeros_like(alpha), (safe_beta - alpha) / safe_beta)
    v = xnp.concatenate([xnp.ones_like(alpha)[None], rest / denom])
    return v, tau


def hessenberg(a: Any, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> Any:
    """The upper Hessenberg form ``H = Q^H a Q`` of a square matrix by Householder
    reflections (LAPACK ``gehrd``'s reflector convention); ``(H, Q)`` with ``calc_q``."""
    m = xnp.asarray(a)
    (m,) = promote(m, to_inexact=True)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ShapeError(f"hessenberg: expected a square matrix, got {m.type_text()}")
    n = m.shape[0]
    q = xnp.eye(n, dtype=m.dtype)
    for k in range(n - 1):        # the last reflector makes a complex subdiagonal real
        v, tau = _householder(m[k + 1:, k])
        v = xnp.concatenate([xnp.zeros(k + 1, m.dtype), v])
        vh = xnp.conj(v)
        # H^H m H with H = I - tau v v^H (H^H = I - conj(tau) v v^H)
        m = m - xnp.conj(tau) * xnp.outer(v, vh @ m)
        m = m - tau * xnp.outer(m @ v, vh)
        q = q - tau * xnp.outer(q @ v, vh)
        col = xnp.arange(n)
        m = xnp.where((col[:, None] > k + 1) & (col[None, :] == k), 0, m).astype(m.dtype)
    return (m, q) if calc_q else m


def _sturm_counts(alpha: Array, beta_sq: Array, pivmin: Array, pert0: Array,
                  x: Array) -> Array:
    """For each shift in ``x``, the number of eigenvalues below it (the negative pivots
    of the LDL^T Sturm recurrence, with LAPACK ``stebz``'s pivot guard)."""
    from ..frontend.control_flow import fori_loop
    q = alpha[0] - x
    count = (q < 0).astype(np.int32)
    q = xnp.where(alpha[0] == x, pert0, q)

    def step(i: Any, qc: tuple) -> tuple:
        q, count = qc
        q = alpha[i] - beta_sq[i - 1] / q - x
        small = q <= pivmin
        return xnp.where(small, xnp.minimum(q, -pivmin), q), count + small.astype(np.int32)
    return fori_loop(1, alpha.shape[0], step, (q, count))[1]


def eigh_tridiagonal(d: Any, e: Any, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple[float, float] | None = None,
                     tol: float | None = None, key: Any = None) -> Any:
    """Eigenvalues (ascending) of the Hermitian tridiagonal matrix with diagonal ``d``
    and off-diagonal ``e``, by Sturm-sequence bisection (JAX's algorithm); ``select="i"``
    keeps the indices ``select_range``. The eigenvectors (unless ``eigvals_only``) are
    those of the dense tridiagonal matrix from ``eigh``, one column per eigenvalue (JAX
    finds them by randomly started inverse iteration, so only their span is defined)."""
    from ..frontend.control_flow import while_loop
    alpha, beta = xnp.asarray(d), xnp.asarray(e)
    if alpha.dtype != beta.dtype:
        raise InvalidArgumentError(f"eigh_tridiagonal: d and e must have one dtype, got "
                                   f"{alpha.dtype} and {beta.dtype}")
    if np.dtype(alpha.dtype) not in (np.float32, np.float64, np.complex64, np.complex128):
        raise InvalidArgumentError(f"eigh_tridiagonal: float or complex input only, got "
                                   f"{alpha.dtype}")
    n = alpha.shape[0]
    if n <= 1:
        return xnp.real(alpha) if eigvals_only else (xnp.real(alpha),
                                                     xnp.eye(n, dtype=alpha.dtype))
    a = xnp.real(alpha)
    beta_sq = xnp.real(beta * xnp.conj(beta))
    beta_abs = xnp.sqrt(beta_sq)
    row = xnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]])
    lam_max, lam_min = xnp.max(a + row), xnp.min(a - row)
    t_norm = xnp.maximum(xnp.abs(lam_min), xnp.abs(lam_max))
    fi = np.finfo(np.dtype(a.dtype))
    one = np.ones([], dtype=np.dtype(a.dtype))
    safemin = np.maximum(one / fi.max, (one + fi.eps) * fi.tiny)
    pivmin = safemin * xnp.maximum(1, xnp.max(beta_sq))
    pert0 = xnp.square(fi.eps * beta_abs[0])
    abs_tol = fi.eps * t_norm if tol is None else xnp.maximum(tol, fi.eps * t_norm)
    if select == "a":
        targets = np.arange(n, dtype=np.int32)
    elif select == "i":
        if select_range is None or select_range[0] > select_range[1]:
            raise InvalidArgumentError("eigh_tridiagonal: select='i' needs a non-empty "
                                       f"select_range, got {select_range!r}")
        targets = np.arange(select_range[0], select_range[1] + 1, dtype=np.int32)
    else:
        raise InvalidArgumentError(f"eigh_tridiagonal: select must be 'a' or 'i', got "
                                   f"{select!r}")
    slack = n * 2.1 * fi.eps * t_norm
    shape = targets.shape
    lower = xnp.broadcast_to(lam_min - slack - 2 * 2.1 * pivmin, shape)
    upper = xnp.broadcast_to(lam_max + slack + 2.1 * pivmin, shape)
    pivb, pertb = xnp.broadcast_to(pivmin, shape), xnp.broadcast_to(pert0, shape)
    tgt = xnp.asarray(targets)

    def cond(s: tuple) -> Array:
        return (s[0] < fi.nmant + 1) & (abs_tol < xnp.max(s[3] - s[1]))

    def body(s: tuple) -> tuple:
        i, lo, mid, up = s
        counts = _sturm_counts(a, beta_sq, pivb, pertb, mid)
        lo = xnp.where(counts <= tgt, mid, lo)
        up = xnp.where(counts > tgt, mid, up)
        return i + 1, lo, 0.5 * (lo + up), up
    _, _, eigvals, _ = while_loop(cond, body, (xnp.asarray(0, dtype=np.int32), lower,
                                               0.5 * (lower + upper), upper))
    if eigvals_only:
        return eigvals
    from ..numpy import linalg as NL
    dense = (xnp.diag(alpha) + xnp.diag(beta, -1) + xnp.diag(xnp.conj(beta), 1))
    vecs = NL.eigh(dense)[1]
    return eigvals, vecs[:, targets]


def _rsf2csf_2d(t: Array, z: Array) -> tuple[Array, Array]:
    from ..numpy import linalg as NL
    n = t.shape[0]
    eps = np.finfo(np.dtype(t.dtype)).eps
    for m in range(n - 1, 0, -1):
        mu = NL.eigvals(t[m - 1:m + 1, m - 1:m + 1]) - t[m, m]
        r = xnp.sqrt(xnp.abs(mu[0]) ** 2 + xnp.abs(t[m, m - 1]) ** 2).astype(t.dtype)
        c, s = mu[0] / r, t[m, m - 1] / r
        g = xnp.stack([xnp.stack([xnp.conj(c), s]), xnp.stack([-s, c])])
        gh = xnp.conj(g).T
        rows = g @ t[m - 1:m + 1, m - 1:]
        t_new = xnp.concatenate([t[:m - 1], xnp.concatenate([t[m - 1:m + 1, :m - 1], rows],
                                                             axis=1), t[m + 1:]])
        cols = t_new[:m + 1, m - 1:m + 1] @ gh
        t_new = xnp.concatenate([t_new[:, :m - 1], xnp.concatenate(
            [cols, t_new[m + 1:, m - 1:m + 1]]), t_new[:, m + 1:]], axis=1)
        z_new = xnp.concatenate([z[:, :m - 1], z[:, m - 1:m + 1] @ gh, z[:, m + 1:]], axis=1)
        act = xnp.abs(t[m, m - 1]) > eps * (xnp.abs(t[m - 1, m - 1]) + xnp.abs(t[m, m]))
        t, z = xnp.where(act, t_new, t), xnp.where(act, z_new, z)
        t = t.at[m, m - 1].set(0.0)
    return t, z


def rsf2csf(T: Any, Z: Any, check_finite: bool = True) -> tuple[Array, Array]:
    """Convert a real Schur form ``(T, Z)`` to the complex Schur form (Givens rotations
    that split each 2x2 diagonal block, as SciPy/JAX); batched over leading axes."""
    t, z = xnp.asarray(T), xnp.asarray(Z)
    for name, m in (("T", t), ("Z", z)):
        if m.ndim < 2 or m.shape[-1] != m.shape[-2]:
            raise ShapeError(f"rsf2csf: {name} must be square, got {m.type_text()}")
    if t.shape[-1] != z.shape[-1]:
        raise ShapeError(f"rsf2csf: T and Z sizes differ: {t.type_text()} vs {z.type_text()}")
    dt = np.dtype(xnp.result_type(t, z))
    cdt = np.dtype(np.complex128) if dt in (np.float64, np.complex128) else \
        np.dtype(np.complex64)
    batch = xnp.broadcast_shapes(t.shape[:-2], z.shape[:-2])
    t = xnp.broadcast_to(t.astype(cdt), batch + t.shape[-2:])
    z = xnp.broadcast_to(z.astype(cdt), batch + z.shape[-2:])
    if t.shape[-1] == 1:
        return t, z
    if not batch:
        return _rsf2csf_2d(t, z)
    n = t.shape[-1]
    ft, fz = xnp.reshape(t, (-1, n, n)), xnp.reshape(z, (-1, n, n))
    outs = [_rsf2csf_2d(ft[i], fz[i]) for i in range(ft.shape[0])]
    return (xnp.reshape(xnp.stack([o[0] for o in outs]), t.shape),
            xnp.reshape(xnp.stack([o[1] for o in outs]), z.shape))


def _sylvester_2d(a: Array, b: Array, c: Array, method: str, tol: float) -> Array:
    from ..numpy import linalg as NL
    m, n = c.shape
    if method == "schur":
        # vec(A X + X B) = (I_n (x) A + B^T (x) I_m) vec(X), vec stacking columns
        k = xnp.kron(xnp.eye(n, dtype=a.dtype), a) + xnp.kron(b.T, xnp.eye(m, dtype=a.dtype))
        x = xnp.reshape(NL.solve(k, xnp.reshape(c.T, (m * n,))), (n, m)).T
    else:
        ra, ua = NL.eig(a)
        rb, ub = NL.eig(b)
        f = NL.solve(ua, c.astype(ra.dtype) @ ub)
        x = ua @ (f / (ra[:, None] + rb[None, :])) @ NL.inv(ub)
        if not xnp.iscomplexobj(c):
            x = xnp.real(x)
    bad = xnp.any(xnp.abs(NL.eigvals(a)[:, None] + NL.eigvals(b)[None, :]) < tol)
    return xnp.where(bad, np.nan, x).astype(x.dtype)


def solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur",
                    tol: float = 1e-8) -> Array:
    """``X`` with ``A X + X B = C`` (batched over leading axes); NaN when ``A`` and ``-B``
    share an eigenvalue (within ``tol``). ``method="schur"`` solves the equivalent
    Kronecker-product linear system directly (the unique solution Bartels-Stewart also
    finds; xlapy has no Schur decomposition), ``"eigen"`` diagonalizes ``A`` and ``B``
    as JAX does."""
    if method not in ("schur", "eigen"):
        raise InvalidArgumentError(f"solve_sylvester: method must be 'schur' or 'eigen', got "
                                   f"{method!r}")
    a, b, c = xnp.asarray(A), xnp.asarray(B), xnp.asarray(C)
    dt = dtypes.to_inexact(xnp.result_type(a, b, c))
    a, b, c = a.astype(dt), b.astype(dt), c.astype(dt)
    m, n = c.shape[-2:]
    if a.shape[-2:] != (m, m) or b.shape[-2:] != (n, n):
        raise ShapeError(f"solve_sylvester: incompatible shapes A {a.type_text()}, "
                         f"B {b.type_text()}, C {c.type_text()}")
    batch = xnp.broadcast_shapes(a.shape[:-2], b.shape[:-2], c.shape[:-2])
    if not batch:
        return _sylvester_2d(a, b, c, method, tol)
    fa = xnp.reshape(xnp.broadcast_to(a, batch + (m, m)), (-1, m, m))
    fb = xnp.reshape(xnp.broadcast_to(b, batch + (n, n)), (-1, n, n))
    fc = xnp.reshape(xnp.broadcast_to(c, batch + (m, n)), (-1, m, n))
    outs = [_sylvester_2d(fa[i], fb[i], fc[i], method, tol) for i in range(fa.shape[0])]
    return xnp.reshape(xnp.stack(outs), batch + (m, n))
