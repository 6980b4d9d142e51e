"""JAX's transformations beyond grad: jacfwd / jacrev / hessian, custom_jvp / custom_vjp,
eval_shape / ShapeDtypeStruct, make_jaxpr, disable_jit, block_until_ready.

Jacobians are checked against finite differences (``autodiff_check``'s accurate float32
stencil), eagerly and under ``jit``; custom rules against the rule itself."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.errors import InvalidArgumentError

from autodiff_check import H, assert_close, fd_jacobian, uniform


def _f(x, y):
    """R^(2,3) x R^3 -> (R^3, R^(2,)) with some nonlinearity."""
    a = xnp.sin(x) * y
    return {"a": xnp.sum(a, axis=0), "b": xnp.tanh(xnp.sum(x * x, axis=1))}


def _flat(out):
    return np.concatenate([np.ravel(np.asarray(out["a"])), np.ravel(np.asarray(out["b"]))])


X = uniform("jac-x", (2, 3))
Y = uniform("jac-y", (3,))


def _fd(argnum):
    def g(*v):
        args = [X, Y]
        args[argnum] = v[0]
        return _flat(_f(*args))
    return fd_jacobian(g, [[X, Y][argnum]], H)


@pytest.mark.parametrize("jac", [xlapy.jacfwd, xlapy.jacrev], ids=["jacfwd", "jacrev"])
@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_jacobian_pytree_output_matches_finite_differences(jac, jitted):
    j = jac(_f, argnums=(0, 1))
    if jitted:
        j = xlapy.jit(j)
    got = j(X, Y)
    assert set(got) == {"a", "b"}
    assert got["a"][0].shape == (3, 2, 3) and got["a"][1].shape == (3, 3)
    assert got["b"][0].shape == (2, 2, 3) and got["b"][1].shape == (2, 3)
    for argnum in (0, 1):
        n_in = [X, Y][argnum].size
        mine = np.concatenate([np.asarray(got["a"][argnum]).reshape(3, n_in),
                               np.asarray(got["b"][argnum]).reshape(2, n_in)])
        assert_close(mine, _fd(argnum), 2e-4, f"{jac.__name__} d/d arg {argnum}")


def test_jacobian_single_argnum_and_dict_input():
    def f(p):
        return xnp.tanh(p["w"] @ p["v"])
    p = {"w": uniform("w", (2, 3)), "v": uniform("v", (3,))}
    jr = xlapy.jacrev(f)(p)
    jf = xlapy.jacfwd(f)(p)
    assert jr["w"].shape == (2, 2, 3) and jr["v"].shape == (2, 3)
    for k in ("w", "v"):
        np.testing.assert_allclose(np.asarray(jr[k]), np.asarray(jf[k]), rtol=1e-5, atol=1e-6)

    def g(v):
        return np.asarray(f({"w": p["w"], "v": v}))
    assert_close(np.asarray(jr["v"]), fd_jacobian(g, [p["v"]], H), 2e-4, "d/dv")


def test_jacobian_has_aux():
    def f(x):
        return xnp.sin(x), {"norm": xnp.sum(x * x)}
    x = uniform("aux", (3,))
    for jac in (xlapy.jacfwd, xlapy.jacrev, xlapy.frontend.jacobians.jacobian):
        j, aux = jac(f, has_aux=True)(x)
        np.testing.assert_allclose(np.asarray(j), np.diag(np.cos(x)), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(float(aux["norm"]), float(np.sum(x * x)), rtol=1e-6)


def test_hessian_matches_finite_differences_of_the_gradient():
    def f(x):
        return xnp.sum(xnp.sin(x) * xnp.roll(x, 1)) + xnp.sum(x ** 3)
    x = uniform("hess", (4,))
    grad = xlapy.grad(f)
    fd = fd_jacobian(lambda v: np.asarray(grad(v)), [x], H)
    for hess in (xlapy.hessian(f), xlapy.jit(xlapy.hessian(f)),
                 xlapy.jacrev(xlapy.jacfwd(f)), xlapy.jacrev(xlapy.jacrev(f))):
        h = np.asarray(hess(x))
        assert h.shape == (4, 4)
        assert_close(h, fd, 2e-4, "hessian")
        np.testing.assert_allclose(h, h.T, atol=1e-5)


def test_jacobians_agree_with_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = uniform("jaxjac", (2, 3))

    def ours(v):
        return xnp.tanh(xnp.sin(v) @ xnp.cos(v).T)

    def theirs(v):
        return jnp.tanh(jnp.sin(v) @ jnp.cos(v).T)
    for a, b in ((xlapy.jacfwd, jax.jacfwd), (xlapy.jacrev, jax.jacrev),
                 (xlapy.hessian, jax.hessian)):
        np.testing.assert_allclose(np.asarray(a(ours)(x)), np.asarray(b(theirs)(x)),
                                   rtol=2e-5, atol=2e-6)


def test_jacobian_input_checks():
    with pytest.raises(InvalidArgumentError, match="allow_int"):
        xlapy.jacrev(lambda x: x * 2)(xnp.arange(3))
    with pytest.raises(InvalidArgumentError, match="holomorphic"):
        xlapy.jacfwd(lambda x: x)(xnp.ones(2, dtype=np.complex64))


# ------------------------------------------------------------------------------ custom_jvp
@xlapy.custom_jvp
def _softplus(x):
    return xnp.log1p(xnp.exp(x))


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _softplus(x), t * lax.logistic(x)


def test_custom_jvp_forward_reverse_and_second_order():
    x = uniform("sp", (5,), -3, 3)
    y, t = xlapy.jvp(_softplus, (x,), (np.ones(5, np.float32),))
    np.testing.assert_allclose(np.asarray(t), 1 / (1 + np.exp(-x)), rtol=1e-6)
    g = xlapy.grad(lambda v: xnp.sum(_softplus(v)))(x)
    np.testing.assert_allclose(np.asarray(g), 1 / (1 + np.exp(-x)), rtol=1e-6)
    h = xlapy.jit(xlapy.grad(lambda v: xnp.sum(xlapy.grad(lambda u: xnp.sum(_softplus(u)))(v))))(x)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(np.asarray(h), s * (1 - s), rtol=1e-5)


def test_custom_jvp_rule_is_used_not_the_function():
    @xlapy.custom_jvp
    def f(x):
        return xnp.sin(x)
    f.defjvps(lambda g, ans, x: 3.0 * g)
    x = uniform("rule", (3,))
    np.testing.assert_allclose(np.asarray(xlapy.grad(lambda v: xnp.sum(f(v)))(x)), 3.0)
    np.testing.assert_allclose(np.asarray(xlapy.jacfwd(f)(x)), 3.0 * np.eye(3))
    np.testing.assert_allclose(np.asarray(f(x)), np.sin(x), rtol=1e-6)


def test_custom_jvp_nondiff_argnums():
    from functools import partial

    @partial(xlapy.custom_jvp, nondiff_argnums=(0,))
    def app(fn, x):
        return fn(x)

    @app.defjvp
    def app_jvp(fn, primals, tangents):
        (x,), (t,) = primals, tangents
        return app(fn, x), 2.0 * t
    x = uniform("nd", (3,))
    np.testing.assert_allclose(np.asarray(xlapy.grad(lambda v: xnp.sum(app(xnp.sin, v)))(x)), 2.0)


def test_relu_gradient_at_zero_comes_from_its_custom_jvp():
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    g = xlapy.grad(lambda v: xnp.sum(xlapy.nn.relu(v)))(x)
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0, 1.0])
    text = str(xlapy.make_jaxpr(xlapy.grad(lambda v: xnp.sum(xlapy.nn.relu(v))))(x))
    assert "custom_jvp_call[relu]" in text


def test_softmax_custom_jvp_matches_finite_differences():
    x = uniform("softmax", (2, 4), -2, 2)
    j = xlapy.jacrev(lambda v: xlapy.nn.softmax(v, axis=-1))(x)
    fd = fd_jacobian(lambda v: np.asarray(xlapy.nn.softmax(v, axis=-1)).ravel(), [x], H)
    assert_close(np.asarray(j).reshape(8, 8), fd, 2e-4, "softmax jacobian")


# ------------------------------------------------------------------------------ custom_vjp
from functools import partial  # noqa: E402


@partial(xlapy.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x


def _clip_fwd(lo, hi, x):
    return x, None


def _clip_bwd(lo, hi, _, g):
    return (xnp.clip(g, lo, hi),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_clips_gradients_in_a_jitted_training_loop():
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(64, 3)).astype(np.float32)
    w_true = np.array([1.5, -2.0, 0.5], np.float32)
    ys = xs @ w_true

    def loss(w):
        pred = xnp.asarray(xs) @ clip_gradient(-0.5, 0.5, w)
        return xnp.mean((pred - ys) ** 2)

    @xlapy.jit
    def step(w):
        g = xlapy.grad(loss)(w)
        return w - 0.1 * g, g

    w = xnp.zeros(3)
    w, g0 = step(w)
    raw = xlapy.grad(lambda v: xnp.mean((xnp.asarray(xs) @ v - ys) ** 2))(xnp.zeros(3))
    np.testing.assert_allclose(np.asarray(g0), np.clip(np.asarray(raw), -0.5, 0.5), rtol=1e-6)
    assert np.max(np.abs(np.asarray(raw))) > 0.5          # the clip mattered
    first = float(loss(w))
    for _ in range(200):
        w, _ = step(w)
    assert float(loss(w)) < 1e-3 * first
    np.testing.assert_allclose(np.asarray(w), w_true, atol=1e-2)


def test_custom_vjp_residuals_and_second_order():
    @xlapy.custom_vjp
    def f(x):
        return xnp.sin(x)

    def fwd(x):
        return xnp.sin(x), xnp.cos(x)

    def bwd(cos_x, g):
        return (g * cos_x,)
    f.defvjp(fwd, bwd)
    x = uniform("cvjp", (4,))
    np.testing.assert_allclose(np.asarray(xlapy.grad(lambda v: xnp.sum(f(v)))(x)), np.cos(x),
                               rtol=1e-6)
    second = xlapy.grad(lambda v: xnp.sum(xlapy.grad(lambda u: xnp.sum(f(u)))(v)))(x)
    np.testing.assert_allclose(np.asarray(second), -np.sin(x), rtol=1e-5, atol=1e-6)
    jf = xlapy.jacfwd(f)(x)                 # forward mode transposes bwd
    np.testing.assert_allclose(np.asarray(jf), np.diag(np.cos(x)), rtol=1e-6, atol=1e-7)


def test_custom_vjp_bad_bwd_is_a_typed_error():
    @xlapy.custom_vjp
    def f(x, y):
        return x * y
    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g,))
    with pytest.raises(InvalidArgumentError, match="2 cotangents"):
        xlapy.grad(f)(np.float32(1.0), np.float32(2.0))
    with pytest.raises(InvalidArgumentError, match="no VJP rule"):
        xlapy.custom_vjp(lambda x: x)(1.0)


# --------------------------------------------------------- eval_shape, make_jaxpr, others
def test_eval_shape_and_lower_take_shape_dtype_structs():
    def f(x, y):
        return {"s": x @ y, "n": xnp.sum(x)}
    a = xlapy.ShapeDtypeStruct((2, 3), np.float32)
    b = xlapy.ShapeDtypeStruct((3, 5), np.float32)
    out = xlapy.eval_shape(f, a, b)
    assert out["s"] == xlapy.ShapeDtypeStruct((2, 5), np.float32)
    assert out["n"].shape == () and out["n"].dtype == np.float32
    assert xlapy.eval_shape(lambda x: x * 2, 1.0).weak_type
    text = xlapy.jit(f).lower(a, b).as_text()
    assert "f32[2,3]" in text and "f32[3,5]" in text and "dot(" in text


def test_make_jaxpr_prints_the_primitives():
    def f(x, y):
        return xnp.sin(x) * y + 2.0
    text = str(xlapy.make_jaxpr(f)(np.ones(3, np.float32), np.ones(3, np.float32)))
    assert text.startswith("{ lambda ; a:f32[3] b:f32[3]. let")
    assert "c:f32[3] = sin a" in text and "mul c b" in text
    assert text.rstrip().endswith(",) }")
    program = xlapy.make_jaxpr(f)(xlapy.ShapeDtypeStruct((2,), np.float32), np.ones(2))
    assert [e.prim.name for e in program.eqns][:2] == ["sin", "mul"]

    def g(x):
        return lax.cond(xnp.sum(x) > 0, xnp.sin, xnp.cos, x)
    text = str(xlapy.make_jaxpr(g)(np.ones(3, np.float32)))
    assert "= cond[" in text and "HloComputation" not in text     # branches left out


def test_disable_jit_runs_python_op_by_op():
    seen = []

    @xlapy.jit
    def f(x):
        seen.append(float(xnp.sum(x)))      # needs a concrete value
        return x * 2
    with xlapy.disable_jit():
        np.testing.assert_allclose(np.asarray(f(xnp.ones(3))), 2.0)
    assert seen == [3.0]
    with pytest.raises(InvalidArgumentError, match="traced"):
        f(xnp.ones(3))


def test_block_until_ready_returns_its_argument():
    tree = {"a": xnp.ones(2), "b": [xnp.zeros(3)]}
    assert xlapy.block_until_ready(tree) is tree


def test_hessian_of_several_arguments_nests_like_jax():
    def f(x, y):
        return xnp.sum(xnp.sin(x) * y[:2]) + xnp.sum(y ** 3)
    x, y = uniform("hx", (2,)), uniform("hy", (3,))
    h = xlapy.hessian(f, argnums=(0, 1))(x, y)
    assert [[b.shape for b in row] for row in h] == [[(2, 2), (2, 3)], [(3, 2), (3, 3)]]
    full = np.block([[np.asarray(b) for b in row] for row in h])
    gradf = xlapy.grad(f, argnums=(0, 1))
    fd = fd_jacobian(lambda a, b: np.concatenate([np.asarray(g) for g in gradf(a, b)]),
                     [x, y], H)
    assert_close(full, fd, 2e-4, "hessian blocks")
    jax = pytest.importorskip("jax")
    hj = jax.hessian(lambda a, b: jax.numpy.sum(jax.numpy.sin(a) * b[:2]) + jax.numpy.sum(b ** 3),
                     argnums=(0, 1))(x, y)
    for row, row_j in zip(h, hj):
        for b, bj in zip(row, row_j):
            np.testing.assert_allclose(np.asarray(b), np.asarray(bj), rtol=1e-5, atol=1e-6)


def test_custom_vjp_under_gradient_tape():
    @xlapy.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: (x * 2.0, None), lambda _, g: (g * 10.0,))
    x = xlapy.Variable(np.ones(3, np.float32))
    with xlapy.GradientTape() as tape:
        y = xnp.sum(f(x.read_value()))
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), 10.0)


def test_custom_functions_closing_over_differentiated_values_are_errors():
    w = uniform("cw", (3,))

    def loss_jvp(w):
        @xlapy.custom_jvp
        def f(x):
            return x * w
        f.defjvps(lambda g, ans, x: g * w)
        return xnp.sum(f(2.0 * w))

    def loss_vjp(w):
        @xlapy.custom_vjp
        def f(x):
            return x * w
        f.defvjp(lambda x: (x * w, None), lambda _, g: (g * w,))
        return xnp.sum(f(2.0 * w))
    for loss in (loss_jvp, loss_vjp):
        with pytest.raises(InvalidArgumentError, match="closes over a value"):
            xlapy.grad(loss)(w)
        np.testing.assert_allclose(float(loss(w)), float(np.sum(2 * w * w)), rtol=1e-6)  # no grad
