"""Interpreter semantics of while, conditional, call, fusion, custom-call, tokens and collectives."""
from __future__ import annotations

import numpy as np
import pytest

from interp_builders import Comp, binary, module_of, run_one, run_text, sh
from xlapy.backends.interpreter import Evaluator
from xlapy.backends.interpreter.evaluator import CUSTOM_CALLS, TOKEN
from xlapy.errors import ExecutionError, InvalidArgumentError, UnimplementedError
from xlapy.hlo.shape import Shape

S32 = sh("s32")


def counter_loop(limit: int):
    """while (i < limit) i = i + 2, on a bare s32 state."""
    cond = Comp("cond")
    i = cond.param(S32)
    cond.op("compare", sh("pred"), i, cond.const(np.int32(limit)), direction="LT")
    body = Comp("body")
    j = body.param(S32)
    body.op("add", S32, j, body.const(np.int32(2)))
    return cond.done(), body.done()


def test_while_counter():
    cond, body = counter_loop(11)
    got = run_one("while", S32, [np.int32(0)], condition=cond, body=body)
    assert got == 12 and got.dtype == np.int32
    got = run_one("while", S32, [np.int32(20)], condition=cond, body=body)
    assert got == 20                                       # condition false at once


FIB = """HloModule fib
cond {
  p = (s32[], s32[], s32[]) parameter(0)
  n = s32[] get-tuple-element(p), index=0
  zero = s32[] constant(0)
  ROOT more = pred[] compare(n, zero), direction=GT
}
body {
  p = (s32[], s32[], s32[]) parameter(0)
  n = s32[] get-tuple-element(p), index=0
  a = s32[] get-tuple-element(p), index=1
  b = s32[] get-tuple-element(p), index=2
  one = s32[] constant(1)
  n1 = s32[] subtract(n, one)
  ab = s32[] add(a, b)
  ROOT next = (s32[], s32[], s32[]) tuple(n1, b, ab)
}
ENTRY e {
  n = s32[] parameter(0)
  zero = s32[] constant(0)
  one = s32[] constant(1)
  init = (s32[], s32[], s32[]) tuple(n, zero, one)
  loop = (s32[], s32[], s32[]) while(init), condition=cond, body=body
  ROOT fib = s32[] get-tuple-element(loop), index=1
}
"""


def test_while_tuple_state_fibonacci():
    assert run_text(FIB, np.int32(10)) == 55
    assert run_text(FIB, np.int32(0)) == 0
    with pytest.raises(ExecutionError, match="5 iterations"):
        run_text(FIB, np.int32(10), max_while_iterations=5)


def test_nested_loop_with_conditional_in_body():
    # sum over i < 4 of (i even ? i*10 : -i), computed by a while whose body branches.
    text = """HloModule nested
even {
  x = s32[] parameter(0)
  ten = s32[] constant(10)
  ROOT r = s32[] multiply(x, ten)
}
odd {
  x = s32[] parameter(0)
  ROOT r = s32[] negate(x)
}
cond {
  p = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  four = s32[] constant(4)
  ROOT lt = pred[] compare(i, four), direction=LT
}
body {
  p = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  acc = s32[] get-tuple-element(p), index=1
  two = s32[] constant(2)
  rem = s32[] remainder(i, two)
  zero = s32[] constant(0)
  is_even = pred[] compare(rem, zero), direction=EQ
  term = s32[] conditional(is_even, i, i), true_computation=even, false_computation=odd
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  acc1 = s32[] add(acc, term)
  ROOT next = (s32[], s32[]) tuple(i1, acc1)
}
ENTRY e {
  zero = s32[] constant(0)
  init = (s32[], s32[]) tuple(zero, zero)
  loop = (s32[], s32[]) while(init), condition=cond, body=body
  ROOT acc = s32[] get-tuple-element(loop), index=1
}
"""
    assert run_text(text) == 0 * 10 - 1 + 2 * 10 - 3


def test_while_iteration_limit():
    cond, body = counter_loop(1000)
    with pytest.raises(ExecutionError, match="3 iterations"):
        run_one("while", S32, [np.int32(0)], ev=Evaluator(max_while_iterations=3),
                condition=cond, body=body)
    assert run_one("while", S32, [np.int32(0)], ev=Evaluator(max_while_iterations=500),
                   condition=cond, body=body) == 1000


def _unary(opcode: str, elem: str = "f32"):
    c = Comp(opcode)
    c.op(opcode, sh(elem, 3), c.param(sh(elem, 3)))
    return c.done()


def test_conditional_pred_form():
    x = np.array([1.0, -2.0, 3.0], np.float32)
    y = np.array([0.5, 4.0, -1.0], np.float32)
    kw = dict(true_computation=_unary("negate"), false_computation=_unary("abs"))
    got = run_one("conditional", sh("f32", 3), [np.bool_(True), x, y], **kw)
    np.testing.assert_array_equal(got, -x)
    got = run_one("conditional", sh("f32", 3), [np.bool_(False), x, y], **kw)
    np.testing.assert_array_equal(got, np.abs(y))


@pytest.mark.parametrize("index,expected", [(0, "negate"), (1, "abs"), (2, "floor"),
                                            (3, "floor"), (-1, "floor"), (100, "floor")])
def test_conditional_index_form_out_of_range_runs_last_branch(index, expected):
    ops = [np.array([1.5, -2.5, 3.5], np.float32) * (k + 1) for k in range(3)]
    branches = [_unary("negate"), _unary("abs"), _unary("floor")]
    got = run_one("conditional", sh("f32", 3), [np.int32(index)] + ops,
                  branch_computations=branches)
    k = min(index, 2) if index >= 0 else 2
    ref = {"negate": np.negative, "abs": np.abs, "floor": np.floor}[expected](ops[k])
    np.testing.assert_array_equal(got, ref)


def test_call_and_fusion_run_their_computation():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 2, np.float32)
    comp = Comp("mul_add")
    a, b = comp.param(sh("f32", 2, 3)), comp.param(sh("f32", 2, 3))
    comp.op("add", sh("f32", 2, 3), comp.op("multiply", sh("f32", 2, 3), a, b), a)
    comp = comp.done()
    np.testing.assert_array_equal(run_one("call", sh("f32", 2, 3), [x, y], to_apply=comp),
                                  x * y + x)
    got = run_one("fusion", sh("f32", 2, 3), [x, y], kind="kLoop", calls=comp,
                  output_to_operand_aliasing={(): (0, ())})
    np.testing.assert_array_equal(got, x * y + x)
    np.testing.assert_array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3))


def test_custom_call_unknown_target_names_target_and_instruction():
    with pytest.raises(UnimplementedError, match=r"no_such_target.*custom-call"):
        run_one("custom-call", sh("f32", 2), [np.zeros(2, np.float32)],
                custom_call_target="no_such_target")


def test_custom_call_dispatches_registered_target():
    CUSTOM_CALLS["test_double"] = lambda ev, instr, ops: ops[0] * 2
    try:
        got = run_one("custom-call", sh("f32", 2), [np.array([1, 2], np.float32)],
                      custom_call_target="test_double")
        np.testing.assert_array_equal(got, [2, 4])
    finally:
        del CUSTOM_CALLS["test_double"]


def test_token_and_barrier_ops():
    x = np.array([1, 2], np.int32)
    assert run_one("after-all", Shape.token(), []) is TOKEN
    np.testing.assert_array_equal(run_one("opt-barrier", sh("s32", 2), [x]), x)
    c = Comp("entry")
    p = c.param(sh("s32", 2))
    tok = c.op("after-all", Shape.token())
    dep = c.op("add-dependency", sh("s32", 2), p, tok)
    c.op("opt-barrier", Shape.tuple([sh("s32", 2), Shape.token()]),
         c.op("tuple", Shape.tuple([sh("s32", 2), Shape.token()]), dep, tok))
    got = Evaluator().call(c.done(), [x])
    np.testing.assert_array_equal(got[0], x)
    assert got[1] is TOKEN


# ----------------------------------------------------------------------------------- collectives
def _single(opcode: str, operands: list, result: Shape, module_attrs=None, **attrs):
    c = Comp("entry")
    params = [c.param(Shape.array(sh("f32").element_type, np.shape(o))) for o in operands]
    c.op(opcode, result, *params, **attrs)
    module = module_of(c.done(), **(module_attrs or {}))
    return Evaluator(module).run(operands)


def test_all_reduce_single_replica_is_identity():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    y = np.array([4.0], np.float32)
    np.testing.assert_array_equal(
        _single("all-reduce", [x], sh("f32", 3), to_apply=binary("add")), x)
    a, b = _single("all-reduce", [x, y], Shape.tuple([sh("f32", 3), sh("f32", 1)]),
                   to_apply=binary("add"))
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, y)
    np.testing.assert_array_equal(_single("all-gather", [x], sh("f32", 3), dimensions=(0,)), x)
    np.testing.assert_array_equal(
        _single("reduce-scatter", [x], sh("f32", 3), dimensions=(0,), to_apply=binary("add")), x)


def test_collective_permute_without_self_pair_gives_zeros():
    x = np.array([1.0, 2.0], np.float32)
    got = _single("collective-permute", [x], sh("f32", 2), source_target_pairs=((0, 1), (1, 0)))
    np.testing.assert_array_equal(got, [0, 0])
    got = _single("collective-permute", [x], sh("f32", 2), source_target_pairs=((0, 0),))
    np.testing.assert_array_equal(got, x)


def test_replica_and_partition_id():
    for op in ("replica-id", "partition-id"):
        got = run_one(op, sh("u32"), [])
        assert got == 0 and got.dtype == np.uint32 and got.shape == ()


def test_multi_replica_module_is_rejected():
    x = np.array([1.0], np.float32)
    with pytest.raises(InvalidArgumentError, match="one argument list per device"):
        _single("all-reduce", [x], sh("f32", 1), module_attrs={"replica_count": 2},
                to_apply=binary("add"))
