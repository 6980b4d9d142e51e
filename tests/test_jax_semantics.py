"""JAX's semantics where xlapy used to differ, each checked against its rule (NumPy or
the formula JAX documents) and, when JAX is installed, against JAX itself."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.errors import InvalidArgumentError

NEG_NAN = np.float32(-np.nan)


def _jax():
    return pytest.importorskip("jax")


def _with_specials(dtype, n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, n).astype(np.float32)
    x[rng.random(n) < 0.2] = 0.0
    x[rng.random(n) < 0.2] = -0.0
    x[rng.random(n) < 0.1] = np.nan
    x[rng.random(n) < 0.1] = NEG_NAN
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64])
@pytest.mark.parametrize("jitted", [False, True])
def test_sort_ties_signed_zeros_and_puts_all_nans_last(dtype, jitted):
    x = _with_specials(dtype)
    argsort = xlapy.jit(xnp.argsort) if jitted else xnp.argsort
    sort = xlapy.jit(xnp.sort) if jitted else xnp.sort
    # NumPy's rule: -0.0 == +0.0 (stable ties), NaNs of either sign at the end
    want = np.argsort(x.astype(np.float64), kind="stable")
    np.testing.assert_array_equal(np.asarray(argsort(x)), want)
    got = np.asarray(sort(x))
    stored = x.astype(np.float64 if dtype == np.float64 else np.float32)
    expect = stored[want].astype(got.dtype)
    assert got.tobytes() == expect.tobytes()          # the values are moved, not rewritten


def test_issue_inputs_for_sort():
    np.testing.assert_array_equal(np.asarray(xnp.argsort(np.array([0., -0., 1.], np.float32))),
                                  [0, 1, 2])
    out = np.asarray(xnp.sort(np.array([NEG_NAN, -1, 1, 2], np.float32)))
    np.testing.assert_array_equal(out[:3], [-1, 1, 2])
    assert np.isnan(out[3])


def test_sort_complex_and_descending_and_num_keys_match_jax():
    jax = _jax()
    x = _with_specials(np.float32, seed=3)
    c = (x + 1j * _with_specials(np.float32, seed=4)).astype(np.complex64)
    np.testing.assert_array_equal(np.asarray(xnp.argsort(c)), np.asarray(jax.numpy.argsort(c)))
    for stable in (True, False):
        got = np.asarray(xnp.argsort(x, descending=True, stable=stable))
        if stable:
            np.testing.assert_array_equal(got, np.asarray(jax.numpy.argsort(x, descending=True)))
        np.testing.assert_array_equal(np.sort(x[got]), np.sort(x))     # a permutation
    np.testing.assert_array_equal(np.asarray(xnp.sort(x, descending=True)),
                                  np.asarray(jax.numpy.sort(x, descending=True)))
    k1 = np.array([2, 1, 2, 1, 0, 0], np.int32)
    k2 = np.array([0.5, -0.0, -1.0, 0.0, 3.0, np.nan], np.float32)
    v = np.arange(6, dtype=np.int32)
    got = lax.sort([k1, k2, v], num_keys=2)
    want = jax.lax.sort([k1, k2, v], num_keys=2)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    np.testing.assert_array_equal(np.asarray(got[2]), np.lexsort((k2, k1)))   # NumPy's rule
    with pytest.raises(InvalidArgumentError, match="num_keys"):
        lax.sort([k1, v], num_keys=3)


def test_sort_gradient_with_several_keys():
    k = np.array([1, 0, 1, 0], np.int32)
    x = np.array([3.0, 1.0, 2.0, 4.0], np.float32)

    def f(x):
        keys, vals = lax.sort([k, x], num_keys=2)
        return xnp.sum(vals * np.arange(4, dtype=np.float32))
    # sorted by (k, x): (0,1.0)->0, (0,4.0)->1, (1,2.0)->2, (1,3.0)->3
    np.testing.assert_array_equal(np.asarray(xlapy.grad(f)(x)), [3.0, 0.0, 2.0, 1.0])


@pytest.mark.parametrize("jitted", [False, True])
def test_dynamic_slice_negative_starts_wrap(jitted):
    X = np.arange(30, dtype=np.float32).reshape(10, 3)
    ds = (xlapy.jit(lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 1))) if jitted
          else lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 1)))
    for i in range(-12, 11):
        for j in (-4, -1, 0, 2):
            # JAX's rule: add the dimension's size to a negative start, then XLA clamps
            si = min(max(i + 10 if i < 0 else i, 0), 8)
            sj = min(max(j + 3 if j < 0 else j, 0), 2)
            got = ds(X, np.int32(i), np.int32(j))
            np.testing.assert_array_equal(np.asarray(got), X[si:si + 2, sj:sj + 1])
    np.testing.assert_array_equal(np.asarray(ds(X, np.int32(-3), np.int32(0))).ravel(), [21, 24])
    upd = lax.dynamic_update_slice(X, -np.ones((2, 1), np.float32), (np.int32(-3), 0))
    want = X.copy()
    want[7:9, 0:1] = -1
    np.testing.assert_array_equal(np.asarray(upd), want)
    kept = lax.dynamic_slice(X, (-3, 0), (2, 1), allow_negative_indices=False)
    np.testing.assert_array_equal(np.asarray(kept), X[0:2, 0:1])         # XLA's clamp only


def test_dynamic_slice_matches_jax_and_its_gradient():
    jax = _jax()
    X = np.arange(30, dtype=np.float32).reshape(10, 3)
    for i in (-11, -3, -1, 4):
        np.testing.assert_array_equal(
            np.asarray(lax.dynamic_slice(X, (i, 1), (3, 2))),
            np.asarray(jax.lax.dynamic_slice(X, (i, 1), (3, 2))))
    g = xlapy.grad(lambda x: xnp.sum(lax.dynamic_slice(x, (-3, 0), (2, 3)) ** 2))(X)
    gj = jax.grad(lambda x: jax.numpy.sum(jax.lax.dynamic_slice(x, (-3, 0), (2, 3)) ** 2))(X)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(gj))


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.int16, np.uint8, np.uint32])
def test_integer_floor_divide_and_remainder_by_zero(dtype):
    info = np.iinfo(dtype)
    x = np.array([7, -7, 0, 5, -5, 3], dtype=np.int64)
    x = np.clip(x, info.min, info.max).astype(dtype)
    y = np.array([0, 0, 0, 2, -2, -4], dtype=np.int64)
    y = np.clip(y, info.min, info.max).astype(dtype)
    q, r = np.asarray(x // xnp.asarray(y)), np.asarray(xnp.asarray(x) % y)
    nz = y != 0
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(q[nz], (x // y)[nz])          # Python's floor rule
        np.testing.assert_array_equal(r[nz], (x % y)[nz])
    # by zero, JAX's formulas: XLA's quotient (all ones) corrected by one where
    # sign(x) != sign(0) and rem(x, 0) = x != 0; the remainder is x % 1 = 0
    xz = x[~nz]
    if info.min < 0:
        want_q = np.where(xz != 0, -2, -1)
    else:
        want_q = np.full(xz.shape, info.max)
    np.testing.assert_array_equal(q[~nz], want_q.astype(dtype))
    np.testing.assert_array_equal(r[~nz], 0)


def test_issue_inputs_for_division_by_zero_and_jax():
    np.testing.assert_array_equal(np.asarray(xnp.asarray([7, -7, 0]) // 0), [-2, -2, -1])
    np.testing.assert_array_equal(np.asarray(xnp.asarray([7, -7, 0]) % 0), [0, 0, 0])
    jax = _jax()
    rng = np.random.default_rng(5)
    for dt in (np.int32, np.uint16, np.float32):
        a = rng.integers(0 if dt == np.uint16 else -9, 9, 64).astype(dt)
        b = rng.integers(0 if dt == np.uint16 else -3, 3, 64).astype(dt)
        for ours, theirs in ((xnp.floor_divide, jax.numpy.floor_divide),
                             (xnp.remainder, jax.numpy.remainder)):
            np.testing.assert_array_equal(np.asarray(ours(a, b)), np.asarray(theirs(a, b)))


def test_pow_of_float_by_integer_exponent():
    x = np.linspace(-2, 2, 9, dtype=np.float32)
    for y in (np.int32(3), np.arange(9, dtype=np.int32) - 4):
        got = np.asarray(lax.pow(x, y))
        want = np.power(x, np.asarray(y, np.float32))        # y converted to x's dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(Exception):
        lax.pow(np.arange(3, dtype=np.int32), np.float32(2))


@pytest.mark.parametrize("src,dst", [(np.float32, np.uint8), (np.float32, np.uint16),
                                     (np.int32, np.int8), (np.int16, np.uint8)])
def test_bitcast_convert_type_to_narrower_adds_a_dimension(src, dst):
    x = (np.arange(12).reshape(3, 4) * 1.7 - 5).astype(src)
    k = np.dtype(src).itemsize // np.dtype(dst).itemsize
    got = np.asarray(lax.bitcast_convert_type(x, dst))
    assert got.shape == (3, 4, k)
    np.testing.assert_array_equal(got, x.view(dst).reshape(3, 4, k))   # NumPy's byte view
    back = np.asarray(xlapy.jit(lambda v: lax.bitcast_convert_type(v, src))(got))
    assert back.tobytes() == x.tobytes()
    with pytest.raises(InvalidArgumentError, match="last dimension"):
        lax.bitcast_convert_type(np.zeros((3, 3), dst), src)


def test_dot_preferred_element_type():
    a = (np.arange(12).reshape(3, 4) * 11).astype(np.int8)
    b = (np.arange(8).reshape(4, 2) * 13).astype(np.int8)
    for f in (xnp.dot, xnp.matmul):
        got = f(a, b, preferred_element_type=np.int32)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(got), a.astype(np.int32) @ b.astype(np.int32))
    h = (np.arange(6).reshape(2, 3) / 7).astype(ml_dtypes.bfloat16)
    got = xnp.dot(h, h.T, preferred_element_type=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), h.astype(np.float32) @ h.astype(np.float32).T,
                               rtol=1e-6)
