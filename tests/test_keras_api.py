"""xlapy.keras losses, metrics, initializers, the progress bar and summary()."""
from __future__ import annotations

import io
import re

import numpy as np
import pytest

import xlapy
from xlapy import keras
from xlapy.errors import InvalidArgumentError
from xlapy.keras import initializers, layers, losses, metrics
from xlapy.keras.progbar import Progbar, format_time

EPS = 1e-7


@pytest.fixture(autouse=True)
def _seed():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ------------------------------------------------------------------------- activations
def test_activations_by_name_with_keras_defaults():
    from math import erf
    from xlapy.keras import activations
    x = np.float32([-2.0, -0.5, 0.0, 1.5])
    exact = 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))
    np.testing.assert_allclose(np.asarray(activations.get("gelu")(x)), exact, rtol=1e-6,
                               atol=1e-7)                  # Keras: exact unless approximate
    np.testing.assert_allclose(np.asarray(activations.get("leaky_relu")(x)),
                               np.where(x >= 0, x, 0.2 * x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(activations.get("softsign")(x)), x / (1 + abs(x)),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(activations.get("swish")(x)),
                               x / (1 + np.exp(-x)), rtol=1e-6)
    assert activations.get(None) is activations.linear
    assert activations.serialize(activations.get("swish")) == "silu"
    assert all(hasattr(activations, n) for n in activations.__all__)
    with pytest.raises(InvalidArgumentError, match="unknown activation 'gelu2'"):
        activations.get("gelu2")


# ------------------------------------------------------------------------------ losses
def test_crossentropies_match_keras_formulas():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((5, 4)).astype(np.float32)
    labels = np.array([0, 3, 1, 1, 2])
    onehot = np.eye(4, dtype=np.float32)[labels]
    probs = _softmax(logits.astype(np.float64))
    want = -np.log(probs[np.arange(5), labels])
    got = [losses.categorical_crossentropy(onehot, logits, from_logits=True),
           losses.categorical_crossentropy(onehot, probs.astype(np.float32)),
           losses.sparse_categorical_crossentropy(labels, logits, from_logits=True),
           losses.sparse_categorical_crossentropy(labels[:, None], probs.astype(np.float32))]
    for g in got:
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-6)
    # probabilities are renormalized and clipped like Keras
    unnorm = np.array([[2.0, 0.0]], np.float32)
    np.testing.assert_allclose(np.asarray(losses.categorical_crossentropy([[0, 1]], unnorm)),
                               [-np.log(EPS)], rtol=1e-4)
    smoothed = losses.categorical_crossentropy(onehot, logits, from_logits=True,
                                               label_smoothing=0.2)
    target = onehot * 0.8 + 0.05
    np.testing.assert_allclose(np.asarray(smoothed), -(target * np.log(probs)).sum(-1),
                               rtol=1e-5)


def test_binary_crossentropy_mse_mae_huber():
    rng = np.random.default_rng(1)
    z = rng.standard_normal((4, 3)).astype(np.float32)
    t = (rng.random((4, 3)) > 0.5).astype(np.float32)
    p = 1 / (1 + np.exp(-z.astype(np.float64)))
    want = -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean(-1)
    np.testing.assert_allclose(np.asarray(losses.binary_crossentropy(t, z, from_logits=True)),
                               want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(losses.binary_crossentropy(t, p.astype(np.float32))),
                               want, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(losses.mean_squared_error(t, z)),
                               ((t - z) ** 2).mean(-1), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(losses.mean_absolute_error(t, z)),
                               np.abs(t - z).mean(-1), rtol=1e-6)
    e = np.abs(t - z)
    hub = np.where(e <= 1, 0.5 * e ** 2, e - 0.5).mean(-1)
    np.testing.assert_allclose(np.asarray(losses.huber(t, z)), hub, rtol=1e-6)


def test_loss_objects_reduce_with_sample_weights():
    y, p = np.array([[1.0], [2.0], [3.0]]), np.zeros((3, 1))
    mse = losses.MeanSquaredError()
    assert float(mse(y, p)) == pytest.approx(14 / 3)
    assert float(mse(y, p, sample_weight=[1, 0, 2])) == pytest.approx((1 + 18) / 3)
    assert float(losses.MeanSquaredError(reduction="sum")(y, p)) == pytest.approx(14)
    np.testing.assert_allclose(np.asarray(losses.MeanSquaredError(reduction="none")(y, p)),
                               [1, 4, 9])
    with pytest.raises(InvalidArgumentError, match="unknown loss"):
        losses.get("hinge-ish")


# ----------------------------------------------------------------------------- metrics
def test_metrics_accumulate_weighted_means():
    m = metrics.Mean()
    m.update_state([1.0, 2.0, 3.0])
    m.update_state([10.0], sample_weight=[3.0])
    assert float(m.result()) == pytest.approx((6 + 30) / 6)
    m.reset_state()
    assert float(m.result()) == 0.0
    acc = metrics.SparseCategoricalAccuracy()
    acc.update_state([0, 1, 2], [[0.9, 0.1, 0], [0.2, 0.7, 0.1], [0.5, 0.4, 0.1]])
    assert float(acc.result()) == pytest.approx(2 / 3)
    acc.update_state([[2]], [[0, 0, 1.0]], sample_weight=[3.0])
    assert float(acc.result()) == pytest.approx(5 / 6)
    cat = metrics.CategoricalAccuracy()
    cat.update_state(np.eye(3), [[0.1, 0.8, 0.1], [0, 1, 0], [0, 0, 1]])
    assert float(cat.result()) == pytest.approx(2 / 3)
    binary = metrics.BinaryAccuracy()
    binary.update_state([[1], [0], [1]], [[0.7], [0.6], [0.2]])
    assert float(binary.result()) == pytest.approx(1 / 3)


def test_accuracy_picks_the_variant_from_shapes():
    pred = np.array([[0.1, 0.9], [0.8, 0.2]], np.float32)
    auto = metrics.auto_accuracy
    np.testing.assert_array_equal(np.asarray(auto(np.array([1, 1]), pred)), [1, 0])
    np.testing.assert_array_equal(np.asarray(auto(np.array([[0, 1], [0, 1]]), pred)), [1, 0])
    np.testing.assert_array_equal(np.asarray(auto(np.array([[1], [1]]), pred[:, :1])), [0, 1])
    assert metrics.get("accuracy").name == "accuracy"


def test_metric_state_updates_inside_a_compiled_function():
    m = metrics.Mean()
    step = xlapy.function(lambda v: m.update_state(v), jit_compile=True)
    for v in ([1.0, 3.0], [5.0, 7.0]):
        step(np.array(v, np.float32))
    assert float(m.result()) == pytest.approx(4.0)
    assert step.cache_info().misses == 1


# ------------------------------------------------------------------------ initializers
def test_variance_scaling_initializers():
    shape = (3, 3, 16, 32)                 # fan_in 144, fan_out 288
    gu = initializers.GlorotUniform(seed=1)(shape)
    limit = np.sqrt(6 / (144 + 288))
    assert np.abs(gu).max() <= limit and np.abs(gu).max() > 0.95 * limit
    assert np.std(gu) == pytest.approx(limit / np.sqrt(3), rel=0.05)
    hn = initializers.HeNormal(seed=2)((400, 300))
    assert np.std(hn) == pytest.approx(np.sqrt(2 / 400), rel=0.05)
    assert np.abs(hn).max() <= 2 * np.sqrt(2 / 400) / 0.87962566103423978 + 1e-6
    hu = initializers.HeUniform(seed=3)((50, 20))
    assert np.abs(hu).max() <= np.sqrt(6 / 50)
    gn = initializers.get("glorot_normal")((200, 100))
    assert np.std(gn) == pytest.approx(np.sqrt(2 / 300), rel=0.05)
    assert initializers.compute_fans((3, 3, 16, 32)) == (144, 288)


def test_initializer_seeds_and_constants():
    a = initializers.GlorotUniform(seed=5)((4, 4))
    np.testing.assert_array_equal(a, initializers.GlorotUniform(seed=5)((4, 4)))
    assert not np.array_equal(a, initializers.GlorotUniform(seed=6)((4, 4)))
    unseeded = initializers.GlorotUniform()
    assert not np.array_equal(unseeded((4, 4)), unseeded((4, 4)))
    np.testing.assert_array_equal(initializers.get("zeros")((2,)), [0, 0])
    np.testing.assert_array_equal(initializers.get("ones")((2,)), [1, 1])
    assert initializers.get("ones")((2,)).dtype == np.float32
    keras.utils.set_random_seed(9)
    d1 = layers.Dense(3)
    d1.build((None, 2))
    keras.utils.set_random_seed(9)
    d2 = layers.Dense(3)
    d2.build((None, 2))
    np.testing.assert_array_equal(d1.kernel.numpy(), d2.kernel.numpy())


# ---------------------------------------------------------------------- progress bar
LINE = re.compile(r"^(\d+)/(\d+) \[(=*)(>?)(\.*)\] - \d+s \d+(s|ms|us)/step"
                  r"( - [a-z_]+: \d+\.\d{4}(e[-+]\d+)?)+$")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progbar_final_line_has_keras_format():
    out = io.StringIO()
    bar = Progbar(196, file=out, stateful_metrics=["loss", "accuracy"])
    for step in range(1, 197):
        bar.update(step, [("loss", 0.1234), ("accuracy", 0.98765)])
    text = out.getvalue()
    assert text.count("\n") == 1 and "\r" not in text      # not a terminal: one line
    line = text.rstrip("\n")
    assert LINE.match(line), line
    assert line.startswith("196/196 [==============================] - ")
    assert line.endswith(" - loss: 0.1234 - accuracy: 0.9877")


def test_progbar_on_a_terminal_redraws_with_eta():
    out = _Tty()
    bar = Progbar(4, file=out, interval=0.0, stateful_metrics=["loss"])
    bar.update(1, [("loss", 2.0)])
    bar.update(2, [("loss", 1.0)])
    bar.update(4, [("loss", 0.0001)])
    frames = out.getvalue().split("\r")[1:]
    assert frames[0].startswith("1/4 [======>.......................] - ETA: ")
    assert frames[0].rstrip().endswith("loss: 2.0000")
    assert frames[1].startswith("2/4 [==============>...............] - ETA: ")
    assert frames[2].startswith("4/4 [==============================] - ")
    assert frames[2].rstrip().endswith("loss: 1.0000e-04")


def test_progbar_verbose_2_and_averaging():
    out = io.StringIO()
    bar = Progbar(3, verbose=2, file=out)
    for i, v in enumerate([1.0, 2.0, 3.0], start=1):
        bar.update(i, [("loss", v)])          # not stateful: averaged
    line = out.getvalue()
    assert re.match(r"^3/3 - \d+s - loss: 2\.0000 - \d+(s|ms|us)/epoch - "
                    r"\d+(s|ms|us)/step\n$", line), line
    assert format_time(0.008, "step") == " 8ms/step" and format_time(2.2, "step") == \
        " 2s/step" and format_time(5e-5, "step") == " 50us/step"


def test_fit_and_evaluate_print_keras_lines(capsys):
    model = keras.Sequential([layers.Dense(2, input_shape=(3,))])
    model.compile(optimizer="sgd", loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    x = np.random.default_rng(0).standard_normal((20, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    model.fit(x, y, batch_size=8, epochs=2, validation_data=(x, y))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2"
    for line in (lines[1], lines[3]):
        assert LINE.match(line), line
        assert line.startswith("3/3 [==============================]")
        assert re.search(r" - loss: \S+ - accuracy: \S+ - val_loss: \S+ - val_accuracy: \S+$",
                         line), line
    model.evaluate(x, y, batch_size=8)
    line = capsys.readouterr().out.strip()
    assert LINE.match(line) and re.search(r" - loss: \S+ - accuracy: \S+$", line), line
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert capsys.readouterr().out == ""


def test_summary_table(capsys):
    model = keras.Sequential([layers.Conv2D(4, 3, padding="same", input_shape=(8, 8, 1)),
                              layers.BatchNormalization(), layers.Flatten(), layers.Dense(3)],
                             name="tiny")
    model.summary()
    text = capsys.readouterr().out
    assert text.startswith('Model: "tiny"\n')
    assert re.search(r"conv2d \(Conv2D\)\s+\(None, 8, 8, 4\)\s+40\n", text)
    assert re.search(r"flatten \(Flatten\)\s+\(None, 256\)\s+0\n", text)
    assert re.search(r"dense \(Dense\)\s+\(None, 3\)\s+771\n", text)
    assert "Total params: 827\nTrainable params: 819\nNon-trainable params: 8\n" in text
    with pytest.raises(InvalidArgumentError, match="not built"):
        keras.Sequential([layers.Dense(2)]).summary()


def test_to_categorical():
    np.testing.assert_array_equal(keras.utils.to_categorical([[1], [0], [2]]),
                                  np.eye(3)[[1, 0, 2]])
    with pytest.raises(InvalidArgumentError, match="out of range"):
        keras.utils.to_categorical([3], num_classes=3)
