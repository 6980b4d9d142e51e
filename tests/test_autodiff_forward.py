"""Forward mode: ``jvp`` (with ``has_aux``), ``linearize``, and jvp through ``while_loop``
under ``jit`` (the loop carries the tangents; reverse mode of a while loop stays an error).

Expected values are analytic or fourth-order finite differences (``autodiff_check``).
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.errors import InvalidArgumentError
from autodiff_check import grid, stencil

f32 = np.float32
X = grid([0.5, -1.25, 0.75])
T = grid([1.0, 0.5, -2.0])


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want, np.float32), rtol=tol,
                               atol=tol)


# ------------------------------------------------------------------------ has_aux / API
@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_jvp_has_aux_returns_aux_undifferentiated(jitted):
    def f(x):
        y = xnp.sin(x) * x
        return y, {"norm": xnp.sum(y * y), "n": 3}

    def run(x, t):
        out, tan, aux = xlapy.jvp(f, (x,), (t,), has_aux=True)
        return out, tan, aux["norm"]
    if jitted:
        run = xlapy.jit(run)
    out, tan, norm = run(X, T)
    close(out, np.sin(X) * X)
    close(tan, (np.cos(X) * X + np.sin(X)) * T)
    close(norm, np.sum((np.sin(X) * X) ** 2))
    with pytest.raises(InvalidArgumentError, match="pair"):
        xlapy.jvp(lambda x: x, (X,), (T,), has_aux=True)


def test_jvp_has_aux_aux_carries_no_tangent_into_an_outer_grad():
    def outer(x):
        tan, aux = xlapy.jvp(lambda v: (v * v, v * 3.0), (x,), (f32(1.0),), has_aux=True)[1:]
        return tan + aux                    # d/dx (2x + stop_gradient(3x)) = 2
    close(xlapy.grad(outer)(f32(0.75)), 2.0)


def test_linearize_matches_jvp_for_several_tangents():
    def f(x, y):
        return xnp.exp(x) * y, xnp.sum(x * y)
    y = grid([0.25, 0.5, -0.5])
    out, f_jvp = xlapy.linearize(f, X, y)
    close(out[0], np.exp(X) * y)
    for tx, ty in [(T, np.zeros(3, f32)), (np.ones(3, f32), T)]:
        want = xlapy.jvp(f, (X, y), (tx, ty))[1]
        got = f_jvp(tx, ty)
        close(got[0], want[0])
        close(got[1], want[1])
    out2, f_jvp2, aux = xlapy.linearize(lambda x: (x * x, x + 1), X, has_aux=True)
    close(aux, X + 1)
    close(f_jvp2(T), 2 * X * T)
    with pytest.raises(InvalidArgumentError, match="tangent of shape"):
        f_jvp(np.ones(2, f32), T)


# ------------------------------------------------------------------- while_loop, jvp
def _power_loop(x):
    """x ** 4 by a while loop that closes over x (a captured value)."""
    def body(c):
        return c[0] + 1, c[1] * x
    return lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1]


def _doubling_loop(x):
    """Doubles x until its sum passes 20: the trip count depends on the value."""
    return lax.while_loop(lambda v: xnp.sum(v) < 20.0, lambda v: v * 2.0 + xnp.sin(v), x)


def _nested_loops(x):
    def outer_body(c):
        i, v = c
        v = lax.while_loop(lambda s: s[0] < i, lambda s: (s[0] + 1, s[1] * 0.5 + x), (0, v))[1]
        v = lax.cond(xnp.sum(v) > 0, lambda u: u * u, lambda u: -u, v)
        return i + 1, v
    return lax.while_loop(lambda c: c[0] < 3, outer_body, (0, x))[1]


def _fori_traced_bounds(x, n):
    return lax.fori_loop(0, n, lambda i, v: v * xnp.cos(v) + x, x)


def _fd_jvp(fn, x, t):
    """The directional derivative of ``fn`` at ``x`` along ``t`` (x + h t is exact)."""
    return stencil(lambda h: np.asarray(fn(x + f32(h) * t), np.float64), 2.0 ** -6)


@pytest.mark.parametrize("fn", [_power_loop, _doubling_loop, _nested_loops],
                         ids=["captured", "value_dependent_trip_count", "nested_with_cond"])
def test_jvp_through_while_loop_under_jit_matches_finite_differences(fn):
    x = {_doubling_loop: X + f32(2.0), _nested_loops: np.abs(X) * f32(0.5)}.get(fn, X)
    jitted = xlapy.jit(lambda v, t: xlapy.jvp(fn, (v,), (t,)))
    out, tan = jitted(x, T)
    close(out, fn(x), 1e-5)
    close(tan, _fd_jvp(lambda v: xlapy.jit(fn)(v), x, T), 2e-3)
    # eagerly the loop is Python: the same tangent from the recorded operations
    close(xlapy.jvp(fn, (x,), (T,))[1], tan, 1e-5)


def test_jvp_of_fori_loop_with_traced_bounds():
    g = xlapy.jit(lambda v, t, n: xlapy.jvp(lambda u: _fori_traced_bounds(u, n), (v,), (t,))[1])
    for n in (0, 1, 4):
        want = _fd_jvp(lambda v: _fori_traced_bounds(xlapy.numpy.asarray(v), n), X, T)
        close(g(X, T, np.int32(n)), want, 2e-3)
    assert g.cache_info().misses == 1            # n stays a run-time value


def test_forward_over_forward_through_while_loop():
    """The tangent loop is itself a recorded while loop with a forward rule."""
    def first(v):
        return xlapy.jvp(_power_loop, (v,), (xnp.ones_like(v),))[1]
    second = xlapy.jit(lambda v: xlapy.jvp(first, (v,), (xnp.ones_like(v),))[1])
    close(second(X), 12 * X ** 2, 1e-4)


def test_reverse_mode_of_while_loop_is_still_a_clear_error():
    with pytest.raises(InvalidArgumentError, match="reverse-mode differentiation of while_loop"):
        xlapy.jit(xlapy.grad(lambda v: xnp.sum(_power_loop(v))))(X)
    with pytest.raises(InvalidArgumentError, match="reverse-mode differentiation of while_loop"):
        xlapy.jit(xlapy.grad(lambda v: xnp.sum(
            xlapy.jvp(_power_loop, (v,), (xnp.ones_like(v),))[1])))(X)


def test_jvp_while_loop_integer_state_gets_no_tangent():
    def fn(x):
        return lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1] + c[2], c[2]),
                              (0, x, x))
    (_, out, _), (ti, tout, tx) = xlapy.jit(lambda v, t: xlapy.jvp(fn, (v,), (t,)))(X, T)
    close(out, 3 * X)
    close(tout, 3 * T)
    close(tx, T)
    assert np.asarray(ti).dtype == np.int32 and int(np.asarray(ti)) == 0
