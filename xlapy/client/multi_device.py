"""Running a module with several participants: one execution per device.

A module with ``replica_count x num_partitions`` = N > 1 participants runs as N executions of
the same compiled program, participant d (flattened id ``replica * num_partitions +
partition``) on device d. This process runs the participants of its local devices, each on its
own thread with its own executable instance (``executable.new_instance()``: same code, own
memory), all joined by one communicator:

- a single process: :class:`~xlapy.backends.communicator.InProcessCommunicator` (N local
  devices from ``--xla_force_host_platform_device_count``, or as many threads as the module
  needs on the interpreter, the semantic oracle);
- several processes (``xlapy.distributed.initialize`` under ``mpiexec``): the communicator set
  up there (MPI alone with one device per process; threads and MPI with several); process p
  runs the participants ``p*L .. p*L+L-1`` of its L local devices.
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

from ..backends.communicator import (InProcessCommunicator, Participant, participating,
                                     run_participants)
from ..errors import InvalidArgumentError
from ..hlo.ir import HloModule
from ..hlo.replica_groups import participant_count
from .devices import PROCESS, local_device_count, process_device_ids

log = logging.getLogger("xlapy.collectives")


def device_instances(executable: Any, count: int) -> list[Any]:
    """``count`` executables of one compiled module that may run at the same time (kept on the
    executable, so repeated runs reuse them)."""
    instances = getattr(executable, "_device_instances", None)
    if instances is None:
        instances = [executable]
        try:
            executable._device_instances = instances
        except AttributeError:
            pass
    while len(instances) < count:
        instances.append(executable.new_instance())
    return instances[:count]


def local_participants(module: HloModule) -> list[int]:
    """The flattened ids this process runs: all of them in a single process; in a
    multi-process run, the ids of this process's devices."""
    replicas, partitions = participant_count(module)
    total = replicas * partitions
    ids = process_device_ids(total, lambda local: (
        f"module {module.name} has {total} participants ({replicas} replica(s) x "
        f"{partitions} partition(s)), but the run has {PROCESS.count} processes x {local} "
        f"device(s)"))
    return list(range(total)) if ids is None else ids


def run_devices(module: HloModule, executable: Any, per_device_args: Sequence[Sequence[Any]],
                prepare, timeout: float | None = None, backend: str = "cpu") -> list[Any]:
    """Run ``executable`` once per local participant, ``per_device_args[i]`` on the i-th;
    returns each participant's root value, in the same order. ``prepare(args, device)``
    checks and converts one device's arguments. A backend other than the interpreter needs
    a device per participant (``--xla_force_host_platform_device_count``)."""
    replicas, partitions = participant_count(module)
    ids = local_participants(module)
    if backend != "interpreter" and PROCESS.count == 1 and len(ids) > local_device_count():
        raise InvalidArgumentError(
            f"module {module.name} needs {len(ids)} devices ({replicas} replica(s) x "
            f"{partitions} partition(s)), but this process has {local_device_count()} "
            f"{backend} device(s): set XLA_FLAGS=--xla_force_host_platform_device_count="
            f"{len(ids)}")
    if len(per_device_args) != len(ids):
        raise InvalidArgumentError(
            f"module {module.name} runs {len(ids)} participant(s) in this process "
            f"({replicas} replica(s) x {partitions} partition(s)"
            + (f", process {PROCESS.index} of {PROCESS.count}" if PROCESS.count > 1 else "")
            + f"): pass one argument list per participant, got {len(per_device_args)}")
    prepared = [prepare(args, d) for args, d in zip(per_device_args, ids)]
    comm = PROCESS.communicator if PROCESS.count > 1 else InProcessCommunicator()
    instances = device_instances(executable, len(ids))

    def run_one(k: int) -> Any:
        d = ids[k]
        with participating(Participant(d // partitions, d % partitions, replicas, partitions,
                                       comm)):
            return instances[k].execute(prepared[k])
    previous = comm.timeout
    if timeout is not None:
        comm.timeout = float(timeout)       # for this run (a process's communicator is shared)
    try:
        if len(ids) == 1:       # one device per process: it runs on the calling thread
            return [run_one(0)]
        return run_participants(run_one, len(ids), comm)
    finally:
        comm.timeout = previous


__all__ = ["run_devices", "participant_count", "local_participants", "device_instances"]
