"""The CPU runtime's one thread pool: persistent workers that run native kernels split into
unit ranges and loops of library calls (:class:`ThreadPool`), shared by the whole process
(:func:`shared_pool`).

Native kernels (ctypes function pointers given to :meth:`ThreadPool.run`, and the dot
thunk's split OpenBLAS products) run as native jobs (``native_pool.py``): every thread,
the calling one included, takes ranges from a shared counter in native code, so no
thread needs the GIL between ranges and a worker that the host runs late leaves its
ranges to the others instead of holding up the job. Between jobs a worker polls the job
number (without the GIL) before it sleeps on its semaphore, so a job that follows soon
finds it awake: :data:`LONG_SPIN_TICKS` while the process's threads are rarely preempted,
which keeps the workers awake across the gaps between one program's jobs (a sleeping
worker is woken late for the first several calls after a pause), and :data:`SPIN_TICKS`
while they are often preempted (:data:`BUSY_PREEMPTIONS_PER_S`: other processes want
the cores, and a polling worker would take the time they and the calling thread need).
Python callables (:meth:`ThreadPool.parallel_for`) keep one share per thread.
``XLAPY_CPU_NATIVE_POOL=0`` runs native kernels as Python shares too.

In a process where another library runs its own parallel work on an OpenMP runtime
(PyTorch: its operators and oneDNN/MKL on the GNU ``libgomp``), that runtime's idle
threads spin for a while after each parallel region before they sleep; the pool's own
workers then share the cores with spinning threads, and a step that alternates between
PyTorch's operators and xlapy's programs (``torch.compile(backend="xlapy")``) lost most
of its parallel speed-up. :func:`share_openmp_threads` makes the shared pool run its
jobs' shares on that runtime's threads instead (``GOMP_parallel``: the threads that spin
take the shares at once); the pool's semantics (one job at a time, the calling thread
takes a share, every share finishes before an error is raised) stay the same.
``XLAPY_CPU_OPENMP=0`` keeps the pool's own workers. A generated kernel's shares run there
without Python (:meth:`OpenMPRuntime.run_kernel`: every team thread runs the native
``native_loop.TeamShares`` trampoline), so no team thread waits for the GIL; other jobs'
shares (library calls, Python work) go through a ctypes callback per thread.

On a machine whose cores other processes keep busy, a team thread that is not running
makes the others spin at the end of the region, and jobs on the OpenMP threads became
many times slower than on the pool's own (sleeping) workers. So the runtime watches how
long the calling thread waits for the others after its own shares
(:meth:`OpenMPRuntime.run`): when that wait keeps exceeding its own share's time (and
:data:`SLOW_WAIT_S`), the pool goes back to its own workers for :data:`BACKOFF_S`, then
tries again.
"""
from __future__ import annotations

import ctypes
import functools
import logging
import os
import threading
import time
from typing import Any, Callable, Sequence

try:
    import resource
except ImportError:         # not on every platform
    resource = None  # type: ignore[assignment]

from ...config import env_cpu_native_pool, env_cpu_openmp
from .native_pool import (ACTIVE, BUSY, COUNTER, FINISHED, FN, GEN, KIND, NATIVE, PARTS,
                          PYTHON, SERVE_RELEASE, SERVE_TIMEOUT, SLEEPING, SPIN, TABLE, UNITS,
                          WAITING, JobWords, native_address)

log = logging.getLogger("xlapy.cpu")


def _preemptions() -> int:
    """Involuntary context switches of this process so far (0 where not counted)."""
    if resource is None:
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


def cores() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class _Job:
    """One parallel job's completion state: worker ``k`` sets ``finished[k]`` and
    releases ``locks[k]`` (held from the start) when its share is done."""

    __slots__ = ("finished", "locks", "errors")

    def __init__(self, shares: int) -> None:
        self.finished = [True] + [False] * (shares - 1)
        self.locks = [threading.Lock() for _ in range(shares)]
        for lock in self.locks[1:]:
            lock.acquire()
        self.errors: list[BaseException] = []

    def wait(self) -> None:
        """Return when every worker's share is done; an interrupt meanwhile is raised
        after that (see :class:`ThreadPool`)."""
        interrupt: BaseException | None = None
        while True:
            try:
                for k, lock in enumerate(self.locks):
                    while not self.finished[k]:
                        lock.acquire()
                break
            except BaseException as e:      # noqa: BLE001 - raised once the shares are done
                interrupt = interrupt or e
        if interrupt is not None:
            raise interrupt


#: Kernels of at least this cost (``KernelSpec.cost``) are split over the threads while the
#: pool runs its jobs on an OpenMP team, below the compiler's ``parallel_cost`` for its own
#: workers: the team's threads spin between PyTorch's regions and take a share at once
#: (docs/performance.md).
TEAM_PARALLEL_COST = 1_000_000
#: A wait for the team after the calling thread's shares below this is never "slow" (waking
#: sleeping team threads takes well under it; a descheduled one costs a time slice).
SLOW_WAIT_S = 0.002
#: How long the pool uses its own workers after the OpenMP team kept coming late.
BACKOFF_S = 1.0
#: How long (time-stamp-counter ticks: several microseconds) an idle worker polls the job
#: number before it sleeps on its semaphore. Kept short: on a loaded machine a polling
#: worker takes the time other threads need (longer polls made the W4b and W7 steps
#: slower there; docs/performance.md).
SPIN_TICKS = 20_000
#: The poll while the machine is quiet (ticks: a few hundred microseconds).
LONG_SPIN_TICKS = 1_000_000
#: Involuntary context switches of the process per second from which the machine counts
#: as busy (measured over :data:`PREEMPTION_WINDOW_S`): the workers then poll only
#: :data:`SPIN_TICKS`.
BUSY_PREEMPTIONS_PER_S = 200.0
PREEMPTION_WINDOW_S = 0.05
#: How long the calling thread polls for the other threads' last ranges of a native job
#: (ticks: about ten microseconds) before it blocks: a host that runs both of the
#: process's CPUs on one core would otherwise give the poll the time the last range needs.
FINISH_SPIN_TICKS = 30_000
#: The blocked caller re-reads the count of finished ranges at least this often (s).
FINISH_WAIT_S = 0.001
# the decaying count of slow jobs at which the pool backs off (about 3 of the last 8 jobs)
_SLOW_SCORE = 2.0


class OpenMPRuntime:
    """An OpenMP runtime (GNU ``libgomp``) already loaded into the process, running a
    pool job's shares on its threads (see the module docstring)."""

    _SHARE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._parallel = lib.GOMP_parallel
        self._parallel.argtypes = [self._SHARE, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
        self._parallel.restype = None
        self._thread_num = lib.omp_get_thread_num
        self._num_threads = lib.omp_get_num_threads
        self._thread_num.restype = self._num_threads.restype = ctypes.c_int
        self._job: tuple[Callable[..., None], Sequence[tuple], list[BaseException]] | None = None
        self._callback = self._SHARE(self._shares)     # kept alive as long as the runtime
        # native kernels' jobs (run_kernel): the shares' descriptor, made on first use
        self._team: Any = None
        self._team_fn: Any = None
        self._team_address = 0
        self._bounds: dict[tuple[int, ...], Any] = {}
        self._caller_done = 0.0          # when the calling thread finished its shares
        self._slow_score = 0.0
        self._backoff_until = 0.0
        self.backoffs = 0                # times the team came late so often the pool backed off

    def usable(self) -> bool:
        """Whether jobs go to the OpenMP team now (not while backing off: see the module
        docstring)."""
        return self._backoff_until == 0.0 or time.perf_counter() >= self._backoff_until

    def _observe(self, start: float, end: float) -> None:
        own, wait = self._caller_done - start, end - self._caller_done
        slow = wait > max(SLOW_WAIT_S, own)
        self._slow_score = 0.75 * self._slow_score + (1.0 if slow else 0.0)
        if self._slow_score >= _SLOW_SCORE:
            self._slow_score = 0.0
            self._backoff_until = end + BACKOFF_S
            self.backoffs += 1
            log.debug("xlapy: the OpenMP team keeps coming late; the CPU pool uses its own "
                      "workers for %.1f s", BACKOFF_S)

    @classmethod
    def loaded(cls) -> "OpenMPRuntime | None":
        """The ``libgomp`` another library loaded into this process, or None (none loaded,
        or a platform without ``RTLD_NOLOAD``). Never loads one itself."""
        noload = getattr(os, "RTLD_NOLOAD", None)
        if noload is None:
            return None
        try:
            lib = ctypes.CDLL("libgomp.so.1", mode=noload)
        except OSError:
            return None
        if not all(hasattr(lib, f) for f in ("GOMP_parallel", "omp_get_thread_num",
                                             "omp_get_num_threads")):
            return None
        return cls(lib)

    def _shares(self, _data: int | None) -> None:
        job = self._job
        if job is None:
            return
        fn, shares, errors = job
        k, n = self._thread_num(), max(1, self._num_threads())
        for args in shares[k::n]:      # thread k of n: every n-th share from the k-th
            try:
                fn(*args)
            except BaseException as e:      # noqa: BLE001 - raised once all shares are done
                errors.append(e)
        if k == 0:
            self._caller_done = time.perf_counter()

    def run_kernel(self, kernel: int, table: int, bounds: Sequence[int]) -> None:
        """The native kernel at address ``kernel`` over ``bounds`` (share ``i``: ``kernel(
        table, bounds[i], bounds[i + 1])``), each team thread running its shares in native
        code (``native_loop.TeamShares``): no team thread takes the GIL, which the calling
        thread releases for the whole job. The caller holds the pool's lock."""
        desc = self._team
        if desc is None:
            from .native_loop import TeamShares, team_shares
            libc = ctypes.CDLL(None)
            desc = self._team = TeamShares(
                0, 0, 0, 0, ctypes.cast(self._thread_num, ctypes.c_void_p).value,
                ctypes.cast(self._num_threads, ctypes.c_void_p).value,
                ctypes.cast(libc.clock_gettime, ctypes.c_void_p).value, 0, 0)
            self._team_fn = self._SHARE(team_shares())
            self._team_address = ctypes.addressof(desc)
        arr = self._bounds.get(tuple(bounds))
        if arr is None:
            if len(self._bounds) >= 1024:       # kernels of many sizes: start again
                self._bounds.clear()
            arr = self._bounds[tuple(bounds)] = (ctypes.c_int64 * len(bounds))(*bounds)
        desc.fn, desc.table, desc.n, desc.bounds = kernel, table, len(bounds) - 1, \
            ctypes.addressof(arr)
        desc.sec = 0
        start = time.perf_counter()
        self._parallel(self._team_fn, self._team_address, len(bounds) - 1, 0)
        end = time.perf_counter()
        self._caller_done = desc.sec + desc.nsec * 1e-9 if desc.sec else end
        self._observe(start, end)

    def run(self, fn: Callable[..., None], shares: Sequence[tuple]) -> list[BaseException]:
        """``fn(*share)`` for every share, one thread of the runtime's team per share (the
        calling thread is thread 0); returns when all are done, with the errors raised.
        The caller holds the pool's lock: one job at a time."""
        errors: list[BaseException] = []
        self._job = (fn, shares, errors)
        start = self._caller_done = time.perf_counter()
        try:
            self._parallel(self._callback, None, len(shares), 0)
        finally:
            self._job = None
        self._observe(start, time.perf_counter())
        return errors


class ThreadPool:
    """Persistent workers for the runtime's parallel work: native kernels split into unit
    ranges (:meth:`run`) and loops of library calls (:meth:`parallel_for`).

    ctypes releases the GIL during foreign calls (BLAS, kernels) and NumPy during copies,
    so the shares run in parallel. The calling thread takes the first share itself. One
    job runs at a time; a job that finds the pool busy (another Python thread's job, or a
    job started from inside a share) runs all its shares on its own thread instead.

    Interrupts: a KeyboardInterrupt that reaches the calling thread while its share runs
    or while it waits for the workers is held until every worker has finished its share
    (the workers write the caller's buffers: returning earlier would let the next call
    run beside them), then raised. Each job has its own completion locks, so nothing of
    an interrupted job is left for the next one.
    """

    def __init__(self, size: int | None = None) -> None:
        self.size = max(1, size or cores())
        self._work: list[Any] = [None] * self.size
        self._start = [threading.Semaphore(0) for _ in range(self.size)]
        self._lock = threading.Lock()
        self.openmp: OpenMPRuntime | None = None     # shares run on its threads when set
        #: native jobs on (``run`` of ctypes kernels; the dot thunk's OpenBLAS pieces):
        #: ``XLAPY_CPU_NATIVE_POOL=0`` turns them off
        self.native = self.size > 1 and env_cpu_native_pool()
        self._gen = 0
        self._done = threading.Semaphore(0)       # a worker finished a job's last range
        self._threads: list[threading.Thread] = []
        # the job block and the workers come with the first job (compiling the native
        # routines is not part of compiling a program)
        self._block: JobWords | None = None
        self._start_lock = threading.Lock()
        self._spin_ticks = SPIN_TICKS
        self._preempt_at = (time.monotonic(), _preemptions())

    @property
    def spin_ticks(self) -> int:
        """How long an idle worker polls now (ticks; :meth:`_update_spin`)."""
        return self._spin_ticks

    @spin_ticks.setter
    def spin_ticks(self, ticks: int) -> None:
        self._spin_ticks = ticks
        if self._block is not None:
            self._block.words[SPIN] = ticks

    @property
    def _words(self) -> JobWords:
        """The job block, with the workers started on first use."""
        block = self._block
        if block is None:
            with self._start_lock:
                if self._block is None:
                    self._block = JobWords(self.size)
                    self._block.words[SPIN] = self._spin_ticks
                    for i in range(1, self.size):
                        t = threading.Thread(target=self._worker, args=(i,), daemon=True,
                                             name=f"xlapy-cpu-{i}")
                        t.start()
                        self._threads.append(t)
                block = self._block
        return block

    def _worker(self, i: int) -> None:
        """Worker ``i``: runs native jobs inside ``native_pool``'s serve loop (without the
        GIL), polling the job number for :attr:`spin_ticks` between them; after a poll
        that timed out it sleeps on its semaphore; it runs its share of Python jobs here."""
        words = self._words
        sleep_word = words.addr(SLEEPING + 8 * i)
        out = SLEEPING + 8 * i + 1
        seen = 0
        while True:
            code = words.serve(words.address, seen, words.addr(out))
            seen = int(words.words[out])
            if code == SERVE_TIMEOUT:
                words.swap(sleep_word, 1)
                g = int(words.words[GEN])
                if g in (seen, BUSY):
                    self._start[i].acquire()
                words.swap(sleep_word, 0)
                continue
            if code == SERVE_RELEASE:
                self._done.release()           # the caller blocks for the last range
                continue
            task, self._work[i] = self._work[i], None
            if task is None:            # a Python job without a share for this worker
                continue
            fn, args, job = task
            try:
                fn(*args)
            except BaseException as e:      # noqa: BLE001 - re-raised by _dispatch
                job.errors.append(e)
            finally:
                job.finished[i] = True
                job.locks[i].release()

    def _update_spin(self) -> None:
        """Every :data:`PREEMPTION_WINDOW_S` at most: the workers' poll from the rate of
        the process's involuntary context switches (module docstring)."""
        now = time.monotonic()
        then, count = self._preempt_at
        if now - then < PREEMPTION_WINDOW_S:
            return
        current = _preemptions()
        self._preempt_at = (now, current)
        busy = (current - count) > BUSY_PREEMPTIONS_PER_S * (now - then)
        self.spin_ticks = SPIN_TICKS if busy else LONG_SPIN_TICKS

    def _post(self, kind: int, fields: Sequence[tuple[int, int]] = ()) -> int:
        """Publish a new job (``native_pool``'s protocol): the block's ``fields`` as
        ``(word, value)``; wakes the sleeping workers; returns the job's number."""
        self._update_spin()
        words = self._words
        block = words.words
        words.swap(words.addr(GEN), BUSY)
        while block[ACTIVE] != 0:           # a late worker still leaving the last job
            if not words.until(words.addr(ACTIVE), 0, SPIN_TICKS):
                os.sched_yield()
        for word, value in fields:
            block[word] = value
        while self._done.acquire(blocking=False):       # releases no caller waited for
            pass
        block[COUNTER] = block[FINISHED] = 0
        block[KIND] = kind
        self._gen += 1
        words.swap(words.addr(GEN), self._gen)
        for k in range(1, self.size):
            if block[SLEEPING + 8 * k]:
                self._start[k].release()
        return self._gen

    def _dispatch(self, fn: Callable[..., None], shares: Sequence[tuple]) -> None:
        """``fn(*shares[0])`` on the calling thread and ``fn(*shares[k])`` on worker ``k``;
        returns when all are done, raising the first exception any of them raised."""
        if len(shares) <= 1 or not self._lock.acquire(blocking=False):
            for args in shares:
                fn(*args)
            return
        if self.openmp is not None and self.openmp.usable():
            try:
                errors = self.openmp.run(fn, shares)
            finally:
                self._lock.release()
            if errors:
                raise errors[0]
            return
        try:
            job = _Job(len(shares))
            for k in range(1, len(shares)):
                self._work[k] = (fn, shares[k], job)
            self._post(PYTHON)
            try:
                fn(*shares[0])
            finally:
                job.wait()
        finally:
            self._lock.release()
        if job.errors:
            raise job.errors[0]

    def _native_job(self, address: int, table: int, units: int, parts: int) -> bool:
        """Kernel ``address`` over ``parts`` ranges of ``units`` as a native job
        (``native_pool``): every thread takes ranges from a shared counter. False (nothing
        run) when the pool is busy or runs its shares on an OpenMP team."""
        if not self.native or self.openmp is not None or \
                not self._lock.acquire(blocking=False):
            return False
        try:
            words = self._words
            gen = self._post(NATIVE, ((FN, address), (TABLE, table), (UNITS, units),
                                      (PARTS, parts)))
            interrupt: BaseException | None = None
            take = True
            while True:       # the ranges other threads took write the caller's buffers
                try:
                    if take:
                        take = False
                        words.work(words.address, gen)
                    if not words.until(words.addr(FINISHED), parts, FINISH_SPIN_TICKS):
                        words.swap(words.addr(WAITING), 1)      # a worker releases _done
                        try:
                            while words.words[FINISHED] != parts:
                                self._done.acquire(timeout=FINISH_WAIT_S)
                        finally:
                            words.swap(words.addr(WAITING), 0)
                    break
                except BaseException as e:      # noqa: BLE001 - raised once all are done
                    interrupt = interrupt or e
            if interrupt is not None:
                raise interrupt
        finally:
            self._lock.release()
        return True

    def run_together(self, fn: Any, table: int, jobs: int) -> bool:
        """Kernel ``fn(table, j, j + 1)`` for every ``j < jobs``, each job on its own thread,
        all at once (jobs that wait on each other, as a threaded OpenBLAS call's do): one
        native job, the calling thread taking the first. False (nothing run) when the pool
        cannot give every job a thread now (busy, too few threads, workers lost to fork(),
        shares on an OpenMP team)."""
        address = native_address(fn)
        if address is None or jobs > self.size:
            return False
        self._words             # noqa: B018 - starts the workers
        if not all(t.is_alive() for t in self._threads):
            return False
        return self._native_job(address, table, jobs, jobs)

    def on_team(self) -> bool:
        """Whether this pool's jobs go to an OpenMP team now (:meth:`OpenMPRuntime.usable`)."""
        return self.openmp is not None and self.openmp.usable()

    def run(self, fn: Any, table: int, units: int, parts: int | None = None) -> None:
        """Run kernel ``fn(table, begin, end)`` over ``[0, units)`` cut into ``parts``
        ranges (default: up to ``size``). A ctypes kernel runs as a native job, the threads
        taking ranges from a shared counter (``native_pool``), or on an OpenMP team through
        its native trampoline (:meth:`OpenMPRuntime.run_kernel`); a Python callable runs
        the ranges (at most ``size`` of them) one per thread."""
        parts = min(self.size, units) if parts is None else max(1, min(parts, units))
        address = native_address(fn) if parts > 1 else None
        if address is not None and self._native_job(address, table, units, parts):
            return
        parts = min(parts, self.size)
        bounds = [units * k // parts for k in range(parts + 1)]
        if address is not None and parts > 1 and self.openmp is not None \
                and self.openmp.usable() and self._lock.acquire(blocking=False):
            try:
                self.openmp.run_kernel(address, table, bounds)
            finally:
                self._lock.release()
            return
        self._dispatch(fn, [(table, bounds[k], bounds[k + 1]) for k in range(parts)])

    def parallel_for(self, items: Sequence[Any], work: Callable[[Any, dict], None]) -> None:
        """``work(item, state)`` for every item, the threads taking items in turn;
        ``state`` is a per-thread dict for scratch buffers."""
        lock = threading.Lock()
        it = iter(items)

        def loop() -> None:
            state: dict = {}
            while True:
                with lock:
                    item = next(it, None)
                if item is None:
                    return
                work(item, state)
        self._dispatch(loop, [()] * min(len(items), self.size))


_POOL: ThreadPool | None = None
_POOL_LOCK = threading.Lock()


def shared_pool() -> ThreadPool:
    """The process-wide pool (one thread per usable CPU, created on first use)."""
    global _POOL
    if _POOL is None:
        with _POOL_LOCK:
            if _POOL is None:
                _POOL = ThreadPool()
    return _POOL


def team_usable() -> bool:
    """Whether the shared pool runs its jobs on an OpenMP team now (shared, and not
    backing off from a team that keeps coming late: see the module docstring)."""
    pool = _POOL
    runtime = None if pool is None else pool.openmp
    return runtime is not None and runtime.usable()


def _forget_openmp(pool: ThreadPool) -> None:
    pool.openmp = None


def share_openmp_threads() -> bool:
    """Let the shared pool run its jobs on the threads of the OpenMP runtime already in
    the process (see the module docstring); whether it now does. Called by a front end
    that knows such a runtime works beside xlapy (the PyTorch backend); nothing changes
    with ``XLAPY_CPU_OPENMP=0``, without such a runtime, or for a pool of one thread."""
    pool = shared_pool()
    if pool.openmp is not None:
        return True
    if not env_cpu_openmp() or pool.size <= 1:
        return False
    runtime = OpenMPRuntime.loaded()
    if runtime is None:
        return False
    with pool._lock:                  # not while a job runs on the pool's own workers
        pool.openmp = runtime
    # libgomp's team does not survive fork(): a child process uses the pool's own workers
    os.register_at_fork(after_in_child=functools.partial(_forget_openmp, pool))
    log.debug("xlapy: the CPU pool runs its shares on the OpenMP runtime's threads")
    return True


__all__ = ["ThreadPool", "OpenMPRuntime", "shared_pool", "share_openmp_threads", "cores",
           "team_usable"]
