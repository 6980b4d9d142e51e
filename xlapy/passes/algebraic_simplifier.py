"""AlgebraicSimplifier ("algsimp"): local rewrites that never change a result.

Every rewrite is exact for every input, NaN, infinities and signed zeros
included (the sign of a zero is kept too, except where noted). Rewrites (a
"constant" below may also be a broadcast or reshape of a constant whose elements
are all equal):

Arithmetic (:func:`_simplify_arithmetic`)
  add(x, 0) / add(0, x) -> x      integers; for floats only when the zero is -0.0
                                   (x + (+0.0) turns -0.0 into +0.0)
  subtract(x, 0) -> x              integers; floats only for +0.0
  subtract(a, a) -> 0              integers only
  multiply(x, 1) / multiply(1, x) -> x     integers and real floats
  multiply(x, 0) -> 0              integers only (floats: NaN * 0, inf * 0, -x * 0)
  divide(x, 1) -> x                integers and real floats
  divide(x, c) -> multiply(x, 1/c) floats, c a power of two whose reciprocal is exact
  power(x, 0) -> 1; power(x, 1) -> x; power(x, 2) -> x * x      integers and real floats
  power(x, -1) -> 1 / x            real floats
                                   (XLA's own rewrites: x * x and 1 / x are the correctly
                                   rounded x**2 and x**-1, and pow(NaN, 0) is 1 in C too)
  negate(negate(x)) -> x; not(not(x)) -> x
  op(broadcast(s1), broadcast(s2), ...) -> broadcast(op(s1, s2, ...)) for elementwise ops
                                   whose operands are all broadcasts of scalars (so the scalar
                                   op can be constant-folded)

Comparison, select, conversion
  compare(x, x) -> true/false      integers and pred (EQ/LE/GE true; NE/LT/GT false)
  select(true, a, b) -> a; select(false, a, b) -> b; select(p, a, a) -> a
  convert(x) to x's own type -> x
  convert(convert(x)) -> convert(x) (or x) when the inner convert is value-preserving
                                   (e.g. f16->f32->f64, s8->s32->f32, bf16->f32->bf16)

Data movement (:mod:`.algsimp_shapes`)
  broadcast to the operand's own shape -> x; broadcast(broadcast(x)) -> broadcast
  reshape to the same dims -> x; reshape(reshape(x)) -> reshape(x)
  transpose with the identity permutation -> x; transpose(transpose(x)) -> transpose
  slice covering the operand -> x; slice(slice(x)) -> slice
  concatenate of one operand -> the operand; pad with all-zero padding -> x
  add(pad(a, 0), pad(b, 0), ...) of pieces along one axis that do not overlap ->
      concatenate(a, b, ...) (gaps: the padding value; other addends added after):
      the gradient of a split. Where a piece holds -0.0 and the padding is +0.0 the sum
      gives +0.0 and the concatenate keeps -0.0
  copy with the operand's layout -> x; reverse of size-1 dims -> x
  reshape/transpose/slice/reverse of broadcast(scalar) -> broadcast(scalar)

Reductions and dots
  reduce over dims whose total size is 1 (or over no dims) -> the reducer applied
      elementwise to (broadcast(init), reshape(x)), inlined; this is exactly one step
      of the reduction, so no identity assumption is made about init
  reduce of a zero-element operand -> broadcast(init)
  reduce(broadcast(s), init) with maximum/minimum/and/or reducer -> broadcast(f(init, s))
  dot whose contracting dims all have size 1 -> multiply of broadcasts (an outer product;
      a -0.0 product stays -0.0 where a summing dot would give +0.0)
  transpose(dot(a, b)) putting b's free dims before a's (the dot's only user) -> dot(b, a),
      when the result is row-major or has no layout

Not done, because they are not exact: x * 0 for floats, reassociation, exp(log(x)),
log(exp(x)), x / c for non-powers of two, power(x, 0.5) -> sqrt(x) (-0 and -inf differ).

Needs: nothing. Leaves dead instructions for ``dce``; fusion bodies are not touched.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..hlo import types as T
from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.opcodes import ELEMENTWISE
from .algsimp_reduce import simplify_dot, simplify_reduce, simplify_transpose_of_dot
from .algsimp_shapes import SHAPE_REWRITES, simplify_sum_of_pads
from .base import HloPass
from .context import PassContext
from .computation_edits import DeferredEdits
from .hlo_utils import (add_instruction, add_scalar_broadcast, can_replace,
                        non_fusion_computations, scalar_literal, scalar_shape, sort_instructions)

Rewrite = Callable[[HloComputation, HloInstruction], "HloInstruction | None"]


class AlgebraicSimplifier(HloPass):
    """XLA's ``AlgebraicSimplifier`` (the exact subset listed in the module docstring)."""

    name = "algsimp"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        eager = ctx is not None and ctx.reference_mode
        changed = False
        for comp in non_fusion_computations(module):
            if _simplify_computation(comp, eager):
                sort_instructions(comp)
                changed = True
        return changed


def _simplify_computation(comp: HloComputation, eager: bool) -> bool:
    changed = False
    with DeferredEdits(comp, eager) as edits:
        for instr in comp.post_order():
            if instr.parent is not comp or instr.control_predecessors:
                continue
            rewrite = REWRITES.get(instr.opcode)
            count = len(comp.instructions)
            new = rewrite(comp, instr) if rewrite is not None else None
            if new is None and instr.opcode in ELEMENTWISE:
                new = _sink_scalar_broadcasts(comp, instr)
            if new is not None and new is not instr and can_replace(instr, new):
                edits.replace(instr, new)
                changed = True
            else:
                for added in reversed(comp.instructions[count:]):   # drop a rejected rewrite
                    edits.remove(added)
    return changed


# --------------------------------------------------------------------------------------------
# constants


def _value(instr: HloInstruction) -> complex | float | int | None:
    """The value of a constant with all elements equal (see ``scalar_literal``), else None."""
    lit = scalar_literal(instr)
    if lit is None:
        return None
    et = instr.shape.element_type
    if et.is_complex:
        return complex(lit)
    if et.is_floating:
        return float(lit)
    return int(lit)


def _is_zero(instr: HloInstruction, negative: bool | None = None) -> bool:
    """All elements are zero; for floats ``negative`` demands the sign (None: either)."""
    v = _value(instr)
    if v is None or v != 0:
        return False
    et = instr.shape.element_type
    if not et.is_floating or negative is None:
        return not et.is_complex
    sign = math.copysign(1.0, v.real)            # v is real here
    return sign < 0 if negative else sign > 0


def _is_one(instr: HloInstruction) -> bool:
    et = instr.shape.element_type
    return (et.is_integral or et.is_floating) and _value(instr) == 1


def _is_integral(instr: HloInstruction) -> bool:
    return instr.shape.element_type.is_integral


# --------------------------------------------------------------------------------------------
# arithmetic


def _simplify_add(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    a, b = instr.operands
    floating = instr.shape.element_type.is_floating
    sign = True if floating else None           # floats: only -0.0 is an identity
    if (_is_integral(instr) or floating) and _is_zero(b, sign):
        return a
    if (_is_integral(instr) or floating) and _is_zero(a, sign):
        return b
    return simplify_sum_of_pads(comp, instr)


def _simplify_subtract(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    a, b = instr.operands
    floating = instr.shape.element_type.is_floating
    if (_is_integral(instr) or floating) and _is_zero(b, False if floating else None):
        return a
    if _is_integral(instr) and a is b:
        return add_scalar_broadcast(comp, 0, instr.shape, like=instr)
    return None


def _simplify_multiply(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    a, b = instr.operands
    if _is_one(b):
        return a
    if _is_one(a):
        return b
    if _is_integral(instr) and (_is_zero(a) or _is_zero(b)):
        return add_scalar_broadcast(comp, 0, instr.shape, like=instr)
    return None


def _simplify_divide(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    a, b = instr.operands
    if _is_one(b):
        return a
    et = instr.shape.element_type
    if et.is_floating:
        reciprocal = _exact_reciprocal(b)
        if reciprocal is not None:
            factor = add_scalar_broadcast(comp, reciprocal, instr.shape, like=instr)
            return add_instruction(comp, "multiply", instr.shape, [a, factor], like=instr)
    return None


def _simplify_power(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    a, b = instr.operands
    et = instr.shape.element_type
    if not (et.is_integral or et.is_floating):
        return None
    exponent = _value(b)
    if exponent == 0:
        return add_scalar_broadcast(comp, 1, instr.shape, like=instr)
    if exponent == 1:
        return a
    if exponent == 2:
        return add_instruction(comp, "multiply", instr.shape, [a, a], like=instr)
    if exponent == -1 and et.is_floating:
        one = add_scalar_broadcast(comp, 1, instr.shape, like=instr)
        return add_instruction(comp, "divide", instr.shape, [one, a], like=instr)
    return None


def _exact_reciprocal(instr: HloInstruction) -> np.ndarray | None:
    """1/c in c's type when c is a power of two whose reciprocal is representable exactly."""
    c = _value(instr)
    if c is None or c == 0 or not math.isfinite(c.real):   # c is real (float dividers)
        return None
    mantissa, _ = math.frexp(abs(c))
    if mantissa != 0.5:
        return None
    dtype = instr.shape.dtype
    reciprocal = np.asarray(1.0 / c).astype(dtype)
    return reciprocal if float(reciprocal) == 1.0 / c else None


def _simplify_involution(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """negate(negate(x)) -> x, not(not(x)) -> x."""
    x = instr.operands[0]
    if x.opcode == instr.opcode:
        return x.operands[0]
    return None


def _sink_scalar_broadcasts(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    """Elementwise op whose operands are all broadcasts of scalars -> broadcast of the scalar op."""
    if instr.shape.rank == 0 or not instr.operands or instr.opcode in ("copy", "bitcast-convert"):
        return None
    if not all(o.opcode == "broadcast" and o.operands[0].shape.rank == 0
               for o in instr.operands):
        return None
    scalars = [o.operands[0] for o in instr.operands]
    attrs = {k: v for k, v in instr.attrs.items() if k != "metadata"}
    scalar_op = add_instruction(comp, instr.opcode, scalar_shape(instr.shape), scalars, attrs,
                                like=instr)
    return add_instruction(comp, "broadcast", instr.shape, [scalar_op], {"dimensions": ()},
                           like=instr)


# --------------------------------------------------------------------------------------------
# compare, select, convert

_ALWAYS_TRUE_WHEN_EQUAL = {"EQ": True, "LE": True, "GE": True, "NE": False, "LT": False,
                           "GT": False}


def _simplify_compare(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    a, b = instr.operands
    et = a.shape.element_type
    direction = instr.attrs.get("direction")
    if a is b and (et.is_integral or et.is_pred) and direction in _ALWAYS_TRUE_WHEN_EQUAL:
        return add_scalar_broadcast(comp, _ALWAYS_TRUE_WHEN_EQUAL[direction], instr.shape,
                                    like=instr)
    return None


def _simplify_select(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    pred, on_true, on_false = instr.operands
    if on_true is on_false:
        return on_true
    lit = scalar_literal(pred)
    if lit is not None:
        return on_true if bool(lit) else on_false
    return None


def _simplify_convert(comp: HloComputation, instr: HloInstruction) -> HloInstruction | None:
    x = instr.operands[0]
    target = instr.shape.element_type
    if x.shape.element_type == target:
        return x
    if x.opcode == "convert":
        source = x.operands[0]
        if value_preserving(source.shape.element_type, x.shape.element_type):
            if source.shape.element_type == target:
                return source
            return add_instruction(comp, "convert", instr.shape, [source], like=instr)
    return None


_IEEE_FLOATS = frozenset({"f16", "bf16", "f32", "f64"})


def value_preserving(src: T.ElementType, dst: T.ElementType) -> bool:
    """Every value of ``src`` converts to ``dst`` exactly (so converting back is lossless)."""
    if src == dst:
        return True
    if src.is_pred:
        return dst.is_integral or dst.name in _IEEE_FLOATS
    if src.is_integral and dst.is_integral:
        if src.is_signed_integral:
            return dst.is_signed_integral and dst.bits >= src.bits
        return dst.bits > src.bits or (dst.is_unsigned_integral and dst.bits >= src.bits)
    if src.is_integral and dst.is_floating and dst.name in _IEEE_FLOATS:
        value_bits = src.bits - 1 if src.is_signed_integral else src.bits
        return value_bits <= T.finfo(dst).nmant + 1
    if src.is_floating and dst.is_floating and dst.name in _IEEE_FLOATS:
        s, d = T.finfo(src), T.finfo(dst)
        def smallest(f: np.finfo) -> int:            # exponent of the smallest subnormal
            return f.minexp - f.nmant
        return (s.nmant <= d.nmant and s.maxexp <= d.maxexp
                and smallest(s) >= smallest(d))
    return False


REWRITES: dict[str, Rewrite] = {
    "add": _simplify_add,
    "subtract": _simplify_subtract,
    "multiply": _simplify_multiply,
    "divide": _simplify_divide,
    "power": _simplify_power,
    "negate": _simplify_involution,
    "not": _simplify_involution,
    "compare": _simplify_compare,
    "select": _simplify_select,
    "convert": _simplify_convert,
    "reduce": simplify_reduce,
    "dot": simplify_dot,
    **SHAPE_REWRITES,
    "transpose": lambda comp, instr: (SHAPE_REWRITES["transpose"](comp, instr)
                                      or simplify_transpose_of_dot(comp, instr)),
}

__all__ = ["AlgebraicSimplifier", "REWRITES", "value_preserving"]
