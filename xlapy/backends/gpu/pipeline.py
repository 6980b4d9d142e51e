"""The GPU backends' HLO pass pipeline and targets (``gpu`` and its simulator ``gpu_sim``).

1. the target-independent passes (:func:`xlapy.passes.target_independent_passes`);
2. ``layout-assignment``: row-major layouts keep the minor dimension contiguous, which is
   what coalesced loads want (consecutive threads read consecutive elements);
3. ``fusion``: loop fusion, a reduce as the root of a loop fusion reading its elementwise
   producers (duplicating cheap producers, as XLA's GPU fusion does); a reduce never fuses
   into a reduce (``fusion.py``: that would make the outer reduce's few threads do all
   the inner reduce's work);
4. ``reduction_consumer_fusion``: softmax / layernorm rows become one kernel (a block per
   row, ``reduction.py``), with the row rules the CPU uses (the fusions the GPU's row
   emitter is tested on), except the row-cache length: rows up to
   ``row_tile.TILED_ROW_MAX`` keep a thread's elements in registers (``row_tile.py``),
   and recomputing a fused elementwise value in each phase costs the GPU no memory
   traffic;
5. ``copy-insertion``; then buffer assignment.
"""
from __future__ import annotations

from typing import Any

from ...passes.context import PassContext
from ...passes.copy_insertion import CopyInsertion
from ...passes.layout_assignment import CpuLayoutAssignment
from ...passes.pipeline import HloPassPipeline, target_independent_passes
from ...passes.reduction_consumer_fusion import ReductionConsumerFusion
from ..cpu.pipeline import CpuRowReductionRules
from ..target import Target
from .fusion import GpuInstructionFusion
from .row_tile import TILED_ROW_MAX


class GpuRowReductionRules(CpuRowReductionRules):
    """The CPU's row rules with the GPU row tiles' cache length (module docstring)."""

    row_cache_elements = TILED_ROW_MAX


ROW_REDUCTION_RULES = GpuRowReductionRules()


def gpu_pipeline(ctx: PassContext | None = None, *, reduction_consumer_fusion: bool = True
                 ) -> HloPassPipeline:
    """The GPU compiler's pass list (module docstring) for a compilation with ``ctx``."""
    ctx = ctx if ctx is not None else PassContext()
    passes = [*target_independent_passes(),                              # 1
              CpuLayoutAssignment(),                                     # 2
              GpuInstructionFusion(may_duplicate=True),                  # 3
              ReductionConsumerFusion(ROW_REDUCTION_RULES)               # 4
              if reduction_consumer_fusion else None,
              CopyInsertion()]                                           # 5
    return HloPassPipeline("gpu", [p for p in passes if p is not None], context=ctx)


class GpuTarget(Target):
    """The ``"gpu"`` backend: this pipeline, NVPTX kernels, the CUDA driver runtime."""

    name = "gpu"
    row_reduction_rules = ROW_REDUCTION_RULES

    def pipeline(self, ctx: PassContext) -> HloPassPipeline:
        return gpu_pipeline(ctx)

    def create_backend(self) -> Any:
        from .compiler import GpuBackend     # the CUDA device opens at the first compile
        return GpuBackend()


class GpuSimTarget(GpuTarget):
    """The ``"gpu_sim"`` backend: the same kernels with the grid emulated on the host."""

    name = "gpu_sim"

    def create_backend(self) -> Any:
        from .compiler import GpuSimBackend
        return GpuSimBackend()


TARGETS = {"gpu": GpuTarget(), "gpu_sim": GpuSimTarget()}

__all__ = ["GpuRowReductionRules", "ROW_REDUCTION_RULES", "GpuTarget", "GpuSimTarget", "TARGETS",
           "gpu_pipeline"]
