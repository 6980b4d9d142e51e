"""Donated buffers are reused in place when the caller hands them over and nothing else
can see them; otherwise they are copied. Donated xlapy Arrays are deleted after the call;
assigned Variables get new storage (from the output pool) and their old array is never
written."""
from __future__ import annotations

import logging
import tracemalloc

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.errors import InvalidArgumentError
from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu

DONATE = """
HloModule donate, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY main {
  p = f32[8] parameter(0)
  one = f32[] constant(1)
  b = f32[8] broadcast(one), dimensions={}
  ROOT a = f32[8] add(p, b)
}
"""

DONATE_TWO = """
HloModule donate2, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY main {
  p = f32[8] parameter(0)
  q = f32[8] parameter(1)
  s = f32[8] add(p, q)
  ROOT t = (f32[8], f32[8]) tuple(s, q)
}
"""


@pytest.fixture(scope="module")
def exe():
    return cpu.CpuBackend(use_disk_cache=False).compile(parse_module(DONATE))


def addr(a) -> int:
    return np.asarray(a).__array_interface__["data"][0]


# ------------------------------------------------------------------ the executable
def test_owned_argument_is_written_in_place(exe):
    assert exe.donatable_parameters() == (0,)
    x = np.arange(8, dtype=np.float32)
    out = exe.execute([x], owned={0})
    np.testing.assert_array_equal(out, np.arange(8) + 1)
    assert np.shares_memory(out, x)


def test_argument_not_handed_over_is_copied(exe):
    x = np.arange(8, dtype=np.float32)
    out = exe.execute([x])
    np.testing.assert_array_equal(out, np.arange(8) + 1)
    np.testing.assert_array_equal(x, np.arange(8))
    assert not np.shares_memory(out, x)


def misaligned() -> np.ndarray:
    raw = np.zeros(8 * 4 + 1, np.uint8)
    return raw[1:].view(np.float32)


@pytest.mark.parametrize("kind, reason", [
    ("read-only", "writeable"), ("strided", "converted"), ("misaligned", "aligned")])
def test_unusable_owned_arrays_are_copied(exe, caplog, kind, reason):
    if kind == "read-only":
        x = np.arange(8, dtype=np.float32)
        x.flags.writeable = False
    elif kind == "strided":
        x = np.arange(16, dtype=np.float32)[::2]
    else:
        x = misaligned()
        x[:] = np.arange(8)
    before = x.copy()
    with caplog.at_level(logging.DEBUG, logger="xlapy.cpu"):
        out = exe.execute([x], owned={0})
    np.testing.assert_array_equal(out, before + 1)
    np.testing.assert_array_equal(x, before)
    assert any("donated parameter copied" in r.message and reason in r.message
               for r in caplog.records)


def test_owned_argument_overlapping_another_is_copied(caplog):
    exe2 = cpu.CpuBackend(use_disk_cache=False).compile(parse_module(DONATE_TWO))
    x = np.arange(8, dtype=np.float32)
    with caplog.at_level(logging.DEBUG, logger="xlapy.cpu"):
        s, q = exe2.execute([x, x], owned={0})
    np.testing.assert_array_equal(s, 2 * np.arange(8))
    np.testing.assert_array_equal(q, np.arange(8))
    np.testing.assert_array_equal(x, np.arange(8))
    assert any("argument 1 overlaps it" in r.message for r in caplog.records)


def test_interpreter_accepts_and_ignores_owned():
    from xlapy.client import get_backend
    exe_i = get_backend("interpreter").compile(parse_module(DONATE))
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(exe_i.execute([x], owned={0}), np.arange(8) + 1)
    np.testing.assert_array_equal(x, np.arange(8))


# ------------------------------------------------------------------ donate_argnums
def fresh(n: int = 8):
    """An xlapy Array whose buffer nothing else references."""
    return xnp.arange(n, dtype=np.float32) * 1.0


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_donated_array_is_deleted(backend):
    f = xlapy.jit(lambda x, y: (x + y, y * 2), donate_argnums=0, backend=backend)
    x, y = fresh(), xnp.ones(8)
    where = addr(x)
    out, _ = f(x, y)
    np.testing.assert_array_equal(np.asarray(out), np.arange(8) + 1)
    if backend == "cpu":
        assert addr(out) == where, "the output lives in the donated buffer"
    for use in (lambda: np.asarray(x), lambda: x + 1, lambda: f(x, y), lambda: float(x[0]),
                lambda: repr(x)):
        with pytest.raises(InvalidArgumentError, match="Array has been deleted"):
            use()
    np.testing.assert_array_equal(np.asarray(y), 1.0)        # not donated: untouched


def test_donation_in_a_loop_reuses_one_buffer():
    f = xlapy.jit(lambda x, y: x * 0.5 + y, donate_argnums=0)
    x, y = fresh(1000), xnp.ones(1000)
    where = addr(x)
    for _ in range(5):
        x = f(x, y)
        assert addr(x) == where
    expected = np.arange(1000, dtype=np.float32)
    for _ in range(5):
        expected = expected * 0.5 + 1
    np.testing.assert_allclose(np.asarray(x), expected, rtol=1e-6)


def test_numpy_argument_is_copied_not_deleted():
    f = xlapy.jit(lambda x, y: x + y, donate_argnums=0)
    x = np.arange(8, dtype=np.float32)
    out = f(x, xnp.ones(8))
    np.testing.assert_array_equal(x, np.arange(8))
    np.testing.assert_array_equal(np.asarray(out), np.arange(8) + 1)
    np.testing.assert_array_equal(np.asarray(f(x, xnp.ones(8))), np.arange(8) + 1)


def test_shared_buffer_is_copied_but_the_array_still_deleted():
    f = xlapy.jit(lambda x: x + 1, donate_argnums=0)
    x = fresh()
    view = np.asarray(x)                  # another reference to the same memory
    out = f(x)
    np.testing.assert_array_equal(view, np.arange(8))
    assert not np.shares_memory(view, np.asarray(out))
    with pytest.raises(InvalidArgumentError, match="deleted"):
        np.asarray(x)


def test_same_array_passed_twice():
    f = xlapy.jit(lambda x, y: x + y, donate_argnums=0)
    x = fresh()
    np.testing.assert_array_equal(np.asarray(f(x, x)), 2 * np.arange(8))


def test_no_donation_under_a_gradient_tape():
    f = xlapy.jit(lambda x: xnp.sum(x * x), donate_argnums=0)
    x = fresh(4)
    with xlapy.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), 2 * np.arange(4))
    np.testing.assert_array_equal(np.asarray(x), np.arange(4))


# ------------------------------------------------------------------ Variables
def test_assigned_variable_array_is_never_written():
    """The program writes a copy; the Variable takes it when the call completed (an
    interrupted call must leave the old value whole: test_interrupts.py)."""
    w = xlapy.Variable(xnp.zeros(1000))

    @xlapy.jit
    def step(d):
        w.assign_add(d)
        return xnp.sum(d)

    d = np.ones(1000, np.float32)
    step(d)
    for k in range(2, 5):
        before = w._value._value
        step(d)
        assert w._value._value is not before
        np.testing.assert_array_equal(before, k - 1.0)
    np.testing.assert_array_equal(w.numpy(), 4.0)


def test_values_read_before_an_assign_keep_their_value():
    w = xlapy.Variable(xnp.zeros(4))

    @xlapy.jit
    def step():
        w.assign_add(xnp.ones(4))
        return w.read_value()

    step()
    read, view = w.value(), np.asarray(w)
    step()
    np.testing.assert_array_equal(np.asarray(read), 1.0)
    np.testing.assert_array_equal(view, 1.0)
    np.testing.assert_array_equal(w.numpy(), 2.0)
    del read, view
    out = step()
    np.testing.assert_array_equal(np.asarray(out), 3.0)
    np.testing.assert_array_equal(w.numpy(), 3.0)


def test_variable_step_allocates_no_copy_of_the_weights():
    w = xlapy.Variable(xnp.zeros(1_000_000))

    @xlapy.jit
    def step(d):
        w.assign_add(d)
        return xnp.sum(d)

    d = np.ones(1_000_000, np.float32)
    step(d), step(d)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        step(d)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, f"a call allocated {peak} bytes (the weights are 4 MB)"
    np.testing.assert_array_equal(w.numpy()[:3], 3.0)
