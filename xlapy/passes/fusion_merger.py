"""``fusion_merger``: merge a loop fusion into all of its users when that costs no extra traffic.

Precondition: run after ``fusion``. Guarantees: values are unchanged; a merged
fusion disappears and its body is inlined into every user fusion (the producer's
operands become the users' operands).

As XLA's FusionMerger, a fusion is merged only into *all* of its users at once,
and only if every user is a loop fusion, the producer is not the root, it holds no
expensive op when it has several users (that work would be repeated), the
elemental emitter would not re-emit it too often, and the bytes the users would
read instead stay within :data:`MAX_TRAFFIC_RATIO` of today's reads plus writes.
"""
from __future__ import annotations

import logging

from ..hlo.ir import HloInstruction, HloModule
from .base import HloPass
from .context import PassContext
from .fusion_utils import (
    FusionDecision, FusionRefusal, fuse_instruction, fused_computation, fusion_kind,
    is_expensive, is_multi_output_fusion, unique_operands)
from .fusion_indexing import code_duplication_too_high
from .instruction_fusion import fusible_computations

log = logging.getLogger(__name__)

MAX_TRAFFIC_RATIO = 1.10


def _bytes(instr: HloInstruction) -> int:
    return sum(s.byte_size for s in instr.shape.leaves() if s.is_array)


class FusionMerger(HloPass):
    """Merge loop fusions into all their (loop fusion) users."""

    name = "fusion_merger"

    def __init__(self) -> None:
        self.refusals: list[FusionRefusal] = []

    def should_merge(self, producer: HloInstruction) -> FusionDecision:
        """May fusion ``producer`` be merged into every one of its users? (pure)"""
        if producer.opcode != "fusion" or fusion_kind(producer) != "kLoop":
            return FusionDecision.forbid("not a loop fusion")
        if is_multi_output_fusion(producer):
            return FusionDecision.forbid("multi-output fusions are not merged")
        if producer.is_root:
            return FusionDecision.forbid("fusion is the root of its computation")
        if not producer.users:
            return FusionDecision.forbid("fusion has no users")
        for user in producer.users:
            if user.opcode != "fusion" or fusion_kind(user) != "kLoop":
                return FusionDecision.forbid(f"user {user.name} is not a loop fusion")
        body = fused_computation(producer).instructions
        if len(producer.users) > 1 and any(
                i.opcode not in ("parameter",) and is_expensive(i) for i in body):
            return FusionDecision.forbid("fusion has expensive ops and more than one user")
        for user in producer.users:
            if code_duplication_too_high(user, producer):
                return FusionDecision.forbid(f"code duplication too high in {user.name}")
        inputs = sum(_bytes(o) for o in unique_operands(producer))
        current = inputs + _bytes(producer) * (1 + len(producer.users))
        merged = inputs * len(producer.users)
        if merged > MAX_TRAFFIC_RATIO * current:
            return FusionDecision.forbid(
                f"merging would read {merged} bytes instead of {current}")
        return FusionDecision.allow()

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        for comp in fusible_computations(module):
            for producer in comp.post_order():
                if producer.parent is not comp or producer.opcode != "fusion":
                    continue
                d = self.should_merge(producer)
                if not d:
                    r = FusionRefusal(self.name, producer.name,
                                      ",".join(u.name for u in producer.users), d.reason)
                    log.debug("%s", r)
                    self.refusals.append(r)
                    continue
                for user in list(producer.users):
                    fuse_instruction(user, producer)
                changed = True
        return changed
