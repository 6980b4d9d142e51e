"""The CPU runtime's building blocks: memory, buffer references and thunks (the thread pool is
``thread_pool.py``).

**Memory.** Every buffer of a compiled module lives in one allocation of the buffer
assignment (:mod:`xlapy.passes.buffer_assignment`). :class:`Memory` holds one
C-contiguous NumPy array (and its address) per allocation index: the temp arena and
the constants are *fixed* (``uint8`` arrays set once per executable); entry parameters
(the caller's arrays) and outputs (fresh arrays) are *per call*, set by the executable
before each run.

A :class:`BufferRef` names one array value: allocation, byte offset, array shape (with
its layout). ``view(mem)`` is the logical NumPy view of those bytes (the physical
array in major-to-minor order, transposed back to dimension order); for fixed
allocations the view is built once.

A **thunk** runs one instruction: ``run(mem)``. A :class:`Plan` is a list of thunks
for one computation. Kernel thunks call native code with a precomputed table of
buffer addresses (``i8** buffers``); slots that point into per-call allocations are
patched by the executable at the start of each call (:meth:`KernelThunk.dynamic_slots`).
"""
from __future__ import annotations

import abc
import ctypes
from dataclasses import dataclass
from math import prod
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import ExecutionError
from ...hlo.ir import HloInstruction
from ...hlo.shape import Shape
from ..interpreter.evaluator import TOKEN
from .thread_pool import (TEAM_PARALLEL_COST, ThreadPool, cores,  # noqa: F401 - re-exported
                          shared_pool)

KERNEL_CFUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


# ----------------------------------------------------------------------------- memory and views
def major_to_minor(shape: Shape) -> list[int]:
    """Dimensions from most major to most minor (row-major when the shape has no layout)."""
    if shape.layout is None or len(shape.layout.minor_to_major) != shape.rank:
        return list(range(shape.rank))
    return list(reversed(shape.layout.minor_to_major))


def element_strides(shape: Shape) -> list[int]:
    """Per logical dimension, the distance in elements between neighbours in memory."""
    strides = [0] * shape.rank
    step = 1
    for d in reversed(major_to_minor(shape)):
        strides[d] = step
        step *= shape.dims[d]
    return strides


def as_bytes(base: np.ndarray) -> np.ndarray:
    """A contiguous array's memory as a flat ``uint8`` array (no copy)."""
    if base.dtype == np.uint8 and base.ndim == 1:
        return base
    return base.reshape(-1).view(np.uint8)


# NumPy's array object starts with the Python object header followed by its ``data``
# pointer (``PyArrayObject_fields``, part of NumPy's ABI). Reading that field is several
# times cheaper than ``a.ctypes.data``, and it is on the per-call path (every parameter and
# output). The read is checked against ``ctypes.data`` once, at import, and not used when
# it does not match (another Python implementation or object layout).
_DATA_FIELD_OFFSET = object.__basicsize__
_read_pointer = ctypes.c_void_p.from_address


def _data_field(a: np.ndarray) -> int:
    return _read_pointer(id(a) + _DATA_FIELD_OFFSET).value


def _ctypes_data(a: np.ndarray) -> int:
    return a.ctypes.data


def _data_field_is_reliable() -> bool:
    probes = [np.zeros(3), np.arange(8, dtype=np.int8)[3:], np.zeros((0, 2), np.float32),
              np.frombuffer(b"read-only", np.uint8), np.ones((4, 4)).T]
    return all(_data_field(p) == p.ctypes.data for p in probes)


#: The data address of an array (``a.ctypes.data``, read quickly).
address_of: Callable[[np.ndarray], int] = (_data_field if _data_field_is_reliable()
                                           else _ctypes_data)


def _view_geometry(shape: Shape) -> tuple[int, list[int], list[int] | None]:
    """``(bytes, physical dims, permutation back to logical order or None)`` of ``shape``."""
    order = major_to_minor(shape)
    nbytes = shape.num_elements * shape.element_type.byte_size
    identity = order == list(range(shape.rank))
    perm = None if identity else [order.index(d) for d in range(shape.rank)]
    return nbytes, [shape.dims[d] for d in order], perm


def logical_view(base: np.ndarray, offset: int, shape: Shape) -> np.ndarray:
    """The array ``shape`` stored at byte ``offset`` of ``base`` in its layout, indexed
    logically (``base`` is a contiguous array of any dtype)."""
    nbytes, physical, perm = _view_geometry(shape)
    view = as_bytes(base)[offset:offset + nbytes].view(shape.dtype).reshape(physical)
    return view if perm is None else view.transpose(perm)


def physical_bytes(value: np.ndarray, shape: Shape) -> np.ndarray:
    """``value`` (logical, of ``shape``'s dtype and dims) as contiguous bytes in ``shape``'s
    layout."""
    order = major_to_minor(shape)
    if order != list(range(shape.rank)):
        value = value.transpose(order)
    value = np.ascontiguousarray(value)
    return value.reshape(-1).view(np.uint8)


def aligned_empty(nbytes: int, alignment: int = 64, zero: bool = False) -> np.ndarray:
    """A ``uint8`` array of ``nbytes`` whose data address is a multiple of ``alignment``."""
    raw = (np.zeros if zero else np.empty)(nbytes + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + nbytes]


def aligned(shape: tuple, dtype: Any, zero: bool = False) -> np.ndarray:
    """A C-contiguous ``shape`` array whose data starts on a 64-byte line (NumPy's own
    allocations start on 16 bytes): kernels' 64-byte vector loads and stores of its rows
    then never straddle two lines."""
    dtype = np.dtype(dtype)
    nbytes = prod(shape) * dtype.itemsize
    return aligned_empty(nbytes, zero=zero).view(dtype).reshape(shape)


class Memory:
    """Base array and address of every allocation (see the module docstring).

    A base is any C-contiguous array holding the allocation's bytes (the caller's array
    for a parameter, the result array for an output, ``uint8`` for the arena)."""

    __slots__ = ("bases", "addrs")

    def __init__(self, num_allocations: int) -> None:
        self.bases: list[np.ndarray | None] = [None] * num_allocations
        self.addrs: list[int] = [0] * num_allocations

    def set(self, index: int, base: np.ndarray) -> None:
        self.bases[index] = base
        self.addrs[index] = address_of(base)


@dataclass(eq=False)
class BufferRef:
    """One array value: ``shape`` at byte ``offset`` of allocation ``alloc``.

    The view's geometry (byte range, physical dims, transposition) is worked out once
    here, so building a view per call (for per-call allocations) is only slicing."""

    alloc: int
    offset: int
    size: int
    shape: Shape
    fixed: bool
    _view: np.ndarray | None = None

    def __post_init__(self) -> None:
        nbytes, self.physical_dims, self.perm = _view_geometry(self.shape)
        self._end = self.offset + nbytes
        self._dtype = self.shape.dtype

    def view(self, mem: Memory) -> np.ndarray:
        if self._view is not None:
            return self._view
        v = as_bytes(mem.bases[self.alloc])[self.offset:self._end].view(self._dtype)
        v = v.reshape(self.physical_dims)
        if self.perm is not None:
            v = v.transpose(self.perm)
        if self.fixed:
            self._view = v
        return v

    def raw(self, mem: Memory) -> np.ndarray:
        """The buffer's bytes as a flat ``uint8`` view."""
        return as_bytes(mem.bases[self.alloc])[self.offset:self.offset + self.size]

    def address(self, mem: Memory) -> int:
        return mem.addrs[self.alloc] + self.offset

    def same_bytes(self, other: "BufferRef") -> bool:
        return self.alloc == other.alloc and self.offset == other.offset


class TokenRef:
    """A token value (no bytes)."""

    def value(self, mem: Memory) -> Any:
        return TOKEN


# A value tree: BufferRef for arrays, TokenRef for tokens, tuple for tuples.
ValueRef = Any


def read_value(ref: ValueRef, mem: Memory) -> Any:
    """The interpreter value (arrays as logical views, tuples, TOKEN) of a value tree."""
    if isinstance(ref, BufferRef):
        return ref.view(mem)
    if isinstance(ref, tuple):
        return tuple(read_value(r, mem) for r in ref)
    return ref.value(mem)


def write_value(ref: ValueRef, value: Any, mem: Memory, where: HloInstruction) -> None:
    """Store an interpreter value into the buffers of a value tree (casting as assignment does)."""
    if isinstance(ref, BufferRef):
        if ref.shape.num_elements:
            ref.view(mem)[...] = value
        return
    if isinstance(ref, tuple):
        if not isinstance(value, tuple) or len(value) != len(ref):
            raise ExecutionError(f"{where.name}: expected a tuple of {len(ref)} values from "
                                 f"{where.opcode}, got {type(value).__name__}")
        for r, v in zip(ref, value):
            write_value(r, v, mem, where)


def leaves(ref: ValueRef) -> list[BufferRef]:
    """Array leaves of a value tree, depth first."""
    if isinstance(ref, BufferRef):
        return [ref]
    if isinstance(ref, tuple):
        return [leaf for r in ref for leaf in leaves(r)]
    return []


class Copier:
    """Copies the bytes of ``src`` to ``dst`` for ``(src, dst)`` buffer pairs.

    Pairs that are the same bytes or empty are dropped; when every buffer is at a
    fixed address the byte views are made once."""

    __slots__ = ("pairs", "fixed", "_views")

    def __init__(self, pairs: Sequence[tuple[BufferRef, BufferRef]]) -> None:
        self.pairs = [(s, d) for s, d in pairs if s.size and not s.same_bytes(d)]
        self.fixed = all(s.fixed and d.fixed for s, d in self.pairs)
        self._views: list[tuple[np.ndarray, np.ndarray]] | None = None

    def __call__(self, mem: Memory) -> None:
        views = self._views
        if views is None:
            views = [(d.raw(mem), s.raw(mem)) for s, d in self.pairs]
            if self.fixed:
                self._views = views
        for dst, src in views:
            np.copyto(dst, src)


# ----------------------------------------------------------------------------- thunks
class Thunk(abc.ABC):
    """Runs one instruction on buffers; ``kind`` is reported by ``thunk_kinds()``."""

    kind = "thunk"
    instruction: HloInstruction

    @abc.abstractmethod
    def run(self, mem: Memory) -> None:
        """Execute the instruction, reading and writing buffers through ``mem``."""


class PlanQueries(abc.ABC):
    """What a plan's thunks are, for the plans of any backend."""

    @abc.abstractmethod
    def walk(self) -> Any:
        """Every thunk of the plan, those of its sub-plans included."""

    def thunk_kinds(self) -> dict[str, str]:
        """``instruction name -> thunk kind`` for every thunk, sub-plans included."""
        return {t.instruction.name: t.kind for t in self.walk()}

    def fallback_opcodes(self) -> list[str]:
        """Sorted opcodes (``fusion:<root opcode>`` for fusions) of the fallback thunks."""
        out = set()
        for t in self.walk():
            if t.kind == "fallback":
                i = t.instruction
                out.add(f"fusion:{i.attrs['calls'].root.opcode}" if i.opcode == "fusion"
                        else i.opcode)
        return sorted(out)


class Plan(PlanQueries):
    """The thunks of one computation in schedule order. Consecutive kernels that run on
    the calling thread are run by one native call (:class:`_KernelRun`) unless the plan
    is instrumented (profiled)."""

    def __init__(self, name: str, thunks: list[Thunk]) -> None:
        self.name = name
        self.thunks = thunks
        self._runs: list[Callable[[Memory], None]] = _grouped_runs(thunks)
        self.instrumented = False

    def run(self, mem: Memory) -> None:
        for run in self._runs:
            run(mem)

    def runner(self) -> Callable[[Memory], None]:
        """What running the plan calls: its only step itself when it has one (one Python
        call less per run), else :meth:`run`; taken before any :meth:`instrument`."""
        return self._runs[0] if len(self._runs) == 1 and not self.instrumented else self.run

    def instrument(self, wrap: Callable[[Thunk], Callable[[Memory], None]]) -> None:
        """Run ``wrap(thunk)`` instead of ``thunk.run`` for every thunk (the profiler's
        timers); plans that are not instrumented call ``thunk.run`` directly."""
        self._runs = [wrap(t) for t in self.thunks]
        self.instrumented = True

    def walk(self):
        """Every thunk of this plan and of the sub-plans of its control-flow thunks."""
        for t in self.thunks:
            yield t
            for sub in getattr(t, "subplans", ()):
                yield from sub.walk()


class _KernelRun:
    """Two or more consecutive kernels of a plan, run by one native call
    (``native_loop.call_runner``) instead of one call from Python each."""

    def __init__(self, kernels: "Sequence[KernelThunk]") -> None:
        from .native_loop import call_runner, calls_array
        self.calls = calls_array([kernel_call(t) for t in kernels])
        self.address, self.n, self.fn = ctypes.addressof(self.calls), len(kernels), call_runner()

    def run(self, mem: Memory) -> None:
        self.fn(self.address, self.n)


def kernel_call(t: "KernelThunk") -> tuple[int, int, int]:
    """``(function, table, units)`` of a kernel thunk, for the native drivers."""
    return ctypes.cast(t.fn, ctypes.c_void_p).value or 0, t.table_address, t.units


def _grouped_runs(thunks: Sequence[Thunk]) -> list[Callable[[Memory], None]]:
    """What a plan calls: each thunk's ``run``, but consecutive kernels on the calling
    thread as one :class:`_KernelRun` (kernels with no units do nothing and are left out)."""
    runs: list[Callable[[Memory], None]] = []
    kernels: list[KernelThunk] = []

    def flush() -> None:
        if len(kernels) > 1:
            runs.append(_KernelRun(kernels).run)
        else:
            runs.extend(k.run for k in kernels)
        kernels.clear()
    for t in thunks:
        if type(t) is KernelThunk and t.pool is None:
            if t.units > 0:
                kernels.append(t)
            continue
        flush()
        runs.append(t.run)
    flush()
    return runs


class KernelThunk(Thunk):
    """Calls a native kernel ``void(i8** buffers, i64 begin, i64 end)`` over its units."""

    kind = "kernel"

    def __init__(self, instr: HloInstruction, name: str, address: int, refs: Sequence[BufferRef],
                 units: int, cost: float, pool: "ThreadPool | None", parallel_cost: float) -> None:
        self.instruction = instr
        self.name = name
        self.fn = KERNEL_CFUNC(address)
        self.refs = list(refs)
        self.table = (ctypes.c_void_p * max(1, len(self.refs)))()
        self.table_address = ctypes.addressof(self.table)
        self.units = units
        self.cost = cost
        # split over the pool from ``parallel_cost``; from TEAM_PARALLEL_COST when the
        # pool's jobs go to an OpenMP team (then checked per call: the pool may back off
        # to its own workers, for which such a kernel runs on the calling thread)
        self.team_only = pool is not None and TEAM_PARALLEL_COST <= cost < parallel_cost \
            and pool.on_team()
        self.pool = pool if pool is not None and pool.size > 1 and units > 1 \
            and (cost >= parallel_cost or self.team_only) else None

    def dynamic_slots(self) -> list[tuple[Any, int, int, int]]:
        """``(table, slot, allocation, offset)`` for slots in per-call allocations."""
        return [(self.table, i, r.alloc, r.offset) for i, r in enumerate(self.refs) if not r.fixed]

    def bind_fixed(self, mem: Memory) -> None:
        for i, r in enumerate(self.refs):
            if r.fixed:
                self.table[i] = r.address(mem)

    def run(self, mem: Memory) -> None:
        if self.units <= 0:
            return
        pool = self.pool
        if pool is None or (self.team_only and not pool.on_team()):
            self.fn(self.table_address, 0, self.units)
        else:
            pool.run(self.fn, self.table_address, self.units)


class LibraryThunk(Thunk):
    """Calls a Python library routine ``fn(operand_views, output_view)`` (BLAS dot, conv)."""

    kind = "library"

    def __init__(self, instr: HloInstruction, fn: Callable[[list, Any], None],
                 operands: Sequence[ValueRef], output: ValueRef) -> None:
        self.instruction = instr
        self.fn = fn
        self.operands = list(operands)
        self.output = output

    def run(self, mem: Memory) -> None:
        out = read_value(self.output, mem)
        self.fn([read_value(r, mem) for r in self.operands], out)


class WhileThunk(Thunk):
    """``while``: the loop state lives in the while's own buffers and is copied into the
    condition's and body's parameter buffers before each run of their plans.

    A body that passes a leaf through unchanged (its root's leaf *is* its parameter's
    leaf, which nothing in the body may then overwrite) gets that leaf once, on the
    first iteration: ``to_body_first`` copies every leaf the body reads, ``to_body``
    and ``from_body`` only the others. Copies between two buffers that buffer
    assignment made one are dropped (``Copier``); a loop left with no copies per trip
    whose condition and body are kernels on this thread runs its trips in the native
    driver of ``native_loop.py``."""

    kind = "while"

    def __init__(self, instr: HloInstruction, init: list[tuple[BufferRef, BufferRef]],
                 condition: Plan, to_condition: list[tuple[BufferRef, BufferRef]],
                 predicate: BufferRef, body: Plan,
                 to_body_first: list[tuple[BufferRef, BufferRef]],
                 to_body: list[tuple[BufferRef, BufferRef]],
                 from_body: list[tuple[BufferRef, BufferRef]]) -> None:
        self.instruction = instr
        self.init, self.condition, self.to_condition = Copier(init), condition, Copier(to_condition)
        self.predicate, self.body = predicate, body
        self.to_body_first, self.to_body = Copier(to_body_first), Copier(to_body)
        self.from_body = Copier(from_body)
        self.subplans = (condition, body)

        # (driver, descriptor, arrays it points into) of native_loop.py, False when the
        # loop does not qualify; decided on the first run
        self._native: Any = None

    def _native_driver(self) -> Any:
        """The native driver and this loop's descriptor when every trip is only kernel
        calls on this thread (no copies, no library or fallback thunks, no nested
        control flow, no profiling timers); False otherwise."""
        plans = (self.condition, self.body)
        if self.to_condition.pairs or self.to_body.pairs or self.from_body.pairs \
                or any(p.instrumented for p in plans) \
                or not all(type(t) is KernelThunk and t.pool is None
                           for p in plans for t in p.thunks):
            return False
        from .native_loop import descriptor, runner

        def calls(plan: Plan) -> list[tuple[int, int, int]]:
            return [kernel_call(t) for t in plan.thunks
                    if isinstance(t, KernelThunk) and t.units > 0]
        desc, keep = descriptor(calls(self.condition), calls(self.body))
        return runner(), desc, keep

    def run(self, mem: Memory) -> None:
        self.init(mem)
        native = self._native
        if native is None:
            native = self._native = self._native_driver()
        if native:
            drive, desc, _ = native
            self.to_body_first(mem)      # the body's copy of leaves it passes through
            desc.pred = self.predicate.address(mem)
            address = ctypes.addressof(desc)
            while not drive(address):
                pass
            return
        to_condition, condition, to_body = self.to_condition, self.condition.run, self.to_body_first
        body, from_body, predicate = self.body.run, self.from_body, self.predicate
        while True:
            to_condition(mem)
            condition(mem)
            if not predicate.view(mem).item():
                return
            to_body(mem)
            to_body = self.to_body
            body(mem)
            from_body(mem)


class ConditionalThunk(Thunk):
    """``conditional``: picks a branch from the selector, runs its plan on copied operands."""

    kind = "conditional"

    def __init__(self, instr: HloInstruction, selector: BufferRef,
                 branches: list[tuple[Plan, list, list]]) -> None:
        self.instruction = instr
        self.selector = selector
        self.pred = selector.shape.element_type.is_pred
        # per branch: (plan, operand -> parameter copies, root -> result copies)
        self.branches = [(plan, Copier(to_params), Copier(from_root))
                         for plan, to_params, from_root in branches]
        self.subplans = tuple(b[0] for b in branches)

    def run(self, mem: Memory) -> None:
        s = self.selector.view(mem).item()
        if self.pred:
            index = 0 if s else 1         # pred selector: true runs branch 0
        else:
            index = int(s)
            if not 0 <= index < len(self.branches):
                index = len(self.branches) - 1   # out-of-range runs the last branch
        plan, to_params, from_root = self.branches[index]
        to_params(mem)
        plan.run(mem)
        from_root(mem)


class CallThunk(Thunk):
    """``call``: copies arguments into the callee's parameters, runs it, copies the result."""

    kind = "call"

    def __init__(self, instr: HloInstruction, plan: Plan, to_params: list, from_root: list) -> None:
        self.instruction = instr
        self.plan, self.to_params, self.from_root = plan, Copier(to_params), Copier(from_root)
        self.subplans = (plan,)

    def run(self, mem: Memory) -> None:
        self.to_params(mem)
        self.plan.run(mem)
        self.from_root(mem)


__all__ = ["Memory", "BufferRef", "TokenRef", "ValueRef", "Plan", "PlanQueries", "Thunk",
           "KernelThunk", "LibraryThunk", "WhileThunk", "ConditionalThunk",
           "CallThunk", "ThreadPool", "shared_pool", "cores", "logical_view", "physical_bytes",
           "aligned_empty", "aligned", "major_to_minor", "element_strides", "read_value",
           "write_value",
           "leaves", "Copier", "as_bytes", "address_of"]
