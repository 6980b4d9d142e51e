"""``pmap`` inside ``jit`` and ``pmap`` inside ``pmap`` (both allowed in JAX): the mapped
function runs as ``vmap`` with the same axis name in the enclosing program, so the answers are
XLA's own pmap outputs (``tests/data/collectives/pmap_*.npz``), the top-level pmap's, and
NumPy's; gradients compose."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy import lax
from xlapy.config import debug_options
from xlapy.errors import InvalidArgumentError

from test_pmap import AXIS, CASES, DATA


@pytest.fixture(params=["interpreter", "cpu"])
def backend(request):
    with debug_options(xla_force_host_platform_device_count=4):
        yield request.param


@pytest.mark.parametrize("name", sorted(CASES))
def test_pmap_inside_jit_matches_xla(name):
    data = np.load(DATA / f"{name}.npz")
    xs = np.stack([data[f"d{d}_arg0"][0] for d in range(4)])
    expected = np.stack([data[f"d{d}_out0"][0] for d in range(4)])
    calls = []

    def outer(v):
        calls.append(1)
        return xlapy.pmap(CASES[name], AXIS)(v) * 1      # the pmap's value is used in the jit
    f = xlapy.jit(outer)
    for _ in range(2):
        got = np.asarray(f(xs))
    assert len(calls) == 1 and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_pmap_inside_jit_keeps_in_axes_out_axes_and_pytrees(backend):
    def body(tree, scale):
        return {"s": lax.psum(tree["a"] * scale, AXIS), "b": tree["b"] + 1,
                "i": lax.axis_index(AXIS)}
    pf = xlapy.pmap(body, AXIS, in_axes=({"a": 0, "b": 1}, None),
                    out_axes={"s": None, "b": 1, "i": 0}, backend=backend)
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    b = np.arange(8, dtype=np.int32).reshape(2, 4)
    top = pf({"a": a, "b": b}, np.float32(2))
    inside = xlapy.jit(lambda t, s: pf(t, s))({"a": a, "b": b}, np.float32(2))
    for k in ("s", "b", "i"):
        assert np.asarray(inside[k]).shape == np.asarray(top[k]).shape
        np.testing.assert_array_equal(np.asarray(inside[k]), np.asarray(top[k]))
    np.testing.assert_allclose(np.asarray(inside["s"]), 2 * a.sum(0))
    np.testing.assert_array_equal(np.asarray(inside["i"]), np.arange(4))


def test_gradient_of_pmap_inside_jit_equals_the_top_level_one(backend):
    xs = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    pf = xlapy.pmap(lambda v: lax.psum(v * v, AXIS) * v, AXIS, backend=backend)

    def loss(v):
        return pf(v).sum()
    want = np.asarray(xlapy.grad(loss)(xs))
    got = np.asarray(xlapy.jit(xlapy.grad(loss))(xs))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # d/dx_k of sum_j S x_j with S = sum_d x_d^2 (per column): 2 x_k sum_j x_j + S
    s = (xs * xs).sum(0)
    np.testing.assert_allclose(got, 2 * xs * xs.sum(0) + s, rtol=1e-5, atol=1e-6)


def test_nested_pmap_with_collectives_over_both_axes(backend):
    """The outer pmap runs on 2 devices; the inner maps over 3 slices of each device's
    block; psum over the inner axis, the outer axis and both."""
    ys = np.arange(12, dtype=np.float32).reshape(2, 3, 2)

    def outer(x):                                   # x: (3, 2), this device's block
        inner = xlapy.pmap(lambda y: (lax.psum(y, "j"), lax.psum(y, "i"),
                                      lax.psum(y, ("i", "j")), lax.axis_index("j")), "j")
        return inner(x)
    with debug_options(xla_force_host_platform_device_count=2):
        by_j, by_i, by_both, jid = xlapy.pmap(outer, "i", backend=backend)(ys)
    np.testing.assert_allclose(by_j, np.broadcast_to(ys.sum(1, keepdims=True), ys.shape))
    np.testing.assert_allclose(by_i, np.broadcast_to(ys.sum(0, keepdims=True), ys.shape))
    np.testing.assert_allclose(by_both, np.broadcast_to(ys.sum((0, 1), keepdims=True),
                                                        ys.shape))
    np.testing.assert_array_equal(jid, np.broadcast_to(np.arange(3), (2, 3)))


def test_pmap_inside_jit_still_checks_its_arguments():
    xs = np.ones((4, 3), np.float32)
    with pytest.raises(InvalidArgumentError, match="in_axes has 1 entries for 2 arguments"):
        xlapy.jit(lambda v: xlapy.pmap(lambda a, b: a, AXIS, in_axes=(0,))(v, v))(xs)
    with pytest.raises(InvalidArgumentError, match="unbound axis name 'k'"):
        xlapy.jit(lambda v: xlapy.pmap(lambda u: lax.psum(u, "k"), AXIS)(v))(xs)
