"""NumPy indexing: ``x[idx]`` and ``x.at[idx].set/add/mul/min/max``.

Basic indices (ints, slices with any step, ``None``, ``...``) lower to ``slice``,
``rev`` and ``reshape``; a traced integer scalar to ``dynamic-slice``; integer arrays
(NumPy's advanced indexing, including its rule for where the indexed dimensions go) to
``gather``. Out-of-bounds array indices are clamped (XLA's gather semantics). A boolean
mask works when its value is known; a traced mask has a data-dependent result shape and
cannot be compiled. ``.at[]`` updates lower to ``scatter``: the index expression is
applied to one ``iota`` per dimension to find each updated element's coordinates.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import lax
from ..frontend.core import Array
from ..frontend.source_info import raise_not_compilable
from ..frontend.tracing import concrete_int
from ._elementwise import _const, asarray, broadcast_shapes, broadcast_to


def _is_int_scalar(e: Any) -> bool:
    if isinstance(e, (bool, np.bool_)):
        return False
    if isinstance(e, (int, np.integer)):
        return True
    return isinstance(e, Array) and e.ndim == 0 and e.dtype.kind in "iu"


def _is_array_index(e: Any) -> bool:
    return isinstance(e, (Array, np.ndarray, list)) and not _is_int_scalar(e)


def _expand_masks(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for e in items:
        if isinstance(e, list):
            e = np.asarray(e)
            if e.dtype.kind == "f" and e.size == 0:
                e = e.astype(np.int32)
        is_bool = isinstance(e, (np.ndarray, Array)) and e.dtype == np.bool_
        if is_bool:
            if isinstance(e, Array) and e.is_traced:
                raise_not_compilable(
                    "boolean mask indexing x[mask]", "has a data-dependent output shape",
                    "use xnp.where(mask, x, fill) to keep the shape static, or index outside "
                    "the compiled function")
            out.extend(np.nonzero(np.asarray(e)))
        else:
            out.append(e)
    return out


def _normalize(x: Array, idx: Any) -> tuple[Array, list[Any]]:
    """(x with size-1 dims for None, one index entry per dim of that array)."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    items = _expand_masks(items)
    n_real = sum(1 for e in items if e is not None and e is not Ellipsis)
    if n_real > x.ndim:
        raise IndexError(f"too many indices for array of rank {x.ndim}: {n_real} given")
    if sum(e is Ellipsis for e in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    pos = next((i for i, e in enumerate(items) if e is Ellipsis), None)
    if pos is not None:
        items[pos:pos + 1] = [slice(None)] * (x.ndim - n_real)
    else:
        items += [slice(None)] * (x.ndim - n_real)
    if any(e is None for e in items):
        shape, dim = [], 0
        for e in items:
            if e is None:
                shape.append(1)
            else:
                shape.append(x.shape[dim])
                dim += 1
        x = lax.reshape(x, shape)
        items = [slice(None) if e is None else e for e in items]
    return x, items


def _index_array(e: Any, size: int) -> Array:
    a = asarray(e)
    if a.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer type, got {a.dtype}")
    a = lax.convert_element_type(a, np.int32)
    neg = lax.lt(a, _const(0, a))
    return lax.select(neg, lax.add(a, broadcast_to(_const(size, a), a.shape)), a)


def getitem(x: Any, idx: Any) -> Array:
    x = asarray(x)
    x, items = _normalize(x, idx)
    advanced = any(_is_array_index(e) for e in items)
    # 1. slices (and static ints, as size-1 slices): one rev + one slice
    starts, limits, strides, rev_dims, drop = [], [], [], [], []
    for d, e in enumerate(items):
        n = x.shape[d]
        if isinstance(e, slice):
            s = slice(*(None if v is None else concrete_int(v, "slice bound")
                        for v in (e.start, e.stop, e.step)))
            start, stop, step = s.indices(n)
            if step < 0:
                rev_dims.append(d)
                start, stop, step = n - 1 - start, n - 1 - stop, -step
            starts.append(start)
            limits.append(max(stop, start))
            strides.append(step)
        elif _is_int_scalar(e) and not advanced and not (isinstance(e, Array) and e.is_traced):
            i = int(e)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {d} with size {n}")
            starts.append(i % n)
            limits.append(i % n + 1)
            strides.append(1)
            drop.append(d)
        else:
            starts.append(0)
            limits.append(n)
            strides.append(1)
    y = lax.slice(lax.rev(x, rev_dims), starts, limits, strides)
    # 2. traced integer scalars without array indices: dynamic-slice
    dyn = [d for d, e in enumerate(items) if not advanced and isinstance(e, Array)
           and e.is_traced]
    if dyn:
        start_idx = [_index_array(items[d], y.shape[d]) if d in dyn else 0
                     for d in range(y.ndim)]
        sizes = [1 if d in dyn else y.shape[d] for d in range(y.ndim)]
        y = lax.dynamic_slice(y, start_idx, sizes)
        drop += dyn
    if not advanced:
        return lax.reshape(y, [s for d, s in enumerate(y.shape) if d not in drop])
    # 3. advanced indexing: gather
    adv = [d for d, e in enumerate(items) if not isinstance(e, slice)]
    arrays = [_index_array(items[d], y.shape[d]) for d in adv]
    bshape = broadcast_shapes(*[a.shape for a in arrays])
    stacked = lax.concatenate([lax.reshape(broadcast_to(a, bshape), bshape + (1,))
                               for a in arrays], len(bshape))
    rest = [d for d in range(y.ndim) if d not in adv]
    contiguous = adv == list(range(adv[0], adv[0] + len(adv)))
    nb = len(bshape)
    if contiguous:
        before = [d for d in rest if d < adv[0]]
        offset_dims = list(range(len(before))) + list(
            range(len(before) + nb, len(before) + nb + len(rest) - len(before)))
    else:
        offset_dims = list(range(nb, nb + len(rest)))
    return lax.gather(y, stacked, offset_dims=offset_dims, collapsed_slice_dims=adv,
                      start_index_map=adv, index_vector_dim=nb,
                      slice_sizes=[1 if d in adv else y.shape[d] for d in range(y.ndim)])


def take(a: Any, indices: Any, axis: int | None = None) -> Array:
    x = asarray(a)
    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    from ._reductions import normalize_axis
    ax = normalize_axis(axis, x.ndim)
    return getitem(x, (slice(None),) * ax + (asarray(indices),))


def scatter_update(x: Any, idx: Any, values: Any, combiner: str) -> Array:
    """``x`` with ``x[idx]`` combined with ``values`` (``set``/``add``/``mul``/``min``/``max``)."""
    x = asarray(x)
    grids = [getitem(lax.broadcasted_iota(np.int32, x.shape, d), idx) for d in range(x.ndim)]
    rshape = grids[0].shape if grids else getitem(x, idx).shape
    if grids:
        indices = lax.concatenate([lax.reshape(g, rshape + (1,)) for g in grids], len(rshape))
    else:
        indices = lax.broadcast_in_dim(asarray(np.int32(0)), rshape + (0,), ())
    v = asarray(values)
    v = broadcast_to(lax.convert_element_type(v, x.dtype, x.weak_type), rshape)
    rank = x.ndim
    return lax.scatter(x, indices, v, update_window_dims=(), inserted_window_dims=range(rank),
                       scatter_dims_to_operand_dims=range(rank), index_vector_dim=len(rshape),
                       combiner=combiner)


class _IndexUpdateRef:
    def __init__(self, x: Array, idx: Any) -> None:
        self.x, self.idx = x, idx

    def get(self) -> Array:
        return getitem(self.x, self.idx)

    def set(self, v: Any) -> Array:
        return scatter_update(self.x, self.idx, v, "set")

    def add(self, v: Any) -> Array:
        return scatter_update(self.x, self.idx, v, "add")

    def multiply(self, v: Any) -> Array:
        return scatter_update(self.x, self.idx, v, "mul")

    mul = multiply

    def min(self, v: Any) -> Array:
        return scatter_update(self.x, self.idx, v, "min")

    def max(self, v: Any) -> Array:
        return scatter_update(self.x, self.idx, v, "max")


class IndexUpdateHelper:
    """``x.at[idx]``: functional updates (``.set``, ``.add``, ``.mul``, ``.min``, ``.max``)."""

    def __init__(self, x: Array) -> None:
        self.x = x

    def __getitem__(self, idx: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.x, idx)


__all__ = ["getitem", "take", "scatter_update", "IndexUpdateHelper", "InvalidArgumentError"]
