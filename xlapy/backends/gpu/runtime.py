"""The GPU runtime: one device arena per executable, a plan of thunks, ``execute(args)``.

Memory: every allocation of the buffer assignment (temp, constants, parameters, outputs)
gets an aligned slot of one device allocation per executable (from the device's
caching allocator, returned when the executable is collected), so every buffer address
is fixed when the plan is built and kernel arguments are computed once. Constants are
copied to the device once; each call copies the arguments into their parameter slots
(host to device), runs the plan and copies the result leaves back.

Thunks (one per scheduled instruction, as on the CPU): ``launch`` (an emitted kernel on
its grid), ``gemm`` (cuBLAS, ``cublas.py``), ``copy`` (device to device), ``while`` /
``conditional`` / ``call`` (sub-plans; a loop's predicate and a conditional's selector
are read back to the host each time) and ``fallback``: the operands are copied to the
host, the reference interpreter's handler computes the value and the result is copied
back -- slow but exactly the oracle's semantics, so every program runs. The fallback
opcodes are logged once per executable (logger ``xlapy.gpu``) and listed by
:meth:`GpuExecutable.fallback_opcodes`.
"""
from __future__ import annotations

import abc
import logging
import threading
import weakref
from typing import Any, Collection, Sequence

import numpy as np

from ...config import get_debug_options
from ...errors import InvalidArgumentError
from ...hlo.ir import HloInstruction, HloModule
from ...passes.buffer_assignment import PARAMETER, BufferAssignment
from ..cpu.executable import _Param, argument_leaves, value_ref
from ..cpu.thunks import BufferRef, PlanQueries, physical_bytes
from ..interpreter.evaluator import TOKEN
from .device import Device, align

log = logging.getLogger("xlapy.gpu")


class Thunk(abc.ABC):
    """Runs one instruction on device buffers; ``subplans`` are a control-flow thunk's."""

    kind = "thunk"
    instruction: HloInstruction
    subplans: tuple = ()

    @abc.abstractmethod
    def run(self) -> None:
        """Execute the instruction."""


class Plan(PlanQueries):
    """The thunks of one computation in schedule order."""

    def __init__(self, name: str, thunks: list[Thunk]) -> None:
        self.name, self.thunks = name, thunks
        self._runs = [t.run for t in thunks]

    def run(self) -> None:
        for run in self._runs:
            run()

    def instrument(self, wrap) -> None:
        """Run ``wrap(thunk)`` instead of ``thunk.run`` (the profiler's timers)."""
        self._runs = [wrap(t) for t in self.thunks]

    def walk(self):
        for t in self.thunks:
            yield t
            for sub in t.subplans:
                yield from sub.walk()


class Buffers:
    """Device addresses of the buffer assignment's allocations (the arena's slots)."""

    def __init__(self, device: Device, assignment: BufferAssignment) -> None:
        self.device = device
        self.offsets, total = [], 0
        for a in assignment.allocations:
            self.offsets.append(total)
            total += align(a.size)
        self.size = total
        self.base = device.alloc(max(total, 1))
        device.memset0(self.base, total)
        weakref.finalize(self, device.free, self.base)

    def address(self, ref: BufferRef) -> int:
        return self.base + self.offsets[ref.alloc] + ref.offset

    # ----- host values <-> device value trees
    def read(self, ref: Any) -> Any:
        """The interpreter value of a value tree (arrays copied to the host)."""
        if isinstance(ref, BufferRef):
            arr = np.empty(ref.physical_dims, ref.shape.dtype)
            self.device.d2h(self.address(ref), arr)
            return arr if ref.perm is None else arr.transpose(ref.perm)
        if isinstance(ref, tuple):
            return tuple(self.read(r) for r in ref)
        return TOKEN

    def write(self, ref: Any, value: Any, where: HloInstruction) -> None:
        """Store an interpreter value into the device buffers of a value tree."""
        if isinstance(ref, BufferRef):
            if ref.shape.num_elements:
                v = np.asarray(value).astype(ref.shape.dtype, copy=False)
                v = np.broadcast_to(v, ref.shape.dims)
                self.device.h2d(self.address(ref), np.ascontiguousarray(
                    physical_bytes(v, ref.shape)))
            return
        if isinstance(ref, tuple):
            if not isinstance(value, tuple) or len(value) != len(ref):
                raise InvalidArgumentError(f"{where.name}: expected a tuple of {len(ref)} values")
            for r, v in zip(ref, value):
                self.write(r, v, where)


class LaunchThunk(Thunk):
    kind = "launch"

    def __init__(self, instr: HloInstruction, device: Device, fn: Any, name: str,
                 grid: int, block: int, args: list[int]) -> None:
        self.instruction, self.device, self.fn, self.name = instr, device, fn, name
        self.grid, self.block, self.args = grid, block, args
        self._packed = device.kernel_args(args)

    def run(self) -> None:
        if self.grid:
            self.device.launch(self.fn, self.grid, self.block, self._packed)


class SequenceThunk(Thunk):
    """Several launches computing one instruction (a kernel and its follow-up kernels)."""

    kind = "launches"

    def __init__(self, instr: HloInstruction, plan: "Plan") -> None:
        self.instruction, self.plan = instr, plan
        self.subplans = (plan,)

    def run(self) -> None:
        self.plan.run()


class Copies:
    """Device-to-device copies of (source, destination) buffer pairs."""

    def __init__(self, buffers: Buffers, pairs: Sequence[tuple[BufferRef, BufferRef]]) -> None:
        self.device = buffers.device
        self.moves = [(buffers.address(d), buffers.address(s), s.size) for s, d in pairs
                      if s.size and buffers.address(s) != buffers.address(d)]

    def __call__(self) -> None:
        for dst, src, n in self.moves:
            self.device.d2d(dst, src, n)


class CopyThunk(Thunk):
    kind = "copy"

    def __init__(self, instr: HloInstruction, copies: Copies) -> None:
        self.instruction, self.copies = instr, copies

    def run(self) -> None:
        self.copies()


class FallbackThunk(Thunk):
    """The interpreter's handler on host copies of the operands (module docstring)."""

    kind = "fallback"

    def __init__(self, instr: HloInstruction, evaluator: Any, buffers: Buffers,
                 operands: list, output: Any) -> None:
        from ..cpu.fallback import check_fallback_possible
        check_fallback_possible(instr)
        self.instruction, self.evaluator, self.buffers = instr, evaluator, buffers
        self.operands, self.output = operands, output

    def run(self) -> None:
        values = [self.buffers.read(r) for r in self.operands]
        result = self.evaluator.evaluate(self.instruction, values)
        self.buffers.write(self.output, result, self.instruction)


class WhileThunk(Thunk):
    """``while``: the state lives in the while's buffers, copied into the condition's and
    body's parameters (as the CPU's ``WhileThunk``); the predicate is read back each trip."""

    kind = "while"

    def __init__(self, instr, buffers: Buffers, init: Copies, condition: Plan,
                 to_condition: Copies, predicate: BufferRef, body: Plan, to_body_first: Copies,
                 to_body: Copies, from_body: Copies) -> None:
        self.instruction, self.buffers = instr, buffers
        self.init, self.condition, self.to_condition = init, condition, to_condition
        self.predicate, self.body = predicate, body
        self.to_body_first, self.to_body, self.from_body = to_body_first, to_body, from_body
        self.subplans = (condition, body)
        self._pred = np.zeros(1, np.uint8)
        self._pred_addr = buffers.address(predicate)

    def run(self) -> None:
        self.init()
        to_body = self.to_body_first
        dev = self.buffers.device
        while True:
            self.to_condition()
            self.condition.run()
            dev.d2h(self._pred_addr, self._pred)
            if not self._pred[0]:
                return
            to_body()
            to_body = self.to_body
            self.body.run()
            self.from_body()


class ConditionalThunk(Thunk):
    kind = "conditional"

    def __init__(self, instr, buffers: Buffers, selector: BufferRef,
                 branches: list[tuple[Plan, Copies, Copies]]) -> None:
        self.instruction, self.buffers, self.selector = instr, buffers, selector
        self.pred = selector.shape.element_type.is_pred
        self.branches = branches
        self.subplans = tuple(b[0] for b in branches)

    def run(self) -> None:
        s = self.buffers.read(self.selector).item()
        if self.pred:
            index = 0 if s else 1
        else:
            index = int(s)
            if not 0 <= index < len(self.branches):
                index = len(self.branches) - 1
        plan, to_params, from_root = self.branches[index]
        to_params()
        plan.run()
        from_root()


class CallThunk(Thunk):
    kind = "call"

    def __init__(self, instr, plan: Plan, to_params: Copies, from_root: Copies) -> None:
        self.instruction, self.plan = instr, plan
        self.to_params, self.from_root = to_params, from_root
        self.subplans = (plan,)

    def run(self) -> None:
        self.to_params()
        self.plan.run()
        self.from_root()


class GpuExecutable:
    """A module compiled for a GPU (or the simulator): :meth:`execute` with NumPy arguments."""

    def __init__(self, module: HloModule, assignment: BufferAssignment, device: Device,
                 buffers: Buffers, plan: Plan, keep_alive: Sequence[Any] = (),
                 texts: dict[str, str] | None = None) -> None:
        self.module, self.assignment, self.device = module, assignment, device
        self.buffers, self.plan = buffers, plan
        self.texts = texts or {}
        self._keep_alive = list(keep_alive)
        self._lock = threading.Lock()
        entry = module.entry
        # the CPU executable's parameter bindings (never donated: arguments are copied)
        leaves: list[list[tuple[tuple[int, ...], int, bool]]] = [[] for _ in entry.parameters]
        for a in assignment.allocations:
            if a.kind == PARAMETER and a.param_shape is not None and a.param_shape.is_array:
                leaves[a.parameter_number].append((tuple(a.param_index), a.index, False))
        self._params = [_Param(i, p.name, p.shape, leaves[i])
                        for i, p in enumerate(entry.parameters)]
        self._slots = {alloc: buffers.base + buffers.offsets[alloc]
                       for p in self._params for _, alloc, _ in p.bindings}
        self.result = value_ref(assignment, entry.root)
        self._run = plan.run
        self.profiler = None
        if get_debug_options().xla_hlo_profile:
            from .profile import GpuProfiler
            self.profiler = GpuProfiler(device, plan, module.name)
            self._run = self.profiler.wrap_entry(plan.run)
        fallbacks = self.fallback_opcodes()
        if fallbacks:
            log.info("module %s: on the host (fallback): %s", module.name, ", ".join(fallbacks))

    def profile_text(self, limit: int | None = None) -> str:
        """The per-instruction time table (compiled with ``--xla_hlo_profile``)."""
        if self.profiler is None:
            raise InvalidArgumentError(
                f"module {self.module.name} was compiled without profiling: set "
                f"XLA_FLAGS=--xla_hlo_profile before compiling it")
        return self.profiler.to_text(limit)

    def thunk_kinds(self) -> dict[str, str]:
        """``instruction name -> thunk kind`` for every thunk, sub-plans included."""
        return self.plan.thunk_kinds()

    def fallback_opcodes(self) -> list[str]:
        """Sorted opcodes (``fusion:<root opcode>`` for fusions) that run on the host."""
        return self.plan.fallback_opcodes()

    def execute(self, args: Sequence[Any], owned: Collection[int] = ()) -> Any:
        """Copy ``args`` to the device, run, copy the result back (tuples as tuples).
        ``owned`` is accepted for the backend protocol; arguments are never written."""
        if len(args) != len(self._params):
            expected = ", ".join(f"{p.name}: {p.shape.to_text(False)}" for p in self._params)
            raise InvalidArgumentError(f"module {self.module.name} takes {len(self._params)} "
                                       f"arguments ({expected}), got {len(args)}")
        h2d, slots = self.device.h2d, self._slots
        with self._lock:
            for p, value in zip(self._params, args):
                if p.fast and type(value) is np.ndarray and value.dtype == p.dtype \
                        and value.shape == p.dims and value.flags.c_contiguous:
                    h2d(slots[p.alloc], value)
                    continue
                data = argument_leaves(value, p.shape, p.where)
                for position, alloc, _ in p.bindings:
                    h2d(slots[alloc], data[position])
            self._run()
            return self.buffers.read(self.result)

    def run_on_device(self) -> None:
        """Run the plan on the arguments already on the device (for timing)."""
        with self._lock:
            self._run()


__all__ = ["GpuExecutable", "Plan", "Buffers", "LaunchThunk", "SequenceThunk", "CopyThunk",
           "FallbackThunk", "WhileThunk", "ConditionalThunk", "CallThunk", "Copies"]
