"""TransposeFolding ("transpose-folding"): read a transposed ``dot``/``convolution`` operand
through the dimension numbers instead of materializing the transpose.

For ``dot(transpose(x, perm), y)`` the dot reads ``x`` directly, with every batch and
contracting dimension ``d`` of that operand renumbered to ``perm[d]`` (likewise for the
rhs). A dot operand is folded when ``can_fold_dot_operand(dot, operand_index)`` allows it;
the default is XLA CPU's ``IsRowColumnTransposeDotOperand``: the operand has rank
``batch + 2``, one contracting dimension, and the transpose keeps every batch dimension in
place (so only the two matrix dimensions are swapped). Whatever the predicate says, an
operand is only folded when the transpose keeps its non-contracting dimensions in their
relative order, since those fix the layout of the dot's result. Both dot operands must
have rank >= 2, as in XLA.

For ``convolution`` the transposed input (operand 0) or kernel (operand 1) is read directly
with its ``dim_labels`` renumbered the same way; this is done for the operands
``can_fold_conv_operand(conv, operand_index)`` allows, which by default is none (XLA's CPU
pipeline passes ``NeverFoldTranspose`` for convolutions).

Needs: nothing. Guarantees: same results, bit for bit (the rewritten instruction computes
exactly the same sums); a transpose with other users stays for them, an unused one is left
for ``dce``.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from ..hlo.attrs import ConvDimensionNumbers
from ..hlo.ir import HloInstruction, HloModule
from .base import HloPass
from .context import PassContext
from .dot_decomposer import dot_dims
from .hlo_utils import non_fusion_computations

OperandPredicate = Callable[[HloInstruction, int], bool]


def is_row_column_transpose_dot_operand(dot: HloInstruction, operand_index: int) -> bool:
    """XLA's ``IsRowColumnTransposeDotOperand``."""
    side = "lhs" if operand_index == 0 else "rhs"
    transpose = dot.operands[operand_index]
    batch = dot_dims(dot, f"{side}_batch_dims")
    contracting = dot_dims(dot, f"{side}_contracting_dims")
    perm = transpose.dimensions
    return (len(batch) == transpose.shape.rank - 2 and len(contracting) == 1
            and all(perm[d] == d for d in batch))


def never_fold(instr: HloInstruction, operand_index: int) -> bool:
    """XLA's ``NeverFoldTranspose``."""
    return False


def always_fold(instr: HloInstruction, operand_index: int) -> bool:
    """Fold every operand the rewrite can handle."""
    return True


def _is_non_identity_transpose(instr: HloInstruction) -> bool:
    return (instr.opcode == "transpose"
            and tuple(instr.dimensions) != tuple(range(len(instr.dimensions))))


class TransposeFolding(HloPass):
    """XLA's ``TransposeFolding``."""

    name = "transpose-folding"

    def __init__(self, can_fold_dot_operand: OperandPredicate = is_row_column_transpose_dot_operand,
                 can_fold_conv_operand: OperandPredicate = never_fold) -> None:
        self.can_fold_dot_operand = can_fold_dot_operand
        self.can_fold_conv_operand = can_fold_conv_operand

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        for comp in non_fusion_computations(module):
            for instr in list(comp.instructions):
                if instr.opcode == "dot" and len(instr.operands) == 2:
                    changed |= self._fold_dot(instr)
                elif instr.opcode == "convolution" and instr.attrs.get("dim_labels") is not None:
                    changed |= self._fold_convolution(instr)
        return changed

    def _fold_dot(self, dot: HloInstruction) -> bool:
        if any(o.shape.rank < 2 for o in dot.operands):
            return False
        foldable = [i for i in (0, 1) if _is_non_identity_transpose(dot.operands[i])
                    and _keeps_free_dims_in_order(dot, i) and self.can_fold_dot_operand(dot, i)]
        for i in foldable:
            side = "lhs" if i == 0 else "rhs"
            transpose = dot.operands[i]
            perm = transpose.dimensions
            for kind in ("batch", "contracting"):
                key = f"{side}_{kind}_dims"
                if key in dot.attrs:
                    dot.attrs[key] = tuple(perm[d] for d in dot_dims(dot, key))
            dot.replace_operand(i, transpose.operands[0])
        return bool(foldable)

    def _fold_convolution(self, conv: HloInstruction) -> bool:
        dn: ConvDimensionNumbers = conv.attrs["dim_labels"]
        if dn.labels is not None:
            return False
        foldable = [i for i in (0, 1) if _is_non_identity_transpose(conv.operands[i])
                    and self.can_fold_conv_operand(conv, i)]
        for i in foldable:
            transpose = conv.operands[i]
            p = transpose.dimensions
            if i == 0:
                dn = dataclasses.replace(dn, input_batch=p[dn.input_batch],
                                         input_feature=p[dn.input_feature],
                                         input_spatial=tuple(p[d] for d in dn.input_spatial))
            else:
                dn = dataclasses.replace(dn, kernel_input_feature=p[dn.kernel_input_feature],
                                         kernel_output_feature=p[dn.kernel_output_feature],
                                         kernel_spatial=tuple(p[d] for d in dn.kernel_spatial))
            conv.replace_operand(i, transpose.operands[0])
        if foldable:
            conv.attrs["dim_labels"] = dn
        return bool(foldable)


def _keeps_free_dims_in_order(dot: HloInstruction, operand_index: int) -> bool:
    """The transpose leaves the operand's non-contracting, non-batch dims in relative order."""
    side = "lhs" if operand_index == 0 else "rhs"
    transpose = dot.operands[operand_index]
    used = set(dot_dims(dot, f"{side}_batch_dims")) | set(dot_dims(dot, f"{side}_contracting_dims"))
    free = [transpose.dimensions[d] for d in range(transpose.shape.rank) if d not in used]
    return free == sorted(free)


__all__ = ["TransposeFolding", "always_fold", "is_row_column_transpose_dot_operand",
           "never_fold"]
