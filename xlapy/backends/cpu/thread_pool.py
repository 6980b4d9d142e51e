"""The CPU runtime's one thread pool: persistent workers that run native kernels split into
unit ranges and loops of library calls (:class:`ThreadPool`), shared by the whole process
(:func:`shared_pool`)."""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, Sequence

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
        self._threads = []
        for i in range(1, self.size):
            t = threading.Thread(target=self._worker, args=(i,), daemon=True,
                                 name=f"xlapy-cpu-{i}")
            t.start()
            self._threads.append(t)

    def _worker(self, i: int) -> None:
        while True:
            self._start[i].acquire()
            fn, args, job = self._work[i]
            try:
                fn(*args)
            except BaseException as e:      # noqa: BLE001 - re-raised by _dispatch
                job.errors.append(e)
            finally:
                job.finished[i] = True
                job.locks[i].release()

    def _dispatch(self, fn: Callable[..., None], shares: Sequence[tuple]) -> None:
        """``fn(*shares[0])`` on the calling thread and ``fn(*shares[k])`` on worker ``k``;
        returns when all are done, raising the first exception any of them raised."""
        if len(shares) <= 1 or not self._lock.acquire(blocking=False):
            for args in shares:
                fn(*args)
            return
        try:
            job = _Job(len(shares))
            for k in range(1, len(shares)):
                self._work[k] = (fn, shares[k], job)
                self._start[k].release()
            try:
                fn(*shares[0])
            finally:
                job.wait()
        finally:
            self._lock.release()
        if job.errors:
            raise job.errors[0]

    def run(self, fn: Any, table: int, units: int) -> None:
        """Run kernel ``fn(table, begin, end)`` over ``[0, units)`` cut into up to ``size``
        ranges."""
        parts = min(self.size, units)
        bounds = [units * k // parts for k in range(parts + 1)]
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


__all__ = ["ThreadPool", "shared_pool", "cores"]
