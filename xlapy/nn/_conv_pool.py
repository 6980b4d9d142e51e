"""Keras-style N-D convolution and pooling over ``lax`` windows.

Inputs are ``(batch, spatial..., channels)`` (``data_format='channels_last'``, the
default) or ``(batch, channels, spatial...)`` (``'channels_first'``); kernels are always
``(spatial..., in_channels // groups, out_channels)`` as in Keras. ``padding`` is
``'valid'``, ``'same'`` (TensorFlow's rule: output size ``ceil(in / stride)``, odd
padding on the high side), ``'causal'`` (all padding on the low side) or explicit
``(low, high)`` pairs per spatial dimension; an int pads every side by that much.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend import lax_nn
from ..frontend.core import Array
from ..frontend.tracing import concrete_int
from ..numpy._elementwise import asarray, promote

_FORMATS = ("channels_last", "channels_first")


def _layout(x: Array, data_format: str, what: str) -> tuple[int, int, tuple[int, ...]]:
    """(batch dim, channel dim, spatial dims) of ``x``."""
    if data_format not in _FORMATS:
        raise InvalidArgumentError(f"{what}: data_format must be 'channels_last' or "
                                   f"'channels_first', got {data_format!r}")
    if x.ndim < 3:
        raise InvalidArgumentError(f"{what}: input {x.type_text()} must have a batch, at least "
                                   "one spatial and a channel dimension")
    n = x.ndim - 2
    if data_format == "channels_last":
        return 0, n + 1, tuple(range(1, n + 1))
    return 0, 1, tuple(range(2, n + 2))


def _spatial_padding(padding: Any, in_sizes: Sequence[int], window: Sequence[int],
                     strides: Sequence[int], what: str) -> list[tuple[int, int]]:
    """Explicit ``(low, high)`` pairs for the spatial dimensions (``window`` is dilated)."""
    n = len(in_sizes)
    if isinstance(padding, str):
        mode = padding.lower()
        if mode in ("same", "valid"):
            return lax_nn.padtype_to_pads(in_sizes, window, strides, mode.upper())
        if mode == "causal":
            return [(w - 1, 0) for w in window]
        raise InvalidArgumentError(f"{what}: padding must be 'valid', 'same', 'causal', an int "
                                   f"or {n} (low, high) pairs, got {padding!r}")
    if isinstance(padding, (int, np.integer)) or (isinstance(padding, Array) and
                                                   not padding.ndim):
        p = concrete_int(padding, f"{what}: padding")
        return [(p, p)] * n
    try:
        pairs = [(concrete_int(lo, f"{what}: padding"), concrete_int(hi, f"{what}: padding"))
                 for lo, hi in padding]
    except InvalidArgumentError:
        raise
    except (TypeError, ValueError):
        pairs = []
    if len(pairs) != n:
        raise InvalidArgumentError(f"{what}: padding must be 'valid', 'same', 'causal', an int "
                                   f"or {n} (low, high) pairs, got {padding!r}")
    return pairs


def conv(x: Any, kernel: Any, strides: Any = 1, padding: Any = "valid", dilation: Any = 1,
         groups: int = 1, data_format: str = "channels_last",
         preferred_element_type: Any = None) -> Array:
    """N-D convolution (cross-correlation, like Keras and TensorFlow).

    ``kernel`` has shape ``(spatial..., in_channels // groups, out_channels)``;
    ``strides`` and ``dilation`` are an int or one int per spatial dimension; ``groups``
    splits the channels into that many independent convolutions (``groups ==
    in_channels`` is a depthwise convolution). Operands are promoted to a common dtype.
    """
    x, kernel = asarray(x), asarray(kernel)
    what = f"xlapy.nn.conv(x {x.type_text()}, kernel {kernel.type_text()})"
    batch, chan, spatial = _layout(x, data_format, what)
    n = len(spatial)
    if kernel.ndim != x.ndim:
        raise InvalidArgumentError(f"{what}: kernel must have rank {x.ndim} "
                                   f"(spatial..., in_channels, out_channels)")
    strides = lax_nn.int_tuple(f"{what}: strides", strides, n)
    dilation = lax_nn.int_tuple(f"{what}: dilation", dilation, n)
    groups = concrete_int(groups, f"{what}: groups")
    c_in, k_in, c_out = x.shape[chan], kernel.shape[n], kernel.shape[n + 1]
    if groups < 1 or c_in % groups or c_in // groups != k_in:
        raise InvalidArgumentError(
            f"{what}: the input has {c_in} channels ({data_format}), which with groups={groups} "
            f"needs a kernel with {c_in // max(groups, 1)} input channels; the kernel has {k_in}")
    if c_out % groups:
        raise InvalidArgumentError(f"{what}: kernel output channels {c_out} must be divisible "
                                   f"by groups={groups}")
    window = [(kernel.shape[i] - 1) * d + 1 for i, d in enumerate(dilation)]
    pads = _spatial_padding(padding, [x.shape[d] for d in spatial], window, strides, what)
    dt, weak = dtypes.promote_types((x.dtype, x.weak_type), (kernel.dtype, kernel.weak_type))
    x = lax.convert_element_type(x, dt, weak)
    kernel = lax.convert_element_type(kernel, dt, weak)
    dn = lax_nn.ConvDimensionNumbers((batch, chan, *spatial), (n + 1, n, *range(n)),
                                     (batch, chan, *spatial))
    return lax_nn.conv_general_dilated(x, kernel, strides, pads, None, dilation, dn,
                                       feature_group_count=groups,
                                       preferred_element_type=preferred_element_type)


def _pool_window(x: Array, window_shape: Any, strides: Any, padding: Any, data_format: str,
                 what: str) -> tuple[tuple[int, ...], tuple[int, ...], list[tuple[int, int]],
                                     tuple[int, ...]]:
    """Full-rank window, strides and padding (1 / no padding on batch and channels)."""
    _, _, spatial = _layout(x, data_format, what)
    n = len(spatial)
    win = lax_nn.int_tuple(f"{what}: window_shape", window_shape, n)
    st = win if strides is None else lax_nn.int_tuple(f"{what}: strides", strides, n)
    pads = _spatial_padding(padding, [x.shape[d] for d in spatial], win, st, what)
    full_win, full_st, full_pad = [1] * x.ndim, [1] * x.ndim, [(0, 0)] * x.ndim
    for i, d in enumerate(spatial):
        full_win[d], full_st[d], full_pad[d] = win[i], st[i], pads[i]
    return tuple(full_win), tuple(full_st), full_pad, spatial


def max_pool(x: Any, window_shape: Any, strides: Any = None, padding: Any = "valid",
             data_format: str = "channels_last") -> Array:
    """Maximum over windows of the spatial dimensions (``strides`` default to the window,
    as in Keras); padded positions never win."""
    x = asarray(x)
    what = f"xlapy.nn.max_pool({x.type_text()})"
    win, st, pads, _ = _pool_window(x, window_shape, strides, padding, data_format, what)
    return lax_nn.reduce_window_max(x, win, st, pads)


def avg_pool(x: Any, window_shape: Any, strides: Any = None, padding: Any = "valid",
             data_format: str = "channels_last", count_include_pad: bool = False) -> Array:
    """Mean over windows of the spatial dimensions (``strides`` default to the window).

    With padding, each window's sum is divided by the number of input elements in it
    (Keras/TensorFlow ``'same'``), or by the full window size if ``count_include_pad``.
    """
    (x,) = promote(x, to_inexact=True)
    what = f"xlapy.nn.avg_pool({x.type_text()})"
    win, st, pads, spatial = _pool_window(x, window_shape, strides, padding, data_format, what)
    total = lax_nn.reduce_window_sum(x, win, st, pads)
    if count_include_pad or all(p == (0, 0) for p in pads):
        count = np.asarray(float(np.prod(win)), x.dtype)
        return lax.div(total, lax.broadcast_in_dim(count, total.shape, ()))
    counts = np.ones((), np.float64)
    for d in spatial:
        per_dim = _window_counts(x.shape[d], win[d], st[d], pads[d], total.shape[d])
        counts = np.multiply.outer(counts, per_dim)
    counts = np.maximum(counts, 1).astype(x.dtype)   # an all-padding window averages to 0
    return lax.div(total, lax.broadcast_in_dim(counts, total.shape, spatial))


def _window_counts(n: int, w: int, s: int, pad: tuple[int, int], out: int) -> np.ndarray:
    """How many of the ``w`` window positions of each output fall inside the input."""
    starts = np.arange(out) * s - pad[0]
    return (np.minimum(starts + w, n) - np.maximum(starts, 0)).clip(min=0).astype(np.float64)


__all__ = ["conv", "max_pool", "avg_pool"]
