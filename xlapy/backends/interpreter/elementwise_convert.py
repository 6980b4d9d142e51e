"""Interpreter handlers: convert, bitcast-convert, reduce-precision, stochastic-convert.

``convert`` follows XLA's value conversion rules:

- float -> integer truncates toward zero and saturates to the integer range;
  NaN converts to 0;
- integer -> float rounds to nearest even; for ml_dtypes targets (bf16, f8, f4)
  the value goes through f32 first, as XLA's CPU backend does;
- float -> float rounds to nearest even; f64 -> f16/bf16 go through f32 (two
  roundings) while f64 -> f8/f4 rounds once, as XLA's CPU backend does;
- anything -> pred is ``x != 0`` (NaN is true); pred -> number is 0 or 1;
- complex -> real type takes the real part; real -> complex has zero imaginary part;
- integer -> integer sign- or zero-extends (by the source signedness) and wraps.

``bitcast-convert`` reinterprets bits in little-endian order (x86): converting
to a narrower type appends a minor dimension of size ``ratio`` holding the
pieces least significant first; converting to a wider type consumes the minor
dimension, which must have size ``ratio``.

``reduce-precision`` is XLA's bit manipulation on the operand's own format:
round the mantissa to nearest even, flush values under the reduced exponent
range to signed zero (denormals included), turn values over it into signed
infinity, keep NaN bit for bit (also when ``mantissa_bits == 0``, as XLA:CPU does).

``stochastic-convert`` is defined by XLA only from a float type to a signed
integer type (StochasticConvertDecomposer): the magnitude is rounded up when
the unsigned random operand is less than the fractional part scaled by
``2**random_bits``, then the sign is restored and out-of-range inputs saturate.
"""
from __future__ import annotations

import numpy as np

from ...errors import InvalidArgumentError, UnimplementedError
from ...hlo import types as T
from ...hlo.ir import HloInstruction
from ...hlo.types import ElementType
from .evaluator import Evaluator, describe, handler
from .numeric import (as_array, bit_pattern, convert_float, element_type_of, float_compute,
                      from_bit_pattern, int_max, int_min, real_type, widen_int, wrap_int)


# ----------------------------------------------------------------------------------------------
# convert

def _float_to_int(v: np.ndarray, to: ElementType) -> np.ndarray:
    """Saturating truncation toward zero; NaN -> 0 (``v`` is f32 or f64)."""
    lo, hi = int_min(to), int_max(to)
    w = np.asarray(v, np.float64) if v.dtype == np.float32 else np.asarray(v)
    over = w >= float(hi)
    under = w <= float(lo)
    nan = np.isnan(w)
    inside = np.where(over | under | nan, 0.0, np.trunc(w))
    wide = np.uint64 if to is T.U64 else np.int64
    r = inside.astype(wide)
    r = np.where(over, np.array(hi, wide), np.where(under, np.array(lo, wide), r))
    return wrap_int(r, to)


def _int_to_float(x: np.ndarray, frm: ElementType, to: ElementType) -> np.ndarray:
    wide = widen_int(x, frm)
    if to in (T.F16, T.F32, T.F64):
        return as_array(wide, to)                  # one correctly rounded step
    return as_array(wide.astype(np.float32), to)   # XLA: int -> f32 -> narrow float


def convert_value(x: np.ndarray, frm: ElementType, to: ElementType) -> np.ndarray:
    """Convert an array of ``frm`` elements to ``to`` with XLA's rules (module docstring)."""
    x = np.asarray(x)
    if frm == to:
        return np.array(x, copy=True)
    if to.is_pred:
        if frm.is_complex:
            return np.asarray(np.real(x) != 0)
        return np.asarray(float_compute(x, frm) != 0 if frm.is_floating else x != 0)
    if frm.is_pred:
        return convert_value(x.astype(np.uint8), T.U8, to)
    if frm.is_complex:
        if to.is_complex:
            return as_array(x, to)
        return convert_value(np.real(x), real_type(frm), to)
    if to.is_complex:
        part = convert_value(x, frm, real_type(to))
        return as_array(part, to)
    if frm.is_integral:
        if to.is_integral:
            return wrap_int(widen_int(x, frm), to)
        return _int_to_float(x, frm, to)
    v = float_compute(x, frm)
    if to.is_integral:
        return _float_to_int(v, to)
    return convert_float(v, to)


@handler("convert")
def _convert(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    (x,) = operands
    with np.errstate(all="ignore"):
        return convert_value(x, element_type_of(x), instr.shape.element_type)


# ----------------------------------------------------------------------------------------------
# bitcast-convert

def bitcast_value(x: np.ndarray, frm: ElementType, to: ElementType) -> np.ndarray:
    """Reinterpret the bits of ``x`` as ``to`` (little-endian; width changes add/drop a dim)."""
    x = np.asarray(x, order="C")
    if frm.bits == to.bits:
        if frm.bits % 8 == 0 and not frm.is_pred and not to.is_pred:
            return x.reshape(-1).view(to.dtype).reshape(x.shape).copy()
        return from_bit_pattern(bit_pattern(x, frm), to)
    if frm.bits > to.bits:
        ratio = frm.bits // to.bits
        if frm.bits % 8 == 0 and to.bits % 8 == 0 and not to.is_pred:
            pieces = x.reshape(-1).view(np.uint8).reshape(x.shape + (ratio, to.byte_size))
            return np.asarray(pieces, order="C").view(to.dtype).reshape(x.shape + (ratio,)).copy()
        u = bit_pattern(x, frm)[..., None]
        shifts = np.arange(ratio, dtype=np.uint64) * np.uint64(to.bits)
        return from_bit_pattern(u >> shifts, to)
    ratio = to.bits // frm.bits
    if x.ndim == 0 or x.shape[-1] != ratio:
        raise InvalidArgumentError(
            f"bitcast-convert from {frm} to {to} needs a minor dimension of size {ratio}, "
            f"operand has dims {list(x.shape)}")
    if frm.bits % 8 == 0 and to.bits % 8 == 0 and not frm.is_pred:
        return x.view(np.uint8).reshape(x.shape[:-1] + (to.byte_size,)).view(
            to.dtype).reshape(x.shape[:-1]).copy()
    u = bit_pattern(x, frm)
    shifts = np.arange(ratio, dtype=np.uint64) * np.uint64(frm.bits)
    return from_bit_pattern(np.bitwise_or.reduce(u << shifts, axis=-1), to)


@handler("bitcast-convert")
def _bitcast_convert(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    (x,) = operands
    frm, to = element_type_of(x), instr.shape.element_type
    if frm.bits > to.bits and frm.bits % to.bits or to.bits > frm.bits and to.bits % frm.bits:
        raise InvalidArgumentError(f"bitcast-convert between {frm} and {to}: bit widths "
                                   f"{frm.bits} and {to.bits} are not multiples: "
                                   f"{describe(instr)}")
    try:
        return bitcast_value(x, frm, to)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{e}: {describe(instr)}") from None


# ----------------------------------------------------------------------------------------------
# reduce-precision

_NATIVE_LAYOUT = {T.F16: (5, 10), T.BF16: (8, 7), T.F32: (8, 23), T.F64: (11, 52)}


def reduce_precision_bits(u: np.ndarray, nbits: int, src_exp: int, src_mant: int,
                          exp_bits: int, mant_bits: int) -> np.ndarray:
    """XLA's ReducePrecision on raw IEEE bit patterns (uint64 holding ``nbits``-bit values)."""
    mask_all = np.uint64((1 << nbits) - 1)
    sign_mask = np.uint64(1 << (nbits - 1))
    exp_mask = np.uint64(((1 << src_exp) - 1) << src_mant)
    is_nan = (u & ~sign_mask & mask_all) > exp_mask
    x = u.copy()
    if mant_bits < src_mant:
        shift = src_mant - mant_bits
        last_bit = np.uint64(1 << shift)
        bias = ((x & last_bit) >> np.uint64(shift)) + np.uint64((1 << (shift - 1)) - 1)
        x = ((x + bias) & ~(last_bit - np.uint64(1))) & mask_all
    if exp_bits < src_exp:
        src_bias = (1 << (src_exp - 1)) - 1
        red_bias = (1 << (exp_bits - 1)) - 1
        max_exp = np.uint64((src_bias + red_bias) << src_mant)
        min_exp = np.uint64((src_bias - red_bias) << src_mant)
        exponent = x & exp_mask
        signed_zero = x & sign_mask
        x = np.where(exponent > max_exp, signed_zero | exp_mask, x)
        x = np.where(exponent <= min_exp, signed_zero, x)
    return np.where(is_nan, u, x)                 # NaN bits pass through unchanged


@handler("reduce-precision")
def _reduce_precision(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    (x,) = operands
    et = element_type_of(x)
    exp_bits = int(instr.attrs.get("exponent_bits", -1))
    mant_bits = int(instr.attrs.get("mantissa_bits", -1))
    if not et.is_floating:
        raise InvalidArgumentError(f"reduce-precision needs a float operand, got {et}: "
                                   f"{describe(instr)}")
    if exp_bits < 1 or mant_bits < 0:
        raise InvalidArgumentError(f"reduce-precision needs exponent_bits >= 1 and "
                                   f"mantissa_bits >= 0, got {exp_bits} and {mant_bits}: "
                                   f"{describe(instr)}")
    work = et if et in _NATIVE_LAYOUT else T.F32          # other formats: in f32
    src_exp, src_mant = _NATIVE_LAYOUT[work]
    with np.errstate(all="ignore"):
        v = as_array(x, work)
        u = bit_pattern(v, work)
        r = reduce_precision_bits(u, work.bits, src_exp, src_mant,
                                  min(exp_bits, src_exp), min(mant_bits, src_mant))
        return as_array(from_bit_pattern(r, work), et)


# ----------------------------------------------------------------------------------------------
# stochastic-convert

@handler("stochastic-convert")
def _stochastic_convert(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    x, random = operands
    frm, rnd, to = element_type_of(x), element_type_of(random), instr.shape.element_type
    if not frm.is_floating or not rnd.is_unsigned_integral or rnd.bits != frm.bits:
        raise InvalidArgumentError(
            f"stochastic-convert needs a float operand and unsigned random bits of the same "
            f"width, got {frm} and {rnd}: {describe(instr)}")
    if not to.is_signed_integral:
        raise UnimplementedError(
            f"stochastic-convert from {frm} to {to}: XLA defines it only for signed integer "
            f"results: {describe(instr)}")
    with np.errstate(all="ignore"):
        v = float_compute(x, frm)
        magnitude = np.abs(v)
        whole = np.floor(magnitude)
        fraction = (magnitude - whole) * v.dtype.type(2.0 ** rnd.bits)
        scaled = _float_to_int(fraction, rnd)
        round_up = bit_pattern(random, rnd) < bit_pattern(scaled, rnd)
        t = widen_int(_float_to_int(whole, to), to) + round_up
        result = np.where(v < 0, -t, t)
        result = np.where(v <= int_min(to), int_min(to), result)
        result = np.where(v >= int_max(to), int_max(to), result)
        return wrap_int(result, to)
