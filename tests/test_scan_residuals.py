"""Gradients of ``scan`` through saved residuals (``xlapy.frontend.scan_autodiff``): the
forward loop stacks what the reverse pass reads, the reverse loop does not recompute the
body. Checked by finite differences, against JAX's gradients, and on the HLO (loops and
dots per step)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import xlapy
import xlapy.lax as lax
import xlapy.nn as nn
import xlapy.numpy as xnp
from xlapy.errors import InvalidArgumentError

RNG = np.random.default_rng(19)


def _fd_grad(f, args, argnum, eps=1e-3):
    """Central finite differences of scalar ``f`` in float64 along ``args[argnum]``."""
    args = [np.asarray(a, np.float64) for a in args]
    x = args[argnum]
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        plus, minus = [a.copy() for a in args], [a.copy() for a in args]
        plus[argnum][idx] += eps
        minus[argnum][idx] -= eps
        g[idx] = (float(f(*plus)) - float(f(*minus))) / (2 * eps)
    return g


def _lstm_loss(lib_np, lib_lax, lib_nn, hidden, wrap=lambda cell: cell):
    def loss(wx, wh, b, xs):
        @wrap
        def cell(carry, x):
            h, c = carry
            z = lib_np.matmul(x, wx) + lib_np.matmul(h, wh) + b
            i, f, g, o = lib_np.split(z, 4, axis=-1)
            c = lib_nn.sigmoid(f) * c + lib_nn.sigmoid(i) * lib_np.tanh(g)
            h = lib_nn.sigmoid(o) * lib_np.tanh(c)
            return (h, c), h
        zeros = lib_np.zeros((xs.shape[1], hidden), dtype=xs.dtype)
        _, hs = lib_lax.scan(cell, (zeros, zeros), xs)
        return lib_np.sum(hs * hs)
    return loss


def _lstm_args(T=4, B=2, n_in=3, H=4):
    return [(RNG.standard_normal((n_in, 4 * H)) * 0.3).astype(np.float32),
            (RNG.standard_normal((H, 4 * H)) * 0.3).astype(np.float32),
            (RNG.standard_normal(4 * H) * 0.3).astype(np.float32),
            RNG.standard_normal((T, B, n_in)).astype(np.float32)]


def _dots_and_loops(text: str) -> tuple[int, int]:
    return len(re.findall(r"\bdot\(", text)), len(re.findall(r"\bwhile\(", text))


def test_lstm_gradient_matches_finite_differences_and_jax():
    args = _lstm_args()
    loss = _lstm_loss(xnp, lax, nn, 4)
    grads = xlapy.jit(xlapy.grad(loss, argnums=(0, 1, 2)))(*args)
    f64 = lambda *a: np.asarray(loss(*[xnp.asarray(x) for x in a]))  # noqa: E731
    for k in range(3):
        fd = _fd_grad(lambda *a: f64(*[x.astype(np.float32) for x in a]), args, k)
        np.testing.assert_allclose(np.asarray(grads[k]), fd, rtol=2e-2, atol=2e-2)
    jax = pytest.importorskip("jax")
    jloss = _lstm_loss(jax.numpy, jax.lax, jax.nn, 4)
    jg = jax.jit(jax.grad(jloss, argnums=(0, 1, 2)))(*args)
    for a, b in zip(grads, jg):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_lstm_gradient_runs_two_loops_and_five_dots_like_jax():
    """The forward loop (2 dots a step) saves residuals; the reverse loop (3 dots: the
    two weight gradients and the carried h's cotangent) reads them. Recomputing the
    forward body took a third loop and 9 dots."""
    args = _lstm_args()
    fn = xlapy.grad(_lstm_loss(xnp, lax, nn, 4), argnums=(0, 1, 2))
    text = xlapy.jit(fn).lower(*args).compiler_ir("optimized_hlo")
    assert _dots_and_loops(text) == (5, 2)


@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_ops_and_reverse_scan(reverse):
    x = RNG.standard_normal(6).astype(np.float32)
    w = np.float32(0.7)

    def f(x, w):
        def step(c, xi):
            s, p = c
            s = s + xi * w
            p = p * xnp.cos(xi) + s
            return (s, p), s * p
        (s, p), ys = lax.scan(step, (np.float32(0), np.float32(1)), x, reverse=reverse)
        return xnp.sum(ys) + s * p

    gx, gw = xlapy.jit(xlapy.grad(f, argnums=(0, 1)))(x, w)
    f64 = lambda x, w: float(f(xnp.asarray(x), xnp.asarray(w)))  # noqa: E731
    np.testing.assert_allclose(np.asarray(gx), _fd_grad(f64, [x, w], 0), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(float(gw), float(_fd_grad(f64, [x, w], 1)), rtol=1e-2)
    jax = pytest.importorskip("jax")

    def jf(x, w):
        def step(c, xi):
            s, p = c
            s = s + xi * w
            p = p * jax.numpy.cos(xi) + s
            return (s, p), s * p
        (s, p), ys = jax.lax.scan(step, (np.float32(0), np.float32(1)), x, reverse=reverse)
        return jax.numpy.sum(ys) + s * p
    jgx, jgw = jax.grad(jf, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(jgx), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(float(gw), float(jgw), rtol=1e-4)


def test_nested_scan_and_second_derivative():
    xs = RNG.standard_normal((3, 4)).astype(np.float32)

    def f(w):
        def outer(c, row):
            def inner(ci, xi):
                ci = xnp.sin(ci * w + xi)
                return ci, ci * ci
            ci, ys = lax.scan(inner, c, row)
            return ci + xnp.sum(ys), ci
        c, cs = lax.scan(outer, np.float32(0.1), xs)
        return c + xnp.sum(cs)

    w = np.float32(0.8)
    g = float(xlapy.jit(xlapy.grad(f))(w))
    f64 = lambda w: float(f(xnp.asarray(w)))  # noqa: E731
    assert g == pytest.approx(float(_fd_grad(f64, [w], 0)), rel=1e-2, abs=1e-3)
    gg = float(xlapy.jit(xlapy.grad(xlapy.grad(f)))(w))
    g64 = lambda w: float(xlapy.grad(f)(xnp.asarray(w, np.float32)))  # noqa: E731
    assert gg == pytest.approx(float(_fd_grad(g64, [w], 0, eps=1e-2)), rel=3e-2, abs=1e-2)


@pytest.mark.parametrize("length", [0, 1])
def test_short_scans(length):
    xs = RNG.standard_normal((length, 3)).astype(np.float32)
    w = RNG.standard_normal(3).astype(np.float32)

    def f(w, xs):
        c, ys = lax.scan(lambda c, x: (c * xnp.tanh(x * w), c), xnp.ones(3), xs)
        return xnp.sum(c) + xnp.sum(ys)

    gw, gx = xlapy.jit(xlapy.grad(f, argnums=(0, 1)))(w, xs)
    f64 = lambda w, xs: float(f(xnp.asarray(w), xnp.asarray(xs)))  # noqa: E731
    np.testing.assert_allclose(np.asarray(gw), _fd_grad(f64, [w, xs], 0), rtol=1e-2, atol=1e-3)
    assert np.asarray(gx).shape == (length, 3)
    if length:
        np.testing.assert_allclose(np.asarray(gx), _fd_grad(f64, [w, xs], 1), rtol=1e-2,
                                   atol=1e-3)


def test_pytree_carry_unused_outputs_and_integer_leaves():
    xs = RNG.standard_normal((5, 2)).astype(np.float32)
    params = {"a": np.float32(0.5), "b": RNG.standard_normal(2).astype(np.float32)}

    def f(params, xs):
        def step(carry, x):
            k, state = carry["k"], carry["s"]
            state = {"u": state["u"] * params["a"] + x, "v": state["v"] + params["b"] * x}
            return {"k": k + 1, "s": state}, (state["u"], k)   # ys never used
        init = {"k": np.int32(0), "s": {"u": xnp.zeros(2), "v": xnp.zeros(2)}}
        carry, _ = lax.scan(step, init, xs)
        return xnp.sum(carry["s"]["u"] ** 2) + xnp.sum(carry["s"]["v"]) + carry["k"] * 0.0

    g = xlapy.jit(xlapy.grad(f))(params, xs)
    f_a = lambda a: float(f({"a": np.float32(a), "b": params["b"]}, xs))  # noqa: E731
    f_b = lambda b: float(f({"a": params["a"], "b": b.astype(np.float32)}, xs))  # noqa: E731
    assert float(g["a"]) == pytest.approx(float(_fd_grad(f_a, [params["a"]], 0)), rel=1e-2)
    np.testing.assert_allclose(np.asarray(g["b"]), _fd_grad(f_b, [params["b"]], 0), rtol=1e-2)


def test_checkpointed_body_still_recomputes():
    """``checkpoint`` on the body: the gradients agree, and the reverse loop recomputes
    the body's dots from the saved operands (more dots than the plain body's)."""
    args = _lstm_args()
    plain = _lstm_loss(xnp, lax, nn, 4)

    remat_loss = _lstm_loss(xnp, lax, nn, 4, wrap=xlapy.checkpoint)

    g_plain = xlapy.jit(xlapy.grad(plain, argnums=(0, 1, 2)))(*args)
    g_remat = xlapy.jit(xlapy.grad(remat_loss, argnums=(0, 1, 2)))(*args)
    for a, b in zip(g_plain, g_remat):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    text = xlapy.jit(xlapy.grad(remat_loss, argnums=(0, 1, 2))).lower(*args).compiler_ir(
        "optimized_hlo")
    dots, _ = _dots_and_loops(text)
    assert dots > 5


def test_body_that_traces_differently_each_time_is_a_typed_error():
    calls = [0]

    def step(c, x):
        calls[0] += 1
        return (c * x if calls[0] % 2 else xnp.sin(c) * xnp.cos(x)), c

    def f(w, xs):
        c, _ = lax.scan(step, w, xs)
        return c

    with pytest.raises(InvalidArgumentError, match="deterministic"):
        xlapy.jit(xlapy.grad(f))(np.float32(0.5), np.ones(3, np.float32))
