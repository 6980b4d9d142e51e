"""The GPU's instruction fusion: the CPU policy, without a reduce fused into a reduce.

On the CPU a fusion computing ``reduce(f(reduce(x)))`` is one loop whose units each
recompute the inner reduce; on the GPU such a fusion's outer reduce is one unit per
output element, so a scalar loss (``sum(sum(a * b, axis=1))``) would be a single thread
walking every element of ``a`` and ``b``. Like XLA's GPU fusion (a reduction is not a
fusible producer for another reduction), :class:`GpuInstructionFusion` keeps the inner
reduce out of any fusion in which it feeds a reduce, so it becomes its own kernel (a row
or column reduction with the whole grid busy) and the outer reduce reads its result.
"""
from __future__ import annotations

from typing import Iterator

from ...hlo.ir import HloInstruction
from ...passes.fusion_utils import FusionDecision, fused_computation
from ...passes.instruction_fusion import CpuInstructionFusion


def computed_from(start: HloInstruction) -> Iterator[HloInstruction]:
    """Every instruction that uses a value computed from ``start`` (its users, their
    users, ...), each once, in its computation."""
    stack, seen = [start], set()
    while stack:
        i = stack.pop()
        if id(i) in seen:
            continue
        seen.add(id(i))
        for u in i.users:
            yield u
            stack.append(u)


def _feeds_a_reduce(start: HloInstruction) -> bool:
    """Whether a value computed from ``start`` (``start`` included) is a reduce's operand."""
    return any(u.opcode == "reduce" for u in computed_from(start))


def reduce_into_reduce(consumer: HloInstruction, index: int) -> bool:
    """Whether fusing operand ``index`` (a reduce) of ``consumer`` puts it under a reduce."""
    if consumer.operands[index].opcode != "reduce":
        return False
    if consumer.opcode == "reduce":
        return True
    if consumer.opcode != "fusion":
        return False
    params = [p for p in fused_computation(consumer).parameters if p.parameter_number == index]
    return any(_feeds_a_reduce(p) for p in params)


class GpuInstructionFusion(CpuInstructionFusion):
    """:class:`CpuInstructionFusion` that never fuses a reduce into a reduce (module doc)."""

    def should_fuse(self, consumer: HloInstruction, index: int) -> FusionDecision:
        """The CPU decision, refusing a reduce producer that would feed a fused reduce."""
        if reduce_into_reduce(consumer, index):
            return FusionDecision.forbid("A reduce does not fuse into a reduce on the GPU.")
        return super().should_fuse(consumer, index)


__all__ = ["GpuInstructionFusion", "reduce_into_reduce", "computed_from"]
