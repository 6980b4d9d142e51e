"""The runtime side of collectives: who the running device is, and how participants meet.

A program with ``replica_count x num_partitions`` > 1 participants runs once per device. Each
run happens inside :func:`participating` with a :class:`Participant`: the device's replica and
partition, the module's counts, and the :class:`Communicator` that connects it to the others.
The interpreter's collective handlers (which the CPU backend also runs, as fallback thunks on
views of its buffers) and the CPU backend's collective thunks (which hand their buffers to
a call prepared once by :meth:`Communicator.bind_all_reduce` and its siblings) read it with
:func:`current_participant`.

A communicator moves the participants' arrays for one collective call, identified by a
:class:`CollectiveCall` (the op's text for errors, the group as flattened device ids in group
order, the caller's position in it, and the caller's sequence number in that group: the k-th
collective a device runs with a group meets the k-th of the other members, as in XLA, where every
device runs the same schedule; the members must agree on the op's name and operand shapes).
Two implementations, chosen at run time:

- :class:`InProcessCommunicator` (here): N devices on N threads of one process. A rendezvous per
  (sequence number, group): each participant deposits NumPy views of its operand buffers, waits
  for the group, computes its own result from the others' views (in group order, so every member
  gets the same bits), and waits for the group again before leaving, so no buffer is reused
  while another participant still reads it. Nothing is copied through Python objects.
- ``MpiCommunicator`` (``communicator_mpi.py``): one device per MPI process; mpi4py's buffer
  calls (``Allreduce``, ``Allgather``, ``Reduce_scatter_block``, ``Alltoall``, ``Sendrecv``) on
  the arrays themselves, over a sub-communicator per group whose ranks are group positions.

Failures never hang: a participant that raises calls :meth:`Communicator.abort`, which wakes
every waiting participant with a :class:`~xlapy.errors.CollectiveError` naming the collective;
participants that disagree on the op or on shapes all fail the same way; a wait longer than the
timeout (``--xla_cpu_collective_call_terminate_timeout_seconds``, default 60) fails and names
the participants that never arrived.
"""
from __future__ import annotations

import abc
import contextvars
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..config import get_debug_options
from ..errors import CollectiveError

Arrays = list  # list[np.ndarray]: one collective operand per entry (tuple forms have several)


@dataclass(slots=True)
class CollectiveCall:
    """One participant's view of one collective: ``what`` names it in errors (``all-reduce
    %ar.1``), ``group`` lists the flattened device ids in group order, ``position`` is the
    caller's index in it, ``sequence`` the caller's count of collectives run with this group
    so far. Made once per call (on the runtime's per-call path: not frozen, which would make
    it several times slower to build) and never changed afterwards."""

    what: str
    group: tuple[int, ...]
    position: int
    sequence: int
    signature: tuple = ()       # opcode and operand shapes: must agree across the group
    groups: tuple[tuple[int, ...], ...] = ()    # every group of this op (the same everywhere)

    @property
    def device(self) -> int:
        return self.group[self.position]


def default_timeout() -> float:
    """Seconds a participant waits for the others (``XLA_FLAGS``)."""
    return float(get_debug_options().xla_cpu_collective_call_terminate_timeout_seconds)


class Communicator(abc.ABC):
    """Moves arrays between the participants of collectives (see the module docstring).

    Subclasses implement :meth:`exchange`; the collective methods have portable definitions
    in terms of it and may be overridden with native calls (MPI). ``combine(a, b)`` is the
    reduction computation applied elementwise; reductions fold in group order.
    """

    timeout: float = 60.0

    @abc.abstractmethod
    def exchange(self, call: CollectiveCall, arrays: Arrays, compute: Callable[[list], Any]
                 ) -> Any:
        """Every member's ``arrays`` in group order are handed to ``compute`` (while they are
        all still valid); its result is returned. The members must agree on the call's
        signature and group."""

    def abort(self, reason: str) -> None:
        """Make every waiting and future collective call fail with ``reason``."""

    # ----- collectives (portable definitions)
    def all_reduce(self, call: CollectiveCall, arrays: Arrays,
                   combine: Callable[[Any, Any], Any], kind: str | None) -> Arrays:
        """Elementwise reduction of each operand over the group."""
        return self.exchange(call, arrays, lambda members: [
            _fold([m[i] for m in members], combine, a.dtype) for i, a in enumerate(arrays)])

    def all_reduce_into(self, call: CollectiveCall, sources: Arrays, destinations: Arrays,
                        combine: Callable[[Any, Any], Any], kind: str | None) -> None:
        """:meth:`all_reduce` of ``sources`` written into ``destinations`` (arrays of the same
        dtypes and sizes; a destination is either its source itself, the same array object,
        or memory that overlaps no source). Implementations with a native reduction reduce
        straight into the destinations."""
        for out, dst in zip(self.all_reduce(call, sources, combine, kind), destinations):
            dst[...] = out.reshape(dst.shape)

    def all_gather(self, call: CollectiveCall, arrays: Arrays, dim: int) -> Arrays:
        """Each operand concatenated over the group along ``dim`` in group order."""
        return self.exchange(call, arrays, lambda members: [
            np.concatenate([m[i] for m in members], axis=dim) for i in range(len(arrays))])

    def all_gather_into(self, call: CollectiveCall, sources: Arrays, destinations: Arrays
                        ) -> None:
        """The members' flat ``sources``, in group order, written one after the other into
        each flat destination (memory that overlaps no source)."""
        for out, dst in zip(self.all_gather(call, sources, 0), destinations):
            dst[...] = out

    def reduce_scatter(self, call: CollectiveCall, arrays: Arrays, dim: int,
                       combine: Callable[[Any, Any], Any], kind: str | None) -> Arrays:
        """Block ``position`` (along ``dim``) of the group's reduction of each operand."""
        n, k = len(call.group), call.position

        def compute(members: list) -> Arrays:
            out = []
            for i, a in enumerate(arrays):
                size = a.shape[dim] // n
                index = (slice(None),) * dim + (slice(k * size, (k + 1) * size),)
                out.append(_fold([m[i][index] for m in members], combine, a.dtype))
            return out
        return self.exchange(call, arrays, compute)

    def all_to_all(self, call: CollectiveCall, blocks: Arrays) -> Arrays:
        """``blocks[j]`` goes to group position j; returns what each position sent here."""
        k = call.position
        return self.exchange(call, blocks, lambda members: [np.array(m[k], copy=True)
                                                            for m in members])

    def broadcast(self, call: CollectiveCall, arrays: Arrays) -> Arrays:
        """The first group member's arrays."""
        return self.exchange(call, arrays, lambda members: [np.array(a, copy=True)
                                                            for a in members[0]])

    def permute(self, call: CollectiveCall, arrays: Arrays, source: int | None,
                target: int | None) -> Arrays | None:
        """collective-permute over ``call.group`` (every device): send ``arrays`` to device
        ``target`` and receive from device ``source`` (None: nothing); returns the received
        arrays or None when nothing is received."""
        where = {d: i for i, d in enumerate(call.group)}

        def compute(members: list) -> Arrays | None:
            if source is None:
                return None
            return [np.array(a, copy=True) for a in members[where[source]]]
        return self.exchange(call, arrays, compute)

    # ----- prepared collectives (the CPU backend's collective thunks)
    def bind_all_reduce(self, call: CollectiveCall, sources: Arrays, destinations: Arrays,
                        combine: Callable[[Any, Any], Any], kind: str | None,
                        in_place: Sequence[bool]) -> Bound:
        """:meth:`all_reduce_into` for the calls of one op (``call`` with any sequence
        number), prepared once: the returned ``run(sequence, sources, destinations)`` runs
        the op's call of that sequence number on flat arrays like ``sources`` and
        ``destinations`` (same dtypes and sizes on every call; ``in_place[i]``: destination
        ``i`` is source ``i`` itself). Communicators with native collectives prepare the
        call's fixed parts here; this portable one calls :meth:`all_reduce_into`."""
        return lambda sequence, sources, destinations: self.all_reduce_into(
            _numbered(call, sequence), sources, destinations, combine, kind)

    def bind_all_gather(self, call: CollectiveCall, sources: Arrays, destinations: Arrays
                        ) -> Bound:
        """:meth:`all_gather_into` prepared for the calls of one op (see
        :meth:`bind_all_reduce`)."""
        return lambda sequence, sources, destinations: self.all_gather_into(
            _numbered(call, sequence), sources, destinations)

    def bind_reduce_scatter(self, call: CollectiveCall, sources: Arrays, destinations: Arrays,
                            combine: Callable[[Any, Any], Any], kind: str | None) -> Bound:
        """Reduce-scatter of flat sources (each the group's blocks one after the other in
        memory) into flat destinations (block ``position`` of the reduction), prepared for
        the calls of one op (see :meth:`bind_all_reduce`)."""
        def run(sequence: int, sources: Arrays, destinations: Arrays) -> None:
            outs = self.reduce_scatter(_numbered(call, sequence), sources, 0, combine, kind)
            for out, dst in zip(outs, destinations):
                dst[...] = out
        return run

    def bind_all_to_all(self, call: CollectiveCall, sources: Arrays, destinations: Arrays
                        ) -> Bound:
        """All-to-all of one flat source (the group's blocks one after the other: block j
        goes to position j) into one flat destination (the blocks received, in group
        order), prepared for the calls of one op (see :meth:`bind_all_reduce`)."""
        n = len(call.group)

        def run(sequence: int, sources: Arrays, destinations: Arrays) -> None:
            received = self.all_to_all(_numbered(call, sequence), np.split(sources[0], n))
            np.concatenate(received, out=destinations[0])
        return run

    def bind_all_to_all_arrays(self, call: CollectiveCall, sources: Arrays,
                               destinations: Arrays) -> Bound:
        """Tuple-form all-to-all of flat arrays, one per group position and all of one
        size (``sources[j]`` goes to position j, ``destinations[j]`` receives what position
        j sent here), prepared for the calls of one op (see :meth:`bind_all_reduce`)."""
        def run(sequence: int, sources: Arrays, destinations: Arrays) -> None:
            received = self.all_to_all(_numbered(call, sequence), sources)
            for dst, got in zip(destinations, received):
                np.copyto(dst, got)
        return run

    def bind_permute(self, call: CollectiveCall, sources: Arrays, destinations: Arrays,
                     source: int | None, target: int | None) -> Bound:
        """collective-permute of flat sources (sent to device ``target``) into flat
        destinations (received from device ``source``; zeros when None), prepared for the
        calls of one op (see :meth:`bind_all_reduce`)."""
        def run(sequence: int, sources: Arrays, destinations: Arrays) -> None:
            received = self.permute(_numbered(call, sequence), sources, source, target)
            for k, dst in enumerate(destinations):
                dst[...] = 0 if received is None else received[k]
        return run


#: A prepared collective: ``run(sequence, sources, destinations)`` (``Communicator.bind_*``).
Bound = Callable[[int, list, list], None]


def _numbered(call: CollectiveCall, sequence: int) -> CollectiveCall:
    """``call`` with sequence number ``sequence``."""
    return CollectiveCall(call.what, call.group, call.position, sequence, call.signature,
                          call.groups)


def _fold(parts: list, combine: Callable[[Any, Any], Any], dtype: np.dtype) -> np.ndarray:
    """``combine`` folded over the members' ``parts`` in group order (so every member gets the
    same bits), as a new array of ``dtype``."""
    acc = parts[0]
    for part in parts[1:]:
        acc = combine(acc, part)
    return np.array(acc, dtype=dtype, copy=True)


class _Rendezvous:
    """One collective call's meeting point: the members that meet here (device ids, sorted),
    their arrays and signatures by slot, how many arrived and left, and (across processes)
    every member's arrays once gathered."""

    __slots__ = ("members", "slots", "arrived", "left", "signatures", "gathered")

    def __init__(self, members: tuple[int, ...]) -> None:
        self.members = members
        self.slots: list[Any] = [None] * len(members)
        self.signatures: list[Any] = [None] * len(members)
        self.arrived = 0
        self.left = 0
        self.gathered: dict[int, Any] | None = None


class InProcessCommunicator(Communicator):
    """Participants on threads of this process meet through shared memory (module docstring).

    One instance serves one multi-device run; ``timeout`` is in seconds.
    """

    def __init__(self, timeout: float | None = None) -> None:
        self.timeout = default_timeout() if timeout is None else float(timeout)
        self._cond = threading.Condition()
        self._rendezvous: dict[tuple, _Rendezvous] = {}
        self._aborted: str | None = None

    def abort(self, reason: str) -> None:
        with self._cond:
            if self._aborted is None:
                self._aborted = reason
            self._cond.notify_all()

    def _wait(self, call: CollectiveCall, done: Callable[[], bool], stage: str,
              rv: _Rendezvous) -> None:
        deadline = time.monotonic() + self.timeout
        while not done():
            if self._aborted is not None:
                raise CollectiveError(f"{call.what} on device {call.device}: abandoned because "
                                      f"{self._aborted}")
            left = deadline - time.monotonic()
            if left <= 0:
                missing = [d for d, s in zip(rv.members, rv.slots) if s is None] \
                    if stage == "arrive" else []
                reason = (f"{call.what} on device {call.device}: timed out after "
                          f"{self.timeout:g} s waiting for "
                          + (f"devices {missing} to arrive" if missing else
                             "the group to finish"))
                self._aborted = reason
                self._cond.notify_all()
                raise CollectiveError(reason)
            self._cond.wait(min(left, 0.5))
        if self._aborted is not None:
            raise CollectiveError(f"{call.what} on device {call.device}: abandoned because "
                                  f"{self._aborted}")

    def _arrive(self, call: CollectiveCall, members: tuple[int, ...], arrays: Arrays
                ) -> tuple[tuple, _Rendezvous]:
        """Deposit ``arrays`` in the rendezvous of ``members`` (the group's devices that meet
        here, sorted) and wait until all of them did and agree; holds the condition."""
        key = (call.sequence, tuple(sorted(call.group)))
        n = len(members)
        slot = members.index(call.device)
        rv = self._rendezvous.get(key)
        if rv is None:
            rv = self._rendezvous[key] = _Rendezvous(members)
        rv.slots[slot] = arrays
        rv.signatures[slot] = (call.what, call.signature, call.group)
        rv.arrived += 1
        self._cond.notify_all()
        self._wait(call, lambda: rv.arrived == n, "arrive", rv)
        mine = rv.signatures[slot]
        for d, sig in zip(members, rv.signatures):
            if sig[1:] != mine[1:]:
                reason = (f"participants disagree at {call.what}: device {call.device} "
                          f"runs {mine[0]} on {list(mine[1][1:])} over {list(mine[2])}, "
                          f"device {d} runs {sig[0]} on {list(sig[1][1:])} over "
                          f"{list(sig[2])}")
                self._aborted = self._aborted or reason
                self._cond.notify_all()
                raise CollectiveError(reason)
        return key, rv

    def _compute_and_leave(self, call: CollectiveCall, key: tuple, rv: _Rendezvous,
                           inputs: list, compute: Callable[[list], Any]) -> Any:
        try:
            result = compute(inputs)
        except BaseException as e:
            self.abort(f"{call.what} failed on device {call.device}: {e}")
            raise
        with self._cond:
            rv.left += 1
            self._cond.notify_all()
            self._wait(call, lambda: rv.left == len(rv.members), "leave", rv)
            if self._rendezvous.get(key) is rv:
                del self._rendezvous[key]
        return result

    def exchange(self, call: CollectiveCall, arrays: Arrays, compute: Callable[[list], Any]
                 ) -> Any:
        members = tuple(sorted(call.group))     # slots by device id, whatever the order
        with self._cond:
            key, rv = self._arrive(call, members, arrays)
        inputs = [rv.slots[members.index(d)] for d in call.group]
        return self._compute_and_leave(call, key, rv, inputs, compute)


@dataclass
class Participant:
    """The device running on this thread: its replica and partition among the module's
    ``replicas`` x ``partitions``, and the communicator to the other participants."""

    replica: int
    partition: int
    replicas: int
    partitions: int
    communicator: Communicator
    sequences: dict = field(default_factory=dict)
    #: ``(replicas, partitions, device)``: what a compiled collective's plan depends on
    key: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.key = (self.replicas, self.partitions, self.device)

    @property
    def device(self) -> int:
        """The flattened device id ``replica * partitions + partition``."""
        return self.replica * self.partitions + self.partition

    def next_sequence(self, group: tuple[int, ...]) -> int:
        """How many collectives this device ran with ``group`` before this one (the k-th
        collective of a group meets the k-th of every other member)."""
        s = self.sequences.get(group, 0)
        self.sequences[group] = s + 1
        return s


_local = threading.local()


def current_participant() -> Participant | None:
    """The participant running on this thread (None outside a multi-device run)."""
    return getattr(_local, "participant", None)


class _Participating:
    """:func:`participating`'s context manager (a class: it is entered on every call of a
    multi-device program, and a generator-based one costs several times more)."""

    __slots__ = ("participant", "previous")

    def __init__(self, participant: Participant) -> None:
        self.participant = participant
        self.previous: Participant | None = None

    def __enter__(self) -> Participant:
        self.previous = getattr(_local, "participant", None)      # current_participant()
        _local.participant = self.participant
        return self.participant

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        _local.participant = self.previous
        if error is not None:
            p = self.participant
            p.communicator.abort(f"device {p.device} failed: {type(error).__name__}: {error}")


def participating(participant: Participant) -> _Participating:
    """Run the body of ``with participating(p):`` as ``participant``; an exception aborts
    the other participants."""
    return _Participating(participant)


def run_participants(run_one: Callable[[int], Any], count: int,
                     communicator: Communicator | None = None) -> list[Any]:
    """Run ``run_one(device)`` for ``count`` in-process devices, each on its own thread, and
    return their results in device order; the first failure (a device's own error before the
    others' "abandoned" errors) is re-raised after every thread has ended."""
    results: list[Any] = [None] * count
    errors: list[tuple[int, BaseException]] = []

    def body(d: int) -> None:
        try:
            results[d] = run_one(d)
        except BaseException as e:      # noqa: BLE001 - re-raised below
            errors.append((d, e))
            if communicator is not None:
                communicator.abort(f"device {d} failed: {type(e).__name__}: {e}")

    # each thread sees the caller's context (``debug_options`` overrides, ...)
    threads = [threading.Thread(target=contextvars.copy_context().run, args=(body, d),
                                name=f"xlapy-device-{d}", daemon=True) for d in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        # a participant's own failure is more telling than the others' "abandoned" errors
        errors.sort(key=lambda de: ("abandoned because" in str(de[1]), de[0]))
        raise errors[0][1]
    return results


def signature_of(what: str, arrays: Sequence[np.ndarray]) -> tuple:
    """What the participants of one collective must agree on: the op (``what``: a key
    that is the same in every process running the same program) and its operands' dtypes
    and dims."""
    return (what,) + tuple((str(a.dtype), tuple(a.shape)) for a in arrays)


__all__ = ["Communicator", "InProcessCommunicator", "CollectiveCall", "Participant", "Bound",
           "current_participant", "participating", "run_participants", "signature_of",
           "default_timeout"]
