"""Activations by name (``Dense(10, activation='relu')``), built on :mod:`xlapy.nn`.

``get(identifier)`` accepts a name, ``None`` (the identity, ``'linear'``) or a callable.
Keras's parameterised defaults are kept: ``leaky_relu`` has slope 0.2, ``gelu`` is the
tanh approximation, ``hard_sigmoid`` is ``relu6(x + 3) / 6``, ``softmax`` is over the
last axis.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import nn
from .. import numpy as xnp
from ..errors import InvalidArgumentError


def linear(x: Any) -> Any:
    """The identity."""
    return x


def relu(x: Any) -> Any:
    return nn.relu(x)


def relu6(x: Any) -> Any:
    return nn.relu6(x)


def leaky_relu(x: Any, negative_slope: float = 0.2) -> Any:
    return nn.leaky_relu(x, negative_slope)


def elu(x: Any, alpha: float = 1.0) -> Any:
    return nn.elu(x, alpha)


def selu(x: Any) -> Any:
    return nn.selu(x)


def gelu(x: Any, approximate: bool = True) -> Any:
    return nn.gelu(x, approximate)


def sigmoid(x: Any) -> Any:
    return nn.sigmoid(x)


def hard_sigmoid(x: Any) -> Any:
    return nn.hard_sigmoid(x)


def silu(x: Any) -> Any:
    return nn.silu(x)


def tanh(x: Any) -> Any:
    return xnp.tanh(x)


def softplus(x: Any) -> Any:
    return nn.softplus(x)


def softsign(x: Any) -> Any:
    return nn.soft_sign(x)


def exponential(x: Any) -> Any:
    return xnp.exp(x)


def softmax(x: Any, axis: int = -1) -> Any:
    return nn.softmax(x, axis=axis)


def log_softmax(x: Any, axis: int = -1) -> Any:
    return nn.log_softmax(x, axis=axis)


_BY_NAME: dict[str, Callable[[Any], Any]] = {
    "linear": linear, "relu": relu, "relu6": relu6, "leaky_relu": leaky_relu, "elu": elu,
    "selu": selu, "gelu": gelu, "sigmoid": sigmoid, "hard_sigmoid": hard_sigmoid,
    "silu": silu, "swish": silu, "tanh": tanh, "softplus": softplus, "softsign": softsign,
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
