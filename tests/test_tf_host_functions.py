"""``tf.print``, ``tf.numpy_function`` and ``tf.py_function`` inside ``jit_compile=True``."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import xlapy.tf as tf
from xlapy.errors import InvalidArgumentError

X = np.array([0.5, -1.0, 2.0], np.float32)


def test_numpy_function_in_compiled_code_feeds_later_ops():
    calls = []

    def host_median(a):
        calls.append(a.copy())
        return np.median(a)                     # float64: converted to Tout

    @tf.function(jit_compile=True)
    def f(x):
        m = tf.numpy_function(host_median, [x], tf.TensorSpec([], tf.float32))
        return x - m

    np.testing.assert_allclose(np.asarray(f(X)), X - np.median(X))
    np.testing.assert_allclose(np.asarray(f(X * 2)), X * 2 - np.median(X * 2))
    assert len(calls) == 2                      # full TensorSpec: no probe while tracing


def test_dtype_only_tout_learns_shapes_from_a_probe():
    seen = []

    def host(a):
        seen.append(a.copy())
        return np.cumsum(a), np.int32(a.size)

    f = tf.function(lambda x: tf.numpy_function(host, [x], [tf.float32, tf.int32]),
                    jit_compile=True)
    total, n = f(X)
    np.testing.assert_allclose(np.asarray(total), np.cumsum(X))
    assert int(n) == 3
    np.testing.assert_array_equal(seen[0], np.zeros(3, np.float32))     # the probe
    np.testing.assert_array_equal(seen[1], X)


def test_py_function_gradient_in_compiled_code_matches_finite_differences():
    def cube(t):
        return t * t * t                         # tensors, op by op on the host

    w = tf.Variable(X)

    @tf.function(jit_compile=True)
    def step():
        with tf.GradientTape() as tape:
            y = tf.py_function(cube, [w], tf.TensorSpec([3], tf.float32))
            loss = tf.reduce_sum(tf.sin(y))
        return tape.gradient(loss, w)

    g = np.asarray(step(), np.float64)
    x = X.astype(np.float64)
    eps = 1e-4
    fd = [(np.sum(np.sin((x + e) ** 3)) - np.sum(np.sin((x - e) ** 3))) / (2 * eps)
          for e in np.eye(3) * eps]
    np.testing.assert_allclose(g, fd, rtol=2e-3, atol=1e-3)


def test_stateful_calls_keep_program_order_and_run_when_unused(capsys):
    @tf.function(jit_compile=True)
    def f(x):
        tf.print("first", output_stream=sys.stdout)
        tf.numpy_function(lambda a: print("second", a.sum(), flush=True), [x], None)
        tf.print("third", x[0], output_stream=sys.stdout)
        return x

    f(X)
    assert capsys.readouterr().out == "first\nsecond 1.5\nthird 0.5\n"


def test_numpy_function_op_by_op_and_a_wrong_shape():
    y = tf.numpy_function(lambda a: a * 2, [X], tf.float32)
    np.testing.assert_allclose(np.asarray(y), X * 2)
    f = tf.function(lambda x: tf.numpy_function(lambda a: a[:2], [x],
                                                tf.TensorSpec([3], tf.float32)),
                    jit_compile=True)
    with pytest.raises(InvalidArgumentError, match=r"returned f32\[2\] for result 0, "
                                                   r"expected f32\[3\]"):
        f(X)


def test_an_op_without_hlo_or_callback_form_still_names_the_line():
    f = tf.function(lambda x: tf.unique(x)[0], jit_compile=True)
    with pytest.raises(InvalidArgumentError, match=r"tf.unique has a data-dependent output "
                                                   r"shape .*test_tf_host_functions.py"):
        f(X)
