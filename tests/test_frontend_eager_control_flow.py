"""Eager ``lax`` control flow has the compiled form's semantics: operands become Arrays,
branches and bodies are checked as under ``jit``, and results have the same types, dtypes
and weak types eagerly and jitted."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.errors import InvalidArgumentError
from xlapy.frontend.core import Array
from xlapy.frontend.pytree import tree_flatten

XI = np.arange(4, dtype=np.int32)
XF = np.linspace(-1, 1, 4).astype(np.float32)

CASES: dict[str, tuple[Callable[..., Any], tuple]] = {
    "cond int operand, true division": (
        lambda p, a: lax.cond(p, lambda v: v / 2, lambda v: v * 0.5, a), (True, XI)),
    "cond false branch": (
        lambda p, a: lax.cond(p, lambda v: v / 2, lambda v: v * 0.5, a), (False, XI)),
    "cond python scalar operands": (
        lambda p, a: lax.cond(p, lambda u, w: (u + 1, w), lambda u, w: (u * 2, w), 3, a),
        (True, XF)),
    "cond weak in one branch only": (
        lambda p, a: lax.cond(p, lambda v: 2.0, lambda v: xnp.sum(v), a), (True, XF)),
    "switch": (lambda i, a: lax.switch(i, [lambda v: v + 1, lambda v: v * 2,
                                           lambda v: -v], a), (1, XI)),
    "switch clamped index": (lambda i, a: lax.switch(i, [lambda v: v + 1, lambda v: v * 2],
                                                     a), (7, XF)),
    "switch one branch": (lambda i, a: lax.switch(i, [lambda v: v / 2], a), (0, XI)),
    "while": (lambda a: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2),
                                       (0, a)), (XI,)),
    "while zero trips": (lambda a: lax.while_loop(lambda c: c[0] < 0,
                                                  lambda c: (c[0] + 1, c[1] * 2), (0, a)),
                         (XF,)),
    "fori_loop": (lambda a: lax.fori_loop(0, 3, lambda i, c: c + i, a), (XI,)),
    "fori_loop python carry": (lambda a: lax.fori_loop(0, 3, lambda i, c: c * 2.0, 1.5), (XI,)),
    "scan": (lambda a: lax.scan(lambda c, x: (c + x, x * 2), 0, a), (XI,)),
    "scan float weak ys": (lambda a: lax.scan(lambda c, x: (c * x, 2.0), 1.0, a), (XF,)),
    "scan reverse": (lambda a: lax.scan(lambda c, x: (c + x, c), 0.0, a, reverse=True), (XF,)),
    "scan length 0": (lambda a: lax.scan(lambda c, x: (c + x, x * 2), 0, a[:0]), (XI,)),
    "scan no xs": (lambda a: lax.scan(lambda c, _: (c + 1, c), a, None, length=3), (XF,)),
}


def _leaves(tree: Any) -> list[Any]:
    return tree_flatten(tree)[0]


@pytest.mark.parametrize("name", list(CASES))
def test_eager_and_jit_give_the_same_types(name):
    fn, args = CASES[name]
    eager, jitted = fn(*args), xlapy.jit(fn)(*args)
    assert tree_flatten(eager)[1] == tree_flatten(jitted)[1], name
    for e, j in zip(_leaves(eager), _leaves(jitted)):
        assert isinstance(e, Array), (name, type(e))
        assert (e.shape, e.dtype, e.weak_type) == (j.shape, j.dtype, j.weak_type), name
        np.testing.assert_allclose(np.asarray(e), np.asarray(j), rtol=1e-6, err_msg=name)


BAD: dict[str, tuple[Callable[..., Any], tuple, str]] = {
    "while body changes the dtype": (
        lambda a: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 1.5), (0, a)),
        (XI,), "while_loop: body_fun must return the structure and types"),
    "while body changes the shape": (
        lambda a: lax.while_loop(lambda c: c[0] < 1, lambda c: (c[0] + 1, c[1][:2]), (0, a)),
        (XF,), "while_loop: body_fun must return the structure and types"),
    "while cond not a bool scalar": (
        lambda a: lax.while_loop(lambda v: v > 0, lambda v: v - 1, a), (XF,),
        "cond_fun must return a bool scalar"),
    "cond branches of different types": (
        lambda p, a: lax.cond(p, lambda v: v, lambda v: v / 2, a), (True, XI),
        "branches must return the same structure and types"),
    "switch branches of different structure": (
        lambda i, a: lax.switch(i, [lambda v: v, lambda v: (v, v)], a), (0, XF),
        "branches must return the same structure and types"),
    "scan carry changes the dtype": (
        lambda a: lax.scan(lambda c, x: (c * 1.5, x), 0, a), (XI,),
        "scan: f must return a carry with the structure and types of init"),
    "fori_loop body changes the dtype": (
        lambda a: lax.fori_loop(0, 2, lambda i, c: c / 2, a), (XI,), "structure and types"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_eager_raises_what_jit_raises(name):
    fn, args, match = BAD[name]
    with pytest.raises(InvalidArgumentError, match=match) as eager:
        fn(*args)
    with pytest.raises(InvalidArgumentError, match=match) as jitted:
        xlapy.jit(fn)(*args)
    assert str(eager.value).split(";")[0] == str(jitted.value).split(";")[0]


def test_eager_while_zero_trips_still_checks_the_body():
    with pytest.raises(InvalidArgumentError, match="body_fun"):
        lax.while_loop(lambda v: xnp.sum(v) < -10, lambda v: v.astype(np.int32), XF)


def test_eager_control_flow_is_still_differentiable():
    def f(x):
        y = lax.cond(xnp.sum(x) > 0, lambda v: v * v, lambda v: -v, x)
        y = lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1] * x), (0, y))[1]
        return xnp.sum(lax.scan(lambda c, v: (c + v, c * v), 0.0, y)[1])
    x = np.array([0.5, 0.25, 1.0], np.float32)
    g = xlapy.grad(f)(x)
    h = 2.0 ** -8
    fd = [(float(f(x + h * e)) - float(f(x - h * e))) / (2 * h)
          for e in np.eye(3, dtype=np.float32)]
    np.testing.assert_allclose(np.asarray(g), fd, rtol=2e-3, atol=2e-3)
