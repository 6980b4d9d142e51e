"""Devices the GPU runtime runs on: the protocol, a caching allocator and the simulator.

:class:`Device` is what the runtime (``runtime.py``) needs: device memory (``alloc`` /
``free`` through :class:`CachingAllocator`), copies host<->device and device<->device,
loading a compiled module's kernels and launching them on a grid. Two implementations:
:class:`~xlapy.backends.gpu.cuda.CudaDevice` (the CUDA driver API) and
:class:`SimDevice` (host memory; kernels are host functions emulating the grid, see
``simt.py``). Addresses are plain integers on both.

Values that stay on the device between calls are :class:`DeviceValue` s: an array's
shape and dtype at an offset of a :class:`DeviceBuffer` (a block of the device's
caching allocator, given back when the last value holding it is collected). Every
device counts its copies (:class:`CopyCounters`: host to device, device to host, device
to device), so tests and benchmarks can see what a call moved.
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
        # reentrant: a DeviceBuffer collected by the garbage collector while this thread
        # holds the lock (in alloc) frees its block from its finalizer
        self._lock = threading.RLock()
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
    """A kernel's packed arguments: the ``address`` a launch passes, the host memory
    behind it (kept alive with this object) and ``slots``: the array whose item ``i`` is
    argument ``i``'s device address (the runtime rewrites it when a buffer is rebound)."""

    __slots__ = ("address", "slots", "_keep")

    def __init__(self, address: int, slots: Any, *keep: Any) -> None:
        self.address, self.slots, self._keep = address, slots, keep


class CopyCounters:
    """How many copies (and bytes) a device made, per direction."""

    __slots__ = ("h2d", "d2h", "d2d", "h2d_bytes", "d2h_bytes", "d2d_bytes")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Set every counter to zero."""
        self.h2d = self.d2h = self.d2d = 0
        self.h2d_bytes = self.d2h_bytes = self.d2d_bytes = 0

    def snapshot(self) -> dict[str, int]:
        """The counters as a dict (subtract two snapshots for one call's copies)."""
        return {k: getattr(self, k) for k in self.__slots__}


class DeviceBuffer:
    """``nbytes`` of device memory at ``address``, from ``device``'s caching allocator;
    given back to it when this object is collected (its finalizer)."""

    __slots__ = ("device", "address", "nbytes", "__weakref__")

    def __init__(self, device: "Device", address: int, nbytes: int) -> None:
        self.device, self.address, self.nbytes = device, address, nbytes

    def __del__(self) -> None:
        try:
            self.device.free(self.address)
        except Exception:       # interpreter shutdown: the device may be gone already
            pass

    def __repr__(self) -> str:
        return f"<DeviceBuffer {self.nbytes} bytes at {self.address:#x} on {self.device.name}>"


class DeviceValue:
    """An array that lives on a device: ``shape`` and ``dtype``, row-major at ``offset``
    of ``buffer``. :meth:`read` copies it to the host."""

    __slots__ = ("buffer", "offset", "shape", "dtype", "__weakref__")

    def __init__(self, buffer: DeviceBuffer, offset: int, shape: tuple[int, ...],
                 dtype: np.dtype) -> None:
        self.buffer, self.offset, self.shape, self.dtype = buffer, offset, shape, dtype

    @property
    def device(self) -> "Device":
        return self.buffer.device

    @property
    def address(self) -> int:
        return self.buffer.address + self.offset

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def read(self) -> np.ndarray:
        """A new host array with the value (waits for the work queued before it)."""
        out = np.empty(self.shape, self.dtype)
        self.buffer.device.d2h(self.address, out)
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        value = self.read()
        return value if dtype is None else value.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return f"<DeviceValue {self.dtype}{list(self.shape)} on {self.device.name}>"


class Device(abc.ABC):
    """The operations the GPU runtime uses (see the module docstring)."""

    name = "device"
    simulated = False
    sm = "sm_80"
    copies: CopyCounters

    def buffer(self, nbytes: int) -> DeviceBuffer:
        """A :class:`DeviceBuffer` of ``nbytes`` (freed when collected)."""
        return DeviceBuffer(self, self.alloc(nbytes), nbytes)

    def put(self, value: np.ndarray) -> DeviceValue:
        """A host array copied to a new :class:`DeviceValue` (C order)."""
        value = np.ascontiguousarray(value)
        buf = self.buffer(value.nbytes)
        self.h2d(buf.address, value)
        return DeviceValue(buf, 0, tuple(value.shape), value.dtype)

    def copy_value(self, value: DeviceValue) -> DeviceValue:
        """A copy of ``value`` in a new buffer of this device (device to device)."""
        n = value.nbytes
        buf = self.buffer(n)
        self.d2d(buf.address, value.address, n)
        return DeviceValue(buf, 0, value.shape, value.dtype)

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
        self.copies = CopyCounters()

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
            c = self.copies
            c.h2d += 1
            c.h2d_bytes += data.nbytes
            ctypes.memmove(addr, address_of(data), data.nbytes)

    def d2h(self, addr: int, out: np.ndarray) -> None:
        if out.nbytes:
            c = self.copies
            c.d2h += 1
            c.d2h_bytes += out.nbytes
            ctypes.memmove(address_of(out), addr, out.nbytes)

    def d2d(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            c = self.copies
            c.d2d += 1
            c.d2d_bytes += nbytes
            ctypes.memmove(dst, src, nbytes)

    def kernel_args(self, args: Sequence[int]) -> KernelArgs:
        # the kernel's buffer table: a void* per argument
        table = (ctypes.c_void_p * max(1, len(args)))(*args)
        return KernelArgs(ctypes.addressof(table), table, table)

    def launch(self, fn: Any, grid: int, block: int, args: KernelArgs, shared: int = 0
               ) -> None:
        self.launches += 1
        fn(args.address, 0, grid)

    def synchronize(self) -> None:
        return None


__all__ = ["Device", "KernelArgs", "SimDevice", "CachingAllocator", "CopyCounters",
           "DeviceBuffer", "DeviceValue", "align", "ALIGNMENT"]
