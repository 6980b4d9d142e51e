"""xlapy.keras ``fit``/``evaluate``/``predict`` options and data sources: validation
options, generators and Sequence-like data, single-batch methods, ``steps_per_execution``,
``jit_compile=None`` following ``set_auto_jit``, optimizer names and configs."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from xlapy import keras
from xlapy.errors import InvalidArgumentError
from xlapy.frontend.tf_function import auto_jit, set_auto_jit
from xlapy.keras import layers


@pytest.fixture(autouse=True)
def _seed():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)


def _data(n=20):
    rng = np.random.default_rng(0)
    return rng.random((n, 3), np.float32), rng.integers(0, 2, n)


def _model(jit=True, seed=0):
    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([layers.Dense(4, activation="relu", input_shape=(3,)),
                              layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), metrics=["accuracy"], jit_compile=jit,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


# ---------------------------------------------------------------------- validation
def test_validation_freq_batch_size_and_steps():
    x, y = _data()
    model = _model()
    history = model.fit(x, y, epochs=4, batch_size=8, validation_data=(x, y),
                        validation_freq=2, verbose=0)
    assert len(history.history["loss"]) == 4 and len(history.history["val_loss"]) == 2
    history = model.fit(x, y, epochs=3, batch_size=8, validation_data=(x, y),
                        validation_freq=[1, 3], verbose=0)
    assert len(history.history["val_loss"]) == 2
    seen = []
    model.fit(x, y, epochs=1, batch_size=8, validation_data=(x, y), validation_batch_size=5,
              validation_steps=1, verbose=0,
              callbacks=[keras.callbacks.LambdaCallback(
                  on_epoch_end=lambda epoch, logs: seen.append(logs["val_loss"]))])
    assert seen[0] == pytest.approx(model.evaluate(x[:5], y[:5], verbose=0)[0], rel=1e-6)
    assert seen[0] != pytest.approx(model.evaluate(x, y, verbose=0)[0], rel=1e-3)
    with pytest.raises(InvalidArgumentError, match="validation_freq"):
        model.fit(x, y, validation_data=(x, y), validation_freq=0, verbose=0)


def test_queue_options_and_steps_per_execution_are_accepted():
    x, y = _data()
    model = _model()
    model.fit(x, y, workers=4, use_multiprocessing=True, max_queue_size=3, verbose=0)
    model.evaluate(x, y, workers=2, verbose=0)
    model.predict(x, use_multiprocessing=False, verbose=0)
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=8)
    assert model.steps_per_execution == 8
    with pytest.raises(InvalidArgumentError, match="steps_per_execution"):
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=0)


def test_single_batch_methods_match_the_loops():
    x, y = _data(8)
    model = _model()
    np.testing.assert_allclose(model.predict_on_batch(x), model.predict(x, verbose=0),
                               rtol=1e-6)
    loss, acc = model.test_on_batch(x, y)
    assert [loss, acc] == pytest.approx(model.evaluate(x, y, batch_size=8, verbose=0))
    assert model.test_on_batch(x, y, return_dict=True) == pytest.approx(
        {"loss": loss, "accuracy": acc})
    before = model.get_weights()
    model.train_on_batch(x, y, class_weight={0: 1.0, 1: 2.0})
    assert not np.allclose(before[0], model.get_weights()[0])


# ------------------------------------------------------------------ generator data
def _batches(x, y, size):
    return [(x[i:i + size], y[i:i + size]) for i in range(0, len(x), size)]


@pytest.mark.parametrize("jit", [True, False])
def test_fit_on_a_generator_equals_fit_on_arrays(jit):
    x, y = _data()
    arrays = _model(jit)
    arrays.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)

    def endless():
        while True:
            yield from _batches(x, y, 8)
    gen = _model(jit)
    history = gen.fit(endless(), steps_per_epoch=3, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    for a, b in zip(arrays.get_weights(), gen.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    if jit:                                    # the short third batch is padded
        assert gen.train_function.cache_info().misses == 1


def test_sequence_like_data_and_evaluate_predict_on_iterables():
    x, y = _data()

    class Batches:                              # keras.utils.Sequence's protocol
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return x[8 * i:8 * i + 8], y[8 * i:8 * i + 8], np.ones(len(y[8 * i:8 * i + 8]))
    model = _model()
    history = model.fit(Batches(), epochs=2, verbose=0)     # read again every epoch
    assert len(history.history["loss"]) == 2
    assert model.evaluate(Batches(), verbose=0) == pytest.approx(
        model.evaluate(x, y, batch_size=8, verbose=0), rel=1e-6)
    np.testing.assert_allclose(model.predict(iter(_batches(x, y, 8)), verbose=0),
                               model.predict(x, verbose=0), rtol=1e-6)
    history = model.fit(x, y, epochs=1, validation_data=iter(_batches(x, y, 8)), verbose=0)
    assert "val_accuracy" in history.history


def test_an_exhausted_generator_stops_training_with_a_warning(caplog):
    x, y = _data()
    model = _model()
    with caplog.at_level(logging.WARNING, logger="xlapy.keras"):
        history = model.fit(iter(_batches(x, y, 8)), epochs=3, verbose=0)
    assert len(history.history["loss"]) == 1
    assert "ran out of data" in caplog.text


def test_unsupported_data_says_what_is_supported():
    x, y = _data()
    model = _model()
    with pytest.raises(InvalidArgumentError, match="generator"):
        model.fit(object(), verbose=0)
    with pytest.raises(InvalidArgumentError, match="iterable of batches"):
        model.fit(3, y, verbose=0)
    with pytest.raises(InvalidArgumentError, match="do not pass them separately"):
        model.fit(iter(_batches(x, y, 8)), y, verbose=0)
    with pytest.raises(InvalidArgumentError, match="validation_split"):
        model.fit(iter(_batches(x, y, 8)), validation_split=0.2, verbose=0)


# ------------------------------------------------------------ jit_compile default
@pytest.fixture
def restore_auto_jit():
    saved = auto_jit()
    yield
    set_auto_jit(saved)


def test_jit_compile_none_follows_set_auto_jit(restore_auto_jit):
    x, y = _data(8)

    def compiled_default(**kwargs):
        model = keras.Sequential([layers.Dense(2, input_shape=(3,))])
        model.compile(optimizer="sgd", loss="mse", **kwargs)
        model.fit(x, np.zeros((8, 2), np.float32), verbose=0)
        info = getattr(model.train_function, "cache_info", None)
        return model.jit_compile, (info().misses if info else None)
    set_auto_jit(False)
    assert compiled_default() == (False, None)                  # eager: no cache at all
    assert compiled_default(jit_compile=True) == (True, 1)      # an explicit value wins
    set_auto_jit(None)
    assert compiled_default() == (True, 1)
    assert compiled_default(jit_compile="auto") == (True, 1)
    set_auto_jit(True)
    assert compiled_default(run_eagerly=True) == (False, None)
    set_auto_jit(False)
    predictor = keras.Sequential([layers.Dense(2, input_shape=(3,))])
    predictor.predict(x, verbose=0)                              # uncompiled model
    assert not hasattr(predictor.predict_function, "cache_info")


# ---------------------------------------------------------------------- optimizers
def test_optimizer_default_names_and_configs():
    assert keras.optimizers.RMSprop().name == "rmsprop"
    assert keras.optimizers.get("adam").name.startswith("adam")
    assert keras.optimizers.legacy.RMSprop is keras.optimizers.RMSprop
    opt = keras.optimizers.RMSprop(learning_rate=0.01, rho=0.8, momentum=0.5, centered=True,
                                   decay=1e-3, clipnorm=1.0)
    copy = keras.optimizers.RMSprop.from_config(opt.get_config())
    assert copy.get_config() == opt.get_config()
    assert (copy.rho, copy.momentum, copy.centered, copy.decay) == (0.8, 0.5, True, 1e-3)
    sgd = keras.optimizers.SGD.from_config(keras.optimizers.SGD(0.1, 0.9, True).get_config())
    assert (sgd.momentum, sgd.nesterov) == (0.9, True)
