"""xlapy.keras constraints and the layer arguments users pass from Keras code:
``kernel_constraint``/``bias_constraint``, ``activity_regularizer``,
``BatchNormalization(fused=, synchronized=)``, ``Embedding(input_length=)``,
``InputLayer(input_shape=)``."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy import keras
from xlapy.errors import InvalidArgumentError
from xlapy.keras import constraints, layers


@pytest.fixture(autouse=True)
def _seed():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)


def _norms(w, axis):
    return np.sqrt(np.sum(np.square(w.astype(np.float64)), axis=axis, keepdims=True))


@pytest.mark.parametrize("axis", [0, 1, [0, 1, 2]])
def test_constraint_formulas(axis):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 4, 2, 5)).astype(np.float32) if axis == [0, 1, 2] else \
        rng.standard_normal((6, 4)).astype(np.float32)
    ax = tuple(axis) if isinstance(axis, list) else axis
    n = _norms(w, ax)
    eps = 1e-7
    np.testing.assert_allclose(np.asarray(constraints.MaxNorm(1.5, axis)(w)),
                               w * np.clip(n, 0, 1.5) / (eps + n), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(constraints.UnitNorm(axis)(w)), w / (eps + n),
                               rtol=1e-5, atol=1e-7)
    mm = constraints.MinMaxNorm(0.5, 1.2, rate=0.7, axis=axis)
    desired = 0.7 * np.clip(n, 0.5, 1.2) + 0.3 * n
    np.testing.assert_allclose(np.asarray(mm(w)), w * desired / (eps + n), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_array_equal(np.asarray(constraints.NonNeg()(w)), np.maximum(w, 0))
    assert isinstance(constraints.get("max_norm"), constraints.MaxNorm)
    assert constraints.get(None) is None
    with pytest.raises(InvalidArgumentError, match="unknown constraint"):
        constraints.get("positive")


@pytest.mark.parametrize("jit", [True, False])
def test_constraints_project_after_each_update_inside_the_train_step(jit):
    x = np.array([[1.0, 2.0], [-1.0, 0.5], [0.5, -1.0]], np.float32)
    y = np.array([[-3.0, 1.0], [2.0, 0.0], [0.5, 4.0]], np.float32)
    k0 = np.array([[0.2, -0.1], [0.4, 0.3]], np.float32)
    b0 = np.array([0.1, -0.2], np.float32)
    model = keras.Sequential([layers.Dense(
        2, input_shape=(2,), kernel_constraint=keras.constraints.MaxNorm(0.5),
        bias_constraint="non_neg")])
    model.set_weights([k0, b0])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", jit_compile=jit)
    k, b = k0.astype(np.float64), b0.astype(np.float64)
    for _ in range(3):
        model.train_on_batch(x, y)
        err = x @ k + b - y                                   # d mse / d pred = 2 err / n
        gk, gb = x.T @ (2 * err / err.size), (2 * err / err.size).sum(0)
        k, b = k - 0.1 * gk, b - 0.1 * gb
        n = _norms(k, 0)
        k = k * np.clip(n, 0, 0.5) / (1e-7 + n)
        b = b * (b >= 0)
    np.testing.assert_allclose(model.layers[0].kernel.numpy(), k, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.layers[0].bias.numpy(), b, rtol=1e-5, atol=1e-6)
    assert np.all(np.linalg.norm(model.layers[0].kernel.numpy(), axis=0) <= 0.5 + 1e-6)
    if jit:
        assert model.train_function.cache_info().misses == 1


def test_constraints_apply_in_a_hand_written_compiled_loop():
    layer = layers.Conv2D(2, 2, kernel_constraint=keras.constraints.NonNeg())
    layer.build((None, 3, 3, 1))
    opt = keras.optimizers.SGD(1.0)

    @xlapy.function(jit_compile=True)
    def step(x):
        with xlapy.GradientTape() as tape:
            loss = xlapy.numpy.sum(layer(x))
        grads = tape.gradient(loss, layer.trainable_variables)
        opt.apply_gradients(zip(grads, layer.trainable_variables))
        return loss
    step(np.ones((1, 3, 3, 1), np.float32))        # the gradient pushes every weight down
    assert np.all(layer.kernel.numpy() >= 0) and np.any(layer.kernel.numpy() == 0)
    assert np.all(layer.bias.numpy() < 0)           # no constraint on the bias


@pytest.mark.parametrize("jit", [True, False])
def test_activity_regularizer_adds_the_penalty_of_the_outputs(jit):
    x = np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]], np.float32)
    y = np.zeros((3, 1), np.float32)
    model = keras.Sequential([layers.Dense(1, input_shape=(2,), kernel_initializer="ones",
                                           activity_regularizer=keras.regularizers.L2(0.1))])
    model.compile(optimizer="sgd", loss="mse", jit_compile=jit)
    out = x.sum(1)
    assert model.evaluate(x, y, batch_size=3, verbose=0) == pytest.approx(
        np.mean(out ** 2) + 0.1 * np.sum(out ** 2), rel=1e-6)
    # a padded last batch: the padding rows add no penalty
    loss = model.evaluate(x, y, batch_size=2, verbose=0)
    per_batch = [(out[:2], 2), (out[2:], 1)]
    want = sum(n * (np.mean(o ** 2) + 0.1 * np.sum(o ** 2)) for o, n in per_batch) / 3
    assert loss == pytest.approx(want, rel=1e-6)
    model(x)
    assert len(model.losses) == 1                 # from the latest call only
    model(x)
    assert len(model.losses) == 1
    assert float(model.losses[0]) == pytest.approx(0.1 * np.sum(out ** 2), rel=1e-6)


def test_keras2_layer_arguments_are_accepted():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    plain, legacy = layers.BatchNormalization(), layers.BatchNormalization(
        fused=True, synchronized=False)
    np.testing.assert_array_equal(np.asarray(plain(x, training=True)),
                                  np.asarray(legacy(x, training=True)))
    assert layers.BatchNormalization(synchronized=True).synchronized
    emb = keras.Sequential([layers.Embedding(20, 3, input_length=5), layers.Flatten()])
    assert emb.built and emb.output_shape == (None, 15)
    with pytest.raises(InvalidArgumentError, match="mask_zero"):
        layers.Embedding(20, 3, mask_zero=True)
    model = keras.Sequential([layers.InputLayer(input_shape=(4,)), layers.Dense(2)])
    assert model.built and model.output_shape == (None, 2)
    assert [type(l).__name__ for l in model.layers] == ["Dense"] and len(model.weights) == 2
    via_input = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(2)])
    assert via_input.output_shape == (None, 2)
    assert layers.InputLayer(shape=(3,), batch_size=8).batch_shape == (8, 3)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        layers.InputLayer()
    dense = layers.Dense(3, input_dim=4, batch_size=16)
    assert dense._input_shape_arg == (16, 4)
