"""MPI waits and the prepared collective calls of :class:`~.communicator_mpi.MpiCommunicator`.

:func:`poll` tests requests against a timeout (the module constants say how it spins,
yields and pauses); :class:`Prepared` is one compiled collective op's fixed parts made once
(``MpiCommunicator.bind_*``), its subclasses the data calls of each collective.
"""
from __future__ import annotations

import abc
import functools
import os
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .communicator import Arrays, CollectiveCall

if TYPE_CHECKING:
    from .communicator_mpi import MpiCommunicator

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

_PAIR_TAG = 16384           # PairAllReduce's tags (below MPI's least MPI_TAG_UB, 32767)
_SWAP_TAG = 12288           # SwapAllReduce's
_ARRAYS_TAG = 8192          # AllToAllArrays' (a permute's are 0, 1, ...)


class Prepared(abc.ABC):
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


class AllReduce(Prepared):
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


class _TwoMemberAllReduce(AllReduce):
    """The parts the two-member all-reduces share: the peer, NumPy's ufunc of the op (two
    operands, the op commutative: the same bits on both members), and where an in-place
    array's received elements go -- the communicator's scratch buffer, at offsets fixed
    here (``received``: each array's received element count)."""

    __slots__ = ("peer", "ufunc", "layout", "scratch_bytes", "spares")
    staged = True

    def __init__(self, owner: MpiCommunicator, call: CollectiveCall, destinations: Arrays,
                 op: Any, in_place: Sequence[bool], ufunc: np.ufunc,
                 received: Sequence[int]) -> None:
        super().__init__(owner, call, destinations, op, in_place)
        self.peer, self.ufunc = 1 - call.position, ufunc
        self.layout: list[tuple[int, int, np.dtype] | None] = []
        total = 0
        for count, d, same in zip(received, destinations, self.in_place):
            self.layout.append((total, count, d.dtype) if same else None)
            if same:
                total += -(-count * d.itemsize // 64) * 64
        self.scratch_bytes = total
        self.spares: list[np.ndarray | None] = [None] * len(destinations)

    def _take_spares(self) -> None:
        """This call's views of the communicator's scratch buffer (kept with self if the
        call fails)."""
        if self.scratch_bytes:
            buf = self.owner.scratch(self.scratch_bytes)
            self.spares = [None if at is None else
                           buf[at[0]:at[0] + at[1] * at[2].itemsize].view(at[2])
                           for at in self.layout]


class SwapAllReduce(_TwoMemberAllReduce):
    """An all-reduce of two members in one round: each sends its whole source to the peer
    and receives the peer's into the destination (into the communicator's scratch buffer
    when the destination is the source); once the group agreed, each reduces the two.
    Against MPICH's ``Iallreduce`` (a reduce-scatter, then an all-gather, after a copy of
    the send buffer into the receive buffer) this moves half as many messages."""

    __slots__ = ()

    def __init__(self, owner: MpiCommunicator, call: CollectiveCall, destinations: Arrays,
                 op: Any, in_place: Sequence[bool], ufunc: np.ufunc) -> None:
        super().__init__(owner, call, destinations, op, in_place, ufunc,
                         [d.size for d in destinations])

    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        comm, byte, peer, requests = self.comm, self.MPI.BYTE, self.peer, []
        self._take_spares()
        for s, d, spare in zip(sources, destinations, self.spares):
            requests.append(comm.Irecv([d if spare is None else spare, byte], peer, _SWAP_TAG))
            requests.append(comm.Isend([s, byte], peer, _SWAP_TAG))
        return requests

    def next_stage(self, sources: Arrays, destinations: Arrays) -> list:
        ufunc = self.ufunc
        for s, d, spare in zip(sources, destinations, self.spares):
            ufunc(d, s if spare is None else spare, out=d)
        return []


class PairAllReduce(_TwoMemberAllReduce):
    """An all-reduce of two members as a reduce-scatter then an all-gather of halves over
    ``Isend``/``Irecv`` (MPICH's algorithm for it, less the copy of the whole send buffer
    into the receive buffer its ``Iallreduce`` makes first): member ``r`` owns half ``r``
    of every array. Stage one sends the other half of the source to the peer and receives
    the peer's copy of the own half into the destination (into the communicator's scratch
    buffer when the destination is the source); once the group agreed, the own half is
    reduced in place, and stage two swaps the reduced halves."""

    __slots__ = ("halves",)

    def __init__(self, owner: MpiCommunicator, call: CollectiveCall, destinations: Arrays,
                 op: Any, in_place: Sequence[bool], ufunc: np.ufunc) -> None:
        self.halves: list[tuple[slice, slice]] = []
        for d in destinations:
            split = d.size // 2
            low, high = slice(0, split), slice(split, d.size)
            self.halves.append((low, high) if call.position == 0 else (high, low))
        super().__init__(owner, call, destinations, op, in_place, ufunc,
                         [own.stop - own.start for own, _ in self.halves])

    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        comm, byte, peer, requests = self.comm, self.MPI.BYTE, self.peer, []
        self._take_spares()
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


class AllGather(Prepared):
    """``Iallgather`` of each source's bytes into its destination."""

    __slots__ = ()
    stage = "all-gather"

    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        comm, byte = self.comm, self.MPI.BYTE
        return [comm.Iallgather([s, byte], [d, byte]) for s, d in zip(sources, destinations)]


class ReduceScatter(Prepared):
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


class AllToAll(Prepared):
    """``Ialltoall`` of the source's bytes (block j to position j) into the destination."""

    __slots__ = ()
    stage = "all-to-all"

    def requests(self, sources: Arrays, destinations: Arrays) -> list:
        byte = self.MPI.BYTE
        return [self.comm.Ialltoall([sources[0], byte], [destinations[0], byte])]


class AllToAllArrays(Prepared):
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


class Permute(Prepared):
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


def pause(seconds: float) -> None:
    """Between two polls: yield the core (0 s) or sleep."""
    if seconds:
        time.sleep(seconds)
    else:
        os.sched_yield()


__all__ = ["poll", "pause", "Prepared", "AllReduce", "SwapAllReduce", "PairAllReduce",
           "AllGather", "ReduceScatter", "AllToAll", "AllToAllArrays", "Permute",
           "SPIN_SECONDS", "SPIN_SECONDS_PER_BYTE", "POLLS_PER_YIELD", "SPIN_TESTS",
           "MIN_PAUSE", "MAX_PAUSE"]
