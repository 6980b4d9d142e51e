"""The CUDA driver API through ctypes on ``libcuda.so.1``: :class:`CudaDevice`.

The device's primary context, one stream (the legacy default stream: copies to the host
wait for the kernels before them; copies to the device are queued on it with
``cuMemcpyHtoDAsync``, which for pageable host memory returns once the data is staged,
so the caller may reuse its array at once), memory through a :class:`CachingAllocator`, PTX
modules loaded with the driver's JIT (``cuModuleLoadDataEx``, its error log in the
exception) and launches with ``cuLaunchKernel``. Failures raise
:class:`~xlapy.errors.DeviceUnavailableError` naming what is missing (no driver library,
no device) or :class:`~xlapy.errors.ResourceExhaustedError` with the requested and free
sizes; the process goes on either way.
"""
from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any, Sequence

import numpy as np

from ...errors import DeviceUnavailableError, ExecutionError, ResourceExhaustedError
from ..cpu.thunks import address_of
from .device import CachingAllocator, CopyCounters, Device, KernelArgs

log = logging.getLogger("xlapy.gpu")

CUDA_ERROR_OUT_OF_MEMORY = 2
_ATTR_CC_MAJOR, _ATTR_CC_MINOR = 75, 76
_JIT_ERROR_LOG_BUFFER, _JIT_ERROR_LOG_BUFFER_SIZE = 5, 6

_lock = threading.Lock()
_device: "CudaDevice | None" = None


def _load_library() -> ctypes.CDLL:
    errors = []
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            errors.append(str(e))
    raise DeviceUnavailableError(
        "backend 'gpu': no CUDA driver (libcuda.so.1 could not be loaded: "
        f"{errors[0]}); use backend='cpu', or backend='gpu_sim' to emulate the GPU")


class CudaDevice(Device):
    """GPU ``ordinal`` through the driver API (module docstring)."""

    name = "gpu"

    def __init__(self, ordinal: int = 0) -> None:
        self.lib = _load_library()
        self._check(self.lib.cuInit(0), "cuInit")
        count = ctypes.c_int()
        self._check(self.lib.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        if count.value <= ordinal:
            raise DeviceUnavailableError(
                f"backend 'gpu': no GPU (the CUDA driver reports {count.value} devices)")
        dev = ctypes.c_int()
        self._check(self.lib.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
        self.dev = dev
        name = ctypes.create_string_buffer(256)
        self.lib.cuDeviceGetName(name, 256, dev)
        self.device_name = name.value.decode(errors="replace")
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.cuDeviceGetAttribute(ctypes.byref(major), _ATTR_CC_MAJOR, dev)
        self.lib.cuDeviceGetAttribute(ctypes.byref(minor), _ATTR_CC_MINOR, dev)
        self.compute_capability = (major.value, minor.value)
        # PTX for sm_90 runs on sm_90+ through the driver's JIT; sm_80 for Ampere
        self.sm = "sm_90" if major.value >= 9 else "sm_80"
        self.ctx = ctypes.c_void_p()
        self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev),
                    "cuDevicePrimaryCtxRetain")
        self._bind()
        self.lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + \
            [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.allocator = CachingAllocator(self._raw_alloc, self._raw_free)
        self.copies = CopyCounters()
        self._modules: list[ctypes.c_void_p] = []
        log.info("CUDA device %d: %s (compute capability %d.%d)", ordinal, self.device_name,
                 major.value, minor.value)

    # ----- helpers
    def _bind(self) -> None:
        self._check(self.lib.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def error_string(self, code: int) -> str:
        s = ctypes.c_char_p()
        self.lib.cuGetErrorString(code, ctypes.byref(s))
        return s.value.decode() if s.value else f"CUDA error {code}"

    def _check(self, code: int, what: str) -> None:
        if code != 0:
            msg = f"{what} failed: {self.error_string(code) if hasattr(self, 'lib') else code}"
            if what in ("cuInit", "cuDeviceGetCount"):
                raise DeviceUnavailableError(f"backend 'gpu': no usable GPU ({msg})")
            raise ExecutionError(f"CUDA: {msg}")

    def memory_info(self) -> tuple[int, int]:
        """(free, total) bytes of device memory."""
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self._check(self.lib.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)),
                    "cuMemGetInfo")
        return free.value, total.value

    # ----- memory
    def _raw_alloc(self, nbytes: int) -> int:
        self._bind()
        ptr = ctypes.c_uint64()
        code = self.lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes))
        if code == CUDA_ERROR_OUT_OF_MEMORY:
            free, total = self.memory_info()
            raise ResourceExhaustedError(
                f"out of GPU memory on {self.device_name}: requested {nbytes} bytes, "
                f"{free} bytes free of {total}")
        self._check(code, "cuMemAlloc")
        return ptr.value

    def _raw_free(self, addr: int) -> None:
        self.lib.cuMemFree_v2(ctypes.c_uint64(addr))

    def alloc(self, nbytes: int) -> int:
        return self.allocator.alloc(nbytes)

    def free(self, addr: int) -> None:
        self.allocator.free(addr)

    def memset0(self, addr: int, nbytes: int) -> None:
        if nbytes:
            self._check(self.lib.cuMemsetD8_v2(ctypes.c_uint64(addr), ctypes.c_ubyte(0),
                                               ctypes.c_size_t(nbytes)), "cuMemsetD8")

    def h2d(self, addr: int, data: np.ndarray) -> None:
        # queued on the legacy stream (ordered with the kernels); pageable memory is
        # staged before the call returns, so ``data`` may change afterwards
        if data.nbytes:
            c = self.copies
            c.h2d += 1
            c.h2d_bytes += data.nbytes
            self._check(self.lib.cuMemcpyHtoDAsync_v2(ctypes.c_uint64(addr),
                                                      ctypes.c_void_p(address_of(data)),
                                                      ctypes.c_size_t(data.nbytes), None),
                        "cuMemcpyHtoDAsync")

    def d2h(self, addr: int, out: np.ndarray) -> None:
        if out.nbytes:
            c = self.copies
            c.d2h += 1
            c.d2h_bytes += out.nbytes
            self._check(self.lib.cuMemcpyDtoH_v2(ctypes.c_void_p(address_of(out)),
                                                 ctypes.c_uint64(addr),
                                                 ctypes.c_size_t(out.nbytes)), "cuMemcpyDtoH")

    def d2d(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            c = self.copies
            c.d2d += 1
            c.d2d_bytes += nbytes
            self._check(self.lib.cuMemcpyDtoDAsync_v2(ctypes.c_uint64(dst), ctypes.c_uint64(src),
                                                      ctypes.c_size_t(nbytes), None),
                        "cuMemcpyDtoD")

    # ----- code
    def load_ptx(self, ptx: str, names: Sequence[str]) -> dict[str, Any]:
        """Load a PTX module (driver JIT) and return its functions by name."""
        self._bind()
        module = ctypes.c_void_p()
        logbuf = ctypes.create_string_buffer(16384)
        opts = (ctypes.c_int * 2)(_JIT_ERROR_LOG_BUFFER, _JIT_ERROR_LOG_BUFFER_SIZE)
        vals = (ctypes.c_void_p * 2)(ctypes.addressof(logbuf), 16384)
        data = ptx.encode() + b"\0"
        code = self.lib.cuModuleLoadDataEx(ctypes.byref(module), data, 2, opts, vals)
        if code != 0:
            raise ExecutionError(f"CUDA: loading PTX failed: {self.error_string(code)}: "
                                 f"{logbuf.value.decode(errors='replace')[:2000]}")
        self._modules.append(module)
        out = {}
        for n in names:
            fn = ctypes.c_void_p()
            self._check(self.lib.cuModuleGetFunction(ctypes.byref(fn), module, n.encode()),
                        f"cuModuleGetFunction({n})")
            out[n] = fn
        return out

    def kernel_args(self, args: Sequence[int]) -> KernelArgs:
        # cuLaunchKernel's kernelParams: a pointer to each argument's value
        n = max(1, len(args))
        values = (ctypes.c_uint64 * n)(*args)
        base = ctypes.addressof(values)
        params = (ctypes.c_void_p * n)(*[base + 8 * i for i in range(n)])
        return KernelArgs(ctypes.addressof(params), values, values, params)

    def launch(self, fn: Any, grid: int, block: int, args: KernelArgs, shared: int = 0
               ) -> None:
        code = self.lib.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shared, None,
                                       args.address, None)
        if code != 0:
            raise ExecutionError(f"CUDA: cuLaunchKernel(grid={grid}, block={block}) failed: "
                                 f"{self.error_string(code)}")

    def synchronize(self) -> None:
        self._check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize (a kernel failed)")

    # ----- timing
    def event_timer(self) -> "EventTimer":
        return EventTimer(self)


class EventTimer:
    """Elapsed GPU time between :meth:`start` and :meth:`stop` (CUDA events), in seconds."""

    def __init__(self, device: CudaDevice) -> None:
        self.d = device
        self.a, self.b = ctypes.c_void_p(), ctypes.c_void_p()
        device._check(device.lib.cuEventCreate(ctypes.byref(self.a), 0), "cuEventCreate")
        device._check(device.lib.cuEventCreate(ctypes.byref(self.b), 0), "cuEventCreate")

    def start(self) -> None:
        self.d.lib.cuEventRecord(self.a, None)

    def stop(self) -> float:
        self.d.lib.cuEventRecord(self.b, None)
        self.d._check(self.d.lib.cuEventSynchronize(self.b), "cuEventSynchronize")
        ms = ctypes.c_float()
        self.d.lib.cuEventElapsedTime(ctypes.byref(ms), self.a, self.b)
        return ms.value / 1000.0


def cuda_device() -> CudaDevice:
    """The process's CUDA device 0 (created on first use)."""
    global _device
    with _lock:
        if _device is None:
            _device = CudaDevice(0)
        return _device


__all__ = ["CudaDevice", "EventTimer", "cuda_device"]
