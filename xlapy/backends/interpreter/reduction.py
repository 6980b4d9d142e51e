"""Interpreter handlers: reduce, reduce-window, select-and-scatter, map (sort and top-k: sort.py).

Reducers run vectorized: the reduced elements of every output position are laid
out along a last axis and combined pairwise in a tree (``log2(n)`` evaluations
of the reducer over whole arrays), neighbours in index order, so that an
associative reducer gives XLA's result up to floating-point rounding. The init
value is combined once per output element, as the left operand, like XLA's
evaluator and CPU backend do. A reducer that is exactly ``add``/``multiply``/
``maximum``/``minimum``/``and``/``or``/``xor`` of its two parameters is computed
as XLA's evaluator defines it -- a sequential left fold from the init value --
with ``ufunc.accumulate`` (16-bit and narrower floats accumulate in f32, as
XLA:CPU's float normalization does).

Windows (reduce-window, select-and-scatter) follow XLA's evaluator and CPU
emitter: window positions that fall in the padding or in the holes of base
(lhs) dilation are skipped, not filled with the init value. A reduce-window's
window elements are gathered for slabs of the output at a time (memory
proportional to the output, not output x window); a running prefix (JAX's
``cumsum``/``cummax``... lowering: one window covering the whole axis) with a plain
reducer is one ``accumulate``, and so is a running suffix when the fold's order does not
change its value.
"""
from __future__ import annotations

from math import prod
from typing import Any, Sequence

import ml_dtypes
import numpy as np

from ...errors import InvalidArgumentError
from ...hlo.attrs import Window
from ...hlo.ir import HloComputation, HloInstruction
from ...hlo.types import from_dtype
from ...passes.reducer_operand_types import reducer_operand_types
from .evaluator import Evaluator, describe, handler
from .scalar_computation import apply_scalar, as_list, simple_binary_op

_BITWISE = {"and": (np.logical_and, np.bitwise_and), "or": (np.logical_or, np.bitwise_or),
            "xor": (np.logical_xor, np.bitwise_xor)}
_ARITH = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum}


def _fast_ufunc(op: str | None, dtype: np.dtype) -> np.ufunc | None:
    """The NumPy ufunc computing reducer ``op`` on ``dtype`` exactly as XLA does, if any."""
    if op is None:
        return None
    et = from_dtype(dtype)
    if dtype.kind == "V" and not et.is_floating:
        return None              # narrow ml_dtypes integers: use the reducer itself
    if op in _BITWISE:
        if et.is_pred:
            return _BITWISE[op][0]
        return _BITWISE[op][1] if et.is_integral else None
    if et.is_pred:
        # pred add/maximum are or; multiply/minimum are and.
        return np.logical_or if op in ("add", "maximum") else np.logical_and
    if et.is_complex and op in ("maximum", "minimum"):
        return None
    return _ARITH.get(op)


def _is_narrow_float(dtype: np.dtype) -> bool:
    """f16, bf16 and the f8/f4 types."""
    et = from_dtype(dtype)
    return et.is_floating and et.bits < 32


def _identity(ufunc: np.ufunc, dtype: np.dtype) -> np.ndarray:
    """A value that ``ufunc`` leaves the other operand unchanged with (for masked-out slots)."""
    if ufunc in (np.add, np.logical_or, np.bitwise_or, np.logical_xor, np.bitwise_xor):
        return np.zeros((), dtype)
    if ufunc in (np.multiply, np.logical_and):
        return np.ones((), dtype)
    if ufunc is np.bitwise_and:
        return np.array(~np.zeros((), dtype))
    lowest = ufunc is np.maximum
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.array(info.min if lowest else info.max, dtype)
    inf = np.array(-np.inf if lowest else np.inf, np.float32).astype(dtype)
    if np.isinf(inf.astype(np.float32)):
        return inf
    finfo = ml_dtypes.finfo(dtype)
    return np.array(finfo.min if lowest else finfo.max, dtype)


def _combine_masked(ev: Evaluator, comp: HloComputation, lhs: list, rhs: list,
                    ml: np.ndarray | None, mr: np.ndarray | None) -> list:
    out = as_list(apply_scalar(ev, comp, *lhs, *rhs))
    if ml is None:
        return out
    both = ml & mr
    return [np.where(both, c, np.where(ml, a, b)) for c, a, b in zip(out, lhs, rhs)]


def _tree_reduce(ev: Evaluator, comp: HloComputation, values: list[np.ndarray],
                 mask: np.ndarray | None) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Combine along the last axis (length >= 1) pairwise, keeping index order."""
    while values[0].shape[-1] > 1:
        m = values[0].shape[-1]
        h = 2 * (m // 2)
        lhs = [v[..., 0:h:2] for v in values]
        rhs = [v[..., 1:h:2] for v in values]
        ml = mask[..., 0:h:2] if mask is not None else None
        mr = mask[..., 1:h:2] if mask is not None else None
        combined = _combine_masked(ev, comp, lhs, rhs, ml, mr)
        new_mask = (ml | mr) if mask is not None else None
        if m % 2:
            combined = [np.concatenate([c, v[..., -1:]], axis=-1) for c, v in zip(combined, values)]
            if mask is not None:
                new_mask = np.concatenate([new_mask, mask[..., -1:]], axis=-1)
        values, mask = combined, new_mask
    return [v[..., 0] for v in values], (mask[..., 0] if mask is not None else None)


def _order_signed_zeros(result: np.ndarray, seq: np.ndarray, is_max: bool,
                        running: bool = False) -> np.ndarray:
    """A max/min fold's zero results with ``-0 < +0`` (NumPy's ``maximum`` returns either
    zero): the max is +0 when any +0 was folded, the min -0 when any -0 was. With
    ``running``, ``result[..., j]`` is the fold of ``seq[..., :j + 2]`` (an accumulate)."""
    zero = result == 0
    if not zero.any():
        return result
    zeros = seq == 0
    signed = np.signbit(seq)
    if running:
        def seen(m: np.ndarray) -> np.ndarray:
            return np.logical_or.accumulate(m, axis=-1)[..., 1:]
    else:
        def seen(m: np.ndarray) -> np.ndarray:
            return np.any(m, axis=-1)
    if is_max:
        negative = ~seen(zeros & ~signed)
    else:
        negative = seen(zeros & signed)
    signed_zero = np.where(negative, np.array(-0.0, result.dtype), np.array(0.0, result.dtype))
    return np.where(zero, signed_zero, result).astype(result.dtype, copy=False)


def reduce_last_axis(ev: Evaluator, comp: HloComputation, values: Sequence[np.ndarray],
                     inits: Sequence[np.ndarray],
                     mask: np.ndarray | None = None) -> list[np.ndarray]:
    """Reduce arrays ``(..., m)`` over their last axis with reducer ``comp`` and init values.

    ``mask`` (same shape, bool) marks the elements that take part; the others are skipped.
    Returns one array of shape ``(...)`` per input.
    """
    values = [np.asarray(v) for v in values]
    inits = [np.asarray(i) for i in inits]
    out_dims = values[0].shape[:-1]
    m = values[0].shape[-1]
    if m == 0 or prod(out_dims) == 0:
        return [np.full(out_dims, i, dtype=i.dtype) for i in inits]
    dtype = values[0].dtype
    ufunc = _fast_ufunc(simple_binary_op(comp), dtype) if len(values) == 1 else None
    if ufunc is not None:
        v = values[0]
        if mask is not None:
            v = np.where(mask, v, _identity(ufunc, dtype))
        acc = np.dtype(np.float32) if (ufunc in (np.add, np.multiply)
                                      and _is_narrow_float(dtype)) else dtype
        # Left fold from the init value, in index order: accumulate is sequential.
        init = np.broadcast_to(inits[0].astype(acc), out_dims + (1,))
        seq = np.concatenate([init, v.astype(acc, copy=False)], axis=-1)
        folded = np.array(ufunc.accumulate(seq, axis=-1, dtype=acc)[..., -1], dtype=dtype)
        if ufunc in (np.maximum, np.minimum) and from_dtype(dtype).is_floating:
            folded = _order_signed_zeros(folded, seq, ufunc is np.maximum)
        return [folded]
    tree, valid = _tree_reduce(ev, comp, values, mask)
    full_inits = [np.broadcast_to(i, out_dims) for i in inits]
    out = as_list(apply_scalar(ev, comp, *full_inits, *tree))
    if valid is not None:
        out = [np.where(valid, o, i) for o, i in zip(out, full_inits)]
    return [np.asarray(o).astype(i.dtype, copy=False) for o, i in zip(out, inits)]


def _split_variadic(instr: HloInstruction, operands: list) -> tuple[list, list]:
    if len(operands) % 2:
        raise InvalidArgumentError(f"{instr.opcode} needs as many init values as inputs, got "
                                   f"{len(operands)} operands: {describe(instr)}")
    n = len(operands) // 2
    values = [np.asarray(x) for x in operands]
    wanted = reducer_operand_types(instr)
    if wanted is not None:      # fp operands in the reducer's own parameter types
        values = [x.astype(et.dtype) if et.is_floating and x.dtype != et.dtype
                  and x.dtype.kind in "fV" else x for x, et in zip(values, wanted)]
    return values[:n], values[n:]


def _pack(results: list[np.ndarray], instr: HloInstruction) -> Any:
    return tuple(results) if instr.shape.is_tuple else results[0]


@handler("reduce")
def _reduce(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    inputs, inits = _split_variadic(instr, operands)
    rank = inputs[0].ndim
    dims = sorted(instr.dimensions)
    if any(not 0 <= d < rank for d in dims):
        raise InvalidArgumentError(f"reduce dimensions {tuple(dims)} out of range for rank {rank}: "
                                   f"{describe(instr)}")
    kept = [d for d in range(rank) if d not in dims]
    out_dims = tuple(inputs[0].shape[d] for d in kept)
    m = prod(inputs[0].shape[d] for d in dims)
    flat = [np.transpose(x, kept + dims).reshape(out_dims + (m,)) for x in inputs]
    return _pack(reduce_last_axis(ev, instr.to_apply, flat, inits), instr)


# ----------------------------------------------------------------------------- windows
def window_positions(in_dims: Sequence[int], out_dims: Sequence[int], window: Window,
                     instr: HloInstruction, part: tuple[int, slice] | None = None
                     ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """For each dimension, the input index and validity of window slot ``k`` at output ``o``.

    Returns ``(src, valid)``: per dimension arrays of shape ``(out_d, size_d)``. A slot is
    invalid when it falls in the padding or in a hole of the base dilation. With
    ``part = (d, slice)`` only the output positions in ``slice`` along ``d`` are given.
    """
    if len(window.dims) != len(in_dims):
        raise InvalidArgumentError(f"window has {len(window.dims)} dimensions but the operand has "
                                   f"rank {len(in_dims)}: {describe(instr)}")
    src, valid = [], []
    for d, (n, o, wd) in enumerate(zip(in_dims, out_dims, window.dims)):
        k = np.arange(wd.size)
        if wd.rhs_reversal:
            k = k[::-1]
        outs = np.arange(o)[part[1]] if part is not None and part[0] == d else np.arange(o)
        pos = outs[:, None] * wd.stride + k[None, :] * wd.rhs_dilate - wd.pad_lo
        dilated = (n - 1) * wd.lhs_dilate + 1 if n > 0 else 0
        ok = (pos >= 0) & (pos < dilated) & (pos % wd.lhs_dilate == 0)
        src.append(np.clip(pos // wd.lhs_dilate, 0, max(n - 1, 0)))
        valid.append(ok)
    return src, valid


def _spread(per_dim: list[np.ndarray]) -> list[np.ndarray]:
    """Place dim d's ``(out_d, size_d)`` array on axes (2d, 2d+1) for broadcasting."""
    r = len(per_dim)
    out = []
    for d, a in enumerate(per_dim):
        shape = [1] * (2 * r)
        shape[2 * d], shape[2 * d + 1] = a.shape
        out.append(a.reshape(shape))
    return out


def _windows_last(a: np.ndarray, out_dims: tuple[int, ...]) -> np.ndarray:
    """``(o0, s0, o1, s1, ...)`` -> ``(o0, o1, ..., s0*s1*...)``."""
    r = len(out_dims)
    a = np.transpose(a, list(range(0, 2 * r, 2)) + list(range(1, 2 * r, 2)))
    return a.reshape(out_dims + (-1,))


def gather_windows(x: np.ndarray, src: list[np.ndarray]) -> np.ndarray:
    """The window elements of ``x`` as ``(out..., window_size)``."""
    out_dims = tuple(s.shape[0] for s in src)
    return _windows_last(x[tuple(_spread(src))], out_dims)


def window_mask(valid: list[np.ndarray]) -> np.ndarray | None:
    """Validity of each window slot as ``(out..., window_size)``; None if all are valid."""
    if all(v.all() for v in valid):
        return None
    out_dims = tuple(v.shape[0] for v in valid)
    m = np.ones((), dtype=bool)
    for v in _spread(valid):
        m = m & v
    full = np.broadcast_to(m, sum(((v.shape[0], v.shape[1]) for v in valid), ()))
    return _windows_last(full, out_dims)


# Window elements are gathered for at most this many (output position, window slot) pairs
# at a time: memory stays proportional to the output, whatever the window size.
WINDOW_CHUNK_ELEMENTS = 1 << 20


def cumulative_dim(window: Window, in_dims: Sequence[int]) -> tuple[int, bool] | None:
    """``(d, reverse)`` when ``window`` is a running prefix along dimension ``d`` (padding
    ``size - 1`` low, ``size >= n``: output ``i`` reduces elements ``0..i``, as JAX lowers
    ``cumsum``) or, with ``reverse``, a running suffix (padding high: ``i..n-1``), and
    size 1 everywhere else; None otherwise."""
    found = None
    for d, (wd, n) in enumerate(zip(window.dims, in_dims)):
        plain = (wd.stride == 1 and wd.lhs_dilate == 1 and wd.rhs_dilate == 1
                 and not wd.rhs_reversal)
        if wd.size == 1 and wd.pad_lo == 0 and wd.pad_hi == 0 and plain:
            continue
        if found is not None or not plain or n < 1 or wd.size < n:
            return None
        if (wd.pad_lo, wd.pad_hi) == (wd.size - 1, 0):
            found = (d, False)
        elif (wd.pad_lo, wd.pad_hi) == (0, wd.size - 1):
            found = (d, True)
        else:
            return None
    return found


def _running_fold(x: np.ndarray, init: np.ndarray, ufunc: np.ufunc, d: int,
                  reverse: bool) -> np.ndarray:
    """Every prefix (suffix with ``reverse``) fold of ``x`` along ``d`` from ``init``, by
    one ``ufunc.accumulate``: memory and time proportional to ``x``. A prefix is the
    sequential left fold XLA defines; a suffix is folded from its far end, which is the
    same value only for order-insensitive reducers (see :func:`_suffix_exact`)."""
    acc = np.dtype(np.float32) if (ufunc in (np.add, np.multiply)
                                  and _is_narrow_float(x.dtype)) else x.dtype
    v = np.moveaxis(x, d, -1)
    if reverse:
        v = v[..., ::-1]
    seq = np.concatenate([np.broadcast_to(init.astype(acc), v.shape[:-1] + (1,)),
                          v.astype(acc, copy=False)], axis=-1)
    out = np.array(ufunc.accumulate(seq, axis=-1, dtype=acc)[..., 1:], dtype=x.dtype)
    if ufunc in (np.maximum, np.minimum) and from_dtype(x.dtype).is_floating:
        out = _order_signed_zeros(out, seq, ufunc is np.maximum, running=True)
    if reverse:
        out = out[..., ::-1]
    return np.moveaxis(out, -1, d)


def _suffix_exact(ufunc: np.ufunc, dtype: np.dtype) -> bool:
    """Whether folding a suffix from its far end gives XLA's left-to-right result: not for
    floating-point sums and products, whose rounding depends on the order (those take
    the general path: quadratic time, bounded memory, as XLA:CPU's loop)."""
    return not (ufunc in (np.add, np.multiply) and np.dtype(dtype).kind in "fcV")


def _chunked_windows(ev: Evaluator, instr: HloInstruction, inputs: list, inits: list,
                     window: Window, out_dims: tuple[int, ...]) -> list[np.ndarray]:
    """Gather and reduce the windows of slabs of the output (along its longest
    dimension) of at most ``WINDOW_CHUNK_ELEMENTS`` gathered elements each."""
    in_dims = inputs[0].shape
    window_size = prod(wd.size for wd in window.dims)
    d = int(np.argmax(out_dims))
    per_row = prod(out_dims) // out_dims[d] * window_size
    step = max(1, WINDOW_CHUNK_ELEMENTS // max(per_row, 1))
    if step >= out_dims[d]:
        src, valid = window_positions(in_dims, out_dims, window, instr)
        gathered = [gather_windows(x, src) for x in inputs]
        return reduce_last_axis(ev, instr.to_apply, gathered, inits, window_mask(valid))
    results = [np.empty(out_dims, dtype=i.dtype) for i in inits]
    for lo in range(0, out_dims[d], step):
        part = slice(lo, min(lo + step, out_dims[d]))
        src, valid = window_positions(in_dims, out_dims, window, instr, (d, part))
        gathered = [gather_windows(x, src) for x in inputs]
        chunk = reduce_last_axis(ev, instr.to_apply, gathered, inits, window_mask(valid))
        for r, c in zip(results, chunk):
            r[(slice(None),) * d + (part,)] = c
    return results


@handler("reduce-window")
def _reduce_window(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    inputs, inits = _split_variadic(instr, operands)
    window = instr.attrs.get("window") or Window(())
    out_shape = instr.shape.tuple_shapes[0] if instr.shape.is_tuple else instr.shape
    out_dims = out_shape.dims
    if inputs[0].size == 0 or prod(out_dims) == 0:
        return _pack([np.full(out_dims, i, dtype=i.dtype) for i in inits], instr)
    if len(inputs) == 1 and len(window.dims) == inputs[0].ndim:
        ufunc = _fast_ufunc(simple_binary_op(instr.to_apply), inputs[0].dtype)
        running = cumulative_dim(window, inputs[0].shape) if ufunc is not None else None
        if running is not None and (not running[1] or _suffix_exact(ufunc, inputs[0].dtype)):
            return _pack([_running_fold(inputs[0], inits[0], ufunc, *running)], instr)
    if len(window.dims) != inputs[0].ndim:
        window_positions(inputs[0].shape, out_dims, window, instr)     # raises the error
    return _pack(_chunked_windows(ev, instr, inputs, inits, window, out_dims), instr)


@handler("select-and-scatter")
def _select_and_scatter(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    operand, source, init = (np.asarray(o) for o in operands)
    window = instr.attrs.get("window") or Window(())
    out = np.full(operand.shape, init, dtype=instr.shape.dtype)
    if operand.size == 0 or source.size == 0:
        return out
    src, valid = window_positions(operand.shape, source.shape, window, instr)
    cand = gather_windows(operand, src).reshape(source.size, -1)
    flat_index = gather_windows(np.arange(operand.size).reshape(operand.shape), src)
    flat_index = flat_index.reshape(source.size, -1)
    mask = window_mask(valid)
    mask = (np.ones(cand.shape, dtype=bool) if mask is None else mask.reshape(source.size, -1))

    # Walk the window slots in order; keep the current choice while select(current, candidate).
    select = instr.attrs["select"]
    have = np.zeros(source.size, dtype=bool)
    chosen_val = cand[:, 0].copy()
    chosen_idx = np.zeros(source.size, dtype=np.int64)
    for k in range(cand.shape[1]):
        ok, val, idx = mask[:, k], cand[:, k], flat_index[:, k]
        first = ok & ~have
        chosen_val = np.where(first, val, chosen_val)
        chosen_idx = np.where(first, idx, chosen_idx)
        have |= ok
        keep = np.asarray(apply_scalar(ev, select, chosen_val, val), dtype=bool)
        take = ok & ~keep
        chosen_val = np.where(take, val, chosen_val)
        chosen_idx = np.where(take, idx, chosen_idx)

    # Scatter source values in source order: output[i] = scatter(output[i], source).
    targets = chosen_idx[have]
    values = source.reshape(-1)[have]
    flat_out = out.reshape(-1)
    order = np.argsort(targets, kind="stable")
    sorted_t = targets[order]
    starts = np.r_[True, sorted_t[1:] != sorted_t[:-1]] if sorted_t.size else np.zeros(0, bool)
    group_start = np.maximum.accumulate(np.where(starts, np.arange(sorted_t.size), 0))
    rank = np.empty_like(order)
    rank[order] = np.arange(sorted_t.size) - group_start
    scatter = instr.attrs["scatter"]
    for r in range(int(rank.max()) + 1 if rank.size else 0):
        sel = rank == r
        t = targets[sel]
        flat_out[t] = apply_scalar(ev, scatter, flat_out[t], values[sel])
    return out


@handler("map")
def _map(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    dims = instr.shape.dims
    if any(np.shape(o) != dims for o in operands):
        raise InvalidArgumentError(f"map operands must all have shape {dims}: {describe(instr)}")
    result = apply_scalar(ev, instr.to_apply, *operands)
    return np.array(np.broadcast_to(result, dims))


from . import sort  # noqa: E402,F401  (registers sort, topk and the TopK custom-call)
