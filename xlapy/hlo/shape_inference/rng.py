"""Shape rules of random number ops: rng, rng-bit-generator, rng-get-and-update-state."""
from __future__ import annotations

from .. import types as T
from ..shape import Shape
from . import Ctx, array_shape, rule, same_type_and_dims, shape_text

DISTRIBUTIONS = ("rng_uniform", "rng_normal")
ALGORITHMS = ("rng_default", "rng_three_fry", "rng_philox")


@rule("rng")
def rng(ctx: Ctx) -> Shape:
    """``rng(a, b)``: two scalars of the declared result's element type (uniform in [a, b) or
    normal with mean a and deviation b); the result dims are declared."""
    ctx.arity(2)
    out = ctx.need_declared("dimensions")
    ctx.check(out.is_array, f"result {shape_text(out)} must be an array")
    dist = str(ctx.required("distribution"))
    ctx.check(dist in DISTRIBUTIONS, f"distribution={dist} is not one of "
                                     f"{', '.join(DISTRIBUTIONS)}")
    for i in range(2):
        s = ctx.array(i)
        ctx.check(s.is_scalar and s.element_type == out.element_type,
                  f"operand {i} {shape_text(s)} must be a scalar of the result's element type "
                  f"{out.element_type.name}")
    if dist == "rng_normal":
        ctx.check(out.element_type.is_floating,
                  f"rng_normal result {shape_text(out)} must be floating-point")
    return out.without_layout()


@rule("rng-bit-generator")
def rng_bit_generator(ctx: Ctx) -> Shape:
    """``rng-bit-generator(state)`` -> ``(new_state, bits)``; bits' shape is declared."""
    ctx.arity(1)
    state = ctx.array(0, "state")
    ctx.check(state.rank == 1 and state.element_type is T.U64,
              f"state {shape_text(state)} must be a u64 vector")
    alg = str(ctx.required("algorithm"))
    ctx.check(alg in ALGORITHMS, f"algorithm={alg} is not one of {', '.join(ALGORITHMS)}")
    if alg in ("rng_three_fry", "rng_philox"):
        ctx.check(state.dims[0] >= 2, f"{alg} state {shape_text(state)} needs at least 2 words")
    out = ctx.need_declared("bits shape")
    ctx.check(out.is_tuple and len(out.tuple_shapes) == 2,
              f"result {shape_text(out)} must be a tuple (state, bits)")
    ctx.check(same_type_and_dims(out.tuple_shapes[0], state),
              f"result {shape_text(out)} must start with the state shape {shape_text(state)}")
    bits = out.tuple_shapes[1]
    # XLA's parser and verifier accept any array type (the bits are reinterpreted;
    # xlapy's backends fill any element type with raw bits)
    ctx.check(bits.is_array, f"bits {shape_text(bits)} must be an array")
    return Shape.tuple([array_shape(T.U64, state.dims), array_shape(bits.element_type, bits.dims)])


@rule("rng-get-and-update-state")
def rng_get_and_update_state(ctx: Ctx) -> Shape:
    """The ``u64[2]`` state before adding ``delta``."""
    ctx.arity(0)
    ctx.required("delta")
    return array_shape(T.U64, (2,))
