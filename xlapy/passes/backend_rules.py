"""The questions passes ask the backend they compile for.

Passes sit below the backends (layer 2 < 3), so a pass that must know what a backend's
code generator accepts is given a *rules* object by the backend's pipeline instead of
importing or copying the backend's constants. Each protocol here is one such set of
questions; a backend implements the ones its pipeline's passes need (see
:class:`xlapy.backends.target.Target`).
"""
from __future__ import annotations

from typing import Protocol

from ..hlo.ir import HloInstruction
from ..hlo.shape import Layout, Shape


class RowReductionRules(Protocol):
    """What a backend's row-reduction emitter accepts, asked by
    :class:`~xlapy.passes.reduction_consumer_fusion.ReductionConsumerFusion`.

    ``row_cache_elements``: rows at most this long keep values shared between the
    emitter's sweeps over a row (a longer row would compute them again in each sweep).
    ``major_to_minor(shape)``: the shape's dimensions from most major to most minor in
    memory, as the emitter lays buffers out (row-major for a shape without a layout).
    """

    row_cache_elements: int

    def major_to_minor(self, shape: Shape) -> list[int]: ...


class DotOutputFusionRules(Protocol):
    """Which dots a backend computes together with an ``add`` of their result, asked by
    :class:`~xlapy.passes.instruction_fusion.CpuInstructionFusion` before it forms a
    ``kOutput`` fusion ``add(dot, x)`` of a matrix product.

    ``output_fusible(dot)``: the backend's code for such a fusion adds ``x`` as it stores
    the product (the layouts of the dot and its operands are final when it is asked).
    """

    def output_fusible(self, dot: HloInstruction) -> bool: ...


class DotOperandLayoutRules(Protocol):
    """Which layout a backend wants for a dot's operand, asked by
    :class:`~xlapy.passes.layout_assignment.CpuLayoutAssignment` before it applies its
    default (row-major) policy.

    ``operand_layout(dot, index)``: the layout the backend's code reads operand ``index``
    of ``dot`` best in (layout assignment copies the operand into it), or None for the
    default policy.
    """

    def operand_layout(self, dot: HloInstruction, index: int) -> Layout | None: ...


__all__ = ["RowReductionRules", "DotOutputFusionRules", "DotOperandLayoutRules"]
