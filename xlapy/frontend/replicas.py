"""Replicated execution: compiled functions called by the replicas of a data-parallel run.

A distribution strategy (``xlapy.tf.distribute``) runs its step function once per replica,
each replica on its own thread inside
:func:`xlapy.backends.communicator.participating` (its replica id, the replica count and the
communicator that joins them). While a thread runs a replica, :func:`replicated` tells the
front end how many replicas run in sync:

- ``jit`` keys its cache on the count and gives the traced module ``replica_count=N``, so a
  collective traced into the step (``all-reduce`` over ``{{0..N-1}}``) is a valid
  N-participant program; one compile serves every replica (same code, same key);
- each replica executes its own instance of the executable (:func:`executable_for`: same
  code, own memory), so N replicas never wait for one another's executable, only at their
  collectives.

Outside :func:`replicated` the count is 1 and nothing changes.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

from ..backends.communicator import current_participant
from ..errors import InvalidArgumentError
from ..threadlocal import PerThreadList

_COUNTS = PerThreadList()          # per thread: replica counts of the enclosing runs
_INSTANCES_LOCK = threading.Lock()


@contextmanager
def replicated(count: int) -> Iterator[None]:
    """Compiled functions called in the block run as one of ``count`` replicas."""
    if int(count) < 1:
        raise InvalidArgumentError(f"replicated: the replica count must be >= 1, got {count}")
    with _COUNTS.pushed(int(count)):
        yield


def replica_count() -> int:
    """How many replicas the calling thread's compiled calls run with (1 outside a
    replicated run)."""
    counts = _COUNTS.items
    return counts[-1] if counts else 1


def executable_for(executable: Any) -> Any:
    """The instance of ``executable`` that the replica running on this thread uses (one per
    device, made on first use and kept on the executable); ``executable`` itself outside
    a multi-participant run."""
    p = current_participant()
    if p is None or p.replicas * p.partitions == 1:
        return executable
    instances = getattr(executable, "_replica_instances", None)
    exe = None if instances is None else instances.get(p.device)
    if exe is None:
        with _INSTANCES_LOCK:
            instances = getattr(executable, "_replica_instances", None)
            if instances is None:
                instances = {}
                executable._replica_instances = instances
            exe = instances.get(p.device)
            if exe is None:
                exe = executable if not instances else executable.new_instance()
                instances[p.device] = exe
    return exe


__all__ = ["replicated", "replica_count", "executable_for"]
