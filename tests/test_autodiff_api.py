"""The autodiff API: grad / value_and_grad / vjp / jvp (JAX style), GradientTape and
Variables (TensorFlow style), control flow, and autodiff together with jit.

Gradients are compared with closed forms or with finite differences
(:mod:`autodiff_check`); the per-primitive rules are covered by the gradient table in
``test_autodiff_rules.py``.
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.errors import InvalidArgumentError
from autodiff_check import grid, uniform

f32 = np.float32


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.complex128), np.asarray(want, np.complex128),
                               rtol=tol, atol=tol)


X = grid([0.5, -1.25, 2.0])
Y = grid([1.5, 0.75, -0.5])


# ----------------------------------------------------------------------------- grad
def test_grad_argnums_int_tuple_and_negative():
    def f(x, y, z):
        return xnp.sum(x * y + xnp.sin(z) * x)
    z = grid([0.25, 1.0, -2.0])
    g = xlapy.grad(f)(X, Y, z)
    assert isinstance(g, xlapy.Array) and g.shape == (3,) and g.dtype == f32
    close(g, Y + np.sin(z))
    gx, gz = xlapy.grad(f, argnums=(0, 2))(X, Y, z)
    close(gx, Y + np.sin(z))
    close(gz, np.cos(z) * X)
    (gy,) = xlapy.grad(f, argnums=(1,))(X, Y, z)
    close(gy, X)
    close(xlapy.grad(f, argnums=-1)(X, Y, z), np.cos(z) * X)


def test_grad_of_python_and_numpy_scalars():
    assert float(xlapy.grad(lambda x: x * x * x)(2.0)) == 12.0
    g = xlapy.grad(lambda x: xnp.exp(x))(f32(0.0))
    assert g.shape == () and float(g) == 1.0


def test_grad_has_aux():
    def f(x):
        y = xnp.sum(x * x)
        return y, {"y": y, "double": x * 2}
    g, aux = xlapy.grad(f, has_aux=True)(X)
    close(g, 2 * X)
    close(aux["y"], np.sum(X * X))
    close(aux["double"], 2 * X)
    (value, aux2), g2 = xlapy.value_and_grad(f, has_aux=True)(X)
    close(value, np.sum(X * X))
    close(aux2["double"], 2 * X)
    close(g2, 2 * X)


def test_grad_of_pytree_inputs():
    params = {"w": grid([[1.0, 2.0], [0.5, -1.0]]), "b": grid([0.25, -0.5])}
    batch = (grid([1.0, -2.0]), grid([0.5, 3.0]))

    def loss(p, data):
        x, t = data
        pred = p["w"] @ x + p["b"]
        return xnp.sum((pred - t) ** 2)
    g = xlapy.grad(loss)(params, batch)
    assert set(g) == {"w", "b"}
    r = params["w"] @ batch[0] + params["b"] - batch[1]
    close(g["b"], 2 * r)
    close(g["w"], 2 * np.outer(r, batch[0]))
    gp, (gx, gt) = xlapy.grad(loss, argnums=(0, 1))(params, batch)
    close(gp["w"], g["w"])
    close(gx, 2 * params["w"].T @ r)
    close(gt, -2 * r)





@pytest.mark.parametrize("jitted", [False, True],
                         ids=["eager", "jit"])
def test_grad_of_python_float_meeting_strongly_typed_arrays(jitted):
    ones = np.ones(3, f32)
    x = grid([[0.0, 1.0], [2.0, 3.0]])
    fns = [(lambda a: xnp.sum(a * ones), 3.0),
           (lambda v: xnp.sum(lax.pad(x, v, [(1, 0, 0), (0, 1, 0)])), 5.0),
           (lambda v: xnp.sum(xnp.asarray(x).at[0, 0].set(v) * 3.0), 3.0)]
    for fn, want in fns:
        g = xlapy.grad(fn)
        assert float((xlapy.jit(g) if jitted else g)(0.75)) == want


def test_value_and_grad():
    f = lambda x, y: xnp.sum(xnp.tanh(x) * y)  # noqa: E731
    value, (gx, gy) = xlapy.value_and_grad(f, argnums=(0, 1))(X, Y)
    close(value, np.sum(np.tanh(X) * Y))
    close(gx, (1 - np.tanh(X) ** 2) * Y)
    close(gy, np.tanh(X))


def test_same_value_passed_twice_and_unused_input():
    g1, g2 = xlapy.grad(lambda a, b: xnp.sum(a * b), argnums=(0, 1))(X, X)
    close(g1, X)
    close(g2, X)
    g = xlapy.grad(lambda a, b: xnp.sum(b * 3.0), argnums=0)(X, Y)
    assert g.shape == X.shape and g.dtype == f32
    close(g, np.zeros(3))


def test_stop_gradient():
    close(xlapy.grad(lambda x: xnp.sum(x * lax.stop_gradient(x)))(X), X)
    close(xlapy.grad(lambda x: xnp.sum(x * xlapy.stop_gradient(x * x)))(X), X * X)
    tree = xlapy.stop_gradient({"a": xnp.asarray(X), "b": (xnp.asarray(Y),)})
    close(tree["b"][0], Y)
    f = lambda x: xnp.sum(xlapy.stop_gradient({"a": x})["a"] * x)  # noqa: E731
    close(xlapy.grad(f)(X), X)
    close(xlapy.jit(xlapy.grad(f))(X), X)


def test_grad_errors():
    with pytest.raises(InvalidArgumentError, match="real scalar output"):
        xlapy.grad(lambda x: x * 2)(X)
    with pytest.raises(InvalidArgumentError, match="real scalar output"):
        xlapy.grad(lambda x: lax.convert_element_type(xnp.sum(x), np.int32))(X)
    with pytest.raises(InvalidArgumentError, match="real- or complex-valued inputs.*int32"):
        xlapy.grad(lambda n: n * 2.0)(np.int32(3))
    with pytest.raises(InvalidArgumentError, match="argument 1 has dtype int32"):
        xlapy.grad(lambda x, n: xnp.sum(x) * n, argnums=(0, 1))(X, np.int32(2))
    with pytest.raises(InvalidArgumentError, match="argnums"):
        xlapy.grad(lambda x: xnp.sum(x), argnums=3)(X)
    with pytest.raises(InvalidArgumentError, match="pair"):
        xlapy.grad(lambda x: xnp.sum(x), has_aux=True)(X)


# ------------------------------------------------------------------------- vjp / jvp
def test_vjp_non_scalar_and_pytree_outputs():
    def f(x, y):
        return {"p": x * y, "s": (xnp.sum(x), xnp.outer(x, y))}
    out, fn = xlapy.vjp(f, X, Y)
    close(out["p"], X * Y)
    ct = {"p": grid([1.0, 2.0, 3.0]), "s": (f32(2.0), np.ones((3, 3), f32))}
    for _ in range(2):              # the vjp function can be called again
        gx, gy = fn(ct)
        close(gx, ct["p"] * Y + 2.0 + np.sum(Y))
        close(gy, ct["p"] * X + np.sum(X))
    with pytest.raises(InvalidArgumentError, match="structure"):
        fn({"p": ct["p"]})
    with pytest.raises(InvalidArgumentError, match="shape"):
        fn({"p": np.ones(4, f32), "s": ct["s"]})


def test_vjp_has_aux():
    out, fn, aux = xlapy.vjp(lambda x: (x * x, x + 1), X, has_aux=True)
    close(out, X * X)
    close(aux, X + 1)
    (g,) = fn(np.ones(3, f32))
    close(g, 2 * X)


def test_jvp():
    def f(x, y):
        return x * y, xnp.sum(xnp.sin(x))
    tx, ty = grid([1.0, 0.0, -1.0]), grid([0.5, 0.5, 0.5])
    (p, s), (tp, ts) = xlapy.jvp(f, (X, Y), (tx, ty))
    close(p, X * Y)
    close(s, np.sum(np.sin(X)))
    close(tp, tx * Y + X * ty)
    close(ts, np.sum(np.cos(X) * tx))


def test_jvp_of_pytree_and_of_a_function_ignoring_its_input():
    p = {"a": X, "b": Y}
    out, t = xlapy.jvp(lambda d: d["a"] * d["b"], (p,), ({"a": np.ones(3, f32), "b": Y},))
    close(t, Y + X * Y)
    out, t = xlapy.jvp(lambda x: xnp.ones(2), (X,), (X,))
    close(t, np.zeros(2))


def test_jvp_errors():
    with pytest.raises(InvalidArgumentError, match="tuples or lists"):
        xlapy.jvp(lambda x: x, X, X)
    with pytest.raises(InvalidArgumentError, match="structure"):
        xlapy.jvp(lambda x, y: x * y, (X, Y), (X,))
    with pytest.raises(InvalidArgumentError, match="shape"):
        xlapy.jvp(lambda x: x, (X,), (np.ones(4, f32),))


# ----------------------------------------------------------------------- higher order
def test_grad_of_grad_and_third_order():
    f = lambda x: x ** 3 * xnp.sin(x)  # noqa: E731
    x = f32(0.75)
    d1 = lambda t: 3 * t ** 2 * np.sin(t) + t ** 3 * np.cos(t)  # noqa: E731
    d2 = lambda t: 6 * t * np.sin(t) + 6 * t ** 2 * np.cos(t) - t ** 3 * np.sin(t)  # noqa: E731
    d3 = lambda t: (6 * np.sin(t) + 18 * t * np.cos(t) - 9 * t ** 2 * np.sin(t)  # noqa: E731
                    - t ** 3 * np.cos(t))
    close(xlapy.grad(f)(x), d1(0.75))
    close(xlapy.grad(xlapy.grad(f))(x), d2(0.75))
    close(xlapy.grad(xlapy.grad(xlapy.grad(f)))(x), d3(0.75), 1e-4)
    close(xlapy.jit(xlapy.grad(xlapy.grad(f)))(x), d2(0.75))


def test_mixed_partials_and_hessian_vector_product():
    def f(x, y):
        return xnp.sum(xnp.exp(x) * y * y)
    dxdy = xlapy.grad(lambda x, y: xnp.sum(xlapy.grad(f, argnums=0)(x, y)), argnums=1)(X, Y)
    close(dxdy, 2 * np.exp(X) * Y, 1e-4)
    v = grid([1.0, -0.5, 0.25])
    _, hvp = xlapy.jvp(xlapy.grad(f), (X, Y), (v, np.zeros(3, f32)))
    close(hvp, np.exp(X) * Y * Y * v, 1e-4)
    hvp2 = xlapy.grad(lambda x: xnp.sum(xlapy.grad(f)(x, Y) * v))(X)
    close(hvp2, hvp, 1e-5)


def test_jvp_of_jvp():
    f = lambda x: xnp.sin(x) * x  # noqa: E731
    _, t2 = xlapy.jvp(lambda x: xlapy.jvp(f, (x,), (np.ones(3, f32),))[1], (X,),
                      (np.ones(3, f32),))
    close(t2, 2 * np.cos(X) - X * np.sin(X), 1e-4)


# --------------------------------------------------------------------- GradientTape
def test_tape_watch_and_unwatched_sources():
    x, y = xnp.asarray(X), xnp.asarray(Y)
    with xlapy.GradientTape() as tape:
        tape.watch(x)
        z = xnp.sum(x * x * y)
    gx, gy = tape.gradient(z, [x, y])
    close(gx, 2 * X * Y)
    assert gy is None


def test_non_persistent_tape_computes_one_gradient():
    x = xnp.asarray(X)
    with xlapy.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    close(tape.gradient(y, x), 2 * X)
    with pytest.raises(InvalidArgumentError, match="persistent=True"):
        tape.gradient(y, x)


def test_persistent_tape_and_list_targets():
    x = xnp.asarray(X)
    with xlapy.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = xnp.sin(x)
    close(tape.gradient(y, x), 2 * X)
    close(tape.gradient(z, x), np.cos(X))
    close(tape.gradient([y, z], x), 2 * X + np.cos(X))
    close(tape.gradient(y, x), 2 * X)


def test_tape_output_gradients_and_unconnected():
    x, w = xnp.asarray(X), xnp.asarray(Y)
    with xlapy.GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        y = x * x
    close(tape.gradient(y, x, output_gradients=grid([1.0, 2.0, -1.0])),
          2 * X * np.array([1, 2, -1]))
    assert tape.gradient(y, w) is None
    close(tape.gradient(y, w, unconnected_gradients="zero"), np.zeros(3))
    with pytest.raises(InvalidArgumentError, match="unconnected_gradients"):
        tape.gradient(y, w, unconnected_gradients="bogus")
    with pytest.raises(InvalidArgumentError, match="output_gradients"):
        tape.gradient(y, x, output_gradients=[np.ones(3, f32), np.ones(3, f32)])


def test_tape_stop_recording_and_reset():
    x = xnp.asarray(X)
    with xlapy.GradientTape(persistent=True) as tape:
        tape.watch(x)
        with tape.stop_recording():
            hidden = x * 10.0
        y = x * x + hidden
    close(tape.gradient(y, x), 2 * X)
    tape.reset()
    assert tape.gradient(y, x) is None


def test_nested_tapes_give_second_derivatives():
    x = xnp.asarray(X)
    with xlapy.GradientTape() as outer:
        outer.watch(x)
        with xlapy.GradientTape() as inner:
            inner.watch(x)
            y = xnp.sum(x ** 3)
        dy = inner.gradient(y, x)
    close(dy, 3 * X ** 2)
    close(outer.gradient(dy, x), 6 * X)


def test_persistent_tape_records_gradients_computed_inside_its_block():
    x = xnp.asarray(X)
    with xlapy.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = xnp.sum(x ** 3)
        dy = tape.gradient(y, x)
    close(dy, 3 * X ** 2)
    close(tape.gradient(dy, x), 6 * X)


def test_tape_watches_trainable_variables_only():
    v = xlapy.Variable(X, name="v")
    frozen = xlapy.Variable(Y, trainable=False, name="frozen")
    with xlapy.GradientTape() as tape:
        loss = xnp.sum(v * v * frozen) + xnp.sum(v)
    gv, gf = tape.gradient(loss, [v, frozen])
    close(gv, 2 * X * Y + 1)          # v is read twice: the reads' gradients add up
    assert gf is None
    assert tape.watched_variables() == [v]
    with xlapy.GradientTape() as tape:
        tape.watch(frozen)
        loss = xnp.sum(v * frozen)
    g = tape.gradient(loss, {"v": v, "f": frozen})
    close(g["v"], Y)
    close(g["f"], X)


def test_tape_without_automatic_watching():
    v = xlapy.Variable(X)
    with xlapy.GradientTape(watch_accessed_variables=False) as tape:
        loss = xnp.sum(v * v)
    assert tape.gradient(loss, v) is None
    with xlapy.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        loss = xnp.sum(v * v)
    close(tape.gradient(loss, v), 2 * X)


def test_gradient_does_not_flow_through_assign():
    v = xlapy.Variable(X)
    with xlapy.GradientTape() as tape:
        a = v.read_value()
        v.assign(a * 3.0)
        loss = xnp.sum(v.read_value() * a)
    close(tape.gradient(loss, v), 3 * X + X)   # both reads are sources; no path via assign
    close(v.numpy(), 3 * X)


def test_tape_watch_rejects_non_arrays():
    with xlapy.GradientTape() as tape:
        with pytest.raises(InvalidArgumentError, match="watch"):
            tape.watch("x")


# ----------------------------------------------------------------- against JAX (peers)
_Z = np.array([1 + 2j, -0.5 + 0.25j], np.complex64)

_COMPLEX_FUNCTIONS = {
    "real_of_square": (lambda m: lambda z: m.sum(m.real(z * z))),
    "imag_of_exp": (lambda m: lambda z: m.sum(m.imag(m.exp(z)))),
    "squared_modulus": (lambda m: lambda z: m.sum(m.real(z * m.conj(z)))),
    "abs": (lambda m: lambda z: m.sum(m.abs(z))),
}


@pytest.mark.peers
@pytest.mark.parametrize("make", list(_COMPLEX_FUNCTIONS.values()), ids=list(_COMPLEX_FUNCTIONS))
def test_complex_input_gradients_follow_jax(make):
    """For complex inputs grad returns the cotangent in JAX's convention (no conjugation in
    the rules, e.g. d real(z*z) = 2z, d |z|^2 = 2 conj(z))."""
    import jax
    import jax.numpy as jnp
    want = jax.grad(make(jnp))(_Z)
    got = xlapy.grad(make(xnp))(_Z)
    assert got.dtype == np.complex64
    close(got, np.asarray(want), 1e-5)


def _softmax_xent(m, logits, labels):
    shifted = logits - m.max(logits, axis=1, keepdims=True)
    logp = shifted - m.log(m.sum(m.exp(shifted), axis=1, keepdims=True))
    return -m.sum(logp * labels) / logits.shape[0]


def _layer(m, x, w, b):
    h = m.tanh(x @ w + b)
    return m.sum(m.sort(h, axis=1)[:, -2:] ** 2) + m.prod(m.cumsum(h, axis=0)[-1])


@pytest.mark.peers
def test_composite_gradients_match_jax():
    import jax
    import jax.numpy as jnp
    logits = uniform("jl", (3, 4), -2, 2)
    labels = np.eye(4, dtype=f32)[[1, 3, 0]]
    x, w, b = uniform("jx", (3, 2)), uniform("jw", (2, 4)), uniform("jb", (4,))
    cases = [
        (lambda m: lambda a: _softmax_xent(m, a, labels), (logits,)),
        (lambda m: lambda a, c, d: _layer(m, a, c, d), (x, w, b)),
    ]
    for make, args in cases:
        argnums = tuple(range(len(args)))
        want = jax.grad(make(jnp), argnums=argnums)(*args)
        got = xlapy.grad(make(xnp), argnums=argnums)(*args)
        for g, j in zip(got, want):
            close(g, np.asarray(j), 2e-5)


def test_donated_argument_alias_indexes_the_tuple_when_variables_add_outputs():
    v = xlapy.Variable(np.zeros(3, np.float32))

    def step(x):
        v.assign_add(x)
        return x * 2.0

    f = xlapy.jit(step, donate_argnums=0)
    x = np.ones(3, np.float32)
    text = f.get_compiler_ir(x)(stage="hlo")
    assert "input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }" in text
    np.testing.assert_allclose(np.asarray(f(x)), 2.0)
    np.testing.assert_allclose(v.numpy(), 1.0)


# ---------------------------------------------------------- eager-only NumPy escapes
def test_gradient_through_unique_reaches_the_first_occurrences():
    """unique's values are gathered from its input (as in JAX), not cut from the tape."""
    x = np.array([1.0, 2.0], np.float32)
    g = xlapy.grad(lambda v: xnp.sum(xnp.unique(v) * v[:1]))(x)
    np.testing.assert_allclose(np.asarray(g), [4.0, 1.0])      # d/dv (v0+v1)*v0
    y = np.array([3.0, 1.0, 3.0, 2.0, 1.0], np.float32)
    g = xlapy.grad(lambda v: xnp.sum(xnp.unique(v) ** 2))(y)
    np.testing.assert_allclose(np.asarray(g), [6.0, 2.0, 0.0, 4.0, 0.0])
    m = np.array([[1.0, 2.0], [0.0, 5.0], [1.0, 2.0]], np.float32)
    g = xlapy.grad(lambda v: xnp.sum(xnp.unique(v, axis=0)[:, 1] * 3.0))(m)
    np.testing.assert_allclose(np.asarray(g), [[0, 3], [0, 3], [0, 0]])


@pytest.mark.parametrize("kw", [{}, {"return_index": True}, {"return_inverse": True},
                                {"return_counts": True, "return_index": True},
                                {"axis": 0, "return_inverse": True}])
def test_unique_still_matches_numpy(kw):
    x = np.array([[3.0, 1.0], [3.0, 1.0], [2.0, 2.0]], np.float32)
    got, want = xnp.unique(x, **kw), np.unique(x, **kw)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)
        assert np.asarray(g).dtype == (np.float32 if w.dtype.kind == "f" else np.int32)


def test_gradients_through_data_dependent_index_ops():
    """nonzero / argwhere / boolean masks give integer indices; the read is a gather."""
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(
        np.asarray(xlapy.grad(lambda v: xnp.sum(v[xnp.nonzero(v > 1.5)] ** 2))(x)), [0, 4, 6])
    np.testing.assert_allclose(
        np.asarray(xlapy.grad(lambda v: xnp.sum(v[v > 1.5] * 2.0))(x)), [0, 2, 2])
    np.testing.assert_allclose(
        np.asarray(xlapy.grad(lambda v: xnp.sum(v[xnp.argwhere(v < 2.5)[:, 0]]))(x)), [1, 1, 0])
