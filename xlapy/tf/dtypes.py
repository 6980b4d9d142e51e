"""``tf.dtypes``: TensorFlow's dtype names as NumPy dtypes.

``tf.float32`` *is* ``numpy.dtype('float32')`` (``tf.bfloat16`` is ``ml_dtypes``'
bfloat16), so ``x.dtype == tf.float32`` works for xlapy arrays and ``tf.DType`` is
``numpy.dtype``; TF's ``DType`` extras (``is_floating``, ``as_numpy_dtype``) are not
provided.

xlapy computes with 64-bit types off (as JAX does by default): ``tf.cast(x, tf.int64)``
gives int32 and ``tf.float64`` gives float32 (see ``xlapy.frontend.dtypes``). The names
exist so that TF code runs; results have the 32-bit type.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes as _dt

DType = np.dtype

float16, bfloat16 = _dt.float16, _dt.bfloat16
float32, float64 = _dt.float32, _dt.float64
half, double = float16, float64
int8, int16, int32, int64 = _dt.int8, _dt.int16, _dt.int32, _dt.int64
uint8, uint16, uint32, uint64 = _dt.uint8, _dt.uint16, _dt.uint32, _dt.uint64
complex64, complex128 = _dt.complex64, _dt.complex128
bool = _dt.bool_  # noqa: A001  (TF's name)

_BY_NAME = {dt.name: dt for dt in (float16, bfloat16, float32, float64, int8, int16, int32,
                                  int64, uint8, uint16, uint32, uint64, complex64,
                                  complex128, bool)}
_BY_NAME.update(half=float16, double=float64, bool=bool)
_PYTHON = {builtins.bool: bool, builtins.int: int64, builtins.float: float64,
           builtins.complex: complex128}


def as_dtype(type_value: Any) -> np.dtype:
    """The dtype named by ``type_value``: a dtype, a name (``'float32'``), a NumPy type or
    a Python type (``float`` is float64 and ``int`` int64, as in TF)."""
    if isinstance(type_value, np.dtype):
        return type_value
    if isinstance(type_value, str):
        dt = _BY_NAME.get(type_value)
        if dt is None:
            raise InvalidArgumentError(f"tf.as_dtype: unknown or unsupported dtype name "
                                       f"{type_value!r} (strings and resources are not "
                                       "supported)")
        return dt
    if type_value in _PYTHON:
        return _PYTHON[type_value]
    try:
        dt = np.dtype(type_value)
    except TypeError:
        raise InvalidArgumentError(f"tf.as_dtype: cannot convert {type_value!r} to a "
                                   "dtype") from None
    if dt.name not in _BY_NAME:
        raise InvalidArgumentError(f"tf.as_dtype: dtype {dt} is not supported")
    return dt


def cast(x: Any, dtype: Any, name: str | None = None) -> Any:
    """``tf.dtypes.cast`` (the same as ``tf.cast``)."""
    from ._array_ops import cast as _cast
    return _cast(x, dtype)


__all__ = ["DType", "as_dtype", "cast", "float16", "half", "bfloat16", "float32", "float64",
           "double", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "complex64", "complex128", "bool"]
