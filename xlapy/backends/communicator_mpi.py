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

The CPU backend's collective thunks call a prepared op (``bind_*``: :class:`_Prepared`):
its communicators, MPI op, agreement buffers and CRC are made on the first call, and every
call hands MPI the executable's own buffers -- the operand as the send buffer
(``MPI_IN_PLACE`` when the result lives there), the result as the receive buffer -- so
nothing is staged or copied around MPI. A prepared all-reduce of two members moving
``PAIR_MIN_BYTES`` or more exchanges halves itself (:class:`_PairAllReduce`): MPICH's
``Iallreduce`` first copies the whole send buffer into the receive buffer, a third of the
memory traffic of a two-member call, which this exchange does without. All waits are
non-blocking requests polled against the timeout, so a peer that never arrives fails the
call instead of hanging it; a process that raises is ended by ``xlapy.distributed``'s
exception hook with ``MPI_Abort``, which ends every other process of the job.
"""
from __future__ import annotations

import abc
import functools
import os
import time
import zlib
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import CollectiveError
from .communicator import Arrays, Bound, CollectiveCall, Communicator, default_timeout

# Waiting polls the requests: a prepared call first tests a request SPIN_TESTS times in a
# row (a small call on two free cores ends there), then poll spins (yielding the core every
# POLLS_PER_YIELD tests: when the scheduler put two processes of the job on one core, the
# peer being waited for gets it at once) for SPIN_SECONDS, plus SPIN_SECONDS_PER_BYTE per
# byte moved once the group is known to be there, then pauses between polls, the pause
# doubling from MIN_PAUSE to MAX_PAUSE (MPI progresses only while polled, so a pause delays
# every stage of MPI's algorithm: only a call whose peers are late, or that takes far
# longer than its size explains, pauses).
SPIN_SECONDS = 2e-3
SPIN_SECONDS_PER_BYTE = 1e-8
POLLS_PER_YIELD = 4
SPIN_TESTS = 16
MIN_PAUSE = 2e-5
MAX_PAUSE = 1e-3

# A prepared all-reduce of two members moving at least PAIR_MIN_BYTES exchanges halves
# itself (_PairAllReduce) instead of calling Iallreduce.
PAIR_MIN_BYTES = 128 << 10
_PAIR_TAG = 16384           # its messages' tags (below MPI's least MPI_TAG_UB, 32767)
_ARRAYS_TAG = 8192          # a tuple-form all-to-all's (a permute's are 0, 1, ...)
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
            done = poll(self.MPI, requests, self.timeout, _pause, spin=spin)
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

    # ----- prepared collectives (the CPU backend's thunks): see _Prepared
    def bind_all_reduce(self, call: CollectiveCall, sources: Arrays, destinations: Arrays,
                        combine: Callable[[Any, Any], Any], kind: str | None,
                        in_place: Sequence[bool]) -> Bound:
        op = self._native_op(kind, sources)
        if op is None:
            return super().bind_all_reduce(call, sources, destinations, combine, kind, in_place)
        if len(call.group) == 2 and sum(d.nbytes for d in destinations) >= PAIR_MIN_BYTES:
            return _PairAllReduce(self, call, destinations, op, in_place, _UFUNCS[kind])
        return _AllReduce(self, call, destinations, op, in_place)

    def bind_all_gather(self, call: CollectiveCall, sources: Arrays, destinations: Arrays
                        ) -> Bound:
        return _AllGather(self, call, destinations)

    def bind_reduce_scatter(self, call: CollectiveCall, sources: Arrays, destinations: Arrays,
                            combine: Callable[[Any, Any], Any], kind: str | None) -> Bound:
        op = self._native_op(kind, sources)
        if op is None:
            return super().bind_reduce_scatter(call, sources, destinations, combine, kind)
        return _ReduceScatter(self, call, sources, op)

    def bind_all_to_all(self, call: CollectiveCall, sources: Arrays, destinations: Arrays
                        ) -> Bound:
        return _AllToAll(self, call, destinations)

    def bind_all_to_all_arrays(self, call: CollectiveCall, sources: Arrays,
                               destinations: Arrays) -> Bound:
        return _AllToAllArrays(self, call, destinations)

    def bind_permute(self, call: CollectiveCall, sources: Arrays, destinations: Arrays,
                     source: int | None, target: int | None) -> Bound:
        return _Permute(self, call, destinations, source, target)

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


class _Prepared(abc.ABC):
    """One collective op of this process, its fixed parts made once (``bind_*``): the
    group's communicators, the agreement -- a persistent ``Allgather_init`` on the
    agreement communicator over buffers made here (the CRC word set once, the sequence
    number written per call) -- and how long a wait spins. A call (:meth:`__call__`) posts
    the data requests (subclasses' :meth:`requests`), starts the agreement, waits for it,
    then for the data -- the protocol of ``_begin``/``_finish`` without rebuilding anything
    per call, except that the data requests are posted first (MPI starts moving the data
    one agreement post earlier; the agreement is still waited for first)."""

    __slots__ = ("owner", "call", "comm", "agree_comm", "size", "mine", "everyone", "spin",
                 "MPI", "agreement")
    stage = ""              # what the data requests do, for errors
    staged = False          # the data moves in two stages (next_stage: the second)

    def __init__(self, owner: MpiCommunicator, call: CollectiveCall, arrays: Arrays) -> None:
        """``arrays``: the buffers the call moves (how long a wait spins)."""
        self.owner, self.call, self.MPI = owner, call, owner.MPI
        self.comm, self.agree_comm = owner._comm(call)
        self.size = self.comm.Get_size()
        self.mine = np.array([0, owner._check(call)], dtype=np.int64)
        self.everyone = np.empty((self.size, 2), dtype=np.int64)
        self.spin = SPIN_SECONDS + sum(a.nbytes for a in arrays) * SPIN_SECONDS_PER_BYTE
        # every member prepares the op at the same call (its first), as MPI's persistent
        # collectives need (the init is local: a missing member does not block it)
        self.agreement: Any = self.agree_comm.Allgather_init(self.mine, self.everyone)

    def __call__(self, sequence: int, sources: Arrays, destinations: Arrays) -> None:
        owner = self.owner
        if owner._aborted is not None:          # before any request touches the buffers
            owner._refuse(self.call)
        requests = self.requests(sources, destinations)
        agreement, mine = self.agreement, self.mine
        try:
            mine[0] = sequence
            agreement.Start()
        except BaseException:
            self._abandon([agreement] + requests, (sources, destinations),
                          f"{self.call.what} on process {owner.rank}: its agreement could "
                          f"not start")
            raise
        try:
            if not _spin(agreement):
                owner._wait(self.call, [agreement], "agreeing on the operation")
            if self.everyone.tobytes() != mine.tobytes() * self.size:
                owner._disagree(self.call, self.agree_comm)
            if not (_spin(requests[0]) if len(requests) == 1
                    else self.MPI.Request.Testall(requests)):
                owner._wait(self.call, requests, self.stage, self.spin)
            if self.staged:                     # the data's second stage, once agreed
                requests = self.next_stage(sources, destinations)
                if not self.MPI.Request.Testall(requests):
                    owner._wait(self.call, requests, self.stage, self.spin)
        except BaseException as e:
            # the agreement buffers are reused by the next call: none may follow this one
            self._abandon([agreement] + requests, (sources, destinations),
                          f"{self.call.what} on process {owner.rank} was interrupted: "
                          f"{type(e).__name__}: {e}")
            raise

    def _abandon(self, requests: list, buffers: Any, reason: str) -> None:
        """Keep ``requests`` and their buffers (MPI may still write them) alive for good,
        and refuse every later call of the communicator with ``reason``."""
        owner = self.owner
        owner._abandoned.append((requests, (buffers, self)))     # self: its buffers
        self.agreement = None               # may still be active: never freed
        owner.abort(reason)

    @abc.abstractmethod
    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        """Start the op's data requests from ``sources`` into ``destinations``."""

    def next_stage(self, sources: Arrays, destinations: Arrays) -> list:
        """A ``staged`` op's second stage, started once the group agreed and the first
        stage's requests completed: its requests."""
        raise TypeError(f"{type(self).__name__} moves its data in one stage")

    def __del__(self) -> None:
        """Free the persistent agreement (inactive between calls; an abandoned one is kept
        by the communicator) while MPI still runs."""
        agreement = getattr(self, "agreement", None)      # None: __init__ failed first
        self.agreement = None
        if agreement is not None and not self.MPI.Is_finalized():
            agreement.Free()


def _spin(request: Any) -> bool:
    """Whether ``request`` completes within ``SPIN_TESTS`` tests in a row (a small
    message's wait ends here, before :func:`poll`'s clock and yields)."""
    test = request.Test
    for _ in range(SPIN_TESTS):
        if test():
            return True
    return False


class _AllReduce(_Prepared):
    """``Iallreduce`` from each source into its destination (``MPI_IN_PLACE`` where the
    destination is the source)."""

    __slots__ = ("op", "in_place")
    stage = "all-reduce"

    def __init__(self, owner: MpiCommunicator, call: CollectiveCall, destinations: Arrays,
                 op: Any, in_place: Sequence[bool]) -> None:
        super().__init__(owner, call, destinations)
        self.op, self.in_place = op, tuple(in_place)

    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        comm, op, in_place = self.comm, self.op, self.MPI.IN_PLACE
        if len(sources) == 1:                   # the common case, without a comprehension
            return [comm.Iallreduce(in_place if self.in_place[0] else sources[0],
                                    destinations[0], op)]
        return [comm.Iallreduce(in_place if same else s, d, op)
                for s, d, same in zip(sources, destinations, self.in_place)]


class _PairAllReduce(_AllReduce):
    """An all-reduce of two members as a reduce-scatter then an all-gather of halves over
    ``Isend``/``Irecv`` (MPICH's algorithm for it, less the copy of the whole send buffer
    into the receive buffer its ``Iallreduce`` makes first): member ``r`` owns half ``r``
    of every array. Stage one sends the other half of the source to the peer and receives
    the peer's copy of the own half into the destination (into a spare buffer when the
    destination is the source); once the group agreed, the own half is reduced in place
    with NumPy's ufunc of the op (two operands: the same on both members, the op being
    commutative), and stage two swaps the reduced halves."""

    __slots__ = ("peer", "ufunc", "halves", "spares")
    staged = True

    def __init__(self, owner: MpiCommunicator, call: CollectiveCall, destinations: Arrays,
                 op: Any, in_place: Sequence[bool], ufunc: np.ufunc) -> None:
        super().__init__(owner, call, destinations, op, in_place)
        self.peer, self.ufunc = 1 - call.position, ufunc
        self.halves: list[tuple[slice, slice]] = []
        self.spares: list[np.ndarray | None] = []
        for d, same in zip(destinations, self.in_place):
            split = d.size // 2
            low, high = slice(0, split), slice(split, d.size)
            own, other = (low, high) if call.position == 0 else (high, low)
            self.halves.append((own, other))
            self.spares.append(np.empty(own.stop - own.start, d.dtype) if same else None)

    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        comm, byte, peer, requests = self.comm, self.MPI.BYTE, self.peer, []
        for k, (s, d, (own, other), spare) in enumerate(zip(sources, destinations,
                                                            self.halves, self.spares)):
            into = d[own] if spare is None else spare
            requests.append(comm.Irecv([into, byte], peer, _PAIR_TAG + 2 * k))
            requests.append(comm.Isend([s[other], byte], peer, _PAIR_TAG + 2 * k))
        return requests

    def next_stage(self, sources: Arrays, destinations: Arrays) -> list:
        comm, byte, peer, ufunc, requests = self.comm, self.MPI.BYTE, self.peer, self.ufunc, []
        for k, (s, d, (own, other), spare) in enumerate(zip(sources, destinations,
                                                            self.halves, self.spares)):
            half = d[own]
            ufunc(half, s[own] if spare is None else spare, out=half)
            requests.append(comm.Irecv([d[other], byte], peer, _PAIR_TAG + 2 * k + 1))
            requests.append(comm.Isend([half, byte], peer, _PAIR_TAG + 2 * k + 1))
        return requests


class _AllGather(_Prepared):
    """``Iallgather`` of each source's bytes into its destination."""

    __slots__ = ()
    stage = "all-gather"

    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        comm, byte = self.comm, self.MPI.BYTE
        return [comm.Iallgather([s, byte], [d, byte]) for s, d in zip(sources, destinations)]


class _ReduceScatter(_Prepared):
    """``Ireduce_scatter_block`` from each source (the group's blocks in order) into its
    destination."""

    __slots__ = ("op",)
    stage = "reduce-scatter"

    def __init__(self, owner: MpiCommunicator, call: CollectiveCall, sources: Arrays,
                 op: Any) -> None:
        super().__init__(owner, call, sources)
        self.op = op

    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        comm, op = self.comm, self.op
        return [comm.Ireduce_scatter_block(s, d, op) for s, d in zip(sources, destinations)]


class _AllToAll(_Prepared):
    """``Ialltoall`` of the source's bytes (block j to position j) into the destination."""

    __slots__ = ()
    stage = "all-to-all"

    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        byte = self.MPI.BYTE
        return [self.comm.Ialltoall([sources[0], byte], [destinations[0], byte])]


class _AllToAllArrays(_Prepared):
    """Tuple-form all-to-all: ``Isend`` of source j to group position j and ``Irecv`` of
    destination j from it; this position's own pair is a copy."""

    __slots__ = ()
    stage = "all-to-all"

    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        comm, byte, me, requests = self.comm, self.MPI.BYTE, self.call.position, []
        for j, (s, d) in enumerate(zip(sources, destinations)):
            if j == me:
                np.copyto(d, s)
            else:
                requests.append(comm.Irecv([d, byte], j, _ARRAYS_TAG))
                requests.append(comm.Isend([s, byte], j, _ARRAYS_TAG))
        return requests


class _Permute(_Prepared):
    """``Irecv`` into the destinations from device ``source``, ``Isend`` of the sources to
    device ``target`` (ranks of the group's communicator: the group is every device, in
    order); no source: the destinations are zeroed."""

    __slots__ = ("source", "target")
    stage = "collective-permute"

    def __init__(self, owner: MpiCommunicator, call: CollectiveCall, destinations: Arrays,
                 source: int | None, target: int | None) -> None:
        super().__init__(owner, call, destinations)
        self.source, self.target = source, target

    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        comm, byte, requests = self.comm, self.MPI.BYTE, []
        if self.source is not None:
            requests += [comm.Irecv([d, byte], source=self.source, tag=k)
                         for k, d in enumerate(destinations)]
        else:
            for d in destinations:
                d[...] = 0
        if self.target is not None:
            requests += [comm.Isend([s, byte], dest=self.target, tag=k)
                         for k, s in enumerate(sources)]
        return requests


def poll(MPI: Any, requests: list, timeout: float, pause: Callable[[float], Any],
         check: Callable[[], None] | None = None, spin: float = SPIN_SECONDS) -> bool:
    """Test ``requests`` until all are complete (True) or ``timeout`` seconds passed (False).

    For the first ``spin`` seconds the tests follow each other at once (MPI progresses only
    while polled: a completion is seen, and the next stage of MPI's algorithm started,
    without delay), with ``pause(0)`` (a yield of the core) every ``POLLS_PER_YIELD`` tests,
    as MPICH's own blocking waits do; after that ``pause(seconds)`` separates them, the pause
    doubling from ``MIN_PAUSE`` to ``MAX_PAUSE`` (a peer is late: leave the core to others).
    ``check()`` (which may raise) runs before each pause. One request is tested alone
    (``Test``: MPICH's ``Testall`` fails a persistent collective that is not complete with
    ``MPI_ERR_IN_STATUS``)."""
    test = requests[0].Test if len(requests) == 1 else functools.partial(MPI.Request.Testall,
                                                                         requests)
    if test():
        return True
    start = time.monotonic()
    seconds = 0.0
    polls = 0
    while not test():
        polls += 1
        if polls % POLLS_PER_YIELD and seconds == 0.0:
            continue
        elapsed = time.monotonic() - start
        if check is not None:
            check()
        if elapsed > timeout:
            return False
        if elapsed > spin:
            seconds = min(MAX_PAUSE, max(seconds * 2, MIN_PAUSE))
        pause(seconds)
    return True


def _pause(seconds: float) -> None:
    """Between two polls: yield the core (0 s) or sleep."""
    if seconds:
        time.sleep(seconds)
    else:
        os.sched_yield()


def _bytes(a: np.ndarray) -> Any:
    """A buffer MPI moves as raw bytes (any dtype, ml_dtypes' included)."""
    return a.reshape(-1).view(np.uint8)


__all__ = ["MpiCommunicator"]
