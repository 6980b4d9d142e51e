"""The CPU pool's shares on PyTorch's OpenMP threads (``thread_pool.OpenMPRuntime``):
every share runs once, on the runtime's threads, errors are raised after every share is
done, nested jobs run inline, and compiled programs and ``torch.compile`` steps give the
same results as on the pool's own workers."""
from __future__ import annotations

import copy
import ctypes
import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from xlapy import jit  # noqa: E402
import xlapy.numpy as xnp  # noqa: E402
from xlapy.backends.cpu import thread_pool as tp  # noqa: E402
from xlapy.interop.torch_backend import xlapy_backend  # noqa: E402


@pytest.fixture
def runtime():
    rt = tp.OpenMPRuntime.loaded()
    if rt is None:
        pytest.skip("no libgomp in this process")
    return rt


@pytest.fixture
def openmp_pool(runtime):
    pool = tp.ThreadPool(2)
    pool.openmp = runtime
    return pool


def test_runtime_is_found_only_when_loaded(runtime):
    # PyTorch (imported above) loaded libgomp; OpenMPRuntime never loads one itself
    assert isinstance(runtime, tp.OpenMPRuntime)


def test_every_share_runs_once_on_two_threads(openmp_pool):
    both = threading.Barrier(2, timeout=10)    # broken unless two threads run shares at once
    seen, threads = [], set()

    def share(tag, begin, end):
        both.wait()
        threads.add(threading.get_ident())
        seen.append((tag, begin, end))
    openmp_pool.run(share, 7, 2)
    assert sorted(seen) == [(7, 0, 1), (7, 1, 2)]
    assert len(threads) == 2 and threading.get_ident() in threads


def test_more_shares_than_threads_each_run_once(runtime):
    pool = tp.ThreadPool(2)
    pool.openmp = runtime
    done = []
    pool._dispatch(lambda i: done.append(i), [(i,) for i in range(5)])
    assert sorted(done) == list(range(5))


def test_errors_are_raised_after_every_share_finished(openmp_pool):
    finished = []

    def share(tag, begin, end):
        if begin == 0:
            raise ValueError("the calling thread's share failed")
        time.sleep(0.05)
        finished.append((tag, begin, end))
    with pytest.raises(ValueError, match="calling thread"):
        openmp_pool.run(share, 0, 2)
    assert finished == [(0, 1, 2)], "run returned before the other share was done"
    openmp_pool.run(lambda t, b, e: finished.append((t, b, e)), 1, 2)   # the pool still works
    assert sorted(finished[1:]) == [(1, 0, 1), (1, 1, 2)]


def test_parallel_for_nests_inline(openmp_pool):
    done = []

    def work(item, state):
        openmp_pool.parallel_for([10 * item, 10 * item + 1], lambda x, _: done.append(x))
        done.append(item)
    openmp_pool.parallel_for(list(range(4)), work)
    assert sorted(done) == sorted(list(range(4)) + [10 * i + k for i in range(4) for k in (0, 1)])


def test_a_team_that_keeps_coming_late_sends_jobs_back_to_the_own_workers(runtime,
                                                                          monkeypatch):
    pool = tp.ThreadPool(2)
    pool.openmp = runtime
    names = []

    def share(tag, begin, end):
        names.append(threading.current_thread().name)
        if begin == 1:                  # the other thread's share: late every time
            time.sleep(2 * tp.SLOW_WAIT_S)
    for _ in range(3):
        pool.run(share, 0, 2)
    assert runtime.backoffs == 1 and not runtime.usable()
    names.clear()
    pool.run(share, 0, 2)               # now on the pool's own worker
    assert "xlapy-cpu-1" in names
    monkeypatch.setattr(runtime, "_backoff_until", time.perf_counter() - 1)
    assert runtime.usable()
    names.clear()
    pool.run(lambda t, b, e: names.append(threading.current_thread().name), 0, 2)
    assert "xlapy-cpu-1" not in names   # back on the OpenMP team


def test_waits_within_the_callers_share_time_keep_the_team(runtime):
    t = 100.0
    slow = tp.SLOW_WAIT_S
    for wait in (0.1 * slow, 0.9 * slow, 1.5 * slow, 0.2 * slow) * 10:
        runtime._caller_done = t + 2 * slow             # waits below the own share's time
        runtime._observe(t, t + 2 * slow + wait)
        t += 0.01
    assert runtime.backoffs == 0
    for _ in range(3):                                  # waits above both
        runtime._caller_done = t + slow / 2
        runtime._observe(t, t + slow / 2 + 2 * slow)
        t += 0.01
    assert runtime.backoffs == 1


def test_share_openmp_threads_respects_the_variable(monkeypatch, runtime):
    pool = tp.shared_pool()
    saved = pool.openmp
    try:
        pool.openmp = None
        monkeypatch.setenv("XLAPY_CPU_OPENMP", "0")
        assert not tp.share_openmp_threads() and pool.openmp is None
        monkeypatch.delenv("XLAPY_CPU_OPENMP")
        assert tp.share_openmp_threads() == (pool.size > 1)
    finally:
        pool.openmp = saved


def _counting(runtime, monkeypatch, method: str = "run"):
    """A list that grows by one entry per call of ``runtime.<method>`` (``run``: jobs of
    Python shares; ``run_kernel``: native kernels' jobs)."""
    calls = []
    run = getattr(runtime, method)

    def counted(*args):
        calls.append(args)
        return run(*args)
    monkeypatch.setattr(runtime, method, counted)
    return calls


def test_compiled_programs_match_on_openmp_threads(runtime, monkeypatch):
    """Split GEMMs, a batched dot and parallel elementwise kernels, on the pool's own
    workers and on the OpenMP threads, against NumPy."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1024, 128), np.float32)
    b = rng.standard_normal((384, 128), np.float32)
    q = rng.standard_normal((64, 64, 32), np.float32)
    k = rng.standard_normal((64, 32, 64), np.float32)

    f = jit(lambda a, b, q, k: (xnp.tanh(xnp.matmul(a, b.T)) * 2.0, xnp.matmul(q, k)),
            backend="cpu")
    want = (np.tanh(a @ b.T) * 2.0, q @ k)
    pool = tp.shared_pool()
    if pool.size < 2:
        pytest.skip("one CPU: nothing runs in parallel")
    saved = pool.openmp
    calls = _counting(runtime, monkeypatch)
    kernel_jobs = _counting(runtime, monkeypatch, "run_kernel")
    try:
        for mode in (None, runtime):
            pool.openmp = mode
            got = f(a, b, q, k)
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-4)
    finally:
        pool.openmp = saved
    assert calls or kernel_jobs, "no job ran on the OpenMP threads"


def test_training_steps_match_eager_on_openmp_threads(runtime):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    x = torch.randn(8, 16, 64)
    models = {b: copy.deepcopy(layer) for b in ("eager", "xlapy")}
    runs = {"eager": models["eager"],
            "xlapy": torch.compile(models["xlapy"], backend=xlapy_backend)}
    opts = {b: torch.optim.SGD(m.parameters(), lr=0.05) for b, m in models.items()}
    for _ in range(3):
        losses = {}
        for b in ("eager", "xlapy"):
            opts[b].zero_grad(set_to_none=True)
            loss = runs[b](x).square().mean()
            loss.backward()
            opts[b].step()
            losses[b] = float(loss)
        assert losses["xlapy"] == pytest.approx(losses["eager"], rel=1e-4)
    assert tp.shared_pool().openmp is not None or tp.shared_pool().size == 1
    for pe, px in zip(models["eager"].parameters(), models["xlapy"].parameters()):
        torch.testing.assert_close(px, pe, rtol=1e-4, atol=1e-5)


def test_a_forked_child_uses_the_pools_own_workers(runtime):
    import multiprocessing
    pool = tp.shared_pool()
    saved = pool.openmp
    if not tp.share_openmp_threads():
        pytest.skip("the shared pool does not use the OpenMP team here")
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(1) as workers:
            assert workers.apply(_child_uses_openmp, ()) is False
    finally:
        pool.openmp = saved


def _child_uses_openmp():
    return tp.shared_pool().openmp is not None


# ------------------------------------------------------------------ native kernels' shares
def _native(fn):
    """A kernel ``fn(table, begin, end)`` as native code (a ctypes callback) and its address."""
    from xlapy.backends.cpu.thunks import KERNEL_CFUNC
    import ctypes
    cb = KERNEL_CFUNC(fn)
    return cb, ctypes.cast(cb, ctypes.c_void_p).value


def test_native_kernel_shares_run_once_on_two_team_threads(openmp_pool, monkeypatch):
    both = threading.Barrier(2, timeout=10)
    seen, threads = [], set()

    def share(table, begin, end):
        both.wait()
        threads.add(threading.get_ident())
        seen.append((table, begin, end))
    cb, _ = _native(share)
    python_shares = _counting(openmp_pool.openmp, monkeypatch)
    openmp_pool.run(cb, 7, 10)
    assert sorted(seen) == [(7, 0, 5), (7, 5, 10)]
    assert len(threads) == 2 and threading.get_ident() in threads
    assert python_shares == []           # no Python share callback: the native trampoline


def test_native_trampoline_runs_every_share_once_and_times_the_caller(runtime):
    seen = []
    cb, address = _native(lambda table, begin, end: seen.append((table, begin, end)))
    start = time.perf_counter()
    runtime.run_kernel(address, 3, [0, 2, 3, 7, 8, 11])
    assert sorted(seen) == [(3, 0, 2), (3, 2, 3), (3, 3, 7), (3, 7, 8), (3, 8, 11)]
    # thread 0 stamped its end on the same clock as time.perf_counter
    assert start <= runtime._caller_done <= time.perf_counter()


def test_native_kernels_nest_inline_and_fall_back_to_the_own_workers(runtime, openmp_pool):
    seen = []
    cb, _ = _native(lambda table, begin, end: seen.append((table, begin, end)))

    def share(tag):          # a job from inside a share: runs on the share's thread
        openmp_pool.run(cb, tag, 4)
    openmp_pool._dispatch(share, [(1,), (2,)])
    assert sorted(seen) == [(1, 0, 2), (1, 2, 4), (2, 0, 2), (2, 2, 4)]
    seen.clear()
    own = tp.ThreadPool(2)              # XLAPY_CPU_OPENMP=0: no runtime, the own workers
    names = []
    cb2, _ = _native(lambda t, b, e: names.append(threading.current_thread().name))
    own.run(cb2, 0, 2)
    assert len(names) == 2 and set(names) <= {"MainThread", "xlapy-cpu-1"}


def test_an_interrupt_during_native_shares_comes_after_they_finished(openmp_pool):
    import _thread
    done, first_done = [], threading.Event()

    def share(table, begin, end):
        if begin == 0:                   # the calling thread: then waits in native code
            done.append(begin)
            first_done.set()
            return
        first_done.wait(10)
        time.sleep(0.05)
        _thread.interrupt_main()         # a Ctrl-C while the job runs
        time.sleep(0.05)
        done.append(begin)
    cb, _ = _native(share)
    with pytest.raises(KeyboardInterrupt):
        openmp_pool.run(cb, 0, 2)
    assert sorted(done) == [0, 1]        # both shares finished before it was raised
    seen = []
    cb2, _ = _native(lambda t, b, e: seen.append(b))
    openmp_pool.run(cb2, 0, 2)     # the pool is free again
    assert sorted(seen) == [0, 1]


class _TeamPool:
    """A stand-in pool that records its jobs; ``team`` says whether it is on a team."""

    size = 2

    def __init__(self, team: bool) -> None:
        self.team, self.jobs = team, []

    def on_team(self) -> bool:
        return self.team

    def run(self, fn, table, units) -> None:
        self.jobs.append(units)
        fn(table, 0, units)


@pytest.mark.parametrize("cost,team_at_compile,team_at_run,split", [
    (2_000_000, True, True, True),      # between the team's threshold and parallel_cost
    (2_000_000, True, False, False),    # the pool backed off to its own workers: serial
    (2_000_000, False, False, False),   # never on a team: the compiler's threshold
    (500_000, True, True, False),       # below the team's threshold
    (5_000_000, False, False, True),    # above parallel_cost: split either way
])
def test_kernels_split_from_a_lower_cost_on_the_openmp_team(cost, team_at_compile,
                                                           team_at_run, split):
    from xlapy.backends.cpu.thunks import KERNEL_CFUNC, KernelThunk, TEAM_PARALLEL_COST
    assert TEAM_PARALLEL_COST <= 1_000_000 < 2_000_000 < 4_000_000
    ranges = []
    kernel = KERNEL_CFUNC(lambda table, begin, end: ranges.append((begin, end)))
    address = ctypes.cast(kernel, ctypes.c_void_p).value
    pool = _TeamPool(team_at_compile)
    thunk = KernelThunk(None, "k", address, [], 8, float(cost), pool, 4_000_000)
    pool.team = team_at_run
    thunk.run(None)
    assert pool.jobs == ([8] if split else [])
    assert ranges == [(0, 8)]
