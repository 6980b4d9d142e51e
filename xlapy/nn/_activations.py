"""Activation functions, softmax, one-hot and standardization (``jax.nn`` semantics).

Each function promotes its input to a floating type (JAX's rules, see
``xlapy.frontend.dtypes``) and is written with ``lax`` ops, so it runs eagerly, traces
under ``jit`` and is differentiable. Piecewise functions use ``select`` so that the
gradient at a kink is the one JAX defines (``relu'(0) = 0``) and NaN propagates.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend.autodiff import stop_gradient
from ..frontend.core import Array
from ..frontend.custom_derivatives import custom_jvp
from ..frontend.tracing import concrete_int
from ..numpy._elementwise import _const, asarray, promote
from ..numpy._reductions import logsumexp, normalize_axis, var
from ..numpy._reductions import mean as _mean
from ..numpy._reductions import max as _max
from ..numpy._reductions import sum as _sum


def _float(x: Any) -> Array:
    (x,) = promote(x, to_inexact=True)
    return x


def _float_strict(x: Any, name: str) -> Array:
    """``x`` if floating: like JAX, these functions do not promote integers."""
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        raise InvalidArgumentError(f"nn.{name} takes a floating-point array, got "
                                   f"{x.type_text()}")
    return x


def _where(pred: Array, a: Array, b: Array) -> Array:
    return lax.select(pred, a, b)


@custom_jvp
def relu(x: Any) -> Array:
    """``max(x, 0)``; the gradient at 0 is 0 (a ``custom_jvp``, as in JAX). Integer inputs
    keep their type."""
    x = asarray(x)
    zero = _const(0, x)
    return _where(lax.le(x, zero), zero, x)


# The mask is taken from the output: ``relu(x) > 0`` exactly where ``x > 0`` (NaN: both
# false), so a training step keeps only the activation for its backward pass, and the
# pre-activation ``x`` dies in the forward pass (a convolution can then store
# ``relu(conv + b)`` directly: the CPU backend's convolution output fusion).
relu.defjvps(lambda g, ans, x: _where(lax.gt(ans, _const(0, ans)), g, lax.full_like(g, 0)))


def relu6(x: Any) -> Array:
    """``min(max(x, 0), 6)``; the gradient is 0 at both kinks (integers become floats, as
    JAX's ``minimum(..., 6.)`` makes them)."""
    x = _float(x)
    zero, six = _const(0, x), _const(6, x)
    return _where(lax.le(x, zero), zero, _where(lax.ge(x, six), six, x))


def leaky_relu(x: Any, negative_slope: float = 1e-2) -> Array:
    """``x`` where ``x >= 0``, else ``negative_slope * x``."""
    x = _float(x)
    return _where(lax.ge(x, _const(0, x)), x, lax.mul(_const(negative_slope, x), x))


def elu(x: Any, alpha: float = 1.0) -> Array:
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    x = _float(x)
    zero = _const(0, x)
    positive = lax.gt(x, zero)
    safe = _where(positive, zero, x)          # keeps exp from overflowing on the unused side
    return _where(positive, x, lax.mul(_const(alpha, x), lax.expm1(safe)))


def celu(x: Any, alpha: float = 1.0) -> Array:
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    x = _float(x)
    zero = _const(0, x)
    neg = lax.min(x, zero)
    return lax.add(lax.max(x, zero),
                   lax.mul(_const(alpha, x), lax.expm1(lax.div(neg, _const(alpha, x)))))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x: Any) -> Array:
    """Scaled ELU with the self-normalizing constants."""
    y = elu(x, _SELU_ALPHA)
    return lax.mul(_const(_SELU_SCALE, y), y)


def sigmoid(x: Any) -> Array:
    """``1 / (1 + exp(-x))`` (HLO ``logistic``; floating input only, as JAX)."""
    return lax.logistic(_float_strict(x, "sigmoid"))


def softplus(x: Any) -> Array:
    """``log(1 + exp(x))``, computed as ``max(x, 0) + log1p(exp(-|x|))`` (no overflow)."""
    x = _float(x)
    return lax.add(lax.max(x, _const(0, x)), lax.log1p(lax.exp(lax.neg(lax.abs(x)))))


def log_sigmoid(x: Any) -> Array:
    """``log(sigmoid(x)) = -softplus(-x)``."""
    x = _float(x)
    return lax.neg(softplus(lax.neg(x)))


def silu(x: Any) -> Array:
    """``x * sigmoid(x)`` (also called swish; floating input only, as JAX)."""
    x = _float_strict(x, "silu")
    return lax.mul(x, lax.logistic(x))


swish = silu


def mish(x: Any) -> Array:
    """``x * tanh(softplus(x))``."""
    x = _float(x)
    return lax.mul(x, lax.tanh(softplus(x)))


def gelu(x: Any, approximate: bool = True) -> Array:
    """Gaussian error linear unit.

    ``approximate=True``: ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``;
    ``approximate=False``: ``x/2 * (1 + erf(x / sqrt(2)))``.
    """
    x = _float(x)
    half, one = _const(0.5, x), _const(1, x)
    if approximate:
        cube = lax.mul(lax.mul(x, x), x)
        inner = lax.mul(_const(math.sqrt(2 / math.pi), x),
                        lax.add(x, lax.mul(_const(0.044715, x), cube)))
        return lax.mul(lax.mul(half, x), lax.add(one, lax.tanh(inner)))
    return lax.mul(lax.mul(half, x),
                   lax.add(one, lax.erf(lax.div(x, _const(math.sqrt(2.0), x)))))


def soft_sign(x: Any) -> Array:
    """``x / (|x| + 1)``."""
    x = _float(x)
    return lax.div(x, lax.add(lax.abs(x), _const(1, x)))


def hard_tanh(x: Any) -> Array:
    """``x`` clipped to ``[-1, 1]`` (integers stay integers, as in JAX)."""
    x = asarray(x)
    one, minus_one = _const(1, x), _const(-1, x)
    return _where(lax.gt(x, one), one, _where(lax.lt(x, minus_one), minus_one, x))


def hard_sigmoid(x: Any) -> Array:
    """``relu6(x + 3) / 6``."""
    x = _float(x)
    return lax.div(relu6(lax.add(x, _const(3, x))), _const(6, x))


def hard_silu(x: Any) -> Array:
    """``x * hard_sigmoid(x)`` (also called hard swish)."""
    x = _float(x)
    return lax.mul(x, hard_sigmoid(x))


hard_swish = hard_silu


def glu(x: Any, axis: int = -1) -> Array:
    """Gated linear unit: the first half of ``axis`` times the sigmoid of the second."""
    x = _float(x)
    ax = normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    if n % 2:
        raise InvalidArgumentError(f"glu: axis {ax} of {x.type_text()} must have an even size")
    limit = list(x.shape)
    limit[ax] = n // 2
    start = [0] * x.ndim
    start[ax] = n // 2
    a = lax.slice(x, [0] * x.ndim, limit)
    b = lax.slice(x, start, x.shape)
    return lax.mul(a, lax.logistic(b))


def _keep_broadcast(r: Array, like: Array) -> Array:
    return lax.broadcast_in_dim(r, like.shape, tuple(range(like.ndim)))


def softmax(x: Any, axis: Any = -1) -> Array:
    """``exp(x) / sum(exp(x), axis)``, computed after subtracting the maximum; its
    derivative is JAX's ``custom_jvp`` rule ``y * (t - sum(y * t, axis))``."""
    return _softmax(_float(x), axis)


def _softmax_impl(x: Array, axis: Any) -> Array:
    shift = stop_gradient(_keep_broadcast(_max(x, axis=axis, keepdims=True), x))
    unnormalized = lax.exp(lax.sub(x, shift))
    total = _keep_broadcast(_sum(unnormalized, axis=axis, keepdims=True), x)
    return lax.div(unnormalized, total)


_softmax = custom_jvp(_softmax_impl, nondiff_argnums=(1,))


@_softmax.defjvp
def _softmax_jvp(axis: Any, primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    y = _softmax(x, axis)
    dot = _keep_broadcast(_sum(lax.mul(y, t), axis=axis, keepdims=True), x)
    return y, lax.mul(y, lax.sub(t, dot))


def log_softmax(x: Any, axis: Any = -1) -> Array:
    """``x - logsumexp(x, axis)``, computed after subtracting the maximum."""
    x = _float(x)
    shifted = lax.sub(x, stop_gradient(_keep_broadcast(_max(x, axis=axis, keepdims=True), x)))
    lse = lax.log(_sum(lax.exp(shifted), axis=axis, keepdims=True))
    return lax.sub(shifted, _keep_broadcast(lse, x))


def one_hot(x: Any, num_classes: int, dtype: Any = np.float32, axis: int = -1) -> Array:
    """``x[..., None] == arange(num_classes)``, as ``dtype``, with the new axis at ``axis``.

    Values outside ``[0, num_classes)`` give an all-zero vector.
    """
    x = asarray(x)
    n = concrete_int(num_classes, "one_hot num_classes")
    if n < 0:
        raise InvalidArgumentError(f"one_hot: num_classes must be non-negative, got {n}")
    if x.dtype == np.bool_:
        x = lax.convert_element_type(x, np.int32)
    ax = normalize_axis(axis, x.ndim + 1, "one_hot axis")
    shape = x.shape[:ax] + (n,) + x.shape[ax:]
    kept = tuple(d for d in range(len(shape)) if d != ax)
    labels = lax.broadcast_in_dim(x, shape, kept)
    classes = lax.broadcasted_iota(x.dtype, shape, ax)
    return lax.convert_element_type(lax.eq(labels, classes), dtypes.canonicalize(dtype))


def standardize(x: Any, axis: Any = -1, mean: Any = None, variance: Any = None,
                epsilon: float = 1e-5) -> Array:
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axis``. ``mean`` and ``variance``
    are computed from ``x`` unless given; given ones must broadcast against ``x``."""
    x = _float(x)
    m = _mean(x, axis=axis, keepdims=True) if mean is None else asarray(mean)
    v = var(x, axis=axis, keepdims=True) if variance is None else asarray(variance)
    centered = lax.sub(*promote(x, m))
    (v,) = promote(v, to_inexact=True)
    scale = lax.rsqrt(lax.add(v, _const(epsilon, v)))
    return lax.mul(*promote(centered, scale))


normalize = standardize

__all__ = ["relu", "relu6", "leaky_relu", "elu", "celu", "selu", "sigmoid", "softplus",
           "log_sigmoid", "silu", "swish", "mish", "gelu", "soft_sign", "hard_tanh",
           "hard_sigmoid", "hard_silu", "hard_swish", "glu", "softmax", "log_softmax",
           "logsumexp", "one_hot", "standardize", "normalize"]
