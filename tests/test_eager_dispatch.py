"""Eager dispatch's short paths give what the general paths give: NumPy-style binary ops on
Arrays and Python numbers (``xlapy.numpy._elementwise._fast_operands``), the one-op cache
(``frontend.core._eager``) and the executable's small-call path
(``CpuExecutable._call_simple``)."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.backends.cpu as cpu
import xlapy.numpy as xnp
from xlapy.frontend.core import Array
from xlapy.hlo import parse_module
from xlapy.numpy import _elementwise as E


def general(monkeypatch, op, x, y):
    """The result through the general promotion path (the short path switched off)."""
    with monkeypatch.context() as m:
        m.setattr(E, "_fast_operands", lambda *a: None)
        return getattr(E, op)(x, y)


VALUES = [1.5, 2, -3, 1e-3, (1 << 24), (1 << 24) + 1, 1e30, True]


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "true_divide", "power",
                                "maximum"])
@pytest.mark.parametrize("weak", [False, True])
def test_array_and_python_number(monkeypatch, op, weak):
    x = Array(np.linspace(-2, 3, 7).astype(np.float32), weak_type=weak)
    for v in VALUES:
        for a, b in ((x, v), (v, x)):
            got, want = getattr(E, op)(a, b), general(monkeypatch, op, a, b)
            assert got.dtype == want.dtype and got.weak_type == want.weak_type
            assert got.shape == want.shape
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.int32, np.int32),
                                    (np.float32, np.int32), (np.int8, np.int32),
                                    (np.float16, np.float32)])
def test_two_arrays(monkeypatch, dtypes):
    x = Array(np.arange(6).astype(dtypes[0]))
    y = Array((np.arange(6) % 4 + 1).astype(dtypes[1]))
    for op in ("add", "multiply", "true_divide"):
        for a, b in ((x, y), (y, x), (Array(np.asarray(x._value), weak_type=True), y)):
            got, want = getattr(E, op)(a, b), general(monkeypatch, op, a, b)
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_integer_arrays_and_python_numbers_take_the_general_path():
    x = xnp.arange(5, dtype=np.int32)
    assert (x + 1.5).dtype == np.float32
    np.testing.assert_array_equal(np.asarray(x * 3), np.arange(5) * 3)


def test_short_path_under_a_tape_and_in_jit():
    w = xlapy.Variable(xnp.ones(4))
    with xlapy.GradientTape() as tape:
        loss = xnp.sum((w + 1.0) * 2.0)
    (g,) = tape.gradient(loss, [w])
    np.testing.assert_array_equal(np.asarray(g), np.full(4, 2.0, np.float32))
    f = xlapy.jit(lambda a: a * 2.0 + 1)
    np.testing.assert_array_equal(np.asarray(f(np.ones(3, np.float32))), np.full(3, 3.0))


def test_eager_cache_keys_on_weak_types():
    x = xnp.ones(3)
    weak = Array(np.ones(3, np.float32), weak_type=True)
    assert not (x + x).weak_type
    assert (weak + weak).weak_type
    assert not (x + x).weak_type


MODULE = """
HloModule small
ENTRY main {
  a = f32[4,3]{1,0} parameter(0)
  b = f32[4,3]{1,0} parameter(1)
  ROOT s = f32[4,3]{1,0} add(a, b)
}
"""


def test_small_call_path_and_its_fallbacks():
    exe = cpu.CpuBackend(use_disk_cache=False).compile(parse_module(MODULE))
    assert exe._simple is not None
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    b = np.ones((4, 3), np.float32)
    first = exe.execute([a, b])
    second = exe.execute([a, b])
    assert first is not second
    np.testing.assert_array_equal(first, a + 1)
    # a transposed (not C-contiguous) argument and a Python list take the general path
    at = np.ascontiguousarray(a.T).T
    np.testing.assert_array_equal(exe.execute([at, b.tolist()]), a + 1)
    with pytest.raises(xlapy.errors.InvalidArgumentError):
        exe.execute([a.astype(np.float64), b])
