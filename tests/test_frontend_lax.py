"""xlapy.lax control flow (cond, switch, while_loop, fori_loop, scan) vs Python loops,
eagerly and under jit, including values closed over from the enclosing function."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.errors import InvalidArgumentError, ShapeError


def both(fn, *args):
    """fn eagerly and jitted."""
    return fn(*args), xlapy.jit(fn)(*args)


def test_cond_matches_python_if():
    def f(x, t):
        return lax.cond(t > 0, lambda a: a * 2.0, lambda a: a - 1.0, x)
    x = np.arange(3, dtype=np.float32)
    for t in (1.0, -1.0):
        want = x * 2.0 if t > 0 else x - 1.0
        for got in both(f, x, np.float32(t)):
            np.testing.assert_allclose(np.asarray(got), want)


def test_cond_with_captures_and_pytree_output():
    def f(x, y):
        s = y.sum()
        return lax.cond(s > 3, lambda: {"a": x + s, "b": x * 0}, lambda: {"a": x - s, "b": x})
    x = np.ones(2, np.float32)
    for y in (np.ones(2, np.float32), np.full(2, 3, np.float32)):
        s = y.sum()
        for got in both(f, x, y):
            np.testing.assert_allclose(np.asarray(got["a"]), x + s if s > 3 else x - s)
            np.testing.assert_allclose(np.asarray(got["b"]), x * 0 if s > 3 else x)


def test_cond_branch_type_mismatch():
    with pytest.raises(InvalidArgumentError, match="same structure and types"):
        xlapy.jit(lambda p: lax.cond(p, lambda: xnp.ones(2), lambda: xnp.ones(3)))(True)


def test_switch_clamps_index():
    branches = [lambda v: v + 1, lambda v: v * 10, lambda v: -v]
    f = lambda i, v: lax.switch(i, branches, v)  # noqa: E731
    v = np.array([1, 2], np.int32)
    for i in (-3, 0, 1, 2, 7):
        want = branches[min(max(i, 0), 2)](v)
        for got in both(f, np.int32(i), v):
            np.testing.assert_array_equal(np.asarray(got), want)


def test_while_loop_matches_python():
    def f(n, x):
        return lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * x), (0, xnp.ones_like(x)))
    x = np.array([1.5, 2.0], np.float32)
    for got in both(f, np.int32(4), x):
        assert int(got[0]) == 4
        np.testing.assert_allclose(np.asarray(got[1]), x ** 4, rtol=1e-6)


def test_while_loop_body_type_error():
    with pytest.raises(InvalidArgumentError, match="structure and types"):
        xlapy.jit(lambda x: lax.while_loop(lambda v: v.sum() < 10, lambda v: v.astype(xnp.int32), x))(np.ones(2, np.float32))


def test_fori_loop_with_closure_and_nested_loop():
    def f(x, m):
        def outer(i, acc):
            inner = lax.fori_loop(0, 2, lambda j, a: a + m * j, acc)
            return inner + i
        return lax.fori_loop(0, 3, outer, x)
    x, m = np.zeros(2, np.float32), np.float32(2.0)
    acc = x.copy()
    for i in range(3):
        for j in range(2):
            acc = acc + m * j
        acc = acc + i
    for got in both(f, x, m):
        np.testing.assert_allclose(np.asarray(got), acc)


def test_scan_cumulative_sum_and_reverse():
    xs = np.arange(1, 6, dtype=np.float32)

    def f(xs, reverse):
        return lax.scan(lambda c, x: (c + x, c * x), np.float32(0), xs, reverse=reverse)

    for reverse in (False, True):
        c, want = 0.0, [0.0] * 5
        order = range(4, -1, -1) if reverse else range(5)
        for k in order:
            want[k] = c * xs[k]
            c += xs[k]
        for got in (f(xs, reverse), xlapy.jit(f, static_argnums=1)(xs, reverse)):
            assert float(got[0]) == c
            np.testing.assert_allclose(np.asarray(got[1]), want)


def test_scan_pytree_xs_and_carry():
    def step(carry, x):
        h, n = carry
        h = xnp.tanh(h * x["w"] + x["b"])
        return (h, n + 1), {"h": h, "n": n}
    xs = {"w": np.linspace(0.1, 0.5, 4, dtype=np.float32).reshape(4, 1) * np.ones((4, 3), np.float32),
          "b": np.ones((4, 3), np.float32)}
    h0 = np.zeros(3, np.float32)
    h, hs = h0, []
    for k in range(4):
        h = np.tanh(h * xs["w"][k] + xs["b"][k])
        hs.append(h)
    for (hc, n), ys in both(lambda i, x: lax.scan(step, (i, np.int32(0)), x), h0, xs):
        np.testing.assert_allclose(np.asarray(hc), h, rtol=1e-6)
        assert int(n) == 4
        np.testing.assert_allclose(np.asarray(ys["h"]), np.stack(hs), rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(ys["n"]), np.arange(4))


def test_strict_lax_ops_reject_mixed_operands():
    with pytest.raises(ShapeError, match="lax.add"):
        lax.add(np.ones(2, np.float32), np.ones(3, np.float32))
    out = lax.dot_general(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), (((1,), (0,)), ((), ())))
    np.testing.assert_array_equal(np.asarray(out), np.full((2, 4), 3.0))


def test_eager_executable_cache_is_reused():
    from xlapy.frontend.core import eager_cache_size
    a = xnp.asarray(np.ones(7, np.float32))
    a + a
    n = eager_cache_size()
    for _ in range(3):
        a + a
    assert eager_cache_size() == n


def test_top_k_matches_numpy_descending_stable_and_differentiable():
    import xlapy
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, (3, 9)).astype(np.float32)      # many ties
    vals, idx = xlapy.jit(lambda a: lax.top_k(a, 4))(x)
    ref_idx = np.argsort(-x, axis=-1, kind="stable")[:, :4]
    np.testing.assert_array_equal(np.asarray(idx), ref_idx)
    np.testing.assert_array_equal(np.asarray(vals), np.take_along_axis(x, ref_idx, -1))
    ints = np.array([3, -1, 7, 7, -8], np.int32)
    np.testing.assert_array_equal(np.asarray(lax.top_k(ints, 3)[1]), [2, 3, 0])
    g = xlapy.grad(lambda a: lax.top_k(a, 2)[0].sum())(np.array([3., 1, 4, 2], np.float32))
    np.testing.assert_array_equal(np.asarray(g), [1, 0, 1, 0])
    with pytest.raises(xlapy.errors.InvalidArgumentError):
        lax.top_k(ints, 6)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, -1, -3])
def test_integer_pow_is_multiplies_and_matches_numpy(n):
    """x ** <int> traces to multiplies (no HLO power, as JAX's integer_pow), eagerly and
    jitted, with the gradient n * x**(n-1)."""
    x = np.array([0.5, -2.0, 3.0, 1.25], np.float32)
    want = x.astype(np.float64) ** n
    for got in both(lambda a: a ** n, x):
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6)
    hlo = xlapy.jit(lambda a: xnp.power(a, np.int64(n))).get_compiler_ir(x)(stage="hlo")
    assert " power(" not in hlo
    grad = xlapy.grad(lambda a: xnp.sum(lax.integer_pow(a, n)))(x)
    np.testing.assert_allclose(np.asarray(grad), n * x.astype(np.float64) ** (n - 1), rtol=2e-6)


def test_integer_pow_keeps_integer_dtypes_and_rejects_negative_integer_exponents():
    assert (xnp.array([2, 3], np.int8) ** 3).dtype == np.int8
    np.testing.assert_array_equal(np.asarray(xnp.array([2, -3], np.int32) ** 3), [8, -27])
    with pytest.raises(InvalidArgumentError, match="negative power -1"):
        xnp.array([2, 3], np.int32) ** -1
    np.testing.assert_allclose(np.asarray(xnp.array([2.0, 4.0]) ** 0.5), [2 ** 0.5, 2.0])
