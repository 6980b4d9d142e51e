"""The CPU backend's HLO pass pipeline, in the order of XLA's ``CpuCompiler::RunHloPasses``.

1. the target-independent passes (:func:`xlapy.passes.target_independent_passes`:
   dot and convolution canonicalization, batch-norm expansion, the simplification
   fixed point with constant folding and the while-loop passes, transpose folding, CSE);
   then ``bf16-excess-precision`` (:class:`~xlapy.passes.bf16_excess_precision.
   Bf16ExcessPrecision`) unless ``--xla_allow_excess_precision=false``: chains of bf16
   arithmetic computed in f32, rounded where stored, as XLA:CPU; then
   ``change-op-data-type`` (:class:`~xlapy.passes.change_op_data_type.ChangeOpDataType`):
   the bf16 dots the backend's kernels run no faster than its f32 path become f32 dots
   on converted operands (``bf16_dot.upcast_wanted``);
2. ``layout-assignment`` (:class:`~xlapy.passes.layout_assignment.CpuLayoutAssignment`);
3. ``fusion`` (:class:`~xlapy.passes.instruction_fusion.CpuInstructionFusion`): by
   default, as XLA:CPU, with duplication of cheap producers; without it when
   multi-output fusion is on (``xla_cpu_use_multi_output_fusion`` in
   ``xla_backend_extra_options``); a dot the generated GEMM kernels compute is
   output-fused into its ``add`` (:data:`DOT_OUTPUT_RULES`, ``dot_kernel_plan.py``);
   then ``conv-output-fusion`` (:class:`~xlapy.passes.conv_output_fusion.ConvOutputFusion`,
   off with ``--xla_cpu_conv_output_fusion=false``): a convolution the generated forward
   kernel computes is merged with its bias (+ relu) loop fusion into a ``kOutput`` fusion
   whose kernel applies them as it stores each tile (:data:`CONV_OUTPUT_RULES`);
4. ``reduction_consumer_fusion`` (xlapy's own, not an XLA:CPU pass): a row reduction,
   the consumers that read it back along the rows and the reductions that follow over
   the same rows become one ``kInput`` fusion (softmax, layernorm) that the CPU
   reduction emitter runs in phases over each row; it asks the emitter's rules
   (:data:`ROW_REDUCTION_RULES`). ``--xla_disable_hlo_passes=reduction_consumer_fusion``
   leaves it out;
5. ``fusion_merger`` (a GPU pass in XLA), only on request (``merge=True``);
6. ``multi_output_fusion``: XLA:CPU's (producers and siblings) when multi-output fusion
   is on; by default only returned loop values merged into the loop that reads them
   (:func:`multi_output_mode`), except under ``--xla_cpu_memory_limit_bytes`` (a merged
   loop holds all its inputs and outputs at once, which the budget pass cannot shrink);
7. ``copy-insertion``;
8. ``elementwise-rematerialization`` (:class:`~xlapy.passes.elementwise_rematerialization.
   ElementwiseRematerialization`, xlapy's own; off with
   ``--xla_cpu_elementwise_rematerialization=false``): elementwise values live across the
   peak (activations kept for the backward pass) are recomputed before their later
   readers where their operands are live anyway, when that lowers the assigned peak;
   then ``rematerialization`` (:class:`~xlapy.passes.rematerialization.
   HloRematerialization`), only when ``--xla_cpu_memory_limit_bytes`` sets a budget:
   values live across the peak are recomputed before their later readers until the
   schedule's live bytes fit;
9. buffer assignment (:meth:`CpuTarget.assign_buffers`), run on the pipeline's result by
   :func:`xlapy.backends.compile.optimize_module`.
"""
from __future__ import annotations

from typing import Any

from ...config import DebugOptions
from ...hlo.shape import Shape
from ...hlo.types import BF16, F32
from ...hlo.ir import HloModule
from ...passes.base import HloPass
from ...passes.buffer_assignment import BufferAssignment, assign_buffers
from ...passes.bf16_excess_precision import Bf16ExcessPrecision
from ...passes.change_op_data_type import ChangeOpDataType
from ...passes.conv_output_fusion import ConvOutputFusion
from ...passes.context import PassContext
from ...passes.copy_insertion import CopyInsertion
from ...passes.fusion_merger import FusionMerger
from ...passes.instruction_fusion import CpuInstructionFusion
from ...passes.layout_assignment import CpuLayoutAssignment
from ...passes.multi_output_fusion import CpuMultiOutputFusion, CpuResultMultiOutputFusion
from ...passes.pipeline import HloPassPipeline, target_independent_passes
from ...passes.reduction_consumer_fusion import ReductionConsumerFusion
from ...passes.elementwise_rematerialization import ElementwiseRematerialization
from ...passes.rematerialization import HloRematerialization
from ..target import Target
from .bf16_dot import upcast_wanted
from .conv import CpuConvOutputFusionRules
from .dot_kernel_plan import CpuDotOperandLayouts, CpuDotOutputFusionRules
from .reduction_plan import ROW_CACHE_ELEMENTS
from .thunks import major_to_minor

MULTI_OUTPUT_OPTION = "xla_cpu_use_multi_output_fusion"
#: Every buffer of an executable starts on a cache line (its arena is so aligned): the
#: kernels' vector loads and stores of a row then never straddle two lines.
BUFFER_ALIGNMENT = 64


class CpuRowReductionRules:
    """What the CPU reduction emitter accepts (a
    :class:`~xlapy.passes.backend_rules.RowReductionRules`): its row cache
    (``reduction_plan.ROW_CACHE_ELEMENTS``) and the runtime's memory order
    (``thunks.major_to_minor``)."""

    row_cache_elements = ROW_CACHE_ELEMENTS

    def major_to_minor(self, shape: Shape) -> list[int]:
        return major_to_minor(shape)


ROW_REDUCTION_RULES = CpuRowReductionRules()
DOT_OUTPUT_RULES = CpuDotOutputFusionRules()
DOT_OPERAND_LAYOUTS = CpuDotOperandLayouts()
CONV_OUTPUT_RULES = CpuConvOutputFusionRules()


def multi_output_mode(options: DebugOptions | Any) -> str:
    """Multi-output fusion as ``xla_backend_extra_options`` asks for it: ``"xla"``
    (``xla_cpu_use_multi_output_fusion`` or ``=true``: XLA:CPU's pairing, instruction
    fusion without duplication), ``"off"`` (``=false``), or by default ``"after"``:
    after the default (duplicating) instruction fusion,
    :class:`~xlapy.passes.multi_output_fusion.CpuResultMultiOutputFusion` merges a
    returned loop value into the loop that reads it (an optimizer's updates of ``m``,
    ``v`` and the parameter: one loop instead of three)."""
    text = str(getattr(options, "xla_backend_extra_options", "") or "")
    for item in text.split(","):
        name, _, value = item.strip().partition("=")
        if name == MULTI_OUTPUT_OPTION:
            return "off" if value.strip().lower() in ("0", "false") else "xla"
    return "after"


def multi_output_enabled(options: DebugOptions | Any) -> bool:
    """Whether ``xla_backend_extra_options`` asks for XLA:CPU's multi-output fusion
    (:func:`multi_output_mode` ``"xla"``)."""
    return multi_output_mode(options) == "xla"


def cpu_pipeline(ctx: PassContext | None = None, *, multi_output: bool | None = None,
                 merge: bool = False, reduction_consumer_fusion: bool = True
                 ) -> HloPassPipeline:
    """The CPU compiler's pass list (module docstring) for a compilation with ``ctx``.

    ``multi_output`` (True: XLA:CPU's multi-output fusion, False: none; default: from
    ``ctx.options``, :func:`multi_output_mode`), ``merge`` and
    ``reduction_consumer_fusion`` select the optional fusion passes."""
    ctx = ctx if ctx is not None else PassContext()
    memory_limit = int(getattr(ctx.options, "xla_cpu_memory_limit_bytes", 0) or 0)
    mode = (multi_output_mode(ctx.options) if multi_output is None
            else "xla" if multi_output else "off")
    if mode == "after" and memory_limit > 0:
        mode = "off"        # a merged loop holds all its inputs and outputs at once
    multi_output = mode == "xla"
    passes: list[HloPass | None] = [
        *target_independent_passes(),                                    # 1
        Bf16ExcessPrecision()                                            # 1b
        if getattr(ctx.options, "xla_allow_excess_precision", True) else None,
        ChangeOpDataType({BF16: F32}, upcast_wanted),                    # 1c
        CpuLayoutAssignment(dot_follows_user=True,                       # 2
                            dot_layouts=DOT_OPERAND_LAYOUTS),
        CpuInstructionFusion(may_duplicate=not multi_output,             # 3
                             dot_rules=DOT_OUTPUT_RULES),
        ConvOutputFusion(CONV_OUTPUT_RULES)                              # 3b
        if getattr(ctx.options, "xla_cpu_conv_output_fusion", True) else None,
        ReductionConsumerFusion(ROW_REDUCTION_RULES)                     # 4
        if reduction_consumer_fusion else None,
        FusionMerger() if merge else None,                               # 5
        CpuMultiOutputFusion() if mode == "xla" else                     # 6
        CpuResultMultiOutputFusion() if mode == "after" else None,
        CopyInsertion(),                                                 # 7
        ElementwiseRematerialization()                                   # 8
        if getattr(ctx.options, "xla_cpu_elementwise_rematerialization", True) else None,
        HloRematerialization(memory_limit)                               # 8b
        if memory_limit > 0 else None,
    ]
    return HloPassPipeline("cpu", [p for p in passes if p is not None], context=ctx)


def fusion_passes(options: DebugOptions | None = None, **choices: Any) -> list[HloPass]:
    """The part of :func:`cpu_pipeline` from layout assignment on (steps 2-8), for tests
    and tools that run it on a module already through the target-independent passes."""
    ctx = PassContext(options) if options is not None else PassContext()
    pipeline = cpu_pipeline(ctx, **choices)
    start = next(i for i, p in enumerate(pipeline.passes)
                 if isinstance(p, CpuLayoutAssignment))
    return pipeline.passes[start:]


class CpuTarget(Target):
    """The ``"cpu"`` backend: this pipeline, then ``compiler.py``'s LLVM kernels."""

    name = "cpu"
    row_reduction_rules = ROW_REDUCTION_RULES

    def pipeline(self, ctx: PassContext) -> HloPassPipeline:
        return cpu_pipeline(ctx)

    def create_backend(self) -> Any:
        from .compiler import CpuBackend       # loads llvmlite: only when first used
        return CpuBackend()

    def assign_buffers(self, module: HloModule) -> BufferAssignment:
        """Buffer assignment with every buffer on a cache line (:data:`BUFFER_ALIGNMENT`)."""
        return assign_buffers(module, alignment=BUFFER_ALIGNMENT)


TARGET = CpuTarget()

__all__ = ["CpuRowReductionRules", "CpuTarget", "ROW_REDUCTION_RULES", "TARGET", "cpu_pipeline",
           "fusion_passes", "multi_output_enabled", "multi_output_mode"]
