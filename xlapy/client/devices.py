"""Devices: the CPU devices of this process and of the other processes of a distributed run,
and the GPU of the ``gpu`` / ``gpu_sim`` backends (``devices("gpu")``).

As in XLA, ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` gives this process N CPU
devices (default 1). After :func:`xlapy.distributed.initialize` in an MPI launch
(``mpiexec -n K``) there are K processes; device ids are global and numbered process by
process: process i owns ids ``i*N .. i*N+N-1``. A program with ``replica_count x
num_partitions`` participants runs participant (flattened id) d on device d.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..config import get_debug_options
from ..errors import InvalidArgumentError


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


def process_device_ids(total: int, mismatch: Callable[[int], str]) -> list[int] | None:
    """The global ids of this process's devices in a run over ``total`` devices (process i
    owns ``i*N .. i*N+N-1``); None in a single-process run (all ``total`` are its own).
    When the run's processes x N devices are not ``total``, raises
    ``InvalidArgumentError(mismatch(N))``."""
    if PROCESS.count == 1:
        return None
    local = local_device_count()
    if local * PROCESS.count != total:
        raise InvalidArgumentError(mismatch(local))
    return list(range(PROCESS.index * local, (PROCESS.index + 1) * local))


@dataclass(frozen=True)
class GpuDevice:
    """A GPU of this process: ``platform`` ``"gpu"`` (an NVIDIA GPU through the CUDA driver)
    or ``"gpu_sim"`` (the simulator). ``xlapy.device_put(x, device)`` puts a value on it."""

    id: int
    platform: str = "gpu"
    process_index: int = 0
    local_index: int = 0

    @property
    def device_kind(self) -> str:
        return getattr(self.runtime(), "device_name", self.platform)

    def runtime(self) -> Any:
        """The backend's runtime device (``xlapy.backends.gpu.device.Device``); opening it
        raises ``DeviceUnavailableError`` when there is no usable GPU."""
        from .backends import get_backend
        return get_backend(self.platform).device

    def __repr__(self) -> str:
        kind = "GpuSimDevice" if self.platform == "gpu_sim" else "CudaDevice"
        return f"{kind}(id={self.id})"


_GPU_PLATFORMS = ("gpu", "gpu_sim", "cuda")


def devices(backend: str | None = None) -> list[Any]:
    """Every device of the run, in global id order: the CPU devices, or with ``backend``
    ``"gpu"`` (``"cuda"``) / ``"gpu_sim"`` that backend's GPU (DeviceUnavailableError
    naming what is missing when there is none)."""
    if backend is not None and backend.lower() in _GPU_PLATFORMS:
        platform = "gpu_sim" if backend.lower() == "gpu_sim" else "gpu"
        device = GpuDevice(0, platform)
        device.runtime()                 # no usable GPU: the error names what is missing
        return [device]
    n = local_device_count()
    return [Device(p * n + i, p, i) for p in range(process_count()) for i in range(n)]


def local_devices() -> list[Device]:
    """This process's devices."""
    n = local_device_count()
    return [Device(process_index() * n + i, process_index(), i) for i in range(n)]


__all__ = ["Device", "GpuDevice", "devices", "local_devices", "device_count", "local_device_count",
           "process_index", "process_count", "process_device_ids"]
