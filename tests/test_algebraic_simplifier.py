"""algsimp: each rewrite happens (instruction structure) and results stay bit-identical."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy.hlo as H
from pass_check import assert_same_bits, opcodes, run_passes
from xlapy.backends.interpreter import evaluate_module
from xlapy.hlo import types as T
from xlapy.passes import AlgebraicSimplifier, HloDCE
from xlapy.passes.algebraic_simplifier import value_preserving


def simplify(body: str, params: str, args=None, header: str = ""):
    """Run algsimp (+dce) on an entry computation; returns (module, root)."""
    text = f"HloModule m\n{header}\nENTRY e {{\n{params}\n{body}\n}}"
    m, changed = run_passes(text, [AlgebraicSimplifier()], args=args)
    assert changed
    return m, m.entry.root


def root_is_param(m, root, n=0) -> bool:
    return root is m.entry.parameters[n]


X = "  x = f32[4,3] parameter(0)"
XI = "  x = s32[4,3] parameter(0)"
SPECIALS = np.array([[0.0, -0.0, np.inf], [-np.inf, np.nan, 1.5], [-2.0, 1e-40, 3.0],
                     [7.0, -7.0, 0.5]], np.float32)


@pytest.mark.parametrize("body", [
    "  z = f32[] constant(-0)\n  b = f32[4,3] broadcast(z), dimensions={}\n"
    "  ROOT r = f32[4,3] add(x, b)",
    "  z = f32[] constant(-0)\n  b = f32[4,3] broadcast(z), dimensions={}\n"
    "  ROOT r = f32[4,3] add(b, x)",
    "  z = f32[] constant(0)\n  b = f32[4,3] broadcast(z), dimensions={}\n"
    "  ROOT r = f32[4,3] subtract(x, b)",
    "  o = f32[] constant(1)\n  b = f32[4,3] broadcast(o), dimensions={}\n"
    "  ROOT r = f32[4,3] multiply(x, b)",
    "  o = f32[] constant(1)\n  b = f32[4,3] broadcast(o), dimensions={}\n"
    "  ROOT r = f32[4,3] multiply(b, x)",
    "  o = f32[4,3] constant({{1,1,1},{1,1,1},{1,1,1},{1,1,1}})\n"
    "  ROOT r = f32[4,3] divide(x, o)",
    "  n = f32[4,3] negate(x)\n  ROOT r = f32[4,3] negate(n)",
])
def test_identities_on_floats_return_x(body):
    m, root = simplify(body, X, args=[SPECIALS])
    assert root_is_param(m, root)


def test_float_plus_positive_zero_is_kept():
    """x + 0.0 turns -0.0 into +0.0, so it is not an identity for floats."""
    text = ("HloModule m\nENTRY e {\n" + X + "\n  z = f32[] constant(0)\n"
            "  b = f32[4,3] broadcast(z), dimensions={}\n  ROOT r = f32[4,3] add(x, b)\n}")
    m = H.parse_module(text)
    AlgebraicSimplifier().run(m)
    assert m.entry.root.opcode == "add"
    m2 = H.parse_module(text.replace("add(x, b)", "subtract(x, b)").replace("constant(0)",
                                                                           "constant(-0)"))
    AlgebraicSimplifier().run(m2)
    assert m2.entry.root.opcode == "subtract"


def test_float_times_zero_is_kept():
    text = ("HloModule m\nENTRY e {\n" + X + "\n  z = f32[] constant(0)\n"
            "  b = f32[4,3] broadcast(z), dimensions={}\n  ROOT r = f32[4,3] multiply(x, b)\n}")
    m = H.parse_module(text)
    AlgebraicSimplifier().run(m)
    assert m.entry.root.opcode == "multiply"


@pytest.mark.parametrize("body", [
    "  z = s32[] constant(0)\n  b = s32[4,3] broadcast(z), dimensions={}\n"
    "  ROOT r = s32[4,3] add(x, b)",
    "  z = s32[] constant(0)\n  b = s32[4,3] broadcast(z), dimensions={}\n"
    "  ROOT r = s32[4,3] subtract(x, b)",
    "  o = s32[] constant(1)\n  b = s32[4,3] broadcast(o), dimensions={}\n"
    "  ROOT r = s32[4,3] divide(x, b)",
    "  n = s32[4,3] negate(x)\n  ROOT r = s32[4,3] negate(n)",
    "  n = s32[4,3] not(x)\n  ROOT r = s32[4,3] not(n)",
])
def test_identities_on_integers_return_x(body):
    m, root = simplify(body, XI)
    assert root_is_param(m, root)


@pytest.mark.parametrize("body", [
    "  z = s32[] constant(0)\n  b = s32[4,3] broadcast(z), dimensions={}\n"
    "  ROOT r = s32[4,3] multiply(x, b)",
    "  ROOT r = s32[4,3] subtract(x, x)",
])
def test_integer_zero_results(body):
    m, root = simplify(body, XI)
    assert root.opcode == "broadcast" and int(root.operands[0].literal) == 0
    assert opcodes(m) == ["parameter", "constant", "broadcast"]


@pytest.mark.parametrize("direction,value", [("EQ", True), ("LE", True), ("GE", True),
                                             ("NE", False), ("LT", False), ("GT", False)])
def test_compare_with_itself_for_integers(direction, value):
    m, root = simplify(f"  ROOT r = pred[4,3] compare(x, x), direction={direction}", XI)
    assert root.opcode == "broadcast" and bool(root.operands[0].literal) is value


def test_compare_with_itself_for_floats_is_kept():
    m = H.parse_module("HloModule m\nENTRY e {\n" + X +
                       "\n  ROOT r = pred[4,3] compare(x, x), direction=EQ\n}")
    AlgebraicSimplifier().run(m)
    assert m.entry.root.opcode == "compare"        # NaN != NaN


def test_divide_by_power_of_two_becomes_multiply():
    m, root = simplify("  c = f32[] constant(4)\n  b = f32[4,3] broadcast(c), dimensions={}\n"
                       "  ROOT r = f32[4,3] divide(x, b)", X, args=[SPECIALS])
    assert root.opcode == "multiply"
    assert float(root.operands[1].operands[0].literal) == 0.25


@pytest.mark.parametrize("exponent,opcode", [(2, "multiply"), (-1, "divide"), (0, "broadcast"),
                                             (1, "parameter")])
def test_power_by_small_constants_float(exponent, opcode):
    """XLA's pow(x, 0|1|2|-1) rewrites give the correctly rounded power, bit for bit, on NaN,
    inf, -0 and subnormals (NumPy's float32 pow is off by an ulp for 7**-1, so the reference
    is computed in float64 and rounded once)."""
    m, root = simplify(f"  c = f32[] constant({exponent})\n"
                       "  b = f32[4,3] broadcast(c), dimensions={}\n"
                       "  ROOT r = f32[4,3] power(x, b)", X)
    assert root.opcode == opcode
    assert "power" not in opcodes(m)
    got = np.asarray(evaluate_module(m, [SPECIALS]))
    with np.errstate(all="ignore"):
        want = np.power(SPECIALS.astype(np.float64), float(exponent)).astype(np.float32)
    assert got.tobytes() == want.tobytes(), (got, want)


def test_power_integers_square_and_keep_negative_exponent():
    ints = np.array([[0, -3, 7], [1, -1, 46340], [2, -2, 5], [9, 10, -46341]], np.int32)
    m, root = simplify("  c = s32[] constant(2)\n  b = s32[4,3] broadcast(c), dimensions={}\n"
                       "  ROOT r = s32[4,3] power(x, b)", XI, args=[ints])
    assert root.opcode == "multiply" and root.operands == [m.entry.parameters[0]] * 2
    assert root_after_simplify("s32", "power", -1) == "power"    # 1/x differs for integers


def root_after_simplify(t: str, op: str, c) -> str:
    """The root opcode of ``op(x, broadcast(c))`` on ``t[4,3]`` after algsimp."""
    m = H.parse_module(f"HloModule m\nENTRY e {{\n  x = {t}[4,3] parameter(0)\n"
                       f"  c = {t}[] constant({c})\n"
                       f"  b = {t}[4,3] broadcast(c), dimensions={{}}\n"
                       f"  ROOT r = {t}[4,3] {op}(x, b)\n}}")
    AlgebraicSimplifier().run(m)
    return m.entry.root.opcode


def test_power_by_other_constants_is_kept():
    assert root_after_simplify("f32", "power", 0.5) == "power"   # sqrt differs at -0, -inf
    assert root_after_simplify("f32", "power", 3) == "power"     # x*x*x rounds twice


def test_divide_by_other_constants_is_kept():
    assert root_after_simplify("f32", "divide", 3) == "divide"


def test_elementwise_of_scalar_broadcasts_sinks_the_broadcast():
    m, root = simplify("  a = f32[] constant(2)\n  b = f32[] constant(3)\n"
                       "  ba = f32[4,3] broadcast(a), dimensions={}\n"
                       "  bb = f32[4,3] broadcast(b), dimensions={}\n"
                       "  s = f32[4,3] add(ba, bb)\n  ROOT r = f32[4,3] add(x, s)", X)
    s = root.operands[1]
    assert s.opcode == "broadcast" and s.operands[0].opcode == "add"
    assert s.operands[0].shape.rank == 0


def test_select_with_constant_predicate_and_equal_branches():
    params = X + "\n  y = f32[4,3] parameter(1)"
    m, root = simplify("  t = pred[] constant(true)\n  p = pred[4,3] broadcast(t), dimensions={}\n"
                       "  ROOT r = f32[4,3] select(p, x, y)", params)
    assert root_is_param(m, root, 0)
    m, root = simplify("  t = pred[] constant(false)\n  p = pred[4,3] broadcast(t), dimensions={}\n"
                       "  ROOT r = f32[4,3] select(p, x, y)", params)
    assert root_is_param(m, root, 1)
    m, root = simplify("  p = pred[4,3] compare(x, y), direction=LT\n"
                       "  ROOT r = f32[4,3] select(p, y, y)", params)
    assert root_is_param(m, root, 1)


def test_convert_to_same_type_and_exact_chains():
    m, root = simplify("  ROOT r = f32[4,3] convert(x)", X)
    assert root_is_param(m, root)
    m, root = simplify("  a = f32[4,3] convert(x)\n  ROOT r = f16[4,3] convert(a)",
                       "  x = f16[4,3] parameter(0)")
    assert root_is_param(m, root)
    m, root = simplify("  a = s32[4,3] convert(x)\n  ROOT r = f32[4,3] convert(a)",
                       "  x = s8[4,3] parameter(0)")
    assert root.opcode == "convert" and root_is_param(m, root.operands[0])


def test_lossy_convert_chains_are_kept():
    for params, mid, out in [("  x = f32[4,3] parameter(0)", "f16", "f32"),
                             ("  x = s32[4,3] parameter(0)", "f32", "s32"),
                             ("  x = f32[4,3] parameter(0)", "s32", "f32")]:
        m = H.parse_module(f"HloModule m\nENTRY e {{\n{params}\n"
                           f"  a = {mid}[4,3] convert(x)\n  ROOT r = {out}[4,3] convert(a)\n}}")
        AlgebraicSimplifier().run(m)
        assert m.entry.root.operands[0].opcode == "convert"


def test_value_preserving_table():
    assert value_preserving(T.F16, T.F32) and value_preserving(T.BF16, T.F32)
    assert value_preserving(T.S16, T.F32) and not value_preserving(T.S32, T.F32)
    assert value_preserving(T.U8, T.S16) and not value_preserving(T.U8, T.S8)
    assert not value_preserving(T.F16, T.BF16) and not value_preserving(T.F32, T.S32)
    assert value_preserving(T.F8E4M3FN, T.F16) and value_preserving(T.PRED, T.F32)


def test_copy_without_layout_change():
    m, root = simplify("  ROOT r = f32[4,3]{1,0} copy(x)", "  x = f32[4,3]{1,0} parameter(0)")
    assert root_is_param(m, root)
    kept = H.parse_module("HloModule m\nENTRY e {\n  x = f32[4,3]{1,0} parameter(0)\n"
                          "  ROOT r = f32[4,3]{0,1} copy(x)\n}")
    assert AlgebraicSimplifier().run(kept) is False


def test_broadcast_rewrites():
    m, root = simplify("  a = f32[4,3] broadcast(x), dimensions={0,1}\n"
                       "  ROOT r = f32[4,3] negate(a)", X)
    assert root_is_param(m, root.operands[0])
    m, root = simplify("  a = f32[3,5] broadcast(x), dimensions={0}\n"
                       "  ROOT r = f32[2,5,3,7] broadcast(a), dimensions={2,1}",
                       "  x = f32[3] parameter(0)")
    assert root.opcode == "broadcast" and root_is_param(m, root.operands[0])
    assert root.attrs["dimensions"] == (2,)


def test_reshape_rewrites():
    m, root = simplify("  ROOT r = f32[4,3] reshape(x)", X)
    assert root_is_param(m, root)
    m, root = simplify("  a = f32[12] reshape(x)\n  ROOT r = f32[2,6] reshape(a)", X)
    assert root.opcode == "reshape" and root_is_param(m, root.operands[0])
    m, root = simplify("  a = f32[12] reshape(x)\n  ROOT r = f32[4,3] reshape(a)", X)
    assert root_is_param(m, root)
    m, root = simplify("  c = f32[] constant(5)\n  b = f32[12] broadcast(c), dimensions={}\n"
                       "  ROOT r = f32[3,4] reshape(b)", "  x = f32[] parameter(0)")
    assert root.opcode == "broadcast" and root.operands[0].opcode == "constant"


def test_transpose_rewrites():
    params = "  x = f32[2,3,4] parameter(0)"
    m, root = simplify("  ROOT r = f32[2,3,4] transpose(x), dimensions={0,1,2}", params)
    assert root_is_param(m, root)
    m, root = simplify("  a = f32[3,4,2] transpose(x), dimensions={1,2,0}\n"
                       "  ROOT r = f32[4,2,3] transpose(a), dimensions={1,2,0}", params)
    assert root.opcode == "transpose" and root.attrs["dimensions"] == (2, 0, 1)
    assert root_is_param(m, root.operands[0])
    m, root = simplify("  a = f32[3,4,2] transpose(x), dimensions={1,2,0}\n"
                       "  ROOT r = f32[2,3,4] transpose(a), dimensions={2,0,1}", params)
    assert root_is_param(m, root)


def test_slice_rewrites():
    m, root = simplify("  ROOT r = f32[4,3] slice(x), slice={[0:4], [0:3]}", X)
    assert root_is_param(m, root)
    params = "  x = f32[20,9] parameter(0)"
    m, root = simplify("  a = f32[9,7] slice(x), slice={[1:19:2], [2:9]}\n"
                       "  ROOT r = f32[3,3] slice(a), slice={[1:9:3], [0:6:2]}", params)
    assert root.opcode == "slice" and root_is_param(m, root.operands[0])
    assert root.attrs["slice"] == ((3, 16, 6), (2, 7, 2))


def test_concatenate_pad_reverse_of_trivial_shapes():
    m, root = simplify("  ROOT r = f32[4,3] concatenate(x), dimensions={0}", X)
    assert root_is_param(m, root)
    m, root = simplify("  z = f32[] constant(0)\n  ROOT r = f32[4,3] pad(x, z), padding=0_0x0_0", X)
    assert root_is_param(m, root)
    m, root = simplify("  ROOT r = f32[4,1] reverse(x), dimensions={1}",
                       "  x = f32[4,1] parameter(0)")
    assert root_is_param(m, root)


ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}"
MAX = "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] maximum(a, b)\n}"


def test_reduce_over_size_one_dims_applies_the_reducer_once():
    m, root = simplify("  z = f32[] constant(0)\n"
                       "  ROOT r = f32[4,3] reduce(x, z), dimensions={1}, to_apply=add",
                       "  x = f32[4,1,3] parameter(0)", header=ADD)
    assert root.opcode == "add"
    init, element = root.operands
    assert init.opcode == "broadcast" and element.opcode == "reshape"
    # over no dims at all, the reducer is still applied to (init, x): -0 + 0 gives +0
    args = [np.array([[-0.0, 1.0, -2.0]] * 4, np.float32)]
    m, root = simplify("  z = f32[] constant(0)\n"
                       "  ROOT r = f32[4,3] reduce(x, z), dimensions={}, to_apply=add",
                       X, args=args, header=ADD)
    assert root.opcode == "add" and root_is_param(m, root.operands[1])


def test_reduce_of_empty_operand_and_of_scalar_broadcast():
    m, root = simplify("  z = f32[] constant(-3)\n"
                       "  ROOT r = f32[4] reduce(x, z), dimensions={1}, to_apply=add",
                       "  x = f32[4,0] parameter(0)", header=ADD)
    assert root.opcode == "broadcast" and float(root.operands[0].literal) == -3
    m, root = simplify("  b = f32[4,6] broadcast(x), dimensions={}\n  z = f32[] constant(-1)\n"
                       "  ROOT r = f32[4] reduce(b, z), dimensions={1}, to_apply=max",
                       "  x = f32[] parameter(0)", header=MAX)
    assert root.opcode == "broadcast" and root.operands[0].opcode == "maximum"


def test_reduce_with_sum_of_broadcast_is_kept():
    m = H.parse_module(f"HloModule m\n{ADD}\nENTRY e {{\n  x = f32[] parameter(0)\n"
                       "  b = f32[4,6] broadcast(x), dimensions={}\n  z = f32[] constant(0)\n"
                       "  ROOT r = f32[4] reduce(b, z), dimensions={1}, to_apply=add\n}")
    AlgebraicSimplifier().run(m)
    assert m.entry.root.opcode == "reduce"


def test_dot_with_size_one_contraction_becomes_multiply():
    params = "  a = f32[5,2,1] parameter(0)\n  b = f32[5,1,3] parameter(1)"
    m, root = simplify("  ROOT r = f32[5,2,3] dot(a, b), lhs_batch_dims={0}, "
                       "rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}",
                       params)
    assert root.opcode == "multiply"
    assert {o.opcode for o in root.operands} == {"broadcast"}
    assert "dot" not in opcodes(m)


def test_dot_outer_product_with_mixed_types():
    m, root = simplify("  ROOT r = f32[4,3] dot(a, b), lhs_contracting_dims={}, "
                       "rhs_contracting_dims={}",
                       "  a = bf16[4] parameter(0)\n  b = bf16[3] parameter(1)")
    assert root.opcode == "multiply"
    assert "convert" in opcodes(m)


def test_dot_with_real_contraction_is_kept():
    m = H.parse_module("HloModule m\nENTRY e {\n  a = f32[2,4] parameter(0)\n"
                       "  b = f32[4,3] parameter(1)\n  ROOT r = f32[2,3] dot(a, b), "
                       "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}")
    assert AlgebraicSimplifier().run(m) is False


def test_chains_collapse_in_one_run():
    m, root = simplify("  n1 = f32[4,3] negate(x)\n  n2 = f32[4,3] negate(n1)\n"
                       "  n3 = f32[4,3] negate(n2)\n  n4 = f32[4,3] negate(n3)\n"
                       "  r1 = f32[12] reshape(n4)\n  ROOT r = f32[4,3] reshape(r1)", X)
    assert root_is_param(m, root)


def test_nothing_to_do_reports_no_change():
    m = H.parse_module("HloModule m\nENTRY e {\n" + X + "\n  y = f32[4,3] parameter(1)\n"
                       "  ROOT r = f32[4,3] add(x, y)\n}")
    before = m.to_text()
    assert AlgebraicSimplifier().run(m) is False
    assert m.to_text() == before


def test_results_unchanged_on_special_values_after_full_simplification():
    text = ("HloModule m\nENTRY e {\n" + X +
            "\n  o = f32[] constant(1)\n  b = f32[4,3] broadcast(o), dimensions={}\n"
            "  m1 = f32[4,3] multiply(x, b)\n  c = f32[] constant(0.5)\n"
            "  bc = f32[4,3] broadcast(c), dimensions={}\n  d = f32[4,3] divide(m1, bc)\n"
            "  t = f32[3,4] transpose(d), dimensions={1,0}\n"
            "  ROOT r = f32[4,3] transpose(t), dimensions={1,0}\n}")
    m = H.parse_module(text)
    before = evaluate_module(m, [SPECIALS])
    AlgebraicSimplifier().run(m)
    HloDCE().run(m)
    assert opcodes(m) == ["parameter", "constant", "broadcast", "multiply"]
    assert_same_bits(before, evaluate_module(m, [SPECIALS]))


SPLIT_GRAD = """  x = f32[2,{w}] parameter(0)
  y = f32[2,{w}] parameter(1)
  u = f32[2,3] parameter(2)
  z = f32[] constant({zero})
  z2 = f32[] constant({zero})
  p0 = f32[2,{n}] pad(x, z), padding=0_0x0_{hx}
  p1 = f32[2,{n}] pad(y, z2), padding=0_0x{ly}_{hy}
  s = f32[2,{n}] add(p0, p1)
{extra}"""


@pytest.mark.parametrize("zero", ["0", "-0"])
def test_sum_of_disjoint_pads_becomes_concatenate(zero):
    # the gradient of a split: two pieces that cover the row
    body = SPLIT_GRAD.format(w=4, n=8, hx=4, ly=4, hy=0, zero=zero,
                             extra="  ROOT r = f32[2,8] add(s, s)")
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((2, 4)).astype(np.float32),
            rng.standard_normal((2, 4)).astype(np.float32), np.zeros((2, 3), np.float32)]
    text = f"HloModule m\nENTRY e {{\n{body}\n}}"
    m, changed = run_passes(text, [AlgebraicSimplifier()], args=args)
    assert changed
    s = m.entry.root.operands[0]
    assert s.opcode == "concatenate" and s.dimensions == (1,)
    assert [o.opcode for o in s.operands] == ["parameter", "parameter"]


def test_sum_of_pads_with_a_gap_and_another_addend():
    # pieces [0, 3) and [5, 8) of a row of 8: the gap is the padding value; a tree of adds
    # with a third addend that is not a pad keeps it as an add after the concatenate
    body = ("  x = f32[2,3] parameter(0)\n  y = f32[2,3] parameter(1)\n"
            "  w = f32[2,8] parameter(2)\n  z = f32[] constant(0)\n"
            "  p0 = f32[2,8] pad(x, z), padding=0_0x0_5\n"
            "  p1 = f32[2,8] pad(y, z), padding=0_0x5_0\n"
            "  s = f32[2,8] add(p0, w)\n  ROOT r = f32[2,8] add(s, p1)")
    m, changed = run_passes(f"HloModule m\nENTRY e {{\n{body}\n}}", [AlgebraicSimplifier()])
    assert changed
    root = m.entry.root
    assert root.opcode == "add"
    cat = next(o for o in root.operands if o.opcode == "concatenate")
    assert [o.shape.dims for o in cat.operands] == [(2, 3), (2, 2), (2, 3)]
    assert "pad" not in opcodes(m)


@pytest.mark.parametrize("p1", ["f32[2,8] pad(y, z), padding=0_0x2_2",    # overlaps [0, 4)
                                "f32[2,8] pad(y, z), padding=1_0x0_4"])   # pads two axes
def test_overlapping_or_two_axis_pads_are_kept(p1):
    y = "f32[2,4]" if "2_2" in p1 else "f32[1,4]"
    body = (f"  x = f32[2,4] parameter(0)\n  y = {y} parameter(1)\n  z = f32[] constant(0)\n"
            f"  p0 = f32[2,8] pad(x, z), padding=0_0x0_4\n  p1 = {p1}\n"
            "  ROOT s = f32[2,8] add(p0, p1)")
    m, _ = run_passes(f"HloModule m\nENTRY e {{\n{body}\n}}", [AlgebraicSimplifier()])
    assert "concatenate" not in opcodes(m)


@pytest.mark.parametrize("batch", [False, True])
def test_transpose_of_dot_becomes_swapped_dot(batch):
    # the weight gradient x^T dz read transposed: dot(dz, x) written in the read order
    if batch:
        params = "  x = s32[2,5,3] parameter(0)\n  y = s32[2,5,4] parameter(1)"
        body = ("  d = s32[2,3,4] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={0}, "
                "lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
                "  ROOT t = s32[2,4,3] transpose(d), dimensions={0,2,1}")
    else:
        params = "  x = s32[5,3] parameter(0)\n  y = s32[5,4] parameter(1)"
        body = ("  d = s32[3,4] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
                "  ROOT t = s32[4,3] transpose(d), dimensions={1,0}")
    m, root = simplify(body, params)
    assert root.opcode == "dot" and root.operands == [m.entry.parameters[1],
                                                      m.entry.parameters[0]]
    assert "transpose" not in opcodes(m)


def test_transpose_of_shared_dot_is_kept():
    params = "  x = s32[5,3] parameter(0)\n  y = s32[5,4] parameter(1)"
    body = ("  d = s32[3,4] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
            "  t = s32[4,3] transpose(d), dimensions={1,0}\n"
            "  ROOT r = (s32[3,4], s32[4,3]) tuple(d, t)")
    m, _ = run_passes(f"HloModule m\nENTRY e {{\n{params}\n{body}\n}}", [AlgebraicSimplifier()])
    assert "transpose" in opcodes(m)
