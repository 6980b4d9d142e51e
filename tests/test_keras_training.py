"""xlapy.keras training: accuracy on digits, compiled vs eager, padding, compile counts,
models (Sequential, functional, subclassed), callbacks, weights I/O."""
from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import keras
from xlapy.errors import InvalidArgumentError
from xlapy.keras import layers
from xlapy.keras.datasets import digits

needs_digits = pytest.mark.skipif(digits._locate() is None,
                                  reason="scikit-learn (digits data) is not installed")


@pytest.fixture(autouse=True)
def _seed():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)


@pytest.fixture(scope="module")
def digit_data():
    (x, y), (xt, yt) = digits.load_data()
    return x.astype(np.float32) / 16, y, xt.astype(np.float32) / 16, yt


def _logits_loss():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


# ------------------------------------------------------------------------- accuracy
@needs_digits
def test_dense_model_on_digits_reaches_90_percent(digit_data):
    x, y, xt, yt = digit_data
    model = keras.Sequential([layers.Flatten(input_shape=(8, 8)), layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=_logits_loss(),
                  metrics=["accuracy"], jit_compile=True)
    history = model.fit(x, y, batch_size=64, epochs=10, verbose=0)
    loss, acc = model.evaluate(xt, yt, verbose=0)
    assert acc >= 0.90, acc
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.train_function.cache_info().misses == 1


@needs_digits
@pytest.mark.slow
def test_small_cnn_on_digits_reaches_95_percent(digit_data):
    x, y, xt, yt = digit_data
    model = keras.Sequential([
        layers.Conv2D(8, 3, padding="same", activation="relu", input_shape=(8, 8, 1)),
        layers.BatchNormalization(), layers.MaxPooling2D(), layers.Flatten(),
        layers.Dropout(0.3), layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(0.005), loss=_logits_loss(),
                  metrics=["accuracy"], jit_compile=True)
    model.fit(x[..., None], y, batch_size=32, epochs=12, verbose=0)
    loss, acc = model.evaluate(xt[..., None], yt, verbose=0)
    assert acc >= 0.95, acc
    assert model.train_function.cache_info().misses == 1


# ------------------------------------------------------------------ compiled vs eager
def _small_cnn():
    return keras.Sequential([
        layers.Conv2D(3, 3, padding="same", activation="relu", input_shape=(6, 6, 1)),
        layers.BatchNormalization(), layers.MaxPooling2D(), layers.Dropout(0.25),
        layers.Flatten(), layers.Dense(4, activation="softmax")])


def _train(jit: bool, epochs: int = 3):
    keras.backend.clear_session()
    keras.utils.set_random_seed(42)
    rng = np.random.default_rng(0)
    x = rng.random((37, 6, 6, 1), np.float32)
    y = keras.utils.to_categorical(rng.integers(0, 4, 37), 4)
    model = _small_cnn()
    model.compile(optimizer=keras.optimizers.RMSprop(0.01, decay=1e-3),
                  loss="categorical_crossentropy", metrics=["accuracy"], jit_compile=jit)
    history = model.fit(x, y, batch_size=16, epochs=epochs, verbose=0,
                        validation_data=(x[:11], y[:11]))
    return model, history


def test_jit_compile_false_gives_the_same_loss_curve():
    compiled, h1 = _train(True)
    eager, h2 = _train(False)
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        np.testing.assert_allclose(h1.history[key], h2.history[key], rtol=1e-4, atol=1e-6)
    assert h1.history["loss"][-1] < h1.history["loss"][0]
    for a, b in zip(compiled.get_weights(), eager.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert not hasattr(eager.train_function, "cache_info")


def test_compiles_stay_constant_across_epochs_with_a_partial_last_batch():
    model, history = _train(True, epochs=4)          # 37 rows, batch 16: last batch 5
    assert len(history.history["loss"]) == 4
    info = model.train_function.cache_info()
    assert info.misses == 1 and info.hits == 4 * 3 - 1, info
    assert model.test_function.cache_info().misses == 1
    model.predict(np.zeros((21, 6, 6, 1), np.float32), batch_size=16, verbose=0)
    out = model.predict(np.zeros((35, 6, 6, 1), np.float32), batch_size=16, verbose=0)
    assert out.shape == (35, 4)
    assert model.predict_function.cache_info().misses == 1


def test_padded_last_batch_equals_training_on_the_short_batch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 3)).astype(np.float32)
    y = rng.standard_normal((10, 2)).astype(np.float32)

    def make():
        keras.backend.clear_session()
        keras.utils.set_random_seed(5)
        m = keras.Sequential([layers.Dense(4, input_shape=(3,)), layers.BatchNormalization(),
                              layers.Dense(2)])
        m.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.5), loss="mse")
        return m
    padded = make()
    padded.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    manual = make()
    manual.train_on_batch(x[:8], y[:8])
    manual.train_on_batch(x[8:], y[8:])
    for a, b in zip(padded.get_weights(), manual.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_sample_weight_scales_the_loss():
    model = keras.Sequential([layers.Dense(1, input_shape=(2,), kernel_initializer="ones")])
    model.compile(optimizer="sgd", loss="mse")
    x = np.array([[1, 2], [3, 4], [0, 1]], np.float32)
    y = np.zeros((3, 1), np.float32)
    w = np.array([1.0, 0.0, 2.0], np.float32)
    loss = model.evaluate(x, y, sample_weight=w, batch_size=2, verbose=0)
    per = (x.sum(1)) ** 2
    assert loss == pytest.approx(float((per * w).sum() / 3), rel=1e-6)


# ------------------------------------------------------------------------ model kinds
def test_functional_model_with_a_residual_connection_trains():
    inp = keras.Input((4,))
    h = layers.Dense(4, activation="relu")(inp)
    h = layers.Add()([h, inp])
    out = layers.Dense(1)(h)
    model = keras.Model(inp, out)
    assert isinstance(model, keras.models.Functional)
    assert [type(l).__name__ for l in model.layers] == ["InputLayer", "Dense", "Add", "Dense"]
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    h1 = model.fit(x, y, batch_size=16, epochs=15, verbose=0)
    assert h1.history["loss"][-1] < 0.1 * h1.history["loss"][0]
    np.testing.assert_allclose(model.predict(x[:3], verbose=0), np.asarray(model(x[:3])),
                               rtol=1e-5, atol=1e-6)


def test_functional_model_with_two_inputs_and_a_shared_layer():
    a, b = keras.Input((3,), name="a"), keras.Input((3,), name="b")
    shared = layers.Dense(2)
    out = layers.Dense(1)(layers.Concatenate()([shared(a), shared(b)]))
    model = keras.Model([a, b], out)
    assert len(model.weights) == 4
    xa, xb = np.ones((5, 3), np.float32), np.zeros((5, 3), np.float32)
    model.compile(optimizer="sgd", loss="mse")
    model.fit([xa, xb], np.ones((5, 1), np.float32), batch_size=2, epochs=2, verbose=0)
    assert model.predict([xa, xb], verbose=0).shape == (5, 1)
    c = keras.Input((3,))
    with pytest.raises(InvalidArgumentError, match="graph disconnected"):
        keras.Model(a, layers.Add()([a, c]))


def test_subclassed_model_trains_and_tracks_layers():
    class TwoLayer(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = layers.Dense(8, activation="relu")
            self.out = layers.Dense(3)

        def call(self, x, training=None):
            return self.out(self.hidden(x))

    model = TwoLayer()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((48, 5)).astype(np.float32)
    y = np.argmax(x[:, :3], axis=1)
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss=_logits_loss(),
                  metrics=["accuracy"])
    history = model.fit(x, y, batch_size=16, epochs=10, verbose=0)
    assert history.history["accuracy"][-1] > 0.8
    assert len(model.trainable_variables) == 4 and model.layers == [model.hidden, model.out]


def test_embedding_model_trains_on_integer_inputs():
    model = keras.Sequential([layers.Embedding(10, 4, input_shape=(3,)), layers.Flatten(),
                              layers.Dense(1)])
    ids = np.random.default_rng(4).integers(0, 10, (32, 3)).astype(np.int32)
    y = (ids.sum(1, keepdims=True) / 10.0).astype(np.float32)
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    h = model.fit(ids, y, batch_size=8, epochs=8, verbose=0)
    assert h.history["loss"][-1] < 0.5 * h.history["loss"][0]


def test_seed_tutorial_style_layer_and_optimizer_in_a_compiled_function():
    layer = layers.Dense(3)
    optimizer = keras.optimizers.Adam(0.1)
    rng = np.random.default_rng(5)
    images = rng.standard_normal((30, 6)).astype(np.float32)
    labels = np.argmax(images[:, :3], axis=1).astype(np.int32)

    @xlapy.function(jit_compile=True)
    def train(images, labels):
        with xlapy.GradientTape() as tape:
            logits = layer(images)
            loss = xnp.mean(keras.losses.sparse_categorical_crossentropy(
                labels, logits, from_logits=True))
        variables = layer.trainable_variables
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    losses = [float(train(images, labels)) for _ in range(20)]
    assert losses[-1] < 0.5 * losses[0]
    assert train.cache_info().misses == 1 and int(optimizer.iterations.numpy()) == 20


# -------------------------------------------------------------------------- callbacks
def test_history_validation_split_and_early_stopping():
    x = np.random.default_rng(6).standard_normal((40, 2)).astype(np.float32)
    y = np.zeros((40, 1), np.float32)
    model = keras.Sequential([layers.Dense(1, input_shape=(2,))])
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse", metrics=["mae"])
    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=2)
    h = model.fit(x, y, epochs=10, batch_size=8, validation_split=0.25, callbacks=[stop],
                  verbose=0)
    assert sorted(h.history) == ["loss", "mae", "val_loss", "val_mae"]
    assert len(h.history["loss"]) == 3 and stop.stopped_epoch == 2
    assert h.epoch == [0, 1, 2]


def test_learning_rate_scheduler_changes_the_rate_without_recompiling():
    model = keras.Sequential([layers.Dense(1, input_shape=(2,))])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    seen = []
    sched = keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1))
    log = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen.append(float(model.optimizer.learning_rate)))
    model.fit(np.ones((8, 2), np.float32), np.ones((8, 1), np.float32), batch_size=4,
              epochs=3, callbacks=[sched, log], verbose=0)
    np.testing.assert_allclose(seen, [0.1, 0.05, 0.1 / 3], rtol=1e-6)
    assert model.train_function.cache_info().misses == 1


# --------------------------------------------------------------------------- weights
def test_save_and_load_weights_round_trip(tmp_path):
    model, _ = _train(True, epochs=1)
    x = np.random.default_rng(7).random((5, 6, 6, 1), np.float32)
    before = model.predict(x, verbose=0)
    path = tmp_path / "cnn.weights.npz"
    model.save_weights(path)
    fresh = _small_cnn()
    assert not np.allclose(fresh.predict(x, verbose=0), before)
    fresh.load_weights(path)
    np.testing.assert_array_equal(fresh.predict(x, verbose=0), before)
    for a, b in zip(fresh.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    other = keras.Sequential([layers.Dense(2, input_shape=(3,))])
    with pytest.raises(InvalidArgumentError, match="holds 8 weights"):
        other.load_weights(path)
    with pytest.raises(InvalidArgumentError, match="shape"):
        other.set_weights([np.zeros((4, 2)), np.zeros(2)])


def test_get_and_set_weights_restore_a_model():
    model = keras.Sequential([layers.Dense(3, input_shape=(2,)), layers.BatchNormalization()])
    initial = model.get_weights()
    assert [w.shape for w in initial] == [(2, 3), (3,), (3,), (3,), (3,), (3,)]
    assert len(model.trainable_variables) == 4 and len(model.non_trainable_variables) == 2
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 2), np.float32), np.ones((4, 3), np.float32), verbose=0)
    assert not all(np.array_equal(a, b) for a, b in zip(initial, model.get_weights()))
    model.set_weights(initial)
    for a, b in zip(initial, model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_compile_errors_are_clear():
    model = keras.Sequential([layers.Dense(1, input_shape=(2,))])
    with pytest.raises(InvalidArgumentError, match="compile"):
        model.fit(np.ones((2, 2)), np.ones((2, 1)))
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(InvalidArgumentError, match="batch dimension"):
        model.fit(np.ones((4, 2)), np.ones((3, 1)), verbose=0)


def test_hdf5_weights_need_h5py(tmp_path, monkeypatch):
    """Without h5py, .h5 weights fail with a clear message (h5py's absence simulated;
    the round trip with h5py is in test_keras_saving.py)."""
    monkeypatch.setitem(sys.modules, "h5py", None)          # `import h5py` now fails
    model = keras.Sequential([layers.Dense(2, input_shape=(3,))])
    with pytest.raises(InvalidArgumentError, match="needs the h5py package"):
        model.save_weights(tmp_path / "w.weights.h5")
    (tmp_path / "w.h5").write_bytes(b"")
    with pytest.raises(InvalidArgumentError, match="needs the h5py package"):
        model.load_weights(tmp_path / "w.h5")
    model.save_weights(tmp_path / "w.npz")                  # npz needs nothing
    model.load_weights(tmp_path / "w.npz")


def test_kernel_regularizer_adds_its_penalty_to_the_loss():
    model = keras.Sequential([layers.Dense(1, input_shape=(2,), kernel_initializer="ones",
                                           kernel_regularizer=keras.regularizers.L2(0.5))])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.array([[1.0, 1.0]], np.float32), np.array([[0.0]], np.float32)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(4.0 + 0.5 * 2.0)
    model.fit(x, y, verbose=0)
    # d/dk [(k1 + k2)^2 + 0.5 (k1^2 + k2^2)] = 2 * 2 + 1 = 5 per entry; SGD lr 0.01
    np.testing.assert_allclose(model.layers[0].kernel.numpy(), [[0.95], [0.95]], rtol=1e-6)


def test_functional_model_takes_inputs_by_name_and_subclass_summary(capsys):
    a, b = keras.Input((2,), name="left"), keras.Input((2,), name="right")
    model = keras.Model([a, b], layers.Add()([a, b]))
    out = model.predict({"right": np.ones((3, 2)), "left": np.zeros((3, 2))}, verbose=0)
    np.testing.assert_array_equal(out, np.ones((3, 2)))

    class Net(keras.Model):
        def __init__(self):
            super().__init__(name="net")
            self.d = layers.Dense(4)

        def call(self, x):
            return self.d(x)
    net = Net()
    net(np.ones((2, 3), np.float32))
    net.summary()
    assert re.search(r"dense \(Dense\)\s+\(None, 4\)\s+16\n", capsys.readouterr().out)
