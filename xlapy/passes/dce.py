"""HloDCE ("dce"): remove dead instructions and unreachable computations.

Needs: a module whose computations have roots. Guarantees: every instruction
left is the root, a parameter, has a side effect (``has_side_effect``: send/recv,
infeed/outfeed, rng, side-effecting custom-calls, collectives with a channel, or
a call/while/conditional whose body has one), or is (transitively) used by one
of those, as an operand or a control predecessor. Computations that the entry
cannot reach through called computations are removed. Results never change.
"""
from __future__ import annotations

from ..hlo.ir import HloComputation, HloModule
from .base import HloPass
from .context import PassContext
from .computation_edits import remove_instructions
from .hlo_utils import has_side_effect, remove_unreachable_computations


class HloDCE(HloPass):
    """Dead code elimination (XLA's ``HloDCE``)."""

    name = "dce"

    def __init__(self, remove_unreachable_computations: bool = True) -> None:
        self.remove_computations = remove_unreachable_computations

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        memo: dict[int, bool] = {}
        for comp in list(module.computations):
            changed |= _remove_dead(comp, memo)
        if self.remove_computations:
            changed |= remove_unreachable_computations(module)
        return changed


def _remove_dead(comp: HloComputation, memo: dict[int, bool]) -> bool:
    """Remove the computation's dead instructions; True if any was removed."""
    live: set[int] = set()
    stack = [i for i in comp.instructions
             if i is comp.root or i.opcode == "parameter" or has_side_effect(i, memo)]
    while stack:
        instr = stack.pop()
        if id(instr) in live:
            continue
        live.add(id(instr))
        stack.extend(instr.operands)
        stack.extend(instr.control_predecessors)
    dead = [i for i in comp.instructions if id(i) not in live]
    for instr in dead:                # a dead instruction's users are dead (or stale links)
        instr.users = []
    remove_instructions(comp, dead)
    return bool(dead)


__all__ = ["HloDCE"]
