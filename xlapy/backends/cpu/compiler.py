"""``CpuBackend``: HloModule -> optimized HLO -> buffers -> LLVM kernels -> :class:`CpuExecutable`.

``compile(module)``:

1. looks the module up in this backend's in-memory cache, then in the disk cache
   (``cache.py``; key = canonical HLO text, versions, host target, flags);
2. on a miss, runs :func:`xlapy.passes.cpu_pipeline` on a clone, assigns buffers,
   asks the kernel emitters for every instruction they can emit (the kernels go to
   ``jit_engine`` in a few LLVM modules, which compile in parallel processes), and
   stores the optimized HLO text, the object code and the kernel table in the disk
   cache; :attr:`CpuBackend.last_timings` says how long each stage took;
3. on a disk hit, parses the stored optimized HLO, assigns buffers again (the same
   text gives the same assignment; a digest checks it) and loads the object code,
   so neither the passes nor LLVM run;
4. builds the plan: one thunk per instruction of each computation's schedule (see
   ``executable.py`` for the kinds of thunks and the runtime).

With ``--xla_dump_to`` the HLO before/after optimization, the buffer assignment, the
LLVM IR before and after optimization (``.ir-no-opt.ll``, ``.ir-with-opt.ll``) and the
assembly (``.s``) are written with XLA's file names; the disk cache is not read then
(so every file can be produced).
"""
from __future__ import annotations

import collections
import hashlib
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ...config import DumpConfig, get_debug_options
from ...errors import XlapyError
from ...hlo.ir import HloComputation, HloInstruction, HloModule
from ...passes import cpu_pipeline
from ...passes.pipeline import PassRecord
from ...passes.buffer_assignment import BufferAssignment, assign_buffers
from ...passes.dump import dump_hlo_module, dump_text, module_key
from . import blas, conv
from . import cache as cache_mod
from .executable import CpuExecutable, buffer_ref, value_ref
from .jit_engine import OPT_LEVEL, SMALL_OPT_LEVEL, CompiledObject, engine
from .kernel_api import KernelSpec, indexed_leaves, kernel_buffers
from .thunks import (CallThunk, ConditionalThunk, CopyThunk, KernelThunk, LibraryThunk, Plan,
                     ThreadPool, Thunk, WhileThunk, leaves, shared_pool, write_value)

log = logging.getLogger("xlapy.cpu")

# Instructions whose value is already in place (aliases or buffers filled elsewhere).
NO_OP = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                   "after-all"})
# Instructions that forward operand 0 into a fresh buffer.
FORWARD = frozenset({"opt-barrier", "add-dependency", "domain"})

# Kernels are split over several LLVM modules (compiled in parallel processes) only when
# there are at least this many fused instructions per module.
MIN_SPLIT_WEIGHT = 24

# Modules with this many HLO instructions start the LLVM helper processes before their
# passes run (smaller ones rarely have enough IR to share; see jit_engine).
HELPER_START_INSTRUCTIONS = 200

# Kernels writing fewer elements than this are compiled at SMALL_OPT_LEVEL.
SMALL_KERNEL_ELEMENTS = 1024

# A kernel this large (bytes moved + weighted element operations, ``KernelSpec.cost``) is
# split across threads. Measured on the 2-core test machine (shared with other jobs):
# handing a range to the pool costs ~10-20 us, a+b*c runs ~7 us per 64k elements in
# cache and is bandwidth-bound beyond, exp ~0.6 ns/element. With the other core busy no
# size gained; the threshold (~250k elements of a+b*c, ~100k of exp: >100 us of work)
# keeps the split to kernels where a free core pays for the hand-off several times.
DEFAULT_PARALLEL_COST = 4_000_000


@dataclass
class KernelRecord:
    """A compiled kernel as stored in the cache: where it came from and its work units."""

    name: str
    computation: str
    instruction: str
    units: int
    cost: float

    def to_json(self) -> dict:
        return {"name": self.name, "computation": self.computation,
                "instruction": self.instruction, "units": self.units, "cost": self.cost}

    @staticmethod
    def from_json(d: dict) -> "KernelRecord":
        return KernelRecord(str(d["name"]), str(d["computation"]), str(d["instruction"]),
                            int(d["units"]), float(d["cost"]))


@dataclass
class CompileTimings:
    """Where one :meth:`CpuBackend.compile` call spent its time (seconds).

    ``path`` is ``"fresh"`` (passes and LLVM ran), ``"disk"`` (optimized HLO and object
    code came from the disk cache) or ``"memory"`` (the in-memory cache had it).
    ``llvm`` is :class:`~xlapy.backends.cpu.jit_engine.CompiledObject`'s wall time: the
    IR printed as text (``llvm_ir_text``), then per module LLVM's parse, optimization and
    machine code (``llvm_parse``, ``llvm_optimize``, ``llvm_codegen``, summed over the
    modules, which may compile in parallel processes: the sums can exceed ``llvm``).
    """

    path: str = "fresh"
    cache_key: float = 0.0          # canonical HLO text and the cache key
    passes: float = 0.0             # the HLO pass pipeline
    pass_records: list[PassRecord] = field(default_factory=list)
    parse: float = 0.0              # disk hit: parsing the stored optimized HLO
    buffer_assignment: float = 0.0
    emit_ir: float = 0.0            # kernel emitters: HLO -> LLVM IR (llvmlite.ir)
    llvm: float = 0.0               # IR text, LLVM parse, optimization, machine code
    llvm_ir_text: float = 0.0       # printing the llvmlite modules (pure Python)
    llvm_parse: float = 0.0
    llvm_optimize: float = 0.0
    llvm_codegen: float = 0.0
    cache_store: float = 0.0
    build: float = 0.0              # object loading (LLJIT), thunks, constants
    total: float = 0.0
    kernels: int = 0
    llvm_modules: int = 0

    def pass_seconds(self) -> dict[str, float]:
        """Seconds per pass name, summed over every run of the pass."""
        out: dict[str, float] = {}
        for r in self.pass_records:
            out[r.name] = out.get(r.name, 0.0) + r.seconds
        return out


def kernel_emitters(assignment: BufferAssignment) -> list[Any]:
    """The native kernel emitters available, in order of preference."""
    from .loop_emitter import LoopEmitter
    from .reduction_emitter import ReductionEmitter
    from .rng_emitter import RngBitGeneratorEmitter
    from .scatter_emitter import ScatterEmitter
    from .select_scatter_emitter import SelectAndScatterEmitter
    from .sort_emitter import SortEmitter
    from .window_emitter import ReduceWindowEmitter
    return [ReductionEmitter(assignment), LoopEmitter(assignment),
            ReduceWindowEmitter(assignment),
            SelectAndScatterEmitter(assignment), ScatterEmitter(assignment),
            SortEmitter(assignment), RngBitGeneratorEmitter(assignment)]


def _library_target(instr: HloInstruction) -> tuple[HloInstruction, list[int]] | None:
    """The dot/convolution a library routine computes for ``instr`` and, per operand of
    that op, which of ``instr``'s operands feeds it (a ``kCustom`` fusion wrapping one op
    on its parameters counts as that op)."""
    if instr.opcode in ("dot", "convolution"):
        return instr, list(range(len(instr.operands)))
    if instr.opcode == "fusion" and instr.attrs.get("kind") == "kCustom":
        root = instr.attrs["calls"].root
        if root.opcode in ("dot", "convolution") and \
                all(o.opcode == "parameter" for o in root.operands):
            return root, [o.parameter_number for o in root.operands]
    return None


# opcode -> (whether the routine handles an instruction, the routine's factory)
_LIBRARY = {"dot": (blas.supports_dot, blas.make_dot_thunk),
            "convolution": (conv.supports_convolution, conv.make_convolution_thunk)}


def library_supports(instr: HloInstruction) -> bool:
    """Whether ``blas.py``/``conv.py`` have a routine for ``instr``."""
    target = _library_target(instr)
    return target is not None and _LIBRARY[target[0].opcode][0](target[0])


def library_routine(instr: HloInstruction) -> Callable[[list, Any], None] | None:
    """A routine ``fn(operand_views, output_view)`` from ``blas.py``/``conv.py`` for a
    ``dot``/``convolution`` (or a kCustom fusion wrapping one); None if none fits."""
    if not library_supports(instr):
        return None
    op, feeds = _library_target(instr)
    fn = _LIBRARY[op.opcode][1](op)
    if feeds == list(range(len(instr.operands))):
        return fn
    return lambda operands, out: fn([operands[k] for k in feeds], out)


class CpuBackend:
    """The ``"cpu"`` platform: compiles modules to native code (see the module docstring).

    ``cache_dir``/``use_disk_cache`` override ``XLAPY_CACHE_DIR``/``XLAPY_DISABLE_CACHE``;
    ``num_threads`` sizes the kernel thread pool (1 = single-threaded);
    ``parallel_cost`` is the kernel cost above which a kernel is split across threads.
    """

    name = "cpu"

    def __init__(self, cache_dir: str | None = None, use_disk_cache: bool | None = None,
                 num_threads: int | None = None, parallel_cost: float | None = None,
                 memory_cache_size: int = 64) -> None:
        self.disk_cache = cache_mod.DiskCache(cache_dir, use_disk_cache)
        self.num_threads = num_threads
        self.parallel_cost = DEFAULT_PARALLEL_COST if parallel_cost is None else parallel_cost
        self._pool: ThreadPool | None = None
        self._memory: collections.OrderedDict[str, CpuExecutable] = collections.OrderedDict()
        self._memory_size = memory_cache_size
        self._lock = threading.Lock()
        self.last_timings: CompileTimings | None = None

    # ----- public
    def compile(self, module: HloModule) -> CpuExecutable:
        """Compile ``module`` (not modified) into an executable; :attr:`last_timings`
        tells where the time went."""
        start = time.perf_counter()
        timings = CompileTimings()
        options = get_debug_options()
        dump = DumpConfig(options)
        text = module.to_text()
        key = cache_mod.cache_key(text, engine().host, options)
        timings.cache_key = time.perf_counter() - start
        with self._lock:
            exe = self._memory.get(key)
            if exe is not None and not dump.enabled:
                self._memory.move_to_end(key)
                timings.path = "memory"
                timings.total = time.perf_counter() - start
                self.last_timings = timings
                return exe
        exe = None
        if not dump.enabled:
            entry = self.disk_cache.load(key)
            if entry is not None:
                timings.path = "disk"
                exe = self._from_cache(module, entry, timings)
        if exe is None:
            timings = CompileTimings(cache_key=timings.cache_key)
            exe = self._compile_fresh(module, key, options, dump, timings)
        timings.total = time.perf_counter() - start
        self.last_timings = timings
        with self._lock:
            self._memory[key] = exe
            while len(self._memory) > self._memory_size:
                self._memory.popitem(last=False)
        return exe

    # ----- the two paths
    def _compile_fresh(self, source: HloModule, key: str, options, dump: DumpConfig,
                       timings: CompileTimings) -> CpuExecutable:
        start = time.perf_counter()
        dkey = module_key(source)
        if sum(len(c.instructions) for c in source.computations) >= HELPER_START_INSTRUCTIONS:
            engine().start_helpers()          # they load while the passes run
        module = source.clone()
        if dump.enabled:
            dump_hlo_module(module, "before_optimizations", dump, key=dkey)
        result = cpu_pipeline(options).run_with_report(module)
        timings.passes, timings.pass_records = result.seconds, result.records
        t = time.perf_counter()
        assignment = assign_buffers(module)
        timings.buffer_assignment = time.perf_counter() - t
        if dump.enabled:
            dump_hlo_module(module, "after_optimizations", dump, key=dkey)
            dump_text(module, "after_optimizations-buffer-assignment.txt", assignment.to_text(),
                      dump, key=dkey)
        compiled, specs = self._emit_and_compile(module, assignment, dump.enabled, timings)
        records = [KernelRecord(s.name, s.instruction.parent.name, s.instruction.name,
                                s.units, s.cost) for s in specs]
        if compiled is not None and dump.enabled:
            dump_text(module, "ir-no-opt.ll", compiled.ir_no_opt, dump, key=dkey)
            dump_text(module, "ir-with-opt.ll", compiled.ir_with_opt, dump, key=dkey)
            dump_text(module, "s", compiled.assembly, dump, key=dkey)
        objects = compiled.objects if compiled else []
        t = time.perf_counter()
        if self.disk_cache.enabled:
            self.disk_cache.store(key, cache_mod.CacheEntry(
                module.to_text(), objects, [r.to_json() for r in records],
                assignment_digest(assignment)))
        timings.cache_store = time.perf_counter() - t
        t = time.perf_counter()
        exe = self._build(module, assignment, records, objects)
        timings.build, timings.kernels = time.perf_counter() - t, len(records)
        log.debug("compiled %s in %.3f s: %d kernels", source.name,
                  time.perf_counter() - start, len(records))
        return exe

    def _from_cache(self, source: HloModule, entry: "cache_mod.CacheEntry",
                    timings: CompileTimings) -> CpuExecutable | None:
        from ...hlo import parse_module
        try:
            t = time.perf_counter()
            module = parse_module(entry.optimized_hlo)
            timings.parse = time.perf_counter() - t
            t = time.perf_counter()
            assignment = assign_buffers(module)
            timings.buffer_assignment = time.perf_counter() - t
            if assignment_digest(assignment) != entry.assignment_digest:
                log.info("disk cache entry for %s has a different buffer assignment; "
                         "recompiling", source.name)
                return None
            records = [KernelRecord.from_json(k) for k in entry.kernels]
            t = time.perf_counter()
            exe = self._build(module, assignment, records, entry.objects)
            timings.build, timings.kernels = time.perf_counter() - t, len(records)
            return exe
        except (XlapyError, KeyError, ValueError) as e:
            log.warning("disk cache entry for %s is unusable (%s); recompiling", source.name, e)
            return None

    # ----- kernels
    def _emit_and_compile(self, module: HloModule, assignment: BufferAssignment,
                          keep_text: bool, timings: CompileTimings
                          ) -> tuple[CompiledObject | None, list[KernelSpec]]:
        """Emit a kernel for every instruction an emitter supports and compile them.

        Kernels with fewer than :data:`SMALL_KERNEL_ELEMENTS` output elements are
        optimized at ``SMALL_OPT_LEVEL`` (O3 costs several times the compile time and
        gains nothing measurable on them), the rest at O3. Each group is spread over up
        to ``engine().parallelism`` modules of similar size (fused instruction count),
        which the engine compiles in parallel processes."""
        emitters = kernel_emitters(assignment)
        names = _KernelNames()
        start = time.perf_counter()
        chosen: list[tuple[str, HloInstruction, Any]] = []
        for comp_name, schedule in assignment.schedules.items():
            for instr in schedule:
                if instr.opcode in NO_OP or instr.opcode in FORWARD or \
                        instr.opcode in ("while", "conditional", "call"):
                    continue
                if library_supports(instr):
                    continue
                em = next((e for e in emitters if e.can_emit(instr)), None)
                if em is not None:
                    chosen.append((comp_name, instr, em))
        small = [_is_small(i) for _, i, _ in chosen]
        weights = [len(i.attrs["calls"].instructions) if i.opcode == "fusion" else 1
                   for _, i, _ in chosen]
        modules, levels, specs = [], [], []
        for want_small, level in ((True, SMALL_OPT_LEVEL), (False, OPT_LEVEL)):
            group = [(c, w) for c, w, sm in zip(chosen, weights, small) if sm == want_small]
            total = sum(w for _, w in group)
            count = max(1, min(engine().parallelism, total // MIN_SPLIT_WEIGHT))
            mods = [engine().new_module(f"{module.name}.{level}.{g}") for g in range(count)]
            load = [0] * count
            for (comp_name, instr, em), w in sorted(group, key=lambda x: -x[1]):
                g = load.index(min(load))
                load[g] += w
                specs.append(em.emit(mods[g], names.new(comp_name, instr), instr))
            modules.extend(m for m, n in zip(mods, load) if n)
            levels.extend(level for n in load if n)
        timings.emit_ir = time.perf_counter() - start
        if not specs:
            return None, []
        compiled = engine().compile(modules, [s.name for s in specs], keep_text=keep_text,
                                    levels=levels)
        timings.llvm, timings.llvm_modules = compiled.seconds, len(modules)
        timings.llvm_ir_text = compiled.text_seconds
        timings.llvm_parse = compiled.parse_seconds
        timings.llvm_optimize = compiled.optimize_seconds
        timings.llvm_codegen = compiled.codegen_seconds
        return compiled, specs

    # ----- plan
    def _thread_pool(self) -> ThreadPool | None:
        if self.num_threads is None:
            return shared_pool()
        if self.num_threads <= 1:
            return None
        if self._pool is None:
            self._pool = ThreadPool(self.num_threads)
        return self._pool

    def _build(self, module: HloModule, assignment: BufferAssignment,
               records: list[KernelRecord], objects: list[bytes]) -> CpuExecutable:
        loaded = engine().load(objects, [r.name for r in records]) if records else None
        kernels = {}
        for r in records:
            instr = module.computation(r.computation).instruction(r.instruction)
            kernels[id(instr)] = (r, loaded.address(r.name))
        builder = _PlanBuilder(module, assignment, kernels, self._thread_pool(),
                               self.parallel_cost)
        plan = builder.plan(module.entry)
        exe = CpuExecutable(module, assignment, plan, value_ref(assignment, module.entry.root),
                            keep_alive=[loaded] + ([builder.evaluator]
                                                   if builder.evaluator is not None else []))
        _materialize_constants(exe, assignment, module)
        exe.bind_fixed()
        return exe


def _is_small(instr: HloInstruction) -> bool:
    return max((s.num_elements for _, s in indexed_leaves(instr.shape)),
               default=0) < SMALL_KERNEL_ELEMENTS


class _KernelNames:
    """Unique LLVM symbol names derived from computation and instruction names."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def new(self, comp: str, instr: HloInstruction) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", f"xk_{comp}__{instr.name}")
        name, n = base, 1
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name


def assignment_digest(assignment: BufferAssignment) -> str:
    """A digest of where every buffer lives (kernels may assume which buffers coincide)."""
    return hashlib.sha256(assignment.to_text().encode()).hexdigest()


def _materialize_constants(exe: CpuExecutable, assignment: BufferAssignment,
                           module: HloModule) -> None:
    """Write every constant's literal into its buffer, in the constant's layout."""
    for comp_name in assignment.schedules:
        for instr in module.computation(comp_name).instructions:
            if instr.opcode == "constant":
                write_value(value_ref(assignment, instr), instr.literal, exe.memory, instr)


def _read_leaf_prefixes(comp: HloComputation, param: HloInstruction) -> list[tuple[int, ...]]:
    """Shape-index prefixes of ``param`` that ``comp`` reads (through get-tuple-element)."""
    used: list[tuple[int, ...]] = []

    def visit(instr: HloInstruction, prefix: tuple[int, ...]) -> None:
        if instr is comp.root:
            used.append(prefix)
        for u in instr.users:
            if u.opcode == "get-tuple-element":
                visit(u, prefix + (u.attrs["index"],))
            else:
                used.append(prefix)
    visit(param, ())
    return used


def _passed_through(body: HloComputation) -> set[tuple[int, ...]]:
    """Shape indices of the loop state that ``body`` returns unchanged: its root's leaf is
    ``get-tuple-element`` of its parameter at the same index. (Such a parameter buffer is
    live out of the body, so buffer assignment never lets an op overwrite it.)"""
    param = body.parameters[0]
    out: set[tuple[int, ...]] = set()
    for ix, _ in indexed_leaves(param.shape):
        value = body.root
        for k in ix:
            if value.opcode != "tuple":
                break
            value = value.operands[k]
        else:
            path: list[int] = []
            while value.opcode == "get-tuple-element":
                path.insert(0, value.attrs["index"])
                value = value.operands[0]
            if value is param and tuple(path) == ix:
                out.add(ix)
    return out


class _PlanBuilder:
    """Turns computations with assigned buffers into plans of thunks."""

    def __init__(self, module: HloModule, assignment: BufferAssignment,
                 kernels: dict[int, tuple[KernelRecord, int]],
                 pool: ThreadPool | None, parallel_cost: float) -> None:
        self.module, self.assignment, self.kernels = module, assignment, kernels
        self.pool, self.parallel_cost = pool, parallel_cost
        # The reference interpreter runs instructions no kernel or library routine
        # handles; it is imported and made only for the first such instruction.
        self.evaluator: Any = None
        self.plans: dict[str, Plan] = {}

    def plan(self, comp: HloComputation) -> Plan:
        if comp.name not in self.plans:
            thunks = [t for instr in self.assignment.schedules[comp.name]
                      if (t := self.thunk(instr)) is not None]
            self.plans[comp.name] = Plan(comp.name, thunks)
        return self.plans[comp.name]

    def ref(self, instr: HloInstruction):
        return value_ref(self.assignment, instr)

    def pairs(self, src: HloInstruction, dst: HloInstruction, only=None, exclude=()):
        """(source leaf, destination leaf) for the array leaves of two equal-shaped values;
        ``only``: just the leaves under these shape-index prefixes; ``exclude``: leaves
        (shape indices) to leave out."""
        s, d = leaves(self.ref(src)), leaves(self.ref(dst))
        out = list(zip(s, d))
        idx = [ix for ix, _ in indexed_leaves(dst.shape)]
        return [p for p, ix in zip(out, idx)
                if (only is None or any(ix[:len(u)] == u for u in only)) and ix not in exclude]

    def thunk(self, instr: HloInstruction) -> Thunk | None:
        op = instr.opcode
        if op in NO_OP:
            return None
        if id(instr) in self.kernels:
            record, address = self.kernels[id(instr)]
            refs = [buffer_ref(self.assignment, kb_instr, kb_index)
                    for kb_instr, kb_index in _kernel_buffer_keys(instr)]
            return KernelThunk(instr, record.name, address, refs, record.units, record.cost,
                               self.pool, self.parallel_cost)
        if op in FORWARD:
            return CopyThunk(instr, self.pairs(instr.operands[0], instr))
        if op == "while":
            return self.while_thunk(instr)
        if op == "conditional":
            return self.conditional_thunk(instr)
        if op == "call":
            callee = instr.to_apply
            to_params = [p for o, prm in zip(instr.operands, callee.parameters)
                         for p in self.pairs(o, prm)]
            return CallThunk(instr, self.plan(callee), to_params, self.pairs(callee.root, instr))
        fn = library_routine(instr)
        if fn is not None:
            return LibraryThunk(instr, fn, [self.ref(o) for o in instr.operands], self.ref(instr))
        from ..interpreter import Evaluator
        from .fallback import FallbackThunk
        if self.evaluator is None:
            self.evaluator = Evaluator(self.module)
        return FallbackThunk(instr, self.evaluator, [self.ref(o) for o in instr.operands],
                             self.ref(instr))

    def while_thunk(self, instr: HloInstruction) -> WhileThunk:
        cond, body = instr.attrs["condition"], instr.attrs["body"]
        cparam, bparam = cond.parameters[0], body.parameters[0]
        through = _passed_through(body)
        paths = [ix for ix, _ in indexed_leaves(bparam.shape)]
        read = _read_leaf_prefixes(body, bparam)
        to_body_first = self.pairs(instr, bparam, read)
        to_body = self.pairs(instr, bparam, [ix for ix in read if ix not in through],
                             exclude=through)
        from_body = [pair for ix, pair in zip(paths, self.pairs(body.root, instr))
                     if ix not in through]
        return WhileThunk(
            instr, self.pairs(instr.operands[0], instr), self.plan(cond),
            self.pairs(instr, cparam, _read_leaf_prefixes(cond, cparam)),
            buffer_ref(self.assignment, cond.root), self.plan(body),
            to_body_first, to_body, from_body)

    def conditional_thunk(self, instr: HloInstruction) -> ConditionalThunk:
        branches = instr.attrs.get("branch_computations")
        if branches is None:
            branches = [instr.attrs["true_computation"], instr.attrs["false_computation"]]
        out = []
        for k, comp in enumerate(branches):
            param = comp.parameters[0]
            out.append((self.plan(comp),
                        self.pairs(instr.operands[k + 1], param,
                                   _read_leaf_prefixes(comp, param)),
                        self.pairs(comp.root, instr)))
        return ConditionalThunk(instr, buffer_ref(self.assignment, instr.operands[0]), out)


def _kernel_buffer_keys(instr: HloInstruction) -> list[tuple[HloInstruction, tuple[int, ...]]]:
    """(instruction, shape index) of each entry of the kernel buffer table (kernel_api order)."""
    return [(kb.instruction, kb.index) for kb in kernel_buffers(instr)]


__all__ = ["CompileTimings", "CpuBackend", "KernelRecord", "DEFAULT_PARALLEL_COST"]
