"""Interpreter handlers: gather and scatter in their general XLA form, vectorized with NumPy.

Both ops pair an *index space* with a *window*. The index space is the start
indices array without ``index_vector_dim`` (an implicit trailing size-1 dim when
``index_vector_dim`` equals its rank); each of its positions yields a start
vector for the operand: components from the index vector go to the operand dims
named by ``start_index_map`` / ``scatter_dims_to_operand_dims``, and operand
batching dims take the position's coordinate along the paired indices batching
dim. The window covers the operand dims that are neither collapsed/inserted nor
batching dims.

- gather: each start is clamped so the whole slice stays inside the operand.
- scatter: an update window that would leave the operand anywhere is skipped
  entirely; updates to the same element apply one after another in the order of
  the update's index space (row-major), then window positions.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...errors import InvalidArgumentError
from ...hlo.ir import HloComputation, HloInstruction
from .data_movement import check_result, indices_as_int64, require_integral
from .evaluator import Evaluator, describe, handler
from .scalar_computation import apply_scalar, as_list, simple_binary_op


def _index_space(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """Start indices as ``batch_shape + (index_vector_size,)`` int64 (index vector last)."""
    idx = np.asarray(indices)
    require_integral(idx)
    idx = indices_as_int64(idx)
    if index_vector_dim == idx.ndim:
        return idx[..., None]
    return np.moveaxis(idx, index_vector_dim, -1)


def _batch_position(indices_dim: int, index_vector_dim: int) -> int:
    """Which axis of the index space an indices dimension is (index_vector_dim removed)."""
    return indices_dim - 1 if indices_dim > index_vector_dim else indices_dim


def _operand_starts(instr: HloInstruction, space: np.ndarray, operand_rank: int,
                    index_map: Sequence[int], operand_batching: Sequence[int],
                    indices_batching: Sequence[int], index_vector_dim: int) -> np.ndarray:
    """Per index-space position, the operand start vector: ``batch_shape + (operand_rank,)``."""
    batch_shape = space.shape[:-1]
    if space.shape[-1] != len(index_map):
        raise InvalidArgumentError(
            f"{describe(instr)}: index vectors have {space.shape[-1]} components but the "
            f"index map {list(index_map)} names {len(index_map)} operand dims")
    starts = np.zeros(batch_shape + (operand_rank,), dtype=np.int64)
    for k, d in enumerate(index_map):
        starts[..., d] = space[..., k]
    for od, idim in zip(operand_batching, indices_batching):
        axis = _batch_position(idim, index_vector_dim)
        coord = np.arange(batch_shape[axis], dtype=np.int64)
        starts[..., od] = coord.reshape([-1 if a == axis else 1 for a in range(len(batch_shape))])
    return starts


def _ints(instr: HloInstruction, name: str) -> tuple[int, ...]:
    return tuple(instr.attrs.get(name, ()))


# ----------------------------------------------------------------------------------------------
# gather

@handler("gather")
def _gather(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """Slices of ``slice_sizes`` at clamped starts, arranged as the output's batch/offset dims."""
    operand, indices = operands
    rank = operand.ndim
    offset_dims = _ints(instr, "offset_dims")
    collapsed = _ints(instr, "collapsed_slice_dims")
    operand_batching = _ints(instr, "operand_batching_dims")
    slice_sizes = _ints(instr, "slice_sizes")
    ivd = instr.attrs["index_vector_dim"]
    if len(slice_sizes) != rank:
        raise InvalidArgumentError(f"{describe(instr)}: slice_sizes has {len(slice_sizes)} "
                                   f"entries for an operand of rank {rank}")

    space = _index_space(indices, ivd)
    starts = _operand_starts(instr, space, rank, _ints(instr, "start_index_map"),
                             operand_batching, _ints(instr, "start_indices_batching_dims"), ivd)
    # Clamp every start so the slice stays inside the operand.
    upper = np.array([operand.shape[d] - slice_sizes[d] for d in range(rank)], dtype=np.int64)
    starts = np.clip(starts, 0, np.maximum(upper, 0))

    window_dims = [d for d in range(rank) if d not in collapsed and d not in operand_batching]
    if len(window_dims) != len(offset_dims):
        raise InvalidArgumentError(f"{describe(instr)}: {len(offset_dims)} offset_dims for "
                                   f"{len(window_dims)} window dims of the operand")
    nb, nw = starts.ndim - 1, len(window_dims)
    grid = []
    for d in range(rank):
        coord = starts[..., d].reshape(starts.shape[:-1] + (1,) * nw)
        if d in window_dims:
            j = window_dims.index(d)
            coord = coord + np.arange(slice_sizes[d]).reshape(
                (1,) * nb + tuple(-1 if a == j else 1 for a in range(nw)))
        grid.append(coord)
    # Result laid out as batch dims then window dims; move them to the output positions.
    values = operand[tuple(np.broadcast_arrays(*grid))] if rank else np.broadcast_to(
        operand, starts.shape[:-1])
    out_rank = nb + nw
    batch_axes = iter(range(nb))
    perm = [nb + offset_dims.index(a) if a in offset_dims else next(batch_axes)
            for a in range(out_rank)]
    return check_result(instr, np.asarray(np.transpose(values, perm), order="C"))


# ----------------------------------------------------------------------------------------------
# scatter

_UFUNCS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
           "minimum": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
           "xor": np.bitwise_xor}


def _fast_combiner(comp: HloComputation, dtype: np.dtype) -> str | None:
    """``"set"`` or a ``_UFUNCS`` key when ``comp`` is that op on its two parameters.

    ``set`` is a combiner returning its second parameter (the update). Arithmetic
    ufuncs are used only on NumPy's own numeric types (not float maximum/minimum, whose
    ``-0 < +0`` order NumPy does not keep), bitwise ones on ints and bools.
    """
    if comp.num_parameters == 2 and comp.root is comp.parameters[1]:
        return "set"
    op = simple_binary_op(comp)
    if op is None or dtype.isbuiltin != 1:
        return None
    if op in ("and", "or", "xor"):
        return op if dtype.kind in "biu" else None
    if op in ("maximum", "minimum") and dtype.kind == "f":
        return None             # NumPy's maximum/minimum do not order -0 below +0
    return op if dtype.kind in "iufc" else None


def _occurrence_rank(targets: np.ndarray) -> np.ndarray:
    """For each entry, how many earlier entries have the same target (0 for the first)."""
    order = np.argsort(targets, kind="stable")
    sorted_targets = targets[order]
    n = len(targets)
    positions = np.arange(n)
    run_start = np.ones(n, dtype=bool)
    run_start[1:] = sorted_targets[1:] != sorted_targets[:-1]
    first_of_run = np.maximum.accumulate(np.where(run_start, positions, 0))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = positions - first_of_run
    return rank


def _apply_combiner(ev: Evaluator, comp: HloComputation, outs: list[np.ndarray],
                    targets: np.ndarray, updates: list[np.ndarray]) -> None:
    """Combine ``updates`` into the flat arrays ``outs`` at ``targets``, sequentially per target.

    Updates go in rounds: round ``r`` holds each target's ``r``-th update, so no target
    repeats within a round and the combiner runs vectorized over the round.
    """
    if len(targets) == 0:
        return
    kind = _fast_combiner(comp, outs[0].dtype) if len(outs) == 1 else None
    if kind == "set":
        last = len(targets) - 1 - np.unique(targets[::-1], return_index=True)[1]
        outs[0][targets[last]] = updates[0][last]
        return
    if kind is not None:
        _UFUNCS[kind].at(outs[0], targets, updates[0])
        return
    rank = _occurrence_rank(targets)
    order = np.argsort(rank, kind="stable")
    bounds = np.searchsorted(rank[order], np.arange(int(rank.max()) + 2))
    for r in range(len(bounds) - 1):
        sel = order[bounds[r]:bounds[r + 1]]
        where = targets[sel]
        results = as_list(apply_scalar(ev, comp, *[o[where] for o in outs],
                                       *[u[sel] for u in updates]))
        if len(results) != len(outs):
            raise InvalidArgumentError(f"scatter combiner {comp.name} returned {len(results)} "
                                       f"values for {len(outs)} operands")
        for o, value in zip(outs, results):
            o[where] = value


@handler("scatter")
def _scatter(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    """Combine update windows into copies of the operands (a tuple when there are several)."""
    if len(operands) % 2 != 1 or len(operands) < 3:
        raise InvalidArgumentError(f"{describe(instr)}: scatter takes N operands, one indices "
                                   f"array and N updates; got {len(operands)} operands")
    n = len(operands) // 2
    inputs, indices, updates = operands[:n], operands[n], operands[n + 1:]
    shape = inputs[0].shape
    rank = len(shape)
    window_of_update = _ints(instr, "update_window_dims")
    inserted = _ints(instr, "inserted_window_dims")
    input_batching = _ints(instr, "input_batching_dims")
    ivd = instr.attrs["index_vector_dim"]
    upd_shape = updates[0].shape
    if any(u.shape != upd_shape for u in updates) or any(x.shape != shape for x in inputs):
        raise InvalidArgumentError(f"{describe(instr)}: all operands (and all updates) must "
                                   f"have the same dims")

    space = _index_space(indices, ivd)
    starts = _operand_starts(instr, space, rank, _ints(instr, "scatter_dims_to_operand_dims"),
                             input_batching, _ints(instr, "scatter_indices_batching_dims"), ivd)
    scatter_dims = [d for d in range(len(upd_shape)) if d not in window_of_update]
    if tuple(upd_shape[d] for d in scatter_dims) != starts.shape[:-1]:
        raise InvalidArgumentError(
            f"{describe(instr)}: update scatter dims {[upd_shape[d] for d in scatter_dims]} do "
            f"not match the indices' batch dims {list(starts.shape[:-1])}")
    window_dims = [d for d in range(rank) if d not in inserted and d not in input_batching]
    if len(window_dims) != len(window_of_update):
        raise InvalidArgumentError(f"{describe(instr)}: {len(window_of_update)} update_window_dims"
                                   f" for {len(window_dims)} window dims of the operand")
    window_size = [1] * rank
    for d, ud in zip(window_dims, window_of_update):
        window_size[d] = upd_shape[ud]

    # Keep only index positions whose whole window lies inside the operand.
    num_positions = int(np.prod(starts.shape[:-1]))
    starts = starts.reshape(num_positions, rank)
    upper = np.array([shape[d] - window_size[d] for d in range(rank)], dtype=np.int64)
    in_bounds = np.all((starts >= 0) & (starts <= upper), axis=1)
    starts = starts[in_bounds]

    # Operand coordinates of every (index position, window position), in update order.
    window_shape = [upd_shape[ud] for ud in window_of_update]
    offsets = np.zeros((int(np.prod(window_shape)), rank), dtype=np.int64)
    if window_dims:
        mesh = np.indices(window_shape).reshape(len(window_dims), -1)
        for j, d in enumerate(window_dims):
            offsets[:, d] = mesh[j]
    coords = (starts[:, None, :] + offsets[None, :, :]).reshape(len(starts) * len(offsets), rank)
    targets = (np.ravel_multi_index(tuple(coords.T), shape) if rank
               else np.zeros(len(coords), dtype=np.int64))

    perm = scatter_dims + list(window_of_update)
    flat_updates = [np.transpose(u, perm).reshape(num_positions, len(offsets))[in_bounds]
                    .reshape(-1) for u in updates]
    outs = [np.array(x, dtype=x.dtype).reshape(-1) for x in inputs]
    _apply_combiner(ev, instr.attrs["to_apply"], outs, targets, flat_updates)
    results = tuple(o.reshape(shape) for o in outs)
    if instr.shape.is_tuple:
        return results
    return check_result(instr, results[0])
