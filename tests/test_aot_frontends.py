"""Ahead-of-time entry points above HLO: ``tf.function`` (with an input signature),
``xlapy.jit`` functions, Keras models (``model.export_aot``) with their weights frozen
into the object, and the demo's trained digits CNN checked against the JIT model."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import xlapy
import xlapy.aot as aot
import xlapy.tf as tf
from xlapy import keras
from xlapy.errors import InvalidArgumentError

from aot_harness import CC, ROOT, build_driver, run_driver

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")

rng = np.random.default_rng(11)


def _run(out, name, args, expected, tol=1e-5):
    exe = build_driver(out, name)
    proc, got = run_driver(exe, args, [(e.dtype, e.shape) for e in expected])
    assert proc.returncode == 0, proc.stderr
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
    return got


def test_tf_function_with_signature_and_a_frozen_variable(tmp_path):
    scale = tf.Variable(np.float32(1.5))
    w = tf.Variable(rng.standard_normal((6, 4)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([3, 6], tf.float32),
                                  tf.TensorSpec([4], tf.float32)], jit_compile=True)
    def f(x, b):
        return tf.nn.relu(tf.matmul(x, w) * scale + b)

    res = f.export_aot(name="tff", out_dir=str(tmp_path))
    meta = json.loads((tmp_path / "tff_meta.json").read_text())
    assert [a["shape"] for a in meta["args"]] == [[3, 6], [4]]      # variables are constants
    x = rng.standard_normal((3, 6)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    expected = np.asarray(f(x, b))
    _run(tmp_path, "tff", [x, b], [expected])
    # the object holds the values at export time: later assignments do not change it
    scale.assign(np.float32(-2.0))
    _run(tmp_path, "tff", [x, b], [expected])
    assert res.kernels >= 1


def test_tf_function_signature_needs_known_dims():
    @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32)])
    def f(x):
        return x * 2.0
    with pytest.raises(InvalidArgumentError, match="unknown dims"):
        f.export_aot(name="f")
    with pytest.raises(InvalidArgumentError, match="example arguments"):
        aot.compile(lambda a: a * 2.0, name="g")


def test_tf_function_example_arguments(tmp_path):
    @tf.function(jit_compile=True)
    def g(x):
        return tf.reduce_sum(x * x, axis=1)
    x = rng.standard_normal((5, 7)).astype(np.float32)
    g.export_aot(x, name="g", out_dir=str(tmp_path), blas=False)
    _run(tmp_path, "g", [x], [np.asarray(g(x))])


def test_tf_function_default_mode_and_functional_keras_model(tmp_path):
    @tf.function                        # jit_compile=None: run op by op, traced for AOT
    def h(x):
        return tf.math.exp(-x) + 1.0
    x = rng.standard_normal((2, 5)).astype(np.float32)
    h.export_aot(x, name="h", out_dir=str(tmp_path / "h"))
    _run(tmp_path / "h", "h", [x], [np.asarray(h(x))])
    keras.backend.clear_session()
    a, b = keras.layers.Input((4,)), keras.layers.Input((3,))
    out = keras.layers.Dense(2)(keras.layers.Concatenate()([a, keras.layers.Dense(4)(b)]))
    model = keras.Model([a, b], out)
    xa, xb = rng.random((3, 4), dtype=np.float32), rng.random((3, 3), dtype=np.float32)
    aot.compile(model, xa, xb, name="two", out_dir=str(tmp_path / "two"))
    _run(tmp_path / "two", "two", [xa, xb], [model.predict([xa, xb], verbose=0)])


def test_jit_function(tmp_path):
    f = xlapy.jit(lambda a, b: xlapy.numpy.tanh(a) @ b)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 9), (9, 3)))
    aot.compile(f, a, b, name="jf", out_dir=str(tmp_path), threads=2)
    _run(tmp_path, "jf", [a, b], [np.asarray(f(a, b))])


def _small_model():
    keras.backend.clear_session()
    keras.utils.set_random_seed(3)
    return keras.Sequential([
        keras.layers.Conv2D(4, 3, padding="same", activation="relu", input_shape=(6, 6, 2)),
        keras.layers.BatchNormalization(),
        keras.layers.Flatten(),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(5, activation="softmax")])


def test_keras_model_export_aot(tmp_path):
    model = _small_model()
    x = rng.random((3, 6, 6, 2), dtype=np.float32)
    res = model.export_aot(name="km", out_dir=str(tmp_path / "a"), batch_size=3)
    assert res.uses_blas
    expected = model.predict(x, verbose=0)
    _run(tmp_path / "a", "km", [x], [expected])
    # the model itself passed to compile, at an example batch, without BLAS
    aot.compile(model, x[:1], name="km1", out_dir=str(tmp_path / "b"), blas=False)
    _run(tmp_path / "b", "km1", [x[:1]], [expected[:1]])


def test_keras_export_errors(tmp_path):
    model = _small_model()
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        model.export_aot(name="m", out_dir=str(tmp_path))
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        model.export_aot(name="m", out_dir=str(tmp_path), batch_size=0)
    v = tf.Variable(np.zeros(3, np.float32))

    def step(x):
        v.assign_add(x)
        return v.read_value() * 2.0
    with pytest.raises(InvalidArgumentError, match="assigns Variables"):
        aot.compile(step, np.ones(3, np.float32), name="s", out_dir=str(tmp_path))


@pytest.mark.slow
def test_trained_digits_cnn_agrees_with_the_jit(tmp_path):
    """The demo's CNN (examples/keras_digits.py), trained as the demo trains it (12
    epochs), exported, run by a C program on the whole test set: the same class as the JIT
    model for every image."""
    epochs = 12
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "aot" / "digits_cnn.py"),
                           "--epochs", str(epochs), "--out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "agree on 359 of 359 test images" in proc.stderr
