"""ReshapeMover: reshapes/transposes sink below elementwise ops; results are unchanged."""
from __future__ import annotations

from pass_check import run_passes
from xlapy.passes import ReshapeMover


def ops(module):
    return [i.opcode for i in module.entry.instructions]


def test_reshapes_of_same_shape_sink_below_elementwise():
    text = """
HloModule m
ENTRY main {
  a = f32[2,6] parameter(0)
  b = f32[2,6] parameter(1)
  ra = f32[3,4] reshape(a)
  rb = f32[3,4] reshape(b)
  ROOT s = f32[3,4] add(ra, rb)
}
"""
    m, changed = run_passes(text, [ReshapeMover()])
    assert changed
    root = m.entry.root
    assert root.opcode == "reshape" and root.operands[0].opcode == "add"
    assert root.operands[0].shape.dims == (2, 6)
    assert {o.name for o in root.operands[0].operands} == {"a", "b"}


def test_transpose_sinks_past_constant_and_scalar_broadcast():
    text = """
HloModule m
ENTRY main {
  a = f32[2,3] parameter(0)
  t = f32[3,2] transpose(a), dimensions={1,0}
  c = f32[3,2] constant({{1,2},{3,4},{5,6}})
  h = f32[] constant(0.5)
  b = f32[3,2] broadcast(h), dimensions={}
  m1 = f32[3,2] multiply(t, c)
  ROOT s = f32[3,2] add(m1, b)
}
"""
    m, changed = run_passes(text, [ReshapeMover()])
    assert changed
    root = m.entry.root
    assert root.opcode == "transpose" and root.dimensions == (1, 0)
    assert ops(m).count("transpose") == 1
    assert root.operands[0].opcode == "add" and root.operands[0].shape.dims == (2, 3)


def test_select_and_clamp_with_scalars_sink_reshapes():
    text = """
HloModule m
ENTRY main {
  p = pred[6] parameter(0)
  a = f32[6] parameter(1)
  b = f32[6] parameter(2)
  rp = pred[2,3] reshape(p)
  ra = f32[2,3] reshape(a)
  rb = f32[2,3] reshape(b)
  s = f32[2,3] select(rp, ra, rb)
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  ROOT c = f32[2,3] clamp(lo, s, hi)
}
"""
    m, changed = run_passes(text, [ReshapeMover()])
    assert changed
    assert m.entry.root.opcode == "reshape" and ops(m).count("reshape") == 1


def test_reshapes_of_different_shapes_do_not_move():
    text = """
HloModule m
ENTRY main {
  a = f32[2,6] parameter(0)
  b = f32[12] parameter(1)
  ra = f32[3,4] reshape(a)
  rb = f32[3,4] reshape(b)
  ROOT s = f32[3,4] add(ra, rb)
}
"""
    m, changed = run_passes(text, [ReshapeMover()])
    assert not changed and m.entry.root.opcode == "add"


def test_only_trivial_rearranges_do_not_move():
    text = """
HloModule m
ENTRY main {
  a = f32[3,4] parameter(0)
  c = f32[12] constant({1,2,3,4,5,6,7,8,9,10,11,12})
  rc = f32[3,4] reshape(c)
  ROOT s = f32[3,4] add(a, rc)
}
"""
    m, changed = run_passes(text, [ReshapeMover()])
    assert not changed
