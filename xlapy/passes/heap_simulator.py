"""Packing buffers with known live ranges into one heap (XLA's ``heap_simulator``).

A :class:`BufferInterval` is a block of ``size`` bytes live over the inclusive
schedule interval ``[start, end]``. :func:`best_fit` is XLA's
``GlobalDecreasingSizeBestFitHeap``: intervals are sorted (``spatial``: larger
first; ``temporal``: longer-lived first), then each is placed at the smallest free
gap among already-placed intervals that overlap it in time (or at the top of the
heap). :func:`no_reuse` gives every interval its own bytes (the baseline);
:func:`min_memory` is the lower bound (max bytes live at once, as
``NoFragmentationStatsHeap``). :func:`simulate` runs the candidate orders and
keeps the smallest heap (``ChooseBestHeapAlgorithm``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence

DEFAULT_ALIGNMENT = 16     # XLA:CPU's minimum buffer alignment


@dataclass(frozen=True)
class BufferInterval:
    key: Hashable
    size: int
    start: int
    end: int


@dataclass
class HeapResult:
    """Chosen offsets (``key -> offset``) and the heap size; ``algorithm`` names the winner."""

    offsets: dict[Hashable, int] = field(default_factory=dict)
    heap_size: int = 0
    algorithm: str = ""


def align(x: int, alignment: int) -> int:
    return (x + alignment - 1) // alignment * alignment


def no_reuse(intervals: Sequence[BufferInterval], alignment: int = DEFAULT_ALIGNMENT) -> HeapResult:
    res = HeapResult(algorithm="no-reuse")
    top = 0
    for iv in intervals:
        res.offsets[iv.key] = top
        top = align(top + iv.size, alignment)
    res.heap_size = max((res.offsets[iv.key] + iv.size for iv in intervals), default=0)
    return res


def best_fit(intervals: Sequence[BufferInterval], order: str = "spatial",
             alignment: int = DEFAULT_ALIGNMENT) -> HeapResult:
    """Global decreasing-size best-fit placement; ``order`` is ``spatial`` or ``temporal``."""
    if order == "spatial":
        key = lambda iv: (-iv.size, -(iv.end - iv.start), iv.start)           # noqa: E731
    elif order == "temporal":
        key = lambda iv: (-(iv.end - iv.start), -iv.size, iv.start)           # noqa: E731
    else:
        raise ValueError(f"unknown best-fit order {order!r} (spatial or temporal)")
    placed: list[tuple[BufferInterval, int]] = []
    res = HeapResult(algorithm=f"best-fit-{order}")
    for iv in sorted(intervals, key=key):
        busy = sorted((off, off + other.size) for other, off in placed
                      if other.start <= iv.end and iv.start <= other.end and other.size)
        best_off, best_gap = None, None
        cursor = 0
        for lo, hi in busy:
            gap = lo - cursor
            if gap >= iv.size and (best_gap is None or gap < best_gap):
                best_off, best_gap = cursor, gap
            cursor = max(cursor, align(hi, alignment))
        if best_off is None:
            best_off = cursor
        res.offsets[iv.key] = best_off
        placed.append((iv, best_off))
    res.heap_size = max((off + iv.size for iv, off in placed), default=0)
    return res


def min_memory(intervals: Sequence[BufferInterval]) -> int:
    """The most bytes live at one time: no placement can use less."""
    events: dict[int, int] = {}
    for iv in intervals:
        events[iv.start] = events.get(iv.start, 0) + iv.size
        events[iv.end + 1] = events.get(iv.end + 1, 0) - iv.size
    cur = peak = 0
    for t in sorted(events):
        cur += events[t]
        peak = max(peak, cur)
    return peak


def simulate(intervals: Sequence[BufferInterval], alignment: int = DEFAULT_ALIGNMENT,
             allow_reuse: bool = True) -> HeapResult:
    """The smallest heap among best-fit (spatial, temporal); no-reuse if reuse is off."""
    if not allow_reuse:
        return no_reuse(intervals, alignment)
    results = [best_fit(intervals, "spatial", alignment),
               best_fit(intervals, "temporal", alignment)]
    return min(results, key=lambda r: r.heap_size)
