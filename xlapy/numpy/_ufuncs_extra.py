"""More elementwise functions (inverse hyperbolics, ``hypot``, ``logaddexp``, ``isclose`` ...).

All are compositions of ``lax`` ops, so their gradients come from the primitives' rules.
Where a formula has a branch that would overflow or divide by zero for inputs the other
branch handles, the inputs of the unused branch are replaced first ("double where"),
so no NaN leaks into gradients. Integer inputs are promoted to the default float as in
JAX (``arcsinh(2)`` is ``float32``, NumPy gives ``float64``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes
from ..frontend import lax
from ..frontend import lax_composite
from ..frontend.core import Array
from ._elementwise import _const, _to_bool, asarray, promote

_LN2 = float(np.log(2.0))


def _big(x: Array) -> Array:
    """``|x|`` above which ``x * x`` may overflow (``1 / sqrt(eps)`` is far below that)."""
    return _const(float(1 / np.sqrt(dtypes.finfo(x.dtype).eps)), x)


def arcsinh(x: Any) -> Array:
    """Like numpy.arcsinh: ``log1p(x + x*x / (1 + sqrt(1 + x*x)))`` for ``|x| <= 1``
    (smooth through 0), the same of ``|x|`` with ``x``'s sign above, ``log(2|x|)`` for huge
    ``|x|``."""
    (x,) = promote(x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError("xnp.arcsinh does not support complex inputs")
    one = _const(1, x)

    def core(v: Array) -> Array:
        vv = lax.mul(v, v)
        return lax.log1p(lax.add(v, lax.div(vv, lax.add(one, lax.sqrt(lax.add(one, vv))))))
    a = lax.abs(x)
    small, big = lax.le(a, one), lax.gt(a, _big(a))
    near = core(lax.select(small, x, _const(0, x)))
    mid = core(lax.select(lax.bitwise_or(small, big), one, a))
    far = lax.add(lax.log(lax.select(big, a, one)), _const(_LN2, a))
    return lax.select(small, near, lax.mul(lax.sign(x), lax.select(big, far, mid)))


def arccosh(x: Any) -> Array:
    """Like numpy.arccosh (NaN below 1)."""
    (x,) = promote(x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError("xnp.arccosh does not support complex inputs")
    big = lax.gt(x, _big(x))
    x_small = lax.select(big, _const(1, x), x)
    x_big = lax.select(big, x, _const(1, x))
    one = _const(1, x)
    t = lax.sub(x_small, one)
    small = lax.log1p(lax.add(t, lax.sqrt(lax.mul(t, lax.add(x_small, one)))))
    large = lax.add(lax.log(x_big), _const(_LN2, x))
    return lax.select(big, large, small)


def arctanh(x: Any) -> Array:
    """Like numpy.arctanh: ``0.5 * log1p(2x / (1 - x))``; +-inf at +-1, NaN beyond."""
    (x,) = promote(x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError("xnp.arctanh does not support complex inputs")
    one = _const(1, x)
    return lax.mul(_const(0.5, x), lax.log1p(lax.div(lax.add(x, x), lax.sub(one, x))))


def hypot(x1: Any, x2: Any) -> Array:
    """Like numpy.hypot, scaled by the larger magnitude so nothing overflows."""
    x, y = promote(x1, x2, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError("xnp.hypot does not support complex inputs")
    x, y = lax.abs(x), lax.abs(y)
    big, small = lax.max(x, y), lax.min(x, y)
    zero = lax.eq(big, _const(0, big))
    safe = lax.select(zero, _const(1, big), big)
    r = lax.div(lax.select(zero, _const(0, small), small), safe)
    out = lax.mul(big, lax.sqrt(lax.add(_const(1, r), lax.mul(r, r))))
    inf = lax.bitwise_or(lax.eq(x, _const(np.inf, x)), lax.eq(y, _const(np.inf, y)))
    return lax.select(inf, _const(np.inf, out), out)


def _logaddexp(x1: Any, x2: Any, base2: bool) -> Array:
    x, y = promote(x1, x2, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError("xnp.logaddexp does not support complex inputs")
    amax = lax.max(x, y)
    delta = lax.sub(x, y)
    nan = lax.ne(delta, delta)                   # inf - inf, or a NaN operand
    d = lax.select(nan, _const(0, delta), lax.neg(lax.abs(delta)))
    if base2:
        tail = lax.div(lax.log1p(lax.exp(lax.mul(d, _const(_LN2, d)))), _const(_LN2, d))
    else:
        tail = lax.log1p(lax.exp(d))
    return lax.select(nan, lax.add(x, y), lax.add(amax, tail))


def logaddexp(x1: Any, x2: Any) -> Array:
    """Like numpy.logaddexp: ``log(exp(x1) + exp(x2))`` without overflow."""
    return _logaddexp(x1, x2, False)


def logaddexp2(x1: Any, x2: Any) -> Array:
    """Like numpy.logaddexp2: ``log2(2**x1 + 2**x2)`` without overflow."""
    return _logaddexp(x1, x2, True)


def _isnan(x: Array) -> Array:
    return lax.ne(x, x)


def fmax(x1: Any, x2: Any) -> Array:
    """Like numpy.fmax: the maximum, ignoring a NaN operand (JAX's formula)."""
    x, y = promote(x1, x2)
    if not dtypes.is_inexact(x.dtype):
        return lax.max(x, y)
    return lax.select(lax.bitwise_or(lax.gt(x, y), _isnan(y)), x, y)


def fmin(x1: Any, x2: Any) -> Array:
    """Like numpy.fmin: the minimum, ignoring a NaN operand (JAX's formula)."""
    x, y = promote(x1, x2)
    if not dtypes.is_inexact(x.dtype):
        return lax.min(x, y)
    return lax.select(lax.bitwise_or(lax.lt(x, y), _isnan(y)), x, y)


_INT_OF_WIDTH = {2: np.int16, 4: np.int32, 8: np.int64}


def signbit(x: Any) -> Array:
    """Like numpy.signbit: the sign bit of floats (True for -0.0), ``x < 0`` for integers."""
    x = asarray(x)
    if x.dtype == np.bool_ or x.dtype.kind == "u":
        return lax.broadcast_in_dim(asarray(np.bool_(False)), x.shape, ())
    if x.dtype.kind == "i":
        return lax.lt(x, _const(0, x))
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError("xnp.signbit does not support complex inputs")
    bits = lax.bitcast_convert_type(x, _INT_OF_WIDTH[x.dtype.itemsize])
    return lax.lt(bits, _const(0, bits))


def copysign(x1: Any, x2: Any) -> Array:
    """Like numpy.copysign (promoted to a float dtype, as in JAX)."""
    x, y = promote(x1, x2, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError("xnp.copysign does not support complex inputs")
    a = lax.abs(x)
    return lax.select(signbit(y), lax.neg(a), a)


def fabs(x: Any) -> Array:
    """Like numpy.fabs (integers are promoted to float)."""
    (x,) = promote(x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError("xnp.fabs does not support complex inputs")
    return lax.abs(x)


def deg2rad(x: Any) -> Array:
    """Like numpy.deg2rad."""
    (x,) = promote(x, to_inexact=True)
    return lax.mul(x, _const(np.pi / 180, x))


def rad2deg(x: Any) -> Array:
    """Like numpy.rad2deg."""
    (x,) = promote(x, to_inexact=True)
    return lax.mul(x, _const(180 / np.pi, x))


radians = deg2rad
degrees = rad2deg


def float_power(x1: Any, x2: Any) -> Array:
    """Like numpy.float_power, in the default float (``float32``: x64 is off, as JAX)."""
    x, y = promote(x1, x2, to_inexact=True)
    return lax.pow(x, y)


def heaviside(x1: Any, x2: Any) -> Array:
    """Like numpy.heaviside: 0 below zero, ``x2`` at zero, 1 above."""
    x, h0 = promote(x1, x2, to_inexact=True)
    zero, one = _const(0, x), _const(1, x)
    return lax.select(lax.lt(x, zero), zero, lax.select(lax.gt(x, zero), one, h0))


def nextafter(x1: Any, x2: Any) -> Array:
    """Like numpy.nextafter, for 16- and 32-bit floats (64-bit floats are off, as JAX)."""
    x, y = promote(x1, x2, to_inexact=True)
    return lax_composite.nextafter(x, y)


def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
            equal_nan: bool = False) -> Array:
    """Like numpy.isclose: ``|a - b| <= atol + rtol * |b|``; infinities are close only to
    themselves; NaNs only with ``equal_nan`` (JAX's formula, also under jit)."""
    x, y = promote(a, b, to_inexact=True)
    real = np.dtype(np.float32) if x.dtype == np.complex64 else x.dtype
    ax, ay = lax.abs(lax.sub(x, y)), lax.abs(y)
    tol = lax.add(lax.broadcast_in_dim(lax.convert_element_type(asarray(atol), real), ay.shape, ()),
                  lax.mul(lax.broadcast_in_dim(lax.convert_element_type(asarray(rtol), real),
                                               ay.shape, ()), ay))
    finite_b = lax.is_finite(lax.real(y) if dtypes.is_complex(y.dtype) else y)
    if dtypes.is_complex(y.dtype):
        finite_b = lax.bitwise_and(finite_b, lax.is_finite(lax.imag(y)))
    out = lax.bitwise_or(lax.eq(x, y), lax.bitwise_and(finite_b, lax.le(ax, tol)))
    if equal_nan:
        out = lax.bitwise_or(out, lax.bitwise_and(_isnan(x), _isnan(y)))
    return out


def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
             equal_nan: bool = False) -> Array:
    """Like numpy.allclose, but returns a bool Array (as JAX), so it also works under jit;
    ``bool(...)`` of the eager result is NumPy's answer."""
    c = isclose(a, b, rtol, atol, equal_nan)
    return lax.reduce_and(c, tuple(range(c.ndim)))


def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None) -> Array:
    """Like numpy.nan_to_num (real and imaginary parts separately for complex)."""
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return x
    if dtypes.is_complex(x.dtype):
        re = nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return lax.complex(re, im)
    info = dtypes.finfo(x.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    out = lax.select(_isnan(x), _const(nan, x), x)
    out = lax.select(lax.eq(out, _const(np.inf, x)), _const(hi, x), out)
    return lax.select(lax.eq(out, _const(-np.inf, x)), _const(lo, x), out)


def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    """Like numpy.count_nonzero (an ``int32`` count)."""
    from ._reductions import sum as _sum
    x = asarray(a)
    return _sum(lax.convert_element_type(_to_bool(x), np.int32), axis=axis, keepdims=keepdims)


__all__ = ["arcsinh", "arccosh", "arctanh", "hypot", "logaddexp", "logaddexp2", "fmax",
           "fmin", "signbit", "copysign", "fabs", "deg2rad", "rad2deg", "radians", "degrees",
           "float_power", "heaviside", "nextafter", "isclose", "allclose", "nan_to_num",
           "count_nonzero"]
