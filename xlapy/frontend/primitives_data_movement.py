"""Data-movement primitives: lowering and gradient rules, side by side.

Broadcast, reshape, transpose, slices (static and dynamic), concatenate, pad, reverse,
iota, gather and scatter. Lowerings are one HLO instruction each (operands arrive
checked by ``lax.py``). Vjp rules follow JAX's ``jax/_src/lax/slicing.py``; choices where
JAX has several:

- ``gather``'s cotangent is a scatter-add at the *clamped* start indices (gather clamps,
  so every gathered element's gradient lands where it was read from).
- ``scatter`` with ``mul``/``min``/``max`` combiners assumes the scattered positions are
  distinct for the updates' gradient (as JAX does).

Batching rules (``vmap``, see ``batching``) follow JAX's: most ops get the batch axis as
one more dimension; ``dynamic_slice``/``dynamic_update_slice`` with batched indices
become a gather/scatter with the example number as an extra index coordinate, and so do
``gather``/``scatter`` with batched indices.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..hlo.ir import HloInstruction
from . import lax
from .batching import axis_size, bdim_first, move_to, moveaxis, shift_axis
from .core import Array, LoweringContext, primitive, to_array

I = HloInstruction


def _zeros(like: Array) -> Array:
    return lax.full_like(like, 0)


def _first_weak(args: Sequence[Array], params: dict) -> bool:
    return bool(args) and args[0].weak_type


def _bool_to(x: Array, like: Array) -> Array:
    return lax.convert_element_type(x, like.dtype)


def _f(x: Array, v: Any) -> Array:
    return lax.full_like(x, v)


# ---------------------------------------------------------------------------- primitives
broadcast_in_dim_p = primitive("broadcast_in_dim")
broadcast_in_dim_p.def_lowering(
    lambda ctx, x, *, shape, broadcast_dimensions:
        ctx.b.broadcast_in_dim(x, shape, broadcast_dimensions))
reshape_p = primitive("reshape")
reshape_p.def_lowering(lambda ctx, x, *, new_sizes: ctx.b.reshape(x, new_sizes))
transpose_p = primitive("transpose")
transpose_p.def_lowering(lambda ctx, x, *, permutation: ctx.b.transpose(x, permutation))
slice_p = primitive("slice")
slice_p.def_lowering(lambda ctx, x, *, start_indices, limit_indices, strides:
                     ctx.b.slice(x, start_indices, limit_indices, strides))
dynamic_slice_p = primitive("dynamic_slice", weak=_first_weak)
dynamic_slice_p.def_lowering(
    lambda ctx, x, *idx, slice_sizes: ctx.b.dynamic_slice(x, idx, slice_sizes))
dynamic_update_slice_p = primitive("dynamic_update_slice", weak=_first_weak)
dynamic_update_slice_p.def_lowering(
    lambda ctx, x, u, *idx: ctx.b.dynamic_update_slice(x, u, idx))
concatenate_p = primitive("concatenate")
concatenate_p.def_lowering(lambda ctx, *xs, dimension: ctx.b.concatenate(xs, dimension))
pad_p = primitive("pad", weak=_first_weak)
pad_p.def_lowering(lambda ctx, x, v, *, padding_config: ctx.b.pad(x, v, padding_config))
rev_p = primitive("rev")
rev_p.def_lowering(lambda ctx, x, *, dimensions: ctx.b.reverse(x, dimensions))
iota_p = primitive("iota", weak=lambda args, params: False)
iota_p.def_lowering(lambda ctx, *, dtype, shape, dimension:
                    ctx.b.iota((dtype, shape), dimension))
gather_p = primitive("gather", weak=_first_weak)


@gather_p.def_lowering
def _gather(ctx: LoweringContext, x: I, idx: I, *, offset_dims, collapsed_slice_dims,
            start_index_map, index_vector_dim, slice_sizes) -> I:
    return ctx.b.gather(x, idx, offset_dims, collapsed_slice_dims, start_index_map,
                        index_vector_dim, slice_sizes)


SCATTER_COMBINERS = {"set": "set", "add": "add", "mul": "multiply", "min": "minimum",
                     "max": "maximum"}
scatter_p = primitive("scatter", weak=_first_weak)


@scatter_p.def_lowering
def _scatter(ctx: LoweringContext, x: I, idx: I, upd: I, *, update_window_dims,
             inserted_window_dims, scatter_dims_to_operand_dims, index_vector_dim,
             combiner: str) -> I:
    opcode = SCATTER_COMBINERS[combiner]
    if x.shape.element_type.is_pred:
        opcode = {"add": "or", "multiply": "and", "maximum": "or", "minimum": "and"}.get(
            opcode, opcode)
    comp = ctx.scalar_computation(opcode, x.shape.dtype)
    return ctx.b.scatter(x, idx, upd, comp, update_window_dims, inserted_window_dims,
                         scatter_dims_to_operand_dims, index_vector_dim)


# ------------------------------------------------------------------------- gradient rules
def _broadcast_vjp(g: Array, ans: Array, x: Array, *, shape: Sequence[int],
                   broadcast_dimensions: Sequence[int]) -> tuple:
    bdims = list(broadcast_dimensions)
    summed = [d for d in range(len(shape)) if d not in bdims]
    summed += [bdims[i] for i in range(x.ndim) if x.shape[i] == 1 and shape[bdims[i]] != 1]
    r = lax.reduce_sum(g, tuple(summed)) if summed else g
    return (lax.reshape(r, x.shape),)


broadcast_in_dim_p.def_vjp(_broadcast_vjp)
reshape_p.def_vjp(lambda g, ans, x, *, new_sizes: (lax.reshape(g, x.shape),))
transpose_p.def_vjp(lambda g, ans, x, *, permutation:
       (lax.transpose(g, tuple(int(i) for i in np.argsort(permutation))),))
rev_p.def_vjp(lambda g, ans, x, *, dimensions: (lax.rev(g, dimensions),))


def _slice_vjp(g: Array, ans: Array, x: Array, *, start_indices, limit_indices,
               strides) -> tuple:
    strides = strides or (1,) * x.ndim
    if g.size == 0:
        return (_zeros(x),)
    config = []
    for d in range(x.ndim):
        last = start_indices[d] + (g.shape[d] - 1) * strides[d]
        config.append((start_indices[d], x.shape[d] - last - 1, strides[d] - 1))
    return (lax.pad(g, to_array(np.zeros((), g.dtype)), config),)


slice_p.def_vjp(_slice_vjp)


def _dynamic_slice_vjp(g: Array, ans: Array, x: Array, *idx: Array, slice_sizes) -> tuple:
    return (lax.dynamic_update_slice(_zeros(x), g, list(idx), allow_negative_indices=False),
            ) + (None,) * len(idx)


def _dynamic_update_slice_vjp(g: Array, ans: Array, x: Array, u: Array, *idx: Array) -> tuple:
    g_x = lax.dynamic_update_slice(g, _zeros(u), list(idx), allow_negative_indices=False)
    g_u = lax.dynamic_slice(g, list(idx), u.shape, allow_negative_indices=False)
    return (g_x, g_u) + (None,) * len(idx)


dynamic_slice_p.def_vjp(_dynamic_slice_vjp)
dynamic_update_slice_p.def_vjp(_dynamic_update_slice_vjp)


def _concatenate_vjp(g: Array, ans: Array, *xs: Array, dimension: int) -> tuple:
    out, start = [], 0
    for x in xs:
        lo = [0] * g.ndim
        hi = list(g.shape)
        lo[dimension], hi[dimension] = start, start + x.shape[dimension]
        out.append(lax.slice(g, lo, hi))
        start += x.shape[dimension]
    return tuple(out)


concatenate_p.def_vjp(_concatenate_vjp)


def _pad_vjp(g: Array, ans: Array, x: Array, v: Array, *, padding_config) -> tuple:
    lo, hi, interior = zip(*padding_config)
    zero = to_array(np.zeros((), g.dtype))
    unpadded = lax.pad(g, zero, [(-a, -b, 0) for a, b in zip(lo, hi)])
    g_x = lax.slice(unpadded, [0] * g.ndim, unpadded.shape, [i + 1 for i in interior])
    total = lambda t: lax.reduce_sum(t, tuple(range(t.ndim)))  # noqa: E731
    g_v = lax.sub(total(g), total(g_x)) if g.ndim else _zeros(v)
    return g_x, g_v


pad_p.def_vjp(_pad_vjp)
iota_p.def_vjp(lambda g, ans, **kw: ())


# ------------------------------------------------------------------------ gather/scatter
def _clamped_gather_indices(x: Array, idx: Array, start_index_map: Sequence[int],
                            index_vector_dim: int, slice_sizes: Sequence[int]) -> Array:
    """``idx`` clamped the way gather clamps its start indices."""
    hi = np.array([x.shape[d] - slice_sizes[d] for d in start_index_map], idx.dtype)
    if index_vector_dim == idx.ndim:
        bound = lax.broadcast_in_dim(to_array(hi[0]), idx.shape, ())
    else:
        bound = lax.broadcast_in_dim(to_array(hi), idx.shape, (index_vector_dim,))
    return lax.clamp(_zeros(idx), idx, bound)


def _gather_vjp(g: Array, ans: Array, x: Array, idx: Array, *, offset_dims,
                collapsed_slice_dims, start_index_map, index_vector_dim,
                slice_sizes) -> tuple:
    safe = _clamped_gather_indices(x, idx, start_index_map, index_vector_dim, slice_sizes)
    g_x = lax.scatter(_zeros(x), safe, g, update_window_dims=offset_dims,
                      inserted_window_dims=collapsed_slice_dims,
                      scatter_dims_to_operand_dims=start_index_map,
                      index_vector_dim=index_vector_dim, combiner="add")
    return g_x, None


gather_p.def_vjp(_gather_vjp)


def _scatter_gather(t: Array, x: Array, idx: Array, upd: Array, update_window_dims,
                    inserted_window_dims, scatter_dims_to_operand_dims,
                    index_vector_dim) -> Array:
    """``t`` read at the places scatter wrote ``upd`` (the updates' shape)."""
    sizes, pos = [], 0
    for d in range(x.ndim):
        if d in inserted_window_dims:
            sizes.append(1)
        else:
            sizes.append(upd.shape[update_window_dims[pos]])
            pos += 1
    return lax.gather(t, idx, offset_dims=update_window_dims,
                      collapsed_slice_dims=inserted_window_dims,
                      start_index_map=scatter_dims_to_operand_dims,
                      index_vector_dim=index_vector_dim, slice_sizes=sizes)


def _update_ids(upd: Array, dims: dict) -> Array:
    """1-based ids of the update elements' scatter positions (windows share one id)."""
    window = set(dims["update_window_dims"])
    scatter_dims = [d for d in range(upd.ndim) if d not in window]
    shape = tuple(upd.shape[d] for d in scatter_dims)
    n = int(np.prod(shape, dtype=np.int64))
    one = lax.broadcast_in_dim(to_array(np.int32(1)), (n,), ())
    ids = lax.reshape(lax.add(lax.iota(np.int32, n), one), shape) if shape else \
        to_array(np.int32(1))
    return lax.broadcast_in_dim(ids, upd.shape, tuple(scatter_dims))


def _scatter_vjp(g: Array, ans: Array, x: Array, idx: Array, upd: Array, *,
                 update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
                 index_vector_dim, combiner: str) -> tuple:
    dims = dict(update_window_dims=update_window_dims, inserted_window_dims=inserted_window_dims,
                scatter_dims_to_operand_dims=scatter_dims_to_operand_dims,
                index_vector_dim=index_vector_dim)

    def read(t: Array) -> Array:
        return _scatter_gather(t, x, idx, upd, **dims)

    # Which updates took effect: scatter each update's id (out-of-bounds updates are
    # dropped) and read the ids back; for ``set`` only the one written last survives.
    ids = _update_ids(upd, dims)
    zero_ids = lax.broadcast_in_dim(to_array(np.int32(0)), x.shape, ())
    landed = lax.eq(read(lax.scatter(zero_ids, idx, ids, combiner="set", **dims)), ids) \
        if combiner == "set" else _in_bounds(idx, x, upd, dims)
    z_u = _zeros(upd)
    if combiner == "add":
        return g, None, lax.select(landed, read(g), z_u)
    if combiner == "set":
        return lax.scatter(g, idx, z_u, combiner="set", **dims), None, \
            lax.select(landed, read(g), z_u)
    if combiner == "mul":
        g_x = lax.scatter(g, idx, upd, combiner="mul", **dims)
        return g_x, None, lax.select(landed, read(lax.mul(g, x)), z_u)
    # min / max: the gradient is shared among the operand and updates equal to the result.
    hit_x = _bool_to(lax.eq(x, ans), x)
    hit_u = lax.select(landed, _bool_to(lax.eq(upd, read(ans)), upd), z_u)
    count = lax.add(hit_x, lax.scatter(_zeros(x), idx, hit_u, combiner="add", **dims))
    share = lax.div(g, lax.select(lax.eq(count, _zeros(count)), _f(count, 1), count))
    return lax.mul(share, hit_x), None, lax.mul(read(share), hit_u)


def _in_bounds(idx: Array, x: Array, upd: Array, dims: dict) -> Array:
    """Per update element: whether its window lies inside the operand (else dropped)."""
    window_sizes, pos = [], 0
    for d in range(x.ndim):
        if d in dims["inserted_window_dims"]:
            window_sizes.append(1)
        else:
            window_sizes.append(upd.shape[dims["update_window_dims"][pos]])
            pos += 1
    ivd = dims["index_vector_dim"]
    vec = idx if ivd < idx.ndim else lax.reshape(idx, idx.shape + (1,))
    hi = np.array([x.shape[d] - window_sizes[d] for d in dims["scatter_dims_to_operand_dims"]],
                  idx.dtype)
    axis = ivd if ivd < idx.ndim else idx.ndim
    bound = lax.broadcast_in_dim(to_array(hi), vec.shape, (axis,))
    ok = lax.bitwise_and(lax.ge(vec, _zeros(vec)), lax.le(vec, bound))
    ok = lax.reduce_and(ok, (axis,))                     # the batch shape of the updates
    window = set(dims["update_window_dims"])
    scatter_dims = tuple(d for d in range(upd.ndim) if d not in window)
    return lax.broadcast_in_dim(ok, upd.shape, scatter_dims)


scatter_p.def_vjp(_scatter_vjp)



# ------------------------------------------------------------------------- batching rules
@broadcast_in_dim_p.def_batching
def _broadcast_batch(vals, dims, *, shape, broadcast_dimensions):
    x = moveaxis(vals[0], dims[0], 0)
    return lax.broadcast_in_dim(x, (x.shape[0],) + tuple(shape),
                                (0,) + tuple(d + 1 for d in broadcast_dimensions)), 0


@reshape_p.def_batching
def _reshape_batch(vals, dims, *, new_sizes):
    x = moveaxis(vals[0], dims[0], 0)
    return lax.reshape(x, (x.shape[0],) + tuple(new_sizes)), 0


@transpose_p.def_batching
def _transpose_batch(vals, dims, *, permutation):
    x = moveaxis(vals[0], dims[0], 0)
    return lax.transpose(x, (0,) + tuple(p + 1 for p in permutation)), 0


@slice_p.def_batching
def _slice_batch(vals, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = vals, dims
    ins = lambda t, v: tuple(t[:d]) + (v,) + tuple(t[d:])  # noqa: E731
    return lax.slice(x, ins(start_indices, 0), ins(limit_indices, x.shape[d]),
                     ins(strides or (1,) * (x.ndim - 1), 1)), d


@rev_p.def_batching
def _rev_batch(vals, dims, *, dimensions):
    d = dims[0]
    return lax.rev(vals[0], tuple(shift_axis(a, d) for a in dimensions)), d


@concatenate_p.def_batching
def _concatenate_batch(vals, dims, *, dimension):
    return lax.concatenate(bdim_first(vals, dims), dimension + 1), 0


@pad_p.def_batching
def _pad_batch(vals, dims, *, padding_config):
    (x, v), (dx, dv) = vals, dims
    n = axis_size(vals, dims)
    x = move_to(x, dx, 0, n)
    cfg = ((0, 0, 0),) + tuple(padding_config)
    if dv is None:
        return lax.pad(x, v, cfg), 0
    # A batched padding value: pad with zeros, then select the padding positions.
    zero = to_array(np.zeros((), x.dtype))
    padded = lax.pad(x, zero, cfg)
    inside = lax.pad(lax.full_like(x, True, dtype=np.bool_), to_array(np.False_), cfg)
    fill = lax.broadcast_in_dim(v, padded.shape, (0,))
    return lax.select(inside, padded, fill), 0


def _batch_index_vector(idx: list[Array], n: int) -> Array:
    """``[n, 1 + k]`` start indices: the example number, then the ``k`` (batched or not)
    scalar indices of each example."""
    cols = [lax.broadcasted_iota(np.int32, (n, 1), 0)]
    for i, d in idx:
        i = lax.convert_element_type(move_to(i, d, 0, n), np.int32)
        cols.append(lax.reshape(i, (n, 1)))
    return lax.concatenate(cols, 1)


@dynamic_slice_p.def_batching
def _dynamic_slice_batch(vals, dims, *, slice_sizes):
    x, idx = vals[0], list(zip(vals[1:], dims[1:]))
    n = axis_size(vals, dims)
    if all(d is None for _, d in idx):
        d = dims[0]
        zero = to_array(np.int32(0))
        starts = [i for i, _ in idx]
        starts.insert(d, zero)
        sizes = tuple(slice_sizes[:d]) + (n,) + tuple(slice_sizes[d:])
        return lax.dynamic_slice(x, starts, sizes, allow_negative_indices=False), d
    # Batched indices: a gather (which clamps start indices as dynamic_slice does).
    x = move_to(x, dims[0], 0, n)
    k = len(slice_sizes)
    return lax.gather(x, _batch_index_vector(idx, n), offset_dims=tuple(range(1, k + 1)),
                      collapsed_slice_dims=(0,), start_index_map=tuple(range(k + 1)),
                      index_vector_dim=1, slice_sizes=(1,) + tuple(slice_sizes)), 0


@dynamic_update_slice_p.def_batching
def _dynamic_update_slice_batch(vals, dims):
    n = axis_size(vals, dims)
    x, u = move_to(vals[0], dims[0], 0, n), move_to(vals[1], dims[1], 0, n)
    idx = list(zip(vals[2:], dims[2:]))
    if all(d is None for _, d in idx):
        return lax.dynamic_update_slice(x, u, [to_array(np.int32(0))] + [i for i, _ in idx],
                                        allow_negative_indices=False), 0
    # Batched indices: clamp as dynamic_update_slice does, then a scatter.
    clamped = []
    for a, (i, d) in enumerate(idx):
        hi = to_array(np.int32(x.shape[a + 1] - u.shape[a + 1]))
        i = lax.convert_element_type(i, np.int32)
        clamped.append((lax.clamp(to_array(np.int32(0)), i, hi), d))
    k = u.ndim - 1
    return lax.scatter(x, _batch_index_vector(clamped, n), u,
                       update_window_dims=tuple(range(1, k + 1)), inserted_window_dims=(0,),
                       scatter_dims_to_operand_dims=tuple(range(k + 1)), index_vector_dim=1,
                       combiner="set"), 0


def _indices_with_example(idx: Array, index_vector_dim: int, n: int) -> tuple[Array, int]:
    """Batched indices (batch axis 0) with the example number as first index coordinate;
    returns them and their index vector dimension."""
    if index_vector_dim == idx.ndim:
        idx = lax.reshape(idx, idx.shape + (1,))
    shape = list(idx.shape)
    shape[index_vector_dim] = 1
    ex = lax.broadcasted_iota(idx.dtype, tuple(shape), 0)
    return lax.concatenate([ex, idx], index_vector_dim), index_vector_dim


@gather_p.def_batching
def _gather_batch(vals, dims, *, offset_dims, collapsed_slice_dims, start_index_map,
                  index_vector_dim, slice_sizes):
    (x, idx), (dx, di) = vals, dims
    plus = lambda t: tuple(a + 1 for a in t)  # noqa: E731
    if di is None:
        x = moveaxis(x, dx, 0)
        return lax.gather(x, idx, offset_dims=(0,) + plus(offset_dims),
                          collapsed_slice_dims=plus(collapsed_slice_dims),
                          start_index_map=plus(start_index_map),
                          index_vector_dim=index_vector_dim,
                          slice_sizes=(x.shape[0],) + tuple(slice_sizes)), 0
    idx = moveaxis(idx, di, 0)
    if dx is None:
        return lax.gather(x, idx, offset_dims=plus(offset_dims),
                          collapsed_slice_dims=collapsed_slice_dims,
                          start_index_map=start_index_map,
                          index_vector_dim=index_vector_dim + 1, slice_sizes=slice_sizes), 0
    x = moveaxis(x, dx, 0)
    idx, ivd = _indices_with_example(idx, index_vector_dim + 1, x.shape[0])
    return lax.gather(x, idx, offset_dims=plus(offset_dims),
                      collapsed_slice_dims=(0,) + plus(collapsed_slice_dims),
                      start_index_map=(0,) + plus(start_index_map), index_vector_dim=ivd,
                      slice_sizes=(1,) + tuple(slice_sizes)), 0


@scatter_p.def_batching
def _scatter_batch(vals, dims, *, update_window_dims, inserted_window_dims,
                   scatter_dims_to_operand_dims, index_vector_dim, combiner):
    n = axis_size(vals, dims)
    x, idx, upd = (move_to(v, d, 0, n) for v, d in zip(vals, dims))
    idx, ivd = _indices_with_example(idx, index_vector_dim + 1, n)
    plus = lambda t: tuple(a + 1 for a in t)  # noqa: E731
    return lax.scatter(x, idx, upd, update_window_dims=plus(update_window_dims),
                       inserted_window_dims=(0,) + plus(inserted_window_dims),
                       scatter_dims_to_operand_dims=(0,) + plus(scatter_dims_to_operand_dims),
                       index_vector_dim=ivd, combiner=combiner), 0


__all__ = ["broadcast_in_dim_p", "reshape_p", "transpose_p", "slice_p", "dynamic_slice_p",
           "dynamic_update_slice_p", "concatenate_p", "pad_p", "rev_p", "iota_p", "gather_p",
           "scatter_p", "SCATTER_COMBINERS"]
