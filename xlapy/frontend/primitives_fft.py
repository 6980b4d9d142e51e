"""The ``fft`` primitive (HLO ``fft``, the linalg family): lowering, vjp and batching.

``fft(x, fft_type, fft_lengths)`` transforms the trailing ``len(fft_lengths)`` dims:
``FFT``/``IFFT`` complex to complex, ``RFFT`` real to the non-negative frequencies,
``IRFFT`` back to real (XLA's operation semantics). The vjp rules are the transposes of
these linear maps, with JAX's convention for complex cotangents: ``FFT``/``IFFT`` are
symmetric; ``RFFT``'s transpose is the real part of the ``FFT`` of the zero-padded
cotangent; ``IRFFT``'s is the scaled, conjugated ``RFFT`` (interior frequencies doubled).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from . import dtypes, lax
from .core import Array, LoweringContext, bind, primitive

_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")

fft_p = primitive("fft", weak=lambda args, params: False)


@fft_p.def_lowering
def _fft_lower(ctx: LoweringContext, x: Any, *, fft_type: str,
               fft_lengths: tuple[int, ...]) -> Any:
    return ctx.b.fft(x, fft_type, fft_lengths)


def _pad_last(t: Array, n: int) -> Array:
    extra = n - t.shape[-1]
    if extra <= 0:
        return t
    zero = lax.full_like(t, 0, shape=())
    return lax.pad(t, zero, [(0, 0, 0)] * (t.ndim - 1) + [(0, extra, 0)])


def _fft_vjp(ct: Array, ans: Array, x: Array, *, fft_type: str,
             fft_lengths: tuple[int, ...]) -> tuple[Array]:
    if fft_type in ("FFT", "IFFT"):
        return (fft(ct, fft_type, fft_lengths),)
    if fft_type == "RFFT":
        full = fft(_pad_last(ct, fft_lengths[-1]), "FFT", fft_lengths)
        return (lax.real(full),)
    y = fft(ct, "RFFT", fft_lengths)
    n = y.shape[-1]
    odd = fft_lengths[-1] % 2
    mask = np.concatenate([[1.0], np.full(n - 2 + odd, 2.0), np.ones(1 - odd)])[:n]
    scale = mask / math.prod(fft_lengths)
    real_dt = np.float64 if y.dtype == np.complex128 else np.float32
    s = lax.broadcast_in_dim(Array(scale.astype(real_dt)), y.shape, (y.ndim - 1,))
    s = lax.complex(s, lax.full_like(s, 0))
    out = lax.mul(s, y)
    return (lax.complex(lax.real(out), lax.neg(lax.imag(out))),)


fft_p.def_vjp(_fft_vjp)


def _fft_batching(args: Sequence[Array], dims: Sequence[int | None], **params: Any) -> tuple:
    (x,), (d,) = args, dims
    if d != 0:
        x = lax.transpose(x, (d,) + tuple(i for i in range(x.ndim) if i != d))
    return bind(fft_p, x, **params), 0


fft_p.def_batching(_fft_batching)


def fft(x: Array, fft_type: str, fft_lengths: Sequence[int]) -> Array:
    """``lax.fft``: the transform of the trailing ``len(fft_lengths)`` dimensions."""
    kind = str(getattr(fft_type, "name", fft_type)).upper()
    if kind not in _TYPES:
        raise InvalidArgumentError(f"lax.fft: fft_type must be one of {_TYPES}, got {fft_type!r}")
    lengths = tuple(int(n) for n in fft_lengths)
    if not 1 <= len(lengths) <= 3:
        raise InvalidArgumentError(f"lax.fft: 1 to 3 fft_lengths, got {lengths}")
    if len(lengths) > x.ndim:
        raise InvalidArgumentError(f"lax.fft: {len(lengths)} fft dimensions for "
                                   f"{x.type_text()}")
    tail = x.shape[x.ndim - len(lengths):]
    if kind == "RFFT":
        if not dtypes.is_float(x.dtype):
            raise InvalidArgumentError(f"lax.fft: RFFT takes a real operand, got {x.type_text()}")
        if tail != lengths:
            raise InvalidArgumentError(f"lax.fft: RFFT lengths {lengths} must equal the "
                                       f"operand's trailing dims {tail}")
    else:
        if not dtypes.is_complex(x.dtype):
            raise InvalidArgumentError(f"lax.fft: {kind} takes a complex operand, got "
                                       f"{x.type_text()}")
        want = lengths if kind != "IRFFT" else lengths[:-1] + (lengths[-1] // 2 + 1,)
        if tail != want:
            raise InvalidArgumentError(f"lax.fft: {kind} of lengths {lengths} needs trailing "
                                       f"dims {want}, got {x.type_text()}")
    return bind(fft_p, x, fft_type=kind, fft_lengths=lengths)


__all__ = ["fft", "fft_p"]
