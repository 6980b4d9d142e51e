"""``tf.nn``: activations, losses, convolutions and pooling with TensorFlow's signatures,
on ``xlapy.nn`` (``data_format='NHWC'`` is Keras's channels-last, ``'NCHW'``
channels-first; filters are ``[height, width, in_channels, out_channels]`` in both).

TF's defaults are kept where they differ from ``xlapy.nn``'s: ``gelu`` is exact
(``approximate=False``), ``leaky_relu`` has ``alpha=0.2``, ``softmax`` and ``log_softmax``
reduce the last axis. ``strides``/``ksize``/``dilations`` are an int, one int per spatial
dimension, or TF's full-rank form (``[1, s, s, 1]``; batch and channel entries must be 1).
``padding`` is ``'SAME'``, ``'VALID'`` or explicit ``[[0, 0], [top, bottom], [left, right],
[0, 0]]`` (in ``data_format`` order) for convolutions.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import nn as _nn
from .. import numpy as xnp
from ..errors import InvalidArgumentError
from ..frontend import dtypes as _dt
from ..frontend.core import Array
from . import random as _random
from ._array_ops import gather
from ._common import axes_arg, axis_arg, static_value, tensor, unsupported
from .math import l2_normalize, log_sigmoid, sigmoid, softplus, softsign, top_k

_FORMATS = {"NWC": "channels_last", "NHWC": "channels_last", "NDHWC": "channels_last",
            "NCW": "channels_first", "NCHW": "channels_first", "NCDHW": "channels_first"}


# ------------------------------------------------------------------------ activations
def relu(features: Any, name: str | None = None) -> Array:
    return _nn.relu(tensor(features))


def relu6(features: Any, name: str | None = None) -> Array:
    x = tensor(features)
    # TensorFlow keeps integer dtypes (jax.nn.relu6, hence xlapy.nn's, makes them float)
    return _nn.relu6(x) if _dt.is_inexact(x.dtype) else xnp.clip(x, 0, 6)


def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Array:
    return _nn.leaky_relu(tensor(features), alpha)


def elu(features: Any, name: str | None = None) -> Array:
    return _nn.elu(tensor(features))


def selu(features: Any, name: str | None = None) -> Array:
    return _nn.selu(tensor(features))


def gelu(features: Any, approximate: bool = False, name: str | None = None) -> Array:
    """Gaussian error linear unit; exact (erf) unless ``approximate`` (tanh), as TF."""
    return _nn.gelu(tensor(features), approximate=approximate)


def silu(features: Any, beta: float = 1.0, name: str | None = None) -> Array:
    """``features * sigmoid(beta * features)``."""
    x = tensor(features)
    return x * _nn.sigmoid(x * beta) if beta != 1.0 else _nn.silu(x)


swish = silu


def tanh(x: Any, name: str | None = None) -> Array:
    return xnp.tanh(tensor(x))


def softmax(logits: Any, axis: Any = None, name: str | None = None) -> Array:
    x = tensor(logits)
    return _nn.softmax(x, -1 if axis is None else axis_arg(axis, x.ndim))


def log_softmax(logits: Any, axis: Any = None, name: str | None = None) -> Array:
    x = tensor(logits)
    return _nn.log_softmax(x, -1 if axis is None else axis_arg(axis, x.ndim))


# ------------------------------------------------------------------------------ losses
def sparse_softmax_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                             name: str | None = None) -> Array:
    """Per-example ``-log softmax(logits)[label]``: ``labels`` are class indices of shape
    ``logits.shape[:-1]``. Out-of-range labels give NaN (TF's GPU rule; TF's CPU raises)."""
    if labels is None or logits is None:
        raise InvalidArgumentError("sparse_softmax_cross_entropy_with_logits needs labels= "
                                   "and logits=")
    lg, lb = tensor(logits), tensor(labels)
    if lb.shape != lg.shape[:-1]:
        raise InvalidArgumentError(f"sparse_softmax_cross_entropy_with_logits: labels "
                                   f"{lb.type_text()} must have the shape of logits "
                                   f"{lg.type_text()} without its last dimension")
    if not _dt.is_integer(lb.dtype):
        raise InvalidArgumentError(f"sparse_softmax_cross_entropy_with_logits: labels must "
                                   f"be integers, got {lb.type_text()}")
    logp = _nn.log_softmax(lg, -1)
    n = lg.shape[-1]
    picked = xnp.sum(xnp.where(_nn.one_hot(lb, n, np.bool_), logp, xnp.zeros((), logp.dtype)),
                     -1)
    valid = xnp.logical_and(xnp.greater_equal(lb, 0), xnp.less(lb, n))
    return xnp.where(valid, -picked, xnp.full((), np.nan, logp.dtype))


def softmax_cross_entropy_with_logits(labels: Any = None, logits: Any = None, axis: int = -1,
                                      name: str | None = None) -> Array:
    """Per-example ``-sum(labels * log_softmax(logits), axis)`` (labels are
    probabilities; gradients flow into them too, as in TF 2)."""
    if labels is None or logits is None:
        raise InvalidArgumentError("softmax_cross_entropy_with_logits needs labels= and logits=")
    lg = tensor(logits)
    ax = axis_arg(axis, lg.ndim)
    lb = xnp.astype(tensor(labels), lg.dtype)
    return -xnp.sum(lb * _nn.log_softmax(lg, ax), ax)


def sigmoid_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                      name: str | None = None) -> Array:
    """Elementwise ``max(x, 0) - x * z + log(1 + exp(-|x|))`` for logits ``x``, labels ``z``."""
    if labels is None or logits is None:
        raise InvalidArgumentError("sigmoid_cross_entropy_with_logits needs labels= and logits=")
    x = tensor(logits)
    z = xnp.astype(tensor(labels), x.dtype)
    if z.shape != x.shape:
        raise InvalidArgumentError(f"sigmoid_cross_entropy_with_logits: labels {z.type_text()} "
                                   f"and logits {x.type_text()} must have the same shape")
    return xnp.maximum(x, 0) - x * z + xnp.log1p(xnp.exp(-xnp.abs(x)))


def l2_loss(t: Any, name: str | None = None) -> Array:
    """``sum(t ** 2) / 2``."""
    x = tensor(t)
    return xnp.sum(xnp.square(x)) / 2


# ------------------------------------------------------------------ conv and pooling
def _format(data_format: str | None, rank: int, api: str) -> str:
    default = {3: "NWC", 4: "NHWC", 5: "NDHWC"}.get(rank, "NHWC")
    fmt = data_format or default
    if fmt not in _FORMATS:
        raise unsupported(api, "data_format", data_format, f"use {default} or its N-C-... form")
    return _FORMATS[fmt]


def _spatial(value: Any, n: int, layout: str, what: str, api: str) -> tuple[int, ...]:
    """An int, ``n`` ints, or TF's full-rank list (batch and channel entries 1)."""
    v = static_value(value, what)
    v = [int(e) for e in (v if isinstance(v, list) else [v])]
    if len(v) == 1:
        return tuple(v * n)
    if len(v) == n:
        return tuple(v)
    if len(v) == n + 2:
        outer = (v[0], v[-1]) if layout == "channels_last" else (v[0], v[1])
        if outer != (1, 1):
            raise unsupported(api, what, value, "batch and channel entries must be 1")
        return tuple(v[1:-1] if layout == "channels_last" else v[2:])
    raise InvalidArgumentError(f"{api}: {what} must have 1, {n} or {n + 2} entries, got {value}")


def _padding(padding: Any, n: int, layout: str, api: str) -> Any:
    if isinstance(padding, str):
        if padding.upper() not in ("SAME", "VALID"):
            raise unsupported(api, "padding", padding, "use 'SAME', 'VALID' or explicit pairs")
        return padding.lower()
    pairs = [tuple(int(e) for e in p) for p in static_value(padding, "padding")]
    if len(pairs) != n + 2:
        raise InvalidArgumentError(f"{api}: explicit padding needs {n + 2} [before, after] "
                                   f"pairs, got {padding}")
    outer = [pairs[0], pairs[-1]] if layout == "channels_last" else pairs[:2]
    if any(p != (0, 0) for p in outer):
        raise unsupported(api, "padding", padding, "batch and channel padding must be 0")
    return pairs[1:-1] if layout == "channels_last" else pairs[2:]


def convolution(input: Any, filters: Any, strides: Any = None, padding: str = "VALID",
                data_format: str | None = None, dilations: Any = None,
                name: str | None = None) -> Array:
    """N-D convolution (cross-correlation) with TF's arguments; when the input has a
    multiple of the filters' input channels it is a grouped convolution, as in TF."""
    x, k = tensor(input), tensor(filters)
    api = f"tf.nn.conv{x.ndim - 2}d"
    n = x.ndim - 2
    layout = _format(data_format, x.ndim, api)
    st = _spatial(1 if strides is None else strides, n, layout, "strides", api)
    dil = _spatial(1 if dilations is None else dilations, n, layout, "dilations", api)
    c_in = x.shape[-1] if layout == "channels_last" else x.shape[1]
    k_in = k.shape[-2]
    if k_in == 0 or c_in % k_in:
        raise InvalidArgumentError(f"{api}: input channels {c_in} must be a multiple of the "
                                   f"filters' input channels {k_in}")
    return _nn.conv(x, k, st, _padding(padding, n, layout, api), dil, groups=c_in // k_in,
                    data_format=layout)


def conv1d(input: Any, filters: Any, stride: Any, padding: Any, data_format: str = "NWC",
           dilations: Any = None, name: str | None = None) -> Array:
    return convolution(input, filters, stride, padding, data_format, dilations)


def conv2d(input: Any, filters: Any, strides: Any, padding: Any, data_format: str = "NHWC",
           dilations: Any = None, name: str | None = None) -> Array:
    """2-D convolution: ``input`` NHWC (or NCHW), ``filters`` HWIO."""
    return convolution(input, filters, strides, padding, data_format, dilations)


def conv3d(input: Any, filters: Any, strides: Any, padding: Any, data_format: str = "NDHWC",
           dilations: Any = None, name: str | None = None) -> Array:
    return convolution(input, filters, strides, padding, data_format, dilations)


def _pool(kind: str, input: Any, ksize: Any, strides: Any, padding: str,
          data_format: str | None, api: str) -> Array:
    x = tensor(input)
    n = x.ndim - 2
    layout = _format(data_format, x.ndim, api)
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise unsupported(api, "padding", padding, "use 'SAME' or 'VALID'")
    win = _spatial(ksize, n, layout, "ksize", api)
    st = _spatial(strides, n, layout, "strides", api)
    fn = _nn.max_pool if kind == "max" else _nn.avg_pool
    return fn(x, win, st, padding.lower(), data_format=layout)


def max_pool(input: Any, ksize: Any, strides: Any, padding: str, data_format: str | None = None,
             name: str | None = None) -> Array:
    """N-D max pooling (``'SAME'`` padding never lets padded positions win)."""
    return _pool("max", input, ksize, strides, padding, data_format, "tf.nn.max_pool")


def avg_pool(input: Any, ksize: Any, strides: Any, padding: str, data_format: str | None = None,
             name: str | None = None) -> Array:
    """N-D average pooling (``'SAME'`` averages over the input positions only, as TF)."""
    return _pool("avg", input, ksize, strides, padding, data_format, "tf.nn.avg_pool")


def max_pool2d(input: Any, ksize: Any, strides: Any, padding: str, data_format: str = "NHWC",
               name: str | None = None) -> Array:
    return _pool("max", input, ksize, strides, padding, data_format, "tf.nn.max_pool2d")


def avg_pool2d(input: Any, ksize: Any, strides: Any, padding: str, data_format: str = "NHWC",
               name: str | None = None) -> Array:
    return _pool("avg", input, ksize, strides, padding, data_format, "tf.nn.avg_pool2d")


def bias_add(value: Any, bias: Any, data_format: str | None = None,
             name: str | None = None) -> Array:
    """``value + bias`` along the channel dimension (last, or 1 for ``NC...`` formats)."""
    x, b = tensor(value), tensor(bias)
    if b.ndim != 1:
        raise InvalidArgumentError(f"tf.nn.bias_add: bias must be 1-D, got {b.type_text()}")
    if data_format is not None and data_format.startswith("NC") and x.ndim > 2:
        return x + xnp.reshape(b, (b.shape[0],) + (1,) * (x.ndim - 2))
    if data_format is not None and data_format not in _FORMATS and data_format != "N...C":
        raise unsupported("tf.nn.bias_add", "data_format", data_format, "use N...C or NC...")
    return x + b


# ----------------------------------------------------------------- regularization etc.
def dropout(x: Any, rate: Any, noise_shape: Any = None, seed: Any = None,
            name: str | None = None) -> Array:
    """Zero each element with probability ``rate`` and scale the rest by
    ``1 / (1 - rate)``; the randomness comes from ``tf.random``'s generators (so a
    compiled function draws a new mask on every call)."""
    t = tensor(x)
    r = float(static_value(rate, "tf.nn.dropout rate"))
    if not 0 <= r < 1:
        raise InvalidArgumentError(f"tf.nn.dropout: rate must be in [0, 1), got {r}")
    if r == 0:
        return t
    shape = t.shape if noise_shape is None else tuple(
        int(d) for d in static_value(noise_shape, "noise_shape"))
    u = _random.uniform(shape, dtype=t.dtype if _dt.is_float(t.dtype) else np.float32,
                        seed=seed)
    keep = xnp.greater_equal(u, r)
    return xnp.where(keep, t / (1.0 - r), xnp.zeros((), t.dtype))


def moments(x: Any, axes: Any, shift: Any = None, keepdims: bool = False,
            name: str | None = None) -> tuple[Array, Array]:
    """``(mean, variance)`` over ``axes``."""
    t = tensor(x)
    ax = axes_arg(axes, t.ndim)
    return xnp.mean(t, ax, keepdims=keepdims), xnp.var(t, ax, keepdims=keepdims)


def batch_normalization(x: Any, mean: Any, variance: Any, offset: Any, scale: Any,
                        variance_epsilon: float, name: str | None = None) -> Array:
    """``scale * (x - mean) / sqrt(variance + epsilon) + offset`` (offset/scale may be None)."""
    t = tensor(x)
    inv = xnp.sqrt(tensor(variance) + variance_epsilon)
    out = (t - tensor(mean)) / inv
    if scale is not None:
        out = out * tensor(scale)
    return out + tensor(offset) if offset is not None else out


def embedding_lookup(params: Any, ids: Any, max_norm: Any = None,
                     name: str | None = None) -> Array:
    """Rows of ``params`` at ``ids``."""
    if max_norm is not None:
        raise unsupported("tf.nn.embedding_lookup", "max_norm", max_norm, "clip the rows first")
    return gather(params, ids)


__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "sigmoid",
           "tanh", "softplus", "softsign", "log_sigmoid", "softmax", "log_softmax",
           "sparse_softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
           "sigmoid_cross_entropy_with_logits", "l2_loss", "l2_normalize", "convolution",
           "conv1d", "conv2d", "conv3d", "max_pool", "avg_pool", "max_pool2d", "avg_pool2d",
           "bias_add", "dropout", "moments", "batch_normalization", "embedding_lookup",
           "top_k"]
