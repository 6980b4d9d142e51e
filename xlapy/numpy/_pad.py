"""``pad`` with NumPy's modes, built from ``pad``/``slice``/``rev``/``concatenate``.

Axes are padded one after the other, as NumPy does, so corners see the values already
padded along earlier axes. ``edge``, ``reflect``, ``symmetric`` and ``wrap`` are index maps
(each output position copies one input position): the map is computed with NumPy at trace
time and lowered as runs of slices (reversed where the map runs backwards), so gradients
come from the slice and concatenate rules.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes
from ..frontend import lax
from ..frontend.core import Array
from ..frontend.tracing import concrete_value
from ._elementwise import asarray, broadcast_to

_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")
_STAT_MODES = ("maximum", "minimum", "mean", "median")


def _pairs(value: Any, ndim: int, what: str, concrete: bool = True) -> list[tuple[Any, Any]]:
    """NumPy's per-axis ``(before, after)`` broadcasting of ``pad_width``-style arguments."""
    v = concrete_value(value, what) if concrete else np.asarray(value, dtype=object)
    try:
        b = np.broadcast_to(v, (ndim, 2))
    except ValueError:
        raise InvalidArgumentError(f"xnp.pad: {what} {value!r} does not fit an array of rank "
                                   f"{ndim}") from None
    return [(b[d, 0], b[d, 1]) for d in range(ndim)]


def _axis_slice(x: Array, axis: int, lo: int, hi: int) -> Array:
    start, limit = [0] * x.ndim, list(x.shape)
    start[axis], limit[axis] = lo, hi
    return lax.slice(x, start, limit)


def _gather_runs(x: Array, axis: int, idx: np.ndarray) -> Array:
    """``x`` taken at the static positions ``idx`` along ``axis``, as slices of runs."""
    parts, i = [], 0
    while i < len(idx):
        j = i + 1
        step = int(idx[j] - idx[i]) if j < len(idx) else 1
        if step not in (1, -1):
            step = 1
        while j < len(idx) and idx[j] - idx[j - 1] == step:
            j += 1
        lo, hi = sorted((int(idx[i]), int(idx[j - 1])))
        part = _axis_slice(x, axis, lo, hi + 1)
        parts.append(lax.rev(part, (axis,)) if step == -1 and j - i > 1 else part)
        i = j
    return lax.concatenate(parts, axis) if parts else _axis_slice(x, axis, 0, 0)


def _stat(x: Array, axis: int, kind: str, lo: int, hi: int) -> Array:
    from . import _reductions as R
    part = _axis_slice(x, axis, lo, hi)
    if kind == "median":
        from ._stats import median
        out = median(part, axis=axis, keepdims=True)
    else:
        fn = {"maximum": R.max, "minimum": R.min, "mean": R.mean}[kind]
        out = fn(part, axis=axis, keepdims=True)
    if kind in ("mean", "median") and not dtypes.is_inexact(x.dtype):
        from ._elementwise import rint
        out = rint(out)                 # NumPy rounds statistics of integer arrays
    return lax.convert_element_type(out, x.dtype, x.weak_type)


def _repeat_along(v: Array, axis: int, n: int) -> Array:
    shape = list(v.shape)
    shape[axis] = n
    return broadcast_to(v, tuple(shape))


def _ramp(x: Array, axis: int, end: Any, edge: Array, n: int, before: bool) -> Array:
    """NumPy's ramp: ``linspace(end, edge, n, endpoint=False)`` along ``axis`` (``end + k *
    (edge - end) / n``, floored for integers), reversed after the array."""
    dt = x.dtype if dtypes.is_inexact(x.dtype) else dtypes.DEFAULT_FLOAT
    shape = list(x.shape)
    shape[axis] = n
    k = lax.broadcasted_iota(dt, shape, axis)
    start = broadcast_to(lax.convert_element_type(asarray(end), dt), tuple(shape))
    eb = broadcast_to(lax.convert_element_type(edge, dt), tuple(shape))
    step = lax.div(lax.sub(eb, start), lax.full_like(eb, n))
    out = lax.add(lax.mul(k, step), start)
    if not dtypes.is_inexact(x.dtype):
        out = lax.floor(out)
    if not before:
        out = lax.rev(out, (axis,))
    return lax.convert_element_type(out, x.dtype, x.weak_type)


def pad(array: Any, pad_width: Any, mode: str = "constant", *, constant_values: Any = 0,
        end_values: Any = 0, stat_length: Any = None, reflect_type: str = "even") -> Array:
    """Like numpy.pad with modes ``constant``, ``edge``, ``reflect``, ``symmetric``,
    ``wrap``, ``linear_ramp``, ``maximum``, ``minimum``, ``mean``, ``median`` and ``empty``
    (zeros). ``reflect_type="odd"`` is supported; callable modes are not."""
    x = asarray(array)
    if callable(mode):
        raise InvalidArgumentError("xnp.pad: callable modes are not supported")
    widths = [(int(lo), int(hi)) for lo, hi in _pairs(pad_width, x.ndim, "pad width")]
    if builtins.any(w < 0 for p in widths for w in p):
        raise InvalidArgumentError(f"xnp.pad: negative pad width in {pad_width!r}")
    if mode == "empty":
        mode, constant_values = "constant", 0
    if mode == "constant":
        cv = asarray(constant_values)
        if cv.ndim == 0:
            return lax.pad(x, cv, [(lo, hi, 0) for lo, hi in widths])
        values = _pairs(np.asarray(concrete_value(cv, "constant_values")), x.ndim,
                        "constant_values")
        for d, ((lo, hi), (vlo, vhi)) in enumerate(zip(widths, values)):
            cfg = [(0, 0, 0)] * x.ndim
            cfg[d] = (lo, 0, 0)
            x = lax.pad(x, asarray(np.asarray(vlo, x.dtype)), cfg)
            cfg[d] = (0, hi, 0)
            x = lax.pad(x, asarray(np.asarray(vhi, x.dtype)), cfg)
        return x
    if mode not in _INDEX_MODES + _STAT_MODES + ("linear_ramp",):
        raise InvalidArgumentError(f"xnp.pad: unsupported mode {mode!r}")
    if reflect_type not in ("even", "odd"):
        raise InvalidArgumentError(f"xnp.pad: reflect_type must be 'even' or 'odd', got "
                                   f"{reflect_type!r}")
    stats = _pairs(stat_length, x.ndim, "stat_length", concrete=False) \
        if stat_length is not None else None
    ends = _pairs(end_values, x.ndim, "end_values", concrete=False)
    for d, (lo, hi) in enumerate(widths):
        if lo == hi == 0:
            continue
        n = x.shape[d]
        if n == 0:
            raise InvalidArgumentError(f"xnp.pad: cannot pad an empty axis {d} with mode "
                                       f"{mode!r}")
        if mode in _INDEX_MODES:
            idx = np.pad(np.arange(n), (lo, hi), mode=mode)
            y = _gather_runs(x, d, idx)
            if reflect_type == "odd" and mode in ("reflect", "symmetric"):
                y = _odd_reflect(x, y, d, lo, hi, n, mode)
            x = y
        elif mode == "linear_ramp":
            first, last = _axis_slice(x, d, 0, 1), _axis_slice(x, d, n - 1, n)
            parts = [_ramp(x, d, ends[d][0], first, lo, True)] if lo else []
            parts.append(x)
            if hi:
                parts.append(_ramp(x, d, ends[d][1], last, hi, False))
            x = lax.concatenate(parts, d)
        else:
            s_lo, s_hi = (n, n) if stats is None else stats[d]
            s_lo = n if s_lo is None else builtins.min(builtins.max(int(s_lo), 1), n)
            s_hi = n if s_hi is None else builtins.min(builtins.max(int(s_hi), 1), n)
            parts = [_repeat_along(_stat(x, d, mode, 0, s_lo), d, lo)] if lo else []
            parts.append(x)
            if hi:
                parts.append(_repeat_along(_stat(x, d, mode, n - s_hi, n), d, hi))
            x = lax.concatenate(parts, d)
    return x


def _odd_reflect(x: Array, y: Array, axis: int, lo: int, hi: int, n: int, mode: str) -> Array:
    """``reflect_type="odd"`` from the even reflection ``y``: NumPy's odd padding is linear
    in the input, ``s * even + a * first + b * last`` per output position (``s = +-1``,
    coefficients read off NumPy's padding of the unit vectors)."""
    m = np.stack([np.pad(np.eye(n)[k], (lo, hi), mode=mode, reflect_type="odd")
                  for k in range(n)], axis=1)                       # (padded length, n)
    j = np.pad(np.arange(n), (lo, hi), mode=mode)
    rows = np.arange(len(j))
    interior = (j != 0) & (j != n - 1)
    s = np.where(interior, m[rows, j], 1.0)
    a = m[:, 0] - s * (j == 0)
    b = m[:, n - 1] - s * (j == n - 1) if n > 1 else np.zeros(len(j))
    shape = [1] * x.ndim
    shape[axis] = len(j)
    dt = y.dtype if dtypes.is_inexact(y.dtype) else dtypes.DEFAULT_FLOAT
    first = lax.convert_element_type(_axis_slice(x, axis, 0, 1), dt)
    last = lax.convert_element_type(_axis_slice(x, axis, n - 1, n), dt)

    def coef(c: np.ndarray) -> Array:
        return broadcast_to(asarray(c.reshape(shape).astype(dt)), y.shape)
    out = lax.mul(coef(s), lax.convert_element_type(y, dt))
    out = lax.add(out, lax.mul(coef(a), broadcast_to(first, y.shape)))
    out = lax.add(out, lax.mul(coef(b), broadcast_to(last, y.shape)))
    return lax.convert_element_type(out, x.dtype, x.weak_type)
