"""The ``xlapy.numpy`` additions against NumPy (no JAX needed): manipulation, index grids,
math, sets, polynomials, windows, convolution, FFT (values, jit, gradients) and linalg."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.errors import InvalidArgumentError
from backend_fixtures import interpreter_backend  # noqa: F401

A = np.arange(12, dtype=np.float32).reshape(3, 4)
RNG = np.random.default_rng(0)



def same(got, want, tol=1e-5):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, tol)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    np.testing.assert_allclose(g.astype(np.complex128), w.astype(np.complex128), rtol=tol,
                               atol=tol, equal_nan=True)


@pytest.mark.parametrize("name,args", [
    ("insert", (A, 1, 9., 1)), ("insert", (A, np.int32([1, 3]), np.float32([7, 8]), 1)),
    ("insert", (A, 1, np.float32([1, 2, 3, 4]), 0)), ("delete", (A, np.int32([0, 2]), 1)),
    ("append", (A, A, 0)), ("array_split", (np.arange(7), 3)), ("rot90", (A,)),
    ("rot90", (A, 3)), ("rollaxis", (np.zeros((2, 3, 4)), 2)), ("resize", (A, (5, 3))),
    ("diagflat", (np.float32([1, 2]), 1)), ("column_stack", ([np.arange(3), np.arange(3)],)),
    ("block", ([[A, A], [A, A]],)), ("tril_indices", (3,)),
    ("unravel_index", (np.array([5, 7]), (3, 4))),
    ("ravel_multi_index", ((np.array([1, 2]), np.array([0, 3])), (3, 4))),
    ("indices", ((2, 3),)), ("trim_zeros", (np.array([0, 0, 1, 2, 0]),)),
    ("compress", (np.array([1, 0, 1], bool), A, 0)), ("dstack", ([A, A],)),
    ("hsplit", (A, 2)), ("vsplit", (A, 3)), ("fliplr", (A,)),
    ("isin", (np.int32([3, 1, 2, 5]), np.int32([1, 5, 7]))),
    ("intersect1d", (np.int32([3, 1, 2, 3, 5]), np.int32([1, 5, 7]))),
    ("setdiff1d", (np.int32([3, 1, 2, 3, 5]), np.int32([1, 5, 7]))),
    ("lexsort", ((np.int32([3, 1, 2, 3]), np.int32([1, 1, 0, 0])),)),
    ("packbits", (np.array([[1, 0, 1], [0, 0, 1]], np.uint8), 1)),
    ("unpackbits", (np.uint8([3, 255]),)),
    ("gcd", (np.int32([12, -18, 0, 7]), np.int32([8, 12, 0, 0]))),
    ("lcm", (np.int32([4, -6, 0]), np.int32([6, 4, 3]))),
    ("frexp", (np.float32([0., 1.5, -3.25, 1e-40, np.inf, np.nan]),)),
    ("ldexp", (np.float32([1., 3., 1e-30]), np.int32([200, -140, -20]))),
    ("modf", (np.float32([1.5, -2.25]),)), ("spacing", (np.float32([1., -1.]),)),
    ("unwrap", (np.float32([0, 3, 6.5, 0.1]),)), ("sinc", (np.float32([0, 0.5, 2]),)),
    ("convolve", (np.float32([1, 2, 3, 4]), np.float32([1, -1, 2]), "same")),
    ("correlate", (np.float32([1, 2, 3]), np.float32([1, -1, 2, 4]), "same")),
    ("polyval", (np.float32([1, 2, 3]), np.float32([0.5, 2]))), ("poly", (np.float32([1, 2]),)),
    ("polymul", (np.float32([1, 2]), np.float32([1, -1, 3]))),
    ("polyder", (np.float32([1, 2, 3, 4]), 2)), ("polyint", (np.float32([3, 2, 1]),)),
    ("gradient", (np.float32([1, 4, 9, 16, 25]),)), ("trapezoid", (np.float32([1, 2, 4]),)),
    ("logspace", (0, 2, 5)), ("geomspace", (1, 1000, 4)), ("hanning", (5,)),
    ("hamming", (6,)), ("blackman", (5,)), ("bartlett", (5,)), ("kaiser", (6, 3.)),
    ("i0", (np.float32([0, 1, 10]),)), ("fromiter", (range(4), np.int32)),
])
def test_against_numpy(name, args):
    same(getattr(xnp, name)(*args), getattr(np, name)(*args))


def test_convolve_correlate_every_length_and_mode():
    for n in range(1, 6):
        for m in range(1, 6):
            a, v = RNG.random(n).astype(np.float32), RNG.random(m).astype(np.float32)
            for mode in ("full", "same", "valid"):
                same(xnp.convolve(a, v, mode), np.convolve(a, v, mode))
                same(xnp.correlate(a, v, mode), np.correlate(a, v, mode))


def test_index_helpers_and_vectorize():
    same(xnp.mgrid[0:2, 0:3], np.mgrid[0:2, 0:3])
    same(xnp.r_[1:3, [5, 6]], np.r_[1:3, [5, 6]])
    same(xnp.vectorize(lambda x, y: x * y + 1)(np.arange(3), np.arange(3)[:, None]),
         np.arange(3) * np.arange(3)[:, None] + 1)
    same(xnp.apply_along_axis(lambda v: v.sum(), 1, A), A.sum(1))
    same(xnp.fill_diagonal(np.zeros((3, 3), np.float32), 5, inplace=False), 5 * np.eye(3))
    with pytest.raises(InvalidArgumentError):
        xnp.place(A, A > 2, 0.)                       # inplace=True cannot be honoured


def test_polydiv_roots_and_polyfit():
    q, r = xnp.polydiv(np.float32([1, -3, 2, 5]), np.float32([1, -1]))
    same((q, r[-1:]), (np.polydiv([1, -3, 2, 5], [1, -1])[0], [5.]))
    same(np.sort_complex(np.asarray(xnp.roots(np.float32([1, -6, 11, -6])))), [1, 2, 3], 1e-4)
    same(xnp.polyfit(np.float32([0, 1, 2, 3]), np.float32([1, 3, 7, 13]), 2), [1, 1, 1], 1e-4)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_fft_against_numpy(norm):
    x = RNG.standard_normal((4, 6, 5)).astype(np.float32)
    c = (x + 1j * RNG.standard_normal(x.shape)).astype(np.complex64)
    F = xnp.fft
    same(F.fft(c, norm=norm), np.fft.fft(c, norm=norm), 1e-4)
    same(F.ifft(c, 7, axis=1, norm=norm), np.fft.ifft(c, 7, axis=1, norm=norm), 1e-4)
    same(F.rfft(x, 4, norm=norm), np.fft.rfft(x, 4, norm=norm), 1e-4)
    same(F.irfft(c, 9, axis=0, norm=norm), np.fft.irfft(c, 9, axis=0, norm=norm), 1e-4)
    same(F.hfft(c, norm=norm), np.fft.hfft(c, norm=norm), 1e-4)
    same(F.ihfft(x, norm=norm), np.fft.ihfft(x, norm=norm), 1e-4)
    same(F.fftn(c, norm=norm), np.fft.fftn(c, norm=norm), 1e-4)
    same(F.irfftn(c, s=(4, 6, 8), axes=(0, 1, 2)), np.fft.irfftn(c, s=(4, 6, 8), axes=(0, 1, 2)),
         1e-4)
    x4 = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    same(F.rfftn(x4), np.fft.rfftn(x4), 1e-4)
    same(F.fftshift(x), np.fft.fftshift(x))
    same(F.fftfreq(7, 0.5), np.fft.fftfreq(7, 0.5))


def test_fft_compiles_and_differentiates():
    x = RNG.standard_normal(6).astype(np.float32)
    same(xlapy.jit(lambda v: xnp.fft.rfft(v))(x), np.fft.rfft(x), 1e-4)
    # d/dx sum |rfft(x)|^2 by central differences
    f = lambda v: xnp.sum(xnp.abs(xnp.fft.rfft(v)) ** 2)   # noqa: E731
    g = np.asarray(xlapy.grad(f)(x))
    eps = 1e-2
    num = [(float(f(x + eps * e)) - float(f(x - eps * e))) / (2 * eps)
           for e in np.eye(6, dtype=np.float32)]
    np.testing.assert_allclose(g, num, rtol=2e-2, atol=2e-2)


def test_linalg_additions():
    a = RNG.standard_normal((2, 4, 4)).astype(np.float32)
    w, v = xnp.linalg.eig(a)
    np.testing.assert_allclose(a.astype(np.complex64) @ np.asarray(v),
                               np.asarray(v) * np.asarray(w)[:, None, :], atol=1e-4)
    same(np.sort_complex(np.asarray(xnp.linalg.eigvals(a[0]))),
         np.sort_complex(np.linalg.eigvals(a[0])), 1e-4)
    same(xnp.linalg.cond(a), np.linalg.cond(a), 1e-3)
    t = RNG.standard_normal((6, 2, 3)).astype(np.float32)
    same(xnp.linalg.tensorinv(t, 1), np.linalg.tensorinv(t, 1), 1e-3)
    b = RNG.standard_normal((2, 3)).astype(np.float32)
    same(xnp.linalg.tensorsolve(t.reshape(2, 3, 6), b), np.linalg.tensorsolve(
        t.reshape(2, 3, 6), b), 1e-3)


def test_complex_order_and_fixed_dtypes():
    z = np.complex64([1 + 2j, 1 - 1j, 0 + 5j])
    w = np.complex64([1 + 0j, 1 + 0j, 0 + 5j])
    assert np.asarray(xnp.less(z, w)).tolist() == [False, True, False]
    same(xnp.maximum(z, w), [1 + 2j, 1 + 0j, 5j])
    assert float(xnp.arccos(np.float32(-1))) == pytest.approx(np.pi)
    assert xnp.reciprocal(np.int32(2)).dtype == np.float32
    assert xnp.square(np.bool_(True)).dtype == np.int32
