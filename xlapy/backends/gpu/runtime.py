"""The GPU runtime: one device arena per executable, a plan of thunks, ``execute(args)``.

Memory: every allocation of the buffer assignment (temp, constants, parameters, outputs)
gets an aligned slot of one device allocation per executable (from the device's
caching allocator, returned when the executable is collected), and kernel arguments are
packed once when the plan is built. Constants are copied to the device once.

Parameters and outputs are *bound* per call, as XLA binds a run's buffers: every place
the plan holds the address of a parameter or output allocation (kernel argument slots,
copies, cuBLAS calls) is recorded as a relocation, and :meth:`Buffers.rebind` rewrites
those places when the allocation moves (only when its address changed). A call
(:meth:`GpuExecutable.execute_resident`):

- binds an argument that is already on this device (a :class:`DeviceValue`, or an object
  whose ``device_value`` is one) directly, with no copy; a host argument is copied into
  the parameter's arena slot (host to device, queued on the stream);
- a *donated* parameter (``input_output_alias`` honoured by buffer assignment) is written
  by the program: it gets the argument's own buffer when the caller hands it over
  (``owned``), else a new buffer holding a copy, and the aliased output is that buffer;
- every output allocation gets a new buffer from the caching allocator; the results are
  :class:`DeviceValue` s owning them (leaves in a parameter, constant or temp allocation
  are copied device to device into a buffer of their own), so nothing is copied back
  until a value is read. :meth:`GpuExecutable.execute` is the same call with the results
  read to the host.

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
import warnings
import weakref
from typing import Any, Collection, Sequence

import numpy as np

from ...config import get_debug_options
from ...errors import InvalidArgumentError
from ...hlo.ir import HloInstruction, HloModule
from ...passes.buffer_assignment import OUTPUT, PARAMETER, BufferAssignment
from ..cpu.executable import _Param, argument_leaves, value_ref
from ..cpu.thunks import BufferRef, PlanQueries, physical_bytes
from ..interpreter.evaluator import TOKEN
from .device import ALIGNMENT, Device, DeviceBuffer, DeviceValue, align

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
    """Device addresses of the buffer assignment's allocations: the arena's slots, except
    for parameter and output allocations bound elsewhere for a call (:meth:`rebind`)."""

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
        self.arena = [self.base + o for o in self.offsets]      # each allocation's slot
        self.bases = list(self.arena)                           # where it is bound now
        self.dynamic = {a.index for a in assignment.allocations if a.kind in (PARAMETER, OUTPUT)}
        self._relocations: dict[int, list[tuple[Any, Any, int]]] = {}

    def address(self, ref: BufferRef) -> int:
        return self.bases[ref.alloc] + ref.offset

    def track(self, ref: BufferRef, target: Any, key: Any) -> None:
        """``target[key]`` holds ``address(ref)``: rewrite it when ``ref``'s allocation is
        rebound (only parameter and output allocations move)."""
        if ref.alloc in self.dynamic:
            self._relocations.setdefault(ref.alloc, []).append((target, key, ref.offset))

    def rebind(self, alloc: int, base: int) -> None:
        """Bind allocation ``alloc`` to device address ``base`` (its relocations follow)."""
        if self.bases[alloc] != base:
            self.bases[alloc] = base
            for target, key, offset in self._relocations.get(alloc, ()):
                target[key] = base + offset

    def reset(self) -> None:
        """Bind every allocation to its arena slot again."""
        for alloc in self.dynamic:
            self.rebind(alloc, self.arena[alloc])

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
        self.packed = device.kernel_args(args)

    def run(self) -> None:
        if self.grid:
            self.device.launch(self.fn, self.grid, self.block, self.packed)


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
        self.moves: list[list[int]] = []
        for s, d in pairs:
            if s.size and buffers.address(s) != buffers.address(d):
                move = [buffers.address(d), buffers.address(s), s.size]
                buffers.track(d, move, 0)
                buffers.track(s, move, 1)
                self.moves.append(move)

    def __call__(self) -> None:
        for dst, src, n in self.moves:
            self.device.d2d(dst, src, n)


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
        self._pred_addr = [buffers.address(predicate)]
        buffers.track(predicate, self._pred_addr, 0)

    def run(self) -> None:
        self.init()
        to_body = self.to_body_first
        dev = self.buffers.device
        while True:
            self.to_condition()
            self.condition.run()
            dev.d2h(self._pred_addr[0], self._pred)
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
    """A module compiled for a GPU (or the simulator): :meth:`execute_resident` (results
    stay on the device) and :meth:`execute` (results read to the host)."""

    def __init__(self, module: HloModule, assignment: BufferAssignment, device: Device,
                 buffers: Buffers, plan: Plan, keep_alive: Sequence[Any] = (),
                 texts: dict[str, str] | None = None) -> None:
        self.module, self.assignment, self.device = module, assignment, device
        self.buffers, self.plan = buffers, plan
        self.texts = texts or {}
        self._keep_alive = list(keep_alive)
        self._lock = threading.Lock()
        entry = module.entry
        # the CPU executable's parameter bindings; "donated": the program writes the
        # parameter's allocation (an honoured input_output_alias)
        leaves: list[list[tuple[tuple[int, ...], int, bool]]] = [[] for _ in entry.parameters]
        for a in assignment.allocations:
            if a.kind == PARAMETER and a.param_shape is not None and a.param_shape.is_array:
                leaves[a.parameter_number].append((tuple(a.param_index), a.index,
                                                   a.aliased_with_output))
        self._params = [_Param(i, p.name, p.shape, leaves[i])
                        for i, p in enumerate(entry.parameters)]
        self._sizes = [a.size for a in assignment.allocations]
        self._outputs = [a.index for a in assignment.allocations if a.kind == OUTPUT]
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
        refused = [d.message for d in assignment.donation_messages if not d.honoured]
        if refused:     # JAX's warning: the call still runs, the argument is only read
            warnings.warn(f"Some donated buffers were not usable in {module.name}: "
                          + "; ".join(refused), stacklevel=2)

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

    def donatable_parameters(self) -> list[int]:
        """Parameters whose argument's device buffer becomes an output's when handed over
        (``owned``): one row-major array with an honoured ``input_output_alias``."""
        return [p.number for p in self._params if p.in_place]

    def execute(self, args: Sequence[Any], owned: Collection[int] = ()) -> Any:
        """Run on ``args`` (host arrays or device values); the results read to the host
        (tuples as tuples)."""
        out = self.execute_resident(args, owned)
        return _to_host(out)

    def execute_resident(self, args: Sequence[Any], owned: Collection[int] = ()) -> Any:
        """Run on ``args`` and return the results as :class:`DeviceValue` s (tuples as
        tuples; a leaf in a non-default layout is read to the host). An argument is a host
        array, or a device value of this device bound with no copy; ``owned``: donated
        parameters whose device buffers the call may take for their outputs (module
        docstring)."""
        if len(args) != len(self._params):
            expected = ", ".join(f"{p.name}: {p.shape.to_text(False)}" for p in self._params)
            raise InvalidArgumentError(f"module {self.module.name} takes {len(self._params)} "
                                       f"arguments ({expected}), got {len(args)}")
        device, buffers = self.device, self.buffers
        if owned:
            owned = _unshared(args, owned)
        with self._lock:
            bound: dict[int, DeviceBuffer] = {}     # allocations given a buffer this call
            keep = []                               # device arguments, alive until the end
            for p, value in zip(self._params, args):
                dv = _device_value(value)
                if dv is not None and self._bind_device(p, dv, p.number in owned, bound):
                    keep.append(dv)
                    continue
                self._bind_host(p, value, bound)
            for alloc in self._outputs:
                buf = device.buffer(self._sizes[alloc])
                bound[alloc] = buf
                buffers.rebind(alloc, buf.address)
            self._run()
            return self._collect(self.result, bound, {})

    # ----- binding arguments
    def _bind_device(self, p: _Param, dv: DeviceValue, owned: bool,
                     bound: dict[int, DeviceBuffer]) -> bool:
        """Bind parameter ``p`` to device value ``dv`` (False: it must go through the host:
        another device, a non-default layout, another shape)."""
        if dv.buffer.device is not self.device or not (p.fast or p.in_place) \
                or dv.shape != p.dims or dv.dtype != p.dtype:
            return False
        addr = dv.address
        if p.in_place:          # the program writes it: its own buffer, or a copy
            if not (owned and dv.offset == 0 and addr % ALIGNMENT == 0):
                dv = self.device.copy_value(dv)
            bound[p.alloc] = dv.buffer
            self.buffers.rebind(p.alloc, dv.buffer.address)
        elif addr % ALIGNMENT == 0:
            self.buffers.rebind(p.alloc, addr)
        else:                   # a misaligned view: copied into the parameter's slot
            slot = self.buffers.arena[p.alloc]
            self.device.d2d(slot, addr, dv.nbytes)
            self.buffers.rebind(p.alloc, slot)
        return True

    def _bind_host(self, p: _Param, value: Any, bound: dict[int, DeviceBuffer]) -> None:
        """Copy a host argument to the device: into the arena slots of its leaves, or new
        buffers for the leaves the program writes (donated)."""
        if p.fast and type(value) is np.ndarray and value.dtype == p.dtype \
                and value.shape == p.dims and value.flags.c_contiguous:
            data = [value]
        else:
            data = argument_leaves(value, p.shape, p.where)
        device, buffers = self.device, self.buffers
        for position, alloc, donated in p.bindings:
            if donated:         # written by the program: a new buffer the output takes
                buf = device.buffer(self._sizes[alloc])
                bound[alloc] = buf
                addr = buf.address
            else:
                addr = buffers.arena[alloc]
            buffers.rebind(alloc, addr)
            device.h2d(addr, data[position])

    # ----- results
    def _collect(self, ref: Any, bound: dict[int, DeviceBuffer], made: dict) -> Any:
        """The result tree as device values owning this call's output buffers."""
        if isinstance(ref, BufferRef):
            if ref.perm is not None or not ref.shape.is_array:
                return self.buffers.read(ref)
            key = (ref.alloc, ref.offset)
            value = made.get(key)
            if value is None:
                buf = bound.get(ref.alloc)
                dims, dtype = tuple(ref.shape.dims), ref.shape.dtype
                if buf is not None:
                    value = DeviceValue(buf, ref.offset, dims, dtype)
                else:       # a parameter, constant or temp: a copy of its own
                    value = DeviceValue(self.device.buffer(ref.size), 0, dims, dtype)
                    self.device.d2d(value.address, self.buffers.address(ref), ref.size)
                made[key] = value
            return value
        if isinstance(ref, tuple):
            return tuple(self._collect(r, bound, made) for r in ref)
        return TOKEN

    def run_on_device(self) -> None:
        """Run the plan on the arguments of the last :meth:`execute` of host arrays (for
        timing; outputs go to the arena's slots)."""
        with self._lock:
            self.buffers.reset()
            self._run()


def _device_value(value: Any) -> DeviceValue | None:
    if type(value) is DeviceValue:
        return value
    return None if type(value) is np.ndarray else getattr(value, "device_value", None)


def _unshared(args: Sequence[Any], owned: Collection[int]) -> set[int]:
    """The ``owned`` parameters whose device buffer no other argument of the call uses
    (a buffer the program writes must not be read through another parameter)."""
    users: dict[int, int] = {}
    for value in args:
        dv = _device_value(value)
        if dv is not None:
            users[id(dv.buffer)] = users.get(id(dv.buffer), 0) + 1
    out = set()
    for p in owned:
        dv = _device_value(args[p]) if p < len(args) else None
        if dv is None or users[id(dv.buffer)] == 1:
            out.add(p)
    return out


def _to_host(value: Any) -> Any:
    if type(value) is DeviceValue:
        return value.read()
    if isinstance(value, tuple):
        return tuple(_to_host(v) for v in value)
    return value


__all__ = ["GpuExecutable", "Plan", "Buffers", "LaunchThunk", "SequenceThunk",
           "FallbackThunk", "WhileThunk", "ConditionalThunk", "CallThunk", "Copies"]
