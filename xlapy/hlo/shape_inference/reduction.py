"""Shape rules of reductions and window ops: reduce, reduce-window, select-and-scatter, map,
sort, topk. Also the window arithmetic shared with convolution."""
from __future__ import annotations

from typing import Sequence

from .. import types as T
from ..attrs import Window
from ..shape import Shape
from . import Ctx, array_shape, check_dims_in_range, rule, shape_text
from .computations import check_comparator, check_reducer, check_scalar_function


def window_output_size(base: int, size: int, stride: int, pad_lo: int, pad_hi: int,
                       base_dilation: int = 1, window_dilation: int = 1) -> int:
    """Number of window positions along one dimension (XLA's window arithmetic)."""
    dilated_base = 0 if base == 0 else (base - 1) * base_dilation + 1
    padded = pad_lo + dilated_base + pad_hi
    dilated_window = (size - 1) * window_dilation + 1
    if padded < dilated_window:
        return 0
    return (padded - dilated_window) // stride + 1


def window_output_dims(ctx: Ctx, base: Shape, window: Window) -> list[int]:
    """Result dims of sliding ``window`` over ``base`` (one window dim per base dim)."""
    ctx.check(len(window.dims) == base.rank,
              f"window {window.to_text()} has {len(window.dims)} dimensions but "
              f"{shape_text(base)} has rank {base.rank}")
    out = []
    for i, (w, n) in enumerate(zip(window.dims, base.dims)):
        ctx.check(w.size >= 1 and w.stride >= 1 and w.lhs_dilate >= 1 and w.rhs_dilate >= 1,
                  f"window {window.to_text()} dimension {i} needs positive size, stride and "
                  "dilations")
        out.append(window_output_size(n, w.size, w.stride, w.pad_lo, w.pad_hi, w.lhs_dilate,
                                      w.rhs_dilate))
    return out


def _split_inputs_inits(ctx: Ctx) -> tuple[list[Shape], list[Shape]]:
    k = len(ctx.operands)
    ctx.check(k >= 2 and k % 2 == 0,
              f"expects N inputs then N init values (an even count >= 2), got {k} operands")
    n = k // 2
    inputs = [ctx.array(i) for i in range(n)]
    inits = [ctx.array(n + i, "init value") for i in range(n)]
    for s in inputs[1:]:
        ctx.check(s.dims == inputs[0].dims, f"inputs {shape_text(inputs[0])} and {shape_text(s)} "
                                            "must have the same dimensions")
    for v in inits:
        ctx.check(v.is_scalar, f"init value {shape_text(v)} must be a scalar")
    return inputs, inits


def _result(types: Sequence[T.ElementType], dims: Sequence[int]) -> Shape:
    shapes = [array_shape(t, dims) for t in types]
    return shapes[0] if len(shapes) == 1 else Shape.tuple(shapes)


@rule("reduce")
def reduce(ctx: Ctx) -> Shape:
    """Removes ``dimensions``; element types from the reducer; a tuple for variadic reduce."""
    inputs, inits = _split_inputs_inits(ctx)
    dims = ctx.ints("dimensions")
    check_dims_in_range(ctx, "dimensions", dims, inputs[0].rank)
    types = check_reducer(ctx, "to_apply", [s.element_type for s in inputs],
                          [v.element_type for v in inits])
    kept = [n for i, n in enumerate(inputs[0].dims) if i not in dims]
    return _result(types, kept)


@rule("reduce-window")
def reduce_window(ctx: Ctx) -> Shape:
    """Window positions over each input; element types from the reducer."""
    inputs, inits = _split_inputs_inits(ctx)
    window = ctx.attr("window", Window())
    dims = window_output_dims(ctx, inputs[0], window)
    types = check_reducer(ctx, "to_apply", [s.element_type for s in inputs],
                          [v.element_type for v in inits])
    return _result(types, dims)


@rule("select-and-scatter")
def select_and_scatter(ctx: Ctx) -> Shape:
    """``select-and-scatter(operand, source, init)``: source has the window-output dims of
    operand; ``select`` is (T, T) -> pred, ``scatter`` a reducer; result is operand's shape."""
    ctx.arity(3)
    operand, source, init = ctx.array(0), ctx.array(1), ctx.array(2)
    ctx.check(init.is_scalar and init.element_type == source.element_type,
              f"init value {shape_text(init)} must be a scalar of the source's element type")
    window = ctx.attr("window", Window())
    dims = window_output_dims(ctx, operand, window)
    ctx.check(tuple(dims) == source.dims,
              f"source {shape_text(source)} must have the window output dimensions {dims} of "
              f"operand {shape_text(operand)}")
    et = operand.element_type
    check_scalar_function(ctx, "select", [et, et], T.PRED)
    check_reducer(ctx, "scatter", [source.element_type], [init.element_type])
    return array_shape(et, operand.dims)


@rule("map")
def map_(ctx: Ctx) -> Shape:
    """Applies a scalar function of N arguments elementwise; operands share dims."""
    ctx.check(len(ctx.operands) >= 1, "expects at least one operand")
    shapes = [ctx.array(i) for i in range(len(ctx.operands))]
    for s in shapes[1:]:
        ctx.check(s.dims == shapes[0].dims, f"operands {shape_text(shapes[0])} and "
                                            f"{shape_text(s)} must have the same dimensions")
    if "dimensions" in ctx.attrs:
        dims = ctx.ints("dimensions")
        ctx.check(list(dims) == list(range(shapes[0].rank)),
                  f"dimensions={{{','.join(map(str, dims))}}} must list every dimension in order")
    et = check_scalar_function(ctx, "to_apply", [s.element_type for s in shapes])
    return array_shape(et, shapes[0].dims)


@rule("sort")
def sort(ctx: Ctx) -> Shape:
    """Sorts operands of equal dims along ``dimensions={d}``; comparator returns pred[]."""
    ctx.check(len(ctx.operands) >= 1, "expects at least one operand")
    shapes = [ctx.array(i) for i in range(len(ctx.operands))]
    for s in shapes[1:]:
        ctx.check(s.dims == shapes[0].dims, f"operands {shape_text(shapes[0])} and "
                                            f"{shape_text(s)} must have the same dimensions")
    dims = ctx.ints("dimensions")
    ctx.check(len(dims) == 1, f"dimensions={{{','.join(map(str, dims))}}} must name exactly one "
                              "dimension")
    check_dims_in_range(ctx, "dimensions", dims, shapes[0].rank)
    check_comparator(ctx, "to_apply", [s.element_type for s in shapes])
    return _result([s.element_type for s in shapes], shapes[0].dims)


@rule("topk")
def topk(ctx: Ctx) -> Shape:
    """``(values, s32 indices)`` with the last dimension cut to ``k``."""
    ctx.arity(1)
    s = ctx.array(0)
    ctx.check(s.rank >= 1, f"operand {shape_text(s)} must have rank >= 1")
    k = int(ctx.required("k"))
    ctx.check(0 <= k <= s.dims[-1], f"k={k} must be between 0 and the last dimension of "
                                    f"{shape_text(s)}")
    dims = s.dims[:-1] + (k,)
    return Shape.tuple([array_shape(s.element_type, dims), array_shape(T.S32, dims)])
