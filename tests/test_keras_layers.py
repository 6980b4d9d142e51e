"""xlapy.keras layers: forward against NumPy, gradients against finite differences.

Finite differences are taken of the float64 NumPy reference of each layer (xlapy runs
float32: x64 is off), so they measure the true derivative; tolerances allow for the
float32 forward and backward passes.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import xlapy
import xlapy.numpy as xnp
from xlapy.errors import InvalidArgumentError
from xlapy.keras import layers, backend
from keras_reference import (batch_norm, conv2d, layer_norm, numerical_gradient, pool2d)


@pytest.fixture(autouse=True)
def _seed():
    backend.clear_session()
    backend.set_random_seed(1234)


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _check_gradients(layer, x, reference, weights, rng, training=False, rtol=2e-3,
                     atol=2e-4):
    """Gradients of sum(layer(x) * r) w.r.t. x and ``weights`` against finite
    differences of ``sum(reference(x, *weights) * r)``."""
    xa = xnp.asarray(x)
    y = layer(xa, training=training)
    r = rng.standard_normal(y.shape)
    with xlapy.GradientTape() as tape:
        tape.watch(xa)
        loss = xnp.sum(layer(xa, training=training) * r.astype(np.float32))
    grads = tape.gradient(loss, [xa] + weights)
    values = [x] + [w.numpy() for w in weights]

    def f(*arrays):
        return float(np.sum(reference(*arrays) * r))
    for i, g in enumerate(grads):
        assert g is not None, f"no gradient for argument {i}"
        num = numerical_gradient(f, values, i)
        np.testing.assert_allclose(np.asarray(g), num, rtol=rtol,
                                   atol=atol * max(1.0, np.abs(num).max()))


# ------------------------------------------------------------------------------- Dense
def test_dense_forward_and_gradients():
    rng = np.random.default_rng(0)
    layer = layers.Dense(5, activation="tanh")
    x = _rand(rng, 4, 3)
    y = np.asarray(layer(x))
    k, b = layer.kernel.numpy(), layer.bias.numpy()
    assert k.shape == (3, 5) and b.shape == (5,)
    np.testing.assert_allclose(y, np.tanh(x @ k + b), rtol=1e-5, atol=1e-6)
    layer.bias.assign(rng.standard_normal(5).astype(np.float32))
    _check_gradients(layer, x, lambda x, k, b: np.tanh(x @ k + b),
                     [layer.kernel, layer.bias], rng)


def test_dense_applies_to_the_last_axis_and_counts_params():
    layer = layers.Dense(2, use_bias=False)
    y = layer(np.ones((2, 3, 4), np.float32))
    assert y.shape == (2, 3, 2)
    assert layer.count_params() == 8 and layer.bias is None
    assert layer.compute_output_shape((None, 3, 4)) == (None, 3, 2)


# -------------------------------------------------------------------------------- Conv
@pytest.mark.parametrize("padding,strides,dilation", [
    ("same", (1, 1), (1, 1)), ("valid", (1, 1), (1, 1)), ("same", (2, 2), (1, 1)),
    ("valid", (2, 1), (1, 1)), ("same", (1, 1), (2, 2)), ("valid", (1, 1), (2, 1)),
])
def test_conv2d_forward(padding, strides, dilation):
    rng = np.random.default_rng(1)
    layer = layers.Conv2D(3, (3, 2), strides=strides, padding=padding,
                          dilation_rate=dilation, bias_initializer="ones")
    x = _rand(rng, 2, 7, 6, 2)
    y = np.asarray(layer(x))
    want = conv2d(x.astype(np.float64), layer.kernel.numpy().astype(np.float64), strides,
                  padding, dilation) + 1.0
    assert y.shape == want.shape
    assert layer.compute_output_shape((None, 7, 6, 2)) == (None,) + want.shape[1:]
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("padding,strides,dilation", [("same", (2, 2), (1, 1)),
                                                      ("valid", (1, 1), (2, 2))])
def test_conv2d_gradients(padding, strides, dilation):
    rng = np.random.default_rng(2)
    layer = layers.Conv2D(2, 3, strides=strides, padding=padding, dilation_rate=dilation,
                          activation="sigmoid")
    x = _rand(rng, 2, 5, 5, 2)
    layer(x)
    layer.bias.assign(_rand(rng, 2))

    def ref(x, k, b):
        return 1 / (1 + np.exp(-(conv2d(x, k, strides, padding, dilation) + b)))
    _check_gradients(layer, x, ref, [layer.kernel, layer.bias], rng)


def test_conv2d_rejects_wrong_rank_and_strided_dilation():
    with pytest.raises(InvalidArgumentError, match="rank 4"):
        layers.Conv2D(2, 3)(np.ones((2, 5, 5), np.float32))
    with pytest.raises(InvalidArgumentError, match="dilation_rate"):
        layers.Conv2D(2, 3, strides=2, dilation_rate=2)


# ----------------------------------------------------------------------------- Pooling
@pytest.mark.parametrize("cls,kind", [(layers.MaxPooling2D, "max"),
                                      (layers.AveragePooling2D, "avg")])
@pytest.mark.parametrize("size,strides,padding", [((2, 2), None, "valid"),
                                                  ((3, 3), (2, 2), "same"),
                                                  ((2, 3), (1, 2), "valid")])
def test_pooling_forward(cls, kind, size, strides, padding):
    rng = np.random.default_rng(3)
    x = _rand(rng, 2, 7, 6, 3)
    layer = cls(size, strides, padding)
    y = np.asarray(layer(x))
    want = pool2d(x.astype(np.float64), size, strides or size, padding, kind)
    assert y.shape == want.shape
    assert layer.compute_output_shape((None, 7, 6, 3)) == (None,) + want.shape[1:]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls,kind", [(layers.MaxPooling2D, "max"),
                                      (layers.AveragePooling2D, "avg")])
@pytest.mark.parametrize("size,strides,padding", [((3, 3), (2, 2), "same"),
                                                  ((2, 2), (2, 2), "valid"),
                                                  ((3, 3), (1, 1), "same"),
                                                  ((2, 3), (1, 2), "valid")])
def test_pooling_gradients(cls, kind, size, strides, padding):
    """Overlapping windows (stride 1) send a max pool's gradient to one input per window
    and an average pool's to every input, divided by the real inputs of 'same' windows."""
    rng = np.random.default_rng(4)
    x = _rand(rng, 2, 6, 5, 2)
    layer = cls(size, strides, padding)
    _check_gradients(layer, x, lambda x: pool2d(x, size, strides, padding, kind), [], rng)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_flatten_gradients(data_format):
    rng = np.random.default_rng(13)
    x = _rand(rng, 2, 3, 4, 2)

    def reference(x):
        if data_format == "channels_first":
            x = np.moveaxis(x, 1, -1)
        return x.reshape(len(x), -1)
    _check_gradients(layers.Flatten(data_format=data_format), x, reference, [], rng)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


_ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0), "tanh": np.tanh, "sigmoid": _sigmoid,
    "softmax": lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True),
    "elu": lambda x: np.where(x > 0, x, np.expm1(x)), "softplus": lambda x: np.log1p(np.exp(x)),
    "swish": lambda x: x * _sigmoid(x), "leaky_relu": lambda x: np.where(x > 0, x, 0.2 * x),
    "gelu": lambda x: 0.5 * x * (1 + scipy.special.erf(x / np.sqrt(2))),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
}


@pytest.mark.parametrize("name", sorted(_ACTIVATIONS))
def test_activation_layer_gradients(name):
    rng = np.random.default_rng(14)
    x = _rand(rng, 3, 5)
    x[np.abs(x) < 1e-2] = 0.5                  # stay off the kinks of relu-like functions
    _check_gradients(layers.Activation(name), x, _ACTIVATIONS[name], [], rng)


def test_global_average_pooling_and_flatten():
    rng = np.random.default_rng(5)
    x = _rand(rng, 2, 3, 4, 5)
    gap = layers.GlobalAveragePooling2D()
    np.testing.assert_allclose(np.asarray(gap(x)), x.mean(axis=(1, 2)), rtol=1e-5, atol=1e-6)
    assert gap.compute_output_shape((None, 3, 4, 5)) == (None, 5)
    _check_gradients(gap, x, lambda x: x.mean(axis=(1, 2)), [], rng)
    flat = layers.Flatten()
    np.testing.assert_array_equal(np.asarray(flat(x)), x.reshape(2, -1))
    assert flat.compute_output_shape((None, 3, 4, 5)) == (None, 60)


# ------------------------------------------------------------------------ Normalization
def test_batch_normalization_training_and_inference():
    rng = np.random.default_rng(6)
    layer = layers.BatchNormalization(momentum=0.9, epsilon=1e-3)
    x = _rand(rng, 8, 4) * 3 + 1
    layer(x)                              # build
    gamma, beta = _rand(rng, 4), _rand(rng, 4)
    layer.gamma.assign(gamma)
    layer.beta.assign(beta)
    y = np.asarray(layer(x, training=True))
    m, v = x.mean(0), x.var(0)
    np.testing.assert_allclose(y, batch_norm(x, gamma, beta, m, v, 1e-3), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(layer.moving_mean.numpy(), 0.1 * m, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.moving_variance.numpy(), 0.9 + 0.1 * v, rtol=1e-5)
    y_inf = np.asarray(layer(x, training=False))
    np.testing.assert_allclose(y_inf, batch_norm(x, gamma, beta, 0.1 * m, 0.9 + 0.1 * v, 1e-3),
                               rtol=1e-4, atol=1e-4)
    assert [w.name.split("/")[-1] for w in layer.non_trainable_weights] == \
        ["moving_mean", "moving_variance"]


def test_batch_normalization_gradients_through_batch_statistics():
    rng = np.random.default_rng(7)
    layer = layers.BatchNormalization(epsilon=1e-3)
    x = _rand(rng, 6, 2, 3)
    layer(x)
    layer.gamma.assign(_rand(rng, 3))

    def ref(x, gamma, beta):
        return batch_norm(x, gamma, beta, x.mean((0, 1)), x.var((0, 1)), 1e-3)
    _check_gradients(layer, x, ref, [layer.gamma, layer.beta], rng, training=True,
                     rtol=5e-3, atol=5e-4)


def test_batch_normalization_ignores_masked_rows():
    rng = np.random.default_rng(8)
    x = _rand(rng, 6, 3)
    a, b = layers.BatchNormalization(), layers.BatchNormalization()
    mask = np.array([1, 1, 1, 1, 0, 0], np.float32)
    with backend.batch_mask(xnp.asarray(mask)):
        y = np.asarray(a(x, training=True))
    y_short = np.asarray(b(x[:4], training=True))
    np.testing.assert_allclose(y[:4], y_short, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(a.moving_variance.numpy(), b.moving_variance.numpy(), rtol=1e-6)


def test_layer_normalization_forward_and_gradients():
    rng = np.random.default_rng(9)
    layer = layers.LayerNormalization(epsilon=1e-3)
    x = _rand(rng, 3, 5)
    layer(x)
    layer.gamma.assign(_rand(rng, 5))
    layer.beta.assign(_rand(rng, 5))
    g, b = layer.gamma.numpy(), layer.beta.numpy()
    np.testing.assert_allclose(np.asarray(layer(x)), layer_norm(x, g, b, 1e-3), rtol=1e-4,
                               atol=1e-5)
    _check_gradients(layer, x, lambda x, g, b: layer_norm(x, g, b, 1e-3),
                     [layer.gamma, layer.beta], rng, rtol=5e-3, atol=5e-4)


# --------------------------------------------------------------------- Embedding, etc.
def test_embedding_lookup_and_gradient():
    rng = np.random.default_rng(10)
    layer = layers.Embedding(6, 3)
    ids = np.array([[0, 5, 2], [2, 2, 1]], np.int32)
    y = np.asarray(layer(ids))
    table = layer.embeddings.numpy()
    np.testing.assert_array_equal(y, table[ids])
    r = rng.standard_normal(y.shape).astype(np.float32)
    with xlapy.GradientTape() as tape:
        loss = xnp.sum(layer(ids) * r)
    (g,) = tape.gradient(loss, [layer.embeddings])
    num = numerical_gradient(lambda t: float(np.sum(t[ids] * r)), [table], 0)
    np.testing.assert_allclose(np.asarray(g), num, rtol=1e-4, atol=1e-4)


def test_activation_reshape_add_concatenate():
    rng = np.random.default_rng(11)
    x = _rand(rng, 2, 6)
    np.testing.assert_allclose(np.asarray(layers.Activation("relu")(x)), np.maximum(x, 0))
    sm = np.asarray(layers.Activation("softmax")(x))
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(layers.Reshape((3, -1))(x)), x.reshape(2, 3, 2))
    np.testing.assert_allclose(np.asarray(layers.Add()([x, x, x])), 3 * x, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(layers.Concatenate()([x, x[:, :2]])),
                                  np.concatenate([x, x[:, :2]], axis=-1))
    with pytest.raises(InvalidArgumentError, match="unknown activation"):
        layers.Activation("nope")


# ---------------------------------------------------------------------------- Dropout
def test_dropout_scales_kept_units_and_is_identity_at_inference():
    x = np.ones((200, 50), np.float32)
    layer = layers.Dropout(0.3, seed=7)
    np.testing.assert_array_equal(np.asarray(layer(x)), x)
    y = np.asarray(layer(x, training=True))
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    assert abs(kept.mean() - 0.7) < 0.02
    rng = np.random.default_rng(12)
    xa = xnp.asarray(_rand(rng, 4, 5))
    r = _rand(rng, 4, 5)
    with xlapy.GradientTape() as tape:
        tape.watch(xa)
        out = layer(xa, training=True)
        loss = xnp.sum(out * r)
    (g,) = tape.gradient(loss, [xa])
    mask = np.asarray(out) != 0
    np.testing.assert_allclose(np.asarray(g), r * mask / 0.7, rtol=1e-6)


def test_dropout_gradients_by_finite_differences_with_a_fixed_key():
    """With its key reset before each call the layer is a fixed linear map, so central
    differences through the layer itself (float32) recover its gradient."""
    layer = layers.Dropout(0.4, seed=5)
    key = layer.seed_state.numpy()
    rng = np.random.default_rng(15)
    x = _rand(rng, 4, 6)
    r = _rand(rng, 4, 6)

    def f(values):
        layer.seed_state.assign(key)
        return float(np.sum(np.asarray(layer(values.astype(np.float32), training=True),
                                       np.float64) * r))
    layer.seed_state.assign(key)
    xa = xnp.asarray(x)
    with xlapy.GradientTape() as tape:
        tape.watch(xa)
        loss = xnp.sum(layer(xa, training=True) * r)
    (g,) = tape.gradient(loss, [xa])
    num = numerical_gradient(f, [x], 0, eps=1e-2)
    np.testing.assert_allclose(np.asarray(g), num, rtol=1e-3, atol=1e-3)
    dropped = np.asarray(g) == 0
    assert 0 < dropped.sum() < dropped.size    # some units dropped, some kept
    np.testing.assert_allclose(np.asarray(g)[~dropped], r[~dropped] / 0.6, rtol=1e-6)


def test_dropout_draws_a_new_mask_every_compiled_step_without_recompiling():
    layer = layers.Dropout(0.5, seed=3)
    step = xlapy.function(lambda x: layer(x, training=True), jit_compile=True)
    x = np.ones((4, 64), np.float32)
    masks = [np.asarray(step(x)) != 0 for _ in range(3)]
    assert not np.array_equal(masks[0], masks[1]) and not np.array_equal(masks[1], masks[2])
    assert step.cache_info().misses == 1
    again = layers.Dropout(0.5, seed=3)
    eager = [np.asarray(again(x, training=True)) != 0 for _ in range(3)]
    for a, b in zip(masks, eager):             # same keys eagerly and compiled
        np.testing.assert_array_equal(a, b)
    assert layer.weights == []


def test_symbolic_calls_give_shapes():
    inp = layers.Input((8, 8, 3))
    y = layers.Conv2D(4, 3, padding="same")(inp)
    assert y.shape == (None, 8, 8, 4)
    y = layers.MaxPooling2D()(y)
    y = layers.Conv2D(5, 3)(y)
    assert y.shape == (None, 2, 2, 5)
    z = layers.Lambda(lambda t: t[:, :1] * 2.0)(layers.Flatten()(y))
    assert z.shape == (None, 1)
