"""``CpuBackend``: HloModule -> optimized HLO -> buffers -> LLVM kernels -> :class:`CpuExecutable`.

``compile(module)``:

1. looks the module up in this backend's in-memory cache, then in the disk cache
   (``cache.py``; key = canonical HLO text (``canonical.py``: no metadata, canonical
   names), versions, host target, flags);
2. on a miss, runs the HLO verifier (:func:`xlapy.hlo.verifier.verify_module`; malformed
   HLO -- a declared shape that does not match its operands, an out-of-range slice, a
   gather window larger than its operand, ... -- raises ``VerificationError`` naming the
   instruction instead of running native code out of bounds), then
   :func:`xlapy.backends.compile.optimize_module` with this backend's target
   (``pipeline.py``: the pass pipeline on a clone, then buffer assignment), asks the
   kernel emitters for every instruction they can emit (the kernels go to
   ``jit_engine`` in a few LLVM modules, which compile in parallel processes), and
   stores the optimized HLO text, the object code and the kernel table in the disk
   cache (not for a module with host callbacks, whose callables live in this process
   only: it is never stored or loaded); :attr:`CpuBackend.last_timings` says how long
   each stage took;
3. on a disk hit, parses the stored optimized HLO, assigns buffers again (the same
   text gives the same assignment; a digest checks it) and loads the object code,
   so neither the passes nor LLVM run. Any failure while loading an entry makes it
   corrupt: it is logged, removed and the module recompiled. A hit needs no verification:
   the key covers the module's canonical text, and an entry is only written for a
   module that passed the verifier (a malformed module never prints like a valid one),
   and verifying costs more than a disk hit's other work (docs/performance.md).
4. builds the plan: one thunk per instruction of each computation's schedule (see
   ``executable.py`` for the kinds of thunks and the runtime).

With ``--xla_dump_to`` the HLO before/after optimization, the buffer assignment, the
LLVM IR before and after optimization (``.ir-no-opt.ll``, ``.ir-with-opt.ll``) and the
assembly (``.s``) are written with XLA's file names; the disk cache is not read then
(so every file can be produced). :meth:`CpuBackend.compiler_ir` returns those texts
(``get_compiler_ir(...)(stage="llvm" | "llvm_no_opt" | "asm")`` in the front end).
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from ...config import DumpConfig, get_debug_options
from ...errors import ExecutionError, InvalidArgumentError
from ...hlo.ir import HloInstruction, HloModule
from ...hlo.verifier import verify_module
from ...passes.buffer_assignment import BufferAssignment
from ...passes.conv_output_fusion import conv_output_fusion_parts
from ...passes.dump import dump_text, module_key
from ...passes.pipeline import PassRecord, gc_paused
from ..compile import optimize_module, pass_context
from ..interpreter.host_callbacks import has_host_callbacks
from . import cache as cache_mod
from . import bf16_dot, conv, conv_kernels
from .canonical import canonical_text
from .executable import CpuExecutable, value_ref
from .jit_engine import OPT_LEVEL, SMALL_OPT_LEVEL, CompiledObject, engine
from .kernel_api import KernelSpec, indexed_leaves
from .pipeline import TARGET
from .plan_builder import (NO_OP, PlanBuilder, library_supports,
                           library_target, materialize_constants)
from .thunks import ThreadPool, shared_pool

log = logging.getLogger("xlapy.cpu")

# Kernels are split over several LLVM modules (compiled in parallel processes) only when
# there are at least this many fused instructions per module.
MIN_SPLIT_WEIGHT = 24

# Modules with this many HLO instructions start the LLVM helper processes before their
# passes run (smaller ones rarely have enough IR to share; see jit_engine).
HELPER_START_INSTRUCTIONS = 200

# Kernels writing fewer elements than this are compiled at SMALL_OPT_LEVEL.
SMALL_KERNEL_ELEMENTS = 1024

# A kernel this large (bytes moved + weighted element operations, ``KernelSpec.cost``) is
# split across threads: kernels where a free core pays for the hand-off to the pool several
# times (the measurements behind it: docs/performance.md).
DEFAULT_PARALLEL_COST = 4_000_000

# ``compiler_ir`` stages: stage name -> CompiledObject attribute (HLO stages are separate).
IR_STAGES = {"llvm": "ir_with_opt", "ir-with-opt": "ir_with_opt", "llvm_with_opt": "ir_with_opt",
             "llvm_no_opt": "ir_no_opt", "llvm-no-opt": "ir_no_opt", "ir-no-opt": "ir_no_opt",
             "asm": "assembly", "assembly": "assembly"}


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
    verify: float = 0.0             # the HLO verifier (a miss only)
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
    compiled_kernels: int = 0       # distinct kernels compiled (equal ones share code)
    llvm_modules: int = 0

    def pass_seconds(self) -> dict[str, float]:
        """Seconds per pass name, summed over every run of the pass."""
        out: dict[str, float] = {}
        for r in self.pass_records:
            out[r.name] = out.get(r.name, 0.0) + r.seconds
        return out


def kernel_emitters(assignment: BufferAssignment) -> list[Any]:
    """The native kernel emitters available, in order of preference."""
    from .dot_emitter import DotEmitter
    from .loop_emitter import LoopEmitter
    from .reduction_emitter import ReductionEmitter
    from .rng_emitter import RngBitGeneratorEmitter
    from .scatter_emitter import ScatterEmitter
    from .select_scatter_emitter import SelectAndScatterEmitter
    from .sort_emitter import SortEmitter
    from .window_emitter import ReduceWindowEmitter
    return [DotEmitter(assignment), ReductionEmitter(assignment), LoopEmitter(assignment),
            ReduceWindowEmitter(assignment),
            SelectAndScatterEmitter(assignment), ScatterEmitter(assignment),
            SortEmitter(assignment), RngBitGeneratorEmitter(assignment)]


def kernel_candidates(assignment: BufferAssignment) -> Iterator[tuple[str, HloInstruction]]:
    """``(computation name, instruction)`` for every scheduled instruction that needs code
    of its own (a kernel, a library call or the interpreter): all but no-ops and control
    flow (``while``/``conditional``/``call`` run sub-plans)."""
    for comp_name, schedule in assignment.schedules.items():
        for instr in schedule:
            if instr.opcode not in NO_OP and \
                    instr.opcode not in ("while", "conditional", "call"):
                yield comp_name, instr


def library_convolutions(assignment: BufferAssignment, native: set[tuple[str, str]]
                         ) -> Iterator[HloInstruction]:
    """The convolutions that library thunks compute: every kernel candidate not in
    ``native`` (``(computation, instruction)`` names with kernels) that is a convolution, a
    kCustom fusion wrapping one (then the convolution inside) or a convolution output
    fusion (itself: ``conv.direct_kernels`` reads its epilogue)."""
    for comp_name, instr in kernel_candidates(assignment):
        if (comp_name, instr.name) not in native:
            target = library_target(instr)
            if target is not None and target[0].opcode == "convolution":
                # a convolution output fusion itself: its kernel has the epilogue
                yield instr if conv_output_fusion_parts(instr) is not None else target[0]


def kernel_choices(module: HloModule) -> str:
    """The host-measured or environment-chosen kernels the pipeline's result depends on,
    as text for the cache key: the bf16 dot kernel (``bf16_dot.dot_operand``, which
    decides which bf16 dots run as f32 dots) when the module has a bf16 dot; else ""."""
    if not any(i.opcode == "dot" and bf16_dot.handles(i)
               for comp in module.computations for i in comp.instructions):
        return ""
    return f"bf16_dot={bf16_dot.dot_operand()}"


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
        self._key_locks: dict[str, threading.Lock] = {}      # keys being compiled
        self.last_timings: CompileTimings | None = None

    # ----- public
    def prepare(self) -> None:
        """Get ready for compiles soon to come (a caller that knows, e.g. the PyTorch
        backend before AOTAutograd traces): the LLVM helper processes start loading."""
        engine().start_helpers()

    def clear_memory_cache(self) -> None:
        """Forget the executables kept in memory: the next compile of a module makes a new
        executable (from the disk cache when that has the module), with its own thunks
        and their plans."""
        with self._lock:
            self._memory.clear()

    def compile(self, module: HloModule) -> CpuExecutable:
        """Compile ``module`` (not modified) into an executable; :attr:`last_timings`
        tells where the time went."""
        start = time.perf_counter()
        timings = CompileTimings()
        options = get_debug_options()
        dump = DumpConfig(options)
        key = self.cache_key(module, options)
        timings.cache_key = time.perf_counter() - start
        exe = self._from_memory(key, dump, timings, start)
        if exe is not None:
            return exe
        # One thread compiles a key; others asking for it meanwhile wait, then hit.
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            try:
                return self._from_memory(key, dump, timings, start) or \
                    self._compile_key(module, key, options, dump, timings, start)
            finally:
                with self._lock:
                    if self._key_locks.get(key) is key_lock:
                        del self._key_locks[key]

    def _from_memory(self, key: str, dump: DumpConfig, timings: CompileTimings,
                     start: float) -> CpuExecutable | None:
        with self._lock:
            exe = self._memory.get(key)
            if exe is not None and not dump.enabled:
                self._memory.move_to_end(key)
                timings.path = "memory"
                timings.total = time.perf_counter() - start
                self.last_timings = timings
                return exe
        return None

    def _compile_key(self, module: HloModule, key: str, options, dump: DumpConfig,
                     timings: CompileTimings, start: float) -> CpuExecutable:
        """Load ``key`` from the disk cache or compile it, and keep it in memory."""
        exe = None
        # A host callback's index names a callable of this process: such a module is
        # never read from or written to the disk cache (the memory cache is per process).
        disk = self.disk_cache.enabled and not has_host_callbacks(module)
        if not dump.enabled and disk:
            entry = self.disk_cache.load(key)
            if entry is not None:
                timings.path = "disk"
                exe = self._from_cache(module, key, entry, timings)
        if exe is None:
            timings = CompileTimings(cache_key=timings.cache_key)
            # The kernel emitters make many short-lived linked IR objects: a full
            # collection they trigger would walk the caller's whole heap (large in a
            # PyTorch process) for garbage freed at the end of the compile anyway.
            with gc_paused():
                exe = self._compile_fresh(module, key, options, dump, timings, disk)
        timings.total = time.perf_counter() - start
        self.last_timings = timings
        with self._lock:
            self._memory[key] = exe
            while len(self._memory) > self._memory_size:
                self._memory.popitem(last=False)
        return exe

    def cache_key(self, module: HloModule, options=None) -> str:
        """The key of ``module`` in the in-memory and disk caches (``cache.py``)."""
        try:
            text = canonical_text(module)
        except Exception:                   # noqa: BLE001 - too broken to print: say why
            verify_module(module, unique_names="computation")
            raise
        return cache_mod.cache_key(text, engine().host,
                                   options if options is not None else get_debug_options(),
                                   kernel_choices(module))

    def compiler_ir(self, module: HloModule, stage: str = "llvm") -> str:
        """Text of one stage of compiling ``module`` (not modified), as ``--xla_dump_to``
        writes it: ``"llvm"`` (also ``"ir-with-opt"``) the LLVM IR after LLVM's
        optimization, ``"llvm_no_opt"`` (``"llvm-no-opt"``, ``"ir-no-opt"``) the IR as
        emitted, ``"asm"`` (``"assembly"``) the host assembly; ``"optimized_hlo"`` the HLO
        after the pass pipeline. The module is verified and compiled afresh (the caches
        hold no text; nothing is stored). A module without native kernels (everything
        runs in library calls or fallbacks) gives an empty text."""
        wanted = IR_STAGES.get(stage)
        if wanted is None and stage != "optimized_hlo":
            raise InvalidArgumentError(
                f"unknown compiler IR stage {stage!r} for the cpu backend; expected one of "
                f"'optimized_hlo', {', '.join(repr(k) for k in IR_STAGES)}")
        verify_module(module, unique_names="computation")
        options = get_debug_options()
        no_dump = DumpConfig(dataclasses.replace(options, xla_enable_dumping=False))
        optimized, _, compiled, _ = self._optimize_and_emit(
            module, options, no_dump, CompileTimings(), keep_text=True)
        if wanted is None:
            return optimized.to_text()
        return (getattr(compiled, wanted) or "") if compiled is not None else ""

    # ----- the two paths
    def _optimize_and_emit(self, source: HloModule, options, dump: DumpConfig,
                           timings: CompileTimings, keep_text: bool
                           ) -> tuple[HloModule, BufferAssignment, CompiledObject | None,
                                      list[KernelSpec]]:
        """Passes, buffer assignment and LLVM for a clone of ``source`` (with the dumps)."""
        dkey = module_key(source)
        if sum(len(c.instructions) for c in source.computations) >= HELPER_START_INSTRUCTIONS:
            engine().start_helpers()          # they load while the passes run
        ctx = pass_context(options).replace(dump=dump)
        result = optimize_module(source, TARGET, ctx)
        module, assignment = result.module, result.buffers
        timings.passes, timings.pass_records = result.pipeline.seconds, result.pipeline.records
        timings.buffer_assignment = result.buffer_seconds
        compiled, specs = self._emit_and_compile(module, assignment, keep_text or dump.enabled,
                                                 timings)
        if compiled is not None and dump.enabled:
            dump_text(module, "ir-no-opt.ll", compiled.ir_no_opt, dump, key=dkey)
            dump_text(module, "ir-with-opt.ll", compiled.ir_with_opt, dump, key=dkey)
            dump_text(module, "s", compiled.assembly, dump, key=dkey)
        return module, assignment, compiled, specs

    def _compile_fresh(self, source: HloModule, key: str, options, dump: DumpConfig,
                       timings: CompileTimings, store: bool = True) -> CpuExecutable:
        start = time.perf_counter()
        verify_module(source, unique_names="computation")
        timings.verify = time.perf_counter() - start
        module, assignment, compiled, specs = self._optimize_and_emit(
            source, options, dump, timings, keep_text=False)
        records = [KernelRecord(s.name, s.instruction.parent.name, s.instruction.name,
                                s.units, s.cost) for s in specs]
        objects = compiled.objects if compiled else []
        t = time.perf_counter()
        if store and self.disk_cache.enabled:
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

    def _from_cache(self, source: HloModule, key: str, entry: "cache_mod.CacheEntry",
                    timings: CompileTimings) -> CpuExecutable | None:
        """The executable of a disk-cache entry; None (the entry is removed) when anything
        about it is wrong: whatever exception loading it raises, the entry is corrupt or
        stale and the module is recompiled."""
        from ...hlo import parse_module
        try:
            t = time.perf_counter()
            module = parse_module(entry.optimized_hlo)
            timings.parse = time.perf_counter() - t
            t = time.perf_counter()
            assignment = TARGET.assign_buffers(module)     # as optimize_module does
            timings.buffer_assignment = time.perf_counter() - t
            if assignment_digest(assignment) != entry.assignment_digest:
                raise ValueError("the stored optimized HLO gives another buffer assignment")
            records = [KernelRecord.from_json(k) for k in entry.kernels]
            _check_records(module, records)
            t = time.perf_counter()
            exe = self._build(module, assignment, records, entry.objects)
            timings.build, timings.kernels = time.perf_counter() - t, len(records)
            return exe
        except Exception as e:                  # noqa: BLE001 - any failure: recompile
            self.disk_cache.discard(key, f"{type(e).__name__}: {e}")
            return None

    # ----- kernels
    def _emit_and_compile(self, module: HloModule, assignment: BufferAssignment,
                          keep_text: bool, timings: CompileTimings
                          ) -> tuple[CompiledObject | None, list[KernelSpec]]:
        """Emit a kernel for every instruction an emitter supports and compile them.

        Kernels with fewer than :data:`SMALL_KERNEL_ELEMENTS` output elements are
        optimized at ``SMALL_OPT_LEVEL`` (O3 costs several times the compile time and
        gains nothing measurable on them), the rest at O3. Each kernel is emitted into
        an LLVM module of its own and printed; a kernel whose IR is another's but for
        its name (the same fused computation on the same shapes, as in every layer of a
        deep model) is not compiled again: its spec names the first one's symbol
        (:func:`kernel_key`). The distinct kernels of each group are spread over up to
        ``engine().parallelism`` jobs of similar size (fused instruction count), each
        linked into one LLVM module that the engine compiles, in parallel processes,
        with a module for each generated convolution kernel the executable's
        convolutions need and no cache holds (``conv_kernels.missing``)."""
        emitters = kernel_emitters(assignment)
        names = KernelNames()
        start = time.perf_counter()
        chosen: list[tuple[str, HloInstruction, Any]] = []
        for comp_name, instr in kernel_candidates(assignment):
            em = next((e for e in emitters if e.can_emit(instr)), None)
            # dots go to the library unless an emitter replaces it for their shape
            if library_supports(instr) and not getattr(em, "replaces_library", False):
                continue
            if em is not None:
                chosen.append((comp_name, instr, em))
        small = [_is_small(i) for _, i, _ in chosen]
        weights = [len(i.attrs["calls"].instructions) if i.opcode == "fusion" else 1
                   for _, i, _ in chosen]
        jobs: list[list[str]] = []
        levels: list[int] = []
        specs: list[KernelSpec] = []
        first: dict[str, str] = {}          # kernel_key -> the symbol compiled for it
        text_seconds = 0.0
        for want_small, level in ((True, SMALL_OPT_LEVEL), (False, OPT_LEVEL)):
            group = [(c, w) for c, w, sm in zip(chosen, weights, small) if sm == want_small]
            total = sum(w for _, w in group)
            count = max(1, min(engine().parallelism, total // MIN_SPLIT_WEIGHT))
            parts: list[list[str]] = [[] for _ in range(count)]
            load = [0] * count
            for (comp_name, instr, em), w in sorted(group, key=lambda x: -x[1]):
                name = names.new(comp_name, instr)
                llvm_module = engine().new_module(name)
                spec = em.emit(llvm_module, name, instr)
                t = time.perf_counter()
                text = str(llvm_module)
                text_seconds += time.perf_counter() - t
                key = kernel_key(text, name)
                if key is not None and key in first:
                    specs.append(dataclasses.replace(spec, name=first[key]))
                    continue
                if key is not None:
                    first[key] = name
                g = load.index(min(load))
                load[g] += w
                parts[g].append(text)
                specs.append(spec)
            jobs.extend(p for p in parts if p)
            levels.extend(level for p in parts if p)
        # the generated convolution kernels the executable will need, compiled with its own
        # (not when the text is kept: it is the module's kernels' text)
        convs = [] if keep_text or not specs else conv_kernels.missing(conv.direct_kernels(
            library_convolutions(assignment, {(c, i.name) for c, i, _ in chosen})))
        timings.emit_ir = time.perf_counter() - start - text_seconds
        if not specs:
            return None, []
        symbols = list(dict.fromkeys(s.name for s in specs))
        compiled = self._compile(jobs, symbols, keep_text, levels, convs)
        compiled.text_seconds += text_seconds
        timings.llvm, timings.llvm_modules = compiled.seconds, len(jobs)
        timings.compiled_kernels = len(symbols)
        timings.llvm_ir_text = compiled.text_seconds
        timings.llvm_parse = compiled.parse_seconds
        timings.llvm_optimize = compiled.optimize_seconds
        timings.llvm_codegen = compiled.codegen_seconds
        return compiled, specs

    @staticmethod
    def _compile(jobs: list[Any], names: list[str], keep_text: bool, levels: list[int],
                 convs: list[conv_kernels.Pending]) -> CompiledObject:
        """``engine().compile`` of the module's kernels (``jobs``, exporting ``names``) and
        the convolution kernels ``convs`` together (these are cached and loaded, and left
        out of the result); if that fails, of the module's kernels alone (``_build`` then
        compiles ``convs``)."""
        if convs:
            try:
                compiled = engine().compile(
                    jobs + [c.module for c in convs], names + [c.name for c in convs],
                    levels=levels + [conv_kernels.KERNEL_OPT_LEVEL] * len(convs))
            except ExecutionError as e:
                log.info("compiling with %d convolution kernels failed (%s); compiling "
                         "without them", len(convs), e)
            else:
                conv_kernels.install(convs, compiled.objects[len(jobs):])
                del compiled.objects[len(jobs):]
                compiled.symbols = names
                return compiled
        return engine().compile(jobs, names, keep_text=keep_text, levels=levels)

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
        conv_kernels.compile_kernels(conv.direct_kernels(library_convolutions(
            assignment, {(r.computation, r.instruction) for r in records})))
        exe = self._runtime(module, assignment, records, loaded)
        # a call made while another thread runs this executable runs on a replica
        exe.replicate = functools.partial(self._runtime, module, assignment, records, loaded,
                                          profile=False)
        return exe

    def _runtime(self, module: HloModule, assignment: BufferAssignment,
                 records: list[KernelRecord], loaded: Any,
                 profile: bool | None = None) -> CpuExecutable:
        """An executable of loaded code: plans, kernel tables, its own arena and constants."""
        kernels = {}
        for r in records:
            instr = module.computation(r.computation).instruction(r.instruction)
            kernels[id(instr)] = (r, loaded.address(r.name))
        builder = PlanBuilder(module, assignment, kernels, self._thread_pool(),
                               self.parallel_cost)
        plan = builder.plan(module.entry)
        exe = CpuExecutable(module, assignment, plan, value_ref(assignment, module.entry.root),
                            keep_alive=[loaded] + ([builder.evaluator]
                                                   if builder.evaluator is not None else []),
                            profile=profile)
        materialize_constants(exe.memory, assignment, module)
        exe.bind_fixed()
        return exe


def _check_records(module: HloModule, records: list[KernelRecord]) -> None:
    """Raise ValueError unless every kernel record names a distinct instruction of
    ``module`` that a kernel can compute, with unit counts no kernel could exceed."""
    seen: set[tuple[str, str]] = set()
    for r in records:
        instr = module.computation(r.computation).instruction(r.instruction)
        if (r.computation, r.instruction) in seen:
            raise ValueError(f"two kernels for {r.computation}/{r.instruction}")
        seen.add((r.computation, r.instruction))
        if instr.opcode in NO_OP or \
                instr.opcode in ("while", "conditional", "call"):
            raise ValueError(f"a kernel for {instr.opcode} {r.instruction}")
        elements = max([s.num_elements for _, s in indexed_leaves(instr.shape)]
                       + [s.num_elements for o in instr.operands
                          for _, s in indexed_leaves(o.shape)] + [1])
        if r.units > elements:
            raise ValueError(f"kernel {r.name} has {r.units} units, more than the "
                             f"{elements} elements of {r.instruction}")


_MUTABLE_GLOBAL = re.compile(r"= (?:private |internal )?(?:unnamed_addr )?global ")


def kernel_key(text: str, name: str) -> str | None:
    """What two kernels must share to be one compiled function: their IR text (a module
    holding only that kernel) with the kernel's name taken out; None for a kernel with
    mutable globals (state that two instructions must not share)."""
    if _MUTABLE_GLOBAL.search(text):
        return None
    return text.replace(name, "\0")


def _is_small(instr: HloInstruction) -> bool:
    return max((s.num_elements for _, s in indexed_leaves(instr.shape)),
               default=0) < SMALL_KERNEL_ELEMENTS


class KernelNames:
    """Unique LLVM symbol names derived from computation and instruction names, each
    starting with ``prefix``."""

    def __init__(self, prefix: str = "xk_") -> None:
        self.prefix = prefix
        self.used: set[str] = set()

    def new(self, comp: str, instr: HloInstruction) -> str:
        base = self.prefix + re.sub(r"[^A-Za-z0-9_]", "_", f"{comp}__{instr.name}")
        name, n = base, 1
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name


def assignment_digest(assignment: BufferAssignment) -> str:
    """A digest of where every buffer lives (kernels may assume which buffers coincide)."""
    return hashlib.sha256(assignment.to_text().encode()).hexdigest()


__all__ = ["CompileTimings", "CpuBackend", "KernelNames", "KernelRecord", "kernel_candidates",
           "kernel_choices", "kernel_key",
           "DEFAULT_PARALLEL_COST"]
