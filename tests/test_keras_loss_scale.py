"""``keras.optimizers.LossScaleOptimizer``: dynamic loss scaling for ``mixed_float16``
training -- the unscaled update, skipped steps on non-finite gradients, the scale's growth
and halving, eager and compiled, and ``Model.compile``'s automatic wrapping."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import keras
from xlapy.errors import InvalidArgumentError
from xlapy.keras import serialization

LSO = keras.optimizers.LossScaleOptimizer


@pytest.fixture(autouse=True)
def reset_policy():
    yield
    keras.mixed_precision.set_global_policy(None)


def _state(opt, var):
    return (var.numpy().copy(), float(opt.dynamic_scale.numpy()),
            int(opt.step_counter.numpy()), int(opt.iterations.numpy()))


def test_unscaled_update_growth_and_skip_eager():
    var = xlapy.Variable(np.array([1.0, 2.0], np.float32))
    opt = LSO(keras.optimizers.SGD(0.5), initial_scale=4.0, dynamic_growth_steps=2)
    g = np.array([0.5, -1.0], np.float32)
    opt.apply_gradients([(g * 4.0, var)])            # scaled by 4: the update uses g
    np.testing.assert_allclose(var.numpy(), [0.75, 2.5])
    assert _state(opt, var)[1:] == (4.0, 1, 1)
    opt.apply_gradients([(g * 4.0, var)])            # 2nd finite step in a row: scale x2
    np.testing.assert_allclose(var.numpy(), [0.5, 3.0])
    assert _state(opt, var)[1:] == (8.0, 0, 2)
    opt.apply_gradients([(np.array([np.inf, 1.0], np.float32), var)])   # skipped
    np.testing.assert_allclose(var.numpy(), [0.5, 3.0])
    assert _state(opt, var)[1:] == (4.0, 0, 2)
    opt.apply_gradients([(np.array([np.nan, 0.0], np.float32), var)])   # skipped again
    assert _state(opt, var)[1:] == (2.0, 0, 2)
    opt.apply_gradients([(g * 2.0, var)])
    np.testing.assert_allclose(var.numpy(), [0.25, 3.5])
    assert opt.scale_loss(np.float32(3.0)).item() == 6.0


def test_skipped_step_keeps_the_inner_slots_compiled():
    """Adam's moments and step count survive a non-finite step inside one jitted update;
    finite steps match plain Adam on the unscaled gradients."""
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    grads = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(4)]
    grads[2] = grads[2].copy()
    grads[2][1, 1] = np.inf
    plain_var, scaled_var = xlapy.Variable(w0.copy()), xlapy.Variable(w0.copy())
    plain, scaled = keras.optimizers.Adam(0.1), LSO(keras.optimizers.Adam(0.1),
                                                    initial_scale=8.0, dynamic_growth_steps=5)

    @xlapy.jit
    def step(g):
        scaled.apply_gradients([(g * scaled.dynamic_scale.read_value(), scaled_var)])
        return scaled.dynamic_scale.read_value()

    scales = []
    for i, g in enumerate(grads):
        if i != 2:
            plain.apply_gradients([(g, plain_var)])
        scales.append(float(step(g)))
        np.testing.assert_allclose(scaled_var.numpy(), plain_var.numpy(), rtol=1e-5, atol=1e-6)
    assert scales == [8.0, 8.0, 4.0, 4.0]
    assert int(scaled.iterations.numpy()) == 3 == int(plain.iterations.numpy())
    np.testing.assert_allclose(scaled.inner_optimizer.get_slot(scaled_var, "m").numpy(),
                               plain.get_slot(plain_var, "m").numpy(), rtol=1e-5, atol=1e-7)


def _regression(seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.layers.Dense(16, activation="tanh", input_shape=(8,)),
                             keras.layers.Dense(1, dtype="float32")])


def tiny_mse(y_true, y_pred):
    """A loss ~1e-7: the gradient reaching the float16 hidden layer (~1e-9) underflows."""
    return 1e-7 * xnp.mean(xnp.square(y_true - y_pred), axis=-1)


def test_mixed_float16_fit_scales_the_loss_so_small_gradients_survive():
    """Without the loss scale every float16 gradient of the hidden layer underflows to
    zero and its kernel never moves; with it, the kernel moves as in float32."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = np.tanh(x[:, :1] - x[:, 1:2]).astype(np.float32)
    moved = {}
    for policy, auto in (("float32", True), ("mixed_float16", True), ("mixed_float16", False)):
        keras.mixed_precision.set_global_policy(policy)
        model = _regression(5)
        before = model.layers[0].kernel.numpy().copy()
        model.compile(optimizer=keras.optimizers.SGD(1e4), loss=tiny_mse, jit_compile=True,
                      auto_scale_loss=auto)
        assert isinstance(model.optimizer, LSO) == (policy == "mixed_float16" and auto)
        model.fit(x, y, epochs=2, batch_size=16, verbose=0, shuffle=False)
        moved[(policy, auto)] = model.layers[0].kernel.numpy() - before
    ref = moved[("float32", True)]
    assert np.abs(ref).max() > 1e-6
    assert np.abs(moved[("mixed_float16", False)]).max() == 0.0      # underflowed
    got = moved[("mixed_float16", True)]
    np.testing.assert_allclose(got, ref, rtol=0.1, atol=0.05 * np.abs(ref).max())


def test_config_round_trip_and_errors():
    opt = LSO(keras.optimizers.Adam(0.01), initial_scale=128.0, dynamic_growth_steps=10)
    data = serialization.serialize(opt)
    again = serialization.deserialize(data)
    assert isinstance(again, LSO) and isinstance(again.inner_optimizer, keras.optimizers.Adam)
    assert (again.initial_scale, again.dynamic_growth_steps) == (128.0, 10)
    assert float(again.learning_rate.numpy()) == pytest.approx(0.01)
    assert keras.mixed_precision.LossScaleOptimizer is LSO
    with pytest.raises(InvalidArgumentError, match="inner_optimizer must be an Optimizer"):
        LSO("adam")
    with pytest.raises(InvalidArgumentError, match="initial_scale"):
        LSO(keras.optimizers.SGD(), initial_scale=0.0)
    with pytest.raises(InvalidArgumentError, match="already scales"):
        LSO(opt)
