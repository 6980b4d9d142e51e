"""LLVM through llvmlite: the host target, O3 optimization, object code and loading it.

One :class:`JitEngine` per process (:func:`engine`) owns

- the **host target**: process triple, host CPU name and features (``avx2``,
  ``avx512f``, ...) and a target machine at ``opt=3``;
- :meth:`JitEngine.compile`: ``llvmlite.ir.Module`` s (a compiled HLO module's kernels,
  one module each, split into :attr:`JitEngine.parallelism` jobs per optimization level
  when there is enough work; a job's modules are linked into one) are parsed, verified,
  optimized with the new pass manager
  (``PassBuilder`` at O3 with loop vectorization and SLP vectorization on) and lowered to
  **object code**, each in its own LLVM context (``llvm_worker.compile_ir``). The textual
  IR before and after optimization and the assembly are kept when asked (for
  ``--xla_dump_to``);
- **helper processes** (``llvm_worker.HelperProcess``) compile modules in parallel with
  this process. llvmlite makes every LLVM call under one process-wide lock, so threads
  run one LLVM call at a time (measured: two modules on two threads take as long as one
  after the other); processes do not share that lock. There are
  ``XLAPY_LLVM_HELPERS`` helpers (default: one less than the usable cores, at most
  :data:`MAX_HELPERS`), each started when a compile first has at least
  :data:`HELPER_MIN_BYTES` of IR in several modules, kept for later compiles and ended
  at exit. A helper that cannot start or dies leaves its work to this process; the
  object code is the same wherever it is made;
- :meth:`JitEngine.load`: object code is linked into the process with ORC's LLJIT
  (``JITLibraryBuilder``; symbols of the running process such as ``libm`` resolve, and
  the backend's own compiler-runtime functions, :mod:`.runtime_support`, are linked in),
  giving :class:`LoadedCode` with the address of every exported kernel. Object code
  is also what the disk cache stores, so a cached module loads without LLVM
  optimization or code generation.

**Releasing memory.** When a :class:`LoadedCode` dies (its executable died), its
library's code and symbols are released (the resource tracker is closed). ORC keeps an
empty ``JITDylib`` per library name for the life of its LLJIT, so an LLJIT takes
:data:`LIBRARIES_PER_JIT` libraries, then a new one is made, and the old one is closed
when its last library is released (:class:`_JitInstance`). In-process LLVM optimization
leaks in llvmlite (each ``PassBuilder`` allocates instrumentation callbacks it never
frees, and every run adds to them; ``docs/performance.md`` has the measurement), so
after :data:`IN_PROCESS_MODULES` modules this process hands its LLVM work to helper
processes, and a helper is ended and replaced after
:data:`~xlapy.backends.cpu.llvm_worker.RECYCLE_JOBS` jobs: the leak goes with it.

The pipeline is O3 (``SMALL_OPT_LEVEL`` for kernels with few elements) with LLVM's loop
unroller off: on the generated loop nests it multiplied compile time by about 4 with no
measurable speed-up once the loops are vectorized (vector interleaving stays on); the loop
emitter unrolls loops over tiny dimensions itself.

LLJIT reports unresolved symbols as an error at load time (MCJIT would leave a null
call that crashes when run), which is why it is used. Floating-point semantics are
IEEE: no fast-math flags and no FP contraction are added here.
"""
from __future__ import annotations

import atexit
import collections
import itertools
import logging
import os
import signal
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import llvmlite
import llvmlite.binding as llvm
from llvmlite import ir

from ...config import env_llvm_helpers
from ...errors import ExecutionError
from .runtime_support import emit_truncdfhf2
from .llvm_worker import (HelperDied, HelperProcess, InvalidIRError, TargetSpec, compile_ir,
                          target_machine, text_size)

log = logging.getLogger("xlapy.cpu")

OPT_LEVEL = 3
SMALL_OPT_LEVEL = 2   # for kernels too small to gain from O3 (it costs ~6x the compile time)
HELPER_MIN_BYTES = 100_000   # IR text (about 0.1 s of LLVM) worth sharing with helpers
MAX_HELPERS = 3
LIBRARIES_PER_JIT = 256      # libraries linked into one LLJIT before a new one is made
IN_PROCESS_MODULES = 128     # modules optimized here before LLVM work moves to helpers
#: LLVM time per byte of IR of a module compiled at O0 (code generation only) relative to
#: an optimized one: the generated convolution kernels' modules, compiled with a module's
#: optimized kernels, are shared out after them (docs/performance.md).
UNOPTIMIZED_COST = 0.125


@dataclass(frozen=True)
class HostTarget:
    """What the generated code is specialized for (part of every cache key)."""

    triple: str
    cpu: str
    features: str
    llvm_version: str
    llvmlite_version: str

    def describe(self) -> str:
        return (f"{self.triple} cpu={self.cpu} llvm={self.llvm_version} "
                f"llvmlite={self.llvmlite_version}")


def host_target() -> HostTarget:
    """This machine's triple, CPU name and features (empty where the platform cannot
    report them), with the LLVM and llvmlite versions; initializes LLVM's native target."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    try:
        features = llvm.get_host_cpu_features().flatten()
    except RuntimeError:          # some platforms cannot report features
        features = ""
    return HostTarget(llvm.get_process_triple(), llvm.get_host_cpu_name(), features,
                      ".".join(map(str, llvm.llvm_version_info)), llvmlite.__version__)


@dataclass
class CompiledObject:
    """The result of compiling a module's kernels: object files plus optional text forms."""

    objects: list[bytes]
    symbols: list[str]
    seconds: float                  # wall time of the whole compile
    ir_no_opt: str | None = None
    ir_with_opt: str | None = None
    assembly: str | None = None
    text_seconds: float = 0.0       # printing the llvmlite modules as IR text
    parse_seconds: float = 0.0      # IR text -> LLVM module and verification, all modules
    optimize_seconds: float = 0.0   # the optimization pipeline, summed over modules
    codegen_seconds: float = 0.0    # machine code emission, summed over modules


class _JitInstance:
    """One LLJIT: takes :data:`LIBRARIES_PER_JIT` libraries, then is *retired*; closed
    when it is retired and its last library has been released."""

    def __init__(self, tm: "llvm.TargetMachine") -> None:
        self.lljit = llvm.create_lljit_compiler(tm)
        self.linked = 0
        self.live = 0
        self.retired = False

    def release(self, tracker: "llvm.ResourceTracker", lock: threading.RLock) -> None:
        """Unload one library (its :class:`LoadedCode` died)."""
        with lock:
            tracker.close()
            self.live -= 1
            if self.retired and self.live == 0:
                self.lljit.close()


@dataclass
class LoadedCode:
    """Object code linked into the process; ``address(name)`` of each exported symbol.

    The code stays mapped as long as this object is referenced; when it dies the
    library is unloaded (module docstring).
    """

    library: str
    tracker: object
    addresses: dict[str, int] = field(default_factory=dict)

    def address(self, name: str) -> int:
        try:
            return self.addresses[name]
        except KeyError:
            raise ExecutionError(f"symbol {name!r} is not exported by JIT library "
                                 f"{self.library}") from None


class JitEngine:
    """The host target machine, the O3 pipeline and an LLJIT instance (see module doc)."""

    def __init__(self, helpers: int | None = None) -> None:
        self.host = host_target()
        self.data_layout = ""
        self._tm = self._target_machine()
        self.data_layout = str(self._tm.target_data)
        self._lock = threading.RLock()
        self._jit: _JitInstance | None = None
        self._support: bytes | None = None
        self._library_ids = itertools.count()
        self.compile_count = 0        # LLVM optimize+codegen runs (tests count cache hits)
        self.local_modules = 0        # modules optimized in this process
        self.jit_instances = 0        # LLJITs made (tests check they are recycled)
        self._helpers = [HelperProcess() for _ in range(helper_count() if helpers is None
                                                          else helpers)]
        self._helper_lock = threading.Lock()
        self._recycler = HelperProcess()     # this process's LLVM work once over budget
        self._recycler_lock = threading.Lock()
        atexit.register(self.close_helpers)

    def _target_machine(self) -> "llvm.TargetMachine":
        return target_machine(self.target_spec)

    @property
    def target_spec(self) -> TargetSpec:
        return (self.host.triple, self.host.cpu, self.host.features, self.data_layout)

    def new_module(self, name: str) -> ir.Module:
        """An empty ``ir.Module`` with the host triple and data layout set."""
        module = ir.Module(name=name)
        module.triple = self.host.triple
        module.data_layout = self.data_layout
        return module

    # ----- compiling
    @property
    def parallelism(self) -> int:
        """How many LLVM modules can compile at once: this process and its helpers."""
        return 1 + len(self._helpers)

    def _compile_one(self, text: str | list[str], level: int, keep_text: bool
                     ) -> tuple[bytes, str | None, str | None, tuple[float, float, float]]:
        """:func:`~xlapy.backends.cpu.llvm_worker.compile_ir` for this process's share of
        a compile: here for the first :data:`IN_PROCESS_MODULES` modules, then in a
        recycled helper process (module docstring), here again if it is busy or fails."""
        try:
            if self.local_modules >= IN_PROCESS_MODULES and self._recycler.usable and \
                    self._recycler_lock.acquire(blocking=False):
                try:
                    return self._recycler.compile(text, level, keep_text, self.target_spec)
                except HelperDied as e:
                    log.info("%s; LLVM runs in this process", e)
                finally:
                    self._recycler_lock.release()
            with self._lock:
                self.local_modules += 1
            with deferred_interrupt():
                return compile_ir(text, level, keep_text, self.target_spec)
        except InvalidIRError as e:
            raise ExecutionError(f"generated LLVM IR is invalid: {e}") from e

    def compile(self, modules: Sequence[ir.Module | str | Sequence[ir.Module | str]],
                symbols: Sequence[str], keep_text: bool = False,
                levels: Sequence[int] | None = None, count: bool = True) -> CompiledObject:
        """Optimize ``modules`` for the host and emit one object file per module.

        An entry that is a sequence of modules is linked into one module first.
        ``levels`` gives each module's optimization level (default :data:`OPT_LEVEL`).
        ``symbols`` are the functions the caller will look up after :meth:`load`.
        ``keep_text`` also returns the IR before/after optimization and the assembly
        (modules concatenated). Several modules with at least :data:`HELPER_MIN_BYTES` of
        IR between them are shared out, costliest first, between this process and its
        helper processes (module docstring). ``count=False``: not counted in
        :attr:`compile_count` (which counts HLO modules' compiles), e.g. for the
        convolution kernels the runtime builds.
        """
        start = time.perf_counter()
        texts = [str(m) if isinstance(m, (str, ir.Module)) else [str(x) for x in m]
                 for m in modules]
        text_seconds = time.perf_counter() - start
        levels = list(levels) if levels is not None else [OPT_LEVEL] * len(texts)
        jobs = [(t, lvl, keep_text) for t, lvl in zip(texts, levels)]
        results = self._run_jobs(jobs)
        if count:
            with self._lock:
                self.compile_count += 1
        seconds = time.perf_counter() - start
        objects = [r[0] for r in results]
        log.debug("LLVM compiled %d kernels in %d modules in %.3f s (%d bytes of object code)",
                  len(symbols), len(texts), seconds, sum(map(len, objects)))
        joined = lambda parts: "\n".join(parts) if keep_text else None      # noqa: E731
        return CompiledObject(objects, list(symbols), seconds,
                              joined([t if isinstance(t, str) else "\n".join(t)
                                      for t in texts]),
                              joined([r[1] for r in results]),
                              joined([r[2] for r in results]), text_seconds,
                              *(sum(r[3][k] for r in results) for k in range(3)))

    def _run_jobs(self, jobs: list[tuple[Any, int, bool]]) -> list[tuple]:
        """Every job's result, in order: here and, when worth it, in the helpers."""
        results: list[tuple | None] = [None] * len(jobs)
        helpers = [h for h in self._helpers if h.usable]
        big = sum(text_size(j[0]) for j in jobs) >= HELPER_MIN_BYTES and len(jobs) > 1
        if not (helpers and big and self._helper_lock.acquire(blocking=False)):
            return [self._compile_one(*job) for job in jobs]
        try:
            return _share(jobs, results, helpers, self._compile_one, self.target_spec)
        finally:
            self._helper_lock.release()

    def start_helpers(self) -> None:
        """Start the helper processes now (they take a moment to load llvmlite), e.g.
        while the HLO passes of a module that will need them run."""
        for h in self._helpers:
            if h.usable:
                try:
                    h.start()
                except HelperDied as e:
                    log.info("%s; LLVM runs in this process only", e)

    def close_helpers(self) -> None:
        """End the helper processes (at exit; they are started again when needed)."""
        for h in [*self._helpers, self._recycler]:
            h.close()

    def _jit_instance(self) -> _JitInstance:
        """The LLJIT that takes the next library (a new one after
        :data:`LIBRARIES_PER_JIT`; the caller holds the lock)."""
        jit = self._jit
        if jit is None or jit.linked >= LIBRARIES_PER_JIT:
            if jit is not None:
                jit.retired = True
                if jit.live == 0:
                    jit.lljit.close()
            jit = self._jit = _JitInstance(self._target_machine())
            self.jit_instances += 1
        return jit

    def _support_object(self) -> bytes:
        """The object code of :mod:`~xlapy.backends.cpu.runtime_support`'s functions,
        compiled on first use and linked into every library."""
        if self._support is None:
            module = self.new_module("xlapy_runtime_support")
            emit_truncdfhf2(module)
            # not counted in compile_count: that counts the compiles of HLO modules
            self._support = self._run_jobs([(str(module), OPT_LEVEL, False)])[0][0]
        return self._support

    def load(self, objects: Sequence[bytes], symbols: Sequence[str]) -> LoadedCode:
        """Link object files into the process as one library and look up ``symbols``;
        the library is unloaded when the returned object dies."""
        support = self._support_object()
        with self._lock, deferred_interrupt():
            name = f"xlapy_cpu_{next(self._library_ids)}"
            builder = llvm.JITLibraryBuilder()
            for obj in objects:
                builder.add_object_img(obj)
            builder.add_object_img(support)
            builder.add_current_process()
            symbols = list(dict.fromkeys(symbols))     # kernels may share a symbol
            for s in symbols:
                builder.export_symbol(s)
            jit = self._jit_instance()
            jit.linked += 1
            try:
                tracker = builder.link(jit.lljit, name)
            except RuntimeError as e:
                raise ExecutionError(f"loading generated code failed: {e}") from e
            jit.live += 1
            addresses = {s: tracker[s] for s in symbols}
            loaded = LoadedCode(name, tracker, addresses)
            weakref.finalize(loaded, jit.release, tracker, self._lock).atexit = False
        for s, a in addresses.items():
            if not a:
                raise ExecutionError(f"generated code has no symbol {s!r}")
        return loaded


def helper_count() -> int:
    """Helper processes for LLVM: ``XLAPY_LLVM_HELPERS`` if set, else one less than the
    usable cores (at most :data:`MAX_HELPERS`)."""
    configured = env_llvm_helpers()
    if configured is not None:
        return configured
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(0, min(cores, MAX_HELPERS + 1) - 1)


def _cost(job: tuple[Any, int, bool]) -> float:
    """A job's expected LLVM time, relative: its IR's size, less without optimization."""
    return text_size(job[0]) * (UNOPTIMIZED_COST if job[1] == 0 else 1.0)


def _share(jobs: list[tuple[Any, int, bool]], results: list, helpers: list[HelperProcess],
           local: Callable[..., tuple], target: TargetSpec) -> list[tuple]:
    """Run ``jobs`` (costliest first, :func:`_cost`) in this thread and, through one
    thread each, in the ``helpers``; a job whose helper died is done here. The first
    error is raised once every thread has stopped."""
    queue = collections.deque(sorted(range(len(jobs)), key=lambda k: -_cost(jobs[k])))
    guard = threading.Lock()
    errors: list[BaseException] = []

    def take() -> int | None:
        with guard:
            return queue.popleft() if queue and not errors else None

    def serve(helper: HelperProcess) -> None:
        while (k := take()) is not None:
            try:
                results[k] = helper.compile(*jobs[k], target)
            except HelperDied as e:
                log.info("%s; compiling in this process instead", e)
                with guard:
                    queue.appendleft(k)
                return
            except InvalidIRError as e:
                errors.append(ExecutionError(f"generated LLVM IR is invalid: {e}"))
                return
    threads = [threading.Thread(target=serve, args=(h,), name="xlapy-llvm-helper",
                                daemon=True) for h in helpers]
    for t in threads:
        t.start()
    try:
        while True:
            k = take()
            if k is None:
                for t in threads:
                    t.join()
                k = take()                   # left behind by a helper that died
                if k is None:
                    break
            results[k] = local(*jobs[k])
    except BaseException as e:
        errors.append(e)
        for t in threads:
            t.join()
    if errors:
        first = errors[0]
        errors.clear()          # no cycle through this frame keeps the traceback alive
        try:
            raise first
        finally:
            del first
    return results


class deferred_interrupt:
    """Hold back SIGINT in the main thread for the duration of a block of LLVM calls, then
    deliver it (``KeyboardInterrupt`` from Python's default handler) once the block has
    ended and its LLVM objects are disposed.

    An LLVM call cannot be interrupted anyway (Python runs signal handlers between
    bytecodes, after the call returns); what deferring avoids is the exception arriving
    between two llvmlite calls, where it could strand a half-built object or leave
    llvmlite's process-wide lock taken. Other threads never receive KeyboardInterrupt, and
    a SIGINT handler that is not a Python function (ignored, or the OS default) is left
    alone.
    """

    def __init__(self) -> None:
        self._previous: Callable | None = None
        self._pending: tuple | None = None

    def __enter__(self) -> "deferred_interrupt":
        if threading.current_thread() is not threading.main_thread():
            return self
        previous = signal.getsignal(signal.SIGINT)
        if not callable(previous):
            return self

        def hold(signum: int, frame) -> None:
            self._pending = (signum, frame)
        try:
            signal.signal(signal.SIGINT, hold)
        except ValueError:          # not the main interpreter
            return self
        self._previous = previous
        return self

    def __exit__(self, *exc) -> None:
        previous, self._previous = self._previous, None
        if previous is None:
            return
        signal.signal(signal.SIGINT, previous)
        pending, self._pending = self._pending, None
        if pending is not None:
            log.info("an interrupt during LLVM compilation is delivered now that it ended")
            previous(*pending)


_ENGINE: JitEngine | None = None
_ENGINE_LOCK = threading.Lock()


def engine() -> JitEngine:
    """The process-wide :class:`JitEngine` (created on first use)."""
    global _ENGINE
    if _ENGINE is None:
        with _ENGINE_LOCK:
            if _ENGINE is None:
                _ENGINE = JitEngine()
    return _ENGINE


__all__ = ["HostTarget", "host_target", "CompiledObject", "LoadedCode", "JitEngine", "engine",
           "OPT_LEVEL", "SMALL_OPT_LEVEL", "deferred_interrupt"]
