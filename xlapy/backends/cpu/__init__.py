"""The CPU backend: HLO compiled to native code with llvmlite, run by a thunk runtime.

``CpuBackend().compile(module)`` returns a :class:`CpuExecutable`; the client registers
it as platform ``"cpu"``. See ``pipeline.py`` for the HLO pass pipeline (the backend's
:class:`~xlapy.backends.target.Target`), ``compiler.py`` for the compile flow,
``executable.py`` for the runtime design, ``cache.py`` for the disk cache and
``kernel_api.py`` for the kernel contract.

``CpuBackend`` and ``CpuExecutable`` are imported on first use (they load llvmlite), so
optimizing for the CPU (``pipeline.py``) does not load the code generator.
"""
from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "CpuBackend":
        from .compiler import CpuBackend
        return CpuBackend
    if name == "CpuExecutable":
        from .executable import CpuExecutable
        return CpuExecutable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CpuBackend", "CpuExecutable"]
