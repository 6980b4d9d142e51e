"""Stateful metrics: running means whose state is Variables.

A metric's state (``total`` and ``count``) lives in non-trainable Variables, so
``update_state`` works eagerly and inside a compiled train step (the new state is
written back through input/output aliasing). ``result()`` is ``total / count`` (0 before
any update); ``reset_state()`` zeroes the state.

``'accuracy'`` picks Keras's variant from the shapes it sees: binary accuracy when the
prediction has one unit (or is one value per sample), sparse categorical when the labels
have one dimension fewer (or a last dimension of 1 against several classes), else
categorical accuracy.

Elementwise comparisons (``accuracy``, ``binary_accuracy`` and the loss-based metrics)
first match the ranks of ``y_true`` and ``y_pred`` with Keras's
:func:`~xlapy.keras.losses.squeeze_or_expand_to_same_rank`, so labels of shape
``(batch,)`` against predictions ``(batch, 1)`` are compared row by row.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import numpy as xnp
from ..errors import InvalidArgumentError
from ..frontend.variables import Variable
from . import losses as losses_mod
from .backend import snake_case


class Metric:
    """Base class: ``update_state(...)``, ``result()``, ``reset_state()``."""

    def __init__(self, name: str | None = None, dtype: Any = None) -> None:
        self.name = name or snake_case(type(self).__name__)
        self.dtype = np.dtype(dtype or np.float32)
        self._variables: list[Variable] = []

    def add_variable(self, name: str, shape: tuple[int, ...] = ()) -> Variable:
        var = Variable(np.zeros(shape, self.dtype), trainable=False, name=f"{self.name}/{name}")
        self._variables.append(var)
        return var

    @property
    def variables(self) -> list[Variable]:
        return list(self._variables)

    def rename(self, name: str) -> None:
        """Change :attr:`name` and the names of the state Variables (``<name>/total``),
        which must stay distinct within one compiled step."""
        old, self.name = self.name, name
        for var in self._variables:
            if var.name.startswith(old + "/"):
                var.name = name + var.name[len(old):]

    def reset_state(self) -> None:
        for var in self._variables:
            var.assign(np.zeros(var.shape, var.dtype))

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        raise InvalidArgumentError(f"{type(self).__name__} does not define update_state()")

    def result(self) -> Any:
        raise InvalidArgumentError(f"{type(self).__name__} does not define result()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}

    @classmethod
    def from_config(cls, config: dict) -> "Metric":
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


def _weights_like(values: Any, sample_weight: Any) -> Any:
    """``sample_weight`` (per sample) broadcast to the shape of ``values``."""
    w = xnp.asarray(sample_weight, values.dtype)
    if w.ndim > values.ndim:
        raise InvalidArgumentError(f"sample_weight of shape {w.shape} has more dimensions than "
                                   f"the values {values.shape}")
    w = xnp.reshape(w, tuple(w.shape) + (1,) * (values.ndim - w.ndim))
    return xnp.broadcast_to(w, values.shape)


class Sum(Metric):
    """The (weighted) sum of all values seen."""

    def __init__(self, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name, dtype)
        self.total = self.add_variable("total")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        v = xnp.asarray(values).astype(self.dtype)
        if sample_weight is not None:
            v = v * _weights_like(v, sample_weight)
        self.total.assign(self.total.read_value() + xnp.sum(v))

    def result(self) -> Any:
        return self.total.read_value()


class Mean(Metric):
    """The (weighted) mean of all values seen: ``sum(w * v) / sum(w)``."""

    def __init__(self, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name, dtype)
        self.total = self.add_variable("total")
        self.count = self.add_variable("count")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        v = xnp.asarray(values).astype(self.dtype)
        if sample_weight is None:
            total, count = xnp.sum(v), float(v.size)
        else:
            w = _weights_like(v, sample_weight)
            total, count = xnp.sum(v * w), xnp.sum(w)
        self.total.assign(self.total.read_value() + total)
        self.count.assign(self.count.read_value() + count)

    def result(self) -> Any:
        count = self.count.read_value()
        empty = count == 0
        return xnp.where(empty, xnp.zeros_like(count),
                         self.total.read_value() / xnp.where(empty, xnp.ones_like(count), count))


class MeanMetricWrapper(Mean):
    """The running mean of ``fn(y_true, y_pred)`` (one value per sample)."""

    def __init__(self, fn: Callable[..., Any], name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(name or getattr(fn, "__name__", "metric"), dtype)
        self.fn, self.fn_kwargs = fn, kwargs

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        super().update_state(self.fn(y_true, y_pred, **self.fn_kwargs), sample_weight)

    def get_config(self) -> dict:
        config = {**super().get_config(), **self.fn_kwargs}
        if type(self) is MeanMetricWrapper:          # subclasses fix their function
            config["fn"] = self.fn
        return config


# ------------------------------------------------------------------ per-sample functions
def _as(x: Any, dtype: Any) -> Any:
    x = xnp.asarray(x)
    return x if x.dtype == np.dtype(dtype) else x.astype(dtype)


def accuracy(y_true: Any, y_pred: Any) -> Any:
    """1 where ``y_true == y_pred`` elementwise, else 0."""
    y_true, y_pred = losses_mod.squeeze_or_expand_to_same_rank(y_true, y_pred)
    return _as(xnp.equal(_as(y_true, y_pred.dtype), y_pred), np.float32)


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Any:
    """Mean over the last axis of ``y_true == (y_pred > threshold)``."""
    y_true, y_pred = losses_mod.squeeze_or_expand_to_same_rank(y_true, y_pred)
    hit = xnp.equal(_as(y_true, np.float32), _as(y_pred > threshold, np.float32))
    return xnp.mean(_as(hit, np.float32), axis=-1)


def categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1 where ``argmax(y_true) == argmax(y_pred)`` over the last axis."""
    return _as(xnp.equal(xnp.argmax(y_true, axis=-1), xnp.argmax(y_pred, axis=-1)), np.float32)


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1 where the integer label equals ``argmax(y_pred)`` over the last axis."""
    y_pred = xnp.asarray(y_pred)
    labels = xnp.asarray(y_true)
    if labels.ndim == y_pred.ndim and labels.shape[-1] == 1:
        labels = xnp.reshape(labels, labels.shape[:-1])
    pred = xnp.argmax(y_pred, axis=-1)
    return _as(xnp.equal(_as(labels, np.int32), _as(pred, np.int32)), np.float32)


def auto_accuracy(y_true: Any, y_pred: Any) -> Any:
    """Keras's ``'accuracy'``: binary, sparse categorical or categorical by the shapes."""
    t_shape, p_shape = tuple(xnp.shape(y_true)), tuple(xnp.shape(y_pred))
    if len(p_shape) <= 1 or p_shape[-1] == 1:          # one prediction per sample
        return binary_accuracy(y_true, y_pred)
    if len(t_shape) < len(p_shape) or (t_shape and t_shape[-1] == 1 and p_shape[-1] > 1):
        return sparse_categorical_accuracy(y_true, y_pred)
    return categorical_accuracy(y_true, y_pred)


def _wrapper(fn: Callable[..., Any], default_name: str) -> type:
    def __init__(self: MeanMetricWrapper, name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        MeanMetricWrapper.__init__(self, fn, name or default_name, dtype, **kwargs)
    cls_name = "".join(p.capitalize() for p in default_name.split("_"))
    return type(cls_name, (MeanMetricWrapper,), {"__init__": __init__, "__doc__": fn.__doc__})


Accuracy = _wrapper(accuracy, "accuracy")
BinaryAccuracy = _wrapper(binary_accuracy, "binary_accuracy")
CategoricalAccuracy = _wrapper(categorical_accuracy, "categorical_accuracy")
SparseCategoricalAccuracy = _wrapper(sparse_categorical_accuracy,
                                     "sparse_categorical_accuracy")
MeanSquaredError = _wrapper(losses_mod.mean_squared_error, "mean_squared_error")
MeanAbsoluteError = _wrapper(losses_mod.mean_absolute_error, "mean_absolute_error")
CategoricalCrossentropy = _wrapper(losses_mod.categorical_crossentropy,
                                   "categorical_crossentropy")
SparseCategoricalCrossentropy = _wrapper(losses_mod.sparse_categorical_crossentropy,
                                         "sparse_categorical_crossentropy")
BinaryCrossentropy = _wrapper(losses_mod.binary_crossentropy, "binary_crossentropy")

_BY_NAME: dict[str, Callable[..., Any]] = {
    "accuracy": auto_accuracy, "acc": auto_accuracy, "binary_accuracy": binary_accuracy,
    "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "mse": losses_mod.mean_squared_error, "mean_squared_error": losses_mod.mean_squared_error,
    "mae": losses_mod.mean_absolute_error,
    "mean_absolute_error": losses_mod.mean_absolute_error,
    "categorical_crossentropy": losses_mod.categorical_crossentropy,
    "sparse_categorical_crossentropy": losses_mod.sparse_categorical_crossentropy,
    "binary_crossentropy": losses_mod.binary_crossentropy,
}


def get(identifier: Any) -> Metric:
    """A ``Metric`` from a name (``'accuracy'``), an instance or a per-sample function."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise InvalidArgumentError(f"unknown metric {identifier!r}; expected one of "
                                       f"{sorted(_BY_NAME)}, a Metric or a function")
        return MeanMetricWrapper(_BY_NAME[identifier], identifier)   # "acc" stays "acc"
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise InvalidArgumentError(f"cannot interpret {identifier!r} as a metric")


__all__ = ["Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy",
           "CategoricalAccuracy", "SparseCategoricalAccuracy", "MeanSquaredError",
           "MeanAbsoluteError", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "BinaryCrossentropy", "accuracy", "binary_accuracy", "categorical_accuracy",
           "sparse_categorical_accuracy", "auto_accuracy", "get"]
