"""Discrete samplers: ``randint``, ``categorical``, ``permutation``, ``shuffle``, ``choice``.

As in JAX 0.10.2: ``randint`` reduces ``2 * nbits`` random bits modulo the span
(slightly biased unless the span is a power of two; 8- and 16-bit dtypes sample in 32
bits); ``categorical`` is the Gumbel-max trick (Gumbel top-k without replacement);
``permutation`` sorts by random 32-bit keys, repeating the sort
``ceil(3 ln n / ln(2**32 - 1))`` times with fresh keys so that ties do not bias it.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend import lax_composite
from ..frontend.core import Array, to_array
from ..frontend.tracing import concrete_int
from .. import numpy as xnp
from . import _threefry as tf
from ._distributions import _row, _uniform, gumbel_sample
from ._keys import check_broadcast, check_dtype, check_key, check_shape

I32 = np.dtype(np.int32)


def _axis(name: str, axis: Any, ndim: int) -> int:
    a = concrete_int(axis, f"random.{name} axis")
    bound = max(ndim, 1)
    if not -bound <= a < bound:
        raise InvalidArgumentError(f"random.{name}: axis {a} is out of bounds for an array of "
                                   f"rank {ndim}")
    return a % bound


# ------------------------------------------------------------------------------ randint
def randint(key: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = None) -> Array:
    """Uniform integers in ``[minval, maxval)`` of ``shape`` and integer ``dtype``
    (default ``int32``); bounds broadcast to ``shape`` and are clipped to the dtype's
    range; where ``maxval <= minval`` the result is ``minval``."""
    k = check_key("randint", key)
    shape = check_shape("randint", shape)
    dt = check_dtype("randint", dtype, "int", I32)
    info = dtypes.iinfo(dt)
    minval, maxval = to_array(minval), to_array(maxval)
    if info.bits < 32:
        # Sample in 32 bits (less bias), then narrow.
        minval = xnp.clip(lax.convert_element_type(minval, I32), int(info.min), int(info.max))
        maxval = xnp.clip(lax.convert_element_type(maxval, I32), int(info.min),
                          int(info.max) + 1)
        return lax.convert_element_type(_randint(k, shape, minval, maxval, I32), dt)
    return _randint(k, shape, minval, maxval, dt)


def _clip_convert(val: Array, dtype: np.dtype) -> Array:
    """``val`` converted to integer ``dtype``, clipping instead of wrapping."""
    vi, di = dtypes.iinfo(val.dtype), dtypes.iinfo(dtype)
    lo = lax.full_like(val, max(int(di.min), int(vi.min)))
    hi = lax.full_like(val, min(int(di.max), int(vi.max)))
    return lax.convert_element_type(lax.min(lax.max(val, lo), hi), dtype)


def _randint(key: Array, shape: tuple[int, ...], minval: Array, maxval: Array,
             dtype: np.dtype) -> Array:
    check_broadcast("randint", shape, minval.shape, maxval.shape)
    if not dtypes.is_integer(minval.dtype):
        minval = lax.convert_element_type(minval, I32)
    if not dtypes.is_integer(maxval.dtype):
        maxval = lax.convert_element_type(maxval, I32)
    minval, maxval = xnp.broadcast_to(minval, shape), xnp.broadcast_to(maxval, shape)
    dtype_max = lax.convert_element_type(to_array(np.array(dtypes.iinfo(dtype).max, dtype)),
                                         dtype)
    too_big = lax.gt(maxval, xnp.broadcast_to(_clip_convert(dtype_max, maxval.dtype), shape))
    minval, maxval = _clip_convert(minval, dtype), _clip_convert(maxval, dtype)

    nbits = dtypes.iinfo(dtype).bits
    keys = tf.split_key(key, (2,))
    higher = tf.random_bits(_row(keys, 0), nbits, shape)
    lower = tf.random_bits(_row(keys, 1), nbits, shape)

    span = lax.convert_element_type(lax.sub(maxval, minval), tf.UINT_DTYPES[nbits])
    one = lax.full_like(span, 1)
    span = lax.select(lax.le(maxval, minval), one, span)       # empty range: minval
    # A maxval beyond the dtype's range stands for max + 1 (may wrap to 0 = full range).
    span = lax.select(lax.bitwise_and(too_big, lax.gt(maxval, minval)), lax.add(span, one),
                      span)
    # (hi * 2**nbits + lo) mod span, without overflow: 2**nbits mod span as a multiplier.
    multiplier = lax.rem(lax.full_like(span, 2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


# ---------------------------------------------------------------------- permutations
def _shuffle(key: Array, x: Array, axis: int) -> Array:
    """``x`` with each slice along ``axis`` reordered by sorting on random keys."""
    rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        keys = tf.split_key(key, (2,))
        key, subkey = _row(keys, 0), _row(keys, 1)
        sort_keys = tf.random_bits(subkey, 32, x.shape)
        x = lax.sort([sort_keys, x], axis, is_stable=True)[1]
    return x


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Array:
    """A random permutation of ``range(x)`` (integer ``x``, which must be static) or of
    ``x``'s slices along ``axis``; ``independent=True`` permutes every 1-D slice along
    ``axis`` separately."""
    k = check_key("permutation", key)
    arr = to_array(x)
    if arr.ndim == 0:
        if not dtypes.is_integer(arr.dtype):
            raise InvalidArgumentError(f"random.permutation: x must be an integer or an array "
                                       f"of rank >= 1, got {arr.type_text()}")
        n = concrete_int(x, "random.permutation size")
        return _shuffle(k, xnp.arange(n), 0)
    ax = _axis("permutation", axis, arr.ndim)
    if independent or arr.ndim == 1:
        return _shuffle(k, arr, ax)
    order = _shuffle(k, xnp.arange(arr.shape[ax]), 0)
    return xnp.take(arr, order, ax)


def shuffle(key: Any, x: Any, axis: int = 0) -> Array:
    """Every 1-D slice of ``x`` along ``axis`` permuted independently (the removed
    ``jax.random.shuffle``; the same as ``permutation(key, x, axis, independent=True)``)."""
    k = check_key("shuffle", key)
    arr = to_array(x)
    if arr.ndim == 0:
        raise InvalidArgumentError(f"random.shuffle: x must have rank >= 1, got "
                                   f"{arr.type_text()}")
    return _shuffle(k, arr, _axis("shuffle", axis, arr.ndim))


# --------------------------------------------------------------------------- categorical
def categorical(key: Any, logits: Any, axis: int = -1, shape: Any = None,
                replace: bool = True, mode: str | None = None) -> Array:
    """Category indices (``int32``) drawn with probabilities ``softmax(logits, axis)``.

    ``shape`` defaults to ``logits.shape`` without ``axis`` and may add leading
    dimensions (independent draws). ``replace=False`` draws distinct categories (Gumbel
    top-k); ``mode`` is passed to ``gumbel``.
    """
    k = check_key("categorical", key)
    logits = to_array(logits)
    if not dtypes.is_float(logits.dtype):
        raise InvalidArgumentError(f"random.categorical: logits must be floating point, got "
                                   f"{logits.type_text()}")
    mode = "low" if mode is None else mode
    if mode not in ("low", "high", "highest"):
        raise InvalidArgumentError(f"random.categorical: mode must be 'low', 'high' or "
                                   f"'highest', got {mode!r}")
    if logits.ndim == 0:
        raise InvalidArgumentError("random.categorical: logits must have rank >= 1")
    ax = _axis("categorical", axis, logits.ndim)
    batch_shape = logits.shape[:ax] + logits.shape[ax + 1:]
    if shape is None:
        shape = batch_shape
    else:
        shape = check_shape("categorical", shape)
        check_broadcast("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        sample_shape = list(shape[len(prefix):])
        sample_shape.insert(ax, logits.shape[ax])
        g = gumbel_sample(k, prefix + tuple(sample_shape), logits.dtype, mode)
        expanded = lax.reshape(logits, (1,) * len(prefix) + logits.shape)
        return xnp.argmax(xnp.add(g, expanded), axis=len(prefix) + ax)
    draws = math.prod(prefix)
    if draws > logits.shape[ax]:
        raise InvalidArgumentError(
            f"random.categorical: cannot draw {draws} categories without replacement from "
            f"{logits.shape[ax]}")
    noisy = xnp.add(logits, gumbel_sample(k, logits.shape, logits.dtype, mode))
    indices = lax_composite.top_k(xnp.moveaxis(noisy, ax, -1), draws)[1]     # batch + (draws,)
    nd = indices.ndim
    return lax.reshape(lax.transpose(indices, (nd - 1,) + tuple(range(nd - 1))), shape)


# -------------------------------------------------------------------------------- choice
def choice(key: Any, a: Any, shape: Any = (), replace: bool = True, p: Any = None,
           axis: int = 0, mode: str | None = None) -> Array:
    """Samples from ``a`` (an array, sampled along ``axis``, or an int ``n`` for
    ``range(n)``), with or without replacement, uniformly or with probabilities ``p``.

    The result has shape ``a.shape[:axis] + shape + a.shape[axis + 1:]`` (``shape`` for
    an int ``a``), also when ``shape`` is empty (JAX then returns ``zeros(shape)``)."""
    k = check_key("choice", key)
    shape = check_shape("choice", shape)
    arr = to_array(a)
    if arr.ndim == 0:
        n_inputs = concrete_int(a, "random.choice population size")
        ax = 0
    else:
        ax = _axis("choice", axis, arr.ndim)
        n_inputs = arr.shape[ax]
    n_draws = math.prod(shape)
    out_shape = shape if arr.ndim == 0 else arr.shape[:ax] + shape + arr.shape[ax + 1:]
    if n_draws == 0:
        return xnp.zeros(out_shape, arr.dtype)
    if n_inputs <= 0:
        raise InvalidArgumentError("random.choice: a must be greater than 0 unless no samples "
                                   "are taken")
    if not replace and n_draws > n_inputs:
        raise InvalidArgumentError(f"random.choice: cannot take a larger sample (size "
                                   f"{n_draws}) than the population (size {n_inputs}) when "
                                   "replace=False")
    if p is None:
        if replace:
            ind = randint(k, shape, 0, n_inputs)
        else:
            perm = permutation(k, n_inputs if arr.ndim == 0 else arr, ax)
            picked = lax.slice(perm, (0,) * perm.ndim,
                               perm.shape[:ax] + (n_draws,) + perm.shape[ax + 1:])
            return lax.reshape(picked, out_shape)
    else:
        ind = _weighted_indices(k, p, shape, n_inputs, n_draws, replace, mode)
    result = ind if arr.ndim == 0 else xnp.take(arr, ind, ax)
    return lax.reshape(result, out_shape)


def _weighted_indices(key: Array, p: Any, shape: tuple[int, ...], n_inputs: int,
                      n_draws: int, replace: bool, mode: str | None) -> Array:
    p_arr = to_array(p)
    if not dtypes.is_float(p_arr.dtype):
        p_arr = lax.convert_element_type(p_arr, dtypes.DEFAULT_FLOAT)
    if p_arr.shape != (n_inputs,):
        raise InvalidArgumentError(f"random.choice: p must be None or a 1-D vector of the "
                                   f"population size {n_inputs}, got shape {p_arr.shape}")
    if replace:
        cum = xnp.cumsum(p_arr)
        total = lax.slice(cum, (n_inputs - 1,), (n_inputs,))
        u = _uniform(key, shape, cum.dtype, 0., 1.)
        r = xnp.multiply(lax.reshape(total, ()), xnp.subtract(1, u))
        # searchsorted(cum, r, side="left"): how many cumulative sums lie below r.
        below = xnp.less(cum, xnp.expand_dims(r, -1))
        return xnp.sum(lax.convert_element_type(below, I32), axis=-1)
    mode = "low" if mode is None else mode
    g = xnp.add(gumbel_sample(key, (n_inputs,), p_arr.dtype, mode), xnp.log(p_arr))
    return lax.reshape(lax_composite.top_k(g, n_draws)[1], shape)


__all__ = ["randint", "permutation", "shuffle", "categorical", "choice"]
