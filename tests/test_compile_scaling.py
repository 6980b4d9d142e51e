"""The HLO passes scale: their fast forms decide exactly what their straightforward forms
decide, and they walk a computation a fixed number of times whatever its size.

``PassContext(reference_mode=True)`` switches every pass to its straightforward form
(eager list edits, fused-computation analyses recomputed at each query, reachability by
graph search, the post order recomputed after every row fusion). The CPU pipeline run
both ways on every conformance module and on front-end programs must give the same
module text, the same buffer assignment and the same fusion refusals.
"""
from __future__ import annotations

import importlib
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conformance import case_params
from xlapy.hlo import parse_module
from xlapy.hlo.ir import HloComputation, HloModule
from xlapy.backends.compile import pass_context
from xlapy.backends.cpu.pipeline import cpu_pipeline
from xlapy.config import debug_options
from xlapy.passes.buffer_assignment import assign_buffers
from xlapy.passes.elementwise_rematerialization import TARGET_SHARES
from xlapy.passes.liveness import best_schedule
from xlapy.passes.context import PassContext
from xlapy.passes.instruction_fusion import CpuInstructionFusion
from xlapy.passes.pipeline import HloPassPipeline
from xlapy.passes.reduction_consumer_fusion import ReductionConsumerFusion

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
compile_time = importlib.import_module("compile_time")


def _refusals(pipeline: HloPassPipeline) -> list:
    out = []
    for p in pipeline.passes:
        if isinstance(p, (CpuInstructionFusion, ReductionConsumerFusion)):
            out.append([str(r) for r in p.refusals])
    return out


def optimize(module: HloModule, reference: bool, multi_output: bool | None = None
             ) -> tuple[str, str, list]:
    """Module text, buffer assignment text and fusion refusals after the CPU pipeline."""
    m = module.clone()
    pipeline = run_cpu_pipeline(m, reference, multi_output)
    assignment = assign_buffers(m)
    return m.to_text(), assignment.to_text(), _refusals(pipeline)


def run_cpu_pipeline(module: HloModule, reference: bool = False,
                     multi_output: bool | None = None) -> HloPassPipeline:
    """Run the CPU pipeline on ``module`` as a compilation does (the interpreter folds
    constants), in reference mode or not; returns the pipeline."""
    ctx = pass_context(reference_mode=reference)
    pipeline = cpu_pipeline(ctx, multi_output=multi_output)
    pipeline.run(module, ctx)
    return pipeline


def assert_same_both_ways(module: HloModule, multi_output: bool | None = None) -> None:
    fast = optimize(module, reference=False, multi_output=multi_output)
    ref = optimize(module, reference=True, multi_output=multi_output)
    assert fast[0] == ref[0], "optimized HLO differs"
    assert fast[1] == ref[1], "buffer assignment differs"
    assert fast[2] == ref[2], "fusion refusals differ"


def test_reference_mode_belongs_to_one_context():
    ctx = PassContext()
    reference = ctx.replace(reference_mode=True)
    assert reference.reference_mode and not ctx.reference_mode
    assert reference.options is ctx.options and reference.dump is ctx.dump


@pytest.mark.parametrize("case,which", case_params())
def test_conformance_module_optimizes_the_same_both_ways(case, which):
    assert_same_both_ways(parse_module(case.text(which)))


@pytest.mark.parametrize("case,which", case_params(files=("module.hlo",))[::4])
def test_multi_output_fusion_pipeline_the_same_both_ways(case, which):
    assert_same_both_ways(parse_module(case.text(which)), multi_output=True)


def _traced(program: str, n: int) -> HloModule:
    import xlapy
    fn, args = compile_time.PROGRAMS[program](n)
    return xlapy.jit(fn, backend="interpreter").lower(*args).hlo_module


@pytest.mark.parametrize("program,n", [("blocks", 3), ("blocks-grad", 3), ("mlp-train", 3),
                                       ("blocks-grad", 8)])
def test_front_end_program_optimizes_the_same_both_ways(program, n):
    assert_same_both_ways(_traced(program, n))


def _cnn_step() -> HloModule:
    """A small conv / pool / dense training step (convolutions, windows, transposes)."""
    import xlapy
    import xlapy.nn as xnn
    import xlapy.numpy as xnp

    def loss(p, x, y):
        h = xlapy.lax.conv_general_dilated(x, p["c"], (1, 1), "SAME",
                                           dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = xnn.max_pool(xnp.maximum(h + p["b"], 0.0), (2, 2), strides=(2, 2),
                         padding="VALID")
        logits = xnp.reshape(h, (h.shape[0], -1)) @ p["d"]
        return -xnp.mean(xnp.sum(xnn.log_softmax(logits) * y, axis=1))

    def step(p, x, y):
        value, g = xlapy.value_and_grad(loss)(p, x, y)
        return {k: p[k] - 0.1 * g[k] for k in p}, value
    rng = np.random.default_rng(0)
    p = {"c": rng.standard_normal((3, 3, 2, 4), dtype=np.float32),
         "b": np.zeros(4, np.float32), "d": rng.standard_normal((16, 3), dtype=np.float32)}
    x = rng.random((2, 4, 4, 2), dtype=np.float32)
    y = np.eye(3, dtype=np.float32)[[0, 2]]
    return xlapy.jit(step, backend="interpreter").lower(p, x, y).hlo_module


def test_cnn_training_step_optimizes_the_same_both_ways():
    assert_same_both_ways(_cnn_step())


def test_donated_training_step_optimizes_the_same_both_ways():
    """Copy insertion protects many donated parameters (the backward pass reads weights
    after their update is computed)."""
    import xlapy
    fn, args = compile_time.PROGRAMS["mlp-train"](4)
    module = xlapy.jit(fn, backend="interpreter", donate_argnums=0).lower(*args).hlo_module
    assert len(module.input_output_alias) == 10
    assert_same_both_ways(module)
    text = optimize(module, reference=False)[0]
    assert text.count(" copy(") >= 4


DONATED_TUPLE = """
HloModule donated_tuple, input_output_alias={ {0}: (0, {0}, may-alias), {1}: (0, {1}, may-alias) }

ENTRY main {
  p = (f32[8], f32[8]) parameter(0)
  a = f32[8] get-tuple-element(p), index=0
  b = f32[8] get-tuple-element(p), index=1
  na = f32[8] negate(a)
  late = f32[8] add(a, b)
  nb = f32[8] multiply(b, b)
  ROOT out = (f32[8], f32[8], f32[8]) tuple(na, nb, late)
}
"""


def test_two_donated_leaves_of_one_parameter_the_same_both_ways():
    """Protecting leaf 0 rewires the parameter's users, so leaf 1 is decided afresh."""
    module = parse_module(DONATED_TUPLE)
    assert_same_both_ways(module)
    assert " copy(" in optimize(module, reference=False)[0]


# ------------------------------------------------------------------------ walks per pass
def _entry_walks(module: HloModule, reference: bool = False) -> Counter:
    """How often the pipeline and buffer assignment walk or shrink the entry computation
    (``post_order`` / ``remove_instruction``)."""
    counts: Counter = Counter()
    post_order, remove = HloComputation.post_order, HloComputation.remove_instruction
    entry = module.entry

    def counting_post_order(self):
        if self is entry:
            counts["post_order"] += 1
        return post_order(self)

    def counting_remove(self, instr):
        if self is entry:
            counts["remove_instruction"] += 1
        return remove(self, instr)
    HloComputation.post_order = counting_post_order
    HloComputation.remove_instruction = counting_remove
    try:
        run_cpu_pipeline(module, reference)
        assign_buffers(module)
    finally:
        HloComputation.post_order = post_order
        HloComputation.remove_instruction = remove
    return counts


@pytest.mark.parametrize("program", ["blocks-grad", "mlp-train"])
def test_entry_walks_do_not_grow_with_the_program(program):
    """Doubling the program doubles the length of every walk over the entry computation,
    never their number: no pass walks or rebuilds it once per rewrite. The elementwise
    rematerialization tries a fixed number of targets, each one schedule and one buffer
    assignment, however many values it recomputes: its walks are bounded apart."""
    with debug_options(xla_cpu_elementwise_rematerialization=False):
        small, large = _entry_walks(_traced(program, 6)), _entry_walks(_traced(program, 12))
    assert small["post_order"] > 0
    assert large == small
    assert large["remove_instruction"] == 0
    on = _entry_walks(_traced(program, 12))
    assert on["remove_instruction"] == 0
    module = _traced(program, 12)
    run_cpu_pipeline(module, False)
    per_try = _walks_of(lambda: (best_schedule(module.entry), assign_buffers(module)), module)
    assert on["post_order"] - large["post_order"] <= (len(TARGET_SHARES) + 2) * per_try


def _walks_of(fn, module: HloModule) -> int:
    """How many times ``fn()`` walks ``module``'s entry computation."""
    calls = [0]
    post_order, entry = HloComputation.post_order, module.entry

    def counting(self):
        calls[0] += self is entry
        return post_order(self)
    HloComputation.post_order = counting
    try:
        fn()
    finally:
        HloComputation.post_order = post_order
    return calls[0]


def _copy_insertion_walks(module: HloModule, monkeypatch, reference: bool = False) -> int:
    """How often copy insertion walks a whole computation (``readers``/``ancestors``)."""
    from xlapy.passes import copy_insertion
    calls = [0]

    def counted(fn):
        def wrapper(*args):
            calls[0] += 1
            return fn(*args)
        return wrapper
    with monkeypatch.context() as m:
        m.setattr(copy_insertion, "readers", counted(copy_insertion.readers))
        m.setattr(copy_insertion, "ancestors", counted(copy_insertion.ancestors))
        run_cpu_pipeline(module, reference)
    return calls[0]


def test_copy_insertion_walks_do_not_grow_with_donated_parameters(monkeypatch):
    import xlapy

    def donated(n: int) -> HloModule:
        fn, args = compile_time.PROGRAMS["mlp-train"](n)
        return xlapy.jit(fn, backend="interpreter", donate_argnums=0).lower(*args).hlo_module
    assert _copy_insertion_walks(donated(4), monkeypatch) == \
        _copy_insertion_walks(donated(8), monkeypatch) == 0
    assert _copy_insertion_walks(donated(8), monkeypatch, reference=True) > \
        _copy_insertion_walks(donated(4), monkeypatch, reference=True) > 0


def test_reference_mode_walks_grow_with_the_program():
    """The check above can fail: the straightforward forms do walk per rewrite."""
    small = _entry_walks(_traced("blocks-grad", 6), reference=True)
    large = _entry_walks(_traced("blocks-grad", 12), reference=True)
    assert large["remove_instruction"] > small["remove_instruction"] > 0
