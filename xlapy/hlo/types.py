"""XLA primitive (element) types and their NumPy counterparts.

Every XLA element type is an :class:`ElementType`: its text name (``f32``), its
bit width and kind, and the NumPy dtype that holds its values. Narrow and
non-IEEE types (s2/u2/s4/u4, bf16, the f8 family) come from ``ml_dtypes``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class ElementType:
    """One XLA primitive type, e.g. ``F32``; compare with ``is``/``==``."""

    name: str          # text name in HLO: "f32", "pred", "token"
    kind: str          # "pred", "s", "u", "f", "c", "token", "tuple"
    bits: int          # storage bit width of one element (0 for token/tuple)
    dtype: np.dtype | None = field(compare=False, default=None)

    @property
    def is_integral(self) -> bool:
        return self.kind in ("s", "u")

    @property
    def is_signed_integral(self) -> bool:
        return self.kind == "s"

    @property
    def is_unsigned_integral(self) -> bool:
        return self.kind == "u"

    @property
    def is_floating(self) -> bool:
        return self.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_pred(self) -> bool:
        return self.kind == "pred"

    @property
    def is_array_type(self) -> bool:
        """True for types that can be array elements (not token/tuple)."""
        return self.kind not in ("token", "tuple")

    @property
    def byte_size(self) -> int:
        """Bytes one element occupies in a dense buffer (sub-byte types use one byte)."""
        return max(1, self.bits // 8) if self.bits else 0

    def __repr__(self) -> str:
        return self.name.upper()

    def __str__(self) -> str:
        return self.name


def _t(name: str, kind: str, bits: int, dtype) -> ElementType:
    return ElementType(name, kind, bits, None if dtype is None else np.dtype(dtype))


PRED = _t("pred", "pred", 8, np.bool_)
S2 = _t("s2", "s", 2, ml_dtypes.int2)
S4 = _t("s4", "s", 4, ml_dtypes.int4)
S8 = _t("s8", "s", 8, np.int8)
S16 = _t("s16", "s", 16, np.int16)
S32 = _t("s32", "s", 32, np.int32)
S64 = _t("s64", "s", 64, np.int64)
U2 = _t("u2", "u", 2, ml_dtypes.uint2)
U4 = _t("u4", "u", 4, ml_dtypes.uint4)
U8 = _t("u8", "u", 8, np.uint8)
U16 = _t("u16", "u", 16, np.uint16)
U32 = _t("u32", "u", 32, np.uint32)
U64 = _t("u64", "u", 64, np.uint64)
F16 = _t("f16", "f", 16, np.float16)
BF16 = _t("bf16", "f", 16, ml_dtypes.bfloat16)
F32 = _t("f32", "f", 32, np.float32)
F64 = _t("f64", "f", 64, np.float64)
C64 = _t("c64", "c", 64, np.complex64)
C128 = _t("c128", "c", 128, np.complex128)
F8E5M2 = _t("f8e5m2", "f", 8, ml_dtypes.float8_e5m2)
F8E4M3 = _t("f8e4m3", "f", 8, ml_dtypes.float8_e4m3)
F8E4M3FN = _t("f8e4m3fn", "f", 8, ml_dtypes.float8_e4m3fn)
F8E4M3B11FNUZ = _t("f8e4m3b11fnuz", "f", 8, ml_dtypes.float8_e4m3b11fnuz)
F8E5M2FNUZ = _t("f8e5m2fnuz", "f", 8, ml_dtypes.float8_e5m2fnuz)
F8E4M3FNUZ = _t("f8e4m3fnuz", "f", 8, ml_dtypes.float8_e4m3fnuz)
F8E3M4 = _t("f8e3m4", "f", 8, ml_dtypes.float8_e3m4)
F4E2M1FN = _t("f4e2m1fn", "f", 4, ml_dtypes.float4_e2m1fn)
F8E8M0FNU = _t("f8e8m0fnu", "f", 8, ml_dtypes.float8_e8m0fnu)
TOKEN = _t("token", "token", 0, None)
TUPLE = _t("tuple", "tuple", 0, None)   # element type of tuple shapes (never printed)

ALL_TYPES: tuple[ElementType, ...] = (
    PRED, S2, S4, S8, S16, S32, S64, U2, U4, U8, U16, U32, U64, F16, BF16, F32, F64,
    C64, C128, F8E5M2, F8E4M3, F8E4M3FN, F8E4M3B11FNUZ, F8E5M2FNUZ, F8E4M3FNUZ, F8E3M4,
    F4E2M1FN, F8E8M0FNU, TOKEN)

BY_NAME: dict[str, ElementType] = {t.name: t for t in ALL_TYPES}
_BY_DTYPE: dict[np.dtype, ElementType] = {t.dtype: t for t in ALL_TYPES if t.dtype is not None}


def element_type(name: str) -> ElementType:
    """The element type named ``name`` (``"f32"``); raises KeyError if unknown."""
    return BY_NAME[name]


def from_dtype(dtype) -> ElementType:
    """The element type that a NumPy dtype (or anything ``np.dtype`` accepts) holds."""
    dt = np.dtype(dtype)
    try:
        return _BY_DTYPE[dt]
    except KeyError:
        from ..errors import InvalidArgumentError
        raise InvalidArgumentError(f"no XLA element type for NumPy dtype {dt}") from None


def finfo(t: ElementType):
    """Floating-point limits for a float type (NumPy or ml_dtypes ``finfo``)."""
    return ml_dtypes.finfo(t.dtype)


def iinfo(t: ElementType):
    """Integer limits for an integral type."""
    return ml_dtypes.iinfo(t.dtype)
