"""The native side of the CPU pool (``thread_pool.ThreadPool``): jobs of native kernels that
the threads share without the GIL, and the words the threads wait on.

A pool job of a native kernel ``void fn(i8** table, i64 begin, i64 end)`` over ``units``
cut into ``parts`` ranges (range ``r`` is ``[units*r/parts, units*(r+1)/parts)``, the
ranges the pool has always used) is described in one block of 64-bit words
(:class:`JobWords`). Every thread that joins it, the calling thread included, runs
``xlapy_pool_work``: it takes ranges from an atomic counter until none are left, so a
thread that the host runs late finds fewer ranges left instead of holding up the job
with a fixed share, and no thread touches Python (or the GIL) between the ranges. The
calling thread returns once ``finished`` counts every range.

Protocol (the words are on their own cache lines):

- ``gen``: the job's number; ``BUSY`` (-1) while the calling thread rewrites the block.
  The caller stores ``BUSY`` (sequentially consistent), waits until ``active`` is 0,
  writes the block, then stores the new number.
- a worker joining job ``g`` increments ``active``, then re-reads ``gen``: if it is not
  ``g`` any more (or ``BUSY``), it leaves at once (decrementing ``active``). Either the
  caller sees the worker in ``active`` or the worker sees ``BUSY``, so the block is never
  rewritten under a worker.
- a worker runs native jobs one after another inside ``xlapy_pool_serve(block, seen,
  out)`` without returning to Python: it polls ``gen`` (``spin`` ticks), runs each native
  job, and returns only when the poll times out (it then sleeps, below), for a Python
  job, or when it finished a job's last range while the calling thread blocks on its
  semaphore (``waiting``: the worker releases it). A worker that went back to Python
  between jobs needed the GIL to join the next one, and got it only once the calling
  thread had started its own ranges: on a virtual machine tens of microseconds late,
  the job's first ranges all on the calling thread.
- ``sleeping[k]``: worker ``k`` sets it (an atomic exchange) before it blocks on its
  semaphore after ``xlapy_pool_serve``'s poll timed out, and re-reads ``gen``; the caller
  reads it after storing ``gen`` and releases the semaphore when it is set. One of them
  sees the other's store, so a worker never sleeps through a job; a release it did not
  need only makes it poll once more.

``xlapy_pool_until(word, value, ticks)`` returns 1 once ``*word == value``, 0 after
``ticks`` time-stamp-counter ticks (``pause`` between reads); ``xlapy_pool_swap(word,
value)`` is an atomic exchange.
"""
from __future__ import annotations

import ctypes
import platform
import threading
from typing import Any, Callable

import numpy as np
from llvmlite import ir

#: ``gen`` while the calling thread rewrites the job block.
BUSY = -1
#: Word offsets in the job block (8 words = one 64-byte line each for the shared counters).
GEN, COUNTER, FINISHED, ACTIVE, KIND, FN, TABLE, UNITS, PARTS = 0, 8, 16, 24, 32, 33, 34, 35, 36
#: ``waiting``: the calling thread blocks on its semaphore for the last ranges (set while
#: it does); ``spin``: how long (ticks) an idle worker polls before it returns to sleep.
WAITING, SPIN = 37, 38
#: ``sleeping[k]`` is word ``SLEEPING + 8 * k``; ``SLEEPING + 8 * k + 1`` is the job number
#: worker ``k``'s last :data:`SERVE` call saw.
SLEEPING = 40
#: :data:`SERVE`'s results: the poll timed out, a Python job came, a native job's last
#: range is done while the calling thread blocks on its semaphore.
SERVE_TIMEOUT, SERVE_PYTHON, SERVE_RELEASE = 0, 1, 2
#: ``KIND``: a native kernel job (``xlapy_pool_work``) or a Python job (``ThreadPool``).
NATIVE, PYTHON = 1, 2

UNTIL, SWAP, WORK, SERVE = ("xlapy_pool_until", "xlapy_pool_swap", "xlapy_pool_work",
                            "xlapy_pool_serve")
#: ``void name(i64* calls, i64 begin, i64 end)``: the row-major ``cblas_?gemm`` calls
#: ``[begin, end)`` of a table of :data:`GEMM_WORDS`-word rows (:data:`GEMM_FIELDS`), for
#: f32 (``s``) and f64 (``d``); a kernel-shaped routine, so a pool job can run it.
GEMM_CALLS = {"s": "xlapy_pool_sgemm_calls", "d": "xlapy_pool_dgemm_calls"}
GEMM_FIELDS = ("fn", "order", "transa", "transb", "m", "n", "k", "alpha", "a", "lda", "b",
               "ldb", "beta", "c", "ldc")
GEMM_WORDS = 16
#: ``void name(i64* table, i64 begin, i64 end)``: OpenBLAS's jobs ``[begin, end)`` of one
#: threaded call (``openblas_threads``): ``table`` holds the call's ``dojob`` function,
#: ``jobdata``, ``jobdata_elsize`` and ``dojob_data``; job ``j`` is
#: ``dojob(j, jobdata + j * elsize, dojob_data)``.
OPENBLAS_JOBS = "xlapy_pool_openblas_jobs"

_I64 = ir.IntType(64)
#: the base class of ctypes function pointers (``CFUNCTYPE(...)(address)``)
_FUNCTION_POINTER: type = ctypes.CFUNCTYPE(None).__mro__[1]
_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


def _emit(module: ir.Module) -> None:
    i64p = _I64.as_pointer()
    i8p = ir.IntType(8).as_pointer()
    kernel_t = ir.FunctionType(ir.VoidType(), [i8p.as_pointer(), _I64, _I64]).as_pointer()
    # x86's spin-wait hint where there is one; the cycle counter is LLVM's portable one
    # (the time-stamp counter on x86)
    pause = (ir.Function(module, ir.FunctionType(ir.VoidType(), []), name="llvm.x86.sse2.pause")
             if platform.machine().lower() in ("x86_64", "amd64") else None)
    rdtsc = ir.Function(module, ir.FunctionType(_I64, []), name="llvm.readcyclecounter")
    c = lambda v: ir.Constant(_I64, v)  # noqa: E731

    until = ir.Function(module, ir.FunctionType(_I64, [i64p, _I64, _I64]), name=UNTIL)
    word, value, ticks = until.args
    entry, poll, wait, found = (until.append_basic_block(n) for n in
                                ("entry", "poll", "wait", "found"))
    b = ir.IRBuilder(entry)
    end = b.add(b.call(rdtsc, []), ticks)
    b.branch(poll)
    b.position_at_end(poll)
    b.cbranch(b.icmp_signed("==", b.load_atomic(word, "acquire", 8), value), found, wait)
    b.position_at_end(wait)
    if pause is not None:
        b.call(pause, [])
    timeout = until.append_basic_block("timeout")
    b.cbranch(b.icmp_signed("<", b.call(rdtsc, []), end), poll, timeout)
    b.position_at_end(timeout)
    b.ret(c(0))
    b.position_at_end(found)
    b.ret(c(1))

    swap = ir.Function(module, ir.FunctionType(_I64, [i64p, _I64]), name=SWAP)
    b = ir.IRBuilder(swap.append_basic_block("entry"))
    b.ret(b.atomic_rmw("xchg", swap.args[0], swap.args[1], "seq_cst"))

    work = ir.Function(module, ir.FunctionType(ir.VoidType(), [i64p, _I64]), name=WORK)
    job, gen = work.args
    entry, start, take, run, leave = (work.append_basic_block(n) for n in
                                      ("entry", "start", "take", "run", "leave"))
    b = ir.IRBuilder(entry)
    at = lambda k: b.gep(job, [c(k)])  # noqa: E731
    b.atomic_rmw("add", at(ACTIVE), c(1), "seq_cst")
    current = b.load_atomic(at(GEN), "seq_cst", 8)
    b.cbranch(b.icmp_signed("==", current, gen), start, leave)
    b.position_at_end(start)
    fn = b.inttoptr(b.load(at(FN)), kernel_t)
    table = b.inttoptr(b.load(at(TABLE)), i8p.as_pointer())
    units, parts = b.load(at(UNITS)), b.load(at(PARTS))
    b.branch(take)
    b.position_at_end(take)
    r = b.atomic_rmw("add", at(COUNTER), c(1), "monotonic")
    b.cbranch(b.icmp_signed("<", r, parts), run, leave)
    b.position_at_end(run)
    begin = b.sdiv(b.mul(units, r), parts)
    end = b.sdiv(b.mul(units, b.add(r, c(1))), parts)
    b.call(fn, [table, begin, end])
    b.atomic_rmw("add", at(FINISHED), c(1), "release")
    b.branch(take)
    b.position_at_end(leave)
    b.atomic_rmw("sub", at(ACTIVE), c(1), "release")
    b.ret_void()
    _emit_serve(module, work, pause, rdtsc)


def _emit_serve(module: ir.Module, work: ir.Function, pause: ir.Function | None,
                rdtsc: ir.Function) -> None:
    """``i64 xlapy_pool_serve(i64* block, i64 seen, i64* out)`` (module docstring): polls
    ``gen`` for a job after ``seen`` for ``block[SPIN]`` ticks at a time and runs native
    jobs until it returns :data:`SERVE_TIMEOUT`, :data:`SERVE_PYTHON` or
    :data:`SERVE_RELEASE`, the last job number it saw in ``*out``."""
    c = lambda v: ir.Constant(_I64, v)  # noqa: E731
    fn = ir.Function(module, ir.FunctionType(_I64, [_I64.as_pointer(), _I64,
                                                    _I64.as_pointer()]), name=SERVE)
    job, first_seen, out = fn.args
    entry, head, poll, wait, timeout, found, native, python, release = (
        fn.append_basic_block(n) for n in ("entry", "head", "poll", "wait", "timeout",
                                           "found", "native", "python", "release"))
    b = ir.IRBuilder(entry)
    at = lambda k: b.gep(job, [c(k)])  # noqa: E731
    b.branch(head)
    b.position_at_end(head)
    seen = b.phi(_I64)
    seen.add_incoming(first_seen, entry)
    end = b.add(b.call(rdtsc, []), b.load_atomic(at(SPIN), "monotonic", 8))
    b.branch(poll)
    b.position_at_end(poll)
    g = b.load_atomic(at(GEN), "acquire", 8)
    hit = b.and_(b.icmp_signed("!=", g, seen), b.icmp_signed("!=", g, c(BUSY)))
    b.cbranch(hit, found, wait)
    b.position_at_end(wait)
    if pause is not None:
        b.call(pause, [])
    b.cbranch(b.icmp_signed("<", b.call(rdtsc, []), end), poll, timeout)
    b.position_at_end(timeout)
    b.store(seen, out)
    b.ret(c(SERVE_TIMEOUT))
    b.position_at_end(found)
    b.store(g, out)
    b.cbranch(b.icmp_signed("==", b.load(at(KIND)), c(NATIVE)), native, python)
    b.position_at_end(python)
    b.ret(c(SERVE_PYTHON))
    b.position_at_end(native)
    b.call(work, [job, g])
    b.fence("seq_cst")     # the last range's count before the caller's ``waiting`` is read
    last = b.and_(b.icmp_signed("==", b.load_atomic(at(FINISHED), "seq_cst", 8),
                                b.load(at(PARTS))),
                  b.icmp_signed("==", b.load_atomic(at(GEN), "seq_cst", 8), g))
    blocked = b.icmp_signed("!=", b.load_atomic(at(WAITING), "seq_cst", 8), c(0))
    seen.add_incoming(g, native)
    b.cbranch(b.and_(last, blocked), release, head)
    b.position_at_end(release)
    b.ret(c(SERVE_RELEASE))


def _kernel_loop(module: ir.Module, name: str) -> tuple[ir.IRBuilder, ir.Value, ir.Value]:
    """A kernel-shaped routine ``void name(i64* table, i64 begin, i64 end)`` looping over
    ``[begin, end)``: the builder positioned in the loop body, ``table`` and the index;
    the body's last block must branch back with :func:`_next`."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_I64.as_pointer(), _I64, _I64]),
                     name=name)
    table, begin, end = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    head, body, done = (fn.append_basic_block(n) for n in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
    b.position_at_end(head)
    i = b.phi(_I64)
    i.add_incoming(begin, fn.entry_basic_block)
    b.cbranch(b.icmp_signed("<", i, end), body, done)
    b.position_at_end(body)
    return b, table, i


def _next(b: ir.IRBuilder, i: ir.Value) -> None:
    """Close :func:`_kernel_loop`'s body: the next index."""
    i.add_incoming(b.add(i, ir.Constant(_I64, 1)), b.block)
    b.branch(i.parent)


def _emit_openblas_jobs(module: ir.Module) -> None:
    """:data:`OPENBLAS_JOBS`' routine."""
    i32, i8p = ir.IntType(32), ir.IntType(8).as_pointer()
    dojob_t = ir.FunctionType(ir.VoidType(), [i32, i8p, i32]).as_pointer()
    b, table, i = _kernel_loop(module, OPENBLAS_JOBS)
    word = [b.load(b.gep(table, [ir.Constant(_I64, k)])) for k in range(4)]
    data = b.inttoptr(b.add(word[1], b.mul(i, word[2])), i8p)
    b.call(b.inttoptr(word[0], dojob_t), [b.trunc(i, i32), data, b.trunc(word[3], i32)])
    _next(b, i)


def _emit_gemm_calls(module: ir.Module, name: str, real: ir.Type) -> None:
    """:data:`GEMM_CALLS`' routine for ``real`` (float: alpha and beta are f32 bits in the
    low half of their words; double: f64 bits)."""
    i32 = ir.IntType(32)
    i8p = ir.IntType(8).as_pointer()
    gemm_t = ir.FunctionType(ir.VoidType(), [i32] * 6 + [real, i8p, i32, i8p, i32, real,
                                                          i8p, i32]).as_pointer()
    b, table, i = _kernel_loop(module, name)
    row = b.gep(table, [b.mul(i, ir.Constant(_I64, GEMM_WORDS))])
    word = {f: b.load(b.gep(row, [ir.Constant(_I64, k)])) for k, f in enumerate(GEMM_FIELDS)}

    def scalar(f: str) -> ir.Value:
        if isinstance(real, ir.FloatType):
            return b.bitcast(b.trunc(word[f], i32), real)
        return b.bitcast(word[f], real)
    args = [b.trunc(word[f], i32) for f in ("order", "transa", "transb", "m", "n", "k")]
    args += [scalar("alpha"), b.inttoptr(word["a"], i8p), b.trunc(word["lda"], i32),
             b.inttoptr(word["b"], i8p), b.trunc(word["ldb"], i32), scalar("beta"),
             b.inttoptr(word["c"], i8p), b.trunc(word["ldc"], i32)]
    b.call(b.inttoptr(word["fn"], gemm_t), args)
    _next(b, i)


def _load() -> dict[str, Any]:
    """The routines, compiled and loaded once per process."""
    with _LOCK:
        if not _LOADED:
            from .jit_engine import SMALL_OPT_LEVEL, deferred_interrupt, engine
            from .llvm_worker import compile_ir
            eng = engine()
            module = eng.new_module("xlapy_native_pool")
            _emit(module)
            _emit_gemm_calls(module, GEMM_CALLS["s"], ir.FloatType())
            _emit_gemm_calls(module, GEMM_CALLS["d"], ir.DoubleType())
            _emit_openblas_jobs(module)
            names = [UNTIL, SWAP, WORK, SERVE, OPENBLAS_JOBS, *GEMM_CALLS.values()]
            with deferred_interrupt():
                obj = compile_ir(str(module), SMALL_OPT_LEVEL, False, eng.target_spec)[0]
            loaded = eng.load([obj], names)
            p, i = ctypes.c_void_p, ctypes.c_int64
            _LOADED.update(
                code=loaded,
                until=ctypes.CFUNCTYPE(i, p, i, i)(loaded.address(UNTIL)),
                swap=ctypes.CFUNCTYPE(i, p, i)(loaded.address(SWAP)),
                work=ctypes.CFUNCTYPE(None, p, i)(loaded.address(WORK)),
                serve=ctypes.CFUNCTYPE(i, p, i, p)(loaded.address(SERVE)),
                **{name: ctypes.CFUNCTYPE(None, p, i, i)(loaded.address(name))
                   for name in (OPENBLAS_JOBS, *GEMM_CALLS.values())})
        return _LOADED


class JobWords:
    """One pool's job block (module docstring) and the native routines that use it."""

    def __init__(self, workers: int) -> None:
        lib = _load()
        self.until: Callable[[int, int, int], int] = lib["until"]
        self.swap: Callable[[int, int], int] = lib["swap"]
        self.work: Callable[[int, int], None] = lib["work"]
        self.serve: Callable[[int, int, int], int] = lib["serve"]
        size = SLEEPING + 8 * max(1, workers) + 8
        raw = np.zeros(size + 8, np.int64)             # 64-byte aligned view of ``size`` words
        skip = (-raw.ctypes.data % 64) // 8
        self.words = raw[skip:skip + size]
        self.address = self.words.ctypes.data

    def addr(self, word: int) -> int:
        """The address of word ``word`` of the block."""
        return self.address + 8 * word


def gemm_calls(kind: str) -> Any:
    """The ctypes function of :data:`GEMM_CALLS` ``[kind]`` (``"s"`` or ``"d"``)."""
    return _load()[GEMM_CALLS[kind]]


def openblas_jobs() -> Any:
    """The ctypes function of :data:`OPENBLAS_JOBS`."""
    return _load()[OPENBLAS_JOBS]


def native_address(fn: Any) -> int | None:
    """The entry address of a ctypes function pointer, or None for anything else (a
    Python callable)."""
    if isinstance(fn, _FUNCTION_POINTER):
        return ctypes.cast(fn, ctypes.c_void_p).value  # type: ignore[arg-type]
    return None


__all__ = ["JobWords", "native_address", "gemm_calls", "openblas_jobs", "GEMM_CALLS",
           "GEMM_FIELDS", "OPENBLAS_JOBS",
           "GEMM_WORDS", "BUSY", "NATIVE", "PYTHON", "GEN", "COUNTER",
           "FINISHED", "ACTIVE", "KIND", "FN", "TABLE", "UNITS", "PARTS", "SLEEPING", "WAITING",
           "SPIN", "SERVE_TIMEOUT", "SERVE_PYTHON", "SERVE_RELEASE"]
