"""Shape rules of elementwise ops: unary, binary, compare, select, clamp, conversions, copy.

HLO has no implicit broadcasting: binary operands must have the same dims and element
type (``compare``'s result is ``pred``). ``select`` takes a scalar or same-dims predicate,
``clamp`` scalar or same-dims bounds. The element kinds each op accepts are the op
table's (``OpInfo.kinds``); ``compare``'s ``type=`` must order the operands' kind
(``COMPARISON_KINDS``), and complex operands compare only for EQ and NE.
"""
from __future__ import annotations

from .. import types as T
from ..opcodes import BINARY, NUMERIC, OPCODES, UNARY, accepts
from ..shape import Shape
from ..types import ElementType
from . import Ctx, complex_component, rule, shape_text

COMPARISON_DIRECTIONS = ("EQ", "NE", "GE", "GT", "LE", "LT")
# XLA's comparison types and the element kinds each one orders.
COMPARISON_KINDS: dict[str, frozenset[str]] = {
    "FLOAT": frozenset({"f", "c"}), "TOTALORDER": frozenset({"f", "s", "u", "pred"}),
    "SIGNED": frozenset({"s", "u", "pred"}), "UNSIGNED": frozenset({"s", "u", "pred"})}
COMPARISON_TYPES = tuple(COMPARISON_KINDS)


def default_comparison_type(et: ElementType) -> str:
    """The ``type=`` a compare of ``et`` operands has when the text gives none."""
    if et.is_floating or et.is_complex:
        return "FLOAT"
    return "SIGNED" if et.is_signed_integral else "UNSIGNED"


def like(s: Shape, et: ElementType | None = None) -> Shape:
    """``s`` without layout, optionally with a new element type."""
    return Shape(et or s.element_type, s.dims, s.dynamic, None)


def kinds_text(kinds: frozenset[str]) -> str:
    """``kinds`` (``ElementType.kind`` letters) in words: "a floating-point or complex"."""
    if kinds == NUMERIC:
        return "a numeric (integral, floating-point or complex)"
    words = []
    if {"s", "u"} <= kinds:
        words.append("integral")
    else:
        words += [w for k, w in (("s", "signed integral"), ("u", "unsigned integral"))
                  if k in kinds]
    words += [w for k, w in (("f", "floating-point"), ("c", "complex"), ("pred", "pred"))
              if k in kinds]
    text = words[-1] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
    return ("an " if text[0] in "aeiou" else "a ") + text


def _check_element_kind(ctx: Ctx, s: Shape) -> None:
    """The op table's accepted kinds for the deciding operand ``s`` (``OpInfo.kinds``)."""
    et = s.element_type
    info = OPCODES[ctx.opcode]
    ctx.check(accepts(ctx.opcode, et.kind),
              f"operand {shape_text(s)} must have {kinds_text(info.kinds)} element type, "
              f"not {et.name}")
    if ctx.opcode == "complex":
        ctx.check(et in (T.F32, T.F64), f"operand {shape_text(s)} must have an f32 or f64 "
                                        f"element type, not {et.name}")


@rule(*UNARY)
def unary(ctx: Ctx) -> Shape:
    """Same shape; ``is-finite`` gives pred, ``abs``/``real``/``imag`` of complex the part type."""
    ctx.arity(1)
    s = ctx.array(0)
    _check_element_kind(ctx, s)
    et = s.element_type
    if ctx.opcode == "is-finite":
        return like(s, T.PRED)
    if ctx.opcode in ("real", "imag"):
        return like(s, complex_component(et) if et.is_complex else et)
    if ctx.opcode == "abs" and et.is_complex:
        return like(s, complex_component(et))
    return like(s)


@rule("copy")
def copy(ctx: Ctx) -> Shape:
    """Copy keeps the operand's shape (layouts may differ)."""
    ctx.arity(1)
    s = ctx.operands[0]
    return s.without_layout()


def _same_dims_and_type(ctx: Ctx, a: Shape, b: Shape) -> None:
    ctx.check(a.dims == b.dims, f"operands {shape_text(a)} and {shape_text(b)} must have the same "
                                "dimensions (implicit broadcast is not allowed in HLO)")
    ctx.check(a.element_type == b.element_type,
              f"operands {shape_text(a)} and {shape_text(b)} must have the same element type")


@rule(*BINARY)
def binary(ctx: Ctx) -> Shape:
    """Same dims and element type; ``complex`` builds c64/c128 from f32/f64 parts."""
    ctx.arity(2)
    a, b = ctx.array(0), ctx.array(1)
    _same_dims_and_type(ctx, a, b)
    _check_element_kind(ctx, a)
    if ctx.opcode == "complex":
        return like(a, T.C128 if a.element_type is T.F64 else T.C64)
    return like(a)


@rule("compare")
def compare(ctx: Ctx) -> Shape:
    """Same dims and element type; result is pred."""
    ctx.arity(2)
    a, b = ctx.array(0), ctx.array(1)
    _same_dims_and_type(ctx, a, b)
    direction = str(ctx.required("direction"))
    ctx.check(direction in COMPARISON_DIRECTIONS,
              f"direction={direction} is not one of {', '.join(COMPARISON_DIRECTIONS)}")
    et = a.element_type
    ctype = str(ctx.attrs.get("type") or default_comparison_type(et))
    ctx.check(ctype in COMPARISON_TYPES,
              f"type={ctype} is not one of {', '.join(COMPARISON_TYPES)}")
    ctx.check(et.kind in COMPARISON_KINDS[ctype],
              f"type={ctype} cannot compare {shape_text(a)}: it orders "
              f"{kinds_text(COMPARISON_KINDS[ctype])[2:].lstrip()} values")
    ctx.check(not et.is_complex or direction in ("EQ", "NE"),
              f"direction={direction} is not defined for complex {shape_text(a)} "
              "(only EQ and NE are)")
    return like(a, T.PRED)


@rule("select")
def select(ctx: Ctx) -> Shape:
    """``select(pred, on_true, on_false)``: pred is a scalar or has the branches' dims."""
    ctx.arity(3)
    p, t, f = ctx.array(0), ctx.array(1), ctx.array(2)
    ctx.check(p.element_type is T.PRED,
              f"predicate {shape_text(p)} must have element type pred")
    _same_dims_and_type(ctx, t, f)
    ctx.check(p.is_scalar or p.dims == t.dims,
              f"predicate {shape_text(p)} must be a scalar or have the dimensions of "
              f"{shape_text(t)}")
    return like(t)


@rule("clamp")
def clamp(ctx: Ctx) -> Shape:
    """``clamp(min, operand, max)``: bounds are scalars or have the operand's dims."""
    ctx.arity(3)
    lo, x, hi = ctx.array(0), ctx.array(1), ctx.array(2)
    _check_element_kind(ctx, x)
    for name, bound in (("min", lo), ("max", hi)):
        ctx.check(bound.element_type == x.element_type,
                  f"{name} {shape_text(bound)} must have the element type of operand "
                  f"{shape_text(x)}")
        ctx.check(bound.is_scalar or bound.dims == x.dims,
                  f"{name} {shape_text(bound)} must be a scalar or have the dimensions of operand "
                  f"{shape_text(x)}")
    return like(x)


@rule("convert")
def convert(ctx: Ctx) -> Shape:
    """Same dims, the declared element type; complex cannot be converted to real."""
    ctx.arity(1)
    s = ctx.array(0)
    out = ctx.need_declared("element type")
    ctx.check(out.is_array, f"result {shape_text(out)} must be an array")
    ctx.check(not (s.element_type.is_complex and not out.element_type.is_complex),
              f"cannot convert complex {shape_text(s)} to {out.element_type.name} "
              "(take real/imag first)")
    return like(s, out.element_type)


@rule("bitcast-convert")
def bitcast_convert(ctx: Ctx) -> Shape:
    """Reinterpret bits (complex only as complex): equal widths keep dims; a narrower result
    adds a last dim of ratio size, a wider one removes a last dim that must equal the ratio."""
    ctx.arity(1)
    s = ctx.array(0)
    out = ctx.need_declared("element type")
    et = out.element_type
    ctx.check(out.is_array, f"result {shape_text(out)} must be an array")
    ctx.check(s.element_type.is_complex == et.is_complex,
              f"cannot bitcast between complex and real types: {shape_text(s)} to {et.name}")
    in_bits, out_bits = s.element_type.bits, et.bits
    if in_bits == out_bits:
        return like(s, et)
    if in_bits > out_bits:
        ctx.check(in_bits % out_bits == 0,
                  f"cannot bitcast {s.element_type.name} to {et.name}: bit widths do not divide")
        return Shape.array(et, s.dims + (in_bits // out_bits,))
    ratio = out_bits // in_bits
    ctx.check(out_bits % in_bits == 0 and s.rank >= 1 and s.dims[-1] == ratio,
              f"bitcast of {shape_text(s)} to wider {et.name} needs a last dimension of size "
              f"{ratio}")
    return Shape.array(et, s.dims[:-1])


@rule("reduce-precision")
def reduce_precision(ctx: Ctx) -> Shape:
    """Same shape; floating-point operand, exponent_bits >= 1, mantissa_bits >= 0."""
    ctx.arity(1)
    s = ctx.array(0)
    _check_element_kind(ctx, s)
    e, m = int(ctx.required("exponent_bits")), int(ctx.required("mantissa_bits"))
    ctx.check(e >= 1, f"exponent_bits={e} must be at least 1")
    ctx.check(m >= 0, f"mantissa_bits={m} must be non-negative")
    return like(s)


@rule("stochastic-convert")
def stochastic_convert(ctx: Ctx) -> Shape:
    """``stochastic-convert(x, random_bits)``: unsigned bits as wide as x, a declared signed
    integer type."""
    ctx.arity(2)
    x, bits = ctx.array(0), ctx.array(1)
    out = ctx.need_declared("element type")
    _check_element_kind(ctx, x)
    ctx.check(out.element_type.is_signed_integral,
              f"stochastic conversion of {shape_text(x)} to {out.element_type.name} is not "
              "implemented (XLA converts to signed integers only)")
    ctx.check(bits.element_type.is_unsigned_integral
              and bits.element_type.bits == x.element_type.bits,
              f"random bits {shape_text(bits)} must be unsigned with the operand's bit width")
    ctx.check(bits.dims == x.dims, f"operands {shape_text(x)} and {shape_text(bits)} must have "
                                   "the same dimensions")
    return like(x, out.element_type)
