"""``xlapy.nn``: activations, softmax, one-hot, standardize, Keras-style conv and pooling
against NumPy formulas and references, eagerly and under jit, with gradients checked by
float64 finite differences and ``xlapy.grad``; ``jax.nn`` in a ``peers`` test."""
from __future__ import annotations

import math

import numpy as np
import pytest

import xlapy
import xlapy.nn as xnn
from xlapy.errors import InvalidArgumentError
from xlapy.frontend import lax_nn as L
from nn_reference import fixed_rng  # noqa: F401  (autouse: same data in any order)
from nn_reference import (both, distinct, fd_directional, np_chooser_grad, np_conv,
                          np_reduce_window, rand)


# ----------------------------------------------------------------------- activations
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "celu": lambda x: np.maximum(x, 0) + np.expm1(np.minimum(x, 0)),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 *
                                                     np.expm1(np.minimum(x, 0))),
    "sigmoid": _sigmoid,
    "softplus": lambda x: np.logaddexp(x, 0),
    "log_sigmoid": lambda x: -np.logaddexp(-x, 0),
    "silu": lambda x: x * _sigmoid(x),
    "swish": lambda x: x * _sigmoid(x),
    "mish": lambda x: x * np.tanh(np.logaddexp(x, 0)),
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_matches_numpy(name):
    x = np.concatenate([rand(20) * 4, np.array([0.0, -0.0, 6.0, -3.0, 40.0, -40.0],
                                               np.float32)])
    got = both(getattr(xnn, name), x)
    want = ACTIVATIONS[name](x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    assert got.dtype == np.float32


def test_gelu_exact_and_kinks_and_nan():
    x = rand(30) * 3
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(np.asarray(xnn.gelu(x, approximate=False)),
                               0.5 * x * (1 + erf(x / np.sqrt(2))), rtol=1e-6, atol=1e-6)
    assert np.isnan(np.asarray(xnn.relu(np.float32(np.nan))))
    assert xnn.relu(np.array([3, -2], np.int32)).dtype == np.int32
    g = xlapy.grad(lambda a: xnn.relu(a).sum())(np.array([-1.0, 0.0, 2.0], np.float32))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0, 1.0])
    # the mask comes from the output: the same at -0, NaN, tiny and huge values, jit or not
    a = np.array([-0.0, np.nan, 1e-45, -1e-45, 3e38, -np.inf, np.inf], np.float32)
    want = [0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    for grad in (xlapy.grad(lambda a: xnn.relu(a).sum()),
                 xlapy.jit(xlapy.grad(lambda a: xnn.relu(a).sum()))):
        np.testing.assert_array_equal(np.asarray(grad(a)), want)
    g = xlapy.grad(lambda a: xnn.relu6(a).sum())(np.array([0.0, 3.0, 6.0, 7.0], np.float32))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 1.0, 0.0, 0.0])


@pytest.mark.parametrize("name", ["gelu", "silu", "softplus", "elu", "log_sigmoid", "mish"])
def test_activation_gradients_match_finite_differences(name):
    x = rand(12) * 2
    g = np.asarray(xlapy.grad(lambda a: getattr(xnn, name)(a).sum())(x), np.float64)
    ref = ACTIVATIONS[name]
    xd = x.astype(np.float64)
    fd = (ref(xd + 1e-5) - ref(xd - 1e-5)) / 2e-5
    np.testing.assert_allclose(g, fd, rtol=1e-4, atol=1e-5)


def test_softmax_and_log_softmax_are_stable():
    x = rand(3, 5) * 3
    x[0] += 1000.0
    x[1, :] = [-np.inf, 1.0, 2.0, -np.inf, 0.5]
    for axis in (-1, 0, (0, 1)):
        xd = x.astype(np.float64)
        m = np.max(xd, axis=axis, keepdims=True)
        lse = m + np.log(np.sum(np.exp(xd - m), axis=axis, keepdims=True))
        got = both(lambda a: xnn.softmax(a, axis=axis), x)
        np.testing.assert_allclose(got, np.exp(xd - lse), rtol=1e-5, atol=1e-7)
        got = both(lambda a: xnn.log_softmax(a, axis=axis), x)
        np.testing.assert_allclose(got, xd - lse, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(xnn.logsumexp(x[2], axis=0)),
                               np.log(np.sum(np.exp(x[2].astype(np.float64)))), rtol=1e-6)
    # d/dx sum(softmax * r) = s * (r - <s, r>)
    y, r = rand(4), rand(4)
    s = np.exp(y - y.max()) / np.exp(y - y.max()).sum()
    g = xlapy.grad(lambda a: (xnn.softmax(a) * r).sum())(y)
    np.testing.assert_allclose(np.asarray(g), s * (r - np.dot(s, r)), rtol=1e-5, atol=1e-6)


def test_one_hot_glu_standardize():
    got = both(lambda a: xnn.one_hot(a, 4), np.array([0, 3, 4, -1], np.int32))
    np.testing.assert_array_equal(got, [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]])
    got = xnn.one_hot(np.array([[1, 2]]), 3, dtype=np.int32, axis=0)
    assert got.shape == (3, 1, 2) and got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got)[:, 0, :], [[0, 0], [1, 0], [0, 1]])
    x = rand(3, 6)
    np.testing.assert_allclose(np.asarray(xnn.glu(x)), x[:, :3] * _sigmoid(x[:, 3:]), rtol=1e-6)
    with pytest.raises(InvalidArgumentError, match="even size"):
        xnn.glu(rand(3, 5))
    got = both(lambda a: xnn.standardize(a, axis=1), x)
    want = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    got = xnn.normalize(x, axis=0, mean=0.5, variance=4.0)
    np.testing.assert_allclose(np.asarray(got), (x - 0.5) / np.sqrt(4.0 + 1e-5), rtol=1e-6)


# ----------------------------------------------------------------- nn.conv and pooling
@pytest.mark.parametrize("strides,padding,dilation,groups", [
    (1, "valid", 1, 1), (2, "same", 1, 1), ((1, 2), "same", (2, 1), 2), (1, "causal", 1, 4),
    ((2, 1), ((1, 0), (2, 1)), 1, 1), (1, 1, (1, 2), 2),
])
def test_nn_conv_channels_last_and_first(strides, padding, dilation, groups):
    x, k = rand(2, 6, 7, 4), rand(3, 2, 4 // groups, 4)
    got = both(lambda a, b: xnn.conv(a, b, strides, padding, dilation, groups), x, k)
    st = (strides,) * 2 if isinstance(strides, int) else strides
    dil = (dilation,) * 2 if isinstance(dilation, int) else dilation
    eff = [(n - 1) * d + 1 for n, d in zip(k.shape[:2], dil)]
    if padding in ("valid", "same"):
        pads = L.padtype_to_pads((6, 7), eff, st, padding.upper())
    elif padding == "causal":
        pads = [(e - 1, 0) for e in eff]
    elif isinstance(padding, int):
        pads = [(padding, padding)] * 2
    else:
        pads = padding
    want = np_conv(x.transpose(0, 3, 1, 2), k.transpose(3, 2, 0, 1), st, pads, None, dil,
                   groups)
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)
    first = xnn.conv(x.transpose(0, 3, 1, 2), k, strides, padding, dilation, groups,
                     data_format="channels_first")
    np.testing.assert_allclose(np.asarray(first), want, rtol=1e-5, atol=1e-5)


def test_nn_conv_3d_channels_first_depthwise():
    x, k = rand(1, 3, 4, 5, 3), rand(2, 3, 2, 1, 6)       # groups == channels: depthwise
    got = both(lambda a, b: xnn.conv(a, b, (1, 2, 1), "same", (2, 1, 1), groups=3,
                                     data_format="channels_first"), x, k)
    pads = L.padtype_to_pads((4, 5, 3), (3, 3, 2), (1, 2, 1), "SAME")
    want = np_conv(x, k.transpose(4, 3, 0, 1, 2), (1, 2, 1), pads, None, (2, 1, 1), 3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_nn_conv_1d_promotes_and_rejects_bad_format():
    x = np.arange(12, dtype=np.int32).reshape(1, 6, 2)
    k = rand(3, 2, 1)
    got = xnn.conv(x, k, padding="same")
    assert got.dtype == np.float32
    want = np_conv(x.transpose(0, 2, 1), k.transpose(2, 1, 0), (1,), [(1, 1)])
    np.testing.assert_allclose(np.asarray(got)[..., 0], want[:, 0], rtol=1e-5)
    with pytest.raises(InvalidArgumentError, match="data_format"):
        xnn.conv(x, k, data_format="NHWC")
    with pytest.raises(InvalidArgumentError, match="batch, at least one spatial"):
        xnn.conv(np.zeros((3, 2)), np.zeros((2, 3)))
    x4, w4 = np.zeros((1, 5, 5, 3), np.float32), np.zeros((3, 3, 4, 8), np.float32)
    with pytest.raises(InvalidArgumentError, match=r"f32\[1,5,5,3\].*groups=1 needs a kernel "
                                                    r"with 3 input channels; the kernel has 4"):
        xnn.conv(x4, w4)
    with pytest.raises(InvalidArgumentError, match="padding must be 'valid'.*'full'"):
        xnn.conv(x4, w4[:, :, :3], padding="full")
    with pytest.raises(InvalidArgumentError, match="divisible by groups=3"):
        xnn.conv(x4, np.zeros((3, 3, 1, 8), np.float32), groups=3)


@pytest.mark.parametrize("window,strides,padding", [
    (2, None, "valid"), (3, 2, "same"), ((2, 3), (1, 2), "same"), (2, 1, ((1, 0), (0, 1))),
])
def test_pools_match_numpy(window, strides, padding):
    x = rand(2, 5, 6, 3)
    win = (window,) * 2 if isinstance(window, int) else window
    st = win if strides is None else ((strides,) * 2 if isinstance(strides, int) else strides)
    pads = (L.padtype_to_pads((5, 6), win, st, padding.upper()) if isinstance(padding, str)
            else padding)
    full = lambda t: (1, *t, 1)  # noqa: E731
    fpads = [(0, 0), *pads, (0, 0)]
    got = both(lambda a: xnn.max_pool(a, window, strides, padding), x)
    np.testing.assert_allclose(got, np_reduce_window(x, "max", full(win), full(st), fpads))
    total = np_reduce_window(x, "sum", full(win), full(st), fpads)
    count = np_reduce_window(np.ones_like(x), "sum", full(win), full(st), fpads)
    got = both(lambda a: xnn.avg_pool(a, window, strides, padding), x)
    np.testing.assert_allclose(got, total / count, rtol=1e-5, atol=1e-6)
    got = xnn.avg_pool(x, window, strides, padding, count_include_pad=True)
    np.testing.assert_allclose(np.asarray(got), total / np.prod(win), rtol=1e-5, atol=1e-6)
    got = xnn.max_pool(x.transpose(0, 3, 1, 2), window, strides, padding, "channels_first")
    np.testing.assert_allclose(np.asarray(got).transpose(0, 2, 3, 1),
                               np_reduce_window(x, "max", full(win), full(st), fpads))


def test_avg_pool_same_divides_by_valid_count_like_keras():
    x = np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)
    got = np.asarray(xnn.avg_pool(x, 2, 2, "same"))[0, :, :, 0]
    # windows: {0,1,3,4}, {2,5}, {6,7}, {8}
    np.testing.assert_allclose(got, [[2.0, 3.5], [6.5, 8.0]])
    got = np.asarray(xnn.avg_pool(np.arange(4, dtype=np.int32).reshape(1, 4, 1), 2))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got[0, :, 0], [0.5, 2.5])


def test_pool_gradients_match_references():
    x = distinct(1, 5, 6, 2)
    r = rand(1, 3, 3, 2)
    full_pads = [(0, 0), (1, 1), (0, 1), (0, 0)]   # 'same' for 3x3 windows, stride 2
    win, st = (1, 3, 3, 1), (1, 2, 2, 1)
    g = xlapy.grad(lambda a: (xnn.max_pool(a, 3, 2, "same") * r).sum())(x)
    np.testing.assert_allclose(np.asarray(g), np_chooser_grad(x, r, "max", win, st, full_pads))

    def ref_avg(a):
        total = np_reduce_window(a, "sum", win, st, full_pads)
        count = np_reduce_window(np.ones_like(a), "sum", win, st, full_pads)
        return np.sum(total / count * r)

    g = np.asarray(xlapy.jit(xlapy.grad(lambda a: (xnn.avg_pool(a, 3, 2, "same") * r).sum()))(x))
    d = rand(*x.shape)
    np.testing.assert_allclose(np.sum(g * d), fd_directional(ref_avg, x, d), rtol=1e-4)


def test_small_cnn_trains_under_jit():
    """One conv -> relu -> pool -> dense step: the loss decreases with xlapy.grad."""
    rng = np.random.default_rng(7)          # its own data: independent of test order
    x = rng.standard_normal((4, 6, 6, 1)).astype(np.float32)
    labels = np.array([0, 1, 2, 1])
    params = {"k": rng.standard_normal((3, 3, 1, 4)).astype(np.float32) * 0.5,
              "w": rng.standard_normal((36, 3)).astype(np.float32) * 0.2}

    def loss(p, a):
        h = xnn.max_pool(xnn.relu(xnn.conv(a, p["k"], padding="same")), 2)
        logits = h.reshape(4, 36) @ p["w"]
        return -(xnn.log_softmax(logits) * xnn.one_hot(labels, 3)).sum() / 4

    step = xlapy.jit(xlapy.value_and_grad(loss))
    first, _ = step(params, x)
    for _ in range(5):
        _, g = step(params, x)
        params = {n: np.asarray(params[n]) - 0.5 * np.asarray(g[n]) for n in params}
    last, _ = step(params, x)
    assert float(last) < float(first) - 0.05


def test_max_pool_grad_of_grad():
    x = distinct(1, 6, 6, 1)

    def f(a):
        return (xnn.max_pool(a, 2, padding="same") ** 2).sum()

    g = xlapy.grad(f)(x)
    want = np_chooser_grad(x, 2 * np_reduce_window(x, "max", (1, 2, 2, 1), (1, 2, 2, 1),
                                                   [(0, 0)] * 4), "max", (1, 2, 2, 1),
                           (1, 2, 2, 1), [(0, 0)] * 4)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5)
    # d/dx sum(grad f * v) = 2 * scatter(gather(v)): the Hessian of the squared max pool
    v = rand(*x.shape)
    h = xlapy.grad(lambda a: (xlapy.grad(f)(a) * v).sum())(x)
    picked = np_chooser_grad(x, np.ones((1, 3, 3, 1)), "max", (1, 2, 2, 1), (1, 2, 2, 1),
                             [(0, 0)] * 4)
    np.testing.assert_allclose(np.asarray(h), 2 * v * picked, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- peers
@pytest.mark.peers
def test_nn_matches_jax_nn():
    import jax
    x = rand(4, 9) * 3
    for name in ("relu", "relu6", "elu", "celu", "selu", "gelu", "silu", "mish", "softplus",
                 "log_sigmoid", "soft_sign", "hard_tanh", "hard_sigmoid", "hard_silu", "glu",
                 "softmax", "log_softmax", "standardize"):
        if name == "glu":
            x_in = x[:, :8]
        else:
            x_in = x
        np.testing.assert_allclose(np.asarray(getattr(xnn, name)(x_in)),
                                   np.asarray(getattr(jax.nn, name)(x_in)), rtol=1e-5,
                                   atol=1e-5, err_msg=name)
    np.testing.assert_allclose(np.asarray(xnn.gelu(x, approximate=False)),
                               np.asarray(jax.nn.gelu(x, approximate=False)), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(np.asarray(xnn.one_hot(np.array([2, 0, 5]), 4)),
                                  np.asarray(jax.nn.one_hot(np.array([2, 0, 5]), 4)))
