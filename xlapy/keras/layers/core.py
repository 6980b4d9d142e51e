"""Core layers: Dense, Activation, Flatten, Reshape, Dropout, Embedding, Lambda, Add,
Concatenate."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ... import numpy as xnp
from ... import random as xr
from ...errors import InvalidArgumentError
from ...frontend.variables import Variable
from .. import activations, backend, constraints
from .base import Layer, Shape


def _last_dim(input_shape: Shape, layer: Layer) -> int:
    if not input_shape or input_shape[-1] is None:
        raise InvalidArgumentError(f"layer {layer.name!r} ({type(layer).__name__}) needs a "
                                   f"known last dimension, got input shape {input_shape}")
    return int(input_shape[-1])


class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` over the last axis; ``kernel`` is
    ``(input_dim, units)``."""

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if int(units) <= 0:
            raise InvalidArgumentError(f"Dense: units must be positive, got {units}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def build(self, input_shape: Shape) -> None:
        n = _last_dim(input_shape, self)
        self.kernel = self.add_weight("kernel", (n, self.units), self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight("bias", (self.units,), self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None

    def call(self, inputs: Any) -> Any:
        y = xnp.matmul(inputs, self.kernel)
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (*input_shape[:-1], self.units)


class Activation(Layer):
    """Applies an activation function (a name such as ``'relu'`` or a callable)."""

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs: Any) -> Any:
        return self.activation(inputs)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return input_shape


class Flatten(Layer):
    """``(batch, ...) -> (batch, prod(...))``; ``channels_first`` inputs are first moved
    to channels-last order, as Keras does, so that weights port between formats."""

    def __init__(self, data_format: str = "channels_last", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if data_format not in ("channels_last", "channels_first"):
            raise InvalidArgumentError(f"Flatten: unknown data_format {data_format!r}")
        self.data_format = data_format

    def call(self, inputs: Any) -> Any:
        x = xnp.asarray(inputs)
        if self.data_format == "channels_first" and x.ndim > 2:
            x = xnp.moveaxis(x, 1, -1)
        return xnp.reshape(x, (x.shape[0], -1))

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        rest = input_shape[1:]
        return (input_shape[0], None if None in rest else int(np.prod(rest, dtype=np.int64)))


class Reshape(Layer):
    """Reshape each sample to ``target_shape`` (one entry may be ``-1``)."""

    def __init__(self, target_shape: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(s) for s in target_shape)
        if sum(s == -1 for s in self.target_shape) > 1:
            raise InvalidArgumentError(f"Reshape: at most one -1 in target_shape, got "
                                       f"{self.target_shape}")

    def call(self, inputs: Any) -> Any:
        x = xnp.asarray(inputs)
        return xnp.reshape(x, (x.shape[0], *self.target_shape))

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        n = int(np.prod(input_shape[1:], dtype=np.int64))
        known = int(np.prod([s for s in self.target_shape if s != -1], dtype=np.int64))
        if -1 in self.target_shape:
            if known == 0 or n % known:
                raise InvalidArgumentError(f"Reshape: cannot reshape {input_shape[1:]} to "
                                           f"{self.target_shape}")
            return (input_shape[0], *[n // known if s == -1 else s for s in self.target_shape])
        if known != n:
            raise InvalidArgumentError(f"Reshape: cannot reshape {input_shape[1:]} ({n} "
                                       f"elements) to {self.target_shape}")
        return (input_shape[0], *self.target_shape)


class Dropout(Layer):
    """Zeroes a fraction ``rate`` of the inputs while training and scales the rest by
    ``1 / (1 - rate)``; the identity at inference.

    The random key is layer state: a non-trainable ``uint32[2]`` Variable (a threefry key
    of :mod:`xlapy.random`) split on every training call, so a compiled train step draws
    a new mask each step without recompiling. It is not part of :attr:`weights`.
    """

    def __init__(self, rate: float, noise_shape: Sequence[int | None] | None = None,
                 seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise InvalidArgumentError(f"Dropout: rate must be in [0, 1), got {rate}")
        self.rate = float(rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = backend.draw_seed() if seed is None else int(seed)
        self.seed_state = Variable(xr.key(self.seed), trainable=False,
                                   name=f"{self.name}/seed_state")

    def _mask_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if self.noise_shape is None:
            return shape
        return tuple(s if n is None else int(n) for s, n in zip(shape, self.noise_shape))

    def call(self, inputs: Any, training: bool = False) -> Any:
        x = xnp.asarray(inputs)
        if not training or self.rate == 0.0:
            return x
        keys = xr.split(self.seed_state.read_value())
        self.seed_state.assign(keys[0])
        keep = xr.bernoulli(keys[1], 1.0 - self.rate, self._mask_shape(x.shape))
        return xnp.where(keep, x / (1.0 - self.rate), xnp.zeros_like(x))

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return input_shape


class Embedding(Layer):
    """Maps integer ids ``(batch, ...)`` to vectors ``(batch, ..., output_dim)``.

    ``input_length`` (TensorFlow 2 Keras) gives the input shape ``(input_length,)`` when
    no ``input_shape`` is given, so ``Sequential([Embedding(1000, 64, input_length=10),
    ...])`` is built at once. ``mask_zero=True`` (padding masks) is not supported.
    """

    _accepts_integer_inputs = True

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer: Any = "uniform",
                 embeddings_regularizer: Any = None, embeddings_constraint: Any = None,
                 mask_zero: bool = False, input_length: int | None = None,
                 **kwargs: Any) -> None:
        if input_length is not None and not any(k in kwargs for k in (
                "input_shape", "batch_input_shape", "input_dim")):
            kwargs["input_shape"] = (int(input_length),)
        super().__init__(**kwargs)
        if mask_zero:
            raise InvalidArgumentError(f"Embedding {self.name!r}: mask_zero=True is not "
                                       "supported (xlapy.keras has no masking)")
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.input_length = input_length
        self.mask_zero = False
        self.embeddings_initializer = embeddings_initializer
        self.embeddings_regularizer = embeddings_regularizer
        self.embeddings_constraint = constraints.get(embeddings_constraint)

    def build(self, input_shape: Shape) -> None:
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)

    def call(self, inputs: Any) -> Any:
        ids = xnp.asarray(inputs)
        if ids.dtype.kind not in "iu":
            ids = ids.astype(np.int32)
        return xnp.take(self.embeddings.read_value(), ids, axis=0)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (*input_shape, self.output_dim)


class Lambda(Layer):
    """Wraps a function of arrays as a layer (no weights)."""

    def __init__(self, function: Callable[[Any], Any], output_shape: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.function = function
        self._output_shape_arg = output_shape

    def call(self, inputs: Any) -> Any:
        return self.function(inputs)

    def compute_output_shape(self, input_shape: Any) -> Any:
        if self._output_shape_arg is not None:
            return (input_shape[0], *self._output_shape_arg)
        return super().compute_output_shape(input_shape)


class _Merge(Layer):
    def _check(self, input_shape: Any) -> list[Shape]:
        if not isinstance(input_shape, (list, tuple)) or not input_shape or \
                not isinstance(input_shape[0], tuple):
            raise InvalidArgumentError(f"{type(self).__name__} layer {self.name!r} must be "
                                       "called on a list of inputs")
        return list(input_shape)


class Add(_Merge):
    """The elementwise sum of a list of inputs of one shape."""

    def call(self, inputs: Sequence[Any]) -> Any:
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out

    def compute_output_shape(self, input_shape: Any) -> Shape:
        shapes = self._check(input_shape)
        if any(s != shapes[0] for s in shapes):
            raise InvalidArgumentError(f"Add layer {self.name!r}: inputs must have one shape, "
                                       f"got {shapes}")
        return shapes[0]


class Concatenate(_Merge):
    """Concatenates a list of inputs along ``axis``."""

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs: Sequence[Any]) -> Any:
        return xnp.concatenate(list(inputs), axis=self.axis)

    def compute_output_shape(self, input_shape: Any) -> Shape:
        shapes = self._check(input_shape)
        rank = len(shapes[0])
        ax = self.axis % rank
        sizes = [s[ax] for s in shapes]
        out = list(shapes[0])
        out[ax] = None if None in sizes else int(sum(sizes))
        return tuple(out)


__all__ = ["Dense", "Activation", "Flatten", "Reshape", "Dropout", "Embedding", "Lambda",
           "Add", "Concatenate"]
