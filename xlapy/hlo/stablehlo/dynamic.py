"""Dynamic dimensions in StableHLO: bounded dims, and unbounded ``?`` dims specialized.

A dimension of a ``tensor<...>`` type is static (``4``), **bounded**
(``tensor<?x4xf32, #stablehlo.bounds<8, ?>>``: at most 8, the actual size known at run
time) or **unbounded** (``?`` without a bound: ``jax.export`` with symbolic shapes prints
these). A bounded dim becomes HLO's bounded dynamic dim (``f32[<=8,4]``), which xlapy's
dynamic-shape support (``passes/dynamic_padder.py``) runs: the array is padded to its
bound and carries its actual size. An unbounded dim has no HLO form (XLA does not compile
one either: JAX refines the shapes of a shape-polymorphic module, StableHLO's
``refine-shapes``, from the actual arguments before it compiles), so it is
**specialized**: the converter is given the argument shapes (``xlapy.run_hlo`` and
``run_hlo_module`` pass those of the arrays they run on; ``to_hlo_module(text,
arg_shapes=...)``), puts them on ``@main``'s parameters, and every result shape follows
from its operands as the HLO builder infers it. A private function called with
specialized operands is converted once per distinct operand shapes. Ops that take their
result shape as an operand (``dynamic_broadcast_in_dim``, ``dynamic_reshape``,
``dynamic_iota``, ``dynamic_pad``, ``real_dynamic_slice``, and ``dynamic_conv``'s padding,
converted in ``ops.py``) need that operand's value at
conversion time: :func:`constant_value` evaluates it when it is computed from constants
and static dimension sizes (``get_dimension_size`` of a specialized dim is one), as JAX's
shape computations are. JAX's ``shape_assertion`` custom calls are checked then too: a
failing one raises its message.

Without argument shapes, an unbounded dim of ``@main`` is an error at its ``line:column``
saying it needs a bound or the argument shapes; an op whose result would keep an
unbounded dim is an error at the op.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import InvalidArgumentError
from ..ir import HloComputation, HloInstruction
from ..shape import UNBOUNDED, Shape
from .registry import OpContext, handler
from .syntax import Op

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
    "maximum": np.maximum, "minimum": np.minimum, "and": np.bitwise_and,
    "or": np.bitwise_or, "xor": np.bitwise_xor,
}
_COMPARE = {"EQ": operator.eq, "NE": operator.ne, "LT": operator.lt, "LE": operator.le,
            "GT": operator.gt, "GE": operator.ge}


def has_unbounded(shape: Shape) -> bool:
    """Whether ``shape`` (or an element of a tuple shape) has an unbounded ``?`` dim."""
    if shape.is_tuple:
        return any(has_unbounded(s) for s in shape.tuple_shapes)
    return shape.is_array and UNBOUNDED in shape.dims


def specialize(declared: Shape, dims: Sequence[int]) -> Shape:
    """``declared`` with its unbounded dims taken from ``dims`` (same rank; bounded and
    static dims stay as declared: the runner checks the argument against them)."""
    if not declared.is_array or len(dims) != declared.rank:
        raise InvalidArgumentError(f"an argument of rank {len(dims)} for a parameter of type "
                                   f"{declared.to_text(False)}")
    new = [int(g) if d == UNBOUNDED else d for d, g in zip(declared.dims, dims)]
    dynamic = [dyn and d != UNBOUNDED for d, dyn in zip(declared.dims, declared.dynamic)]
    return Shape.array(declared.element_type, new, dynamic=dynamic)


def fill_like(declared: Shape, like: Shape) -> Shape:
    """``declared`` with its unbounded dims taken from ``like`` (an operand of the same
    rank whose dims the result keeps: a convert, an elementwise op)."""
    if not has_unbounded(declared) or like.rank != declared.rank:
        return declared
    return specialize(declared, like.dims)


def constant_value(instr: HloInstruction, memo: dict[int, Any] | None = None
                   ) -> np.ndarray | None:
    """The value of ``instr`` when it follows from constants and static dimension sizes
    alone (a shape computation), else None."""
    memo = {} if memo is None else memo     # id -> value (seeded with known parameters)
    key = id(instr)
    if key not in memo:
        memo[key] = None            # a cycle cannot happen; this also bounds the work
        memo[key] = _evaluate(instr, memo)
    return memo[key]


def _evaluate(instr: HloInstruction, memo: dict[int, Any]) -> np.ndarray | None:
    op = instr.opcode
    if op == "constant":
        return None if instr.literal is None else np.asarray(instr.literal)
    if op == "get-dimension-size":
        x = instr.operands[0].shape
        d = instr.attrs["dimensions"][0]
        return None if x.dynamic[d] else np.asarray(x.dims[d], np.int32)
    if instr.shape.is_tuple or not instr.shape.is_array or instr.shape.num_elements > 64:
        return None
    args = [constant_value(o, memo) for o in instr.operands]
    if any(a is None for a in args):
        return None
    dtype = instr.shape.element_type.dtype
    dims = instr.shape.dims
    out: Any
    if op == "convert" or op == "copy" or op == "bitcast" or op == "reshape":
        out = args[0].astype(dtype).reshape(dims) if op != "convert" else args[0]
    elif op == "broadcast":
        src = np.asarray(args[0])
        shape = [1] * len(dims)
        for i, d in enumerate(instr.attrs.get("dimensions", ())):
            shape[d] = src.shape[i]
        out = np.broadcast_to(src.reshape(shape), dims)
    elif op == "concatenate":
        out = np.concatenate(args, axis=instr.attrs["dimensions"][0])
    elif op == "slice":
        out = args[0][tuple(slice(a, b, c) for a, b, c in instr.attrs["slice"])]
    elif op in _BINARY:
        out = _BINARY[op](args[0], args[1])
    elif op == "divide" and dtype.kind in "iu":
        a, b = args[0].astype(np.int64), args[1].astype(np.int64)
        if np.any(b == 0):
            return None
        out = np.trunc(a / b)       # HLO's integer division rounds toward zero
    elif op == "remainder" and dtype.kind in "iu":
        if np.any(args[1] == 0):
            return None
        out = np.fmod(args[0], args[1])     # the sign of the dividend, as HLO's
    elif op == "negate":
        out = -args[0]
    elif op == "abs":
        out = np.abs(args[0])
    elif op == "sign":
        out = np.sign(args[0])
    elif op == "compare":
        direction = _COMPARE.get(str(instr.attrs.get("direction", "")))
        if direction is None:
            return None
        out = direction(args[0], args[1])
    elif op == "select":
        out = np.where(args[0], args[1], args[2])
    elif op == "not":
        out = np.logical_not(args[0]) if dtype == np.bool_ else np.invert(args[0])
    else:
        return None
    return np.asarray(out).astype(dtype).reshape(dims)


def fold_call(known: dict[int, Any], operands: Sequence[HloInstruction],
              comp: HloComputation, results: Sequence[HloInstruction]) -> None:
    """Record in ``known`` the values of a call's ``results`` that follow from its
    operands' known values (JAX computes some dimension sizes in private functions such
    as ``@divmod``)."""
    memo = dict(known)
    for p in comp.parameters:
        value = constant_value(operands[p.parameter_number], dict(known))
        if value is None:
            return
        memo[id(p)] = value
    root = comp.root
    values = root.operands if root.opcode == "tuple" and len(results) > 1 else [root]
    for r, v in zip(results, values):
        value = constant_value(v, memo)
        if value is not None:
            known[id(r)] = value


def static_values(ctx: OpContext, value: HloInstruction, what: str) -> list[int]:
    """The integers of a shape-like operand, which must be computable now."""
    v = constant_value(value, dict(ctx.conv.known))
    if v is None:
        raise ctx.fail(f"its {what} operand is not known at compile time (it depends on "
                       "data, or on a dimension that stays dynamic); xlapy specializes "
                       "dynamic shapes from the argument shapes only")
    return [int(x) for x in np.asarray(v).reshape(-1)]


def broadcast_to(ctx: OpContext, x: HloInstruction, dims: Sequence[int],
                 out_dims: Sequence[int]) -> HloInstruction:
    """StableHLO's ``broadcast_in_dim`` of ``x`` to ``out_dims`` (operand dim ``i`` to
    result dim ``dims[i]``) as HLO's broadcast, size-1 dims that stretch reshaped away."""
    bdims = list(dims)
    stretch = [i for i, d in enumerate(bdims) if x.shape.dims[i] == 1 and out_dims[d] != 1]
    if stretch:                         # size-1 dims that stretch: reshape them away first
        keep = [i for i in range(x.shape.rank) if i not in stretch]
        x = ctx.add("reshape", [x], declared=x.shape.with_dims([x.shape.dims[i] for i in keep]))
        bdims = [bdims[i] for i in keep]
    return ctx.add("broadcast", [x], {"dimensions": tuple(bdims)},
                   declared=Shape.array(x.shape.element_type, list(out_dims)))


def _int_attr(op: Op, *names: str) -> list[int]:
    for n in names:
        v = op.attrs.get(n)
        if v is not None:
            return [int(x) for x in (np.asarray(v.content).reshape(-1)
                                     if hasattr(v, "content") else v)]
    return []


@handler("stablehlo.dynamic_broadcast_in_dim")
def dynamic_broadcast_in_dim(ctx: OpContext, op: Op) -> list:
    x, shape = ctx.operands()
    out_dims = static_values(ctx, shape, "output_dimensions")
    dims = _int_attr(op, "dims", "broadcast_dimensions")
    return [broadcast_to(ctx, x, dims, out_dims)]


@handler("stablehlo.dynamic_reshape")
def dynamic_reshape(ctx: OpContext, op: Op) -> list:
    x, shape = ctx.operands()
    dims = static_values(ctx, shape, "output_shape")
    return [ctx.add("reshape", [x], declared=x.shape.with_dims(dims).without_layout())]


@handler("stablehlo.dynamic_iota")
def dynamic_iota(ctx: OpContext, op: Op) -> list:
    (shape,) = ctx.operands()
    dims = static_values(ctx, shape, "output_shape")
    dim = int(op.attrs.get("dim", op.attrs.get("iota_dimension", 0)))
    et = ctx.result_type().element_type
    return [ctx.add("iota", [], {"iota_dimension": dim}, declared=Shape.array(et, dims))]


@handler("stablehlo.dynamic_pad")
def dynamic_pad(ctx: OpContext, op: Op) -> list:
    x, value, low, high, interior = ctx.operands()
    lo = static_values(ctx, low, "edge_padding_low")
    hi = static_values(ctx, high, "edge_padding_high")
    inner = static_values(ctx, interior, "interior_padding")
    return [ctx.add("pad", [x, value], {"padding": tuple(zip(lo, hi, inner))})]


@handler("stablehlo.real_dynamic_slice")
def real_dynamic_slice(ctx: OpContext, op: Op) -> list:
    x, start, limit, strides = ctx.operands()
    spec = tuple(zip(static_values(ctx, start, "start_indices"),
                     static_values(ctx, limit, "limit_indices"),
                     static_values(ctx, strides, "strides")))
    return [ctx.add("slice", [x], {"slice": spec})]


def shape_assertion(ctx: OpContext, op: Op) -> list:
    """JAX's ``shape_assertion`` custom call: checked now (its operands are dimension
    sizes), nothing is emitted; a false condition raises its ``error_message``."""
    operands = ctx.operands()
    if not operands:
        raise ctx.fail("shape_assertion needs a condition operand")
    values = [constant_value(o, dict(ctx.conv.known)) for o in operands]
    if values[0] is None:
        raise ctx.fail("shape_assertion: the condition is not known at compile time")
    if not bool(np.asarray(values[0]).all()):
        message = str(op.attrs.get("error_message", "shape assertion failed"))
        try:
            message = message.format(*[int(np.asarray(v)) for v in values[1:]
                                       if v is not None])
        except (IndexError, ValueError, TypeError, KeyError):
            pass
        raise InvalidArgumentError(message)
    return []


__all__ = ["broadcast_to", "constant_value", "fill_like", "fold_call", "has_unbounded",
           "shape_assertion", "specialize", "static_values"]
