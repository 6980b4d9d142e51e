"""Index grids and index conversions: ``indices``, ``*_indices``, ``ix_``, ``mgrid``,
``ogrid``, ``r_``, ``c_``, ``ravel_multi_index``, ``unravel_index``, and ``vectorize``."""
from __future__ import annotations

import builtins
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import dtypes, lax
from ..frontend.core import Array
from ..frontend.tracing import concrete_int, concrete_ints, concrete_value
from ._elementwise import asarray, broadcast_shapes, broadcast_to, where
from ._shape_ops import arange, concatenate, linspace, reshape, stack


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False) -> Any:
    """Grids of each axis' index over ``dimensions`` (stacked, or a tuple if ``sparse``)."""
    dims = concrete_ints(dimensions, "indices dimensions")
    dt = dtypes.canonicalize(dtype or np.int32)
    grids = []
    for i, n in enumerate(dims):
        shape = tuple(n if j == i else (1 if sparse else d) for j, d in enumerate(dims))
        grids.append(lax.broadcasted_iota(dt, shape, i))
    if sparse:
        return tuple(grids)
    return stack(grids) if grids else asarray(np.zeros((0,), dt))


def _const_index(v: np.ndarray) -> Array:
    return asarray(v.astype(np.int32))


def diag_indices(n: int, ndim: int = 2) -> tuple[Array, ...]:
    """The indices of the main diagonal of an ``n``-sided ``ndim``-dimensional array."""
    n, ndim = concrete_int(n, "diag_indices n"), concrete_int(ndim, "diag_indices ndim")
    if n < 0 or ndim < 0:
        raise InvalidArgumentError("diag_indices: n and ndim must be non-negative")
    return (_const_index(np.arange(n)),) * ndim


def diag_indices_from(arr: Any) -> tuple[Array, ...]:
    """``diag_indices`` for ``arr`` (all its dimensions equal)."""
    x = asarray(arr)
    if x.ndim < 2 or len(set(x.shape)) != 1:
        raise ShapeError(f"diag_indices_from needs at least 2 equal dimensions, got "
                         f"{x.type_text()}")
    return diag_indices(x.shape[0], x.ndim)


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """Row and column indices of the lower triangle (diagonal ``k`` and below)."""
    r, c = np.tril_indices(concrete_int(n, "n"), concrete_int(k, "k"),
                           None if m is None else concrete_int(m, "m"))
    return _const_index(r), _const_index(c)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """Row and column indices of the upper triangle (diagonal ``k`` and above)."""
    r, c = np.triu_indices(concrete_int(n, "n"), concrete_int(k, "k"),
                           None if m is None else concrete_int(m, "m"))
    return _const_index(r), _const_index(c)


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Array, Array]:
    """``tril_indices`` for a 2-D ``arr``'s shape."""
    x = asarray(arr)
    if x.ndim != 2:
        raise ShapeError(f"tril_indices_from needs a 2-D array, got {x.type_text()}")
    return tril_indices(x.shape[0], k, x.shape[1])


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Array, Array]:
    """``triu_indices`` for a 2-D ``arr``'s shape."""
    x = asarray(arr)
    if x.ndim != 2:
        raise ShapeError(f"triu_indices_from needs a 2-D array, got {x.type_text()}")
    return triu_indices(x.shape[0], k, x.shape[1])


def mask_indices(n: int, mask_func: Callable[..., Any], k: int = 0) -> tuple[Array, Array]:
    """The indices where ``mask_func(ones((n, n)), k)`` is non-zero (e.g. ``triu``)."""
    n = concrete_int(n, "mask_indices n")
    m = np.asarray(concrete_value(mask_func(asarray(np.ones((n, n), np.int32)), k),
                                  "mask_indices mask"))
    r, c = np.nonzero(m)
    return _const_index(r), _const_index(c)


def ix_(*args: Any) -> tuple[Array, ...]:
    """Open-mesh index arrays from 1-D sequences (``x[ix_(rows, cols)]``)."""
    out = []
    for i, a in enumerate(args):
        x = asarray(a)
        if x.ndim != 1:
            raise ShapeError(f"ix_: arguments must be 1-D, got {x.type_text()}")
        if x.dtype == np.bool_:
            x = _const_index(np.flatnonzero(np.asarray(concrete_value(x, "ix_ mask"))))
        out.append(reshape(x, tuple(-1 if j == i else 1 for j in range(len(args)))))
    return tuple(out)


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C") -> Array:
    """Flat indices of coordinate arrays in an array of shape ``dims``; ``mode``: ``raise``
    (needs concrete coordinates), ``wrap`` or ``clip``."""
    dims = concrete_ints(dims, "ravel_multi_index dims")
    if len(multi_index) != len(dims):
        raise InvalidArgumentError(f"ravel_multi_index: {len(multi_index)} index arrays for "
                                   f"{len(dims)} dimensions")
    idx = [asarray(i) for i in multi_index]
    for i in idx:
        if not dtypes.is_integer(i.dtype):
            raise InvalidArgumentError("ravel_multi_index: only integer indices are allowed")
    if mode == "raise":
        for i, d in zip(idx, dims):
            v = np.asarray(concrete_value(i, "ravel_multi_index index (mode='raise')"))
            if ((v < 0) | (v >= d)).any():
                raise InvalidArgumentError("ravel_multi_index: invalid entry in coordinates")
    elif mode == "wrap":
        idx = [i % d for i, d in zip(idx, dims)]
    elif mode == "clip":
        idx = [i.clip(0, d - 1) for i, d in zip(idx, dims)]
    else:
        raise InvalidArgumentError(f"ravel_multi_index: bad mode {mode!r}")
    order_dims = list(range(len(dims)))
    if order == "F":
        order_dims.reverse()
    elif order != "C":
        raise InvalidArgumentError(f"ravel_multi_index: order must be C or F, got {order!r}")
    out = asarray(0)
    for j in order_dims:
        out = out * dims[j] + idx[j]
    return out.astype(np.int32) if out.dtype != np.int32 and out.weak_type else out


def unravel_index(indices: Any, shape: Sequence[int]) -> tuple[Array, ...]:
    """Coordinate arrays of flat ``indices`` in an array of ``shape`` (out-of-range
    indices are clipped, as in JAX)."""
    shape = concrete_ints(shape, "unravel_index shape")
    x = asarray(indices)
    if not dtypes.is_integer(x.dtype):
        raise InvalidArgumentError("unravel_index: only integer indices are allowed")
    total = int(np.prod(shape))
    x = where(x < 0, x + total, x).clip(0, builtins.max(total - 1, 0))
    out = []
    for d in reversed(shape):
        out.append(x % d)
        x = x // d
    return tuple(reversed(out))


def _grid_axis(s: slice) -> Array:
    step = s.step
    start = 0 if s.start is None else s.start
    if isinstance(step, complex):
        return linspace(start, s.stop, int(abs(step)))
    return arange(start, s.stop, 1 if step is None else step)


class _Grid:
    def __init__(self, sparse: bool) -> None:
        self.sparse = sparse

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return _grid_axis(key)
        axes = [_grid_axis(s) for s in key]
        n = len(axes)
        shapes = [tuple(a.size if j == i else 1 for j in range(n)) for i, a in enumerate(axes)]
        grids = [reshape(a, sh) for a, sh in zip(axes, shapes)]
        if self.sparse:
            return tuple(grids)
        full = broadcast_shapes(*shapes)
        from ._shape_ops import _promote_only
        return stack(_promote_only([broadcast_to(g, full) for g in grids]))


mgrid = _Grid(sparse=False)
mgrid.__doc__ = "Dense mesh grids from slices: ``mgrid[0:3, 0:4]`` (complex step = count)."
ogrid = _Grid(sparse=True)
ogrid.__doc__ = "Open (broadcastable) mesh grids from slices: ``ogrid[0:3, 0:4]``."


class _Concat:
    def __init__(self, axis: int, ndmin: int, trans1d: int) -> None:
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key: Any) -> Array:
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        if items and isinstance(items[0], str):
            spec = [int(v) for v in items[0].split(",")]
            axis, ndmin, trans1d = (spec + [ndmin, trans1d][len(spec) - 1:])[:3] \
                if len(spec) < 3 else spec[:3]
            items = items[1:]
        parts = []
        for it in items:
            x = _grid_axis(it) if isinstance(it, slice) else asarray(it)
            if x.ndim < ndmin:
                nd = x.ndim
                shape = [1] * ndmin
                start = ndmin - nd if trans1d == -1 else trans1d
                shape[start:start + nd] = x.shape
                x = reshape(x, tuple(shape))
            parts.append(x)
        if not parts:
            return asarray(np.zeros((0,), np.float32))
        return concatenate(parts, axis)


r_ = _Concat(0, 1, -1)
r_.__doc__ = "Concatenation along the first axis by index syntax: ``r_[a, 0:3, b]``."
c_ = _Concat(-1, 2, 0)
c_.__doc__ = "Concatenation along the last axis, 1-D inputs as columns: ``c_[a, b]``."


class vectorize:
    """``pyfunc`` applied elementwise with broadcasting (or over core dimensions given by
    a ``signature`` such as ``"(n),(n)->()"``); each element or core slice is traced once,
    so it suits small arrays; write array code for large ones."""

    def __init__(self, pyfunc: Callable[..., Any], *, excluded: Any = frozenset(),
                 signature: str | None = None) -> None:
        self.pyfunc, self.excluded, self.signature = pyfunc, frozenset(excluded), signature
        self.__doc__ = getattr(pyfunc, "__doc__", None)
        self.__name__ = getattr(pyfunc, "__name__", "vectorized")

    def _core(self, n_args: int) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
        if self.signature is None:
            return [()] * n_args, [()]
        import re
        ins, outs = self.signature.replace(" ", "").split("->")
        parse = lambda s: [tuple(d for d in g.split(",") if d)  # noqa: E731
                           for g in re.findall(r"\(([^)]*)\)", s)]
        return parse(ins), parse(outs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        dyn = [i for i in range(len(args)) if i not in self.excluded]
        xs = [asarray(args[i]) for i in dyn]
        in_core, _ = self._core(len(xs))
        if len(in_core) != len(xs):
            raise InvalidArgumentError(f"vectorize: signature has {len(in_core)} inputs, got "
                                       f"{len(xs)} arrays")
        batch = broadcast_shapes(*[x.shape[:x.ndim - len(c)] for x, c in zip(xs, in_core)])
        xs = [broadcast_to(x, batch + x.shape[x.ndim - len(c):]) for x, c in zip(xs, in_core)]
        n = int(np.prod(batch))
        flat = [reshape(x, (n,) + x.shape[len(batch):]) for x in xs]
        results = []
        for k in range(n):
            call = list(args)
            for i, x in zip(dyn, flat):
                call[i] = x[k]
            results.append(self.pyfunc(*call, **kwargs))
        if n == 0:
            raise InvalidArgumentError("vectorize: cannot infer the output of an empty batch")
        if isinstance(results[0], tuple):
            return tuple(reshape(stack([asarray(r[j]) for r in results]),
                                 batch + asarray(results[0][j]).shape)
                         for j in range(len(results[0])))
        first = asarray(results[0])
        return reshape(stack([asarray(r) for r in results]), batch + first.shape)
