"""``xlapy.lax.linalg``: the matrix decompositions as XLA-level operations (JAX's
``jax.lax.linalg``), each one LAPACK custom-call per batch; float32 and complex64."""
from __future__ import annotations

from typing import Any

from ..frontend.core import Array, to_array
from ..frontend.primitives_eig import eig as _eig
from ..frontend.primitives_linalg import (cholesky as _cholesky, eigh as _eigh, lu as _lu,
                                          qr as _qr, svd as _svd,
                                          triangular_solve as _triangular_solve)


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Array:
    """The lower Cholesky factor (``symmetrize_input`` averages ``x`` with ``x^H``)."""
    a = to_array(x)
    if symmetrize_input:
        from ..numpy import conj, swapaxes
        a = (a + conj(swapaxes(a, -1, -2))) / 2
    return _cholesky(a)


def eig(x: Any, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, use_magma: Any = None,
        implementation: Any = None) -> list[Array]:
    """``[w, vl, vr]`` (the eigenvectors as requested) of general square matrices."""
    return _eig(to_array(x), compute_left_eigenvectors=compute_left_eigenvectors,
                compute_right_eigenvectors=compute_right_eigenvectors)


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: Any = None) -> tuple[Array, Array]:
    """``(v, w)``: eigenvectors and ascending eigenvalues of a Hermitian matrix."""
    a = to_array(x)
    if symmetrize_input:
        from ..numpy import conj, swapaxes
        a = (a + conj(swapaxes(a, -1, -2))) / 2
    elif not lower:
        from ..numpy import conj, swapaxes
        a = conj(swapaxes(a, -1, -2))
    if subset_by_index is not None:
        v, w = _eigh(a)
        lo, hi = subset_by_index
        return v[..., lo:hi], w[..., lo:hi]
    return _eigh(a)


def lu(x: Any) -> tuple[Array, Array, Array]:
    """``(lu, pivots, permutation)`` with partial pivoting."""
    return _lu(to_array(x))


def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: Any = None) -> tuple[Array, Array]:
    """``(q, r)`` (Householder; ``full_matrices`` gives the square ``q``)."""
    if pivoting:
        from ..errors import InvalidArgumentError
        raise InvalidArgumentError("lax.linalg.qr: pivoting is not supported")
    return _qr(to_array(x), full_matrices=full_matrices)


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: Any = None, algorithm: Any = None) -> Any:
    """``(u, s, vh)`` (JAX's order) or ``s`` alone."""
    out = _svd(to_array(x), full_matrices=full_matrices, compute_uv=compute_uv)
    if not compute_uv:
        return out
    s, u, vh = out
    return u, s, vh


def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Array:
    """Solve ``op(a) x = b`` (``left_side``) or ``x op(a) = b`` with JAX's defaults."""
    t = "C" if transpose_a and conjugate_a else ("T" if transpose_a else "N")
    a_ = to_array(a)
    if conjugate_a and not transpose_a:
        from ..numpy import conj
        a_ = conj(a_)
    return _triangular_solve(a_, to_array(b), left_side=left_side, lower=lower,
                             transpose_a=t, unit_diagonal=unit_diagonal)


__all__ = ["cholesky", "eig", "eigh", "lu", "qr", "svd", "triangular_solve"]
