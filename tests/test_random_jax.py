"""xlapy.random against jax.random 0.10.2 (default config: threefry partitionable, x64 off).

Needs jax and jaxlib, which the ``test`` extra installs (``pip install -e '.[test]'``).

Integer, bit-cast and exactly rounded paths must give JAX's bits on xlapy's interpreter.
Samplers with ``log``/``log1p``/``erf`` or a ``a * b + c`` that XLA:CPU contracts into
an FMA are checked twice: within a few f32 ulps on the interpreter, and bit for bit when
xlapy's HLO is compiled and run by the real XLA:CPU (the same program as JAX's).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jax
pytestmark = pytest.mark.peers

import jax.numpy as jnp  # noqa: E402
import jax.random as jr  # noqa: E402

from real_xla import run_on_xla  # noqa: E402
import xlapy  # noqa: E402
import xlapy.numpy  # noqa: E402,F401
import xlapy.random as xr  # noqa: E402

SEEDS = [0, 12345, -7]


def assert_bits_equal(ours, theirs):
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))


def test_jax_default_config_is_the_one_modelled():
    assert jax.config.jax_threefry_partitionable is True
    assert jax.config.jax_enable_x64 is False
    assert jax.config.jax_default_prng_impl == "threefry2x32"


@pytest.mark.parametrize("seed", [0, 1, 42, -1, 2 ** 31, 2 ** 32 + 5, 2 ** 40 + 3, -(2 ** 40),
                                  2 ** 63 - 1, -(2 ** 63)])
def test_keys(seed):
    assert_bits_equal(xr.key(seed), jr.PRNGKey(seed))
    assert_bits_equal(xr.key(seed), jr.key_data(jr.key(seed)))


@pytest.mark.parametrize("seed", SEEDS)
def test_split_fold_in(seed):
    k, jk = xr.key(seed), jr.PRNGKey(seed)
    assert_bits_equal(xr.split(k), jr.split(jk))
    assert_bits_equal(xr.split(k, 5), jr.split(jk, 5))
    assert_bits_equal(xr.split(k, (2, 3)), jr.split(jk, (2, 3)))
    for d in (0, 7, 2 ** 32 - 1, np.int32(-3)):
        assert_bits_equal(xr.fold_in(k, d), jr.fold_in(jk, d))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
@pytest.mark.parametrize("shape", [(), (3, 4)])
def test_bits(dtype, shape):
    for seed in SEEDS[:2]:
        assert_bits_equal(xr.bits(xr.key(seed), shape, dtype),
                          jr.bits(jr.PRNGKey(seed), shape, dtype))


def test_uint64_bits_are_canonicalized_like_jax():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = jr.bits(jr.PRNGKey(3), (4,), jnp.uint64)
    assert_bits_equal(xr.bits(xr.key(3), (4,), np.uint64), ref)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.float16])
@pytest.mark.parametrize("seed", SEEDS)
def test_uniform_unit_interval(dtype, seed):
    assert_bits_equal(xr.uniform(xr.key(seed), (4, 5), dtype), jr.uniform(jr.PRNGKey(seed),
                                                                         (4, 5), dtype))


@pytest.mark.parametrize("seed", SEEDS)
def test_bernoulli(seed):
    k, jk = xr.key(seed), jr.PRNGKey(seed)
    assert_bits_equal(xr.bernoulli(k, 0.3, (50,)), jr.bernoulli(jk, 0.3, (50,)))
    p = np.array([0.1, 0.5, 0.9], np.float32)
    assert_bits_equal(xr.bernoulli(k, p, (4, 3)), jr.bernoulli(jk, p, (4, 3)))
    assert_bits_equal(xr.bernoulli(k, 0.3, (50,), mode="high"),
                      jr.bernoulli(jk, 0.3, (50,), mode="high"))


@pytest.mark.parametrize("args", [((3, 4), -5, 7), ((40,), -2 ** 31, 2 ** 31 - 1),
                                  ((5,), 3, 3), ((5,), 5, 3), ((20,), 0, 256, jnp.uint8),
                                  ((20,), -300, 300, jnp.int8), ((20,), 7, 100, jnp.uint32)])
def test_randint(args):
    for seed in SEEDS[:2]:
        assert_bits_equal(xr.randint(xr.key(seed), *args), jr.randint(jr.PRNGKey(seed), *args))


def test_randint_broadcast_and_unsigned_bounds():
    k, jk = xr.key(5), jr.PRNGKey(5)
    lo, hi = np.array([0, 10, 20]), np.array([[5], [50]])
    assert_bits_equal(xr.randint(k, (2, 3), lo, hi), jr.randint(jk, (2, 3), lo, hi))
    lo, hi = np.array(0, np.uint32), np.array(2 ** 32 - 1, np.uint32)
    assert_bits_equal(xr.randint(k, (20,), lo, hi, np.uint32),
                      jr.randint(jk, (20,), lo, hi, jnp.uint32))


LOGITS = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))


@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"shape": (5, 2)}, {"mode": "high"},
                                    {"shape": (3, 2), "replace": False}])
def test_categorical(kwargs):
    for seed in SEEDS:
        assert_bits_equal(xr.categorical(xr.key(seed), LOGITS, **kwargs),
                          jr.categorical(jr.PRNGKey(seed), LOGITS, **kwargs))


X = np.arange(12).reshape(3, 4)


@pytest.mark.parametrize("x, kwargs", [(10, {}), (2000, {}), (X, {}), (X, {"axis": 1}),
                                       (X, {"axis": 1, "independent": True})])
def test_permutation(x, kwargs):
    for seed in SEEDS[:2]:
        assert_bits_equal(xr.permutation(xr.key(seed), x, **kwargs),
                          jr.permutation(jr.PRNGKey(seed), x, **kwargs))


P = np.array([0.1, 0.2, 0.3, 0.4], np.float32)


@pytest.mark.parametrize("a, shape, kwargs", [
    (10, (4,), {}), (10, (4,), {"replace": False}), (X, (2,), {"replace": False, "axis": 1}),
    (4, (30,), {"p": P}), (X, (2, 5), {"p": P, "axis": 1}),
    (4, (3,), {"replace": False, "p": P})])
def test_choice(a, shape, kwargs):
    for seed in SEEDS[:2]:
        assert_bits_equal(xr.choice(xr.key(seed), a, shape, **kwargs),
                          jr.choice(jr.PRNGKey(seed), a, shape, **kwargs))


def test_jitted_xlapy_equals_jax():
    f = xlapy.jit(lambda s: (xr.split(xr.key(s), 3), xr.uniform(xr.key(s), (6,)),
                             xr.randint(xr.key(s), (6,), 0, 9), xr.permutation(xr.key(s), 9)))
    for seed in (np.int32(3), np.int32(-1)):
        jk = jr.PRNGKey(seed)
        for ours, theirs in zip(f(seed), (jr.split(jk, 3), jr.uniform(jk, (6,)),
                                          jr.randint(jk, (6,), 0, 9), jr.permutation(jk, 9))):
            assert_bits_equal(ours, theirs)


def test_truncated_normal_gradient():
    def ours(lo):
        return xlapy.numpy.sum(xr.truncated_normal(xr.key(0), lo, 2., (5,)))

    def theirs(lo):
        return jnp.sum(jr.truncated_normal(jr.PRNGKey(0), lo, 2., (5,)))
    lo = np.float32(-1.)
    np.testing.assert_allclose(xlapy.grad(ours)(lo), jax.grad(theirs)(lo), rtol=1e-5)


# Samplers whose f32 results depend on XLA:CPU's log/log1p/erf and FMA contraction.
TRANSCENDENTAL = {
    "normal": (lambda m, k: m.normal(k, (500,)), 2e-6),
    "normal_bf16": (lambda m, k: m.normal(k, (100,), jnp.bfloat16), 0),
    "normal_c64": (lambda m, k: m.normal(k, (100,), jnp.complex64), 2e-6),
    "uniform_range": (lambda m, k: m.uniform(k, (500,), minval=-2., maxval=5.), 1e-6),
    "truncated_normal": (lambda m, k: m.truncated_normal(k, -1.5, 2., (500,)), 4e-6),
    "gumbel": (lambda m, k: m.gumbel(k, (500,)), 4e-6),
    "gumbel_high": (lambda m, k: m.gumbel(k, (500,), mode="high"), 4e-6),
    "gumbel_highest": (lambda m, k: m.gumbel(k, (500,), mode="highest"), 4e-6),
    "exponential": (lambda m, k: m.exponential(k, (500,)), 2e-6),
    "laplace": (lambda m, k: m.laplace(k, (500,)), 2e-6),
    "logistic": (lambda m, k: m.logistic(k, (500,)), 2e-6),
}


@pytest.mark.parametrize("name", sorted(TRANSCENDENTAL))
def test_float_samplers(name):
    """Close to JAX on the interpreter; JAX's bits when xlapy's HLO runs on XLA:CPU."""
    fn, tol = TRANSCENDENTAL[name]
    key = np.asarray(jr.PRNGKey(9))
    theirs = np.asarray(fn(jr, key))
    ours = np.asarray(fn(xr, xr.key(9)))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours.astype(np.complex128), theirs.astype(np.complex128),
                               rtol=tol, atol=tol)
    if name == "truncated_normal":
        # Bounds as run-time values, as in JAX's program: XLA folds erf of constants
        # with its evaluator, whose erf rounds differently from its compiled erf.
        bounds = [np.float32(-1.5), np.float32(2.)]
        f = xlapy.jit(lambda k, lo, hi: xr.truncated_normal(k, lo, hi, (500,)))
        (on_xla,) = run_on_xla(f.lower(key, *bounds).as_text(), [key] + bounds)
    else:
        (on_xla,) = run_on_xla(xlapy.jit(lambda k: fn(xr, k)).lower(key).as_text(), [key])
    assert_bits_equal(on_xla, theirs)
