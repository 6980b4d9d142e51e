"""``keras.mixed_precision``: dtype policies, autocast of weights, f32 statistics and loss,
and ``xlapy.numpy`` bf16 products."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import keras
from xlapy.errors import InvalidArgumentError
from xlapy.frontend.variables import autocast_scope

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(autouse=True)
def reset_policy():
    yield
    keras.mixed_precision.set_global_policy(None)


def test_policies():
    p = keras.mixed_precision.Policy("mixed_bfloat16")
    assert (p.compute_dtype, p.variable_dtype, p.name) == ("bfloat16", "float32",
                                                           "mixed_bfloat16")
    assert keras.mixed_precision.DTypePolicy("float32").compute_dtype == "float32"
    assert keras.mixed_precision.global_policy().name == "float32"
    keras.mixed_precision.set_global_policy("mixed_float16")
    assert keras.mixed_precision.global_policy() == keras.mixed_precision.Policy(
        "mixed_float16")
    with pytest.raises(InvalidArgumentError, match="unknown dtype policy"):
        keras.mixed_precision.Policy("mixed_int8")
    with pytest.raises(InvalidArgumentError, match="neither a dtype"):
        keras.layers.Dense(3, dtype=object())


def test_layer_dtypes_under_a_global_and_a_layer_policy():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    dense = keras.layers.Dense(8)
    head = keras.layers.Dense(4, dtype="float32")
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    y = dense(x)
    assert dense.dtype == np.float32 and dense.compute_dtype == BF16
    assert dense.kernel.dtype == np.float32 and y.dtype == BF16
    assert head(y).dtype == np.float32 and head.kernel.dtype == np.float32
    # the product of bf16 inputs and bf16-rounded weights, summed in f32, rounded once
    xb = x.astype(BF16).astype(np.float32)
    wb = dense.kernel.numpy().astype(BF16).astype(np.float32)
    np.testing.assert_allclose(np.asarray(y, np.float32), xb @ wb, rtol=2 ** -7, atol=1e-6)
    text = xlapy.jit(lambda a: dense(a)).lower(x).as_text()
    assert "bf16[5,8]{1,0} dot(bf16[5,6]" in text
    assert dense.get_config()["dtype"] == "mixed_bfloat16"
    again = keras.layers.Dense.from_config(dense.get_config())
    assert again.compute_dtype == BF16 and again.dtype == np.float32


def test_autocast_scope_reads_and_gradients():
    v = xlapy.Variable(np.arange(4, dtype=np.float32))
    with autocast_scope(BF16):
        assert v.read_value().dtype == BF16
        with autocast_scope(None):
            assert v.read_value().dtype == np.float32
    assert v.read_value().dtype == np.float32
    v.autocast = False
    with autocast_scope(BF16):
        assert v.read_value().dtype == np.float32
    v.autocast = True
    with xlapy.GradientTape() as tape:
        with autocast_scope(BF16):
            loss = xnp.sum(v.read_value() * 3.0)
    (g,) = tape.gradient(loss, [v])
    assert g.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(g), np.full(4, 3.0, np.float32))


def test_normalization_in_float32():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    ln = keras.layers.LayerNormalization()
    bn = keras.layers.BatchNormalization()
    x = (100 + np.random.default_rng(1).standard_normal((4, 16))).astype(np.float32)
    out = ln(x)
    assert out.dtype == BF16
    xb = x.astype(BF16).astype(np.float64)      # the layer's input, in its compute dtype
    ref = (xb - xb.mean(-1, keepdims=True)) / np.sqrt(xb.var(-1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(np.asarray(out, np.float64), ref, rtol=2 ** -7, atol=2e-2)
    y = bn(x, training=True)
    assert y.dtype == BF16 and bn.moving_mean.dtype == np.float32
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * xb.mean(0), rtol=1e-5)


def test_loss_in_float32():
    loss = keras.losses.MeanSquaredError()
    value = loss(np.ones((4, 3), np.float32), xnp.asarray(np.zeros((4, 3)), dtype=BF16))
    assert value.dtype == np.float32 and float(value) == 1.0


def _model(seed: int) -> keras.Model:
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.layers.Dense(32, activation="relu", input_shape=(20,)),
                             keras.layers.LayerNormalization(),
                             keras.layers.Dense(4, dtype="float32")])


def test_mixed_bfloat16_training_follows_float32():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((128, 20)).astype(np.float32)
    y = (x[:, :4] @ rng.standard_normal((4, 4))).argmax(-1)
    curves = {}
    for policy in ("float32", "mixed_bfloat16"):
        keras.mixed_precision.set_global_policy(policy)
        model = _model(7)
        model.compile(optimizer=keras.optimizers.Adam(1e-2), jit_compile=True,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        hist = model.fit(x, y, epochs=8, batch_size=32, verbose=0, shuffle=False)
        assert all(w.dtype == np.float32 for w in model.weights)
        curves[policy] = np.array(hist.history["loss"])
    f32, bf = curves["float32"], curves["mixed_bfloat16"]
    assert bf[-1] < 0.6 * bf[0]                      # it trains
    np.testing.assert_allclose(bf, f32, rtol=0.05)    # and follows the f32 run


def test_numpy_bf16_arrays_matmul():
    rng = np.random.default_rng(3)
    a = xnp.asarray(rng.standard_normal((2, 33, 70)), dtype=xnp.bfloat16)
    b = xnp.asarray(rng.standard_normal((2, 70, 19)), dtype=xnp.bfloat16)
    eager = xnp.matmul(a, b)
    jitted = xlapy.jit(xnp.matmul)(a, b)
    f32 = xlapy.jit(lambda p, q: xlapy.lax.dot_general(
        p, q, (((2,), (1,)), ((0,), (0,))), preferred_element_type=np.float32))(a, b)
    ref = np.matmul(np.asarray(a, np.float64), np.asarray(b, np.float64))
    assert eager.dtype == BF16 and jitted.dtype == BF16 and f32.dtype == np.float32
    np.testing.assert_allclose(np.asarray(f32), ref, rtol=1e-5, atol=1e-4)
    for out in (eager, jitted):
        np.testing.assert_allclose(np.asarray(out, np.float64), ref, rtol=2 ** -7, atol=1e-3)
