"""``lax`` operations built from several primitives (no primitive of their own):
``integer_pow``, ``nextafter``, ``take_along_axis`` and ``top_k``.

They are differentiated through the primitives they apply. Public as ``xlapy.lax.*``.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from . import dtypes, lax
from .core import Array, to_array
from .tracing import concrete_int


_INT_OF_WIDTH = {2: np.dtype(np.int16), 4: np.dtype(np.int32)}


def nextafter(x: Array, toward: Array) -> Array:
    """The next representable value after ``x`` in the direction of ``toward`` (same
    shape and floating dtype); NaN if either is NaN, ``toward`` if they are equal."""
    if x.dtype != toward.dtype or x.shape != toward.shape or not dtypes.is_float(x.dtype) \
            or x.dtype.itemsize not in _INT_OF_WIDTH:
        raise InvalidArgumentError(f"nextafter: operands must be f16/bf16/f32 of one shape, "
                                   f"got {x.type_text()} and {toward.type_text()}")
    it = _INT_OF_WIDTH[x.dtype.itemsize]
    bits_x = lax.bitcast_convert_type(x, it)
    sign_mask = lax.full_like(bits_x, np.iinfo(it).min)          # only the sign bit set
    zero_i, one_i = lax.full_like(bits_x, 0), lax.full_like(bits_x, 1)
    # From +-0 the step lands on the smallest subnormal with toward's sign.
    toward_sign = lax.bitwise_and(lax.bitcast_convert_type(toward, it), sign_mask)
    from_zero = lax.bitwise_or(toward_sign, one_i)
    # Sign-magnitude bits: a step toward zero is one less, away from zero one more.
    x_negative = lax.ne(lax.bitwise_and(bits_x, sign_mask), zero_i)
    toward_zero = lax.ne(lax.gt(x, toward), x_negative)
    stepped = lax.select(toward_zero, lax.sub(bits_x, one_i), lax.add(bits_x, one_i))
    x_zero = lax.eq(x, lax.full_like(x, 0))
    out = lax.select(x_zero, from_zero, stepped)
    out = lax.bitcast_convert_type(out, x.dtype)
    out = lax.select(lax.eq(x, toward), toward, out)
    either_nan = lax.bitwise_or(lax.ne(x, x), lax.ne(toward, toward))
    return lax.select(either_nan, lax.full_like(x, np.nan), out)


def integer_pow(x: Any, y: int) -> Array:
    """``x ** y`` for a constant integer ``y``, as JAX's ``lax.integer_pow``: multiplies by
    repeated squaring (``x**3`` is ``x*x*x``, never a ``power`` op), ``1 / x**-y`` for a
    negative ``y`` (floating and complex ``x`` only) and ones for ``y == 0``."""
    x = to_array(x)
    y = concrete_int(y, "integer_pow exponent")
    if y < 0 and not dtypes.is_inexact(x.dtype):
        raise InvalidArgumentError(f"integer_pow: integers cannot be raised to the negative "
                                   f"power {y} (operand dtype {x.dtype})")
    if y == 0:
        return lax.full_like(x, 1)
    result, square, n = None, x, builtins.abs(y)
    while True:                    # binary exponentiation, low bit first
        if n & 1:
            result = square if result is None else lax.mul(result, square)
        n >>= 1
        if not n:
            break
        square = lax.mul(square, square)
    return lax.div(lax.full_like(x, 1), result) if y < 0 else result


def take_along_axis(x: Array, idx: Array, axis: int) -> Array:
    """``x`` read at ``idx`` along ``axis`` (``idx`` matches ``x`` in the other dims)."""
    parts = []
    for d in range(x.ndim):
        coord = idx if d == axis else lax.broadcasted_iota(idx.dtype, idx.shape, d)
        parts.append(lax.reshape(coord, idx.shape + (1,)))
    full = lax.concatenate(parts, x.ndim)
    return lax.gather(x, full, offset_dims=(), collapsed_slice_dims=tuple(range(x.ndim)),
                      start_index_map=tuple(range(x.ndim)), index_vector_dim=x.ndim,
                      slice_sizes=(1,) * x.ndim)


def top_k(x: Any, k: int) -> tuple[Array, Array]:
    """The ``k`` largest entries along the last axis and their indices (like ``jax.lax.top_k``).

    Descending; equal values keep their order (lower index first); NaN counts as largest.
    """
    x = to_array(x)
    k = concrete_int(k, "top_k k")
    if x.ndim == 0 or not 0 <= k <= x.shape[-1]:
        raise InvalidArgumentError(f"top_k: k={k} must be in [0, {x.shape[-1] if x.ndim else 0}] "
                                   f"for an operand of type {x.type_text()}")
    axis = x.ndim - 1
    keys = lax.neg(x) if dtypes.is_float(x.dtype) else lax.bitwise_not(x)
    iota = lax.broadcasted_iota(np.int32, x.shape, axis)
    idx = lax.sort([keys, iota], axis, is_stable=True)[1]
    idx = lax.slice(idx, (0,) * x.ndim, x.shape[:-1] + (k,))
    if idx.size == 0:
        return lax.full_like(x, 0, shape=idx.shape), idx
    return take_along_axis(x, idx, axis), idx


__all__ = ["integer_pow", "nextafter", "take_along_axis", "top_k"]
