"""When the CPU pool's worker joins a native job: the time from a job's first unit to its
second one, and the whole call, for units of a fixed length and gaps between the jobs.

A generated kernel stamps the time-stamp counter when each unit starts and then spins for
the unit's length, so a job of two units on two threads starts its second unit as soon as
the worker takes it; a worker that joins late leaves both units to the calling thread (the
second then starts one unit length after the first). Each cell is the median over
``--repeat`` jobs; ``--gap`` is a pause between jobs (the worker polls for a while, then
sleeps).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/pool_latency.py
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
from typing import Any, Sequence

import numpy as np

from machine import check_openblas_env, machine_header

#: ``t[LENGTH]`` holds a unit's length in ticks; ``t[i]`` the start of unit ``i``.
LENGTH = 63


def stamping_kernel() -> tuple[Any, Any]:
    """``void k(i64* t, i64 begin, i64 end)`` (each unit stamps ``t[i]`` and spins for
    ``t[LENGTH]`` ticks) and ``i64 now()``, compiled once; with the loaded code."""
    from llvmlite import ir

    from xlapy.backends.cpu.jit_engine import engine
    i64 = ir.IntType(64)
    eng = engine()
    module = eng.new_module("pool_latency")
    rdtsc = ir.Function(module, ir.FunctionType(i64, []), name="llvm.readcyclecounter")
    now = ir.Function(module, ir.FunctionType(i64, []), name="pool_latency_now")
    b = ir.IRBuilder(now.append_basic_block("entry"))
    b.ret(b.call(rdtsc, []))
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i64.as_pointer(), i64, i64]),
                     name="pool_latency_units")
    t, begin, end = fn.args
    entry, head, unit, spin, done = (fn.append_basic_block(n) for n in
                                     ("entry", "head", "unit", "spin", "done"))
    b = ir.IRBuilder(entry)
    length = b.load(b.gep(t, [ir.Constant(i64, LENGTH)]))
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(i64)
    i.add_incoming(begin, entry)
    b.cbranch(b.icmp_signed("<", i, end), unit, done)
    b.position_at_end(unit)
    start = b.call(rdtsc, [])
    b.store(start, b.gep(t, [i]))
    stop = b.add(start, length)
    b.branch(spin)
    b.position_at_end(spin)
    more = b.icmp_signed("<", b.call(rdtsc, []), stop)
    i.add_incoming(b.add(i, ir.Constant(i64, 1)), spin)
    b.cbranch(more, spin, head)
    b.position_at_end(done)
    b.ret_void()
    names = ["pool_latency_units", "pool_latency_now"]
    code = eng.load(eng.compile([module], names, count=False).objects, names)
    kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
        code.address(names[0]))
    return kernel, (ctypes.CFUNCTYPE(ctypes.c_int64)(code.address(names[1])), code)


def ticks_per_us(now: Any) -> float:
    """The time-stamp counter's rate, over 50 ms."""
    t0, c0 = time.perf_counter(), now()
    time.sleep(0.05)
    return (now() - c0) / ((time.perf_counter() - t0) * 1e6)


def measure(pool: Any, kernel: Any, t: np.ndarray, rate: float, unit_us: float,
            gap_s: float, repeat: int) -> tuple[float, float]:
    """(median start of the second unit after the first, median call), microseconds."""
    t[LENGTH] = int(unit_us * rate)
    second, calls = [], []
    for _ in range(repeat):
        if gap_s:
            time.sleep(gap_s)
        t[:2] = 0
        t0 = time.perf_counter()
        pool.run(kernel, t.ctypes.data, 2, parts=2)
        calls.append((time.perf_counter() - t0) * 1e6)
        second.append(abs(int(t[1]) - int(t[0])) / rate)
    return statistics.median(second), statistics.median(calls)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=400, help="jobs per cell")
    p.add_argument("--smoke", action="store_true", help="a few jobs, to check the script")
    args = p.parse_args(argv)
    check_openblas_env(allow=args.smoke)
    from xlapy.backends.cpu.thread_pool import shared_pool
    pool = shared_pool()
    h = machine_header(measure_busy=False)
    print(f"# {h['cpu']} (LLVM: {h['llvm_host_cpu']}), {h['cores']} cores; pool of "
          f"{pool.size} threads; medians of {args.repeat} jobs")
    if pool.size < 2:
        print("one core: the pool has no worker to measure")
        return 0
    kernel, (now, _code) = stamping_kernel()
    rate = ticks_per_us(now)
    t = np.zeros(LENGTH + 1, np.int64)
    repeat = 5 if args.smoke else args.repeat
    print("| unit | gap between jobs | second unit starts after | call |")
    print("|---|---|---|---|")
    for unit_us in (5, 20, 100):
        for gap_s in (0.0, 1e-3, 2e-2):
            if gap_s and unit_us != 20:
                continue
            second, call = measure(pool, kernel, t, rate, unit_us, gap_s,
                                   repeat if not gap_s else max(5, repeat // 8))
            print(f"| {unit_us} us | {gap_s * 1e3:g} ms | {second:.1f} us | {call:.1f} us |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
