"""The GPU compiler's HLO pass pipeline.

:func:`gpu_passes` builds the pass list: the target-independent passes (the same list
the CPU compiler runs first), then the fusion passes: layout assignment (row-major
layouts keep the minor dimension contiguous, which is what coalesced loads want:
consecutive threads read consecutive elements), instruction fusion (loop fusion, a
reduce as the root of a loop fusion reading its elementwise producers), the row
reduction consumer fusion (softmax / layernorm rows become one kernel: a block per
row), and copy insertion. The list is a function so a target interface can supply it.
"""
from __future__ import annotations

from typing import Any

from ...config import get_debug_options
from ...passes.base import HloPass
from ...passes.pipeline import HloPassPipeline, target_independent_passes


def gpu_passes(debug_options: Any = None) -> list[HloPass]:
    """The GPU pipeline's passes in order (module docstring)."""
    from ...passes.fusion_pipeline import fusion_passes
    options = debug_options or get_debug_options()
    return target_independent_passes() + fusion_passes(options, reduction_consumer_fusion=True)


def gpu_pipeline(debug_options: Any = None, verify: bool = False) -> HloPassPipeline:
    """:func:`gpu_passes` as a named pipeline (``"gpu"``)."""
    return HloPassPipeline("gpu", gpu_passes(debug_options), verify=verify,
                           debug_options=debug_options)


__all__ = ["gpu_passes", "gpu_pipeline"]
