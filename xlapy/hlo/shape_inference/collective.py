"""Shape rules of collectives (as one program sees them) and of host I/O (infeed, outfeed,
send, recv), which carry tokens."""
from __future__ import annotations

from .. import types as T
from ..shape import Shape
from . import Ctx, array_shape, check_dims_in_range, rule, same_type_and_dims, shape_text
from .computations import check_reducer
from ..replica_groups import UNIFORM_GROUP_OPS, as_replica_groups


def _group_size(ctx: Ctx) -> int | None:
    """The group size, after the checks that need no module: no id twice, and equal sizes
    where XLA requires them."""
    value = ctx.attr("replica_groups")
    try:
        groups = None if value is None or str(value).startswith("mesh") else \
            as_replica_groups(value)
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    if groups is None:
        return None
    ids = [i for g in groups.groups for i in g]
    twice = next((i for i in ids if ids.count(i) > 1), None)
    ctx.check(twice is None, f"id {twice} appears twice in replica_groups={groups.to_text()}")
    size = groups.group_size()
    ctx.check(size is not None or groups.empty or ctx.opcode not in UNIFORM_GROUP_OPS,
              f"replica groups must be of equal size: replica_groups={groups.to_text()}")
    return size


def _same_as_operands(ctx: Ctx) -> Shape:
    ctx.check(len(ctx.operands) >= 1, "expects at least one operand")
    shapes = [s.without_layout() for s in ctx.operands]
    return shapes[0] if len(shapes) == 1 else Shape.tuple(shapes)


@rule("all-reduce", "all-reduce-start")
def all_reduce(ctx: Ctx) -> Shape:
    """The operands' shapes (a tuple for several); ``to_apply`` is a scalar reducer."""
    out = _same_as_operands(ctx)
    for i in range(len(ctx.operands)):
        et = ctx.array(i).element_type
        check_reducer(ctx, "to_apply", [et], [et])
    return out


@rule("all-reduce-done")
def all_reduce_done(ctx: Ctx) -> Shape:
    """The shape of the started all-reduce (its start has the result shape itself)."""
    ctx.arity(1)
    return ctx.operands[0].without_layout()


@rule("all-gather-done", "collective-permute-done", "async-done")
def collective_done(ctx: Ctx) -> Shape:
    """Element 1 of the start's ``(operand, result, ...)`` tuple."""
    ctx.arity(1)
    s = ctx.operands[0]
    ctx.check(s.is_tuple and len(s.tuple_shapes) >= 2,
              f"operand {shape_text(s)} must be the tuple of a {ctx.opcode[:-5]}-start")
    return s.tuple_shapes[1].without_layout()


def _scaled(ctx: Ctx, grow: bool) -> Shape:
    """all-gather (grow) multiplies, reduce-scatter divides ``dimensions={d}`` by the shard
    count: taken from the declared result when there is one (as XLA's verifier does; how many
    devices a group really has depends on the group mode and the module's counts, which the
    verifier checks against it), else from the replica groups' size."""
    ctx.arity(1)
    s = ctx.array(0)
    dims = ctx.ints("dimensions")
    ctx.check(len(dims) == 1, f"dimensions must name exactly one dimension, got {list(dims)}")
    check_dims_in_range(ctx, "dimensions", dims, s.rank)
    d = dims[0]
    n = _group_size(ctx)
    out = list(s.dims)
    decl_shape = ctx.declared
    if ctx.opcode == "all-gather-start" and decl_shape is not None and decl_shape.is_tuple \
            and len(decl_shape.tuple_shapes) == 2:
        decl_shape = decl_shape.tuple_shapes[1]
    if n is None or decl_shape is not None:
        decl = decl_shape if decl_shape is not None else ctx.need_declared("group size")
        ctx.check(decl.is_array and decl.rank == s.rank, f"result {shape_text(decl)} must have "
                                                         f"the rank of {shape_text(s)}")
        out[d] = decl.dims[d]
        big, small = (out[d], s.dims[d]) if grow else (s.dims[d], out[d])
        ctx.check(small > 0 and big % small == 0 or big == small == 0,
                  f"result dimension {d} of {shape_text(decl)} is not a multiple-size of "
                  f"{shape_text(s)}")
    elif grow:
        out[d] *= n
    else:
        ctx.check(s.dims[d] % n == 0, f"dimension {d} of {shape_text(s)} is not divisible by "
                                      f"the group size {n}")
        out[d] //= n
    return array_shape(s.element_type, out)


@rule("all-gather")
def all_gather(ctx: Ctx) -> Shape:
    """``dimensions={d}`` grows by the replica group size."""
    return _scaled(ctx, grow=True)


@rule("all-gather-start")
def all_gather_start(ctx: Ctx) -> Shape:
    """``(operand, all-gather result)``."""
    return Shape.tuple([ctx.array(0).without_layout(), _scaled(ctx, grow=True)])


@rule("reduce-scatter")
def reduce_scatter(ctx: Ctx) -> Shape:
    """``dimensions={d}`` shrinks by the replica group size; ``to_apply`` is a reducer."""
    out = _scaled(ctx, grow=False)
    et = ctx.operands[0].element_type
    check_reducer(ctx, "to_apply", [et], [et])
    return out


@rule("all-to-all")
def all_to_all(ctx: Ctx) -> Shape:
    """The operands' shapes (a tuple for several). The array form (``dimensions={d}``, one
    operand) needs dimension d divisible by the group size; the tuple form one operand per
    group member."""
    out = _same_as_operands(ctx)
    n = _group_size(ctx)
    if "dimensions" in ctx.attrs:
        ctx.arity(1)
        s = ctx.array(0)
        dims = ctx.ints("dimensions")
        ctx.check(len(dims) == 1, f"dimensions must name exactly one dimension, got {list(dims)}")
        check_dims_in_range(ctx, "dimensions", dims, s.rank)
        if n is not None:
            ctx.check(s.dims[dims[0]] % n == 0, f"dimension {dims[0]} of {shape_text(s)} is "
                                                f"not divisible by the group size {n}")
    elif n is not None:
        ctx.check(len(ctx.operands) == n, f"the tuple form needs one operand per group member "
                                          f"({n}), got {len(ctx.operands)}")
    return out


@rule("collective-broadcast")
def collective_broadcast(ctx: Ctx) -> Shape:
    """The operands' shapes (a tuple for several)."""
    return _same_as_operands(ctx)


@rule("collective-permute")
def collective_permute(ctx: Ctx) -> Shape:
    """The operand's shape (the in-place 4-operand form returns the output buffer's)."""
    ctx.check(len(ctx.operands) in (1, 4), f"expects 1 or 4 operands, got {len(ctx.operands)}")
    return ctx.operands[0 if len(ctx.operands) == 1 else 1].without_layout()


@rule("collective-permute-start")
def collective_permute_start(ctx: Ctx) -> Shape:
    """``(operand, result, u32[], u32[])``."""
    out = collective_permute(ctx)
    return Shape.tuple([ctx.operands[0].without_layout(), out, Shape.scalar(T.U32),
                        Shape.scalar(T.U32)])


@rule("replica-id", "partition-id")
def device_id(ctx: Ctx) -> Shape:
    """``u32[]``."""
    ctx.arity(0)
    return Shape.scalar(T.U32)


def _token(ctx: Ctx, i: int) -> None:
    ctx.check(ctx.operands[i].is_token, f"operand {i} {shape_text(ctx.operands[i])} must be a "
                                        "token")


@rule("infeed")
def infeed(ctx: Ctx) -> Shape:
    """``infeed(token)`` -> ``(data, token)`` with the data shape declared."""
    ctx.arity(1)
    _token(ctx, 0)
    out = ctx.need_declared("data shape")
    ctx.check(out.is_tuple and len(out.tuple_shapes) == 2 and out.tuple_shapes[1].is_token,
              f"result {shape_text(out)} must be (data, token[])")
    return out.without_layout()


@rule("outfeed")
def outfeed(ctx: Ctx) -> Shape:
    """``outfeed(data, token)`` -> token."""
    ctx.arity(2)
    _token(ctx, 1)
    return Shape.token()


@rule("send")
def send(ctx: Ctx) -> Shape:
    """``send(data, token)`` -> ``(data, u32[] context, token)``."""
    ctx.arity(2)
    _token(ctx, 1)
    return Shape.tuple([ctx.operands[0].without_layout(), Shape.scalar(T.U32), Shape.token()])


@rule("send-done")
def send_done(ctx: Ctx) -> Shape:
    """token."""
    ctx.arity(1)
    return Shape.token()


@rule("recv")
def recv(ctx: Ctx) -> Shape:
    """``recv(token)`` -> ``(data, u32[] context, token)`` with the data shape declared."""
    ctx.arity(1)
    _token(ctx, 0)
    out = ctx.need_declared("data shape")
    ctx.check(out.is_tuple and len(out.tuple_shapes) == 3
              and same_type_and_dims(out.tuple_shapes[1], Shape.scalar(T.U32))
              and out.tuple_shapes[2].is_token,
              f"result {shape_text(out)} must be (data, u32[], token[])")
    return out.without_layout()


@rule("recv-done")
def recv_done(ctx: Ctx) -> Shape:
    """``recv-done(recv)`` -> ``(data, token)``."""
    ctx.arity(1)
    s = ctx.operands[0]
    ctx.check(s.is_tuple and len(s.tuple_shapes) == 3, f"operand {shape_text(s)} must be a recv "
                                                       "tuple")
    return Shape.tuple([s.tuple_shapes[0].without_layout(), Shape.token()])
