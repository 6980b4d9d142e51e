"""The default CPU pipeline's multi-output fusion (``CpuResultMultiOutputFusion``): a loop
value the program returns is merged into the loop that reads it, values unchanged.

Cases: an Adam update (new ``m`` and ``v`` returned and read by the parameter update:
three loops become one, computed the same as the interpreter and as the compiled CPU
module without the pass), a producer with a user besides the root (left alone), values
of different shapes (refused), and the pipeline's modes.
"""
from __future__ import annotations

import numpy as np

from test_fusion import fusions, rand, run_both
from xlapy.backends.cpu.pipeline import fusion_passes, multi_output_mode
from xlapy.config import DebugOptions
from xlapy.passes.fusion_utils import fused_computation
from xlapy.passes.instruction_fusion import CpuInstructionFusion
from xlapy.passes.multi_output_fusion import CpuResultMultiOutputFusion

ADAM = """
ENTRY main {
  p = f32[24,40] parameter(0)
  g = f32[24,40] parameter(1)
  m = f32[24,40] parameter(2)
  v = f32[24,40] parameter(3)
  b1 = f32[] constant(0.9)
  c1 = f32[] constant(0.1)
  b2 = f32[] constant(0.999)
  c2 = f32[] constant(0.001)
  lr = f32[] constant(0.01)
  eps = f32[] constant(1e-8)
  bb1 = f32[24,40] broadcast(b1), dimensions={}
  bc1 = f32[24,40] broadcast(c1), dimensions={}
  bb2 = f32[24,40] broadcast(b2), dimensions={}
  bc2 = f32[24,40] broadcast(c2), dimensions={}
  blr = f32[24,40] broadcast(lr), dimensions={}
  beps = f32[24,40] broadcast(eps), dimensions={}
  m1 = f32[24,40] multiply(bb1, m)
  m2 = f32[24,40] multiply(bc1, g)
  mn = f32[24,40] add(m1, m2)
  gg = f32[24,40] multiply(g, g)
  v1 = f32[24,40] multiply(bb2, v)
  v2 = f32[24,40] multiply(bc2, gg)
  vn = f32[24,40] add(v1, v2)
  sq = f32[24,40] sqrt(vn)
  den = f32[24,40] add(sq, beps)
  step = f32[24,40] divide(mn, den)
  upd = f32[24,40] multiply(blr, step)
  pn = f32[24,40] subtract(p, upd)
  ROOT t = (f32[24,40], f32[24,40], f32[24,40]) tuple(pn, mn, vn)
}
"""


def adam_args():
    p, g, m = rand(24, 40), rand(24, 40, seed=1), rand(24, 40, seed=2)
    v = np.abs(rand(24, 40, seed=3))
    return [p, g, m, v]


def test_adam_update_becomes_one_loop():
    args = adam_args()
    unfused, _, _ = run_both(ADAM, args, [CpuInstructionFusion()])
    assert len(fusions(unfused)) == 3               # m, v and the parameter update
    m, ref, out = run_both(ADAM, args, [CpuInstructionFusion(), CpuResultMultiOutputFusion()])
    (f,) = fusions(m)
    root = fused_computation(f).root
    assert root.opcode == "tuple" and len(root.operands) == 3
    assert m.entry.root.opcode == "tuple"
    assert all(o.opcode == "get-tuple-element" for o in m.entry.root.operands)
    for got, want in zip(out, ref):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_compiled_adam_update_matches_without_the_pass():
    """The merged loop compiled for the CPU gives the unmerged module's bits."""
    from xlapy.backends.cpu import CpuBackend
    from xlapy.config import debug_options
    from xlapy.hlo import parse_module
    from test_fusion import ADD
    args = adam_args()
    results = {}
    for mode in ("after", "off"):
        opt = "" if mode == "after" else "xla_cpu_use_multi_output_fusion=false"
        with debug_options(xla_backend_extra_options=opt):
            exe = CpuBackend().compile(parse_module("HloModule m\n" + ADD + ADAM))
        fused = [i for i in exe.module.entry.instructions if i.opcode == "fusion"]
        assert len(fused) == (1 if mode == "after" else 3)
        results[mode] = [np.asarray(x) for x in exe.execute([a.copy() for a in args])]
    for a, b in zip(results["after"], results["off"]):
        np.testing.assert_array_equal(a, b)


def test_value_read_by_another_instruction_is_left_alone():
    text = ADAM.replace("ROOT t = (f32[24,40], f32[24,40], f32[24,40]) tuple(pn, mn, vn)",
                        "neg = f32[24,40] negate(mn)\n  dot = f32[24,24] dot(neg, p), "
                        "lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
                        "  ROOT t = (f32[24,40], f32[24,40], f32[24,40], f32[24,24]) "
                        "tuple(pn, mn, vn, dot)")
    args = adam_args()
    m, ref, out = run_both(text, args, [CpuInstructionFusion(), CpuResultMultiOutputFusion()])
    outputs = sorted(len(f.shape.tuple_shapes) if f.shape.is_tuple else 1 for f in fusions(m))
    assert outputs[-1] == 2           # only v merged: m is also read by the negate's loop
    for got, want in zip(out, ref):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_different_shapes_are_refused():
    """A returned vector read by a loop over a broadcast of it: not one iteration space."""
    text = ("ENTRY main {\n  x = f32[16] parameter(0)\n  a = f32[16] exponential(x)\n"
            "  bb = f32[4,16] broadcast(a), dimensions={1}\n  c = f32[4,16] negate(bb)\n"
            "  ROOT t = (f32[16], f32[4,16]) tuple(a, c)\n}\n")
    p = CpuResultMultiOutputFusion()
    m, ref, out = run_both(text, [rand(16)], [CpuInstructionFusion(may_duplicate=False), p])
    assert all(not f.shape.is_tuple for f in fusions(m))
    assert any("iteration spaces differ" in r.reason for r in p.refusals)
    for got, want in zip(out, ref):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_modes():
    def mode(text):
        return multi_output_mode(DebugOptions(xla_backend_extra_options=text))
    assert mode("") == "after"
    assert mode("xla_cpu_use_multi_output_fusion") == "xla"
    assert mode("xla_cpu_use_multi_output_fusion=true") == "xla"
    assert mode("xla_cpu_use_multi_output_fusion=false") == "off"
    names = [type(p).__name__ for p in fusion_passes()]
    assert "CpuResultMultiOutputFusion" in names
    budget = DebugOptions(xla_cpu_memory_limit_bytes=1 << 20)
    assert "CpuResultMultiOutputFusion" not in [type(p).__name__
                                                for p in fusion_passes(budget)]
    assert "CpuResultMultiOutputFusion" not in [type(p).__name__
                                                for p in fusion_passes(multi_output=False)]
