"""Interpreter handlers: elementwise unary, binary, compare, select and clamp.

Conversions (``convert``, ``bitcast-convert``, ``reduce-precision``,
``stochastic-convert``) live in :mod:`.elementwise_convert`, imported at the
bottom so their handlers register too.

Every handler works on operands of any shape and looks only at element types,
so scalar computations (reducers, comparators) run vectorized over arrays. The
semantics are XLA's (CPU backend and HloEvaluator):

- integers wrap modulo 2**bits; ``divide`` gives ``-1`` (signed) or the max
  value (unsigned) for ``x/0`` and ``INT_MIN`` for ``INT_MIN/-1``, truncating
  toward zero; ``remainder`` gives ``x`` for ``x%0`` and ``0`` for
  ``INT_MIN%-1``, with the sign of the dividend;
- ``power`` on integers squares over the exponent's low 6 bits only (so
  ``3**64 == 1``); an exponent with its top bit set (negative, also for unsigned
  types of 8 bits or more) gives ``1`` for base 1, ``+-1`` by parity for base -1
  and ``0`` otherwise; ``0**0 == 1``;
- shifts read the shift amount as unsigned; an amount >= the bit width gives 0
  (``shift-left``, ``shift-right-logical``) or the sign fill
  (``shift-right-arithmetic``);
- float types narrower than f32 are computed in f32 and rounded back (the f8
  and f4 types through f16, rounding twice, as XLA:CPU's float normalization);
- complex ``abs``, ``sign``, ``sqrt``, ``exponential``, ``log``, ``divide`` and the
  other complex functions follow XLA:CPU at inf, NaN and -0, not NumPy's C99
  functions (rules in :mod:`.elementwise_complex`);
- float ``maximum``/``minimum`` propagate NaN (the first NaN operand is
  returned) and order ``-0 < +0`` (IEEE 754-2019 ``maximum``/``minimum``); pred
  ``maximum`` is ``or`` and ``minimum`` is ``and``;
- ``compare`` honours ``type=``: FLOAT (IEEE: NaN is unordered), TOTALORDER
  (``-NaN < -inf < ... < -0 < +0 < ... < inf < +NaN`` by bit pattern),
  SIGNED / UNSIGNED (the bits read as that signedness); complex supports only
  EQ/NE;
- ``clamp(lo, x, hi) = minimum(maximum(x, lo), hi)`` with the float rules above.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...errors import InvalidArgumentError
from ...hlo import types as T
from ...hlo.ir import HloInstruction
from ...hlo.opcodes import BINARY, UNARY, accepts
from ...hlo.shape_inference.elementwise import COMPARISON_KINDS, default_comparison_type
from ...hlo.types import ElementType
from .elementwise_complex import (COMPLEX_UNARY, complex_abs, complex_atan2, complex_divide,
                                  complex_sign, make_complex)
from .evaluator import Evaluator, describe, handler
from .numeric import (as_array, bit_length, bit_pattern, element_type_of, float_compute,
                      real_type, round_float, widen_int, wrap_int)


def _type_error(instr: HloInstruction, et: ElementType, what: str = "") -> InvalidArgumentError:
    detail = f" ({what})" if what else ""
    return InvalidArgumentError(
        f"{instr.opcode} is not defined for element type {et}{detail}: {describe(instr)}")


def _check_kind(instr: HloInstruction, et: ElementType) -> None:
    """Reject the element kinds the op table says ``instr``'s opcode does not accept (an
    unverified module can reach a handler with them)."""
    if not accepts(instr.opcode, et.kind):
        raise _type_error(instr, et)


# ----------------------------------------------------------------------------------------------
# unary

def _round_afz(x: np.ndarray) -> np.ndarray:
    """Round half away from zero, keeping the sign of zero (round(-0.3) == -0.0)."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1.0, x).astype(x.dtype), t)


def _float_sign(x: np.ndarray) -> np.ndarray:
    """-1/+1 for nonzero x; +-0 and NaN are returned unchanged."""
    one = np.ones((), x.dtype)
    return np.where(x > 0, one, np.where(x < 0, -one, x))


def _erf(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf   # imported on first use: scipy.special is slow to load
    return erf(x)


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


# Unary ops computed on float (and, where NumPy defines them, complex) values.
_FLOAT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "ceil": np.ceil, "floor": np.floor, "round-nearest-even": np.rint,
    "round-nearest-afz": _round_afz, "cbrt": np.cbrt, "cosine": np.cos, "sine": np.sin,
    "tan": np.tan, "tanh": np.tanh, "exponential": np.exp, "exponential-minus-one": np.expm1,
    "log": np.log, "log-plus-one": np.log1p, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "logistic": _logistic, "erf": _erf,
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
    "atan": np.arctan, "atanh": np.arctanh, "cosh": np.cosh, "sinh": np.sinh,
    "negate": np.negative,
}


def _unary_float(instr: HloInstruction, x: np.ndarray, et: ElementType) -> np.ndarray:
    op = instr.opcode
    v = float_compute(x, et)
    if op == "abs":
        return round_float(complex_abs(v) if et.is_complex else np.abs(v), real_type(et))
    if op == "sign":
        return round_float(complex_sign(v) if et.is_complex else _float_sign(v), et)
    if op == "is-finite":
        return np.asarray(np.isfinite(v))
    if op == "real":
        return round_float(np.real(v), real_type(et))
    if op == "imag":
        return round_float(np.imag(v) if et.is_complex else np.zeros_like(v), real_type(et))
    fn = (COMPLEX_UNARY.get(op) if et.is_complex else None) or _FLOAT_UNARY.get(op)
    if fn is None:          # an op the table accepts for this kind but not computed here
        raise _type_error(instr, et)
    return round_float(fn(v), et)


def _unary_int(instr: HloInstruction, x: np.ndarray, et: ElementType) -> np.ndarray:
    op = instr.opcode
    v = widen_int(x, et)
    if op == "negate":
        return wrap_int(-v, et)
    if op == "abs":
        return wrap_int(np.abs(v), et) if et.is_signed_integral else np.array(x)
    if op == "sign":
        return wrap_int(np.sign(v), et)
    if op == "not":
        return wrap_int(~v, et)
    if op == "popcnt":
        return wrap_int(np.bitwise_count(bit_pattern(x, et)).astype(np.int64), et)
    if op == "count-leading-zeros":
        return wrap_int(et.bits - bit_length(bit_pattern(x, et)), et)
    raise _type_error(instr, et)


@handler(*UNARY)
def _unary(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    (x,) = operands
    et = element_type_of(x)
    _check_kind(instr, et)
    with np.errstate(all="ignore"):
        if et.is_pred:          # the table accepts only "not"
            return np.logical_not(x)
        if et.is_integral:
            return _unary_int(instr, x, et)
        return _unary_float(instr, x, et)


def _deep_copy(value):
    if isinstance(value, tuple):
        return tuple(_deep_copy(v) for v in value)
    return np.array(value, copy=True)


@handler("copy")
def _copy(ev: Evaluator, instr: HloInstruction, operands: list):
    """A new buffer with the operand's value (tuples are copied leaf by leaf)."""
    return _deep_copy(operands[0])


# ----------------------------------------------------------------------------------------------
# binary: integers

def _int_divide(a: np.ndarray, b: np.ndarray, et: ElementType) -> np.ndarray:
    """Truncating division with XLA's results for x/0 and INT_MIN/-1."""
    x, y = widen_int(a, et), widen_int(b, et)
    zero = y == 0
    if et.is_signed_integral:
        minus_one = y == -1
        safe = np.where(zero | minus_one, 1, y)
        q = x // safe
        q = q + ((q * safe != x) & ((x < 0) != (safe < 0)))       # floor -> toward zero
        q = np.where(minus_one, -x, q)                            # wraps INT_MIN to INT_MIN
        return wrap_int(np.where(zero, -1, q), et)
    safe = np.where(zero, np.array(1, x.dtype), y)
    q = x // safe
    return wrap_int(np.where(zero, np.array((1 << et.bits) - 1, x.dtype), q), et)


def _int_remainder(a: np.ndarray, b: np.ndarray, et: ElementType) -> np.ndarray:
    """Remainder with the dividend's sign; x%0 == x and INT_MIN%-1 == 0."""
    x, y = widen_int(a, et), widen_int(b, et)
    zero = y == 0
    unsafe = zero | (y == -1) if et.is_signed_integral else zero
    safe = np.where(unsafe, np.array(1, x.dtype), y)
    r = np.fmod(x, safe)          # x % 1 == 0 == x % -1
    return wrap_int(np.where(zero, x, r), et)


def _int_power(a: np.ndarray, b: np.ndarray, et: ElementType) -> np.ndarray:
    """XLA's integer power: squaring over the exponent's low 6 bits, wrapping.

    Types narrower than 8 bits are computed at 8 bits (s4 sign-extended, u4 zero-
    extended), as XLA:CPU does. An exponent whose top bit is set at that width
    (negative, also for u8..u64) gives 1 for base 1, +-1 by the exponent's parity for
    base -1 (all ones) and 0 for any other base. So 3**64 == 1 and 0**64 == 1.
    """
    width = max(et.bits, 8)
    mask = np.uint64((1 << width) - 1)
    base = widen_int(a, et).astype(np.uint64) & mask       # the bits at the compute width
    exp = widen_int(b, et).astype(np.uint64) & mask
    negative = (exp >> np.uint64(width - 1)) != 0
    acc = np.ones(np.broadcast(base, exp).shape, np.uint64)
    square = np.broadcast_to(base, acc.shape).copy()
    e = np.broadcast_to(exp, acc.shape).copy()
    one = np.uint64(1)
    for _ in range(6):
        acc = np.where((e & one) != 0, acc * square, acc)     # uint64 products wrap mod 2**64
        square = square * square
        e = e >> one
    odd = (exp & one) != 0
    minus_one = np.where(odd, mask, one)
    special = np.where(base == one, one, np.where(base == mask, minus_one, np.uint64(0)))
    return wrap_int(np.where(negative, special, acc), et)


def _mulhi(a: np.ndarray, b: np.ndarray, et: ElementType) -> np.ndarray:
    """The high ``bits`` bits of the double-width product."""
    if et.bits < 64:
        prod = widen_int(a, et) * widen_int(b, et)      # exact: |prod| < 2**63
        return wrap_int(prod >> np.int64(et.bits), et)
    ua = np.asarray(a).astype(np.uint64)
    ub = np.asarray(b).astype(np.uint64)
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a_lo, a_hi, b_lo, b_hi = ua & m32, ua >> s32, ub & m32, ub >> s32
    lo_lo = a_lo * b_lo
    mid1 = a_hi * b_lo + (lo_lo >> s32)
    mid2 = a_lo * b_hi + (mid1 & m32)
    hi = a_hi * b_hi + (mid1 >> s32) + (mid2 >> s32)
    if et.is_signed_integral:      # signed correction of the unsigned high word
        hi = hi - np.where(np.asarray(a) < 0, ub, np.uint64(0))
        hi = hi - np.where(np.asarray(b) < 0, ua, np.uint64(0))
    return as_array(hi, et)


def _shift(op: str, a: np.ndarray, b: np.ndarray, et: ElementType) -> np.ndarray:
    """XLA shifts: the amount is unsigned; amounts >= bits saturate."""
    bits = et.bits
    u = bit_pattern(a, et)
    amount = bit_pattern(b, et)
    too_big = amount >= np.uint64(bits)
    amt = np.where(too_big, np.uint64(0), amount)
    if op == "shift-left":
        r = np.where(too_big, np.uint64(0), u << amt)
    elif op == "shift-right-logical":
        r = np.where(too_big, np.uint64(0), u >> amt)
    else:
        s = u.astype(np.int64)
        if bits < 64:
            s = np.where(s >= (1 << (bits - 1)), s - (1 << bits), s)
        r = np.where(too_big, np.where(s < 0, -1, 0), s >> amt.astype(np.int64))
    return wrap_int(np.asarray(r), et)


def _binary_int(instr: HloInstruction, a: np.ndarray, b: np.ndarray,
                et: ElementType) -> np.ndarray:
    op = instr.opcode
    if op == "divide":
        return _int_divide(a, b, et)
    if op == "remainder":
        return _int_remainder(a, b, et)
    if op == "power":
        return _int_power(a, b, et)
    if op == "mulhi":
        return _mulhi(a, b, et)
    if op.startswith("shift-"):
        return _shift(op, a, b, et)
    x, y = widen_int(a, et), widen_int(b, et)
    fn = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
          "maximum": np.maximum, "minimum": np.minimum, "and": np.bitwise_and,
          "or": np.bitwise_or, "xor": np.bitwise_xor}.get(op)
    if fn is None:
        raise _type_error(instr, et)
    return wrap_int(fn(x, y), et)


# ----------------------------------------------------------------------------------------------
# binary: floats, complex, pred

def float_maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NaN-propagating maximum with -0 < +0 (both operands in the same float dtype)."""
    r = np.where(a > b, a, b)
    zeros = (a == 0) & (b == 0)
    r = np.where(zeros & np.signbit(b) & ~np.signbit(a), a, r)
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, r))


def float_minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NaN-propagating minimum with -0 < +0 (both operands in the same float dtype)."""
    r = np.where(a < b, a, b)
    zeros = (a == 0) & (b == 0)
    r = np.where(zeros & np.signbit(a) & ~np.signbit(b), a, r)
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, r))


def _float_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """pow computed in float64 and rounded once, so f32 and narrower get the correctly rounded
    power (NumPy's float32 pow is off by an ulp at times, e.g. 7**-1 and some squares)."""
    if a.dtype.itemsize >= 8:
        return np.power(a, b)
    return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


def _complex_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r = np.power(a, b)
    return np.where((a == 1) | (b == 0), np.ones((), r.dtype), r)


_FLOAT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "remainder": np.fmod, "power": _float_power, "atan2": np.arctan2,
    "maximum": float_maximum, "minimum": float_minimum,
}
_COMPLEX_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": complex_divide,
    "power": _complex_power, "atan2": complex_atan2,
}
_PRED_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    # XLA's pred arithmetic is int8(x) OP int8(y) != 0
    "add": np.logical_or, "maximum": np.logical_or, "or": np.logical_or,
    "multiply": np.logical_and, "minimum": np.logical_and, "and": np.logical_and,
    "xor": np.logical_xor,
}


@handler(*(op for op in BINARY if op != "complex"))
def _binary(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    a, b = operands
    et = element_type_of(a)
    _check_kind(instr, et)
    with np.errstate(all="ignore"):
        if et.is_pred:
            fn = _PRED_BINARY.get(instr.opcode)
        elif et.is_integral:
            return _binary_int(instr, a, b, et)
        elif et.is_complex:
            fn = _COMPLEX_BINARY.get(instr.opcode)
        else:
            fn = _FLOAT_BINARY.get(instr.opcode)
        if fn is None:
            raise _type_error(instr, et)
        if et.is_pred:
            return np.asarray(fn(a, b))
        return round_float(fn(float_compute(a, et), float_compute(b, et)), et)


@handler("complex")
def _complex(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    re, im = operands
    et = element_type_of(re)
    if et not in (T.F32, T.F64):
        raise _type_error(instr, et)
    return make_complex(re, im, instr.shape.element_type.dtype)


# ----------------------------------------------------------------------------------------------
# compare, select, clamp

def total_order_key(x: np.ndarray, et: ElementType) -> np.ndarray:
    """int64 keys whose order is XLA's float total order (-NaN < -inf < -0 < +0 < inf < NaN)."""
    u = bit_pattern(x, et).astype(np.int64)
    if not T.finfo(et).min < 0:          # no sign bit (f8e8m0fnu): plain unsigned order
        return u
    half = 1 << (et.bits - 1)
    # the sign-magnitude bits as an int
    signed = u if et.bits == 64 else np.where(u >= half, u - 2 * half, u)
    # Negative patterns: flip the magnitude bits, mapping sign+m to -m-1 (so -0 < +0).
    return np.where(signed < 0, signed ^ np.int64(half - 1), signed)


def _compare_keys(instr: HloInstruction, a: np.ndarray, b: np.ndarray, et: ElementType,
                  ctype: str) -> tuple[np.ndarray, np.ndarray]:
    """Operands mapped to values that NumPy comparison orders as ``ctype`` demands (a type
    that orders ``et``'s kind: ``COMPARISON_KINDS``)."""
    if ctype == "TOTALORDER" and et.is_floating:
        return total_order_key(a, et), total_order_key(b, et)
    if et.is_floating or et.is_complex:
        return float_compute(a, et), float_compute(b, et)
    if et.is_pred:
        return np.asarray(a, np.int64), np.asarray(b, np.int64)
    ua, ub = bit_pattern(a, et), bit_pattern(b, et)
    if ctype == "SIGNED" or (ctype == "TOTALORDER" and et.is_signed_integral):
        half = np.uint64(1 << (et.bits - 1))
        return (ua ^ half), (ub ^ half)          # flip the sign bit: signed order as unsigned
    return ua, ub


_DIRECTIONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal, "GT": np.greater,
    "LE": np.less_equal, "LT": np.less,
}


@handler("compare")
def _compare(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    a, b = operands
    et = element_type_of(a)
    direction = str(instr.attrs.get("direction", "")).upper()
    fn = _DIRECTIONS.get(direction)
    if fn is None:
        raise InvalidArgumentError(f"compare needs direction=EQ|NE|GE|GT|LE|LT, got "
                                   f"{direction!r}: {describe(instr)}")
    ctype = str(instr.attrs.get("type") or default_comparison_type(et)).upper()
    if et.kind not in COMPARISON_KINDS.get(ctype, ()):
        raise _type_error(instr, et, f"comparison type {ctype}")
    if et.is_complex and direction not in ("EQ", "NE"):
        raise _type_error(instr, et, f"direction {direction}")
    with np.errstate(all="ignore"):
        ka, kb = _compare_keys(instr, a, b, et, ctype)
        return np.asarray(fn(ka, kb))


@handler("select")
def _select(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    pred, on_true, on_false = operands
    return as_array(np.where(np.asarray(pred, bool), on_true, on_false),
                    element_type_of(on_true))


@handler("clamp")
def _clamp(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    lo, x, hi = operands
    et = element_type_of(x)
    _check_kind(instr, et)
    with np.errstate(all="ignore"):
        if et.is_integral:
            v, vlo, vhi = widen_int(x, et), widen_int(lo, et), widen_int(hi, et)
            return wrap_int(np.minimum(np.maximum(v, vlo), vhi), et)
        if et.is_floating:
            v, vlo, vhi = (float_compute(t, et) for t in (x, lo, hi))
            return round_float(float_minimum(float_maximum(v, vlo), vhi), et)
        if et.is_pred:
            return np.asarray(np.logical_and(np.logical_or(x, lo), hi))
    raise _type_error(instr, et)


from . import elementwise_convert  # noqa: E402,F401  (registers convert handlers)
