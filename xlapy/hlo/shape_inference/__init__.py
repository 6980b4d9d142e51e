"""Shape inference: the result shape of an HLO op from its operand shapes and attributes.

``infer_shape(opcode, operand_shapes, attrs, declared=None)`` follows XLA's rules
(``xla/service/shape_inference.cc``). Some ops take part of their result from the
instruction text rather than from the operands (``reshape`` and ``broadcast`` take their
dims, ``convert`` its element type, ``iota``/``rng``/``parameter`` their whole shape,
``custom-call`` anything): for those ``declared`` is the shape written in the text (or
asked for by the builder); the rule checks it against the operands and returns it.

Rules live in one file per op family (see ``OPCODES[...].family``) and are registered
with :func:`rule`. Each rule gets a :class:`Ctx` and returns the inferred shape, without
layouts. Bad input raises :class:`~xlapy.errors.ShapeError` naming the opcode, every
operand shape and the attribute at fault.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ...errors import ShapeError
from .. import types as T
from ..shape import Shape
from ..types import ElementType

Rule = Callable[["Ctx"], Shape]
RULES: dict[str, Rule] = {}


def rule(*opcodes: str) -> Callable[[Rule], Rule]:
    """Register ``fn`` as the shape rule of ``opcodes``."""
    def register(fn: Rule) -> Rule:
        for op in opcodes:
            RULES[op] = fn
        return fn
    return register


def shape_text(s: Shape) -> str:
    """A shape as text without layout (``f32[2,3]``)."""
    return s.to_text(print_layout=False)


class Ctx:
    """What a shape rule sees: opcode, operand shapes, attributes and the declared shape."""

    def __init__(self, opcode: str, operands: Sequence[Shape], attrs: Mapping[str, Any],
                 declared: Shape | None) -> None:
        self.opcode = opcode
        self.operands = list(operands)
        self.attrs = attrs
        self.declared = declared

    # ----- errors
    def fail(self, message: str) -> ShapeError:
        """A ShapeError ``opcode: message`` that also lists every operand shape."""
        texts = [shape_text(s) for s in self.operands]
        text = f"{self.opcode}: {message}"
        if texts and not all(t in message for t in texts):
            text += f" (operand shapes: {', '.join(texts) if texts else 'none'})"
        return ShapeError(text)

    def check(self, cond: bool, message: str) -> None:
        if not cond:
            raise self.fail(message)

    # ----- attribute access
    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def required(self, name: str) -> Any:
        if name not in self.attrs:
            raise self.fail(f"missing required attribute {name}")
        return self.attrs[name]

    def ints(self, name: str, default: Sequence[int] | None = None) -> tuple[int, ...]:
        """An int-list attribute (``dimensions={0,1}``)."""
        if name not in self.attrs:
            if default is None:
                raise self.fail(f"missing required attribute {name}")
            return tuple(default)
        value = self.attrs[name]
        if isinstance(value, int):
            return (value,)
        try:
            return tuple(int(v) for v in value)
        except (TypeError, ValueError):
            raise self.fail(f"attribute {name}={value!r} must be a list of integers") from None

    def computation(self, name: str):
        """A called computation attribute (an HloComputation)."""
        comp = self.required(name)
        if not hasattr(comp, "program_shape"):
            raise self.fail(f"attribute {name} must be a computation, got {comp!r}")
        if comp.root is None:
            raise self.fail(f"called computation {comp.name} ({name}) has no root")
        if any(p is None for p in comp.parameters):
            raise self.fail(f"called computation {comp.name} ({name}) has a gap in its "
                            "parameter numbers")
        return comp

    # ----- operand helpers
    def arity(self, n: int) -> None:
        self.check(len(self.operands) == n,
                   f"expects {n} operand{'s' if n != 1 else ''}, got {len(self.operands)}")

    def array(self, i: int, what: str = "operand") -> Shape:
        s = self.operands[i]
        self.check(s.is_array, f"{what} {i} must be an array, got {shape_text(s)}")
        return s

    def need_declared(self, what: str) -> Shape:
        if self.declared is None:
            raise self.fail(f"the result {what} is not implied by the operands: "
                            "pass the declared result shape")
        return self.declared


def array_shape(et: ElementType, dims: Sequence[int], dynamic: Sequence[bool] | None = None
                ) -> Shape:
    """An array shape without layout."""
    return Shape.array(et, tuple(dims), dynamic=dynamic)


def same_type_and_dims(a: Shape, b: Shape) -> bool:
    """Equal element type and dims (layout and dynamic flags ignored), recursing into tuples."""
    if a.is_tuple or b.is_tuple:
        return (a.is_tuple and b.is_tuple and len(a.tuple_shapes) == len(b.tuple_shapes)
                and all(same_type_and_dims(x, y) for x, y in zip(a.tuple_shapes, b.tuple_shapes)))
    return a.element_type == b.element_type and a.dims == b.dims


def same_dims(a: Shape, b: Shape) -> bool:
    """Equal dims, element type ignored (tuples compared leaf by leaf)."""
    if a.is_tuple or b.is_tuple:
        return (a.is_tuple and b.is_tuple and len(a.tuple_shapes) == len(b.tuple_shapes)
                and all(same_dims(x, y) for x, y in zip(a.tuple_shapes, b.tuple_shapes)))
    return a.is_token == b.is_token and a.dims == b.dims


def complex_component(et: ElementType) -> ElementType:
    """f32 for c64, f64 for c128."""
    return T.F64 if et is T.C128 else T.F32


def check_dims_in_range(ctx: Ctx, name: str, dims: Sequence[int], rank: int,
                        unique: bool = True) -> None:
    """Every entry of attribute ``name`` is a dimension index below ``rank`` (and distinct)."""
    for d in dims:
        ctx.check(0 <= d < rank, f"{name}={{{','.join(map(str, dims))}}} has dimension {d} "
                                 f"out of range for rank {rank}")
    if unique:
        ctx.check(len(set(dims)) == len(dims),
                  f"{name}={{{','.join(map(str, dims))}}} repeats a dimension")


from . import (collective, control_flow, data_movement, elementwise,  # noqa: E402,F401
               gather_scatter, linalg,
               reduction, rng)


def infer_shape(opcode: str, operand_shapes: Sequence[Shape],
                attrs: Mapping[str, Any] | None = None, declared: Shape | None = None) -> Shape:
    """The result shape of ``opcode`` applied to ``operand_shapes`` with ``attrs``.

    ``declared`` is the result shape written in the text; ops whose result is not implied
    by their operands (reshape, broadcast, convert, iota, custom-call, ...) need it.
    The returned shape has no layouts. Raises ShapeError on invalid input.
    """
    fn = RULES.get(opcode)
    if fn is None:
        raise ShapeError(f"{opcode}: no shape rule for this opcode")
    return fn(Ctx(opcode, operand_shapes, attrs or {}, declared))


def infer_instruction_shape(instr) -> Shape:
    """The shape ``instr`` should have given its operands, attributes and declared shape."""
    attrs = dict(instr.attrs)
    if instr.opcode == "constant" and instr.literal is not None:
        attrs["__literal__"] = instr.literal
    return infer_shape(instr.opcode, [o.shape for o in instr.operands], attrs, instr.shape)


def has_rule(opcode: str) -> bool:
    """True if a shape rule is registered for ``opcode``."""
    return opcode in RULES


__all__ = ["infer_shape", "infer_instruction_shape", "has_rule", "RULES", "rule", "Ctx",
           "same_type_and_dims", "same_dims", "shape_text"]
