"""Must-be-constant arguments: every op that needs a compile-time int, shape or axis asks
for it through ``xlapy.frontend.tracing`` (``concrete_int`` / ``concrete_ints`` /
``concrete_value``), so a jit argument in such a position makes jit specialize on its
value and recompile per value (TensorFlow's behaviour), with the reason saying so.

The table calls each op with the constant as a jit argument, for two values and the first
again, and checks the results against the same call run eagerly with a Python int, the
compile count (one per value) and the recompile reasons.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax, nn
from xlapy import random as xr
from xlapy.errors import InvalidArgumentError
from xlapy.frontend.pytree import tree_flatten

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7.0
X1 = X[:, :1]                       # a size-1 axis for squeeze
IMG = np.arange(2 * 6 * 6 * 1, dtype=np.float32).reshape(2, 6, 6, 1) / 5.0
KEY = np.asarray(xr.key(3))

# name -> (function of (array, constant), array, first value, second value)
CASES: dict[str, tuple[Callable[[Any, Any], Any], np.ndarray, Any, Any]] = {
    "sum axis": (lambda a, v: xnp.sum(a, axis=v), X, 0, 2),
    "argmax axis": (lambda a, v: xnp.argmax(a, axis=v), X, 1, 2),
    "cumsum axis": (lambda a, v: xnp.cumsum(a, axis=v), X, 0, 1),
    "sort axis": (lambda a, v: xnp.sort(-a, axis=v), X, 0, 2),
    "logsumexp axis": (lambda a, v: xnp.logsumexp(a, axis=v), X, 1, 2),
    "softmax axis": (lambda a, v: nn.softmax(a, axis=v), X, 0, 1),
    "reshape shape": (lambda a, v: xnp.reshape(a, (v, -1)), X, 4, 6),
    "slice bound": (lambda a, v: a[:, :v], X, 1, 2),
    "one_hot num_classes": (lambda a, v: nn.one_hot(xnp.argmax(a, -1), v), X, 4, 5),
    "zeros shape": (lambda a, v: xnp.zeros((v, 2)) + a[0, 0, 0], X, 2, 3),
    "full shape": (lambda a, v: xnp.full(v, a[0, 0, 1]), X, 2, 3),
    "eye N": (lambda a, v: xnp.eye(v) * a[0, 0, 1], X, 2, 3),
    "arange stop": (lambda a, v: xnp.arange(v) * a[0, 0, 1], X, 2, 5),
    "linspace num": (lambda a, v: xnp.linspace(0.0, a[0, 0, 1], v), X, 2, 5),
    "split index": (lambda a, v: xnp.split(a, [v], axis=2), X, 1, 3),
    "pad width": (lambda a, v: xnp.pad(a, v), X, 1, 2),
    "tile reps": (lambda a, v: xnp.tile(a, (1, v, 1)), X, 1, 2),
    "repeat count": (lambda a, v: xnp.repeat(a, v, axis=1), X, 1, 2),
    "transpose axes": (lambda a, v: xnp.transpose(a, v), X, np.array([1, 0, 2]),
                       np.array([2, 0, 1])),
    "swapaxes": (lambda a, v: xnp.swapaxes(a, v, 0), X, 1, 2),
    "stack axis": (lambda a, v: xnp.stack([a, a + 1], axis=v), X, 0, 3),
    "concatenate axis": (lambda a, v: xnp.concatenate([a, a], axis=v), X, 0, 2),
    "take axis": (lambda a, v: xnp.take(a, np.array([0, 1]), axis=v), X, 1, 2),
    "moveaxis": (lambda a, v: xnp.moveaxis(a, v, 0), X, 1, 2),
    "moveaxis destination": (lambda a, v: xnp.moveaxis(a, 0, v), X, 1, 2),
    "squeeze axis": (lambda a, v: xnp.squeeze(a, axis=v), X1, 1, -2),
    "flip axis": (lambda a, v: xnp.flip(a, axis=v), X, 0, 2),
    "expand_dims axis": (lambda a, v: xnp.expand_dims(a, v), X, 1, 3),
    "broadcast_to shape": (lambda a, v: xnp.broadcast_to(a[0, 0], (v, 4)), X, 2, 3),
    "max_pool window": (lambda a, v: nn.max_pool(a, (v, v)), IMG, 2, 3),
    "avg_pool strides": (lambda a, v: nn.avg_pool(a, (2, 2), strides=v), IMG, 1, 2),
    "conv strides": (lambda a, v: nn.conv(a, xnp.ones((2, 2, 1, 1)), strides=v), IMG, 1, 2),
    "top_k k": (lambda a, v: lax.top_k(a, v), X, 1, 3),
    "lax.reshape": (lambda a, v: lax.reshape(a[:, :, :v], (v, 6)), X, 2, 3),
    "lax.broadcast_in_dim": (lambda a, v: lax.broadcast_in_dim(a[0, 0], (v, 4), (1,)), X, 2, 3),
    "random.normal shape": (lambda k, v: xr.normal(k, (v,)), KEY, 2, 3),
    "random.uniform shape": (lambda k, v: xr.uniform(k, (v, 2)), KEY, 2, 3),
    "random.bernoulli shape": (lambda k, v: xr.bernoulli(k, 0.5, (v,)), KEY, 4, 5),
    "random.split num": (lambda k, v: xr.split(k, v), KEY, 2, 3),
    "round decimals": (lambda a, v: xnp.round(a, v), X, 1, 2),
}

def _leaves(tree: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in tree_flatten(tree)[0]]


def _params():
    for name, case in CASES.items():
        yield pytest.param(name, *case, id=name)


@pytest.mark.parametrize("name,fn,x,v1,v2", list(_params()))
def test_constant_argument_specializes_per_value(name, fn, x, v1, v2):
    f = xlapy.jit(fn)
    for v in (v1, v2, v1):
        got, want = _leaves(f(x, v)), _leaves(fn(xnp.asarray(x), v))
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, name
            np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=name)
    info = f.cache_info()
    assert (info.misses, info.hits) == (2, 1), (name, info.reasons)
    assert "needs the value of argument 'v'" in info.reasons[0], info.reasons
    assert f"specializing on its value {_text(v1)}" in info.reasons[0], info.reasons
    assert (f"value of must-be-constant argument 'v' changed {_text(v1)} -> {_text(v2)}"
            in info.reasons[1]), info.reasons


def _text(v: Any) -> str:
    """How a recompile reason shows a constant: ints as ints, arrays as lists."""
    return repr(v.tolist()) if isinstance(v, np.ndarray) else repr(v)


@pytest.mark.parametrize("fn", [
    lambda a, v: xnp.moveaxis(a, v + 1, 0),
    lambda a, v: xnp.expand_dims(a, v * 1),
    lambda a, v: nn.max_pool(a, (v + 1, 2)),
    lambda a, v: lax.top_k(a, v + 1),
    lambda a, v: xnp.broadcast_to(a[0, 0], (v + 1, 4)),
], ids=["moveaxis", "expand_dims", "max_pool", "top_k", "broadcast_to"])
def test_value_computed_from_arguments_specializes_on_them(fn):
    """TensorFlow propagates must-be-constant inputs back through the graph: a value an op
    needs, computed from small jit arguments, makes jit specialize on those arguments."""
    x = IMG if fn.__code__.co_names.count("nn") else X
    f = xlapy.jit(fn)
    for v in (1, 0, 1):
        got, want = _leaves(f(x, v)), _leaves(fn(xnp.asarray(x), v))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    info = f.cache_info()
    assert (info.misses, info.hits) == (2, 1)
    assert "needs the value of argument 'v': specializing on its value 1" in \
        info.compiles[0].reason


def test_value_computed_from_several_arguments_specializes_on_all():
    f = xlapy.jit(lambda x, a, b: xnp.reshape(x, (a * b, -1)))
    x = np.arange(24.0, dtype=np.float32)
    assert f(x, 2, 3).shape == (6, 4)
    assert f(x, 3, 2).shape == (6, 4)
    assert f(x, 2, 3).shape == (6, 4)
    info = f.cache_info()
    assert (info.misses, info.hits) == (2, 1)
    assert "values of arguments 'a', 'b': specializing on their values 2, 3" in \
        info.compiles[0].reason


def test_values_that_cannot_be_known_are_a_clear_error():
    """A value computed from a large argument, a Variable or random bits is not specialized
    on: the error names the user's line."""
    big = np.ones(4096, np.float32)
    w = xlapy.Variable(np.int32(3))
    for fn, args in ((lambda x: xnp.zeros((xnp.sum(x).astype(np.int32),)), (big,)),
                     (lambda x: xnp.zeros((w.value() + 1,)), (X,))):
        with pytest.raises(InvalidArgumentError, match="must be a compile-time constant") as e:
            xlapy.jit(fn)(*args)
        assert "test_frontend_constants.py" in str(e.value)        # the user's line


def test_constant_inside_a_loop_body_specializes():
    """A jit argument used as a shape inside a cond branch is still the argument."""
    def f(x, n):
        return lax.cond(x[0, 0, 0] > 0, lambda v: xnp.reshape(v, (n, -1))[-1],
                        lambda v: xnp.reshape(v * 0, (n, -1))[-1], x)
    g = xlapy.jit(f)
    np.testing.assert_allclose(np.asarray(g(X, 4)), np.zeros(6))
    np.testing.assert_allclose(np.asarray(g(X + 1, 6)), (X + 1).reshape(6, -1)[-1],
                               rtol=1e-6)
    assert "needs the value of argument 'n'" in g.cache_info().reasons[0]


def test_array_valued_constant_argument():
    f = xlapy.jit(lambda a, s: xnp.reshape(a, s))
    assert f(X, np.array([4, 6])).shape == (4, 6)
    assert f(X, np.array([6, 4])).shape == (6, 4)
    assert f.cache_info().misses == 2
