"""The Threefry-2x32 hash and the key operations JAX builds on it.

Threefry-2x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011)
maps a 64-bit key ``(k1, k2)`` and a 64-bit counter ``(x1, x2)`` to 64 random bits
with 20 rounds of add / rotate / xor on ``uint32`` and a key injection after every
four rounds. It is written here with ``xlapy.lax`` ops, so it runs eagerly op by op
and traces into plain HLO (``add``, ``xor``, ``or``, ``shift-left``,
``shift-right-logical``) that every backend executes.

The key operations follow JAX's ``threefry2x32`` PRNG with
``jax_threefry_partitionable=True`` (the default since JAX 0.5 and in JAX 0.10.2) and
64-bit mode off:

- a *key* is a ``uint32[2]`` array ``(k1, k2)``;
- the counter of element ``i`` (row-major) of an output of shape ``s`` is the 64-bit
  value ``i``, split into ``(hi, lo)`` words (:func:`iota_2x32`);
- ``random_bits`` hashes those counters and xors the two output words (narrower widths
  keep the low bits); ``split(key, s)`` returns the two output words as new keys;
- ``fold_in(key, d)`` hashes the counter ``(0, d)``;
- a seed keeps only its low 32 bits: ``key(s) = (0, s mod 2**32)`` (with x64 off JAX
  truncates the seed to 32 bits before splitting it into words).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import lax
from ..frontend.core import Array, to_array

UINT32 = np.dtype(np.uint32)
UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: UINT32}

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = 0x1BD11BDA


def u32_full(value: int, shape: Sequence[int]) -> Array:
    """A ``uint32`` array of ``shape`` filled with ``value``."""
    return lax.broadcast_in_dim(to_array(np.uint32(value)), tuple(shape), ())


def _rotate_left(x: Array, d: int) -> Array:
    return lax.bitwise_or(lax.shift_left(x, u32_full(d, x.shape)),
                          lax.shift_right_logical(x, u32_full(32 - d, x.shape)))


def threefry2x32(k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Array, Array]:
    """The Threefry-2x32 hash of counters ``(x1, x2)`` under key ``(k1, k2)``.

    ``x1`` and ``x2`` are ``uint32`` arrays of one shape; ``k1`` and ``k2`` are ``uint32``
    scalars (broadcast) or arrays of that shape. Returns the two output words.
    """
    k1, k2, x1, x2 = (to_array(v) for v in (k1, k2, x1, x2))
    shape = x1.shape
    for name, v in (("k1", k1), ("k2", k2), ("x1", x1), ("x2", x2)):
        if v.dtype != UINT32 or v.shape not in ((), shape):
            raise InvalidArgumentError(
                f"threefry2x32: {name} must be a uint32 scalar or of the counters' shape "
                f"{shape}, got {v.type_text()}")
    k1 = lax.broadcast_in_dim(k1, shape, ()) if k1.shape != shape else k1
    k2 = lax.broadcast_in_dim(k2, shape, ()) if k2.shape != shape else k2
    ks = [k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), u32_full(_KEY_PARITY, shape))]
    a, b = lax.add(x1, ks[0]), lax.add(x2, ks[1])
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            a = lax.add(a, b)
            b = lax.bitwise_xor(a, _rotate_left(b, r))
        a = lax.add(a, ks[(i + 1) % 3])
        b = lax.add(lax.add(b, ks[(i + 2) % 3]), u32_full(i + 1, shape))
    return a, b


def iota_2x32(shape: Sequence[int]) -> tuple[Array, Array]:
    """The (high, low) 32-bit words of the row-major linear index over ``shape``."""
    shape = tuple(shape)
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise InvalidArgumentError(f"random arrays are limited to 2**32 elements, got shape "
                                   f"{shape} ({size} elements)")
    hi = u32_full(0, shape)
    if not shape:
        return hi, hi
    lo = lax.reshape(lax.iota(UINT32, size), shape)
    return hi, lo


def key_words(key: Array) -> tuple[Array, Array]:
    """The two ``uint32`` scalars of a ``uint32[2]`` key."""
    k1 = lax.reshape(lax.slice(key, (0,), (1,)), ())
    k2 = lax.reshape(lax.slice(key, (1,), (2,)), ())
    return k1, k2


def _stack_last(a: Array, b: Array) -> Array:
    shape = a.shape + (1,)
    return lax.concatenate([lax.reshape(a, shape), lax.reshape(b, shape)], len(a.shape))


def seed_to_key(seed: Array) -> Array:
    """The key of an integer scalar seed array: ``(0, seed)`` with the seed as ``uint32``
    (signed seeds wrap: ``-1`` gives ``0xFFFFFFFF``)."""
    lo = lax.convert_element_type(seed, UINT32)
    return _stack_last(u32_full(0, ()), lo)


def split_key(key: Array, shape: Sequence[int]) -> Array:
    """``shape`` new keys (an array of ``shape + (2,)``): the hash of each element's
    counter, both output words kept."""
    k1, k2 = key_words(key)
    hi, lo = iota_2x32(shape)
    b1, b2 = threefry2x32(k1, k2, hi, lo)
    return _stack_last(b1, b2)


def fold_in_key(key: Array, data: Array) -> Array:
    """The key ``hash(key, (0, data))`` for a ``uint32`` scalar ``data``."""
    k1, k2 = key_words(key)
    b1, b2 = threefry2x32(k1, k2, u32_full(0, ()), data)
    return _stack_last(b1, b2)


def random_bits(key: Array, bit_width: int, shape: Sequence[int]) -> Array:
    """Uniform random ``uint{bit_width}`` values of ``shape`` (8, 16 or 32 bits)."""
    if bit_width not in UINT_DTYPES:
        raise InvalidArgumentError(f"random bits come in 8, 16 or 32 bits, got {bit_width}")
    k1, k2 = key_words(key)
    hi, lo = iota_2x32(shape)
    b1, b2 = threefry2x32(k1, k2, hi, lo)
    bits = lax.bitwise_xor(b1, b2)
    if bit_width == 32:
        return bits
    return lax.convert_element_type(bits, UINT_DTYPES[bit_width])


__all__ = ["threefry2x32", "iota_2x32", "key_words", "seed_to_key", "split_key",
           "fold_in_key", "random_bits", "u32_full", "UINT32", "UINT_DTYPES"]
