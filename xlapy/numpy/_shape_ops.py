"""Array creation and shape manipulation (reshape, transpose, concatenate, pad, tile ...).

Sizes, shapes and axes must be compile-time values: inside ``jit`` a traced argument in
such a position makes jit specialize on its value (see ``xlapy.frontend.tracing``).
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes
from ..frontend import lax
from ..frontend.core import Array
from ..frontend.tracing import concrete_int, concrete_ints, concrete_value
from ._elementwise import asarray, promote
from ._elementwise import broadcast_to as _broadcast_to
from ._reductions import normalize_axis


def _shape(shape: Any, what: str = "shape") -> tuple[int, ...]:
    if isinstance(shape, (list, tuple)):
        return tuple(concrete_int(s, f"{what} entry") for s in shape)
    v = concrete_value(shape, what)
    return tuple(int(s) for s in np.atleast_1d(v))


def _dtype(dtype: Any, default: Any) -> np.dtype:
    return dtypes.canonicalize(default if dtype is None else dtype)


def broadcast_to(a: Any, shape: Any) -> Array:
    """NumPy's ``broadcast_to``; ``shape`` is a compile-time value (a jit argument in it
    makes jit specialize on its value)."""
    return _broadcast_to(a, _shape(shape, "broadcast_to shape"))


# ------------------------------------------------------------------------------- creation
def full(shape: Any, fill_value: Any, dtype: Any = None) -> Array:
    v = asarray(fill_value)
    if dtype is not None:
        v = lax.convert_element_type(v, dtype)
    elif v.weak_type:
        v = lax.convert_element_type(v, v.dtype)
    return broadcast_to(v, _shape(shape))


def zeros(shape: Any, dtype: Any = None) -> Array:
    return full(shape, 0, _dtype(dtype, dtypes.DEFAULT_FLOAT))


def ones(shape: Any, dtype: Any = None) -> Array:
    return full(shape, 1, _dtype(dtype, dtypes.DEFAULT_FLOAT))


def empty(shape: Any, dtype: Any = None) -> Array:
    return zeros(shape, dtype)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Array:
    x = asarray(a)
    return full(x.shape if shape is None else shape, fill_value, dtype or x.dtype)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None) -> Array:
    return full_like(a, 0, dtype, shape)


def ones_like(a: Any, dtype: Any = None, shape: Any = None) -> Array:
    return full_like(a, 1, dtype, shape)


def empty_like(a: Any, dtype: Any = None, shape: Any = None) -> Array:
    return zeros_like(a, dtype, shape)


def array(obj: Any, dtype: Any = None, copy: bool = True) -> Array:
    return asarray(obj, dtype)


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> Array:
    """``arange`` with compile-time bounds (an iota, scaled and shifted)."""
    vals = [concrete_value(v, "arange bound") for v in (start, stop, step) if v is not None]
    if stop is None:
        begin, end, inc = 0, vals[0].item(), 1
    else:
        begin, end = vals[0].item(), vals[1].item()
        inc = vals[2].item() if step is not None else 1
    n = builtins.max(int(np.ceil((end - begin) / inc)), 0)
    if dtype is None:
        is_int = builtins.all(isinstance(v, (int, np.integer)) for v in (begin, end, inc))
        dtype = dtypes.DEFAULT_INT if is_int else dtypes.DEFAULT_FLOAT
    dt = dtypes.canonicalize(dtype)
    if dtypes.is_integer(dt) and builtins.all(float(v).is_integer() for v in (begin, inc)):
        i = lax.iota(dt, n)
        return lax.add(lax.mul(i, _fill(int(inc), dt, n)), _fill(int(begin), dt, n))
    i = lax.iota(dtypes.DEFAULT_FLOAT if not dtypes.is_inexact(dt) else dt, n)
    out = lax.add(lax.mul(i, _fill(inc, i.dtype, n)), _fill(begin, i.dtype, n))
    return lax.convert_element_type(out, dt)


def _fill(value: Any, dtype: Any, n: int) -> Array:
    return broadcast_to(asarray(np.asarray(value, dtype)), (n,))


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             dtype: Any = None) -> Array:
    num = concrete_int(num, "linspace num")
    (s, e) = promote(start, stop, to_inexact=True)
    dt = _dtype(dtype, s.dtype)
    if num == 0:
        return zeros((0,), dt)
    div = (num - 1) if endpoint else num
    i = lax.iota(s.dtype, num)
    step = lax.div(lax.sub(e, s), asarray(np.asarray(builtins.max(div, 1), s.dtype)))
    out = lax.add(lax.mul(i, broadcast_to(step, (num,))), broadcast_to(s, (num,)))
    if endpoint and num > 1:
        out = lax.dynamic_update_slice(out, lax.reshape(e, (1,)), [num - 1])
    return lax.convert_element_type(out, dt)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Array:
    n = concrete_int(N, "eye N")
    m = n if M is None else concrete_int(M, "eye M")
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    on = lax.eq(lax.add(rows, broadcast_to(asarray(np.int32(k)), (n, m))), cols)
    return lax.convert_element_type(on, _dtype(dtype, dtypes.DEFAULT_FLOAT))


identity = eye


# -------------------------------------------------------------------------- shape changes
def reshape(a: Any, newshape: Any, order: str = "C") -> Array:
    """Like numpy.reshape; ``order="F"`` reads and writes in Fortran (column-major) order
    (a transpose on each side of a C-order reshape); ``order="A"`` is not supported (JAX)."""
    x = asarray(a)
    if order not in ("C", "F"):
        raise InvalidArgumentError(f"xnp.reshape: order must be 'C' or 'F', got {order!r}")
    shape = list(_shape(newshape, "reshape new shape"))
    if shape.count(-1) > 1:
        raise InvalidArgumentError(f"reshape: can only specify one unknown dimension in {shape}")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        if known == 0 or x.size % known:
            raise InvalidArgumentError(f"cannot reshape {x.type_text()} into shape {tuple(shape)}")
        shape[shape.index(-1)] = x.size // known
    if int(np.prod(shape)) != x.size:
        raise InvalidArgumentError(f"cannot reshape {x.type_text()} into shape {tuple(shape)}")
    if order == "F":
        xt = lax.transpose(x, tuple(range(x.ndim))[::-1])
        y = lax.reshape(xt, shape[::-1])
        return lax.transpose(y, tuple(range(len(shape)))[::-1])
    return lax.reshape(x, shape)


def ravel(a: Any, order: str = "C") -> Array:
    """Like numpy.ravel (``order`` 'C' or 'F')."""
    x = asarray(a)
    return reshape(x, (x.size,), order)


def transpose(a: Any, axes: Sequence[int] | None = None) -> Array:
    x = asarray(a)
    perm = tuple(range(x.ndim))[::-1] if axes is None else tuple(
        normalize_axis(i, x.ndim) for i in concrete_ints(axes, "transpose axes"))
    if sorted(perm) != list(range(x.ndim)):
        raise InvalidArgumentError(f"axes {axes} are not a permutation of {x.ndim} dims")
    return lax.transpose(x, perm)


def moveaxis(a: Any, source: Any, destination: Any) -> Array:
    x = asarray(a)
    src = [normalize_axis(s, x.ndim) for s in concrete_ints(source, "moveaxis source")]
    dst = [normalize_axis(d, x.ndim)
           for d in concrete_ints(destination, "moveaxis destination")]
    if len(src) != len(dst):
        raise InvalidArgumentError(f"moveaxis: source {src} and destination {dst} must have "
                                   "the same number of elements")
    order = [i for i in range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(x, order)


def swapaxes(a: Any, axis1: int, axis2: int) -> Array:
    x = asarray(a)
    perm = list(range(x.ndim))
    i, j = normalize_axis(axis1, x.ndim), normalize_axis(axis2, x.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(x, perm)


def squeeze(a: Any, axis: Any = None) -> Array:
    x = asarray(a)
    if axis is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    else:
        axes = [normalize_axis(i, x.ndim) for i in concrete_ints(axis, "squeeze axis")]
        for i in axes:
            if x.shape[i] != 1:
                raise InvalidArgumentError(f"cannot squeeze axis {i} of size {x.shape[i]}")
    return lax.reshape(x, [d for i, d in enumerate(x.shape) if i not in axes])


def expand_dims(a: Any, axis: Any) -> Array:
    x = asarray(a)
    axes = list(concrete_ints(axis, "expand_dims axis"))
    ndim = x.ndim + len(axes)
    axes = sorted(normalize_axis(i, ndim) for i in axes)
    shape = list(x.shape)
    for i in axes:
        shape.insert(i, 1)
    return lax.reshape(x, shape)


def atleast_1d(a: Any) -> Array:
    x = asarray(a)
    return lax.reshape(x, (1,)) if x.ndim == 0 else x


def concatenate(arrays: Sequence[Any], axis: int | None = 0) -> Array:
    xs = _promote_only(arrays)
    if axis is None:
        xs = [ravel(x) for x in xs]
        axis = 0
    ax = normalize_axis(axis, xs[0].ndim)
    return lax.concatenate(xs, ax)


def _promote_only(arrays: Sequence[Any]) -> list[Array]:
    xs = [asarray(a) for a in arrays]
    if not xs:
        raise InvalidArgumentError("need at least one array to concatenate")
    dt, weak = dtypes.promote_types(*[(x.dtype, x.weak_type) for x in xs])
    return [lax.convert_element_type(x, dt, weak) for x in xs]


def stack(arrays: Sequence[Any], axis: int = 0) -> Array:
    xs = _promote_only(arrays)
    ax = normalize_axis(axis, xs[0].ndim + 1)
    return lax.concatenate([expand_dims(x, ax) for x in xs], ax)


def hstack(arrays: Sequence[Any]) -> Array:
    xs = [atleast_1d(a) for a in arrays]
    return concatenate(xs, 0 if xs[0].ndim == 1 else 1)


def vstack(arrays: Sequence[Any]) -> Array:
    return concatenate([lax.reshape(x, (1, x.size)) if x.ndim < 2 else x
                        for x in (asarray(a) for a in arrays)], 0)


def split(a: Any, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    x = asarray(a)
    ax = normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    if isinstance(indices_or_sections, (list, tuple, np.ndarray)):
        cuts = [concrete_int(i, "split index") for i in indices_or_sections]
    else:
        k = concrete_int(indices_or_sections, "split sections")
        if n % k:
            raise InvalidArgumentError(f"array split does not result in an equal division "
                                       f"({n} into {k})")
        cuts = [n // k * i for i in range(1, k)]
    bounds = [0] + [builtins.min(builtins.max(c, 0), n) for c in cuts] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        start = [0] * x.ndim
        limit = list(x.shape)
        start[ax], limit[ax] = lo, builtins.max(hi, lo)
        out.append(lax.slice(x, start, limit))
    return out


def flip(a: Any, axis: Any = None) -> Array:
    x = asarray(a)
    axes = range(x.ndim) if axis is None else [normalize_axis(i, x.ndim)
                                                for i in concrete_ints(axis, "flip axis")]
    return lax.rev(x, tuple(axes))


def tile(a: Any, reps: Any) -> Array:
    x = asarray(a)
    reps = _shape(reps, "tile reps")
    ndim = builtins.max(len(reps), x.ndim)
    reps = (1,) * (ndim - len(reps)) + reps
    x = lax.reshape(x, (1,) * (ndim - x.ndim) + x.shape)
    # broadcast to (r0, d0, r1, d1, ...) then merge pairs
    inter = [v for r, d in zip(reps, x.shape) for v in (r, d)]
    y = lax.broadcast_in_dim(x, inter, tuple(range(1, 2 * ndim, 2)))
    return lax.reshape(y, [r * d for r, d in zip(reps, x.shape)])


def repeat(a: Any, repeats: Any, axis: int | None = None) -> Array:
    x = asarray(a)
    if axis is None:
        x, axis = ravel(x), 0
    ax = normalize_axis(axis, x.ndim)
    reps = concrete_value(repeats, "repeat count")
    if reps.ndim == 0:
        r = int(reps)
        shape = x.shape[:ax + 1] + (r,) + x.shape[ax + 1:]
        y = lax.broadcast_in_dim(x, shape, tuple(i for i in range(x.ndim + 1) if i != ax + 1))
        return lax.reshape(y, x.shape[:ax] + (x.shape[ax] * r,) + x.shape[ax + 1:])
    from ._indexing import take
    idx = np.repeat(np.arange(x.shape[ax]), reps.astype(np.int64))
    return take(x, asarray(idx.astype(np.int32)), axis=ax)


def shape(a: Any) -> tuple[int, ...]:
    return asarray(a).shape


def ndim(a: Any) -> int:
    return asarray(a).ndim


def size(a: Any) -> int:
    return asarray(a).size
