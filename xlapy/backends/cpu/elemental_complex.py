"""Complex arithmetic for the elemental emitter (``c64``/``c128`` as ``{re, im}`` structs).

Follows XLA:CPU's formulas: ``abs`` is ``max * sqrt(1 + (min/max)**2)`` (``min`` where
that is NaN), ``divide`` is Smith's algorithm with C99-style results for zero and
infinite operands, ``multiply`` is ``(ac - bd) + (ad + bc)i``, ``cbrt`` is XLA's complex
power with exponent ``1/3 + 0i`` (the interpreter's ``complex_cbrt``).
"""
from __future__ import annotations

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo.types import ElementType
from . import math_ir
from .llvm_types import call_intrinsic, llvm_type


def complex_unary(b: ir.IRBuilder, op: str, z: ir.Value, et: ElementType) -> ir.Value:
    """``real``, ``imag``, ``negate``, ``cbrt`` or ``abs`` of a complex value of type ``et``."""
    re, im = b.extract_value(z, 0), b.extract_value(z, 1)
    if op == "cbrt":
        return complex_cbrt(b, re, im, llvm_type(et))
    if op == "real":
        return re
    if op == "imag":
        return im
    if op == "negate":
        return complex_value(b, llvm_type(et), b.fneg(re), b.fneg(im))
    if op == "abs":
        return complex_abs(b, re, im)
    raise UnimplementedError(f"complex unary op {op} (list it in fallbacks.CPU_FALLBACK or "
                             "emit it here)")


def complex_abs(b: ir.IRBuilder, re: ir.Value, im: ir.Value) -> ir.Value:
    """XLA's ``|re + im i|``: ``max * sqrt(1 + (min/max)**2)``, or ``min`` where that is NaN
    (both zero, both infinite, or a NaN part)."""
    ar, ai = call_intrinsic(b, "llvm.fabs", [re]), call_intrinsic(b, "llvm.fabs", [im])
    big = call_intrinsic(b, "llvm.maximum", [ar, ai])
    small = call_intrinsic(b, "llvm.minimum", [ar, ai])
    ratio = b.fdiv(small, big)
    root = call_intrinsic(b, "llvm.sqrt", [b.fadd(ir.Constant(re.type, 1.0),
                                                  b.fmul(ratio, ratio))])
    result = b.fmul(big, root)
    return b.select(b.fcmp_unordered("uno", result, result), small, result)


def complex_cbrt(b: ir.IRBuilder, re: ir.Value, im: ir.Value, ty: ir.Type) -> ir.Value:
    """XLA's complex cube root, its complex power ``(re + im i) ** (1/3 + 0i)``:
    ``(re**2 + im**2) ** (1/6) * exp(-0 * arg)`` times ``cos q + i sin q`` with
    ``q = arg / 3 + 0 * log(re**2 + im**2)``, and ``0`` where ``re**2 + im**2 == 0``."""
    ft = re.type
    third, half, zero = (ir.Constant(ft, v) for v in (1.0 / 3.0, 0.5, 0.0))
    norm2 = b.fadd(b.fmul(re, re), b.fmul(im, im))
    angle = math_ir.emit_binary(b, "atan2", im, re)
    coeff = b.fmul(math_ir.emit_binary(b, "pow", norm2, b.fmul(half, third)),
                   math_ir.emit_unary(b, "exp", b.fmul(b.fneg(zero), angle)))
    q = b.fadd(b.fmul(third, angle),
               b.fmul(b.fmul(half, zero), math_ir.emit_unary(b, "log", norm2)))
    out = complex_value(b, ty, b.fmul(coeff, math_ir.emit_unary(b, "cos", q)),
                        b.fmul(coeff, math_ir.emit_unary(b, "sin", q)))
    return b.select(b.fcmp_ordered("==", norm2, zero), complex_value(b, ty, zero, zero), out)


def complex_value(b: ir.IRBuilder, ty: ir.Type, re: ir.Value, im: ir.Value) -> ir.Value:
    """The ``{re, im}`` struct value of complex type ``ty``."""
    z = b.insert_value(ir.Constant(ty, ir.Undefined), re, 0)
    return b.insert_value(z, im, 1)


def complex_binary(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """``add``, ``subtract``, ``multiply`` or ``divide`` of two complex values."""
    xr, xi = b.extract_value(x, 0), b.extract_value(x, 1)
    yr, yi = b.extract_value(y, 0), b.extract_value(y, 1)
    if op == "add":
        re, im = b.fadd(xr, yr), b.fadd(xi, yi)
    elif op == "subtract":
        re, im = b.fsub(xr, yr), b.fsub(xi, yi)
    elif op == "multiply":
        re = b.fsub(b.fmul(xr, yr), b.fmul(xi, yi))
        im = b.fadd(b.fmul(xr, yi), b.fmul(xi, yr))
    elif op == "divide":
        re, im = _complex_divide(b, xr, xi, yr, yi)
    else:
        raise UnimplementedError(f"complex binary op {op} (list it in fallbacks.CPU_FALLBACK "
                                 "or emit it here)")
    return complex_value(b, x.type, re, im)


def _infinity_parts(b: ir.IRBuilder, re: ir.Value, im: ir.Value) -> tuple[ir.Value, ...]:
    """For ``re + im i``: whether a part is infinite, whether both are finite (a NaN part
    is not), and each part as +-1 where it is infinite, else +-0 (keeping its sign)."""
    ty = re.type
    zero, one, inf = (ir.Constant(ty, v) for v in (0.0, 1.0, float("inf")))
    re_abs, im_abs = call_intrinsic(b, "llvm.fabs", [re]), call_intrinsic(b, "llvm.fabs", [im])
    re_inf, im_inf = b.fcmp_ordered("==", re_abs, inf), b.fcmp_ordered("==", im_abs, inf)
    finite = b.and_(b.fcmp_ordered("!=", re_abs, inf), b.fcmp_ordered("!=", im_abs, inf))
    re1 = call_intrinsic(b, "llvm.copysign", [b.select(re_inf, one, zero), re])
    im1 = call_intrinsic(b, "llvm.copysign", [b.select(im_inf, one, zero), im])
    return b.or_(re_inf, im_inf), finite, re1, im1


def _complex_divide(b: ir.IRBuilder, ar, ai, br, bi) -> tuple[ir.Value, ir.Value]:
    """XLA's complex division: Smith's algorithm, then C99-style results where it gives
    (NaN, NaN): zero denominator, infinite numerator, infinite denominator."""
    ty = ar.type
    zero, inf = ir.Constant(ty, 0.0), ir.Constant(ty, float("inf"))

    def fabs(v):
        return call_intrinsic(b, "llvm.fabs", [v])

    def copysign(mag, sign):
        return call_intrinsic(b, "llvm.copysign", [mag, sign])

    r_ratio = b.fdiv(br, bi)                            # used when |br| < |bi|
    r_denom = b.fadd(bi, b.fmul(r_ratio, br))
    i_ratio = b.fdiv(bi, br)
    i_denom = b.fadd(br, b.fmul(i_ratio, bi))
    br_abs, bi_abs = fabs(br), fabs(bi)
    r_smaller = b.fcmp_ordered("<", br_abs, bi_abs)
    cr = b.select(r_smaller, b.fdiv(b.fadd(b.fmul(r_ratio, ar), ai), r_denom),
                  b.fdiv(b.fadd(b.fmul(i_ratio, ai), ar), i_denom))
    ci = b.select(r_smaller, b.fdiv(b.fsub(b.fmul(r_ratio, ai), ar), r_denom),
                  b.fdiv(b.fsub(ai, b.fmul(i_ratio, ar)), i_denom))
    # 1. zero denominator, numerator not all NaN: +-inf times the numerator
    zero_den = b.and_(b.and_(b.fcmp_ordered("==", br_abs, zero),
                             b.fcmp_ordered("==", bi_abs, zero)),
                      b.or_(b.fcmp_ordered("ord", ar, zero), b.fcmp_ordered("ord", ai, zero)))
    signed_inf = copysign(inf, br)
    zr, zi = b.fmul(signed_inf, ar), b.fmul(signed_inf, ai)
    # 2. infinite numerator, finite denominator; 3. finite numerator, infinite denominator
    a_inf, a_finite, ar1, ai1 = _infinity_parts(b, ar, ai)
    b_inf, b_finite, br1, bi1 = _infinity_parts(b, br, bi)
    inf_num = b.and_(a_inf, b_finite)
    nr = b.fmul(inf, b.fadd(b.fmul(ar1, br), b.fmul(ai1, bi)))
    ni = b.fmul(inf, b.fsub(b.fmul(ai1, br), b.fmul(ar1, bi)))
    inf_den = b.and_(b_inf, a_finite)
    dr = b.fmul(zero, b.fadd(b.fmul(ar, br1), b.fmul(ai, bi1)))
    di = b.fmul(zero, b.fsub(b.fmul(ai, br1), b.fmul(ar, bi1)))
    both_nan = b.and_(b.fcmp_unordered("uno", cr, zero), b.fcmp_unordered("uno", ci, zero))
    fr = b.select(zero_den, zr, b.select(inf_num, nr, b.select(inf_den, dr, cr)))
    fi = b.select(zero_den, zi, b.select(inf_num, ni, b.select(inf_den, di, ci)))
    return b.select(both_nan, fr, cr), b.select(both_nan, fi, ci)


__all__ = ["complex_value", "complex_abs", "complex_cbrt", "complex_unary", "complex_binary"]
