"""Weight regularizers: penalties added to the training loss (``kernel_regularizer=``)."""
from __future__ import annotations

from typing import Any, Callable

from .. import numpy as xnp
from ..errors import InvalidArgumentError


class Regularizer:
    """``reg(weight) -> scalar`` penalty."""

    def __call__(self, x: Any) -> Any:
        raise InvalidArgumentError(f"{type(self).__name__} does not define __call__")

    def get_config(self) -> dict:
        return {}


class L1L2(Regularizer):
    """``l1 * sum(|w|) + l2 * sum(w**2)``."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0) -> None:
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x: Any) -> Any:
        total = 0.0
        if self.l1:
            total = total + self.l1 * xnp.sum(xnp.abs(x))
        if self.l2:
            total = total + self.l2 * xnp.sum(xnp.square(x))
        return xnp.asarray(total, xnp.float32) if isinstance(total, float) else total

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}

    def __repr__(self) -> str:
        return f"L1L2(l1={self.l1}, l2={self.l2})"


class L1(L1L2):
    def __init__(self, l1: float = 0.01) -> None:
        super().__init__(l1=l1)

    def get_config(self) -> dict:
        return {"l1": self.l1}


class L2(L1L2):
    def __init__(self, l2: float = 0.01) -> None:
        super().__init__(l2=l2)

    def get_config(self) -> dict:
        return {"l2": self.l2}


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> L1L2:
    return L1L2(l1, l2)


def get(identifier: Any) -> Callable[[Any], Any] | None:
    """A regularizer from ``None``, ``'l1'``, ``'l2'``, ``'l1_l2'``, an instance or a callable."""
    if identifier is None or callable(identifier):
        return identifier
    names = {"l1": L1, "l2": L2, "l1_l2": l1_l2}
    if isinstance(identifier, str) and identifier in names:
        return names[identifier]()
    raise InvalidArgumentError(f"unknown regularizer {identifier!r}; expected one of "
                               f"{sorted(names)}, a Regularizer or a callable")


__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1_l2", "get"]
