"""Reductions (``sum``, ``mean``, ``argmax`` ...) and cumulative ops, with NumPy's axis rules.

Sums and products of bool and small integers accumulate in the default integer type
(``s32``; ``u32`` for unsigned), as NumPy (and JAX with x64 off) do.
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes
from ..frontend import lax
from ..frontend.buckets import element_count
from ..frontend.core import Array
from ..frontend.tracing import concrete_int
from ._elementwise import _const, asarray, promote


def normalize_axis(axis: Any, ndim: int, what: str = "axis") -> int:
    a = concrete_int(axis, what)
    bound = builtins.max(ndim, 1)
    if not -bound <= a < bound:
        raise InvalidArgumentError(f"{what} {a} is out of bounds for an array of rank {ndim}")
    return a % bound


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise InvalidArgumentError(f"repeated axis in {axis}")
        return axes
    return (normalize_axis(axis, ndim),)


def _keep(x: Array, out: Array, axes: Sequence[int], keepdims: bool) -> Array:
    if not keepdims:
        return out
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return lax.reshape(out, shape)


def _accumulate_dtype(dt: np.dtype, dtype: Any) -> np.dtype:
    if dtype is not None:
        return dtypes.canonicalize(dtype)
    if dt == np.bool_ or (dt.kind == "i" and dt.itemsize < 4):
        return dtypes.DEFAULT_INT
    if dt.kind == "u" and dt.itemsize < 4:
        return np.dtype(np.uint32)
    return dt


def _reduction(kind: str, upcast: bool):
    reducer = {"sum": lax.reduce_sum, "prod": lax.reduce_prod, "max": lax.reduce_max,
               "min": lax.reduce_min}[kind]
    combine = {"sum": lax.add, "prod": lax.mul, "max": lax.max, "min": lax.min}[kind]

    def f(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False, *,
          initial: Any = None, where: Any = None) -> Array:
        x = asarray(a)
        axes = normalize_axes(axis, x.ndim)
        if upcast:
            x = lax.convert_element_type(x, _accumulate_dtype(x.dtype, dtype), x.weak_type)
        elif initial is None and where is not None:
            raise InvalidArgumentError(f"xnp.{kind}: reduction operation {kind!r} has no "
                                       "identity, so a where mask needs an 'initial' value")
        elif initial is None and builtins.any(x.shape[i] == 0 for i in axes):
            raise InvalidArgumentError(f"xnp.{kind}: zero-size reduction has no identity")
        if where is not None:
            from ._elementwise import broadcast_to, _to_bool
            from ..frontend.primitives_reduction import reduction_identity
            kind_ = kind if x.dtype != np.bool_ else {"max": "or", "min": "and",
                                                      "sum": "or", "prod": "and"}[kind]
            ident = _const(reduction_identity(kind_, x.dtype), x)
            mask = broadcast_to(_to_bool(asarray(where)), x.shape)
            x = lax.select(mask, x, ident)
        if x.dtype == np.bool_ and kind in ("max", "min"):
            out = (lax.reduce_or if kind == "max" else lax.reduce_and)(x, axes)
        else:
            out = reducer(x, axes)
        if initial is not None:
            init = lax.convert_element_type(asarray(initial), out.dtype, out.weak_type)
            out = combine(out, lax.broadcast_in_dim(init, out.shape, ()))
        return _keep(x, out, axes, keepdims)
    f.__name__ = kind
    f.__doc__ = (f"Like numpy.{kind} over ``axis`` (all axes when None); ``where`` masks "
                 f"elements out, ``initial`` joins the reduction"
                 + ("." if upcast else " (required with ``where``, as in JAX)."))
    return f


sum = _reduction("sum", True)
prod = _reduction("prod", True)
max = _reduction("max", False)
min = _reduction("min", False)
amax, amin = max, min


def all(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    x = asarray(a)
    axes = normalize_axes(axis, x.ndim)
    b = x if x.dtype == np.bool_ else lax.ne(x, _const(0, x))
    return _keep(x, lax.reduce_and(b, axes), axes, keepdims)


def any(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    x = asarray(a)
    axes = normalize_axes(axis, x.ndim)
    b = x if x.dtype == np.bool_ else lax.ne(x, _const(0, x))
    return _keep(x, lax.reduce_or(b, axes), axes, keepdims)


def _count(x: Array, axes: Sequence[int]) -> int:
    n = 1
    for i in axes:
        n *= x.shape[i]
    return n


def mean(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False, *,
         where: Any = None) -> Array:
    """Like numpy.mean; ``where`` averages only the selected elements."""
    (x,) = promote(a, to_inexact=True)
    if dtype is not None:
        x = lax.convert_element_type(x, dtype)
    axes = normalize_axes(axis, x.ndim)
    if where is not None:
        from ._elementwise import broadcast_to, _to_bool
        mask = broadcast_to(_to_bool(asarray(where)), x.shape)
        total = lax.reduce_sum(lax.select(mask, x, _const(0, x)), axes)
        count = lax.reduce_sum(lax.convert_element_type(mask, x.dtype), axes)
        return _keep(x, lax.div(total, count), axes, keepdims)
    total = lax.reduce_sum(x, axes) if axes else x
    out = lax.div(total, _divisor(x, axes, total, 0))
    return _keep(x, out, axes, keepdims)


def _divisor(x: Array, axes: tuple[int, ...], like: Array, ddof: int) -> Array:
    """The element count over ``axes`` minus ``ddof``, in ``like``'s dtype: the run-time
    count under shape buckets (dynamic dimensions), else a constant."""
    count = element_count(x, axes, like.dtype)
    if count is None:
        return _const(_count(x, axes) - ddof, like)
    count = lax.broadcast_in_dim(count, like.shape, ())
    return lax.sub(count, _const(ddof, like)) if ddof else count


def var(a: Any, axis: Any = None, dtype: Any = None, ddof: int = 0,
        keepdims: bool = False) -> Array:
    (x,) = promote(a, to_inexact=True)
    axes = normalize_axes(axis, x.ndim)
    centered = lax.sub(x, lax.broadcast_in_dim(
        mean(x, axes, keepdims=True), x.shape, tuple(range(x.ndim))))
    sq = lax.mul(centered, centered)
    total = lax.reduce_sum(sq, axes) if axes else sq
    out = lax.div(total, _divisor(x, axes, total, ddof))
    return _keep(x, out, axes, keepdims)


def std(a: Any, axis: Any = None, dtype: Any = None, ddof: int = 0,
        keepdims: bool = False) -> Array:
    return lax.sqrt(var(a, axis, dtype, ddof, keepdims))


def _arg(is_max: bool):
    def f(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
        x = asarray(a)
        if x.dtype == np.bool_:
            x = lax.convert_element_type(x, np.int32)
        if axis is None:
            out = (lax.argmax if is_max else lax.argmin)(lax.reshape(x, (x.size,)), 0)
            return lax.reshape(out, (1,) * x.ndim) if keepdims else out
        ax = normalize_axis(axis, x.ndim)
        if x.shape[ax] == 0:
            raise InvalidArgumentError("attempt to get argmax/argmin of an empty sequence")
        out = (lax.argmax if is_max else lax.argmin)(x, ax)
        return _keep(x, out, (ax,), keepdims)
    f.__name__ = "argmax" if is_max else "argmin"
    return f


argmax = _arg(True)
argmin = _arg(False)


def logsumexp(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    """``log(sum(exp(a)))`` computed stably (as ``jax.scipy.special.logsumexp``)."""
    (x,) = promote(a, to_inexact=True)
    axes = normalize_axes(axis, x.ndim)
    m = lax.reduce_max(x, axes)
    m = lax.select(lax.is_finite(m), m, _const(0, m))
    keep_shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    mb = lax.broadcast_in_dim(lax.reshape(m, keep_shape), x.shape, tuple(range(x.ndim)))
    s = lax.reduce_sum(lax.exp(lax.sub(x, mb)), axes)
    return _keep(x, lax.add(lax.log(s), m), axes, keepdims)


def _cumulative(kind: str):
    def f(a: Any, axis: Any = None, dtype: Any = None) -> Array:
        x = asarray(a)
        if axis is None:
            x, ax = lax.reshape(x, (x.size,)), 0
        else:
            ax = normalize_axis(axis, x.ndim)
        if kind in ("sum", "prod"):
            x = lax.convert_element_type(x, _accumulate_dtype(x.dtype, dtype), x.weak_type)
        elif x.dtype == np.bool_:
            x = lax.convert_element_type(x, np.int32)
        if x.shape[ax] == 0:
            return x
        return lax.cumulative(kind, x, ax)
    f.__name__ = f"cum{kind}"
    return f


cumsum = _cumulative("sum")
cumprod = _cumulative("prod")
cummax = _cumulative("max")
cummin = _cumulative("min")
