"""Convolution and pooling layers over :func:`xlapy.nn.conv` / ``max_pool`` / ``avg_pool``.

Kernels are ``(spatial..., in_channels // groups, filters)`` (Keras's layout); inputs
are channels-last by default. ``padding='same'`` follows TensorFlow (output size
``ceil(n / stride)``, the odd pixel of padding at the end), ``'valid'`` uses no padding.
Average pooling with ``'same'`` padding divides each window by the number of real
inputs it covers, as TensorFlow does.
"""
from __future__ import annotations

from typing import Any

from ... import nn
from ... import numpy as xnp
from ...errors import InvalidArgumentError
from ...frontend.lax_nn import int_tuple
from ...hlo.shape_inference.reduction import window_output_size as hlo_window_output_size
from .. import activations, constraints
from .base import Layer, Shape


def _padding(padding: str, owner: str, allowed: tuple[str, ...] = ("valid", "same")) -> str:
    p = str(padding).lower()
    if p not in allowed:
        raise InvalidArgumentError(f"{owner}: padding must be one of {allowed}, got {padding!r}")
    return p


def _data_format(fmt: str | None, owner: str) -> str:
    fmt = fmt or "channels_last"
    if fmt not in ("channels_last", "channels_first"):
        raise InvalidArgumentError(f"{owner}: data_format must be 'channels_last' or "
                                   f"'channels_first', got {fmt!r}")
    return fmt


def window_output_size(n: int | None, window: int, stride: int, padding: str,
                       dilation: int = 1) -> int | None:
    """Output length of a window op over ``n`` inputs (``None`` stays unknown)."""
    if n is None:
        return None
    if padding in ("same", "causal"):
        return -(-n // stride)
    return hlo_window_output_size(n, window, stride, 0, 0, window_dilation=dilation)


def _spatial_axes(rank: int, data_format: str) -> tuple[int, ...]:
    return tuple(range(1, rank + 1)) if data_format == "channels_last" else \
        tuple(range(2, rank + 2))


class _Conv(Layer):
    """N-D convolution (``rank`` spatial dimensions)."""

    rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = 1, groups: int = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        owner = f"{type(self).__name__} {self.name!r}"
        self.filters = int(filters)
        self.kernel_size = int_tuple(f"{owner}: kernel_size", kernel_size, self.rank)
        self.strides = int_tuple(f"{owner}: strides", strides, self.rank)
        self.dilation_rate = int_tuple(f"{owner}: dilation_rate", dilation_rate, self.rank)
        allowed = ("valid", "same", "causal") if self.rank == 1 else ("valid", "same")
        self.padding = _padding(padding, owner, allowed)
        self.data_format = _data_format(data_format, owner)
        self.groups = int(groups)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise InvalidArgumentError(f"{owner}: strides > 1 together with dilation_rate > 1 "
                                       "is not supported (as in Keras)")
        if self.filters <= 0 or self.filters % self.groups:
            raise InvalidArgumentError(f"{owner}: filters ({filters}) must be positive and "
                                       f"divisible by groups ({groups})")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def _channel_axis(self) -> int:
        return -1 if self.data_format == "channels_last" else 1

    def build(self, input_shape: Shape) -> None:
        if len(input_shape) != self.rank + 2:
            raise InvalidArgumentError(
                f"{type(self).__name__} {self.name!r} expects inputs of rank {self.rank + 2} "
                f"(batch, spatial..., channels), got shape {input_shape}")
        channels = input_shape[self._channel_axis()]
        if channels is None or channels % self.groups:
            raise InvalidArgumentError(
                f"{type(self).__name__} {self.name!r}: input channels ({channels}) must be "
                f"known and divisible by groups ({self.groups})")
        shape = (*self.kernel_size, channels // self.groups, self.filters)
        self.kernel = self.add_weight("kernel", shape, self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None

    def call(self, inputs: Any) -> Any:
        y = nn.conv(inputs, self.kernel.read_value(), strides=self.strides,
                    padding=self.padding, dilation=self.dilation_rate, groups=self.groups,
                    data_format=self.data_format)
        if self.bias is not None:
            b = self.bias.read_value()
            if self.data_format == "channels_first":
                b = xnp.reshape(b, (self.filters,) + (1,) * self.rank)
            y = y + b
        return self.activation(y)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        axes = _spatial_axes(self.rank, self.data_format)
        out = list(input_shape)
        for i, ax in enumerate(axes):
            out[ax] = window_output_size(input_shape[ax], self.kernel_size[i], self.strides[i],
                                         self.padding, self.dilation_rate[i])
        out[self._channel_axis()] = self.filters
        return tuple(out)


class Conv1D(_Conv):
    """1-D convolution over ``(batch, steps, channels)``; also ``padding='causal'``."""

    rank = 1


class Conv2D(_Conv):
    """2-D convolution over ``(batch, height, width, channels)``."""

    rank = 2


class Conv3D(_Conv):
    rank = 3


class _SpatialLayer(Layer):
    """A layer over ``rank`` spatial dimensions computing ``kind`` (``"max"``/``"avg"``);
    subclasses set both in their class statement: ``class X(_Pooling, rank=1, kind="max")``."""

    rank = 2
    kind = "max"

    def __init_subclass__(cls, rank: int | None = None, kind: str | None = None,
                          **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if rank is not None:
            cls.rank = rank
        if kind is not None:
            cls.kind = kind


class _Pooling(_SpatialLayer):

    def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        owner = f"{type(self).__name__} {self.name!r}"
        self.pool_size = int_tuple(f"{owner}: pool_size", pool_size, self.rank)
        self.strides = self.pool_size if strides is None else \
            int_tuple(f"{owner}: strides", strides, self.rank)
        self.padding = _padding(padding, owner)
        self.data_format = _data_format(data_format, owner)

    def call(self, inputs: Any) -> Any:
        fn = nn.max_pool if self.kind == "max" else nn.avg_pool
        return fn(inputs, self.pool_size, self.strides, self.padding, self.data_format)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        out = list(input_shape)
        for i, ax in enumerate(_spatial_axes(self.rank, self.data_format)):
            out[ax] = window_output_size(input_shape[ax], self.pool_size[i], self.strides[i],
                                         self.padding)
        return tuple(out)


class MaxPooling1D(_Pooling, rank=1, kind="max"):
    """Maximum over ``pool_size`` windows of a sequence."""


class MaxPooling2D(_Pooling, rank=2, kind="max"):
    """Maximum over ``pool_size`` windows (strides default to the pool size)."""


class AveragePooling1D(_Pooling, rank=1, kind="avg"):
    """Mean over ``pool_size`` windows of a sequence."""


class AveragePooling2D(_Pooling, rank=2, kind="avg"):
    """Mean over ``pool_size`` windows (strides default to the pool size)."""


class _GlobalPooling(_SpatialLayer, kind="avg"):

    def __init__(self, data_format: str | None = None, keepdims: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format, f"{type(self).__name__} {self.name!r}")
        self.keepdims = keepdims

    def call(self, inputs: Any) -> Any:
        axes = _spatial_axes(self.rank, self.data_format)
        fn = xnp.mean if self.kind == "avg" else xnp.max
        return fn(inputs, axis=axes, keepdims=self.keepdims)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        axes = _spatial_axes(self.rank, self.data_format)
        if self.keepdims:
            return tuple(1 if i in axes else s for i, s in enumerate(input_shape))
        return tuple(s for i, s in enumerate(input_shape) if i not in axes)


class GlobalAveragePooling1D(_GlobalPooling, rank=1, kind="avg"):
    """Mean over the steps of a sequence: ``(batch, steps, c) -> (batch, c)``."""


class GlobalAveragePooling2D(_GlobalPooling, rank=2, kind="avg"):
    """Mean over the spatial dimensions: ``(batch, h, w, c) -> (batch, c)``."""


class GlobalMaxPooling2D(_GlobalPooling, rank=2, kind="max"):
    """Maximum over the spatial dimensions: ``(batch, h, w, c) -> (batch, c)``."""


MaxPool2D, AvgPool2D = MaxPooling2D, AveragePooling2D

__all__ = ["Conv1D", "Conv2D", "Conv3D", "MaxPooling1D", "MaxPooling2D", "MaxPool2D",
           "AveragePooling1D", "AveragePooling2D", "AvgPool2D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "GlobalMaxPooling2D", "window_output_size"]
