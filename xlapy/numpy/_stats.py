"""Statistics: quantiles and medians (by sorting), NaN-ignoring reductions, ``average``,
``cov`` and ``corrcoef``.

Results are in the default float type for integer inputs (``float32``: x64 is off, as in
JAX; NumPy gives ``float64``). Quantiles sort along the reduced axes (HLO ``sort``, NaNs
last) and read the neighbouring order statistics with a gather, so they are
differentiable and compile with a traced ``q``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes
from ..frontend import lax
from ..frontend.core import Array
from . import _reductions as R
from ._elementwise import _const, asarray, broadcast_to, promote
from ._reductions import normalize_axes

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _isnan(x: Array) -> Array:
    return lax.ne(x, x)


def _to_last(x: Array, axis: Any) -> tuple[Array, tuple[int, ...], tuple[int, ...]]:
    """``x`` with the reduced axes merged into one last axis; (that, the axes, kept shape)."""
    axes = normalize_axes(axis, x.ndim)
    rest = [d for d in range(x.ndim) if d not in axes]
    y = lax.transpose(x, rest + list(axes))
    kept = tuple(x.shape[d] for d in rest)
    return lax.reshape(y, kept + (int(np.prod([x.shape[d] for d in axes], dtype=np.int64)),)), \
        axes, kept


def _keepdims(out: Array, x: Array, axes: tuple[int, ...], nq: int) -> Array:
    shape = out.shape[:nq] + tuple(1 if d in axes else s for d, s in enumerate(x.shape))
    return lax.reshape(out, shape)


def _quantile(a: Any, q: Any, axis: Any, method: str, keepdims: bool, ignore_nan: bool,
              name: str) -> Array:
    if method not in _METHODS:
        raise InvalidArgumentError(f"xnp.{name}: method must be one of {', '.join(_METHODS)}, "
                                   f"got {method!r}")
    (x,) = promote(a, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError(f"xnp.{name} does not support complex inputs")
    qa = lax.convert_element_type(asarray(q), x.dtype)
    y, axes, kept = _to_last(x, axis)
    n = y.shape[-1]
    if n == 0:
        raise InvalidArgumentError(f"xnp.{name}: cannot take a quantile of an empty axis")
    s = lax.sort(y, y.ndim - 1, is_stable=True)                   # NaNs last
    # positions, shaped (*kept, *q.shape)
    full = kept + qa.shape
    qb = lax.broadcast_in_dim(qa, full, tuple(range(len(kept), len(full))))
    if ignore_nan:
        valid = lax.reduce_sum(lax.convert_element_type(lax.bitwise_not(_isnan(y)), x.dtype),
                               (y.ndim - 1,))
        count = lax.broadcast_in_dim(valid, full, tuple(range(len(kept))))
    else:
        count = lax.full_like(qb, n)
    pos = lax.mul(qb, lax.sub(count, _const(1, count)))
    pos = lax.clamp(_const(0, pos), pos, lax.max(lax.sub(count, _const(1, count)), _const(0, pos)))
    low, high = lax.floor(pos), lax.ceil(pos)
    if method == "nearest":
        low = high = lax.round_even(pos)
    from ._indexing import take_along_axis
    flat_q = int(np.prod(qa.shape, dtype=np.int64))

    def read(p: Array) -> Array:
        i = lax.reshape(lax.convert_element_type(p, np.int32), kept + (flat_q,))
        return lax.reshape(take_along_axis(s, i, -1, mode="clip"), full)
    lo_v = read(low)
    if method in ("lower", "nearest"):
        out = lo_v
    else:
        hi_v = read(high)
        if method == "higher":
            out = hi_v
        elif method == "midpoint":
            out = lax.mul(lax.add(lo_v, hi_v), _const(0.5, lo_v))
        else:
            w_hi = lax.sub(pos, low)
            out = lax.add(lax.mul(lo_v, lax.sub(_const(1, w_hi), w_hi)), lax.mul(hi_v, w_hi))
    # A NaN anywhere in the slice (NaN-ignoring: nothing but NaNs) makes the answer NaN.
    last = lax.reshape(lax.slice(s, (0,) * (s.ndim - 1) + (n - 1,), s.shape), kept)
    bad = _isnan(last)
    if ignore_nan:
        bad = lax.eq(valid, _const(0, valid))
    bad = lax.broadcast_in_dim(bad, full, tuple(range(len(kept))))
    out = lax.select(bad, _const(np.nan, out), out)
    # NumPy's layout: the q dims first, then the kept dims.
    nq = qa.ndim
    out = lax.transpose(out, tuple(range(len(kept), len(full))) + tuple(range(len(kept))))
    return _keepdims(out, x, axes, nq) if keepdims else out


def quantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False) -> Array:
    """Like numpy.quantile with methods linear/lower/higher/midpoint/nearest (NaN if the
    slice has a NaN)."""
    return _quantile(a, q, axis, method, keepdims, False, "quantile")


def percentile(a: Any, q: Any, axis: Any = None, out: None = None,
               overwrite_input: bool = False, method: str = "linear",
               keepdims: bool = False) -> Array:
    """Like numpy.percentile (``quantile`` of ``q / 100``)."""
    return _quantile(a, _div100(q), axis, method, keepdims, False, "percentile")


def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Array:
    """Like numpy.median."""
    return _quantile(a, 0.5, axis, "midpoint", keepdims, False, "median")


def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None,
                overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False) -> Array:
    """Like numpy.nanquantile (NaN only where a slice is all NaN)."""
    return _quantile(a, q, axis, method, keepdims, True, "nanquantile")


def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False) -> Array:
    """Like numpy.nanpercentile."""
    return _quantile(a, _div100(q), axis, method, keepdims, True, "nanpercentile")


def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Array:
    """Like numpy.nanmedian."""
    return _quantile(a, 0.5, axis, "midpoint", keepdims, True, "nanmedian")


def _div100(q: Any) -> Array:
    (qa,) = promote(q, to_inexact=True)
    return lax.div(qa, _const(100, qa))


# ------------------------------------------------------------------- NaN-ignoring reductions
def _nan_replaced(a: Any, value: float) -> Array:
    x = asarray(a)
    if not dtypes.is_inexact(x.dtype):
        return x
    return lax.select(_isnan(x), _const(value, x), x)


def nansum(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False, *,
           initial: Any = None, where: Any = None) -> Array:
    """Like numpy.nansum (NaNs count as zero)."""
    return R.sum(_nan_replaced(a, 0), axis, dtype, keepdims, initial=initial, where=where)


def nanprod(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False, *,
            initial: Any = None, where: Any = None) -> Array:
    """Like numpy.nanprod (NaNs count as one)."""
    return R.prod(_nan_replaced(a, 1), axis, dtype, keepdims, initial=initial, where=where)


def _nan_extreme(kind: str):
    def f(a: Any, axis: Any = None, keepdims: bool = False, *, initial: Any = None,
          where: Any = None) -> Array:
        x = asarray(a)
        red = R.max if kind == "max" else R.min
        if not dtypes.is_float(x.dtype):
            return red(x, axis, None, keepdims, initial=initial, where=where)
        fill = -np.inf if kind == "max" else np.inf
        out = red(_nan_replaced(x, fill), axis, None, keepdims, initial=initial, where=where)
        all_nan = R.all(_isnan(x), axis=axis, keepdims=keepdims)
        return lax.select(all_nan, _const(np.nan, out), out)
    f.__name__ = f"nan{kind}"
    f.__doc__ = f"Like numpy.nan{kind}: NaNs are ignored; an all-NaN slice gives NaN."
    return f


nanmax = _nan_extreme("max")
nanmin = _nan_extreme("min")


def _nan_count(x: Array, axis: Any, keepdims: bool) -> Array:
    ok = lax.convert_element_type(lax.bitwise_not(_isnan(x)), x.dtype)
    return R.sum(ok, axis, None, keepdims)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Array:
    """Like numpy.nanmean (NaN for an all-NaN slice)."""
    (x,) = promote(a, to_inexact=True)
    if dtype is not None:
        x = lax.convert_element_type(x, dtype)
    total = R.sum(_nan_replaced(x, 0), axis, None, keepdims)
    return lax.div(total, _nan_count(x, axis, keepdims))


def nanvar(a: Any, axis: Any = None, dtype: Any = None, ddof: int = 0,
           keepdims: bool = False) -> Array:
    """Like numpy.nanvar."""
    (x,) = promote(a, to_inexact=True)
    if dtype is not None:
        x = lax.convert_element_type(x, dtype)
    m = nanmean(x, axis, keepdims=True)
    d = lax.sub(x, broadcast_to(m, x.shape))
    sq = _nan_replaced(lax.mul(d, d), 0)
    n = _nan_count(x, axis, keepdims)
    return lax.div(R.sum(sq, axis, None, keepdims), lax.sub(n, _const(ddof, n)))


def nanstd(a: Any, axis: Any = None, dtype: Any = None, ddof: int = 0,
           keepdims: bool = False) -> Array:
    """Like numpy.nanstd."""
    return lax.sqrt(nanvar(a, axis, dtype, ddof, keepdims))


# ------------------------------------------------------------------ weighted statistics
def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    """Like numpy.average; a 1-D ``weights`` applies along a single ``axis``."""
    if weights is None:
        (x,) = promote(a, to_inexact=True)
        avg = R.mean(x, axis, keepdims=keepdims)
        if not returned:
            return avg
        n = int(np.prod([x.shape[d] for d in normalize_axes(axis, x.ndim)], dtype=np.int64))
        return avg, lax.full_like(avg, n)
    xa, wa = asarray(a), asarray(weights)
    dt, _ = dtypes.promote_types((xa.dtype, xa.weak_type), (wa.dtype, wa.weak_type))
    dt = dt if dtypes.is_inexact(dt) else dtypes.DEFAULT_FLOAT
    x, w = lax.convert_element_type(xa, dt), lax.convert_element_type(wa, dt)
    if w.shape != x.shape:
        if axis is None or isinstance(axis, (tuple, list)) or w.ndim != 1:
            raise InvalidArgumentError("xnp.average: weights shaped unlike a must be 1-D and "
                                       "need a single axis")
        ax = normalize_axes(axis, x.ndim)[0]
        if w.shape[0] != x.shape[ax]:
            raise InvalidArgumentError("xnp.average: length of weights differs from the axis")
        w = lax.broadcast_in_dim(w, x.shape, (ax,))
    wsum = R.sum(w, axis, None, keepdims)
    avg = lax.div(R.sum(lax.mul(x, w), axis, None, keepdims), wsum)
    return (avg, broadcast_to(wsum, avg.shape)) if returned else avg


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False,
        ddof: int | None = None, fweights: Any = None, aweights: Any = None) -> Array:
    """Like numpy.cov (with ``fweights``/``aweights``)."""
    from ._array_extra import atleast_2d
    from ._shape_ops import concatenate
    x = promote(atleast_2d(m), to_inexact=True)[0]
    if x.ndim > 2:
        raise InvalidArgumentError("xnp.cov: m has more than 2 dimensions")
    if not rowvar and x.shape[0] != 1:
        x = lax.transpose(x, (1, 0))
    if y is not None:
        yy = promote(atleast_2d(y), to_inexact=True)[0]
        if not rowvar and yy.shape[0] != 1:
            yy = lax.transpose(yy, (1, 0))
        x = concatenate([x, yy], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    if fweights is not None:
        w = promote(fweights, to_inexact=True)[0]
    if aweights is not None:
        aw = promote(aweights, to_inexact=True)[0]
        w = aw if w is None else lax.mul(w, aw)
    if w is None:
        avg = R.mean(x, axis=1)
        fact = lax.convert_element_type(asarray(np.asarray(x.shape[1] - ddof)), x.dtype)
    else:
        w = lax.convert_element_type(w, x.dtype)
        avg, w_sum = average(x, axis=1, weights=w, returned=True)
        w_sum = lax.slice(w_sum, (0,), (1,)) if w_sum.ndim else w_sum
        w_sum = lax.reshape(w_sum, ())
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = lax.sub(w_sum, _const(ddof, w_sum))
        else:
            aw = lax.convert_element_type(promote(aweights, to_inexact=True)[0], x.dtype)
            fact = lax.sub(w_sum, lax.div(lax.mul(_const(ddof, w_sum), R.sum(lax.mul(w, aw))),
                                          w_sum))
    xc = lax.sub(x, lax.broadcast_in_dim(avg, x.shape, (0,)))
    xw = xc if w is None else lax.mul(xc, lax.broadcast_in_dim(w, x.shape, (1,)))
    from ._elementwise import conj
    c = lax.dot_general(xc, conj(xw), (((1,), (1,)), ((), ())))
    c = lax.div(c, lax.broadcast_in_dim(fact, c.shape, ()))
    return lax.reshape(c, ()) if c.shape == (1, 1) else c


def corrcoef(x: Any, y: Any = None, rowvar: bool = True) -> Array:
    """Like numpy.corrcoef (real parts clipped to [-1, 1])."""
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return lax.div(c, c)
    from ._array_extra import diagonal
    d = diagonal(c)
    std = lax.sqrt(lax.real(d) if dtypes.is_complex(d.dtype) else d)
    n = c.shape[0]
    c = lax.div(c, lax.broadcast_in_dim(std, (n, n), (0,)))
    c = lax.div(c, lax.broadcast_in_dim(std, (n, n), (1,)))
    if dtypes.is_complex(c.dtype):
        return c
    return lax.clamp(_const(-1, c), c, _const(1, c))


__all__ = ["quantile", "percentile", "median", "nanquantile", "nanpercentile", "nanmedian",
           "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "average",
           "cov", "corrcoef"]
