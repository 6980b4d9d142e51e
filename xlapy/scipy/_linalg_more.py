"""``jax.scipy.linalg`` compositions: :func:`expm_frechet` (the forward derivative of
``expm``), :func:`qr_multiply` (``Q`` of a QR factorization applied to a matrix) and
:func:`hessenberg` (Householder reduction with LAPACK's reflector convention)."""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError, ShapeError
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
