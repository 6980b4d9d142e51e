"""The elementwise rematerialization pass (on by default in the CPU pipeline): an
elementwise value read early and late is recomputed from operands that stay live anyway,
the assigned peak drops, the answers stay the same; nothing is recomputed where it would
keep an operand alive longer; a CNN training step's peak by the runtime's own counter."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.profiler as profiler
from xlapy.backends.cpu.pipeline import cpu_pipeline
from xlapy.config import debug_options, get_debug_options
from xlapy.hlo import parse_module
from xlapy.passes.buffer_assignment import assign_buffers
from xlapy.passes.context import PassContext
from xlapy.passes.elementwise_rematerialization import (ElementwiseRematerialization,
                                                        elementwise_value)
from xlapy.passes.liveness import best_schedule

# %r (an "activation") is read by %b early and by %f late; its operand %a is read at the
# very end, so recomputing %r before %f extends nothing.
SAVED = """
HloModule saved_activation

ENTRY main {
  p = f32[256,256] parameter(0)
  a = f32[256,256] exponential(p)
  r = f32[256,256] tanh(a)
  b = f32[256,256] sine(r)
  c = f32[256,256] multiply(b, b)
  d = f32[256,256] cosine(c)
  e = f32[256,256] multiply(d, c)
  f = f32[256,256] add(e, r)
  ROOT g = f32[256,256] multiply(f, a)
}
"""


def _args(module):
    rng = np.random.default_rng(0)
    return [rng.normal(size=p.shape.dims).astype(np.float32) for p in module.entry.parameters]


def test_activation_read_late_is_recomputed_from_live_operands():
    module = parse_module(SAVED)
    args = _args(module)
    want = xlapy.run_hlo(parse_module(SAVED), args, backend="interpreter")[0]
    before = assign_buffers(module).peak_memory
    remat = ElementwiseRematerialization()
    assert remat.run(module)
    clones = [i for i in module.entry.instructions if ".remat" in i.name]
    assert clones and all(c.opcode in ("exponential", "tanh") for c in clones)
    schedule = [i.name for i in best_schedule(module.entry)]
    for clone in clones:        # recomputed late: after the values live at the peak
        assert schedule.index(clone.name) > schedule.index("d")
    after = assign_buffers(module).peak_memory
    assert after < before and after == remat.last.peak_after
    got = xlapy.run_hlo(module, args, backend="interpreter")[0]
    np.testing.assert_array_equal(got, want)
    cpu = xlapy.run_hlo(parse_module(module.to_text()), args, backend="cpu")[0]
    np.testing.assert_allclose(cpu, want, rtol=1e-6)


def test_nothing_is_recomputed_where_an_operand_would_live_longer():
    # %a is read only by %r here: recomputing %r late would keep %a alive instead
    text = SAVED.replace("ROOT g = f32[256,256] multiply(f, a)",
                         "ROOT g = f32[256,256] multiply(f, f)")
    module = parse_module(text)
    assert not ElementwiseRematerialization().run(module)
    assert module.to_text() == parse_module(text).to_text()


def test_too_small_a_saving_leaves_the_module():
    module = parse_module(SAVED)
    text = module.to_text()
    assert not ElementwiseRematerialization(min_saving=0.9).run(module)
    assert module.to_text() == text


def test_only_elementwise_values_are_candidates():
    module = parse_module("""
HloModule kinds

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

loop {
  q = f32[8,4] parameter(0)
  k = f32[4] parameter(1)
  kb = f32[8,4] broadcast(k), dimensions={1}
  s = f32[8,4] add(q, kb)
  z = f32[] constant(0)
  zb = f32[8,4] broadcast(z), dimensions={}
  ROOT m = f32[8,4] maximum(s, zb)
}

rows {
  q = f32[8,4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[8] reduce(q, z), dimensions={1}, to_apply=add
}

ENTRY main {
  p = f32[8,4] parameter(0)
  k = f32[4] parameter(1)
  relu = f32[8,4] fusion(p, k), kind=kLoop, calls=loop
  red = f32[8] fusion(relu), kind=kLoop, calls=rows
  t = f32[8,4] transpose(relu), dimensions={0,1}
  ROOT out = (f32[8], f32[8,4]) tuple(red, t)
}
""")
    by = {i.name: i for i in module.entry.instructions}
    assert elementwise_value(by["relu"])
    assert not elementwise_value(by["red"])
    assert not elementwise_value(by["t"])


def test_pipeline_runs_the_pass_unless_turned_off():
    assert "elementwise-rematerialization" in cpu_pipeline().pass_names
    off = PassContext(get_debug_options().replace(xla_cpu_elementwise_rematerialization=False))
    assert "elementwise-rematerialization" not in cpu_pipeline(off).pass_names


def _cnn_step():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import training
    ns = training.namespace("xlapy")
    return training.rmsprop_step(ns, training.cnn_loss), training.cnn_problem(16)


def _run_step(step, args, **flags):
    """(outputs, the step's peak by the runtime's counter, its memory analysis peak)."""
    with debug_options(**flags):
        jitted = xlapy.jit(step)
        profiler.reset_peak()
        out = [np.asarray(o) for o in xlapy.tree_util.tree_leaves(jitted(*args))]
        analysis = jitted.lower(*args).compile().memory_analysis()
        return out, profiler.last_step_memory().peak_memory_in_bytes, \
            analysis.peak_memory_in_bytes


def test_cnn_training_step_holds_less_by_the_runtime_counter():
    """The seeds' CIFAR CNN step (batch 16): each relu output is kept for the next layer and
    the weight gradient, its pre-activation for the relu gradient; recomputing the relu
    outputs lowers the runtime's count of the step's bytes by at least the first layer's
    activation."""
    step, args = _cnn_step()
    want, plain_peak, plain_analysis = _run_step(
        step, args, xla_cpu_elementwise_rematerialization=False)
    got, peak, analysis = _run_step(step, args)
    assert peak == analysis and plain_peak == plain_analysis
    assert plain_peak - peak >= 16 * 32 * 32 * 32 * 4, (peak, plain_peak)
    for g, w in zip(got, want):       # the weight gradients' per-thread partial sums are
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)   # added in any order


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
