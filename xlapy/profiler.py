"""Memory of the running programs (JAX's ``jax.profiler`` / ``Device.memory_stats()``
counterparts for xlapy's CPU runtime).

- :func:`memory_stats`: the process-wide counters: ``bytes_in_use`` (every live
  executable's temp arena and constants, and the output pool's blocks, leased to arrays
  or free), ``peak_bytes_in_use`` (its high-water mark, raised at each call by the call's
  arguments and unpooled outputs), ``num_allocs``, ``largest_alloc_size``, and the peaks
  of the last and the largest step run (``last_step_peak_bytes``,
  ``largest_step_peak_bytes``);
- :func:`last_step_memory`: the memory of the most recent call of a compiled program, the
  record ``jit(f).lower(...).compile().memory_analysis()`` gives (temps + arguments +
  outputs + constants = ``peak_memory_in_bytes``);
- :func:`peak_memory_bytes` and :func:`reset_peak`: read and restart the high-water mark
  (e.g. around one training step).

Arrays the caller holds (inputs, results kept after the call) count only while a call
that reads or returns them runs; results from the output pool count until they are
freed. The counters cover the CPU backend (the interpreter allocates per op through
NumPy; the GPU backend has its device's own allocator).

    xlapy.profiler.reset_peak()
    state = step(*state)
    print(xlapy.profiler.last_step_memory().peak_memory_in_bytes,
          xlapy.profiler.memory_stats()["peak_bytes_in_use"])
"""
from __future__ import annotations

from .backends.memory_stats import STATS, MemoryAnalysis


def memory_stats() -> dict[str, int]:
    """The process's memory counters (module docstring)."""
    return STATS.snapshot()


def peak_memory_bytes() -> int:
    """The high-water mark of the bytes held by xlapy's runtime since the last
    :func:`reset_peak` (or the start of the process)."""
    return STATS.peak_bytes_in_use


def reset_peak() -> None:
    """Restart the high-water mark at the bytes held now, and forget the steps run."""
    STATS.reset_peak()


def last_step_memory() -> MemoryAnalysis | None:
    """The :class:`MemoryAnalysis` of the last compiled program called (None before any
    call since the last :func:`reset_peak`)."""
    return STATS.last_step


def largest_step_memory() -> MemoryAnalysis | None:
    """The :class:`MemoryAnalysis` of the program with the largest peak called since the
    last :func:`reset_peak`."""
    return STATS.largest_step


__all__ = ["MemoryAnalysis", "largest_step_memory", "last_step_memory", "memory_stats",
           "peak_memory_bytes", "reset_peak"]
