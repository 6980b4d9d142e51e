"""Helpers shared by the ``xlapy.tf`` modules: argument checks and TF-style conversions.

TF functions take a ``name=`` argument that names the op in the graph; xlapy names ops
after the Python source instead, so ``name`` is accepted and not used. Every other TF
argument is either honoured or, when xlapy cannot honour the value given, refused with
:func:`unsupported` (an ``InvalidArgumentError`` naming the function and the argument).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes as _dt
from ..frontend.core import Array, to_array
from ..frontend.tracing import concrete_value
from ..numpy._reductions import normalize_axes, normalize_axis

__all__ = ["unsupported", "tensor", "tensors", "axis_arg", "axes_arg", "tf_dtype",
           "scalar_dtype", "is_traced", "static_value", "static_ints", "normalize_axis",
           "normalize_axes"]


def unsupported(api: str, arg: str, value: Any, why: str) -> InvalidArgumentError:
    """The error for a TF argument value xlapy cannot honour (raise the result)."""
    return InvalidArgumentError(f"{api}: argument {arg}={value!r} is not supported by xlapy: "
                                f"{why}")


def scalar_dtype(value: Any) -> np.dtype:
    """The dtype TF gives a Python value: bool, int32, float32, complex64 (strong types)."""
    if isinstance(value, (bool, np.bool_)):
        return _dt.bool_
    if isinstance(value, int):
        return _dt.int32
    if isinstance(value, float):
        return _dt.float32
    if isinstance(value, complex):
        return _dt.complex64
    return _dt.canonicalize(np.asarray(value).dtype)


def tf_dtype(dtype: Any) -> np.dtype | None:
    """``dtype`` as the NumPy dtype xlapy computes in (64-bit types become 32-bit)."""
    if dtype is None:
        return None
    from .dtypes import as_dtype
    return _dt.canonicalize(as_dtype(dtype))


def tensor(value: Any, dtype: Any = None) -> Array:
    """``tf.convert_to_tensor`` without its checks: Arrays and Variables pass through,
    Python scalars and lists become strongly typed arrays (int32 / float32, as in TF)."""
    if isinstance(value, Array):
        return value if dtype is None else to_array(value, tf_dtype(dtype))
    if hasattr(value, "__xlapy_array__"):
        return to_array(value, tf_dtype(dtype))
    if dtype is None and isinstance(value, (bool, int, float, complex)) and \
            not isinstance(value, np.generic):
        return to_array(value, scalar_dtype(value))
    return to_array(value, tf_dtype(dtype))


def tensors(values: Any) -> list[Array]:
    """A list of tensors from a list/tuple of values (or one stacked tensor's rows)."""
    return [tensor(v) for v in values]


def is_traced(x: Any) -> bool:
    return isinstance(x, Array) and x.is_traced


def static_value(value: Any, what: str) -> Any:
    """The compile-time value of ``value`` (a Python value, an array, a Variable) as
    Python data. A traced argument of a compiled function makes it specialize on the
    argument's value (TF's must-be-constant inputs); another traced value is an error."""
    if isinstance(value, (list, tuple)):
        return [static_value(v, what) for v in value]
    if hasattr(value, "__xlapy_array__"):
        value = value.read_value()
    if isinstance(value, (Array, np.ndarray, np.generic)):
        return np.asarray(concrete_value(value, what)).tolist()
    return value


def axis_arg(axis: Any, ndim: int, what: str = "axis") -> int:
    """One static axis (TF allows a 0-d tensor), normalized to ``[0, ndim)``."""
    return normalize_axis(int(static_value(axis, what)), ndim, what)


def axes_arg(axis: Any, ndim: int) -> tuple[int, ...] | None:
    """``None`` (all axes) or a tuple of normalized static axes."""
    axis = static_value(axis, "axis")
    if axis is None:
        return None
    return normalize_axes(axis, ndim)


def static_ints(value: Any, what: str) -> list[int]:
    """A static list of ints (a shape, multiples, sizes) from a list, array or tensor."""
    v = static_value(value, what)
    return [int(e) for e in (v if isinstance(v, list) else [v])]
