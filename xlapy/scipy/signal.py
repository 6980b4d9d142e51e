"""``xlapy.scipy.signal``: N-D convolution and correlation (``jax.scipy.signal``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import dtypes
from ..frontend.core import Array
from ..frontend.lax_nn import conv_general_dilated
from .. import numpy as xnp


def _convnd(in1: Any, in2: Any, mode: str, flip: bool, name: str) -> Array:
    a, b = xnp.asarray(in1), xnp.asarray(in2)
    if a.ndim != b.ndim:
        raise ShapeError(f"{name}: in1 and in2 must have the same number of dimensions, got "
                         f"{a.type_text()} and {b.type_text()}")
    if mode not in ("full", "same", "valid"):
        raise InvalidArgumentError(f"{name}: mode must be full, same or valid, got {mode!r}")
    if a.ndim == 0:
        return a * b
    if mode == "valid" and not (all(x >= y for x, y in zip(a.shape, b.shape)) or
                                all(x <= y for x, y in zip(a.shape, b.shape))):
        raise ShapeError(f"{name}: for valid mode one input must be at least as large as the "
                         "other in every dimension")
    swap = mode == "valid" and any(x < y for x, y in zip(a.shape, b.shape))
    if swap:
        a, b = b, a
    dt = dtypes.promote_types((a.dtype, a.weak_type), (b.dtype, b.weak_type))[0]
    calc = dt if dtypes.is_inexact(dt) else np.dtype(np.float32)
    a, b = a.astype(calc), b.astype(calc)
    if dtypes.is_complex(calc):
        from ..numpy import real, imag
        rr = _convnd(real(a), real(b), mode, flip, name) - _convnd(imag(a), imag(b), mode,
                                                                   flip, name)
        ii = _convnd(real(a), imag(b), mode, flip, name) + _convnd(imag(a), real(b), mode,
                                                                   flip, name)
        return (rr + 1j * ii).astype(dt)
    kernel = xnp.flip(b) if flip else b
    nd = a.ndim
    if mode == "full":
        pads = [(k - 1, k - 1) for k in b.shape]
    elif mode == "same":
        pads = [(k // 2 if flip else (k - 1) // 2,
                 k - 1 - (k // 2 if flip else (k - 1) // 2)) for k in b.shape]
    else:
        pads = [(0, 0)] * nd
    lhs = xnp.reshape(a, (1, 1) + a.shape)
    rhs = xnp.reshape(kernel, (1, 1) + kernel.shape)
    out = conv_general_dilated(lhs, rhs, (1,) * nd, pads)
    out = xnp.reshape(out, out.shape[2:])
    if swap and not flip:
        out = xnp.flip(out)
    if not dtypes.is_inexact(dt):
        out = xnp.round(out).astype(dt)
    return out


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
             precision: Any = None) -> Array:
    """N-D convolution (``full``, ``same`` or ``valid``)."""
    return _convnd(in1, in2, mode, True, "convolve")


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
              precision: Any = None) -> Array:
    """N-D cross-correlation: ``convolve(in1, flip(conj(in2)))`` (SciPy's definition, also
    for the centring of ``same``)."""
    b = xnp.asarray(in2)
    if dtypes.is_complex(b.dtype):
        b = xnp.conj(b)
    return _convnd(in1, xnp.flip(b) if b.ndim else b, mode, True, "correlate")


def convolve2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
               fillvalue: float = 0, precision: Any = None) -> Array:
    """2-D convolution (zero ``fill`` boundary only)."""
    if boundary != "fill" or fillvalue != 0:
        raise InvalidArgumentError("convolve2d: only boundary='fill' with fillvalue=0")
    if xnp.ndim(in1) != 2 or xnp.ndim(in2) != 2:
        raise ShapeError("convolve2d: inputs must be 2-D")
    return convolve(in1, in2, mode)


def correlate2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
                fillvalue: float = 0, precision: Any = None) -> Array:
    """2-D cross-correlation (zero ``fill`` boundary only)."""
    if boundary != "fill" or fillvalue != 0:
        raise InvalidArgumentError("correlate2d: only boundary='fill' with fillvalue=0")
    if xnp.ndim(in1) != 2 or xnp.ndim(in2) != 2:
        raise ShapeError("correlate2d: inputs must be 2-D")
    b = xnp.asarray(in2)
    return _convnd(in1, xnp.conj(b) if dtypes.is_complex(b.dtype) else b, mode, False,
                   "correlate2d")


def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Array:
    """Convolution through FFTs (over all axes)."""
    if axes is not None:
        raise InvalidArgumentError("fftconvolve: axes is not supported")
    a, b = xnp.asarray(in1), xnp.asarray(in2)
    if a.ndim != b.ndim:
        raise ShapeError("fftconvolve: inputs must have the same number of dimensions")
    full = tuple(x + y - 1 for x, y in zip(a.shape, b.shape))
    cplx = dtypes.is_complex(a.dtype) or dtypes.is_complex(b.dtype)
    if cplx:
        out = xnp.fft.ifftn(xnp.fft.fftn(a, full) * xnp.fft.fftn(b, full))
    else:
        out = xnp.fft.irfftn(xnp.fft.rfftn(a, full) * xnp.fft.rfftn(b, full), full)
    if mode == "full":
        return out
    if mode == "same":
        starts = [(f - s) // 2 for f, s in zip(full, a.shape)]
        return out[tuple(slice(st, st + s) for st, s in zip(starts, a.shape))]
    if mode == "valid":
        shape = tuple(abs(x - y) + 1 for x, y in zip(a.shape, b.shape))
        starts = [(f - s) // 2 for f, s in zip(full, shape)]
        return out[tuple(slice(st, st + s) for st, s in zip(starts, shape))]
    raise InvalidArgumentError(f"fftconvolve: mode must be full, same or valid, got {mode!r}")


def detrend(data: Any, axis: int = -1, type: str = "linear", bp: int = 0,
            overwrite_data: Any = None) -> Array:
    """``data`` minus its mean (``constant``) or least-squares line (``linear``)."""
    x = xnp.asarray(data)
    (x,) = xnp._elementwise.promote(x, to_inexact=True)
    if type in ("constant", "c"):
        return x - xnp.mean(x, axis=axis, keepdims=True)
    if type not in ("linear", "l"):
        raise InvalidArgumentError(f"detrend: type must be linear or constant, got {type!r}")
    if bp != 0:
        raise InvalidArgumentError("detrend: break points are not supported")
    y = xnp.moveaxis(x, axis, -1)
    n = y.shape[-1]
    t = xnp.arange(n, dtype=y.dtype)
    t = t - xnp.mean(t)
    slope = xnp.sum(y * t, axis=-1, keepdims=True) / xnp.sum(t * t)
    fit = xnp.mean(y, axis=-1, keepdims=True) + slope * t
    return xnp.moveaxis(y - fit, -1, axis)


from ._spectral import csd, istft, stft, welch  # noqa: E402,F401
