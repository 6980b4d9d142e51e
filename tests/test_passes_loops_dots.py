"""simplify-while-loops, while-loop-invariant-code-motion, dot_decomposer, transpose-folding:
structure after each rewrite, and the interpreter computing the same before and after."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy.hlo as H
from pass_check import folding_context, random_args, run_passes
from xlapy.backends.interpreter import evaluate_module
from xlapy.hlo.verifier import verify_module
from xlapy.passes import (DotDecomposer, HloDCE, TransposeFolding, WhileLoopInvariantCodeMotion,
                          WhileLoopSimplifier, target_independent_passes)
from xlapy.passes.dot_decomposer import dot_dims, is_canonical_dot
from xlapy.passes.transpose_folding import always_fold
from xlapy.passes.while_loop_analysis import compute_while_loop_trip_count


def all_opcodes(module) -> list[str]:
    return [i.opcode for c in module.computations for i in c.instructions]


def body_of(module):
    return [i for i in module.entry.instructions if i.opcode == "while"][0].attrs["body"]


# --------------------------------------------------------------------------------------------
# while loops

def counter_loop(init="0", bound="5", direction="LT", update="add(bi, one)",
                 body_extra="", entry_extra="", bound_expr=None, x_update="multiply(bx, ew)"):
    """A loop over (s32 counter, f32[4] x, f32[4] w invariant, f32[4] d dead)."""
    cond_bound = bound_expr or f"cn = s32[] constant({bound})"
    return f"""HloModule m
cond {{
  cp = (s32[], f32[4], f32[4], f32[4], s32[]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  climit = s32[] get-tuple-element(cp), index=4
  {cond_bound}
  ROOT lt = pred[] compare(ci, cn), direction={direction}
}}
body {{
  bp = (s32[], f32[4], f32[4], f32[4], s32[]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  one = s32[] constant(1)
  i1 = s32[] {update}
  bx = f32[4] get-tuple-element(bp), index=1
  bw = f32[4] get-tuple-element(bp), index=2
  bd = f32[4] get-tuple-element(bp), index=3
  blimit = s32[] get-tuple-element(bp), index=4
  e = f32[4] exponential(bw)
  onef = f32[] constant(1)
  b = f32[4] broadcast(onef), dimensions={{}}
  ew = f32[4] add(e, b)
  x1 = f32[4] {x_update}
  d1 = f32[4] add(bd, bd)
  {body_extra}
  ROOT t = (s32[], f32[4], f32[4], f32[4], s32[]) tuple(i1, x1, bw, d1, blimit)
}}
ENTRY main {{
  x = f32[4] parameter(0)
  w = f32[4] parameter(1)
  limit = s32[] parameter(2)
  z = s32[] constant({init})
  {entry_extra}
  init = (s32[], f32[4], f32[4], f32[4], s32[]) tuple(z, x, w, x, limit)
  loop = (s32[], f32[4], f32[4], f32[4], s32[]) while(init), condition=cond, body=body
  ROOT out = f32[4] get-tuple-element(loop), index=1
}}"""


def loop_args(limit: int = 3):
    rng = np.random.default_rng(1)
    return [rng.normal(size=4).astype(np.float32) * 0.3,
            rng.normal(size=4).astype(np.float32) * 0.3, np.int32(limit)]


@pytest.mark.parametrize("init,bound,direction,update,expected", [
    (0, 5, "LT", "add(bi, one)", 5),
    (0, 5, "LE", "add(bi, one)", 6),
    (2, 3, "LT", "add(bi, one)", 1),
    (7, 7, "LT", "add(bi, one)", 0),
    (10, 0, "GT", "subtract(bi, one)", 10),
    (10, 0, "GE", "subtract(bi, one)", 11),
    (0, 6, "NE", "add(one, bi)", 6),
    (2147483640, 2147483647, "LE", "add(bi, one)", None),   # ends only by overflow
    (0, 5, "GT", "add(bi, one)", 0),
    (0, 5, "LT", "subtract(bi, one)", None),                  # counts away from the bound
])
def test_trip_count_of_canonical_counter(init, bound, direction, update, expected):
    m = H.parse_module(counter_loop(str(init), str(bound), direction, update))
    loop = [i for i in m.entry.instructions if i.opcode == "while"][0]
    assert compute_while_loop_trip_count(loop) == expected


def test_trip_count_unknown_for_parameter_bound():
    m = H.parse_module(counter_loop(bound_expr="cn = s32[] copy(climit)"))
    loop = [i for i in m.entry.instructions if i.opcode == "while"][0]
    assert compute_while_loop_trip_count(loop) is None


def test_zero_trip_loop_is_replaced_by_its_init():
    m, changed = run_passes(counter_loop(init="9", bound="5"), [WhileLoopSimplifier()],
                            args=loop_args())
    assert changed and "while" not in all_opcodes(m)
    out = evaluate_module(m, loop_args())
    np.testing.assert_array_equal(out, loop_args()[0])


def test_zero_trip_found_by_evaluating_the_condition():
    # not the counter pattern (the bound is computed), but the condition folds on the init
    text = counter_loop(init="4", bound_expr="c3 = s32[] constant(3)\n  cn = s32[] add(c3, c3)",
                        direction="GT")
    m = H.parse_module(text)
    loop = [i for i in m.entry.instructions if i.opcode == "while"][0]
    assert compute_while_loop_trip_count(loop) is None
    m, changed = run_passes(text, [WhileLoopSimplifier()], args=loop_args())
    assert changed and "while" not in all_opcodes(m)


def test_one_trip_loop_is_inlined_once():
    m, changed = run_passes(counter_loop(init="4", bound="5"), [WhileLoopSimplifier()],
                            args=loop_args())
    assert changed and "while" not in all_opcodes(m)
    assert [c.name for c in m.computations] == ["main"]          # body/cond removed
    assert all_opcodes(m).count("exponential") == 1


def test_loop_with_unknown_trip_count_is_kept():
    text = counter_loop(bound_expr="cn = s32[] copy(climit)")
    for limit in (0, 1, 3):
        m, _ = run_passes(text, [WhileLoopSimplifier()], args=loop_args(limit))
        assert "while" in all_opcodes(m)


def test_side_effecting_one_trip_loop_is_not_inlined():
    extra = 'tok = s32[] custom-call(bi), custom_call_target="log", custom_call_has_side_effect=true'
    m = H.parse_module(counter_loop(init="4", bound="5", body_extra=extra))
    WhileLoopSimplifier().run(m, folding_context())
    assert "while" in all_opcodes(m)
    assert "custom-call" in [i.opcode for i in body_of(m).instructions]


def test_dead_loop_carried_element_is_removed():
    m, changed = run_passes(counter_loop(), [WhileLoopSimplifier()], args=loop_args())
    assert changed
    loop = [i for i in m.entry.instructions if i.opcode == "while"][0]
    # d (index 3) only feeds itself and limit (index 4) only passes through: both go
    assert len(loop.shape.tuple_shapes) == 3
    assert "add" in [i.opcode for i in body_of(m).instructions]
    assert not any(i.opcode == "add" and i.operands[0] is i.operands[1]
                   for i in body_of(m).instructions)


def test_element_read_by_condition_is_kept():
    text = counter_loop(bound_expr="cn = s32[] copy(climit)")
    m, _ = run_passes(text, [WhileLoopSimplifier()], args=loop_args(4))
    loop = [i for i in m.entry.instructions if i.opcode == "while"][0]
    assert len(loop.shape.tuple_shapes) == 4             # only d removed
    assert m.computation("cond").root.operands[1].operands[0].attrs["index"] == 3


def test_dead_element_feeding_a_side_effect_is_kept():
    extra = 'log = s32[] custom-call(d1), custom_call_target="log", custom_call_has_side_effect=true'
    m = H.parse_module(counter_loop(bound_expr="cn = s32[] copy(climit)", body_extra=extra))
    WhileLoopSimplifier().run(m, folding_context())
    verify_module(m)
    loop = [i for i in m.entry.instructions if i.opcode == "while"][0]
    assert len(loop.shape.tuple_shapes) == 5


def test_loops_sharing_a_body_get_private_copies():
    text = counter_loop().replace(
        "  ROOT out = f32[4] get-tuple-element(loop), index=1",
        "  loop2 = (s32[], f32[4], f32[4], f32[4], s32[]) while(init), condition=cond, body=body\n"
        "  o1 = f32[4] get-tuple-element(loop), index=1\n"
        "  o2 = f32[4] get-tuple-element(loop2), index=3\n"
        "  ROOT out = (f32[4], f32[4]) tuple(o1, o2)")
    m, changed = run_passes(text, [WhileLoopSimplifier()], args=loop_args())
    assert changed
    loops = [i for i in m.entry.instructions if i.opcode == "while"]
    # loop keeps (i, x, w); loop2 only needs (i, d)
    assert sorted(len(w.shape.tuple_shapes) for w in loops) == [2, 3]
    assert loops[0].attrs["body"] is not loops[1].attrs["body"]


# --------------------------------------------------------------------------------------------
# loop-invariant code motion

def test_invariant_computation_is_hoisted():
    m, changed = run_passes(counter_loop(), [WhileLoopInvariantCodeMotion()], args=loop_args())
    assert changed
    assert "exponential" not in [i.opcode for i in body_of(m).instructions]
    assert "exponential" in [i.opcode for i in m.entry.instructions]
    loop = [i for i in m.entry.instructions if i.opcode == "while"][0]
    assert len(loop.shape.tuple_shapes) == 6                 # ew carried in
    assert not WhileLoopInvariantCodeMotion().run(m)          # fixed point


def test_hoisting_with_zero_trips_is_still_exact():
    m, changed = run_passes(counter_loop(init="9"), [WhileLoopInvariantCodeMotion()],
                            args=loop_args())
    assert changed


def test_hoisting_then_simplifying_keeps_results():
    run_passes(counter_loop(bound_expr="cn = s32[] copy(climit)"),
               [WhileLoopInvariantCodeMotion(), WhileLoopSimplifier(), WhileLoopSimplifier()],
               args=loop_args(3))


def test_side_effecting_and_variant_instructions_stay_in_the_body():
    extra = ('lo = f32[] constant(0)\n  rn = f32[4] rng(lo, onef), distribution=rng_uniform\n'
             '  v = f32[4] sine(bx)\n  vr = f32[4] add(v, rn)')
    m = H.parse_module(counter_loop(body_extra=extra, x_update="multiply(vr, ew)"))
    assert WhileLoopInvariantCodeMotion().run(m)
    verify_module(m)
    body_ops = [i.opcode for i in body_of(m).instructions]
    assert "rng" in body_ops and "sine" in body_ops
    assert "rng" not in [i.opcode for i in m.entry.instructions]


def test_cheap_invariant_op_alone_is_not_hoisted():
    text = counter_loop(x_update="multiply(bx, bb)",
                        body_extra="bb = f32[4] broadcast(onef), dimensions={}")
    m = H.parse_module(text)
    HloDCE().run(m)
    assert not WhileLoopInvariantCodeMotion().run(m)


# --------------------------------------------------------------------------------------------
# dot_decomposer

DOT = """HloModule m
ENTRY main {{
  a = {et}{lhs} parameter(0)
  b = {et}{rhs} parameter(1)
  ROOT d = {et}{out} dot(a, b), {dims}
}}"""

DOT_CASES = [
    # batch dim not leading, two contracting dims, two free dims on the rhs
    ("[4,2,3,5]", "[3,2,6,5,7]", "[2,4,6,7]",
     "lhs_batch_dims={1}, lhs_contracting_dims={2,3}, rhs_batch_dims={1}, "
     "rhs_contracting_dims={0,3}"),
    # contracting dims listed out of order
    ("[3,4,5]", "[5,3,2]", "[4,2]", "lhs_contracting_dims={2,0}, rhs_contracting_dims={0,1}"),
    # outer product: no contracting dim
    ("[3]", "[4]", "[3,4]", ""),
    # two batch dims in swapped order
    ("[2,3,4,5]", "[3,2,5,6]", "[3,2,4,6]",
     "lhs_batch_dims={1,0}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, "
     "rhs_contracting_dims={2}"),
]


@pytest.mark.parametrize("et", ["s32", "f32"])
@pytest.mark.parametrize("lhs,rhs,out,dims", DOT_CASES)
def test_dot_decomposer_canonicalizes(et, lhs, rhs, out, dims):
    text = DOT.format(et=et, lhs=lhs, rhs=rhs, out=out, dims=dims).replace(", \n", "\n")
    module = H.parse_module(text)
    args = random_args(module)
    before = evaluate_module(module, args)
    m, changed = run_passes(text, [DotDecomposer()], args=args, compare=False)
    assert changed
    dots = [i for i in m.entry.instructions if i.opcode == "dot"]
    assert len(dots) == 1 and is_canonical_dot(dots[0])
    nb = len(dot_dims(dots[0], "lhs_batch_dims"))
    assert all(o.shape.rank <= nb + 2 for o in dots[0].operands)
    after = evaluate_module(m, args)
    if et == "s32":
        np.testing.assert_array_equal(after, before)
    else:
        np.testing.assert_allclose(after, before, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("lhs,rhs,out,dims", [
    # a weight gradient: [B, S, D] x [B, S, F] over B, S -> [D, F]
    ("[2,3,4]", "[2,3,5]", "[4,5]", "lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}"),
    # the input gradient's shape: free dims first, contracting dims last on both sides
    ("[4,2,3]", "[5,2,3]", "[4,5]", "lhs_contracting_dims={1,2}, rhs_contracting_dims={1,2}"),
    # with a leading batch dim
    ("[6,2,3,4]", "[6,2,3,5]", "[6,4,5]", "lhs_batch_dims={0}, lhs_contracting_dims={1,2}, "
                                          "rhs_batch_dims={0}, rhs_contracting_dims={1,2}"),
])
def test_dot_decomposer_reshapes_without_transposing(lhs, rhs, out, dims):
    """Operands whose dimensions already run (batch, contracting, free) or (batch, free,
    contracting) are only reshaped: no transpose (a copy) is added."""
    text = DOT.format(et="f32", lhs=lhs, rhs=rhs, out=out, dims=dims)
    module = H.parse_module(text)
    args = random_args(module)
    before = evaluate_module(module, args)
    m, changed = run_passes(text, [DotDecomposer()], args=args, compare=False)
    assert changed
    ops = [i.opcode for i in m.entry.instructions]
    assert "transpose" not in ops and ops.count("dot") == 1
    dot = next(i for i in m.entry.instructions if i.opcode == "dot")
    assert is_canonical_dot(dot)
    np.testing.assert_allclose(evaluate_module(m, args), before, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("lhs,rhs,out,dims", [
    ("[2,4,3]", "[2,3,6]", "[2,4,6]", "lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                                      "rhs_batch_dims={0}, rhs_contracting_dims={1}"),
    # [batch, contracting, free] x [batch, free, contracting] is canonical too
    ("[2,3,4]", "[2,5,3]", "[2,4,5]", "lhs_batch_dims={0}, lhs_contracting_dims={1}, "
                                      "rhs_batch_dims={0}, rhs_contracting_dims={2}"),
    ("[4,3]", "[3]", "[4]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
])
def test_canonical_dots_are_left_alone(lhs, rhs, out, dims):
    text = DOT.format(et="f32", lhs=lhs, rhs=rhs, out=out, dims=dims)
    _, changed = run_passes(text, [DotDecomposer()])
    assert not changed


# --------------------------------------------------------------------------------------------
# transpose-folding

FOLD = """HloModule m
ENTRY main {{
  a = s32[{a}] parameter(0)
  b = s32[{b}] parameter(1)
  ta = s32[{ta}] transpose(a), dimensions={{{perm}}}
  d = s32[{out}] dot(ta, b), {dims}
  {extra}
}}"""


def test_transpose_of_lhs_is_folded_into_the_dot():
    text = FOLD.format(a="5,3", b="5,4", ta="3,5", perm="1,0", out="3,4",
                       dims="lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                       extra="ROOT r = s32[3,4] negate(d)")
    m, changed = run_passes(text, [TransposeFolding()])
    assert changed
    dot = [i for i in m.entry.instructions if i.opcode == "dot"][0]
    assert all(o.opcode != "transpose" for o in dot.operands)
    assert dot_dims(dot, "lhs_contracting_dims") == (0,)
    assert "transpose" not in [i.opcode for i in m.entry.instructions]


def test_transpose_with_other_users_is_folded_and_kept():
    text = FOLD.format(a="2,5,3", b="2,5,4", ta="2,3,5", perm="0,2,1", out="2,3,4",
                       dims="lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                            "rhs_contracting_dims={1}",
                       extra="ROOT r = (s32[2,3,4], s32[2,3,5]) tuple(d, ta)")
    m, changed = run_passes(text, [TransposeFolding()])
    assert changed
    dot = [i for i in m.entry.instructions if i.opcode == "dot"][0]
    assert dot.operands[0].opcode == "parameter"
    assert dot_dims(dot, "lhs_contracting_dims") == (1,)
    assert "transpose" in [o.opcode for o in m.entry.root.operands]


def test_transpose_moving_a_batch_dim_is_not_folded_by_default():
    text = FOLD.format(a="3,2,5", b="2,5,4", ta="2,3,5", perm="1,0,2", out="2,3,4",
                       dims="lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                            "rhs_contracting_dims={1}",
                       extra="ROOT r = s32[2,3,4] negate(d)")
    _, changed = run_passes(text, [TransposeFolding()])
    assert not changed
    m, changed = run_passes(text, [TransposeFolding(can_fold_dot_operand=always_fold)])
    assert changed and "transpose" not in [i.opcode for i in m.entry.instructions]


def test_transpose_reordering_free_dims_is_never_folded():
    text = FOLD.format(a="4,3,5", b="5,2", ta="3,4,5", perm="1,0,2", out="3,4,2",
                       dims="lhs_contracting_dims={2}, rhs_contracting_dims={0}",
                       extra="ROOT r = s32[3,4,2] negate(d)")
    _, changed = run_passes(text, [TransposeFolding(can_fold_dot_operand=always_fold)])
    assert not changed


def test_pipeline_order_of_the_new_passes():
    names = [p.name for p in target_independent_passes()]
    assert names.index("dot_decomposer") < names.index("zero_sized_hlo_elimination")
    assert names.index("call-inliner") < names.index("batchnorm_expander") \
        < names.index("convolution-canonicalization") < names.index("simplification")
    simplification = [p for p in target_independent_passes() if p.name == "simplification"][0]
    inner = simplification.inner.pass_names      # HloPassFix around the "simplification" pipeline
    assert inner.index("while-loop-invariant-code-motion") < inner.index("simplify-while-loops")
    assert names.index("simplification") < names.index("transpose-folding") < names.index("cse")


NESTED = """HloModule m
inner_cond {
  icp = (s32[], f32[3], f32[3]) parameter(0)
  ici = s32[] get-tuple-element(icp), index=0
  three = s32[] constant(3)
  ROOT ilt = pred[] compare(ici, three), direction=LT
}
inner_body {
  ibp = (s32[], f32[3], f32[3]) parameter(0)
  ibi = s32[] get-tuple-element(ibp), index=0
  ione = s32[] constant(1)
  ibi1 = s32[] add(ibi, ione)
  iacc = f32[3] get-tuple-element(ibp), index=1
  iw = f32[3] get-tuple-element(ibp), index=2
  isin = f32[3] sine(iw)
  iacc1 = f32[3] add(iacc, isin)
  ROOT it = (s32[], f32[3], f32[3]) tuple(ibi1, iacc1, iw)
}
outer_cond {
  ocp = (s32[], f32[3], f32[3]) parameter(0)
  oci = s32[] get-tuple-element(ocp), index=0
  one = s32[] constant(1)
  ROOT olt = pred[] compare(oci, one), direction=LT
}
outer_body {
  obp = (s32[], f32[3], f32[3]) parameter(0)
  obi = s32[] get-tuple-element(obp), index=0
  oone = s32[] constant(1)
  obi1 = s32[] add(obi, oone)
  oacc = f32[3] get-tuple-element(obp), index=1
  ow = f32[3] get-tuple-element(obp), index=2
  zero = s32[] constant(0)
  itup = (s32[], f32[3], f32[3]) tuple(zero, oacc, ow)
  inner = (s32[], f32[3], f32[3]) while(itup), condition=inner_cond, body=inner_body
  oacc1 = f32[3] get-tuple-element(inner), index=1
  ROOT ot = (s32[], f32[3], f32[3]) tuple(obi1, oacc1, ow)
}
ENTRY main {
  state = (s32[], f32[3], f32[3]) parameter(0)
  loop = (s32[], f32[3], f32[3]) while(state), condition=outer_cond, body=outer_body
  ROOT r = f32[3] get-tuple-element(loop), index=1
}"""


def test_nested_loops_through_the_target_independent_passes():
    args = [(np.int32(0), np.array([1, 2, 3], np.float32), np.array([.5, -1, 2], np.float32))]
    before = evaluate_module(H.parse_module(NESTED), args)
    m, changed = run_passes(NESTED, [WhileLoopInvariantCodeMotion(), WhileLoopSimplifier()],
                            args=args)
    assert changed
    # the inner sine was hoisted out of the inner loop
    inner = [i for c in m.computations for i in c.instructions
             if i.opcode == "while" and i.attrs["body"].name.startswith("inner_body")]
    assert inner and "sine" not in [i.opcode for i in inner[0].attrs["body"].instructions]
    for p in target_independent_passes():
        p.run(m, folding_context())
    verify_module(m)
    np.testing.assert_array_equal(evaluate_module(m, args), before)
