"""The reduce and dot rewrites of the algebraic simplifier (see :mod:`.algebraic_simplifier`)."""
from __future__ import annotations

from math import prod
from typing import Sequence

from ..hlo.ir import HloComputation, HloInstruction
from ..hlo.shape import Layout, Shape
from ..hlo.opcodes import ELEMENTWISE
from .hlo_utils import add_constant, add_instruction, array_shape

_IDEMPOTENT_REDUCERS = frozenset({"maximum", "minimum", "and", "or"})


def simplify_reduce(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """Reductions of one element per output, of empty operands, and of scalar broadcasts."""
    if len(instr.operands) != 2 or instr.shape.is_tuple:
        return None
    x, init = instr.operands
    reducer = instr.to_apply
    if x.shape.num_elements == 0:
        if instr.shape.num_elements == 0:
            return None
        return _broadcast_scalar(comp, init, instr)
    reduced = prod(x.shape.dims[d] for d in instr.dimensions)
    if reduced == 1 and is_elementwise_scalar(reducer):
        element = x
        if x.shape.dims != instr.shape.dims:
            element = add_instruction(comp, "reshape",
                                      array_shape(instr.shape, x.shape.element_type), [x],
                                      like=instr)
        return inline_elementwise(comp, reducer, [_broadcast_scalar(comp, init, instr), element],
                                  instr)
    op = _single_binary_op(reducer)
    if (op in _IDEMPOTENT_REDUCERS and x.opcode == "broadcast"
            and x.operands[0].shape.rank == 0):
        scalar = add_instruction(comp, op, init.shape, [init, x.operands[0]], like=instr)
        return _broadcast_scalar(comp, scalar, instr)
    return None


def _broadcast_scalar(comp: HloComputation, scalar: HloInstruction,
                      like: HloInstruction) -> HloInstruction:
    if not like.shape.dims:
        return scalar
    return add_instruction(comp, "broadcast", like.shape, [scalar], {"dimensions": ()},
                           like=like)


def _single_binary_op(comp: HloComputation) -> str | None:
    """The opcode when ``comp`` is just ``op(parameter(0), parameter(1))``, else None."""
    root = comp.root
    if (root is None or len(comp.instructions) != 3 or len(root.operands) != 2
            or any(o.opcode != "parameter" for o in root.operands)
            or root.operands[0] is root.operands[1]):
        return None
    return root.opcode


def is_elementwise_scalar(comp: HloComputation) -> bool:
    """``comp`` is made only of scalar parameters, constants and elementwise ops."""
    for instr in comp.instructions:
        if not instr.shape.is_array or instr.shape.rank != 0:
            return False
        if instr.opcode not in ELEMENTWISE and instr.opcode not in ("parameter", "constant"):
            return False
        if instr.called_computations or instr.control_predecessors:
            return False
    return True


def inline_elementwise(comp: HloComputation, callee: HloComputation,
                       operands: Sequence[HloInstruction],
                       like: HloInstruction) -> HloInstruction | None:
    """Apply a scalar computation elementwise to ``operands`` (arrays of ``like``'s dims) by
    copying its instructions into ``comp``; None if ``callee`` is not purely elementwise."""
    if not is_elementwise_scalar(callee):
        return None
    dims = like.shape.dims
    mapping: dict[int, HloInstruction] = {}
    for instr in callee.post_order():
        if instr.opcode == "parameter":
            mapping[id(instr)] = operands[instr.parameter_number]
        elif instr.opcode == "constant":
            scalar = add_constant(comp, instr.literal, instr.shape)
            mapping[id(instr)] = (scalar if not dims else add_instruction(
                comp, "broadcast", array_shape(like.shape, instr.shape.element_type),
                [scalar], {"dimensions": ()}, like=like))
        else:
            attrs = {k: v for k, v in instr.attrs.items() if k != "metadata"}
            mapping[id(instr)] = add_instruction(
                comp, instr.opcode, array_shape(like.shape, instr.shape.element_type),
                [mapping[id(o)] for o in instr.operands], attrs, like=like)
    return mapping[id(callee.root)]


def simplify_dot(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """dot whose contracting dims all have size 1 -> multiply(broadcast(lhs), broadcast(rhs))."""
    if len(instr.operands) != 2 or "sparsity" in instr.attrs or "algorithm" in instr.attrs:
        return None
    lhs, rhs = instr.operands
    et = instr.shape.element_type
    if et.is_pred or not instr.shape.is_array:
        return None
    lc = tuple(instr.attrs.get("lhs_contracting_dims", ()))
    rc = tuple(instr.attrs.get("rhs_contracting_dims", ()))
    lb = tuple(instr.attrs.get("lhs_batch_dims", ()))
    rb = tuple(instr.attrs.get("rhs_batch_dims", ()))
    if any(lhs.shape.dims[d] != 1 for d in lc):
        return None
    lfree = tuple(d for d in range(lhs.shape.rank) if d not in lc and d not in lb)
    rfree = tuple(d for d in range(rhs.shape.rank) if d not in rc and d not in rb)
    nb, nl, nr = len(lb), len(lfree), len(rfree)
    left = _outer_factor(comp, instr, lhs, lb + lfree, lc, tuple(range(nb + nl)))
    right = _outer_factor(comp, instr, rhs, rb + rfree, rc,
                          tuple(range(nb)) + tuple(range(nb + nl, nb + nl + nr)))
    return add_instruction(comp, "multiply", instr.shape, [left, right], like=instr)


def simplify_transpose_of_dot(comp: HloComputation,
                              instr: HloInstruction) -> HloInstruction | None:
    """transpose(dot(a, b)) that puts b's free dims before a's -> dot(b, a): the product
    is written in the order its user reads it (a weight gradient ``x^T dz`` accumulated
    into a transposed weight) instead of being transposed after. Only when the result
    is row-major (or has no layout yet), so that a backend's row-major GEMM still takes
    it (the CPU's layout assignment does the others: ``swapped_dot``). Only for a dot
    whose sole user is the transpose."""
    shape = instr.shape
    if shape.layout is not None and shape.layout != Layout.row_major(shape.rank):
        return None
    return swapped_dot(comp, instr, shape)


def swapped_dot(comp: HloComputation, transpose: HloInstruction,
                shape: Shape) -> HloInstruction | None:
    """``dot(b, a)`` of ``shape`` standing for ``transpose(dot(a, b))`` when the transpose
    puts b's free dims before a's and the dot has no other user; else None."""
    dot = transpose.operands[0]
    if transpose.opcode != "transpose" or dot.opcode != "dot" or len(dot.users) != 1 \
            or len(dot.operands) != 2 or "sparsity" in dot.attrs or not dot.shape.is_array:
        return None
    a, b = dot.operands
    attrs = dot.attrs
    lb = tuple(attrs.get("lhs_batch_dims", ()))
    lc = tuple(attrs.get("lhs_contracting_dims", ()))
    rb = tuple(attrs.get("rhs_batch_dims", ()))
    rc = tuple(attrs.get("rhs_contracting_dims", ()))
    nb = len(lb)
    nl = a.shape.rank - nb - len(lc)
    nr = b.shape.rank - len(rb) - len(rc)
    swapped = tuple(range(nb)) + tuple(range(nb + nl, nb + nl + nr)) + \
        tuple(range(nb, nb + nl))
    if nl == 0 or nr == 0 or tuple(transpose.dimensions) != swapped:
        return None
    new = dict(attrs, lhs_batch_dims=rb, rhs_batch_dims=lb, lhs_contracting_dims=rc,
               rhs_contracting_dims=lc)
    if "operand_precision" in attrs:
        new["operand_precision"] = tuple(reversed(tuple(attrs["operand_precision"])))
    if transpose.metadata is not None:
        new["metadata"] = transpose.metadata
    return add_instruction(comp, "dot", shape, [b, a], new)


def _outer_factor(comp: HloComputation, dot: HloInstruction, x: HloInstruction,
                  kept: tuple[int, ...], contracting: tuple[int, ...],
                  positions: tuple[int, ...]) -> HloInstruction:
    """``x`` with its kept dims in order, the size-1 contracting dims dropped, converted to the
    dot's element type and broadcast into the dot's output ``positions``."""
    et = dot.shape.element_type
    if x.shape.element_type != et:
        x = add_instruction(comp, "convert", array_shape(dot.shape, et, x.shape.dims), [x],
                            like=dot)
    perm = kept + contracting
    if perm != tuple(range(len(perm))):
        x = add_instruction(comp, "transpose",
                            array_shape(dot.shape, et, [x.shape.dims[p] for p in perm]), [x],
                            {"dimensions": perm}, like=dot)
    kept_dims = tuple(x.shape.dims[:len(kept)])
    if x.shape.dims != kept_dims:
        x = add_instruction(comp, "reshape", array_shape(dot.shape, et, kept_dims), [x], like=dot)
    if kept_dims == dot.shape.dims and positions == tuple(range(len(positions))):
        return x
    return add_instruction(comp, "broadcast", dot.shape, [x], {"dimensions": positions},
                           like=dot)


__all__ = ["inline_elementwise", "is_elementwise_scalar", "simplify_dot", "simplify_reduce"]
