"""ChangeOpDataType ("change-op-data-type"): run chosen ops in a wider element type.

XLA's pass of that name: an instruction the backend's matcher picks, whose operands all
have one element type that the pass's map names (``from -> to``), gets its operands
converted to ``to``, runs in ``to``, and its result is converted back where its own
element type was different. Backends use it for ops their kernels do better (or only) in
the wider type: XLA:CPU for dots oneDNN cannot run in f16, xlapy's CPU backend for bf16
matrix products its own kernels run no faster than the f32 path
(``backends/cpu/bf16_dot.py``'s ``upcast_wanted``).

For a bf16 ``dot`` widened to f32 the result is the same product: bf16 x bf16 products are
exact in f32 and the sum is kept in f32 either way; a bf16 result is rounded once, from
the f32 sum. The inserted converts are ordinary instructions: fusion later merges the
widening ones into their producers (or runs them as loops) and the narrowing one into
the result's readers.

Needs: nothing. Guarantees: every matched instruction is replaced; parameters, tuples,
fusion computations and ops without operands are left alone.
"""
from __future__ import annotations

from typing import Callable, Mapping

from ..hlo.ir import HloInstruction, HloModule
from ..hlo.types import ElementType
from .base import HloPass
from .context import PassContext
from .hlo_utils import add_instruction, non_fusion_computations, sort_instructions


def uniform_operand_type(instr: HloInstruction) -> ElementType | None:
    """The element type all of ``instr``'s operands share (arrays only), or None."""
    types = {o.shape.element_type if o.shape.is_array else None for o in instr.operands}
    if len(types) != 1 or None in types:
        return None
    return next(iter(types))


class ChangeOpDataType(HloPass):
    """XLA's ``ChangeOpDataType`` (module docstring)."""

    name = "change-op-data-type"

    def __init__(self, to_type: Mapping[ElementType, ElementType],
                 matcher: Callable[[HloInstruction], bool]) -> None:
        """``to_type``: the operand element types to change and what to; ``matcher``:
        which instructions (asked only about those whose operands share a mapped
        type)."""
        self.to_type = dict(to_type)
        self.matcher = matcher

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        for comp in non_fusion_computations(module):
            edited = False
            for instr in comp.post_order():
                if (instr.opcode == "parameter" or not instr.operands
                        or not instr.shape.is_array or instr.shape.is_dynamic):
                    continue
                source = uniform_operand_type(instr)
                target = self.to_type.get(source) if source is not None else None
                if target is None or not self.matcher(instr):
                    continue
                operands = [add_instruction(comp, "convert", o.shape.with_element_type(target),
                                            [o], like=instr) for o in instr.operands]
                wide = add_instruction(comp, instr.opcode,
                                       instr.shape.with_element_type(target), operands,
                                       dict(instr.attrs), like=instr)
                result = wide
                if instr.shape.element_type != target:
                    result = add_instruction(comp, "convert", instr.shape, [wide], like=instr)
                comp.replace_instruction(instr, result)
                edited = changed = True
            if edited:
                sort_instructions(comp)
        return changed


__all__ = ["ChangeOpDataType", "uniform_operand_type"]
