"""``jax.lax``'s elementwise functions that are compositions in xlapy: inverse and
hyperbolic trigonometry, ``exp2``, ``square``, ``reciprocal``, ``conj``, ``mulhi``, and
the special functions of :mod:`xlapy.frontend.lax_special`.

Like the rest of ``xlapy.lax`` they are strict: no promotion or broadcasting.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend import lax_special as S
from ..frontend.core import Array, to_array


def _c(x: Array, v: Any) -> Array:
    return lax.full_like(x, v)


def _inexact(name: str, x: Any) -> Array:
    x = to_array(x)
    if not dtypes.is_inexact(x.dtype):
        raise InvalidArgumentError(f"lax.{name} takes a floating or complex operand, got "
                                   f"{x.type_text()}")
    return x


def _float(name: str, x: Any) -> Array:
    x = to_array(x)
    if not dtypes.is_float(x.dtype):
        raise InvalidArgumentError(f"lax.{name} takes a floating operand, got {x.type_text()}")
    return x


def square(x: Any) -> Array:
    """``x * x``."""
    x = to_array(x)
    return lax.mul(x, x)


def reciprocal(x: Any) -> Array:
    """``1 / x``."""
    x = _inexact("reciprocal", x)
    return lax.div(_c(x, 1), x)


def exp2(x: Any) -> Array:
    """``2 ** x``."""
    x = _inexact("exp2", x)
    return lax.exp(lax.mul(_c(x, math.log(2.0)), x))


def conj(x: Any) -> Array:
    """The complex conjugate (a real ``x`` becomes complex, as in JAX)."""
    x = to_array(x)
    if not dtypes.is_complex(x.dtype):
        x = _inexact("conj", x) if dtypes.is_float(x.dtype) else \
            lax.convert_element_type(x, np.float32)
        return lax.complex(x, _c(x, 0))
    return lax.complex(lax.real(x), lax.neg(lax.imag(x)))


def sinh(x: Any) -> Array:
    """Hyperbolic sine (accurate near 0 through ``expm1``)."""
    x = _float("sinh", x)
    a = lax.abs(x)
    e = lax.expm1(a)
    # sinh|x| = (e + e / (e + 1)) / 2 ; large |x|: exp(|x| - log 2) to avoid overflow
    small = lax.mul(_c(x, 0.5), lax.add(e, lax.div(e, lax.add(e, _c(e, 1)))))
    big = lax.exp(lax.sub(a, _c(a, math.log(2.0))))
    mag = lax.select(lax.gt(a, _c(a, 20.0)), big, small)
    return lax.mul(lax.sign(x), mag)


def cosh(x: Any) -> Array:
    """Hyperbolic cosine."""
    x = _float("cosh", x)
    a = lax.abs(x)
    big = lax.exp(lax.sub(a, _c(a, math.log(2.0))))
    e = lax.exp(a)
    small = lax.mul(_c(x, 0.5), lax.add(e, lax.div(_c(e, 1), e)))
    return lax.select(lax.gt(a, _c(a, 20.0)), big, small)


def asinh(x: Any) -> Array:
    """Inverse hyperbolic sine."""
    from ..numpy import arcsinh
    return arcsinh(_float("asinh", x))


def acosh(x: Any) -> Array:
    """Inverse hyperbolic cosine."""
    from ..numpy import arccosh
    return arccosh(_float("acosh", x))


def atanh(x: Any) -> Array:
    """Inverse hyperbolic tangent."""
    from ..numpy import arctanh
    return arctanh(_float("atanh", x))


def asin(x: Any) -> Array:
    """Inverse sine."""
    from ..numpy import arcsin
    return arcsin(_inexact("asin", x))


def acos(x: Any) -> Array:
    """Inverse cosine."""
    from ..numpy import arccos
    return arccos(_inexact("acos", x))


def atan(x: Any) -> Array:
    """Inverse tangent."""
    x = _inexact("atan", x)
    return lax.atan2(x, _c(x, 1))


def mulhi(x: Any, y: Any) -> Array:
    """The high half of the double-width product of two integers of one dtype (8, 16 or
    32 bits), as XLA's ``MulHi``."""
    x, y = to_array(x), to_array(y)
    if x.dtype != y.dtype or x.shape != y.shape or not dtypes.is_integer(x.dtype):
        raise InvalidArgumentError(f"lax.mulhi: integer operands of one shape and dtype, got "
                                   f"{x.type_text()} and {y.type_text()}")
    bits = x.dtype.itemsize * 8
    if bits > 32:
        raise InvalidArgumentError("lax.mulhi: 64-bit integers are not supported (x64 off)")
    signed = x.dtype.kind == "i"
    if bits < 32:
        wide = np.int32 if signed else np.uint32
        p = lax.mul(lax.convert_element_type(x, wide), lax.convert_element_type(y, wide))
        sh = lax.full_like(p, bits)
        hi = lax.shift_right_arithmetic(p, sh) if signed else lax.shift_right_logical(p, sh)
        return lax.convert_element_type(hi, x.dtype)
    # 32 bits: schoolbook product of 16-bit halves in uint32
    u = np.uint32
    xu = lax.bitcast_convert_type(x, u) if signed else x
    yu = lax.bitcast_convert_type(y, u) if signed else y
    m16, s16 = lax.full_like(xu, 0xFFFF), lax.full_like(xu, 16)
    xl, xh = lax.bitwise_and(xu, m16), lax.shift_right_logical(xu, s16)
    yl, yh = lax.bitwise_and(yu, m16), lax.shift_right_logical(yu, s16)
    ll, lh, hl, hh = lax.mul(xl, yl), lax.mul(xl, yh), lax.mul(xh, yl), lax.mul(xh, yh)
    mid = lax.add(lax.add(lax.shift_right_logical(ll, s16), lax.bitwise_and(lh, m16)),
                  lax.bitwise_and(hl, m16))
    hi = lax.add(lax.add(hh, lax.shift_right_logical(lh, s16)),
                 lax.add(lax.shift_right_logical(hl, s16), lax.shift_right_logical(mid, s16)))
    if not signed:
        return hi
    # signed: subtract y where x < 0 and x where y < 0 (two's complement correction)
    zero = lax.full_like(x, 0)
    hi = lax.sub(hi, lax.select(lax.lt(x, zero), yu, lax.full_like(yu, 0)))
    hi = lax.sub(hi, lax.select(lax.lt(y, zero), xu, lax.full_like(xu, 0)))
    return lax.bitcast_convert_type(hi, x.dtype)


lgamma, digamma, erfc = S.lgamma, S.digamma, S.erfc
bessel_i0e, bessel_i1e = S.bessel_i0e, S.bessel_i1e
igamma, igammac, betainc, zeta, polygamma = S.igamma, S.igammac, S.betainc, S.zeta, S.polygamma


def _same_float(name: str, a: Any, x: Any) -> tuple[Array, Array]:
    a, x = _inexact(name, a), _inexact(name, x)
    if a.dtype != x.dtype or a.shape != x.shape or dtypes.is_complex(a.dtype):
        raise InvalidArgumentError(f"lax.{name} takes two real floating operands of one type, "
                                   f"got {a.type_text()} and {x.type_text()}")
    return a, x


def igamma_grad_a(a: Any, x: Any) -> Array:
    """The derivative of the regularized lower incomplete gamma ``igamma(a, x)`` with
    respect to ``a`` (forward differentiation of ``igamma``'s series and continued
    fraction)."""
    from ..frontend.autodiff_forward import jvp
    a, x = _same_float("igamma_grad_a", a, x)
    return jvp(lambda aa: S.igamma(aa, x), (a,), (lax.full_like(a, 1.0),))[1]


def random_gamma_grad(a: Any, x: Any) -> Array:
    """The derivative of a Gamma(``a``, 1) sample ``x`` with respect to ``a`` at fixed
    quantile (implicit reparameterization): ``-d igamma(a, x)/da / pdf(x; a)``."""
    a, x = _same_float("random_gamma_grad", a, x)
    log_pdf = (a - 1) * lax.log(x) - x - S.lgamma(a)
    return -igamma_grad_a(a, x) / lax.exp(log_pdf)
