"""Losses (Keras's formulas): per-sample functions and ``Loss`` classes.

Functions return one value per sample (the last axis reduced): ``categorical_crossentropy``,
``sparse_categorical_crossentropy``, ``binary_crossentropy`` (each ``from_logits`` or from
probabilities), ``mean_squared_error``, ``mean_absolute_error``, ``huber``, ``hinge``,
``squared_hinge``. From
probabilities, predictions are clipped to ``[1e-7, 1 - 1e-7]`` (categorical ones first
renormalized to sum to one), as Keras does. ``Loss`` objects reduce with
``'sum_over_batch_size'`` (the weighted sum divided by the number of values, the
default), ``'sum'`` or ``'none'``.

**Matching ranks.** Functions that compare ``y_true`` with ``y_pred`` elementwise first
call :func:`squeeze_or_expand_to_same_rank` (Keras's rule): when the ranks differ by
one and the longer one ends in a dimension of 1, labels of shape ``(batch,)`` are
expanded to ``(batch, 1)`` (or a trailing 1 squeezed), so 1-D targets against a
one-unit output never broadcast to ``(batch, batch)``. ``LossFunctionWrapper`` does the
same for user functions.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import nn
from .. import numpy as xnp
from ..errors import InvalidArgumentError
from ..frontend.dtypes import is_float
from .backend import epsilon, snake_case


def _float(x: Any, like: Any = None) -> Any:
    x = xnp.asarray(x)
    dt = like.dtype if like is not None else np.float32
    return x.astype(dt) if x.dtype != dt else x


def squeeze_or_expand_to_same_rank(x1: Any, x2: Any,
                                   expand_rank_1: bool = True) -> tuple[Any, Any]:
    """Keras's rank matching: if the ranks differ by one and the longer array ends in a
    dimension of 1, expand the rank-1 array (``expand_rank_1``) or squeeze that 1."""
    x1, x2 = xnp.asarray(x1), xnp.asarray(x2)
    r1, r2 = x1.ndim, x2.ndim
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = xnp.expand_dims(x2, -1)
        else:
            x1 = xnp.squeeze(x1, -1)
    elif r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = xnp.expand_dims(x1, -1)
        else:
            x2 = xnp.squeeze(x2, -1)
    return x1, x2


def _pair(y_true: Any, y_pred: Any) -> tuple[Any, Any]:
    """``(y_true, y_pred)`` as floats of ``y_pred``'s type, of matching rank."""
    y_pred = _float(y_pred)
    y_true, y_pred = squeeze_or_expand_to_same_rank(_float(y_true, y_pred), y_pred)
    return y_true, y_pred


def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                             label_smoothing: float = 0.0, axis: int = -1) -> Any:
    """``-sum(y_true * log(p))`` over ``axis``, ``p`` the predicted class probabilities."""
    y_pred = _float(y_pred)
    y_true = _float(y_true, y_pred)
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise InvalidArgumentError(
            f"categorical_crossentropy: y_true shape {y_true.shape} must equal y_pred shape "
            f"{y_pred.shape} (one-hot labels; use sparse_categorical_crossentropy for "
            "integer labels)")
    if label_smoothing:
        n = y_pred.shape[axis]
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / n
    if from_logits:
        log_p = nn.log_softmax(y_pred, axis=axis)
    else:
        p = y_pred / xnp.sum(y_pred, axis=axis, keepdims=True)
        log_p = xnp.log(xnp.clip(p, epsilon(), 1.0 - epsilon()))
    return -xnp.sum(y_true * log_p, axis=axis)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                                    axis: int = -1) -> Any:
    """Categorical cross-entropy with integer labels ``(batch,)`` or ``(batch, 1)``."""
    y_pred = _float(y_pred)
    labels = xnp.asarray(y_true)
    if labels.ndim == y_pred.ndim and labels.shape[-1] == 1:
        labels = xnp.reshape(labels, labels.shape[:-1])
    if labels.ndim != y_pred.ndim - 1:
        raise InvalidArgumentError(
            f"sparse_categorical_crossentropy: labels of shape {tuple(xnp.shape(y_true))} do "
            f"not match predictions of shape {y_pred.shape} (expected {y_pred.shape[:-1]})")
    if labels.dtype.kind not in "iu":
        labels = labels.astype(np.int32)
    onehot = nn.one_hot(labels, y_pred.shape[axis], dtype=y_pred.dtype, axis=axis)
    return categorical_crossentropy(onehot, y_pred, from_logits=from_logits, axis=axis)


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                        label_smoothing: float = 0.0, axis: int = -1) -> Any:
    """Mean over ``axis`` of ``-(y log p + (1 - y) log(1 - p))``."""
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        per = -(y_true * nn.log_sigmoid(y_pred) + (1.0 - y_true) * nn.log_sigmoid(-y_pred))
    else:
        p = xnp.clip(y_pred, epsilon(), 1.0 - epsilon())
        per = -(y_true * xnp.log(p) + (1.0 - y_true) * xnp.log(1.0 - p))
    return xnp.mean(per, axis=axis)


def mean_squared_error(y_true: Any, y_pred: Any) -> Any:
    """Mean over the last axis of ``(y_true - y_pred)**2``."""
    y_true, y_pred = _pair(y_true, y_pred)
    return xnp.mean(xnp.square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Any:
    """Mean over the last axis of ``|y_true - y_pred|``."""
    y_true, y_pred = _pair(y_true, y_pred)
    return xnp.mean(xnp.abs(y_true - y_pred), axis=-1)


def _signed_labels(y_true: Any) -> Any:
    """Keras's hinge convention: when every label is 0 or 1 they become -1 / 1."""
    is_binary = xnp.all((y_true == 0.0) | (y_true == 1.0))
    return xnp.where(is_binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true: Any, y_pred: Any) -> Any:
    """Mean over the last axis of ``max(1 - y_true * y_pred, 0)`` (labels -1/1 or 0/1)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return xnp.mean(xnp.maximum(1.0 - _signed_labels(y_true) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true: Any, y_pred: Any) -> Any:
    """Mean over the last axis of ``max(1 - y_true * y_pred, 0)**2``."""
    y_true, y_pred = _pair(y_true, y_pred)
    return xnp.mean(xnp.square(xnp.maximum(1.0 - _signed_labels(y_true) * y_pred, 0.0)),
                    axis=-1)


def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Any:
    """Mean over the last axis of ``e**2 / 2`` for ``|e| <= delta``, else
    ``delta * (|e| - delta / 2)``."""
    y_true, y_pred = _pair(y_true, y_pred)
    err = xnp.abs(y_true - y_pred)
    quad = xnp.minimum(err, delta)
    return xnp.mean(0.5 * xnp.square(quad) + delta * (err - quad), axis=-1)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error

REDUCTIONS = ("sum_over_batch_size", "sum", "none")


def _loss_precision(y_pred: Any) -> Any:
    """Predictions of a 16-bit float type (a mixed precision model's outputs) as float32:
    losses are computed in float32, as Keras does."""
    if isinstance(y_pred, (list, tuple, dict)):
        return y_pred
    x = xnp.asarray(y_pred)
    return x.astype(np.float32) if is_float(x.dtype) and x.dtype.itemsize < 4 else x


def reduce_weighted(values: Any, sample_weight: Any, reduction: str) -> Any:
    """Apply ``sample_weight`` (broadcast from the batch axis) and reduce."""
    values = xnp.asarray(values)
    if sample_weight is not None:
        w = xnp.asarray(sample_weight, values.dtype)
        w = xnp.reshape(w, tuple(w.shape) + (1,) * (values.ndim - w.ndim))
        values = values * w
    if reduction == "none":
        return values
    total = xnp.sum(values)
    return total if reduction == "sum" else total / max(1, values.size)


class Loss:
    """``loss(y_true, y_pred, sample_weight=None)``: per-sample values, weighted, reduced."""

    def __init__(self, reduction: str = "sum_over_batch_size", name: str | None = None) -> None:
        if reduction not in REDUCTIONS:
            raise InvalidArgumentError(f"unknown loss reduction {reduction!r}; expected one "
                                       f"of {REDUCTIONS}")
        self.reduction = reduction
        self.name = name or snake_case(type(self).__name__)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        raise InvalidArgumentError(f"{type(self).__name__} does not define call()")

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        return reduce_weighted(self.call(y_true, _loss_precision(y_pred)), sample_weight,
                               self.reduction)

    def get_config(self) -> dict:
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> "Loss":
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A ``Loss`` around a per-sample function and its keyword arguments."""

    def __init__(self, fn: Callable[..., Any], reduction: str = "sum_over_batch_size",
                 name: str | None = None, **kwargs: Any) -> None:
        super().__init__(reduction, name or getattr(fn, "__name__", "loss"))
        self.fn, self.fn_kwargs = fn, kwargs

    def call(self, y_true: Any, y_pred: Any) -> Any:
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self.fn_kwargs)

    def get_config(self) -> dict:
        config = {**super().get_config(), **self.fn_kwargs}
        if type(self) is LossFunctionWrapper:        # subclasses fix their function
            config["fn"] = self.fn
        return config


def _wrapper(fn: Callable[..., Any], default_name: str, params: tuple[str, ...]) -> type:
    def __init__(self: LossFunctionWrapper, *args: Any, reduction: str = "sum_over_batch_size",
                 name: str | None = None, **kwargs: Any) -> None:
        kwargs.update(zip(params, args))
        unknown = set(kwargs) - set(params)
        if unknown:
            raise InvalidArgumentError(f"{type(self).__name__}: unexpected arguments "
                                       f"{sorted(unknown)}")
        LossFunctionWrapper.__init__(self, fn, reduction, name or default_name, **kwargs)
    cls_name = "".join(p.capitalize() for p in default_name.split("_"))
    return type(cls_name, (LossFunctionWrapper,), {"__init__": __init__,
                                                   "__doc__": fn.__doc__})


CategoricalCrossentropy = _wrapper(categorical_crossentropy, "categorical_crossentropy",
                                   ("from_logits", "label_smoothing", "axis"))
SparseCategoricalCrossentropy = _wrapper(sparse_categorical_crossentropy,
                                         "sparse_categorical_crossentropy",
                                         ("from_logits", "axis"))
BinaryCrossentropy = _wrapper(binary_crossentropy, "binary_crossentropy",
                              ("from_logits", "label_smoothing", "axis"))
MeanSquaredError = _wrapper(mean_squared_error, "mean_squared_error", ())
MeanAbsoluteError = _wrapper(mean_absolute_error, "mean_absolute_error", ())
Huber = _wrapper(huber, "huber", ("delta",))
Hinge = _wrapper(hinge, "hinge", ())
SquaredHinge = _wrapper(squared_hinge, "squared_hinge", ())

_BY_NAME: dict[str, Callable[..., Any]] = {
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "binary_crossentropy": binary_crossentropy,
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
    "huber": huber, "hinge": hinge, "squared_hinge": squared_hinge,
}


def get(identifier: Any) -> Loss:
    """A ``Loss`` from a name, a ``Loss`` instance or a per-sample function."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            raise InvalidArgumentError(f"unknown loss {identifier!r}; expected one of "
                                       f"{sorted(_BY_NAME)}, a Loss or a function")
        return LossFunctionWrapper(fn, name=fn.__name__)
    if callable(identifier):
        return LossFunctionWrapper(identifier)
    raise InvalidArgumentError(f"cannot interpret {identifier!r} as a loss")


__all__ = ["Loss", "LossFunctionWrapper", "CategoricalCrossentropy",
           "SparseCategoricalCrossentropy", "BinaryCrossentropy", "MeanSquaredError",
           "MeanAbsoluteError", "Huber", "Hinge", "SquaredHinge", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "binary_crossentropy", "mean_squared_error",
           "mean_absolute_error", "huber", "hinge", "squared_hinge", "mse", "mae", "get",
           "reduce_weighted", "squeeze_or_expand_to_same_rank"]
