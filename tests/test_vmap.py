"""``xlapy.vmap``: in_axes/out_axes (pytrees, None, negative), nested vmap, axis_size, and
composition with ``grad`` and ``jit`` both ways, checked against Python loops, finite
differences and ``jax.vmap``."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.errors import InvalidArgumentError, ShapeError

rng = np.random.default_rng(1)
X = rng.standard_normal((4, 3, 5)).astype(np.float32)
W = rng.standard_normal((5, 5)).astype(np.float32)


def loss(a):
    """A scalar function of one example with matmul, reduction and a scan."""
    h = xnp.tanh(a @ W)
    carry, _ = lax.scan(lambda c, r: (c * 0.5 + r, None), xnp.zeros(5), h)
    return (carry ** 2).sum() + h.max()


def _fd_grad(f, x, eps=1e-3):
    g = np.zeros_like(x, dtype=np.float64)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        g[idx] = (float(f(hi)) - float(f(lo))) / (2 * eps)
    return g


def test_vmap_matches_a_python_loop():
    got = xlapy.vmap(loss)(X)
    expected = np.stack([np.asarray(loss(xnp.asarray(x))) for x in X])
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_in_axes_out_axes_pytrees_none_and_negative():
    params = {"w": W, "b": X[0, 0]}

    def f(p, batch):
        return {"y": batch["x"] @ p["w"] + p["b"], "n": batch["x"].sum()}

    batch = {"x": np.moveaxis(X, 0, -1)}           # batch axis last
    out = xlapy.vmap(f, in_axes=(None, {"x": -1}), out_axes={"y": 1, "n": 0})(params, batch)
    ref_y = np.stack([X[k] @ W + X[0, 0] for k in range(4)], axis=1)
    np.testing.assert_allclose(out["y"], ref_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["n"], X.sum(axis=(1, 2)), rtol=1e-5)
    # A list of in_axes, a tuple output, keyword arguments mapped along axis 0.
    a, b = xlapy.vmap(lambda u, v, s=None: (u * s, v), in_axes=[0, None])(X, W, s=X)
    np.testing.assert_allclose(a, X * X, rtol=1e-6)
    np.testing.assert_allclose(b, np.broadcast_to(W, (4,) + W.shape))


def test_nested_vmap_and_axis_size():
    outer = xlapy.vmap(xlapy.vmap(lambda u, v: u * v + 1.0, in_axes=(0, None)),
                       in_axes=(None, 0))(X[0, 0], X[:, 1, 1])
    np.testing.assert_allclose(outer, X[:, 1, 1][:, None] * X[0, 0][None, :] + 1.0, rtol=1e-6)
    twice = xlapy.vmap(xlapy.vmap(lambda r: (r ** 2).sum()))(X)
    np.testing.assert_allclose(twice, (X ** 2).sum(-1), rtol=1e-5)
    ones = xlapy.vmap(lambda: xnp.arange(3.0), axis_size=2)()
    np.testing.assert_array_equal(ones, np.tile(np.arange(3.0, dtype=np.float32), (2, 1)))
    const = xlapy.vmap(lambda u: 7.0, in_axes=None, axis_size=3)(X)
    np.testing.assert_array_equal(const, np.full(3, 7.0, np.float32))


def test_grad_of_vmap_and_vmap_of_grad_agree_with_finite_differences():
    per_example = xlapy.vmap(xlapy.grad(loss))(X)
    of_sum = xlapy.grad(lambda xs: xlapy.vmap(loss)(xs).sum())(X)
    np.testing.assert_allclose(per_example, of_sum, rtol=1e-4, atol=1e-5)
    fd = _fd_grad(lambda x: loss(xnp.asarray(x.astype(np.float32))), X[2].astype(np.float64))
    np.testing.assert_allclose(per_example[2], fd, rtol=2e-2, atol=2e-3)


def test_jit_of_vmap_and_vmap_of_jit():
    expected = xlapy.vmap(loss)(X)
    np.testing.assert_allclose(xlapy.jit(xlapy.vmap(loss))(X), expected, rtol=1e-5)
    np.testing.assert_allclose(xlapy.vmap(xlapy.jit(loss))(X), expected, rtol=1e-5)
    g = xlapy.jit(xlapy.vmap(xlapy.grad(loss)))(X)
    np.testing.assert_allclose(g, xlapy.vmap(xlapy.grad(loss))(X), rtol=1e-4, atol=1e-5)
    gg = xlapy.grad(lambda xs: xlapy.jit(xlapy.vmap(loss))(xs).sum())(X)
    np.testing.assert_allclose(gg, g, rtol=1e-4, atol=1e-5)


def test_per_example_gradients_through_control_flow():
    def f(w, x):
        y = lax.cond(x.sum() > 0, lambda v: v * w, lambda v: v - w, x)
        n = lax.fori_loop(0, 3, lambda i, c: c * w, y)
        return (n ** 2).sum()
    w = np.float32(0.7)
    xs = X[:, 0]
    grads = xlapy.vmap(xlapy.grad(f), in_axes=(None, 0))(w, xs)
    for k in range(4):
        fd = (float(f(w + 1e-3, xnp.asarray(xs[k]))) - float(f(w - 1e-3, xnp.asarray(xs[k])))) \
            / 2e-3
        np.testing.assert_allclose(grads[k], fd, rtol=1e-2)


def test_while_loop_with_a_batched_predicate():
    def collatz_steps(n):
        def body(c):
            k, steps = c
            return lax.select(k % 2 == 0, k // 2, 3 * k + 1), steps + 1
        return lax.while_loop(lambda c: c[0] != 1, body, (n, 0))[1]
    ns = np.array([1, 6, 7, 27], np.int32)
    expected = [int(collatz_steps(xnp.asarray(n))) for n in ns]
    np.testing.assert_array_equal(xlapy.vmap(collatz_steps)(ns), expected)
    np.testing.assert_array_equal(xlapy.jit(xlapy.vmap(collatz_steps))(ns), expected)


def test_matches_jax_vmap():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def make(np_):
        def f(a, b):
            return np_.tanh(a @ b).sum(axis=0) + np_.max(a, axis=1).mean()
        return f
    ours = xlapy.vmap(make(xnp), in_axes=(0, None), out_axes=-1)(X, W)
    theirs = jax.vmap(make(jnp), in_axes=(0, None), out_axes=-1)(X, W)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-5, atol=1e-5)


def test_errors_name_the_problem():
    with pytest.raises(ShapeError, match="different sizes"):
        xlapy.vmap(lambda a, b: a + b)(X, W)
    with pytest.raises(InvalidArgumentError, match="axis_size"):
        xlapy.vmap(lambda a: a, in_axes=None)(X)
    with pytest.raises(InvalidArgumentError, match="out of range"):
        xlapy.vmap(lambda a: a, in_axes=3)(X)
    with pytest.raises(InvalidArgumentError, match="out_axes is None"):
        xlapy.vmap(lambda a: a, out_axes=None)(X)
    with pytest.raises(InvalidArgumentError, match="does not match the structure"):
        xlapy.vmap(lambda a: a, in_axes=({"x": 0},))(X)
    with pytest.raises(InvalidArgumentError, match="unbound axis name 'k'"):
        xlapy.vmap(lambda a: lax.psum(a, "k"), axis_name="i")(X)
    with pytest.raises(InvalidArgumentError, match="batched by vmap.*lax.cond"):
        xlapy.vmap(lambda a: a if a.sum() > 0 else -a)(X)
    leaked = []
    xlapy.vmap(lambda a: leaked.append(a) or a)(X)
    with pytest.raises(InvalidArgumentError):
        xnp.sin(leaked[0])


def test_variables_and_random_keys_under_vmap():
    w = xlapy.Variable(np.full(5, 2.0, np.float32))
    xs = X[:, 0]
    np.testing.assert_allclose(xlapy.vmap(lambda x: x * w)(xs), xs * 2.0)
    np.testing.assert_allclose(xlapy.jit(xlapy.vmap(lambda x: x * w))(xs), xs * 2.0)
    with pytest.raises(InvalidArgumentError, match="assigned inside vmap"):
        xlapy.vmap(lambda x: w.assign(x))(xs)
    keys = xlapy.random.split(xlapy.random.PRNGKey(0), 3)
    batched = xlapy.vmap(lambda k: xlapy.random.normal(k, (4,)))(keys)
    np.testing.assert_array_equal(batched, np.stack([xlapy.random.normal(k, (4,))
                                                     for k in keys]))


def test_variable_read_in_control_flow_under_vmap():
    w = xlapy.Variable(np.float32(3.0))

    def f(x):
        return lax.cond(x.sum() > 0, lambda v: v * w, lambda v: v - w, x)
    xs = X[:, 0]
    expected = np.stack([x * 3.0 if x.sum() > 0 else x - 3.0 for x in xs])
    np.testing.assert_allclose(xlapy.vmap(f)(xs), expected, rtol=1e-6)
    np.testing.assert_allclose(xlapy.jit(xlapy.vmap(f))(xs), expected, rtol=1e-6)


@pytest.mark.parametrize("in_axes", [(None, None, 0), (0, 0, 0), (0, None, None)])
def test_per_example_gradients_of_grouped_convolutions(in_axes):
    """vmap of grad through grouped and depthwise convolutions and max pooling: the
    convolution rule's feature- and batch-group paths (the kernel gradient of a grouped
    convolution has batch groups), against a loop over the examples."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2, 4, 7, 7)).astype(np.float32)
    w1 = (rng.standard_normal((3, 6, 2, 3, 3)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((3, 6, 1, 3, 3)) * 0.3).astype(np.float32)

    def loss(a, b, inp):
        h = xnp.tanh(lax.conv_general_dilated(inp, a, (1, 1), "SAME", feature_group_count=2))
        h = lax.conv_general_dilated(h, b, (2, 2), "VALID", feature_group_count=6)
        return (lax.reduce_window_max(h, (1, 1, 2, 2), (1, 1, 1, 1)) ** 2).sum()

    g = xlapy.grad(loss, argnums=(0, 1))
    args = [v if ax == 0 else v[0] for v, ax in zip((w1, w2, x), in_axes)]
    got = xlapy.vmap(g, in_axes=in_axes)(*args)
    per = [g(*[a if ax is None else a[k] for a, ax in zip(args, in_axes)]) for k in range(3)]
    for j in range(2):
        np.testing.assert_allclose(got[j], np.stack([np.asarray(p[j]) for p in per]),
                                   rtol=1e-4, atol=1e-5)


def test_forward_mode_composes_with_vmap_through_loops():
    xs = X[:, 0]
    ts = np.ones_like(xs)

    def f(x):
        loop = lax.while_loop(lambda s: s[1] < 3, lambda s: (s[0] * x, s[1] + 1), (x, 0))[0]
        return xnp.sin(x) * lax.fori_loop(0, 2, lambda i, c: c * x, x).sum() + loop

    per = np.stack([np.asarray(xlapy.jvp(f, (xnp.asarray(x),), (xnp.asarray(t),))[1])
                    for x, t in zip(xs, ts)])
    inside = xlapy.vmap(lambda x, t: xlapy.jvp(f, (x,), (t,))[1])(xs, ts)
    outside = xlapy.jvp(xlapy.vmap(f), (xs,), (ts,))[1]
    np.testing.assert_allclose(inside, per, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outside, per, rtol=1e-5, atol=1e-6)
