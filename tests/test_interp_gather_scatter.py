"""Interpreter semantics of gather and scatter.

Expected values come from NumPy equivalents of the jnp idioms (take,
take_along_axis, x[idx], x.at[idx].add/set/min/max) and from straightforward
loop implementations of XLA's definitions (one output/update element at a time).
"""
from __future__ import annotations

import time

import numpy as np
import pytest

from xlapy.backends.interpreter import HANDLERS, Evaluator
from xlapy.hlo.ir import HloComputation, HloInstruction
from xlapy.hlo.shape import Shape
from xlapy.hlo.types import from_dtype

RNG = np.random.default_rng(1)


def shape_of(a) -> Shape:
    a = np.asarray(a)
    return Shape.array(from_dtype(a.dtype), a.shape)


# ------------------------------------------------------------------------------ gather

def gather_dims(operand_shape, indices_shape, offset_dims, collapsed, operand_batching,
                slice_sizes, ivd):
    """The output dims of a gather (XLA shape rule)."""
    batch = [n for d, n in enumerate(indices_shape) if d != ivd]
    window = [slice_sizes[d] for d in range(len(operand_shape))
              if d not in collapsed and d not in operand_batching]
    out, b, w = [], iter(batch), iter(window)
    for a in range(len(batch) + len(window)):
        out.append(next(w) if a in offset_dims else next(b))
    return tuple(out)


def gather(operand, indices, *, offset_dims, collapsed, start_index_map, ivd, slice_sizes,
           operand_batching=(), indices_batching=()):
    dims = gather_dims(operand.shape, indices.shape, offset_dims, collapsed, operand_batching,
                       slice_sizes, ivd)
    attrs = dict(offset_dims=offset_dims, collapsed_slice_dims=collapsed,
                 start_index_map=start_index_map, operand_batching_dims=operand_batching,
                 start_indices_batching_dims=indices_batching, index_vector_dim=ivd,
                 slice_sizes=slice_sizes)
    instr = HloInstruction("gather", Shape.array(from_dtype(operand.dtype), dims), [], attrs)
    return HANDLERS["gather"](Evaluator(), instr, [operand, indices])


def gather_reference(operand, indices, *, offset_dims, collapsed, start_index_map, ivd,
                     slice_sizes, operand_batching=(), indices_batching=()):
    """XLA's gather, one output element at a time."""
    dims = gather_dims(operand.shape, indices.shape, offset_dims, collapsed, operand_batching,
                       slice_sizes, ivd)
    window_dims = [d for d in range(operand.ndim)
                   if d not in collapsed and d not in operand_batching]
    out = np.empty(dims, operand.dtype)
    for out_idx in np.ndindex(*dims):
        batch = [out_idx[a] for a in range(len(dims)) if a not in offset_dims]
        offsets = [out_idx[a] for a in offset_dims]
        if ivd == indices.ndim:
            vector = [indices[tuple(batch)]]
        else:
            vector = indices[tuple(batch[:ivd]) + (slice(None),) + tuple(batch[ivd:])]
        start = [0] * operand.ndim
        for k, d in enumerate(start_index_map):
            start[d] = min(max(int(vector[k]), 0), operand.shape[d] - slice_sizes[d])
        for od, idim in zip(operand_batching, indices_batching):
            start[od] = batch[idim if idim < ivd else idim - 1]
        for j, d in enumerate(window_dims):
            start[d] += offsets[j]
        out[out_idx] = operand[tuple(start)]
    return out


def test_gather_take_axis0_with_clamping():
    x = RNG.normal(size=(5, 3)).astype(np.float32)
    idx = np.array([4, 0, 2, 2, -3, 9], np.int32)
    got = gather(x, idx, offset_dims=(1,), collapsed=(0,), start_index_map=(0,), ivd=1,
                 slice_sizes=(1, 3))
    np.testing.assert_array_equal(got, np.take(x, np.clip(idx, 0, 4), axis=0))


def test_gather_take_axis1():
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    idx = np.array([[1, 4], [0, 3]], np.int64)
    got = gather(x, idx, offset_dims=(0,), collapsed=(1,), start_index_map=(1,), ivd=2,
                 slice_sizes=(3, 1))
    np.testing.assert_array_equal(got, np.take(x, idx, axis=1))


def test_gather_advanced_indexing_pairs():
    x = RNG.normal(size=(4, 5, 6)).astype(np.float32)
    pairs = np.stack([RNG.integers(0, 4, 7), RNG.integers(0, 5, 7)], axis=1).astype(np.int32)
    got = gather(x, pairs, offset_dims=(1,), collapsed=(0, 1), start_index_map=(0, 1), ivd=1,
                 slice_sizes=(1, 1, 6))
    np.testing.assert_array_equal(got, x[pairs[:, 0], pairs[:, 1]])


def test_gather_take_along_axis_with_batching_dims():
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    idx = RNG.integers(0, 5, size=(3, 4)).astype(np.int32)
    got = gather(x, idx, offset_dims=(), collapsed=(1,), start_index_map=(1,), ivd=2,
                 slice_sizes=(1, 1), operand_batching=(0,), indices_batching=(0,))
    np.testing.assert_array_equal(got, np.take_along_axis(x, idx, axis=1))


def test_gather_unsigned_indices_clamp_high():
    x = np.arange(6, dtype=np.int32)
    idx = np.array([1, 2**32 - 1], np.uint32)       # u32 max is a large index, not -1
    got = gather(x, idx, offset_dims=(), collapsed=(0,), start_index_map=(0,), ivd=1,
                 slice_sizes=(1,))
    np.testing.assert_array_equal(got, [1, 5])


GATHER_CASES = [
    # windows of 2x3 at clamped starts (dynamic-slice per index), offset dims trailing
    dict(operand=(6, 7), indices=(4, 2), offset_dims=(1, 2), collapsed=(),
         start_index_map=(0, 1), ivd=1, slice_sizes=(2, 3)),
    # offset dim first, index vector in the middle of the indices
    dict(operand=(6, 7), indices=(2, 1, 3), offset_dims=(0,), collapsed=(0,),
         start_index_map=(0,), ivd=1, slice_sizes=(1, 4)),
    # start_index_map not in operand order; a window dim between batch dims
    dict(operand=(4, 5, 6), indices=(3, 2, 2), offset_dims=(1,), collapsed=(0, 2),
         start_index_map=(2, 0), ivd=2, slice_sizes=(1, 3, 1)),
    # batching dims not leading in either operand or indices, index vector in the middle
    dict(operand=(5, 3, 4), indices=(2, 1, 3), offset_dims=(2,), collapsed=(0,),
         start_index_map=(0,), ivd=1, slice_sizes=(1, 1, 2),
         operand_batching=(1,), indices_batching=(2,)),
    # two batching dims, implicit trailing index vector dim
    dict(operand=(2, 6, 3), indices=(3, 2), offset_dims=(), collapsed=(1,),
         start_index_map=(1,), ivd=2, slice_sizes=(1, 1, 1),
         operand_batching=(0, 2), indices_batching=(1, 0)),
]


@pytest.mark.parametrize("case", GATHER_CASES)
def test_gather_general_vs_reference(case):
    case = dict(case)
    x = RNG.normal(size=case.pop("operand")).astype(np.float32)
    ishape = case.pop("indices")
    idx = RNG.integers(-3, 9, size=ishape).astype(np.int32)   # includes out-of-range starts
    got = gather(x, idx, **case)
    np.testing.assert_array_equal(got, gather_reference(x, idx, **case))


# ------------------------------------------------------------------------------ scatter

def scalar_comp(op: str, dtype=np.float32, n: int = 1) -> HloComputation:
    """``op(p0, p1)`` on scalars; ``"set"`` returns p1; ``n`` > 1 gives a tuple of ``n`` results."""
    s = Shape.scalar(from_dtype(dtype))
    comp = HloComputation(f"comb_{op}")
    params = [comp.add_instruction(HloInstruction("parameter", s, name=f"p{i}",
                                                  parameter_number=i)) for i in range(2 * n)]
    if op == "set":
        comp.root = params[1]
        return comp
    if op == "sub_mul":                      # (p0 - p1) * p1: the update order matters
        diff = comp.add_instruction(HloInstruction("subtract", s, params))
        comp.root = comp.add_instruction(HloInstruction("multiply", s, [diff, params[1]]))
        return comp
    outs = [comp.add_instruction(HloInstruction(op, s, [params[i], params[n + i]]))
            for i in range(n)]
    if n == 1:
        comp.root = outs[0]
    else:
        comp.root = comp.add_instruction(HloInstruction("tuple", Shape.tuple([s] * n), outs))
    return comp


def scatter(operands, indices, updates, comp, *, window, inserted, to_operand, ivd,
            input_batching=(), indices_batching=()):
    operands = operands if isinstance(operands, list) else [operands]
    updates = updates if isinstance(updates, list) else [updates]
    shapes = [shape_of(x) for x in operands]
    attrs = dict(update_window_dims=window, inserted_window_dims=inserted,
                 scatter_dims_to_operand_dims=to_operand, index_vector_dim=ivd,
                 input_batching_dims=input_batching,
                 scatter_indices_batching_dims=indices_batching, to_apply=comp)
    shape = shapes[0] if len(shapes) == 1 else Shape.tuple(shapes)
    instr = HloInstruction("scatter", shape, [], attrs)
    return HANDLERS["scatter"](Evaluator(), instr, [*operands, indices, *updates])


def scatter_reference(operand, indices, updates, fn, *, window, inserted, to_operand, ivd,
                      input_batching=(), indices_batching=()):
    """XLA's scatter, one update element at a time, in update order."""
    out = operand.copy()
    scatter_dims = [d for d in range(updates.ndim) if d not in window]
    window_dims = [d for d in range(operand.ndim)
                   if d not in inserted and d not in input_batching]
    window_size = [1] * operand.ndim
    for d, ud in zip(window_dims, window):
        window_size[d] = updates.shape[ud]
    for pos in np.ndindex(*[updates.shape[d] for d in scatter_dims]):
        if ivd == indices.ndim:
            vector = [indices[pos]]
        else:
            vector = indices[pos[:ivd] + (slice(None),) + pos[ivd:]]
        start = [0] * operand.ndim
        for k, d in enumerate(to_operand):
            start[d] = int(vector[k])
        for od, idim in zip(input_batching, indices_batching):
            start[od] = pos[idim if idim < ivd else idim - 1]
        if any(s < 0 or s > n - w for s, n, w in zip(start, operand.shape, window_size)):
            continue                                     # whole window skipped
        for wpos in np.ndindex(*[updates.shape[d] for d in window]):
            upd_idx = [0] * updates.ndim
            for d, p in zip(scatter_dims, pos):
                upd_idx[d] = p
            for d, p in zip(window, wpos):
                upd_idx[d] = p
            target = list(start)
            for d, p in zip(window_dims, wpos):
                target[d] += p
            out[tuple(target)] = fn(out[tuple(target)], updates[tuple(upd_idx)])
    return out


ROWS = dict(window=(1,), inserted=(0,), to_operand=(0,), ivd=1)    # x.at[idx] on rows


@pytest.mark.parametrize("op,ufunc", [("add", np.add), ("multiply", np.multiply),
                                      ("minimum", np.minimum), ("maximum", np.maximum)])
def test_scatter_rows_with_duplicates_matches_ufunc_at(op, ufunc):
    x = RNG.normal(size=(10, 4)).astype(np.float32)
    idx = np.array([2, 5, 2, 8, 5, 2], np.int32)
    upd = RNG.normal(size=(6, 4)).astype(np.float32)
    got = scatter(x, idx, upd, scalar_comp(op), **ROWS)
    expected = x.copy()
    ufunc.at(expected, idx, upd)
    np.testing.assert_array_equal(got, expected)
    assert not np.shares_memory(got, x)


def test_scatter_set_last_update_wins():
    x = np.zeros((6, 2), np.float32)
    idx = np.array([3, 1, 3, 3, 0], np.int32)
    upd = np.arange(10, dtype=np.float32).reshape(5, 2)
    got = scatter(x, idx, upd, scalar_comp("set"), **ROWS)
    expected = x.copy()
    for i, r in enumerate(idx):
        expected[r] = upd[i]
    np.testing.assert_array_equal(got, expected)


def test_scatter_integer_add():
    x = RNG.integers(0, 100, size=(10, 4)).astype(np.int32)
    idx = np.array([2, 5, 2, 8, 5, 2], np.int32)
    upd = np.full((6, 4), 3, np.int32)
    got = scatter(x, idx, upd, scalar_comp("add", np.int32), **ROWS)
    expected = x.copy()
    np.add.at(expected, idx, upd)
    np.testing.assert_array_equal(got, expected)


def test_scatter_out_of_bounds_windows_are_skipped():
    # x.at[i, 1:4].set(...) style windows of width 3 in rows of width 5: a start column above
    # 2 leaves the row, and the whole window is dropped (not clamped, not partially written).
    x = np.zeros((4, 5), np.float32)
    starts = np.array([[0, 1], [1, 3], [-1, 0], [4, 0], [2, 2]], np.int32)
    upd = np.arange(1, 16, dtype=np.float32).reshape(5, 3)
    got = scatter(x, starts, upd, scalar_comp("set"), window=(1,), inserted=(0,),
                  to_operand=(0, 1), ivd=1)
    expected = x.copy()
    expected[0, 1:4] = upd[0]
    expected[2, 2:5] = upd[4]
    np.testing.assert_array_equal(got, expected)


def test_scatter_unsigned_index_out_of_bounds_is_skipped():
    x = np.zeros(4, np.float32)
    idx = np.array([1, 2**32 - 1], np.uint32)
    got = scatter(x, idx, np.array([5.0, 7.0], np.float32), scalar_comp("add"),
                  window=(), inserted=(0,), to_operand=(0,), ivd=1)
    np.testing.assert_array_equal(got, [0, 5, 0, 0])


def test_scatter_general_combiner_applies_duplicates_in_order():
    # f(a, b) = (a - b) * b is not a fast-path combiner and f(f(a, u1), u2) != f(f(a, u2), u1).
    x = np.array([10.0, 20.0, 30.0], np.float32)
    idx = np.array([1, 0, 1, 1, 2], np.int32)
    upd = np.array([1.0, 2.0, 4.0, 3.0, 0.5], np.float32)
    got = scatter(x, idx, upd, scalar_comp("sub_mul"), window=(), inserted=(0,),
                  to_operand=(0,), ivd=1)
    # element 1: (20 - 1) * 1 = 19, then (19 - 4) * 4 = 60, then (60 - 3) * 3 = 171
    np.testing.assert_array_equal(got, [(10 - 2) * 2, 171, (30 - 0.5) * 0.5])


def test_scatter_variadic_returns_tuple():
    a = np.zeros(4, np.float32)
    b = np.ones(4, np.int32)
    idx = np.array([0, 2, 2], np.int32)
    ua = np.array([1.0, 2.0, 3.0], np.float32)
    ub = np.array([5, 6, 7], np.int32)
    # combiner (a, b, ua, ub) -> (a + ua, b * ub) needs mixed types: build it by hand
    comp = HloComputation("pair")
    fs, is_ = Shape.scalar("f32"), Shape.scalar("s32")
    ps = [comp.add_instruction(HloInstruction("parameter", sh, name=f"p{i}", parameter_number=i))
          for i, sh in enumerate([fs, is_, fs, is_])]
    s0 = comp.add_instruction(HloInstruction("add", fs, [ps[0], ps[2]]))
    s1 = comp.add_instruction(HloInstruction("multiply", is_, [ps[1], ps[3]]))
    comp.root = comp.add_instruction(HloInstruction("tuple", Shape.tuple([fs, is_]), [s0, s1]))
    got = scatter([a, b], idx, [ua, ub], comp, window=(), inserted=(0,), to_operand=(0,), ivd=1)
    assert isinstance(got, tuple) and len(got) == 2
    np.testing.assert_array_equal(got[0], [1, 0, 5, 0])
    np.testing.assert_array_equal(got[1], [5, 1, 42, 1])
    assert got[1].dtype == np.int32


def test_scatter_with_batching_dims_matches_per_row_add_at():
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    idx = RNG.integers(0, 5, size=(3, 4)).astype(np.int32)
    upd = RNG.normal(size=(3, 4)).astype(np.float32)
    got = scatter(x, idx, upd, scalar_comp("add"), window=(), inserted=(1,), to_operand=(1,),
                  ivd=2, input_batching=(0,), indices_batching=(0,))
    expected = x.copy()
    for r in range(3):
        np.add.at(expected[r], idx[r], upd[r])
    np.testing.assert_allclose(got, expected, rtol=1e-6)


SCATTER_CASES = [
    # 2x2 windows into a matrix at (row, col) starts, some out of bounds
    dict(operand=(5, 6), indices=(4, 2), updates=(4, 2, 2), window=(1, 2), inserted=(),
         to_operand=(0, 1), ivd=1),
    # index vector in the middle of the indices; window dim first in the updates
    dict(operand=(6, 3), indices=(2, 1, 3), updates=(3, 2, 3), window=(0,), inserted=(0,),
         to_operand=(0,), ivd=1),
    # scatter_dims_to_operand_dims out of operand order, window between scatter dims
    dict(operand=(4, 5, 6), indices=(3, 2, 2), updates=(3, 5, 2), window=(1,),
         inserted=(0, 2), to_operand=(2, 0), ivd=2),
    # batching dim not leading, index vector in the middle
    dict(operand=(5, 3, 4), indices=(2, 1, 3), updates=(2, 3, 2), window=(2,), inserted=(0,),
         to_operand=(0,), ivd=1, input_batching=(1,), indices_batching=(2,)),
]


@pytest.mark.parametrize("op", ["add", "set", "sub_mul"])
@pytest.mark.parametrize("case", SCATTER_CASES)
def test_scatter_general_vs_reference(case, op):
    case = dict(case)
    x = RNG.normal(size=case.pop("operand")).astype(np.float32)
    idx = RNG.integers(-1, 6, size=case.pop("indices")).astype(np.int32)
    upd = RNG.normal(size=case.pop("updates")).astype(np.float32)
    fn = {"add": lambda a, b: a + b, "set": lambda a, b: b, "sub_mul": lambda a, b: (a - b) * b}[op]
    got = scatter(x, idx, upd, scalar_comp(op), **case)
    np.testing.assert_allclose(got, scatter_reference(x, idx, upd, fn, **case), rtol=1e-6)


@pytest.mark.parametrize("op", ["add", "maximum"])
def test_scatter_many_scalar_updates_is_fast(op):
    n = 100_000
    x = np.zeros(1000, np.float32)
    idx = RNG.integers(0, 1000, size=(n, 1)).astype(np.int32)
    upd = RNG.normal(size=n).astype(np.float32)
    t0 = time.perf_counter()
    got = scatter(x, idx, upd, scalar_comp(op), window=(), inserted=(0,), to_operand=(0,),
                  ivd=1)
    elapsed = time.perf_counter() - t0
    expected = x.copy()
    getattr(np, op).at(expected, idx[:, 0], upd)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert elapsed < 1.0, f"scatter of {n} updates took {elapsed:.2f}s"
