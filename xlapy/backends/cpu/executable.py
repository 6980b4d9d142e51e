"""A compiled CPU module: its plan of thunks, its memory, and ``execute(args)``.

Runtime design
--------------
``CpuBackend.compile`` (``compiler.py``) runs the CPU pass pipeline, assigns buffers
and turns every instruction of the entry computation's schedule into a **thunk**:

- **native kernel** (``kernel``): LLVM code from a ``KernelEmitter`` (``reduce`` and every
  fusion containing reduces, ``reduction_emitter.py``; loop fusions and
  elementwise / data-movement ops, ``loop_emitter.py``; ``reduce-window``,
  ``select-and-scatter``, ``scatter``, ``sort`` and ``rng-bit-generator``, top level or as
  fusion roots: ``window_emitter.py``, ``select_scatter_emitter.py``, ``scatter_emitter.py``,
  ``sort_emitter.py``, ``rng_emitter.py``). All kernels of a module are
  compiled in one go (a few LLVM modules optimized in parallel, linked as one JIT
  library); a kernel is ``void(i8** buffers, i64 begin, i64 end)`` over ``units`` work
  units; consecutive kernels of a plan that run on the calling thread are called by
  one native call (``native_loop.py``) rather than one call from Python each;
- **library** (``library``): a Python routine on NumPy views (BLAS ``dot``, convolution);
- **control flow** (``while``, ``conditional``, ``call``): the called computations have
  their own plans (sub-plans) over their own buffers (buffer assignment gives every
  called computation its own region of the arena); values cross the boundary by
  copying the leaves (operand -> parameter buffers, root -> result buffers), except
  where buffer assignment put both in one buffer (a loop's state, its body's parameter
  and root, as a rule: such copies are dropped). A ``while`` keeps its state in its
  own result buffers and copies into the condition's parameter only the leaves the
  condition reads; a loop that copies nothing per trip and whose condition and body
  are kernels on the calling thread runs its trips in a native driver
  (``native_loop.py``);
- **collective** (``collective``): ``all-reduce`` over row-major buffers (and ``all-gather``
  whose members' blocks follow each other in memory), handed to the running participant's
  communicator, which writes the result buffer (``collective_thunk.py``);
- **no-op**: ``parameter``, ``constant``, ``tuple``, ``get-tuple-element``, ``bitcast`` and
  the ops forwarding operand 0's value (``opt-barrier``, ``add-dependency``, ``domain``:
  buffer assignment gives them the operand's buffers) need no work (their values
  already are in place);
- **fallback** (``fallback``): the reference interpreter's handler on NumPy views of the
  buffers (``fallback.py``), for everything else. Currently:

  * always: ``topk``, ``fft``, ``custom-call`` (the LAPACK targets),
    ``cholesky``, ``triangular-solve``, ``rng``, ``rng-get-and-update-state``,
    ``map``, the collectives other than those above, ``partition-id``,
    ``replica-id``, ``get-dimension-size``/``set-dimension-size``,
    ``dynamic-reshape``, ``stochastic-convert``, ``copy-start``/``copy-done``
    (``batch-norm-*`` never get here: the pipeline's ``batchnorm_expander`` expands them);
  * loop fusions that contain one of those or an op/element type the elemental
    emitter does not support (``ElementalEmitter.supports``); reductions over f8 types
    and reduce fusions whose outputs need other rows' reduced values;
  * an instance whose buffers the loop emitter cannot use: an operand sharing the
    output's buffer that is read at other elements than the one written (e.g. a
    layout-changing ``copy`` that buffer assignment placed in its operand's buffer,
    or a ``dynamic-update-slice`` whose operand 0 is read elsewhere in its fusion);
  * ``dot``/``convolution`` that ``blas.py``/``conv.py`` do not support;
  * the structured ops above when their emitter declines (element types without a
    register type, computations the elemental emitter cannot emit, ``rng-bit-generator``
    with sub-byte outputs, a scatter operand that shares the output's buffer but is
    also read elsewhere).

  ``CpuExecutable.fallback_opcodes()`` lists them for a compiled module.

Memory: the preallocated temp allocation is one 64-byte-aligned arena allocated once
per executable and reused by every call; constants are materialized once in their
layouts; parameters are the caller's arrays (validated before any native code runs:
count, dims and dtype, errors name the parameter and both shapes; copied only when the
array is not C-contiguous in the parameter's layout); outputs are fresh arrays each
call (the returned arrays themselves, in their layouts), large ones on recycled memory
(``output_pool``: a returned block's pages are still mapped, so writing it takes no page
faults).

Every executable's arena and constants, and the output pool's blocks, count in the
process's memory statistics (``memory_stats.STATS``, read by :mod:`xlapy.profiler`) while
they exist; each call records the executable's :class:`~xlapy.backends.memory_stats.
MemoryAnalysis` as the last step and raises the high-water mark by its arguments and
unpooled outputs.

Donation: a parameter that buffer assignment lets an output alias
(``input_output_alias``) is written by the program. ``execute(args, owned)`` takes
``owned``, the parameter numbers whose arrays the caller hands over (the front end does
so for a donated xlapy Array or a Variable's storage that nothing else references, and
then never reads the old array again). Such an argument's array becomes the parameter's
buffer and the aliased output is returned as a view of it -- no copy, no new memory --
when it is a plain NumPy array, C-contiguous, element-aligned and writeable, the
parameter is one array in row-major layout (:meth:`CpuExecutable.donatable_parameters`,
decided at planning time) and no other argument of the call overlaps it. Otherwise, and
for every array the caller did not hand over (a NumPy array passed by the user), the
array is copied first, so a caller's array is never written; the reason is logged at
debug level (logger ``xlapy.cpu``). Only donated parameters take this slower binding
path; the per-call work of other arguments is unchanged. Kernel pointer tables are
filled once for fixed buffers and only the slots of parameter/output buffers are
patched per call. Large kernels (``cost`` above ``parallel_cost``) run their unit ranges
on a persistent thread pool (``thunks.ThreadPool``, shared with the dot and convolution
routines' parallel loops).

Threads: one call runs at a time on an executable's arena, kernel tables and buffer
views (a lock guards them). A call that finds them busy runs on a *replica*: the same
loaded code with its own plans, arena and constants, made by the compiler
(``replicate``) the first time it is needed and kept for later calls; at most
``MAX_REPLICAS`` exist, and a call beyond them waits for the executable. (Profiled
executables have no replicas: their timings stay in one place.)

Profiling: compiled with ``--xla_hlo_profile``, the executable times every thunk
(``profile.py``); :meth:`CpuExecutable.profile` returns the rows and
:meth:`CpuExecutable.profile_text` the table, which is also logged at INFO after each call
and written to ``--xla_dump_to``. Without the flag nothing on the call path changes.
"""
from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Callable, Collection, Sequence

import numpy as np

from ...config import DumpConfig, get_debug_options
from ...errors import InvalidArgumentError
from ...hlo.ir import HloModule
from ...hlo.shape import Shape
from ...passes.buffer_assignment import CONSTANT, OUTPUT, PARAMETER, TEMP, BufferAssignment
from ...passes.copy_insertion import array_leaf_indices
from ...passes.dump import module_key
from ..memory_stats import STATS, MemoryAnalysis, memory_analysis
from . import output_pool
from .profile import HloProfiler, ProfileRow
from .thunks import (BufferRef, KernelThunk, Memory, Plan, TokenRef, ValueRef, address_of,
                     aligned_empty, major_to_minor, physical_bytes)

log = logging.getLogger("xlapy.cpu")

#: Replicas of one executable for concurrent calls (see the module docstring).
MAX_REPLICAS = 3


class _Param:
    """How one entry parameter's argument is checked and bound to its allocations."""

    def __init__(self, number: int, name: str, shape: Shape,
                 leaves: list[tuple[tuple[int, ...], int, bool]]) -> None:
        self.number, self.name, self.shape = number, name, shape
        self.where = f"argument {number} ({name})"
        # (position among the argument's array leaves, allocation, donated) per leaf
        position = {ix: k for k, ix in enumerate(array_leaf_indices(shape))}
        self.bindings = [(position[ix], alloc, donated) for ix, alloc, donated in leaves]
        row_major = shape.is_array and major_to_minor(shape) == list(range(shape.rank))
        self.donated = any(d for _, _, d in leaves)
        # the common case: one row-major array leaf, not donated
        self.fast = row_major and len(leaves) == 1 and not self.donated
        # a donated argument whose array can become the parameter's buffer as it is
        self.in_place = row_major and len(leaves) == 1 and self.donated
        self.alloc = leaves[0][1] if leaves else -1
        self.dims = shape.dims if shape.is_array else ()
        self.dtype = shape.dtype if shape.is_array else None


class _Result:
    """How one array leaf of the result is returned: ``direct`` (the output array itself,
    transposed to logical order), ``view`` (a view into an output array) or ``copy``
    (parameters, constants, repeated leaves)."""

    def __init__(self, ref: BufferRef, mode: str) -> None:
        self.ref, self.mode = ref, mode


class CpuExecutable:
    """A module compiled for the CPU: call :meth:`execute` with NumPy arguments."""

    def __init__(self, module: HloModule, assignment: BufferAssignment, plan: Plan,
                 result: ValueRef, keep_alive: Sequence[Any] = (),
                 profile: bool | None = None, dump_key: Any = None) -> None:
        """``profile``: time every thunk (default: ``--xla_hlo_profile``); ``dump_key``: the
        key the compiler dumped the module under (so the profile file gets its number)."""
        self.module = module
        self.assignment = assignment
        self.plan = plan
        self.result = result
        self._keep_alive = list(keep_alive)     # loaded code, evaluator, ...
        self._lock = threading.Lock()
        # concurrent calls: ``replicate()`` makes another executable of the same code
        self.replicate: Callable[[], CpuExecutable] | None = None
        self._replicas: list[CpuExecutable] = []           # idle ones
        self._replica_count = 0
        self._replicas_lock = threading.Lock()
        allocations = assignment.allocations
        self.memory = Memory(len(allocations))
        entry = module.entry
        leaves: list[list[tuple[tuple[int, ...], int, bool]]] = [[] for _ in entry.parameters]
        outputs = []
        for a in allocations:
            if a.kind == PARAMETER:
                if a.param_shape is not None and a.param_shape.is_array:
                    leaves[a.parameter_number].append(
                        (tuple(a.param_index), a.index, a.aliased_with_output))
            elif a.kind == OUTPUT:
                outputs.append(a)
            elif a.kind in (TEMP, CONSTANT):
                self.memory.set(a.index, aligned_empty(a.size, zero=True))
        fixed = sum(a.size for a in allocations if a.kind in (TEMP, CONSTANT))
        STATS.allocate(fixed)
        weakref.finalize(self, STATS.release, fixed)
        self.step_memory: MemoryAnalysis = memory_analysis(assignment)
        self._params = [_Param(i, p.name, p.shape, leaves[i])
                        for i, p in enumerate(entry.parameters)]
        # per-call allocations, released after each call: the caller's arguments, and the
        # outputs (returned to the caller, who may donate them later: no hidden reference)
        self._call_allocs = [alloc for p in self._params for _, alloc, _ in p.bindings] + \
            [a.index for a in outputs]
        self._results, self._result_tree = self._plan_results(result)
        self._outputs = self._plan_outputs(outputs)
        # bytes of a call not in STATS.bytes_in_use: arguments, outputs not from the pool
        self._transient = assignment.parameter_bytes + sum(
            allocations[alloc].size for alloc, _, dtype in self._outputs
            if allocations[alloc].size < output_pool.MIN_BYTES or dtype.isbuiltin != 1)
        self._dynamic_slots = []
        for t in plan.walk():
            if isinstance(t, KernelThunk):
                self._dynamic_slots.extend(t.dynamic_slots())
        self._run: Callable[[Memory], None] = plan.run
        self.profiler: HloProfiler | None = None
        options = get_debug_options()
        if options.xla_hlo_profile if profile is None else profile:
            self.profiler = HloProfiler(module, plan, DumpConfig(options),
                                        dump_key if dump_key is not None else module_key(module))
            self._run = self.profiler.wrap_entry(plan.run)
        self._simple = self._plan_simple_call()

    def _plan_simple_call(self) -> tuple | None:
        """``(parameters, output allocation, allocate, run, addressed)`` when a call is the
        common simple case: every parameter one row-major array taken as it is, one array
        result that fills its own output allocation, no profiler. :meth:`execute` then binds
        and returns without its general machinery (one-op eager executables, tiny jitted
        functions, one collective); ``allocate()`` makes the result array (from the output
        pool when it is large), ``run(mem)`` runs the plan (its only step when it has one);
        ``addressed``: some thunk reads buffer addresses (``Memory.addrs``) -- a plan of
        collectives alone reads only the arrays, so its call records no addresses."""
        if self.profiler is not None or not all(p.fast for p in self._params) \
                or not isinstance(self._result_tree, int) or len(self._outputs) != 1:
            return None
        (r,) = self._results
        alloc, dims, dtype = self._outputs[0]
        if r.mode != "direct" or r.ref.perm is not None or r.ref.alloc != alloc \
                or dtype.isbuiltin != 1:
            return None
        addressed = bool(self._dynamic_slots) or any(t.kind != "collective"
                                                     for t in self.plan.walk())
        return ([(p.alloc, p.dtype, p.dims) for p in self._params], alloc,
                output_pool.allocator(dims, dtype), self.plan.runner(), addressed)

    def _patch_and_run(self, mem: Memory) -> None:
        """Point the kernel tables' per-call slots at this call's buffers and run."""
        addrs = mem.addrs
        for table, slot, alloc, offset in self._dynamic_slots:
            table[slot] = addrs[alloc] + offset
        self._run(mem)

    def _call_simple(self, args: Sequence[Any]) -> Any:
        """:meth:`execute` for :meth:`_plan_simple_call`'s case, with this executable's lock
        held; None when an argument needs the general path (then nothing was run)."""
        params, alloc, allocate, run, addressed = self._simple
        mem = self.memory
        bases, addrs = mem.bases, mem.addrs
        try:
            for (a, dt, shape), value in zip(params, args):
                if type(value) is not np.ndarray or value.dtype != dt or value.shape != shape \
                        or not value.flags.c_contiguous:
                    return None
                bases[a] = value
                if addressed:
                    addrs[a] = address_of(value)
            out = allocate()
            bases[alloc] = out
            if addressed:
                addrs[alloc] = address_of(out)
            for table, slot, a, offset in self._dynamic_slots:     # _patch_and_run, inline
                table[slot] = addrs[a] + offset
            run(mem)
            STATS.record_call(self.step_memory, self._transient)
            return out
        finally:
            for a in self._call_allocs:
                bases[a] = None

    def _plan_results(self, result: ValueRef) -> tuple[list[_Result], Any]:
        """Decide how each result leaf is returned; the tree holds indices into the list."""
        allocations = self.assignment.allocations
        results: list[_Result] = []
        seen: set[tuple[int, int]] = set()

        def visit(ref: ValueRef) -> Any:
            if isinstance(ref, tuple):
                return tuple(visit(r) for r in ref)
            if isinstance(ref, TokenRef):
                return ref
            a = allocations[ref.alloc]
            fresh = a.kind == OUTPUT or (a.kind == PARAMETER and a.aliased_with_output)
            key = (ref.alloc, ref.offset)
            if not fresh or key in seen:
                mode = "copy"
            elif a.kind == OUTPUT and ref.offset == 0 and ref.size == a.size \
                    and ref.shape.num_elements:
                mode = "direct"
            else:
                mode = "view"
            seen.add(key)
            results.append(_Result(ref, mode))
            return len(results) - 1
        return results, visit(result)

    def _plan_outputs(self, outputs) -> list[tuple[int, tuple[int, ...], Any]]:
        """``(allocation, physical dims, dtype)`` of the array allocated for each output
        allocation per call: the returned leaf's own array when it fills the allocation."""
        direct = {r.ref.alloc: r.ref for r in self._results if r.mode == "direct"}
        plan: list[tuple[int, tuple[int, ...], Any]] = []
        for a in outputs:
            ref = direct.get(a.index)
            if ref is None:
                plan.append((a.index, (a.size,), np.dtype(np.uint8)))
            else:
                plan.append((a.index, tuple(ref.physical_dims), ref.shape.dtype))
        return plan

    # ----- set-up helpers used by the compiler
    def bind_fixed(self) -> None:
        """Fill kernel tables for buffers at fixed addresses (arena, constants)."""
        for t in self.plan.walk():
            if isinstance(t, KernelThunk):
                t.bind_fixed(self.memory)

    @property
    def temp_address(self) -> int:
        """Address of the temp arena (0 if the module needs none)."""
        temp = self.assignment.temp_allocation
        return self.memory.addrs[temp.index] if temp is not None else 0

    def thunk_kinds(self) -> dict[str, str]:
        """``instruction name -> thunk kind`` for every thunk, sub-plans included."""
        return self.plan.thunk_kinds()

    def fallback_opcodes(self) -> list[str]:
        """Sorted opcodes (``fusion:<root opcode>`` for fusions) that run as fallbacks."""
        return self.plan.fallback_opcodes()

    def memory_analysis(self) -> MemoryAnalysis:
        """The bytes one call holds (``Compiled.memory_analysis()``'s record)."""
        return self.step_memory

    # ----- profile
    def _profiler(self) -> HloProfiler:
        if self.profiler is None:
            raise InvalidArgumentError(
                f"module {self.module.name} was compiled without profiling: set "
                f"XLA_FLAGS=--xla_hlo_profile (or debug_options(xla_hlo_profile=True)) "
                f"before compiling it")
        return self.profiler

    def profile(self) -> list[ProfileRow]:
        """Per-instruction times accumulated over the calls so far, slowest first
        (the executable must be compiled with ``--xla_hlo_profile``)."""
        with self._lock:
            return self._profiler().rows()

    def profile_text(self, limit: int | None = None) -> str:
        """:meth:`profile` as a table (``limit``: only the slowest rows)."""
        with self._lock:
            return self._profiler().to_text(limit)

    def reset_profile(self) -> None:
        """Start the profile afresh (e.g. after warm-up calls)."""
        with self._lock:
            self._profiler().reset()

    # ----- arguments
    def _bind_slow(self, p: _Param, value: Any, args: Sequence[Any],
                   owned: Collection[int]) -> None:
        data = argument_leaves(value, p.shape, p.where)
        for position, alloc, donated in p.bindings:
            buf = data[position]
            if donated:
                why = self._cannot_take(p, buf, value, args, owned)
                if why:
                    log.debug("%s: donated parameter copied: %s", p.where, why)
                    buf = output_pool.copy(buf)
            self.memory.set(alloc, buf)

    @staticmethod
    def _cannot_take(p: _Param, buf: np.ndarray, value: Any, args: Sequence[Any],
                     owned: Collection[int]) -> str:
        """Why ``buf`` cannot be donated parameter ``p``'s buffer as it is ('' if it can)."""
        if p.number not in owned:
            return "the caller did not hand the array over (e.g. a NumPy array it owns)"
        if not p.in_place:
            return "the parameter is a tuple or not in row-major layout"
        if buf is not value or type(buf) is not np.ndarray:
            return "the argument had to be converted"
        flags = buf.flags
        if not (flags.c_contiguous and flags.writeable and flags.aligned):
            return "the array is not C-contiguous, writeable and aligned"
        for k, other in enumerate(args):
            if k != p.number and any(np.may_share_memory(buf, leaf)
                                     for leaf in _array_leaves(other)):
                return f"argument {k} overlaps it"
        return ""

    def donatable_parameters(self) -> tuple[int, ...]:
        """Entry parameters an output aliases whose argument can be used in place when
        the caller owns it (see the module docstring): pass their numbers as
        ``execute(args, owned)`` to hand the arrays over."""
        return tuple(p.number for p in self._params if p.in_place)

    def _check_count(self, args: Sequence[Any]) -> None:
        if len(args) != len(self._params):
            expected = ", ".join(f"{p.name}: {p.shape.to_text(False)}" for p in self._params)
            raise InvalidArgumentError(f"module {self.module.name} takes {len(self._params)} "
                                       f"arguments ({expected}), got {len(args)}")

    # ----- running
    def execute(self, args: Sequence[Any], owned: Collection[int] = ()) -> Any:
        """Run the module on ``args`` (NumPy arrays or scalars); tuples come back as tuples.

        ``owned``: numbers of donated parameters whose arrays the caller hands over (it
        must not use them afterwards): they are written in place when possible (see the
        module docstring); every other argument is left untouched."""
        if len(args) != len(self._params):
            self._check_count(args)
        if self._simple is not None and not owned and self._lock.acquire(blocking=False):
            try:
                out = self._call_simple(args)
            finally:
                self._lock.release()
            if out is not None:
                return out
        if self._lock.locked() and self.replicate is not None and self.profiler is None:
            replica = self._idle_replica()
            if replica is not None:
                try:
                    return replica.execute(args, owned)
                finally:
                    self._replicas.append(replica)
        with self._lock:
            mem = self.memory
            bases, addrs = mem.bases, mem.addrs
            try:
                for p, value in zip(self._params, args):
                    if p.fast and type(value) is np.ndarray and value.dtype == p.dtype \
                            and value.shape == p.dims and value.flags.c_contiguous:
                        bases[p.alloc] = value
                        addrs[p.alloc] = address_of(value)
                    else:
                        self._bind_slow(p, value, args, owned)
                for alloc, dims, dtype in self._outputs:
                    out = output_pool.empty(dims, dtype)
                    bases[alloc] = out
                    addrs[alloc] = address_of(out)
                self._patch_and_run(mem)
                STATS.record_call(self.step_memory, self._transient)
                values = [self._value(r) for r in self._results]
            finally:
                for alloc in self._call_allocs:     # keep neither arguments nor results
                    bases[alloc] = None
        return _build_tree(self._result_tree, values)

    def new_instance(self) -> "CpuExecutable":
        """Another executable of the same code, for a device of a multi-device run."""
        assert self.replicate is not None, "set by CpuBackend._build"
        return self.replicate()

    def _idle_replica(self) -> "CpuExecutable | None":
        """An idle replica (made if none is idle and fewer than ``MAX_REPLICAS`` exist),
        or None: then the call waits for this executable."""
        with self._replicas_lock:
            if self._replicas:
                return self._replicas.pop()
            if self._replica_count >= MAX_REPLICAS:
                return None
            self._replica_count += 1
        try:
            return self.replicate()
        except BaseException:
            with self._replicas_lock:
                self._replica_count -= 1
            raise

    def _value(self, r: _Result) -> np.ndarray:
        if r.mode == "direct":
            out = self.memory.bases[r.ref.alloc]
            return out if r.ref.perm is None else out.transpose(r.ref.perm)
        view = r.ref.view(self.memory)
        return np.array(view) if r.mode == "copy" else view


def argument_leaves(value: Any, shape: Shape, where: str) -> list[np.ndarray]:
    """Validate one argument; return each array leaf as a C-contiguous array holding
    its bytes in the leaf's layout (the caller's array when it already is one)."""
    if shape.is_tuple:
        if not isinstance(value, (tuple, list)) or len(value) != len(shape.tuple_shapes):
            raise InvalidArgumentError(f"{where}: expected a tuple of "
                                       f"{len(shape.tuple_shapes)} values for {shape}")
        out: list[np.ndarray] = []
        for k, (v, s) in enumerate(zip(value, shape.tuple_shapes)):
            out.extend(argument_leaves(v, s, f"{where}[{k}]"))
        return out
    if shape.is_token:
        return []
    if isinstance(value, np.ndarray):
        arr = value
    elif isinstance(value, np.generic):
        arr = np.asarray(value)
    else:
        arr = _from_python(value, shape, where)
    if arr.dtype != shape.dtype:
        raise InvalidArgumentError(
            f"{where}: expected {shape.to_text(False)} (dtype {shape.dtype}), got an array "
            f"of dtype {arr.dtype} and shape {tuple(arr.shape)}")
    if tuple(arr.shape) != shape.dims:
        raise InvalidArgumentError(
            f"{where}: expected shape {shape.to_text(False)}, got shape "
            f"{arr.dtype}{list(arr.shape)}")
    if arr.flags.c_contiguous and major_to_minor(shape) == list(range(shape.rank)):
        return [arr]
    return [physical_bytes(arr, shape)]


def _array_leaves(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _array_leaves(v)]
    return [value] if isinstance(value, np.ndarray) else []


def _from_python(value: Any, shape: Shape, where: str) -> np.ndarray:
    """A Python scalar or list as an array of ``shape``'s dtype; InvalidArgumentError for
    what does not convert exactly in kind (a float for an integer or ``pred``
    parameter, an int out of range, a non-number). ``run_hlo`` converts the same way."""
    expected = f"{shape.to_text(False)} (dtype {shape.dtype})"
    try:
        natural = np.asarray(value)
        target = shape.dtype
        kind = natural.dtype.kind if natural.size else "b"         # [] fits any type
        if kind in "OUSV" or (kind in "fc" and target.kind in "biu") \
                or (kind == "c" and target.kind == "f") or (kind in "iu" and target.kind == "b"):
            raise TypeError(f"{natural.dtype} values do not convert to {target}")
        arr = np.asarray(value, dtype=target)
        if target.kind in "iu" and natural.size and not np.array_equal(arr, natural):
            raise OverflowError("out of range")
    except InvalidArgumentError:            # e.g. a deleted (donated) Array's value
        raise
    except (TypeError, ValueError, OverflowError) as e:
        raise InvalidArgumentError(f"{where}: expected {expected}, got "
                                   f"{type(value).__name__} {value!r:.60}: {e}") from None
    return arr


def _build_tree(tree: Any, values: list) -> Any:
    if isinstance(tree, tuple):
        return tuple(_build_tree(t, values) for t in tree)
    if isinstance(tree, TokenRef):
        return tree.value(None)
    return values[tree]


def buffer_ref(assignment: BufferAssignment, instr, index: tuple[int, ...] = ()) -> BufferRef:
    """The :class:`BufferRef` of ``instr``'s array value at ``index``."""
    sl = assignment.slice(instr, index)
    a = sl.allocation
    return BufferRef(a.index, sl.offset, sl.size, instr.shape.subshape(index),
                     fixed=a.kind in (TEMP, CONSTANT))


def value_ref(assignment: BufferAssignment, instr, index: tuple[int, ...] = ()) -> ValueRef:
    """The value tree (arrays, tuples, tokens) of ``instr`` at ``index``."""
    shape = instr.shape.subshape(index)
    if shape.is_tuple:
        return tuple(value_ref(assignment, instr, index + (k,))
                     for k in range(len(shape.tuple_shapes)))
    if shape.is_token:
        return TokenRef()
    return buffer_ref(assignment, instr, index)


__all__ = ["CpuExecutable", "argument_leaves", "buffer_ref", "value_ref"]
