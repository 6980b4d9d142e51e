"""Layout assignment, copy insertion and the reshape mover: structure and unchanged results."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.hlo as H
from conformance import all_cases
from pass_check import assert_same_bits, random_args, run_passes
from xlapy.backends.interpreter import evaluate_module
from xlapy.client import compare_outputs
from xlapy.config import debug_options
from xlapy.hlo.shape import Layout
from xlapy.hlo.verifier import verify_module
from xlapy.passes import CopyInsertion, CpuLayoutAssignment


def ops(module, comp=None):
    comp = comp or module.entry
    return [i.opcode for i in comp.instructions]


def find(module, opcode, comp=None):
    return [i for i in (comp or module.entry).instructions if i.opcode == opcode]


def all_shapes_have_layouts(module) -> bool:
    return all(leaf.layout is not None for i in module.instructions()
               for leaf in i.shape.leaves() if leaf.is_array)


# ============================================================================ layout assignment

NO_LAYOUTS = """
HloModule m
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY main {
  p = f32[2,3] parameter(0)
  q = f32[3,2] parameter(1)
  e = f32[2,3] exponential(p)
  z = f32[] constant(0)
  s = f32[2] reduce(e, z), dimensions={1}, to_apply=add_f32
  d = f32[2,2] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[2], f32[2,2], f32[2,3]) tuple(s, d, e)
}
"""


def test_every_shape_gets_a_row_major_layout():
    m, changed = run_passes(NO_LAYOUTS, [CpuLayoutAssignment()])
    assert changed and all_shapes_have_layouts(m)
    assert find(m, "dot")[0].shape.layout == Layout((1, 0))
    assert "copy" not in ops(m)
    ecl = m.entry_computation_layout
    assert ecl.parameters[0].layout == Layout((1, 0)) and ecl.result.tuple_shapes[1].layout


DOT_OF_TRANSPOSE = """
HloModule m
ENTRY main {
  a = f32[3,4]{1,0} parameter(0)
  b = f32[3,5]{1,0} parameter(1)
  at = f32[4,3]{1,0} transpose(a), dimensions={1,0}
  ROOT d = f32[4,5]{1,0} dot(at, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_transpose_into_dot_becomes_a_column_major_bitcast():
    m, changed = run_passes(DOT_OF_TRANSPOSE, [CpuLayoutAssignment()])
    assert changed
    assert "transpose" not in ops(m) and "copy" not in ops(m)
    (bc,) = find(m, "bitcast")
    assert bc.shape.layout == Layout((0, 1)) and bc.operands[0].opcode == "parameter"
    assert find(m, "dot")[0].operands[0] is bc


def test_transpose_into_batched_dot_stays_row_major():
    text = """
HloModule m
ENTRY main {
  a = f32[2,3,4]{2,1,0} parameter(0)
  b = f32[2,3,5]{2,1,0} parameter(1)
  at = f32[2,4,3]{2,1,0} transpose(a), dimensions={0,2,1}
  ROOT d = f32[2,4,5]{2,1,0} dot(at, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
}
"""
    m, _ = run_passes(text, [CpuLayoutAssignment()])
    assert "transpose" in ops(m) and "bitcast" not in ops(m)


def test_transpose_whose_layout_already_matches_is_a_bitcast():
    text = """
HloModule m
ENTRY main {
  a = f32[3,4]{1,0} parameter(0)
  t = f32[4,3]{0,1} transpose(a), dimensions={1,0}
  ROOT n = f32[4,3]{0,1} negate(t)
}
"""
    m, _ = run_passes(text, [CpuLayoutAssignment()])
    assert ops(m).count("bitcast") == 1 and "transpose" not in ops(m)
    # the root keeps its declared column-major layout, so no copy is needed
    assert "copy" not in ops(m)


def test_transpose_feeding_row_major_elementwise_stays_a_transpose():
    text = """
HloModule m
ENTRY main {
  a = f32[3,4]{1,0} parameter(0)
  t = f32[4,3]{1,0} transpose(a), dimensions={1,0}
  ROOT n = f32[4,3]{1,0} negate(t)
}
"""
    m, changed = run_passes(text, [CpuLayoutAssignment()])
    assert ops(m).count("transpose") == 1 and "bitcast" not in ops(m)


def test_transpose_of_degenerate_dims_is_a_bitcast():
    text = """
HloModule m
ENTRY main {
  a = f32[1,5]{1,0} parameter(0)
  t = f32[5,1]{1,0} transpose(a), dimensions={1,0}
  ROOT n = f32[5,1]{1,0} negate(t)
}
"""
    m, _ = run_passes(text, [CpuLayoutAssignment()])
    assert "transpose" not in ops(m) and "bitcast" in ops(m)


def test_row_major_reshape_is_a_bitcast_but_a_relayouting_one_is_not():
    text = """
HloModule m
ENTRY main {
  a = f32[2,3,4]{2,1,0} parameter(0)
  r = f32[6,4]{1,0} reshape(a)
  b = f32[2,6]{0,1} parameter(1)
  s = f32[3,4]{1,0} reshape(b)
  ROOT t = (f32[6,4]{1,0}, f32[3,4]{1,0}) tuple(r, s)
}
"""
    m, _ = run_passes(text, [CpuLayoutAssignment()])
    root = m.entry.root
    assert root.operands[0].opcode == "bitcast"
    assert root.operands[1].opcode == "reshape"


def test_elementwise_operand_with_other_layout_is_copied():
    text = """
HloModule m
ENTRY main {
  a = f32[3,4]{1,0} parameter(0)
  b = f32[3,4]{0,1} parameter(1)
  ROOT s = f32[3,4]{1,0} add(a, b)
}
"""
    m, _ = run_passes(text, [CpuLayoutAssignment()])
    (c,) = find(m, "copy")
    assert c.operands[0].name == "b" and c.shape.layout == Layout((1, 0))
    assert m.entry.root.operands[1] is c


def test_dot_takes_the_layout_of_its_only_elementwise_user():
    # a transposed weight gradient accumulated into a row-major sum: the dot writes
    # row-major instead of being copied; a dot with a second user keeps its layout
    text = """
HloModule m
ENTRY main {
  x = f32[5,3] parameter(0)
  y = f32[5,4] parameter(1)
  acc = f32[3,4]{1,0} parameter(2)
  d = f32[3,4]{0,1} dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  e = f32[3,4]{0,1} dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  s = f32[3,4]{1,0} add(acc, d)
  t = f32[3,4]{1,0} add(acc, e)
  ROOT r = (f32[3,4], f32[3,4], f32[3,4]) tuple(s, t, e)
}
"""
    m, _ = run_passes(text, [CpuLayoutAssignment(dot_follows_user=True)])
    d, e = (next(i for i in m.entry.instructions if i.name == n) for n in ("d", "e"))
    assert d.shape.layout == Layout((1, 0)) and e.shape.layout == Layout((0, 1))
    assert [c.operands[0].name for c in find(m, "copy")] == ["e"]
    plain, _ = run_passes(text, [CpuLayoutAssignment()])        # the default (GPU): a copy
    assert sorted(c.operands[0].name for c in find(plain, "copy")) == ["d", "e"]


def test_column_major_transpose_of_a_dot_becomes_the_swapped_dot():
    # JAX's LSTM gradient: transpose(dot(dz, x)) with layout {0,1} added to a row-major
    # accumulator; the CPU layout policy writes dot(x, dz) row-major, no copy
    text = """
HloModule m
ENTRY main {
  x = f32[5,3] parameter(0)
  y = f32[5,4] parameter(1)
  acc = f32[4,3]{1,0} parameter(2)
  d = f32[3,4]{1,0} dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  t = f32[4,3]{0,1} transpose(d), dimensions={1,0}
  ROOT s = f32[4,3]{1,0} add(acc, t)
}
"""
    m, _ = run_passes(text, [CpuLayoutAssignment(dot_follows_user=True)])
    assert sorted(ops(m)) == ["add", "dot", "parameter", "parameter", "parameter"]
    (dot,) = find(m, "dot")
    assert dot.operands[0].name == "y" and dot.shape.layout == Layout((1, 0))
    plain, _ = run_passes(text, [CpuLayoutAssignment()])          # the default: kept
    (kept,) = find(plain, "dot")
    assert kept.operands[0].name == "x" and "copy" in ops(plain)


BITCAST_OF_PARAM = """
HloModule m, entry_computation_layout={(f32[2,3]{0,1})->f32[6]{0}}
ENTRY main {
  p = f32[2,3]{1,0} parameter(0)
  ROOT b = f32[6]{0} bitcast(p)
}
"""


def test_entry_parameter_layout_keeps_bitcast_meaning():
    m, changed = run_passes(BITCAST_OF_PARAM, [CpuLayoutAssignment()])
    assert changed
    assert m.entry.parameters[0].shape.layout == Layout((0, 1))
    bc = m.entry.root
    assert bc.opcode == "bitcast" and bc.operands[0].opcode == "copy"
    assert bc.operands[0].shape.layout == Layout((1, 0))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(evaluate_module(m, [x]), x.reshape(-1))


def test_wrong_layout_would_be_visible_through_bitcast():
    """The check above is meaningful: the same change without the copy reads the bytes
    column-major and gives another answer."""
    m = H.parse_module(BITCAST_OF_PARAM)
    m.entry.parameters[0].shape = m.entry.parameters[0].shape.__class__.array(
        "f32", (2, 3), (0, 1))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(evaluate_module(m, [x]), x.T.reshape(-1))


def test_entry_result_layout_is_applied_with_a_copy():
    text = """
HloModule m, entry_computation_layout={(f32[2,3]{1,0})->(f32[2,3]{0,1}, f32[2,3]{1,0})}
ENTRY main {
  p = f32[2,3]{1,0} parameter(0)
  n = f32[2,3]{1,0} negate(p)
  ROOT t = (f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(n, p)
}
"""
    m, _ = run_passes(text, [CpuLayoutAssignment()])
    root = m.entry.root
    assert root.shape.tuple_shapes[0].layout == Layout((0, 1))
    assert root.operands[0].opcode == "copy"
    assert m.entry_computation_layout.result == root.shape


def test_lapack_custom_call_operands_are_copied_column_major():
    text = """
HloModule m
ENTRY main {
  a = f32[3,3]{1,0} parameter(0)
  t = f32[3,3]{1,0} transpose(a), dimensions={1,0}
  s = f32[3,3]{1,0} add(a, t)
  d = f32[3,3]{1,0} constant({{9,0,0},{0,9,0},{0,0,9}})
  spd = f32[3,3]{1,0} add(s, d)
  c = (f32[3,3]{0,1}, s32[]) custom-call(spd), custom_call_target="lapack_spotrf_ffi", operand_layout_constraints={f32[3,3]{0,1}}, api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}
  l = f32[3,3]{0,1} get-tuple-element(c), index=0
  ROOT n = f32[3,3]{1,0} negate(l)
}
"""
    args = [np.array([[1, 0.5, 0.2], [0.1, 2, 0.3], [0.4, 0.2, 1]], np.float32)]
    m, _ = run_passes(text, [CpuLayoutAssignment()], args=args)
    cc = find(m, "custom-call")[0]
    assert cc.operands[0].opcode == "copy"
    assert cc.operands[0].shape.layout == Layout((0, 1))
    neg = m.entry.root
    assert neg.operands[0].opcode == "copy" and neg.operands[0].shape.layout == Layout((1, 0))


WHILE_LOOP = """
HloModule m
cond {
  sc = (s32[], f32[2,3]) parameter(0)
  ic = s32[] get-tuple-element(sc), index=0
  nc = s32[] constant(3)
  ROOT ltc = pred[] compare(ic, nc), direction=LT
}
body {
  s = (s32[], f32[2,3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[2,3] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x1 = f32[2,3] multiply(x, x)
  ROOT t = (s32[], f32[2,3]) tuple(i1, x1)
}
ENTRY main {
  p = f32[2,3] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[2,3]) tuple(z, p)
  w = (s32[], f32[2,3]) while(init), condition=cond, body=body
  ROOT r = f32[2,3] get-tuple-element(w), index=1
}
"""


def test_while_loop_gets_consistent_layouts():
    m, _ = run_passes(WHILE_LOOP, [CpuLayoutAssignment()])
    assert all_shapes_have_layouts(m)
    w = find(m, "while")[0]
    body, cond = w.attrs["body"], w.attrs["condition"]
    assert w.shape == body.parameters[0].shape == body.root.shape == cond.parameters[0].shape
    assert w.operands[0].shape == w.shape


def _optimized_cases_with_layout_changes():
    out = []
    for case in all_cases():
        text = case.text("module.optimized.hlo")
        if "bitcast(" in text or "{0,1}" in text or "{1,2,0}" in text or "{0,1,2" in text:
            out.append(pytest.param(case, id=case.name))
    return out


@pytest.mark.parametrize("case", _optimized_cases_with_layout_changes())
def test_optimized_conformance_modules_keep_their_results(case):
    """XLA's optimized modules carry bitcasts and non-row-major layouts; running layout
    assignment and copy insertion on them keeps every expected output."""
    module = H.parse_module(case.text("module.optimized.hlo"))
    CpuLayoutAssignment().run(module)
    CopyInsertion().run(module)
    verify_module(module)
    assert all_shapes_have_layouts(module)
    args, expected = case.inputs_and_outputs([p.shape for p in module.entry.parameters])
    bad = compare_outputs(xlapy.run_hlo(module, args), expected, case.rtol, case.atol)
    assert not bad, "\n".join(b.message for b in bad)


# ============================================================================ copy insertion


def test_parameter_and_constant_outputs_are_copied_once_per_buffer():
    text = """
HloModule m
ENTRY main {
  p = f32[4]{0} parameter(0)
  c = f32[4]{0} constant({1, 2, 3, 4})
  n = f32[4]{0} negate(p)
  ROOT t = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(p, c, n, n)
}
"""
    m, changed = run_passes(text, [CopyInsertion()])
    assert changed
    kinds = [o.opcode for o in m.entry.root.operands]
    assert kinds == ["copy", "copy", "negate", "copy"]
    assert m.entry.root.operands[3].operands[0].opcode == "negate"


def test_fresh_outputs_get_no_copy():
    text = """
HloModule m
ENTRY main {
  p = f32[4]{0} parameter(0)
  n = f32[4]{0} negate(p)
  e = f32[4]{0} exponential(p)
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(n, e)
}
"""
    m, changed = run_passes(text, [CopyInsertion()])
    assert not changed and "copy" not in ops(m)


def test_aliased_pass_through_parameter_is_not_copied():
    text = """
HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY main {
  p = f32[4]{0} parameter(0)
  q = f32[4]{0} parameter(1)
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(p, q)
}
"""
    m, _ = run_passes(text, [CopyInsertion()])
    assert [o.opcode for o in m.entry.root.operands] == ["parameter", "copy"]


def test_donated_parameter_read_after_its_output_is_copied_first():
    text = """
HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY main {
  p = f32[4]{0} parameter(0)
  one = f32[] constant(1)
  b = f32[4]{0} broadcast(one), dimensions={}
  a = f32[4]{0} add(p, b)
  m2 = f32[4]{0} multiply(p, p)
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(a, m2)
}
"""
    m, changed = run_passes(text, [CopyInsertion()])
    assert changed
    (c,) = find(m, "copy")
    p = m.entry.parameters[0]
    assert c.operands[0] is p and p.users == [c]
    a = m.entry.root.operands[0]
    assert c in a.control_predecessors


def test_donated_parameter_only_read_before_its_output_needs_no_copy():
    text = """
HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  p = f32[4]{0} parameter(0)
  e = f32[4]{0} exponential(p)
  ROOT a = f32[4]{0} add(e, p)
}
"""
    m, changed = run_passes(text, [CopyInsertion()])
    assert not changed


def test_while_init_parameter_and_constant_are_copied():
    m, _ = run_passes(WHILE_LOOP, [CpuLayoutAssignment(), CopyInsertion()])
    w = find(m, "while")[0]
    init = w.operands[0]
    assert [o.opcode for o in init.operands] == ["copy", "copy"]
    body = w.attrs["body"]
    assert "copy" not in ops(m, body), "fresh loop values that nobody reads later need no copy"


def test_while_init_of_fresh_unshared_values_is_not_copied():
    text = WHILE_LOOP.replace("  init = (s32[], f32[2,3]) tuple(z, p)",
                              "  e = f32[2,3] exponential(p)\n  z1 = s32[] negate(z)\n"
                              "  init = (s32[], f32[2,3]) tuple(z1, e)")
    m, _ = run_passes(text, [CpuLayoutAssignment(), CopyInsertion()])
    init = find(m, "while")[0].operands[0]
    assert [o.opcode for o in init.operands] == ["negate", "exponential"]


def test_while_init_value_read_after_the_loop_is_copied():
    text = WHILE_LOOP.replace(
        "  init = (s32[], f32[2,3]) tuple(z, p)\n  w = (s32[], f32[2,3]) while(init), "
        "condition=cond, body=body\n  ROOT r = f32[2,3] get-tuple-element(w), index=1",
        "  e = f32[2,3] exponential(p)\n  z1 = s32[] negate(z)\n"
        "  init = (s32[], f32[2,3]) tuple(z1, e)\n"
        "  w = (s32[], f32[2,3]) while(init), condition=cond, body=body\n"
        "  r = f32[2,3] get-tuple-element(w), index=1\n  ROOT out = f32[2,3] add(r, e)")
    m, _ = run_passes(text, [CpuLayoutAssignment(), CopyInsertion()])
    init = find(m, "while")[0].operands[0]
    assert [o.opcode for o in init.operands] == ["negate", "copy"]


SWAP_LOOP = """
HloModule m
cond {
  sc = (s32[], f32[3], f32[3]) parameter(0)
  ic = s32[] get-tuple-element(sc), index=0
  nc = s32[] constant(3)
  ROOT ltc = pred[] compare(ic, nc), direction=LT
}
body {
  s = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[3] get-tuple-element(s), index=1
  b = f32[3] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[3], f32[3]) tuple(i1, b, a)
}
ENTRY main {
  z = s32[] constant(0)
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  e = f32[3] exponential(x)
  l = f32[3] log(y)
  init = (s32[], f32[3], f32[3]) tuple(z, e, l)
  w = (s32[], f32[3], f32[3]) while(init), condition=cond, body=body
  ROOT r = f32[3] get-tuple-element(w), index=1
}
"""


def test_swapping_loop_state_copies_both_swapped_elements():
    m, _ = run_passes(SWAP_LOOP, [CpuLayoutAssignment(), CopyInsertion()])
    body = find(m, "while")[0].attrs["body"]
    assert [o.opcode for o in body.root.operands] == ["add", "copy", "copy"]


def test_swapped_elements_go_through_temporaries_and_are_ordered():
    m, _ = run_passes(SWAP_LOOP, [CpuLayoutAssignment(), CopyInsertion()])
    body = find(m, "while")[0].attrs["body"]
    _, ca, cb = body.root.operands
    ta, tb = ca.operands[0], cb.operands[0]
    assert ta.opcode == tb.opcode == "copy"
    assert ta.operands[0].attrs["index"] == 2 and tb.operands[0].attrs["index"] == 1
    # the copy writing element 1 runs after the temporary that saved old element 1
    assert tb in ca.control_predecessors and ta in cb.control_predecessors


@pytest.mark.parametrize("text", [WHILE_LOOP, SWAP_LOOP, NO_LAYOUTS, BITCAST_OF_PARAM])
def test_passes_are_idempotent(text):
    module = H.parse_module(text)
    args = random_args(module)
    before = evaluate_module(module, args)
    assert CpuLayoutAssignment().run(module)
    CopyInsertion().run(module)
    assert not CpuLayoutAssignment().run(module)
    assert not CopyInsertion().run(module)
    verify_module(module)
    assert_same_bits(before, evaluate_module(H.parse_module(module.to_text()), args))


def test_loop_element_read_after_being_overwritten_is_copied():
    text = """
HloModule m
cond {
  sc = (s32[], f32[3]) parameter(0)
  ic = s32[] get-tuple-element(sc), index=0
  nc = s32[] constant(4)
  ROOT ltc = pred[] compare(ic, nc), direction=LT
}
body {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[3] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  fi = f32[] convert(i)
  b = f32[3] broadcast(fi), dimensions={}
  x1 = f32[3] add(x, b)
  ROOT t = (s32[], f32[3]) tuple(i1, x1)
}
ENTRY main {
  z = s32[] constant(0)
  x0 = f32[3] parameter(0)
  e = f32[3] exponential(x0)
  z1 = s32[] negate(z)
  init = (s32[], f32[3]) tuple(z1, e)
  w = (s32[], f32[3]) while(init), condition=cond, body=body
  ROOT r = f32[3] get-tuple-element(w), index=1
}
"""
    m, _ = run_passes(text, [CpuLayoutAssignment(), CopyInsertion()])
    body = find(m, "while")[0].attrs["body"]
    # old i is read by convert, which need not run before add(i, 1): copy the new i.
    # x is only read by the add that overwrites it: no copy.
    assert [o.opcode for o in body.root.operands] == ["copy", "add"]
    copy_i = body.root.operands[0]
    assert [r.opcode for r in copy_i.control_predecessors] == ["convert"]


def test_conditional_branch_returning_its_parameter_is_copied():
    text = """
HloModule m
yes {
  p = f32[3] parameter(0)
  ROOT n = f32[3] negate(p)
}
no {
  ROOT q = f32[3] parameter(0)
}
ENTRY main {
  c = pred[] parameter(0)
  x = f32[3] parameter(1)
  e = f32[3] exponential(x)
  ROOT r = f32[3] conditional(c, e, e), true_computation=yes, false_computation=no
}
"""
    for flag in (True, False):
        args = [np.array(flag), np.array([0.5, -1, 2], np.float32)]
        m, _ = run_passes(text, [CopyInsertion()], args=args)
        cond = find(m, "conditional")[0]
        yes, no = cond.called_computations
        assert yes.root.opcode == "negate" and no.root.opcode == "copy"


# ============================================================================ whole pipeline


def test_pipeline_turns_transpose_into_dot_into_a_bitcast_and_keeps_results():
    """With transpose folding off, layout assignment removes the transpose instead."""
    module = H.parse_module(DOT_OF_TRANSPOSE)
    args = random_args(module)
    before = evaluate_module(module, args)
    with debug_options(xla_disable_hlo_passes=("transpose-folding",)):
        optimized = xlapy.optimize(module, verify=True)
    texts = optimized.to_text()
    assert " transpose(" not in texts and "bitcast(" in texts
    assert_same_bits(before, evaluate_module(optimized, args))


def test_pipeline_copies_a_returned_parameter():
    text = """
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  n = f32[4] negate(p)
  ROOT t = (f32[4], f32[4]) tuple(n, p)
}
"""
    optimized = xlapy.optimize(text)
    assert optimized.entry.root.operands[1].opcode in ("copy", "fusion")
    assert optimized.entry.root.operands[1].operands[0].opcode == "parameter"
