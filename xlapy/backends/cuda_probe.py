"""Is a usable NVIDIA GPU present? The CUDA driver loads and reports a device.

The front end asks once, at the first eager op or jit call with no
``XLAPY_DEFAULT_BACKEND`` (``import xlapy`` never loads the driver), to make ``"gpu"``
the default backend. No context is created and no GPU memory is taken; without the
driver library the answer costs one failed ``dlopen``.
"""
from __future__ import annotations

import ctypes
import logging

log = logging.getLogger("xlapy.gpu")


def usable_gpu() -> bool:
    """Whether ``libcuda`` loads, ``cuInit`` succeeds and it reports at least one device."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    try:
        if lib.cuInit(0) != 0:
            return False
        count = ctypes.c_int(0)
        if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return False
    except AttributeError:          # a library without the driver API's entry points
        return False
    if count.value > 0:
        log.info("a CUDA GPU is present: the default backend is 'gpu' "
                 "(XLAPY_DEFAULT_BACKEND overrides)")
    return count.value > 0


__all__ = ["usable_gpu"]
