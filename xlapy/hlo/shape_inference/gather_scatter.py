"""Shape rules of gather and scatter (part of the data-movement family), with batching dims."""
from __future__ import annotations

from typing import Sequence

from ..shape import Shape
from . import Ctx, array_shape, check_dims_in_range, rule, shape_text
from .computations import check_reducer


def _fmt(dims) -> str:
    return "{" + ",".join(str(d) for d in dims) + "}"


def _sorted_unique(ctx: Ctx, name: str, dims) -> None:
    ctx.check(list(dims) == sorted(set(dims)),
              f"{name}={_fmt(dims)} must be sorted and without repeats")


def _batch_dims_of_indices(ctx: Ctx, indices: Shape, ivd: int) -> tuple[int, ...]:
    """Index dims other than ``index_vector_dim`` (which may equal the rank: implicit 1)."""
    ctx.check(0 <= ivd <= indices.rank,
              f"index_vector_dim={ivd} is out of range for indices {shape_text(indices)}")
    return tuple(d for i, d in enumerate(indices.dims) if i != ivd)


def _index_vector_size(indices: Shape, ivd: int) -> int:
    return 1 if ivd == indices.rank else indices.dims[ivd]


def _check_batching(ctx: Ctx, operand: Shape, indices: Shape, ivd: int, op_name: str,
                    idx_name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    op_b = ctx.ints(op_name, ())
    idx_b = ctx.ints(idx_name, ())
    _sorted_unique(ctx, op_name, op_b)
    check_dims_in_range(ctx, op_name, op_b, operand.rank)
    check_dims_in_range(ctx, idx_name, idx_b, indices.rank)
    ctx.check(len(op_b) == len(idx_b),
              f"{op_name}={_fmt(op_b)} and {idx_name}={_fmt(idx_b)} must have the same length")
    ctx.check(ivd not in idx_b, f"{idx_name}={_fmt(idx_b)} must not contain "
                                f"index_vector_dim={ivd}")
    for a, b in zip(op_b, idx_b):
        ctx.check(operand.dims[a] == indices.dims[b],
                  f"batching dimension {a} of {shape_text(operand)} and {b} of indices "
                  f"{shape_text(indices)} must have the same size")
    return op_b, idx_b


def _check_operand_dims(ctx: Ctx, operand: Shape, indices: Shape, ivd: int,
                        window: tuple[str, Sequence[int]], dropped: tuple[str, Sequence[int]],
                        batching: tuple[str, Sequence[int]],
                        index_map: tuple[str, Sequence[int]]) -> None:
    """The checks gather and scatter share, under each op's attribute names: the dropped
    (collapsed/inserted) dims, the batching dims and the window dims cover the operand's
    rank exactly, and the index map has one entry per index-vector element."""
    (wname, wdims), (dname, ddims), (bname, bdims), (mname, mdims) = (window, dropped, batching,
                                                                      index_map)
    check_dims_in_range(ctx, dname, ddims, operand.rank)
    ctx.check(not set(ddims) & set(bdims),
              f"{dname}={_fmt(ddims)} and {bname}={_fmt(bdims)} must be disjoint")
    ctx.check(len(wdims) + len(ddims) + len(bdims) == operand.rank,
              f"{wname}={_fmt(wdims)}, {dname}={_fmt(ddims)} and {bname}={_fmt(bdims)} must "
              f"account for every dimension of {shape_text(operand)}")
    nidx = _index_vector_size(indices, ivd)
    ctx.check(len(mdims) == nidx,
              f"{mname}={_fmt(mdims)} must have {nidx} entries (the index vector size of "
              f"{shape_text(indices)})")
    check_dims_in_range(ctx, mname, mdims, operand.rank)


@rule("gather")
def gather(ctx: Ctx) -> Shape:
    """Result dims: ``offset_dims`` positions hold the slice sizes of the operand dims that are
    neither collapsed nor batching; the others hold the index dims but ``index_vector_dim``."""
    ctx.arity(2)
    operand, indices = ctx.array(0), ctx.array(1)
    ctx.check(indices.element_type.is_integral,
              f"start indices {shape_text(indices)} must have an integral element type")
    offset_dims = ctx.ints("offset_dims")
    collapsed = ctx.ints("collapsed_slice_dims")
    start_index_map = ctx.ints("start_index_map")
    ivd = int(ctx.required("index_vector_dim"))
    slice_sizes = ctx.ints("slice_sizes")
    batch = _batch_dims_of_indices(ctx, indices, ivd)
    op_batch, _ = _check_batching(ctx, operand, indices, ivd, "operand_batching_dims",
                                  "start_indices_batching_dims")

    _sorted_unique(ctx, "offset_dims", offset_dims)
    _sorted_unique(ctx, "collapsed_slice_dims", collapsed)
    out_rank = len(offset_dims) + len(batch)
    check_dims_in_range(ctx, "offset_dims", offset_dims, out_rank)
    _check_operand_dims(ctx, operand, indices, ivd, ("offset_dims", offset_dims),
                        ("collapsed_slice_dims", collapsed), ("operand_batching_dims", op_batch),
                        ("start_index_map", start_index_map))
    ctx.check(not set(start_index_map) & set(op_batch),
              f"start_index_map={_fmt(start_index_map)} must not contain operand batching dims")
    ctx.check(len(slice_sizes) == operand.rank,
              f"slice_sizes={_fmt(slice_sizes)} must have one entry per dimension of "
              f"{shape_text(operand)}")
    for i, (n, d) in enumerate(zip(slice_sizes, operand.dims)):
        ctx.check(0 <= n <= d, f"slice_sizes={_fmt(slice_sizes)}: size {n} of dimension {i} "
                               f"is out of bounds for {shape_text(operand)}")
    for d in collapsed + op_batch:
        ctx.check(slice_sizes[d] <= 1, f"slice_sizes={_fmt(slice_sizes)}: collapsed or batching "
                                       f"dimension {d} must have size 0 or 1")

    offset_sizes = [n for i, n in enumerate(slice_sizes)
                    if i not in collapsed and i not in op_batch]
    out, oi, bi = [], iter(offset_sizes), iter(batch)
    for i in range(out_rank):
        out.append(next(oi) if i in offset_dims else next(bi))
    _check_empty_slices(ctx, slice_sizes, collapsed + op_batch, operand, out)
    return array_shape(operand.element_type, out)


def _check_empty_slices(ctx: Ctx, slice_sizes: Sequence[int], dropped: Sequence[int],
                        operand: Shape, out: Sequence[int]) -> None:
    """XLA's rule lets a collapsed or batching dimension have slice size 0, but then every
    slice is empty while the result (which drops that dimension) may still have elements:
    each would be read from outside the slice, at a start clamped to ``[0, dim]``, past
    the operand (XLA leaves this undefined). Such a gather is only well defined when its
    result is empty, so a non-empty one is rejected."""
    if 0 in out:
        return
    for d in sorted(dropped):
        ctx.check(slice_sizes[d] != 0,
                  f"slice_sizes={_fmt(slice_sizes)}: collapsed or batching dimension {d} has "
                  f"slice size 0, so every slice of {shape_text(operand)} is empty, but the "
                  f"result {shape_text(array_shape(operand.element_type, out))} has elements: "
                  "they would be read from outside the operand")


@rule("scatter")
def scatter(ctx: Ctx) -> Shape:
    """``scatter(inputs..., indices, updates...)``: result is the inputs' shape (a tuple for
    several); updates have the index batch dims plus window dims of at most the input sizes."""
    k = len(ctx.operands)
    ctx.check(k >= 3 and k % 2 == 1,
              f"expects N inputs, indices and N updates (an odd count >= 3), got {k} operands")
    n = (k - 1) // 2
    inputs = [ctx.array(i) for i in range(n)]
    indices = ctx.array(n, "indices")
    updates = [ctx.array(n + 1 + i) for i in range(n)]
    operand = inputs[0]
    for s in inputs[1:]:
        ctx.check(s.dims == operand.dims, f"inputs {shape_text(operand)} and {shape_text(s)} "
                                          "must have the same dimensions")
    for u in updates[1:]:
        ctx.check(u.dims == updates[0].dims, f"updates {shape_text(updates[0])} and "
                                             f"{shape_text(u)} must have the same dimensions")
    for s, u in zip(inputs, updates):
        ctx.check(s.element_type == u.element_type,
                  f"updates {shape_text(u)} must have the element type of input {shape_text(s)}")
    ctx.check(indices.element_type.is_integral,
              f"indices {shape_text(indices)} must have an integral element type")

    window = ctx.ints("update_window_dims")
    inserted = ctx.ints("inserted_window_dims")
    to_operand = ctx.ints("scatter_dims_to_operand_dims")
    ivd = int(ctx.required("index_vector_dim"))
    batch = _batch_dims_of_indices(ctx, indices, ivd)
    in_batch, _ = _check_batching(ctx, operand, indices, ivd, "input_batching_dims",
                                  "scatter_indices_batching_dims")
    upd = updates[0]
    _sorted_unique(ctx, "update_window_dims", window)
    _sorted_unique(ctx, "inserted_window_dims", inserted)
    check_dims_in_range(ctx, "update_window_dims", window, upd.rank)
    _check_operand_dims(ctx, operand, indices, ivd, ("update_window_dims", window),
                        ("inserted_window_dims", inserted), ("input_batching_dims", in_batch),
                        ("scatter_dims_to_operand_dims", to_operand))
    ctx.check(upd.rank == len(window) + len(batch),
              f"updates {shape_text(upd)} must have rank {len(window) + len(batch)} "
              f"(update_window_dims={_fmt(window)} plus the index batch dims of "
              f"{shape_text(indices)})")
    window_operand_dims = [d for d in range(operand.rank)
                           if d not in inserted and d not in in_batch]
    for w, od in zip(window, window_operand_dims):
        ctx.check(upd.dims[w] <= operand.dims[od],
                  f"updates {shape_text(upd)} window dimension {w} exceeds dimension {od} of "
                  f"input {shape_text(operand)}")
    scatter_dims = [upd.dims[i] for i in range(upd.rank) if i not in window]
    ctx.check(tuple(scatter_dims) == batch,
              f"updates {shape_text(upd)} scatter dimensions {scatter_dims} must equal the index "
              f"batch dimensions {list(batch)} of {shape_text(indices)}")
    types = [s.element_type for s in inputs]
    check_reducer(ctx, "to_apply", types, types)
    if n == 1:
        return array_shape(operand.element_type, operand.dims)
    return Shape.tuple(array_shape(s.element_type, s.dims) for s in inputs)
