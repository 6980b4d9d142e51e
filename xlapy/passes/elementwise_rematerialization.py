"""Rematerialization of elementwise values that costs no memory (xlapy's own pass, not one
of XLA's; on by default in the CPU pipeline, ``--xla_cpu_elementwise_rematerialization=
false`` leaves it out).

A training step keeps an activation such as ``relu(conv(x, w) + b)`` live from the forward
pass, where the next layer reads it, to the backward pass, where the weight gradient
reads it again; autodiff's gradient of ``max(a, 0)`` reads ``a`` (the pre-activation) as
well, so both stay live across the step's peak. Recomputing the elementwise value from
``a`` and ``b`` right before its backward reader frees its buffer over the peak and
extends no other value's life (its operands are live there anyway): one more pass over
memory for each such value, no extra bytes.

The walk is :class:`~xlapy.passes.rematerialization.HloRematerialization`'s, with two
restrictions: only elementwise values are recomputed (an elementwise instruction or a
``kLoop`` fusion of elementwise ops, broadcasts and constants; blocks of one), and only
where every operand is live at the point it relieves (the bytes freed are the value's
whole size). Walks aiming at :data:`TARGET_SHARES` of the schedule's peak of live bytes
are tried, mildest first (stopping when aiming lower assigns more: a greedy walk can
recompute more than helps), and the one whose assigned peak
(``BufferAssignment.peak_memory``, the runtime's own count) is lowest kept, when it is at
least :data:`MIN_SAVING` below the peak without the pass; otherwise the module is left as
it was (the extra passes over memory would buy too little). A module whose candidates live
across the schedule's peak add up to less than that share is left without any walk (most
programs: no compile time is spent on them beyond one schedule).
"""
from __future__ import annotations

import logging

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from .buffer_assignment import assign_buffers
from .context import PassContext
from .fusion_utils import is_elementwise
from .liveness import best_schedule
from .rematerialization import (HloRematerialization, RematerializationResult, _Tracker,
                                rematerializable)

log = logging.getLogger("xlapy.passes")

NAME = "elementwise-rematerialization"
#: The assigned peak must drop by at least this share of itself for the edits to be kept.
MIN_SAVING = 0.05
#: Walks aim at these shares of the schedule's peak of live bytes.
TARGET_SHARES = (0.85, 0.7, 0.5)
_FREE = frozenset({"parameter", "constant", "broadcast", "bitcast", "reshape", "iota"})


def elementwise_value(instr: HloInstruction) -> bool:
    """An elementwise instruction, or a ``kLoop`` fusion of elementwise ops, broadcasts,
    reshapes and constants (one pass over its operands to recompute)."""
    if instr.opcode == "fusion":
        if instr.attrs.get("kind") != "kLoop":
            return False
        return all(is_elementwise(i) or i.opcode in _FREE
                   for i in instr.attrs["calls"].instructions)
    return is_elementwise(instr)


class ElementwiseRematerialization(HloRematerialization):
    """Recompute elementwise values live across the peak before their later readers, where
    no operand's life is extended (module docstring)."""

    name = NAME

    def __init__(self, min_saving: float = MIN_SAVING) -> None:
        super().__init__(memory_limit_bytes=None, block_size_limit=1)
        self.min_saving = min_saving

    def candidate(self, instr: HloInstruction) -> bool:
        return rematerializable(instr) and elementwise_value(instr)

    def worth(self, tracker: _Tracker, block: list[HloInstruction], saved: int) -> bool:
        return saved >= tracker.size[id(block[-1])]

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        comp = module.entry
        if comp is None:
            return False
        result = RematerializationResult()
        self.last = result
        live, free = self._free_at_peak(comp)
        if free < self.min_saving * live:       # cannot pay off: no assignment, no walks
            return False
        before = assign_buffers(module).peak_memory
        result.peak_before = result.peak_after = before
        best: tuple[int, int] | None = None                # (assigned peak, target)
        kept = None             # the restore function of the edits left in the module
        for share in TARGET_SHARES:
            if kept is not None:
                kept()
                kept = None
            target = int(live * share)
            trial = RematerializationResult()
            peak, restore = self._apply(module, comp, target, trial)
            if peak is None or (best is not None and peak >= best[0]):
                if restore is not None:
                    restore()
                if peak is not None:
                    break                       # aiming lower recomputes more than helps
                continue
            best, kept = (peak, target), restore
            result.recomputed, result.clones = trial.recomputed, trial.clones
        if best is None or best[0] > before * (1.0 - self.min_saving):
            if kept is not None:
                kept()
            return False
        if kept is None:                        # the best walk was undone: walk it again
            result.recomputed, result.clones = [], 0
            result.peak_after = self._attempt(module, comp, best[1], result, undo=False) \
                or before
        else:
            result.peak_after = best[0]
        result.kept = True
        log.debug("recomputed %d elementwise values (%d clones) in %s: peak %d -> %d bytes",
                  len(result.recomputed), result.clones, module.name, before,
                  result.peak_after)
        return True

    def _free_at_peak(self, comp: HloComputation) -> tuple[int, int]:
        """(the schedule's peak of live bytes, the bytes of the candidates live across that
        point whose operands are all live there too): what this pass could free at most."""
        order = best_schedule(comp)
        tracker = _Tracker.of(comp, order)
        peak, at = tracker.usage, -1
        for k, instr in enumerate(order):       # where the peak is
            tracker.begin(instr)
            if tracker.usage > peak:
                peak, at = tracker.usage, k
            tracker.end()
        if at < 0:
            return peak, 0
        tracker = _Tracker.of(comp, order)        # walk again up to it
        for instr in order[:at]:
            tracker.begin(instr)
            tracker.end()
        tracker.begin(order[at])
        free = 0
        for i in order[:at]:
            if not i.control_predecessors and self.candidate(i):
                saved = tracker.saved_by([i])
                if saved > 0 and self.worth(tracker, [i], saved):
                    free += saved
        return peak, free


__all__ = ["ElementwiseRematerialization", "elementwise_value", "MIN_SAVING",
           "TARGET_SHARES"]
