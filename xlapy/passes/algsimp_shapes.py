"""The data-movement rewrites of the algebraic simplifier (see :mod:`.algebraic_simplifier`).

Each ``simplify_<op>(comp, instr)`` returns the instruction that should replace
``instr`` (an existing one or a new one added to ``comp``), or None. All of them
only move or select elements, so they are exact for every element type.
"""
from __future__ import annotations

from ..hlo.ir import HloComputation, HloInstruction
from .hlo_utils import add_instruction, same_layout


def _is_scalar_broadcast(instr: HloInstruction) -> bool:
    return instr.opcode == "broadcast" and instr.operands[0].shape.rank == 0


def _rebroadcast(comp: HloComputation, source: HloInstruction,
                 instr: HloInstruction) -> HloInstruction:
    """``broadcast(scalar)`` standing in for ``instr`` (a movement of a scalar broadcast)."""
    scalar = source.operands[0]
    if instr.shape.rank == 0:
        return scalar
    return add_instruction(comp, "broadcast", instr.shape, [scalar], {"dimensions": ()},
                           like=instr)


def simplify_broadcast(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """broadcast(x) to x's own shape -> x; broadcast(broadcast(x)) -> one broadcast."""
    x = instr.operands[0]
    dims = tuple(instr.attrs.get("dimensions", ()))
    if x.shape.dims == instr.shape.dims and dims == tuple(range(x.shape.rank)):
        return x
    if x.opcode == "broadcast":
        inner = tuple(x.attrs.get("dimensions", ()))
        composed = tuple(dims[d] for d in inner)
        return add_instruction(comp, "broadcast", instr.shape, [x.operands[0]],
                               {"dimensions": composed}, like=instr)
    return None


def simplify_reshape(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """reshape to the same dims -> x; reshape(reshape(x)) -> reshape(x);
    reshape(broadcast(scalar)) -> broadcast(scalar)."""
    x = instr.operands[0]
    if x.shape.dims == instr.shape.dims:
        return x
    if x.opcode == "reshape":
        inner = x.operands[0]
        if inner.shape.dims == instr.shape.dims:
            return inner
        return add_instruction(comp, "reshape", instr.shape, [inner], like=instr)
    if _is_scalar_broadcast(x):
        return _rebroadcast(comp, x, instr)
    return None


def simplify_transpose(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """identity transpose -> x; transpose(transpose(x)) -> one transpose (composed permutation);
    transpose(broadcast(scalar)) -> broadcast(scalar)."""
    x = instr.operands[0]
    perm = tuple(instr.attrs["dimensions"])
    if perm == tuple(range(len(perm))):
        return x
    if x.opcode == "transpose":
        inner_perm = tuple(x.attrs["dimensions"])
        composed = tuple(inner_perm[p] for p in perm)
        source = x.operands[0]
        if composed == tuple(range(len(composed))):
            return source
        return add_instruction(comp, "transpose", instr.shape, [source],
                               {"dimensions": composed}, like=instr)
    if _is_scalar_broadcast(x):
        return _rebroadcast(comp, x, instr)
    return None


def simplify_slice(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """slice covering all of x -> x; slice(slice(x)) -> one slice; slice(broadcast(scalar))."""
    x = instr.operands[0]
    if x.shape.dims == instr.shape.dims:
        return x
    if x.opcode == "slice":
        merged = []
        for outer, inner in zip(instr.attrs["slice"], x.attrs["slice"]):
            (s2, l2, st2), (s1, _l1, st1) = _triple(outer), _triple(inner)
            count = len(range(s2, l2, st2))
            start = s1 + s2 * st1
            stride = st1 * st2
            limit = start + (count - 1) * stride + 1 if count else start
            merged.append((start, limit, stride))
        return add_instruction(comp, "slice", instr.shape, [x.operands[0]],
                               {"slice": tuple(merged)}, like=instr)
    if _is_scalar_broadcast(x):
        return _rebroadcast(comp, x, instr)
    return None


def _triple(spec) -> tuple[int, int, int]:
    """A slice spec as (start, limit, stride); the stride defaults to 1."""
    start, limit, *rest = spec
    return start, limit, rest[0] if rest else 1


def simplify_concatenate(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """concatenate with one operand -> that operand."""
    if len(instr.operands) == 1:
        return instr.operands[0]
    return None


def simplify_pad(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """pad with no edge or interior padding -> x."""
    if all(lo == 0 and hi == 0 and interior == 0
           for lo, hi, interior in instr.attrs["padding"]):
        return instr.operands[0]
    return None


def simplify_copy(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """copy that keeps the layout -> x."""
    x = instr.operands[0]
    if x.shape.is_array and same_layout(x.shape, instr.shape):
        return x
    return None


def simplify_reverse(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """reverse of only size-1 dims (or none) -> x; reverse(broadcast(scalar)) -> broadcast."""
    x = instr.operands[0]
    if all(x.shape.dims[d] <= 1 for d in instr.dimensions):
        return x
    if _is_scalar_broadcast(x):
        return _rebroadcast(comp, x, instr)
    return None


SHAPE_REWRITES = {
    "broadcast": simplify_broadcast,
    "reshape": simplify_reshape,
    "transpose": simplify_transpose,
    "slice": simplify_slice,
    "concatenate": simplify_concatenate,
    "pad": simplify_pad,
    "copy": simplify_copy,
    "reverse": simplify_reverse,
}

__all__ = ["SHAPE_REWRITES"]
