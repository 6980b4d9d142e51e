"""More elementwise math: integer ``gcd``/``lcm``, float decomposition (``frexp``,
``ldexp``, ``modf``, ``spacing``), predicates, ``sinc``, ``angle``, ``unwrap``, and the
NaN-aware and array-API cumulative and arg reductions."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend.control_flow import while_loop
from ..frontend.core import Array
from . import _reductions as R
from ._elementwise import (_const, absolute, asarray, floor_divide, imag, isinf, isnan,
                           promote, real, remainder, where)
from ._reductions import normalize_axis
from ._ufuncs_extra import nextafter, signbit


def _int_operands(name: str, *xs: Any) -> list[Array]:
    out = promote(*xs)
    if not dtypes.is_integer(out[0].dtype) and out[0].dtype != np.bool_:
        raise InvalidArgumentError(f"{name} takes integer arguments, got {out[0].dtype}")
    return out


def gcd(x1: Any, x2: Any) -> Array:
    """Greatest common divisor of ``|x1|`` and ``|x2|`` (Euclid's algorithm, in a loop)."""
    a, b = (absolute(v) for v in _int_operands("gcd", x1, x2))

    def cond(c: tuple[Array, Array]) -> Array:
        return R.any(c[1] != 0)

    def body(c: tuple[Array, Array]) -> tuple[Array, Array]:
        a, b = c
        nz = b != 0
        safe = where(nz, b, _const(1, b))
        return where(nz, b, a), where(nz, lax.rem(a, safe), b)
    return while_loop(cond, body, (a, b))[0]


def lcm(x1: Any, x2: Any) -> Array:
    """Least common multiple of ``|x1|`` and ``|x2|`` (0 when either is 0)."""
    a, b = _int_operands("lcm", x1, x2)
    g = gcd(a, b)
    safe = where(g == 0, _const(1, g), g)
    return where(g == 0, _const(0, g), absolute(a * floor_divide(b, safe)))


def frexp(x: Any) -> tuple[Array, Array]:
    """``(m, e)`` with ``x = m * 2**e`` and ``0.5 <= |m| < 1`` (``m = x``, ``e = 0`` for
    zeros, infinities and NaNs)."""
    (x,) = promote(x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError("frexp does not take complex input")
    w = x.astype(np.float32)                 # exact for every narrower float
    sub = absolute(w) < _const(float(np.finfo(np.float32).tiny), w)
    w2 = where(sub, w * _const(2.0 ** 24, w), w)
    bits = lax.bitcast_convert_type(w2, np.int32)
    exp_field = (bits >> 23) & 0xFF
    e = exp_field - 126 - where(sub, _const(24, exp_field), _const(0, exp_field))
    m = lax.bitcast_convert_type((bits & ~(0xFF << 23)) | (126 << 23), np.float32)
    special = (w == 0) | isinf(w) | isnan(w)
    return where(special, w, m).astype(x.dtype), where(special, _const(0, e), e)


def _pow2(n: Array) -> Array:
    """``2.0**n`` (f32) for integer ``n`` in [-126, 127]."""
    return lax.bitcast_convert_type((n.astype(np.int32) + 127) << 23, np.float32)


def ldexp(x1: Any, x2: Any) -> Array:
    """``x1 * 2**x2`` for integer ``x2`` (in two exact power-of-two steps, so that large
    exponents overflow or underflow only in the result)."""
    n = asarray(x2)
    if not dtypes.is_integer(n.dtype):
        raise InvalidArgumentError(f"ldexp: the exponent must be an integer, got {n.dtype}")
    (x,) = promote(x1, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError("ldexp does not take complex input")
    n = n.astype(np.int32).clip(-252, 254)
    half = n // 2
    w = x.astype(np.float32)
    return (w * _pow2(half) * _pow2(n - half)).astype(x.dtype)


def modf(x: Any) -> tuple[Array, Array]:
    """``(fractional part, integral part)``, both with ``x``'s sign."""
    (x,) = promote(x, to_inexact=True)
    whole = where(x < 0, lax.ceil(x), lax.floor(x))
    frac = where(isinf(x), lax_copysign(_const(0, x), x), x - whole)
    return frac, whole


def lax_copysign(mag: Array, sign: Array) -> Array:
    return where(signbit(sign), -absolute(mag), absolute(mag))


def spacing(x: Any) -> Array:
    """The distance from ``x`` to the next representable value away from zero (for
    float16, towards +inf: NumPy's and JAX's rule for that dtype)."""
    (x,) = promote(x, to_inexact=True)
    if x.dtype == np.float16:
        return nextafter(x, _const(np.inf, x)) - x
    away = where(signbit(x), _const(-np.inf, x), _const(np.inf, x))
    return nextafter(x, away) - x


def sinc(x: Any) -> Array:
    """``sin(pi x) / (pi x)``, 1 at 0."""
    (x,) = promote(x, to_inexact=True)
    zero = x == 0
    px = _const(np.pi, x) * where(zero, _const(1, x), x)
    return where(zero, _const(1, x), lax.sin(px) / px)


def _no_complex_inf(x: Array) -> None:
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError("isposinf/isneginf are not defined for complex types")


def isposinf(x: Any) -> Array:
    """``x == +inf``."""
    x = asarray(x)
    _no_complex_inf(x)
    return (x == _const(np.inf, x)) if dtypes.is_float(x.dtype) else x != x


def isneginf(x: Any) -> Array:
    """``x == -inf``."""
    x = asarray(x)
    _no_complex_inf(x)
    return (x == _const(-np.inf, x)) if dtypes.is_float(x.dtype) else x != x


def iscomplex(x: Any) -> Array:
    """Elementwise: the imaginary part is non-zero."""
    x = asarray(x)
    return imag(x) != 0 if dtypes.is_complex(x.dtype) else asarray(np.zeros(x.shape, bool))


def isreal(x: Any) -> Array:
    """Elementwise: the imaginary part is zero."""
    x = asarray(x)
    return imag(x) == 0 if dtypes.is_complex(x.dtype) else asarray(np.ones(x.shape, bool))


def angle(z: Any, deg: bool = False) -> Array:
    """The argument of ``z`` (radians, or degrees with ``deg``)."""
    z = asarray(z)
    (re,) = promote(real(z), to_inexact=True)
    im = imag(z).astype(re.dtype) if dtypes.is_complex(z.dtype) else lax.full_like(re, 0)
    a = lax.atan2(im, re)
    return a * _const(180 / np.pi, a) if deg else a


def positive(x: Any, /) -> Array:
    """``+x`` (the same values)."""
    return asarray(x)


def bitwise_count(x: Any, /) -> Array:
    """The number of one bits in ``|x|`` (as uint8, like NumPy)."""
    x = asarray(x)
    if x.dtype == np.bool_:
        x = x.astype(np.uint8)
    if not dtypes.is_integer(x.dtype):
        raise InvalidArgumentError(f"bitwise_count takes integers, got {x.dtype}")
    return lax.population_count(absolute(x)).astype(np.uint8)


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Array:
    """``p`` with jumps larger than ``discont`` along ``axis`` replaced by their
    ``period`` complement (NumPy's algorithm)."""
    (x,) = promote(p, to_inexact=True)
    ax = normalize_axis(axis, x.ndim)
    from ._array_extra import diff
    dd = diff(x, axis=ax)
    half = period / 2
    discont = half if discont is None else discont
    ddmod = remainder(dd + half, period) - half
    ddmod = where((ddmod == -half) & (dd > 0), _const(half, ddmod), ddmod)
    correct = where(absolute(dd) < discont, _const(0, dd), ddmod - dd)
    cum = R.cumsum(correct, axis=ax)
    from ._shape_ops import concatenate
    head = tuple(slice(0, 1) if i == ax else slice(None) for i in range(x.ndim))
    tail = tuple(slice(1, None) if i == ax else slice(None) for i in range(x.ndim))
    return concatenate([x[head], x[tail] + cum], ax)


def ptp(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    """``max - min`` along ``axis``."""
    return R.max(a, axis=axis, keepdims=keepdims) - R.min(a, axis=axis, keepdims=keepdims)


def _nanarg(is_max: bool):
    def f(a: Any, axis: int | None = None, keepdims: bool = False) -> Array:
        x = asarray(a)
        if not dtypes.is_inexact(x.dtype):
            return (R.argmax if is_max else R.argmin)(x, axis=axis, keepdims=keepdims)
        nan = isnan(x)
        fill = _const(-np.inf if is_max else np.inf, x)
        idx = (R.argmax if is_max else R.argmin)(where(nan, fill, x), axis=axis,
                                                 keepdims=keepdims)
        return where(R.all(nan, axis=axis, keepdims=keepdims), _const(-1, idx), idx)
    f.__name__ = "nanargmax" if is_max else "nanargmin"
    f.__doc__ = f"``arg{'max' if is_max else 'min'}`` ignoring NaNs (-1 where all are NaN)."
    return f


nanargmax = _nanarg(True)
nanargmin = _nanarg(False)


def nancumsum(a: Any, axis: int | None = None, dtype: Any = None) -> Array:
    """``cumsum`` with NaNs counted as 0."""
    x = asarray(a)
    return R.cumsum(where(isnan(x), _const(0, x), x) if dtypes.is_inexact(x.dtype) else x,
                    axis=axis, dtype=dtype)


def nancumprod(a: Any, axis: int | None = None, dtype: Any = None) -> Array:
    """``cumprod`` with NaNs counted as 1."""
    x = asarray(a)
    return R.cumprod(where(isnan(x), _const(1, x), x) if dtypes.is_inexact(x.dtype) else x,
                     axis=axis, dtype=dtype)


def _cumulative_api(fn: Any, name: str):
    def f(x: Any, /, *, axis: int | None = None, dtype: Any = None,
          include_initial: bool = False) -> Array:
        x = asarray(x)
        if axis is None:
            if x.ndim > 1:
                raise InvalidArgumentError(f"{name}: axis is required for arrays of more "
                                           "than one dimension")
            axis = 0
        ax = normalize_axis(axis, max(x.ndim, 1))
        out = fn(x, axis=ax, dtype=dtype)
        if include_initial:
            from ._shape_ops import concatenate, full
            shape = list(out.shape)
            shape[ax] = 1
            init = full(tuple(shape), 0 if name == "cumulative_sum" else 1, out.dtype)
            out = concatenate([init, out], ax)
        return out
    f.__name__ = name
    f.__doc__ = f"The array API's ``{name}`` (optionally with the initial value first)."
    return f


cumulative_sum = _cumulative_api(R.cumsum, "cumulative_sum")
cumulative_prod = _cumulative_api(R.cumprod, "cumulative_prod")
