"""DotDecomposer ("dot_decomposer"): put every ``dot`` into the canonical form the CPU dot
emitter expects.

A dot operand is canonical (XLA's ``IsCanonical``) when it has exactly one contracting
dimension, at most one non-contracting dimension, and its batch dimensions (if any) are
``0, 1, ..., nb-1`` in order. A dot with a non-canonical operand is rewritten as

    lhs' = reshape(transpose(lhs, batch + non_contracting + contracting))
           -> [batch..., M, K]   (M omitted when the non-contracting sizes multiply to 1)
    rhs' = reshape(transpose(rhs, batch + contracting + non_contracting))
           -> [batch..., K, N]   (N omitted likewise)
    reshape(dot(lhs', rhs'), original result shape)

where ``K`` collapses the contracting dimensions in the order the dot lists them (so a dot
with no contracting dimension gets one of size 1). When the operand's dimensions already
run batch, contracting, non-contracting (or batch, non-contracting, contracting) that
order is kept, so the operand is only reshaped, never copied by a transpose: a weight
gradient's ``[B, S, D]`` activations contracted over ``B, S`` become ``[B*S, D]``
contracted over dim 0, which the dot thunks read transposed in place. Identity
transposes and reshapes are not emitted. Operand element types, ``precision_config``,
``algorithm`` and the result element type (``preferred_element_type``) are kept.

Needs: static shapes (dots with dynamic dimensions are left alone). Guarantees: every dot
in a non-fusion computation is canonical; results are unchanged (each output element sums
the same products in the same order).
"""
from __future__ import annotations

from math import prod
from typing import Sequence

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from .base import HloPass
from .context import PassContext
from .computation_edits import DeferredEdits
from .hlo_utils import add_instruction, array_shape, non_fusion_computations, sort_instructions

DOT_DIM_ATTRS = ("lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims",
                 "rhs_contracting_dims")


def dot_dims(dot: HloInstruction, name: str) -> tuple[int, ...]:
    """One of the dot's dimension-number lists (``lhs_batch_dims`` ...) as a tuple of ints."""
    return tuple(int(d) for d in dot.attrs.get(name, ()) or ())


def is_canonical_operand(rank: int, contracting: Sequence[int], batch: Sequence[int]) -> bool:
    """XLA's ``IsCanonical`` for one dot operand."""
    return (len(contracting) == 1 and len(batch) + 2 >= rank
            and tuple(batch) == tuple(range(len(batch))))


def is_canonical_dot(dot: HloInstruction) -> bool:
    lhs, rhs = dot.operands
    return (is_canonical_operand(lhs.shape.rank, dot_dims(dot, "lhs_contracting_dims"),
                                 dot_dims(dot, "lhs_batch_dims"))
            and is_canonical_operand(rhs.shape.rank, dot_dims(dot, "rhs_contracting_dims"),
                                     dot_dims(dot, "rhs_batch_dims")))


class DotDecomposer(HloPass):
    """XLA's ``DotDecomposer``."""

    name = "dot_decomposer"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        eager = ctx is not None and ctx.reference_mode
        changed = False
        for comp in non_fusion_computations(module):
            dots = [i for i in comp.instructions if i.opcode == "dot" and len(i.operands) == 2
                    and not is_canonical_dot(i)
                    and not any(s.is_dynamic for s in [i.shape] + [o.shape for o in i.operands])]
            with DeferredEdits(comp, eager) as edits:
                for dot in dots:
                    _canonicalize(comp, dot, edits)
            if dots:
                sort_instructions(comp)
                changed = True
        return changed


def _canonical_operand(comp: HloComputation, operand: HloInstruction, batch: Sequence[int],
                       contracting: Sequence[int], contracting_last: bool
                       ) -> tuple[HloInstruction, int]:
    """(operand transposed and reshaped to canonical form, its contracting dimension)."""
    dims = operand.shape.dims
    non_contracting = [d for d in range(len(dims)) if d not in batch and d not in contracting]
    last = list(batch) + non_contracting + list(contracting)
    first = list(batch) + list(contracting) + non_contracting
    identity = list(range(len(dims)))
    if first == identity and last != identity:   # a reshape alone: no transposed copy
        contracting_last = False                 # (the dot kernels read either order)
    elif last == identity and first != identity:
        contracting_last = True
    perm = last if contracting_last else first
    value = operand
    if perm != list(range(len(dims))):
        value = add_instruction(comp, "transpose",
                                array_shape(operand.shape, dims=[dims[p] for p in perm]),
                                [operand], {"dimensions": tuple(perm)}, like=operand)
    k = prod(dims[d] for d in contracting)
    free = prod(dims[d] for d in non_contracting)
    new_dims = [dims[d] for d in batch]
    if contracting_last:
        contracting_dim = len(batch) + (1 if free != 1 else 0)
        new_dims += ([free] if free != 1 else []) + [k]
    else:
        contracting_dim = len(batch)
        new_dims += [k] + ([free] if free != 1 else [])
    if tuple(new_dims) != tuple(value.shape.dims):
        value = add_instruction(comp, "reshape", array_shape(operand.shape, dims=new_dims),
                                [value], like=operand)
    return value, contracting_dim


def _canonicalize(comp: HloComputation, dot: HloInstruction, edits: DeferredEdits) -> None:
    lhs, rhs = dot.operands
    lb, lc, rb, rc = (dot_dims(dot, a) for a in DOT_DIM_ATTRS)
    new_lhs, lhs_c = _canonical_operand(comp, lhs, lb, lc, contracting_last=True)
    new_rhs, rhs_c = _canonical_operand(comp, rhs, rb, rc, contracting_last=False)
    nb = len(lb)
    out_dims = (list(new_lhs.shape.dims[:nb])
                + [d for i, d in enumerate(new_lhs.shape.dims) if i >= nb and i != lhs_c]
                + [d for i, d in enumerate(new_rhs.shape.dims) if i >= nb and i != rhs_c])
    attrs = {k: v for k, v in dot.attrs.items() if k not in DOT_DIM_ATTRS}
    dims_attrs = {"lhs_batch_dims": tuple(range(nb)), "lhs_contracting_dims": (lhs_c,),
                  "rhs_batch_dims": tuple(range(nb)), "rhs_contracting_dims": (rhs_c,)}
    if nb == 0:
        del dims_attrs["lhs_batch_dims"], dims_attrs["rhs_batch_dims"]
    same_dims = tuple(out_dims) == tuple(dot.shape.dims)
    new_dot = add_instruction(comp, "dot",
                              dot.shape if same_dims else array_shape(dot.shape, dims=out_dims),
                              [new_lhs, new_rhs], {**dims_attrs, **attrs}, like=dot)
    result = new_dot
    if not same_dims:
        result = add_instruction(comp, "reshape", dot.shape, [new_dot], like=dot)
    edits.replace(dot, result)


__all__ = ["DotDecomposer", "dot_dims", "is_canonical_dot", "is_canonical_operand"]
