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

With the data, the group agrees on what it runs: an ``Iallgather`` of (sequence number,
CRC of the op, its operand shapes and group) on a duplicate of the group's communicator,
started next to the data calls (just before them; in the CPU backend's prepared calls just
after them, and there a persistent ``Allgather_init`` made once per op and restarted) and
waited for first, so agreeing costs no round trip of its own. A
disagreement fails on every member with a :class:`~xlapy.errors.CollectiveError` naming
the collective and both sides, without waiting for the (mismatched) data calls, whose
requests and buffers are then kept alive for good; the failed call's results are never
returned.

The CPU backend's collective thunks call a prepared op (``bind_*``: :class:`~.mpi_calls.Prepared`):
its communicators, MPI op, agreement buffers and CRC are made on the first call, and every
call hands MPI the executable's own buffers -- the operand as the send buffer
(``MPI_IN_PLACE`` when the result lives there), the result as the receive buffer -- so
nothing is staged or copied around MPI. A prepared all-reduce of two members runs its own
exchange over ``Isend``/``Irecv`` instead of MPICH's ``Iallreduce`` (which first copies the
whole send buffer into the receive buffer, then runs two rounds): up to
``SWAP_MAX_BYTES`` both send their whole arrays and reduce (one round,
:class:`~.mpi_calls.SwapAllReduce`), beyond it they exchange halves
(:class:`~.mpi_calls.PairAllReduce`). All waits are
non-blocking requests polled against the timeout, so a peer that never arrives fails the
call instead of hanging it; a process that raises is ended by ``xlapy.distributed``'s
exception hook with ``MPI_Abort``, which ends every other process of the job.
"""
from __future__ import annotations

import zlib
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import CollectiveError
from .communicator import Arrays, Bound, CollectiveCall, Communicator, default_timeout
from .mpi_calls import (SPIN_SECONDS, SPIN_SECONDS_PER_BYTE, AllGather, AllReduce, AllToAll,
                        AllToAllArrays, PairAllReduce, Permute, ReduceScatter, SwapAllReduce,
                        pause, poll)

# A prepared all-reduce of two members moving at most SWAP_MAX_BYTES swaps the arrays
# (mpi_calls.SwapAllReduce), a larger one exchanges halves (mpi_calls.PairAllReduce).
SWAP_MAX_BYTES = 1 << 20
_UFUNCS = {"sum": np.add, "product": np.multiply, "min": np.minimum, "max": np.maximum}

_MAX_CHECKS = 4096          # CRCs of (signature, group) kept
_SUM_TYPES = "iuf"          # dtype kinds MPI sums and multiplies natively
_MINMAX_TYPES = "iu"        # float min/max must propagate NaN as XLA does: done here instead


class _Pending:
    """A started agreement: the communicator it runs on, its request and both buffers."""

    __slots__ = ("comm", "request", "mine", "everyone")

    def __init__(self, comm: Any, request: Any, mine: np.ndarray, everyone: np.ndarray) -> None:
        self.comm, self.request, self.mine, self.everyone = comm, request, mine, everyone


class MpiCommunicator(Communicator):
    """Collectives over an mpi4py communicator (``COMM_WORLD`` by default)."""

    def __init__(self, comm: Any = None, timeout: float | None = None) -> None:
        from mpi4py import MPI
        self.MPI = MPI
        self.world = comm if comm is not None else MPI.COMM_WORLD
        self.rank = self.world.Get_rank()
        self.size = self.world.Get_size()
        self.timeout = default_timeout() if timeout is None else float(timeout)
        self._subcomms: dict[tuple, tuple[Any, Any]] = {}
        self._checks: dict[tuple, int] = {}
        # requests of calls that failed while MPI could still write their buffers: kept
        # (with the buffers) so that memory is never reused under MPI
        self._abandoned: list[tuple[list, Any]] = []
        self._aborted: str | None = None
        self._ops = {"sum": MPI.SUM, "product": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}
        self._native: dict[tuple, Any] = {}         # (kind, dtypes...) -> MPI op or None
        self._scratch = np.empty(0, np.uint8)

    def scratch(self, nbytes: int) -> np.ndarray:
        """A byte buffer of at least ``nbytes`` for a call's temporary data: the one kept
        for the communicator (its one device runs one collective at a time), replaced by a
        larger one when too small."""
        if self._scratch.nbytes < nbytes:
            self._scratch = np.empty(nbytes, np.uint8)
        return self._scratch

    def abort(self, reason: str) -> None:
        self._aborted = self._aborted or reason

    # ----- plumbing
    def _comm(self, call: CollectiveCall) -> tuple[Any, Any]:
        """The group's communicators: one for the data, one for the agreements."""
        key = call.groups or (call.group,)
        comms = self._subcomms.get(key)
        if comms is None:
            if call.group == tuple(range(self.size)):
                comm = self.world
            else:
                comm = self.world.Split(min(call.group), call.position)
            agree_comm, request = comm.Idup()        # polled: a missing peer times out
            self._wait(call, [request], "creating the group's communicator")
            comms = self._subcomms[key] = (comm, agree_comm)
        return comms

    def _wait(self, call: CollectiveCall, requests: list, stage: str,
              spin: float = SPIN_SECONDS) -> None:
        if self._aborted is not None:
            self._refuse(call)
        try:
            done = poll(self.MPI, requests, self.timeout, pause, spin=spin)
        except self.MPI.Exception as e:
            reason = f"{call.what} on process {self.rank}: MPI failed while {stage}: {e}"
            self._aborted = reason
            raise CollectiveError(reason) from None
        if not done:
            reason = (f"{call.what} on process {self.rank}: timed out after "
                      f"{self.timeout:g} s waiting for the other processes of group "
                      f"{list(call.group)} ({stage})")
            self._aborted = reason
            raise CollectiveError(reason)

    def _refuse(self, call: CollectiveCall) -> None:
        """Fail ``call`` because an earlier collective failed."""
        raise CollectiveError(f"{call.what} on process {self.rank}: abandoned because "
                              f"{self._aborted}")

    def _check(self, call: CollectiveCall) -> int:
        """The agreement's CRC of the op, its operand shapes and its group."""
        key = (call.signature, call.group)
        check = self._checks.get(key)
        if check is None:
            if len(self._checks) >= _MAX_CHECKS:         # many programs: start over
                self._checks.clear()
            check = self._checks[key] = zlib.crc32(repr(key).encode())
        return check

    def _begin(self, call: CollectiveCall) -> tuple[Any, _Pending]:
        """Start the group's agreement on the call (an ``Iallgather`` of its sequence number
        and a CRC of the op, operand shapes and group, on the agreement communicator) and
        return the data communicator; the data calls start before the agreement ends."""
        if self._aborted is not None:
            self._refuse(call)
        comm, agree_comm = self._comm(call)
        mine = np.array([call.sequence, self._check(call)], dtype=np.int64)
        everyone = np.empty((agree_comm.Get_size(), 2), dtype=np.int64)
        return comm, _Pending(agree_comm, agree_comm.Iallgather(mine, everyone), mine, everyone)

    def _finish(self, call: CollectiveCall, pending: _Pending, requests: list, buffers: Any,
                stage: str, nbytes: int) -> None:
        """Wait for the agreement, then for the data ``requests`` (which move ``nbytes`` on
        ``buffers``). A disagreement fails every member, naming the collective, without
        waiting for the data: mismatched data calls may never complete."""
        try:
            self._wait(call, [pending.request], "agreeing on the operation")
            if pending.everyone.tobytes() != pending.mine.tobytes() * len(pending.everyone):
                self._disagree(call, pending.comm)
            self._wait(call, requests, stage, SPIN_SECONDS + nbytes * SPIN_SECONDS_PER_BYTE)
        except BaseException:
            self._abandoned.append((requests, buffers))
            raise

    def _disagree(self, call: CollectiveCall, agree_comm: Any) -> None:
        """Every member saw the same mismatch: trade descriptions and fail."""
        texts = agree_comm.allgather(f"{call.what} on {list(call.signature[1:])} over "
                                     f"{list(call.group)}")
        reason = (f"participants disagree at {call.what}: "
                  + "; ".join(f"device {d} runs {t}" for d, t in zip(call.group, texts)))
        self._aborted = reason
        raise CollectiveError(reason)

    # ----- collectives
    def exchange(self, call: CollectiveCall, arrays: Arrays, compute: Callable[[list], Any]
                 ) -> Any:
        comm, pending = self._begin(call)
        n = comm.Get_size()
        gathered, requests, sources = [], [], []
        for a in arrays:
            src = np.ascontiguousarray(a).reshape(np.shape(a))     # 0-d stays 0-d
            out = np.empty((n,) + src.shape, dtype=src.dtype)
            requests.append(comm.Iallgather(_bytes(src), _bytes(out)))
            gathered.append(out)
            sources.append(src)
        self._finish(call, pending, requests, (sources, gathered), "exchanging",
                     sum(g.nbytes for g in gathered))
        return compute([[g[k] for g in gathered] for k in range(n)])

    def all_reduce(self, call: CollectiveCall, arrays: Arrays,
                   combine: Callable[[Any, Any], Any], kind: str | None) -> Arrays:
        if self._native_op(kind, arrays) is None:
            return super().all_reduce(call, arrays, combine, kind)
        outs = [np.empty(np.shape(a), dtype=a.dtype) for a in arrays]
        self.all_reduce_into(call, arrays, outs, combine, kind)
        return outs

    def all_reduce_into(self, call: CollectiveCall, sources: Arrays, destinations: Arrays,
                        combine: Callable[[Any, Any], Any], kind: str | None) -> None:
        """``Iallreduce`` from each source straight into its destination (``MPI_IN_PLACE``
        when the destination is the source itself; otherwise they must not overlap);
        reducers MPI lacks take the portable path."""
        op = self._native_op(kind, sources)
        if op is None or not all(d.flags.c_contiguous and d.flags.writeable
                                 for d in destinations):
            return super().all_reduce_into(call, sources, destinations, combine, kind)
        comm, pending = self._begin(call)
        requests, sends, nbytes = [], [], 0
        for src, dst in zip(sources, destinations):
            send = self.MPI.IN_PLACE if src is dst else np.ascontiguousarray(src)
            sends.append(send)
            requests.append(comm.Iallreduce(send, dst, op=op))
            nbytes += dst.nbytes
        self._finish(call, pending, requests, (sends, destinations), "all-reduce", nbytes)

    def all_gather_into(self, call: CollectiveCall, sources: Arrays, destinations: Arrays
                        ) -> None:
        """``Iallgather`` of each source straight into its destination."""
        if not all(d.flags.c_contiguous and d.flags.writeable for d in destinations):
            return super().all_gather_into(call, sources, destinations)
        comm, pending = self._begin(call)
        sends = [np.ascontiguousarray(s) for s in sources]
        requests = [comm.Iallgather(_bytes(s), _bytes(d)) for s, d in zip(sends, destinations)]
        self._finish(call, pending, requests, (sends, destinations), "all-gather",
                     sum(d.nbytes for d in destinations))

    def reduce_scatter(self, call: CollectiveCall, arrays: Arrays, dim: int,
                       combine: Callable[[Any, Any], Any], kind: str | None) -> Arrays:
        op = self._native_op(kind, arrays)
        if op is None:
            return super().reduce_scatter(call, arrays, dim, combine, kind)
        comm, pending = self._begin(call)
        n = comm.Get_size()
        outs, requests, sends = [], [], []
        for a in arrays:
            blocks = np.ascontiguousarray(np.stack(np.split(a, n, axis=dim)))
            out = np.empty(blocks.shape[1:], dtype=a.dtype)
            requests.append(comm.Ireduce_scatter_block(blocks, out, op=op))
            outs.append(out)
            sends.append(blocks)
        self._finish(call, pending, requests, (sends, outs), "reduce-scatter",
                     sum(b.nbytes for b in sends))
        return outs

    def all_to_all(self, call: CollectiveCall, blocks: Arrays) -> Arrays:
        comm, pending = self._begin(call)
        send = np.ascontiguousarray(np.stack(blocks))
        recv = np.empty_like(send)
        self._finish(call, pending, [comm.Ialltoall(_bytes(send), _bytes(recv))],
                     (send, recv), "all-to-all", send.nbytes)
        return list(recv)

    def permute(self, call: CollectiveCall, arrays: Arrays, source: int | None,
                target: int | None) -> Arrays | None:
        comm, pending = self._begin(call)
        requests, received, sends = [], None, []
        if source is not None:
            received = [np.empty_like(a) for a in arrays]
            requests += [comm.Irecv(_bytes(r), source=source, tag=k)
                         for k, r in enumerate(received)]
        if target is not None:
            sends = [np.ascontiguousarray(a) for a in arrays]
            requests += [comm.Isend(_bytes(s), dest=target, tag=k) for k, s in enumerate(sends)]
        self._finish(call, pending, requests, (sends, received), "collective-permute",
                     sum(a.nbytes for a in arrays))
        return received

    # ----- prepared collectives (the CPU backend's thunks): see Prepared
    def bind_all_reduce(self, call: CollectiveCall, sources: Arrays, destinations: Arrays,
                        combine: Callable[[Any, Any], Any], kind: str | None,
                        in_place: Sequence[bool]) -> Bound:
        op = self._native_op(kind, sources)
        if op is None:
            return super().bind_all_reduce(call, sources, destinations, combine, kind, in_place)
        if len(call.group) == 2:
            swap = sum(d.nbytes for d in destinations) <= SWAP_MAX_BYTES
            return (SwapAllReduce if swap else PairAllReduce)(self, call, destinations, op,
                                                              in_place, _UFUNCS[kind])
        return AllReduce(self, call, destinations, op, in_place)

    def bind_all_gather(self, call: CollectiveCall, sources: Arrays, destinations: Arrays
                        ) -> Bound:
        return AllGather(self, call, destinations)

    def bind_reduce_scatter(self, call: CollectiveCall, sources: Arrays, destinations: Arrays,
                            combine: Callable[[Any, Any], Any], kind: str | None) -> Bound:
        op = self._native_op(kind, sources)
        if op is None:
            return super().bind_reduce_scatter(call, sources, destinations, combine, kind)
        return ReduceScatter(self, call, sources, op)

    def bind_all_to_all(self, call: CollectiveCall, sources: Arrays, destinations: Arrays
                        ) -> Bound:
        return AllToAll(self, call, destinations)

    def bind_all_to_all_arrays(self, call: CollectiveCall, sources: Arrays,
                               destinations: Arrays) -> Bound:
        return AllToAllArrays(self, call, destinations)

    def bind_permute(self, call: CollectiveCall, sources: Arrays, destinations: Arrays,
                     source: int | None, target: int | None) -> Bound:
        return Permute(self, call, destinations, source, target)

    def _native_op(self, kind: str | None, arrays: Arrays) -> Any:
        """The MPI reduction of ``kind`` on ``arrays``' dtypes, None where MPI has none that
        gives XLA's answer."""
        key = (kind,) + tuple(a.dtype for a in arrays)
        op = self._native.get(key, False)
        if op is False:
            op = None
            if kind in self._ops:
                kinds = _SUM_TYPES if kind in ("sum", "product") else _MINMAX_TYPES
                if all(a.dtype.kind in kinds and not (a.dtype.itemsize < 4 and
                                                      a.dtype.kind == "f") for a in arrays):
                    op = self._ops[kind]
            self._native[key] = op
        return op


def _bytes(a: np.ndarray) -> Any:
    """A buffer MPI moves as raw bytes (any dtype, ml_dtypes' included)."""
    return a.reshape(-1).view(np.uint8)


__all__ = ["MpiCommunicator", "poll", "SWAP_MAX_BYTES"]
