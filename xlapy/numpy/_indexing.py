"""NumPy indexing: ``x[idx]``, ``take``, and ``x.at[idx].get/set/add/...`` with JAX's modes.

Reads. Basic indices (ints, slices with any step, ``None``, ``...``) lower to ``slice``,
``rev`` and ``reshape``; a traced integer scalar to ``dynamic-slice``; integer arrays
(NumPy's advanced indexing, including its rule for where the indexed dimensions go) to
``gather``. A boolean mask works when its value is known; a traced mask has a
data-dependent result shape and cannot be compiled.

Out-of-bounds indices follow JAX, not NumPy (which raises):

- ``x[idx]`` and ``x.at[idx].get()``: negative indices in ``[-n, 0)`` wrap; anything still
  out of range is clamped (XLA's gather semantics, JAX's ``promise_in_bounds``). A *static*
  Python int out of range in ``x[idx]`` raises IndexError, as NumPy does (JAX clamps it).
- ``.get(mode="fill", fill_value=...)`` (``"drop"`` is the same for reads) and ``take``'s
  default ``mode="fill"`` return ``fill_value`` there: NaN for inexact dtypes, the minimum
  of signed and the maximum of unsigned integers, True for bool (JAX's defaults).
- ``.set/.add/.subtract/.mul/.divide/.power/.min/.max`` lower to ``scatter``: an update
  whose (wrapped) index is out of range is dropped (JAX's default ``FILL_OR_DROP``, and
  XLA's scatter semantics); ``mode="clip"`` clamps it into range instead.
- ``take(..., mode="clip")`` clamps without wrapping negative indices; ``mode="wrap"``
  takes indices modulo the axis size.

``.at[]`` updates compute one coordinate per indexed element (slices give iotas, integer
arrays their wrapped values) and scatter element by element.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError, UnimplementedError
from ..frontend import dtypes
from ..frontend import lax
from ..frontend.core import Array
from ..frontend.source_info import raise_not_compilable
from ..frontend.tracing import concrete_int
from ._elementwise import _const, asarray, broadcast_shapes, broadcast_to

_GET_MODES = (None, "clip", "drop", "fill", "promise_in_bounds")


def _is_int_scalar(e: Any) -> bool:
    if isinstance(e, (bool, np.bool_)):
        return False
    if isinstance(e, (int, np.integer)):
        return True
    return isinstance(e, Array) and e.ndim == 0 and e.dtype.kind in "iu"


def _is_array_index(e: Any) -> bool:
    return isinstance(e, (Array, np.ndarray, list)) and not _is_int_scalar(e)


def _is_static_int(e: Any) -> bool:
    return _is_int_scalar(e) and not (isinstance(e, Array) and e.is_traced)


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


def _raw_index(e: Any) -> Array:
    a = asarray(e)
    if a.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer type, got {a.dtype}")
    return a


def _index_array(e: Any, size: int) -> Array:
    """``e`` as int32 with negative indices wrapped once (``i + size``), not clamped."""
    a = _raw_index(e)
    unsigned = a.dtype.kind == "u"
    a = lax.convert_element_type(a, np.int32)
    if unsigned:
        return a
    neg = lax.lt(a, _const(0, a))
    return lax.select(neg, lax.add(a, broadcast_to(_const(size, a), a.shape)), a)


def _slice_triple(e: slice, n: int) -> tuple[int, int, int]:
    s = slice(*(None if v is None else concrete_int(v, "slice bound")
                for v in (e.start, e.stop, e.step)))
    return s.indices(n)


def getitem(x: Any, idx: Any) -> Array:
    """``x[idx]`` with NumPy's indexing rules (out-of-range array indices clamp, as in JAX)."""
    x2, items = _normalize(asarray(x), idx)
    return _take_items(x2, items)


def _take_items(x: Array, items: list[Any]) -> Array:
    advanced = any(_is_array_index(e) for e in items)
    # 1. slices (and static ints, as size-1 slices): one rev + one slice
    starts, limits, strides, rev_dims, drop = [], [], [], [], []
    for d, e in enumerate(items):
        n = x.shape[d]
        if isinstance(e, slice):
            start, stop, step = _slice_triple(e, n)
            if step < 0:
                rev_dims.append(d)
                start, stop, step = n - 1 - start, n - 1 - stop, -step
            starts.append(start)
            limits.append(max(stop, start))
            strides.append(step)
        elif _is_static_int(e) and not advanced:
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


# ----------------------------------------------------------------------- index plans
@dataclass
class _Plan:
    """Where ``x[items]``'s elements come from: the result shape, and per dim of ``x``
    either a slice (start, step, result axis) or a wrapped index array (broadcast to the
    advanced shape, which sits at result axes ``adv_axes``)."""

    shape: tuple[int, ...]
    adv_axes: tuple[int, ...]
    dims: list[Any]           # per dim: ("slice", start, step, axis) or ("array", Array)


def _plan(x: Array, items: list[Any]) -> _Plan:
    """NumPy's result layout of ``x[items]``; integers count as 0-d index arrays (this
    gives the same layout as NumPy's basic integer indexing)."""
    adv = [d for d, e in enumerate(items) if not isinstance(e, slice)]
    arrays = {d: _index_array(items[d], x.shape[d]) for d in adv}
    bshape = broadcast_shapes(*[a.shape for a in arrays.values()]) if adv else ()
    slices = {d: _slice_triple(e, x.shape[d]) for d, e in enumerate(items)
              if isinstance(e, slice)}
    lengths = {d: len(range(*t)) for d, t in slices.items()}
    contiguous = adv == list(range(adv[0], adv[0] + len(adv))) if adv else True
    at = adv[0] if adv and contiguous else 0
    shape: list[int] = []
    axis_of: dict[int, int] = {}
    b_pos: int | None = None
    for d in sorted(slices):
        if adv and d >= at and b_pos is None:
            b_pos = len(shape)
            shape.extend(bshape)
        axis_of[d] = len(shape)
        shape.append(lengths[d])
    if b_pos is None:
        b_pos = len(shape)
        shape.extend(bshape)
    adv_axes = tuple(range(b_pos, b_pos + len(bshape)))
    dims: list[Any] = []
    for d in range(x.ndim):
        if d in slices:
            start, _, step = slices[d]
            dims.append(("slice", start, step, axis_of[d]))
        else:
            dims.append(("array", broadcast_to(arrays[d], bshape)))
    return _Plan(tuple(shape), adv_axes, dims)


def _coordinates(x: Array, plan: _Plan, clip: bool) -> list[Array]:
    """Per dim of ``x``: the int32 coordinate of every element of the result."""
    out = []
    for d, entry in enumerate(plan.dims):
        if entry[0] == "slice":
            _, start, step, axis = entry
            c = lax.broadcasted_iota(np.int32, plan.shape, axis)
            c = lax.add(lax.mul(c, _const(step, c)), _const(start, c))
        else:
            a = entry[1]
            if clip:
                a = lax.clamp(np.int32(0), a, np.int32(max(x.shape[d] - 1, 0)))
            c = lax.broadcast_in_dim(a, plan.shape, plan.adv_axes)
        out.append(c)
    return out


def _in_bounds(x: Array, plan: _Plan) -> Array | None:
    """Whether each element of the result reads an in-range position (None: all do)."""
    ok = None
    for d, entry in enumerate(plan.dims):
        if entry[0] != "array":
            continue
        a = entry[1]
        inside = lax.bitwise_and(lax.ge(a, _const(0, a)), lax.lt(a, _const(x.shape[d], a)))
        ok = inside if ok is None else lax.bitwise_and(ok, inside)
    if ok is None:
        return None
    return lax.broadcast_in_dim(ok, plan.shape, plan.adv_axes)


def default_fill_value(dtype: np.dtype) -> Any:
    """JAX's fill value for out-of-bounds reads: NaN, min of signed / max of unsigned
    integers, True for bool."""
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtype == np.bool_:
        return True
    info = dtypes.iinfo(dtype)
    return info.min if dtype.kind == "i" else info.max


def _fill_out_of_bounds(x: Array, out: Array, mask: Array | None, fill_value: Any) -> Array:
    if mask is None:
        return out
    fill = default_fill_value(out.dtype) if fill_value is None else fill_value
    f = lax.broadcast_in_dim(lax.convert_element_type(asarray(fill), out.dtype, out.weak_type),
                             out.shape, ())
    return lax.select(mask, out, f)


def _check_mode(mode: Any, allowed: tuple) -> Any:
    if mode not in allowed:
        names = ", ".join(repr(m) for m in allowed if m is not None)
        raise InvalidArgumentError(f"invalid indexing mode {mode!r}; expected one of {names}")
    return mode


def get_with_mode(x: Any, idx: Any, mode: Any = None, fill_value: Any = None) -> Array:
    """``x.at[idx].get(mode=..., fill_value=...)`` (see the module docstring)."""
    _check_mode(mode, _GET_MODES)
    x2, items = _normalize(asarray(x), idx)
    items = [np.asarray(e, np.int32) if _is_static_int(e) else e for e in items]
    out = _take_items(x2, items)
    if mode in ("fill", "drop"):
        out = _fill_out_of_bounds(x2, out, _in_bounds(x2, _plan(x2, items)), fill_value)
    return out


def take(a: Any, indices: Any, axis: int | None = None, mode: str | None = None,
         fill_value: Any = None, unique_indices: bool = False,
         indices_are_sorted: bool = False) -> Array:
    """Like numpy.take; out-of-range indices follow JAX: ``mode=None``/``"fill"`` (the
    default) gives ``fill_value`` (NaN, int min, ...), ``"clip"`` clamps (negative indices
    are not wrapped), ``"wrap"`` wraps; ``"raise"`` is not supported."""
    x = asarray(a)
    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    from ._reductions import normalize_axis
    ax = normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    if mode == "raise":
        raise UnimplementedError("xnp.take: mode='raise' is not supported (no error can be "
                                 "reported from compiled code); use 'fill', 'clip' or 'wrap'")
    _check_mode(mode, (None, "fill", "clip", "wrap"))
    i = _raw_index(indices)
    lowest = 0 if mode == "clip" else -n
    if not i.is_traced and np.all((np.asarray(i._value) >= lowest) & (np.asarray(i._value) < n)):
        mode = "promise_in_bounds"          # known to be in range: a plain gather
    elif mode == "clip":
        i = lax.clamp(np.int32(0), lax.convert_element_type(i, np.int32),
                      np.int32(max(n - 1, 0)))
    elif mode == "wrap":
        from ._elementwise import remainder
        i = remainder(lax.convert_element_type(i, np.int32), np.int32(max(n, 1)))
    items = [slice(None)] * ax + [i] + [slice(None)] * (x.ndim - ax - 1)
    out = _take_items(x, items)
    if mode in (None, "fill"):
        out = _fill_out_of_bounds(x, out, _in_bounds(x, _plan(x, items)), fill_value)
    return out


def take_along_axis(arr: Any, indices: Any, axis: int | None, mode: str | None = None,
                    fill_value: Any = None) -> Array:
    """Like numpy.take_along_axis (``indices`` broadcast against ``arr`` in the other
    dims). Out-of-range indices follow JAX: ``mode=None``/``"fill"``/``"drop"`` read
    ``fill_value``; ``"clip"``/``"promise_in_bounds"`` wrap negative indices once, then
    clamp."""
    _check_mode(mode, _GET_MODES)
    x = asarray(arr)
    i = _raw_index(indices)
    if axis is None:
        x, i, axis = lax.reshape(x, (x.size,)), lax.reshape(i, (i.size,)), 0
    from ._reductions import normalize_axis
    ax = normalize_axis(axis, x.ndim)
    if i.ndim != x.ndim:
        raise InvalidArgumentError(f"take_along_axis: indices of rank {i.ndim} for an array "
                                   f"of rank {x.ndim}")
    shape = broadcast_shapes(tuple(1 if d == ax else s for d, s in enumerate(x.shape)),
                             tuple(1 if d == ax else s for d, s in enumerate(i.shape)))
    ishape = shape[:ax] + (i.shape[ax],) + shape[ax + 1:]
    i = broadcast_to(i, ishape)
    items: list[Any] = [lax.broadcasted_iota(np.int32, ishape, d) if d != ax else i
                        for d in range(x.ndim)]
    xb = broadcast_to(x, shape[:ax] + (x.shape[ax],) + shape[ax + 1:])
    return get_with_mode(xb, tuple(items), "fill" if mode in (None, "drop") else mode,
                         fill_value)


def scatter_update(x: Any, idx: Any, values: Any, combiner: str, mode: Any = None) -> Array:
    """``x`` with ``x[idx]`` combined with ``values`` (``set``/``add``/``mul``/``min``/``max``).

    Updates at out-of-range indices are dropped (``mode=None``, ``"drop"``, ``"fill"``,
    ``"promise_in_bounds"``) or clamped into range (``"clip"``).
    """
    _check_mode(mode, _GET_MODES)
    x = asarray(x)
    x2, items = _normalize(x, idx)
    plan = _plan(x2, items)
    coords = _coordinates(x2, plan, clip=mode == "clip")
    rshape = plan.shape
    if coords:
        indices = lax.concatenate([lax.reshape(c, rshape + (1,)) for c in coords], len(rshape))
    else:
        indices = lax.broadcast_in_dim(asarray(np.int32(0)), rshape + (0,), ())
    v = asarray(values)
    v = broadcast_to(lax.convert_element_type(v, x.dtype, x.weak_type), rshape)
    rank = x2.ndim
    out = lax.scatter(x2, indices, v, update_window_dims=(), inserted_window_dims=range(rank),
                      scatter_dims_to_operand_dims=range(rank), index_vector_dim=len(rshape),
                      combiner=combiner)
    return lax.reshape(out, x.shape)


class _IndexUpdateRef:
    """``x.at[idx]``: one method per update kind (keyword ``mode`` on each, JAX style)."""

    def __init__(self, x: Array, idx: Any) -> None:
        self.x, self.idx = x, idx

    def get(self, *, mode: Any = None, fill_value: Any = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Array:
        """``x[idx]``; ``mode="fill"``/``"drop"`` reads ``fill_value`` out of range."""
        return get_with_mode(self.x, self.idx, mode, fill_value)

    def set(self, v: Any, *, mode: Any = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Array:
        """``x[idx] = v``, functionally."""
        return scatter_update(self.x, self.idx, v, "set", mode)

    def add(self, v: Any, *, mode: Any = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Array:
        """``x[idx] += v`` (repeated indices accumulate)."""
        return scatter_update(self.x, self.idx, v, "add", mode)

    def subtract(self, v: Any, *, mode: Any = None, indices_are_sorted: bool = False,
                 unique_indices: bool = False) -> Array:
        """``x[idx] -= v`` (repeated indices accumulate)."""
        from ._elementwise import negative
        return scatter_update(self.x, self.idx, negative(v), "add", mode)

    def multiply(self, v: Any, *, mode: Any = None, indices_are_sorted: bool = False,
                 unique_indices: bool = False) -> Array:
        """``x[idx] *= v`` (repeated indices accumulate)."""
        return scatter_update(self.x, self.idx, v, "mul", mode)

    mul = multiply

    def divide(self, v: Any, *, mode: Any = None, indices_are_sorted: bool = False,
               unique_indices: bool = False) -> Array:
        """``x[idx] /= v``: ``x`` divided by the scattered product of ``v`` (as JAX)."""
        from ._elementwise import true_divide
        ones = lax.full_like(self.x, 1)
        return true_divide(self.x, scatter_update(ones, self.idx, v, "mul", mode))

    def power(self, v: Any, *, mode: Any = None, indices_are_sorted: bool = False,
              unique_indices: bool = False) -> Array:
        """``x[idx] **= v``: ``x`` raised to the scattered product of ``v`` (as JAX)."""
        from ._elementwise import power
        ones = lax.full_like(self.x, 1)
        return power(self.x, scatter_update(ones, self.idx, v, "mul", mode))

    def min(self, v: Any, *, mode: Any = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Array:
        """``x[idx] = minimum(x[idx], v)``."""
        return scatter_update(self.x, self.idx, v, "min", mode)

    def max(self, v: Any, *, mode: Any = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Array:
        """``x[idx] = maximum(x[idx], v)``."""
        return scatter_update(self.x, self.idx, v, "max", mode)


class IndexUpdateHelper:
    """``x.at[idx]``: functional updates (``.set``, ``.add``, ``.mul``, ``.min``, ``.max`` ...)."""

    def __init__(self, x: Array) -> None:
        self.x = x

    def __getitem__(self, idx: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.x, idx)


__all__ = ["getitem", "take", "take_along_axis", "scatter_update", "get_with_mode",
           "IndexUpdateHelper", "default_fill_value"]
