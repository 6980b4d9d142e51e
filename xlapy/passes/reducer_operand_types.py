"""ReducerOperandTypes ("reducer-operand-types"): a reduction's operands in its reducer's types.

XLA's shape rules let a ``reduce`` or ``reduce-window`` take inputs and init values whose
floating-point type differs from its reducer's parameters (``CompatibleIgnoringFpPrecision``:
an ``f16`` init value for an ``f32`` sum, ``bf16`` inputs for an ``f32`` reducer); the
reducer then sees each value in its own parameter type. This pass makes that conversion
explicit: each such operand gets a ``convert`` to the reducer parameter it is passed as
(the accumulator parameter for an init value, the input parameter for an input), so the
backends' reduction emitters, which combine values of one type, see matching types.

Runs on every computation, fusion bodies included (a module that was optimized elsewhere
arrives fused). Needs: a verified module. Guarantees: the same values (the reducer read
each operand in its parameter type before, through the same rounding ``convert`` does).
"""
from __future__ import annotations

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from .base import HloPass
from .context import PassContext
from .hlo_utils import add_instruction, sort_instructions

#: Ops whose operands are N inputs and then N init values of a ``to_apply`` reducer.
REDUCTIONS = frozenset({"reduce", "reduce-window"})


def reducer_operand_types(instr: HloInstruction) -> list | None:
    """The element type the reducer of ``instr`` takes each operand in (inputs then init
    values), or None when ``instr`` is not a reduction of that form."""
    comp = instr.attrs.get("to_apply")
    n = len(instr.operands) // 2
    if instr.opcode not in REDUCTIONS or not isinstance(comp, HloComputation) or n == 0 \
            or len(comp.parameters) != 2 * n:
        return None
    accumulators, inputs = comp.parameters[:n], comp.parameters[n:]   # parameters[i]: i
    return [p.shape.element_type for p in inputs + accumulators]


class ReducerOperandTypes(HloPass):
    """See the module docstring."""

    name = "reducer-operand-types"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        for comp in module.computations:
            edited = False
            for instr in list(comp.instructions):
                wanted = reducer_operand_types(instr)
                if wanted is None:
                    continue
                converted: dict[tuple, HloInstruction] = {}
                for k, (operand, et) in enumerate(zip(list(instr.operands), wanted)):
                    if not operand.shape.is_array or operand.shape.element_type == et:
                        continue
                    if not (operand.shape.element_type.is_floating and et.is_floating):
                        continue             # the verifier allows fp precision only
                    key = (id(operand), et)
                    if key not in converted:
                        converted[key] = add_instruction(
                            comp, "convert", operand.shape.with_element_type(et), [operand],
                            like=instr)
                    instr.replace_operand(k, converted[key])
                    edited = changed = True
            if edited:
                sort_instructions(comp)
        return changed


__all__ = ["ReducerOperandTypes", "reducer_operand_types", "REDUCTIONS"]
