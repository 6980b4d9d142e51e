"""``xnp.ufunc``: a NumPy-style universal function object wrapping an elementwise binary
(or n-ary) function, with ``reduce``, ``accumulate``, ``outer``, ``at`` and ``reduceat``
(JAX's ``jnp.ufunc`` API).

``func`` must be written with array operations (it is traced like any xlapy code).
``reduce`` folds along an axis as a balanced tree (so ``func`` must be associative, as
NumPy and JAX assume for reductions) and starts from ``identity`` when given;
``accumulate`` is a sequential ``scan``; ``at`` applies ``func`` at each index in order,
so repeated indices accumulate. Custom implementations may be passed as ``call``,
``reduce``, ``accumulate``, ``at`` and ``reduceat``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import lax
from ..frontend.control_flow import scan
from ..frontend.core import Array
from ._elementwise import asarray, broadcast_to
from ._reductions import normalize_axis
from ._shape_ops import moveaxis, ravel, reshape


class ufunc:
    """A universal function (``xnp.ufunc(func, nin, nout, identity=...)``)."""

    def __init__(self, func: Callable[..., Any], /, nin: int, nout: int, *,
                 name: str | None = None, nargs: int | None = None, identity: Any = None,
                 call: Callable[..., Any] | None = None,
                 reduce: Callable[..., Any] | None = None,
                 accumulate: Callable[..., Any] | None = None,
                 at: Callable[..., Any] | None = None,
                 reduceat: Callable[..., Any] | None = None) -> None:
        self._func, self.nin, self.nout = func, int(nin), int(nout)
        self.nargs = int(nargs or nin)
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.__doc__ = getattr(func, "__doc__", None)
        self._call, self._reduce, self._accumulate = call, reduce, accumulate
        self._at, self._reduceat = at, reduceat

    def __repr__(self) -> str:
        return f"<xnp.ufunc '{self.__name__}'>"

    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        if out is not None or where is not None:
            raise InvalidArgumentError(f"{self.__name__}: out and where are not supported")
        if len(args) != self.nin:
            raise InvalidArgumentError(f"{self.__name__}: expected {self.nin} arguments, got "
                                       f"{len(args)}")
        return (self._call or self._func)(*args)

    def _binary(self, what: str) -> None:
        if self.nin != 2 or self.nout != 1:
            raise InvalidArgumentError(f"{what} is only defined for binary ufuncs with one "
                                       f"output; {self.__name__} has nin={self.nin}, "
                                       f"nout={self.nout}")

    def outer(self, A: Any, B: Any, /) -> Array:
        """``func(a, b)`` for every pair of elements (shape ``A.shape + B.shape``)."""
        self._binary("outer")
        a, b = asarray(A), asarray(B)
        return self(reshape(a, a.shape + (1,) * b.ndim), b)

    def reduce(self, a: Any, axis: int | None = 0, dtype: Any = None, out: None = None,
               keepdims: bool = False, initial: Any = None, where: None = None) -> Array:
        """Fold ``func`` over ``axis`` (``None``: all axes)."""
        self._binary("reduce")
        if self._reduce is not None:
            return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)
        x = asarray(a)
        if dtype is not None:
            x = x.astype(dtype)
        if axis is None:
            out = self.reduce(ravel(x), 0, initial=initial)
            return reshape(out, (1,) * x.ndim) if keepdims else out
        ax = normalize_axis(axis, x.ndim)
        init = initial if initial is not None else self.identity
        y = moveaxis(x, ax, 0)
        if y.shape[0] == 0:
            if init is None:
                raise InvalidArgumentError(f"{self.__name__}.reduce of an empty axis needs an "
                                           "identity or initial value")
            out = broadcast_to(asarray(init).astype(x.dtype), y.shape[1:])
        else:
            while y.shape[0] > 1:
                n = y.shape[0]
                half = n // 2
                folded = asarray(self._func(y[:half], y[half:2 * half]))
                y = lax.concatenate([folded, y[2 * half:]], 0) if n % 2 else folded
            out = y[0]
            if initial is not None:
                out = asarray(self._func(asarray(initial).astype(out.dtype), out))
        if keepdims:
            out = reshape(out, x.shape[:ax] + (1,) + x.shape[ax + 1:])
        return out

    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Array:
        """The running ``func`` along ``axis`` (``[a0, f(a0, a1), f(f(a0, a1), a2), ...]``)."""
        self._binary("accumulate")
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis, dtype=dtype)
        x = asarray(a)
        if dtype is not None:
            x = x.astype(dtype)
        ax = normalize_axis(axis, x.ndim)
        y = moveaxis(x, ax, 0)
        if y.shape[0] == 0:
            return x

        def step(carry: Array, item: Array) -> tuple[Array, Array]:
            nxt = asarray(self._func(carry, item)).astype(carry.dtype)
            return nxt, nxt
        _, rest = scan(step, y[0], y[1:])
        return moveaxis(lax.concatenate([y[:1], rest], 0), 0, ax)

    def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True) -> Array:
        """``a`` with ``a[i] = func(a[i], b)`` (or ``func(a[i])``) for each index in order
        (``inplace=False`` is required: Arrays are immutable)."""
        if inplace:
            raise InvalidArgumentError(f"{self.__name__}.at: Arrays are immutable; pass "
                                       "inplace=False and use the result")
        if self._at is not None:
            return self._at(a, indices, b)
        x = asarray(a)
        idx = np.asarray(indices) if not isinstance(indices, Array) else indices
        idx = asarray(idx).astype(np.int32)
        flat_idx = ravel(idx)
        vals = None if b is None else ravel(broadcast_to(asarray(b), idx.shape))
        for k in range(flat_idx.shape[0]):
            i = flat_idx[k]
            cur = x[i]
            new = self._func(cur) if vals is None else self._func(cur, vals[k])
            x = x.at[i].set(asarray(new).astype(x.dtype))
        return x

    def reduceat(self, a: Any, indices: Any, axis: int = 0, dtype: Any = None,
                 out: None = None) -> Array:
        """``reduce`` over the slices ``indices[i]:indices[i+1]`` along ``axis`` (NumPy's
        rule: a non-increasing pair gives ``a[indices[i]]``); static ``indices``."""
        self._binary("reduceat")
        if self._reduceat is not None:
            return self._reduceat(a, indices, axis=axis, dtype=dtype)
        x = asarray(a)
        ax = normalize_axis(axis, x.ndim)
        ids = [int(i) for i in np.asarray(indices).reshape(-1)]
        n = x.shape[ax]
        y = moveaxis(x, ax, 0)
        parts = []
        for j, start in enumerate(ids):
            stop = ids[j + 1] if j + 1 < len(ids) else n
            seg = y[start:stop] if stop > start else y[start:start + 1]
            parts.append(self.reduce(seg, 0, dtype=dtype, keepdims=True))
        return moveaxis(lax.concatenate(parts, 0), 0, ax)
