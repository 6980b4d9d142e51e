"""The fusion passes of the CPU pipeline, in the order XLA:CPU runs them (reference §3.3, §4).

``fusion_passes(debug_options)`` is appended to the CPU pipeline by
:func:`xlapy.passes.pipeline.cpu_pipeline`. By default XLA:CPU runs only
``CpuInstructionFusion(may_duplicate=True)``. With multi-output fusion enabled
(``xla_cpu_use_multi_output_fusion`` in ``xla_backend_extra_options``, or
``multi_output=True``) it runs instruction fusion with ``may_duplicate=False``
followed by ``CpuMultiOutputFusion``. ``FusionMerger`` is a GPU pass; it is added
only on request (``merge=True``).

``ReductionConsumerFusion`` (xlapy's own, not an XLA:CPU pass) runs right after
instruction fusion: it moves a row reduction, the consumers that read it through a
broadcast back to the rows, and the reductions that follow over the same rows into one
``kInput`` fusion (softmax, layernorm), which the CPU reduction emitter runs in phases
over each row. ``reduction_consumer_fusion=False`` (or
``--xla_disable_hlo_passes=reduction_consumer_fusion``) leaves it out.
"""
from __future__ import annotations

from typing import Any

from .base import HloPass
from .fusion_merger import FusionMerger
from .instruction_fusion import CpuInstructionFusion
from .multi_output_fusion import CpuMultiOutputFusion
from .reduction_consumer_fusion import ReductionConsumerFusion

MULTI_OUTPUT_OPTION = "xla_cpu_use_multi_output_fusion"


def _extra_option_enabled(debug_options: Any, key: str) -> bool:
    text = str(getattr(debug_options, "xla_backend_extra_options", "") or "")
    for item in text.split(","):
        name, _, value = item.strip().partition("=")
        if name == key:
            return value.strip().lower() not in ("0", "false")
    return False


def fusion_passes(debug_options: Any = None, multi_output: bool | None = None,
                  merge: bool = False, reduction_consumer_fusion: bool = True
                  ) -> list[HloPass]:
    """The fusion passes in pipeline order."""
    if multi_output is None:
        multi_output = _extra_option_enabled(debug_options, MULTI_OUTPUT_OPTION)
    from .copy_insertion import CopyInsertion
    from .layout_assignment import CpuLayoutAssignment
    passes: list[HloPass] = [CpuLayoutAssignment(),       # 3.2 #42
                             CpuInstructionFusion(may_duplicate=not multi_output)]
    if reduction_consumer_fusion:
        passes.append(ReductionConsumerFusion())
    if merge:
        passes.append(FusionMerger())
    if multi_output:
        passes.append(CpuMultiOutputFusion())
    passes.append(CopyInsertion())                        # 3.3 #11, before buffer assignment
    return passes
