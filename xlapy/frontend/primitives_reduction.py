"""Reduction primitives: reduce, argmax/argmin, cumulative reductions and sort, with
their lowering and gradient rules side by side.

Choices where JAX has several: ``reduce_max``/``reduce_min`` split the gradient evenly
among ties; ``cummax``/``cummin`` give it to the first position that reached the running
extreme; ``reduce_prod`` and ``cumprod`` are exact where the operand has zeros (no
division by it).

Batching rules (``vmap``) shift the reduced axis past the batch axis; ``sort`` moves the
batch axis first in every operand.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..hlo.builder import as_element_type
from ..hlo.ir import HloInstruction
from ..hlo.shape import Shape
from . import dtypes, lax
from .batching import bdim_first, shift_axis
from .control_flow import scan
from .core import Array, LoweringContext, Primitive, primitive, to_array
from .lax_composite import take_along_axis

I = HloInstruction


def _zeros(like: Array) -> Array:
    return lax.full_like(like, 0)


def _never_weak(args: Sequence[Array], params: dict) -> bool:
    return False


def _bool_to(x: Array, like: Array) -> Array:
    return lax.convert_element_type(x, like.dtype)


# ---------------------------------------------------------------------------- primitives
def reduction_identity(kind: str, dtype: np.dtype) -> np.ndarray:
    """The identity element of reduction ``kind`` for ``dtype``."""
    if kind in ("sum", "or"):
        return np.zeros((), dtype)
    if kind in ("prod", "and"):
        return np.ones((), dtype)
    if dtype == np.bool_:
        return np.array(kind == "min")
    if dtypes.is_float(dtype):
        return np.array(-np.inf if kind == "max" else np.inf, dtype)
    info = dtypes.iinfo(dtype)
    return np.array(info.min if kind == "max" else info.max, dtype)


REDUCE_OPCODES = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
                  "and": "and", "or": "or"}


def _reducer(kind: str):
    def lower(ctx: LoweringContext, x: I, *, axes: tuple[int, ...]) -> I:
        dtype = x.shape.dtype
        init = ctx.b.constant(reduction_identity(kind, dtype))
        comp = ctx.scalar_computation(REDUCE_OPCODES[kind], dtype)
        return ctx.b.reduce(x, init, comp, axes)
    return lower


reduce_p: dict[str, Primitive] = {kind: primitive(f"reduce_{kind}") for kind in REDUCE_OPCODES}
for _kind, _p in reduce_p.items():
    _p.def_lowering(_reducer(_kind))


def _argminmax(is_max: bool):
    def lower(ctx: LoweringContext, x: I, *, axis: int, index_dtype: Any) -> I:
        b, dtype = ctx.b, x.shape.dtype
        idx = b.iota((index_dtype, x.shape.dims), axis)
        init = [b.constant(reduction_identity("max" if is_max else "min", dtype)),
                b.constant(np.zeros((), index_dtype))]
        sb = ctx.sub_builder("argmax" if is_max else "argmin")
        et, it = as_element_type(dtype), as_element_type(index_dtype)
        av, ai = sb.parameter(Shape.scalar(et)), sb.parameter(Shape.scalar(it))
        bv, bi = sb.parameter(Shape.scalar(et)), sb.parameter(Shape.scalar(it))
        a_nan, b_nan = sb.compare(av, av, "NE"), sb.compare(bv, bv, "NE")
        better = sb.or_(sb.compare(bv, av, "GT" if is_max else "LT"),
                        sb.and_(b_nan, sb.not_(a_nan)))
        tie = sb.or_(sb.compare(bv, av, "EQ"), sb.and_(b_nan, a_nan))
        pick = sb.or_(better, sb.and_(tie, sb.compare(bi, ai, "LT")))
        sb.tuple([sb.select(pick, bv, av), sb.select(pick, bi, ai)])
        r = b.reduce([x, idx], init, sb.build(), [axis])
        return b.get_tuple_element(r, 1)
    return lower


argmax_p = primitive("argmax", weak=_never_weak)
argmax_p.def_lowering(_argminmax(True))
argmin_p = primitive("argmin", weak=_never_weak)
argmin_p.def_lowering(_argminmax(False))


def _cumulative(kind: str):
    def lower(ctx: LoweringContext, x: I, *, axis: int, reverse: bool) -> I:
        dims = x.shape.dims
        n = dims[axis]
        window = [1] * len(dims)
        window[axis] = n
        padding = [(0, 0)] * len(dims)
        padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
        init = ctx.b.constant(reduction_identity(kind, x.shape.dtype))
        comp = ctx.scalar_computation(REDUCE_OPCODES[kind], x.shape.dtype)
        return ctx.b.reduce_window(x, init, comp, window, None, padding)
    return lower


cumulative_p: dict[str, Primitive] = {
    kind: primitive(f"cum{kind}") for kind in ("sum", "prod", "max", "min")}
for _kind, _p in cumulative_p.items():
    _p.def_lowering(_cumulative(_kind))


def _sort_keys(sb: Any, x: I, y: I) -> list[tuple[I, I, bool]]:
    """The (x, y, is_float) key pairs one sort operand compares by, as JAX's comparator:
    floating keys are canonicalized first (``-0.0`` -> ``+0.0``, every NaN -> the positive
    quiet NaN), so that the total order ties the zeros and puts all NaNs last; a complex
    key is its real part, then its imaginary part."""
    et = x.shape.element_type
    if et.is_complex:
        parts = [(sb.add_instruction(op, [x]), sb.add_instruction(op, [y]))
                 for op in ("real", "imag")]
        return [k for a, b in parts for k in _sort_keys(sb, a, b)]
    if not et.is_floating:
        return [(x, y, False)]

    def canonical(v: I) -> I:
        zero = sb.constant(np.zeros((), et.dtype))
        v = sb.select(sb.compare(v, zero, "EQ"), zero, v)
        nan = sb.constant(np.full((), np.nan, et.dtype))
        return sb.select(sb.compare(v, v, "NE"), nan, v)
    return [(canonical(x), canonical(y), True)]


def _sort(ctx: LoweringContext, *xs: I, dimension: int, is_stable: bool,
          num_keys: int = 1) -> list[I]:
    """HLO ``sort`` with JAX's comparator: lexicographic ``<`` over the first
    ``num_keys`` operands (total order on canonicalized floats, see :func:`_sort_keys`)."""
    sb = ctx.sub_builder("compare_lt")
    params = []
    for x in xs:
        et = x.shape.element_type
        params += [sb.parameter(Shape.scalar(et)), sb.parameter(Shape.scalar(et))]
    keys = [k for i in range(num_keys) for k in _sort_keys(sb, params[2 * i], params[2 * i + 1])]
    pred = None
    for x, y, is_float in reversed(keys):
        ctype = "TOTALORDER" if is_float else None
        lt = sb.compare(x, y, "LT", ctype)
        pred = lt if pred is None else sb.add_instruction(
            "or", [lt, sb.add_instruction("and", [sb.compare(x, y, "EQ", ctype), pred])])
    r = ctx.b.sort(list(xs), sb.build(pred), dimension, is_stable)
    if len(xs) == 1:
        return [r]
    return [ctx.b.get_tuple_element(r, i) for i in range(len(xs))]


sort_p = primitive("sort", multiple_results=True)
sort_p.def_lowering(_sort)


# ------------------------------------------------------------------------- gradient rules
def _kept_dims(ndim: int, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(d for d in range(ndim) if d not in axes)


def _expand(t: Array, x: Array, axes: Sequence[int]) -> Array:
    return lax.broadcast_in_dim(t, x.shape, _kept_dims(x.ndim, axes))


reduce_p["sum"].def_vjp(lambda g, ans, x, *, axes: (_expand(g, x, axes),))


def _reduce_extreme_vjp(g: Array, ans: Array, x: Array, *, axes) -> tuple:
    hits = _bool_to(lax.eq(x, _expand(ans, x, axes)), x)
    counts = lax.reduce_sum(hits, axes)
    return (lax.mul(_expand(lax.div(g, counts), x, axes), hits),)


reduce_p["max"].def_vjp(_reduce_extreme_vjp)
reduce_p["min"].def_vjp(_reduce_extreme_vjp)
reduce_p["and"].def_vjp(lambda g, ans, x, *, axes: (None,))
reduce_p["or"].def_vjp(lambda g, ans, x, *, axes: (None,))


def _exclusive_cumprod(x: Array, axis: int, reverse: bool) -> Array:
    """Products of the elements strictly before (after, when ``reverse``) each one."""
    inclusive = lax.cumulative("prod", x, axis, reverse)
    n = x.shape[axis]
    cfg = [(0, 0, 0)] * x.ndim
    cfg[axis] = (0, 1, 0) if reverse else (1, 0, 0)
    shifted = lax.pad(inclusive, to_array(np.ones((), x.dtype)), cfg)
    lo = [0] * x.ndim
    lo[axis] = 1 if reverse else 0
    hi = list(x.shape)
    hi[axis] = n + 1 if reverse else n
    return lax.slice(shifted, lo, hi)


def _reduce_prod_vjp(g: Array, ans: Array, x: Array, *, axes) -> tuple:
    # Move the reduced axes last, flatten them, and multiply the exclusive products from
    # both sides: exact where x has zeros (no division by x).
    kept = _kept_dims(x.ndim, axes)
    perm = kept + tuple(axes)
    xt = lax.transpose(x, perm)
    kept_shape = tuple(x.shape[d] for d in kept)
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    flat = lax.reshape(xt, kept_shape + (n,))
    others = lax.mul(_exclusive_cumprod(flat, len(kept), False),
                     _exclusive_cumprod(flat, len(kept), True))
    gb = lax.broadcast_in_dim(g, kept_shape + (n,), tuple(range(len(kept))))
    back = lax.reshape(lax.mul(gb, others), xt.shape)
    return (lax.transpose(back, tuple(int(i) for i in np.argsort(perm))),)


reduce_p["prod"].def_vjp(_reduce_prod_vjp)
argmax_p.def_vjp(lambda g, ans, x, **kw: (None,))
argmin_p.def_vjp(lambda g, ans, x, **kw: (None,))


def _cumsum_vjp(g: Array, ans: Array, x: Array, *, axis: int, reverse: bool) -> tuple:
    return (lax.cumulative("sum", g, axis, not reverse),)


def _along_axis_scan(step: Any, xs: Sequence[Array], axis: int, init: Array,
                     reverse: bool) -> Array:
    """``scan`` of ``step(carry, slices) -> (carry, out)`` over ``axis`` of ``xs``."""
    moved = [lax.transpose(x, (axis,) + _kept_dims(x.ndim, (axis,))) for x in xs]
    _, out = scan(step, init, tuple(moved), reverse=reverse)
    inv = tuple(int(i) for i in np.argsort((axis,) + _kept_dims(xs[0].ndim, (axis,))))
    return lax.transpose(out, inv)


def _rest_zeros(x: Array, axis: int) -> Array:
    return lax.full_like(x, 0, shape=tuple(s for d, s in enumerate(x.shape) if d != axis))


def _cumprod_vjp(g: Array, ans: Array, x: Array, *, axis: int, reverse: bool) -> tuple:
    # out_j = prod_{k<=j} x_k, so dL/dx_i = L_i * S_i with L_i = prod_{k<i} x_k and
    # S_i = g_i + x_{i+1} * S_{i+1}: a reverse linear recurrence, exact with zeros.
    if reverse:
        flipped = _cumprod_vjp(lax.rev(g, (axis,)), lax.rev(ans, (axis,)),
                               lax.rev(x, (axis,)), axis=axis, reverse=False)[0]
        return (lax.rev(flipped, (axis,)),)
    n = x.shape[axis]
    cfg = [(0, 0, 0)] * x.ndim
    cfg[axis] = (0, 1, 0)
    lo = [0] * x.ndim
    lo[axis] = 1
    hi = list(x.shape)
    hi[axis] = n + 1
    x_next = lax.slice(lax.pad(x, to_array(np.zeros((), x.dtype)), cfg), lo, hi)

    def step(s: Array, sl: tuple) -> tuple:
        g_i, xn_i = sl
        s = lax.add(g_i, lax.mul(xn_i, s))
        return s, s

    s = _along_axis_scan(step, [g, x_next], axis, _rest_zeros(x, axis), reverse=True)
    return (lax.mul(_exclusive_cumprod(x, axis, False), s),)


def _cum_extreme_vjp(kind: str) -> Any:
    def rule(g: Array, ans: Array, x: Array, *, axis: int, reverse: bool) -> tuple:
        if reverse:
            flipped = rule(lax.rev(g, (axis,)), lax.rev(ans, (axis,)), lax.rev(x, (axis,)),
                           axis=axis, reverse=False)[0]
            return (lax.rev(flipped, (axis,)),)
        # Position i is a "record" when x_i beats the running extreme before it; the
        # gradient of every output up to the next record goes to it.
        before = _exclusive_running(ans, axis)
        beats = lax.gt(x, before) if kind == "max" else lax.lt(x, before)
        first = lax.broadcasted_iota(np.int32, x.shape, axis)
        record = lax.bitwise_or(beats, lax.eq(first, lax.broadcast_in_dim(
            to_array(np.int32(0)), x.shape, ())))

        def step(acc: Array, sl: tuple) -> tuple:
            g_i, r_i = sl
            acc = lax.add(acc, g_i)
            out = lax.select(r_i, acc, _zeros(acc))
            return lax.select(r_i, _zeros(acc), acc), out

        return (_along_axis_scan(step, [g, record], axis, _rest_zeros(x, axis), reverse=True),)
    return rule


def _exclusive_running(ans: Array, axis: int) -> Array:
    """``ans`` shifted one step along ``axis`` (the first slot repeats ``ans[0]``)."""
    n = ans.shape[axis]
    lo = [0] * ans.ndim
    hi = list(ans.shape)
    hi[axis] = 1
    head = lax.slice(ans, lo, hi)
    hi[axis] = n - 1
    body = lax.slice(ans, lo, hi) if n > 1 else None
    return head if body is None else lax.concatenate([head, body], axis)


cumulative_p["sum"].def_vjp(_cumsum_vjp)
cumulative_p["prod"].def_vjp(_cumprod_vjp)
cumulative_p["max"].def_vjp(_cum_extreme_vjp("max"))
cumulative_p["min"].def_vjp(_cum_extreme_vjp("min"))


def _sort_vjp(gs: list[Array], outs: list[Array], *xs: Array, dimension: int,
              is_stable: bool, num_keys: int = 1) -> tuple:
    iota = lax.broadcasted_iota(np.int32, xs[0].shape, dimension)
    perm = lax.sort(list(xs[:num_keys]) + [iota], dimension, is_stable=True,
                    num_keys=num_keys)[-1]
    inverse = lax.sort([perm, lax.broadcasted_iota(np.int32, xs[0].shape, dimension)],
                       dimension, is_stable=True)[1]
    out = []
    for x, g in zip(xs, gs):
        differentiable = dtypes.is_float(x.dtype) or np.dtype(x.dtype).kind == "c"
        out.append(take_along_axis(g, inverse, dimension) if differentiable else None)
    return tuple(out)


sort_p.def_vjp(_sort_vjp)


# ------------------------------------------------------------------------- batching rules
def _reduce_batch(kind: str) -> Any:
    def rule(vals, dims, *, axes):
        d = dims[0]
        moved = tuple(shift_axis(a, d) for a in axes)
        return getattr(lax, f"reduce_{kind}")(vals[0], moved), d - sum(a < d for a in moved)
    return rule


for _kind, _p in reduce_p.items():
    _p.def_batching(_reduce_batch(_kind))


def _arg_batch(fn: Any) -> Any:
    def rule(vals, dims, *, axis, index_dtype):
        d = dims[0]
        a = shift_axis(axis, d)
        return fn(vals[0], a, index_dtype), d if d < a else d - 1
    return rule


argmax_p.def_batching(_arg_batch(lax.argmax))
argmin_p.def_batching(_arg_batch(lax.argmin))


def _cumulative_batch(kind: str) -> Any:
    def rule(vals, dims, *, axis, reverse):
        d = dims[0]
        return lax.cumulative(kind, vals[0], shift_axis(axis, d), reverse), d
    return rule


for _kind, _p in cumulative_p.items():
    _p.def_batching(_cumulative_batch(_kind))


@sort_p.def_batching
def _sort_batch(vals, dims, *, dimension, is_stable, num_keys=1):
    outs = lax.sort(list(bdim_first(vals, dims)), dimension + 1, is_stable, num_keys=num_keys)
    return list(outs), [0] * len(vals)


__all__ = ["reduction_identity", "REDUCE_OPCODES", "reduce_p", "argmax_p", "argmin_p",
           "cumulative_p", "sort_p"]
