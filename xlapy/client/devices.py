"""Devices: the CPU devices of this process and of the other processes of a distributed run.

As in XLA, ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` gives this process N CPU
devices (default 1). After :func:`xlapy.distributed.initialize` in an MPI launch
(``mpiexec -n K``) there are K processes; device ids are global and numbered process by
process: process i owns ids ``i*N .. i*N+N-1``. A program with ``replica_count x
num_partitions`` participants runs participant (flattened id) d on device d.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import get_debug_options


@dataclass(frozen=True)
class Device:
    """One CPU device: its global ``id``, the process that owns it, and its index there."""

    id: int
    process_index: int
    local_index: int
    platform: str = "cpu"

    @property
    def device_kind(self) -> str:
        return "cpu"

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id}, process_index={self.process_index})"

    def memory_stats(self) -> dict[str, int]:
        """JAX's ``Device.memory_stats()``: the counters of :func:`xlapy.profiler.
        memory_stats` (the CPU devices of a process share its memory and counters)."""
        from ..backends.memory_stats import STATS
        return STATS.snapshot()


class _ProcessState:
    """Set by ``xlapy.distributed.initialize``: this process's index, the process count and
    the communicator between processes (None in a single-process run)."""

    def __init__(self) -> None:
        self.index = 0
        self.count = 1
        self.communicator: Any = None


PROCESS = _ProcessState()


def local_device_count() -> int:
    """CPU devices in this process (``--xla_force_host_platform_device_count``)."""
    return max(1, int(get_debug_options().xla_force_host_platform_device_count))


def process_index() -> int:
    """This process's index among :func:`process_count` processes."""
    return PROCESS.index


def process_count() -> int:
    """Processes in this run (1 unless ``xlapy.distributed.initialize`` found more)."""
    return PROCESS.count


def device_count() -> int:
    """Devices in all processes."""
    return local_device_count() * process_count()


def devices() -> list[Device]:
    """Every device of the run, in global id order."""
    n = local_device_count()
    return [Device(p * n + i, p, i) for p in range(process_count()) for i in range(n)]


def local_devices() -> list[Device]:
    """This process's devices."""
    n = local_device_count()
    return [Device(process_index() * n + i, process_index(), i) for i in range(n)]


__all__ = ["Device", "devices", "local_devices", "device_count", "local_device_count",
           "process_index", "process_count"]
