"""Memory the runtime holds: per executable (:class:`MemoryAnalysis`) and process-wide
(:data:`STATS`), read through :mod:`xlapy.profiler`.

- :func:`memory_analysis` gives an executable's sizes from its buffer assignment, with
  JAX's ``CompiledMemoryStats`` field names: temps (the preallocated arena), arguments,
  outputs, constants, the parameters outputs alias, and the peak, the sum of them all
  (the runtime holds every one of them during a call: the caller's arguments, output
  arrays allocated before the program runs, the arena and constants allocated once per
  executable). ``Compiled.memory_analysis()`` and :func:`xlapy.profiler.last_step_memory`
  both come from here, so they agree.
- :class:`MemoryStats` counts the bytes the CPU runtime's allocators hold: each live
  executable's arena and constants (released when the executable is collected), the
  output pool's blocks, leased to arrays or free (``output_pool``), and arrays the
  library routines keep between calls (:func:`tracked`: a convolution's padded inputs).
  Each call of an executable also records the step's memory and raises the high-water
  mark to what is held plus the call's arguments and the outputs that do not come from
  the pool.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MemoryAnalysis:
    """Sizes from the buffer assignment of an optimized module (``Compiled.memory_analysis``,
    JAX's field names; ``peak_memory_in_bytes`` is parameters + constants + outputs + temps,
    ``alias_size_in_bytes`` the parameter bytes an output is written into)."""

    temp_size_in_bytes: int
    argument_size_in_bytes: int
    output_size_in_bytes: int
    constant_size_in_bytes: int
    peak_memory_in_bytes: int
    alias_size_in_bytes: int = 0
    module_name: str = ""


def memory_analysis(assignment: Any) -> MemoryAnalysis:
    """The :class:`MemoryAnalysis` of a :class:`~xlapy.passes.buffer_assignment.
    BufferAssignment`."""
    alias = sum(a.size for a in assignment.allocations if a.aliased_with_output)
    return MemoryAnalysis(assignment.total_temp_bytes, assignment.parameter_bytes,
                          assignment.output_bytes, assignment.constant_bytes,
                          assignment.peak_memory, alias, assignment.module.name)


class MemoryStats:
    """Process-wide counters (module docstring). Updates take a lock; the per-call record
    is two attribute writes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.bytes_in_use = 0
        self.peak_bytes_in_use = 0
        self.num_allocs = 0
        self.largest_alloc_size = 0
        self.last_step: MemoryAnalysis | None = None
        self.largest_step: MemoryAnalysis | None = None

    def allocate(self, nbytes: int) -> None:
        """``nbytes`` more are held (an arena, constants, a new pool block)."""
        with self._lock:
            self.bytes_in_use += nbytes
            self.num_allocs += 1
            if nbytes > self.largest_alloc_size:
                self.largest_alloc_size = nbytes
            if self.bytes_in_use > self.peak_bytes_in_use:
                self.peak_bytes_in_use = self.bytes_in_use

    def release(self, nbytes: int) -> None:
        """``nbytes`` were freed."""
        with self._lock:
            self.bytes_in_use -= nbytes

    def record_call(self, step: MemoryAnalysis, transient: int) -> None:
        """One call of an executable with memory ``step``; ``transient``: bytes it uses
        besides those counted in :attr:`bytes_in_use` (arguments, outputs not pooled)."""
        self.last_step = step
        largest = self.largest_step
        if largest is None or step.peak_memory_in_bytes > largest.peak_memory_in_bytes:
            self.largest_step = step
        now = self.bytes_in_use + transient
        if now > self.peak_bytes_in_use:
            self.peak_bytes_in_use = now

    def reset_peak(self) -> None:
        """Start the high-water mark (and the largest step) afresh from what is held now."""
        with self._lock:
            self.peak_bytes_in_use = self.bytes_in_use
            self.largest_step = None
            self.last_step = None

    def snapshot(self) -> dict[str, int]:
        """JAX's ``Device.memory_stats()`` keys, plus the peaks of the steps run."""
        last, largest = self.last_step, self.largest_step
        return {"bytes_in_use": self.bytes_in_use,
                "peak_bytes_in_use": self.peak_bytes_in_use,
                "num_allocs": self.num_allocs,
                "largest_alloc_size": self.largest_alloc_size,
                "last_step_peak_bytes": last.peak_memory_in_bytes if last else 0,
                "largest_step_peak_bytes": largest.peak_memory_in_bytes if largest else 0}


STATS = MemoryStats()


def tracked(array: Any) -> Any:
    """``array`` (a NumPy array the runtime keeps between calls, e.g. a convolution's
    padded input), counted in :data:`STATS` until it is collected."""
    STATS.allocate(array.nbytes)
    weakref.finalize(array, STATS.release, array.nbytes)
    return array

__all__ = ["MemoryAnalysis", "MemoryStats", "STATS", "memory_analysis", "tracked"]
