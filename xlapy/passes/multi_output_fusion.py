"""``multi_output_fusion``: fuse producers with other users, and siblings, into tuple-rooted
fusions.

Precondition: run after ``fusion`` (XLA:CPU runs instruction fusion with
``may_duplicate=false`` when multi-output fusion is enabled). Guarantees: values are
unchanged; a fusion whose fused root is a ``tuple`` exports several values, read
with ``get-tuple-element``.

Two flavours, as XLA's ``MultiOutputFusion``:

- *producer-consumer*: a loop-fusible producer that also has users outside the
  consumer is fused into the consumer and exported as an extra output (instead of
  being computed twice or written and read back);
- *sibling*: two loop fusions / reductions / elementwise ops reading the same
  operand are merged so the operand is read once.

Both require the same iteration space (the loop shape: a reduction's input shape,
otherwise the output shape), must not create a cycle, and keep operands + outputs
within :data:`MAX_OPERANDS_AND_OUTPUTS`.
"""
from __future__ import annotations

import logging

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from .base import HloPass
from .context import PassContext
from .fusion_utils import (
    FusionDecision, FusionRefusal, can_be_loop_fused, create_fusion, fuse_into_multi_output,
    fused_computation, fusion_kind, is_multi_output_fusion, reachable_from, sort_topologically,
    unique_operands)
from .instruction_fusion import fusible_computations

log = logging.getLogger(__name__)

MAX_OPERANDS_AND_OUTPUTS = 64


def _loop_root(instr: HloInstruction) -> HloInstruction:
    if instr.opcode != "fusion":
        return instr
    root = fused_computation(instr).root
    return root.operands[0] if root.opcode == "tuple" else root


def loop_shape(instr: HloInstruction) -> tuple[int, ...]:
    """The iteration space: a reduction's input dims, otherwise the output dims."""
    hero = _loop_root(instr)
    if hero.opcode == "reduce":
        return hero.operands[0].shape.dims
    shape = hero.shape
    return shape.dims if shape.is_array else ()


def _mof_candidate(instr: HloInstruction) -> FusionDecision:
    if instr.opcode == "fusion":
        if fusion_kind(instr) != "kLoop":
            return FusionDecision.forbid(f"{instr.name} is a {fusion_kind(instr)} fusion")
        root = fused_computation(instr).root
        if root.shape.is_tuple and root.opcode != "tuple":
            return FusionDecision.forbid(f"{instr.name} has a tuple-shaped non-tuple root")
        return FusionDecision.allow()
    if instr.opcode in ("constant", "parameter", "iota", "broadcast", "bitcast"):
        return FusionDecision.forbid(f"{instr.name} ({instr.opcode}) is not worth a fusion output")
    if instr.shape.is_tuple:
        return FusionDecision.forbid(f"{instr.name} has a tuple shape")
    if not can_be_loop_fused(instr):
        return FusionDecision.forbid(f"{instr.name} ({instr.opcode}) is not loop-fusible")
    return FusionDecision.allow()


def _budget(a: HloInstruction, b: HloInstruction) -> int:
    ops = {id(o) for o in unique_operands(a) + unique_operands(b)} - {id(a), id(b)}
    outs = sum(len(x.shape.tuple_shapes) if x.shape.is_tuple else 1 for x in (a, b))
    return len(ops) + outs


class CpuMultiOutputFusion(HloPass):
    """Producer-consumer and sibling multi-output fusion of loop fusions."""

    name = "multi_output_fusion"

    def __init__(self) -> None:
        self.refusals: list[FusionRefusal] = []
        self._seen: set[tuple[str, str, str]] = set()

    def _refuse(self, producer: HloInstruction, consumer: HloInstruction, reason: str) -> None:
        if (producer.name, consumer.name, reason) in self._seen:
            return
        self._seen.add((producer.name, consumer.name, reason))
        r = FusionRefusal(self.name, producer.name, consumer.name, reason)
        log.debug("%s", r)
        self.refusals.append(r)

    def legal(self, producer: HloInstruction, consumer: HloInstruction,
              sibling: bool) -> FusionDecision:
        """May ``producer`` be fused into ``consumer`` as an extra output? (pure)"""
        for x in (producer, consumer):
            d = _mof_candidate(x)
            if not d:
                return d
        if producer.opcode == "fusion" and is_multi_output_fusion(producer) and not sibling:
            return FusionDecision.forbid("producer is already a multi-output fusion")
        if loop_shape(producer) != loop_shape(consumer):
            return FusionDecision.forbid(
                f"iteration spaces differ: {loop_shape(producer)} vs {loop_shape(consumer)}")
        if _budget(producer, consumer) > MAX_OPERANDS_AND_OUTPUTS:
            return FusionDecision.forbid("too many operands and outputs for one fusion")
        if sibling:
            if id(consumer) in reachable_from([producer]) or \
                    id(producer) in reachable_from([consumer]):
                return FusionDecision.forbid("multi-output fusion creates a cycle")
        else:
            others = [u for u in producer.users if u is not consumer]
            if not others:
                return FusionDecision.forbid("producer has no other users (use plain fusion)")
            if id(consumer) in reachable_from(others):
                return FusionDecision.forbid("multi-output fusion creates a cycle")
        return FusionDecision.allow()

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        for comp in fusible_computations(module):
            while self._step(comp):
                changed = True
        return changed

    def _as_fusion(self, instr: HloInstruction) -> HloInstruction:
        if instr.opcode == "fusion":
            return instr
        return create_fusion(instr, "kLoop", f"{instr.opcode}_")

    def _step(self, comp: HloComputation) -> bool:
        """One fusion (producer-consumer preferred), or False when nothing applies."""
        for consumer in reversed(comp.post_order()):
            if consumer.is_root and consumer.opcode == "tuple":
                continue
            for producer in unique_operands(consumer):
                if len(producer.users) < 2 or producer.opcode in ("parameter", "constant"):
                    continue
                d = self.legal(producer, consumer, sibling=False)
                if not d:
                    self._refuse(producer, consumer, d.reason)
                    continue
                fuse_into_multi_output(self._as_fusion(consumer), producer)
                return True
        for shared in comp.post_order():
            users = [u for u in shared.users if u.parent is comp]
            for i, a in enumerate(users):
                for b in users[i + 1:]:
                    d = self.legal(b, a, sibling=True)
                    if not d:
                        self._refuse(b, a, d.reason)
                        continue
                    fuse_into_multi_output(self._as_fusion(a), b)
                    return True
        return False


class CpuResultMultiOutputFusion(CpuMultiOutputFusion):
    """The default CPU pipeline's multi-output fusion (after the duplicating instruction
    fusion): only a loop producer whose other users are all the computation's root tuple
    is fused into its consumer as an extra output. That is a value the program returns
    and a later loop of the same shape reads: an optimizer's new ``m`` and ``v`` and the
    parameter update that reads them become one loop, which reads the gradient, ``m``
    and ``v`` once and writes the three results, instead of three loops that write ``m``
    and ``v`` and read them back. Candidates come from one walk of each computation and
    the computation is put in order once after its merges, so the pass costs one fusion
    edit per merged value, not one walk."""

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        for comp in fusible_computations(module):
            root = comp.root
            if root is None or root.opcode != "tuple":
                continue
            pairs, merged = [], False
            for consumer in comp.post_order():
                if consumer is root:
                    continue
                for producer in unique_operands(consumer):
                    if (producer.opcode not in ("parameter", "constant")
                            and len(producer.users) >= 2
                            and all(u is consumer or u is root for u in producer.users)):
                        pairs.append((producer, consumer))
            for producer, consumer in pairs:
                if producer.parent is not comp or consumer.parent is not comp:
                    continue        # merged away by an earlier pair
                d = self.legal(producer, consumer, sibling=False)
                if not d:
                    self._refuse(producer, consumer, d.reason)
                    continue
                fuse_into_multi_output(self._as_fusion(consumer), producer, sort_parent=False)
                merged = True
            if merged:
                sort_topologically(comp)          # once, after all of this computation's
                changed = True
        return changed
