"""Checks of called computations' signatures (reducers, comparators, loop bodies, branches)."""
from __future__ import annotations

from typing import Sequence

from .. import types as T
from ..shape import Shape
from ..types import ElementType
from . import Ctx, same_type_and_dims, shape_text


def signature_text(comp) -> str:
    ps = comp.program_shape
    return ps.to_text(print_layout=False)


def same_type_ignoring_fp(a: ElementType, b: ElementType) -> bool:
    """Equal element types, or both floating-point (XLA's CompatibleIgnoringFpPrecision)."""
    return a == b or (a.is_floating and b.is_floating)


def check_parameters(ctx: Ctx, attr: str, comp, params: Sequence[Shape]) -> None:
    """``comp`` takes exactly ``params`` (compared up to layout)."""
    got = comp.program_shape.parameters
    want = "(" + ", ".join(shape_text(p) for p in params) + ")"
    ctx.check(len(got) == len(params) and all(same_type_and_dims(g, p)
                                              for g, p in zip(got, params)),
              f"{attr}={comp.name} has signature {signature_text(comp)} but must take {want}")


def check_reducer(ctx: Ctx, attr: str, input_types: Sequence[ElementType],
                  init_types: Sequence[ElementType]) -> list[ElementType]:
    """A reducer over N values takes 2N scalars (N accumulators, then N inputs) and returns
    a scalar (N == 1) or an N-tuple of scalars. Returns the accumulator element types."""
    comp = ctx.computation(attr)
    n = len(init_types)
    ps = comp.program_shape
    sig = signature_text(comp)
    ctx.check(len(ps.parameters) == 2 * n,
              f"{attr}={comp.name} has signature {sig} but a reducer of {n} value(s) takes "
              f"{2 * n} scalar parameters")
    result = ps.result
    if result.is_tuple:
        outs = list(result.tuple_shapes)
        ctx.check(n > 1 or len(outs) == 1,
                  f"{attr}={comp.name} has signature {sig} but must return a scalar")
    else:
        outs = [result]
    ctx.check(len(outs) == n and all(o.is_scalar for o in outs),
              f"{attr}={comp.name} has signature {sig} but must return "
              + ("a scalar" if n == 1 else f"a tuple of {n} scalars"))
    for i, p in enumerate(ps.parameters):
        ctx.check(p.is_scalar, f"{attr}={comp.name} has signature {sig}: parameter {i} is not a "
                               "scalar")
    for i in range(n):
        acc = outs[i].element_type
        ctx.check(ps.parameters[i].element_type == acc,
                  f"{attr}={comp.name} has signature {sig}: accumulator parameter {i} must have "
                  f"the result type {acc.name}")
        ctx.check(same_type_ignoring_fp(init_types[i], acc),
                  f"{attr}={comp.name} accumulates {acc.name} but init value {i} is "
                  f"{init_types[i].name}")
        ctx.check(same_type_ignoring_fp(ps.parameters[n + i].element_type, input_types[i]),
                  f"{attr}={comp.name} has signature {sig}: parameter {n + i} must match the "
                  f"input element type {input_types[i].name}")
    return [o.element_type for o in outs]


def check_comparator(ctx: Ctx, attr: str, types: Sequence[ElementType]) -> None:
    """A sort comparator takes (lhs_i, rhs_i) scalar pairs per operand and returns pred[]."""
    comp = ctx.computation(attr)
    params = [Shape.scalar(t) for t in types for _ in range(2)]
    check_parameters(ctx, attr, comp, params)
    result = comp.program_shape.result
    ctx.check(result.is_scalar and result.element_type is T.PRED,
              f"{attr}={comp.name} has signature {signature_text(comp)} but a comparator must "
              "return pred[]")


def check_scalar_function(ctx: Ctx, attr: str, types: Sequence[ElementType],
                          result: ElementType | None = None) -> ElementType:
    """``comp`` takes one scalar per type and returns a scalar (of ``result`` if given)."""
    comp = ctx.computation(attr)
    check_parameters(ctx, attr, comp, [Shape.scalar(t) for t in types])
    out = comp.program_shape.result
    ctx.check(out.is_scalar, f"{attr}={comp.name} has signature {signature_text(comp)} but must "
                             "return a scalar")
    if result is not None:
        ctx.check(out.element_type == result,
                  f"{attr}={comp.name} has signature {signature_text(comp)} but must return "
                  f"{result.name}[]")
    return out.element_type
