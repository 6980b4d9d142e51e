"""Attribute values as NumPy arrays and integer tuples: ``dense<...>`` (lists, splats,
``0x...`` hex strings, float bit patterns), ``array<i64: ...>`` and the lists custom forms
print."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InvalidArgumentError
from .syntax import Dense, parse_int


def _flatten(content: Any) -> list:
    if isinstance(content, list):
        out: list = []
        for c in content:
            out.extend(_flatten(c))
        return out
    return [content]


def _scalar(token: Any, dtype: np.dtype, bits: int) -> Any:
    """One element of ``dtype`` from its printed token."""
    if isinstance(token, bool):
        return token
    if isinstance(token, tuple):                    # complex (re, im)
        part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        return complex(_scalar(token[0], part, bits // 2), _scalar(token[1], part, bits // 2))
    text = str(token)
    if dtype.kind in "fV" or dtype.name in ("bfloat16",) or dtype.kind == "c":
        if text.lower().startswith(("0x", "-0x")):        # a bit pattern
            raw = np.array([int(text, 16) & ((1 << bits) - 1)], dtype=f"u{bits // 8}")
            return raw.view(dtype)[0]
        return float(text)
    return parse_int(text)


def dense_array(d: Dense) -> np.ndarray:
    """The value of ``dense<...> : tensor<...>`` as an array of the tensor's dtype."""
    shape = d.shape
    dtype = np.dtype(shape.dtype)
    n = int(np.prod(shape.dims)) if shape.dims else 1
    bits = shape.element_type.bits
    if d.hex:
        text = str(d.content)
        raw = bytes.fromhex(text[2:] if text.lower().startswith("0x") else text)
        if shape.element_type.is_pred:
            flat = np.frombuffer(raw, np.uint8) != 0
        else:
            flat = np.frombuffer(raw, dtype=dtype)
        if flat.size == 1 and n != 1:
            return np.full(shape.dims, flat[0], dtype=dtype)
        if flat.size != n:
            raise InvalidArgumentError(f"dense hex value has {flat.size} elements; "
                                       f"{shape.to_text(False)} has {n}")
        return flat.reshape(shape.dims).copy()
    flat_tokens = _flatten(d.content)
    values = [_scalar(t, dtype, max(bits, 8)) for t in flat_tokens]
    if dtype.kind in "iu":
        arr = np.array(values, dtype=object).astype(dtype) if values else np.zeros(0, dtype)
    else:
        arr = np.array(values, dtype=np.complex128 if dtype.kind == "c" else
                       (np.bool_ if dtype.kind == "b" else np.float64)).astype(dtype) \
            if values else np.zeros(0, dtype)
    if arr.size == 1 and n != 1:
        return np.full(shape.dims, arr[0], dtype=dtype)
    if arr.size != n:
        raise InvalidArgumentError(f"dense value has {arr.size} elements; "
                                   f"{shape.to_text(False)} has {n}")
    return arr.reshape(shape.dims)


def int_list(value: Any) -> tuple[int, ...]:
    """Integers from ``[1, 2]``, ``array<i64: 1, 2>`` or ``dense<[1, 2]>``."""
    if isinstance(value, Dense):
        return tuple(int(v) for v in dense_array(value).reshape(-1))
    if isinstance(value, (list, tuple)):
        return tuple(int(v) for v in value)
    if value is None:
        return ()
    return (int(value),)


def pairs(value: Any, rank: int) -> tuple[tuple[int, int], ...]:
    """Padding as (lo, hi) per dim from ``[[1, 1], [0, 0]]`` or ``dense<...> : Nx2``."""
    if value is None:
        return ((0, 0),) * rank
    if isinstance(value, Dense):
        arr = dense_array(value).reshape(-1, 2) if rank else np.zeros((0, 2), np.int64)
        return tuple((int(a), int(b)) for a, b in arr)
    return tuple((int(a), int(b)) for a, b in value)
