"""xlapy.random without peers: Threefry known answers, JAX golden values, eager == jit,
statistical sanity and argument errors. Live comparisons with jax are in
test_random_jax.py."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
import xlapy.random as xr
from xlapy.errors import InvalidArgumentError
from xlapy.frontend.core import to_array


def u32(*v: int) -> np.ndarray:
    return np.array(v, np.uint32)


# --------------------------------------------------------------------------- Threefry
@pytest.mark.parametrize("key, count, expected", [
    # Known-answer vectors of Random123 (threefry2x32_20), also used by JAX's tests.
    ((0, 0), (0, 0), (0x6b200159, 0x99ba4efe)),
    ((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
    ((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3), (0xc4923a9c, 0x483df7a0)),
])
def test_threefry_known_answers(key, count, expected):
    k1, k2 = (to_array(np.uint32(v)) for v in key)
    x1, x2 = (to_array(u32(v)) for v in count)
    y1, y2 = xr.threefry2x32(k1, k2, x1, x2)
    assert (int(np.asarray(y1)[0]), int(np.asarray(y2)[0])) == expected


def test_threefry_traces_to_plain_integer_hlo():
    f = xlapy.jit(lambda k: xr.bits(k, (3,)))
    text = f.lower(xr.key(0)).as_text()
    opcodes = {line.split("=", 1)[1].split("(")[0].split()[-1]
               for line in text.splitlines() if " = " in line and "(" in line}
    assert {"add", "xor", "shift-left", "shift-right-logical", "or"} <= opcodes
    assert not opcodes & {"rng", "rng-bit-generator", "custom-call", "while"}


# -------------------------------------------------------------------------------- keys
@pytest.mark.parametrize("seed, words", [
    (0, (0, 0)), (42, (0, 42)), (-1, (0, 0xFFFFFFFF)), (-5, (0, 0xFFFFFFFB)),
    (2 ** 32 - 1, (0, 0xFFFFFFFF)), (2 ** 32 + 5, (0, 5)), (2 ** 40 + 3, (0, 3)),
    (-(2 ** 40), (0, 0)), (np.int32(-1), (0, 0xFFFFFFFF)), (np.uint8(255), (0, 255)),
    (np.int64(2 ** 40 + 7), (0, 7)),
])
def test_key_from_seed(seed, words):
    k = xr.key(seed)
    assert k.dtype == np.uint32 and k.shape == (2,)
    np.testing.assert_array_equal(k, u32(*words))
    np.testing.assert_array_equal(xr.PRNGKey(seed), k)


# Golden values: jax 0.10.2, default config (threefry partitionable, x64 off).
def test_split_fold_in_golden():
    k = xr.key(0)
    np.testing.assert_array_equal(xr.split(k), [[1797259609, 2579123966],
                                               [928981903, 3453687069]])
    np.testing.assert_array_equal(xr.split(xr.key(42), 3), [[1832780943, 270669613],
                                                           [64467757, 2916123636],
                                                           [2465931498, 255383827]])
    np.testing.assert_array_equal(xr.fold_in(k, 1), [928981903, 3453687069])
    # fold_in(k, i) and split(k, n)[i] hash the same counter.
    np.testing.assert_array_equal(xr.fold_in(xr.key(42), 2), xr.split(xr.key(42), 3)[2])


def test_samplers_golden():
    k = xr.key(0)
    np.testing.assert_array_equal(xr.bits(k, (4,)),
                                  u32(4070199207, 4202968722, 1427181096, 2012915765))
    np.testing.assert_array_equal(xr.bits(k, (4,), np.uint8), [167, 146, 40, 53])
    np.testing.assert_array_equal(np.asarray(xr.uniform(k, (4,))).view(np.uint32),
                                  [1064475214, 1064993846, 1051337244, 1055913296])
    np.testing.assert_array_equal(xr.randint(k, (6,), 0, 100), [89, 0, 12, 73, 71, 47])
    np.testing.assert_array_equal(xr.permutation(k, 8), [0, 1, 5, 6, 4, 3, 2, 7])
    np.testing.assert_array_equal(xr.bernoulli(k, 0.5, (8,)), [0, 0, 1, 1, 0, 1, 1, 0])
    np.testing.assert_allclose(xr.normal(k, (4,)), [1.6226422, 2.0252647, -0.43359444,
                                                   -0.07861735], rtol=2e-6)


def test_split_shapes_and_distinct_keys():
    k = xr.key(3)
    keys = np.asarray(xr.split(k, 200))
    assert keys.shape == (200, 2) and keys.dtype == np.uint32
    rows = {tuple(r) for r in keys.tolist()}
    assert len(rows) == 200 and tuple(np.asarray(k)) not in rows
    assert xr.split(k, (2, 3)).shape == (2, 3, 2)
    assert xr.split(k, 0).shape == (0, 2)
    np.testing.assert_array_equal(np.asarray(xr.split(k, (2, 3))).reshape(6, 2),
                                  xr.split(k, 6))
    a, b = xr.split(k)
    assert not np.array_equal(xr.uniform(a, (8,)), xr.uniform(b, (8,)))


# --------------------------------------------------------------------------- eager == jit
def _draw_all(seed):
    k = xr.key(seed)
    k1, k2, k3 = xr.split(k, 3)
    return (k, xr.bits(k1, (5,), np.uint16), xr.uniform(k1, (3,), minval=-2., maxval=3.),
            xr.normal(k2, (4,)), xr.truncated_normal(k3, -1., 1., (3,)),
            xr.randint(k1, (5,), -3, 9), xr.bernoulli(k2, 0.3, (6,)),
            xr.categorical(k3, xnp.log(xnp.array([[.2, .3, .5], [.6, .2, .2]]))),
            xr.permutation(k2, 7), xr.choice(k3, 5, (3,), replace=False),
            xr.choice(k1, 4, (3,), p=xnp.array([.1, .2, .3, .4])), xr.fold_in(k, seed),
            xr.gumbel(k1, (3,), mode="highest"), xr.exponential(k2, (2,)),
            xr.laplace(k3, (2,)), xr.logistic(k1, (2,)))


def test_eager_and_jit_give_the_same_bits():
    seed = np.int32(-7)
    eager = _draw_all(seed)
    jitted = xlapy.jit(_draw_all)(seed)                 # the seed is traced
    assert len(eager) == len(jitted)
    for e, j in zip(eager, jitted):
        assert e.dtype == j.dtype and e.shape == j.shape
        np.testing.assert_array_equal(np.asarray(e), np.asarray(j))


def test_cpu_backend_gives_the_interpreters_bits():
    from xlapy.client import available_backends
    if "cpu" not in available_backends():
        pytest.skip("the cpu backend is not available")

    from xlapy.client import get_backend

    def draw(k):
        k1, k2 = xr.split(k)
        return (k1, xr.bits(k1, (7,), np.uint8), xr.uniform(k2, (9,)),
                xr.uniform(k1, (9,), xnp.bfloat16), xr.uniform(k2, (9,), np.float16),
                xr.randint(k1, (6,), -4, 40), xr.permutation(k2, 11), xr.normal(k1, (64,)),
                xr.normal(k2, (64,), np.float16))
    key = xr.key(23)
    ref = xlapy.jit(draw)(key)
    cpu = xlapy.jit(draw, backend="cpu")
    out = cpu(key)
    # bitcast-convert (every width) and erf_inv's expansion compile natively.
    assert get_backend("cpu").compile(cpu.lower(key).hlo_module).fallback_opcodes() == []
    for r, o in zip(ref[:-2], out[:-2]):                 # integer and exact float paths
        np.testing.assert_array_equal(np.asarray(o), np.asarray(r))
    # normal goes through log1p, whose last bit is the backend's own.
    np.testing.assert_allclose(np.asarray(out[-2]), np.asarray(ref[-2]), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(np.asarray(out[-1], np.float32), np.asarray(ref[-1], np.float32),
                               rtol=1e-3, atol=1e-3)


def test_traced_key_argument():
    k = xr.key(11)
    f = xlapy.jit(lambda key: xr.uniform(xr.split(key)[1], (6,)))
    np.testing.assert_array_equal(f(k), xr.uniform(xr.split(k)[1], (6,)))


# ---------------------------------------------------------------------- statistics
def test_uniform_statistics():
    x = np.asarray(xr.uniform(xr.key(1), (20000,)), np.float64)
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.01 and abs(x.var() - 1 / 12) < 0.005
    y = np.asarray(xr.uniform(xr.key(2), (5000,), minval=-3., maxval=-1.))
    assert y.min() >= -3 and y.max() < -1 and abs(y.mean() + 2) < 0.03
    lo = np.array([0., 10.], np.float32)
    z = np.asarray(xr.uniform(xr.key(3), (1000, 2), minval=lo, maxval=lo + 1))
    assert (z[:, 0] < 1).all() and (z[:, 1] >= 10).all()


@pytest.mark.parametrize("dtype", [np.float32, xnp.bfloat16, np.float16])
def test_normal_statistics(dtype):
    x = np.asarray(xr.normal(xr.key(4), (20000,), dtype), np.float64)
    assert xr.normal(xr.key(4), (2,), dtype).dtype == dtype
    assert abs(x.mean()) < 0.03 and abs(x.var() - 1) < 0.05
    assert np.isfinite(x).all()


def test_complex_normal_parts_have_half_variance():
    z = np.asarray(xr.normal(xr.key(5), (20000,), np.complex64))
    assert z.dtype == np.complex64
    assert abs(z.real.var() - 0.5) < 0.03 and abs(z.imag.var() - 0.5) < 0.03


def test_truncated_normal_stays_inside_open_interval():
    x = np.asarray(xr.truncated_normal(xr.key(6), -0.5, 1.5, (5000,)))
    assert x.min() > -0.5 and x.max() < 1.5
    assert abs(x.mean() - 0.38) < 0.03          # mean of N(0,1) truncated to (-0.5, 1.5)
    lo, hi = np.array([-1., 0.], np.float32), np.array([0., 2.], np.float32)
    y = np.asarray(xr.truncated_normal(xr.key(7), lo, hi))
    assert y.shape == (2,) and -1 < y[0] < 0 < y[1] < 2


def test_bernoulli_rates():
    x = np.asarray(xr.bernoulli(xr.key(8), 0.25, (20000,)))
    assert x.dtype == np.bool_ and abs(x.mean() - 0.25) < 0.015
    p = np.array([0., 0.5, 1.], np.float32)
    y = np.asarray(xr.bernoulli(xr.key(9), p, (4000, 3)))
    assert not y[:, 0].any() and y[:, 2].all() and abs(y[:, 1].mean() - 0.5) < 0.03
    z = np.asarray(xr.bernoulli(xr.key(10), 0.25, (20000,), mode="high"))
    assert abs(z.mean() - 0.25) < 0.015


@pytest.mark.parametrize("dtype, lo, hi", [(np.int32, -5, 7), (np.uint8, 0, 256),
                                           (np.int8, -128, 128), (np.uint32, 3, 11),
                                           (np.int16, -1000, 1000)])
def test_randint_range_and_coverage(dtype, lo, hi):
    x = np.asarray(xr.randint(xr.key(12), (4000,), lo, hi, dtype))
    assert x.dtype == dtype and x.min() >= lo and x.max() < hi
    if hi - lo <= 256:
        assert len(np.unique(x)) == hi - lo       # every value turns up


def test_randint_edge_ranges():
    k = xr.key(13)
    np.testing.assert_array_equal(xr.randint(k, (4,), 5, 5), [5] * 4)     # empty range
    np.testing.assert_array_equal(xr.randint(k, (4,), 9, 2), [9] * 4)
    full = np.asarray(xr.randint(k, (2000,), -2 ** 31, 2 ** 31 - 1))
    assert full.min() < -2 ** 30 and full.max() > 2 ** 30
    bounds = np.asarray(xr.randint(k, (500, 3), np.array([0, 10, 100]), np.array([1, 20, 200])))
    assert (bounds[:, 0] == 0).all() and (bounds[:, 1] < 20).all() and (bounds[:, 2] >= 100).all()


def test_categorical_frequencies():
    p = np.array([0.1, 0.6, 0.3], np.float32)
    x = np.asarray(xr.categorical(xr.key(14), np.log(p), shape=(20000,)))
    freq = np.bincount(x, minlength=3) / x.size
    np.testing.assert_allclose(freq, p, atol=0.015)
    logits = np.log(np.array([[0.5, 0.5, 1e-9], [1e-9, 1e-9, 1.]], np.float32))
    y = np.asarray(xr.categorical(xr.key(15), logits, axis=1, shape=(50, 2)))
    assert y.shape == (50, 2) and (y[:, 0] < 2).all() and (y[:, 1] == 2).all()
    z = np.asarray(xr.categorical(xr.key(16), logits.T, axis=0))
    assert z.shape == (2,) and z[1] == 2
    w = np.asarray(xr.categorical(xr.key(17), np.zeros((2, 5), np.float32), shape=(5, 2),
                                  replace=False))
    for col in w.T:                                        # distinct draws per batch
        assert sorted(col.tolist()) == list(range(5))


def test_permutation_and_shuffle_are_permutations():
    k = xr.key(18)
    p = np.asarray(xr.permutation(k, 2000))        # two sorting rounds above ~1600
    assert sorted(p.tolist()) == list(range(2000)) and (p != np.arange(2000)).any()
    x = np.arange(12).reshape(3, 4)
    rows = np.asarray(xr.permutation(k, x))
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, x.tolist()))
    cols = np.asarray(xr.permutation(k, x, axis=1))
    assert (np.sort(cols, axis=1) == x).all() and (np.diff(cols[:, 0]) == 4).all()
    ind = np.asarray(xr.permutation(k, np.arange(60).reshape(3, 20), 1, independent=True))
    assert (np.sort(ind, axis=1) == np.arange(60).reshape(3, 20)).all()
    assert (ind[0] != ind[1] - 20).any()             # each row has its own order
    np.testing.assert_array_equal(xr.shuffle(k, x, 1),
                                  xr.permutation(k, x, 1, independent=True))
    assert xr.permutation(k, 1).tolist() == [0] and xr.permutation(k, 0).shape == (0,)


def test_choice():
    k = xr.key(19)
    a = np.asarray(xr.choice(k, 10, (6,), replace=False))
    assert len(set(a.tolist())) == 6 and a.max() < 10
    b = np.asarray(xr.choice(k, 3, (2000,)))
    assert set(b.tolist()) == {0, 1, 2}
    p = np.array([0., 0.7, 0.3, 0.], np.float32)
    c = np.asarray(xr.choice(k, 4, (4000,), p=p))
    assert set(c.tolist()) <= {1, 2} and abs((c == 1).mean() - 0.7) < 0.03
    d = np.asarray(xr.choice(k, 4, (2,), replace=False, p=p))
    assert sorted(d.tolist()) == [1, 2]
    x = np.arange(12).reshape(3, 4)
    e = np.asarray(xr.choice(k, x, (2, 5), axis=1))
    assert e.shape == (3, 2, 5) and (e[1] - e[0] == 4).all()
    assert xr.choice(k, x, (0,)).shape == (0, 4)      # jax gives (0,) here


@pytest.mark.parametrize("name, mean, var", [("exponential", 1.0, 1.0), ("laplace", 0.0, 2.0),
                                             ("logistic", 0.0, np.pi ** 2 / 3),
                                             ("gumbel", np.euler_gamma, np.pi ** 2 / 6)])
def test_continuous_moments(name, mean, var):
    x = np.asarray(getattr(xr, name)(xr.key(20), (20000,)), np.float64)
    assert abs(x.mean() - mean) < 0.05 and abs(x.var() / var - 1) < 0.1


@pytest.mark.parametrize("mode", ["high", "highest"])
def test_gumbel_modes(mode):
    x = np.asarray(xr.gumbel(xr.key(21), (20000,), mode=mode), np.float64)
    assert np.isfinite(x).all() and abs(x.mean() - np.euler_gamma) < 0.05


# --------------------------------------------------------------------------- gradients
def test_gradients_flow_through_bounds():
    k = xr.key(22)
    u = np.asarray(xr.uniform(k, (5,)), np.float64)
    g_lo, g_hi = xlapy.grad(lambda lo, hi: xnp.sum(xr.uniform(k, (5,), minval=lo, maxval=hi)),
                            argnums=(0, 1))(np.float32(-1.), np.float32(2.))
    np.testing.assert_allclose([float(g_lo), float(g_hi)], [(1 - u).sum(), u.sum()], rtol=1e-6)

    def f(lo):
        return xnp.sum(xr.truncated_normal(k, lo, 2., (5,)))
    g = float(xlapy.grad(f)(np.float32(-1.)))
    h = 1e-2
    fd = (float(f(np.float32(-1. + h))) - float(f(np.float32(-1. - h)))) / (2 * h)
    assert np.isfinite(g) and abs(g - fd) < 2e-2 * abs(fd)


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("call, match", [
    (lambda: xr.uniform(np.zeros(2, np.int32), (2,)), "uint32\\[2\\]"),
    (lambda: xr.uniform(np.zeros(3, np.uint32), (2,)), "uint32\\[2\\]"),
    (lambda: xr.split(xr.split(xr.key(0), 3)), "batch of keys"),
    (lambda: xr.uniform(xr.key(0), (2, -1)), "negative"),
    (lambda: xr.uniform(xr.key(0), (2.5,)), "integers"),
    (lambda: xr.uniform(xr.key(0), (2,), np.int32), "floating-point"),
    (lambda: xr.normal(xr.key(0), (2,), np.uint8), "floating-point or complex"),
    (lambda: xr.bits(xr.key(0), (2,), np.int32), "unsigned"),
    (lambda: xr.randint(xr.key(0), (2,), 0, 5, np.float32), "integer dtype"),
    (lambda: xr.bernoulli(xr.key(0), 1, (2,)), "floating dtype"),
    (lambda: xr.bernoulli(xr.key(0), 0.5, (2,), mode="mid"), "mode"),
    (lambda: xr.gumbel(xr.key(0), (2,), mode="max"), "mode"),
    (lambda: xr.uniform(xr.key(0), (3,), minval=np.zeros(2, np.float32)), "broadcast"),
    (lambda: xr.bernoulli(xr.key(0), np.full(3, .5, np.float32), (2,)), "broadcast"),
    (lambda: xr.key(1.5), "integer"),
    (lambda: xr.key(np.array([1, 2])), "scalar"),
    (lambda: xr.key(2 ** 70), "int64"),
    (lambda: xr.fold_in(xr.key(0), -1), "out of bounds"),
    (lambda: xr.fold_in(xr.key(0), 2.0), "integer scalar"),
    (lambda: xr.choice(xr.key(0), 3, (5,), replace=False), "larger sample"),
    (lambda: xr.choice(xr.key(0), 3, (2,), p=np.ones(4, np.float32)), "1-D vector"),
    (lambda: xr.categorical(xr.key(0), np.zeros(3, np.int32)), "floating point"),
    (lambda: xr.categorical(xr.key(0), np.zeros((2, 3), np.float32), shape=(4, 2),
                            replace=False), "without replacement"),
    (lambda: xr.permutation(xr.key(0), 2.5), "integer"),
    (lambda: xr.permutation(xr.key(0), np.zeros((2, 2)), axis=2), "out of bounds"),
])
def test_bad_arguments(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


def test_shape_from_a_jit_argument_specializes_and_a_computed_one_too():
    f = xlapy.jit(lambda k, n: xr.uniform(k, n))
    out = f(xr.key(0), xnp.array([3]))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(xr.uniform(xr.key(0), (3,))))
    assert "random.uniform shape needs the value of argument 'n'" in f.cache_info().reasons[0]
    g = xlapy.jit(lambda k, n: xr.uniform(k, n + 1))      # computed from n: specializes on n
    out = g(xr.key(0), xnp.array([3]))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(xr.uniform(xr.key(0), (4,))))
    assert "needs the value of argument 'n'" in g.cache_info().reasons[0]
    h = xlapy.jit(lambda k, x: xr.uniform(k, (xnp.sum(x).astype(np.int32),)))
    with pytest.raises(InvalidArgumentError, match="static"):    # from a large argument
        h(xr.key(0), np.ones(4096, np.float32))
