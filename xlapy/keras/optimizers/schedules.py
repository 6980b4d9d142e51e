"""Learning-rate schedules: ``schedule(step) -> learning rate`` (Keras's formulas).

A schedule is evaluated inside the train step on the optimizer's ``iterations``
Variable, so the rate changes every step without recompiling.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ... import numpy as xnp
from ...errors import InvalidArgumentError


def _step(step: Any) -> Any:
    return xnp.asarray(step).astype(np.float32)


class LearningRateSchedule:
    """Base class: ``__call__(step)`` returns the learning rate at ``step``."""

    def __call__(self, step: Any) -> Any:
        raise InvalidArgumentError(f"{type(self).__name__} does not define __call__")

    def get_config(self) -> dict:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _positive(name: str, value: Any, owner: str) -> None:
    if value <= 0:
        raise InvalidArgumentError(f"{owner}: {name} must be positive, got {value}")


class _TimeDecay(LearningRateSchedule):
    """Shared by the decays of ``step / decay_steps`` (floored with ``staircase=True``)."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float,
                 staircase: bool = False, name: str | None = None) -> None:
        name = name or type(self).__name__
        _positive("decay_steps", decay_steps, name)
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps, self.decay_rate = decay_steps, float(decay_rate)
        self.staircase, self.name = staircase, name

    def _progress(self, step: Any) -> Any:
        p = _step(step) / float(self.decay_steps)
        return xnp.floor(p) if self.staircase else p


class ExponentialDecay(_TimeDecay):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)`` (the exponent floored
    with ``staircase=True``)."""

    def __call__(self, step: Any) -> Any:
        return self.initial_learning_rate * xnp.power(np.float32(self.decay_rate),
                                                      self._progress(step))


class InverseTimeDecay(_TimeDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (the quotient
    floored with ``staircase=True``)."""

    def __call__(self, step: Any) -> Any:
        return self.initial_learning_rate / (1.0 + self.decay_rate * self._progress(step))


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while ``step <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < step <= boundaries[i]``, ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries: Sequence[int], values: Sequence[float],
                 name: str = "PiecewiseConstant") -> None:
        if len(values) != len(boundaries) + 1:
            raise InvalidArgumentError(f"{name}: need one more value than boundaries, got "
                                       f"{len(boundaries)} boundaries and {len(values)} values")
        self.boundaries, self.values = list(boundaries), [float(v) for v in values]
        self.name = name

    def __call__(self, step: Any) -> Any:
        s = _step(step)
        out = xnp.full((), self.values[-1], np.float32)
        for b, v in reversed(list(zip(self.boundaries, self.values))):
            out = xnp.where(s <= float(b), xnp.full((), v, np.float32), out)
        return out


class CosineDecay(LearningRateSchedule):
    """Optional linear warm-up from ``initial_learning_rate`` to ``warmup_target`` over
    ``warmup_steps``, then ``target * ((1 - alpha) * 0.5 * (1 + cos(pi * t / decay_steps))
    + alpha)`` with ``t`` the steps since the warm-up (capped at ``decay_steps``)."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, alpha: float = 0.0,
                 name: str = "CosineDecay", warmup_target: float | None = None,
                 warmup_steps: int = 0) -> None:
        _positive("decay_steps", decay_steps, name)
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps, self.alpha, self.name = decay_steps, float(alpha), name
        self.warmup_target, self.warmup_steps = warmup_target, int(warmup_steps)

    def __call__(self, step: Any) -> Any:
        s = _step(step)
        target = self.initial_learning_rate if self.warmup_target is None else \
            float(self.warmup_target)
        t = xnp.minimum(xnp.maximum(s - float(self.warmup_steps), 0.0), float(self.decay_steps))
        cosine = 0.5 * (1.0 + xnp.cos(math.pi * t / float(self.decay_steps)))
        decayed = target * ((1.0 - self.alpha) * cosine + self.alpha)
        if self.warmup_target is None or self.warmup_steps == 0:
            return decayed
        frac = xnp.minimum(s / float(self.warmup_steps), 1.0)
        warm = self.initial_learning_rate + frac * (target - self.initial_learning_rate)
        return xnp.where(s < float(self.warmup_steps), warm, decayed)


__all__ = ["LearningRateSchedule", "ExponentialDecay", "InverseTimeDecay",
           "PiecewiseConstantDecay", "CosineDecay"]
