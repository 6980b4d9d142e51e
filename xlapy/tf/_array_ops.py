"""TF's array ops (``tf.constant``, ``tf.reshape``, ``tf.gather``, ``tf.unique`` ...) on
``xlapy.numpy``.

Semantics are TensorFlow 2's where they differ from NumPy's: ``tf.constant(1.0)`` is a
strongly typed float32 (not a weak Python scalar), ``tf.concat`` needs its ``axis``,
``tf.split`` takes sizes (not split points), ``tf.gather`` has ``batch_dims``,
``tf.pad`` has TF's ``REFLECT``/``SYMMETRIC`` modes, ``tf.unique`` keeps first-occurrence
order. Out-of-range gather indices are clamped (XLA's rule; TF's CPU kernels raise).

``tf.shape``, ``tf.size`` and ``tf.rank`` return NumPy int32 values: shapes are always
static in xlapy, so shape arithmetic stays a compile-time value inside compiled
functions (TF gets the same effect by constant folding).

Ops with data-dependent output shapes (``tf.unique``, one-argument ``tf.where``,
``tf.boolean_mask``) run eagerly; inside a compiled function they raise
``InvalidArgumentError`` naming the op and the user's source line (must-compile
semantics).
"""
from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Any, Sequence

import numpy as np

from .. import numpy as xnp
from ..errors import InvalidArgumentError
from ..frontend import dtypes as _dt
from ..frontend import lax
from ..frontend import autodiff
from ..frontend.core import Array
from ..frontend.buckets import dynamic_trace, get_dimension_size
from ..frontend.graph_capture import host_op
from ..frontend.source_info import raise_not_compilable
from ..nn import one_hot as _one_hot
from ._common import (axes_arg, axis_arg, is_traced, static_ints, static_value,
                      tensor, tensors, tf_dtype, unsupported)

Unique = namedtuple("Unique", ["y", "idx"])

_SHAPE_HINT = ("compute it outside the compiled function (jit_compile=None/False runs op "
               "by op), or use a fixed-size formulation such as tf.where(cond, x, y)")


# ------------------------------------------------------------------------------- tensors
def constant(value: Any, dtype: Any = None, shape: Any = None, name: str | None = None) -> Array:
    """A constant tensor. Python ints are int32 and floats float32 (strongly typed, as in
    TF); ``shape`` reshapes ``value`` or fills it when ``value`` is a scalar."""
    x = tensor(value, dtype)
    if shape is not None:
        dims = static_ints(shape, "tf.constant shape")
        if x.size == 1 and int(np.prod(dims)) != 1:
            return xnp.broadcast_to(xnp.reshape(x, ()), dims)
        if x.size != int(np.prod(dims)):
            raise InvalidArgumentError(f"tf.constant: value of {x.size} elements does not fit "
                                       f"shape {dims}")
        x = xnp.reshape(x, dims)
    return x


def convert_to_tensor(value: Any, dtype: Any = None, dtype_hint: Any = None,
                      name: str | None = None) -> Array:
    """``value`` as a tensor; a tensor of another dtype than ``dtype`` is an error (TF's
    rule: convert, don't cast); ``dtype_hint`` is used for Python values only."""
    if isinstance(value, Array) or hasattr(value, "__xlapy_array__"):
        x = tensor(value)
        if dtype is not None and x.dtype != tf_dtype(dtype):
            raise InvalidArgumentError(f"tf.convert_to_tensor: tensor of dtype {x.dtype} "
                                       f"requested as {tf_dtype(dtype)}; use tf.cast")
        return x
    if dtype is None and dtype_hint is not None:
        try:
            return tensor(value, dtype_hint)
        except (InvalidArgumentError, TypeError, ValueError):
            pass
    return tensor(value, dtype)


def cast(x: Any, dtype: Any, name: str | None = None) -> Array:
    """``x`` converted to ``dtype`` (floats to ints round toward zero; complex to real
    keeps the real part; anything to bool is ``x != 0``)."""
    x = tensor(x)
    dt = tf_dtype(dtype)
    if _dt.is_complex(x.dtype) and not _dt.is_complex(dt):
        x = xnp.real(x)
    return lax.convert_element_type(x, dt)


def identity(input: Any, name: str | None = None) -> Array:
    return tensor(input)


def stop_gradient(input: Any, name: str | None = None) -> Array:
    return autodiff.stop_gradient(tensor(input))


# ------------------------------------------------------------------------------ creation
def zeros(shape: Any, dtype: Any = np.float32, name: str | None = None) -> Array:
    return xnp.zeros(static_ints(shape, "tf.zeros shape"), tf_dtype(dtype))


def ones(shape: Any, dtype: Any = np.float32, name: str | None = None) -> Array:
    return xnp.ones(static_ints(shape, "tf.ones shape"), tf_dtype(dtype))


def zeros_like(input: Any, dtype: Any = None, name: str | None = None) -> Array:
    return xnp.zeros_like(tensor(input), tf_dtype(dtype))


def ones_like(input: Any, dtype: Any = None, name: str | None = None) -> Array:
    return xnp.ones_like(tensor(input), tf_dtype(dtype))


def fill(dims: Any, value: Any, name: str | None = None) -> Array:
    """A tensor of shape ``dims`` filled with ``value`` (its dtype is ``value``'s)."""
    return xnp.full(static_ints(dims, "tf.fill dims"), tensor(value))


def range(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,
          name: str | None = None) -> Array:
    """``[start, limit)`` in steps of ``delta`` (``tf.range(n)`` is ``[0, n)``); int32
    unless an argument is a float (float32) or ``dtype`` says otherwise."""
    if limit is None:
        start, limit = 0, start
    vals = [static_value(v, "tf.range argument") for v in (start, limit, delta)]
    if dtype is None:
        dtype = np.float32 if builtins.any(isinstance(v, float) for v in vals) else np.int32
    return xnp.arange(*vals, dtype=tf_dtype(dtype))


def linspace(start: Any, stop: Any, num: Any, name: str | None = None,
             axis: int = 0) -> Array:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive (scalar bounds)."""
    if axis != 0:
        raise unsupported("tf.linspace", "axis", axis, "only scalar bounds (axis=0)")
    s, e = tensor(start), tensor(stop)
    return xnp.linspace(s, e, int(static_value(num, "tf.linspace num")), dtype=s.dtype)


def eye(num_rows: int, num_columns: int | None = None, batch_shape: Any = None,
        dtype: Any = np.float32, name: str | None = None) -> Array:
    out = xnp.eye(num_rows, num_columns, dtype=tf_dtype(dtype))
    if batch_shape is not None:
        batch = static_ints(batch_shape, "tf.eye batch_shape")
        out = xnp.broadcast_to(out, tuple(batch) + out.shape)
    return out


def one_hot(indices: Any, depth: int, on_value: Any = None, off_value: Any = None,
            axis: int | None = None, dtype: Any = None, name: str | None = None) -> Array:
    """One-hot vectors of length ``depth`` (out-of-range indices give all ``off_value``)."""
    if dtype is None:
        dtype = tensor(on_value).dtype if on_value is not None else (
            tensor(off_value).dtype if off_value is not None else np.float32)
    dt = tf_dtype(dtype)
    hot = _one_hot(tensor(indices), int(static_value(depth, "tf.one_hot depth")), np.bool_,
                   -1 if axis is None else axis)
    on = tensor(1 if on_value is None else on_value, dt)
    off = tensor(0 if off_value is None else off_value, dt)
    return xnp.where(hot, on, off)


# ----------------------------------------------------------------------------- shapes
def shape(input: Any, out_type: Any = np.int32, name: str | None = None) -> Any:
    """The static shape as a NumPy int32 vector (see the module docstring); under shape
    buckets (``experimental_relax_shapes``) the run-time sizes, a traced vector."""
    x = tensor(input)
    if dynamic_trace() and x.ndim:
        return xnp.stack([get_dimension_size(x, d) for d in builtins.range(x.ndim)]).astype(
            tf_dtype(out_type))
    return np.asarray(x.shape, tf_dtype(out_type))


def size(input: Any, out_type: Any = np.int32, name: str | None = None) -> np.ndarray:
    return np.asarray(tensor(input).size, tf_dtype(out_type))


def rank(input: Any, name: str | None = None) -> np.ndarray:
    return np.asarray(tensor(input).ndim, np.int32)


def reshape(tensor_: Any, shape: Any, name: str | None = None) -> Array:
    return xnp.reshape(tensor(tensor_), static_ints(shape, "tf.reshape shape"))


def transpose(a: Any, perm: Any = None, conjugate: bool = False, name: str | None = None) -> Array:
    """Permute the dimensions (reverse them when ``perm`` is None); ``conjugate``
    conjugates complex values too."""
    x = tensor(a)
    out = xnp.transpose(x, None if perm is None else static_ints(perm, "tf.transpose perm"))
    return xnp.conj(out) if conjugate else out


def concat(values: Sequence[Any], axis: Any, name: str | None = None) -> Array:
    xs = tensors(values)
    return xnp.concatenate(xs, axis_arg(axis, xs[0].ndim if xs else 1))


def stack(values: Sequence[Any], axis: int = 0, name: str | None = None) -> Array:
    return xnp.stack(tensors(values), axis)


def unstack(value: Any, num: int | None = None, axis: int = 0,
            name: str | None = None) -> list[Array]:
    x = tensor(value)
    ax = axis_arg(axis, x.ndim)
    if num is not None and num != x.shape[ax]:
        raise InvalidArgumentError(f"tf.unstack: num={num} but axis {ax} of {x.type_text()} "
                                   f"has size {x.shape[ax]}")
    return [xnp.squeeze(p, ax) for p in xnp.split(x, x.shape[ax], ax)]


def split(value: Any, num_or_size_splits: Any, axis: Any = 0, num: int | None = None,
          name: str | None = None) -> list[Array]:
    """Split into ``num_or_size_splits`` equal parts, or parts of the given sizes (one
    size may be -1: the rest)."""
    x = tensor(value)
    ax = axis_arg(axis, x.ndim)
    sizes = static_value(num_or_size_splits, "tf.split num_or_size_splits")
    if not isinstance(sizes, list):
        n = int(sizes)
        if n <= 0 or x.shape[ax] % n:
            raise InvalidArgumentError(f"tf.split: cannot split axis {ax} of {x.type_text()} "
                                       f"into {n} equal parts")
        return xnp.split(x, n, ax)
    sizes = [int(s) for s in sizes]
    if sizes.count(-1) > 1:
        raise InvalidArgumentError("tf.split: at most one size may be -1")
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[ax] - (builtins.sum(sizes) + 1)
    if builtins.sum(sizes) != x.shape[ax] or builtins.min(sizes, default=0) < 0:
        raise InvalidArgumentError(f"tf.split: sizes {sizes} do not add up to axis {ax}'s "
                                   f"size {x.shape[ax]}")
    return xnp.split(x, list(np.cumsum(sizes)[:-1]), ax)


def squeeze(input: Any, axis: Any = None, name: str | None = None) -> Array:
    x = tensor(input)
    return xnp.squeeze(x, axes_arg(axis, x.ndim))


def expand_dims(input: Any, axis: Any, name: str | None = None) -> Array:
    x = tensor(input)
    return xnp.expand_dims(x, axis_arg(axis, x.ndim + 1))


def tile(input: Any, multiples: Any, name: str | None = None) -> Array:
    x = tensor(input)
    reps = static_ints(multiples, "tf.tile multiples")
    if len(reps) != x.ndim:
        raise InvalidArgumentError(f"tf.tile: multiples {reps} must have one entry per "
                                   f"dimension of {x.type_text()}")
    return xnp.tile(x, reps)


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Array:
    return xnp.broadcast_to(tensor(input), static_ints(shape, "tf.broadcast_to shape"))


def reverse(tensor_: Any, axis: Any, name: str | None = None) -> Array:
    x = tensor(tensor_)
    return xnp.flip(x, axes_arg(axis, x.ndim))


def pad(tensor_: Any, paddings: Any, mode: str = "CONSTANT", constant_values: Any = 0,
        name: str | None = None) -> Array:
    """Pad by ``paddings`` (``[[before, after], ...]`` per dimension); ``mode`` is
    ``CONSTANT``, ``REFLECT`` (mirror without the edge) or ``SYMMETRIC`` (with it)."""
    x = tensor(tensor_)
    pads = np.asarray(static_value(paddings, "tf.pad paddings"), np.int64).reshape(-1, 2)
    if pads.shape[0] != x.ndim:
        raise InvalidArgumentError(f"tf.pad: paddings need {x.ndim} [before, after] pairs")
    m = mode.upper()
    if m == "CONSTANT":
        return xnp.pad(x, pads, constant_values=tensor(constant_values, x.dtype))
    if m not in ("REFLECT", "SYMMETRIC"):
        raise unsupported("tf.pad", "mode", mode, "use 'CONSTANT', 'REFLECT' or 'SYMMETRIC'")
    for ax, (lo, hi) in enumerate(pads):
        if lo or hi:
            limit = x.shape[ax] - (1 if m == "REFLECT" else 0)
            if lo > limit or hi > limit:
                raise InvalidArgumentError(f"tf.pad: {m} padding {lo, hi} of axis {ax} must "
                                           f"be at most {limit}")
            idx = np.pad(np.arange(x.shape[ax]), (lo, hi), m.lower())
            x = xnp.take(x, idx.astype(np.int32), axis=ax)
    return x


def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Array:
    """``input_[begin[i]:begin[i]+size[i]]`` per dimension (size -1: to the end); a traced
    ``begin`` makes it a dynamic slice."""
    x = tensor(input_)
    sizes = static_ints(size, "tf.slice size")
    if is_traced(begin):
        starts = [tensor(begin)[i] for i in builtins.range(x.ndim)]
        if -1 in sizes:
            raise InvalidArgumentError("tf.slice: size -1 needs a static begin")
        return lax.dynamic_slice(x, starts, sizes)
    b = static_ints(begin, "tf.slice begin")
    limit = [x.shape[i] if s == -1 else b[i] + s for i, s in enumerate(sizes)]
    return lax.slice(x, b, limit)


# ---------------------------------------------------------------------------- indexing
def gather(params: Any, indices: Any, validate_indices: Any = None, axis: Any = None,
           batch_dims: int = 0, name: str | None = None) -> Array:
    """Slices of ``params`` along ``axis`` (default ``batch_dims``) at ``indices``; the
    first ``batch_dims`` dimensions of both are batch dimensions."""
    p, idx = tensor(params), tensor(indices)
    b = int(batch_dims)
    if b < 0:
        b += idx.ndim
    ax = b if axis is None else axis_arg(axis, p.ndim)
    if b == 0:
        return xnp.take(p, idx, axis=ax)
    if not 0 < b <= builtins.min(ax, idx.ndim) or p.shape[:b] != idx.shape[:b]:
        raise InvalidArgumentError(f"tf.gather: batch_dims={batch_dims} needs axis >= "
                                   f"batch_dims and equal leading dimensions, got params "
                                   f"{p.type_text()}, indices {idx.type_text()}")
    # Bring `axis` next to the batch dims, flatten the batch into it, gather, put back.
    p = xnp.moveaxis(p, ax, b)
    batch = int(np.prod(p.shape[:b]))
    n = p.shape[b]
    flat_p = xnp.reshape(p, (batch * n,) + p.shape[b + 1:])
    offsets = xnp.reshape(xnp.arange(batch, dtype=idx.dtype) * n,
                          p.shape[:b] + (1,) * (idx.ndim - b))
    out = xnp.take(flat_p, xnp.clip(idx, 0, n - 1) + offsets, axis=0)
    # out: batch + index dims + params[b:ax] + params[ax+1:]; move params[b:ax] forward
    k, m = idx.ndim - b, ax - b
    order = list(builtins.range(b)) + [b + k + i for i in builtins.range(m)] + \
        [b + i for i in builtins.range(k)] + list(builtins.range(b + k + m, out.ndim))
    return xnp.transpose(out, order)


def gather_nd(params: Any, indices: Any, batch_dims: int = 0, name: str | None = None) -> Array:
    """``params[indices[..., 0], indices[..., 1], ...]`` (the last index dimension picks
    leading dimensions of ``params``)."""
    p, idx = tensor(params), tensor(indices)
    b = int(batch_dims)
    k = idx.shape[-1]
    if b + k > p.ndim:
        raise InvalidArgumentError(f"tf.gather_nd: index depth {k} + batch_dims {b} exceeds "
                                   f"the rank of {p.type_text()}")
    lead = idx.shape[b:-1]
    items = []
    for i in builtins.range(b):
        shape_i = [1] * (b + len(lead))
        shape_i[i] = p.shape[i]
        items.append(xnp.reshape(xnp.arange(p.shape[i], dtype=idx.dtype), shape_i))
    items += [idx[..., j] for j in builtins.range(k)]
    return p[tuple(items)]


def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Array:
    """Zeros of ``shape`` with ``updates`` added at ``indices`` (duplicates add up)."""
    u = tensor(updates)
    return tensor_scatter_nd_add(xnp.zeros(static_ints(shape, "tf.scatter_nd shape"), u.dtype),
                                 indices, u)


def _nd_index(x: Array, indices: Any) -> tuple:
    idx = tensor(indices)
    return tuple(idx[..., j] for j in builtins.range(idx.shape[-1]))


def tensor_scatter_nd_update(tensor_: Any, indices: Any, updates: Any,
                             name: str | None = None) -> Array:
    x = tensor(tensor_)
    return x.at[_nd_index(x, indices)].set(tensor(updates))


def tensor_scatter_nd_add(tensor_: Any, indices: Any, updates: Any,
                          name: str | None = None) -> Array:
    x = tensor(tensor_)
    return x.at[_nd_index(x, indices)].add(tensor(updates))


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Array:
    """``x`` where ``condition`` else ``y`` (broadcasting); with only ``condition``, the
    int64 coordinates of its true entries (data-dependent shape: eager only)."""
    if x is None and y is None:
        return _where_indices(condition)
    if x is None or y is None:
        raise InvalidArgumentError("tf.where: give both x and y, or neither")
    return xnp.where(tensor(condition), tensor(x), tensor(y))


@host_op("Where")
def _where_indices(condition: Any) -> Array:
    c = tensor(condition)
    if c.is_traced:
        raise_not_compilable("tf.where(condition)", "has a data-dependent output shape",
                             _SHAPE_HINT)
    return tensor(np.argwhere(np.asarray(c._value)), np.int64)


@host_op("BooleanMask")
def boolean_mask(tensor_: Any, mask: Any, axis: int | None = None,
                 name: str | None = None) -> Array:
    """The entries of ``tensor_`` where ``mask`` is true (data-dependent shape: eager only)."""
    x, m = tensor(tensor_), tensor(mask)
    if x.is_traced or m.is_traced:
        raise_not_compilable("tf.boolean_mask", "has a data-dependent output shape",
                             _SHAPE_HINT)
    ax = 0 if axis is None else axis_arg(axis, x.ndim)
    v, mv = np.asarray(x._value), np.asarray(m._value).astype(bool)
    flat = v.reshape(v.shape[:ax] + (-1,) + v.shape[ax + mv.ndim:])
    return tensor(np.compress(mv.reshape(-1), flat, axis=ax))


@host_op("Unique")
def unique(x: Any, out_idx: Any = np.int32, name: str | None = None) -> Unique:
    """``Unique(y, idx)``: the distinct values of the 1-D ``x`` in order of first
    occurrence and, for each entry of ``x``, its position in ``y``. The output shape
    depends on the data, so it cannot be compiled (eager only)."""
    t = tensor(x)
    if t.is_traced:
        raise_not_compilable("tf.unique", "has a data-dependent output shape", _SHAPE_HINT)
    if t.ndim != 1:
        raise InvalidArgumentError(f"tf.unique: x must be 1-D, got {t.type_text()}")
    v = np.asarray(t._value)
    values, first, inverse = np.unique(v, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank_of = np.empty_like(order)
    rank_of[order] = np.arange(len(order))
    return Unique(tensor(values[order]), tensor(rank_of[inverse.reshape(-1)], out_idx))


# ----------------------------------------------------------------------------- clipping
def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any,
                  name: str | None = None) -> Array:
    """``t`` clipped to ``[clip_value_min, clip_value_max]`` (bounds broadcast)."""
    x = tensor(t)
    return xnp.minimum(xnp.maximum(x, tensor(clip_value_min, x.dtype)),
                       tensor(clip_value_max, x.dtype))


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Array:
    """``t * clip_norm / max(l2norm(t, axes), clip_norm)``."""
    x = tensor(t)
    norm = xnp.sqrt(xnp.sum(xnp.square(x), axes_arg(axes, x.ndim), keepdims=True))
    c = tensor(clip_norm, x.dtype)
    return x * c / xnp.maximum(norm, c)


def global_norm(t_list: Sequence[Any], name: str | None = None) -> Array:
    """``sqrt(sum of squares of every tensor in t_list)`` (None entries are skipped)."""
    total = None
    for t in t_list:
        if t is not None:
            s = xnp.sum(xnp.square(tensor(t)))
            total = s if total is None else total + s
    return xnp.sqrt(total) if total is not None else xnp.zeros((), np.float32)


def clip_by_global_norm(t_list: Sequence[Any], clip_norm: Any, use_norm: Any = None,
                        name: str | None = None) -> tuple[list[Any], Array]:
    """``(clipped list, global norm)``: every tensor scaled by
    ``clip_norm / max(global_norm, clip_norm)`` (None entries stay None)."""
    norm = global_norm(t_list) if use_norm is None else tensor(use_norm)
    c = tensor(clip_norm, norm.dtype)
    scale = c / xnp.maximum(norm, c)
    return [None if t is None else tensor(t) * xnp.astype(scale, tensor(t).dtype)
            for t in t_list], norm


# ------------------------------------------------------------------------------ sorting
def sort(values: Any, axis: int = -1, direction: str = "ASCENDING",
         name: str | None = None) -> Array:
    x = tensor(values)
    ax = axis_arg(axis, x.ndim)
    if direction == "ASCENDING":
        return xnp.sort(x, ax)
    if direction != "DESCENDING":
        raise unsupported("tf.sort", "direction", direction, "use 'ASCENDING' or 'DESCENDING'")
    return xnp.flip(xnp.sort(x, ax), ax)


def argsort(values: Any, axis: int = -1, direction: str = "ASCENDING", stable: bool = False,
            name: str | None = None) -> Array:
    """Indices that sort ``values`` (always stable; descending keeps equal values in
    index order)."""
    x = tensor(values)
    ax = axis_arg(axis, x.ndim)
    if direction == "DESCENDING":
        x = -x if _dt.is_float(x.dtype) or x.dtype.kind == "i" else ~x
    elif direction != "ASCENDING":
        raise unsupported("tf.argsort", "direction", direction,
                          "use 'ASCENDING' or 'DESCENDING'")
    return xnp.argsort(x, ax)


__all__ = ["Unique", "constant", "convert_to_tensor", "cast", "identity", "stop_gradient",
           "zeros", "ones", "zeros_like", "ones_like", "fill", "range", "linspace", "eye",
           "one_hot", "shape", "size", "rank", "reshape", "transpose", "concat", "stack",
           "unstack", "split", "squeeze", "expand_dims", "tile", "broadcast_to", "reverse",
           "pad", "slice", "gather", "gather_nd", "scatter_nd", "tensor_scatter_nd_update",
           "tensor_scatter_nd_add", "where", "boolean_mask", "unique", "clip_by_value",
           "clip_by_norm", "global_norm", "clip_by_global_norm", "sort", "argsort"]
