"""ZeroSizedHloElimination ("zero_sized_hlo_elimination"): zero-element arrays become constants.

An instruction whose result is an array with no elements (a dimension of size 0)
always produces the same, empty value, so it is replaced by an empty
``constant`` of its shape. Skipped: parameters, constants, instructions with a
side effect, dynamic shapes, tuples and tokens, and fusion computations.
Needs: nothing. Guarantees: same results; the old instruction's operands are left
for ``dce``.
"""
from __future__ import annotations

import numpy as np

from ..hlo.ir import HloModule
from .base import HloPass
from .context import PassContext
from .hlo_utils import add_instruction, has_side_effect, non_fusion_computations


class ZeroSizedHloElimination(HloPass):
    """XLA's ``ZeroSizedHloElimination``."""

    name = "zero_sized_hlo_elimination"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        memo: dict[int, bool] = {}
        for comp in non_fusion_computations(module):
            for instr in list(comp.instructions):
                shape = instr.shape
                if (not shape.is_array or shape.num_elements != 0 or shape.is_dynamic
                        or instr.opcode in ("parameter", "constant")
                        or has_side_effect(instr, memo)):
                    continue
                empty = add_instruction(comp, "constant", shape,
                                        literal=np.zeros(shape.dims, dtype=shape.dtype),
                                        like=instr)
                comp.instructions.remove(empty)
                comp.instructions.insert(comp.instructions.index(instr), empty)
                comp.replace_instruction(instr, empty)
                changed = True
        return changed


__all__ = ["ZeroSizedHloElimination"]
