"""Verifier tests: a good module verifies; each kind of breakage is reported."""
from __future__ import annotations

import glob

import pytest

from xlapy.errors import VerificationError
from xlapy.hlo import types as T
from xlapy.hlo.builder import XlaBuilder, build_module, comparator_computation, scalar_computation
from xlapy.hlo.ir import AliasEntry, HloComputation, HloInstruction
from xlapy.hlo.shape import ProgramShape, Shape
from xlapy.hlo.verifier import verify_computation, verify_module
from conformance import CASES_DIR

F32_4 = Shape.array(T.F32, (4,))


def good_module():
    """``(x, y) -> (sum(x*y), sort(x))`` with a reducer and a comparator."""
    b = XlaBuilder("entry")
    x, y = b.parameter(F32_4, name="x"), b.parameter(F32_4, name="y")
    m = b.multiply(x, y)
    s = b.reduce(m, b.constant(0.0), scalar_computation("add", T.F32), [0])
    srt = b.sort(x, comparator_computation([T.F32]))
    b.tuple([s, srt])
    return build_module(b, "good")


def problems_of(module) -> list[str]:
    with pytest.raises(VerificationError) as info:
        verify_module(module)
    return info.value.problems


def find(module, opcode) -> HloInstruction:
    return next(i for i in module.entry.instructions if i.opcode == opcode)


def test_good_module_verifies():
    verify_module(good_module())


def test_wrong_shape_reported_with_names():
    m = good_module()
    mul = find(m, "multiply")
    mul.shape = Shape.array(T.F32, (5,))
    probs = problems_of(m)
    assert any(mul.name in p and "f32[5]" in p and "entry" in p for p in probs)


def test_layout_differences_are_ignored():
    m = good_module()
    mul = find(m, "multiply")
    mul.shape = Shape.array(T.F32, (4,), layout=(0,))
    verify_module(m)


def test_unknown_opcode():
    m = good_module()
    find(m, "multiply").opcode = "frobnicate"
    assert any("unknown opcode 'frobnicate'" in p for p in problems_of(m))


def test_operand_count():
    m = good_module()
    mul = find(m, "multiply")
    mul.operands.append(mul.operands[0])
    assert any("takes 2 operand(s), has 3" in p for p in problems_of(m))


def test_missing_required_attribute():
    m = good_module()
    del find(m, "reduce").attrs["dimensions"]
    assert any("missing required attribute(s) dimensions" in p for p in problems_of(m))


def test_bad_reducer_signature():
    m = good_module()
    red = find(m, "reduce")
    cmp = find(m, "sort").attrs["to_apply"]
    red.attrs["to_apply"] = cmp   # comparator returns pred: not a reducer over f32
    assert any(red.name in p and "to_apply" in p for p in problems_of(m))


def test_sort_comparator_must_return_pred():
    m = good_module()
    srt = find(m, "sort")
    srt.attrs["to_apply"] = find(m, "reduce").attrs["to_apply"]
    assert any("comparator must return pred[]" in p for p in problems_of(m))


def test_operand_from_other_computation():
    m = good_module()
    reducer = find(m, "reduce").attrs["to_apply"]
    mul = find(m, "multiply")
    foreign = reducer.parameters[0]
    mul.operands[0] = foreign
    assert any("belongs to" in p and foreign.name in p for p in problems_of(m))


def test_missing_root():
    m = good_module()
    m.entry.root = None
    assert any("has no root" in p for p in problems_of(m))


def test_parameter_numbering():
    m = good_module()
    y = m.entry.parameters[1]
    y.parameter_number = 0
    probs = problems_of(m)
    assert any("parameter number 0 is also used" in p for p in probs)


def test_parameter_gap():
    m = good_module()
    m.entry.parameters[1].parameter_number = 2
    assert any("are not 0..1" in p for p in problems_of(m))


def test_duplicate_instruction_names():
    m = good_module()
    find(m, "multiply").name = "x"
    assert any("instruction name x is also used" in p for p in problems_of(m))


def test_cycle():
    m = good_module()
    mul = find(m, "multiply")
    add = HloInstruction("add", F32_4, [mul, mul], name="cyc")
    m.entry.add_instruction(add)
    mul.operands[1] = add
    assert any("cycle" in p and "cyc" in p for p in problems_of(m))


def test_entry_computation_layout_mismatch():
    m = good_module()
    layout = m.entry_computation_layout
    m.attributes["entry_computation_layout"] = ProgramShape(
        [Shape.array(T.F32, (3,)), layout.parameters[1]], layout.result)
    assert any("entry_computation_layout" in p for p in problems_of(m))


def test_input_output_alias():
    m = good_module()
    m.attributes["input_output_alias"] = [AliasEntry((1,), 0)]      # f32[4] -> f32[4]: fine
    verify_module(m)
    m.attributes["input_output_alias"] = [AliasEntry((0,), 0)]      # f32[] vs f32[4]
    assert any("aliases output f32[]" in p for p in problems_of(m))
    m.attributes["input_output_alias"] = [AliasEntry((2,), 0)]
    assert any("not an output index" in p for p in problems_of(m))
    m.attributes["input_output_alias"] = [AliasEntry((1,), 5)]
    assert any("names parameter 5" in p for p in problems_of(m))


def test_called_computation_not_in_module():
    m = good_module()
    reducer = find(m, "reduce").attrs["to_apply"]
    m.remove_computation(reducer)
    assert any("not in the module" in p for p in problems_of(m))


def test_every_problem_is_listed():
    m = good_module()
    mul, srt = find(m, "multiply"), find(m, "sort")
    mul.shape = Shape.array(T.F32, (5,))
    srt.shape = Shape.array(T.S32, (4,))
    probs = problems_of(m)
    assert any(p.startswith(f"entry/{mul.name}:") for p in probs)
    assert any(p.startswith(f"entry/{srt.name}:") for p in probs)
    assert f"{len(probs)} problems" in str(pytest.raises(VerificationError, verify_module, m).value)


def test_dot_may_widen_element_type_but_not_change_dims():
    b = XlaBuilder("d")
    x = b.parameter((T.S8, (2, 3)))
    y = b.parameter((T.S8, (3, 4)))
    d = b.dot(x, y)
    m = build_module(b)
    del m.attributes["entry_computation_layout"]
    d.shape = Shape.array(T.S32, (2, 4))
    verify_module(m)
    d.shape = Shape.array(T.S32, (2, 5))
    assert any("does not match" in p for p in problems_of(m))


def test_verify_computation():
    b = XlaBuilder("c")
    x = b.parameter(F32_4)
    comp = b.build(b.negate(x))
    verify_computation(comp)
    comp.root.shape = Shape.array(T.S32, (4,))
    with pytest.raises(VerificationError, match="c/"):
        verify_computation(comp)


def test_custom_call_shape_is_accepted():
    b = XlaBuilder("cc")
    x = b.parameter(F32_4)
    b.custom_call("my_target", [x], Shape.tuple([F32_4, Shape.scalar(T.S32)]))
    verify_module(build_module(b))


def test_computation_without_instructions_in_module():
    m = good_module()
    m.add_computation(HloComputation("empty"))
    assert any("empty" in p and "no root" in p for p in problems_of(m))


CONFORMANCE = sorted(glob.glob(str(CASES_DIR / "*" / "*" / "module*.hlo")))


@pytest.mark.parametrize("path", CONFORMANCE,
                         ids=[p.split("cases/")[-1] for p in CONFORMANCE])
def test_conformance_modules_verify(path):
    from xlapy.hlo import parse_module
    try:
        module = parse_module(open(path).read())
    except ImportError:
        pytest.skip("the HLO parser is not available")
    verify_module(module)
