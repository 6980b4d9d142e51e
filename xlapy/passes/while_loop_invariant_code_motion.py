"""WhileLoopInvariantCodeMotion ("while-loop-invariant-code-motion"): compute loop-invariant
values once, before the loop.

A loop-state element ``i`` is invariant when the body root passes ``get-tuple-element(param),
index=i`` through unchanged. An instruction of the body is invariant when all its operands
are invariant elements, constants or other invariant instructions. Invariant instructions
are copied into the loop's caller (with the invariant elements read from the loop's init)
and the values the rest of the body needs are added as new loop-carried tuple elements,
passed through unchanged (XLA's ``WhileUtil::MakeInstructionsLiveIn``). The old loop's users
read the original elements of the new loop.

Never hoisted: instructions with a side effect (or calling a computation with one),
parameters, ``while``/``conditional``/``call``/``custom-call`` (a hoisted loop could run
where the original never ran), token-producing or token-consuming instructions, and
instructions with control dependencies. Cheap shape-only instructions (``constant``,
``broadcast``, ``reshape``, ``transpose``, ``bitcast``, ``iota``, ``get-tuple-element``,
``tuple``) are not hoisted on their own, only along with a hoisted user (XLA's
``NotWorthHoistingIndividually``), so no extra loop-carried buffer is made for them.

Needs: tuple-shaped loop states whose body root is a ``tuple`` and whose condition and
body parameters are read only through ``get-tuple-element`` (other loops are skipped).
Guarantees: same results
(every hoisted instruction is side-effect free and total, so evaluating it once before the
loop, even when the loop runs zero times, is unobservable); shared condition/body
computations are cloned before being changed; dead instructions are left for ``dce``.
"""
from __future__ import annotations

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.shape import Shape
from .base import HloPass
from .context import PassContext
from .hlo_utils import add_instruction, has_side_effect, non_fusion_computations, sort_instructions
from .while_loop_analysis import has_control_dependencies, make_private, remove_dead_instructions

NOT_WORTH_HOISTING_ALONE = frozenset({"constant", "get-tuple-element", "tuple", "broadcast",
                                      "bitcast", "iota", "reshape", "transpose"})
NEVER_HOISTED = frozenset({"parameter", "while", "conditional", "call", "custom-call",
                           "after-all", "add-dependency", "opt-barrier", "domain",
                           "partition-id", "replica-id", "rng", "rng-bit-generator",
                           "rng-get-and-update-state"})


class WhileLoopInvariantCodeMotion(HloPass):
    """XLA's ``WhileLoopInvariantCodeMotion`` (hoist_constants=false, hoist_other=true)."""

    name = "while-loop-invariant-code-motion"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        for comp in non_fusion_computations(module):
            comp_changed = False
            for loop in [i for i in comp.instructions if i.opcode == "while"]:
                comp_changed |= _hoist_from(loop)
            if comp_changed:
                sort_instructions(comp)
                changed = True
        return changed


def _hoistable(instr: HloInstruction, body: HloComputation) -> bool:
    if instr.opcode in NEVER_HOISTED or instr is body.root or has_side_effect(instr):
        return False
    if any(s.is_token for s in instr.shape.leaves()):
        return False
    if any(s.is_token for o in instr.operands for s in o.shape.leaves()):
        return False
    return not has_control_dependencies(instr)


def _invariant_instructions(loop: HloInstruction) -> tuple[list[HloInstruction], set[int]]:
    """(instructions to hoist in post order, ids of invariant instructions left in the body)."""
    body: HloComputation = loop.attrs["body"]
    param, root = body.parameters[0], body.root
    invariant_slots = {i for i, op in enumerate(root.operands)
                       if op.opcode == "get-tuple-element" and op.operands[0] is param
                       and op.attrs["index"] == i}
    unhoisted = {id(g) for g in param.users
                 if g.opcode == "get-tuple-element" and g.attrs["index"] in invariant_slots}
    hoisted: list[HloInstruction] = []
    hoisted_ids: set[int] = set()
    for instr in body.post_order():
        if id(instr) in unhoisted or instr is param:
            continue
        if instr.opcode == "constant":
            unhoisted.add(id(instr))
            continue
        if not _hoistable(instr, body):
            continue
        if not all(id(o) in hoisted_ids or id(o) in unhoisted for o in instr.operands):
            continue
        if instr.opcode in NOT_WORTH_HOISTING_ALONE:
            unhoisted.add(id(instr))
            continue
        hoisted.append(instr)
        hoisted_ids.add(id(instr))
    return hoisted, hoisted_ids


def _hoist_from(loop: HloInstruction) -> bool:
    """Hoist the invariant instructions of ``loop``'s body; True if the loop was rebuilt."""
    if not loop.shape.is_tuple or has_control_dependencies(loop):
        return False
    body: HloComputation = loop.attrs["body"]
    if body.root.opcode != "tuple" or not body.parameters:
        return False
    cond: HloComputation = loop.attrs["condition"]
    params = [body.parameters[0], cond.parameters[0]]
    if any(u.opcode != "get-tuple-element" for p in params for u in p.users):
        return False
    hoisted, hoisted_ids = _invariant_instructions(loop)
    live_in = [h for h in hoisted if any(id(u) not in hoisted_ids for u in h.users)]
    if not live_in:
        return False
    comp = loop.parent
    init = loop.operands[0]
    copies: dict[int, HloInstruction] = {}

    def copy_out(instr: HloInstruction) -> HloInstruction:
        """The caller-side equivalent of a body instruction that is invariant."""
        if id(instr) in copies:
            return copies[id(instr)]
        if instr.opcode == "get-tuple-element" and instr.operands[0] is body.parameters[0]:
            index = int(instr.attrs["index"])
            new = (init.operands[index] if init.opcode == "tuple" else
                   add_instruction(comp, "get-tuple-element", instr.shape, [init],
                                   {"index": index}, like=instr))
        else:
            new = add_instruction(comp, instr.opcode, instr.shape,
                                  [copy_out(o) for o in instr.operands], dict(instr.attrs),
                                  literal=instr.literal, like=instr)
        copies[id(instr)] = new
        return new

    outside = [copy_out(h) for h in live_in]
    shared_body = body
    make_private(loop)
    body = loop.attrs["body"]          # a private copy when the body was shared
    if body is not shared_body:
        live_in = _match_in_clone(shared_body, body, live_in)
    old_shapes = list(loop.shape.tuple_shapes)
    n = len(old_shapes)
    new_shape = Shape.tuple(old_shapes + [h.shape for h in live_in])

    param = body.parameters[0]
    param.shape = new_shape
    passthrough = []
    for k, h in enumerate(live_in):
        gte = add_instruction(body, "get-tuple-element", h.shape, [param], {"index": n + k})
        h.replace_all_uses_with(gte)
        passthrough.append(gte)
    old_root = body.root
    body.root = add_instruction(body, "tuple", new_shape, list(old_root.operands) + passthrough,
                                like=old_root)
    body.remove_instruction(old_root)
    remove_dead_instructions(body)
    sort_instructions(body)
    loop.attrs["condition"].parameters[0].shape = new_shape

    if init.opcode == "tuple":
        parts = list(init.operands)
    else:
        parts = [add_instruction(comp, "get-tuple-element", s, [init], {"index": i})
                 for i, s in enumerate(old_shapes)]
    new_init = add_instruction(comp, "tuple", new_shape, parts + outside, like=init)
    new_loop = add_instruction(comp, "while", new_shape, [new_init], dict(loop.attrs), like=loop)
    results = [add_instruction(comp, "get-tuple-element", s, [new_loop], {"index": i})
               for i, s in enumerate(old_shapes)]
    result = add_instruction(comp, "tuple", loop.shape, results, like=loop)
    comp.replace_instruction(loop, result)
    return True


def _match_in_clone(source: HloComputation, clone: HloComputation,
                    originals: list[HloInstruction]) -> list[HloInstruction]:
    """The instructions of ``clone`` corresponding to ``originals`` of ``source`` (the clone
    keeps the source's instruction order)."""
    position = {id(i): k for k, i in enumerate(source.instructions)}
    return [clone.instructions[position[id(h)]] for h in originals]


__all__ = ["WhileLoopInvariantCodeMotion"]
