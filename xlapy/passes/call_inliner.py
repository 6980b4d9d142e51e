"""CallInliner ("call-inliner"): replace ``call`` instructions by the body they call.

Every ``call`` (composite calls included: inlining preserves their semantics) is
replaced by a copy of its ``to_apply`` computation's instructions, with the
callee's parameters bound to the call's operands; the call's users then use the
copy of the callee's root. Computations are processed callees first, so nested
calls disappear in one run. Computations no longer called are removed.

With ``single_call_site=True`` only computations called from exactly one
``call`` are inlined (XLA's ``CallInliner(single_call_site=true)``).

Needs: called computations whose parameter count matches the call's operands.
Guarantees: same results; no ``call`` instruction left (in the default mode);
instruction names stay unique in the module.
"""
from __future__ import annotations

from ..errors import VerificationError
from ..hlo.ir import HloComputation, HloInstruction, HloModule
from .base import HloPass
from .context import PassContext
from .hlo_utils import remove_unreachable_computations, sort_instructions


class CallInliner(HloPass):
    """XLA's ``CallInliner``."""

    name = "call-inliner"

    def __init__(self, single_call_site: bool = False) -> None:
        self.single_call_site = single_call_site

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        call_sites: dict[int, int] = {}
        for instr in module.instructions():
            if instr.opcode == "call":
                call_sites[id(instr.to_apply)] = call_sites.get(id(instr.to_apply), 0) + 1
        changed = False
        for comp in module.computations_post_order():
            calls = [i for i in comp.instructions if i.opcode == "call"]
            for call in calls:
                if self.single_call_site and call_sites.get(id(call.to_apply)) != 1:
                    continue
                inline_call(call)
                changed = True
            if calls:
                sort_instructions(comp)
        if changed:
            remove_unreachable_computations(module)
        return changed


def inline_call(call: HloInstruction) -> HloInstruction:
    """Replace ``call`` by a copy of its callee's body; returns the copy of the callee's root."""
    caller = call.parent
    callee: HloComputation = call.to_apply
    if caller is None:
        raise VerificationError(f"call {call.name} is not in a computation")
    if len(callee.parameters) != len(call.operands):
        raise VerificationError(
            f"call {call.name} passes {len(call.operands)} operands to computation "
            f"{callee.name}, which has {len(callee.parameters)} parameters")
    module = caller.parent
    mapping: dict[int, HloInstruction] = {id(p): call.operands[p.parameter_number]
                                          for p in callee.parameters}
    for instr in callee.post_order():
        if instr.opcode == "parameter":
            continue
        name = module.unique_name(instr.name) if module is not None else instr.name
        copy = HloInstruction(instr.opcode, instr.shape, [mapping[id(o)] for o in instr.operands],
                              dict(instr.attrs), name=name, literal=instr.literal,
                              parameter_number=instr.parameter_number)
        copy.control_predecessors = [mapping[id(p)] for p in instr.control_predecessors
                                     if id(p) in mapping]
        caller.add_instruction(copy)
        mapping[id(instr)] = copy
    new_root = mapping[id(callee.root)]
    for succ in caller.instructions:          # keep ordering constraints on the call
        if call in succ.control_predecessors:
            succ.control_predecessors = [new_root if p is call else p
                                         for p in succ.control_predecessors]
    caller.replace_instruction(call, new_root)
    return new_root


__all__ = ["CallInliner", "inline_call"]
