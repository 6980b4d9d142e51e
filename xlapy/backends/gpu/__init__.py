"""The GPU backend: HLO to NVPTX through LLVM, run on the CUDA driver API.

``GpuBackend().compile(module)`` (platform ``"gpu"``) and ``GpuSimBackend`` (platform
``"gpu_sim"``: the same kernels with the launch grid emulated on the host). See
``compiler.py`` for the compile flow, ``kernels.py``/``reduction.py`` for the kernels,
``simt.py`` for the two targets, ``runtime.py`` for the executable and ``cuda.py`` for
the driver.
"""
from __future__ import annotations

from .compiler import GpuBackend, GpuSimBackend
from .runtime import GpuExecutable

__all__ = ["GpuBackend", "GpuSimBackend", "GpuExecutable"]
