"""BatchNormalization and LayerNormalization (Keras's definitions and defaults)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import numpy as xnp
from ...errors import InvalidArgumentError
from ...frontend.dtypes import is_float
from .. import backend, constraints
from .base import Layer, Shape


def _axes(axis: int | Sequence[int], rank: int, owner: str) -> tuple[int, ...]:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise InvalidArgumentError(f"{owner}: axis {a} is out of range for inputs of "
                                       f"rank {rank}")
        out.append(a % rank)
    return tuple(sorted(set(out)))


def _param_shape(input_shape: Shape, axes: tuple[int, ...], owner: str) -> tuple[int, ...]:
    dims = [input_shape[a] for a in axes]
    if None in dims:
        raise InvalidArgumentError(f"{owner}: the normalized axes {axes} of input shape "
                                   f"{input_shape} must have known sizes")
    return tuple(int(d) for d in dims)


def _broadcastable(v: Any, rank: int, axes: tuple[int, ...]) -> Any:
    """``v`` (shaped like the kept ``axes``) reshaped to broadcast against rank-``rank`` x."""
    shape = [1] * rank
    for a, n in zip(axes, v.shape):
        shape[a] = n
    return xnp.reshape(v, tuple(shape))


def _in_float32(inputs: Any) -> Any:
    """Inputs of a 16-bit float type as float32: normalization statistics are computed
    in float32 under a mixed precision policy, as Keras does."""
    x = xnp.asarray(inputs)
    return x.astype(np.float32) if is_float(x.dtype) and x.dtype.itemsize < 4 else x


class BatchNormalization(Layer):
    """Normalizes each feature (``axis``) with the batch's statistics while training and
    with moving averages at inference: ``gamma * (x - mean) / sqrt(var + epsilon) + beta``.

    While training, the moving statistics (non-trainable Variables) are updated in the
    same step: ``moving = moving * momentum + batch_stat * (1 - momentum)`` with the
    biased batch variance. Rows of a padded last batch (weight 0 in
    ``backend.current_batch_mask()``) do not count in the batch statistics.

    ``fused`` (TensorFlow 2 Keras: pick the fused kernel) and ``synchronized`` (Keras 3:
    average the statistics over devices) are accepted and change nothing: xlapy runs on
    one device and its compiler fuses the normalization itself.

    Under a mixed precision policy the statistics are computed in float32 (the weights
    are read as float32) and the result is returned in the compute dtype.
    """

    _autocast = False

    def __init__(self, axis: int | Sequence[int] = -1, momentum: float = 0.99,
                 epsilon: float = 1e-3, center: bool = True, scale: bool = True,
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 moving_mean_initializer: Any = "zeros",
                 moving_variance_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, synchronized: bool = False,
                 fused: bool | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis, self.momentum, self.epsilon = axis, float(momentum), float(epsilon)
        self.center, self.scale = center, scale
        self.synchronized, self.fused = bool(synchronized), fused
        self._inits = (beta_initializer, gamma_initializer, moving_mean_initializer,
                       moving_variance_initializer)
        self._regs = (beta_regularizer, gamma_regularizer)
        self._constraints = (constraints.get(beta_constraint), constraints.get(gamma_constraint))

    def build(self, input_shape: Shape) -> None:
        owner = f"BatchNormalization {self.name!r}"
        self._feature_axes = _axes(self.axis, len(input_shape), owner)
        shape = _param_shape(input_shape, self._feature_axes, owner)
        beta_i, gamma_i, mean_i, var_i = self._inits
        self.gamma = self.add_weight("gamma", shape, gamma_i, regularizer=self._regs[1],
                                     constraint=self._constraints[1]) if self.scale else None
        self.beta = self.add_weight("beta", shape, beta_i, regularizer=self._regs[0],
                                    constraint=self._constraints[0]) if self.center else None
        self.moving_mean = self.add_weight("moving_mean", shape, mean_i, trainable=False)
        self.moving_variance = self.add_weight("moving_variance", shape, var_i,
                                               trainable=False)

    def _batch_moments(self, x: Any, reduce: tuple[int, ...]) -> tuple[Any, Any]:
        mask = backend.current_batch_mask()
        if mask is None or 0 not in reduce or tuple(mask.shape) != (x.shape[0],):
            mean = xnp.mean(x, axis=reduce)
            var = xnp.mean(xnp.square(x - _broadcastable(mean, x.ndim, self._feature_axes)),
                           axis=reduce)
            return mean, var
        w = xnp.reshape(xnp.asarray(mask, x.dtype), (x.shape[0],) + (1,) * (x.ndim - 1))
        per_row = int(np.prod([x.shape[a] for a in reduce if a != 0], dtype=np.int64))
        count = xnp.sum(w) * per_row
        mean = xnp.sum(x * w, axis=reduce) / count
        centered = x - _broadcastable(mean, x.ndim, self._feature_axes)
        var = xnp.sum(xnp.square(centered) * w, axis=reduce) / count
        return mean, var

    def call(self, inputs: Any, training: bool = False) -> Any:
        x = _in_float32(inputs)
        reduce = tuple(a for a in range(x.ndim) if a not in self._feature_axes)
        if training and self.trainable:
            mean, var = self._batch_moments(x, reduce)
            m = self.momentum
            self.moving_mean.assign(self.moving_mean.read_value() * m + mean * (1.0 - m))
            self.moving_variance.assign(self.moving_variance.read_value() * m + var * (1.0 - m))
        else:
            mean, var = self.moving_mean.read_value(), self.moving_variance.read_value()
        inv = xnp.reciprocal(xnp.sqrt(var + self.epsilon))
        if self.gamma is not None:
            inv = inv * self.gamma.read_value()
        shift = -mean * inv
        if self.beta is not None:
            shift = shift + self.beta.read_value()
        axes = self._feature_axes
        y = x * _broadcastable(inv, x.ndim, axes) + _broadcastable(shift, x.ndim, axes)
        return y.astype(self.compute_dtype)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return input_shape


class LayerNormalization(Layer):
    """Normalizes each sample over ``axis`` (default the last):
    ``gamma * (x - mean) / sqrt(var + epsilon) + beta``; in float32 under a mixed
    precision policy (the result in the compute dtype)."""

    _autocast = False

    def __init__(self, axis: int | Sequence[int] = -1, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis, self.epsilon = axis, float(epsilon)
        self.center, self.scale = center, scale
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self._regs = (beta_regularizer, gamma_regularizer)
        self._constraints = (constraints.get(beta_constraint), constraints.get(gamma_constraint))

    def build(self, input_shape: Shape) -> None:
        owner = f"LayerNormalization {self.name!r}"
        self._norm_axes = _axes(self.axis, len(input_shape), owner)
        if 0 in self._norm_axes:
            raise InvalidArgumentError(f"{owner}: cannot normalize over the batch axis")
        shape = _param_shape(input_shape, self._norm_axes, owner)
        self.gamma = self.add_weight("gamma", shape, self.gamma_initializer,
                                     regularizer=self._regs[1],
                                     constraint=self._constraints[1]) if self.scale else None
        self.beta = self.add_weight("beta", shape, self.beta_initializer,
                                    regularizer=self._regs[0],
                                    constraint=self._constraints[0]) if self.center else None

    def call(self, inputs: Any) -> Any:
        x = _in_float32(inputs)
        axes = self._norm_axes
        mean = xnp.mean(x, axis=axes, keepdims=True)
        centered = x - mean
        var = xnp.mean(xnp.square(centered), axis=axes, keepdims=True)
        y = centered * xnp.reciprocal(xnp.sqrt(var + self.epsilon))
        if self.gamma is not None:
            y = y * _broadcastable(self.gamma.read_value(), x.ndim, axes)
        if self.beta is not None:
            y = y + _broadcastable(self.beta.read_value(), x.ndim, axes)
        return y.astype(self.compute_dtype)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return input_shape


__all__ = ["BatchNormalization", "LayerNormalization"]
