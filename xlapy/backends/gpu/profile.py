"""``--xla_hlo_profile`` on the GPU: every thunk timed with CUDA events.

An executable compiled with the flag wraps each thunk of its plans (the entry computation's
and those that ``while``/``conditional``/``call`` run): on the GPU a pair of CUDA events is
recorded around the thunk and read at once (so the profiled run is serialized), on the
simulator ``time.perf_counter``. :meth:`GpuProfiler.to_text` gives one row per instruction,
slowest first (calls, total and mean time, share of the run, a kernel's grid x block); the
table is logged at INFO (logger ``xlapy.gpu.profile``) after every call. Times are
cumulative; a loop body's rows are inside its ``while`` row.
"""
from __future__ import annotations

import logging
import time
from typing import Any

from ..cpu.profile import _all_plans

log = logging.getLogger("xlapy.gpu.profile")


class _WallTimer:
    def start(self) -> None:
        self.t = time.perf_counter()

    def stop(self) -> float:
        return time.perf_counter() - self.t


class GpuProfiler:
    """Times the thunks of ``plan`` and its sub-plans (module docstring)."""

    def __init__(self, device: Any, plan: Any, name: str) -> None:
        self.name = name
        self.rows: dict[int, list] = {}      # id(thunk) -> [thunk, calls, seconds]
        self.total = 0.0
        make = device.event_timer if hasattr(device, "event_timer") else _WallTimer
        plans: list[Any] = _all_plans(plan)     # the GPU's plans (runtime.Plan)
        for p in plans:
            p.instrument(lambda t, make=make: self._wrap(t, make()))

    def _wrap(self, thunk: Any, timer: Any):
        row = self.rows.setdefault(id(thunk), [thunk, 0, 0.0])
        run = thunk.run

        def timed() -> None:
            timer.start()
            run()
            row[1] += 1
            row[2] += timer.stop()
        return timed

    def wrap_entry(self, run):
        def timed() -> None:
            t = time.perf_counter()
            run()
            self.total += time.perf_counter() - t
            if log.isEnabledFor(logging.INFO):
                log.info("%s", self.to_text(20))
        return timed

    def reset(self) -> None:
        for row in self.rows.values():
            row[1], row[2] = 0, 0.0
        self.total = 0.0

    def to_text(self, limit: int | None = None) -> str:
        rows = sorted(self.rows.values(), key=lambda r: -r[2])[:limit]
        lines = [f"Execution profile for {self.name}: {self.total * 1e3:.3f} ms in all",
                 f"{'instruction':40s} {'kind':12s} {'calls':>6s} {'total ms':>10s} "
                 f"{'mean us':>10s} {'%':>6s}  launch"]
        for thunk, calls, secs in rows:
            share = 100.0 * secs / self.total if self.total else 0.0
            mean = secs / calls * 1e6 if calls else 0.0
            dims = f"{thunk.grid} x {thunk.block}" if hasattr(thunk, "grid") else "-"
            lines.append(f"{thunk.instruction.name[:40]:40s} {thunk.kind:12s} {calls:6d} "
                         f"{secs * 1e3:10.3f} {mean:10.1f} {share:6.1f}  {dims}")
        return "\n".join(lines)


__all__ = ["GpuProfiler"]
