"""Devices the GPU runtime runs on: the protocol, a caching allocator and the simulator.

:class:`Device` is what the runtime (``runtime.py``) needs: device memory (``alloc`` /
``free`` through :class:`CachingAllocator`), copies host<->device and device<->device,
loading a compiled module's kernels and launching them on a grid. Two implementations:
:class:`~xlapy.backends.gpu.cuda.CudaDevice` (the CUDA driver API) and
:class:`SimDevice` (host memory; kernels are host functions emulating the grid, see
``simt.py``). Addresses are plain integers on both.
"""
from __future__ import annotations

import abc
import ctypes
import threading
from typing import Any, Sequence

import numpy as np

from ...errors import ResourceExhaustedError
from ..cpu.thunks import address_of, aligned_empty

ALIGNMENT = 256           # device allocations and arena slots are aligned to this


def align(n: int, a: int = ALIGNMENT) -> int:
    return -(-n // a) * a


class CachingAllocator:
    """Keeps freed blocks by size and hands them out again (no driver call per executable).

    ``raw_alloc(n) -> addr`` / ``raw_free(addr)`` are the device's own calls; when a raw
    allocation fails, the cached blocks are released and it is tried once more."""

    def __init__(self, raw_alloc, raw_free) -> None:
        self._raw_alloc, self._raw_free = raw_alloc, raw_free
        self._free: dict[int, list[int]] = {}
        self._sizes: dict[int, int] = {}
        self._lock = threading.Lock()
        self.cached_bytes = 0
        self.live_bytes = 0

    def alloc(self, nbytes: int) -> int:
        size = align(max(nbytes, 1))
        with self._lock:
            blocks = self._free.get(size)
            if blocks:
                addr = blocks.pop()
                self.cached_bytes -= size
                self.live_bytes += size
                return addr
        try:
            addr = self._raw_alloc(size)
        except ResourceExhaustedError:
            self.release_cached()
            addr = self._raw_alloc(size)
        with self._lock:
            self._sizes[addr] = size
            self.live_bytes += size
        return addr

    def free(self, addr: int) -> None:
        with self._lock:
            size = self._sizes.get(addr)
            if size is None:
                return
            self._free.setdefault(size, []).append(addr)
            self.cached_bytes += size
            self.live_bytes -= size

    def release_cached(self) -> None:
        with self._lock:
            blocks = [(a, s) for s, lst in self._free.items() for a in lst]
            self._free.clear()
            self.cached_bytes = 0
            for a, _ in blocks:
                self._sizes.pop(a, None)
        for a, _ in blocks:
            self._raw_free(a)


class KernelArgs:
    """A kernel's packed arguments: the ``address`` a launch passes, and the host memory
    behind it (kept alive with this object)."""

    __slots__ = ("address", "_keep")

    def __init__(self, address: int, *keep: Any) -> None:
        self.address, self._keep = address, keep


class Device(abc.ABC):
    """The operations the GPU runtime uses (see the module docstring)."""

    name = "device"
    simulated = False
    sm = "sm_80"

    @abc.abstractmethod
    def alloc(self, nbytes: int) -> int:
        """Device memory of at least ``nbytes`` (ResourceExhaustedError when none is left)."""

    @abc.abstractmethod
    def free(self, addr: int) -> None:
        """Give an :meth:`alloc` block back (to the caching allocator)."""

    @abc.abstractmethod
    def memset0(self, addr: int, nbytes: int) -> None:
        """Zero ``nbytes`` at ``addr``."""

    @abc.abstractmethod
    def h2d(self, addr: int, data: np.ndarray) -> None:
        """Copy a contiguous host array to ``addr``."""

    @abc.abstractmethod
    def d2h(self, addr: int, out: np.ndarray) -> None:
        """Copy ``out.nbytes`` from ``addr`` into a contiguous host array (waits for the
        work before it)."""

    @abc.abstractmethod
    def d2d(self, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` on the device."""

    @abc.abstractmethod
    def kernel_args(self, args: Sequence[int]) -> KernelArgs:
        """Pointer ``args`` packed as :meth:`launch` takes them (once per kernel thunk:
        buffer addresses are fixed when the plan is built)."""

    @abc.abstractmethod
    def launch(self, fn: Any, grid: int, block: int, args: KernelArgs, shared: int = 0
               ) -> None:
        """Run kernel ``fn`` on ``grid`` blocks of ``block`` threads with ``args`` from
        :meth:`kernel_args`."""

    @abc.abstractmethod
    def synchronize(self) -> None:
        """Wait for all work queued on the device."""


class SimDevice(Device):
    """Host memory standing in for device memory; kernels are host functions over the grid."""

    name = "gpu_sim"
    simulated = True
    sm = "sim"

    def __init__(self, memory_limit: int | None = None) -> None:
        self._arrays: dict[int, np.ndarray] = {}
        self.memory_limit = memory_limit
        self.allocator = CachingAllocator(self._raw_alloc, self._raw_free)
        self.launches = 0

    def _raw_alloc(self, nbytes: int) -> int:
        in_use = sum(a.nbytes for a in self._arrays.values())
        if self.memory_limit is not None and in_use + nbytes > self.memory_limit:
            raise ResourceExhaustedError(
                f"gpu_sim: out of device memory allocating {nbytes} bytes "
                f"({self.memory_limit - in_use} bytes free of {self.memory_limit})")
        arr = aligned_empty(nbytes, ALIGNMENT, zero=True)
        addr = arr.ctypes.data
        self._arrays[addr] = arr
        return addr

    def _raw_free(self, addr: int) -> None:
        self._arrays.pop(addr, None)

    def alloc(self, nbytes: int) -> int:
        return self.allocator.alloc(nbytes)

    def free(self, addr: int) -> None:
        self.allocator.free(addr)

    def memset0(self, addr: int, nbytes: int) -> None:
        ctypes.memset(addr, 0, nbytes)

    def h2d(self, addr: int, data: np.ndarray) -> None:
        if data.nbytes:
            ctypes.memmove(addr, address_of(data), data.nbytes)

    def d2h(self, addr: int, out: np.ndarray) -> None:
        if out.nbytes:
            ctypes.memmove(address_of(out), addr, out.nbytes)

    def d2d(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            ctypes.memmove(dst, src, nbytes)

    def kernel_args(self, args: Sequence[int]) -> KernelArgs:
        # the kernel's buffer table: a void* per argument
        table = (ctypes.c_void_p * max(1, len(args)))(*args)
        return KernelArgs(ctypes.addressof(table), table)

    def launch(self, fn: Any, grid: int, block: int, args: KernelArgs, shared: int = 0
               ) -> None:
        self.launches += 1
        fn(args.address, 0, grid)

    def synchronize(self) -> None:
        return None


__all__ = ["Device", "KernelArgs", "SimDevice", "CachingAllocator", "align", "ALIGNMENT"]
