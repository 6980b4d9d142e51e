"""LLVM IR text -> object code, in this process or in helper processes.

:func:`compile_ir` is the whole per-module job (parse, verify, optimize, emit object
code); ``jit_engine`` runs it in its own process and, for large compiles, also in
:class:`HelperProcess` es. llvmlite makes every LLVM call under one process-wide lock,
so threads cannot compile two modules at once; processes can. A helper is a Python
process running this file as a script: it imports llvmlite only (not xlapy), reads
requests from its stdin and writes results to its stdout, each a length-prefixed pickle,
and exits when its stdin closes. The generated code is the same wherever it is compiled:
the target machine is made from the same triple, CPU, features and options.

This file must import nothing from xlapy (the helper loads it by path).
"""
from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import time
from typing import IO, Any, Sequence

import llvmlite.binding as llvm

OPT_LEVEL = 3
_HEADER = struct.Struct("<Q")
# A helper is ended (and started again on its next job) after this many jobs: llvmlite
# leaks native memory on every optimization (see jit_engine's module docstring).
RECYCLE_JOBS = 256


class InvalidIRError(RuntimeError):
    """LLVM rejected the IR text (the message is LLVM's)."""


TargetSpec = tuple[str, str, str, str]      # triple, CPU name, CPU features, data layout


def target_machine(target: TargetSpec) -> "llvm.TargetMachine":
    """The target machine every module is compiled with (same options everywhere)."""
    triple, cpu, features, _ = target
    return llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=OPT_LEVEL, reloc="pic", codemodel="jitdefault",
        jit=True)


def optimize(mod: "llvm.ModuleRef", tm: "llvm.TargetMachine", level: int) -> None:
    """The new pass manager at ``level`` with loop and SLP vectorization, no unrolling."""
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = False      # see jit_engine's module docstring
    pto.loop_interleaving = True
    pb = mpm = None
    try:
        pb = llvm.create_pass_builder(tm, pto)
        mpm = pb.getModulePassManager()
        mpm.run(mod, pb)
    finally:
        for ref in (mpm, pb, pto):      # users before what they use (see compile_ir)
            if ref is not None:
                ref.close()


def text_size(text: str | Sequence[str]) -> int:
    """Characters of IR in a job (one module's text, or the texts to link into one)."""
    return len(text) if isinstance(text, str) else sum(map(len, text))


def compile_ir(text: str | Sequence[str], level: int, keep_text: bool, target: TargetSpec
               ) -> tuple[bytes, str | None, str | None, tuple[float, float, float]]:
    """Parse, verify, optimize and emit one module in its own LLVM context (``text`` a
    list: those modules, each parsed and verified, linked into the first). Returns the
    object code, the optimized IR and the assembly (when ``keep_text``) and the seconds
    spent parsing (and linking), optimizing and emitting code.

    Every LLVM object made here is disposed before returning, in dependency order (the
    module before its context), also when an exception (a ``KeyboardInterrupt``) leaves
    early: left to their finalizers, a module and its context that end up in a reference
    cycle (a traceback kept by a caller) are finalized by the garbage collector in any
    order, and a module disposed after its context is freed twice (SIGSEGV, on whichever
    later compile happens to run the collector)."""
    t0 = time.perf_counter()
    context = llvm.create_context()
    tm = mod = None
    try:
        tm = target_machine(target)
        texts = [text] if isinstance(text, str) else list(text)
        try:
            mod = llvm.parse_assembly(texts[0], context=context)
            mod.verify()
            for more in texts[1:]:
                other = llvm.parse_assembly(more, context=context)
                try:
                    other.verify()
                    mod.link_in(other)          # other is consumed
                finally:
                    if not other.closed:
                        other.close()
        except RuntimeError as e:
            raise InvalidIRError(str(e)) from e
        mod.triple = target[0]
        mod.data_layout = target[3]
        t1 = time.perf_counter()
        optimize(mod, tm, level)
        t2 = time.perf_counter()
        obj = bytes(tm.emit_object(mod))
        phases = (t1 - t0, t2 - t1, time.perf_counter() - t2)
        if not keep_text:
            return obj, None, None, phases
        return obj, str(mod), tm.emit_assembly(mod), phases
    finally:
        for ref in (mod, tm, context):
            if ref is not None:
                ref.close()


# ----------------------------------------------------------------------------- messages
def _write(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read(stream: IO[bytes]) -> Any:
    """The next message, or None at the end of the stream."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """The helper's loop: ``(text, level, keep_text, target)`` in, ``("ok", result)`` or
    ``("invalid", message)`` out, until the requests end. (Only built-in types cross the
    pipe: the helper cannot import xlapy to unpickle anything else.)"""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    while True:
        request = _read(requests)
        if request is None:
            return
        try:
            _write(replies, ("ok", compile_ir(*request)))
        except InvalidIRError as e:
            _write(replies, ("invalid", str(e)))


# ----------------------------------------------------------------------------- the parent side
class HelperDied(RuntimeError):
    """The helper process ended or could not be talked to (its job is redone locally)."""


class HelperProcess:
    """One helper process (started on first use) and the pipes to it.

    :meth:`compile` sends one job and waits for its result; one job at a time (the
    caller serializes). A helper belongs to the process that started it: after a fork
    the child does not use it. After :data:`RECYCLE_JOBS` jobs the process is ended;
    the next job starts a new one.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._owner = os.getpid()
        self.broken = False
        self.jobs = 0           # jobs done by the current process
        self.starts = 0         # processes started

    def start(self) -> None:
        if self._proc is not None or self.broken:
            return
        self.jobs = 0
        self.starts += 1
        script = os.path.abspath(__file__)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, script], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, close_fds=True)
        except OSError:
            self.broken = True
            raise HelperDied("cannot start an LLVM helper process") from None

    @property
    def usable(self) -> bool:
        return not self.broken and os.getpid() == self._owner

    def compile(self, text: str | Sequence[str], level: int, keep_text: bool,
                target: TargetSpec) -> tuple:
        """:func:`compile_ir` in the helper. Raises :class:`InvalidIRError` as it would,
        :class:`HelperDied` when the helper is gone (and marks it broken)."""
        self.start()
        assert self._proc is not None and self._proc.stdin and self._proc.stdout
        try:
            _write(self._proc.stdin, (text, level, keep_text, target))
            reply = _read(self._proc.stdout)
        except (OSError, ValueError, pickle.PickleError):
            reply = None
        except BaseException:
            # Interrupted between request and reply: the pipe is out of step (the next
            # read would return this job's reply), so this process is ended.
            self.kill()
            raise
        if reply is None:
            self.broken = True
            self.close()
            raise HelperDied("the LLVM helper process ended")
        self.jobs += 1
        if self.jobs >= RECYCLE_JOBS:
            self.close()
        status, value = reply
        if status == "invalid":
            raise InvalidIRError(value)
        return value

    def kill(self) -> None:
        """End the helper at once (its current job is abandoned)."""
        proc, self._proc = self._proc, None
        if proc is None or os.getpid() != self._owner:
            return
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream:
                try:
                    stream.close()
                except OSError:
                    pass

    def close(self) -> None:
        """End the helper (its stdin closes; it exits)."""
        proc, self._proc = self._proc, None
        if proc is None or os.getpid() != self._owner:
            return
        try:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
        finally:
            if proc.stdout:
                proc.stdout.close()


# The helper's command line: load this file by path (not as part of the xlapy package,
# which it must not import) and serve on stdin/stdout. It ignores SIGINT: a Ctrl-C at the
# terminal reaches the whole process group, and what an interrupt means is the parent's
# business (it waits for the job in hand, then raises KeyboardInterrupt).
_BOOT = ("import importlib.util, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
         "spec = importlib.util.spec_from_file_location('xlapy_llvm_worker', sys.argv[1]); "
         "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
         "m.serve(sys.stdin.buffer, sys.stdout.buffer)")

__all__ = ["HelperDied", "HelperProcess", "InvalidIRError", "OPT_LEVEL", "RECYCLE_JOBS",
           "TargetSpec",
           "compile_ir", "optimize", "serve", "target_machine", "text_size"]
