"""``xlapy.numpy.fft``: discrete Fourier transforms (``jax.numpy.fft``'s API).

The transforms lower to HLO ``fft`` (the ``fft`` primitive, which has vjp and batching
rules), over up to three trailing axes per op; more axes are done in steps. ``n``/``s``
crop or zero-pad the input along the transformed axes, ``norm`` is ``"backward"``
(default: the inverse scales by ``1/n``), ``"ortho"`` or ``"forward"``. Real input is
made complex64 (x64 off); ``rfft*`` take real input, ``irfft*`` return float32.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend.core import Array
from ..frontend.primitives_fft import fft as _lax_fft
from ..frontend.tracing import concrete_int
from ._elementwise import asarray, conj
from ._pad import pad
from ._reductions import normalize_axis
from ._shape_ops import arange, concatenate
from ._array_extra import roll


def _complex(x: Array) -> Array:
    if dtypes.is_complex(x.dtype):
        return x
    if not dtypes.is_float(x.dtype) or x.dtype.itemsize < 4:
        x = lax.convert_element_type(x, np.float32)
    return lax.complex(x, lax.full_like(x, 0))


def _real(x: Array) -> Array:
    if dtypes.is_complex(x.dtype):
        raise InvalidArgumentError(f"rfft takes real input, got {x.type_text()}")
    if not dtypes.is_float(x.dtype) or x.dtype.itemsize < 4:
        x = lax.convert_element_type(x, np.float32)
    return x


def _fit(x: Array, axis: int, n: int) -> Array:
    """``x`` cropped or zero-padded to ``n`` along ``axis``."""
    if n < 1:
        raise InvalidArgumentError(f"fft: invalid number of data points ({n}) specified")
    m = x.shape[axis]
    if m > n:
        return lax.slice(x, [0] * x.ndim, [n if i == axis else d for i, d in enumerate(x.shape)])
    if m < n:
        return pad(x, [(0, n - m) if i == axis else (0, 0) for i in range(x.ndim)])
    return x


def _axes_and_sizes(x: Array, s: Sequence[int] | None, axes: Sequence[int] | None,
                    last_half: bool) -> tuple[list[int], list[int]]:
    if axes is None:
        nax = x.ndim if s is None else len(s)
        axes = list(range(x.ndim - nax, x.ndim))
    else:
        axes = [normalize_axis(a, x.ndim) for a in axes]
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"fft: repeated axes {axes}")
    if s is None:
        sizes = [x.shape[a] for a in axes]
        if last_half and axes:
            sizes[-1] = 2 * (x.shape[axes[-1]] - 1)
    else:
        if len(s) != len(axes):
            raise InvalidArgumentError("fft: shape and axes have different lengths")
        sizes = [concrete_int(n, "fft size") for n in s]
    return axes, sizes


def _scale(x: Array, n: int, norm: str | None, inverse: bool) -> Array:
    norm = "backward" if norm is None else norm
    if norm not in ("backward", "ortho", "forward"):
        raise InvalidArgumentError(f"fft: norm must be backward, ortho or forward, got {norm!r}")
    # HLO's inverse transforms already divide by n
    if norm == "backward":
        return x
    if norm == "ortho":
        f = math.sqrt(n) if inverse else 1 / math.sqrt(n)
    else:
        f = float(n) if inverse else 1.0 / n
    return x * np.array(f, dtypes.to_inexact(x.dtype) if not dtypes.is_complex(x.dtype)
                        else (np.float32 if x.dtype == np.complex64 else np.float64))


def _transform(x: Array, kind: str, axes: list[int], sizes: list[int]) -> Array:
    """Apply the HLO transform over ``axes`` (at most three at a time)."""
    nd = x.ndim
    k = len(axes)
    order = [i for i in range(nd) if i not in axes] + axes
    y = lax.transpose(x, tuple(order)) if order != list(range(nd)) else x
    if kind in ("FFT", "IFFT") and k > 3:
        y = _transform(y, kind, list(range(nd - k, nd - 3)), sizes[:-3])
        y = _lax_fft(y, kind, sizes[-3:])
    elif k > 3:
        # real transforms: the last three axes with the real step, the rest complex
        if kind == "RFFT":
            y = _lax_fft(y, "RFFT", sizes[-3:])
            y = _transform(y, "FFT", list(range(nd - k, nd - 3)), sizes[:-3])
        else:
            y = _transform(y, "IFFT", list(range(nd - k, nd - 3)), sizes[:-3])
            y = _lax_fft(y, "IRFFT", sizes[-3:])
    else:
        y = _lax_fft(y, kind, sizes)
    inv = np.argsort(order)
    return lax.transpose(y, tuple(int(i) for i in inv)) if order != list(range(nd)) else y


def _complex_n(a: Any, s: Sequence[int] | None, axes: Sequence[int] | None,
               norm: str | None, kind: str) -> Array:
    """``fftn`` (kind ``FFT``) or ``ifftn`` (``IFFT``) of ``a`` over ``axes``."""
    x = _complex(asarray(a))
    axes_, sizes = _axes_and_sizes(x, s, axes, False)
    if not axes_:
        return x
    for ax, n in zip(axes_, sizes):
        x = _fit(x, ax, n)
    return _scale(_transform(x, kind, axes_, sizes), math.prod(sizes), norm, kind == "IFFT")


def fftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> Array:
    """The N-D discrete Fourier transform over ``axes``."""
    return _complex_n(a, s, axes, norm, "FFT")


def ifftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Array:
    """The N-D inverse discrete Fourier transform over ``axes``."""
    return _complex_n(a, s, axes, norm, "IFFT")


def rfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Array:
    """The N-D transform of real input: the last axis keeps ``n//2 + 1`` frequencies."""
    x = _real(asarray(a))
    axes_, sizes = _axes_and_sizes(x, s, axes, False)
    if not axes_:
        raise InvalidArgumentError("rfftn: at least one axis is needed")
    for ax, n in zip(axes_, sizes):
        x = _fit(x, ax, n)
    return _scale(_transform(x, "RFFT", axes_, sizes), math.prod(sizes), norm, False)


def irfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> Array:
    """The inverse of :func:`rfftn` (real output; ``s[-1]`` defaults to ``2 (m - 1)``)."""
    x = _complex(asarray(a))
    axes_, sizes = _axes_and_sizes(x, s, axes, True)
    if not axes_:
        raise InvalidArgumentError("irfftn: at least one axis is needed")
    for ax, n in zip(axes_[:-1], sizes[:-1]):
        x = _fit(x, ax, n)
    x = _fit(x, axes_[-1], sizes[-1] // 2 + 1)
    return _scale(_transform(x, "IRFFT", axes_, sizes), math.prod(sizes), norm, True)


def _one(nd_fn: Any, name: str, doc: str):
    def f(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
        return nd_fn(a, None if n is None else [n], [axis], norm)
    f.__name__ = name
    f.__doc__ = doc
    return f


def _two(nd_fn: Any, name: str, doc: str):
    def f(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Array:
        return nd_fn(a, s, axes, norm)
    f.__name__ = name
    f.__doc__ = doc
    return f


fft = _one(fftn, "fft", "The 1-D discrete Fourier transform along ``axis``.")
ifft = _one(ifftn, "ifft", "The 1-D inverse discrete Fourier transform along ``axis``.")
rfft = _one(rfftn, "rfft", "The 1-D transform of real input (``n//2 + 1`` frequencies).")
irfft = _one(irfftn, "irfft", "The inverse of :func:`rfft` (``n`` real outputs).")
fft2 = _two(fftn, "fft2", "The 2-D discrete Fourier transform over ``axes``.")
ifft2 = _two(ifftn, "ifft2", "The 2-D inverse discrete Fourier transform over ``axes``.")
rfft2 = _two(rfftn, "rfft2", "The 2-D transform of real input.")
irfft2 = _two(irfftn, "irfft2", "The inverse of :func:`rfft2`.")


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The transform of a Hermitian-symmetric signal given by its first half (real
    output of length ``n``, default ``2 (m - 1)``)."""
    x = asarray(a)
    m = x.shape[normalize_axis(axis, x.ndim)]
    n = 2 * (m - 1) if n is None else concrete_int(n, "hfft n")
    inv = {"backward": "forward", None: "forward", "forward": "backward", "ortho": "ortho"}
    if norm not in inv:
        raise InvalidArgumentError(f"hfft: norm must be backward, ortho or forward, got {norm!r}")
    return irfft(conj(_complex(x)), n, axis, inv[norm])


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The inverse of :func:`hfft`: the first half of the spectrum of real input."""
    inv = {"backward": "forward", None: "forward", "forward": "backward", "ortho": "ortho"}
    if norm not in inv:
        raise InvalidArgumentError(f"ihfft: norm must be backward, ortho or forward, got "
                                   f"{norm!r}")
    return conj(rfft(a, n, axis, inv[norm]))


def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Array:
    """The sample frequencies of an ``n``-point transform with spacing ``d``."""
    n = concrete_int(n, "fftfreq n")
    dt = dtypes.canonicalize(dtype or np.float32)
    k = concatenate([arange(0, (n - 1) // 2 + 1), arange(-(n // 2), 0)]).astype(dt)
    return k / (asarray(d).astype(dt) * n)


def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Array:
    """The non-negative sample frequencies of an ``n``-point real transform."""
    n = concrete_int(n, "rfftfreq n")
    dt = dtypes.canonicalize(dtype or np.float32)
    return arange(0, n // 2 + 1).astype(dt) / (asarray(d).astype(dt) * n)


def _shift(x: Any, axes: Any, sign: int) -> Array:
    x = asarray(x)
    axes = list(range(x.ndim)) if axes is None else \
        [normalize_axis(a, x.ndim) for a in (axes if isinstance(axes, (list, tuple))
                                             else [axes])]
    shifts = [sign * (x.shape[a] // 2) if sign > 0 else -(x.shape[a] // 2) for a in axes]
    return roll(x, tuple(shifts), tuple(axes)) if axes else x


def fftshift(x: Any, axes: Any = None) -> Array:
    """Move the zero frequency to the centre."""
    return _shift(x, axes, 1)


def ifftshift(x: Any, axes: Any = None) -> Array:
    """The inverse of :func:`fftshift`."""
    return _shift(x, axes, -1)


__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
           "ifftn", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]

