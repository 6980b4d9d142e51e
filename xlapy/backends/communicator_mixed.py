"""Several devices per process and several processes: threads meet in shared memory, one
thread per process talks MPI.

Devices are numbered process by process (process p owns ``p*L .. p*L+L-1`` for L local
devices). For one collective call, the group's members in this process meet in the
in-process rendezvous (:class:`~xlapy.backends.communicator.InProcessCommunicator`); the
member with the lowest id (the *leader*) then trades the local members' arrays with the
leaders of the other processes in the group -- point-to-point ``Isend``/``Irecv`` on the world
communicator, tagged by the call (sequence number and group), so concurrent collectives of
different groups never need a common order and no sub-communicator has to be created
collectively -- and publishes every member's arrays; each member computes its own result in
group order, exactly as in one process. A header before the data carries a CRC of the op,
shapes and group: leaders that disagree fail (and with them their process's members) naming
the collective. Waits poll with the timeout; MPI runs with ``MPI_THREAD_MULTIPLE``.
"""
from __future__ import annotations

import zlib
from typing import Any, Callable

import numpy as np

from ..errors import CollectiveError
from .communicator import Arrays, CollectiveCall, InProcessCommunicator
from .communicator_mpi import poll

_TAG_SPACE = 16000          # tags 2t and 2t+1 stay below MPI's guaranteed 32767


class MixedCommunicator(InProcessCommunicator):
    """Collectives between ``local_count`` devices in each of the processes of ``comm``."""

    def __init__(self, comm: Any, local_count: int, timeout: float | None = None) -> None:
        super().__init__(timeout)
        from mpi4py import MPI
        self.MPI = MPI
        self.world = comm
        self.rank = comm.Get_rank()
        self.local_count = local_count

    def owner(self, device: int) -> int:
        return device // self.local_count

    def exchange(self, call: CollectiveCall, arrays: Arrays, compute: Callable[[list], Any]
                 ) -> Any:
        local = tuple(d for d in sorted(call.group) if self.owner(d) == self.rank)
        with self._cond:
            key, rv = self._arrive(call, local, arrays)
            if call.device == local[0]:
                mine = {d: rv.slots[i] for i, d in enumerate(local)}
                try:
                    rv.gathered = {**mine, **self._trade(call, key, local, mine)}
                except BaseException as e:
                    self._aborted = self._aborted or f"{call.what} failed: {e}"
                    self._cond.notify_all()
                    raise
                self._cond.notify_all()
            else:
                self._wait(call, lambda: rv.gathered is not None, "gather", rv)
        inputs = [rv.gathered[d] for d in call.group]
        return self._compute_and_leave(call, key, rv, inputs, compute)

    def _trade(self, call: CollectiveCall, key: tuple, local: tuple[int, ...],
               mine: dict[int, Arrays]) -> dict[int, Arrays]:
        """The other processes' members' arrays (this process's leader, holding the lock:
        the other local members wait anyway)."""
        others = sorted({self.owner(d) for d in call.group} - {self.rank})
        if not others:
            return {}
        t = zlib.crc32(repr(key).encode()) % _TAG_SPACE
        check = zlib.crc32(repr((call.signature, call.group)).encode())
        payload = np.concatenate([np.ascontiguousarray(a).reshape(-1).view(np.uint8)
                                  for d in local for a in mine[d]] or [np.zeros(0, np.uint8)])
        header = np.array([check, payload.size], dtype=np.int64)
        sends = []
        for q in others:
            sends.append(self.world.Isend(header, dest=q, tag=2 * t))
            sends.append(self.world.Isend(payload, dest=q, tag=2 * t + 1))
        headers = {q: np.empty(2, np.int64) for q in others}
        self._poll(call, [self.world.Irecv(headers[q], source=q, tag=2 * t) for q in others])
        for q, h in headers.items():
            if h[0] != check or h[1] != payload.size:
                raise CollectiveError(f"participants disagree at {call.what}: process {q} runs "
                                      f"another collective, group or operand shapes than "
                                      f"process {self.rank} ({call.signature[1:]} over "
                                      f"{list(call.group)})")
        data = {q: np.empty(payload.size, np.uint8) for q in others}
        self._poll(call, [self.world.Irecv(data[q], source=q, tag=2 * t + 1) for q in others]
                   + sends)
        template = mine[local[0]]
        out: dict[int, Arrays] = {}
        for q in others:
            offset = 0
            for d in (d for d in sorted(call.group) if self.owner(d) == q):
                arrays = []
                for a in template:
                    n = a.nbytes
                    arrays.append(data[q][offset:offset + n].view(a.dtype).reshape(a.shape))
                    offset += n
                out[d] = arrays
        return out

    def _poll(self, call: CollectiveCall, requests: list) -> None:
        def check() -> None:
            if self._aborted is not None:
                raise CollectiveError(f"{call.what}: abandoned because {self._aborted}")
        # pausing in the condition lets this process's threads run
        if not poll(self.MPI, requests, self.timeout, self._cond.wait, check):
            raise CollectiveError(f"{call.what} on process {self.rank}: timed out after "
                                  f"{self.timeout:g} s waiting for the other processes of "
                                  f"group {list(call.group)}")


__all__ = ["MixedCommunicator"]
