"""``xlapy.pmap`` on N devices, against XLA's own pmap outputs, ``vmap(axis_name=...)``,
Python loops and finite differences.

``tests/data/collectives/pmap_*.npz`` hold JAX's ``pmap`` of the functions below on 4 CPU
devices (made by ``tests/make_collective_cases.py``): each device's argument and XLA's
result. The same functions run through ``xlapy.pmap`` on the interpreter and on 4 CPU
devices (``--xla_force_host_platform_device_count=4``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.config import debug_options
from xlapy.errors import InvalidArgumentError, ShapeError

DATA = Path(__file__).parent / "data" / "collectives"
AXIS = "i"

# The functions of make_collective_cases.pmap_cases, written with xlapy.lax.
CASES = {
    "pmap_psum": lambda v: lax.psum(v, AXIS),
    "pmap_pmean": lambda v: lax.pmean(v, AXIS),
    "pmap_pmax": lambda v: lax.pmax(v, AXIS),
    "pmap_pmin_int": lambda v: lax.pmin(lax.convert_element_type(v, np.int32), AXIS),
    "pmap_all_gather": lambda v: lax.all_gather(v, AXIS),
    "pmap_all_gather_tiled": lambda v: lax.all_gather(v, AXIS, tiled=True),
    "pmap_psum_scatter": lambda v: lax.psum_scatter(v, AXIS, tiled=True),
    "pmap_ppermute_ring": lambda v: lax.ppermute(v, AXIS, [(k, (k + 1) % 4) for k in range(4)]),
    "pmap_ppermute_partial": lambda v: lax.ppermute(v, AXIS, [(0, 2), (3, 1)]),
    "pmap_all_to_all": lambda v: lax.all_to_all(v, AXIS, 0, 0, tiled=True),
    "pmap_axis_index": lambda v: v * lax.convert_element_type(lax.axis_index(AXIS), v.dtype),
    "pmap_psum_twice": lambda v: lax.psum(v * lax.psum(v, AXIS), AXIS),
}


@pytest.fixture(params=["interpreter", "cpu"])
def backend(request):
    with debug_options(xla_force_host_platform_device_count=4):
        yield request.param


def _pm(fn, backend, **kw):
    return xlapy.pmap(fn, axis_name=AXIS, backend=backend, **kw)


@pytest.mark.parametrize("name", sorted(CASES))
def test_pmap_matches_xla(name, backend):
    data = np.load(DATA / f"{name}.npz")
    # JAX's per-device module sees [1, ...] blocks; pmap's function sees one device's slice.
    xs = np.stack([data[f"d{d}_arg0"][0] for d in range(4)])
    got = np.asarray(_pm(CASES[name], backend)(xs))
    expected = np.stack([data[f"d{d}_out0"][0] for d in range(4)])
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    via_vmap = xlapy.vmap(CASES[name], axis_name=AXIS)(xs)
    np.testing.assert_allclose(np.asarray(via_vmap), expected, rtol=1e-6, atol=1e-6)


def test_one_compile_per_signature_and_pytrees(backend):
    calls = []

    def f(tree, scale):
        calls.append(1)
        return {"s": lax.psum(tree["a"] * scale, AXIS), "b": tree["b"] + 1}

    pf = _pm(f, backend, in_axes=({"a": 0, "b": 1}, None), out_axes={"s": 0, "b": 1})
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    b = np.arange(8, dtype=np.int32).reshape(2, 4)
    for _ in range(2):
        out = pf({"a": a, "b": b}, np.float32(2))
    assert len(calls) == 1                          # traced once
    np.testing.assert_allclose(out["s"], np.broadcast_to(2 * a.sum(0), (4, 3)))
    np.testing.assert_array_equal(out["b"], b + 1)
    module = pf._cache[next(iter(pf._cache))].module
    assert module.attributes["replica_count"] == 4
    assert "all-reduce" in module.to_text() and "replica_groups={{0,1,2,3}}" in module.to_text()


def _fd(f, x, eps=1e-3):
    g = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        g[idx] = (float(f(hi)) - float(f(lo))) / (2 * eps)
    return g


GRAD_CASES = {
    "psum": lambda v: lax.psum(v, AXIS),
    "pmean": lambda v: lax.pmean(v, AXIS),
    "pmax": lambda v: lax.pmax(v, AXIS),
    "pmin": lambda v: lax.pmin(v, AXIS),
    "all_gather": lambda v: lax.all_gather(v, AXIS),
    "psum_scatter": lambda v: lax.psum_scatter(v, AXIS, tiled=True),
    "ppermute": lambda v: lax.ppermute(v, AXIS, [(0, 1), (1, 3), (3, 0)]),
    "all_to_all": lambda v: lax.all_to_all(v, AXIS, 0, 0, tiled=True),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_collective_gradients_match_finite_differences(name):
    """grad of pmap (a pmap of the vjp), grad of the vmap form (the batching rules) and
    finite differences agree; so does pmap of the per-device gradient summed over devices."""
    op = GRAD_CASES[name]
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((4, 8)).astype(np.float32)

    def per_device(v):
        return (lax.sin(op(v * 1.3)) ** 2).sum()

    def total_pmap(x):
        return xnp.sum(xlapy.pmap(per_device, axis_name=AXIS, backend="interpreter")(x))

    def total_vmap(x):
        return xnp.sum(xlapy.vmap(per_device, axis_name=AXIS)(x))

    g_pmap = np.asarray(xlapy.grad(total_pmap)(xs))
    g_vmap = np.asarray(xlapy.grad(total_vmap)(xs))
    fd = _fd(lambda x: total_vmap(x.astype(np.float32)), xs.astype(np.float64))
    np.testing.assert_allclose(g_vmap, fd, rtol=2e-2, atol=2e-3)
    np.testing.assert_allclose(g_pmap, g_vmap, rtol=1e-4, atol=1e-5)
    # The gradient inside pmap: each device seeds its own output with 1, and the
    # collectives' transposes carry every device's contribution back: the total's gradient.
    inside = xlapy.pmap(xlapy.grad(per_device), axis_name=AXIS, backend="interpreter")(xs)
    np.testing.assert_allclose(np.asarray(inside), g_vmap, rtol=1e-4, atol=1e-5)


def test_data_parallel_step_matches_one_device(backend):
    """pmap(grad) + pmean over 4 shards equals the gradient of the mean loss on one device."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.standard_normal((16, 3)).astype(np.float32)

    def loss(w, x, y):
        return xnp.mean((xnp.tanh(x @ w) - y) ** 2)

    def step(w, x, y):
        return lax.pmean(xlapy.grad(loss)(w, x, y), AXIS)

    shards = _pm(step, backend, in_axes=(None, 0, 0))(w, x.reshape(4, 4, 6), y.reshape(4, 4, 3))
    whole = xlapy.grad(loss)(w, x, y)
    for d in range(4):
        np.testing.assert_allclose(shards[d], whole, rtol=1e-5, atol=1e-6)


def test_pmap_with_vmap_inside_and_control_flow(backend):
    xs = np.arange(24, dtype=np.float32).reshape(4, 2, 3)

    def f(v):                                   # v: [2, 3] on each device
        inner = xlapy.vmap(lambda r: lax.psum(r, AXIS) + lax.psum(r, "j"), axis_name="j")(v)
        looped = lax.fori_loop(0, 2, lambda k, c: c + lax.pmax(c, AXIS), v)
        # A collective in a branch needs every device in that branch: a common predicate.
        summed = lax.cond(lax.psum(v.sum(), AXIS) > 0, lambda u: lax.psum(u, AXIS), lambda u: -u, v)
        picked = lax.cond(lax.axis_index(AXIS) > 1, lambda u: u * 2.0, lambda u: -u, v)
        return inner, looped, summed, picked

    inner, looped, summed, picked = _pm(f, backend)(xs)
    total = xs.sum(0)
    np.testing.assert_allclose(inner, total[None] + xs.sum(1, keepdims=True))
    ref = xs.copy()
    for _ in range(2):
        ref = ref + ref.max(0)
    np.testing.assert_allclose(looped, ref)
    np.testing.assert_allclose(summed, np.broadcast_to(total, xs.shape))
    np.testing.assert_allclose(picked, np.stack([-xs[0], -xs[1], 2 * xs[2], 2 * xs[3]]))


def test_pmap_errors():
    xs = np.ones((4, 3), np.float32)
    with pytest.raises(InvalidArgumentError, match="unbound axis name 'i'"):
        lax.psum(xnp.ones(3), "i")
    with pytest.raises(InvalidArgumentError, match="device_count=4"):
        xlapy.pmap(lambda v: v, "i", backend="cpu")(xs)
    with pytest.raises(ShapeError, match="one size"):
        xlapy.pmap(lambda a, b: a, "i", backend="interpreter")(xs, np.ones((3, 3)))
    with pytest.raises(InvalidArgumentError, match="unbound axis name 'k'"):
        xlapy.pmap(lambda v: lax.psum(v, "k"), "i", backend="interpreter")(xs)
    with pytest.raises(InvalidArgumentError, match="distinct"):
        xlapy.pmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 1)]), "i",
                   backend="interpreter")(xs)
    with pytest.raises(InvalidArgumentError, match="first 4 devices"):
        xlapy.pmap(lambda v: v, "i", devices=[0, 2, 1, 3], backend="interpreter")(xs)


def test_out_axes_none_and_its_gradient():
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    f = xlapy.pmap(lambda v: (lax.psum(v * v, AXIS), v + 1), AXIS, out_axes=(None, 0),
                   backend="interpreter")
    total, plus = f(xs)
    np.testing.assert_allclose(total, (xs * xs).sum(0))
    np.testing.assert_allclose(plus, xs + 1)
    g = xlapy.grad(lambda x: xnp.sum(f(x)[0]))(xs)
    np.testing.assert_allclose(g, 2 * xs, rtol=1e-6)


# Each entry makes the op from a ``lax`` module: xlapy's here, JAX's in the subprocess.
JAX_GRAD_OPS = {
    "psum": lambda L: lambda v: L.psum(v, "i"),
    "all_gather": lambda L: lambda v: L.all_gather(v, "i"),
    "psum_scatter": lambda L: lambda v: L.psum_scatter(v, "i", tiled=True),
    "ppermute": lambda L: lambda v: L.ppermute(v, "i", [(0, 1), (1, 3), (3, 0)]),
    "all_to_all": lambda L: lambda v: L.all_to_all(v, "i", 0, 0, tiled=True),
}
_JAX_GRADS = """
import os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import jax, jax.numpy as jnp, numpy as np
sys.path.insert(0, sys.argv[3])
from test_pmap import JAX_GRAD_OPS
xs = np.load(sys.argv[1])["xs"]
out = {}
for name, make in JAX_GRAD_OPS.items():
    op = make(jax.lax)
    per = lambda v, op=op: (jnp.sin(op(v * 1.3)) ** 2).sum()
    out[name + "_outer"] = jax.grad(lambda x: jax.pmap(per, "i")(x).sum())(xs)
    out[name + "_inside"] = jax.pmap(jax.grad(per), "i")(xs)
np.savez(sys.argv[2], **{k: np.asarray(v) for k, v in out.items()})
"""


def test_gradients_match_jax_pmap(tmp_path):
    """grad of pmap and grad inside pmap against jax.pmap on 4 CPU devices (a subprocess:
    JAX reads the device count when it starts). JAX does not differentiate pmax/pmin."""
    pytest.importorskip("jax")
    import subprocess
    import sys
    xs = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    np.savez(tmp_path / "in.npz", xs=xs)
    script = tmp_path / "jax_grads.py"
    script.write_text(_JAX_GRADS)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "in.npz"),
                           str(tmp_path / "out.npz"), str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = np.load(tmp_path / "out.npz")
    for name, make in JAX_GRAD_OPS.items():
        def per(v, op=make(lax)):
            return (lax.sin(op(v * 1.3)) ** 2).sum()
        outer = xlapy.grad(lambda x: xnp.sum(xlapy.pmap(per, AXIS, backend="interpreter")(x)))(xs)
        inside = xlapy.pmap(xlapy.grad(per), AXIS, backend="interpreter")(xs)
        np.testing.assert_allclose(outer, theirs[name + "_outer"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(inside, theirs[name + "_inside"], rtol=1e-5, atol=1e-6)
