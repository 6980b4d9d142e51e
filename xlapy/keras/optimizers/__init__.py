"""Optimizers (``SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad``), the
``LossScaleOptimizer`` wrapper for float16 training and ``optimizers.schedules``; see
:mod:`.base` for state, clipping and the legacy ``decay``."""
from __future__ import annotations

from typing import Any

from ...errors import InvalidArgumentError
from . import legacy, schedules
from .algorithms import SGD, Adagrad, Adam, AdamW, RMSprop
from .base import Optimizer
from .loss_scale import LossScaleOptimizer

_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier: Any) -> Optimizer:
    """An optimizer from a name (``'adam'``, default arguments) or an instance."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise InvalidArgumentError(f"unknown optimizer {identifier!r}; expected one of "
                               f"{sorted(_BY_NAME)} or an Optimizer")


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LossScaleOptimizer",
           "schedules", "legacy", "get"]
