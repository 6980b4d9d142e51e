"""Activations by name (``Dense(10, activation='relu')``), built on :mod:`xlapy.nn`.

``get(identifier)`` accepts a name, ``None`` (the identity, ``'linear'``) or a callable.
Most activations are the :mod:`xlapy.nn` functions themselves; where Keras's defaults
differ from ``jax.nn``'s they are kept: ``leaky_relu`` has slope 0.2 and ``gelu`` is the
exact (erf) form unless ``approximate=True``. ``hard_sigmoid`` is ``relu6(x + 3) / 6``,
``softmax`` is over the last axis.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import nn
from .. import numpy as xnp
from ..errors import InvalidArgumentError


def linear(x: Any) -> Any:
    """The identity."""
    return x


def leaky_relu(x: Any, negative_slope: float = 0.2) -> Any:
    return nn.leaky_relu(x, negative_slope)


def gelu(x: Any, approximate: bool = False) -> Any:
    return nn.gelu(x, approximate)


relu, relu6, elu, selu, sigmoid = nn.relu, nn.relu6, nn.elu, nn.selu, nn.sigmoid
hard_sigmoid, softplus, softsign = nn.hard_sigmoid, nn.softplus, nn.soft_sign
silu = swish = nn.silu
softmax, log_softmax = nn.softmax, nn.log_softmax
tanh, exponential = xnp.tanh, xnp.exp

_BY_NAME: dict[str, Callable[[Any], Any]] = {
    "linear": linear, "relu": relu, "relu6": relu6, "leaky_relu": leaky_relu, "elu": elu,
    "selu": selu, "gelu": gelu, "sigmoid": sigmoid, "hard_sigmoid": hard_sigmoid,
    "silu": silu, "swish": swish, "tanh": tanh, "softplus": softplus, "softsign": softsign,
    "exponential": exponential, "softmax": softmax, "log_softmax": log_softmax,
}


def get(identifier: Any) -> Callable[[Any], Any]:
    """The activation function for a name, ``None`` (identity) or a callable."""
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]
    raise InvalidArgumentError(f"unknown activation {identifier!r}; expected one of "
                               f"{sorted(_BY_NAME)} or a callable")


def serialize(fn: Callable[[Any], Any]) -> str:
    """The name of an activation function (its ``__name__`` for user functions)."""
    for name, f in _BY_NAME.items():
        if f is fn:
            return name
    return getattr(fn, "__name__", repr(fn))


__all__ = ["get", "serialize"] + sorted(_BY_NAME)
