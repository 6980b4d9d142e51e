"""dce, cse, tuple-simplifier, call-inliner, constant_folding, zero-sized elimination,
comparison-expander; and the simplification passes on every conformance module."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy.hlo as H
from conformance import case_params
from pass_check import folding_context, interpreter_evaluate, opcodes, run_passes
from xlapy.backends.interpreter import evaluate_module
from xlapy.passes import (CallInliner, ComparisonExpander, HloConstantFolding, HloCSE, HloDCE,
                          HloPassPipeline, TupleSimplifier, ZeroSizedHloElimination,
                          target_independent_passes)


def test_dce_removes_dead_code_and_unreachable_computations():
    text = """HloModule m
unused {
  a = f32[] parameter(0)
  ROOT n = f32[] negate(a)
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  d1 = f32[4] exponential(p)
  d2 = f32[4] add(d1, q)
  z = f32[] constant(0)
  r = f32[] reduce(p, z), dimensions={0}, to_apply=add
  ROOT out = f32[] negate(r)
}"""
    m, changed = run_passes(text, [HloDCE()], dce=False)
    assert changed
    assert opcodes(m) == ["parameter", "parameter", "constant", "reduce", "negate"]
    assert [c.name for c in m.computations] == ["add", "e"]
    assert HloDCE().run(m) is False


def test_dce_keeps_side_effects():
    text = """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  cc = f32[4] custom-call(p), custom_call_target="log_it", custom_call_has_side_effect=true
  pure = f32[4] custom-call(p), custom_call_target="pure_thing"
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r = f32[3] rng(lo, hi), distribution=rng_uniform
  ROOT out = f32[4] negate(p)
}"""
    m = H.parse_module(text)
    assert HloDCE().run(m)
    assert opcodes(m) == ["parameter", "custom-call", "constant", "constant", "rng", "negate"]
    assert m.entry.instruction("cc").opcode == "custom-call"


def test_cse_merges_identical_instructions_and_constants():
    text = """HloModule m
add0 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT sum0 = f32[] add(x, y)
}
add1 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT sum1 = f32[] add(a, b)
}
ENTRY e {
  p = f32[4,3] parameter(0)
  c1 = f32[] constant(2)
  c2 = f32[] constant(2)
  c3 = f32[] constant(-0)
  c4 = f32[] constant(0)
  e1 = f32[4,3] exponential(p)
  e2 = f32[4,3] exponential(p)
  m1 = f32[4,3] multiply(e1, e2)
  r1 = f32[4] reduce(m1, c4), dimensions={1}, to_apply=add0
  r2 = f32[4] reduce(m1, c4), dimensions={1}, to_apply=add1
  s = f32[4] subtract(r1, r2)
  b1 = f32[4] broadcast(c1), dimensions={}
  b2 = f32[4] broadcast(c2), dimensions={}
  b3 = f32[4] broadcast(c3), dimensions={}
  ROOT t = (f32[4], f32[4], f32[4], f32[4]) tuple(s, b1, b2, b3)
}"""
    m, changed = run_passes(text, [HloCSE()])
    assert changed
    ops = opcodes(m)
    assert ops.count("exponential") == 1 and ops.count("reduce") == 1
    root = m.entry.root
    assert root.operands[1] is root.operands[2]             # constant 2 merged, broadcasts too
    assert root.operands[3] is not root.operands[1]
    assert ops.count("constant") == 3                       # 2, -0, 0 (signed zeros kept apart)
    mult = m.entry.instruction("m1")
    assert mult.operands[0] is mult.operands[1]


def test_cse_never_merges_rng():
    text = """HloModule m
ENTRY e {
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r1 = f32[3] rng(lo, hi), distribution=rng_uniform
  r2 = f32[3] rng(lo, hi), distribution=rng_uniform
  ROOT s = f32[3] subtract(r1, r2)
}"""
    m = H.parse_module(text)
    HloCSE().run(m)
    assert opcodes(m).count("rng") == 2


def test_tuple_simplifier():
    text = """HloModule m
ENTRY e {
  p = (f32[2], s32[3]) parameter(0)
  q = f32[2] parameter(1)
  g0 = f32[2] get-tuple-element(p), index=0
  g1 = s32[3] get-tuple-element(p), index=1
  rebuilt = (f32[2], s32[3]) tuple(g0, g1)
  partial = (f32[2], f32[2]) tuple(g0, q)
  x = f32[2] get-tuple-element(partial), index=1
  y = s32[3] get-tuple-element(rebuilt), index=1
  ROOT out = ((f32[2], s32[3]), f32[2], s32[3]) tuple(rebuilt, x, y)
}"""
    args = [(np.arange(2, dtype=np.float32), np.arange(3, dtype=np.int32)),
            np.array([5, 6], np.float32)]
    m, changed = run_passes(text, [TupleSimplifier()], args=args)
    assert changed
    root = m.entry.root
    assert root.operands[0] is m.entry.parameters[0]
    assert root.operands[1] is m.entry.parameters[1]
    assert root.operands[2].opcode == "get-tuple-element"
    assert root.operands[2].operands[0] is m.entry.parameters[0]


def test_call_inliner_inlines_nested_calls():
    text = """HloModule m
inner {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
outer {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  c = f32[4] call(x), to_apply=inner
  ROOT s = f32[4] subtract(c, y)
}
ENTRY e {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  r1 = f32[4] call(p, q), to_apply=outer
  r2 = f32[4] call(q, p), to_apply=outer
  ROOT t = f32[4] multiply(r1, r2)
}"""
    m, changed = run_passes(text, [CallInliner()])
    assert changed
    assert "call" not in opcodes(m)
    assert sorted(opcodes(m)) == sorted(["parameter", "parameter", "negate", "subtract",
                                         "negate", "subtract", "multiply"])
    assert [c.name for c in m.computations] == ["e"]
    names = [i.name for i in m.entry.instructions]
    assert len(set(names)) == len(names)


def test_call_inliner_single_call_site():
    text = """HloModule m
once {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
twice {
  b = f32[4] parameter(0)
  ROOT e = f32[4] exponential(b)
}
ENTRY e {
  p = f32[4] parameter(0)
  c1 = f32[4] call(p), to_apply=once
  c2 = f32[4] call(c1), to_apply=twice
  ROOT c3 = f32[4] call(c2), to_apply=twice
}"""
    m, _ = run_passes(text, [CallInliner(single_call_site=True)])
    assert opcodes(m) == ["parameter", "negate", "call", "call"]


def test_constant_folding_folds_and_respects_limits():
    text = """HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[3] parameter(0)
  c = f32[3] constant({1, 2, 3})
  d = f32[3] constant({0.5, 0.25, 4})
  m = f32[3] multiply(c, d)
  z = f32[] constant(0)
  total = f32[] reduce(m, z), dimensions={0}, to_apply=add
  big = f32[1000,1000] broadcast(z), dimensions={}
  io = s32[8] iota(), iota_dimension=0
  bs = f32[3] broadcast(total), dimensions={}
  sum = f32[3] add(p, bs)
  ROOT out = (f32[3], f32[1000,1000], s32[8]) tuple(sum, big, io)
}"""
    m, changed = run_passes(text, [HloConstantFolding(evaluate=interpreter_evaluate)])
    assert changed
    assert m.entry.instruction("big").opcode == "broadcast"      # not materialized
    assert m.entry.instruction("io").opcode == "iota"
    bs = m.entry.root.operands[0].operands[1]
    assert bs.opcode == "broadcast" and bs.operands[0].opcode == "constant"
    assert float(bs.operands[0].literal) == 0.5 + 0.5 + 12
    assert "multiply" not in opcodes(m) and "reduce" not in opcodes(m)


def test_constant_folding_without_evaluator_is_a_no_op():
    m = H.parse_module("""HloModule m
ENTRY e {
  a = f32[] constant(1)
  ROOT n = f32[] negate(a)
}""")
    assert HloConstantFolding().run(m) is False
    assert HloConstantFolding().run(m, folding_context()) is True
    assert m.entry.root.opcode == "constant" and float(m.entry.root.literal) == -1.0


def test_constant_folding_never_folds_rng():
    m = H.parse_module("""HloModule m
ENTRY e {
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  ROOT r = f32[3] rng(lo, hi), distribution=rng_uniform
}""")
    assert HloConstantFolding(evaluate=interpreter_evaluate).run(m) is False


def test_zero_sized_elimination():
    text = """HloModule m
ENTRY e {
  p = f32[0,3] parameter(0)
  q = f32[2,3] parameter(1)
  n = f32[0,3] negate(p)
  c = f32[2,3] concatenate(n, q), dimensions={0}
  s = f32[2,0] slice(q), slice={[0:2], [1:1]}
  ROOT t = (f32[2,3], f32[2,0]) tuple(c, s)
}"""
    m, changed = run_passes(text, [ZeroSizedHloElimination()])
    assert changed
    c = m.entry.instruction("c")
    assert c.operands[0].opcode == "constant" and c.operands[0].shape.dims == (0, 3)
    assert m.entry.root.operands[1].opcode == "constant"
    assert "negate" not in opcodes(m) and "slice" not in opcodes(m)


@pytest.mark.parametrize("ty", ["f32", "f16", "bf16", "f64"])
@pytest.mark.parametrize("direction", ["LT", "LE", "GT", "GE", "EQ", "NE"])
def test_comparison_expander_total_order(ty, direction):
    text = f"""HloModule m
ENTRY e {{
  a = {ty}[12] parameter(0)
  b = {ty}[12] parameter(1)
  ROOT c = pred[12] compare(a, b), direction={direction}, type=TOTALORDER
}}"""
    dtype = H.parse_shape(f"{ty}[]").dtype
    special = np.array([np.nan, -np.nan, -np.inf, np.inf, -0.0, 0.0, 1.5, -1.5, 2, -2, 0.0, 3])
    a = special.astype(dtype)
    b = np.array([np.nan, np.nan, -np.inf, -np.inf, 0.0, -0.0, 1.5, 2, -1.5, -2, 0.0, np.nan]) \
        .astype(dtype)
    m, changed = run_passes(text, [ComparisonExpander()], args=[a, b], compare=False)
    assert changed
    root = m.entry.root
    assert root.opcode == "compare" and "type" not in root.attrs
    assert root.operands[0].shape.element_type.is_signed_integral
    # hand-computed total order: -NaN < -inf < -x < -0 < +0 < x < inf < +NaN
    order = {"LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
             "EQ": np.equal, "NE": np.not_equal}[direction]

    def key(v) -> tuple:
        if np.isnan(v):
            return (0 if np.signbit(v) else 2, 0.0, 0)
        return (1, float(v), -1 if (v == 0 and np.signbit(v)) else 0)
    cmp = [(key(x) > key(y)) - (key(x) < key(y)) for x, y in zip(a, b)]
    expect = order(np.array(cmp), 0)
    np.testing.assert_array_equal(evaluate_module(m, [a, b]), expect)


def test_comparison_expander_ignores_other_compares():
    m = H.parse_module("""HloModule m
ENTRY e {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  ROOT c = pred[3] compare(a, b), direction=LT
}""")
    assert ComparisonExpander().run(m) is False


# --------------------------------------------------------------------------------------------
# The simplification passes on every conformance module

@pytest.mark.parametrize("case,file", case_params(files=("module.hlo",)))
def test_simplification_pipeline_on_conformance_modules(case, file):
    module = H.parse_module(case.text(file))
    args, expected = case.inputs_and_outputs([p.shape for p in module.entry.parameters])
    reference = _flat(evaluate_module(module, args))
    xla_agrees = all(_close(r, e, case) for r, e in zip(reference, expected))
    HloPassPipeline("simplify", target_independent_passes(), verify=True).run(
        module, folding_context())
    optimized = H.parse_module(module.to_text())
    got = _flat(evaluate_module(optimized, args))
    assert len(got) == len(expected)
    for g, r in zip(got, reference):          # the passes must not change what the program computes
        assert _close(g, r, case)
    if not xla_agrees:
        pytest.xfail(f"the interpreter alone (no passes) differs from XLA on {case.name}")
    for g, e in zip(got, expected):
        assert _close(g, e, case)


def _flat(v) -> list:
    if isinstance(v, tuple):
        return [x for item in v for x in _flat(item)]
    return [np.asarray(v)]


def _close(got, want, case) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if got.dtype.kind in "biu" or got.dtype == np.bool_:
        return np.array_equal(got, want.astype(got.dtype))
    kind = np.complex128 if got.dtype.kind == "c" else np.float64
    return np.allclose(got.astype(kind), want.astype(kind), rtol=case.rtol, atol=case.atol,
                       equal_nan=True)
