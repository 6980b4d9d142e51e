"""``dot_product_attention``, ``scaled_matmul`` and the small activations JAX added
(``identity``, ``tanh``, ``log1mexp``, ``logmeanexp``, ``sparse_plus``,
``sparse_sigmoid``, ``squareplus``), with ``jax.nn`` semantics."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import dtypes
from ..frontend.core import Array
from .. import numpy as xnp
from ._activations import softmax


def identity(x: Any) -> Array:
    """``x`` unchanged."""
    return xnp.asarray(x)


def tanh(x: Any) -> Array:
    """Hyperbolic tangent."""
    return xnp.tanh(x)


def log1mexp(x: Any) -> Array:
    """``log(1 - exp(-x))`` computed stably (``expm1`` below ``log 2``, ``log1p`` above)."""
    x = xnp.asarray(x)
    c = np.log(2.0)
    return xnp.where(x < c, xnp.log(-xnp.expm1(-x)), xnp.log1p(-xnp.exp(-x)))


def logmeanexp(x: Any, axis: Any = None, where: Any = None, keepdims: bool = False) -> Array:
    """``logsumexp(x) - log(n)`` over ``axis`` (``where`` selects the entries counted)."""
    x = xnp.asarray(x)
    if where is not None:
        (x,) = xnp._elementwise.promote(x, to_inexact=True)
        w = xnp.broadcast_to(xnp.asarray(where), x.shape)
        masked = xnp.where(w, x, -np.inf)
        lse = xnp.logsumexp(masked, axis=axis, keepdims=keepdims)
        count = xnp.sum(w, axis=axis, keepdims=keepdims).astype(lse.dtype)
    else:
        lse = xnp.logsumexp(x, axis=axis, keepdims=keepdims)
        total = xnp.size(x) if axis is None else int(np.prod(
            [x.shape[a] for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]))
        count = xnp.asarray(total).astype(lse.dtype)
    return lse - xnp.log(count)


def sparse_plus(x: Any) -> Array:
    """0 below -1, ``x`` above 1, ``(x + 1)^2 / 4`` between."""
    x = xnp.asarray(x)
    return xnp.where(x <= -1.0, 0.0, xnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x: Any) -> Array:
    """``clip((x + 1) / 2, 0, 1)`` (the derivative of :func:`sparse_plus`)."""
    return 0.5 * xnp.clip(xnp.asarray(x) + 1.0, 0.0, 2.0)


def squareplus(x: Any, b: Any = 4) -> Array:
    """``(x + sqrt(x^2 + b)) / 2``."""
    x = xnp.asarray(x)
    return (x + xnp.sqrt(xnp.square(x) + b)) / 2


def scaled_matmul(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any,
                  preferred_element_type: Any = np.float32) -> Array:
    """Block-scaled ``einsum('BMK,BNK->BMN')``: each operand is multiplied by its scales
    repeated over blocks of the contracting dimension (computed in float32)."""
    a, b = xnp.asarray(lhs), xnp.asarray(rhs)
    sa, sb = xnp.asarray(lhs_scales), xnp.asarray(rhs_scales)
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2]:
        raise ShapeError(f"scaled_matmul: expected lhs (B, M, K) and rhs (B, N, K), got "
                         f"{a.type_text()} and {b.type_text()}")
    if sa.ndim != 3 or sb.ndim != 3 or sa.shape[:2] != a.shape[:2] or \
            sb.shape[:2] != b.shape[:2] or sa.shape[2] != sb.shape[2] or a.shape[2] % sa.shape[2]:
        raise ShapeError(f"scaled_matmul: scales {sa.type_text()}, {sb.type_text()} do not "
                         f"tile the operands")
    f32 = np.float32
    a_s = a.astype(f32) * xnp.repeat(sa.astype(f32), a.shape[2] // sa.shape[2], axis=-1)
    b_s = b.astype(f32) * xnp.repeat(sb.astype(f32), b.shape[2] // sb.shape[2], axis=-1)
    return xnp.einsum("BMK,BNK->BMN", a_s, b_s).astype(preferred_element_type)


def _ensure_4d(t: Any) -> Array:
    t = xnp.asarray(t)
    return xnp.reshape(t, (1,) * (4 - t.ndim) + t.shape) if t.ndim < 4 else t


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None,
                          mask: Any = None, *, scale: float | None = None,
                          is_causal: bool = False, query_seq_lengths: Any = None,
                          key_value_seq_lengths: Any = None,
                          local_window_size: int | tuple[int, int] | None = None,
                          implementation: str | None = None,
                          return_residual: bool = False) -> Any:
    """Scaled dot-product attention, ``softmax(Q K^T * scale + bias) V`` per head, with
    JAX's layout (``[B, T, N, H]`` queries, ``[B, S, K, H]`` keys and values; ``N`` a
    multiple of ``K`` for grouped-query attention), boolean ``mask``, ``is_causal``,
    sequence lengths and local windows. Logits are float32 (or wider); masked logits get
    ``-0.7 * max``; the softmax is float32. ``return_residual`` adds the logsumexp
    ``[B, T, N]``."""
    if implementation not in (None, "xla"):
        raise InvalidArgumentError(f"dot_product_attention: implementation "
                                   f"{implementation!r} is not available (only 'xla')")
    out_shape = xnp.asarray(query).shape
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = None if bias is None else _ensure_4d(bias)
    mask = None if mask is None else _ensure_4d(mask)
    B, S, K, H = k.shape
    if v.shape != k.shape or v.dtype != k.dtype:
        raise ShapeError(f"dot_product_attention: value {v.type_text()} must match key "
                         f"{k.type_text()}")
    if q.shape[0] != B or q.shape[3] != H or q.dtype != k.dtype:
        raise ShapeError(f"dot_product_attention: query {q.type_text()} does not match key "
                         f"{k.type_text()}")
    if mask is not None and mask.dtype != np.bool_:
        raise InvalidArgumentError(f"dot_product_attention: mask must be boolean, got "
                                   f"{mask.dtype}")
    T, N = q.shape[1], q.shape[2]
    if N % K:
        raise ShapeError(f"dot_product_attention: the number of query heads must be a "
                         f"multiple of key/value heads, got {N} vs {K}")
    G = N // K
    scale_val = (1.0 / np.sqrt(H)) if scale is None else scale
    if G > 1:
        k = xnp.repeat(k, G, axis=2)
        v = xnp.repeat(v, G, axis=2)
    logits_dt = dtypes.promote_types((q.dtype, False), (np.dtype(np.float32), False))[0]
    logits = xnp.einsum("BTNH,BSNH->BNTS", q.astype(logits_dt), k.astype(logits_dt))
    logits = logits * xnp.array(scale_val, logits.dtype)
    if bias is not None:
        logits = (logits + bias).astype(logits.dtype)
    combined = None

    def both(m: Array) -> Array:
        return m if combined is None else xnp.logical_and(combined, m)
    if mask is not None:
        combined = both(mask)
    if is_causal:
        combined = both(xnp.tril(xnp.ones((T, S), bool))[None, None])
    if local_window_size is not None:
        lw, rw = (local_window_size, local_window_size) if isinstance(local_window_size, int) \
            else local_window_size
        qp, kp = np.arange(T)[:, None], np.arange(S)[None, :]
        combined = both(xnp.asarray((qp <= kp + lw) & (qp >= kp - rw))[None, None])
    q_len = None if query_seq_lengths is None else xnp.asarray(query_seq_lengths)
    kv_len = None if key_value_seq_lengths is None else xnp.asarray(key_value_seq_lengths)
    if q_len is not None or kv_len is not None:
        pad = xnp.ones((B, T, S), bool)
        if q_len is not None:
            pad = pad & (xnp.arange(T)[None, :, None] < q_len[:, None, None])
        if kv_len is not None:
            pad = pad & (xnp.arange(S)[None, None, :] < kv_len[:, None, None])
        combined = both(pad[:, None])
    if combined is not None:
        big = min(float(dtypes.finfo(logits.dtype).max), float(np.finfo(np.float32).max))
        logits = xnp.where(combined, logits, xnp.array(-0.7 * big, logits.dtype))
    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(k.dtype)
    encoded = xnp.einsum("BNTS,BSNH->BTNH", probs, v)
    if q_len is not None:
        keep = (xnp.arange(T)[None, :] < q_len[:, None])[:, :, None, None]
        encoded = encoded * keep.astype(encoded.dtype)
    encoded = xnp.reshape(encoded, out_shape)
    if return_residual:
        from ..frontend.autodiff import stop_gradient
        lse = xnp.logsumexp(logits, axis=-1).astype(k.dtype)
        lse = xnp.transpose(lse, (0, 2, 1))
        return encoded, stop_gradient(xnp.reshape(lse, out_shape[:-1]))
    return encoded
