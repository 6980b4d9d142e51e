"""Bf16ExcessPrecision ("bf16-excess-precision"): bf16 arithmetic chains run in f32.

A CPU has no bf16 arithmetic: every bf16 elementwise op is computed in f32 and rounded
back. XLA:CPU upcasts such ops (``FloatNormalization``) and, with
``--xla_allow_excess_precision`` (on by default), removes the ``f32 -> bf16 -> f32``
round trips between them (``SimplifyFPConversions``), so a chain of bf16 ops (a GELU,
its gradient, an Adam-style update) rounds once, where its result is stored as bf16.
This pass does both at once: every bf16 result of an arithmetic op in :data:`ARITHMETIC`
becomes ``convert(op_f32(...)) -> bf16``, whose operands are taken in f32 without a
rounding step when they come from such an op or from a ``convert`` of an f32 value.

Needs: nothing. Guarantees: results at least as precise as per-op rounding (not bitwise
the interpreter's, which rounds every op as HLO says); fusion computations and the
scalar computations of reduce, sort, scatter and select-and-scatter are left alone (run
it before fusion); dead converts are removed.
"""
from __future__ import annotations

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.types import BF16, F32
from .base import HloPass
from .context import PassContext
from .dce import HloDCE
from .hlo_utils import add_instruction, non_fusion_computations, sort_instructions

#: Elementwise ops whose bf16 result is a rounded f32 computation.
ARITHMETIC = frozenset({
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "negate", "abs",
    "exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic",
    "sqrt", "rsqrt", "cbrt", "power", "sine", "cosine", "tan", "atan2", "erf",
    "remainder", "sign", "floor", "ceil", "round-nearest-afz", "round-nearest-even",
    "clamp", "select"})


class Bf16ExcessPrecision(HloPass):
    """See the module docstring."""

    name = "bf16-excess-precision"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        reducers = {id(c) for comp in module.computations for i in comp.instructions
                    for key in ("to_apply", "comparator", "select", "scatter")
                    if isinstance(c := i.attrs.get(key), HloComputation)}
        for comp in non_fusion_computations(module):
            if id(comp) not in reducers:       # scalar reducers stay as the emitters expect
                changed |= self._run_computation(comp)
        if changed:
            HloDCE().run(module, ctx)
        return changed

    def _run_computation(self, comp: HloComputation) -> bool:
        wide: dict[int, HloInstruction] = {}      # id(bf16 value) -> the same value in f32
        changed = False
        for instr in comp.post_order():
            if instr.opcode not in ARITHMETIC or not instr.shape.is_array \
                    or instr.shape.element_type is not BF16 or instr.shape.is_dynamic:
                continue
            f32_shape = instr.shape.with_element_type(F32)
            operands = [self._widened(comp, op, wide) for op in instr.operands]
            computed = add_instruction(comp, instr.opcode, f32_shape, operands,
                                       dict(instr.attrs), like=instr)
            rounded = add_instruction(comp, "convert", instr.shape, [computed], like=instr)
            comp.replace_instruction(instr, rounded)
            wide[id(rounded)] = computed
            changed = True
        if changed:
            sort_instructions(comp)
        return changed

    @staticmethod
    def _widened(comp: HloComputation, op: HloInstruction,
                 wide: dict[int, HloInstruction]) -> HloInstruction:
        """``op`` as f32: the f32 value it was rounded from when there is one (the
        excess precision), else ``convert(op)`` (a broadcast: of its operand, broadcast);
        non-bf16 operands (``select``'s predicate) stay as they are."""
        if not op.shape.is_array or op.shape.element_type is not BF16:
            return op
        if id(op) in wide:
            return wide[id(op)]
        if op.opcode == "convert" and op.operands[0].shape.element_type is F32:
            return op.operands[0]
        if op.opcode == "broadcast":
            # widen the small operand and broadcast that (XLA's simplifier sinks the
            # broadcast below the convert likewise): a bias or a constant stays a
            # broadcast, which fusion treats as free, instead of a convert as large as
            # the op that reads it
            source = Bf16ExcessPrecision._widened(comp, op.operands[0], wide)
            widened = add_instruction(comp, "broadcast", op.shape.with_element_type(F32),
                                      [source], dict(op.attrs), like=op)
            wide[id(op)] = widened
            return widened
        widened = add_instruction(comp, "convert", op.shape.with_element_type(F32), [op],
                                  like=op)
        wide[id(op)] = widened
        return widened


__all__ = ["Bf16ExcessPrecision", "ARITHMETIC"]
