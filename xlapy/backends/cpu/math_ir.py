"""Transcendental functions as inline LLVM IR, so loops using them vectorize.

A call to libm (or to ``llvm.exp.*``, which becomes one) stops LLVM's loop vectorizer
unless a vector math library is configured. XLA:CPU therefore emits polynomial
approximations inline; this module does the same for ``float``:

- in ``float`` arithmetic (Cody-Waite range reduction and fitted polynomials):
  ``exp``, ``log``, ``log1p``, ``expm1``, ``tanh``, ``logistic``, ``erf``;
- in ``double`` arithmetic, rounded to ``float`` once at the end (more accurate and
  still branch-free): ``sin``, ``cos``, ``tan`` (two-part reduction modulo pi/2:
  Cody-Waite below 2**19, a 192-bit 2/pi product above), ``atan2``, ``pow``, ``cbrt``.

Every function handles the full range: NaN in gives NaN out, infinities, signed
zeros, overflow to inf and gradual underflow to denormals follow C99/NumPy. Accuracy
against the correctly rounded result is measured in ``tests/test_cpu_math.py``.

``double`` arguments call the C library (``exp``, ``sin``, ... resolved by the JIT from
the process), as XLA:CPU does. Functions without an inline ``float`` version
(``acos``, ``asinh``, ``cosh`` ...) evaluate the ``double`` libm function on the widened
argument and round once.

No fast-math flags are used anywhere: results are deterministic IEEE arithmetic. The
polynomials inside these functions use ``llvm.fmuladd`` (one rounding per Horner step on
CPUs with FMA), which the accuracy bounds allow; the HLO arithmetic around them is never
contracted.
"""
from __future__ import annotations

from typing import Callable, Sequence

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo.opcodes import OPCODES
from .llvm_types import F32, F64, I1, I32, I64, call_intrinsic, declare_function


class FloatOps:
    """Readable float arithmetic on an IRBuilder for one scalar float type."""

    def __init__(self, builder: ir.IRBuilder, ty: ir.Type) -> None:
        self.b = builder
        self.ty = ty
        self.int_ty = I32 if ty == F32 else I64
        self.mant_bits = 23 if ty == F32 else 52
        self.bias = 127 if ty == F32 else 1023

    def c(self, value: float) -> ir.Constant:
        return ir.Constant(self.ty, float(value))

    def i(self, value: int) -> ir.Constant:
        return ir.Constant(self.int_ty, value)

    def add(self, a, b):
        return self.b.fadd(a, b)

    def sub(self, a, b):
        return self.b.fsub(a, b)

    def mul(self, a, b):
        return self.b.fmul(a, b)

    def div(self, a, b):
        return self.b.fdiv(a, b)

    def neg(self, a):
        return self.b.fneg(a)

    def abs(self, a):
        return call_intrinsic(self.b, "llvm.fabs", [a])

    def copysign(self, mag, sign):
        return call_intrinsic(self.b, "llvm.copysign", [mag, sign])

    def roundeven(self, a):
        return call_intrinsic(self.b, "llvm.roundeven", [a])

    def floor(self, a):
        return call_intrinsic(self.b, "llvm.floor", [a])

    def sqrt(self, a):
        return call_intrinsic(self.b, "llvm.sqrt", [a])

    def select(self, cond, a, b):
        return self.b.select(cond, a, b)

    def lt(self, a, b):
        return self.b.fcmp_ordered("<", a, b)

    def le(self, a, b):
        return self.b.fcmp_ordered("<=", a, b)

    def gt(self, a, b):
        return self.b.fcmp_ordered(">", a, b)

    def ge(self, a, b):
        return self.b.fcmp_ordered(">=", a, b)

    def eq(self, a, b):
        return self.b.fcmp_ordered("==", a, b)

    def isnan(self, a):
        return self.b.fcmp_unordered("uno", a, a)

    def isinf(self, a):
        return self.eq(self.abs(a), self.c(float("inf")))

    def signbit(self, a):
        return self.b.icmp_signed("<", self.b.bitcast(a, self.int_ty), self.i(0))

    def muladd(self, a, b, c):
        """``a*b + c`` as one fused multiply-add where the CPU has one (``llvm.fmuladd``):
        half the instructions in a polynomial, and no less accurate."""
        return call_intrinsic(self.b, "llvm.fmuladd", [a, b, c])

    def poly(self, x, coeffs: Sequence[float]):
        """``coeffs[0] + coeffs[1]*x + ...`` by Horner's rule (fused multiply-adds)."""
        acc = self.c(coeffs[-1])
        for k in reversed(coeffs[:-1]):
            acc = self.muladd(acc, x, self.c(k))
        return acc

    def clamp(self, x, lo: float, hi: float):
        """``x`` limited to ``[lo, hi]``; NaN becomes ``hi`` (callers restore NaN).
        ``llvm.minnum``/``maxnum`` return the number when one operand is NaN: one
        instruction each where a compare and a select were two."""
        x = call_intrinsic(self.b, "llvm.minnum", [x, self.c(hi)])
        return call_intrinsic(self.b, "llvm.maxnum", [x, self.c(lo)])

    def to_int(self, a):
        """A float holding an integral value in int range, as the integer type."""
        return self.b.fptosi(a, self.int_ty)

    def pow2(self, n):
        """``2**n`` for an integer ``n`` in the normal exponent range."""
        biased = self.b.add(n, self.i(self.bias))
        return self.b.bitcast(self.b.shl(biased, self.i(self.mant_bits)), self.ty)

    def ldexp(self, y, n):
        """``y * 2**n`` for ``|n|`` up to twice the exponent range, rounded once."""
        half = self.b.ashr(n, self.i(1))
        return self.mul(self.mul(y, self.pow2(half)), self.pow2(self.b.sub(n, half)))


# ----------------------------------------------------------------------------------------------
# float: exp, expm1, log, log1p, tanh, logistic

_LOG2E = 1.4426950408889634
_LN2_HI_F32 = 0.693359375                   # 9 significant bits: n * hi is exact
_LN2_LO_F32 = -2.1219444005469057e-04       # ln 2 - hi
# e**r = 1 + r + r**2 * P(r) on [-ln2/2, ln2/2] (relative error 2.3e-10)
_EXP_P = (0.5000000013461787, 0.1666666675639841, 0.04166646497920467, 0.00833328602866255,
          0.0013933643262461902, 0.00019907569485656522)
# expm1(r) = r + r**2/2 + r**3 * P(r) on [-ln2/2, ln2/2] (relative error 3.9e-10)
_EXPM1_P = (0.16666666299310476, 0.041666482709818736, 0.008333419615173972,
            0.0013933244586465923, 0.00019824127030604097)
# log(1+f) = f - f**2/2 + f**3 * Q(f) on [sqrt(1/2)-1, sqrt(2)-1] (relative error 5.8e-9)
_LOG_Q = (0.3333333170969488, -0.2500082105621497, 0.20001226667460956, -0.16623356479384033,
          0.14201762467036064, -0.13160195053096777, 0.12761550360046064, -0.07634429906999664)
# tanh(x) = x + x**3 * P(x**2) on [0, 0.625] (relative error 4.4e-9)
_TANH_P = (-0.33333281942774556, 0.1333144221483788, -0.05373971626558495,
           0.020639090617986355, -0.005704990370614484)


def _exp_reduce_f32(m: FloatOps, x, lo: float, hi: float):
    """``x`` clamped to ``[lo, hi]`` as ``n*ln2 + r`` with ``|r| <= ln2/2``: (n as i32, r)."""
    xc = m.clamp(x, lo, hi)
    n = m.roundeven(m.mul(xc, m.c(_LOG2E)))
    # n * hi is exact (hi has 9 significant bits), so fusing the first step changes nothing
    r = m.muladd(n, m.c(-_LN2_LO_F32), m.muladd(n, m.c(-_LN2_HI_F32), xc))
    return m.to_int(n), r


def exp_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``e**x`` for float ``x``."""
    m = FloatOps(b, F32)
    # Below -104 the result rounds to 0; above 88.8 the scaling overflows to inf by itself.
    n, r = _exp_reduce_f32(m, x, -104.0, 88.8)
    p = m.add(m.c(1.0), m.add(r, m.mul(m.mul(r, r), m.poly(r, _EXP_P))))
    return m.select(m.isnan(x), x, m.ldexp(p, n))


def expm1_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``e**x - 1`` for float ``x``, accurate near 0."""
    m = FloatOps(b, F32)
    n, r = _exp_reduce_f32(m, x, -18.0, 88.8)      # below -17.4 the result is -1
    r2 = m.mul(r, r)
    q = m.add(r, m.add(m.mul(r2, m.c(0.5)), m.mul(m.mul(r2, r), m.poly(r, _EXPM1_P))))
    # 2**n * (q + 1) - 1 as 2**n * q + (2**n - 1) (2**n - 1 is exact up to n = 24, and
    # beyond it its rounding is below half an ulp of the result); n = 127, 128 scale q + 1.
    huge = b.icmp_signed(">", n, m.i(126))
    t = m.pow2(b.select(huge, m.i(0), n))
    near = m.add(m.mul(t, q), m.sub(t, m.c(1.0)))
    far = m.ldexp(m.add(q, m.c(1.0)), n)
    y = m.select(huge, far, near)
    tiny = m.lt(m.abs(x), m.c(2.0 ** -25))          # also keeps the sign of zero
    return m.select(b.or_(tiny, m.isnan(x)), x, y)


def _log_core_f32(m: FloatOps, x, correction=None):
    """``log(x + correction*x)`` for finite ``x > 0`` and a tiny ``correction`` (other
    inputs give unspecified values)."""
    b = m.b
    denormal = m.lt(x, m.c(2.0 ** -126))
    xs = m.select(denormal, m.mul(x, m.c(2.0 ** 23)), x)
    bits = b.bitcast(xs, I32)
    e = b.sub(b.lshr(bits, m.i(23)), b.select(denormal, m.i(127 + 23), m.i(127)))
    mant = b.bitcast(b.or_(b.and_(bits, m.i(0x007FFFFF)), m.i(0x3F800000)), F32)
    big = m.gt(mant, m.c(1.4142135623730951))
    mant = m.select(big, m.mul(mant, m.c(0.5)), mant)
    e = b.add(e, b.zext(big, I32))
    f = m.sub(mant, m.c(1.0))
    ef = b.sitofp(e, F32)
    f2 = m.mul(f, f)
    y = m.mul(m.mul(f2, f), m.poly(f, _LOG_Q))
    y = m.add(y, m.mul(ef, m.c(_LN2_LO_F32)))
    if correction is not None:
        y = m.add(y, correction)
    y = m.add(y, m.mul(f2, m.c(-0.5)))
    return m.add(m.add(f, y), m.mul(ef, m.c(_LN2_HI_F32)))


def _log_special(m: FloatOps, x, y):
    """Patch ``y = log-like(x)`` for x = 0 (-inf), x < 0 (NaN), x = inf, NaN."""
    y = m.select(m.eq(x, m.c(float("inf"))), x, y)
    y = m.select(m.eq(x, m.c(0.0)), m.c(float("-inf")), y)
    y = m.select(m.lt(x, m.c(0.0)), m.c(float("nan")), y)
    return m.select(m.isnan(x), x, y)


def log_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Natural logarithm of float ``x``."""
    m = FloatOps(b, F32)
    return _log_special(m, x, _log_core_f32(m, x))


def log1p_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``log(1 + x)`` for float ``x``, accurate near 0: ``log(u) + (x - (u - 1)) / u`` where
    ``u = 1 + x`` rounded; the second term is the first-order correction for that rounding."""
    m = FloatOps(b, F32)
    u = m.add(m.c(1.0), x)
    correction = m.div(m.sub(x, m.sub(u, m.c(1.0))), u)
    y = _log_core_f32(m, u, correction)
    y = m.select(m.eq(u, m.c(1.0)), x, y)
    y = m.select(m.eq(x, m.c(float("inf"))), x, y)
    y = m.select(m.eq(u, m.c(0.0)), m.c(float("-inf")), y)
    y = m.select(m.lt(x, m.c(-1.0)), m.c(float("nan")), y)
    return m.select(m.isnan(x), x, y)


def tanh_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Hyperbolic tangent of float ``x``: a polynomial near 0, else ``1 - 2/(e**2|x| + 1)``."""
    m = FloatOps(b, F32)
    a = m.abs(x)
    a2 = m.mul(a, a)
    small = m.add(a, m.mul(m.mul(a2, a), m.poly(a2, _TANH_P)))
    e = exp_f32(b, m.add(a, a))
    large = m.sub(m.c(1.0), m.div(m.c(2.0), m.add(e, m.c(1.0))))
    return m.copysign(m.select(m.lt(a, m.c(0.625)), small, large), x)


def logistic(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``1 / (1 + e**-x)`` for float or double ``x``, without overflow for large ``|x|``."""
    m = FloatOps(b, x.type)
    e = emit_unary(b, "exp", m.neg(m.abs(x)))
    one_plus = m.add(m.c(1.0), e)
    return m.select(m.ge(x, m.c(0.0)), m.div(m.c(1.0), one_plus), m.div(e, one_plus))


# ----------------------------------------------------------------------------------------------
# double helpers used by the float functions below

_INV_FACT = [1.0]
for _k in range(1, 20):
    _INV_FACT.append(_INV_FACT[-1] / _k)


def _exp2_f64_bounded(m: FloatOps, t):
    """``2**t`` in double for ``|t| <= 1000``."""
    n = m.roundeven(t)
    r = m.mul(m.sub(t, n), m.c(0.6931471805599453))
    lo = m.mul(m.sub(t, n), m.c(2.3190468138462996e-17))   # ln 2 - double(ln 2)
    p = m.poly(r, _INV_FACT[:15])
    p = m.add(p, m.mul(p, lo))
    return m.ldexp(p, m.to_int(n))


def _log2_f64_positive(m: FloatOps, a):
    """``log2(a)`` in double for finite normal ``a > 0`` (absolute error ~1e-16 * |log2 a|)."""
    b = m.b
    bits = b.bitcast(a, I64)
    e = b.sub(b.lshr(bits, m.i(52)), m.i(1023))
    mant = b.bitcast(b.or_(b.and_(bits, m.i((1 << 52) - 1)), m.i(1023 << 52)), F64)
    big = m.gt(mant, m.c(1.4142135623730951))
    mant = m.select(big, m.mul(mant, m.c(0.5)), mant)
    e = b.add(e, b.zext(big, I64))
    f = m.sub(mant, m.c(1.0))
    s = m.div(f, m.add(m.c(2.0), f))
    s2 = m.mul(s, s)
    # log(mant) = 2 atanh(s) = 2s (1 + s^2/3 + s^4/5 + ...), |s| <= 0.1716
    series = m.poly(s2, [1.0 / (2 * k + 1) for k in range(9)])
    ln_mant = m.mul(m.mul(m.c(2.0), s), series)
    return m.add(b.sitofp(e, F64), m.mul(ln_mant, m.c(_LOG2E)))


# ----------------------------------------------------------------------------------------------
# float via double: sin, cos, tan

_PIO2_1 = 1.5707963267341256        # pi/2 in three parts; the first two have 33 bits
_PIO2_2 = 6.077100506303966e-11
_PIO2_3 = 2.0222662487959506e-21
_PIO2 = 1.5707963267948966
_TWO_OVER_PI = 0.6366197723675814
# 2/pi = sum_j CHUNK[j] * 2**(-24 (j + 1)): its first 192 bits in 24-bit pieces.
_TWO_OVER_PI_CHUNKS = (0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62,
                       0x95993C, 0x439041)
_SIN_P = tuple((-1) ** k * _INV_FACT[2 * k + 1] for k in range(7))    # sin r / r in r**2
_COS_P = tuple((-1) ** k * _INV_FACT[2 * k] for k in range(8))        # cos r in r**2


def _two_sum(m: FloatOps, a, b):
    s = m.add(a, b)
    bb = m.sub(s, a)
    err = m.add(m.sub(a, m.sub(s, bb)), m.sub(b, bb))
    return s, err


def _reduce_pio2(m: FloatOps, xd):
    """``xd`` (a finite float widened to double) as ``q*pi/2 + r``: (q & 3 as i32, r)."""
    b = m.b
    medium = m.lt(m.abs(xd), m.c(2.0 ** 19))
    # Cody-Waite: k * PIO2_1 and k * PIO2_2 are exact for k < 2**20.
    xm = m.select(medium, xd, m.c(0.0))
    k = m.roundeven(m.mul(xm, m.c(_TWO_OVER_PI)))
    r_med = m.sub(m.sub(m.sub(xm, m.mul(k, m.c(_PIO2_1))), m.mul(k, m.c(_PIO2_2))),
                  m.mul(k, m.c(_PIO2_3)))
    q_med = b.trunc(m.to_int(k), I32)
    # Large: x * (2/pi) mod 4 from exact 48-bit products with 24-bit pieces of 2/pi.
    # |x| < 2**128, so the products with pieces 6 and 7 are below 2**-16: they need no
    # reduction and go straight into the low part of the double-double sum.
    xl = m.select(medium, m.c(0.0), xd)
    hi, lo = None, m.c(0.0)
    for j, chunk in enumerate(_TWO_OVER_PI_CHUNKS):
        p = m.mul(xl, m.c(chunk * 2.0 ** (-24 * (j + 1))))
        if j >= 6:
            lo = m.add(lo, p)
            continue
        p = m.sub(p, m.mul(m.c(4.0), m.roundeven(m.mul(p, m.c(0.25)))))    # exact: p mod 4
        if hi is None:
            hi = p
            continue
        hi, err = _two_sum(m, hi, p)
        lo = m.add(lo, err)
    kq = m.roundeven(hi)
    frac = m.add(m.sub(hi, kq), lo)
    r_big = m.mul(frac, m.c(_PIO2))
    q_big = b.trunc(m.to_int(kq), I32)
    r = m.select(medium, r_med, r_big)
    q = b.and_(b.select(medium, q_med, q_big), ir.Constant(I32, 3))
    return q, r


def _sin_cos_reduced(m: FloatOps, r):
    r2 = m.mul(r, r)
    return m.mul(r, m.poly(r2, _SIN_P)), m.poly(r2, _COS_P)


def _trig_f32(b: ir.IRBuilder, x: ir.Value, which: str) -> ir.Value:
    m = FloatOps(b, F64)
    xd = b.fpext(x, F64)
    finite = m.lt(m.abs(xd), m.c(float("inf")))
    q, r = _reduce_pio2(m, m.select(finite, xd, m.c(0.0)))
    s, c = _sin_cos_reduced(m, r)
    odd = b.trunc(q, I1)
    upper = b.icmp_unsigned(">=", q, ir.Constant(I32, 2))
    if which == "tan":
        y = m.select(odd, m.neg(m.div(c, s)), m.div(s, c))
    elif which == "sin":
        y = m.select(odd, c, s)
        y = m.select(upper, m.neg(y), y)
    else:
        y = m.select(odd, s, c)
        flip = b.xor(upper, odd)               # quadrants 1 and 2 are negative
        y = m.select(flip, m.neg(y), y)
    y = m.select(finite, y, m.c(float("nan")))
    out = b.fptrunc(y, F32)
    if which != "cos":                          # sin/tan of +-0 is +-0
        out = b.select(b.fcmp_ordered("==", x, ir.Constant(F32, 0.0)), x, out)
    return b.select(b.fcmp_unordered("uno", x, x), x, out)


def sin_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _trig_f32(b, x, "sin")


def cos_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _trig_f32(b, x, "cos")


def tan_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _trig_f32(b, x, "tan")


# ----------------------------------------------------------------------------------------------
# erf (float), and via double: atan2, pow, cbrt

# erf(x) = x + x * P(x**2) on [0, 0.9] (relative error 3.3e-10)
_ERF_P = (0.1283791668035699, -0.3761263531468954, 0.1128371976621267, -0.026860754655954926,
          0.00520443985010424, -0.000818196527391621, 8.538984145558261e-05)
# erfc(x) * e**(x**2) = R(x - 2.4) on [0.9, 3.95] (absolute error of erfc 1.9e-10)
_ERFC_R = (0.21849867680242094, -0.07958563842627965, 0.027495127878620795,
           -0.00905741478498502, 0.0028794459630249744, -0.000886669062469577,
           0.00021554742610242696, -9.767186520128528e-05, 3.424977389440583e-05,
           1.5999252077946106e-05, 9.09755600290322e-06)
# atan(t) = t + t**3 * P(t**2) on [0, tan(pi/8)] (relative error 2e-16)
_ATAN_P = (-0.33333333333331155, 0.19999999999254714, -0.14285714206005937,
           0.11111107024387705, -0.0909079011005581, 0.0769016892642945,
           -0.06641952854508668, 0.056967442979291585, -0.043709480746698406,
           0.021402345308976806)


def erf_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Error function of float ``x``: ``x + x P(x**2)`` below 0.9, ``1 - e**-x**2 R(x)``
    up to 3.95 (beyond, erf rounds to 1)."""
    m = FloatOps(b, F32)
    a = m.abs(x)
    small = m.add(a, m.mul(a, m.poly(m.mul(a, a), _ERF_P)))
    ac = m.clamp(a, 0.9, 3.95)
    erfc = m.mul(exp_f32(b, m.neg(m.mul(ac, ac))), m.poly(m.sub(ac, m.c(2.4)), _ERFC_R))
    large = m.select(m.lt(a, m.c(3.95)), m.sub(m.c(1.0), erfc), m.c(1.0))
    y = m.copysign(m.select(m.lt(a, m.c(0.9)), small, large), x)
    return m.select(m.isnan(x), x, y)


def atan2_f32(b: ir.IRBuilder, y: ir.Value, x: ir.Value) -> ir.Value:
    """``atan2(y, x)`` for floats with C99's results for zeros and infinities."""
    m = FloatOps(b, F64)
    yd, xd = b.fpext(y, F64), b.fpext(x, F64)
    ay, ax = m.abs(yd), m.abs(xd)
    swap = m.gt(ay, ax)
    a = m.div(m.select(swap, ax, ay), m.select(swap, ay, ax))      # in [0, 1]
    a = m.select(b.and_(m.isinf(ax), m.isinf(ay)), m.c(1.0), a)
    a = m.select(b.and_(m.eq(ax, m.c(0.0)), m.eq(ay, m.c(0.0))), m.c(0.0), a)
    big = m.gt(a, m.c(0.41421356237309503))                        # tan(pi/8)
    t = m.select(big, m.div(m.sub(a, m.c(1.0)), m.add(a, m.c(1.0))), a)
    t2 = m.mul(t, t)
    at = m.add(t, m.mul(m.mul(t2, t), m.poly(t2, _ATAN_P)))
    at = m.select(big, m.add(at, m.c(0.7853981633974483)), at)
    at = m.select(swap, m.sub(m.c(_PIO2), at), at)
    at = m.select(m.signbit(xd), m.sub(m.c(3.141592653589793), at), at)
    res = b.fptrunc(m.copysign(at, yd), F32)
    nan = b.or_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y))
    return b.select(nan, ir.Constant(F32, float("nan")), res)


def pow_f32(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """``x**y`` for floats with C99 ``pow``'s special cases: ``2**(y log2|x|)`` in double."""
    m = FloatOps(b, F64)
    xd, yd = b.fpext(x, F64), b.fpext(y, F64)
    ax = m.abs(xd)
    finite_pos = b.and_(m.gt(ax, m.c(0.0)), m.lt(ax, m.c(float("inf"))))
    lg = _log2_f64_positive(m, m.select(finite_pos, ax, m.c(1.0)))
    lg = m.select(m.eq(ax, m.c(0.0)), m.c(float("-inf")), lg)
    lg = m.select(m.eq(ax, m.c(float("inf"))), m.c(float("inf")), lg)
    lg = m.select(m.isnan(ax), ax, lg)
    t = m.mul(yd, lg)
    t_nan = m.isnan(t)
    mag = _exp2_f64_bounded(m, m.select(t_nan, m.c(0.0), m.clamp(t, -400.0, 400.0)))
    mag = m.select(t_nan, m.c(float("nan")), mag)
    y_int = m.eq(m.floor(yd), yd)
    y_odd = b.and_(y_int, m.lt(m.abs(yd), m.c(2.0 ** 53)))
    y_odd = b.and_(y_odd, b.fcmp_unordered("!=", m.mul(m.floor(m.mul(yd, m.c(0.5))), m.c(2.0)),
                                           yd))
    res = m.select(b.and_(m.signbit(xd), y_odd), m.neg(mag), mag)
    neg_base = b.and_(m.lt(xd, m.c(0.0)), m.gt(xd, m.c(float("-inf"))))   # finite x < 0
    res = m.select(b.and_(neg_base, b.not_(y_int)), m.c(float("nan")), res)
    res = m.select(b.and_(m.eq(xd, m.c(-1.0)), m.isinf(yd)), m.c(1.0), res)
    res = m.select(b.or_(m.eq(yd, m.c(0.0)), m.eq(xd, m.c(1.0))), m.c(1.0), res)
    return b.fptrunc(res, F32)


def cbrt_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Cube root of float ``x``: a 5-bit guess from the exponent, two Halley steps in double."""
    m = FloatOps(b, F64)
    a = m.abs(b.fpext(x, F64))
    high = b.trunc(b.lshr(b.bitcast(a, I64), ir.Constant(I64, 32)), I32)
    guess_high = b.add(b.udiv(high, ir.Constant(I32, 3)), ir.Constant(I32, 715094163))
    g = b.bitcast(b.shl(b.zext(guess_high, I64), ir.Constant(I64, 32)), F64)
    for _ in range(2):
        g3 = m.mul(m.mul(g, g), g)
        g = m.mul(g, m.div(m.add(g3, m.add(a, a)), m.add(m.add(g3, g3), a)))
    y = b.fptrunc(m.copysign(g, b.fpext(x, F64)), F32)
    special = b.or_(b.fcmp_unordered("ueq", x, ir.Constant(F32, 0.0)),
                    b.fcmp_ordered("==", call_intrinsic(b, "llvm.fabs", [x]),
                                   ir.Constant(F32, float("inf"))))
    return b.select(special, x, y)


# ----------------------------------------------------------------------------------------------
# dispatch

_INLINE_F32_UNARY: dict[str, Callable[[ir.IRBuilder, ir.Value], ir.Value]] = {
    "exp": exp_f32, "expm1": expm1_f32, "log": log_f32, "log1p": log1p_f32, "tanh": tanh_f32,
    "sin": sin_f32, "cos": cos_f32, "tan": tan_f32, "erf": erf_f32, "cbrt": cbrt_f32,
}
_INLINE_F32_BINARY = {"atan2": atan2_f32, "pow": pow_f32}
# The math functions of the op table's transcendental ops (``OpInfo.math``); ``logistic``
# has no libm function and is built from ``exp`` here.
LIBM_UNARY = frozenset(i.math for i in OPCODES.values()
                       if i.transcendental and i.arity == 1 and i.math != "logistic")
LIBM_BINARY = frozenset(i.math for i in OPCODES.values() if i.transcendental and i.arity == 2)


def _libm(b: ir.IRBuilder, name: str, args: Sequence[ir.Value]) -> ir.Value:
    fn = declare_function(b.module, name, F64, [F64] * len(args))
    return b.call(fn, list(args))


def emit_unary(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """``name(x)`` (a C math function name, or ``logistic``) for a float or double ``x``."""
    if name == "logistic":
        return logistic(b, x)
    if name not in LIBM_UNARY:
        raise UnimplementedError(f"the CPU math library has no unary function {name!r}")
    if x.type == F32:
        inline = _INLINE_F32_UNARY.get(name)
        if inline is not None:
            return inline(b, x)
        return b.fptrunc(_libm(b, name, [b.fpext(x, F64)]), F32)
    return _libm(b, name, [x])


def emit_binary(b: ir.IRBuilder, name: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """``name(x, y)`` (``atan2`` or ``pow``) for float or double operands."""
    if name not in LIBM_BINARY:
        raise UnimplementedError(f"the CPU math library has no binary function {name!r}")
    if x.type == F32:
        return _INLINE_F32_BINARY[name](b, x, y)
    return _libm(b, name, [x, y])


__all__ = ["FloatOps", "exp_f32", "expm1_f32", "log_f32", "log1p_f32", "tanh_f32", "logistic",
           "sin_f32", "cos_f32", "tan_f32", "erf_f32", "atan2_f32", "pow_f32", "cbrt_f32",
           "emit_unary", "emit_binary", "LIBM_UNARY", "LIBM_BINARY"]
