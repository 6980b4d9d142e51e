"""xlapy.keras targets and weights: 1-D targets against one-unit outputs (Keras's rank
matching), sample weights on the loss and ``weighted_metrics`` only, ``class_weight``,
``loss_weights`` and custom losses."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy.numpy as xnp
from xlapy import keras
from xlapy.errors import InvalidArgumentError
from xlapy.keras import layers, losses, metrics


@pytest.fixture(autouse=True)
def _seed():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)


def _regression_data():
    rng = np.random.default_rng(0)
    x = rng.random((64, 3), np.float32)
    return x, x @ np.array([1.0, -2.0, 0.5], np.float32) + 0.3


# ------------------------------------------------------------------- rank matching
def test_squeeze_or_expand_follows_keras():
    f = losses.squeeze_or_expand_to_same_rank
    shapes = lambda a, b: (tuple(a.shape), tuple(b.shape))    # noqa: E731
    assert shapes(*f(np.zeros(4), np.zeros((4, 1)))) == ((4, 1), (4, 1))
    assert shapes(*f(np.zeros((4, 1)), np.zeros(4))) == ((4, 1), (4, 1))
    assert shapes(*f(np.zeros((4, 5)), np.zeros((4, 5, 1)))) == ((4, 5), (4, 5))
    assert shapes(*f(np.zeros(4), np.zeros((4, 3)))) == ((4,), (4, 3))     # no trailing 1
    assert shapes(*f(np.zeros((4, 3)), np.zeros((4, 3)))) == ((4, 3), (4, 3))


@pytest.mark.parametrize("fn", [losses.mean_squared_error, losses.mean_absolute_error,
                                losses.binary_crossentropy, losses.huber, losses.hinge,
                                losses.squared_hinge, metrics.binary_accuracy,
                                metrics.accuracy, metrics.auto_accuracy])
def test_elementwise_functions_compare_row_by_row(fn):
    rng = np.random.default_rng(1)
    y = (rng.random(6) > 0.5).astype(np.float32)
    p = rng.random((6, 1)).astype(np.float32)
    one_d = np.asarray(fn(y, p))
    assert one_d.shape == (6,) or (fn is metrics.accuracy and one_d.shape == (6, 1))
    np.testing.assert_allclose(np.squeeze(one_d), np.squeeze(np.asarray(fn(y[:, None], p))),
                               rtol=1e-6)
    np.testing.assert_allclose(np.squeeze(np.asarray(fn(p, y))),      # either argument 1-D
                               np.squeeze(np.asarray(fn(p, y[:, None]))), rtol=1e-6)


def test_loss_values_with_1d_targets_match_numpy():
    y = np.array([0.0, 1.0, 1.0, 0.0], np.float32)
    p = np.array([[0.2], [0.7], [0.4], [0.1]], np.float32)
    np.testing.assert_allclose(np.asarray(losses.mean_squared_error(y, p)), (y - p[:, 0]) ** 2,
                               rtol=1e-6)
    bce = -(y * np.log(p[:, 0]) + (1 - y) * np.log(1 - p[:, 0]))
    np.testing.assert_allclose(np.asarray(losses.binary_crossentropy(y, p)), bce, rtol=1e-5)
    hinge = np.maximum(1 - (2 * y - 1) * p[:, 0], 0)
    np.testing.assert_allclose(np.asarray(losses.hinge(y, p)), hinge, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(losses.squared_hinge(y, p)), hinge ** 2, rtol=1e-6)
    np.testing.assert_allclose(float(losses.MeanSquaredError()(y, p)),
                               np.mean((y - p[:, 0]) ** 2), rtol=1e-6)
    custom = losses.get(lambda t, q: xnp.abs(t - q)[..., 0])     # wrapper matches ranks too
    np.testing.assert_allclose(np.asarray(custom.call(y, p)), np.abs(y - p[:, 0]), rtol=1e-6)


@pytest.mark.parametrize("jit", [True, False])
def test_linear_regression_with_1d_targets_reaches_the_2d_loss(jit):
    x, y = _regression_data()
    results = []
    for target in (y, y[:, None]):
        keras.backend.clear_session()
        keras.utils.set_random_seed(0)
        model = keras.Sequential([layers.Dense(1, input_shape=(3,))])
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", metrics=["mae"],
                      jit_compile=jit)
        history = model.fit(x, target, epochs=30, batch_size=16, verbose=0)
        results.append((history.history, model.evaluate(x, target, verbose=0)))
    (h1, e1), (h2, e2) = results
    np.testing.assert_allclose(h1["loss"], h2["loss"], rtol=1e-5)
    np.testing.assert_allclose(e1, e2, rtol=1e-5)
    assert e1[0] < 0.01                       # it learned the linear map


def _fixed_classifier():
    model = keras.Sequential([layers.Dense(1, activation="sigmoid", input_shape=(2,))])
    model.set_weights([np.array([[3.0], [-2.0]], np.float32), np.array([0.5], np.float32)])
    return model


@pytest.mark.parametrize("jit", [True, False])
def test_evaluate_with_1d_labels_gives_the_right_accuracy_and_loss(jit):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((50, 2)).astype(np.float32)
    y = (rng.random(50) > 0.5).astype(np.float32)
    model = _fixed_classifier()
    model.compile(optimizer="sgd", loss="binary_crossentropy",
                  metrics=["accuracy", "binary_accuracy", "mse"], jit_compile=jit)
    p = 1 / (1 + np.exp(-(x @ np.array([3.0, -2.0]) + 0.5)))
    p = np.clip(p, 1e-7, 1 - 1e-7)
    want_acc = np.mean((p > 0.5) == y)
    want_loss = np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p)))
    for labels in (y, y[:, None]):
        loss, acc, bacc, mse = model.evaluate(x, labels, batch_size=16, verbose=0)
        assert acc == pytest.approx(want_acc) and bacc == pytest.approx(want_acc)
        assert loss == pytest.approx(want_loss, rel=1e-4)
        assert mse == pytest.approx(np.mean((p - y) ** 2), rel=1e-4)


def test_loss_returning_the_wrong_shape_is_reported():
    model = keras.Sequential([layers.Dense(1, input_shape=(2,))])
    model.compile(optimizer="sgd", loss=lambda t, p: xnp.zeros((7,)), jit_compile=False)
    with pytest.raises(InvalidArgumentError, match="one value per sample"):
        model.evaluate(np.ones((4, 2)), np.ones(4), verbose=0)


def test_a_loss_function_returning_a_scalar_is_used_as_it_is():
    x, y = _regression_data()
    model = keras.Sequential([layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer="sgd", loss=lambda t, p: xnp.mean(xnp.square(t - p)),
                  metrics=["mse"])
    loss, mse = model.evaluate(x, y[:, None], batch_size=64, verbose=0)
    assert loss == pytest.approx(mse, rel=1e-6)


# ------------------------------------------------------------------ sample weights
@pytest.mark.parametrize("jit", [True, False])
def test_sample_weight_applies_to_loss_and_weighted_metrics_only(jit):
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], np.float32)
    y = np.array([1.0, 1.0, 0.0, 0.0, 1.0], np.float32)
    w = np.array([1.0, 0.0, 2.0, 1.0, 0.5], np.float32)
    model = _fixed_classifier()
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"],
                  weighted_metrics=["accuracy", "mse"], jit_compile=jit)
    assert model.metrics_names == ["loss", "accuracy", "weighted_accuracy", "mse"]
    p = np.clip(1 / (1 + np.exp(-(x @ np.array([3.0, -2.0]) + 0.5))), 1e-7, 1 - 1e-7)
    hit = ((p > 0.5) == y).astype(np.float64)
    per = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    logs = model.evaluate(x, y, sample_weight=w, batch_size=2, verbose=0, return_dict=True)
    assert logs["accuracy"] == pytest.approx(hit.mean())               # unweighted
    assert logs["weighted_accuracy"] == pytest.approx((hit * w).sum() / w.sum())
    assert logs["mse"] == pytest.approx(((p - y) ** 2 * w).sum() / w.sum(), rel=1e-5)
    # the loss: per batch sum(w * l) / rows, averaged over batches by their row counts
    batches = [slice(0, 2), slice(2, 4), slice(4, 5)]
    want = sum((per[s] * w[s]).sum() for s in batches) / len(y)
    assert logs["loss"] == pytest.approx(want, rel=1e-5)
    history = model.fit(x, y, sample_weight=w, batch_size=5, epochs=1, verbose=0)
    assert history.history["accuracy"][0] == pytest.approx(hit.mean())
    assert history.history["weighted_accuracy"][0] == pytest.approx((hit * w).sum() / w.sum())


def test_compile_accepts_empty_weighted_metrics_and_rejects_duplicates():
    model = keras.Sequential([layers.Dense(2, input_shape=(3,))])
    model.compile(optimizer="sgd", loss="mse", weighted_metrics=[])
    assert model.metrics_names == ["loss"]
    model.compile(optimizer="sgd", loss="mse", metrics="mae", weighted_metrics="mae")
    assert model.metrics_names == ["loss", "mae", "weighted_mae"]
    same = keras.metrics.MeanAbsoluteError()
    with pytest.raises(InvalidArgumentError, match="twice"):
        model.compile(optimizer="sgd", loss="mse", metrics=[same], weighted_metrics=[same])
    with pytest.raises(InvalidArgumentError, match="same name"):
        model.compile(optimizer="sgd", loss="mse", metrics=["mae", "mae"])


@pytest.mark.parametrize("jit", [True, False])
def test_class_weight_equals_the_matching_sample_weights(jit):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((24, 4)).astype(np.float32)
    y = rng.integers(0, 3, 24)
    class_weight = {0: 1.0, 1: 3.0, 2: 0.5}

    def train(**kwargs):
        keras.backend.clear_session()
        keras.utils.set_random_seed(4)
        model = keras.Sequential([layers.Dense(3, input_shape=(4,))])
        model.compile(optimizer=keras.optimizers.SGD(0.1), jit_compile=jit,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=10, epochs=2, shuffle=False, verbose=0, **kwargs)
        return model.get_weights()
    by_class = train(class_weight=class_weight)
    by_sample = train(sample_weight=np.array([class_weight[int(c)] for c in y], np.float32))
    plain = train()
    for a, b in zip(by_class, by_sample):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert not np.allclose(by_class[0], plain[0])
    one_hot = keras.utils.to_categorical(y, 3)       # argmax of one-hot labels
    from xlapy.keras.data_adapters import class_weights
    np.testing.assert_array_equal(class_weights(one_hot, class_weight),
                                  class_weights(y, class_weight))
    with pytest.raises(InvalidArgumentError, match="keys 0 .. n - 1"):
        class_weights(y, {0: 1.0, 2: 1.0})
    with pytest.raises(InvalidArgumentError, match="contain class 2"):
        class_weights(y, {0: 1.0, 1: 1.0})


def test_loss_weights_scale_the_loss_of_the_one_output():
    x, y = _regression_data()
    model = keras.Sequential([layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer="sgd", loss="mse", metrics=["mse"], loss_weights=[0.25])
    loss, mse = model.evaluate(x, y, batch_size=64, verbose=0)
    assert loss == pytest.approx(0.25 * mse, rel=1e-6)
    with pytest.raises(Exception, match="one weight"):
        model.compile(optimizer="sgd", loss="mse", loss_weights=[1.0, 2.0])
