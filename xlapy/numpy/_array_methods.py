"""Operators and methods of :class:`~xlapy.frontend.core.Array`, installed on import.

``x + y``, ``x @ y``, ``x[i]``, ``x.sum()``, ``x.at[i].set(v)`` ... all call the
``xlapy.numpy`` functions, so they follow the same promotion and broadcasting rules.
"""
from __future__ import annotations

from typing import Any

from ..frontend.core import Array
from . import _elementwise as E
from . import _array_extra as X, _indexing, _linalg, _reductions as R, _shape_ops as S, _sorting


def _swap(fn: Any) -> Any:
    return lambda self, other: fn(other, self)


_BINARY = {
    "add": E.add, "sub": E.subtract, "mul": E.multiply, "truediv": E.true_divide,
    "floordiv": E.floor_divide, "mod": E.remainder, "pow": E.power, "matmul": _linalg.matmul,
    "and": E.bitwise_and, "or": E.bitwise_or, "xor": E.bitwise_xor, "lshift": E.left_shift,
    "rshift": E.right_shift, "divmod": E.divmod,
}


def _reshape(self: Array, *shape: Any, order: str = "C") -> Array:
    return S.reshape(self, shape[0] if len(shape) == 1 else shape, order)


def _ravel(self: Array, order: str = "C") -> Array:
    return S.ravel(self, order)


def _transpose(self: Array, *axes: Any) -> Array:
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return S.transpose(self, axes or None)


def install() -> None:
    for name, fn in _BINARY.items():
        setattr(Array, f"__{name}__", fn)
        setattr(Array, f"__r{name}__", _swap(fn))
    comparisons = {"eq": E.equal, "ne": E.not_equal, "lt": E.less, "le": E.less_equal,
                   "gt": E.greater, "ge": E.greater_equal}
    for name, fn in comparisons.items():
        setattr(Array, f"__{name}__", fn)
    Array.__neg__ = E.negative
    Array.__pos__ = lambda self: self
    Array.__abs__ = E.absolute
    Array.__invert__ = E.invert
    Array.__getitem__ = _indexing.getitem
    Array.at = property(_indexing.IndexUpdateHelper)
    Array.T = property(lambda self: S.transpose(self))
    Array.mT = property(lambda self: S.swapaxes(self, -1, -2))
    Array.real = property(E.real)
    Array.imag = property(E.imag)
    methods = {
        "reshape": _reshape, "transpose": _transpose, "astype": E.astype,
        "sum": R.sum, "prod": R.prod, "mean": R.mean, "var": R.var, "std": R.std,
        "max": R.max, "min": R.min, "argmax": R.argmax, "argmin": R.argmin, "all": R.all,
        "any": R.any, "cumsum": R.cumsum, "cumprod": R.cumprod, "ravel": _ravel,
        "flatten": _ravel, "squeeze": S.squeeze, "swapaxes": S.swapaxes, "clip": E.clip,
        "round": E.round, "dot": _linalg.dot, "conj": E.conj, "conjugate": E.conj,
        "sort": _sorting.sort, "argsort": _sorting.argsort, "take": _indexing.take,
        "repeat": S.repeat, "diagonal": X.diagonal, "trace": X.trace,
    }
    for name, fn in methods.items():
        setattr(Array, name, fn)
    Array.copy = lambda self: self


install()
