"""Numeric helpers shared by the elementwise, conversion and RNG handlers.

XLA integers wrap modulo 2**bits and XLA's CPU backend computes every float type
narrower than f32 (f16, bf16, the f8 family, f4) in f32 and rounds the result
back; the f8 and f4 types (but f8e8m0fnu) are first widened to f16 by XLA's float
normalization, so their results are rounded twice, to f16 and then to the type.
These helpers give handlers that behaviour for every element type:

- :func:`widen_int` / :func:`wrap_int` carry integers of any width through
  int64 (uint64 for u64) arithmetic and wrap the result back to the type;
- :func:`float_compute` / :func:`round_float` do the same for floats, and
  :func:`convert_float` rounds values to another float type as XLA's ``convert``;
- :func:`bit_pattern` / :func:`from_bit_pattern` expose the raw bits of any
  integer, pred or float type as uint64 (sub-byte types included).
"""
from __future__ import annotations

import functools

import numpy as np

from ...hlo import types as T
from ...hlo.types import ElementType


def element_type_of(value: np.ndarray) -> ElementType:
    """The XLA element type held by a NumPy array."""
    return T.from_dtype(np.asarray(value).dtype)


def as_array(value, et: ElementType) -> np.ndarray:
    """``value`` as an ndarray of ``et``'s dtype (0-d stays 0-d; ufunc scalars become arrays)."""
    return np.asarray(np.asarray(value).astype(et.dtype, copy=False))


# ----------------------------------------------------------------------------------------------
# integers

def int_min(et: ElementType) -> int:
    return -(1 << (et.bits - 1)) if et.is_signed_integral else 0


def int_max(et: ElementType) -> int:
    return (1 << (et.bits - 1)) - 1 if et.is_signed_integral else (1 << et.bits) - 1


def widen_int(x: np.ndarray, et: ElementType) -> np.ndarray:
    """Integer (or pred) values as int64, or uint64 for u64, ready for wrapping arithmetic."""
    x = np.asarray(x)
    if et is T.U64:
        return x.astype(np.uint64)
    return x.astype(np.int64)


def wrap_int(v: np.ndarray, et: ElementType) -> np.ndarray:
    """Reduce int64/uint64 values modulo 2**bits into ``et`` (two's complement for signed)."""
    v = np.asarray(v)
    if et.bits == 64:
        return as_array(v, et)          # int64 <-> uint64 casts are modular
    mask = (1 << et.bits) - 1
    u = (v & np.array(mask, v.dtype)).astype(np.int64)
    if et.is_signed_integral:
        u = np.where(u >= (1 << (et.bits - 1)), u - (1 << et.bits), u)
    return as_array(u, et)


# ----------------------------------------------------------------------------------------------
# floats

def float_compute_dtype(et: ElementType) -> np.dtype:
    """The dtype XLA's CPU backend computes ``et`` in: f64 and complex natively, else f32."""
    if et.is_complex or et is T.F64:
        return et.dtype
    return np.dtype(np.float32)


def float_compute(x: np.ndarray, et: ElementType) -> np.ndarray:
    """Float/complex values upcast to their compute dtype."""
    return np.asarray(x).astype(float_compute_dtype(et), copy=False)


# Types XLA:CPU computes as f16 (itself computed in f32): results round to f16, then to the type.
_COMPUTED_AS_F16 = frozenset({T.F8E5M2, T.F8E4M3, T.F8E4M3FN, T.F8E4M3B11FNUZ, T.F8E5M2FNUZ,
                              T.F8E4M3FNUZ, T.F8E3M4, T.F4E2M1FN})


def round_float(v: np.ndarray, et: ElementType) -> np.ndarray:
    """Round computed values back to ``et`` (to nearest even; f8/f4 through f16, as XLA:CPU)."""
    if et in _COMPUTED_AS_F16:
        return as_array(as_array(v, T.F16), et)
    return as_array(v, et)


def _f64_to_f32_round_to_odd(v: np.ndarray) -> np.ndarray:
    """f64 -> f32 truncating toward zero and setting the last bit when inexact.

    Rounding the result once more to a type with at least two fewer significand bits
    gives the correctly rounded value of ``v`` in that type (no double-rounding error).
    """
    f = v.astype(np.float32)
    back = f.astype(np.float64)
    inexact = (back != v) & ~np.isnan(v)
    f = np.where(inexact & (np.abs(back) > np.abs(v)), np.nextafter(f, np.float32(0)), f)
    bits = np.asarray(f, np.float32).view(np.uint32)
    return np.where(inexact, bits | np.uint32(1), bits).view(np.float32)


@functools.lru_cache(maxsize=None)
def f64_to_f16_rounds_once() -> bool:
    """Whether XLA:CPU rounds an f64 -> f16 ``convert`` once on this machine: directly
    where the CPU converts f64 to f16 in one instruction (x86's AVX512-FP16
    ``vcvtsd2sh``), through f32 (two roundings) elsewhere; XLA:CPU's results differ
    between the two kinds of host, and the CPU backend follows the same rule."""
    try:
        import llvmlite.binding as llvm
        return bool(llvm.get_host_cpu_features().get("avx512fp16"))
    except (ImportError, RuntimeError):     # no features reported: the common case
        return False


def convert_float(v: np.ndarray, et: ElementType) -> np.ndarray:
    """``convert`` of f32/f64 values to float type ``et``, rounding to nearest even as XLA:CPU.

    f64 -> bf16 goes through f32 (two roundings, as XLA:CPU); f64 -> f16 too, except where
    XLA:CPU rounds it once (:func:`f64_to_f16_rounds_once`); f64 -> f8/f4 types round
    once, directly (ml_dtypes alone would go through f32).
    """
    v = np.asarray(v)
    with np.errstate(over="ignore", invalid="ignore"):     # overflow to inf is the result
        if v.dtype == np.float64 and et.bits <= 8:
            v = _f64_to_f32_round_to_odd(v)
        elif v.dtype == np.float64 and et is T.F16 and not f64_to_f16_rounds_once():
            v = v.astype(np.float32)
        return as_array(v, et)


def real_type(et: ElementType) -> ElementType:
    """The component type of a complex type (c64 -> f32); other types unchanged."""
    if et is T.C64:
        return T.F32
    if et is T.C128:
        return T.F64
    return et


# ----------------------------------------------------------------------------------------------
# raw bits

def _storage_uint(et: ElementType) -> np.dtype:
    return np.dtype({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[et.byte_size])


def bit_pattern(x: np.ndarray, et: ElementType) -> np.ndarray:
    """The raw bits of each element as uint64 (only the type's low ``bits`` bits are set)."""
    x = np.asarray(x, dtype=et.dtype, order="C")
    u = x.reshape(-1).view(_storage_uint(et)).reshape(x.shape).astype(np.uint64)
    if et.bits < 8 * et.byte_size:
        u &= np.uint64((1 << et.bits) - 1)
    return u


def from_bit_pattern(u: np.ndarray, et: ElementType) -> np.ndarray:
    """Inverse of :func:`bit_pattern`: elements of ``et`` whose bits are the low bits of ``u``."""
    u = np.asarray(u, dtype=np.uint64)
    if et.bits < 64:
        u = u & np.uint64((1 << et.bits) - 1)
    stored = np.asarray(u.astype(_storage_uint(et)), order="C")
    if et.is_pred:
        return stored != 0
    return stored.reshape(-1).view(et.dtype).reshape(u.shape)


def bit_length(u: np.ndarray) -> np.ndarray:
    """Number of significant bits of each uint64 value (0 for 0), as int64."""
    v = np.asarray(u, dtype=np.uint64).copy()
    n = np.zeros(v.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = v >= np.uint64(1 << s)
        n += np.where(big, s, 0)
        v = np.where(big, v >> np.uint64(s), v)
    return n + (v > 0)
