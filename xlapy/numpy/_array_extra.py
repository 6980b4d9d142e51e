"""Array functions built from other ops: triangles and diagonals, ``roll``, ``diff``,
``cross``, ``kron``, ``meshgrid``, ``searchsorted``/``digitize``/``interp``, ``histogram`` ...

Everything here composes ``lax`` ops (slices, selects, gathers, scatters), so gradients
come from those primitives' rules. Sizes, axes, offsets and bin counts are compile-time
values (a traced jit argument there makes jit specialize on its value).
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import dtypes
from ..frontend import lax
from ..frontend.core import Array
from ..frontend.source_info import raise_not_compilable
from ..frontend.tracing import concrete_int, concrete_ints
from ._elementwise import _const, asarray, broadcast_shapes, broadcast_to, promote
from ._reductions import normalize_axis


def _axis_slice(x: Array, axis: int, lo: int, hi: int) -> Array:
    start, limit = [0] * x.ndim, list(x.shape)
    start[axis], limit[axis] = lo, hi
    return lax.slice(x, start, limit)


def _moveaxes_last(x: Array, axes: Sequence[int]) -> Array:
    rest = [d for d in range(x.ndim) if d not in axes]
    return lax.transpose(x, rest + list(axes))


# ------------------------------------------------------------------- triangles, diagonals
def _tri_mask(shape: tuple[int, ...], k: int, lower: bool) -> Array:
    rows = lax.broadcasted_iota(np.int32, shape, len(shape) - 2)
    cols = lax.broadcasted_iota(np.int32, shape, len(shape) - 1)
    shifted = lax.add(rows, _const(k, rows))
    return lax.le(cols, shifted) if lower else lax.ge(cols, shifted)


def _tri_select(m: Any, k: Any, lower: bool, name: str) -> Array:
    x = asarray(m)
    if x.ndim < 2:
        raise InvalidArgumentError(f"xnp.{name}: argument must be at least 2-D, got "
                                   f"{x.type_text()} (as JAX)")
    mask = _tri_mask(x.shape, concrete_int(k, f"{name} k"), lower)
    return lax.select(mask, x, _const(0, x))


def tril(m: Any, k: int = 0) -> Array:
    """Like numpy.tril (on the last two axes; at least 2-D, as JAX)."""
    return _tri_select(m, k, True, "tril")


def triu(m: Any, k: int = 0) -> Array:
    """Like numpy.triu (on the last two axes; at least 2-D, as JAX)."""
    return _tri_select(m, k, False, "triu")


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Array:
    """Like numpy.tri (``float32`` by default)."""
    n = concrete_int(N, "tri N")
    m = n if M is None else concrete_int(M, "tri M")
    mask = _tri_mask((n, m), concrete_int(k, "tri k"), True)
    return lax.convert_element_type(mask, dtypes.DEFAULT_FLOAT if dtype is None else dtype)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """Like numpy.diagonal: the diagonal becomes the last axis. Lowered without a gather:
    the (rows, cols) block is flattened, padded to rows*(cols+1) and reshaped, which puts
    the diagonal in the first column."""
    x = asarray(a)
    if x.ndim < 2:
        raise InvalidArgumentError("xnp.diagonal: the array must be at least 2-D")
    a1, a2 = normalize_axis(axis1, x.ndim), normalize_axis(axis2, x.ndim)
    if a1 == a2:
        raise InvalidArgumentError("xnp.diagonal: axis1 and axis2 cannot be the same")
    k = concrete_int(offset, "diagonal offset")
    y = _moveaxes_last(x, [a1, a2])
    m, n = y.shape[-2:]
    if k >= 0:
        y = _axis_slice(y, y.ndim - 1, builtins.min(k, n), n)
    else:
        y = _axis_slice(y, y.ndim - 2, builtins.min(-k, m), m)
    r = builtins.min(y.shape[-2:])
    batch = y.shape[:-2]
    if r == 0:
        return lax.full_like(y, 0, shape=batch + (0,))
    y = _axis_slice(y, y.ndim - 2, 0, r)
    c = y.shape[-1]
    flat = lax.reshape(y, batch + (r * c,))
    flat = lax.pad(flat, asarray(np.zeros((), flat.dtype)), [(0, 0, 0)] * len(batch) + [(0, r, 0)])
    rows = lax.reshape(flat, batch + (r, c + 1))
    return lax.reshape(_axis_slice(rows, rows.ndim - 1, 0, 1), batch + (r,))


def diag(v: Any, k: int = 0) -> Array:
    """Like numpy.diag: a 1-D ``v`` gives a square matrix with ``v`` on diagonal ``k``, a
    2-D one its ``k``-th diagonal."""
    x = asarray(v)
    k = concrete_int(k, "diag k")
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise InvalidArgumentError(f"xnp.diag: input must be 1-D or 2-D, got {x.type_text()}")
    n = x.shape[0]
    eye = _tri_mask((n, n), 0, True)
    eye = lax.bitwise_and(eye, _tri_mask((n, n), 0, False))
    b = lax.broadcast_in_dim(x, (n, n), (0,))
    mat = lax.select(eye, b, _const(0, b))
    a = builtins.abs(k)
    cfg = [(0, a, 0), (a, 0, 0)] if k >= 0 else [(a, 0, 0), (0, a, 0)]
    return lax.pad(mat, asarray(np.zeros((), x.dtype)), cfg)


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Array:
    """Like numpy.trace (sum of ``diagonal``, accumulated like ``sum``)."""
    from ._reductions import sum as _sum
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


# ---------------------------------------------------------------------------- rearranging
def roll(a: Any, shift: Any, axis: Any = None) -> Array:
    """Like numpy.roll; a traced ``shift`` (one axis) lowers to a dynamic-slice."""
    x = asarray(a)
    if axis is None:
        return lax.reshape(roll(lax.reshape(x, (x.size,)), shift, 0), x.shape)
    if isinstance(shift, Array) and shift.is_traced:
        if shift.ndim != 0 or isinstance(axis, (tuple, list)):
            raise InvalidArgumentError("xnp.roll: a traced shift must be one scalar for one axis")
        ax = normalize_axis(axis, x.ndim)
        n = x.shape[ax]
        if n == 0:
            return x
        from ._elementwise import remainder
        s = remainder(lax.convert_element_type(shift, np.int32), np.int32(n))
        start = lax.sub(_const(n, s), s)
        doubled = lax.concatenate([x, x], ax)
        idx = [lax.convert_element_type(0, np.int32)] * x.ndim
        idx[ax] = start
        return lax.dynamic_slice(doubled, idx, x.shape)
    shifts = concrete_ints(shift, "roll shift")
    axes = concrete_ints(axis, "roll axis")
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise InvalidArgumentError("xnp.roll: shift and axis must have the same length")
    for s, ax in zip(shifts, axes):
        ax = normalize_axis(ax, x.ndim)
        n = x.shape[ax]
        if n == 0 or s % n == 0:
            continue
        s %= n
        x = lax.concatenate([_axis_slice(x, ax, n - s, n), _axis_slice(x, ax, 0, n - s)], ax)
    return x


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None,
                   inplace: bool = True, *, mode: Any = None) -> Array:
    """Like numpy.put_along_axis, functionally (JAX): pass ``inplace=False``; returns the
    updated array. Out-of-range indices are dropped (``mode="clip"`` clamps them)."""
    if inplace:
        raise InvalidArgumentError("xnp.put_along_axis: xlapy arrays are immutable; pass "
                                   "inplace=False and use the returned array")
    from ._indexing import _raw_index, scatter_update
    x = asarray(arr)
    i = _raw_index(indices)
    if axis is None:
        flat = put_along_axis(lax.reshape(x, (x.size,)), lax.reshape(i, (i.size,)),
                              values, 0, False, mode=mode)
        return lax.reshape(flat, x.shape)
    ax = normalize_axis(axis, x.ndim)
    if i.ndim != x.ndim:
        raise InvalidArgumentError(f"put_along_axis: indices of rank {i.ndim} for an array of "
                                   f"rank {x.ndim}")
    ishape = tuple(x.shape[d] if d != ax else i.shape[ax] for d in range(x.ndim))
    i = broadcast_to(i, broadcast_shapes(ishape, i.shape))
    items = tuple(i if d == ax else lax.broadcasted_iota(np.int32, i.shape, d)
                  for d in range(x.ndim))
    return scatter_update(x, items, values, "set", mode)


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False,
             indexing: str = "xy") -> list[Array]:
    """Like numpy.meshgrid."""
    if indexing not in ("xy", "ij"):
        raise InvalidArgumentError(f"xnp.meshgrid: indexing must be 'xy' or 'ij', got "
                                   f"{indexing!r}")
    xs = [lax.reshape(asarray(v), (asarray(v).size,)) for v in xi]
    n = len(xs)
    out_shape = [v.shape[0] for v in xs]
    if indexing == "xy" and n > 1:
        out_shape[0], out_shape[1] = out_shape[1], out_shape[0]
    out = []
    for i, v in enumerate(xs):
        d = i
        if indexing == "xy" and n > 1 and i < 2:
            d = 1 - i
        if sparse:
            shape = [1] * n
            shape[d] = v.shape[0]
            out.append(lax.reshape(v, shape))
        else:
            out.append(lax.broadcast_in_dim(v, tuple(out_shape), (d,)))
    return out


def _atleast(arys: tuple, ndim: int) -> Any:
    out = []
    for a in arys:
        x = asarray(a)
        if x.ndim < ndim:
            if ndim == 3 and x.ndim == 2:
                shape = x.shape + (1,)
            elif ndim == 3 and x.ndim == 1:
                shape = (1,) + x.shape + (1,)
            else:
                shape = (1,) * (ndim - x.ndim) + x.shape
            x = lax.reshape(x, shape)
        out.append(x)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys: Any) -> Any:
    """Like numpy.atleast_1d (a list for several arguments)."""
    return _atleast(arys, 1)


def atleast_2d(*arys: Any) -> Any:
    """Like numpy.atleast_2d (a list for several arguments)."""
    return _atleast(arys, 2)


def atleast_3d(*arys: Any) -> Any:
    """Like numpy.atleast_3d: ``(n,)`` becomes ``(1, n, 1)``, ``(m, n)`` ``(m, n, 1)``."""
    return _atleast(arys, 3)


# -------------------------------------------------------------------------- differences
def _diff_once(x: Array, axis: int) -> Array:
    n = x.shape[axis]
    hi, lo = _axis_slice(x, axis, 1, n), _axis_slice(x, axis, 0, builtins.max(n - 1, 0))
    if x.dtype == np.bool_:
        return lax.ne(hi, lo)
    return lax.sub(hi, lo)


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Array:
    """Like numpy.diff (``!=`` for bool arrays)."""
    x = asarray(a)
    if x.ndim == 0:
        raise InvalidArgumentError("xnp.diff requires an input of at least one dimension")
    ax = normalize_axis(axis, x.ndim)
    n = concrete_int(n, "diff n")
    if n < 0:
        raise InvalidArgumentError(f"xnp.diff: order must be non-negative, got {n}")
    parts = []
    for extra, where in ((prepend, 0), (append, 1)):
        if extra is None:
            continue
        e = asarray(extra)
        if e.ndim == 0:
            shape = list(x.shape)
            shape[ax] = 1
            e = broadcast_to(e, tuple(shape))
        parts.append((where, e))
    if parts:
        from ._shape_ops import _promote_only
        pieces = [e for w, e in parts if w == 0] + [x] + [e for w, e in parts if w == 1]
        x = lax.concatenate(_promote_only(pieces), ax)
    for _ in range(n):
        x = _diff_once(x, ax)
    return x


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Array:
    """Like numpy.ediff1d (``to_begin``/``to_end`` are cast to ``ary``'s dtype)."""
    x = asarray(ary)
    x = lax.reshape(x, (x.size,))
    out = [_diff_once(x, 0)] if x.size else [x]
    if to_begin is not None:
        b = asarray(to_begin)
        out.insert(0, lax.convert_element_type(lax.reshape(b, (b.size,)), x.dtype, x.weak_type))
    if to_end is not None:
        e = asarray(to_end)
        out.append(lax.convert_element_type(lax.reshape(e, (e.size,)), x.dtype, x.weak_type))
    return lax.concatenate([lax.convert_element_type(o, x.dtype, x.weak_type) for o in out], 0)


# ----------------------------------------------------------------------------- products
def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Array:
    """Like numpy.cross for 2- and 3-vectors (2 x 2 gives the z component only)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = asarray(a), asarray(b)
    x = _moveaxes_last(x, [normalize_axis(axisa, x.ndim)])
    y = _moveaxes_last(y, [normalize_axis(axisb, y.ndim)])
    if x.shape[-1] not in (2, 3) or y.shape[-1] not in (2, 3):
        raise ShapeError("xnp.cross: incompatible dimensions for cross product (dimension "
                         "must be 2 or 3)")
    from ._elementwise import multiply, subtract

    def comp(v: Array, i: int) -> Any:
        return v[..., i] if i < v.shape[-1] else 0
    x0, x1, x2 = (comp(x, i) for i in range(3))
    y0, y1, y2 = (comp(y, i) for i in range(3))
    cz = subtract(multiply(x0, y1), multiply(x1, y0))
    if x.shape[-1] == 2 and y.shape[-1] == 2:
        return cz
    cx = subtract(multiply(x1, y2), multiply(x2, y1))
    cy = subtract(multiply(x2, y0), multiply(x0, y2))
    from ._shape_ops import stack
    out = stack(promote(cx, cy, cz), axis=-1)
    return lax.transpose(out, _move_last_to(out.ndim, normalize_axis(axisc, out.ndim)))


def _move_last_to(ndim: int, dest: int) -> list[int]:
    order = list(range(ndim - 1))
    order.insert(dest, ndim - 1)
    return order


def kron(a: Any, b: Any) -> Array:
    """Like numpy.kron."""
    from ._shape_ops import _promote_only
    x, y = _promote_only([a, b])
    nd = builtins.max(x.ndim, y.ndim)
    x = lax.reshape(x, (1,) * (nd - x.ndim) + x.shape)
    y = lax.reshape(y, (1,) * (nd - y.ndim) + y.shape)
    inter = [v for p, q in zip(x.shape, y.shape) for v in (p, q)]
    xb = lax.broadcast_in_dim(x, inter, tuple(range(0, 2 * nd, 2)))
    yb = lax.broadcast_in_dim(y, inter, tuple(range(1, 2 * nd, 2)))
    return lax.reshape(lax.mul(xb, yb), [p * q for p, q in zip(x.shape, y.shape)])


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Array:
    """Like numpy.vander (powers by a running product: exact for integers)."""
    v = asarray(x)
    if v.ndim != 1:
        raise InvalidArgumentError("xnp.vander: x must be a one-dimensional array")
    n = v.shape[0] if N is None else concrete_int(N, "vander N")
    if n == 0:
        return lax.full_like(v, 0, shape=(v.shape[0], 0))
    ones = lax.full_like(v, 1, shape=(v.shape[0], 1))
    cols = [ones] + [lax.reshape(v, (v.shape[0], 1))] * (n - 1)
    out = lax.cumulative("prod", lax.concatenate(cols, 1), 1)
    return out if increasing else lax.rev(out, (1,))


# -------------------------------------------------------------------- sorted searching
def _lt(p: Array, q: Array) -> Array:
    """``p < q`` in NumPy's sort order (NaN after everything)."""
    if not dtypes.is_float(p.dtype):
        return lax.lt(p, q)
    return lax.bitwise_or(lax.lt(p, q), lax.bitwise_and(lax.ne(q, q), lax.eq(p, p)))


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None,
                 method: str = "scan") -> Array:
    """Like numpy.searchsorted (``int32`` positions), by an unrolled binary search of
    ``ceil(log2(len(a) + 1))`` steps; NaNs sort last, as in NumPy. ``method`` is accepted
    for JAX compatibility and ignored."""
    if side not in ("left", "right"):
        raise InvalidArgumentError(f"xnp.searchsorted: side must be 'left' or 'right', got "
                                   f"{side!r}")
    from ._shape_ops import _promote_only
    x, q = _promote_only([a, v])
    if x.ndim != 1:
        raise InvalidArgumentError("xnp.searchsorted: a must be one-dimensional")
    if sorter is not None:
        from ._indexing import take
        x = take(x, sorter, mode="clip")
    n = x.shape[0]
    lo = lax.full_like(q, 0, dtype=np.int32)
    hi = lax.full_like(q, n, dtype=np.int32)
    if n == 0:
        return lo
    from ._indexing import take
    for _ in range(int(np.ceil(np.log2(n + 1)))):
        active = lax.lt(lo, hi)
        mid = lax.shift_right_logical(lax.add(lo, hi), _const(1, lo))
        am = take(x, lax.min(mid, _const(n - 1, mid)), mode="clip")
        right = _lt(am, q) if side == "left" else lax.bitwise_not(_lt(q, am))
        lo = lax.select(lax.bitwise_and(active, right), lax.add(mid, _const(1, mid)), lo)
        hi = lax.select(lax.bitwise_and(active, lax.bitwise_not(right)), mid, hi)
    return lo


def digitize(x: Any, bins: Any, right: bool = False) -> Array:
    """Like numpy.digitize for monotonic ``bins`` (direction decided at run time when
    ``bins`` is traced)."""
    b = asarray(bins)
    if b.ndim != 1:
        raise InvalidArgumentError("xnp.digitize: bins must be one-dimensional")
    side = "left" if right else "right"
    n = b.shape[0]
    if n == 0:
        return lax.full_like(asarray(x), 0, dtype=np.int32)
    up = searchsorted(b, x, side=side)
    down = lax.sub(lax.full_like(up, n), searchsorted(lax.rev(b, (0,)), x, side=side))
    if not b.is_traced:
        vals = np.asarray(b._value)
        return up if vals[-1] >= vals[0] else down
    increasing = lax.ge(b[n - 1], b[0])
    return lax.select(lax.broadcast_in_dim(increasing, up.shape, ()), up, down)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Array:
    """Like numpy.interp (JAX's formulation; ``xp`` must be increasing unless ``period``)."""
    from ._elementwise import abs as _abs, remainder, where
    from ._indexing import take
    from ._shape_ops import concatenate
    xs = promote(asarray(x), to_inexact=True)[0]
    xps = promote(asarray(xp), to_inexact=True)[0]
    fps = asarray(fp)
    if not dtypes.is_inexact(fps.dtype):
        fps = promote(fps, to_inexact=True)[0]
    if xps.ndim != 1 or fps.ndim != 1 or xps.shape != fps.shape:
        raise ShapeError("xnp.interp: xp and fp must be one-dimensional and of equal length")
    if period is not None:
        p = _abs(asarray(period))
        xs = remainder(xs, p)
        xps = remainder(xps, p)
        from ._sorting import argsort
        order = argsort(xps)
        xps, fps = take(xps, order, mode="clip"), take(fps, order, mode="clip")
        xps = concatenate([xps[-1:] - p, xps, xps[:1] + p])
        fps = concatenate([fps[-1:], fps, fps[:1]])
    n = xps.shape[0]
    i = lax.clamp(np.int32(1), searchsorted(xps, xs, side="right"),
                  np.int32(builtins.max(n - 1, 1)))
    im1 = lax.sub(i, _const(1, i))
    xi, xim1 = take(xps, i, mode="clip"), take(xps, im1, mode="clip")
    fi, fim1 = take(fps, i, mode="clip"), take(fps, im1, mode="clip")
    df, dx, delta = fi - fim1, xi - xim1, xs - xim1
    eps = float(np.spacing(dtypes.finfo(dx.dtype).eps))
    dx0 = _abs(dx) <= eps
    f = where(dx0, fim1, fim1 + (delta / where(dx0, 1, dx)) * df)
    if period is None:
        f = where(xs < xps[0], fps[0] if left is None else left, f)
        f = where(xs > xps[n - 1], fps[n - 1] if right is None else right, f)
    return f


def bincount(x: Any, weights: Any = None, minlength: int = 0, *,
             length: int | None = None) -> Array:
    """Like numpy.bincount for 1-D ``x``; under jit pass a static ``length`` (the result's
    size depends on the data otherwise). As in JAX, negative values count in bin 0 and
    values ``>= length`` are dropped (NumPy raises for negative values)."""
    xi = asarray(x)
    if xi.dtype.kind not in "iub" or xi.ndim != 1:
        raise InvalidArgumentError(f"xnp.bincount: x must be a 1-D integer array, got "
                                   f"{xi.type_text()}")
    if xi.dtype == np.bool_:
        xi = lax.convert_element_type(xi, np.int32)
    minlength = concrete_int(minlength, "bincount minlength")
    if length is None:
        if xi.is_traced:
            raise_not_compilable("xnp.bincount without length=", "has a data-dependent "
                                 "output shape", "pass a static length=")
        vals = np.asarray(xi._value)
        length = builtins.max(minlength, int(vals.max()) + 1 if vals.size else 0)
    length = concrete_int(length, "bincount length")
    w = lax.full_like(xi, 1, dtype=np.int32) if weights is None else asarray(weights)
    zeros = lax.full_like(w, 0, shape=(length,))
    from ._indexing import scatter_update
    return scatter_update(zeros, lax.max(xi, _const(0, xi)), broadcast_to(w, xi.shape), "add")


def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None,
              density: bool | None = None) -> tuple[Array, Array]:
    """Like numpy.histogram with a static bin count or explicit edges; counts are floats
    (JAX, NumPy gives integers). Values outside the range are ignored."""
    x = promote(asarray(a), to_inexact=True)[0]
    x = lax.reshape(x, (x.size,))
    from ._shape_ops import linspace
    if isinstance(bins, (int, np.integer)) or (isinstance(bins, Array) and bins.ndim == 0):
        nb = concrete_int(bins, "histogram bins")
        if range is None:
            lo, hi = lax.reduce_min(x, (0,)), lax.reduce_max(x, (0,))
        else:
            lo, hi = (lax.convert_element_type(asarray(v), x.dtype) for v in range)
        same = lax.eq(lo, hi)
        lo = lax.select(same, lax.sub(lo, _const(0.5, lo)), lo)
        hi = lax.select(same, lax.add(hi, _const(0.5, hi)), hi)
        edges = linspace(lo, hi, nb + 1)
    else:
        edges = promote(asarray(bins), to_inexact=True)[0]
        edges = lax.convert_element_type(edges, x.dtype)
    n = edges.shape[0]
    w = lax.full_like(x, 1) if weights is None else lax.reshape(
        promote(asarray(weights), to_inexact=True)[0], (x.size,))
    idx = searchsorted(edges, x, side="right")
    last = lax.broadcast_in_dim(edges[n - 1], x.shape, ())
    idx = lax.select(lax.eq(x, last), lax.full_like(idx, n - 1), idx)
    from ._indexing import scatter_update
    counts = scatter_update(lax.full_like(w, 0, shape=(n,)), idx, w, "add")
    counts = counts[1:]
    if density:
        widths = lax.sub(edges[1:], edges[:n - 1])
        total = lax.reduce_sum(counts, (0,))
        counts = lax.div(counts, lax.mul(lax.broadcast_in_dim(total, counts.shape, ()), widths))
    return counts, edges


__all__ = ["tril", "triu", "tri", "diagonal", "diag", "trace", "roll", "put_along_axis",
           "meshgrid", "atleast_1d", "atleast_2d", "atleast_3d", "diff", "ediff1d", "cross",
           "kron", "vander", "searchsorted", "digitize", "interp", "bincount", "histogram"]
