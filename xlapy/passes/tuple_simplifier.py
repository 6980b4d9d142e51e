"""TupleSimplifier ("tuple-simplifier"): remove tuple construction that is immediately taken apart.

Rewrites, in every non-fusion computation:

- ``get-tuple-element(tuple(a0, a1, ...), index=i)`` -> ``ai``;
- ``tuple(gte(x, 0), gte(x, 1), ..., gte(x, n-1))`` -> ``x`` when ``x`` has exactly ``n``
  elements (the tuple rebuilds ``x`` unchanged).

Needs: nothing. Guarantees: same results; dead tuples are left for ``dce``.
"""
from __future__ import annotations

from ..hlo.ir import HloInstruction, HloModule
from .base import HloPass
from .context import PassContext
from .computation_edits import DeferredEdits
from .hlo_utils import can_replace, non_fusion_computations


class TupleSimplifier(HloPass):
    """XLA's ``TupleSimplifier``."""

    name = "tuple-simplifier"

    def __init__(self, exclude_entry_computation: bool = False) -> None:
        self.exclude_entry_computation = exclude_entry_computation

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        eager = ctx is not None and ctx.reference_mode
        changed = False
        for comp in non_fusion_computations(module):
            if self.exclude_entry_computation and comp is module.entry:
                continue
            with DeferredEdits(comp, eager) as edits:
                for instr in comp.post_order():
                    if instr.parent is not comp:
                        continue
                    new = _simplify(instr)
                    if new is not None and new is not instr and can_replace(instr, new):
                        edits.replace(instr, new)
                        changed = True
        return changed


def _simplify(instr: HloInstruction) -> HloInstruction | None:
    if instr.opcode == "get-tuple-element":
        src = instr.operands[0]
        if src.opcode == "tuple":
            return src.operands[instr.attrs["index"]]
        return None
    if instr.opcode == "tuple" and instr.operands:
        first = instr.operands[0]
        if first.opcode != "get-tuple-element":
            return None
        source = first.operands[0]
        if len(source.shape.tuple_shapes) != len(instr.operands):
            return None
        for i, op in enumerate(instr.operands):
            if (op.opcode != "get-tuple-element" or op.operands[0] is not source
                    or op.attrs.get("index") != i):
                return None
        return source
    return None


__all__ = ["TupleSimplifier"]
