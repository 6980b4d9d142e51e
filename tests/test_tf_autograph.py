"""AutoGraph's common forms: Python ``if``/``while`` on tensors in ``tf.function``."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy.tf as tf
from xlapy.tf.autograph import AutoGraphError, convert

X = np.array([0.5, -1.0, 2.0], np.float32)


def _branchy(x, n):
    y = x
    if tf.reduce_sum(x) > 0:
        y = x * 2
        scale = 1.0
    else:
        y = -x
        scale = 2.0
    i = 0
    while i < n:                      # a tensor bound when n is traced
        y = y + 1.0
        i += 1
    if scale > 1.5:                   # a tensor after the converted if
        y = y * 0.5
    return y * scale


def _reference(x, n):
    if x.sum() > 0:
        y, scale = x * 2, 1.0
    else:
        y, scale = -x, 2.0
    y = y + n
    return (y * 0.5 if scale > 1.5 else y) * scale


@pytest.mark.parametrize("jit_compile", [True, None])
def test_if_and_while_on_tensors_compile(jit_compile):
    f = tf.function(_branchy, jit_compile=jit_compile)
    for x, n in ((X, 3), (-X - 1, 2), (X, 0)):
        np.testing.assert_allclose(np.asarray(f(x, n)), _reference(x, n), rtol=1e-6)
    if jit_compile:
        assert f.cache_info().misses == 1          # n is traced: one program for every n


def test_python_conditions_keep_python_semantics():
    def f(x, flag, times):
        if flag:
            x = x + 1.0
        while times > 0:                # a Python int: unrolled, as written
            x = x * 2.0
            times -= 1
        return x
    g = convert(f)
    np.testing.assert_allclose(np.asarray(g(X, True, 2)), (X + 1) * 4)
    np.testing.assert_allclose(np.asarray(g(X, False, 0)), X)


def test_unconvertible_forms_name_the_line():
    def early_return(x):
        if tf.reduce_sum(x) > 0:
            return x
        return -x

    def one_branch(x):
        if tf.reduce_sum(x) > 0:
            w = x
        return w

    with pytest.raises(AutoGraphError, match=r"contains 'return' \(at .*test_tf_autograph.py"
                                             r":\d+: if tf.reduce_sum\(x\) > 0:\)"):
        tf.function(early_return, jit_compile=True)(X)
    np.testing.assert_allclose(np.asarray(convert(early_return)(X)), X)   # eager: Python
    with pytest.raises(AutoGraphError, match="variable 'w' must be defined before the if"):
        tf.function(one_branch, jit_compile=True)(X)


def test_functions_without_statements_or_source_are_left_alone():
    assert convert(lambda x: x) is None
    assert convert(np.sum) is None

    def plain(x):
        return x * 2
    assert convert(plain) is None
