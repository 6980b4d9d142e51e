"""xlapy.jit / xlapy.function: caching, recompile reasons, must-compile errors,
must-be-constant specialization, pytrees, metadata and compiler IR."""
from __future__ import annotations

import collections
import dataclasses
import logging
import os
import traceback

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.errors import InvalidArgumentError
from xlapy.hlo import parse_module
from xlapy.hlo.verifier import verify_module

THIS_FILE = os.path.basename(__file__)


def ones(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, l in enumerate(lines) if text in l)


# ------------------------------------------------------------------------------ caching
def test_cache_hits_misses_and_reasons():
    @xlapy.function(jit_compile=True)
    def f(a, b):
        return a + b

    f(ones(1, 10), ones(1, 10))
    f(ones(1, 100), ones(1, 100))
    out = f(ones(1, 10), ones(1, 10))
    np.testing.assert_array_equal(np.asarray(out), np.full((1, 10), 2.0, np.float32))
    info = f.cache_info()
    assert (info.hits, info.misses) == (1, 2)
    assert info.reasons[0] == "first call"
    assert "argument 'a' shape changed f32[1,10] -> f32[1,100]" in info.reasons[1]


def test_dtype_weak_type_and_static_value_reasons():
    f = xlapy.jit(lambda x, axis: xnp.sum(x, axis=axis), static_argnums=1)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(f(x, 0)), x.sum(0))
    np.testing.assert_array_equal(np.asarray(f(x, 1)), x.sum(1))
    f(x.astype(np.int32), 1)
    f(x, axis=1)
    reasons = f.cache_info().reasons
    assert "value of static argument 'axis' changed 0 -> 1" in reasons[1]
    assert len(reasons) == 3 and f.cache_info().hits == 1
    assert "argument 'x' dtype changed f32[2,3] -> s32[2,3]" in reasons[2]
    g = xlapy.jit(lambda s: s * 2)
    g(2.0)
    g(np.float32(2.0))
    assert "weak type changed f32[]{weak} -> f32[]" in g.cache_info().reasons[1]
    assert g(3.0).weak_type and not g(np.float32(3.0)).weak_type


def test_python_runs_once_per_signature():
    calls = []

    @xlapy.jit
    def f(x):
        calls.append(1)
        return x * 2

    for _ in range(3):
        f(ones(3))
    f(ones(4))
    assert len(calls) == 2 and f.cache_info().hits == 2


def test_recompilation_storm_warning(caplog):
    f = xlapy.jit(lambda x: x + 1, recompile_warning_threshold=3)
    with caplog.at_level(logging.WARNING, logger="xlapy.jit"):
        for n in range(1, 6):
            f(ones(n))
    warnings = [r for r in caplog.records if "compiled" in r.getMessage()]
    assert len(warnings) == 1
    assert "'x'" in warnings[0].getMessage() and "4 times" in warnings[0].getMessage()


def test_reason_for_a_static_argument_given_after_its_default():
    f = xlapy.jit(lambda x, mode="a": x if mode == "a" else -x, static_argnames="mode")
    x = ones(2)
    f(x)
    np.testing.assert_array_equal(np.asarray(f(x, mode="b")), -x)
    f(x, "c")
    f(x, mode="a")                     # the default, now given explicitly
    reasons = f.cache_info().reasons
    assert reasons[1] == "value of static argument 'mode' changed 'a' (its default) -> 'b'"
    assert reasons[2] == "value of static argument 'mode' changed 'b' -> 'c'"
    assert "'mode' changed 'c' -> 'a'" in reasons[3]
    assert not any("evicted" in r for r in reasons)


def test_reasons_for_argument_structure_changes():
    g = xlapy.jit(lambda x, y=None: x)
    g(ones(2))
    g(ones(2), y=ones(2))
    g(ones(2), ones(2))                # the same signature, given positionally: a hit
    h = xlapy.jit(lambda d: d["a"])
    h({"a": ones(2)})
    h({"a": ones(2), "b": ones(2)})
    k = xlapy.jit(lambda t: t[0])
    k((ones(2),))
    k((ones(2), ones(2)))
    k(([ones(2)], ones(2)))
    assert g.cache_info().reasons[1:] == [
        "argument 'y' added (the previous call did not give it)"]
    assert g.cache_info().hits == 1
    assert h.cache_info().reasons[1] == "argument 'd': key 'b' added"
    assert k.cache_info().reasons[1:] == [
        "argument 't': tuple length changed 1 -> 2",
        "argument 't[0]' changed from an array to a list of 1"]


def test_reasons_show_array_constants_as_values():
    f = xlapy.jit(lambda x, s: xnp.reshape(x, s))
    x = np.arange(8, dtype=np.float32)
    f(x, np.array([4, 2]))
    f(x, np.array([2, 4]))
    reasons = f.cache_info().reasons
    assert reasons[0].endswith("specializing on its value [4, 2]"), reasons
    assert "value of must-be-constant argument 's' changed [4, 2] -> [2, 4]" in reasons[1]
    assert "s: [2, 4]" in f.cache_info().compiles[1].signature
    r = xlapy.jit(lambda x, n: xnp.repeat(x, n))
    out = r(np.arange(40, dtype=np.float32), np.arange(40) % 3)
    np.testing.assert_array_equal(np.asarray(out), np.repeat(np.arange(40), np.arange(40) % 3))
    text = r.cache_info().reasons[0]
    assert "[0, 1, 2, 0, 1," in text and ", ...] (int64[40])" in text and "\\x" not in text
    assert len(text) < 200


# ------------------------------------------------------------------------ must-compile
def _tail_frames(exc):
    return [f for f in traceback.extract_tb(exc.__traceback__)]


def test_unique_under_jit_names_op_and_user_line():
    def body(x):
        return xnp.unique(x)
    f = xlapy.function(body, jit_compile=True)
    with pytest.raises(InvalidArgumentError) as info:
        f(np.array([1, 2, 2], np.int32))
    msg = str(info.value)
    assert "xnp.unique" in msg and "data-dependent" in msg
    assert f"{THIS_FILE}:{_line_of(body, 'xnp.unique')}" in msg
    frames = _tail_frames(info.value)
    assert frames[-1].filename.endswith(THIS_FILE) and frames[-1].lineno == _line_of(body, "xnp.unique")
    assert not any("/xlapy/" in fr.filename for fr in frames[-1:])


@pytest.mark.parametrize("make", [
    lambda: (lambda x: xnp.nonzero(x), "xnp.nonzero"),
    lambda: (lambda x: xnp.where(x > 0), "xnp.nonzero"),
    lambda: (lambda x: xnp.argwhere(x), "xnp.argwhere"),
    lambda: (lambda x: x[x > 0], "boolean mask"),
    lambda: (lambda x: xnp.save("/tmp/never_written.npy", x), "xnp.save"),
])
def test_other_noncompilable_ops(make):
    fn, name = make()
    with pytest.raises(InvalidArgumentError, match=name.replace(".", r"\.")) as info:
        xlapy.jit(fn)(np.array([1, -2, 3], np.int32))
    assert THIS_FILE in str(info.value)
    assert not os.path.exists("/tmp/never_written.npy")


def test_python_control_flow_on_traced_value():
    def body(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(InvalidArgumentError) as info:
        xlapy.jit(body)(ones(3))
    msg = str(info.value)
    assert "Python bool" in msg and "lax.cond" in msg
    assert f"{THIS_FILE}:{_line_of(body, 'if x.sum()')}" in msg
    with pytest.raises(InvalidArgumentError, match="Python float"):
        xlapy.jit(lambda x: float(x))(np.float32(1))


def test_leaked_tracer_is_reported():
    leaked = []
    xlapy.jit(lambda x: leaked.append(x) or x)(ones(2))
    with pytest.raises(InvalidArgumentError, match="escaped"):
        leaked[0] + 1


# ------------------------------------------------------------------ must-be-constant args
def test_must_be_constant_reshape_specializes_per_value():
    f = xlapy.jit(lambda x, n: xnp.reshape(x, (n, -1)))
    x = np.arange(12, dtype=np.float32)
    assert f(x, 2).shape == (2, 6)
    assert f(x, 3).shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(f(x, 4)), x.reshape(4, -1))
    assert f(x, 3).shape == (3, 4)
    assert f(x, np.int32(3)).shape == (3, 4)
    info = f.cache_info()
    assert info.misses == 3 and info.hits == 2        # np.int32(3) has the same value
    assert "needs the value of argument 'n'" in info.reasons[0]
    assert "value of must-be-constant argument 'n' changed 2 -> 3" in info.reasons[1]
    hlo = f.lower(x, 6).as_text()
    assert "s32[]" not in hlo.split("ENTRY")[1].split("\n")[0]      # n is not a parameter


def test_must_be_constant_axis_and_slice_bound():
    f = xlapy.jit(lambda x, ax, k: xnp.sum(x[:k], axis=ax))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(np.asarray(f(x, 0, 2)), x[:2].sum(0))
    np.testing.assert_array_equal(np.asarray(f(x, 1, 3)), x[:3].sum(1))


def test_derived_value_needing_constant_specializes_on_its_argument():
    f = xlapy.jit(lambda x, n: xnp.reshape(x, (n * 2, -1)))
    assert f(np.arange(8.0), 2).shape == (4, 2)
    assert f(np.arange(8.0), 1).shape == (2, 4)
    assert "value of must-be-constant argument 'n' changed 2 -> 1" in \
        f.cache_info().compiles[1].reason


# -------------------------------------------------------------------------------- pytrees
Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Params:
    w: object
    b: object


class Box:
    def __init__(self, v):
        self.v = v


xlapy.register_pytree_node(Box, lambda b: ((b.v,), None), lambda aux, kids: Box(kids[0]))


def test_pytrees_in_and_out():
    @xlapy.jit
    def f(params, pts, box, none):
        assert none is None
        y = params["layer"].w @ pts.x + params["layer"].b
        return {"y": y, "pair": (pts.y * 2, [box.v + 1])}, Box(y.sum())

    w = np.eye(2, dtype=np.float32)
    out, box = f({"layer": Params(w, np.ones(2, np.float32))},
                 Point(np.array([1.0, 2.0], np.float32), np.float32(3)), Box(np.int32(4)), None)
    np.testing.assert_allclose(np.asarray(out["y"]), [2.0, 3.0])
    assert float(out["pair"][0]) == 6.0 and int(out["pair"][1][0]) == 5
    assert isinstance(box, Box) and float(box.v) == 5.0
    module = f.lower({"layer": Params(w, np.ones(2, np.float32))},
                     Point(np.ones(2, np.float32), np.float32(3)), Box(np.int32(4)), None
                     ).hlo_module
    names = [p.metadata.op_name for p in module.entry.parameters]
    assert names == ["params['layer'].w", "params['layer'].b", "pts.x", "pts.y", "box[0]"]
    assert [p.metadata.op_name for p in parse_module(module.to_text()).entry.parameters] == names


def test_varargs_kwargs_and_no_output():
    f = xlapy.jit(lambda *xs, scale=1.0: sum(xs[1:], xs[0]) * scale)
    np.testing.assert_allclose(np.asarray(f(ones(2), ones(2), ones(2), scale=2.0)), [6.0, 6.0])
    assert xlapy.jit(lambda x: ())(ones(2)) == ()


# --------------------------------------------------------------------- metadata and IR
def test_metadata_on_every_instruction():
    def body(x, y):
        z = xnp.exp(x) * y
        return xnp.sum(z, axis=0), xnp.argmax(z)
    f = xlapy.jit(body)
    module = f.lower(ones(3, 2), ones(3, 2)).hlo_module
    assert module.name == "jit_body"
    for comp in module.computations:
        for instr in comp.instructions:
            md = instr.metadata
            assert md is not None and md.source_file.endswith(THIS_FILE), instr.name
            if instr.opcode != "parameter" or comp is not module.entry:
                assert md.op_name.startswith("jit(body)/"), md.op_name
    entry = module.entry
    assert [p.metadata.op_name for p in entry.parameters] == ["x", "y"]
    exp = next(i for i in entry.instructions if i.opcode == "exponential")
    assert exp.metadata.op_type == "exp" and exp.metadata.source_line == _line_of(body, "xnp.exp")
    assert entry.root.opcode == "tuple"


def test_ops_reached_through_numpy_point_at_the_user_line():
    """NumPy (an installed package) is not user code: np.transpose calls x.transpose()
    from numpy/_core/fromnumeric.py, and the metadata names the user's line."""
    def body(x):
        return np.transpose(x) * 2.0
    module = xlapy.jit(body).lower(ones(2, 3)).hlo_module
    tr = next(i for i in module.entry.instructions if i.opcode == "transpose")
    assert tr.metadata.source_file.endswith(THIS_FILE)
    assert tr.metadata.source_line == _line_of(body, "np.transpose")


def test_error_raised_inside_numpy_names_the_user_line_and_frames():
    def body(x):
        return np.atleast_1d(x)          # NumPy converts the traced value
    with pytest.raises(InvalidArgumentError) as info:
        xlapy.jit(body)(ones(2))
    msg = str(info.value)
    assert f"{THIS_FILE}:{_line_of(body, 'np.atleast_1d')}" in msg, msg
    assert "site-packages" not in msg and "numpy" not in msg.split("(at ")[1]
    frames = _tail_frames(info.value)
    assert [f.filename.endswith(THIS_FILE) for f in frames] == [True, True], frames
    assert frames[-1].lineno == _line_of(body, "np.atleast_1d")


def test_must_compile_traceback_has_only_user_frames():
    """No xlapy frame (not even jit's __call__) between the call site and the user's
    function, for calls (also once the function has a cached signature) and
    get_compiler_ir."""
    def body(x):
        return xnp.unique(x)

    f = xlapy.jit(body)

    def call():
        return f(np.array([1, 2], np.int32))
    for run in (call, lambda: f.get_compiler_ir(np.array([1, 2], np.int32))(stage="hlo")):
        with pytest.raises(InvalidArgumentError) as info:
            run()
        names = [(os.path.basename(fr.filename), fr.name) for fr in _tail_frames(info.value)]
        assert all(n[0] == THIS_FILE for n in names), names
        assert names[-1][1] == "body"
    g = xlapy.jit(lambda x: x.reshape(4))
    g(ones(2, 2))
    assert [fr.name for fr in _tail_frames(_raises(lambda: g(ones(3))))] == [
        "_raises", "<lambda>", "<lambda>"]


def _raises(fn):
    try:
        fn()
    except InvalidArgumentError as e:
        return e
    raise AssertionError("no error")


def test_model_fn_hlo_is_small_and_reparses():
    @xlapy.function(jit_compile=True)
    def model_fn(x, y, z):
        return xnp.sum(x + y * z)

    args = [ones(8) * k for k in (1, 2, 3)]
    assert float(model_fn(*args)) == 56.0
    text = model_fn.experimental_get_compiler_ir(*args)(stage="hlo")
    assert "entry_computation_layout" in text
    module = parse_module(text)
    verify_module(module)
    non_param = [i for i in module.entry.instructions if i.opcode != "parameter"]
    assert len(non_param) <= 6
    assert [i.opcode for i in non_param] == ["multiply", "add", "constant", "reduce"]
    assert len(module.computations) == 2           # entry + reducer


def test_compiler_ir_stages():
    f = xlapy.jit(lambda x: xnp.tanh(x) * 2 + 1)
    ir = f.get_compiler_ir(ones(4))
    optimized = ir(stage="optimized_hlo")
    verify_module(parse_module(optimized))
    assert "digraph" in ir(stage="optimized_hlo_dot")
    with pytest.raises(InvalidArgumentError, match="unknown compiler IR stage"):
        ir(stage="llvm_ir_please")


def test_compiler_ir_llvm_and_asm_stages():
    f = xlapy.jit(lambda x: xnp.tanh(x) * 2 + 1, backend="cpu")
    ir = f.get_compiler_ir(ones(64))
    before, after, asm = ir(stage="llvm_no_opt"), ir(stage="llvm"), ir(stage="asm")
    assert "define void @" in before and "define void @" in after
    assert before != after                                   # LLVM optimized it
    kernel = after.split("define void @")[1].split("(")[0].strip('"')
    assert kernel.startswith("xk_") and kernel in asm        # the same kernel, assembled
    assert "ret void" in after and ("ret" in asm or "retq" in asm)
    on_interpreter = xlapy.jit(lambda x: x + 1, backend="interpreter")
    with pytest.raises(InvalidArgumentError, match="'interpreter' backend"):
        on_interpreter.get_compiler_ir(ones(4))(stage="asm")


def test_control_flow_ir_reparses():
    def body(x):
        c = xlapy.lax.fori_loop(0, 3, lambda i, v: v * x, x)
        return xlapy.lax.cond(c.sum() > 0, lambda a: a + 1, lambda a: a - c, c)
    f = xlapy.jit(body)
    text = f.get_compiler_ir(ones(2))(stage="hlo")
    module = parse_module(text)
    verify_module(module)
    ops = {i.opcode for c in module.computations for i in c.instructions}
    assert {"while", "conditional"} <= ops
    for comp in module.computations:
        for instr in comp.instructions:
            assert instr.metadata is not None and instr.metadata.source_file.endswith(THIS_FILE)


def test_donate_argnums_sets_input_output_alias():
    f = xlapy.jit(lambda x, y: (x + y, y.sum()), donate_argnums=0)
    text = f.lower(ones(3), ones(3)).as_text()
    assert "input_output_alias={ {0}: (0, {}" in text
    verify_module(parse_module(text))


def test_function_without_jit_compile_runs_eagerly():
    seen = []

    @xlapy.function
    def g(x):
        seen.append(type(x))
        return xnp.unique(x)          # fine eagerly

    np.testing.assert_array_equal(np.asarray(g(np.array([2, 1, 2], np.int32))), [1, 2])
    assert "HloModule" in xlapy.function(jit_compile=False)(lambda x: x * 2) \
        .get_compiler_ir(ones(2))(stage="hlo")


def test_nested_jit_inlines():
    inner = xlapy.jit(lambda x: x * 3)
    outer = xlapy.jit(lambda x: inner(x) + 1)
    np.testing.assert_array_equal(np.asarray(outer(ones(2))), [4.0, 4.0])
    assert "jit_" not in outer.lower(ones(2)).as_text().split("ENTRY")[1]


def test_string_and_enum_arguments_are_static_without_being_named():
    """Values that can never be traced (str, bytes, enum members) key the cache by value,
    as tf.function treats them; other non-array objects still need static_argnames."""
    import enum

    class Mode(enum.Enum):
        A = 1
        B = 2

    def f(x, mode, kind=Mode.A):
        y = x * 2.0 if mode == "double" else x * 3.0
        return y + 1.0 if kind is Mode.A else y
    g = xlapy.jit(f)
    x = np.ones(2, np.float32)
    assert np.asarray(g(x, "double")).tolist() == [3.0, 3.0]
    assert np.asarray(g(x, "triple")).tolist() == [4.0, 4.0]
    assert np.asarray(g(x, mode="double", kind=Mode.B)).tolist() == [2.0, 2.0]
    assert np.asarray(g(x, "double")).tolist() == [3.0, 3.0]
    info = g.cache_info()
    assert (info.misses, info.hits) == (3, 1)
    assert "'double' -> 'triple'" in info.compiles[1].reason
    with pytest.raises(InvalidArgumentError, match="mark it static"):
        g(x, object())
