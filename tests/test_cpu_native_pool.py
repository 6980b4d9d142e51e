"""The CPU pool's native jobs (``backends/cpu/native_pool.py``): kernel ranges and split
OpenBLAS products taken from a shared counter by whichever threads are running, checked
against NumPy, with a worker that comes late, alternating with Python jobs, and switched
off."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from test_cpu_blas import assert_close, make_dot, random, run
from xlapy.backends.cpu import blas, thread_pool
from xlapy.backends.cpu.blas_lib import GemmCall, MatrixArg, NativePieces
from xlapy.backends.cpu.native_pool import SLEEPING
from xlapy.backends.cpu.thread_pool import ThreadPool


_POOLS: dict[int, ThreadPool] = {}


def pool_of(threads: int) -> ThreadPool:
    """One pool per size for the whole file (a pool's workers live as long as the process)."""
    if threads not in _POOLS:
        _POOLS[threads] = ThreadPool(threads)
    return _POOLS[threads]


def stored(x: np.ndarray, trans: bool, pad: int) -> tuple[np.ndarray, int]:
    """``x`` in a flat buffer as BLAS reads it (transposed when ``trans``), with a leading
    dim ``pad`` larger than needed."""
    rows = x.T if trans else x
    ld = rows.shape[1] + pad
    buf = np.zeros(rows.shape[0] * ld, x.dtype)
    buf.reshape(-1, ld)[:, :rows.shape[1]] = rows
    return buf, ld


class ProductCase:
    """A split product's pieces as a native job over padded, possibly transposed operands
    (``stored``), and the float64 product to check C against."""

    def __init__(self, m: int, n: int, k: int, ta: bool, tb: bool, dtype: type,
                 pieces: int) -> None:
        rng = np.random.default_rng(m * 31 + n * 7 + k)
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        self.sa, lda = stored(a, ta, 3)
        self.sb, ldb = stored(b, tb, 2)
        self.m, self.n, self.ldc = m, n, n + 5
        self.c = np.full(m * self.ldc, np.nan, dtype)
        call = GemmCall(np.dtype(dtype), m, n, k, MatrixArg(ta, lda), MatrixArg(tb, ldb),
                        self.ldc)
        self.native = NativePieces(call.split_product(pieces))
        self.want = a.astype(np.float64) @ b
        self.addresses = (self.sa.ctypes.data, self.sb.ctypes.data, self.c.ctypes.data)

    def run_checked(self, pool: ThreadPool, rtol: float, atol: float) -> None:
        """Run the pieces on ``pool`` into a NaN-filled C; its columns equal the product
        and nothing is written past them."""
        self.c[:] = np.nan
        self.native.run(pool, *self.addresses)
        got = self.c.reshape(self.m, self.ldc)
        np.testing.assert_allclose(got[:, :self.n], self.want, rtol=rtol, atol=atol)
        assert np.isnan(got[:, self.n:]).all(), "wrote past the columns of C"


@pytest.mark.parametrize("m,n,k", [(7, 23, 5), (23, 7, 5), (1, 9, 4), (13, 13, 1),
                                   (67, 131, 45)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pieces,threads", [(1, 2), (2, 2), (5, 2), (7, 3)])
def test_native_pieces_compute_the_product(m, n, k, ta, tb, dtype, pieces, threads):
    tol = 1e-5 if dtype == np.float32 else 1e-12
    ProductCase(m, n, k, ta, tb, dtype, pieces).run_checked(pool_of(threads), tol,
                                                            tol * np.sqrt(k))


class _HeldSemaphore:
    """A worker's semaphore whose ``acquire`` waits for ``gate`` first: the worker sleeps
    through jobs until the gate opens (the host giving its core late)."""

    def __init__(self, inner: threading.Semaphore, gate: threading.Event) -> None:
        self.inner, self.gate = inner, gate

    def acquire(self) -> None:
        self.gate.wait(30)
        self.inner.acquire()

    def release(self) -> None:
        self.inner.release()


def test_a_late_worker_leaves_the_parts_to_the_caller_and_joins_later(monkeypatch):
    gate = threading.Event()
    pool = ThreadPool(2)
    monkeypatch.setattr(pool, "_update_spin", lambda: None)
    pool.spin_ticks = 1000                                     # the worker sleeps at once

    def asleep() -> bool:
        deadline = time.monotonic() + 10
        while not pool._words.words[SLEEPING + 8]:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True
    case = ProductCase(67, 131, 45, False, True, np.float32, 6)
    assert asleep()
    pool._start[1] = _HeldSemaphore(pool._start[1], gate)
    case.native.run(pool, *case.addresses)    # wakes the worker once; it then sleeps at the gate
    time.sleep(0.05)
    assert asleep()
    for _ in range(3):                 # the caller alone takes every piece
        case.run_checked(pool, 1e-5, 1e-4)
        assert pool._words.words[SLEEPING + 8] == 1, "the held worker took part"
    gate.set()                         # the worker wakes to finished jobs, then takes part
    for _ in range(50):
        case.run_checked(pool, 1e-5, 1e-4)


def test_native_and_python_jobs_alternate():
    pool = pool_of(2)
    case = ProductCase(40, 50, 30, True, False, np.float64, 4)
    seen = []
    lock = threading.Lock()

    def share(item, state):
        with lock:
            seen.append(item)
    for i in range(200):
        case.run_checked(pool, 1e-12, 1e-10)
        pool.parallel_for([2 * i, 2 * i + 1], share)
    assert sorted(seen) == list(range(400))


def test_switched_off_pool_runs_the_same_ranges(monkeypatch):
    monkeypatch.setenv("XLAPY_CPU_NATIVE_POOL", "0")
    pool = ThreadPool(2)
    assert not pool.native
    case = ProductCase(30, 41, 17, False, False, np.float32, 5)     # 5 parts on 2 threads
    case.run_checked(pool, 1e-5, 1e-4)
    monkeypatch.delenv("XLAPY_CPU_NATIVE_POOL")
    assert ThreadPool(2).native and not ThreadPool(1).native


def test_workers_poll_long_while_quiet_and_briefly_while_preempted(monkeypatch):
    """The idle workers' poll follows the rate of the process's involuntary context
    switches, sampled at most every PREEMPTION_WINDOW_S."""
    pool = ThreadPool(2)
    count = [0]
    monkeypatch.setattr(thread_pool, "_preemptions", lambda: count[0])
    window = 10 * thread_pool.PREEMPTION_WINDOW_S
    rate = thread_pool.BUSY_PREEMPTIONS_PER_S

    def after(switches_per_s: float) -> int:
        now = time.monotonic()
        pool._preempt_at = (now - window, count[0])
        count[0] += int(switches_per_s * window)
        pool._update_spin()
        return pool.spin_ticks
    assert after(rate / 4) == thread_pool.LONG_SPIN_TICKS
    assert after(rate * 4) == thread_pool.SPIN_TICKS
    assert after(0) == thread_pool.LONG_SPIN_TICKS
    # within the window nothing is sampled
    pool._preempt_at = (time.monotonic(), count[0])
    count[0] += 10**6
    pool._update_spin()
    assert pool.spin_ticks == thread_pool.LONG_SPIN_TICKS
    # jobs run in either mode
    for ticks in (thread_pool.SPIN_TICKS, thread_pool.LONG_SPIN_TICKS):
        pool.spin_ticks = ticks
        monkeypatch.setattr(pool, "_update_spin", lambda: None)
        ProductCase(30, 41, 17, False, False, np.float32, 5).run_checked(pool, 1e-5, 1e-4)


def test_split_dot_plan_uses_native_pieces(monkeypatch):
    monkeypatch.setenv("XLAPY_F32_GEMM", "openblas")     # f32: the packed GEMM's by default
    m, k, n = 300, 260, 280
    instr = make_dot((m, k), (k, n), "f32", (), (1,), (), (0,))
    rng = np.random.default_rng(5)
    lhs, rhs = random((m, k), np.float32, rng), random((k, n), np.float32, rng)
    got, ref, thunk = run(instr, lhs, rhs, np.empty((m, n), np.float32))
    assert_close(got, ref, k)
    (plan,) = thunk.plans.values()
    if blas.cores() > 1:
        assert plan.native is not None and plan.native.count == len(plan.pieces)


def _handshake_kernel():
    """``void k(i64* t, i64 begin, i64 end)``: range 1 sets ``t[1] = 1``; range 0 polls
    ``t[1]`` (``t[2]`` polls at most) and writes whether it saw it to ``t[0]``."""
    import ctypes
    from llvmlite import ir
    from xlapy.backends.cpu.jit_engine import engine
    i64 = ir.IntType(64)
    eng = engine()
    module = eng.new_module("pool_handshake")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i64.as_pointer(), i64, i64]),
                     name="pool_handshake")
    t, begin, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    first, second, poll, seen, gave_up, done = (
        fn.append_basic_block(n) for n in ("first", "second", "poll", "seen", "gave_up", "done"))
    b.cbranch(b.icmp_signed("==", begin, ir.Constant(i64, 0)), first, second)
    b.position_at_end(second)
    b.store_atomic(ir.Constant(i64, 1), b.gep(t, [ir.Constant(i64, 1)]), "release", 8)
    b.branch(done)
    b.position_at_end(first)
    limit = b.load(b.gep(t, [ir.Constant(i64, 2)]))
    b.branch(poll)
    b.position_at_end(poll)
    count = b.phi(i64)
    count.add_incoming(ir.Constant(i64, 0), first)
    flag = b.load_atomic(b.gep(t, [ir.Constant(i64, 1)]), "acquire", 8)
    more = b.add(count, ir.Constant(i64, 1))
    check = fn.append_basic_block("check")
    b.cbranch(b.icmp_signed("!=", flag, ir.Constant(i64, 0)), seen, check)
    b.position_at_end(check)
    count.add_incoming(more, check)
    b.cbranch(b.icmp_signed("<", more, limit), poll, gave_up)
    for block, value in ((seen, 1), (gave_up, 0)):
        b.position_at_end(block)
        b.store(ir.Constant(i64, value), t)
        b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    loaded = eng.load(eng.compile([module], ["pool_handshake"], count=False).objects,
                      ["pool_handshake"])
    kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
        loaded.address("pool_handshake"))
    kernel.loaded = loaded
    return kernel


def test_a_polling_worker_joins_native_jobs_while_python_holds_the_gil(monkeypatch):
    """A worker runs native jobs without returning to Python between them, so it joins a
    job at once even while another Python thread keeps the GIL (it used to wait for the
    GIL first: on a virtual machine tens of microseconds, here a whole switch interval)."""
    import sys
    pool = ThreadPool(2)
    monkeypatch.setattr(pool, "_update_spin", lambda: None)
    kernel = _handshake_kernel()
    t = np.zeros(3, np.int64)
    t[2] = 20_000_000                       # polls by the calling thread's range: >= 0.2 s
    pool.spin_ticks = 1 << 40               # the worker keeps polling through the test
    pool.run(kernel, t.ctypes.data, 2, parts=2)     # the worker is now in its poll
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            pass
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.5)
    other = threading.Thread(target=busy)
    other.start()
    try:
        joined = []
        for _ in range(4):
            t[:2] = 0
            pool.run(kernel, t.ctypes.data, 2, parts=2)
            joined.append(int(t[0]))
    finally:
        stop.set()
        other.join()
        sys.setswitchinterval(interval)
        pool.spin_ticks = thread_pool.SPIN_TICKS
        pool.run(kernel, t.ctypes.data, 2, parts=2)     # the worker reads the short poll
    assert sum(joined) >= 3, joined
