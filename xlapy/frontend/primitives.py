"""The primitive table: every front-end op, defined once by its HLO lowering.

Each block below is ``name_p = primitive(name, lowering, ...)``. A lowering gets a
:class:`~xlapy.frontend.core.LoweringContext` (``ctx.b`` is the builder) and the operand
instructions, and returns the result instruction(s). Operands arrive already
promoted and broadcast (``xlapy.frontend.lax`` checks that), so lowerings stay small.
Gradient rules attach as ``name_p.vjp`` (see ``autodiff_rules``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..hlo.builder import as_element_type
from ..hlo.ir import HloInstruction
from ..hlo.shape import Shape
from . import dtypes
from .core import LoweringContext, Primitive, primitive

I = HloInstruction

# ----------------------------------------------------------------------------- elementwise
UNARY_OPCODES = {
    "neg": "negate", "abs": "abs", "sign": "sign", "exp": "exponential",
    "expm1": "exponential-minus-one", "log": "log", "log1p": "log-plus-one", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "cbrt": "cbrt", "floor": "floor", "ceil": "ceil",
    "round": "round-nearest-afz", "round_even": "round-nearest-even", "tanh": "tanh",
    "sin": "sine", "cos": "cosine", "tan": "tan", "logistic": "logistic", "not": "not",
    "is_finite": "is-finite", "real": "real", "imag": "imag", "erf": "erf",
    "population_count": "popcnt", "clz": "count-leading-zeros",
}
BINARY_OPCODES = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "rem": "remainder",
    "pow": "power", "max": "maximum", "min": "minimum", "atan2": "atan2", "and": "and",
    "or": "or", "xor": "xor", "complex": "complex", "shift_left": "shift-left",
    "shift_right_arithmetic": "shift-right-arithmetic",
    "shift_right_logical": "shift-right-logical",
}
_NOT_WEAK = {"is_finite"}


def _elementwise(opcode: str):
    def lower(ctx: LoweringContext, *xs: I) -> I:
        return ctx.b.add_instruction(opcode, list(xs))
    return lower


def _never_weak(args, params) -> bool:
    return False


def _first_weak(args, params) -> bool:
    return bool(args) and args[0].weak_type


unary_p: dict[str, Primitive] = {
    name: primitive(name, _elementwise(op), weak=_never_weak if name in _NOT_WEAK else None)
    for name, op in UNARY_OPCODES.items()}
binary_p: dict[str, Primitive] = {
    name: primitive(name, _elementwise(op)) for name, op in BINARY_OPCODES.items()}


def _compare(ctx: LoweringContext, a: I, b: I, *, direction: str) -> I:
    return ctx.b.compare(a, b, direction)


compare_p = primitive("compare", _compare, weak=_never_weak)
select_p = primitive("select", lambda ctx, p, t, f: ctx.b.select(p, t, f),
                     weak=lambda args, params: args[1].weak_type and args[2].weak_type)
clamp_p = primitive("clamp", lambda ctx, lo, x, hi: ctx.b.clamp(lo, x, hi),
                    weak=lambda args, params: args[1].weak_type)


def _convert(ctx: LoweringContext, x: I, *, new_dtype: Any, weak_type: bool) -> I:
    return ctx.b.convert(x, new_dtype)


convert_element_type_p = primitive("convert_element_type", _convert,
                                   weak=lambda args, params: params["weak_type"])
bitcast_convert_type_p = primitive(
    "bitcast_convert_type", lambda ctx, x, *, new_dtype: ctx.b.bitcast_convert(x, new_dtype),
    weak=_never_weak)


# Giles' single-precision coefficients, highest degree first, as in XLA's chlo lowering.
_ERFINV_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erf_inv_lower(ctx: LoweringContext, x: I) -> I:
    """XLA's chlo expansion: a degree-8 polynomial in ``w = -log1p(-x*x)`` (shifted),
    one coefficient set for ``w < 5`` and one for the tails; ``+-inf`` at ``+-1``."""
    b = ctx.b
    dtype = x.shape.dtype
    if dtype != np.float32:
        x = b.convert(x, np.float32)
    dims = x.shape.dims

    def c(v: float) -> I:
        return b.broadcast_in_dim(b.constant(np.float32(v)), dims, ())

    w = b.negate(b.log_plus_one(b.multiply(x, b.negate(x))))
    small = b.compare(w, c(5.0), "LT")
    w = b.select(small, b.subtract(w, c(2.5)), b.subtract(b.sqrt(w), c(3.0)))
    p = b.select(small, c(_ERFINV_SMALL[0]), c(_ERFINV_LARGE[0]))
    for lo, hi in zip(_ERFINV_SMALL[1:], _ERFINV_LARGE[1:]):
        p = b.add(b.select(small, c(lo), c(hi)), b.multiply(p, w))
    at_one = b.compare(b.abs(x), c(1.0), "EQ")
    out = b.select(at_one, b.multiply(x, c(np.inf)), b.multiply(p, x))
    return out if dtype == np.float32 else b.convert(out, dtype)


erf_inv_p = primitive("erf_inv", _erf_inv_lower, weak=_never_weak)

# ---------------------------------------------------------------------------- data movement
broadcast_in_dim_p = primitive(
    "broadcast_in_dim",
    lambda ctx, x, *, shape, broadcast_dimensions:
        ctx.b.broadcast_in_dim(x, shape, broadcast_dimensions))
reshape_p = primitive("reshape", lambda ctx, x, *, new_sizes: ctx.b.reshape(x, new_sizes))
transpose_p = primitive("transpose",
                        lambda ctx, x, *, permutation: ctx.b.transpose(x, permutation))
slice_p = primitive(
    "slice", lambda ctx, x, *, start_indices, limit_indices, strides:
        ctx.b.slice(x, start_indices, limit_indices, strides))
dynamic_slice_p = primitive(
    "dynamic_slice", lambda ctx, x, *idx, slice_sizes: ctx.b.dynamic_slice(x, idx, slice_sizes),
    weak=_first_weak)
dynamic_update_slice_p = primitive(
    "dynamic_update_slice", lambda ctx, x, u, *idx: ctx.b.dynamic_update_slice(x, u, idx),
    weak=_first_weak)
concatenate_p = primitive("concatenate",
                          lambda ctx, *xs, dimension: ctx.b.concatenate(xs, dimension))
pad_p = primitive("pad", lambda ctx, x, v, *, padding_config: ctx.b.pad(x, v, padding_config),
                  weak=_first_weak)
rev_p = primitive("rev", lambda ctx, x, *, dimensions: ctx.b.reverse(x, dimensions))
iota_p = primitive("iota", lambda ctx, *, dtype, shape, dimension:
                   ctx.b.iota((dtype, shape), dimension), weak=_never_weak)


def _gather(ctx: LoweringContext, x: I, idx: I, *, offset_dims, collapsed_slice_dims,
            start_index_map, index_vector_dim, slice_sizes) -> I:
    return ctx.b.gather(x, idx, offset_dims, collapsed_slice_dims, start_index_map,
                        index_vector_dim, slice_sizes)


gather_p = primitive("gather", _gather, weak=_first_weak)

SCATTER_COMBINERS = {"set": "set", "add": "add", "mul": "multiply", "min": "minimum",
                     "max": "maximum"}


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


scatter_p = primitive("scatter", _scatter, weak=_first_weak)

# ------------------------------------------------------------------------------- reductions


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


reduce_p: dict[str, Primitive] = {
    kind: primitive(f"reduce_{kind}", _reducer(kind)) for kind in REDUCE_OPCODES}


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


argmax_p = primitive("argmax", _argminmax(True), weak=_never_weak)
argmin_p = primitive("argmin", _argminmax(False), weak=_never_weak)


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
    kind: primitive(f"cum{kind}", _cumulative(kind)) for kind in ("sum", "prod", "max", "min")}


def _sort(ctx: LoweringContext, *xs: I, dimension: int, is_stable: bool) -> list[I]:
    sb = ctx.sub_builder("compare_lt")
    params = []
    for x in xs:
        et = x.shape.element_type
        params += [sb.parameter(Shape.scalar(et)), sb.parameter(Shape.scalar(et))]
    key_t = xs[0].shape.element_type
    ctype = "TOTALORDER" if key_t.is_floating else None
    sb.compare(params[0], params[1], "LT", ctype)
    r = ctx.b.sort(list(xs), sb.build(), dimension, is_stable)
    if len(xs) == 1:
        return [r]
    return [ctx.b.get_tuple_element(r, i) for i in range(len(xs))]


sort_p = primitive("sort", _sort, multiple_results=True)

# ---------------------------------------------------------------------------------- linalg


def _dot_general(ctx: LoweringContext, a: I, b: I, *, contracting, batch,
                 preferred_element_type) -> I:
    return ctx.b.dot_general(a, b, contracting, batch, preferred_element_type)


dot_general_p = primitive("dot_general", _dot_general)

__all__ = ["unary_p", "binary_p", "compare_p", "select_p", "clamp_p", "convert_element_type_p",
           "bitcast_convert_type_p", "erf_inv_p", "reduction_identity",
           "broadcast_in_dim_p", "reshape_p", "transpose_p", "slice_p", "dynamic_slice_p",
           "dynamic_update_slice_p", "concatenate_p", "pad_p", "rev_p", "iota_p", "gather_p",
           "scatter_p", "reduce_p", "argmax_p", "argmin_p", "cumulative_p", "sort_p",
           "dot_general_p"]
