"""Native drivers for runs of kernel calls: ``while`` loops whose trips are kernel calls
only, and consecutive kernels of a plan.

When buffer assignment keeps a loop's state in place, a trip of a loop whose condition
and body are emitted kernels is nothing but those kernel calls and a read of the
predicate; run from Python, each call costs more than a small kernel itself. The driver
is one function, compiled once per process, that runs such trips from a descriptor::

    struct Call { void (*fn)(i8**, i64, i64); i8** table; i64 units; };
    struct Loop { Call* cond; i64 ncond; Call* body; i64 nbody; i8* pred; i64 trips; };
    i64 xlapy_while_runner(Loop*);  // 1: the predicate was false (loop done);
                                    // 0: ``trips`` trips ran and the loop goes on

It returns to Python after :data:`TRIPS_PER_CALL` trips, so an interrupt (Ctrl-C) is
still seen while a long loop runs. ``WhileThunk`` uses it when the loop copies nothing
per trip and every kernel runs on the calling thread (``thunks.py``). The same library
exports ``void xlapy_run_calls(Call*, i64 n)``: a :class:`~.thunks.Plan` runs each run of
two or more consecutive kernels on the calling thread as one such call; and
``void xlapy_team_shares(TeamShares*)`` (:class:`TeamShares`), which the threads of an
OpenMP team run for a parallel kernel's shares (``thread_pool.OpenMPRuntime``), so that no
team thread takes the GIL.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable, Sequence

from llvmlite import ir

RUNNER_NAME = "xlapy_while_runner"
CALLS_NAME = "xlapy_run_calls"
SHARES_NAME = "xlapy_team_shares"
TRIPS_PER_CALL = 256


class Call(ctypes.Structure):
    """One kernel call: ``fn(table, 0, units)``."""

    _fields_ = [("fn", ctypes.c_void_p), ("table", ctypes.c_void_p), ("units", ctypes.c_int64)]


class LoopDescriptor(ctypes.Structure):
    """The kernel calls of a loop's condition and body, and where its predicate is."""

    _fields_ = [("cond", ctypes.c_void_p), ("ncond", ctypes.c_int64),
                ("body", ctypes.c_void_p), ("nbody", ctypes.c_int64),
                ("pred", ctypes.c_void_p), ("trips", ctypes.c_int64)]


class TeamShares(ctypes.Structure):
    """One kernel's shares for an OpenMP team (``thread_pool.OpenMPRuntime``): share ``i``
    is ``fn(table, bounds[i], bounds[i + 1])``; thread ``k`` of ``t`` (``thread_num()``,
    ``num_threads()``) runs shares ``k, k + t, ...``; thread 0 then writes
    ``clock(CLOCK_MONOTONIC)`` into ``sec``/``nsec`` (when its own shares were done)."""

    _fields_ = [("fn", ctypes.c_void_p), ("table", ctypes.c_void_p), ("n", ctypes.c_int64),
                ("bounds", ctypes.c_void_p), ("thread_num", ctypes.c_void_p),
                ("num_threads", ctypes.c_void_p), ("clock", ctypes.c_void_p),
                ("sec", ctypes.c_int64), ("nsec", ctypes.c_int64)]


_CLOCK_MONOTONIC = 1


def _shares_module(module: ir.Module) -> None:
    """``void xlapy_team_shares(TeamShares*)``: the function every team thread runs."""
    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    i8p = i8.as_pointer()
    kernel = ir.FunctionType(ir.VoidType(), [i8p, i64, i64]).as_pointer()
    query = ir.FunctionType(i32, []).as_pointer()
    clock = ir.FunctionType(i32, [i32, i64.as_pointer()]).as_pointer()
    desc_t = ir.LiteralStructType([kernel, i8p, i64, i64.as_pointer(), query, query, clock,
                                   i64, i64])
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i8p]), SHARES_NAME)
    entry, check, body, done, stamp, out = (fn.append_basic_block(x) for x in (
        "entry", "check", "body", "done", "stamp", "out"))
    b = ir.IRBuilder(entry)
    desc = b.bitcast(fn.args[0], desc_t.as_pointer())

    def field(k: int) -> ir.Value:
        return b.gep(desc, [ir.Constant(i32, 0), ir.Constant(i32, k)])
    kern, table, n, bounds = (b.load(field(k)) for k in range(4))
    k = b.sext(b.call(b.load(field(4)), []), i64)
    t = b.sext(b.call(b.load(field(5)), []), i64)
    t = b.select(b.icmp_signed("<", t, ir.Constant(i64, 1)), ir.Constant(i64, 1), t)
    b.branch(check)
    b.position_at_end(check)
    i = b.phi(i64)
    i.add_incoming(k, entry)
    b.cbranch(b.icmp_signed("<", i, n), body, done)
    b.position_at_end(body)
    lo = b.load(b.gep(bounds, [i]))
    hi = b.load(b.gep(bounds, [b.add(i, ir.Constant(i64, 1))]))
    b.call(kern, [table, lo, hi])
    i.add_incoming(b.add(i, t), body)
    b.branch(check)
    b.position_at_end(done)
    b.cbranch(b.icmp_signed("==", k, ir.Constant(i64, 0)), stamp, out)
    b.position_at_end(stamp)
    b.call(b.load(field(6)), [ir.Constant(i32, _CLOCK_MONOTONIC), field(7)])
    b.branch(out)
    b.position_at_end(out)
    b.ret_void()


def _runner_module(module: ir.Module) -> None:
    i8, i64 = ir.IntType(8), ir.IntType(64)
    i8p = i8.as_pointer()
    kernel = ir.FunctionType(ir.VoidType(), [i8p, i64, i64]).as_pointer()
    call_t = ir.LiteralStructType([kernel, i8p, i64])
    desc_t = ir.LiteralStructType([call_t.as_pointer(), i64, call_t.as_pointer(), i64, i8p,
                                   i64])
    zero32 = ir.Constant(ir.IntType(32), 0)

    run_calls = ir.Function(module, ir.FunctionType(ir.VoidType(), [call_t.as_pointer(), i64]),
                            CALLS_NAME)
    calls, n = run_calls.args
    entry, check, body, done = (run_calls.append_basic_block(x)
                                for x in ("entry", "check", "body", "done"))
    b = ir.IRBuilder(entry)
    b.branch(check)
    b.position_at_end(check)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), entry)
    b.cbranch(b.icmp_signed("<", i, n), body, done)
    b.position_at_end(body)
    c = b.gep(calls, [i])
    fn = b.load(b.gep(c, [zero32, zero32]))
    table = b.load(b.gep(c, [zero32, ir.Constant(ir.IntType(32), 1)]))
    units = b.load(b.gep(c, [zero32, ir.Constant(ir.IntType(32), 2)]))
    b.call(fn, [table, ir.Constant(i64, 0), units])
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, body)
    b.branch(check)
    b.position_at_end(done)
    b.ret_void()

    runner = ir.Function(module, ir.FunctionType(i64, [desc_t.as_pointer()]), RUNNER_NAME)
    (desc,) = runner.args
    entry, head, step, trip, more, finished = (runner.append_basic_block(x) for x in (
        "entry", "head", "step", "trip", "more", "finished"))
    b = ir.IRBuilder(entry)
    field = [b.load(b.gep(desc, [zero32, ir.Constant(ir.IntType(32), k)])) for k in range(6)]
    cond, ncond, bodies, nbody, pred, trips = field
    b.branch(head)
    b.position_at_end(head)
    k = b.phi(i64)
    k.add_incoming(ir.Constant(i64, 0), entry)
    b.cbranch(b.icmp_signed("<", k, trips), step, more)
    b.position_at_end(step)
    b.call(run_calls, [cond, ncond])
    b.cbranch(b.icmp_unsigned("==", b.load(pred), ir.Constant(i8, 0)), finished, trip)
    b.position_at_end(trip)
    b.call(run_calls, [bodies, nbody])
    k.add_incoming(b.add(k, ir.Constant(i64, 1)), trip)
    b.branch(head)
    b.position_at_end(more)
    b.ret(ir.Constant(i64, 0))
    b.position_at_end(finished)
    b.ret(ir.Constant(i64, 1))


_LOCK = threading.Lock()
_LOADED: list[Any] = []    # [loaded code, loop driver, call runner, team shares] once compiled


def _load() -> list[Any]:
    """Compile and load the drivers the first time one is asked for (kept for the life of
    the process)."""
    with _LOCK:
        if not _LOADED:
            from .jit_engine import SMALL_OPT_LEVEL, deferred_interrupt, engine
            from .llvm_worker import compile_ir
            eng = engine()
            module = eng.new_module("xlapy_native_drivers")
            _runner_module(module)
            _shares_module(module)
            # compiled here, not by ``eng.compile``: its counters describe HLO modules
            with deferred_interrupt():
                obj = compile_ir(str(module), SMALL_OPT_LEVEL, False, eng.target_spec)[0]
            loaded = eng.load([obj], [RUNNER_NAME, CALLS_NAME, SHARES_NAME])
            loop = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(loaded.address(RUNNER_NAME))
            calls = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(
                loaded.address(CALLS_NAME))
            _LOADED.extend([loaded, loop, calls, loaded.address(SHARES_NAME)])
        return _LOADED


def runner() -> Callable[[int], int]:
    """The loop driver: ``runner()(address of a LoopDescriptor)``."""
    return _load()[1]


def call_runner() -> Callable[[int, int], None]:
    """``call_runner()(address of a Call array, n)`` runs the ``n`` calls in order."""
    return _load()[2]


def team_shares() -> int:
    """The address of ``void xlapy_team_shares(TeamShares*)`` (see :class:`TeamShares`),
    the function an OpenMP team runs for a kernel's shares without Python."""
    return _load()[3]


def calls_array(calls: Sequence[tuple[int, int, int]]) -> Any:
    """A ctypes array of :class:`Call` for ``(function, table, units)`` triples."""
    return (Call * max(1, len(calls)))(*[Call(*c) for c in calls])


def descriptor(cond: Sequence[tuple[int, int, int]], body: Sequence[tuple[int, int, int]]
               ) -> tuple[LoopDescriptor, list]:
    """A descriptor of the ``(function, table, units)`` calls of a condition and a body
    (``pred`` is set before each run) and the arrays it points into (keep them alive)."""
    cond_calls, body_calls = calls_array(cond), calls_array(body)
    desc = LoopDescriptor(ctypes.addressof(cond_calls), len(cond), ctypes.addressof(body_calls),
                          len(body), 0, TRIPS_PER_CALL)
    return desc, [cond_calls, body_calls]


__all__ = ["CALLS_NAME", "RUNNER_NAME", "SHARES_NAME", "TRIPS_PER_CALL", "Call",
           "LoopDescriptor", "TeamShares", "runner", "call_runner", "team_shares",
           "calls_array", "descriptor"]
