"""Elementwise functions with NumPy broadcasting and JAX-style type promotion."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import dtypes
from ..frontend import lax
from ..frontend import lax_composite
from ..frontend.core import Array, convert, plain_eager, to_array
from ..frontend.tracing import concrete_int


def asarray(x: Any, dtype: Any = None) -> Array:
    """An Array from array-likes (Python scalars weakly typed, 64-bit -> 32-bit)."""
    return to_array(x, dtype)


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        sizes = {s[i - ndim + len(s)] for s in shapes if i - ndim + len(s) >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise ShapeError(f"shapes {', '.join(map(str, shapes))} cannot be broadcast together")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_to(x: Any, shape: Any) -> Array:
    x = asarray(x)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    if x.shape == shape:
        return x
    if broadcast_shapes(x.shape, shape) != shape:
        raise ShapeError(f"cannot broadcast {x.type_text()} to shape {shape}")
    n = len(shape) - x.ndim
    return lax.broadcast_in_dim(x, shape, tuple(range(n, len(shape))))


def promote(*args: Any, to_inexact: bool = False) -> list[Array]:
    """Convert to one dtype (the promotion lattice) and broadcast to one shape."""
    xs = [asarray(a) for a in args]
    dt, weak = dtypes.promote_types(*[(x.dtype, x.weak_type) for x in xs])
    if to_inexact and not dtypes.is_inexact(dt):
        dt, weak = dtypes.DEFAULT_FLOAT, weak
    xs = [convert(x, dt, weak) for x in xs]
    shape = broadcast_shapes(*[x.shape for x in xs])
    return [x if x.shape == shape else broadcast_to(x, shape) for x in xs]


def _unary(lax_fn: Any, name: str, inexact: bool = False, kinds: str = ""):
    def f(x: Any) -> Array:
        (x,) = promote(x, to_inexact=inexact)
        if kinds and x.dtype.kind not in kinds and not (dtypes.is_float(x.dtype) and "f" in kinds):
            raise InvalidArgumentError(f"xnp.{name} does not support dtype {x.dtype}")
        return lax_fn(x)
    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` (NumPy semantics)."
    return f


@functools.lru_cache(maxsize=256)
def _promote_pair(a: np.dtype, a_weak: bool, b: np.dtype, b_weak: bool,
                  to_inexact: bool) -> tuple[np.dtype, bool]:
    """:func:`promote`'s (dtype, weak) of two operands."""
    dt, weak = dtypes.promote_types((a, a_weak), (b, b_weak))
    if to_inexact and not dtypes.is_inexact(dt):
        dt = dtypes.DEFAULT_FLOAT
    return dt, weak


# Python numbers that convert to float32 exactly alike whichever way they are converted.
_EXACT_INT = 1 << 24


def _fast_operands(x: Any, y: Any, inexact: bool) -> tuple[Array, Array] | None:
    """``promote(x, y)`` without its general machinery for the common eager cases (None
    otherwise): two Arrays of one shape that need no conversion, or a concrete float32
    Array and a Python number (filled in with NumPy instead of an eager broadcast, when
    no trace or tape is watching)."""
    if type(x) is Array:
        if type(y) is Array:
            if x.shape != y.shape:
                return None
            dt, weak = _promote_pair(x.dtype, x.weak_type, y.dtype, y.weak_type, inexact)
            if x.dtype == dt == y.dtype and x.weak_type == weak == y.weak_type:
                return x, y
            return None
        if type(y) in (float, int) and x.dtype == np.float32 and x._value is not None \
                and (type(y) is float or -_EXACT_INT <= y <= _EXACT_INT) and plain_eager():
            return x, Array(np.full(x.shape, y, np.float32), weak_type=x.weak_type)
        return None
    if type(y) is Array and type(x) in (float, int):
        swapped = _fast_operands(y, x, inexact)
        return None if swapped is None else (swapped[1], swapped[0])
    return None


def _binary(lax_fn: Any, name: str, inexact: bool = False):
    def f(x: Any, y: Any) -> Array:
        fast = _fast_operands(x, y, inexact)
        if fast is not None:
            return lax_fn(*fast)
        return lax_fn(*promote(x, y, to_inexact=inexact))
    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` with broadcasting (NumPy semantics)."
    return f


negative = _unary(lax.neg, "negative")
exp = _unary(lax.exp, "exp", True)
expm1 = _unary(lax.expm1, "expm1", True)
log = _unary(lax.log, "log", True)
log1p = _unary(lax.log1p, "log1p", True)
sqrt = _unary(lax.sqrt, "sqrt", True)
cbrt = _unary(lax.cbrt, "cbrt", True)
sin = _unary(lax.sin, "sin", True)
cos = _unary(lax.cos, "cos", True)
tan = _unary(lax.tan, "tan", True)
tanh = _unary(lax.tanh, "tanh", True)
isfinite = _unary(lambda x: lax.is_finite(x) if dtypes.is_float(x.dtype)
                  else full_like_bool(x, True), "isfinite")
add = _binary(lax.add, "add")
subtract = _binary(lax.sub, "subtract")
multiply = _binary(lax.mul, "multiply")
def _lexicographic(op: Any) -> Any:
    """``op`` on complex operands ordered by real part, then imaginary part (JAX's rule);
    the plain op otherwise."""
    def f(x: Array, y: Array) -> Array:
        if not dtypes.is_complex(x.dtype):
            return op(x, y)
        rx, ry = lax.real(x), lax.real(y)
        return lax.select(lax.eq(rx, ry), op(lax.imag(x), lax.imag(y)), op(rx, ry))
    return f


def _complex_extreme(pick_x: Any) -> Any:
    """``maximum``/``minimum``: for complex operands pick by the lexicographic order."""
    def f(x: Array, y: Array) -> Array:
        if not dtypes.is_complex(x.dtype):
            return (lax.max if pick_x is lax.gt else lax.min)(x, y)
        return lax.select(_lexicographic(pick_x)(x, y), x, y)
    return f


maximum = _binary(_complex_extreme(lax.gt), "maximum")
minimum = _binary(_complex_extreme(lax.lt), "minimum")
arctan2 = _binary(lax.atan2, "arctan2", True)
equal = _binary(lax.eq, "equal")
not_equal = _binary(lax.ne, "not_equal")
less = _binary(_lexicographic(lax.lt), "less")
less_equal = _binary(_lexicographic(lax.le), "less_equal")
greater = _binary(_lexicographic(lax.gt), "greater")
greater_equal = _binary(_lexicographic(lax.ge), "greater_equal")
bitwise_and = _binary(lax.bitwise_and, "bitwise_and")
bitwise_or = _binary(lax.bitwise_or, "bitwise_or")
bitwise_xor = _binary(lax.bitwise_xor, "bitwise_xor")
left_shift = _binary(lax.shift_left, "left_shift")
right_shift = _binary(lambda x, y: lax.shift_right_logical(x, y) if x.dtype.kind == "u"
                      else lax.shift_right_arithmetic(x, y), "right_shift")


def full_like_bool(x: Array, value: bool) -> Array:
    return lax.broadcast_in_dim(asarray(np.bool_(value)), x.shape, ())


def _const(value: Any, like: Array) -> Array:
    """``value`` as an array of ``like``'s dtype, weak type and shape."""
    c = lax.convert_element_type(asarray(value), like.dtype, like.weak_type)
    return lax.broadcast_in_dim(c, like.shape, ())


def invert(x: Any) -> Array:
    return lax.bitwise_not(asarray(x))


bitwise_not = invert


def logical_not(x: Any) -> Array:
    return lax.bitwise_not(_to_bool(asarray(x)))


def _to_bool(x: Array) -> Array:
    return x if x.dtype == np.bool_ else lax.ne(x, _const(0, x))


def _logical(fn: Any, name: str):
    def f(x: Any, y: Any) -> Array:
        x, y = promote(x, y)
        return fn(_to_bool(x), _to_bool(y))
    f.__name__ = name
    return f


logical_and = _logical(lax.bitwise_and, "logical_and")
logical_or = _logical(lax.bitwise_or, "logical_or")
logical_xor = _logical(lax.bitwise_xor, "logical_xor")


def absolute(x: Any) -> Array:
    x = asarray(x)
    if x.dtype == np.bool_ or x.dtype.kind == "u":
        return x
    return lax.abs(x)


abs = absolute


def sign(x: Any) -> Array:
    x = asarray(x)
    if x.dtype.kind == "u":
        return lax.convert_element_type(lax.ne(x, _const(0, x)), x.dtype, x.weak_type)
    return lax.sign(x)


def true_divide(x: Any, y: Any) -> Array:
    return lax.div(*promote(x, y, to_inexact=True))


divide = true_divide


def _int_floordiv_mod(x: Array, y: Array) -> tuple[Array, Array]:
    """Integer floor division and modulo with the divisor's sign (Python semantics), by
    JAX's formulas, which also fix division by zero: ``x // 0`` corrects XLA's ``-1``
    (``[7, -7, 0] // 0 == [-2, -2, -1]``) and ``x % 0 == 0`` (the remainder by 1)."""
    zero, one = _const(0, x), _const(1, x)
    y_mod = lax.select(lax.eq(y, zero), lax.full_like(y, 1), y)
    q, r = lax.div(x, y), lax.rem(x, y_mod)
    if x.dtype.kind == "u":
        return q, r
    fix_q = lax.bitwise_and(lax.ne(lax.sign(x), lax.sign(y)), lax.ne(lax.rem(x, y), zero))
    q = lax.select(fix_q, lax.sub(q, one), q)
    fix_r = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(y_mod, zero)))
    r = lax.select(fix_r, lax.add(r, y_mod), r)
    return q, r


def _float_floordiv_mod(x: Array, y: Array) -> tuple[Array, Array]:
    """CPython's float divmod, as JAX computes it (``x // 0.0`` is ``x / 0.0``)."""
    zero = _const(0, x)
    mod = lax.rem(x, y)
    div = lax.div(lax.select(lax.eq(y, zero), x, lax.sub(x, mod)), y)
    fix = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.sign(y), lax.sign(mod)))
    mod = lax.select(fix, lax.add(mod, y), mod)
    div = lax.select(fix, lax.sub(div, _const(1, x)), div)
    return lax.round(div), mod


def divmod(x: Any, y: Any) -> tuple[Array, Array]:
    x, y = promote(x, y)
    if x.dtype == np.bool_:
        x, y = (lax.convert_element_type(v, np.int8) for v in (x, y))
    if dtypes.is_integer(x.dtype):
        return _int_floordiv_mod(x, y)
    return _float_floordiv_mod(x, y)


def floor_divide(x: Any, y: Any) -> Array:
    return divmod(x, y)[0]


def remainder(x: Any, y: Any) -> Array:
    return divmod(x, y)[1]


mod = remainder


def fmod(x: Any, y: Any) -> Array:
    return lax.rem(*promote(x, y))


def power(x: Any, y: Any) -> Array:
    """``x ** y``; a constant integer exponent (Python or NumPy integer scalar) is
    ``lax.integer_pow`` (multiplies, as in JAX), anything else an HLO ``power``."""
    if isinstance(y, (int, np.integer)) and not isinstance(y, (bool, np.bool_)):
        x = asarray(x)
        if x.dtype == np.bool_:
            raise InvalidArgumentError("xnp.power does not support bool operands")
        if y < 0 and not dtypes.is_inexact(x.dtype):
            raise InvalidArgumentError(f"xnp.power: integers cannot be raised to the negative "
                                       f"power {y} (base dtype {x.dtype})")
        return lax_composite.integer_pow(x, int(y))
    x, y = promote(x, y)
    if x.dtype == np.bool_:
        raise InvalidArgumentError("xnp.power does not support bool operands")
    return lax.pow(x, y)


def square(x: Any) -> Array:
    x = asarray(x)
    if x.dtype == np.bool_:
        x = lax.convert_element_type(x, dtypes.DEFAULT_INT)
    return lax.mul(x, x)


def reciprocal(x: Any) -> Array:
    (x,) = promote(x, to_inexact=True)
    return lax.div(_const(1, x), x)


def exp2(x: Any) -> Array:
    (x,) = promote(x, to_inexact=True)
    return lax.exp(lax.mul(x, _const(np.log(2.0), x)))


def log2(x: Any) -> Array:
    (x,) = promote(x, to_inexact=True)
    return lax.div(lax.log(x), _const(np.log(2.0), x))


def log10(x: Any) -> Array:
    (x,) = promote(x, to_inexact=True)
    return lax.div(lax.log(x), _const(np.log(10.0), x))


def arctan(x: Any) -> Array:
    (x,) = promote(x, to_inexact=True)
    return lax.atan2(x, _const(1, x))


def arcsin(x: Any) -> Array:
    (x,) = promote(x, to_inexact=True)
    one = _const(1, x)
    return lax.mul(_const(2, x), lax.atan2(x, lax.add(one, lax.sqrt(lax.sub(one, lax.mul(x, x))))))


def arccos(x: Any) -> Array:
    """``2 atan2(sqrt(1 - x^2), 1 + x)``, and exactly pi at -1 (where that is ``0/0``)."""
    (x,) = promote(x, to_inexact=True)
    one = _const(1, x)
    half = lax.atan2(lax.sqrt(lax.sub(one, lax.mul(x, x))), lax.add(one, x))
    if dtypes.is_complex(x.dtype):
        return lax.mul(_const(2, x), half)
    return lax.select(lax.eq(x, _const(-1, x)), _const(np.pi, x), lax.mul(_const(2, x), half))


def sinh(x: Any) -> Array:
    (x,) = promote(x, to_inexact=True)
    return lax.mul(_const(0.5, x), lax.sub(lax.expm1(x), lax.expm1(lax.neg(x))))


def cosh(x: Any) -> Array:
    (x,) = promote(x, to_inexact=True)
    return lax.mul(_const(0.5, x), lax.add(lax.exp(x), lax.exp(lax.neg(x))))


def _float_only(fn: Any, name: str):
    def f(x: Any) -> Array:
        x = asarray(x)
        return fn(x) if dtypes.is_inexact(x.dtype) else x
    f.__name__ = name
    return f


floor = _float_only(lax.floor, "floor")
ceil = _float_only(lax.ceil, "ceil")
def rint(x: Any) -> Array:
    """Round half to even; integers become floats (as in JAX)."""
    (x,) = promote(x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        return lax.complex(lax.round_even(lax.real(x)), lax.round_even(lax.imag(x)))
    return lax.round_even(x)
trunc = _float_only(lambda x: lax.select(lax.lt(x, _const(0, x)), lax.ceil(x), lax.floor(x)),
                    "trunc")


def round(x: Any, decimals: int = 0) -> Array:
    """Round half to even (NumPy's rule), optionally to ``decimals`` places (a compile-time
    value: a jit argument passed here specializes the function)."""
    decimals = concrete_int(decimals, "round decimals")
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return x
    if dtypes.is_complex(x.dtype):
        return lax.complex(round(lax.real(x), decimals), round(lax.imag(x), decimals))
    if decimals == 0:
        return lax.round_even(x)
    scale = _const(10.0 ** decimals, x)
    return lax.div(lax.round_even(lax.mul(x, scale)), scale)


around = round


def isnan(x: Any) -> Array:
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return full_like_bool(x, False)
    return lax.ne(x, x)


def isinf(x: Any) -> Array:
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return full_like_bool(x, False)
    if dtypes.is_complex(x.dtype):
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    return lax.eq(lax.abs(x), _const(np.inf, x))


def clip(x: Any, a_min: Any = None, a_max: Any = None) -> Array:
    x = asarray(x)
    if a_min is not None:
        x = maximum(x, a_min)
    if a_max is not None:
        x = minimum(x, a_max)
    return x


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """Three-argument ``where`` (select with broadcasting); the one-argument form is
    ``nonzero`` (data-dependent shape)."""
    if x is None and y is None:
        from ._sorting import nonzero
        return nonzero(condition)
    if x is None or y is None:
        raise InvalidArgumentError("xnp.where takes one or three arguments")
    c = _to_bool(asarray(condition))
    x, y = promote(x, y)
    shape = broadcast_shapes(c.shape, x.shape)
    return lax.select(broadcast_to(c, shape), broadcast_to(x, shape), broadcast_to(y, shape))


def astype(x: Any, dtype: Any) -> Array:
    return lax.convert_element_type(asarray(x), dtype)


def real(x: Any) -> Array:
    x = asarray(x)
    return lax.real(x) if dtypes.is_complex(x.dtype) else x


def imag(x: Any) -> Array:
    """Like numpy.imag: zeros of ``x``'s dtype for a real ``x``."""
    x = asarray(x)
    return lax.imag(x) if dtypes.is_complex(x.dtype) else _const(0, x)


def conj(x: Any) -> Array:
    x = asarray(x)
    if not dtypes.is_complex(x.dtype):
        return x
    return lax.complex(lax.real(x), lax.neg(lax.imag(x)))


conjugate = conj
