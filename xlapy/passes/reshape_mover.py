"""ReshapeMover ("reshape-mover"): sink reshapes and transposes below elementwise ops.

``add(reshape(a), reshape(b))`` becomes ``reshape(add(a, b))`` (likewise for transposes)
so that elementwise chains are computed in one shape and fusions see fewer shape
changes (XLA's ``ReshapeMover``).

Needs: nothing. Rewrites an elementwise instruction (not ``copy``, whose layout matters
after layout assignment, nor ``bitcast-convert``, which may change the shape) whose
operands are

- *rearranges*: ``reshape``s of operands of one shape, or ``transpose``s with one
  permutation of operands of one shape; at least one, and at least one whose operand is
  not a constant; or
- *trivially rearrangeable*: a broadcast of a scalar (re-broadcast to the new shape), a
  constant (its literal is rearranged), or a rank-0 operand of ``clamp``/``select``.

The rewrite computes the elementwise op on the rearranges' operands and applies the
rearrange once to the result. It never changes values (reshape and transpose only move
elements; an elementwise op does not care where an element sits).
"""
from __future__ import annotations

import numpy as np

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.opcodes import ELEMENTWISE
from ..hlo.shape import Shape
from .base import HloPass
from .context import PassContext
from .computation_edits import DeferredEdits
from .hlo_utils import (add_instruction, array_shape, has_side_effect_no_recurse,
                        non_fusion_computations, sort_instructions)

_REARRANGES = ("reshape", "transpose")
# copy changes layouts after layout assignment; bitcast-convert may change the shape.
_EXCLUDED = frozenset({"copy", "bitcast-convert"})


def _is_scalar_broadcast(instr: HloInstruction) -> bool:
    return instr.opcode == "broadcast" and instr.operands[0].shape.rank == 0


def _is_trivial(instr: HloInstruction) -> bool:
    """Rearranging this operand costs nothing (no data is moved at run time)."""
    if instr.opcode in _REARRANGES:
        instr = instr.operands[0]
    return (_is_scalar_broadcast(instr)
            or (instr.opcode == "constant" and not isinstance(instr.literal, tuple)))


def _same_rearrange(a: HloInstruction, b: HloInstruction) -> bool:
    return (a.opcode == b.opcode and a.operands[0].shape.dims == b.operands[0].shape.dims
            and (a.opcode == "reshape" or a.dimensions == b.dimensions))


def _model(instr: HloInstruction) -> HloInstruction | None:
    """The rearrange all operands share, or None if the instruction is not a candidate."""
    if (instr.opcode not in ELEMENTWISE or instr.opcode in _EXCLUDED or not instr.shape.is_array
            or instr.shape.rank == 0 or instr.shape.is_dynamic
            or has_side_effect_no_recurse(instr)):
        return None
    rearranges = [o for o in instr.operands if o.opcode in _REARRANGES and not _is_trivial(o)]
    if not rearranges:
        return None
    model = rearranges[0]
    for op in instr.operands:
        if op.shape.rank == 0:
            continue                    # scalar min/max of clamp, scalar predicate of select
        if op.opcode in _REARRANGES and _same_rearrange(op, model):
            continue
        if not _is_trivial(op):
            return None
    return model


def _inverse_operand(comp: HloComputation, op: HloInstruction, model: HloInstruction,
                     dims: tuple[int, ...]) -> HloInstruction:
    """``op`` brought back to the shape before ``model``'s rearrange."""
    if op.shape.rank == 0:
        return op
    if op.opcode in _REARRANGES and _same_rearrange(op, model):
        return op.operands[0]
    new_shape = array_shape(op.shape, dims=dims)
    scalar, literal = _trivial_value(op)
    if scalar is not None:
        return add_instruction(comp, "broadcast", new_shape, [scalar], {"dimensions": ()},
                               like=op)
    if model.opcode == "transpose":
        literal = np.transpose(literal, np.argsort(model.dimensions))
    literal = np.ascontiguousarray(literal).reshape(dims)
    return add_instruction(comp, "constant", new_shape, literal=literal, like=op)


def _trivial_value(op: HloInstruction) -> tuple[HloInstruction | None, np.ndarray | None]:
    """A trivially rearrangeable operand as (scalar instruction to broadcast, None) or
    (None, its value as an array of ``op``'s dims)."""
    src = op.operands[0] if op.opcode in _REARRANGES else op
    if _is_scalar_broadcast(src):
        return src.operands[0], None
    literal = np.asarray(src.literal)
    if op.opcode == "transpose":
        literal = np.transpose(literal, op.dimensions)
    return None, np.ascontiguousarray(literal).reshape(op.shape.dims)


class ReshapeMover(HloPass):
    """Sink reshapes/transposes through elementwise ops (XLA's ``ReshapeMover``)."""

    name = "reshape-mover"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        eager = ctx is not None and ctx.reference_mode
        changed = False
        for comp in non_fusion_computations(module):
            comp_changed = False
            with DeferredEdits(comp, eager) as edits:
                for instr in comp.post_order():
                    if instr.parent is comp:
                        comp_changed |= _sink(comp, instr, edits)
            if comp_changed:
                sort_instructions(comp)
                changed = True
        return changed


def _sink(comp: HloComputation, instr: HloInstruction, edits: DeferredEdits) -> bool:
    model = _model(instr)
    if model is None:
        return False
    dims = model.operands[0].shape.dims
    operands = [_inverse_operand(comp, op, model, dims) for op in instr.operands]
    inner_shape = Shape.array(instr.shape.element_type, dims,
                              array_shape(instr.shape, dims=dims).layout)
    inner = add_instruction(comp, instr.opcode, inner_shape, operands,
                            {k: v for k, v in instr.attrs.items()}, like=instr)
    attrs = {"dimensions": model.dimensions} if model.opcode == "transpose" else {}
    outer = add_instruction(comp, model.opcode, instr.shape, [inner], attrs, like=instr)
    edits.replace(instr, outer)
    return True


__all__ = ["ReshapeMover"]
