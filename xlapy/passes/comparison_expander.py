"""ComparisonExpander ("comparison-expander"): total-order float compares become integer compares.

``compare(a, b), direction=D, type=TOTALORDER`` on floating-point operands orders
``-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN``. As XLA does, each
operand's bits are reinterpreted as a signed integer of the same width, and for
negative values all bits but the sign are flipped (``x ^ INT_MAX``), which makes
the integer order equal the total order; then the integers are compared with D.

    a_s = bitcast-convert(a) to s<bits>
    a_k = select(a_s < 0, a_s ^ INT_MAX, a_s)      (likewise b)
    compare(a_k, b_k), direction=D

Needs: nothing. Guarantees: no float ``TOTALORDER`` compare remains outside fusion
bodies; results are unchanged.
"""
from __future__ import annotations

from ..hlo import types as T
from ..hlo.ir import HloComputation, HloInstruction, HloModule
from .base import HloPass
from .context import PassContext
from .computation_edits import DeferredEdits
from .hlo_utils import (add_instruction, add_scalar_broadcast, array_shape,
                        non_fusion_computations, sort_instructions)

_SIGNED_OF_WIDTH = {8: T.S8, 16: T.S16, 32: T.S32, 64: T.S64}


class ComparisonExpander(HloPass):
    """XLA's ``ComparisonExpander`` (the TOTALORDER part)."""

    name = "comparison-expander"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        eager = ctx is not None and ctx.reference_mode
        changed = False
        for comp in non_fusion_computations(module):
            touched = False
            with DeferredEdits(comp, eager) as edits:
                for instr in list(comp.instructions):
                    if (instr.opcode == "compare" and instr.attrs.get("type") == "TOTALORDER"
                            and _has_ieee_sign_bit(instr.operands[0].shape.element_type)):
                        _expand(comp, instr, edits)
                        touched = True
            if touched:
                sort_instructions(comp)
                changed = True
        return changed


def _has_ieee_sign_bit(et: T.ElementType) -> bool:
    """Floats whose bit patterns order like sign-magnitude integers (not the fnuz/unsigned f8s)."""
    return (et.is_floating and et.bits in _SIGNED_OF_WIDTH
            and not et.name.endswith(("fnuz", "fnu")))


def _expand(comp: HloComputation, compare: HloInstruction, edits: DeferredEdits) -> None:
    a, b = compare.operands
    keys = [_total_order_key(comp, x, compare) for x in (a, b)]
    attrs = {k: v for k, v in compare.attrs.items() if k != "type"}
    new = add_instruction(comp, "compare", compare.shape, keys, attrs, like=compare)
    edits.replace(compare, new)


def _total_order_key(comp: HloComputation, x: HloInstruction,
                     like: HloInstruction) -> HloInstruction:
    signed = _SIGNED_OF_WIDTH[x.shape.element_type.bits]
    int_shape = array_shape(x.shape, signed)
    pred_shape = array_shape(x.shape, T.PRED)
    as_int = add_instruction(comp, "bitcast-convert", int_shape, [x], like=like)
    max_int = add_scalar_broadcast(comp, T.iinfo(signed).max, int_shape, like=like)
    zero = add_scalar_broadcast(comp, 0, int_shape, like=like)
    flipped = add_instruction(comp, "xor", int_shape, [as_int, max_int], like=like)
    negative = add_instruction(comp, "compare", pred_shape, [as_int, zero],
                               {"direction": "LT"}, like=like)
    return add_instruction(comp, "select", int_shape, [negative, flipped, as_int], like=like)


__all__ = ["ComparisonExpander"]
