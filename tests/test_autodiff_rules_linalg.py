"""The gradient table, continued: the LAPACK-backed linear-algebra primitives
(``xlapy.frontend.primitives_linalg``) and the ``xnp.linalg`` functions built on them.

Same method as ``test_autodiff_rules.py`` (grad, jvp and their jitted forms against
fourth-order finite differences). Inputs are well conditioned, with distinct eigenvalues
and singular values and no pivoting ties, so every function is smooth around them.
Eigen- and singular vectors enter through sign-invariant squares (LAPACK's sign choice is
a convention, not a function of the input the differences could follow).
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.errors import InvalidArgumentError
from xlapy.frontend import primitives_linalg as PL
from autodiff_check import case, check_case, grid, uniform

f32 = np.float32


def u(name: str, shape, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return uniform(name, shape, lo, hi)


def dominant(name: str, n: int, batch=(), scale: float = 3.0) -> np.ndarray:
    """A well-conditioned matrix: random entries plus ``scale`` on the diagonal."""
    return grid(u(name, batch + (n, n)) + scale * np.eye(n, dtype=f32))


def spd(name: str, n: int) -> np.ndarray:
    a = u(name, (n, n)).astype(np.float64)
    return grid(a @ a.T + 2.0 * np.eye(n))


def spaced_symmetric(name: str, n: int) -> np.ndarray:
    """Symmetric with eigenvalues 1, 2.5, 4, ... (well separated)."""
    q, _ = np.linalg.qr(u(name, (n, n)).astype(np.float64))
    return grid(q @ np.diag(1.0 + 1.5 * np.arange(n)) @ q.T)


def pivoting(name: str, n: int) -> np.ndarray:
    """Rows permuted so LU must pivot, with clear winners in every column."""
    a = dominant(name, n, scale=4.0)
    return a[np.roll(np.arange(n), 1)]


def _sq(x):
    return lax.mul(x, x)


def _svd_parts(a):
    s, u_, vh = PL.svd(a)
    return s, _sq(u_), _sq(vh)


def _singular(name: str, m: int, n: int) -> np.ndarray:
    """Singular values near 3, 2, 1 (distinct), small random rotation."""
    return grid(np.eye(m, n, dtype=f32) * np.array([3.0, 2.0, 1.0, 0.5][:m], f32)[:, None]
                + u(name, (m, n), -0.2, 0.2))


_CPLX_B = lax.complex(u("cplx_b", (2, 1)), u("cplx_c", (2, 1)))


def _complex_parts(z):
    """Real outputs of complex solves, a determinant and a Cholesky factor."""
    x = xnp.linalg.solve(z, _CPLX_B)
    c = xnp.linalg.cholesky(xnp.matmul(z, xnp.conj(z.T)))
    d = xnp.linalg.det(z)
    return lax.real(x), lax.imag(x), lax.imag(c), lax.real(d), lax.imag(d)


def _fft_parts(x, y):
    """Real outputs of a complex FFT, a real-input FFT and its inverse."""
    z = xnp.fft.fft(lax.complex(x, y))
    r = xnp.fft.rfft(x)
    return lax.real(z), lax.imag(z), lax.real(r), lax.imag(r), xnp.fft.irfft(r * y[:, :3], 4)


LINALG_CASES = [
    # primitives
    case("cholesky_reads_lower_triangle", "cholesky", PL.cholesky, spd("chol", 3)),
    case("triangular_solve_lower", "triangular_solve",
         lambda a, b: PL.triangular_solve(a, b, lower=True), dominant("ts1", 3), u("ts1b", (3, 2)),
         second_order=True),
    case("triangular_solve_upper_transposed_unit", "triangular_solve",
         lambda a, b: PL.triangular_solve(a, b, lower=False, transpose_a="T", unit_diagonal=True),
         dominant("ts2", 3), u("ts2b", (3, 2))),
    case("triangular_solve_batched_right_side", "triangular_solve",
         lambda a, b: PL.triangular_solve(a, b, left_side=False, lower=True, transpose_a="C"),
         dominant("ts3", 2, (2,)), u("ts3b", (2, 3, 2))),
    case("lu_packed_factors_with_pivoting", "lu", lambda a: PL.lu(a)[0], pivoting("lu", 3)),
    case("qr_square_and_tall_reduced", "qr", lambda a, b: (PL.qr(a), PL.qr(b)),
         dominant("qr1", 3), u("qr2", (3, 2)) + np.eye(3, 2, dtype=f32)),
    case("eigh_values_squared_vectors_and_eigvalsh", "eigh",
         lambda a: (PL.eigh(a)[1], _sq(PL.eigh(a)[0]), xnp.linalg.eigvalsh(a)),
         spaced_symmetric("eigh", 3)),
    case("svd_tall_and_wide_values", "svd",
         lambda a, b: (_svd_parts(a), PL.svd(b, compute_uv=False)),
         _singular("svd1", 3, 2), _singular("svd2", 2, 3)),
    # xnp.linalg compositions
    case("numpy_solve_inv_det_slogdet", ("lu", "triangular_solve"),
         lambda a, b: (xnp.linalg.solve(a, b), xnp.linalg.inv(a), xnp.linalg.det(a),
                       xnp.linalg.slogdet(a)[1]),
         pivoting("solve", 3), u("solve_b", (3, 2))),
    case("numpy_cholesky_symmetrizes", "cholesky", xnp.linalg.cholesky,
         spd("chol2", 3) + u("chol2_noise", (3, 3), -0.1, 0.1)),
    case("numpy_norms_and_pinv", "svd",
         lambda a: (xnp.linalg.norm(a, 2), xnp.linalg.norm(a, "nuc"), xnp.linalg.norm(a),
                    xnp.linalg.pinv(a)), _singular("norms", 3, 2)),
    case("complex_solve_det_and_cholesky", ("lu", "triangular_solve", "cholesky", "complex"),
         lambda x, y: _complex_parts(lax.complex(x, y)),
         dominant("cplx_x", 2), u("cplx_y", (2, 2), -0.5, 0.5)),
    case("fft_complex_real_and_inverse", ("fft", "complex"), _fft_parts,
         u("fft_x", (2, 4)), u("fft_y", (2, 4))),
]


@pytest.mark.parametrize("c", LINALG_CASES, ids=repr)
def test_linalg_gradient_matches_finite_differences(c):
    check_case(c)


def test_unsupported_gradients_say_so():
    a = u("nd", (3, 4))
    with pytest.raises(InvalidArgumentError, match="no gradient rule"):
        xlapy.grad(lambda x: xnp.sum(lax.real(xnp.linalg.eigvals(x))))(a[:, :3])
    with pytest.raises(InvalidArgumentError, match="not differentiable"):
        xlapy.grad(lambda x: xnp.sum(PL.qr(x)[1]))(a)                    # wide QR
    with pytest.raises(InvalidArgumentError, match="not differentiable"):
        xlapy.grad(lambda x: xnp.sum(PL.svd(x, full_matrices=True)[1]))(a)
    with pytest.raises(InvalidArgumentError, match="not differentiable"):
        xlapy.grad(lambda x: xnp.sum(PL.lu(x)[0]))(a)                      # non-square LU
