"""Element functions the samplers need that the front end does not offer yet.

- :func:`bitcast_convert_type`: a primitive lowered to HLO ``bitcast-convert``
  (reinterpreting ``uint32`` bits as ``float32`` is how uniform floats are made);
- :func:`erf_inv`: a primitive lowered to XLA's expansion of ``chlo.erf_inv`` for ``f32``
  (M. Giles, "Approximating the erfinv function", GPU Computing Gems, 2011), the same HLO
  JAX emits; ``f16`` and ``bf16`` are computed in ``f32`` and rounded back, as XLA does.
  Its gradient rule is the derivative's closed form (differentiating the expansion
  would give NaN through its ``x * inf`` branch);
- :func:`nextafter`: C's ``nextafter`` on the bit pattern.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend.core import Array, LoweringContext, bind, primitive, to_array
from ..hlo.ir import HloInstruction


def _bitcast_lower(ctx: LoweringContext, x: HloInstruction, *, new_dtype: np.dtype
                   ) -> HloInstruction:
    return ctx.b.bitcast_convert(x, new_dtype)


bitcast_convert_type_p = primitive("random_bitcast_convert_type", _bitcast_lower,
                                   weak=lambda args, params: False)


def bitcast_convert_type(x: Any, new_dtype: Any) -> Array:
    """The bits of ``x`` reinterpreted as ``new_dtype`` of the same width (same shape)."""
    x = to_array(x)
    dt = np.dtype(new_dtype)
    if dt.itemsize != x.dtype.itemsize:
        raise InvalidArgumentError(f"bitcast_convert_type: {x.type_text()} and {dt} have "
                                   "different widths")
    if dt == x.dtype:
        return x
    return bind(bitcast_convert_type_p, x, new_dtype=dt)


def full(value: Any, like: Array) -> Array:
    """``value`` as a strongly typed array of ``like``'s dtype and shape."""
    c = to_array(np.asarray(value, like.dtype))
    return lax.broadcast_in_dim(c, like.shape, ())


# Giles' single-precision coefficients, highest degree first, as in XLA's chlo lowering.
_ERFINV_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erf_inv_lower(ctx: LoweringContext, x: HloInstruction) -> HloInstruction:
    """XLA's chlo expansion: a degree-8 polynomial in ``w = -log1p(-x*x)`` (shifted),
    one coefficient set for ``w < 5`` and one for the tails; ``+-inf`` at ``+-1``."""
    b = ctx.b
    dtype = x.shape.dtype
    if dtype != np.float32:
        x = b.convert(x, np.float32)
    dims = x.shape.dims

    def c(v: float) -> HloInstruction:
        return b.broadcast_in_dim(b.constant(np.float32(v)), dims, ())

    w = b.negate(b.log_plus_one(b.multiply(x, b.negate(x))))
    small = b.compare(w, c(5.0), "LT")
    w = b.select(small, b.subtract(w, c(2.5)), b.subtract(b.sqrt(w), c(3.0)))
    p = b.select(small, c(_ERFINV_SMALL[0]), c(_ERFINV_LARGE[0]))
    for lo, hi in zip(_ERFINV_SMALL[1:], _ERFINV_LARGE[1:]):
        p = b.add(b.select(small, c(lo), c(hi)), b.multiply(p, w))
    at_one = b.compare(b.abs(x), c(1.0), "EQ")
    out = b.select(at_one, b.multiply(x, c(np.inf)), b.multiply(p, x))
    return out if dtype == np.float32 else b.convert(out, dtype)


def _erf_inv_vjp(ct: Array, ans: Array, x: Array) -> tuple[Array]:
    """d/dx erfinv(x) = sqrt(pi)/2 * exp(erfinv(x)**2)."""
    return (lax.mul(ct, lax.mul(full(np.sqrt(np.pi) / 2, ans), lax.exp(lax.mul(ans, ans)))),)


erf_inv_p = primitive("random_erf_inv", _erf_inv_lower, weak=lambda args, params: False)
erf_inv_p.vjp = _erf_inv_vjp


def erf_inv(x: Array) -> Array:
    """The inverse error function of ``f16``, ``bf16`` or ``f32`` values, as XLA
    expands it (see the module docstring)."""
    if x.dtype not in (np.float32, dtypes.float16, dtypes.bfloat16):
        raise InvalidArgumentError(f"erf_inv supports f16, bf16 and f32, got {x.type_text()}")
    return bind(erf_inv_p, x)


_INT_OF_WIDTH = {2: np.dtype(np.int16), 4: np.dtype(np.int32)}


def nextafter(x: Array, toward: Array) -> Array:
    """The next representable value after ``x`` in the direction of ``toward`` (same
    shape and floating dtype); NaN if either is NaN, ``toward`` if they are equal."""
    if x.dtype != toward.dtype or x.shape != toward.shape or not dtypes.is_float(x.dtype) \
            or x.dtype.itemsize not in _INT_OF_WIDTH:
        raise InvalidArgumentError(f"nextafter: operands must be f16/bf16/f32 of one shape, "
                                   f"got {x.type_text()} and {toward.type_text()}")
    it = _INT_OF_WIDTH[x.dtype.itemsize]
    bits_x = bitcast_convert_type(x, it)
    sign_mask = full(np.iinfo(it).min, bits_x)          # only the sign bit set
    zero_i, one_i = full(0, bits_x), full(1, bits_x)
    # From +-0 the step lands on the smallest subnormal with toward's sign.
    toward_sign = lax.bitwise_and(bitcast_convert_type(toward, it), sign_mask)
    from_zero = lax.bitwise_or(toward_sign, one_i)
    # Sign-magnitude bits: a step toward zero is one less, away from zero one more.
    x_negative = lax.ne(lax.bitwise_and(bits_x, sign_mask), zero_i)
    toward_zero = lax.ne(lax.gt(x, toward), x_negative)
    stepped = lax.select(toward_zero, lax.sub(bits_x, one_i), lax.add(bits_x, one_i))
    x_zero = lax.eq(x, full(0, x))
    out = lax.select(x_zero, from_zero, stepped)
    out = bitcast_convert_type(out, x.dtype)
    out = lax.select(lax.eq(x, toward), toward, out)
    either_nan = lax.bitwise_or(lax.ne(x, x), lax.ne(toward, toward))
    return lax.select(either_nan, full(np.nan, x), out)


__all__ = ["bitcast_convert_type", "erf_inv", "nextafter", "full"]
