"""The op-converter registry and what a converter is given (:class:`OpContext`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ...errors import InvalidArgumentError, XlapyError
from ..builder import XlaBuilder
from ..ir import HloInstruction
from ..shape import Shape
from .syntax import Op, Region

if TYPE_CHECKING:
    from .convert import Converter

Handler = Callable[["OpContext", Op], list]
HANDLERS: dict[str, Handler] = {}


def handler(*names: str):
    """Register the converter of the ops ``names``."""
    def register(fn: Handler) -> Handler:
        for n in names:
            HANDLERS[n] = fn
        return fn
    return register


class OpContext:
    """What an op handler needs: the builder, operand values, naming and errors."""

    def __init__(self, conv: "Converter", b: XlaBuilder, env: dict[str, HloInstruction],
                 op: Op, base: str = "") -> None:
        self.conv, self.b, self.env, self.op = conv, b, env, op
        self.base = base         # the name of the op's location, which names its instructions

    def operands(self) -> list[HloInstruction]:
        return [self.conv.lookup(self.env, k, self.op) for k in self.op.operands]

    def add(self, opcode: str, operands, attrs: dict[str, Any] | None = None,
            declared: Shape | None = None, literal: Any = None) -> HloInstruction:
        return self.b.add_instruction(opcode, operands, attrs, declared, literal,
                                      name=self.conv.name(self.base or opcode))

    def results(self, instr: HloInstruction) -> list[HloInstruction]:
        """The op's results from ``instr`` (elements of a tuple when there are several)."""
        if len(self.op.results) == 1 and not (instr.shape.is_tuple and
                                              len(self.op.result_types) == 1 and
                                              not self.op.result_types[0].is_tuple):
            return [instr]
        return [self.add("get-tuple-element", [instr], {"index": i})
                for i in range(len(instr.shape.tuple_shapes))]

    def fail(self, message: str) -> XlapyError:
        return InvalidArgumentError(message)

    def result_type(self, i: int = 0) -> Shape:
        if i >= len(self.op.result_types):
            raise self.fail("the op has no result type")
        return self.op.result_types[i]


def free_values(regions: list[Region], defined: set[str] | None = None) -> list[str]:
    """Values the regions use but do not define (implicit captures), in first-use order."""
    out: list[str] = []
    seen: set[str] = set()

    def walk(region: Region, inner: set[str]) -> None:
        local = set(inner)
        for block in region.blocks:
            local.update(k for k, _ in block.args)
            for op in block.ops:
                for k in op.operands:
                    if k not in local and k not in seen:
                        seen.add(k)
                        out.append(k)
                for k, v in op.positional:
                    if k == "iter_arg":
                        local.add(v)
                for r in op.regions:
                    walk(r, local)
                local.update(op.results)

    for region in regions:
        walk(region, set(defined or ()))
    return out


