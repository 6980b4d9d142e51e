"""Small helpers that build HLO computations directly (for the interpreter's handler tests)."""
from __future__ import annotations

from typing import Any

import numpy as np

from xlapy.backends.interpreter import Evaluator
from xlapy.hlo.ir import HloComputation, HloInstruction, HloModule
from xlapy.hlo.shape import Shape
from xlapy.hlo.types import from_dtype


def sh(elem: str, *dims: int) -> Shape:
    return Shape.array(elem, dims)


def shape_of(a: Any) -> Shape:
    if isinstance(a, tuple):
        return Shape.tuple([shape_of(v) for v in a])
    a = np.asarray(a)
    return Shape.array(from_dtype(a.dtype), a.shape)


class Comp:
    """Builds one computation: ``c = Comp("f"); p = c.param(sh("f32")); c.root(c.op(...))``."""

    def __init__(self, name: str) -> None:
        self.comp = HloComputation(name)
        self._n = 0

    def _add(self, instr: HloInstruction) -> HloInstruction:
        self._n += 1
        instr.name = f"{instr.opcode}.{self._n}"
        return self.comp.add_instruction(instr)

    def param(self, shape: Shape) -> HloInstruction:
        return self._add(HloInstruction("parameter", shape,
                                        parameter_number=len(self.comp.parameters)))

    def const(self, value: Any, elem: str | None = None) -> HloInstruction:
        a = np.asarray(value) if elem is None else np.asarray(value, dtype=sh(elem).dtype)
        return self._add(HloInstruction("constant", shape_of(a), literal=a))

    def op(self, opcode: str, shape: Shape, *operands: HloInstruction, **attrs) -> HloInstruction:
        return self._add(HloInstruction(opcode, shape, operands, attrs))

    def done(self, root: HloInstruction | None = None) -> HloComputation:
        self.comp.root = root if root is not None else self.comp.instructions[-1]
        return self.comp


def binary(opcode: str, elem: str = "f32") -> HloComputation:
    """``ROOT opcode(p0, p1)`` on scalars of ``elem``."""
    c = Comp(f"{opcode}_{elem}")
    a, b = c.param(sh(elem)), c.param(sh(elem))
    out = "pred" if opcode == "compare" else elem
    return c.done(c.op(opcode, sh(out), a, b))


def compare(direction: str, elem: str = "f32", cmp_type: str | None = None,
            extra_params: tuple[str, ...] = ()) -> HloComputation:
    """A sort comparator ``ROOT compare(p0, p1)`` (plus unused parameter pairs)."""
    c = Comp(f"cmp_{direction}")
    a, b = c.param(sh(elem)), c.param(sh(elem))
    for e in extra_params:
        c.param(sh(e))
        c.param(sh(e))
    attrs = {"direction": direction}
    if cmp_type:
        attrs["type"] = cmp_type
    return c.done(c.op("compare", sh("pred"), a, b, **attrs))


def run_one(opcode: str, result: Shape, operands: list, ev: Evaluator | None = None,
            **attrs) -> Any:
    """Evaluate a single ``opcode`` instruction on NumPy operands through the evaluator."""
    c = Comp("entry")
    params = [c.param(shape_of(v)) for v in operands]
    c.op(opcode, result, *params, **attrs)
    comp = c.done()
    ev = ev or Evaluator()
    return ev.call(comp, [_value(v) for v in operands])


def _value(v: Any) -> Any:
    return tuple(_value(x) for x in v) if isinstance(v, tuple) else np.asarray(v)


def module_of(entry: HloComputation, **attributes) -> HloModule:
    m = HloModule("test")
    m.attributes.update(attributes)
    m.add_computation(entry, is_entry=True)
    return m


def run_text(text: str, *args: Any, **options) -> Any:
    """Parse an HLO module and run its entry computation on ``args`` with the interpreter."""
    from xlapy.backends.interpreter import evaluate_module
    from xlapy.hlo import parse_module
    return evaluate_module(parse_module(text), [_value(a) for a in args], **options)
