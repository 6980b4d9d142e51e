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

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Hashable, Sequence

import numpy as np

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
    res = HeapResult(algorithm=f"best-fit-{order}")
    if not intervals:
        return res
    placed = _PlacedIntervals(min(iv.start for iv in intervals),
                              max(iv.end for iv in intervals))
    top = 0
    for iv in sorted(intervals, key=key):
        best_off = _best_gap(*placed.overlapping(iv.start, iv.end), iv.size, alignment)
        res.offsets[iv.key] = best_off
        top = max(top, best_off + iv.size)
        if iv.size:
            placed.add(iv.start, iv.end, best_off, best_off + iv.size)
    res.heap_size = top
    return res


#: Above this many busy ranges the gap search runs vectorized (NumPy).
VECTOR_GAPS = 48


def _best_gap(los: list[int], his: list[int], size: int, alignment: int) -> int:
    """The offset of the smallest gap of at least ``size`` bytes between the busy byte
    ranges ``[los[k], his[k])`` taken in sorted order (each range's end rounded up to
    ``alignment``), the first such gap on ties; the end of the last range when no gap
    fits."""
    if len(los) > VECTOR_GAPS:
        lo, hi = np.array(los, dtype=np.int64), np.array(his, dtype=np.int64)
        order = np.lexsort((hi, lo))
        lo, hi = lo[order], hi[order]
        cursors = np.maximum.accumulate(
            np.concatenate(([0], (hi + alignment - 1) // alignment * alignment)))
        gaps = lo - cursors[:-1]
        fits = np.flatnonzero(gaps >= size)
        if fits.size == 0:
            return int(cursors[-1])
        return int(cursors[fits[np.argmin(gaps[fits])]])
    best_off, best_gap = None, None
    cursor = 0
    for start, end in sorted(zip(los, his)):
        gap = start - cursor
        if gap >= size and (best_gap is None or gap < best_gap):
            best_off, best_gap = cursor, gap
        cursor = max(cursor, align(end, alignment))
    return cursor if best_off is None else best_off


class _PlacedIntervals:
    """Byte ranges of placed buffers, found by the time interval they are live in.

    A segment tree over time holds each range at the O(log T) nodes that cover its
    interval, so the ranges live at one time are those on one root-to-leaf path; the
    ranges whose interval starts later but inside the query are found in lists sorted
    by start. A query costs O(log T + answers) instead of a scan of every placed range.
    """

    def __init__(self, first: int, last: int) -> None:
        self.first = first
        self.leaves = 1
        while self.leaves < last - first + 1:
            self.leaves *= 2
        self.nodes: dict[int, tuple[list[int], list[int]]] = {}
        self.starts: list[int] = []
        self.start_los: list[int] = []
        self.start_his: list[int] = []

    def _store(self, node: int, lo: int, hi: int) -> None:
        los, his = self.nodes.setdefault(node, ([], []))
        los.append(lo)
        his.append(hi)

    def add(self, start: int, end: int, lo: int, hi: int) -> None:
        """Bytes ``[lo, hi)`` are taken during ``[start, end]``."""
        a, b = start - self.first + self.leaves, end - self.first + self.leaves + 1
        while a < b:
            if a & 1:
                self._store(a, lo, hi)
                a += 1
            if b & 1:
                b -= 1
                self._store(b, lo, hi)
            a >>= 1
            b >>= 1
        k = bisect_right(self.starts, start)
        self.starts.insert(k, start)
        self.start_los.insert(k, lo)
        self.start_his.insert(k, hi)

    def overlapping(self, start: int, end: int) -> tuple[list[int], list[int]]:
        """The byte ranges (starts, ends) whose interval meets ``[start, end]``."""
        los: list[int] = []
        his: list[int] = []
        node = start - self.first + self.leaves
        while node:
            entry = self.nodes.get(node)
            if entry is not None:
                los.extend(entry[0])
                his.extend(entry[1])
            node >>= 1
        k = bisect_right(self.starts, start)
        stop = bisect_right(self.starts, end)
        los.extend(self.start_los[k:stop])
        his.extend(self.start_his[k:stop])
        return los, his


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
