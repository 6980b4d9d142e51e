"""The fast path of cached ``xlapy.jit`` calls gives what the full path gives.

Each scenario builds a jitted function and a list of calls, and runs them twice: with the
fast path off (every call binds, flattens and keys its arguments) and on. The results
(values, dtypes, weak types), the state left in Variables and the caller's arrays, and
``cache_info()`` (hits, misses, every compile's reason and signature) must be the same;
with the fast path on, the number of calls that went through the full path is checked
too, so a fast path that silently never runs fails.
"""
from __future__ import annotations

import collections
import dataclasses
import importlib
import logging
from typing import Any, Callable

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.errors import InvalidArgumentError
from xlapy.frontend.core import Array
from xlapy.frontend.jit import JitFunction, set_fast_path_enabled
from xlapy.frontend.jit_signature import fast_signature, make_binding

jit_module = importlib.import_module("xlapy.frontend.jit")


def f32(*values):
    return np.array(values, np.float32)


@pytest.fixture
def full_calls(monkeypatch):
    """Counts, per jitted function, the calls that took the full path."""
    counts: collections.Counter = collections.Counter()
    original = JitFunction._call_full

    def counting(self, args, kwargs):
        counts[self] += 1
        return original(self, args, kwargs)

    monkeypatch.setattr(JitFunction, "_call_full", counting)
    yield counts
    set_fast_path_enabled(True)


def _plain(x: Any) -> Any:
    """A comparable form of a result: Arrays as (values, dtype, weak), containers kept."""
    if isinstance(x, Array):
        return ("Array", np.asarray(x).tolist(), str(x.dtype), x.weak_type)
    if isinstance(x, np.ndarray):
        return ("ndarray", x.tolist(), str(x.dtype))
    if isinstance(x, xlapy.Variable):
        return ("Variable", x.numpy().tolist(), str(x.dtype))
    if isinstance(x, (list, tuple)):
        return type(x).__name__, [_plain(e) for e in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


Scenario = Callable[[], tuple[JitFunction, list[Callable[[JitFunction], Any]]]]


def _run(make: Scenario, fast: bool, counts: collections.Counter) -> tuple[list, Any, int]:
    set_fast_path_enabled(fast)
    try:
        f, steps = make()
        results = []
        for step in steps:
            try:
                results.append(_plain(step(f)))
            except InvalidArgumentError as e:
                results.append(("error", type(e).__name__, str(e)))
    finally:
        set_fast_path_enabled(True)
    return results, f.cache_info(), counts[f]


def same_on_both_paths(make: Scenario, counts: collections.Counter,
                       full_path_calls: int) -> tuple[list, Any]:
    """Run ``make``'s calls on both paths, compare everything; return the results and the
    cache info."""
    slow, slow_info, slow_full = _run(make, False, counts)
    fast, fast_info, fast_full = _run(make, True, counts)
    assert fast == slow
    assert (fast_info.hits, fast_info.misses) == (slow_info.hits, slow_info.misses)
    assert fast_info.reasons == slow_info.reasons
    assert [c.signature for c in fast_info.compiles] == \
        [c.signature for c in slow_info.compiles]
    assert fast_full == full_path_calls
    return fast, fast_info


# ----------------------------------------------------------------------- array leaves
def test_same_shape_different_dtype(full_calls):
    x = f32(1, 2, 3, 4)

    def make():
        return xlapy.jit(lambda x: x * 2), [
            lambda f: f(x), lambda f: f(x),
            lambda f: f(x.astype(np.float64)),       # canonicalized to f32: a hit
            lambda f: f(x.astype(np.float64)),
            lambda f: f(x.astype(np.int32)),         # a new dtype: a miss
            lambda f: f(x)]

    res, info = same_on_both_paths(make, full_calls, full_path_calls=3)
    assert res[2] == ("Array", [2.0, 4.0, 6.0, 8.0], "float32", False)
    assert res[4] == ("Array", [2, 4, 6, 8], "int32", False)
    assert (info.hits, info.misses) == (4, 2)
    assert "argument 'x' dtype changed f32[4] -> s32[4]" in info.reasons[1]


def test_weak_python_scalars_vs_arrays(full_calls):
    x = f32(1, 2, 3)
    weak_two = Array(np.asarray(2.0, np.float32), weak_type=True)

    def make():
        return xlapy.jit(lambda x, y: x * y), [
            lambda f: f(x, 2.0), lambda f: f(x, 3.0),
            lambda f: f(x, weak_two),                 # same key as a Python float
            lambda f: f(x, np.float32(2.0)),          # strong: a miss
            lambda f: f(x, np.asarray(2.0)),          # f64 0-d -> f32, strong: a hit
            lambda f: f(x, 2), lambda f: f(x, True),
            lambda f: f(x, 5), lambda f: f(x, 2 ** 40)]

    res, _ = same_on_both_paths(make, full_calls, full_path_calls=7)
    assert res[1] == ("Array", [3.0, 6.0, 9.0], "float32", False)
    assert res[5] == ("Array", [2.0, 4.0, 6.0], "float32", False)
    assert res[8][0] == "error" and "argument 'y' of type int" in res[8][2]

    def scalar_out():
        strong_two = Array(np.asarray(2.0, np.float32))
        return xlapy.jit(lambda s: s * 2), [lambda f: f(2.0), lambda f: f(2.5),
                                            lambda f: f(weak_two), lambda f: f(strong_two),
                                            lambda f: f(np.float32(2.0))]

    res, _ = same_on_both_paths(scalar_out, full_calls, full_path_calls=4)
    assert [r[3] for r in res] == [True, True, True, False, False]   # the results' weak type


def test_numpy_array_and_xlapy_array_share_an_entry(full_calls):
    x = f32(1, 2)

    def make():
        return xlapy.jit(lambda x: x + 1), [
            lambda f: f(x), lambda f: f(xnp.asarray(x)), lambda f: f(x),
            lambda f: f(xnp.asarray(x))]

    _, info = same_on_both_paths(make, full_calls, full_path_calls=2)
    assert (info.hits, info.misses) == (3, 1)


# -------------------------------------------------------------------------- variables
def test_variable_changed_between_calls(full_calls):
    def make():
        v = xlapy.Variable(f32(1, 1, 1))
        total = xlapy.Variable(f32(0, 0, 0))
        x = f32(1, 2, 3)

        def step(x):
            total.assign_add(x * v)
            return total.read_value() * 2

        f = xlapy.jit(step)
        return f, [lambda f: f(x), lambda f: (f(x), total),
                   lambda f: (v.assign(f32(10, 10, 10)), f(x))[1],
                   lambda f: (f(x), total, v)]

    res, _ = same_on_both_paths(make, full_calls, full_path_calls=1)
    assert res[3][1][1] == ("Variable", [22.0, 44.0, 66.0], "float32")


def test_variable_as_an_argument(full_calls):
    def make():
        a, b = xlapy.Variable(f32(1, 2)), xlapy.Variable(f32(5, 5))

        def bump(var, x):
            var.assign_add(x)
            return var.read_value()

        x = f32(1, 1)
        return xlapy.jit(bump), [lambda f: f(a, x), lambda f: f(a, x), lambda f: f(b, x),
                                 lambda f: f(a, x), lambda f: (f(b, x), a, b)]

    res, info = same_on_both_paths(make, full_calls, full_path_calls=2)
    assert res[-1][1] == [("Array", [7.0, 7.0], "float32", False),
                          ("Variable", [4.0, 5.0], "float32"),
                          ("Variable", [7.0, 7.0], "float32")]
    assert "(another Variable)" in info.reasons[1]


# ---------------------------------------------------------------- keywords and statics
def test_keyword_arguments(full_calls):
    x, y = f32(1, 2), f32(10, 20)

    def make():
        return xlapy.jit(lambda x, y=1.0, z=2.0: (x + y) * z), [
            lambda f: f(x, y), lambda f: f(x, y), lambda f: f(x, y=y), lambda f: f(x, y=y),
            lambda f: f(y=y, x=x), lambda f: f(x, z=3.0), lambda f: f(x, z=3.0),
            lambda f: f(x), lambda f: f(x, y, w=1)]

    res, info = same_on_both_paths(make, full_calls, full_path_calls=6)
    assert res[5] == ("Array", [6.0, 9.0], "float32", False)      # y keeps its default
    assert res[8][0] == "error" and "unexpected keyword argument 'w'" in res[8][2]
    assert (info.hits, info.misses) == (5, 3)


def test_static_arguments(full_calls):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def make():
        f = xlapy.jit(lambda x, axis, keep=False: xnp.sum(x, axis=axis, keepdims=keep),
                      static_argnums=1, static_argnames="keep")
        return f, [lambda f: f(x, 0), lambda f: f(x, 0), lambda f: f(x, 1),
                   lambda f: f(x, 1), lambda f: f(x, axis=1), lambda f: f(x, 1, keep=True),
                   lambda f: f(x, 1, True), lambda f: f(x, [0])]

    res, info = same_on_both_paths(make, full_calls, full_path_calls=6)
    assert res[2] == ("Array", [3.0, 12.0], "float32", False)
    assert res[6] == ("Array", [[3.0], [12.0]], "float32", False)
    assert res[7][0] == "error" and "must be hashable" in res[7][2]
    assert "value of static argument 'axis' changed 0 -> 1" in info.reasons[1]
    assert (info.hits, info.misses) == (4, 3)


def test_varargs_and_var_keywords(full_calls):
    def body(a, *rest, k=3.0, **kw):
        return a + sum(rest) + k + sum(kw[n] for n in sorted(kw))

    def make():
        return xlapy.jit(body), [lambda f: f(1.0, 2.0, 3.0, k=10.0, u=100.0),
                                 lambda f: f(1.0, 2.0, 3.0, k=10.0, u=200.0),
                                 lambda f: f(1.0, 2.0)]

    res, _ = same_on_both_paths(make, full_calls, full_path_calls=2)
    assert [r[1] for r in res] == [116.0, 216.0, 6.0]


# ------------------------------------------------------------------ must-be-constant
def test_must_be_constant_argument_changing_value(full_calls):
    x = np.arange(12, dtype=np.float32)

    def make():
        return xlapy.jit(lambda x, n: xnp.reshape(x, (n, -1))), [
            lambda f: f(x, 2), lambda f: f(x, 2), lambda f: f(x, 3), lambda f: f(x, 3),
            lambda f: f(x, np.int32(3)), lambda f: f(x, 2)]

    res, info = same_on_both_paths(make, full_calls, full_path_calls=6)
    assert res[2][1] == x.reshape(3, 4).tolist()
    assert (info.hits, info.misses) == (4, 2)
    assert "value of must-be-constant argument 'n' changed 2 -> 3" in info.reasons[1]


def test_constant_found_after_fast_calls_of_the_same_structure(full_calls):
    small, big = f32(1, 2, 3, 4), np.arange(12, dtype=np.float32)

    def body(x, n):
        return xnp.reshape(x, (n, -1)) if x.shape[0] > 4 else x * n

    def make():
        return xlapy.jit(body), [lambda f: f(small, 2), lambda f: f(small, 2),
                                 lambda f: f(big, 3), lambda f: f(small, 2),
                                 lambda f: f(small, 2)]

    _, info = same_on_both_paths(make, full_calls, full_path_calls=4)
    assert info.misses == 3          # after 'n' became constant, small calls specialize too
    assert "needs the value of argument 'n'" in info.reasons[1]
    assert "value of must-be-constant argument 'n' changed 3 -> 2" in info.reasons[2]


# ------------------------------------------------------------------ pytrees, donation
Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Pair:
    a: Any
    b: Any


def test_pytrees(full_calls):
    x, y = f32(1, 2), f32(3, 4)

    def body(tree, p, pair):
        return {"sum": tree["b"] + tree["a"][0] + tree["a"][1][0], "p": [p.x * p.y],
                "pair": pair.a - pair.b}

    def make():
        t1 = {"b": x, "a": [y, (x, None)]}
        t2 = {"a": [y, (x, None)], "b": x}             # same keys, other insertion order
        return xlapy.jit(body), [lambda f: f(t1, Point(x, y), Pair(x, y)),
                                 lambda f: f(t1, Point(x, y), Pair(x, y)),
                                 lambda f: f(t2, Point(y, x), Pair(y, x)),
                                 lambda f: f(t2, Point(x, 2.0), Pair(x, y))]

    res, info = same_on_both_paths(make, full_calls, full_path_calls=4)   # dataclasses: full
    assert res[2]["sum"] == ("Array", [5.0, 8.0], "float32", False)
    assert (info.hits, info.misses) == (2, 2)


def test_pytrees_on_the_fast_path(full_calls):
    x = f32(1, 2)

    def make():
        tree = {"w": [x, (x, None)], "p": Point(x, 2.0)}
        return xlapy.jit(lambda t: (t["w"][0] * t["p"].y, t["w"][1])), [
            lambda f: f(tree), lambda f: f(tree), lambda f: f(tree)]

    res, _ = same_on_both_paths(make, full_calls, full_path_calls=1)
    assert res[2] == ("tuple", [("Array", [2.0, 4.0], "float32", False),
                                ("tuple", [("Array", [1.0, 2.0], "float32", False), None])])


def test_donated_arguments(full_calls):
    def make():
        x, y = f32(1, 2, 3), f32(10, 20, 30)
        f = xlapy.jit(lambda x, y: (x + y, y * 2), donate_argnums=0)
        return f, [lambda f: f(x, y), lambda f: (f(x, y), x, y), lambda f: (f(x, y), x)]

    res, _ = same_on_both_paths(make, full_calls, full_path_calls=1)
    out, x_after, _ = res[1][1]
    assert out[1][0] == ("Array", [11.0, 22.0, 33.0], "float32", False)
    assert x_after == ("ndarray", [1.0, 2.0, 3.0], "float32")


# -------------------------------------------------------------------- autodiff, misc
def test_calls_under_a_gradient_tape(full_calls):
    x, w = f32(0.5, -1.0, 2.0), f32(0.3, 0.2, -0.1)

    def make():
        f = xlapy.jit(lambda x, w: xnp.sum(xnp.tanh(x * w)))

        def taped(f):
            wv = xlapy.Variable(w)
            with xlapy.GradientTape() as tape:
                out = f(x, wv.read_value())
            return out, tape.gradient(out, wv)
        return f, [lambda f: f(x, w), lambda f: xlapy.grad(f, argnums=1)(x, w),
                   lambda f: xlapy.grad(f, argnums=1)(x, w), taped, lambda f: f(x, w),
                   lambda f: f(x, w)]

    res, info = same_on_both_paths(make, full_calls, full_path_calls=4)
    assert (info.hits, info.misses) == (5, 1)
    want = x * (1 - np.tanh(x * w) ** 2)
    np.testing.assert_allclose(res[1][1], want, rtol=1e-6)
    np.testing.assert_allclose(res[3][1][1][1], want, rtol=1e-6)
    f, steps = make()
    for step in steps:
        step(f)
    assert len(f._backward) == 1                   # one compiled vjp, reused


def test_recompilation_storm_warning_with_fast_hits(caplog):
    f = xlapy.jit(lambda x: x + 1, recompile_warning_threshold=3)
    with caplog.at_level(logging.WARNING, logger="xlapy.jit"):
        for n in range(1, 6):
            f(np.ones(n, np.float32))
            f(np.ones(n, np.float32))
    warnings = [r for r in caplog.records if "compiled" in r.getMessage()]
    assert len(warnings) == 1 and "'x'" in warnings[0].getMessage()
    assert (f.cache_info().hits, f.cache_info().misses) == (5, 5)


def test_clear_cache_forgets_fast_entries(full_calls):
    x = f32(1, 2)

    def make():
        return xlapy.jit(lambda x: x - 1), [lambda f: f(x), lambda f: f(x),
                                            lambda f: f.clear_cache(), lambda f: f(x),
                                            lambda f: f(x)]

    _, info = same_on_both_paths(make, full_calls, full_path_calls=2)
    assert info.reasons == ["first call", "first call"]


def test_wrong_number_of_arguments_same_error(full_calls):
    def make():
        return xlapy.jit(lambda x, y: x + y), [lambda f: f(f32(1), f32(2)),
                                               lambda f: f(f32(1)),
                                               lambda f: f(f32(1), f32(2), f32(3))]

    res, _ = same_on_both_paths(make, full_calls, full_path_calls=3)
    assert "missing a required argument: 'y'" in res[1][2]
    assert "too many positional arguments" in res[2][2]


def test_keyword_skipping_a_default_parameter_reaches_it():
    f = xlapy.jit(lambda x, y=1.0, z=2.0: x * 100 + y * 10 + z)
    assert float(f(np.float32(0), z=5.0)) == 15.0
    assert float(f(np.float32(0), 3.0, z=5.0)) == 35.0


# ------------------------------------------------------------------- fast_signature
def _sig(args, kwargs=None, static=()):
    kwargs = kwargs or {}
    binding = make_binding(None, set(static), len(args), tuple(kwargs))
    return fast_signature(binding, tuple(args), kwargs)


def test_fast_signature_separates_what_the_key_separates():
    x = f32(1, 2)
    assert _sig([x])[0] == _sig([f32(5, 6)])[0]
    assert _sig([x])[0] != _sig([x.astype(np.float64)])[0]
    assert _sig([x])[0] != _sig([x.astype(np.int32)])[0]
    assert _sig([x])[0] != _sig([xnp.asarray(x)])[0]
    assert _sig([2.0])[0] != _sig([np.float32(2.0)])[0]
    assert _sig([{"a": x, "b": 1.0}])[0] == _sig([{"b": 1.0, "a": x}])[0]
    assert _sig([[x, x]])[0] != _sig([(x, x)])[0]
    assert _sig([x, 1], static=["args[1]"])[0] != _sig([x, 2], static=["args[1]"])[0]
    sig, values = _sig([x.astype(np.float64), 3, True])
    assert [v.dtype for v in values] == [np.float32, np.int32, np.bool_]


@pytest.mark.parametrize("arg", [
    Pair(1.0, 2.0), np.ma.masked_array([1.0]), [1.0, object()], 2 ** 40],
    ids=["dataclass", "ndarray-subclass", "object", "big-int"])
def test_fast_signature_leaves_other_arguments_to_the_full_path(arg):
    assert _sig([arg]) is None


def test_fast_signature_unhashable_static_goes_to_the_full_path():
    assert _sig([f32(1), [0]], static=["args[1]"]) is None


def test_fast_path_switch_is_global():
    assert jit_module._FAST_PATH[0] is True
    set_fast_path_enabled(False)
    try:
        assert jit_module._FAST_PATH[0] is False
    finally:
        set_fast_path_enabled(True)
