"""LLVM through llvmlite: the host target, O3 optimization, object code and loading it.

One :class:`JitEngine` per process (:func:`engine`) owns

- the **host target**: process triple, host CPU name and features (``avx2``,
  ``avx512f``, ...) and a target machine at ``opt=3``;
- :meth:`JitEngine.compile`: ``llvmlite.ir.Module`` s (a compiled HLO module's kernels,
  split into a few modules) are parsed, verified, optimized with the new pass manager
  (``PassBuilder`` at O3 with loop vectorization and SLP vectorization on) and lowered to
  **object code**, in parallel threads (each module in its own LLVM context; llvmlite
  releases the GIL in LLVM calls). The textual IR before and after optimization and the
  assembly are kept when asked (for ``--xla_dump_to``);
- :meth:`JitEngine.load`: object code is linked into the process with ORC's LLJIT
  (``JITLibraryBuilder``; symbols of the running process such as ``libm`` resolve),
  giving :class:`LoadedCode` with the address of every exported kernel. Object code
  is also what the disk cache stores, so a cached module loads without LLVM
  optimization or code generation.

The pipeline is O3 (``SMALL_OPT_LEVEL`` for kernels with few elements) with LLVM's loop
unroller off: on the generated loop nests it multiplied compile time by about 4 with no
measurable speed-up once the loops are vectorized (vector interleaving stays on); the loop
emitter unrolls loops over tiny dimensions itself.

LLJIT reports unresolved symbols as an error at load time (MCJIT would leave a null
call that crashes when run), which is why it is used. Floating-point semantics are
IEEE: no fast-math flags and no FP contraction are added here.
"""
from __future__ import annotations

import concurrent.futures
import itertools
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Sequence

import llvmlite
import llvmlite.binding as llvm
from llvmlite import ir

from ...errors import ExecutionError

log = logging.getLogger("xlapy.cpu")

OPT_LEVEL = 3
SMALL_OPT_LEVEL = 2   # for kernels too small to gain from O3 (it costs ~6x the compile time)


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


@dataclass
class CompiledObject:
    """The result of compiling a module's kernels: object files plus optional text forms."""

    objects: list[bytes]
    symbols: list[str]
    seconds: float
    ir_no_opt: str | None = None
    ir_with_opt: str | None = None
    assembly: str | None = None


@dataclass
class LoadedCode:
    """Object code linked into the process; ``address(name)`` of each exported symbol.

    The code stays mapped as long as this object is referenced.
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

    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        triple = llvm.get_process_triple()
        self._target = llvm.Target.from_triple(triple)
        try:
            features = llvm.get_host_cpu_features().flatten()
        except RuntimeError:          # some platforms cannot report features
            features = ""
        self.host = HostTarget(triple, llvm.get_host_cpu_name(), features,
                               ".".join(map(str, llvm.llvm_version_info)),
                               llvmlite.__version__)
        self._tm = self._target_machine()
        self.data_layout = str(self._tm.target_data)
        self._lock = threading.RLock()
        self._lljit = llvm.create_lljit_compiler(self._target_machine())
        self._library_ids = itertools.count()
        self.compile_count = 0        # LLVM optimize+codegen runs (tests count cache hits)

    def _target_machine(self) -> "llvm.TargetMachine":
        return self._target.create_target_machine(
            cpu=self.host.cpu, features=self.host.features, opt=OPT_LEVEL, reloc="pic",
            codemodel="jitdefault", jit=True)

    def new_module(self, name: str) -> ir.Module:
        """An empty ``ir.Module`` with the host triple and data layout set."""
        module = ir.Module(name=name)
        module.triple = self.host.triple
        module.data_layout = self.data_layout
        return module

    def _optimize(self, mod: "llvm.ModuleRef", tm: "llvm.TargetMachine", level: int) -> None:
        pto = llvm.create_pipeline_tuning_options(speed_level=level)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pto.loop_unrolling = False      # see the module docstring
        pto.loop_interleaving = True
        pb = llvm.create_pass_builder(tm, pto)
        try:
            pb.getModulePassManager().run(mod, pb)
        finally:
            pb.close()
            pto.close()

    def _compile_one(self, text: str, level: int,
                     keep_text: bool) -> tuple[bytes, str | None, str | None]:
        """Parse, verify, optimize and emit one module in its own LLVM context (thread-safe)."""
        context = llvm.create_context()
        tm = self._target_machine()
        try:
            mod = llvm.parse_assembly(text, context=context)
            mod.verify()
        except RuntimeError as e:
            raise ExecutionError(f"generated LLVM IR is invalid: {e}") from e
        mod.triple = self.host.triple
        mod.data_layout = self.data_layout
        self._optimize(mod, tm, level)
        obj = bytes(tm.emit_object(mod))
        if not keep_text:
            return obj, None, None
        return obj, str(mod), tm.emit_assembly(mod)

    def compile(self, modules: Sequence[ir.Module | str], symbols: Sequence[str],
                keep_text: bool = False, levels: Sequence[int] | None = None) -> CompiledObject:
        """Optimize ``modules`` for the host and emit one object file per module.

        ``levels`` gives each module's optimization level (default :data:`OPT_LEVEL`).
        The modules are compiled in parallel (one LLVM context each). ``symbols`` are the
        functions the caller will look up after :meth:`load`. ``keep_text`` also returns
        the IR before/after optimization and the assembly (modules concatenated).
        """
        start = time.perf_counter()
        texts = [str(m) for m in modules]
        levels = list(levels) if levels is not None else [OPT_LEVEL] * len(texts)
        workers = min(len(texts), os.cpu_count() or 1)
        jobs = list(zip(texts, levels))
        if workers > 1:
            with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                results = list(pool.map(lambda j: self._compile_one(j[0], j[1], keep_text), jobs))
        else:
            results = [self._compile_one(t, lvl, keep_text) for t, lvl in jobs]
        with self._lock:
            self.compile_count += 1
        seconds = time.perf_counter() - start
        objects = [r[0] for r in results]
        log.debug("LLVM compiled %d kernels in %d modules in %.3f s (%d bytes of object code)",
                  len(symbols), len(texts), seconds, sum(map(len, objects)))
        joined = lambda parts: "\n".join(parts) if keep_text else None      # noqa: E731
        return CompiledObject(objects, list(symbols), seconds, joined(texts),
                              joined([r[1] for r in results]),
                              joined([r[2] for r in results]))

    def load(self, objects: Sequence[bytes], symbols: Sequence[str]) -> LoadedCode:
        """Link object files into the process as one library and look up ``symbols``."""
        with self._lock:
            name = f"xlapy_cpu_{next(self._library_ids)}"
            builder = llvm.JITLibraryBuilder()
            for obj in objects:
                builder.add_object_img(obj)
            builder.add_current_process()
            for s in symbols:
                builder.export_symbol(s)
            try:
                tracker = builder.link(self._lljit, name)
            except RuntimeError as e:
                raise ExecutionError(f"loading generated code failed: {e}") from e
            addresses = {s: tracker[s] for s in symbols}
        for s, a in addresses.items():
            if not a:
                raise ExecutionError(f"generated code has no symbol {s!r}")
        return LoadedCode(name, tracker, addresses)


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


__all__ = ["HostTarget", "CompiledObject", "LoadedCode", "JitEngine", "engine", "OPT_LEVEL",
           "SMALL_OPT_LEVEL"]
