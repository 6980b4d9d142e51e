"""OpenBLAS's own threaded products, run on the CPU pool's threads.

A large single product split by the runtime (``blas_lib.GemmCall.split_product``) is one
OpenBLAS call per thread, and every call packs the operand the pieces share again.
OpenBLAS's threaded level-3 driver splits a product so that the threads share the packed
operand instead (each packs a part that all of them use). OpenBLAS normally runs those
parts on its own threads, which spin for a long time after each call and would take the
cores the pool's next kernels need; since 0.3.27 it hands them to a callback instead
(``openblas_set_threads_callback_function``). This module installs one on xlapy's
OpenBLAS: the callback runs a call's jobs as one native pool job
(``ThreadPool.run_together``, the jobs being ``native_pool.OPENBLAS_JOBS``' ranges).

The jobs of one call wait on each other (a job multiplies with the panels the other jobs
pack), so they must all run at once, one thread each: when the pool cannot give every job
a thread (another Python thread's job holds it, a call from inside a pool job, a pool on
an OpenMP team, a child process after ``fork()``), the callback starts threads for the
call instead. OpenBLAS threads only the calls made inside :func:`threaded` (its thread
count is 1 otherwise), so the runtime's other OpenBLAS calls stay single-threaded.

Off by default, on with ``XLAPY_CPU_OPENBLAS_THREADS=1``: on the 2-core host measured the
W4b step's steady calls were mostly slower than with the pieces (faster only in the calls
right after a pause), and several times slower while another process kept a core busy
(the jobs wait on each other, so a job whose thread is preempted holds up the others,
where the pieces' shared counter lets the calling thread take the work);
docs/performance.md has the figures.
"""
from __future__ import annotations

import ctypes
import logging
import threading
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ...config import env_cpu_openblas_threads
from . import blas_lib
from .native_pool import openblas_jobs
from .thread_pool import ThreadPool, shared_pool

log = logging.getLogger("xlapy.cpu")

#: ``void callback(int sync, dojob, int numjobs, size_t jobdata_elsize, void* jobdata,
#: int dojob_data)`` (OpenBLAS's ``openblas_threads_callback``)
_CALLBACK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                                  ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int)
_SETTER = "scipy_openblas_set_threads_callback_function"

_lock = threading.Lock()
#: "callback" once installed, "users": threads inside threaded(), "calls": callbacks so far
_state: dict[str, Any] = {"calls": 0}
_pending = threading.local()         # an exception the callback caught, raised after the call


def _run_jobs(dojob: int, numjobs: int, elsize: int, jobdata: int, dojob_data: int) -> None:
    """Every job of one threaded OpenBLAS call, all at once (module docstring)."""
    jobs = openblas_jobs()
    table = np.array([dojob, jobdata, elsize, dojob_data], np.int64)
    address = table.ctypes.data
    if numjobs <= 1:
        jobs(address, 0, numjobs)
        return
    if shared_pool().run_together(jobs, address, numjobs):
        return
    helpers = [threading.Thread(target=jobs, args=(address, j, j + 1), daemon=True,
                                name=f"xlapy-openblas-{j}") for j in range(1, numjobs)]
    for t in helpers:
        t.start()
    try:
        jobs(address, 0, 1)
    finally:
        for t in helpers:
            t.join()


def _callback(sync: int, dojob: int, numjobs: int, elsize: int, jobdata: int,
              dojob_data: int) -> None:
    # An exception cannot cross into OpenBLAS (ctypes would print it and the call would
    # return with jobs not run): the jobs are run whatever happens, and what was raised
    # (an interrupt) is raised by threaded() once the call has returned.
    _state["calls"] += 1
    try:
        _run_jobs(dojob, numjobs, elsize, jobdata, dojob_data)
    except BaseException as e:      # noqa: BLE001 - re-raised after the OpenBLAS call
        _pending.error = e


def _install(lib: Any) -> bool:
    """The callback in xlapy's OpenBLAS (once); False where the library has no callback
    entry point (before OpenBLAS 0.3.27)."""
    if "callback" in _state:
        return _state["callback"] is not None
    setter = getattr(lib.lib, _SETTER, None)
    if setter is None:
        log.debug("xlapy: OpenBLAS at %s takes no threads callback; products are split "
                  "into one call per thread", lib.path)
        _state["callback"] = None
        return False
    setter.argtypes = [ctypes.c_void_p]
    setter.restype = None
    callback = _CALLBACK_TYPE(_callback)
    openblas_jobs()                        # compiled before OpenBLAS may need it
    setter(ctypes.cast(callback, ctypes.c_void_p))
    _state["callback"] = callback          # kept alive as long as OpenBLAS may call it
    return True


def usable(pool: ThreadPool) -> bool:
    """Whether a large product runs as one OpenBLAS call threaded on ``pool``: the switch
    is on and :func:`supported`."""
    return env_cpu_openblas_threads() and supported(pool)


def supported(pool: ThreadPool) -> bool:
    """Whether OpenBLAS can thread a call on ``pool``: the pool has several threads and
    native jobs on its own threads, and the library takes the callback (installed here)."""
    if pool.size <= 1 or not pool.native or pool.openmp is not None:
        return False
    installed = _state.get("callback", False)
    if installed is False:
        with _lock:
            return _install(blas_lib.library())
    return installed is not None


@contextmanager
def threaded(threads: int) -> Iterator[None]:
    """OpenBLAS's thread count ``threads`` inside the block (1 again once no thread is
    inside one); an exception the callback caught during the block is raised at its end.
    A call another Python thread makes meanwhile may be threaded too: the callback runs it
    correctly wherever the pool is busy."""
    lib = blas_lib.library()
    with _lock:
        _state["users"] = _state.get("users", 0) + 1
        if _state["users"] == 1:
            lib.set_num_threads(threads)
    try:
        yield
    finally:
        with _lock:
            _state["users"] -= 1
            if _state["users"] == 0:
                lib.set_num_threads(1)
        error = getattr(_pending, "error", None)
        if error is not None:
            _pending.error = None
            raise error


def callbacks() -> int:
    """How many threaded OpenBLAS calls have run through the callback (for tests)."""
    return int(_state["calls"])


__all__ = ["usable", "supported", "threaded", "callbacks"]
