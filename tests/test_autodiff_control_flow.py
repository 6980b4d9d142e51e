"""Autodiff through control flow (cond, switch, scan, fori_loop, while_loop) and together
with jit and Variables.

Eagerly, control flow runs as Python and the tape sees the operations; under jit, ``cond``
and ``scan`` record one node whose rule differentiates the branch or body. Both are checked
against finite differences by :func:`autodiff_check.check_case` (grad, jit(grad), jvp and
jit(jvp)).
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.errors import InvalidArgumentError
from autodiff_check import assert_close, case, check_case, grid, stencil, uniform

f32, i32 = np.float32, np.int32


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=tol, atol=tol)


# ------------------------------------------------------------------------ control flow
def _cond(x, y):
    """Branches use an operand and a captured value (y)."""
    return lax.cond(xnp.sum(x) > 0, lambda a: xnp.sin(a) * y, lambda a: a * a + y, x)


def _switch(x, y, i):
    branches = [lambda a: a * y, lambda a: xnp.exp(a) - y, lambda a: xnp.sum(a * a) * y]
    return lax.switch(i, branches, x)


def _scan(c0, xs, w, reverse=False):
    """A carry (vector, scalar), per-step inputs, a captured weight, stacked outputs."""
    def step(carry, x):
        h, s = carry
        h = xnp.tanh(h * w + x)
        s = s + xnp.sum(h * x)
        return (h, s), h * s
    (h, s), ys = lax.scan(step, (c0, xnp.sum(c0)), xs, reverse=reverse)
    return h, s, ys


def _fori(x, w):
    return lax.fori_loop(0, 4, lambda i, v: xnp.sin(v) * w + v * 0.5, x)


def _scan_with_cond(x, w):
    def step(c, xi):
        c = lax.cond(xi > 0, lambda a: a * w, lambda a: xnp.sin(a) + w, c)
        return c, xnp.sum(c)
    return lax.scan(step, x, grid([0.5, -0.5, 1.0]))


def _fori_with_index(x):
    return lax.fori_loop(1, 4, lambda i, v: v * xnp.cos(v) + lax.convert_element_type(i, f32), x)


CONTROL_FLOW = [
    case("cond_true_branch", (), _cond, uniform("c1", (3,), 0.1, 1), uniform("c2", (3,))),
    case("cond_false_branch", (), _cond, uniform("c3", (3,), -1, -0.1), uniform("c4", (3,))),
    case("switch_first", (), _switch, uniform("sw1", (3,)), uniform("sw2", (3,)), i32(0)),
    case("switch_last", (), _switch, uniform("sw3", (3,)), uniform("sw4", (3,)), i32(2)),
    case("switch_index_clamped", (), _switch, uniform("sw5", (3,)), uniform("sw6", (3,)),
         i32(7)),
    case("scan", (), _scan, uniform("sc1", (2,)), uniform("sc2", (3, 2)), uniform("sc3", (2,))),
    case("scan_reverse", (), lambda c, xs, w: _scan(c, xs, w, reverse=True),
         uniform("sc4", (2,)), uniform("sc5", (4, 2)), uniform("sc6", (2,))),
    case("fori_loop_static_bounds", (), _fori, uniform("fo1", (3,)), uniform("fo2", (3,))),
    case("fori_loop_uses_index", (), _fori_with_index, uniform("fo3", (2,))),
    case("scan_with_cond_inside", (), _scan_with_cond, uniform("scc1", (2,)),
         uniform("scc2", (2,))),
]


@pytest.mark.parametrize("c", CONTROL_FLOW, ids=repr)
def test_control_flow_gradients_match_finite_differences(c):
    check_case(c)


def _scalar_cond(x):
    return lax.cond(x > 0, lambda a: xnp.sin(a) * a, lambda a: a * a, x)


def _scalar_scan(x):
    def step(c, xi):
        c = xnp.sin(c * xi)
        return c, c
    return xnp.sum(lax.scan(step, x, grid([0.5, -0.25, 1.0]))[1])


def _scalar_fori(x):
    return lax.fori_loop(0, 3, lambda i, v: xnp.sin(v) * x, x)





@pytest.mark.parametrize("fn", [_scalar_cond, _scalar_scan, _scalar_fori],
                         ids=["cond", "scan", "fori_loop"])
@pytest.mark.parametrize("jitted", [False, True],
                         ids=["eager", "jit"])
def test_second_derivative_through_control_flow(fn, jitted):
    first = xlapy.grad(fn)
    x = f32(0.375)
    want = stencil(lambda t: np.float64(first(x + f32(t))), 2.0 ** -6)
    second = xlapy.grad(first)
    forward = lambda v: xlapy.jvp(first, (v,), (f32(1.0),))[1]  # noqa: E731
    if jitted:
        second, forward = xlapy.jit(second), xlapy.jit(forward)
    assert_close(second(x), want, 1e-3, "grad of grad")
    assert_close(forward(x), want, 1e-3, "jvp of grad")


def _while(x):
    def body(s):
        return s[0] + 1, s[1] * x
    return xnp.sum(lax.while_loop(lambda s: s[0] < 3, body, (0, x))[1])


def test_while_loop_under_jit_cannot_be_reversed_but_has_a_jvp():
    x = grid([0.5, -1.0])
    with pytest.raises(InvalidArgumentError, match="while_loop.*fori_loop.*scan"):
        xlapy.jit(xlapy.grad(_while))(x)
    # Forward mode is defined (the loop carries the tangents; tests/test_autodiff_forward.py).
    close(xlapy.jit(lambda v: xlapy.jvp(_while, (v,), (v,))[1])(x), np.sum(4 * x ** 3 * x))
    # Eagerly the loop is plain Python, whose operations the tape records.
    close(xlapy.grad(_while)(x), 4 * x ** 3)


def test_fori_loop_with_traced_bounds_is_a_while_loop():
    def f(x, n):
        return xnp.sum(lax.fori_loop(0, n, lambda i, v: v * x, x))
    with pytest.raises(InvalidArgumentError, match="while_loop"):
        xlapy.jit(xlapy.grad(f))(grid([0.5, 2.0]), i32(2))


def test_while_loop_on_untracked_values_is_fine():
    def f(x):
        n = lax.while_loop(lambda k: k < 5, lambda k: k + 2, i32(0))
        return xnp.sum(x * lax.convert_element_type(n, f32))
    x = grid([0.5, 2.0])
    close(xlapy.jit(xlapy.grad(f))(x), [6.0, 6.0])


# ------------------------------------------------------------------- autodiff and jit
def _model(x, w):
    h = xnp.tanh(x @ w)
    return xnp.sum(h * h) + xnp.max(h) - xnp.mean(xnp.cumprod(h, axis=1))


W = uniform("w", (3, 2))
XB = uniform("xb", (4, 3))


def test_grad_under_jit_equals_eager_grad():
    eager = xlapy.grad(_model, argnums=(0, 1))(XB, W)
    jitted = xlapy.jit(xlapy.grad(_model, argnums=(0, 1)))(XB, W)
    for a, b in zip(eager, jitted):
        close(a, b, 1e-6)
    hess_eager = xlapy.grad(lambda w: xnp.sum(xlapy.grad(_model, argnums=1)(XB, w)))(W)
    hess_jit = xlapy.jit(xlapy.grad(lambda w: xnp.sum(xlapy.grad(_model, argnums=1)(XB, w))))(W)
    close(hess_eager, hess_jit, 1e-5)


def test_grad_of_jitted_function():
    f = xlapy.jit(_model)
    want = xlapy.grad(_model, argnums=(0, 1))(XB, W)
    for _ in range(2):
        got = xlapy.grad(f, argnums=(0, 1))(XB, W)
        for a, b in zip(got, want):
            close(a, b, 1e-6)
    close(xlapy.jvp(f, (XB, W), (XB, W))[1], xlapy.jvp(_model, (XB, W), (XB, W))[1], 1e-5)
    g2 = xlapy.grad(lambda w: xnp.sum(xlapy.grad(f, argnums=1)(XB, w) ** 2))(W)
    g2_want = xlapy.grad(lambda w: xnp.sum(xlapy.grad(_model, argnums=1)(XB, w) ** 2))(W)
    close(g2, g2_want, 1e-5)


def test_jit_called_under_a_tape():
    f = xlapy.jit(lambda a, b: xnp.sum(xnp.sin(a) * b))
    x, y = xnp.asarray(grid([0.5, -1.0])), xnp.asarray(grid([2.0, 0.25]))
    for _ in range(2):
        with xlapy.GradientTape() as tape:
            tape.watch(x)
            z = f(x, y) * 3.0
        gx, gy = tape.gradient(z, [x, y])
        close(gx, 3 * np.cos(np.asarray(x)) * np.asarray(y))
        assert gy is None
        close(z, 3 * np.sum(np.sin(np.asarray(x)) * np.asarray(y)))


def test_jit_reading_variables_under_a_tape():
    v = xlapy.Variable(grid([1.0, -2.0]))
    f = xlapy.jit(lambda a: xnp.sum(v * v * a))
    a = grid([0.5, 3.0])
    with xlapy.GradientTape() as tape:
        loss = f(a)
    close(tape.gradient(loss, v), 2 * v.numpy() * a)


# ------------------------------------------------------------------ Variables in jit
def test_variables_read_and_assigned_inside_jit_alias_their_parameters():
    """A training step: the tape inside jit watches the Variable, assign_sub writes it back.
    Variables become parameters after the arguments in first-read order (w: 2, scale: 3,
    steps: 4); the assigned ones are extra outputs aliasing their parameters."""
    w = xlapy.Variable(grid([1.0, -0.5]), name="w")
    scale = xlapy.Variable(f32(2.0), trainable=False, name="scale")
    step_count = xlapy.Variable(np.int32(0), trainable=False, name="steps")

    @xlapy.jit
    def train_step(x, t):
        with xlapy.GradientTape() as tape:
            loss = xnp.sum((w * x * scale - t) ** 2)
        w.assign_sub(0.1 * tape.gradient(loss, w))
        step_count.assign_add(1)
        return loss

    x, t = grid([1.0, 2.0]), grid([0.5, 0.5])
    header = train_step.lower(x, t).as_text().splitlines()[0]
    assert "input_output_alias={ {1}: (2, {}, may-alias), {2}: (4, {}, may-alias) }" in header
    want_w = np.asarray(w.numpy(), np.float64)
    for _ in range(3):
        loss = train_step(x, t)
        residual = 2 * want_w * x - t
        close(loss, np.sum(residual ** 2))
        want_w = want_w - 0.1 * 2 * residual * 2 * x
        close(w.numpy(), want_w)
    assert int(step_count.numpy()) == 3
    close(scale.numpy(), 2.0)
    assert train_step.cache_info().misses == 1
