"""Elemental generators for conversions: convert, bitcast-convert, reduce-precision.

``convert`` follows XLA (and :mod:`..interpreter.elementwise_convert`):

- float -> integer truncates toward zero and saturates; NaN gives 0
  (``llvm.fptosi.sat`` / ``llvm.fptoui.sat``);
- integer -> f16/f32/f64 rounds to nearest even; integer -> bf16 goes through f32;
- f64 -> bf16 goes through f32 (two roundings, as XLA:CPU does), f64 -> f16 too except
  where XLA:CPU rounds it once (``interpreter.numeric.f64_to_f16_rounds_once``: CPUs with
  AVX512-FP16); f16/bf16 are widened exactly;
- anything -> pred is ``x != 0`` (NaN is true); pred -> number is 0 or 1;
- integer -> integer sign- or zero-extends by the source's signedness, then wraps;
- complex -> real type takes the real part, real -> complex has a zero imaginary part.

``bitcast-convert`` reinterprets bits (little-endian): to a narrower type the result
has an extra minor dimension holding the pieces, least significant first; to a wider
type the operand's minor dimension is consumed.

``reduce-precision`` rounds the mantissa to nearest even and clamps the exponent range
on the operand's own bits (signed zero below, signed infinity above); a NaN is returned
unchanged, also with ``mantissa_bits=0`` (what XLA:CPU does).
"""
from __future__ import annotations

from llvmlite import ir

from ...hlo import types as T
from ...hlo.ir import HloInstruction
from ...hlo.types import ElementType
from ..interpreter.numeric import f64_to_f16_rounds_once
from .elemental import ElementalEmitter, elemental, operand_type
from .elemental_complex import complex_value
from .fallbacks import falls_back
from .kernel_api import Generator, IrIndex
from .llvm_types import (F16, F32, F64, call_intrinsic, f32_to_bf16,
                         llvm_type, to_compute)


def _real_part_type(et: ElementType) -> ElementType:
    return T.F32 if et is T.C64 else T.F64


def _from_f32(b: ir.IRBuilder, v: ir.Value, to: ElementType) -> ir.Value:
    """A float value to a native float type (f16, bf16, f32, f64)."""
    if to is T.F64:
        return b.fpext(v, F64)
    if to is T.F16:
        return b.fptrunc(v, F16)
    if to is T.BF16:
        return f32_to_bf16(b, v)
    return v


def _float_to_float(b: ir.IRBuilder, v: ir.Value, frm: ElementType, to: ElementType) -> ir.Value:
    x = to_compute(b, v, frm)            # f32 or f64, exact
    if x.type == F64:
        if to is T.F64:
            return x
        if to is T.F16 and f64_to_f16_rounds_once():
            return b.fptrunc(x, F16)        # one instruction on these CPUs, as XLA:CPU
        return _from_f32(b, b.fptrunc(x, F32), to)
    return _from_f32(b, x, to)


def _int_to_float(b: ir.IRBuilder, v: ir.Value, signed: bool, to: ElementType) -> ir.Value:
    target = F64 if to is T.F64 else F32
    f = b.sitofp(v, target) if signed else b.uitofp(v, target)
    return f if to is T.F64 else _from_f32(b, f, to)


def _float_to_int(b: ir.IRBuilder, v: ir.Value, frm: ElementType, to: ElementType) -> ir.Value:
    x = to_compute(b, v, frm)
    name = "llvm.fptosi.sat" if to.is_signed_integral else "llvm.fptoui.sat"
    ty = llvm_type(to)
    return call_intrinsic(b, name, [x], ret=ty, overload=[ty, x.type])


def _int_to_int(b: ir.IRBuilder, v: ir.Value, signed: bool, to_ty: ir.IntType) -> ir.Value:
    width = v.type.width
    if to_ty.width > width:
        return b.sext(v, to_ty) if signed else b.zext(v, to_ty)
    if to_ty.width < width:
        return b.trunc(v, to_ty)
    return v


def convert_value(b: ir.IRBuilder, v: ir.Value, frm: ElementType, to: ElementType) -> ir.Value:
    """Convert a register value of ``frm`` to ``to`` with XLA's rules (module docstring)."""
    if frm == to:
        return v
    if frm.is_complex:
        part = _real_part_type(frm)
        if to.is_complex:
            to_part = _real_part_type(to)
            re = _float_to_float(b, b.extract_value(v, 0), part, to_part)
            im = _float_to_float(b, b.extract_value(v, 1), part, to_part)
            return complex_value(b, llvm_type(to), re, im)
        return convert_value(b, b.extract_value(v, 0), part, to)
    if to.is_complex:
        part = _real_part_type(to)
        re = convert_value(b, v, frm, part)
        return complex_value(b, llvm_type(to), re, ir.Constant(llvm_type(part), 0.0))
    if to.is_pred:
        if frm.is_integral:
            return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
        x = to_compute(b, v, frm)
        return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
    if frm.is_pred:
        if to.is_integral:
            return b.zext(v, llvm_type(to)) if to.bits > 1 else v
        return _int_to_float(b, v, False, to)
    if frm.is_integral:
        if to.is_integral:
            return _int_to_int(b, v, frm.is_signed_integral, llvm_type(to))
        return _int_to_float(b, v, frm.is_signed_integral, to)
    if to.is_integral:
        return _float_to_int(b, v, frm, to)
    return _float_to_float(b, v, frm, to)


def _supports_convert(instr: HloInstruction) -> bool:
    return not (falls_back("convert", operand_type(instr))
                or falls_back("convert", instr.shape.element_type))


@elemental("convert", supports=_supports_convert)
def _convert(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    frm, to = operand_type(instr), instr.shape.element_type
    (gen,) = gens
    return lambda index: convert_value(em.builder, gen(index), frm, to)


# ----------------------------------------------------------------------------------------------
# bitcast-convert

def _bits_type(et: ElementType) -> ir.IntType:
    return ir.IntType(et.bits)


def to_bits(b: ir.IRBuilder, v: ir.Value, et: ElementType) -> ir.Value:
    """The raw bits of a register value as ``i<bits>`` (pred: 0 or 1 in ``i8``)."""
    if et.is_pred:
        return b.zext(v, ir.IntType(8))
    if isinstance(v.type, ir.IntType):
        return v
    return b.bitcast(v, _bits_type(et))


def from_bits(b: ir.IRBuilder, bits: ir.Value, et: ElementType) -> ir.Value:
    """Inverse of :func:`to_bits` (pred: any non-zero byte is true)."""
    if et.is_pred:
        return b.icmp_unsigned("!=", bits, ir.Constant(bits.type, 0))
    ty = llvm_type(et)
    if isinstance(ty, ir.IntType):
        return bits
    return b.bitcast(bits, ty)


def _supports_bitcast_convert(instr: HloInstruction) -> bool:
    frm, to = operand_type(instr), instr.shape.element_type
    if falls_back("bitcast-convert", frm) or falls_back("bitcast-convert", to):
        return False
    big, small = max(frm.bits, to.bits), min(frm.bits, to.bits)
    return big % small == 0


@elemental("bitcast-convert", supports=_supports_bitcast_convert)
def _bitcast_convert(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    b = em.builder
    frm, to = operand_type(instr), instr.shape.element_type
    (gen,) = gens
    if frm.bits == to.bits:
        return lambda index: from_bits(b, to_bits(b, gen(index), frm), to)
    if frm.bits > to.bits:
        wide = _bits_type(frm)

        def narrower(index: IrIndex) -> ir.Value:
            bits = to_bits(b, gen(index[:-1]), frm)
            shift = b.mul(index[-1], em.i64(to.bits))
            piece = b.lshr(bits, _resize(b, shift, wide))
            return from_bits(b, b.trunc(piece, _bits_type(to)), to)
        return narrower
    ratio = to.bits // frm.bits
    wide = _bits_type(to)

    def wider(index: IrIndex) -> ir.Value:
        acc = ir.Constant(wide, 0)
        for k in range(ratio):
            piece = b.zext(to_bits(b, gen(list(index) + [em.i64(k)]), frm), wide)
            acc = b.or_(acc, b.shl(piece, ir.Constant(wide, k * frm.bits)))
        return from_bits(b, acc, to)
    return wider


def _resize(b: ir.IRBuilder, v: ir.Value, ty: ir.IntType) -> ir.Value:
    if ty.width > v.type.width:
        return b.zext(v, ty)
    if ty.width < v.type.width:
        return b.trunc(v, ty)
    return v


# ----------------------------------------------------------------------------------------------
# reduce-precision

_NATIVE_LAYOUT = {T.F16: (5, 10), T.BF16: (8, 7), T.F32: (8, 23), T.F64: (11, 52)}


def _supports_reduce_precision(instr: HloInstruction) -> bool:
    return (operand_type(instr) in _NATIVE_LAYOUT
            and int(instr.attrs.get("exponent_bits", -1)) >= 1
            and int(instr.attrs.get("mantissa_bits", -1)) >= 0)


def reduce_precision_bits(b: ir.IRBuilder, x: ir.Value, nbits: int, src_exp: int,
                          src_mant: int, exp_bits: int, mant_bits: int) -> ir.Value:
    """XLA's ReducePrecision on the raw bits ``x`` (``i<nbits>``) of an IEEE value."""
    ty = x.type

    def c(v: int) -> ir.Constant:
        return ir.Constant(ty, v & ((1 << nbits) - 1))

    sign_mask = c(1 << (nbits - 1))
    exp_mask = c(((1 << src_exp) - 1) << src_mant)
    magnitude = b.and_(x, c((1 << (nbits - 1)) - 1))
    is_nan = b.icmp_unsigned(">", magnitude, exp_mask)
    y = x
    if mant_bits < src_mant:
        shift = src_mant - mant_bits
        last_bit = c(1 << shift)
        bias = b.add(b.lshr(b.and_(y, last_bit), c(shift)), c((1 << (shift - 1)) - 1))
        y = b.and_(b.add(y, bias), c(~((1 << shift) - 1)))
    if exp_bits < src_exp:
        src_bias = (1 << (src_exp - 1)) - 1
        red_bias = (1 << (exp_bits - 1)) - 1
        max_exp = c((src_bias + red_bias) << src_mant)
        min_exp = c((src_bias - red_bias) << src_mant)
        exponent = b.and_(y, exp_mask)
        signed_zero = b.and_(y, sign_mask)
        y = b.select(b.icmp_unsigned(">", exponent, max_exp), b.or_(signed_zero, exp_mask), y)
        y = b.select(b.icmp_unsigned("<=", exponent, min_exp), signed_zero, y)
    return b.select(is_nan, x, y)


@elemental("reduce-precision", supports=_supports_reduce_precision)
def _reduce_precision(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    b, et = em.builder, operand_type(instr)
    src_exp, src_mant = _NATIVE_LAYOUT[et]
    exp_bits = min(int(instr.attrs["exponent_bits"]), src_exp)
    mant_bits = min(int(instr.attrs["mantissa_bits"]), src_mant)
    (gen,) = gens

    def element(index: IrIndex) -> ir.Value:
        bits = to_bits(b, gen(index), et)
        r = reduce_precision_bits(b, bits, et.bits, src_exp, src_mant, exp_bits, mant_bits)
        return from_bits(b, r, et)
    return element


__all__ = ["convert_value", "to_bits", "from_bits", "reduce_precision_bits"]
