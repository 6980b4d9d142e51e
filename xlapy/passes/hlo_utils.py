"""Small helpers shared by the passes: side effects, reachability, building new instructions.

New instructions are appended to their computation with a module-unique name;
a pass that adds instructions calls :func:`sort_instructions` at the end so the
computation's text order is again definitions-before-uses.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.opcodes import ops_with
from ..hlo.shape import Layout, Shape

# Opcodes whose execution is observable beyond their result (XLA's HasSideEffectNoRecurse,
# and the halves of an async copy, which must stay paired).
SIDE_EFFECT_OPCODES = ops_with(effect="always") | ops_with(effect="async")
# Collectives that talk to other devices when they carry a channel id.
_CHANNEL_OPCODES = ops_with(effect="channel")


def has_side_effect_no_recurse(instr: HloInstruction) -> bool:
    """The instruction itself has an effect besides its result (ignoring called computations)."""
    if instr.opcode in SIDE_EFFECT_OPCODES:
        return True
    if instr.opcode == "custom-call":
        return bool(instr.attrs.get("custom_call_has_side_effect", False))
    if instr.opcode in _CHANNEL_OPCODES:
        return instr.attrs.get("channel_id") is not None
    return False


def has_side_effect(instr: HloInstruction, _memo: dict[int, bool] | None = None) -> bool:
    """Side effect of the instruction or of any computation it calls (recursively)."""
    if has_side_effect_no_recurse(instr):
        return True
    memo = {} if _memo is None else _memo
    for comp in instr.called_computations:
        key = id(comp)
        if key not in memo:
            memo[key] = False        # guards against (invalid) recursion
            memo[key] = any(has_side_effect(i, memo) for i in comp.instructions)
        if memo[key]:
            return True
    return False


def fusion_computations(module: HloModule) -> set[int]:
    """ids of the computations called by ``fusion`` instructions."""
    out: set[int] = set()
    for instr in module.instructions():
        if instr.opcode == "fusion":
            out.update(id(c) for c in instr.called_computations)
    return out


def non_fusion_computations(module: HloModule) -> list[HloComputation]:
    """Computations in post order (callees first), fusion bodies excluded."""
    fused = fusion_computations(module)
    return [c for c in module.computations_post_order() if id(c) not in fused]


def reachable_computations(module: HloModule) -> list[HloComputation]:
    """Computations reachable from the entry through called computations (entry included)."""
    if module.entry is None:
        return list(module.computations)
    seen: dict[int, HloComputation] = {}
    stack = [module.entry]
    while stack:
        comp = stack.pop()
        if id(comp) in seen:
            continue
        seen[id(comp)] = comp
        for instr in comp.instructions:
            stack.extend(instr.called_computations)
    return [c for c in module.computations if id(c) in seen]


def remove_unreachable_computations(module: HloModule) -> bool:
    """Drop computations the entry can no longer reach; True if any was removed."""
    if module.entry is None:
        return False
    keep = {id(c) for c in reachable_computations(module)}
    dead = [c for c in module.computations if id(c) not in keep]
    for comp in dead:
        module.remove_computation(comp)
    return bool(dead)


def add_instruction(comp: HloComputation, opcode: str, shape: Shape,
                    operands: Iterable[HloInstruction] = (), attrs: dict[str, Any] | None = None,
                    literal: Any = None, like: HloInstruction | None = None) -> HloInstruction:
    """Append a new instruction with a module-unique name (metadata copied from ``like``)."""
    module = comp.parent
    name = module.unique_name(opcode) if module is not None else opcode
    attrs = dict(attrs or {})
    if like is not None and like.metadata is not None and "metadata" not in attrs:
        attrs["metadata"] = like.metadata
    return comp.add_instruction(HloInstruction(opcode, shape, list(operands), attrs, name=name,
                                               literal=literal))


def add_constant(comp: HloComputation, value: Any, shape: Shape) -> HloInstruction:
    """A ``constant`` instruction holding ``value`` as an array of ``shape``."""
    literal = np.asarray(value, dtype=shape.dtype).reshape(shape.dims)
    return add_instruction(comp, "constant", shape, literal=literal)


def add_scalar_broadcast(comp: HloComputation, value: Any, shape: Shape,
                         like: HloInstruction | None = None) -> HloInstruction:
    """``broadcast(constant(value))`` to ``shape`` (just the constant when ``shape`` is a
    scalar)."""
    scalar = add_constant(comp, value, scalar_shape(shape))
    if not shape.dims:
        return scalar
    return add_instruction(comp, "broadcast", shape, [scalar], {"dimensions": ()}, like=like)


def scalar_shape(shape: Shape) -> Shape:
    """The rank-0 shape of ``shape``'s element type."""
    return Shape.array(shape.element_type, ())


def array_shape(like: Shape, element_type=None, dims: Iterable[int] | None = None) -> Shape:
    """An array shape with ``like``'s element type/dims unless given; row-major if ``like``
    has a layout."""
    et = element_type if element_type is not None else like.element_type
    dims = tuple(like.dims if dims is None else dims)
    layout = Layout.row_major(len(dims)) if like.layout is not None else None
    return Shape.array(et, dims, layout)


def same_layout(a: Shape, b: Shape) -> bool:
    """Equal layouts, a missing layout counting as row-major (arrays only)."""
    return a.with_default_layout().layout == b.with_default_layout().layout


def can_replace(old: HloInstruction, new: HloInstruction) -> bool:
    """``new`` may stand in for ``old``: same shape up to layout, and no conflicting layout."""
    if not old.shape.compatible(new.shape):
        return False
    if old.shape.is_tuple or old.shape.is_token:
        return True
    return same_layout(old.shape, new.shape)


def replace_instruction(old: HloInstruction, new: HloInstruction) -> None:
    """Redirect every use of ``old`` (root included) to ``new`` and drop ``old`` if now unused."""
    comp = old.parent
    if comp is None:
        raise ValueError(f"{old.name} is not in a computation")
    comp.replace_instruction(old, new)


def sort_instructions(comp: HloComputation) -> None:
    """Put the computation's instructions in definitions-before-uses order."""
    comp.instructions = comp.post_order()


def scalar_literal(instr: HloInstruction) -> np.ndarray | None:
    """The single value of a constant whose elements are all bitwise equal, or of a
    broadcast/reshape of such a constant (as a 0-d array); None otherwise."""
    while instr.opcode in ("broadcast", "reshape") and len(instr.operands) == 1:
        instr = instr.operands[0]
    if instr.opcode != "constant" or isinstance(instr.literal, tuple) or instr.literal is None:
        return None
    lit = np.ascontiguousarray(instr.literal)
    if lit.size == 0:
        return None
    rows = lit.reshape(-1).view(np.uint8).reshape(lit.size, -1)   # each element's bytes
    if not (rows == rows[0]).all():
        return None
    first = lit.reshape(-1)[:1]
    return first.reshape(())


__all__ = [
    "SIDE_EFFECT_OPCODES", "add_constant", "add_instruction", "add_scalar_broadcast",
    "array_shape", "can_replace", "fusion_computations", "has_side_effect",
    "has_side_effect_no_recurse", "non_fusion_computations", "reachable_computations",
    "remove_unreachable_computations", "replace_instruction", "same_layout", "scalar_literal",
    "scalar_shape", "sort_instructions",
]
