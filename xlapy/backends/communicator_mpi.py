"""Collectives between processes over MPI (mpi4py; the ``mpich`` wheel provides MPI).

One device per process: participant d is the process of rank d in the world communicator
``xlapy.distributed.initialize`` found. For each distinct set of groups of a collective
(the same on every process, so every process creates it at the same call) a sub-communicator
is split off the world with ``color`` = the group's first id and ``key`` = the position in the
group, so a rank in it *is* the group position and MPI's block order is HLO's group order.

Every call moves the arrays themselves with MPI's buffer interface (no pickling):
``Iallreduce`` for all-reduces whose reducer is a plain sum, product, or integer min/max
(``match_reduction``), ``Ireduce_scatter_block`` likewise for reduce-scatter, ``Ialltoall``
for all-to-all, ``Isend``/``Irecv`` pairs for collective-permute, and ``Iallgather`` for
all-gather, broadcast and any other reducer (then applied in group order on every process).

Before the data, the group agrees on what it runs: an ``Iallgather`` of (sequence number,
CRC of the op and its operand shapes). A disagreement fails on every member with a
:class:`~xlapy.errors.CollectiveError` naming the collective and both sides. All waits are
non-blocking requests polled against the timeout, so a peer that never arrives fails the
call instead of hanging it; a process that raises is ended by ``xlapy.distributed``'s
exception hook with ``MPI_Abort``, which ends every other process of the job.
"""
from __future__ import annotations

import time
import zlib
from typing import Any, Callable

import numpy as np

from ..errors import CollectiveError
from .communicator import Arrays, CollectiveCall, Communicator, default_timeout

# Waiting polls the requests (see poll): spinning for SPIN_SECONDS, then pausing between polls,
# the pause doubling from MIN_PAUSE to MAX_PAUSE (MPI progresses only while polled; a process
# that only spins takes the core its peer needs when there are more processes than free cores).
SPIN_SECONDS = 2e-4
MIN_PAUSE = 2e-5
MAX_PAUSE = 1e-3

_SUM_TYPES = "iuf"          # dtype kinds MPI sums and multiplies natively
_MINMAX_TYPES = "iu"        # float min/max must propagate NaN as XLA does: done here instead


class MpiCommunicator(Communicator):
    """Collectives over an mpi4py communicator (``COMM_WORLD`` by default)."""

    def __init__(self, comm: Any = None, timeout: float | None = None) -> None:
        from mpi4py import MPI
        self.MPI = MPI
        self.world = comm if comm is not None else MPI.COMM_WORLD
        self.rank = self.world.Get_rank()
        self.size = self.world.Get_size()
        self.timeout = default_timeout() if timeout is None else float(timeout)
        self._subcomms: dict[tuple, Any] = {}
        self._aborted: str | None = None
        self._ops = {"sum": MPI.SUM, "product": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}

    def abort(self, reason: str) -> None:
        self._aborted = self._aborted or reason

    # ----- plumbing
    def _comm(self, call: CollectiveCall) -> Any:
        key = call.groups or (call.group,)
        comm = self._subcomms.get(key)
        if comm is None:
            if call.group == tuple(range(self.size)):
                comm = self.world
            else:
                comm = self.world.Split(min(call.group), call.position)
            self._subcomms[key] = comm
        return comm

    def _wait(self, call: CollectiveCall, requests: list, stage: str) -> None:
        if self._aborted is not None:
            raise CollectiveError(f"{call.what} on process {self.rank}: abandoned because "
                                  f"{self._aborted}")
        if not poll(self.MPI, requests, self.timeout, time.sleep):
            reason = (f"{call.what} on process {self.rank}: timed out after "
                      f"{self.timeout:g} s waiting for the other processes of group "
                      f"{list(call.group)} ({stage})")
            self._aborted = reason
            raise CollectiveError(reason)

    def _agree(self, call: CollectiveCall, comm: Any) -> None:
        """Every member runs the same op on the same shapes (else all of them fail)."""
        text = repr((call.signature, call.group)).encode()
        mine = np.array([call.sequence, zlib.crc32(text)], dtype=np.int64)
        everyone = np.empty((comm.Get_size(), 2), dtype=np.int64)
        self._wait(call, [comm.Iallgather(mine, everyone)], "agreeing on the operation")
        if (everyone == mine).all():
            return
        texts = comm.allgather(f"{call.what} on {list(call.signature[1:])} over "
                               f"{list(call.group)}")
        reason = (f"participants disagree at {call.what}: "
                  + "; ".join(f"device {d} runs {t}" for d, t in zip(call.group, texts)))
        self._aborted = reason
        raise CollectiveError(reason)

    def _start(self, call: CollectiveCall) -> Any:
        comm = self._comm(call)
        self._agree(call, comm)
        return comm

    # ----- collectives
    def exchange(self, call: CollectiveCall, arrays: Arrays, compute: Callable[[list], Any]
                 ) -> Any:
        comm = self._start(call)
        n = comm.Get_size()
        gathered, requests = [], []
        for a in arrays:
            src = np.ascontiguousarray(a).reshape(np.shape(a))     # 0-d stays 0-d
            out = np.empty((n,) + src.shape, dtype=src.dtype)
            requests.append(comm.Iallgather(_bytes(src), _bytes(out)))
            gathered.append(out)
        self._wait(call, requests, "exchanging")
        return compute([[g[k] for g in gathered] for k in range(n)])

    def all_reduce(self, call: CollectiveCall, arrays: Arrays,
                   combine: Callable[[Any, Any], Any], kind: str | None) -> Arrays:
        op = self._native_op(kind, arrays)
        if op is None:
            return super().all_reduce(call, arrays, combine, kind)
        comm = self._start(call)
        outs = [np.empty_like(a) for a in arrays]
        requests = [comm.Iallreduce(np.ascontiguousarray(a), out, op=op)
                    for a, out in zip(arrays, outs)]
        self._wait(call, requests, "all-reduce")
        return outs

    def reduce_scatter(self, call: CollectiveCall, arrays: Arrays, dim: int,
                       combine: Callable[[Any, Any], Any], kind: str | None) -> Arrays:
        op = self._native_op(kind, arrays)
        if op is None:
            return super().reduce_scatter(call, arrays, dim, combine, kind)
        comm = self._start(call)
        n = comm.Get_size()
        outs, requests = [], []
        for a in arrays:
            blocks = np.ascontiguousarray(np.stack(np.split(a, n, axis=dim)))
            out = np.empty(blocks.shape[1:], dtype=a.dtype)
            requests.append(comm.Ireduce_scatter_block(blocks, out, op=op))
            outs.append(out)
        self._wait(call, requests, "reduce-scatter")
        return outs

    def all_to_all(self, call: CollectiveCall, blocks: Arrays) -> Arrays:
        comm = self._start(call)
        send = np.ascontiguousarray(np.stack(blocks))
        recv = np.empty_like(send)
        self._wait(call, [comm.Ialltoall(_bytes(send), _bytes(recv))], "all-to-all")
        return list(recv)

    def permute(self, call: CollectiveCall, arrays: Arrays, source: int | None,
                target: int | None) -> Arrays | None:
        comm = self._start(call)
        requests, received = [], None
        if source is not None:
            received = [np.empty_like(a) for a in arrays]
            requests += [comm.Irecv(_bytes(r), source=source, tag=k)
                         for k, r in enumerate(received)]
        if target is not None:
            sends = [np.ascontiguousarray(a) for a in arrays]
            requests += [comm.Isend(_bytes(s), dest=target, tag=k) for k, s in enumerate(sends)]
        self._wait(call, requests, "collective-permute")
        return received

    def _native_op(self, kind: str | None, arrays: Arrays) -> Any:
        if kind is None or kind not in self._ops:
            return None
        kinds = _SUM_TYPES if kind in ("sum", "product") else _MINMAX_TYPES
        if any(a.dtype.kind not in kinds or a.dtype.itemsize < 4 and a.dtype.kind == "f"
               for a in arrays):
            return None
        return self._ops[kind]


def poll(MPI: Any, requests: list, timeout: float, pause: Callable[[float], Any],
         check: Callable[[], None] | None = None) -> bool:
    """Test ``requests`` until all are complete (True) or ``timeout`` seconds passed (False),
    calling ``pause(seconds)`` between tests (0 while spinning, then backing off) and
    ``check()`` (which may raise) before each pause."""
    start = time.monotonic()
    seconds = 0.0
    while not MPI.Request.Testall(requests):
        elapsed = time.monotonic() - start
        if check is not None:
            check()
        if elapsed > timeout:
            return False
        if elapsed > SPIN_SECONDS:      # back off: the peer may need this core
            seconds = min(MAX_PAUSE, max(seconds * 2, MIN_PAUSE))
        pause(seconds)
    return True


def _bytes(a: np.ndarray) -> Any:
    """A buffer MPI moves as raw bytes (any dtype, ml_dtypes' included)."""
    return a.reshape(-1).view(np.uint8)


__all__ = ["MpiCommunicator"]
