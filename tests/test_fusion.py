"""Fusion passes (XLA:CPU's rules): fusion shapes, refusals with reasons, and unchanged numerics."""
from __future__ import annotations


import numpy as np
import pytest

from xlapy.backends.interpreter import evaluate_module
from xlapy.hlo import parse_module
from xlapy.hlo.verifier import verify_module
from xlapy.passes.buffer_assignment import assign_buffers
from xlapy.passes.fusion_merger import FusionMerger
from xlapy.backends.cpu.pipeline import fusion_passes
from xlapy.passes.fusion_utils import fused_computation, is_expensive
from xlapy.passes.instruction_fusion import CpuInstructionFusion, is_coupled_softmax_producer
from xlapy.passes.multi_output_fusion import CpuMultiOutputFusion
from conformance import case_params
from xlapy.client import compare_outputs, flatten_result

ADD = """
add_f32 {
  add_lhs = f32[] parameter(0)
  add_rhs = f32[] parameter(1)
  ROOT add_sum = f32[] add(add_lhs, add_rhs)
}
max_f32 {
  max_lhs = f32[] parameter(0)
  max_rhs = f32[] parameter(1)
  ROOT max_out = f32[] maximum(max_lhs, max_rhs)
}
"""

ELEMENTWISE = {"add", "subtract", "multiply", "divide", "exponential", "log", "maximum",
               "negate", "rsqrt", "select", "compare", "convert", "sqrt"}


def module(body: str):
    return parse_module("HloModule m\n" + ADD + body)


def fuse(m, **kw):
    p = CpuInstructionFusion(**kw)
    p.run(m)
    verify_module(m)
    parse_module(m.to_text())      # the fused module prints as valid HLO
    return p


def fusions(m):
    return [i for i in m.entry.instructions if i.opcode == "fusion"]


def opcodes_in_fusions(m):
    return [i.opcode for f in fusions(m) for i in fused_computation(f).instructions]


def run_both(text: str, args, passes=None):
    """Evaluate unfused and fused; return (fused module, unfused value, fused value)."""
    ref = evaluate_module(module(text), args)
    m = module(text)
    for p in passes or [CpuInstructionFusion()]:
        p.run(m)
    verify_module(m)
    return m, ref, evaluate_module(m, args)


def rand(*shape, seed=0):
    return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(np.float32)


SUM_XYZ = """
ENTRY main {
  x = f32[8,16] parameter(0)
  y = f32[8,16] parameter(1)
  z = f32[8,16] parameter(2)
  yz = f32[8,16] multiply(y, z)
  s = f32[8,16] add(x, yz)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(s, zero), dimensions={0,1}, to_apply=add_f32
}
"""


def test_sum_x_plus_y_times_z_is_one_fusion_with_no_temp_buffers():
    args = [rand(8, 16, seed=k) for k in range(3)]
    m, ref, out = run_both(SUM_XYZ, args)
    assert len(fusions(m)) == 1
    assert [i.opcode for i in m.entry.instructions if i.opcode != "parameter"] == ["fusion"]
    f = fusions(m)[0]
    assert f.name == "add_reduce_fusion" and f.attrs["kind"] == "kLoop"
    assert sorted(opcodes_in_fusions(m)) == sorted(
        ["parameter"] * 3 + ["multiply", "add", "constant", "reduce"])
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    np.testing.assert_allclose(out, np.sum(args[0] + args[1] * args[2]), rtol=1e-4)
    ba = assign_buffers(m)
    assert ba.total_temp_bytes <= 4
    temp = ba.temp_allocation
    assert temp is None or all(size <= 4 for _b, _o, size in temp.assigned)


MEAN_SQ = """
ENTRY main {
  x = f32[8,16] parameter(0)
  sq = f32[8,16] multiply(x, x)
  three = f32[] constant(3)
  b3 = f32[8,16] broadcast(three), dimensions={}
  m3 = f32[8,16] multiply(sq, b3)
  y = f32[8,16] parameter(1)
  a = f32[8,16] add(m3, y)
  zero = f32[] constant(0)
  r = f32[] reduce(a, zero), dimensions={0,1}, to_apply=add_f32
  n = f32[] constant(128)
  ROOT d = f32[] divide(r, n)
}
"""


def test_mean_of_3x2_plus_y_is_one_fusion_named_and_ordered_like_xla():
    x, y = rand(8, 16), rand(8, 16, seed=5)
    m, ref, out = run_both(MEAN_SQ, [x, y])
    (f,) = fusions(m)
    assert f.name == "reduce_divide_fusion"
    assert [o.name for o in f.operands] == ["y", "x"]          # XLA: fusion(%y.1, %x.1)
    assert [p.name.split(".")[0] for p in fused_computation(f).parameters] == ["param_0", "param_1"]
    np.testing.assert_allclose(out, np.mean(3 * x ** 2 + y), rtol=1e-5)


SOFTMAX = """
ENTRY main {
  x = f32[4,10] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[4] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  bmx = f32[4,10] broadcast(mx), dimensions={0}
  sh = f32[4,10] subtract(x, bmx)
  e = f32[4,10] exponential(sh)
  zero = f32[] constant(0)
  s = f32[4] reduce(e, zero), dimensions={1}, to_apply=add_f32
  bs = f32[4,10] broadcast(s), dimensions={0}
  ROOT d = f32[4,10] divide(e, bs)
}
"""


def test_row_softmax_has_at_most_three_fusions_and_exp_is_not_duplicated():
    x = rand(4, 10) * 3
    m, ref, out = run_both(SOFTMAX, [x])
    assert 1 <= len(fusions(m)) <= 3
    assert opcodes_in_fusions(m).count("exponential") == 1
    assert not [i for i in m.entry.instructions if i.opcode in ELEMENTWISE]
    ex = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, ex / ex.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


LAYERNORM = """
ENTRY main {
  x = f32[8,32] parameter(0)
  gamma = f32[32] parameter(1)
  beta = f32[32] parameter(2)
  zero = f32[] constant(0)
  n = f32[] constant(32)
  bn = f32[8] broadcast(n), dimensions={}
  s = f32[8] reduce(x, zero), dimensions={1}, to_apply=add_f32
  mean = f32[8] divide(s, bn)
  bmean = f32[8,32] broadcast(mean), dimensions={0}
  xc = f32[8,32] subtract(x, bmean)
  sq = f32[8,32] multiply(xc, xc)
  ss = f32[8] reduce(sq, zero), dimensions={1}, to_apply=add_f32
  var = f32[8] divide(ss, bn)
  eps = f32[] constant(1e-5)
  beps = f32[8] broadcast(eps), dimensions={}
  ve = f32[8] add(var, beps)
  inv = f32[8] rsqrt(ve)
  binv = f32[8,32] broadcast(inv), dimensions={0}
  xn = f32[8,32] multiply(xc, binv)
  bg = f32[8,32] broadcast(gamma), dimensions={1}
  xg = f32[8,32] multiply(xn, bg)
  bb = f32[8,32] broadcast(beta), dimensions={1}
  ROOT y = f32[8,32] add(xg, bb)
}
"""


def test_layernorm_has_at_most_three_fusions():
    x, g, b = rand(8, 32), rand(32, seed=1), rand(32, seed=2)
    m, ref, out = run_both(LAYERNORM, [x, g, b])
    assert len(fusions(m)) <= 3
    assert not [i for i in m.entry.instructions if i.opcode in ELEMENTWISE]
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    np.testing.assert_allclose(out, (x - mu) / np.sqrt(var + 1e-5) * g + b, rtol=1e-4, atol=1e-5)


MLP_STEP = """
ENTRY main {
  x = f32[16,8] parameter(0)
  w = f32[8,4] parameter(1)
  b = f32[4] parameter(2)
  labels = f32[16,4] parameter(3)
  h = f32[16,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[16,4] broadcast(b), dimensions={1}
  z = f32[16,4] add(h, bb)
  zero = f32[] constant(0)
  bz = f32[16,4] broadcast(zero), dimensions={}
  a = f32[16,4] maximum(z, bz)
  ninf = f32[] constant(-inf)
  mx = f32[16] reduce(a, ninf), dimensions={1}, to_apply=max_f32
  bmx = f32[16,4] broadcast(mx), dimensions={0}
  sh = f32[16,4] subtract(a, bmx)
  e = f32[16,4] exponential(sh)
  se = f32[16] reduce(e, zero), dimensions={1}, to_apply=add_f32
  bse = f32[16,4] broadcast(se), dimensions={0}
  p = f32[16,4] divide(e, bse)
  g = f32[16,4] subtract(p, labels)
  pos = pred[16,4] compare(z, bz), direction=GT
  gz = f32[16,4] select(pos, g, bz)
  gw = f32[8,4] dot(x, gz), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  gb = f32[4] reduce(gz, zero), dimensions={0}, to_apply=add_f32
  lr = f32[] constant(0.1)
  blr = f32[8,4] broadcast(lr), dimensions={}
  sw = f32[8,4] multiply(gw, blr)
  nw = f32[8,4] subtract(w, sw)
  blr2 = f32[4] broadcast(lr), dimensions={}
  sb = f32[4] multiply(gb, blr2)
  nb = f32[4] subtract(b, sb)
  ROOT out = (f32[8,4], f32[4]) tuple(nw, nb)
}
"""


def test_mlp_training_step_elementwise_ops_all_inside_fusions():
    args = [rand(16, 8), rand(8, 4, seed=1), rand(4, seed=2),
            np.eye(4, dtype=np.float32)[np.arange(16) % 4]]
    m, ref, out = run_both(MLP_STEP, args)
    left = [i.name for i in m.entry.instructions if i.opcode in ELEMENTWISE]
    assert left == []
    assert {i.opcode for i in m.entry.instructions} <= {
        "parameter", "fusion", "dot", "tuple", "reduce", "constant", "broadcast"}
    assert opcodes_in_fusions(m).count("exponential") == 1
    for r, o in zip(ref, out):
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)


EXP_TWO_USERS = """
ENTRY main {
  x = f32[64] parameter(0)
  e = f32[64] exponential(x)
  a = f32[64] add(e, x)
  mm = f32[64] multiply(e, x)
  ROOT t = (f32[64], f32[64]) tuple(a, mm)
}
"""


def test_expensive_producer_is_not_duplicated_and_refusal_has_reason():
    m = module(EXP_TWO_USERS)
    p = fuse(m)
    assert sum(1 for i in m.instructions() if i.opcode == "exponential") == 1
    assert any(r.producer == "e" and r.reason == "expensive producer would be duplicated"
               for r in p.refusals)
    assert is_expensive(m.entry.instruction("e"))


CHEAP_TWO_USERS = """
ENTRY main {
  x = f32[64] parameter(0)
  y = f32[64] parameter(1)
  s = f32[64] add(x, y)
  a = f32[64] multiply(s, x)
  n = f32[64] negate(s)
  ROOT t = (f32[64], f32[64]) tuple(a, n)
}
"""


def test_cheap_producer_is_duplicated_into_both_users():
    x, y = rand(64), rand(64, seed=3)
    m, ref, out = run_both(CHEAP_TWO_USERS, [x, y])
    assert len(fusions(m)) == 2
    assert opcodes_in_fusions(m).count("add") == 2
    assert "s" not in [i.name for i in m.entry.instructions]
    np.testing.assert_allclose(out[0], (x + y) * x, rtol=1e-6)
    np.testing.assert_allclose(out[1], -(x + y), rtol=1e-6)


def test_no_duplication_when_pass_may_not_duplicate():
    m = module(CHEAP_TWO_USERS)
    p = fuse(m, may_duplicate=False)
    assert any(r.reason == "fusion pass cannot duplicate" for r in p.refusals)
    assert sum(1 for i in m.instructions() if i.opcode == "add" and i.parent is not None
               and i.parent.name.startswith("fused")) <= 1


NONSCALAR_CONST = """
ENTRY main {
  x = f32[4] parameter(0)
  c = f32[4] constant({1, 2, 3, 4})
  a = f32[4] add(x, c)
  ROOT n = f32[4] negate(a)
}
"""


def test_non_scalar_constants_are_not_fused():
    m = module(NONSCALAR_CONST)
    p = fuse(m)
    assert m.entry.instruction("c").opcode == "constant"
    assert any(r.producer == "c" and r.reason == "Don't fuse non-scalar constants."
               for r in p.refusals)
    np.testing.assert_allclose(evaluate_module(m, [np.ones(4, np.float32)]), [-2, -3, -4, -5])


def test_concatenate_with_more_than_eight_operands_is_not_fused():
    ops = "\n".join(f"  p{k} = f32[2] parameter({k})" for k in range(9))
    names = ", ".join(f"p{k}" for k in range(9))
    m = module(f"ENTRY main {{\n{ops}\n  c = f32[18] concatenate({names}), dimensions={{0}}\n"
               f"  ROOT n = f32[18] negate(c)\n}}\n")
    p = fuse(m)
    assert any(r.producer == "c" and r.reason == "Concatenate fusion is inefficient."
               for r in p.refusals)
    assert m.entry.instruction("c").opcode == "concatenate"


GEMV_BIAS = """
ENTRY main {
  a = f32[8,16] parameter(0)
  v = f32[16] parameter(1)
  bias = f32[8] parameter(2)
  d = f32[8] dot(a, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[8] add(d, bias)
}
"""


def test_matrix_vector_dot_plus_bias_is_an_output_fusion():
    a, v, bias = rand(8, 16), rand(16, seed=1), rand(8, seed=2)
    m, ref, out = run_both(GEMV_BIAS, [a, v, bias])
    (f,) = fusions(m)
    assert f.attrs["kind"] == "kOutput" and f.name == "dot_add_fusion"
    np.testing.assert_allclose(out, a @ v + bias, rtol=1e-5)


def test_matrix_matrix_dot_is_a_fusion_barrier():
    m = module("""
ENTRY main {
  a = f32[8,16] parameter(0)
  b = f32[16,4] parameter(1)
  n = f32[8,16] negate(a)
  d = f32[8,4] dot(n, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT e = f32[8,4] exponential(d)
}
""")
    p = fuse(m)
    assert m.entry.instruction("n").opcode == "negate"
    assert any(r.consumer == "d" for r in p.refusals)
    assert any(r.producer == "d" for r in p.refusals)      # globally unfusible: not unary
    assert m.entry.instruction("d").opcode == "dot"
    assert not CpuInstructionFusion().should_fuse(m.entry.root, 0)


@pytest.mark.parametrize("dims,column", [("{0}", True), ("{1}", False)])
def test_transpose_joins_row_but_not_column_reductions(dims, column):
    """A column reduction (the operand's minor dimension kept) reads a fused transpose
    strided, so the transpose is materialised first; a row reduction takes it in."""
    text = f"""
ENTRY main {{
  p = f32[24,40] parameter(0)
  q = f32[24,40] parameter(1)
  s = f32[24,40] add(p, q)
  t = f32[40,24] transpose(s), dimensions={{1,0}}
  e = f32[40,24] exponential(t)
  zero = f32[] constant(0)
  ROOT r = f32[{24 if column else 40}] reduce(e, zero), dimensions={dims}, to_apply=add_f32
}}
"""
    m = module(text)
    p = fuse(m)
    reduce_fusion = m.entry.root
    assert reduce_fusion.opcode == "fusion"
    inside = [i.opcode for i in fused_computation(reduce_fusion).instructions]
    assert ("transpose" in inside) is not column
    assert any("transpose into a reduction" in r.reason for r in p.refusals) is column
    args = [rand(24, 40), rand(24, 40, seed=1)]
    fused, ref, got = run_both(text, args)
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_transpose_feeding_a_column_reduction_is_computed_once():
    """Its other users read the materialised transpose instead of fusing a copy of it."""
    text = """
ENTRY main {
  p = f32[24,40] parameter(0)
  e = f32[24,40] exponential(p)
  t = f32[40,24] transpose(e), dimensions={1,0}
  zero = f32[] constant(0)
  r = f32[24] reduce(t, zero), dimensions={0}, to_apply=add_f32
  n = f32[40,24] negate(t)
  ROOT out = (f32[24], f32[40,24]) tuple(r, n)
}
"""
    m = module(text)
    fuse(m)
    transposes = [i for i in m.entry.instructions if i.opcode == "transpose"] + \
        [i for i in opcodes_in_fusions(m) if i == "transpose"]
    assert len(transposes) == 1
    fused, ref, got = run_both(text, [rand(24, 40)])
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-5)


def test_a_producer_with_other_users_is_not_duplicated_into_a_bitcast():
    """A bias-add and relu read by a matrix product and returned as another shape: the
    bitcast reads the relu's buffer, which the product needs anyway."""
    text = """
ENTRY main {
  x = f32[64,32] parameter(0)
  b = f32[32] parameter(1)
  w = f32[32,16] parameter(2)
  bb = f32[64,32] broadcast(b), dimensions={1}
  a = f32[64,32] add(x, bb)
  zero = f32[] constant(0)
  z = f32[64,32] broadcast(zero), dimensions={}
  r = f32[64,32] maximum(a, z)
  c = f32[4,16,32] bitcast(r)
  d = f32[64,16] dot(r, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = (f32[4,16,32], f32[64,16]) tuple(c, d)
}
"""
    m = module(text)
    p = fuse(m)
    assert opcodes_in_fusions(m).count("maximum") == 1
    assert [i.opcode for i in m.entry.instructions].count("bitcast") == 1
    assert any(r.consumer == "c" and r.reason == "Not duplicating a producer into a bitcast"
               for r in p.refusals)
    fused, ref, got = run_both(text, [rand(64, 32), rand(32), rand(32, 16)])
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-5)


def test_a_large_row_sum_is_not_fused_into_a_scalar_loss():
    """A loss summed over a row reduction: fused, the scalar loop would run every row on
    one thread; the row sum stays its own kernel (shared out by rows), the small sum of
    its results the consumer's."""
    text = """
ENTRY main {
  x = f32[64,1024] parameter(0)
  y = f32[64,1024] parameter(1)
  p = f32[64,1024] multiply(x, y)
  zero = f32[] constant(0)
  rows = f32[64] reduce(p, zero), dimensions={1}, to_apply=add_f32
  total = f32[] reduce(rows, zero), dimensions={0}, to_apply=add_f32
  ROOT loss = f32[] negate(total)
}
"""
    m = module(text)
    p = fuse(m)
    loss = m.entry.root
    assert loss.opcode == "fusion"
    assert [i.opcode for i in fused_computation(loss).instructions].count("reduce") == 1
    assert any(r.producer == "rows" and "too few outputs" in r.reason for r in p.refusals)
    small = text.replace("64,1024", "8,64").replace("f32[64]", "f32[8]")
    m = module(small)                               # below the bound: fused as before
    fuse(m)
    assert [i.opcode for i in fused_computation(m.entry.root).instructions].count(
        "reduce") == 2
    fused, ref, got = run_both(text, [rand(64, 1024), rand(64, 1024, seed=1)])
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_stable_softmax_producer_is_never_duplicated():
    text = SOFTMAX.replace("x = f32[4,10] parameter(0)",
                           "p = f32[4,10] parameter(0)\n  two = f32[] constant(2)\n"
                           "  b2 = f32[4,10] broadcast(two), dimensions={}\n"
                           "  x = f32[4,10] multiply(p, b2)")
    m = module(text)
    assert is_coupled_softmax_producer(m.entry.instruction("x"))
    p = fuse(m)
    assert any(r.producer == "x" and r.reason == "operand can not be duplicated"
               for r in p.refusals)
    assert sum(1 for i in m.instructions() if i.opcode == "multiply" and i.name.startswith("x")) == 1


def test_fusion_inside_while_body_but_not_inside_reducers():
    m = module("""
cond {
  cs = (s32[], f32[8]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
body {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  v = f32[8] get-tuple-element(s), index=1
  e = f32[8] negate(v)
  h = f32[] constant(0.5)
  bh = f32[8] broadcast(h), dimensions={}
  v1 = f32[8] multiply(e, bh)
  ROOT bt = (s32[], f32[8]) tuple(i1, v1)
}
ENTRY main {
  x = f32[8] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[8]) tuple(z, x)
  w = (s32[], f32[8]) while(t), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(w), index=1
}
""")
    x = rand(8)
    fuse(m)
    body = m.computation("body")
    assert [i.opcode for i in body.instructions].count("fusion") == 1
    assert [i.opcode for i in m.computation("add_f32").instructions] == ["parameter"] * 2 + ["add"]
    np.testing.assert_allclose(evaluate_module(m, [x]), x * -0.125, rtol=1e-6)


MOF_TEXT = """
ENTRY main {
  x = f32[32] parameter(0)
  y = f32[32] parameter(1)
  e = f32[32] exponential(x)
  a = f32[32] add(e, y)
  zero = f32[] constant(0)
  s = f32[] reduce(e, zero), dimensions={0}, to_apply=add_f32
  bs = f32[32] broadcast(s), dimensions={}
  ROOT d = f32[32] divide(a, bs)
}
"""


def test_producer_consumer_multi_output_fusion_keeps_values():
    x, y = rand(32), rand(32, seed=9)
    m, ref, out = run_both(MOF_TEXT, [x, y],
                           [CpuInstructionFusion(may_duplicate=False), CpuMultiOutputFusion()])
    roots = [fused_computation(f).root.opcode for f in fusions(m)]
    assert "tuple" in roots
    assert sum(1 for i in m.instructions() if i.opcode == "exponential") == 1
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_sibling_reductions_share_one_multi_output_fusion():
    text = """
ENTRY main {
  x = f32[16,8] parameter(0)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  s = f32[16] reduce(x, zero), dimensions={1}, to_apply=add_f32
  mx = f32[16] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  ROOT t = (f32[16], f32[16]) tuple(s, mx)
}
"""
    x = rand(16, 8)
    m, ref, out = run_both(text, [x], [CpuMultiOutputFusion()])
    (f,) = fusions(m)
    assert fused_computation(f).root.opcode == "tuple" and len(f.shape.tuple_shapes) == 2
    np.testing.assert_allclose(out[0], x.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(out[1], x.max(axis=1))


def test_multi_output_fusion_refuses_different_iteration_spaces():
    m = module("""
ENTRY main {
  x = f32[16] parameter(0)
  a = f32[16] negate(x)
  s = f32[8] slice(x), slice={[0:8]}
  b = f32[8] exponential(s)
  ROOT t = (f32[16], f32[8]) tuple(a, b)
}
""")
    p = CpuMultiOutputFusion()
    p.run(m)
    assert any("iteration spaces differ" in r.reason for r in p.refusals)


def test_fusion_merger_merges_cheap_fusion_into_all_users():
    text = """
ENTRY main {
  x = f32[32] parameter(0)
  y = f32[32] parameter(1)
  s = f32[32] add(x, y)
  n = f32[32] negate(s)
  a = f32[32] multiply(n, x)
  b = f32[32] subtract(n, y)
  e1 = f32[32] exponential(a)
  e2 = f32[32] exponential(b)
  ROOT t = (f32[32], f32[32]) tuple(e1, e2)
}
"""
    x, y = rand(32), rand(32, seed=4)
    m, ref, out = run_both(text, [x, y], [CpuInstructionFusion(may_duplicate=False),
                                          FusionMerger()])
    assert len(fusions(m)) == 2
    assert all("negate" in [i.opcode for i in fused_computation(f).instructions]
               for f in fusions(m))
    for r, o in zip(ref, out):
        np.testing.assert_allclose(o, r, rtol=1e-6)


def test_fusion_passes_follow_cpu_pipeline_order():
    names = [p.name for p in fusion_passes(multi_output=False)]
    assert names == ["layout-assignment", "fusion", "conv-output-fusion",
                     "reduction_consumer_fusion", "copy-insertion",
                     "elementwise-rematerialization"]
    default = fusion_passes()          # multi-output fusion after the duplicating fusion
    assert [p.name for p in default] == ["layout-assignment", "fusion", "conv-output-fusion",
                                         "reduction_consumer_fusion",
                                         "multi_output_fusion", "copy-insertion",
                                         "elementwise-rematerialization"]
    assert default[1].may_duplicate is True
    mof = fusion_passes(multi_output=True)
    assert [p.name for p in mof] == ["layout-assignment", "fusion", "conv-output-fusion",
                                     "reduction_consumer_fusion",
                                     "multi_output_fusion", "copy-insertion",
                                     "elementwise-rematerialization"]
    assert mof[1].may_duplicate is False


# ----------------------------------------------------------------------------- conformance
@pytest.mark.parametrize("case,which", case_params(files=("module.hlo",)))
@pytest.mark.parametrize("multi_output", [None, False, True], ids=["default", "off", "mof"])
def test_conformance_modules_compute_the_same_after_fusion(case, which, multi_output):
    m = parse_module(case.text(which))
    args, expected = case.inputs_and_outputs([p.shape for p in m.entry.parameters])
    for p in fusion_passes(multi_output=multi_output, merge=multi_output is True):
        p.run(m)
    verify_module(m)
    assign_buffers(m)
    bad = compare_outputs(flatten_result(evaluate_module(m, args)), expected, case.rtol, case.atol)
    assert not bad, "\n".join(b.message for b in bad)
