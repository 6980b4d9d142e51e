"""The data-movement rewrites of the algebraic simplifier (see :mod:`.algebraic_simplifier`).

Each ``simplify_<op>(comp, instr)`` returns the instruction that should replace
``instr`` (an existing one or a new one added to ``comp``), or None. All of them
only move or select elements, so they are exact for every element type.
"""
from __future__ import annotations

import numpy as np

from ..hlo.ir import HloComputation, HloInstruction
from ..hlo.shape import Shape
from .hlo_utils import add_instruction, same_layout, scalar_literal


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


def _pad_piece(instr: HloInstruction) -> tuple[int, int, int, bytes] | None:
    """``(axis, start, stop, padding value bytes)`` of a pad with a zero padding value and
    only edge padding, along one axis (the piece of the result its operand fills)."""
    if instr.opcode != "pad":
        return None
    value = scalar_literal(instr.operands[1])
    if value is None or value != 0 or instr.shape.element_type.is_complex:
        return None
    axes = [d for d, (lo, hi, interior) in enumerate(instr.attrs["padding"])
            if lo or hi or interior]
    if len(axes) != 1:
        return None
    lo, hi, interior = instr.attrs["padding"][axes[0]]
    if interior or lo < 0 or hi < 0:
        return None
    return axes[0], lo, instr.shape.dims[axes[0]] - hi, np.asarray(value).tobytes()


def _inner_sum(x: HloInstruction, root: HloInstruction) -> bool:
    """Whether the add ``x`` is part of the sum ``root`` (an add whose only use it is)."""
    return x.opcode == "add" and root.opcode == "add" and x.shape == root.shape and \
        len(x.users) == 1 and sum(o is x for o in root.operands) == 1


def _sum_leaves(root: HloInstruction) -> list[HloInstruction]:
    """The addends of the tree of ``add``s under ``root``."""
    out: list[HloInstruction] = []
    for x in root.operands:
        if _inner_sum(x, root):
            out.extend(_sum_leaves(x))
        else:
            out.append(x)
    return out


def simplify_sum_of_pads(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """A sum of zero-padded pieces that do not overlap -> their concatenate (plus the other
    addends): the gradient of slices that split a value (``split``), which the transpose
    of each slice gives as a pad. Gaps between the pieces are the padding value.

    Exact except for the sign of zero: where a piece holds -0.0, the sum with a +0.0
    padding gives +0.0 and the concatenate keeps -0.0."""
    if instr.opcode != "add" or not instr.shape.is_array:
        return None
    if len(instr.users) == 1 and _inner_sum(instr, instr.users[0]):
        return None                              # the enclosing sum rewrites the whole tree
    leaves = _sum_leaves(instr)
    pieces = [(x, p) for x in leaves if (p := _pad_piece(x)) is not None]
    if len(pieces) < 2:
        return None
    axis = max({p[0] for _, p in pieces}, key=lambda a: sum(p[0] == a for _, p in pieces))
    group = sorted(((x, p) for x, p in pieces if p[0] == axis and p[3] == pieces[0][1][3]),
                   key=lambda xp: xp[1][1])
    if len(group) < 2 or any(a[1][2] > b[1][1] for a, b in zip(group, group[1:])):
        return None                              # overlapping pieces
    dims, et = instr.shape.dims, instr.shape.element_type
    padding = group[0][0].operands[1]
    parts: list[HloInstruction] = []
    at = 0

    def gap(size: int) -> HloInstruction:
        gdims = dims[:axis] + (size,) + dims[axis + 1:]
        return add_instruction(comp, "broadcast", Shape.array(et, gdims), [padding],
                               {"dimensions": ()}, like=instr)
    for x, (_, start, stop, _) in group:
        if start > at:
            parts.append(gap(start - at))
        parts.append(x.operands[0])
        at = stop
    if at < dims[axis]:
        parts.append(gap(dims[axis] - at))
    out = add_instruction(comp, "concatenate", Shape.array(et, dims), parts,
                          {"dimensions": (axis,)}, like=instr)
    used = {id(x) for x, _ in group}
    for x in leaves:
        if id(x) not in used:
            out = add_instruction(comp, "add", Shape.array(et, dims), [out, x], like=instr)
    return out


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

__all__ = ["SHAPE_REWRITES", "simplify_sum_of_pads"]
