"""Lowerings of the neural-network ATen ops that stay whole after the core-ATen
decompositions: convolution and its backward, max pooling with indices, layer norm,
softmax and the CPU flash-attention pair. Backward ops are written as xlapy ``vjp`` of
the forward lowering, so forward and backward share one definition.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import lax
from .. import numpy as xnp
from ..frontend.autodiff import vjp
from .torch_ops import LOWERINGS, Unsupported, _reg, same_dtypes

_SPECS = {1: ("NCH", "OIH", "NCH"), 2: ("NCHW", "OIHW", "NCHW"),
          3: ("NCDHW", "OIDHW", "NCDHW")}


def _conv(x: Any, w: Any, stride: Sequence[int], padding: Sequence[int],
          dilation: Sequence[int], groups: int) -> Any:
    nsp = x.ndim - 2
    if nsp not in _SPECS:
        raise Unsupported(f"convolution over {nsp} spatial dimensions")
    return lax.conv_general_dilated(
        x, w, tuple(stride), [(p, p) for p in padding], rhs_dilation=tuple(dilation),
        dimension_numbers=_SPECS[nsp], feature_group_count=groups)


def _conv_transposed(x: Any, w: Any, stride: Sequence[int], padding: Sequence[int],
                     dilation: Sequence[int], output_padding: Sequence[int],
                     groups: int) -> Any:
    """PyTorch's transposed convolution (weight ``(Cin, Cout/groups, *k)``): the
    gradient of a convolution, i.e. a convolution of the stride-dilated input with the
    flipped kernel, its in/out features swapped per group."""
    nsp = x.ndim - 2
    cin, cout_g, ks = w.shape[0], w.shape[1], w.shape[2:]
    wg = xnp.reshape(w, (groups, cin // groups, cout_g) + tuple(ks))
    wg = xnp.swapaxes(wg, 1, 2)                               # (G, Cout/G, Cin/G, *k)
    rhs = xnp.flip(xnp.reshape(wg, (groups * cout_g, cin // groups) + tuple(ks)),
                   tuple(range(2, 2 + nsp)))
    pads = [(d * (k - 1) - p, d * (k - 1) - p + op)
            for k, p, d, op in zip(ks, padding, dilation, output_padding)]
    return lax.conv_general_dilated(x, rhs, (1,) * nsp, pads, lhs_dilation=tuple(stride),
                                    rhs_dilation=tuple(dilation),
                                    dimension_numbers=_SPECS[nsp], feature_group_count=groups)


def _conv_any(x: Any, w: Any, stride: Sequence[int], padding: Sequence[int],
              dilation: Sequence[int], transposed: bool, output_padding: Sequence[int],
              groups: int) -> Any:
    if transposed:
        return _conv_transposed(x, w, stride, padding, dilation, output_padding, groups)
    return _conv(x, w, stride, padding, dilation, groups)


def _check_conv(transposed: bool, x: Any) -> None:
    if x.ndim - 2 not in _SPECS:
        raise Unsupported("convolution without a batch dimension")


@_reg("aten.convolution.default")
def _convolution(x: Any, w: Any, bias: Any, stride: Sequence[int], padding: Sequence[int],
                 dilation: Sequence[int], transposed: bool, output_padding: Sequence[int],
                 groups: int) -> Any:
    _check_conv(transposed, x)
    same_dtypes("convolution", x, w, bias)
    out = _conv_any(x, w, stride, padding, dilation, transposed, output_padding, groups)
    if bias is not None:
        out = out + xnp.reshape(bias, (1, -1) + (1,) * (x.ndim - 2))
    return out


@_reg("aten.convolution_backward.default")
def _convolution_backward(g: Any, x: Any, w: Any, bias_sizes: Any, stride: Sequence[int],
                          padding: Sequence[int], dilation: Sequence[int], transposed: bool,
                          output_padding: Sequence[int], groups: int,
                          output_mask: Sequence[bool]) -> tuple:
    _check_conv(transposed, x)
    # ``g`` feeds three consumers (the input and weight gradients in the convolution's
    # layouts, and the bias sum): computed once, not fused into each of them
    g = lax.optimization_barrier(g)
    _, pullback = vjp(lambda a, b: _conv_any(a, b, stride, padding, dilation, transposed,
                                             output_padding, groups), x, w)
    gx, gw = pullback(g)
    gb = xnp.sum(g, axis=(0,) + tuple(range(2, g.ndim))) if output_mask[2] else None
    return (gx if output_mask[0] else None, gw if output_mask[1] else None, gb)


def _pool_params(x: Any, kernel: Sequence[int], stride: Sequence[int], padding: Any,
                 dilation: Any, ceil_mode: bool) -> tuple:
    kernel = tuple(kernel) * (2 if len(kernel) == 1 else 1)
    stride = tuple(stride) if stride else kernel
    stride = stride * (2 if len(stride) == 1 else 1)
    padding = tuple(padding) if not isinstance(padding, int) else (padding,)
    padding = padding * (2 if len(padding) == 1 else 1)
    dil = tuple(dilation) if not isinstance(dilation, int) else (dilation,)
    if ceil_mode or any(d != 1 for d in dil):
        raise Unsupported("max_pool2d with ceil_mode or dilation")
    return kernel, stride, padding


def _pool_geometry(x: Any, kernel: Sequence[int], stride: Sequence[int], padding: Any,
                   dilation: Any, ceil_mode: bool) -> tuple:
    """``(kernel, stride, padding, output size)`` of a 2-D max pooling of ``x``."""
    (kh, kw), (sh, sw), (ph, pw) = _pool_params(x, kernel, stride, padding, dilation, ceil_mode)
    h, w = x.shape[-2:]
    return (kh, kw), (sh, sw), (ph, pw), ((h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1)


def _window_base(shape: tuple, stride: tuple, padding: tuple, width: int) -> Any:
    """The flat input index (``row * width + col``) of each window's top-left tap."""
    nd = len(shape)
    rows = lax.broadcasted_iota(np.int32, shape, nd - 2) * stride[0] - padding[0]
    cols = lax.broadcasted_iota(np.int32, shape, nd - 1) * stride[1] - padding[1]
    return rows * width + cols


@_reg("aten.max_pool2d_with_indices.default")
def _max_pool2d_with_indices(x: Any, kernel: Sequence[int], stride: Sequence[int] = (),
                             padding: Any = 0, dilation: Any = 1,
                             ceil_mode: bool = False) -> tuple:
    """The taps of each window compared in PyTorch's order (row-major), one elementwise
    pass: a tap replaces the running maximum when it is greater or NaN (as PyTorch's CPU
    kernel), and its flat input index replaces the running index."""
    (kh, kw), (sh, sw), (ph, pw), (oh, ow) = _pool_geometry(x, kernel, stride, padding,
                                                            dilation, ceil_mode)
    w = x.shape[-1]
    # batched planes are pooled channels-minor ([N, H, W, C]): a convolution's result
    # is stored that way, so the taps are read along contiguous channels
    minor = x.ndim == 4
    xt = xnp.transpose(x, (0, 2, 3, 1)) if minor else x
    lead = (slice(None),) * (x.ndim - 2 - minor)
    tail = (slice(None),) * minor
    low = xnp.asarray(-np.inf, x.dtype)
    cfg = [(0, 0, 0)] * (x.ndim - 2 - minor) + [(ph, ph, 0), (pw, pw, 0)] + [(0, 0, 0)] * minor
    xp = lax.pad(xt, low, cfg) if ph or pw else xt
    best = idx = None
    for i in range(kh):
        for j in range(kw):
            tap = xp[lead + (slice(i, i + sh * (oh - 1) + 1, sh),
                             slice(j, j + sw * (ow - 1) + 1, sw)) + tail]
            if best is None:
                best, idx = tap, xnp.zeros(tap.shape, np.int32)
                continue
            take = (tap > best) | (tap != tap)
            best = xnp.where(take, tap, best)
            idx = xnp.where(take, np.int32(i * w + j), idx)
    if minor:
        best, idx = xnp.transpose(best, (0, 3, 1, 2)), xnp.transpose(idx, (0, 3, 1, 2))
    return best, _window_base(best.shape, (sh, sw), (ph, pw), w) + idx


@_reg("aten.max_pool2d_with_indices_backward.default")
def _max_pool2d_backward(g: Any, x: Any, kernel: Sequence[int], stride: Sequence[int],
                         padding: Any, dilation: Any, ceil_mode: bool, indices: Any) -> Any:
    """Each tap ``(i, j)`` of the windows passes the gradient where the window's maximum
    was that tap, spread back onto the input grid by a strided (interior-padded) pad;
    the taps' contributions are summed (overlapping windows add, as PyTorch's scatter
    does). Elementwise work only: no scatter."""
    (kh, kw), (sh, sw), (ph, pw), (oh, ow) = _pool_geometry(x, kernel, stride, padding,
                                                            dilation, ceil_mode)
    h, w = x.shape[-2:]
    pos = indices.astype(np.int32) - _window_base(g.shape, (sh, sw), (ph, pw), w)
    zero = xnp.asarray(0, g.dtype)
    if (sh, sw) == (kh, kw) and not ph and not pw:
        return _tiled_pool_backward(g, pos, (kh, kw), (h, w), zero)
    total = None
    for i in range(kh):
        for j in range(kw):
            part = xnp.where(pos == np.int32(i * w + j), g, zero)
            lo_h, lo_w = i - ph, j - pw
            cfg = [(0, 0, 0)] * (g.ndim - 2) + [
                (lo_h, h - lo_h - (oh - 1) * sh - 1, sh - 1),
                (lo_w, w - lo_w - (ow - 1) * sw - 1, sw - 1)]
            part = lax.pad(part, zero, cfg)
            total = part if total is None else total + part
    return total


def _tiled_pool_backward(g: Any, pos: Any, kernel: tuple, size: tuple, zero: Any) -> Any:
    """Non-overlapping windows (stride = kernel, no padding): the gradient of window
    ``(a, b)``'s tap ``(i, j)`` lands at ``(a * kh + i, b * kw + j)``, so the input
    gradient is one ``[.., oh, kh, ow, kw]`` array reshaped to ``[.., oh*kh, ow*kw]``
    (and padded with zeros to the input's size where the windows leave rows/columns).
    Batched planes are spread channels-minor, as the forward pooling reads them."""
    (kh, kw), (h, w) = kernel, size
    minor = g.ndim == 4
    if minor:
        g, pos = xnp.transpose(g, (0, 2, 3, 1)), xnp.transpose(pos, (0, 2, 3, 1))
    n = g.ndim - 2 - minor
    lead, (oh, ow), tail = g.shape[:n], g.shape[n:n + 2], g.shape[n + 2:]
    shape6 = tuple(lead) + (oh, kh, ow, kw) + tuple(tail)
    keep = tuple(range(n)) + (n, n + 2) + tuple(range(n + 4, n + 4 + minor))
    tap = (lax.broadcasted_iota(np.int32, shape6, n + 1) * np.int32(w)
           + lax.broadcasted_iota(np.int32, shape6, n + 3))
    hit = lax.broadcast_in_dim(pos, shape6, keep) == tap
    out = xnp.where(hit, lax.broadcast_in_dim(g, shape6, keep), zero)
    out = xnp.reshape(out, tuple(lead) + (oh * kh, ow * kw) + tuple(tail))
    if (oh * kh, ow * kw) != (h, w):
        out = lax.pad(out, zero, [(0, 0, 0)] * n + [(0, h - oh * kh, 0), (0, w - ow * kw, 0)]
                      + [(0, 0, 0)] * minor)
    return xnp.transpose(out, (0, 3, 1, 2)) if minor else out


@_reg("aten.native_layer_norm.default")
def _native_layer_norm(x: Any, normalized_shape: Sequence[int], weight: Any, bias: Any,
                       eps: float) -> tuple:
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = xnp.mean(x, axis=axes, keepdims=True)
    xc = x - mean
    rstd = lax.rsqrt(xnp.mean(xc * xc, axis=axes, keepdims=True) + eps)
    out = xc * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


def _softmax_fn(x: Any, dim: int) -> Any:
    e = xnp.exp(x - lax.stop_gradient(xnp.max(x, axis=dim, keepdims=True)))
    return e / xnp.sum(e, axis=dim, keepdims=True)


@_reg("aten._softmax.default")
def _softmax(x: Any, dim: int, half_to_float: bool = False) -> Any:
    return _softmax_fn(x, dim % x.ndim)


@_reg("aten._log_softmax.default")
def _log_softmax(x: Any, dim: int, half_to_float: bool = False) -> Any:
    dim %= x.ndim
    s = x - xnp.max(x, axis=dim, keepdims=True)
    return s - xnp.log(xnp.sum(xnp.exp(s), axis=dim, keepdims=True))


@_reg("aten._softmax_backward_data.default")
def _softmax_backward(g: Any, out: Any, dim: int, input_dtype: Any) -> Any:
    return out * (g - xnp.sum(g * out, axis=dim % g.ndim, keepdims=True))


@_reg("aten._log_softmax_backward_data.default")
def _log_softmax_backward(g: Any, out: Any, dim: int, input_dtype: Any) -> Any:
    return g - xnp.exp(out) * xnp.sum(g, axis=dim % g.ndim, keepdims=True)


def _attention(q: Any, k: Any, v: Any, is_causal: bool, mask: Any, scale: Any) -> tuple:
    """Math attention over (..., L, E) inputs: the output and the log-sum-exp per query."""
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = xnp.matmul(q, xnp.swapaxes(k, -1, -2)) * xnp.asarray(scale, q.dtype)
    if is_causal:
        lq, lk = q.shape[-2], k.shape[-2]
        keep = xnp.tril(xnp.ones((lq, lk), np.bool_))
        s = xnp.where(keep, s, xnp.asarray(-np.inf, s.dtype))
    if mask is not None:
        s = xnp.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask
    m = lax.stop_gradient(xnp.max(s, axis=-1, keepdims=True))
    e = xnp.exp(s - m)
    denom = xnp.sum(e, axis=-1, keepdims=True)
    out = xnp.matmul(e / denom, v)
    return out, xnp.squeeze(xnp.log(denom) + m, -1)


def _check_dropout(p: float) -> None:
    if p:
        raise Unsupported("attention with dropout")


@_reg("aten._scaled_dot_product_flash_attention_for_cpu.default")
def _sdpa_cpu(q: Any, k: Any, v: Any, dropout_p: float = 0.0, is_causal: bool = False, *,
              attn_mask: Any = None, scale: Any = None) -> tuple:
    _check_dropout(dropout_p)
    return _attention(q, k, v, is_causal, attn_mask, scale)


@_reg("aten._scaled_dot_product_flash_attention_for_cpu_backward.default")
def _sdpa_cpu_backward(g: Any, q: Any, k: Any, v: Any, out: Any, lse: Any,
                       dropout_p: float, is_causal: bool, *, attn_mask: Any = None,
                       scale: Any = None) -> tuple:
    _check_dropout(dropout_p)
    _, pullback = vjp(lambda a, b, c: _attention(a, b, c, is_causal, attn_mask, scale)[0],
                      q, k, v)
    return tuple(pullback(g))



# ------------------------------------------------------------------ more NN ops
@_reg("aten.avg_pool2d.default")
def _avg_pool2d(x: Any, kernel: Sequence[int], stride: Sequence[int] = (), padding: Any = 0,
                ceil_mode: bool = False, count_include_pad: bool = True,
                divisor_override: Any = None) -> Any:
    (kh, kw), (sh, sw), (ph, pw) = _pool_params(x, kernel, stride, padding, 1, ceil_mode)
    if (ph or pw) and not count_include_pad and divisor_override is None:
        raise Unsupported("avg_pool2d with count_include_pad=False and padding")
    lead = x.ndim - 2
    total = lax.reduce_window_sum(x, (1,) * lead + (kh, kw), (1,) * lead + (sh, sw),
                                  [(0, 0)] * lead + [(ph, ph), (pw, pw)])
    return total / xnp.asarray(divisor_override or kh * kw, x.dtype)


@_reg("aten.avg_pool2d_backward.default")
def _avg_pool2d_backward(g: Any, x: Any, kernel: Sequence[int], stride: Sequence[int],
                         padding: Any, ceil_mode: bool, count_include_pad: bool,
                         divisor_override: Any) -> Any:
    _, pullback = vjp(lambda a: _avg_pool2d(a, kernel, stride, padding, ceil_mode,
                                            count_include_pad, divisor_override), x)
    return pullback(g)[0]


def _batch_norm_stats(x: Any, weight: Any, bias: Any, mean: Any, var: Any, eps: float):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    rstd = lax.rsqrt(var + eps)
    out = (x - xnp.reshape(mean, shape)) * xnp.reshape(rstd, shape)
    if weight is not None:
        out = out * xnp.reshape(weight, shape)
    if bias is not None:
        out = out + xnp.reshape(bias, shape)
    return out, rstd


@_reg("aten._native_batch_norm_legit_functional.default")
def _batch_norm_functional(x: Any, weight: Any, bias: Any, running_mean: Any,
                           running_var: Any, training: bool, momentum: float,
                           eps: float) -> tuple:
    if not training:
        out, _ = _batch_norm_stats(x, weight, bias, running_mean, running_var, eps)
        empty = xnp.zeros((0,), x.dtype)
        return out, empty, empty, running_mean, running_var
    axes = (0,) + tuple(range(2, x.ndim))
    n = int(np.prod([x.shape[a] for a in axes]))
    mean = xnp.mean(x, axis=axes)
    var = xnp.mean(xnp.square(x - xnp.reshape(mean, (1, -1) + (1,) * (x.ndim - 2))), axis=axes)
    out, rstd = _batch_norm_stats(x, weight, bias, mean, var, eps)
    new_mean = running_mean * (1 - momentum) + mean * momentum
    new_var = running_var * (1 - momentum) + var * (momentum * n / max(n - 1, 1))
    return out, mean, rstd, new_mean, new_var


@_reg("aten._native_batch_norm_legit_no_training.default")
def _batch_norm_inference(x: Any, weight: Any, bias: Any, running_mean: Any,
                          running_var: Any, momentum: float, eps: float) -> tuple:
    out, _ = _batch_norm_stats(x, weight, bias, running_mean, running_var, eps)
    empty = xnp.zeros((0,), x.dtype)
    return out, empty, empty


@_reg("aten.embedding.default")
def _embedding(weight: Any, indices: Any, padding_idx: int = -1,
               scale_grad_by_freq: bool = False, sparse: bool = False) -> Any:
    return xnp.take(weight, indices, axis=0)


@_reg("aten.gelu.default")
def _gelu(x: Any, *, approximate: str = "none") -> Any:
    if approximate == "tanh":
        inner = np.sqrt(2 / np.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1 + xnp.tanh(inner))
    return 0.5 * x * (1 + lax.erf(x * (1 / np.sqrt(2))))


@_reg("aten.leaky_relu.default")
def _leaky_relu(x: Any, negative_slope: float = 0.01) -> Any:
    return xnp.where(x > 0, x, x * negative_slope)


@_reg("aten.hardtanh.default")
def _hardtanh(x: Any, min_val: float = -1.0, max_val: float = 1.0) -> Any:
    return xnp.clip(x, min_val, max_val)


@_reg("aten.var.correction", "aten.var.dim")
def _var(x: Any, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Any:
    axes = tuple(range(x.ndim)) if not dim else tuple(d % x.ndim for d in dim)
    n = int(np.prod([x.shape[a] for a in axes]))
    dev = x - xnp.mean(x, axis=axes, keepdims=True)
    ddof = 1 if correction is None else correction
    return xnp.sum(dev * dev, axis=axes, keepdims=keepdim) / max(n - ddof, 0)


__all__ = ["LOWERINGS"]
