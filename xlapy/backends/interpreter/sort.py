"""Interpreter handlers: sort, topk and the ``TopK`` custom-call.

``sort`` evaluates its comparator on whole arrays: the rows are sorted at once by
Batcher's odd-even merge sorting network, each compare-exchange stage one pair of
comparator evaluations over every (row, pair). Ties (neither ``less(a, b)`` nor
``less(b, a)``) are broken by original position, so the result is the stable
sort for any strict weak order -- whether or not ``is_stable`` is set, which
keeps results deterministic. A comparator that is exactly ``compare(p0, p1)``
with LT/GT uses ``np.argsort`` instead when that is provably the same order.

``topk`` orders floats by XLA's total order (-NaN < -inf < ... < -0 < +0 < ...
< +inf < +NaN) with ties going to the lower index, like XLA:CPU's TopK runtime.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ...errors import InvalidArgumentError
from ...hlo.ir import HloComputation, HloInstruction
from ...hlo.types import from_dtype
from .evaluator import Evaluator, custom_call, describe, handler
from .scalar_computation import apply_scalar, comparator_direction


@lru_cache(maxsize=128)
def _network(n: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Stages of Batcher's odd-even merge sort for ``n`` keys as (lower, upper) position arrays.

    Built for the next power of two; comparators touching positions >= n are dropped,
    which is exact because those positions would hold +infinity and never move.
    """
    size = 1 << max(n - 1, 0).bit_length()
    stages = []
    p = 1
    while p < size:
        k = p
        while k >= 1:
            a = np.arange(size - k)
            a = a[(a >= k % p) & ((a - k % p) % (2 * k) < k)]
            b = a + k
            keep = (a // (2 * p) == b // (2 * p)) & (b < n)
            if keep.any():
                stages.append((a[keep], b[keep]))
            k //= 2
        p *= 2
    return tuple(stages)


def total_order_key(x: np.ndarray) -> np.ndarray:
    """Integer keys ordering floats by XLA's total order (integers are their own keys)."""
    et = from_dtype(x.dtype)
    if not et.is_floating:
        return x
    if x.dtype.itemsize not in (2, 4, 8) or et.bits < 16:
        x = x.astype(np.float32)
    bits = x.view(np.dtype(f"int{8 * x.dtype.itemsize}"))
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


def stable_argsort(keys: np.ndarray, descending: bool) -> np.ndarray:
    """Stable argsort along the last axis; ties keep index order in both directions."""
    if not descending:
        return np.argsort(keys, axis=-1, kind="stable")
    n = keys.shape[-1]
    return n - 1 - np.argsort(keys[..., ::-1], axis=-1, kind="stable")[..., ::-1]


def _fast_order(comp: HloComputation, key: np.ndarray) -> np.ndarray | None:
    """The sorting permutation by argsort, when the comparator is a plain LT/GT on operand 0."""
    found = comparator_direction(comp)
    if found is None or found[0] not in ("LT", "GT"):
        return None
    direction, cmp_type = found
    et = from_dtype(key.dtype)
    if et.is_integral and key.dtype.kind in "iu" or et.is_pred:
        k = key
    elif et.is_floating and cmp_type == "TOTALORDER" and et.bits in (16, 32, 64):
        k = total_order_key(key)
    elif et.is_floating and cmp_type in (None, "FLOAT") and et.bits >= 16:
        k = key.astype(np.float32) if et.bits == 16 else key
        if np.isnan(k).any():
            return None      # a partial order: let the network apply the comparator as written
    else:
        return None
    return stable_argsort(k, descending=direction == "GT")


def _less(ev: Evaluator, comp: HloComputation, lhs: list, rhs: list) -> np.ndarray:
    args = [a for pair in zip(lhs, rhs) for a in pair]
    return np.asarray(apply_scalar(ev, comp, *args), dtype=bool)


def sort_permutation(ev: Evaluator, comp: HloComputation, keys: list[np.ndarray]) -> np.ndarray:
    """Permutation ``(rows, n)`` sorting the rows of ``keys`` (each ``(rows, n)``) by ``comp``.

    ``comp`` takes (lhs_0, rhs_0, lhs_1, rhs_1, ...) and returns "lhs before rhs".
    """
    rows, n = keys[0].shape
    fast = _fast_order(comp, keys[0])
    if fast is not None:
        return fast
    perm = np.broadcast_to(np.arange(n), (rows, n)).copy()
    for lo, hi in _network(n):
        pa, pb = perm[:, lo], perm[:, hi]
        va = [np.take_along_axis(k, pa, axis=1) for k in keys]
        vb = [np.take_along_axis(k, pb, axis=1) for k in keys]
        # One evaluation for both orders: less(b, a) on the left half, less(a, b) on the right.
        both = _less(ev, comp, [np.concatenate([b, a], axis=1) for a, b in zip(va, vb)],
                     [np.concatenate([a, b], axis=1) for a, b in zip(va, vb)])
        m = lo.size
        b_first, a_first = both[:, :m], both[:, m:]
        swap = b_first | (~a_first & (pb < pa))
        perm[:, lo] = np.where(swap, pb, pa)
        perm[:, hi] = np.where(swap, pa, pb)
    return perm


@handler("sort")
def _sort(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    arrays = [np.asarray(o) for o in operands]
    rank = arrays[0].ndim
    dims = instr.dimensions
    if len(dims) != 1 or not 0 <= dims[0] < max(rank, 1):
        raise InvalidArgumentError(f"sort needs one dimension in [0, {rank}), got {dims}: "
                                   f"{describe(instr)}")
    if rank == 0:
        return tuple(arrays) if instr.shape.is_tuple else arrays[0]
    d = dims[0]
    moved = [np.moveaxis(a, d, -1) for a in arrays]
    shape = moved[0].shape
    n = shape[-1]
    if n <= 1 or arrays[0].size == 0:
        return tuple(arrays) if instr.shape.is_tuple else arrays[0]
    rows = [m.reshape(-1, n) for m in moved]
    perm = sort_permutation(ev, instr.to_apply, rows)
    out = [np.moveaxis(np.take_along_axis(r, perm, axis=1).reshape(shape), -1, d) for r in rows]
    return tuple(out) if instr.shape.is_tuple else out[0]


def top_k(x: np.ndarray, k: int, largest: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` along the last axis by total order, ties to the lower index."""
    if from_dtype(x.dtype).is_complex:
        raise InvalidArgumentError("topk is not defined for complex values")
    order = stable_argsort(total_order_key(x), descending=largest)[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


@handler("topk")
def _topk(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    x = np.asarray(operands[0])
    k = int(instr.attrs["k"])
    if x.ndim == 0 or not 0 <= k <= x.shape[-1]:
        raise InvalidArgumentError(f"topk k={k} does not fit operand shape {x.shape}: "
                                   f"{describe(instr)}")
    return top_k(x, k, bool(instr.attrs.get("largest", True)))


@custom_call("TopK")
def _topk_custom_call(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    """JAX's TopK: operand ``[..., n]`` -> (values, s32 indices) ``[..., k]``.

    The called comparator (params: value lhs/rhs, index lhs/rhs) orders the elements;
    the first ``k`` of the stable order are returned.
    """
    x = np.asarray(operands[0])
    if not instr.shape.is_tuple or len(instr.shape.tuple_shapes) != 2 or x.ndim == 0:
        raise InvalidArgumentError(f"TopK custom-call must map an array to (values, indices): "
                                   f"{describe(instr)}")
    k = instr.shape.tuple_shapes[0].dims[-1]
    comps = instr.attrs.get("called_computations") or ()
    if not comps:
        return top_k(x, k, largest=True)
    n = x.shape[-1]
    rows = x.reshape(-1, n)
    iota = np.broadcast_to(np.arange(n, dtype=np.int32), rows.shape)
    perm = sort_permutation(ev, comps[0], [rows, iota])[:, :k]
    values = np.take_along_axis(rows, perm, axis=1).reshape(x.shape[:-1] + (k,))
    return values, perm.astype(np.int32).reshape(x.shape[:-1] + (k,))
