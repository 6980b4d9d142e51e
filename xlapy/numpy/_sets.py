"""Set operations, partial and lexicographic sorts, and bit packing.

Set operations whose output size depends on the data (``intersect1d``, ``union1d``,
``setdiff1d``, ``setxor1d``, ``unique_*``) need concrete inputs, as ``unique`` does;
``isin``, ``lexsort``, ``partition`` and the bit packing compile.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend.core import Array
from ._elementwise import asarray, imag, real
from ._indexing import take, take_along_axis
from ._reductions import any as _any, normalize_axis
from ._shape_ops import moveaxis, ravel, reshape
from ._sorting import _SHAPE_HINT, _concrete_input, argsort, sort, unique


def isin(element: Any, test_elements: Any, assume_unique: bool = False,
         invert: bool = False) -> Array:
    """Elementwise: whether ``element`` occurs in ``test_elements``."""
    x = asarray(element)
    t = ravel(test_elements)
    hit = _any(reshape(x, x.shape + (1,)) == t, axis=-1) if t.size else \
        asarray(np.zeros(x.shape, bool))
    return ~hit if invert else hit


def _concrete_1d(name: str, a: Any) -> tuple[Array, np.ndarray]:
    x = ravel(a)
    return x, _concrete_input(f"xnp.{name}", x, _SHAPE_HINT)


def _from_positions(x: Array, pos: np.ndarray) -> Array:
    return take(x, asarray(pos.astype(np.int32)))


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False,
                return_indices: bool = False) -> Any:
    """Sorted unique values in both arrays (and their first indices in each)."""
    x1, v1 = _concrete_1d("intersect1d", ar1)
    x2, v2 = _concrete_1d("intersect1d", ar2)
    vals, i1, i2 = np.intersect1d(v1, v2, assume_unique, return_indices=True)
    out = _from_positions(x1, i1)
    if return_indices:
        return out, asarray(i1.astype(np.int32)), asarray(i2.astype(np.int32))
    return out


def union1d(ar1: Any, ar2: Any) -> Array:
    """Sorted unique values in either array."""
    from ._shape_ops import concatenate
    return unique(concatenate([ravel(ar1), ravel(ar2)]))


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Array:
    """Sorted unique values of ``ar1`` not in ``ar2``."""
    x1, v1 = _concrete_1d("setdiff1d", ar1)
    _, v2 = _concrete_1d("setdiff1d", ar2)
    vals = np.setdiff1d(v1, v2, assume_unique)
    first = {v: i for i, v in reversed(list(enumerate(v1.tolist())))}
    return _from_positions(x1, np.asarray([first[v] for v in vals.tolist()], np.int64))


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Array:
    """Sorted unique values in exactly one of the arrays."""
    _, v1 = _concrete_1d("setxor1d", ar1)
    _, v2 = _concrete_1d("setxor1d", ar2)
    dt = dtypes.promote_types((np.dtype(v1.dtype), False), (np.dtype(v2.dtype), False))[0]
    return asarray(np.setxor1d(v1, v2, assume_unique).astype(dt))


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def unique_all(x: Any, /) -> UniqueAllResult:
    """The array API's ``unique_all``: values, first indices, inverse (``x``'s shape)
    and counts."""
    a = asarray(x)
    vals, idx, inv, cnt = unique(a, return_index=True, return_inverse=True,
                                 return_counts=True)
    return UniqueAllResult(vals, idx, reshape(inv, a.shape), cnt)


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """The array API's ``unique_counts``."""
    vals, cnt = unique(x, return_counts=True)
    return UniqueCountsResult(vals, cnt)


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """The array API's ``unique_inverse`` (the inverse has ``x``'s shape)."""
    a = asarray(x)
    vals, inv = unique(a, return_inverse=True)
    return UniqueInverseResult(vals, reshape(inv, a.shape))


def unique_values(x: Any, /) -> Array:
    """The array API's ``unique_values``."""
    return unique(x)


def lexsort(keys: Sequence[Any], axis: int = -1) -> Array:
    """Indices that sort by the last key, then the one before, ... (stable)."""
    ks = [asarray(k) for k in keys]
    if not ks:
        raise InvalidArgumentError("lexsort: need at least one key")
    shape = ks[0].shape
    if any(k.shape != shape for k in ks):
        raise InvalidArgumentError("lexsort: all keys need the same shape")
    if not shape:
        return asarray(np.int32(0))
    ax = normalize_axis(axis, len(shape))
    idx = lax.broadcasted_iota(np.int32, shape, ax)
    for k in ks:
        order = argsort(take_along_axis(k, idx, ax), axis=ax)
        idx = take_along_axis(idx, order, ax)
    return idx


def sort_complex(a: Any) -> Array:
    """Sorted by real part, then imaginary part, as complex values."""
    x = asarray(a)
    if not dtypes.is_complex(x.dtype):
        x = x.astype(np.complex64)
    if x.ndim == 0:
        return x
    order = lexsort([imag(x), real(x)], axis=-1)
    return take_along_axis(x, order, -1)


def partition(a: Any, kth: int, axis: int = -1) -> Array:
    """``a`` with the ``kth`` element in its sorted place, smaller ones before it and
    larger ones after (here: fully sorted along ``axis``, which satisfies that)."""
    x = asarray(a)
    ax = normalize_axis(axis, x.ndim)
    k = int(kth)
    if not -x.shape[ax] <= k < x.shape[ax]:
        raise InvalidArgumentError(f"partition: kth {k} out of bounds for axis of size "
                                   f"{x.shape[ax]}")
    return sort(x, axis=ax)


def argpartition(a: Any, kth: int, axis: int = -1) -> Array:
    """Indices that would partition ``a`` (see :func:`partition`)."""
    x = asarray(a)
    ax = normalize_axis(axis, x.ndim)
    k = int(kth)
    if not -x.shape[ax] <= k < x.shape[ax]:
        raise InvalidArgumentError(f"argpartition: kth {k} out of bounds for axis of size "
                                   f"{x.shape[ax]}")
    return argsort(x, axis=ax)


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Array:
    """Pack the truth of ``a``'s elements into uint8 bytes along ``axis`` (padded with
    zeros to a multiple of 8)."""
    x = asarray(a)
    if not (dtypes.is_integer(x.dtype) or x.dtype == np.bool_):
        raise InvalidArgumentError(f"packbits takes integers or booleans, got {x.dtype}")
    if bitorder not in ("big", "little"):
        raise InvalidArgumentError(f"packbits: bitorder must be big or little, got {bitorder!r}")
    if axis is None:
        x, axis = ravel(x), 0
    ax = normalize_axis(axis, x.ndim)
    bits = moveaxis((x != 0).astype(np.uint8), ax, -1)
    n = bits.shape[-1]
    pad = (-n) % 8
    if pad:
        from ._pad import pad as _pad
        bits = _pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, pad)])
    groups = reshape(bits, bits.shape[:-1] + ((n + pad) // 8, 8))
    shifts = np.arange(8, dtype=np.uint8)
    shifts = shifts[::-1].copy() if bitorder == "big" else shifts
    packed = (groups << asarray(shifts)).sum(axis=-1).astype(np.uint8)
    return moveaxis(packed, -1, ax)


def unpackbits(a: Any, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> Array:
    """The bits of uint8 ``a`` as 0/1 uint8 values along ``axis``."""
    x = asarray(a)
    if x.dtype != np.uint8:
        raise InvalidArgumentError(f"unpackbits takes uint8, got {x.dtype}")
    if bitorder not in ("big", "little"):
        raise InvalidArgumentError(f"unpackbits: bitorder must be big or little, got "
                                   f"{bitorder!r}")
    if axis is None:
        x, axis = ravel(x), 0
    ax = normalize_axis(axis, x.ndim)
    shifts = np.arange(8, dtype=np.uint8)
    shifts = shifts[::-1].copy() if bitorder == "big" else shifts
    y = moveaxis(x, ax, -1)
    bits = (reshape(y, y.shape + (1,)) >> asarray(shifts)) & np.uint8(1)
    bits = reshape(bits, y.shape[:-1] + (y.shape[-1] * 8,))
    if count is not None:
        bits = bits[..., :count] if count >= 0 else bits[..., :bits.shape[-1] + count]
    return moveaxis(bits, -1, ax)
