"""Continuous samplers and ``bernoulli``, written as JAX 0.10.2 writes them.

Every sampler turns random bits into values with the same sequence of element
operations as ``jax.random``, so with the same key the results are the same bits
wherever the backend's operations are (integer ops, ``bitcast-convert``, ``+``, ``*``,
``max``, comparisons are exact; ``log``, ``log1p``, ``erf`` are as exact as the backend's).

``uniform`` fills the mantissa of a float in ``[1, 2)`` with random bits and subtracts
one; ``normal`` is ``sqrt(2) * lax.erf_inv(u)`` for ``u`` uniform in ``(-1, 1)``;
``gumbel``, ``exponential``, ``laplace`` and ``logistic`` invert their CDFs.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend import lax_composite
from ..frontend.autodiff import stop_gradient
from ..frontend.core import Array, to_array
from .. import numpy as xnp
from . import _threefry as tf
from ._keys import check_broadcast, check_dtype, check_key, check_shape

F32 = np.dtype(np.float32)


def _param(x: Any, dtype: np.dtype) -> Array:
    """A distribution parameter converted (strongly typed) to ``dtype``."""
    return lax.convert_element_type(to_array(x), dtype)


def _row(x: Array, i: int) -> Array:
    """``x[i]`` along the leading axis."""
    starts = (i,) + (0,) * (x.ndim - 1)
    limits = (i + 1,) + x.shape[1:]
    return lax.reshape(lax.slice(x, starts, limits), x.shape[1:])


# ------------------------------------------------------------------------------ uniform
def uniform(key: Any, shape: Any = (), dtype: Any = None, minval: Any = 0.,
            maxval: Any = 1.) -> Array:
    """Uniform values in ``[minval, maxval)`` of ``shape`` and float ``dtype`` (default
    ``float32``); ``minval``/``maxval`` broadcast to ``shape``."""
    k = check_key("uniform", key)
    shape = check_shape("uniform", shape)
    dt = check_dtype("uniform", dtype, "float", F32)
    return _uniform(k, shape, dt, minval, maxval)


def _uniform(key: Array, shape: tuple[int, ...], dtype: np.dtype, minval: Any,
             maxval: Any) -> Array:
    lo, hi = _param(minval, dtype), _param(maxval, dtype)
    check_broadcast("uniform", shape, lo.shape, hi.shape)
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    if nbits not in tf.UINT_DTYPES:
        raise InvalidArgumentError(f"random.uniform: {dtype} is not an 8-, 16- or 32-bit float")
    rng_bits = 8 if nmant < 8 else nbits
    uint = tf.UINT_DTYPES[nbits]
    bits = tf.random_bits(key, rng_bits, shape)
    bits = lax.convert_element_type(bits, uint)
    # Random mantissa bits under the exponent of 1.0: a float in [1, 2).
    float_bits = lax.shift_right_logical(bits, lax.full_like(bits, rng_bits - nmant))
    one_bits = np.array(1.0, dtype).view(uint)
    float_bits = lax.bitwise_or(float_bits, lax.full_like(bits, one_bits))
    floats = lax.bitcast_convert_type(float_bits, dtype)
    floats = lax.sub(floats, lax.full_like(floats, 1.0))
    lo, hi = xnp.broadcast_to(lo, shape), xnp.broadcast_to(hi, shape)
    return lax.max(lo, lax.add(lax.mul(floats, lax.sub(hi, lo)), lo))


# ------------------------------------------------------------------------------- normal
def normal(key: Any, shape: Any = (), dtype: Any = None) -> Array:
    """Standard normal values of ``shape`` and float or complex ``dtype`` (complex values
    have independent real and imaginary parts of variance 1/2 each)."""
    k = check_key("normal", key)
    shape = check_shape("normal", shape)
    dt = check_dtype("normal", dtype, "inexact", F32)
    if dtypes.is_complex(dt):
        real_dt = np.dtype(np.zeros((), dt).real.dtype)
        keys = tf.split_key(k, (2,))
        re = lax.convert_element_type(_normal_real(_row(keys, 0), shape, real_dt), dt)
        im = lax.convert_element_type(_normal_real(_row(keys, 1), shape, real_dt), dt)
        sqrt2 = to_array(np.array(np.sqrt(2), dt))
        return xnp.true_divide(xnp.add(re, xnp.multiply(1j, im)), sqrt2)
    return _normal_real(k, shape, dt)


def _normal_real(key: Array, shape: tuple[int, ...], dtype: np.dtype) -> Array:
    lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
    u = _uniform(key, shape, dtype, lo, np.array(1., dtype))
    return lax.mul(lax.full_like(u, np.sqrt(2)), lax.erf_inv(u))


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Any = None,
                     dtype: Any = None) -> Array:
    """Standard normal values conditioned on ``lower < x < upper`` (open interval);
    ``shape`` defaults to the broadcast shape of ``lower`` and ``upper``."""
    k = check_key("truncated_normal", key)
    dt = check_dtype("truncated_normal", dtype, "float", F32)
    lower, upper = _param(lower, dt), _param(upper, dt)
    if shape is None:
        shape = xnp.broadcast_shapes(lower.shape, upper.shape)
    else:
        shape = check_shape("truncated_normal", shape)
        check_broadcast("truncated_normal", shape, lower.shape, upper.shape)
    sqrt2 = to_array(np.array(np.sqrt(2), dt))
    a = lax.erf(xnp.true_divide(lower, sqrt2))
    b = lax.erf(xnp.true_divide(upper, sqrt2))
    u = _uniform(k, shape, dt, a, b)
    out = lax.mul(lax.full_like(u, np.sqrt(2)), lax.erf_inv(u))
    # Clip into the open interval (rounding can land on a bound); no gradient flows
    # through the clip bounds, as in JAX.
    lower, upper = stop_gradient(lower), stop_gradient(upper)
    above = lax_composite.nextafter(lower, lax.full_like(lower, np.inf))
    below = lax_composite.nextafter(upper, lax.full_like(upper, -np.inf))
    return xnp.minimum(xnp.maximum(out, above), below)


# ---------------------------------------------------------------------------- bernoulli
def bernoulli(key: Any, p: Any = 0.5, shape: Any = None, mode: str = "low") -> Array:
    """Booleans that are True with probability ``p`` (a float or float array broadcast to
    ``shape``, whose default is ``p``'s shape). ``mode="high"`` uses twice the bits so
    that probabilities below ~1e-7 are sampled correctly."""
    k = check_key("bernoulli", key)
    if mode not in ("low", "high"):
        raise InvalidArgumentError(f"random.bernoulli: mode must be 'low' or 'high', got "
                                   f"{mode!r}")
    p = to_array(p)
    if not dtypes.is_float(p.dtype):
        raise InvalidArgumentError(f"random.bernoulli: probability p must have a floating "
                                   f"dtype, got {p.type_text()}")
    p = lax.convert_element_type(p, p.dtype)
    if shape is None:
        shape = p.shape
    else:
        shape = check_shape("bernoulli", shape)
        check_broadcast("bernoulli", shape, p.shape)
    if mode == "high":
        u = _uniform(k, (2,) + shape, p.dtype, 0., 1.)
        u1, u2 = _row(u, 0), _row(u, 1)
        u2 = xnp.multiply(u2, 2.0 ** -dtypes.finfo(p.dtype).nmant)
        return xnp.less(u2, xnp.subtract(p, u1))
    return xnp.less(_uniform(k, shape, p.dtype, 0., 1.), p)


# ------------------------------------------------------------------------- CDF inverses
def _float_sampler_args(name: str, key: Any, shape: Any, dtype: Any
                        ) -> tuple[Array, tuple[int, ...], np.dtype]:
    return (check_key(name, key), check_shape(name, shape),
            check_dtype(name, dtype, "float", F32))


def exponential(key: Any, shape: Any = (), dtype: Any = None) -> Array:
    """Exponential values (rate 1): ``-log1p(-u)``."""
    k, shape, dt = _float_sampler_args("exponential", key, shape, dtype)
    u = _uniform(k, shape, dt, 0., 1.)
    return lax.neg(lax.log1p(lax.neg(u)))


def laplace(key: Any, shape: Any = (), dtype: Any = None) -> Array:
    """Laplace values (location 0, scale 1)."""
    k, shape, dt = _float_sampler_args("laplace", key, shape, dtype)
    u = _uniform(k, shape, dt, -1. + dtypes.finfo(dt).epsneg, 1.)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key: Any, shape: Any = (), dtype: Any = None) -> Array:
    """Standard logistic values: ``log(u) - log1p(-u)``."""
    k, shape, dt = _float_sampler_args("logistic", key, shape, dtype)
    u = _uniform(k, shape, dt, dtypes.finfo(dt).tiny, 1.)
    return lax.sub(lax.log(u), lax.log1p(lax.neg(u)))


def gumbel(key: Any, shape: Any = (), dtype: Any = None, mode: str | None = None) -> Array:
    """Standard Gumbel values. ``mode`` is ``"low"`` (default; one uniform per value, so
    values stay below ~16 in f32), ``"high"`` (two uniforms, up to ~32) or ``"highest"``
    (64 random bits per f32 value)."""
    k, shape, dt = _float_sampler_args("gumbel", key, shape, dtype)
    mode = "low" if mode is None else mode
    if mode not in ("low", "high", "highest"):
        raise InvalidArgumentError(f"random.gumbel: mode must be 'low', 'high' or 'highest', "
                                   f"got {mode!r}")
    return gumbel_sample(k, shape, dt, mode)


def gumbel_sample(key: Array, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Array:
    """``gumbel`` on checked arguments (shared with ``categorical`` and ``choice``)."""
    info = dtypes.finfo(dtype)
    if dtype == F32 and mode == "highest":
        return _gumbel_highest(key, shape)
    if mode in ("high", "highest"):
        u = _uniform(key, (2,) + shape, dtype, 0., 1.)
        high, low = _row(u, 0), _row(u, 1)
        x = xnp.add(xnp.add(high, xnp.multiply(2.0 ** -info.nmant, low)), info.tiny)
        x = xnp.where(xnp.greater_equal(high, 0.5), high, x)
        return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    u = _uniform(key, shape, dtype, info.tiny, 1.)
    return lax.neg(lax.log(lax.neg(lax.log(u))))


def _gumbel_highest(key: Array, shape: tuple[int, ...]) -> Array:
    bits = tf.random_bits(key, 32, (2,) + shape)
    neg = lax.bitwise_not(bits)
    lo_neg = _row(neg, 1)
    carry = lax.convert_element_type(lax.eq(lo_neg, lax.full_like(lo_neg, 0xFFFFFFFF)), tf.UINT32)
    add = lax.concatenate([lax.reshape(carry, (1,) + shape),
                           tf.u32_full(1, (1,) + shape)], 0)
    neg = lax.add(neg, add)                          # 1 - bits as a 64-bit fixed point
    flip = lax.lt(_row(bits, 0), lax.full_like(_row(bits, 0), 1 << 31))
    x = _safe_int_to_float(xnp.where(flip, bits, neg))
    return xnp.where(flip, lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x))))),
                     lax.neg(lax.log(lax.neg(lax.log(x)))))


def _safe_int_to_float(bits: Array) -> Array:
    """``u32[2, ...]`` 64-bit fixed-point fractions to ``f32[...]`` in (0, 1), keeping
    the precision of small values (the leading zeros set the exponent)."""
    info = dtypes.finfo(np.float32)
    clz = lax.clz(bits)
    hi, lo, hiclz, loclz = _row(bits, 0), _row(bits, 1), _row(clz, 0), _row(clz, 1)
    hi_empty = lax.eq(hiclz, lax.full_like(hiclz, 32))
    from_lo = lax.select(hi_empty, lax.shift_left(lo, loclz),
                         lax.shift_right_logical(lo, lax.sub(lax.full_like(hiclz, 32), hiclz)))
    mantissa = lax.bitwise_or(lax.shift_left(hi, hiclz), from_lo)
    mantissa = lax.shift_right_logical(mantissa, lax.full_like(mantissa, 32 - info.nmant - 1))
    mantissa = lax.bitwise_and(mantissa, lax.full_like(mantissa, (1 << info.nmant) - 1))
    zeros = lax.select(hi_empty, lax.add(lax.full_like(loclz, 32), loclz), hiclz)
    exp = lax.shift_left(lax.sub(lax.full_like(zeros, -info.minexp), zeros), lax.full_like(zeros, info.nmant))
    exp = lax.bitwise_and(exp, lax.full_like(exp, (1 << 30) - (1 << (info.nmant - 1))))
    return lax.bitcast_convert_type(lax.bitwise_or(exp, mantissa), np.float32)


__all__ = ["uniform", "normal", "truncated_normal", "bernoulli", "exponential", "laplace",
           "logistic", "gumbel", "gumbel_sample"]
