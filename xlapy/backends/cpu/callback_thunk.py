"""Host-callback thunks: compiled code calling back into Python.

A ``custom-call`` to ``xla_ffi_python_cpu_callback`` (``debug.print``, ``pure_callback``,
``io_callback``, ``tf.print`` / ``tf.numpy_function`` in compiled code) runs as a
:class:`HostCallbackThunk`: its operands are read as logical NumPy views of their
buffers, the registered callable runs on read-only views of them
(``interpreter.host_callbacks.call_host``: registry, result checks, tokens), and the
results are written into the instruction's buffers in their layouts. The thunk
runs on the thread executing the plan, in plan order, so callbacks inside a ``while``
body run once per iteration, in order.

Modules with host callbacks are neither read from nor written to the disk cache
(``compiler.py``): the callback index names a callable of this process only.
"""
from __future__ import annotations

from typing import Sequence

from ...hlo.ir import HloInstruction
from ..interpreter.host_callbacks import call_host, lookup
from .thunks import Memory, Thunk, ValueRef, read_value, write_value


class HostCallbackThunk(Thunk):
    """Calls one registered Python callable on views of the operand buffers."""

    kind = "host-callback"

    def __init__(self, instr: HloInstruction, operands: Sequence[ValueRef],
                 output: ValueRef) -> None:
        lookup(instr)                  # an unknown index fails at compile time
        self.instruction = instr
        self.operands = list(operands)
        self.output = output

    def run(self, mem: Memory) -> None:
        values = [read_value(r, mem) for r in self.operands]
        write_value(self.output, call_host(self.instruction, values), mem, self.instruction)


__all__ = ["HostCallbackThunk"]
