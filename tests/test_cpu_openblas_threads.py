"""OpenBLAS's threaded products on the CPU pool (``backends/cpu/openblas_threads.py``): the
callback runs every job of a call at once (the jobs wait on each other), on the pool or on
threads of its own where the pool cannot give each job a thread; products against the
interpreter with the switch on and off, from busy pools, several Python threads and a
forked child."""
from __future__ import annotations

import ctypes
import multiprocessing
import threading
import time

import numpy as np
import pytest

from test_cpu_blas import assert_close, make_dot, random, run
from xlapy.backends.cpu import blas, openblas_threads
from xlapy.backends.cpu.native_pool import openblas_jobs
from xlapy.backends.cpu.thread_pool import ThreadPool, shared_pool

pytestmark = pytest.mark.skipif(not openblas_threads.supported(shared_pool()),
                                reason="needs 2 cores and OpenBLAS's threads callback")


@pytest.fixture(autouse=True)
def _switched_on(monkeypatch):
    monkeypatch.setenv("XLAPY_CPU_OPENBLAS_THREADS", "1")
    # the pool's own threads (an earlier test in this process may have handed its jobs to
    # PyTorch's OpenMP team, where OpenBLAS's threads are never used)
    monkeypatch.setattr(shared_pool(), "openmp", None)


_DOJOB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_int)


def _product(m=300, k=270, n=310, dtype="f32", lc=(1,), rc=(0,), seed=0):
    ls = (m, k) if lc == (1,) else (k, m)
    rs = (k, n) if rc == (0,) else (n, k)
    instr = make_dot(ls, rs, dtype, (), lc, (), rc)
    rng = np.random.default_rng(seed)
    np_dtype = np.float32 if dtype == "f32" else np.float64
    return instr, random(ls, np_dtype, rng), random(rs, np_dtype, rng), k


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("lc,rc", [((1,), (0,)), ((0,), (1,)), ((0,), (0,)), ((1,), (1,))])
def test_threaded_product_matches_the_interpreter(dtype, lc, rc):
    instr, lhs, rhs, k = _product(dtype=dtype, lc=lc, rc=rc)
    before = openblas_threads.callbacks()
    got, ref, thunk = run(instr, lhs, rhs)
    assert_close(got, ref, k)
    assert openblas_threads.callbacks() > before        # OpenBLAS threaded the call
    assert "parallel=" in next(iter(thunk.plans.values())).summary()


@pytest.mark.parametrize("switch", ["0", None])
def test_off_and_by_default_runs_pieces_with_the_same_result(monkeypatch, switch):
    instr, lhs, rhs, k = _product(seed=4)
    on, ref, _ = run(instr, lhs, rhs)
    if switch is None:
        monkeypatch.delenv("XLAPY_CPU_OPENBLAS_THREADS")
    else:
        monkeypatch.setenv("XLAPY_CPU_OPENBLAS_THREADS", switch)
    before = openblas_threads.callbacks()
    off, _, _ = run(instr, lhs, rhs)
    assert openblas_threads.callbacks() == before
    assert_close(on, ref, k)
    assert_close(off, ref, k)


def test_products_from_inside_a_busy_pool_start_their_own_threads():
    """A threaded product started inside a pool job finds the pool busy: the callback runs
    the call's jobs on threads of its own (running them one after another would hang)."""
    instr, lhs, rhs, k = _product(seed=5)
    ref = run(instr, lhs, rhs)[1]
    thunk = blas.make_dot_thunk(instr)
    outs = [np.full(ref.shape, np.nan, np.float32) for _ in range(2)]

    def work(i: int, state: dict) -> None:
        thunk([lhs, rhs], outs[i])
    before = openblas_threads.callbacks()
    shared_pool().parallel_for([0, 1], work)
    assert openblas_threads.callbacks() >= before + 2
    for out in outs:
        assert_close(out, ref, k)


def test_products_from_several_python_threads():
    instr, lhs, rhs, k = _product(seed=6)
    ref = run(instr, lhs, rhs)[1]
    thunk = blas.make_dot_thunk(instr)
    errors: list[BaseException] = []

    def loop() -> None:
        out = np.empty(ref.shape, np.float32)
        try:
            for _ in range(10):
                out[...] = np.nan
                thunk([lhs, rhs], out)
                assert_close(out, ref, k)
        except BaseException as e:      # noqa: BLE001 - reported by the main thread
            errors.append(e)
    threads = [threading.Thread(target=loop) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[0]
    # the thread count is back at one once no thread is inside a threaded call
    from xlapy.backends.cpu.blas_lib import library
    assert library().num_threads() == 1


@pytest.mark.parametrize("numjobs", [1, 2, 3, 5])
def test_every_job_runs_once_and_all_run_together(numjobs):
    """The level-3 pattern: each job waits (with a deadline) until every job has started;
    run one after another they would time out. Jobs beyond the pool's threads get threads
    of their own."""
    started = np.zeros(numjobs, np.int64)
    seen: list[tuple[int, int, int]] = []
    lock = threading.Lock()
    elsize = 24

    def dojob(j: int, data: int, extra: int) -> None:
        with lock:
            started[j] += 1
            seen.append((j, data, extra))
        deadline = time.monotonic() + 20
        while started.min() == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
    fn = _DOJOB(dojob)
    base = 1 << 20
    openblas_threads._run_jobs(ctypes.cast(fn, ctypes.c_void_p).value, numjobs, elsize, base,
                               77)
    assert started.tolist() == [1] * numjobs
    assert sorted(seen) == [(j, base + j * elsize, 77) for j in range(numjobs)]


def test_run_together_refuses_more_jobs_than_threads():
    pool = ThreadPool(2)
    table = np.zeros(4, np.int64)
    assert not pool.run_together(openblas_jobs(), table.ctypes.data, 3)
    assert not pool.run_together(lambda *a: None, table.ctypes.data, 2)   # not native


def _child_product(queue) -> None:
    instr, lhs, rhs, _ = _product(seed=8)
    out = np.empty((300, 310), np.float32)
    blas.make_dot_thunk(instr)([lhs, rhs], out)
    queue.put(out)


def test_forked_child_runs_threaded_products():
    """The pool's workers do not survive fork(): the child's threaded products run on
    threads the callback starts (a pool job would wait for workers that are gone)."""
    instr, lhs, rhs, k = _product(seed=8)
    _, ref, _ = run(instr, lhs, rhs)           # the parent's pool and callback are in use
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_product, args=(queue,))
    proc.start()
    try:
        got = queue.get(timeout=120)
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
    assert proc.exitcode == 0
    assert_close(got, ref, k)
