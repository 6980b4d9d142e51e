"""Sorting and ops whose output shape depends on the data.

``sort``/``argsort`` lower to HLO ``sort`` with JAX's comparator (stable, ``-0.0`` ties
``+0.0``, NaNs of either sign last). ``unique``, ``nonzero``,
``argwhere``, ``flatnonzero`` and one-argument ``where`` have data-dependent result
shapes, and ``save``/``load`` are file I/O: under ``jit`` they raise
InvalidArgumentError naming the op and the user's line (must-compile semantics);
eagerly they run on the concrete NumPy values. Their results are integer indices, except
``unique``'s values, which are gathered from the input so that they stay differentiable.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..frontend import lax
from ..frontend.core import Array, current_trace
from ..frontend.source_info import raise_not_compilable
from ._elementwise import asarray
from ._indexing import take
from ._reductions import normalize_axis


def sort(a: Any, axis: int | None = -1, *, kind: Any = None, order: Any = None,
         stable: bool = True, descending: bool = False) -> Array:
    """JAX's ``jnp.sort``: ``-0.0`` and ``+0.0`` tie, NaNs go last (``lax.sort``);
    ``descending`` reverses the ascending result."""
    x = asarray(a)
    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    if x.ndim == 0:
        return x
    ax = normalize_axis(axis, x.ndim)
    out = lax.sort(x, ax, is_stable=bool(stable))
    return lax.rev(out, (ax,)) if descending else out


def argsort(a: Any, axis: int | None = -1, kind: Any = None, stable: bool = True, *,
            order: Any = None, descending: bool = False) -> Array:
    """JAX's ``jnp.argsort``; a stable ``descending`` sort keeps equal elements in their
    original order (the input and indices are reversed before sorting, as JAX does)."""
    x = asarray(a)
    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    if x.ndim == 0:
        return lax.convert_element_type(0, np.int32)
    ax = normalize_axis(axis, x.ndim)
    idx = lax.broadcasted_iota(np.int32, x.shape, ax)
    if descending and stable:
        x, idx = lax.rev(x, (ax,)), lax.rev(idx, (ax,))
    out = lax.sort([x, idx], ax, is_stable=bool(stable))[1]
    return lax.rev(out, (ax,)) if descending else out


def _concrete_input(op: str, x: Any, hint: str) -> np.ndarray:
    a = asarray(x)
    if a.is_traced:
        raise_not_compilable(op, "has a data-dependent output shape", hint)
    return np.asarray(a._value)


_SHAPE_HINT = ("compute it outside the compiled function, or use a fixed-size formulation "
               "such as xnp.where(cond, x, fill) or a size bound")


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None) -> Any:
    """NumPy's ``unique`` (eager only). The unique values are read from ``ar`` at the
    indices of their first occurrences (as JAX does), so gradients flow to those entries
    instead of being silently cut; the indices, inverse and counts are integers."""
    x = asarray(ar)
    v = _concrete_input("xnp.unique", x, _SHAPE_HINT)
    out = np.unique(v, True, return_inverse, return_counts, axis)
    index = asarray(out[1].astype(np.int32))
    if axis is None:
        values = take(lax.reshape(x, (x.size,)), index)
    else:
        values = take(x, index, axis=normalize_axis(axis, x.ndim))
    rest = [index] if return_index else []
    rest += [asarray(o) for o in out[2:]]
    return tuple([values] + rest) if rest else values


def nonzero(a: Any) -> tuple[Array, ...]:
    v = _concrete_input("xnp.nonzero", a, _SHAPE_HINT)
    return tuple(asarray(i.astype(np.int32)) for i in np.nonzero(v))


def argwhere(a: Any) -> Array:
    v = _concrete_input("xnp.argwhere", a, _SHAPE_HINT)
    return asarray(np.argwhere(v).astype(np.int32))


def flatnonzero(a: Any) -> Array:
    v = _concrete_input("xnp.flatnonzero", a, _SHAPE_HINT)
    return asarray(np.flatnonzero(v).astype(np.int32))


def _no_io(op: str) -> None:
    if current_trace() is not None:
        raise_not_compilable(op, "performs file I/O",
                             "read or write files outside the compiled function and pass "
                             "the arrays in as arguments")


def save(file: Any, arr: Any) -> None:
    _no_io("xnp.save")
    np.save(file, np.asarray(asarray(arr)))


def savez(file: Any, *args: Any, **kwds: Any) -> None:
    _no_io("xnp.savez")
    np.savez(file, *[np.asarray(asarray(a)) for a in args],
             **{k: np.asarray(asarray(v)) for k, v in kwds.items()})


def load(file: Any) -> Any:
    _no_io("xnp.load")
    data = np.load(file)
    if isinstance(data, np.ndarray):
        return asarray(data)
    return {k: asarray(data[k]) for k in data.files}


def loadtxt(fname: Any, dtype: Any = float, **kw: Any) -> Array:
    _no_io("xnp.loadtxt")
    return asarray(np.loadtxt(fname, dtype=dtype, **kw))
