"""Keras's progress bar, written to stdout.

``verbose=1`` draws ``196/196 [==============================] - 2s 8ms/step - loss: 0.1234
- accuracy: 0.9876``: while running (on a terminal, redrawn in place with ``\\r`` at most
every ``interval`` seconds) the time field is ``ETA: 3s``; at the end it is the elapsed
time and the time per step. When stdout is not a terminal only the final line is
written, so logs get one line per epoch. ``verbose=2`` writes one line at the end:
``196/196 - 2s - loss: 0.1234 - accuracy: 0.9876 - 2s/epoch - 8ms/step``.

The time per step leaves out the first step (which includes compiling), as Keras does.
Values named in ``stateful_metrics`` are shown as given; others are averaged over the
steps they were reported for. A value prints as ``%.4f``, or ``%.4e`` when its
magnitude is at most ``1e-3``.
"""
from __future__ import annotations

import math
import sys
import time
from typing import Any, Iterable, TextIO


def format_time(seconds: float, unit_name: str) -> str:
    """`` 2s/step``, `` 8ms/step`` or `` 95us/step`` (Keras's rounding)."""
    if seconds >= 1 or seconds == 0:
        return f" {seconds:.0f}s/{unit_name}"
    if seconds >= 1e-3:
        return f" {seconds * 1e3:.0f}ms/{unit_name}"
    return f" {seconds * 1e6:.0f}us/{unit_name}"


def format_value(value: float) -> str:
    return f" {value:.4f}" if abs(value) > 1e-3 else f" {value:.4e}"


def format_eta(eta: float) -> str:
    if eta > 3600:
        return f"{int(eta // 3600)}:{int((eta % 3600) // 60):02d}:{int(eta % 60):02d}"
    if eta > 60:
        return f"{int(eta // 60)}:{int(eta % 60):02d}"
    return f"{int(eta)}s"


class Progbar:
    """A progress bar for ``target`` steps (``None`` when unknown)."""

    def __init__(self, target: int | None, width: int = 30, verbose: int = 1,
                 interval: float = 0.05, stateful_metrics: Iterable[str] | None = None,
                 unit_name: str = "step", file: TextIO | None = None) -> None:
        self.target, self.width, self.verbose = target, width, verbose
        self.interval, self.unit_name = interval, unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self.file = file if file is not None else sys.stdout
        isatty = getattr(self.file, "isatty", None)
        self._dynamic = bool(isatty and isatty())
        self._values: dict[str, list[float]] = {}
        self._order: list[str] = []
        self._seen = 0
        self._total_width = 0
        self._start = time.time()
        self._last_update = 0.0
        self._time_after_first_step: float | None = None

    # ----- bookkeeping
    def _record(self, current: int, values: Iterable[tuple[str, Any]]) -> None:
        for name, value in values:
            value = float(value)
            if name not in self._order:
                self._order.append(name)
            if name in self.stateful_metrics:
                self._values[name] = [value, 1.0]
            else:
                n = max(current - self._seen, 1)
                total, count = self._values.get(name, [0.0, 0.0])
                self._values[name] = [total + value * n, count + n]
        self._seen = current

    def _step_duration(self, current: int, now: float) -> float:
        if not current:
            return 0.0
        if self._time_after_first_step is not None and current > 1:
            per = (now - self._time_after_first_step) / (current - 1)
        else:
            per = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return per

    def _metrics_text(self) -> str:
        out = ""
        for name in self._order:
            total, count = self._values[name]
            out += f" - {name}:" + format_value(total / max(count, 1.0))
        return out

    def _bar(self, current: int) -> str:
        if self.target is None:
            return f"{current:7d}/Unknown"
        digits = int(math.log10(self.target)) + 1 if self.target > 0 else 1
        bar = f"{current:{digits}d}/{self.target} ["
        filled = int(self.width * current / self.target) if self.target else self.width
        if filled > 0:
            bar += "=" * (filled - 1) + (">" if current < self.target else "=")
        return bar + "." * (self.width - filled) + "]"

    # ----- drawing
    def update(self, current: int, values: Iterable[tuple[str, Any]] | None = None,
               finalize: bool | None = None) -> None:
        """Record ``values`` at step ``current`` and redraw (``finalize`` ends the line)."""
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        self._record(current, values or ())
        now = time.time()
        per_step = self._step_duration(current, now)
        if self.verbose == 1:
            if not finalize and (not self._dynamic or now - self._last_update < self.interval):
                return
            self._last_update = now
            prev = self._total_width
            bar = self._bar(current)
            if finalize or self.target is None:
                info = f" - {now - self._start:.0f}s" + format_time(per_step, self.unit_name)
            else:
                info = " - ETA: " + format_eta(per_step * (self.target - current))
            info += self._metrics_text()
            self._total_width = len(bar) + len(info)
            line = ("\r" if self._dynamic else "") + bar + info
            if prev > self._total_width:
                line += " " * (prev - self._total_width)
            if finalize:
                line += "\n"
            self.file.write(line)
            self.file.flush()
        elif self.verbose == 2 and finalize:
            elapsed = now - self._start
            digits = int(math.log10(self.target)) + 1 if self.target else 1
            count = f"{current:{digits}d}/{self.target}" if self.target else f"{current}"
            line = f"{count} - {elapsed:.0f}s" + self._metrics_text()
            steps = self.target or max(current, 1)
            line += " -" + format_time(elapsed, "epoch") + " -" + \
                format_time(elapsed / steps, self.unit_name) + "\n"
            self.file.write(line)
            self.file.flush()

    def add(self, n: int, values: Iterable[tuple[str, Any]] | None = None) -> None:
        self.update(self._seen + n, values)


__all__ = ["Progbar", "format_time", "format_value"]
