"""The CPU backend: HLO compiled to native code with llvmlite, run by a thunk runtime.

``CpuBackend().compile(module)`` returns a :class:`CpuExecutable`; the client registers
it as platform ``"cpu"``. See ``executable.py`` for the runtime design, ``compiler.py``
for the compile flow, ``cache.py`` for the disk cache and ``kernel_api.py`` for the
kernel contract.
"""
from __future__ import annotations

from .compiler import CpuBackend
from .executable import CpuExecutable

__all__ = ["CpuBackend", "CpuExecutable"]
