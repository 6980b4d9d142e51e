"""Element types of front-end arrays and the type-promotion rules.

Promotion follows JAX's lattice (x64 disabled), not NumPy's value-based rules:

- Python scalars are *weakly typed*: ``int`` is a weak int, ``float`` a weak float,
  ``complex`` a weak complex. A weak operand adopts the other operand's type when it
  is of the same or a lower kind, so ``x_f32 * 2.0`` stays ``f32``, ``x_s8 + 1`` stays
  ``s8`` and ``x_bf16 + 1.5`` stays ``bf16``; ``x_s32 * 2.0`` becomes ``f32`` (weak float
  meets int: the default float).
- The lattice edges are ``bool -> weak int -> {u8, s8}``, ``u8 -> {u16, s16}`` ... ``u64 ->
  weak float``, ``s8 -> s16 -> s32 -> s64 -> weak float``, ``weak float -> {bf16, f16,
  weak complex}``, ``{bf16, f16} -> f32 -> {f64, c64}``, ``f64 -> c128``, ``weak complex
  -> c64 -> c128``; the result type of two operands is their least upper bound, so for
  example ``u8 + s8 -> s16``, ``bf16 + f16 -> f32``, ``s32 + f16 -> f16``.
- 64-bit types are canonicalized to 32 bits (``f64 -> f32``, ``s64 -> s32``,
  ``u64 -> u32``, ``c128 -> c64``), and the defaults are ``f32`` and ``s32``.

A result is weak only if the least upper bound is itself a weak node (all operands weak).
"""
from __future__ import annotations

import functools
from typing import Any

import ml_dtypes
import numpy as np

from ..errors import InvalidArgumentError

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32,
                                                          np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

DEFAULT_INT = int32
DEFAULT_FLOAT = float32
DEFAULT_COMPLEX = complex64

_WEAK_I, _WEAK_F, _WEAK_C = "weak_int", "weak_float", "weak_complex"
_LATTICE: dict[Any, list[Any]] = {
    bool_: [_WEAK_I],
    _WEAK_I: [uint8, int8],
    uint8: [uint16, int16], uint16: [uint32, int32], uint32: [uint64, int64], uint64: [_WEAK_F],
    int8: [int16], int16: [int32], int32: [int64], int64: [_WEAK_F],
    _WEAK_F: [bfloat16, float16, _WEAK_C],
    bfloat16: [float32], float16: [float32], float32: [float64, complex64],
    float64: [complex128],
    _WEAK_C: [complex64], complex64: [complex128], complex128: [],
}
_WEAK_DEFAULT = {_WEAK_I: DEFAULT_INT, _WEAK_F: DEFAULT_FLOAT, _WEAK_C: DEFAULT_COMPLEX}
_CANONICAL = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


@functools.lru_cache(maxsize=None)
def _upper_bounds(node: Any) -> frozenset:
    out = {node}
    for nxt in _LATTICE[node]:
        out |= _upper_bounds(nxt)
    return frozenset(out)


def canonicalize(dtype: Any) -> np.dtype:
    """The dtype arrays of ``dtype`` get with x64 disabled (64-bit -> 32-bit)."""
    dt = np.dtype(dtype)
    return _CANONICAL.get(dt, dt)


def _node(dtype: np.dtype, weak: bool) -> Any:
    if not weak or dtype == bool_:
        if dtype not in _LATTICE:
            raise InvalidArgumentError(f"element type {dtype} does not take part in promotion")
        return dtype
    kind = "f" if _is_ml_float(dtype) else dtype.kind
    return {"i": _WEAK_I, "u": _WEAK_I, "f": _WEAK_F, "c": _WEAK_C}[kind]


def _join(a: Any, b: Any) -> Any:
    common = _upper_bounds(a) & _upper_bounds(b)
    for cand in common:
        if _upper_bounds(cand) == common:
            return cand
    raise InvalidArgumentError(f"no common type for {a} and {b}")


def promote_types(*typed: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """Result (dtype, weak) of operands given as (dtype, weak) pairs."""
    if not typed:
        raise InvalidArgumentError("promote_types needs at least one operand")
    node = _node(*typed[0])
    for dt, weak in typed[1:]:
        node = _join(node, _node(dt, weak))
    if isinstance(node, str):
        return _WEAK_DEFAULT[node], True
    return canonicalize(node), False


def python_scalar_dtype(x: Any) -> tuple[np.dtype, bool]:
    """(dtype, weak) of a Python scalar: bool -> bool, int/float/complex -> weak defaults."""
    if isinstance(x, (bool, np.bool_)):
        return bool_, False
    if isinstance(x, int):
        return DEFAULT_INT, True
    if isinstance(x, float):
        return DEFAULT_FLOAT, True
    if isinstance(x, complex):
        return DEFAULT_COMPLEX, True
    raise InvalidArgumentError(f"{type(x).__name__} is not a Python scalar")


def is_float(dtype: Any) -> bool:
    dt = np.dtype(dtype)
    return dt.kind == "f" or dt in (bfloat16,) or _is_ml_float(dt)


def _is_ml_float(dt: np.dtype) -> bool:
    return dt.kind == "V" or (dt.kind not in "biufc" and dt.itemsize <= 2)


def is_integer(dtype: Any) -> bool:
    return np.dtype(dtype).kind in "iu"


def is_complex(dtype: Any) -> bool:
    return np.dtype(dtype).kind == "c"


def is_inexact(dtype: Any) -> bool:
    return is_float(dtype) or is_complex(dtype)


def to_inexact(dtype: Any) -> np.dtype:
    """``dtype`` if it is floating/complex, else the default float."""
    return np.dtype(dtype) if is_inexact(dtype) else DEFAULT_FLOAT


def finfo(dtype: Any):
    return ml_dtypes.finfo(np.dtype(dtype))


def iinfo(dtype: Any):
    return ml_dtypes.iinfo(np.dtype(dtype))


__all__ = ["promote_types", "canonicalize", "python_scalar_dtype", "is_float", "is_integer",
           "is_complex", "is_inexact", "to_inexact", "DEFAULT_INT", "DEFAULT_FLOAT"]
