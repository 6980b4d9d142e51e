"""Fallback thunks: the reference interpreter's handler run on NumPy views of the buffers.

An instruction that no native emitter or library routine covers runs through
:class:`FallbackThunk`: its operands are read as logical NumPy views of their buffers
(``thunks.read_value``), the interpreter handler for its opcode computes the value
(exactly the oracle's semantics, called computations included), and the result is
written into the instruction's buffers in their layouts. It is slower than native
code but never gives a different answer.

Which opcodes fall back is listed in ``executable.py``'s module docstring;
``CpuExecutable.fallback_opcodes()`` reports them for a compiled module. An opcode the
interpreter cannot run either is rejected at compile time
(:func:`check_fallback_possible`).
"""
from __future__ import annotations

from typing import Sequence

from ...errors import UnimplementedError
from ...hlo.ir import HloInstruction
from ..interpreter import HANDLERS, Evaluator
from ..interpreter.evaluator import CUSTOM_CALLS, describe
from .thunks import Memory, Thunk, ValueRef, read_value, write_value


def check_fallback_possible(instr: HloInstruction) -> None:
    """Raise :class:`UnimplementedError` at compile time when neither native code nor the
    interpreter can run ``instr`` (so the error does not wait for the first call)."""
    if instr.opcode not in HANDLERS:
        raise UnimplementedError(f"the CPU backend cannot execute opcode '{instr.opcode}' "
                                 f"(no native emitter and no interpreter handler): "
                                 f"{describe(instr)}")
    if instr.opcode == "custom-call":
        target = instr.attrs.get("custom_call_target", "")
        if target not in CUSTOM_CALLS:
            raise UnimplementedError(f"the CPU backend has no implementation of custom-call "
                                     f"target '{target}': {describe(instr)}")


class FallbackThunk(Thunk):
    """Evaluates one instruction with the interpreter on views of its buffers."""

    kind = "fallback"

    def __init__(self, instr: HloInstruction, evaluator: Evaluator,
                 operands: Sequence[ValueRef], output: ValueRef) -> None:
        check_fallback_possible(instr)
        self.instruction = instr
        self.evaluator = evaluator
        self.operands = list(operands)
        self.output = output

    def run(self, mem: Memory) -> None:
        values = [read_value(r, mem) for r in self.operands]
        result = self.evaluator.evaluate(self.instruction, values)
        write_value(self.output, result, mem, self.instruction)


__all__ = ["FallbackThunk", "check_fallback_possible"]
