"""Weight constraints (``kernel_constraint=``), Keras's formulas.

A constraint maps a weight to its projection (``constraint(w) -> w'``). Layers attach
it to the weight's Variable (:func:`set_variable_constraint`); every optimizer applies
it right after updating that Variable in ``apply_gradients``, as Keras 3 does, so with
``compile(jit_compile=True)`` the projection is part of the one compiled train step
(and it also applies in hand-written ``GradientTape`` loops).

- ``MaxNorm(max_value=2, axis=0)``: rescale so that the norm along ``axis`` is at most
  ``max_value``;
- ``NonNeg()``: zero out negative entries;
- ``UnitNorm(axis=0)``: unit norm along ``axis``;
- ``MinMaxNorm(min_value=0, max_value=1, rate=1, axis=0)``: norm clipped to
  ``[min_value, max_value]``, moved there at ``rate``.

For a Dense kernel ``(inputs, units)`` ``axis=0`` constrains each unit's incoming
weights; for a Conv2D kernel ``(h, w, in, out)`` use ``axis=[0, 1, 2]``. Norms get
``backend.epsilon()`` added before dividing, as in Keras.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

from .. import numpy as xnp
from ..errors import InvalidArgumentError
from ..frontend.variables import Variable
from .backend import epsilon

_CONSTRAINTS: "weakref.WeakKeyDictionary[Variable, Callable[[Any], Any]]" = \
    weakref.WeakKeyDictionary()


class Constraint:
    """Base class: ``constraint(w)`` returns the constrained weight."""

    def __call__(self, w: Any) -> Any:
        return w

    def get_config(self) -> dict:
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _axis(axis: int | Sequence[int]) -> int | tuple[int, ...]:
    return axis if isinstance(axis, int) else tuple(int(a) for a in axis)


def _norms(w: Any, axis: int | tuple[int, ...]) -> Any:
    return xnp.sqrt(xnp.sum(xnp.square(w), axis=axis, keepdims=True))


class MaxNorm(Constraint):
    """``w * clip(norm, 0, max_value) / (epsilon + norm)``, norms along ``axis``."""

    def __init__(self, max_value: float = 2.0, axis: int | Sequence[int] = 0) -> None:
        self.max_value, self.axis = float(max_value), axis

    def __call__(self, w: Any) -> Any:
        w = xnp.asarray(w)
        norms = _norms(w, _axis(self.axis))
        desired = xnp.clip(norms, 0.0, self.max_value)
        return w * (desired / (epsilon() + norms))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """``w * (w >= 0)``."""

    def __call__(self, w: Any) -> Any:
        w = xnp.asarray(w)
        return w * (w >= 0.0).astype(w.dtype)


class UnitNorm(Constraint):
    """``w / (epsilon + norm)``, norms along ``axis``."""

    def __init__(self, axis: int | Sequence[int] = 0) -> None:
        self.axis = axis

    def __call__(self, w: Any) -> Any:
        w = xnp.asarray(w)
        return w / (epsilon() + _norms(w, _axis(self.axis)))

    def get_config(self) -> dict:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """``w * desired / (epsilon + norm)`` with ``desired = rate * clip(norm, min_value,
    max_value) + (1 - rate) * norm``, norms along ``axis``."""

    def __init__(self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0,
                 axis: int | Sequence[int] = 0) -> None:
        if min_value > max_value:
            raise InvalidArgumentError(f"MinMaxNorm: min_value ({min_value}) must not exceed "
                                       f"max_value ({max_value})")
        self.min_value, self.max_value = float(min_value), float(max_value)
        self.rate, self.axis = float(rate), axis

    def __call__(self, w: Any) -> Any:
        w = xnp.asarray(w)
        norms = _norms(w, _axis(self.axis))
        desired = self.rate * xnp.clip(norms, self.min_value, self.max_value) + \
            (1.0 - self.rate) * norms
        return w * (desired / (epsilon() + norms))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm

_BY_NAME: dict[str, type] = {"max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm,
                             "min_max_norm": MinMaxNorm, "MaxNorm": MaxNorm, "NonNeg": NonNeg,
                             "UnitNorm": UnitNorm, "MinMaxNorm": MinMaxNorm}


def get(identifier: Any) -> Callable[[Any], Any] | None:
    """A constraint from ``None``, a name (``'max_norm'``, ``'non_neg'``, ...), a
    ``Constraint`` or any callable ``w -> w'``."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier)
        if cls is None:
            raise InvalidArgumentError(f"unknown constraint {identifier!r}; expected one of "
                                       f"{sorted(_BY_NAME)}, a Constraint or a callable")
        return cls()
    if isinstance(identifier, type) and issubclass(identifier, Constraint):
        return identifier()
    if callable(identifier):
        return identifier
    raise InvalidArgumentError(f"cannot interpret {identifier!r} as a constraint")


def set_variable_constraint(var: Variable, constraint: Callable[[Any], Any] | None) -> None:
    """Attach ``constraint`` to ``var`` (``None`` removes it); optimizers apply it after
    every update of ``var``."""
    if constraint is None:
        _CONSTRAINTS.pop(var, None)
    else:
        _CONSTRAINTS[var] = constraint


def variable_constraint(var: Variable) -> Callable[[Any], Any] | None:
    """The constraint attached to ``var``, or ``None``."""
    return _CONSTRAINTS.get(var)


__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm", "non_neg",
           "unit_norm", "min_max_norm", "get", "set_variable_constraint",
           "variable_constraint"]
