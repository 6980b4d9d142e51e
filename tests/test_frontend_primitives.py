"""The primitive table of the front end: one registration API, rules looked up on the
primitive (control flow included), batching-rule slots, the bounded eager cache."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.errors import InvalidArgumentError
from xlapy.frontend import core
from xlapy.frontend.core import PRIMITIVES, Primitive, get_primitive, primitive
from xlapy.frontend.primitives_elementwise import BINARY, UNARY
from autodiff_check import prims_on_path

FRONTEND = Path(xlapy.__file__).parent / "frontend"


def test_every_name_the_lax_wrappers_bind_is_registered():
    """``lax.py`` binds primitives by name: each name it uses must exist."""
    tree = ast.parse((FRONTEND / "lax.py").read_text())
    names = {node.args[0].value for node in ast.walk(tree)
             if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "get_primitive"
             and node.args and isinstance(node.args[0], ast.Constant)}
    generated = {n for n in list(UNARY) + list(BINARY)}
    generated |= {f"reduce_{k}" for k in ("sum", "prod", "max", "min", "and", "or")}
    generated |= {f"cum{k}" for k in ("sum", "prod", "max", "min")}
    assert names, "no get_primitive calls found"
    missing = sorted((names | generated) - set(PRIMITIVES))
    assert not missing, f"lax.py binds unregistered primitives: {missing}"


def test_every_registered_primitive_has_a_lowering_and_a_vjp():
    # the gradient table classifies the rest: outputs with no gradient, or grad raises
    from test_autodiff_rules import NO_GRADIENT_RULE, NOT_DIFFERENTIABLE
    for name, prim in PRIMITIVES.items():
        assert getattr(prim.lower, "__func__", None) is not Primitive._no_lowering, name
        assert prim.vjp is not None or name in NO_GRADIENT_RULE or name in NOT_DIFFERENTIABLE, \
            f"{name} has no vjp rule"


def test_a_primitive_without_a_lowering_says_so():
    with pytest.raises(InvalidArgumentError, match="'unlowered' has no lowering"):
        Primitive("unlowered").lower(None)


def test_unknown_primitive_and_duplicate_names_are_typed_errors():
    with pytest.raises(InvalidArgumentError, match="no primitive named 'no_such_op'"):
        get_primitive("no_such_op")
    with pytest.raises(InvalidArgumentError, match="'add' is defined twice"):
        primitive("add")


def test_missing_batching_rule_says_which_primitive():
    prim = Primitive("unbatched")
    assert not prim.has_batching_rule
    with pytest.raises(InvalidArgumentError, match="vmap of 'unbatched' is not supported"):
        prim.batching_rule([xnp.ones(3)], [0])


@pytest.mark.parametrize("name", ["exp", "neg", "cbrt"])
def test_unary_batching_rule_maps_over_the_batch_axis(name):
    x = np.random.default_rng(0).uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    prim = get_primitive(name)
    out, out_dim = prim.batching_rule([xnp.asarray(x.T)], [1])
    assert out_dim == 0
    want = np.stack([np.asarray(prim.bind(xnp.asarray(row))) for row in x])
    np.testing.assert_array_equal(np.asarray(out), want)


def test_binary_batching_rule_broadcasts_an_unbatched_operand():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([10.0, 20.0, 30.0], np.float32)
    out, out_dim = get_primitive("sub").batching_rule([xnp.asarray(x), xnp.asarray(y)],
                                                      [0, None])
    assert out_dim == 0
    np.testing.assert_array_equal(np.asarray(out), x - y)


def test_traced_control_flow_records_one_primitive_each():
    """Under jit each construct is one tape node whose rule is found on its primitive."""
    seen = {}

    def f(x, p, i):
        seen["cond"] = prims_on_path(
            lambda x: lax.cond(p, lambda a: a * 2.0, lambda a: -a, x), [x], [0])
        seen["switch"] = prims_on_path(
            lambda x: lax.switch(i, [lambda a: a * 2.0, lambda a: -a], x), [x], [0])
        seen["scan"] = prims_on_path(
            lambda x: lax.scan(lambda c, v: (c + v, c * v), x, xnp.ones((2, 3))), [x], [0])
        seen["while"] = prims_on_path(
            lambda x: lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2.0),
                                     (0, x)), [x], [0])
        return x

    xlapy.jit(f)(np.ones(3, np.float32), True, 1)
    assert seen["cond"] == {"cond"} and seen["switch"] == {"switch"}
    assert seen["while"] == {"while"} and seen["scan"] == {"scan"}
    for name in ("cond", "switch", "scan", "while"):
        assert PRIMITIVES[name].vjp is not None
    assert PRIMITIVES["while"].jvp is not None


def test_eager_cache_drops_the_least_recently_used(monkeypatch):
    monkeypatch.setenv("XLAPY_EAGER_CACHE_SIZE", "2")
    monkeypatch.setattr(core, "_EAGER_CACHE", type(core._EAGER_CACHE)())
    a, b, c = (xnp.asarray(np.ones(n, np.float32)) for n in (5, 6, 7))
    a + a
    b + b
    a + a                      # a is now the most recently used
    c + c                      # evicts b
    assert core.eager_cache_size() == 2
    shapes = {key[2][0][0] for key in core._EAGER_CACHE}
    assert shapes == {(5,), (7,)}
    np.testing.assert_array_equal(np.asarray(b + b), np.full(6, 2.0))
    assert core.eager_cache_size() == 2


def test_eager_cache_size_must_be_a_positive_integer(monkeypatch):
    from xlapy import config
    monkeypatch.setenv("XLAPY_EAGER_CACHE_SIZE", "zero")
    with pytest.raises(InvalidArgumentError, match="XLAPY_EAGER_CACHE_SIZE"):
        config.cache_settings()
    monkeypatch.setenv("XLAPY_EAGER_CACHE_SIZE", "0")
    with pytest.raises(InvalidArgumentError, match="below the minimum 1"):
        config.cache_settings()
    monkeypatch.delenv("XLAPY_EAGER_CACHE_SIZE")
    assert config.cache_settings().eager_ops == config.CacheSettings().eager_ops


def test_public_lax_exports_exactly_its_all():
    import xlapy.lax as public
    assert len(set(public.__all__)) == len(public.__all__)
    for name in public.__all__:
        assert callable(getattr(public, name)), name
    for internal in ("Array", "to_array", "concrete_int", "concrete_ints", "stack_nested",
                     "bind", "np"):
        assert internal not in public.__all__
