"""WhileLoopSimplifier ("simplify-while-loops"): remove loops that run 0 or 1 times, and
loop-carried tuple elements nobody needs.

Rewrites, for every ``while`` in a non-fusion computation:

- **trip count 0** (the counter analysis of :mod:`.while_loop_analysis` says so, or the
  condition evaluates to false on the constant parts of the init): the loop is replaced by
  its init operand;
- **trip count 1**: the loop is replaced by one inlined copy of its body applied to the init;
- **dead tuple elements**: element ``i`` of a tuple-shaped loop state is removed when the
  condition never reads it, the loop's result element ``i`` is unused, and in the body its
  value flows (with no side effect on the way) only into root slots that are themselves
  dead. The loop is rebuilt with the smaller state; shared condition/body computations are
  cloned first.

Loops are left alone when the condition or body has a side effect (for the 0/1-trip
rewrites) or when the loop has control dependencies.

Needs: tuple-shaped loops with ``tuple`` body roots for the element removal; the
constant-evaluation hook of :mod:`.constant_folding` for the partial-evaluation trip-count
test (without it only the counter pattern is used). Guarantees: same results; no
instruction names repeat; unreachable computations are removed; dead instructions in the
caller are left for ``dce``.
"""
from __future__ import annotations

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.shape import Shape
from .base import HloPass
from .context import ConstantEvaluator, PassContext
from .call_inliner import inline_call
from .hlo_utils import (add_instruction, has_side_effect, non_fusion_computations,
                        remove_unreachable_computations, sort_instructions)
from .while_loop_analysis import (compute_while_loop_trip_count, condition_on_init,
                                  has_control_dependencies, make_private,
                                  remove_dead_instructions)


class WhileLoopSimplifier(HloPass):
    """XLA's ``WhileLoopSimplifier`` (zero/one-trip removal and dead tuple elements)."""

    name = "simplify-while-loops"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        evaluate = ctx.constant_evaluator if ctx is not None else None
        changed = False
        for comp in non_fusion_computations(module):
            comp_changed = False
            for loop in [i for i in comp.instructions if i.opcode == "while"]:
                if loop.parent is not comp:
                    continue
                if _try_remove_loop(loop, evaluate) or _try_remove_dead_elements(loop):
                    comp_changed = True
            if comp_changed:
                sort_instructions(comp)
                changed = True
        if changed:
            remove_unreachable_computations(module)
        return changed


def _trip_count(loop: HloInstruction, evaluate: ConstantEvaluator | None) -> int | None:
    trips = compute_while_loop_trip_count(loop)
    if trips is None and condition_on_init(loop, evaluate) is False:
        trips = 0
    return trips


def _try_remove_loop(loop: HloInstruction, evaluate: ConstantEvaluator | None) -> bool:
    """Replace a loop running 0 times by its init, or 1 time by its inlined body."""
    if has_control_dependencies(loop) or has_side_effect(loop):
        return False
    trips = _trip_count(loop, evaluate)
    comp = loop.parent
    if trips == 0:
        comp.replace_instruction(loop, loop.operands[0])
        return True
    if trips == 1:
        call = add_instruction(comp, "call", loop.shape, [loop.operands[0]],
                               {"to_apply": loop.attrs["body"]}, like=loop)
        comp.replace_instruction(loop, call)
        inline_call(call)
        return True
    return False


def _dead_elements(loop: HloInstruction) -> set[int]:
    """Indices of loop-state elements that can be removed (see the module docstring)."""
    n = len(loop.shape.tuple_shapes)
    cond: HloComputation = loop.attrs["condition"]
    body: HloComputation = loop.attrs["body"]
    cparam, bparam, root = cond.parameters[0], body.parameters[0], body.root
    if root.opcode != "tuple" or loop.is_root:
        return set()
    if any(u.opcode != "get-tuple-element" for u in loop.users + cparam.users + bparam.users):
        return set()
    used = {int(g.attrs["index"]) for g in cparam.users + loop.users if g.users or g.is_root}
    # Root slots each element's value reaches; an element reaching a side effect escapes.
    reaches: dict[int, set[int]] = {i: set() for i in range(n)}
    escapes: set[int] = set()
    for gte in bparam.users:
        index = int(gte.attrs["index"])
        seen: set[int] = set()
        stack = [gte]
        while stack:
            instr = stack.pop()
            if id(instr) in seen:
                continue
            seen.add(id(instr))
            if instr is root:
                continue
            if has_side_effect(instr):
                escapes.add(index)
            if any(instr in u.control_predecessors for u in body.instructions):
                escapes.add(index)
            if root in instr.users:
                reaches[index].update(j for j, op in enumerate(root.operands) if op is instr)
            stack.extend(u for u in instr.users if u is not root)
    dead = set(range(n)) - used - escapes
    while True:
        keep = {i for i in dead if reaches[i] <= dead}
        if keep == dead:
            return dead
        dead = keep


def _try_remove_dead_elements(loop: HloInstruction) -> bool:
    """Rebuild ``loop`` without its dead tuple elements."""
    if not loop.shape.is_tuple or has_control_dependencies(loop):
        return False
    dead = _dead_elements(loop)
    if not dead:
        return False
    make_private(loop)
    comp = loop.parent
    old_shapes = loop.shape.tuple_shapes
    keep = [i for i in range(len(old_shapes)) if i not in dead]
    remap = {old: new for new, old in enumerate(keep)}
    new_shape = Shape.tuple([old_shapes[i] for i in keep])

    body: HloComputation = loop.attrs["body"]
    old_root = body.root
    body.root = add_instruction(body, "tuple", new_shape, [old_root.operands[i] for i in keep],
                                like=old_root)
    body.remove_instruction(old_root)
    for computation in (body, loop.attrs["condition"]):
        param = computation.parameters[0]
        param.shape = new_shape
        remove_dead_instructions(computation)
        for gte in param.users:
            gte.attrs["index"] = remap[int(gte.attrs["index"])]
        sort_instructions(computation)

    init = loop.operands[0]
    if init.opcode == "tuple":
        parts = [init.operands[i] for i in keep]
    else:
        parts = [add_instruction(comp, "get-tuple-element", old_shapes[i], [init], {"index": i})
                 for i in keep]
    new_init = add_instruction(comp, "tuple", new_shape, parts, like=init)
    new_loop = add_instruction(comp, "while", new_shape, [new_init], dict(loop.attrs), like=loop)
    for gte in list(loop.users):
        index = int(gte.attrs["index"])
        if index in remap:
            gte.replace_operand(0, new_loop)
            gte.attrs["index"] = remap[index]
        else:
            comp.remove_instruction(gte)
    comp.remove_instruction(loop)
    return True


__all__ = ["WhileLoopSimplifier"]
