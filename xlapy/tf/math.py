"""``tf.math``: elementwise math, comparisons, reductions and ``argmax`` (also exported at
the top level of ``xlapy.tf`` under TF's names: ``tf.add``, ``tf.reduce_sum`` ...).

Built on ``xlapy.numpy``; where TF's semantics differ from NumPy's they are TF's:

- reductions keep the input dtype (``reduce_sum`` of uint8 is uint8, ``reduce_mean`` of
  int32 is the int32 quotient, truncated toward zero);
- ``argmax``/``argmin`` reduce axis 0 when ``axis`` is None (not the flattened array);
- ``divide``/``truediv`` of integers give floats; ``floordiv``/``floormod`` round toward
  negative infinity; ``round`` rounds half to even.

Mixed dtypes are promoted with xlapy's (JAX's) lattice; TF would raise instead, so code
that runs in TF gives the same results here.
"""
from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Any, Sequence

import numpy as np

from .. import nn as _nn
from .. import numpy as xnp
from ..errors import InvalidArgumentError
from ..frontend import dtypes as _dt
from ..frontend import lax
from ..frontend import lax_composite
from ..frontend.core import Array
from ._common import axes_arg, axis_arg, static_value, tensor, tf_dtype

TopKV2 = namedtuple("TopKV2", ["values", "indices"])


def _unary(fn: Any, name: str, doc: str = "") -> Any:
    def f(x: Any, name: str | None = None) -> Array:
        return fn(tensor(x))
    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = doc or f"Elementwise ``{name}`` (``tf.math.{name}``)."
    return f


def _binary(fn: Any, name: str, doc: str = "") -> Any:
    def f(x: Any, y: Any, name: str | None = None) -> Array:
        return fn(tensor(x), tensor(y))
    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = doc or f"Elementwise ``{name}`` with broadcasting (``tf.math.{name}``)."
    return f


def _float_unary(lax_fn: Any, name: str) -> Any:
    def fn(x: Array) -> Array:
        if not _dt.is_inexact(x.dtype):
            raise InvalidArgumentError(f"tf.math.{name} needs a floating-point tensor, got "
                                       f"{x.type_text()}")
        return lax_fn(x)
    return _unary(fn, name)


# ------------------------------------------------------------------------- elementwise
abs = _unary(xnp.abs, "abs")  # noqa: A001
negative = _unary(xnp.negative, "negative")
sign = _unary(xnp.sign, "sign")
square = _unary(xnp.square, "square")
sqrt = _unary(xnp.sqrt, "sqrt")
rsqrt = _float_unary(lax.rsqrt, "rsqrt")
exp = _unary(xnp.exp, "exp")
expm1 = _unary(xnp.expm1, "expm1")
log = _unary(xnp.log, "log")
log1p = _unary(xnp.log1p, "log1p")
sin, cos, tan = _unary(xnp.sin, "sin"), _unary(xnp.cos, "cos"), _unary(xnp.tan, "tan")
asin, acos, atan = (_unary(xnp.arcsin, "asin"), _unary(xnp.arccos, "acos"),
                    _unary(xnp.arctan, "atan"))
sinh, cosh, tanh = _unary(xnp.sinh, "sinh"), _unary(xnp.cosh, "cosh"), _unary(xnp.tanh, "tanh")
floor, ceil = _unary(xnp.floor, "floor"), _unary(xnp.ceil, "ceil")
round = _unary(xnp.round, "round", "Round half to even (banker's rounding), as TF.")  # noqa: A001
reciprocal = _unary(xnp.reciprocal, "reciprocal")
erf = _float_unary(lax.erf, "erf")
sigmoid = _unary(_nn.sigmoid, "sigmoid")
softplus = _unary(_nn.softplus, "softplus")
softsign = _unary(_nn.soft_sign, "softsign")
log_sigmoid = _unary(_nn.log_sigmoid, "log_sigmoid")
is_nan, is_inf = _unary(xnp.isnan, "is_nan"), _unary(xnp.isinf, "is_inf")
is_finite = _unary(xnp.isfinite, "is_finite")
logical_not = _unary(xnp.logical_not, "logical_not")
real, imag, conj = _unary(xnp.real, "real"), _unary(xnp.imag, "imag"), _unary(xnp.conj, "conj")

add = _binary(xnp.add, "add")
subtract = _binary(xnp.subtract, "subtract")
multiply = _binary(xnp.multiply, "multiply")
divide = _binary(xnp.true_divide, "divide", "``x / y``; integers divide to floats.")
truediv = _binary(xnp.true_divide, "truediv", "``x / y``; integers divide to floats.")
floordiv = _binary(xnp.floor_divide, "floordiv", "``x // y`` (rounds toward -inf).")
floormod = _binary(xnp.remainder, "floormod", "``x % y`` with the sign of ``y``.")
mod = floormod
pow = _binary(xnp.power, "pow")  # noqa: A001
maximum, minimum = _binary(xnp.maximum, "maximum"), _binary(xnp.minimum, "minimum")
atan2 = _binary(xnp.arctan2, "atan2")
equal, not_equal = _binary(xnp.equal, "equal"), _binary(xnp.not_equal, "not_equal")
less, less_equal = _binary(xnp.less, "less"), _binary(xnp.less_equal, "less_equal")
greater = _binary(xnp.greater, "greater")
greater_equal = _binary(xnp.greater_equal, "greater_equal")
logical_and = _binary(xnp.logical_and, "logical_and")
logical_or = _binary(xnp.logical_or, "logical_or")
logical_xor = _binary(xnp.logical_xor, "logical_xor")


def squared_difference(x: Any, y: Any, name: str | None = None) -> Array:
    """``(x - y) ** 2``."""
    d = xnp.subtract(tensor(x), tensor(y))
    return d * xnp.conj(d) if _dt.is_complex(d.dtype) else d * d


def divide_no_nan(x: Any, y: Any, name: str | None = None) -> Array:
    """``x / y``, and 0 where ``y`` is 0."""
    x, y = tensor(x), tensor(y)
    zero = xnp.equal(y, 0)
    return xnp.where(zero, xnp.zeros_like(xnp.true_divide(x, y)),
                     xnp.true_divide(x, xnp.where(zero, xnp.ones_like(y), y)))


def add_n(inputs: Sequence[Any], name: str | None = None) -> Array:
    """The elementwise sum of a list of tensors of the same shape and dtype."""
    xs = [tensor(v) for v in inputs]
    if not xs:
        raise InvalidArgumentError("tf.math.add_n needs at least one input")
    if builtins.any(x.shape != xs[0].shape for x in xs):
        raise InvalidArgumentError(f"tf.math.add_n: shapes differ: {[x.shape for x in xs]}")
    out = xs[0]
    for x in xs[1:]:
        out = xnp.add(out, x)
    return out


# ------------------------------------------------------------------------- reductions
def _reduce(x: Any, axis: Any) -> tuple[Array, tuple[int, ...] | None]:
    t = tensor(x)
    return t, axes_arg(axis, t.ndim)


def reduce_sum(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Array:
    """Sum over ``axis`` (all axes when None), in the input's dtype."""
    x, axes = _reduce(input_tensor, axis)
    dt = np.dtype(np.int32) if x.dtype == np.bool_ else x.dtype
    return xnp.sum(x, axes, dtype=dt, keepdims=keepdims)


def reduce_prod(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None) -> Array:
    x, axes = _reduce(input_tensor, axis)
    dt = np.dtype(np.int32) if x.dtype == np.bool_ else x.dtype
    return xnp.prod(x, axes, dtype=dt, keepdims=keepdims)


def reduce_mean(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None) -> Array:
    """Mean over ``axis``; integer tensors give the integer quotient (as TF)."""
    x, axes = _reduce(input_tensor, axis)
    if _dt.is_inexact(x.dtype):
        return xnp.mean(x, axes, keepdims=keepdims)
    if x.dtype == np.bool_:
        raise InvalidArgumentError("tf.reduce_mean does not take bool tensors; cast first")
    total = xnp.sum(x, axes, dtype=x.dtype, keepdims=keepdims)
    count = int(np.prod([x.shape[i] for i in (axes if axes is not None
                                              else builtins.range(x.ndim))]))
    return lax.div(total, xnp.full(total.shape, builtins.max(count, 1), x.dtype))


def reduce_max(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Array:
    x, axes = _reduce(input_tensor, axis)
    return xnp.max(x, axes, keepdims=keepdims)


def reduce_min(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Array:
    x, axes = _reduce(input_tensor, axis)
    return xnp.min(x, axes, keepdims=keepdims)


def reduce_any(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Array:
    x, axes = _reduce(input_tensor, axis)
    return xnp.any(x, axes, keepdims=keepdims)


def reduce_all(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Array:
    x, axes = _reduce(input_tensor, axis)
    return xnp.all(x, axes, keepdims=keepdims)


def reduce_logsumexp(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                     name: str | None = None) -> Array:
    x, axes = _reduce(input_tensor, axis)
    return xnp.logsumexp(x, axes, keepdims=keepdims)


def reduce_variance(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                    name: str | None = None) -> Array:
    x, axes = _reduce(input_tensor, axis)
    return xnp.var(x, axes, keepdims=keepdims)


def reduce_std(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Array:
    x, axes = _reduce(input_tensor, axis)
    return xnp.std(x, axes, keepdims=keepdims)


def count_nonzero(input: Any, axis: Any = None, keepdims: bool = False, dtype: Any = np.int64,
                  name: str | None = None) -> Array:
    x, axes = _reduce(input, axis)
    nz = xnp.not_equal(x, xnp.zeros((), x.dtype))
    return xnp.sum(nz, axes, dtype=tf_dtype(dtype), keepdims=keepdims)


def _arg(fn: Any, input: Any, axis: Any, output_type: Any) -> Array:
    x = tensor(input)
    ax = 0 if axis is None else axis_arg(axis, x.ndim)
    return xnp.astype(fn(x, ax), tf_dtype(output_type))


def argmax(input: Any, axis: Any = None, output_type: Any = np.int64,
           name: str | None = None) -> Array:
    """Index of the largest value along ``axis`` (axis 0 when None, as TF)."""
    return _arg(xnp.argmax, input, axis, output_type)


def argmin(input: Any, axis: Any = None, output_type: Any = np.int64,
           name: str | None = None) -> Array:
    """Index of the smallest value along ``axis`` (axis 0 when None, as TF)."""
    return _arg(xnp.argmin, input, axis, output_type)


def _cumulative(fn: Any, identity: int, x: Any, axis: Any, exclusive: bool,
                reverse: bool) -> Array:
    t = tensor(x)
    ax = axis_arg(axis, t.ndim)
    if reverse:
        t = xnp.flip(t, ax)
    out = fn(t, ax, dtype=t.dtype)
    if exclusive and t.shape[ax]:
        pads = [(0, 0)] * t.ndim
        pads[ax] = (1, 0)
        limit = list(out.shape)
        limit[ax] -= 1
        out = xnp.pad(lax.slice(out, [0] * t.ndim, limit), pads,
                      constant_values=xnp.asarray(identity, out.dtype))
    return xnp.flip(out, ax) if reverse else out


def cumsum(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Array:
    """Cumulative sum along ``axis``; ``exclusive`` starts from 0, ``reverse`` from the end."""
    return _cumulative(xnp.cumsum, 0, x, axis, exclusive, reverse)


def cumprod(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
            name: str | None = None) -> Array:
    """Cumulative product along ``axis``; ``exclusive`` starts from 1."""
    return _cumulative(xnp.cumprod, 1, x, axis, exclusive, reverse)


def top_k(input: Any, k: Any = 1, sorted: bool = True, name: str | None = None) -> TopKV2:
    """The ``k`` largest entries of the last axis, descending, and their int32 indices."""
    vals, idx = lax_composite.top_k(tensor(input), int(static_value(k, "tf.math.top_k k")))
    return TopKV2(vals, idx)


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Array:
    """Sums of the rows of ``data`` with the same segment id (ids outside
    ``[0, num_segments)`` are dropped)."""
    d, ids = tensor(data), tensor(segment_ids)
    n = int(static_value(num_segments, "num_segments"))
    if d.shape[:ids.ndim] != ids.shape:
        raise InvalidArgumentError(f"tf.math.unsorted_segment_sum: segment_ids {ids.type_text()} "
                                   f"must be a prefix of data's shape {d.type_text()}")
    out = xnp.zeros((n,) + d.shape[ids.ndim:], d.dtype)
    idx = xnp.reshape(xnp.astype(ids, np.int32), ids.shape + (1,))
    window = tuple(builtins.range(ids.ndim, d.ndim))
    # XLA's scatter skips updates whose index is out of bounds: TF drops those ids too.
    return lax.scatter(out, idx, d, update_window_dims=window, inserted_window_dims=(0,),
                       scatter_dims_to_operand_dims=(0,), index_vector_dim=ids.ndim,
                       combiner="add")


def l2_normalize(x: Any, axis: Any = None, epsilon: float = 1e-12,
                 name: str | None = None) -> Array:
    """``x / sqrt(max(sum(x**2, axis), epsilon))``."""
    t = tensor(x)
    axes = axes_arg(axis, t.ndim)
    sq = xnp.sum(xnp.square(t), axes, keepdims=True)
    return t * lax.rsqrt(xnp.maximum(sq, xnp.asarray(epsilon, sq.dtype)))


__all__ = [
    "abs", "negative", "sign", "square", "sqrt", "rsqrt", "exp", "expm1", "log", "log1p",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "floor", "ceil",
    "round", "reciprocal", "erf", "sigmoid", "softplus", "softsign", "log_sigmoid", "is_nan",
    "is_inf", "is_finite", "logical_not", "real", "imag", "conj", "add", "subtract",
    "multiply", "divide", "truediv", "floordiv", "floormod", "mod", "pow", "maximum",
    "minimum", "atan2", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "logical_and", "logical_or", "logical_xor", "squared_difference",
    "divide_no_nan", "add_n", "reduce_sum", "reduce_prod", "reduce_mean", "reduce_max",
    "reduce_min", "reduce_any", "reduce_all", "reduce_logsumexp", "reduce_variance",
    "reduce_std", "count_nonzero", "argmax", "argmin", "cumsum", "cumprod", "top_k",
    "TopKV2", "unsorted_segment_sum", "l2_normalize"]
