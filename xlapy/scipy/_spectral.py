"""Windowed-FFT spectral estimates of ``jax.scipy.signal``: :func:`stft`, :func:`istft`,
:func:`csd` and :func:`welch`, written over ``xlapy.numpy.fft`` with JAX's (SciPy's)
definitions, defaults and scalings."""
from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import dtypes
from ..frontend.core import Array
from .. import numpy as xnp

log = logging.getLogger(__name__)


def _complex_of(dtype: Any) -> np.dtype:
    """The complex dtype with ``dtype``'s precision (complex64 for half/bfloat16)."""
    dt = np.dtype(dtype)
    if dtypes.is_complex(dt):
        return dt
    return np.dtype(np.complex128 if dt == np.float64 else np.complex64)


def _hann(n: int, dtype: Any) -> Array:
    if n == 1:
        return xnp.asarray(np.ones(1), dtype=dtype)
    return (xnp.sin(xnp.linspace(0, np.pi, n, endpoint=False)) ** 2).astype(dtype)


def _named_window(window: Any, n: int, dtype: Any, name: str) -> Array:
    if isinstance(window, str) and window == "hann":
        return _hann(n, dtype)
    try:
        from scipy.signal import get_window
    except ImportError as err:
        raise InvalidArgumentError(f"{name}: window {window!r} needs scipy (only 'hann' is "
                                   "built in)") from err
    return xnp.asarray(np.asarray(get_window(window, n)), dtype=dtype)


def _triage_segments(window: Any, nperseg: int | None, length: int, dtype: Any,
                     name: str) -> tuple[Array, int]:
    """The window array and segment length (``scipy.signal``'s ``_triage_segments``)."""
    if isinstance(window, (str, tuple)):
        n = length if nperseg is None else int(nperseg)
        if n > length:
            log.warning("%s: nperseg=%d is greater than the input length %d, using %d",
                        name, n, length, length)
            n = length
        return _named_window(window, n, dtype, name), n
    win = xnp.asarray(window).astype(dtype)
    n = win.size if nperseg is None else int(nperseg)
    if win.ndim != 1:
        raise ShapeError(f"{name}: window must be 1-D, got {win.type_text()}")
    if length < win.size:
        raise ShapeError(f"{name}: window is longer than the input signal")
    if n != win.size:
        raise InvalidArgumentError(f"{name}: nperseg {n} differs from the window length "
                                   f"{win.size}")
    return win, n


def _odd_ext(x: Array, n: int) -> Array:
    if n < 1:
        return x
    if n > x.shape[-1] - 1:
        raise ShapeError(f"odd extension of {n} points needs more than {n} samples")
    left = 2 * x[..., :1] - xnp.flip(x[..., 1:n + 1], axis=-1)
    right = 2 * x[..., -1:] - xnp.flip(x[..., -(n + 1):-1], axis=-1)
    return xnp.concatenate((left, x, right), axis=-1)


def _extend(x: Array, boundary: str, n: int) -> Array:
    if boundary == "odd":
        return _odd_ext(x, n)
    widths = [(0, 0)] * (x.ndim - 1) + [(n, n)]
    mode = {"even": "reflect", "constant": "edge", "zeros": "constant"}[boundary]
    return xnp.pad(x, widths, mode)


def _segments_fft(x: Array, win: Array, detrend_func: Callable[[Array], Array], nperseg: int,
                  noverlap: int, nfft: int, twosided: bool) -> Array:
    """Windowed FFTs of the overlapping segments: shape ``(..., segments, freqs)``."""
    if not dtypes.is_inexact(x.dtype):
        x = x.astype(win.dtype)
    length = x.shape[-1]
    if nperseg == 1 and noverlap == 0:
        segs = x[..., None]
    else:
        starts = np.arange(0, length - nperseg + 1, nperseg - noverlap)
        idx = starts[:, None] + np.arange(nperseg)[None, :]
        segs = xnp.take(x, xnp.asarray(idx.astype(np.int32)), axis=-1)
    segs = detrend_func(segs)
    if dtypes.is_complex(win.dtype) and not dtypes.is_complex(segs.dtype):
        segs = segs.astype(_complex_of(segs.dtype))
    segs = win * segs
    if twosided:
        return xnp.fft.fft(segs, n=nfft)
    return xnp.fft.rfft(xnp.real(segs), n=nfft)


def _spectral_helper(x: Any, y: Any, fs: Any, window: Any, nperseg: int | None,
                     noverlap: int | None, nfft: int | None, detrend_type: Any,
                     return_onesided: bool, scaling: str, axis: int, mode: str,
                     boundary: str | None = None, padded: bool = False,
                     name: str = "spectral") -> tuple[Array, Array, Array]:
    """``jax.scipy.signal._spectral_helper``: frequencies, segment times and the windowed
    spectra (``mode`` ``psd`` or ``stft``), frequency axis last but one."""
    from .signal import detrend
    if boundary not in (None, "even", "odd", "constant", "zeros"):
        raise InvalidArgumentError(f"{name}: unknown boundary {boundary!r}")
    x = xnp.asarray(x)
    (x,) = xnp._elementwise.promote(x, to_inexact=True)
    ax = axis + x.ndim if axis < 0 else axis
    if not 0 <= ax < max(x.ndim, 1):
        raise InvalidArgumentError(f"{name}: axis {axis} is out of range for rank {x.ndim}")
    if y is not None:
        yv = xnp.asarray(y)
        x, yv = xnp._elementwise.promote(x, yv, to_inexact=True)
        if x.ndim != yv.ndim:
            raise ShapeError(f"{name}: x and y must have the same rank, got "
                             f"{x.type_text()} and {yv.type_text()}")
    result_dtype = _complex_of(x.dtype)
    freq_dtype = np.finfo(result_dtype).dtype
    if nperseg is not None and int(nperseg) < 1:
        raise InvalidArgumentError(f"{name}: nperseg must be a positive integer")
    win, nps = _triage_segments(window, nperseg, x.shape[ax], x.dtype, name)
    nov = nps // 2 if noverlap is None else int(noverlap)
    nff = nps if nfft is None else int(nfft)
    x = xnp.moveaxis(x, ax, -1)
    if y is not None:
        yv = xnp.moveaxis(yv, ax, -1) if yv.ndim > 1 else yv
        diff = yv.shape[-1] - x.shape[-1]
        if diff > 0:
            x = xnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, diff)])
        elif diff < 0:
            yv = xnp.pad(yv, [(0, 0)] * (yv.ndim - 1) + [(0, -diff)])
    if nff < nps:
        raise InvalidArgumentError(f"{name}: nfft must be greater than or equal to nperseg")
    if nov >= nps:
        raise InvalidArgumentError(f"{name}: noverlap must be less than nperseg")
    nstep = nps - nov
    if boundary is not None:
        x = _extend(x, boundary, nps // 2)
        if y is not None:
            yv = _extend(yv, boundary, nps // 2)
    if padded:
        nadd = (-(x.shape[-1] - nps) % nstep) % nps
        x = xnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, nadd)])
        if y is not None:
            yv = xnp.pad(yv, [(0, 0)] * (yv.ndim - 1) + [(0, nadd)])
    if isinstance(detrend_type, str):
        def detrend_func(d: Array) -> Array:
            return detrend(d, axis=-1, type=detrend_type)
    elif callable(detrend_type):
        detrend_func = detrend_type
    elif not detrend_type:
        def detrend_func(d: Array) -> Array:
            return d
    else:
        raise InvalidArgumentError(f"{name}: unsupported detrend {detrend_type!r}")
    if scaling == "density":
        scale = 1.0 / (fs * xnp.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / xnp.sum(win) ** 2
    else:
        raise InvalidArgumentError(f"{name}: unknown scaling {scaling!r}")
    if mode == "stft":
        scale = xnp.sqrt(scale)
    twosided = not return_onesided or dtypes.is_complex(x.dtype) or (
        y is not None and dtypes.is_complex(yv.dtype))
    if return_onesided and twosided:
        log.warning("%s: input data is complex, switching to return_onesided=False", name)
    freqs = (xnp.fft.fftfreq(nff, 1 / fs) if twosided else
             xnp.fft.rfftfreq(nff, 1 / fs)).astype(freq_dtype)
    result = _segments_fft(x, win, detrend_func, nps, nov, nff, twosided)
    if y is not None:
        result = xnp.conj(result) * _segments_fft(yv, win, detrend_func, nps, nov, nff,
                                                  twosided)
    elif mode == "psd":
        result = xnp.conj(result) * result
    result = result * scale.astype(result_dtype)
    if not twosided and mode == "psd":
        end = result.shape[-1] - (0 if nff % 2 else 1)
        mult = np.ones(result.shape[-1], freq_dtype)
        mult[1:end] = 2
        result = result * mult
    time = xnp.asarray(np.arange(nps / 2, x.shape[-1] - nps / 2 + 1, nps - nov,
                                 dtype=freq_dtype)) / fs
    if boundary is not None:
        time = time - (nps / 2) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = xnp.real(result)
    return freqs, time.astype(freq_dtype), xnp.moveaxis(result, -1, ax)


def stft(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int = 256,
         noverlap: int | None = None, nfft: int | None = None, detrend: Any = False,
         return_onesided: bool = True, boundary: str | None = "zeros", padded: bool = True,
         axis: int = -1) -> tuple[Array, Array, Array]:
    """Short-time Fourier transform ``(f, t, Zxx)`` (``scipy.signal.stft``, spectrum
    scaling)."""
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, "spectrum", axis, "stft", boundary, padded,
                            name="stft")


def csd(x: Any, y: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean") -> tuple[Array, Array]:
    """Cross power spectral density ``(f, Pxy)`` by Welch's method; ``y=None`` gives the
    power spectral density of ``x``."""
    freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                     return_onesided, scaling, axis, "psd", name="csd")
    if y is not None:
        pxy = pxy.astype(_complex_of(pxy.dtype))
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                n = pxy.shape[-1]
                ii = np.arange(2.0, n, 2)
                bias = 1 + np.sum(1.0 / (ii + 1) - 1.0 / ii)
                if dtypes.is_complex(pxy.dtype):
                    pxy = (xnp.median(xnp.real(pxy), axis=-1)
                           + 1j * xnp.median(xnp.imag(pxy), axis=-1)).astype(pxy.dtype)
                else:
                    pxy = xnp.median(pxy, axis=-1)
                pxy = pxy / xnp.asarray(bias, dtype=pxy.dtype)
            elif average == "mean":
                pxy = xnp.mean(pxy, axis=-1)
            else:
                raise InvalidArgumentError(f"csd: average must be median or mean, got "
                                           f"{average!r}")
        else:
            pxy = xnp.reshape(pxy, pxy.shape[:-1])
    return freqs, pxy


def welch(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean") -> tuple[Array, Array]:
    """Power spectral density ``(f, Pxx)`` by Welch's method (averaged periodograms)."""
    freqs, pxx = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                     return_onesided, scaling, axis, average)
    return freqs, xnp.real(pxx)


def _overlap_and_add(x: Array, step: int) -> Array:
    """Sum frames ``(..., frames, frame_length)`` placed ``step`` apart."""
    *batch, nframes, seg = x.shape
    out_len = step * (nframes - 1) + seg
    pos = (np.arange(nframes)[:, None] * step + np.arange(seg)[None, :]).reshape(-1)
    flat = xnp.moveaxis(xnp.reshape(x, tuple(batch) + (nframes * seg,)), -1, 0)
    out = xnp.zeros((out_len,) + tuple(batch), dtype=x.dtype).at[pos].add(flat)
    return xnp.moveaxis(out, 0, -1)


def istft(Zxx: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2) -> tuple[Array, Array]:
    """Inverse short-time Fourier transform ``(t, x)`` (``scipy.signal.istft``)."""
    z = xnp.asarray(Zxx)
    if z.ndim < 2:
        raise ShapeError(f"istft: the input must be at least 2-D, got {z.type_text()}")
    fa, ta = freq_axis % z.ndim, time_axis % z.ndim
    if fa == ta:
        raise InvalidArgumentError("istft: time and frequency axes must differ")
    z = z.astype(_complex_of(z.dtype) if dtypes.is_inexact(z.dtype)
                 else np.complex64)
    n_default = 2 * (z.shape[fa] - 1) if input_onesided else z.shape[fa]
    nps = int(nperseg or n_default)
    if nps < 1:
        raise InvalidArgumentError("istft: nperseg must be a positive integer")
    if nfft is None:
        nff = n_default + (1 if input_onesided and nps == n_default + 1 else 0)
    else:
        nff = int(nfft)
    if nff < nps:
        raise InvalidArgumentError(f"istft: FFT length {nff} must be at least nperseg {nps}")
    nov = int(noverlap or nps // 2)
    if nov >= nps:
        raise InvalidArgumentError("istft: noverlap must be less than nperseg")
    nstep = nps - nov
    if ta != z.ndim - 1 or fa != z.ndim - 2:
        outer = tuple(i for i in range(z.ndim) if i not in (ta, fa))
        z = xnp.transpose(z, outer + (fa, ta))
    sub = (xnp.fft.irfft(z, n=nfft, axis=-2) if input_onesided
           else xnp.fft.ifft(z, n=nfft, axis=-2))[..., :nps, :]
    if isinstance(window, (str, tuple)):
        win = _named_window(window, nps, sub.dtype, "istft")
    else:
        win = xnp.asarray(window)
        if win.ndim != 1 or win.shape[0] != nps:
            raise ShapeError(f"istft: window must be 1-D of length {nps}, got "
                             f"{win.type_text()}")
    sub = sub * xnp.sum(win)
    wcol = xnp.reshape(win, (nps, 1))
    x = _overlap_and_add(xnp.swapaxes(sub * wcol, -2, -1), nstep)
    wsq = xnp.broadcast_to(wcol * wcol, (nps, sub.shape[-1]))
    norm = _overlap_and_add(xnp.swapaxes(wsq, -2, -1), nstep)
    if boundary:
        h = nps // 2
        x, norm = x[..., h:x.shape[-1] - h], norm[..., h:norm.shape[-1] - h]
    x = x / xnp.where(norm > 1e-10, norm, 1.0).astype(norm.dtype)
    if x.ndim > 1 and ta != z.ndim - 1:
        x = xnp.moveaxis(x, -1, ta - 1 if fa < ta else ta)
    time = xnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
    return time, x
