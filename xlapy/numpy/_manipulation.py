"""Array manipulation: splitting, joining, inserting, rotating, index grids and helpers.

Positions that decide an output's shape (what ``delete``/``insert`` remove or add, the
mask of ``compress``/``extract``, ``trim_zeros``) must be compile-time values, as in JAX.
"""
from __future__ import annotations

import builtins
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import lax
from ..frontend.core import Array
from ..frontend.tracing import concrete_int, concrete_ints, concrete_value
from ._elementwise import asarray, broadcast_shapes, broadcast_to, promote, where
from ._indexing import take
from ._reductions import all as _all, normalize_axis
from ._shape_ops import (concatenate, expand_dims, flip, moveaxis, ravel, reshape, stack,
                         swapaxes, transpose)


def broadcast_arrays(*args: Any) -> list[Array]:
    """The arguments broadcast to one shape (dtypes kept)."""
    xs = [asarray(a) for a in args]
    shape = broadcast_shapes(*[x.shape for x in xs])
    return [broadcast_to(x, shape) for x in xs]


def permute_dims(a: Any, /, axes: Sequence[int]) -> Array:
    """The array API's name of ``transpose`` (``axes`` required)."""
    return transpose(a, axes)


def matrix_transpose(x: Any, /) -> Array:
    """Swap the last two axes (a batch of matrices' transpose)."""
    x = asarray(x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_transpose needs at least 2 dimensions, got {x.type_text()}")
    return swapaxes(x, -1, -2)


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Array:
    """The array API's name of ``concatenate``."""
    return concatenate(arrays, axis)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Array, ...]:
    """The slices of ``x`` along ``axis`` (the inverse of ``stack``)."""
    x = asarray(x)
    ax = normalize_axis(axis, x.ndim)
    return tuple(take(x, i, axis=ax) for i in range(x.shape[ax]))


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    """``split`` that allows unequal sections: the first ``n % k`` get one more."""
    x = asarray(ary)
    ax = normalize_axis(axis, x.ndim)
    if isinstance(indices_or_sections, (list, tuple, np.ndarray, Array)):
        cuts = [int(c) for c in np.ravel(concrete_value(indices_or_sections, "split index"))]
    else:
        k = concrete_int(indices_or_sections, "array_split sections")
        if k <= 0:
            raise InvalidArgumentError(f"array_split: number of sections must be > 0, got {k}")
        n = x.shape[ax]
        sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
        cuts = list(np.cumsum(sizes)[:-1])
    from ._shape_ops import split
    return split(x, cuts, ax)


def _split_along(min_ndim: int, axis: int, name: str) -> Callable[..., list[Array]]:
    def f(ary: Any, indices_or_sections: Any) -> list[Array]:
        x = asarray(ary)
        if x.ndim < min_ndim:
            raise ShapeError(f"{name} needs at least {min_ndim} dimensions, got {x.type_text()}")
        from ._shape_ops import split
        return split(x, indices_or_sections, 0 if x.ndim == 1 and name == "hsplit" else axis)
    f.__name__ = name
    f.__doc__ = f"``split`` along axis {axis} (NumPy's ``{name}``)."
    return f


hsplit = _split_along(1, 1, "hsplit")
vsplit = _split_along(2, 0, "vsplit")
dsplit = _split_along(3, 2, "dsplit")


def dstack(tup: Sequence[Any]) -> Array:
    """Stack along the third axis (1-D and 2-D inputs are made 3-D first)."""
    from ._array_extra import atleast_3d
    return concatenate([atleast_3d(a) for a in tup], 2)


def column_stack(tup: Sequence[Any]) -> Array:
    """1-D arrays as columns of a 2-D array; 2-D arrays joined along axis 1."""
    xs = [asarray(a) for a in tup]
    return concatenate([reshape(x, (-1, 1)) if x.ndim < 2 else x for x in xs], 1)


def block(arrays: Any) -> Array:
    """An array assembled from nested lists of blocks (NumPy's ``block``)."""
    def depth(a: Any) -> int:
        return 1 + depth(a[0]) if isinstance(a, list) and a else (1 if isinstance(a, list) else 0)
    d = depth(arrays)

    def ndim_of(a: Any) -> int:
        return builtins.max(ndim_of(e) for e in a) if isinstance(a, list) else asarray(a).ndim
    nd = builtins.max(ndim_of(arrays), d)

    def assemble(a: Any, level: int) -> Array:
        if not isinstance(a, list):
            x = asarray(a)
            return reshape(x, (1,) * (nd - x.ndim) + x.shape)
        if not a:
            raise InvalidArgumentError("block: lists cannot be empty")
        return concatenate([assemble(e, level + 1) for e in a], nd - d + level)
    return assemble(arrays, 0)


def append(arr: Any, values: Any, axis: int | None = None) -> Array:
    """``values`` appended after ``arr`` (flattened when ``axis`` is None)."""
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def _positions(obj: Any, n: int, what: str) -> np.ndarray:
    if isinstance(obj, slice):
        return np.arange(n)[obj]
    if isinstance(obj, (list, tuple)):
        raise InvalidArgumentError(f"{what} must be an array, a scalar or a slice, not a "
                                   f"Python {type(obj).__name__} (as in JAX: wrap it in "
                                   "xnp.array)")
    v = np.asarray(concrete_value(obj, what))
    if v.dtype == np.bool_:
        if v.shape != (n,):
            raise ShapeError(f"{what}: boolean mask of shape {v.shape} for an axis of {n}")
        return np.flatnonzero(v)
    if v.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{what} must be integers, a slice or a boolean mask")
    return v.astype(np.int64)


def delete(arr: Any, obj: Any, axis: int | None = None, *,
           assume_unique_indices: bool = False) -> Array:
    """``arr`` without the entries at ``obj`` (indices, a slice or a mask) along ``axis``."""
    x = asarray(arr)
    if axis is None:
        x, axis = ravel(x), 0
    ax = normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    pos = _positions(obj, n, "delete indices").reshape(-1)
    if ((pos < -n) | (pos >= n)).any():
        raise InvalidArgumentError(f"delete: index out of bounds for an axis of size {n}")
    keep = np.setdiff1d(np.arange(n), pos % n if n else pos)
    return take(x, asarray(keep.astype(np.int32)), axis=ax)


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Array:
    """``values`` inserted before the positions ``obj`` along ``axis`` (NumPy's rules)."""
    x = asarray(arr)
    if axis is None:
        x, axis = ravel(x), 0
    ax = normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    scalar_obj = not isinstance(obj, slice) and np.ndim(concrete_value(obj, "insert index")) == 0
    pos = _positions(obj, n + 1, "insert indices").reshape(-1)
    if ((pos < -n) | (pos > n)).any():
        raise InvalidArgumentError(f"insert: index out of bounds for an axis of size {n}")
    pos = np.where(pos < 0, pos + n, pos)
    v = asarray(values)
    v = v.astype(x.dtype) if v.dtype != x.dtype else v
    shape = list(x.shape)
    if scalar_obj:
        v = moveaxis(reshape(v, (1,) * (x.ndim - v.ndim) + v.shape), 0, ax)
        shape[ax] = v.shape[ax]
        pos = np.full(shape[ax], pos[0])
    else:
        shape[ax] = len(pos)
    v = broadcast_to(v, tuple(shape))
    order = np.argsort(pos, kind="stable")
    new_pos = pos[order] + np.arange(len(pos))
    total = n + len(pos)
    old_pos = np.setdiff1d(np.arange(total), new_pos)
    src = np.empty(total, np.int64)
    src[old_pos] = np.arange(n)
    src[new_pos] = n + order
    return take(concatenate([x, v], ax), asarray(src.astype(np.int32)), axis=ax)


def fliplr(m: Any) -> Array:
    """Reverse the columns (axis 1)."""
    return flip(m, 1)


def flipud(m: Any) -> Array:
    """Reverse the rows (axis 0)."""
    return flip(m, 0)


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Array:
    """Rotate by 90 degrees ``k`` times in the plane of ``axes`` (first towards second)."""
    x = asarray(m)
    a0, a1 = (normalize_axis(a, x.ndim) for a in axes)
    if a0 == a1:
        raise InvalidArgumentError("rot90: axes must be different")
    k = concrete_int(k, "rot90 k") % 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a0), a1)
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(x, a1), perm) if k == 1 else flip(transpose(x, perm), a1)


def rollaxis(a: Any, axis: int, start: int = 0) -> Array:
    """Move ``axis`` to before position ``start`` (NumPy's older ``moveaxis``)."""
    x = asarray(a)
    ax = normalize_axis(axis, x.ndim)
    start = start + x.ndim if start < 0 else start
    if not 0 <= start <= x.ndim:
        raise InvalidArgumentError(f"rollaxis: start {start} out of range for {x.ndim} dims")
    if ax < start:
        start -= 1
    return moveaxis(x, ax, start)


def resize(a: Any, new_shape: Any) -> Array:
    """``a``'s elements repeated cyclically to fill ``new_shape``."""
    x = ravel(a)
    shape = concrete_ints(new_shape, "resize shape") if np.ndim(new_shape) else \
        (concrete_int(new_shape, "resize shape"),)
    total = int(np.prod(shape))
    if x.size == 0:
        return reshape(broadcast_to(asarray(0).astype(x.dtype), (total,)), shape)
    reps = -(-total // x.size)
    from ._shape_ops import tile
    return reshape(tile(x, reps)[:total], shape)


def trim_zeros(filt: Any, trim: str = "fb") -> Array:
    """A 1-D array without its leading (``"f"``) and/or trailing (``"b"``) zeros."""
    v = np.asarray(concrete_value(filt, "trim_zeros input"))
    nz = np.flatnonzero(v)
    lo = (nz[0] if nz.size else v.size) if "f" in trim.lower() else 0
    hi = (nz[-1] + 1 if nz.size else 0) if "b" in trim.lower() else v.size
    return asarray(filt)[lo:builtins.max(hi, lo)]


def diagflat(v: Any, k: int = 0) -> Array:
    """A 2-D array with the flattened ``v`` on diagonal ``k``."""
    from ._array_extra import diag
    return diag(ravel(v), k)


def copy(a: Any, order: Any = None) -> Array:
    """A copy of ``a`` (Arrays are immutable: the same values)."""
    return asarray(a)


def choose(a: Any, choices: Sequence[Any], out: None = None, mode: str = "raise") -> Array:
    """``choices[a[i]][i]`` for every ``i`` (``mode``: ``raise`` needs a concrete ``a``,
    ``wrap``, ``clip``)."""
    if out is not None:
        raise InvalidArgumentError("choose: out is not supported (arrays are immutable)")
    idx = asarray(a)
    n = len(choices)
    if mode == "raise":
        v = concrete_value(idx, "choose index (mode='raise'; use 'wrap' or 'clip' in jit)")
        if ((v < 0) | (v >= n)).any():
            raise InvalidArgumentError(f"choose: index out of range for {n} choices")
    elif mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = idx.clip(0, n - 1)
    else:
        raise InvalidArgumentError(f"choose: mode must be raise, wrap or clip, got {mode!r}")
    arrs = broadcast_arrays(idx, *choices)
    idx, cs = arrs[0], promote(*arrs[1:])
    return select([idx == i for i in range(n)], cs, cs[0])


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Array:
    """From the first true condition's choice, element by element; ``default`` where none."""
    if len(condlist) != len(choicelist):
        raise InvalidArgumentError("select: condlist and choicelist must have the same length")
    if not condlist:
        raise InvalidArgumentError("select: condlist must be non-empty")
    out = asarray(default)
    for c, v in reversed(list(zip(condlist, choicelist))):
        c = asarray(c)
        if c.dtype != np.bool_:
            raise InvalidArgumentError(f"select: conditions must be boolean, got {c.dtype}")
        out = where(c, v, out)
    return out


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Array:
    """``funclist[i](x)`` where ``condlist[i]`` (the last condition wins); one more function
    than conditions is the default; constants are allowed in place of functions."""
    x = asarray(x)
    conds = [asarray(c) for c in (condlist if isinstance(condlist, (list, tuple))
                                  or asarray(condlist).ndim > x.ndim else [condlist])]
    if len(funclist) == len(conds) + 1:
        from ._reductions import any as _any
        rest = ~_any(stack([broadcast_to(c, x.shape) for c in conds]), axis=0) if conds \
            else broadcast_to(asarray(True), x.shape)
        conds.append(rest)
    elif len(funclist) != len(conds):
        raise InvalidArgumentError("piecewise: need one function per condition (or one more)")
    out = broadcast_to(asarray(0).astype(x.dtype), x.shape)
    for c, f in zip(conds, funclist):
        val = f(x, *args, **kw) if callable(f) else f
        out = where(c, asarray(val).astype(x.dtype), out)
    return out


def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None,
             fill_value: Any = 0) -> Array:
    """The slices of ``a`` along ``axis`` where ``condition`` is true."""
    c = np.asarray(concrete_value(condition, "compress condition"), bool).reshape(-1)
    x = asarray(a)
    if axis is None:
        x, axis = ravel(x), 0
    ax = normalize_axis(axis, x.ndim)
    idx = np.flatnonzero(c[:x.shape[ax]])
    out = take(x, asarray(idx.astype(np.int32)), axis=ax)
    if size is not None:
        pad = size - len(idx)
        if pad < 0:
            out = take(out, asarray(np.arange(size, dtype=np.int32)), axis=ax)
        elif pad:
            shape = list(out.shape)
            shape[ax] = pad
            out = concatenate([out, broadcast_to(asarray(fill_value).astype(x.dtype),
                                                 tuple(shape))], ax)
    return out


def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Array:
    """The elements of ``arr`` where ``condition`` is true, flattened."""
    return compress(ravel(condition), ravel(arr), size=size, fill_value=fill_value)


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Array:
    """``arr`` with the masked positions set to ``vals`` in order (cycled); returns the
    new array (``inplace=False`` is required: Arrays are immutable)."""
    if inplace:
        raise InvalidArgumentError("place: Arrays are immutable; pass inplace=False and use "
                                   "the result")
    x = asarray(arr)
    m = np.asarray(concrete_value(mask, "place mask"), bool)
    pos = np.flatnonzero(np.broadcast_to(m, x.shape))
    if pos.size == 0:
        return x
    v = ravel(vals)
    src = asarray((np.arange(pos.size) % v.size).astype(np.int32))
    flat = ravel(x).at[asarray(pos.astype(np.int32))].set(take(v, src).astype(x.dtype))
    return reshape(flat, x.shape)


def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True) -> Array:
    """``a`` with the flat positions ``ind`` set to ``v`` (cycled); returns the new array
    (``inplace=False`` is required)."""
    if inplace:
        raise InvalidArgumentError("put: Arrays are immutable; pass inplace=False and use "
                                   "the result")
    x = asarray(a)
    idx = ravel(ind)
    if mode == "wrap":
        idx = idx % x.size
    elif mode == "clip":
        idx = idx.clip(0, x.size - 1)
    vals = ravel(v)
    vals = take(vals, asarray(np.arange(idx.size, dtype=np.int32) % builtins.max(vals.size, 1)))
    return reshape(ravel(x).at[idx].set(vals.astype(x.dtype)), x.shape)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Array:
    """``a`` with its main diagonal set to ``val`` (cycled); returns the new array
    (``inplace=False`` is required)."""
    if inplace:
        raise InvalidArgumentError("fill_diagonal: Arrays are immutable; pass inplace=False "
                                   "and use the result")
    x = asarray(a)
    if x.ndim < 2 or (x.ndim > 2 and len(set(x.shape)) != 1):
        raise ShapeError(f"fill_diagonal needs a 2-D array or equal dims, got {x.type_text()}")
    if x.ndim == 2:
        step = x.shape[1] + 1
        end = x.size if wrap else builtins.min(x.shape[1] * x.shape[1], x.size)
    else:
        step = int(np.sum(np.cumprod((1,) + x.shape[:-1])))
        end = x.size
    pos = np.arange(0, end, step)
    v = ravel(val)
    vals = take(v, asarray((np.arange(pos.size) % v.size).astype(np.int32)))
    return reshape(ravel(x).at[asarray(pos.astype(np.int32))].set(vals.astype(x.dtype)),
                   x.shape)


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Array:
    """Whether the shapes match and every element is equal (NaNs equal with ``equal_nan``)."""
    x, y = asarray(a1), asarray(a2)
    if x.shape != y.shape:
        return asarray(False)
    eq = x == y
    if equal_nan:
        eq = eq | ((x != x) & (y != y))
    return _all(eq)


def array_equiv(a1: Any, a2: Any) -> Array:
    """Whether the arrays are equal after broadcasting (False if they cannot broadcast)."""
    x, y = asarray(a1), asarray(a2)
    try:
        broadcast_shapes(x.shape, y.shape)
    except ShapeError:
        return asarray(False)
    return _all(x == y)


def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: Any, *args: Any,
                     **kwargs: Any) -> Array:
    """``func1d`` applied to every 1-D slice along ``axis`` (traced once per slice)."""
    x = asarray(arr)
    ax = normalize_axis(axis, x.ndim)
    moved = moveaxis(x, ax, -1)
    batch = moved.shape[:-1]
    flat = reshape(moved, (-1, x.shape[ax]))
    outs = [asarray(func1d(flat[i], *args, **kwargs)) for i in range(flat.shape[0])]
    if not outs:
        raise InvalidArgumentError("apply_along_axis: cannot apply to an empty array")
    res = reshape(stack(outs), batch + outs[0].shape)
    nd = outs[0].ndim
    return moveaxis(res, tuple(range(len(batch), len(batch) + nd)),
                    tuple(range(ax, ax + nd))) if nd else res


def apply_over_axes(func: Callable[[Array, int], Any], a: Any, axes: Sequence[int]) -> Array:
    """``func(a, axis)`` for each axis in turn, keeping the dimension of reductions."""
    x = asarray(a)
    for ax in concrete_ints(axes, "apply_over_axes axes") if np.ndim(axes) else (int(axes),):
        ax = normalize_axis(ax, x.ndim)
        y = asarray(func(x, ax))
        if y.ndim == x.ndim - 1:
            y = expand_dims(y, ax)
        elif y.ndim != x.ndim:
            raise ShapeError("apply_over_axes: function is not returning an array of the "
                             "correct shape")
        x = y
    return x

