"""Shape rules of data-movement ops: broadcast, reshape, transpose, slicing, concatenate, pad,
reverse, iota, tuples, bitcast and the dimension-size ops (gather/scatter are in
``gather_scatter.py``)."""
from __future__ import annotations

from math import prod

from .. import types as T
from ..shape import Shape
from . import Ctx, array_shape, check_dims_in_range, rule, shape_text


def _fmt(dims) -> str:
    return "{" + ",".join(str(d) for d in dims) + "}"


@rule("broadcast")
def broadcast(ctx: Ctx) -> Shape:
    """Operand dim i becomes result dim ``dimensions[i]`` (sizes equal); result dims declared."""
    ctx.arity(1)
    s = ctx.array(0)
    out = ctx.need_declared("dimensions")
    ctx.check(out.is_array, f"result {shape_text(out)} must be an array")
    dims = ctx.ints("dimensions", () if s.rank == 0 else None)
    ctx.check(len(dims) == s.rank,
              f"dimensions={_fmt(dims)} must list one result dimension per operand dimension "
              f"of {shape_text(s)}")
    check_dims_in_range(ctx, "dimensions", dims, out.rank)
    for i, d in enumerate(dims):
        ctx.check(s.dims[i] == out.dims[d],
                  f"operand {shape_text(s)} dimension {i} (size {s.dims[i]}) does not match "
                  f"result {shape_text(out)} dimension {d} (size {out.dims[d]}) in "
                  f"dimensions={_fmt(dims)}")
    return array_shape(s.element_type, out.dims, out.dynamic)


@rule("reshape")
def reshape(ctx: Ctx) -> Shape:
    """Declared dims with the operand's element count."""
    ctx.arity(1)
    s = ctx.array(0)
    out = ctx.need_declared("dimensions")
    ctx.check(out.is_array, f"result {shape_text(out)} must be an array")
    if not (s.is_dynamic or out.is_dynamic):
        ctx.check(prod(s.dims) == prod(out.dims),
                  f"cannot reshape {shape_text(s)} ({prod(s.dims)} elements) to "
                  f"{shape_text(out.with_element_type(s.element_type))} "
                  f"({prod(out.dims)} elements)")
    return array_shape(s.element_type, out.dims, out.dynamic)


@rule("dynamic-reshape")
def dynamic_reshape(ctx: Ctx) -> Shape:
    """``dynamic-reshape(x, size_0, ..., size_n)``: one integral scalar per result dim."""
    ctx.check(len(ctx.operands) >= 1, "expects an operand")
    s = ctx.array(0)
    out = ctx.need_declared("dimensions")
    sizes = ctx.operands[1:]
    ctx.check(len(sizes) == out.rank, f"needs {out.rank} size operands for result "
                                      f"{shape_text(out)}, got {len(sizes)}")
    for i, sz in enumerate(sizes):
        ctx.check(sz.is_scalar and sz.element_type.is_integral,
                  f"size operand {i + 1} {shape_text(sz)} must be an integral scalar")
    return array_shape(s.element_type, out.dims, out.dynamic)


@rule("transpose")
def transpose(ctx: Ctx) -> Shape:
    """Result dim i is operand dim ``dimensions[i]``; dimensions is a permutation."""
    ctx.arity(1)
    s = ctx.array(0)
    perm = ctx.ints("dimensions")
    ctx.check(sorted(perm) == list(range(s.rank)),
              f"dimensions={_fmt(perm)} is not a permutation of the dimensions of {shape_text(s)}")
    return array_shape(s.element_type, [s.dims[p] for p in perm], [s.dynamic[p] for p in perm])


@rule("bitcast")
def bitcast(ctx: Ctx) -> Shape:
    """Any declared shape occupying the same number of bytes."""
    ctx.arity(1)
    s = ctx.operands[0]
    out = ctx.need_declared("shape")
    if not (s.is_dynamic or out.is_dynamic):
        ctx.check(s.byte_size == out.byte_size,
                  f"cannot bitcast {shape_text(s)} ({s.byte_size} bytes) to {shape_text(out)} "
                  f"({out.byte_size} bytes)")
    return out.without_layout()


@rule("slice")
def slice_(ctx: Ctx) -> Shape:
    """``slice={[start:limit:stride], ...}`` with 0 <= start <= limit <= dim, stride >= 1."""
    ctx.arity(1)
    s = ctx.array(0)
    spec = tuple(ctx.attr("slice", ()))
    ctx.check(len(spec) == s.rank,
              f"slice has {len(spec)} entries but operand {shape_text(s)} has rank {s.rank}")
    dims = []
    for i, entry in enumerate(spec):
        start, limit = int(entry[0]), int(entry[1])
        stride = int(entry[2]) if len(entry) > 2 else 1
        text = f"slice dimension {i} [{start}:{limit}:{stride}]"
        ctx.check(stride >= 1, f"{text} needs a positive stride")
        ctx.check(0 <= start <= limit <= s.dims[i],
                  f"{text} is out of bounds for {shape_text(s)} (need 0 <= start <= limit <= "
                  f"{s.dims[i]})")
        dims.append((limit - start + stride - 1) // stride)
    return array_shape(s.element_type, dims)


def _start_indices(ctx: Ctx, first: int, rank: int, base: Shape) -> None:
    """Check the start-index operands from ``first`` on: ``rank`` integral scalars of one type,
    or (legacy) a single rank-1 integral vector of length ``rank``."""
    idx = ctx.operands[first:]
    if len(idx) == 1 and idx[0].rank == 1 and rank != 1:
        ctx.check(idx[0].element_type.is_integral and idx[0].dims[0] == rank,
                  f"start indices {shape_text(idx[0])} must be an integral vector of length "
                  f"{rank} for {shape_text(base)}")
        return
    ctx.check(len(idx) == rank, f"needs {rank} start index operands for {shape_text(base)}, "
                                f"got {len(idx)}")
    for i, sh in enumerate(idx):
        ok = (sh.is_scalar or (sh.is_array and sh.dims == (1,) and rank == 1)) \
            and sh.element_type.is_integral
        ctx.check(ok, f"start index operand {first + i} {shape_text(sh)} must be an integral "
                      "scalar")
        ctx.check(sh.element_type == idx[0].element_type,
                  f"start index operands {shape_text(idx[0])} and {shape_text(sh)} must have "
                  "the same element type")


@rule("dynamic-slice")
def dynamic_slice(ctx: Ctx) -> Shape:
    """``dynamic-slice(x, starts...)``, result dims ``dynamic_slice_sizes`` (each <= dim)."""
    ctx.check(len(ctx.operands) >= 1, "expects an operand")
    s = ctx.array(0)
    sizes = ctx.ints("dynamic_slice_sizes")
    _start_indices(ctx, 1, s.rank, s)
    ctx.check(len(sizes) == s.rank, f"dynamic_slice_sizes={_fmt(sizes)} must have one size per "
                                    f"dimension of {shape_text(s)}")
    for i, (n, d) in enumerate(zip(sizes, s.dims)):
        ctx.check(0 <= n <= d, f"dynamic_slice_sizes={_fmt(sizes)}: size {n} of dimension {i} "
                               f"exceeds {shape_text(s)}")
    return array_shape(s.element_type, sizes)


@rule("dynamic-update-slice")
def dynamic_update_slice(ctx: Ctx) -> Shape:
    """``dynamic-update-slice(x, update, starts...)``: update fits in x; result is x's shape."""
    ctx.check(len(ctx.operands) >= 2, f"expects at least 2 operands, got {len(ctx.operands)}")
    s, u = ctx.array(0), ctx.array(1)
    ctx.check(u.rank == s.rank and all(a <= b for a, b in zip(u.dims, s.dims)),
              f"update {shape_text(u)} must have the rank of operand {shape_text(s)} and fit in it")
    ctx.check(u.element_type == s.element_type,
              f"update {shape_text(u)} must have the element type of operand {shape_text(s)}")
    _start_indices(ctx, 2, s.rank, s)
    return Shape(s.element_type, s.dims, s.dynamic)


@rule("concatenate")
def concatenate(ctx: Ctx) -> Shape:
    """Operands agree except along ``dimensions={d}``, where sizes add up."""
    ctx.check(len(ctx.operands) >= 1, "expects at least one operand")
    shapes = [ctx.array(i) for i in range(len(ctx.operands))]
    dims = ctx.ints("dimensions")
    ctx.check(len(dims) == 1, f"dimensions={_fmt(dims)} must name exactly one dimension")
    d = dims[0]
    first = shapes[0]
    ctx.check(0 <= d < first.rank, f"dimensions={{{d}}} is out of range for {shape_text(first)}")
    total = 0
    for s in shapes:
        ctx.check(s.element_type == first.element_type and s.rank == first.rank,
                  f"operands {shape_text(first)} and {shape_text(s)} must have the same rank and "
                  "element type")
        ctx.check(all(a == b for i, (a, b) in enumerate(zip(s.dims, first.dims)) if i != d),
                  f"operands {shape_text(first)} and {shape_text(s)} must agree on every "
                  f"dimension but {d}")
        total += s.dims[d]
    out = list(first.dims)
    out[d] = total
    return array_shape(first.element_type, out)


@rule("pad")
def pad(ctx: Ctx) -> Shape:
    """``pad(x, value)``, ``padding=lo_hi_interior x ...``; lo/hi may be negative."""
    ctx.arity(2)
    s, v = ctx.array(0), ctx.array(1)
    ctx.check(v.is_scalar and v.element_type == s.element_type,
              f"padding value {shape_text(v)} must be a scalar of the operand's element type")
    spec = tuple(ctx.required("padding"))
    ctx.check(len(spec) == s.rank, f"padding has {len(spec)} entries but operand "
                                   f"{shape_text(s)} has rank {s.rank}")
    out = []
    for i, entry in enumerate(spec):
        lo, hi = int(entry[0]), int(entry[1])
        interior = int(entry[2]) if len(entry) > 2 else 0
        ctx.check(interior >= 0, f"padding dimension {i} has negative interior padding {interior}")
        n = s.dims[i]
        size = lo + hi + n + max(n - 1, 0) * interior
        ctx.check(size >= 0, f"padding dimension {i} ({lo}_{hi}_{interior}) gives negative size "
                             f"{size}")
        out.append(size)
    return array_shape(s.element_type, out)


@rule("reverse")
def reverse(ctx: Ctx) -> Shape:
    """Same shape; ``dimensions`` are distinct and in range."""
    ctx.arity(1)
    s = ctx.array(0)
    check_dims_in_range(ctx, "dimensions", ctx.ints("dimensions"), s.rank)
    return Shape(s.element_type, s.dims, s.dynamic)


@rule("iota")
def iota(ctx: Ctx) -> Shape:
    """Declared array shape; ``iota_dimension`` below its rank."""
    ctx.arity(0)
    out = ctx.need_declared("shape")
    ctx.check(out.is_array and out.rank >= 1,
              f"result {shape_text(out)} must be an array of rank >= 1")
    d = int(ctx.required("iota_dimension"))
    ctx.check(0 <= d < out.rank, f"iota_dimension={d} is out of range for {shape_text(out)}")
    return out.without_layout()


@rule("tuple")
def tuple_(ctx: Ctx) -> Shape:
    """A tuple of the operand shapes."""
    return Shape.tuple(s.without_layout() for s in ctx.operands)


@rule("get-tuple-element")
def get_tuple_element(ctx: Ctx) -> Shape:
    """Element ``index`` of a tuple operand."""
    ctx.arity(1)
    s = ctx.operands[0]
    ctx.check(s.is_tuple, f"operand {shape_text(s)} must be a tuple")
    i = int(ctx.required("index"))
    ctx.check(0 <= i < len(s.tuple_shapes),
              f"index={i} is out of range for {shape_text(s)} ({len(s.tuple_shapes)} elements)")
    return s.tuple_shapes[i].without_layout()


@rule("get-dimension-size")
def get_dimension_size(ctx: Ctx) -> Shape:
    """``s32[]`` size of ``dimensions={d}``."""
    ctx.arity(1)
    s = ctx.array(0)
    dims = ctx.ints("dimensions")
    ctx.check(len(dims) == 1, f"dimensions={_fmt(dims)} must name exactly one dimension")
    check_dims_in_range(ctx, "dimensions", dims, s.rank)
    return Shape.scalar(T.S32)


@rule("set-dimension-size")
def set_dimension_size(ctx: Ctx) -> Shape:
    """``set-dimension-size(x, s32 size)``: x's shape with dimension d made dynamic."""
    ctx.arity(2)
    s, size = ctx.array(0), ctx.array(1)
    ctx.check(size.is_scalar and size.element_type is T.S32,
              f"size operand {shape_text(size)} must be s32[]")
    dims = ctx.ints("dimensions")
    ctx.check(len(dims) == 1, f"dimensions={_fmt(dims)} must name exactly one dimension")
    check_dims_in_range(ctx, "dimensions", dims, s.rank)
    dyn = list(s.dynamic)
    dyn[dims[0]] = True
    return Shape(s.element_type, s.dims, tuple(dyn))


@rule("copy-start")
def copy_start(ctx: Ctx) -> Shape:
    """``(destination, source, u32[] context)``."""
    ctx.arity(1)
    s = ctx.operands[0].without_layout()
    return Shape.tuple([s, s, Shape.scalar(T.U32)])


@rule("copy-done")
def copy_done(ctx: Ctx) -> Shape:
    """The destination element of a copy-start tuple."""
    ctx.arity(1)
    s = ctx.operands[0]
    ctx.check(s.is_tuple and len(s.tuple_shapes) >= 1,
              f"operand {shape_text(s)} must be a copy-start tuple")
    return s.tuple_shapes[0].without_layout()
