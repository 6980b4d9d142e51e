"""Complex elementwise semantics where XLA:CPU differs from NumPy's C99 (Annex G) functions.

The elementwise handlers (:mod:`.elementwise`) use these for ``complex`` and the
complex ``abs``, ``sign``, ``sqrt``, ``exponential``, ``exponential-minus-one``,
``log``, ``log-plus-one``, ``sine``, ``cosine``, ``tan``, ``tanh`` and ``divide``. Each
function takes complex arrays (c64 or c128) and computes in their component type.
The rules, checked against XLA:CPU (through jaxlib):

- ``complex(re, im)`` puts the parts in bit for bit (inf, NaN and -0 included);
- ``abs`` is ``hypot(re, im)``, but NaN when either part is NaN (also ``(inf, NaN)``);
- ``sign`` is ``(re / abs, im / abs)``, and ``z`` itself when ``abs == 0``;
- ``sqrt`` reads an imaginary ``-0`` as ``+0`` (so ``sqrt(-1 - 0j) == +1j``) and is
  ``(NaN, NaN)`` when either part is NaN;
- ``exponential`` of ``x + 0j`` or ``x - 0j`` is ``(exp(x), +0)``; of an infinite real
  part with an infinite or NaN imaginary part it is ``(NaN, NaN)``;
- ``log`` and ``log-plus-one`` are ``(NaN, NaN)`` when either part is NaN;
  ``log-plus-one`` is accurate for small ``z`` (``log1p(x)`` for the real part when
  ``1 + x`` dominates);
- ``exponential-minus-one`` of ``x +- 0j`` is ``(expm1(x) + 0, +0)`` (so ``-0`` gives ``+0``);
- ``sine`` is ``(sin x cosh y, cos x sinh y)`` and ``cosine`` ``(cos x cosh y, -sin x sinh y)``
  as plain products (so ``0 * inf`` gives NaN), with the ``sinh`` factor ``+0`` for
  ``y == +-0``. XLA spells ``sinh`` as ``(e**y - e**-y) / 2``, which loses relative
  precision for tiny ``|y|`` (about 1e-4 in c128, all of it in c64 for ``|y| < 1e-7``)
  and overflows from ``|y| > 709.78``; these values keep ``sinh``'s accuracy;
- ``tanh`` follows C99 except: the real part is NaN when ``sin(2y)`` is NaN and ``x`` is
  finite or NaN, and the imaginary part is ``+0`` when ``y == +-0`` or when ``x`` is
  infinite and ``y`` is not finite; ``tan(z) = -i tanh(iz)`` with that ``tanh``;
- ``cbrt`` is XLA's complex power ``z ** (1/3 + 0i)``: ``(re**2 + im**2) ** (1/6)`` times
  ``cos q + i sin q`` with ``q = atan2(im, re) / 3 + 0 * log(re**2 + im**2)``, so it is
  ``(NaN, NaN)`` where ``re**2 + im**2`` overflows, and ``0`` at ``0``;
- ``atan2(y, x)`` is ``-i log((x + i y) / sqrt(x**2 + y**2))`` with plain products
  ``(ac - bd) + (ad + bc)i`` and this module's ``sqrt``, ``divide`` and ``log``;
- ``divide`` is Smith's algorithm; when that gives ``(NaN, NaN)`` XLA recovers C99's
  special results: a zero denominator gives ``copysign(inf, re(b)) * a`` (unless both
  numerator parts are NaN), an infinite numerator over a finite denominator an
  infinity, a finite numerator over an infinite denominator a signed zero.
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def make_complex(re: np.ndarray, im: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A complex array of ``dtype`` whose parts are exactly ``re`` and ``im`` (broadcast)."""
    re, im = np.asarray(re), np.asarray(im)
    out = np.empty(np.broadcast_shapes(re.shape, im.shape), dtype)
    out.real = re
    out.imag = im
    return out


def _either_nan(z: np.ndarray) -> np.ndarray:
    return np.isnan(z.real) | np.isnan(z.imag)


def _all_nan(z: np.ndarray) -> np.ndarray:
    nan = np.array(np.nan, z.real.dtype)
    return make_complex(nan, nan, z.dtype)


def complex_abs(z: np.ndarray) -> np.ndarray:
    """``|z|`` (in the component type); NaN when either part is NaN."""
    mag = np.abs(z)
    return np.where(_either_nan(z), np.array(np.nan, mag.dtype), mag)


def complex_sign(z: np.ndarray) -> np.ndarray:
    """``z / |z|`` part by part; a zero ``z`` is returned as is (signs of zero kept)."""
    mag = complex_abs(z)
    zero = mag == 0
    safe = np.where(zero, np.ones((), mag.dtype), mag)
    return np.where(zero, z, make_complex(z.real / safe, z.imag / safe, z.dtype))


def complex_sqrt(z: np.ndarray) -> np.ndarray:
    """Principal square root with an imaginary -0 read as +0; NaN parts give (NaN, NaN)."""
    zero = np.zeros((), z.real.dtype)
    r = np.sqrt(make_complex(z.real, z.imag + zero, z.dtype))     # -0 + 0 == +0
    return np.where(_either_nan(z), _all_nan(z), r)


def complex_exp(z: np.ndarray) -> np.ndarray:
    """``e**z``; a zero imaginary part gives ``(exp(x), +0)``, ``(+-inf, inf|NaN)`` NaNs."""
    x, y = z.real, z.imag
    r = np.exp(z)
    real_axis = make_complex(np.exp(x), np.zeros((), x.dtype), z.dtype)
    r = np.where(y == 0, real_axis, r)
    return np.where(np.isinf(x) & ~np.isfinite(y), _all_nan(z), r)


def complex_expm1(z: np.ndarray) -> np.ndarray:
    """``e**z - 1``; on the real axis ``(expm1(x) + 0, +0)``."""
    x, y = z.real, z.imag
    zero = np.zeros((), x.dtype)
    real_axis = make_complex(np.expm1(x) + zero, zero, z.dtype)
    return np.where(y == 0, real_axis, np.expm1(z))


def _sinh_positive_zero(y: np.ndarray) -> np.ndarray:
    """``sinh(y)``, but ``+0`` for both zeros (XLA spells it ``(e**y - e**-y) / 2``)."""
    return np.where(y == 0, np.zeros((), y.dtype), np.sinh(y))


def complex_sin(z: np.ndarray) -> np.ndarray:
    """``(sin x cosh y, cos x sinh y)`` as plain products."""
    x, y = z.real, z.imag
    return make_complex(np.sin(x) * np.cosh(y), np.cos(x) * _sinh_positive_zero(y), z.dtype)


def complex_cos(z: np.ndarray) -> np.ndarray:
    """``(cos x cosh y, -sin x sinh y)`` as plain products."""
    x, y = z.real, z.imag
    return make_complex(np.cos(x) * np.cosh(y), np.sin(x) * _sinh_positive_zero(-y), z.dtype)


def complex_tanh(z: np.ndarray) -> np.ndarray:
    """C99 ``tanh`` with XLA's NaN and zero results when ``y`` is 0, infinite or NaN."""
    x, y = z.real, z.imag
    r = np.tanh(z)
    x_inf = np.isinf(x)
    y_bad = ~np.isfinite(y)                          # sin(2y) is NaN
    re = np.where(y_bad & ~x_inf, np.array(np.nan, x.dtype), r.real)
    im = np.where((y == 0) | (x_inf & y_bad), np.zeros((), x.dtype), r.imag)
    return make_complex(re, im, z.dtype)


def complex_tan(z: np.ndarray) -> np.ndarray:
    """``tan(z) = -i tanh(iz)``, with :func:`complex_tanh`."""
    w = complex_tanh(make_complex(-z.imag, z.real, z.dtype))
    return make_complex(w.imag, -w.real, z.dtype)


def complex_log(z: np.ndarray) -> np.ndarray:
    """Principal logarithm; (NaN, NaN) when either part is NaN."""
    return np.where(_either_nan(z), _all_nan(z), np.log(z))


def complex_log1p(z: np.ndarray) -> np.ndarray:
    """``log(1 + z)``, accurate near 0: ``log|1+z| = log(max) + log1p((min/max)**2) / 2``."""
    x, y = z.real, z.imag
    xp1 = x + np.ones((), x.dtype)
    big = np.maximum(np.abs(xp1), np.abs(y))       # NaN-propagating
    small = np.minimum(np.abs(xp1), np.abs(y))
    log_big = np.where(xp1 > np.abs(y), np.log1p(x), np.log(big))    # log1p(x) == log(1 + x)
    ratio = small / big
    re = np.where(np.isnan(ratio), log_big, log_big + np.log1p(ratio * ratio) / 2)
    r = make_complex(re, np.arctan2(y, xp1), z.dtype)
    return np.where(_either_nan(z), _all_nan(z), r)


def complex_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b`` by Smith's algorithm with XLA's recovery of C99's inf and zero results."""
    a, b = np.broadcast_arrays(a, b)
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    ft = ar.dtype
    one, zero, inf = np.ones((), ft), np.zeros((), ft), np.array(np.inf, ft)
    # Smith: divide through by the larger denominator part.
    imag_larger = np.abs(br) < np.abs(bi)
    ratio = np.where(imag_larger, br / bi, bi / br)
    denom = np.where(imag_larger, bi + br * ratio, br + bi * ratio)
    re = np.where(imag_larger, ar * ratio + ai, ar + ai * ratio) / denom
    im = np.where(imag_larger, ai * ratio - ar, ai - ar * ratio) / denom
    # C99 recovery, used only where Smith gave (NaN, NaN).
    zero_den = (br == 0) & (bi == 0) & ~(np.isnan(ar) & np.isnan(ai))
    sign_inf = np.copysign(inf, br)
    inf_num = (np.isinf(ar) | np.isinf(ai)) & np.isfinite(br) & np.isfinite(bi)
    sr = np.copysign(np.where(np.isinf(ar), one, zero), ar)
    si = np.copysign(np.where(np.isinf(ai), one, zero), ai)
    inf_den = (np.isinf(br) | np.isinf(bi)) & np.isfinite(ar) & np.isfinite(ai)
    tr = np.copysign(np.where(np.isinf(br), one, zero), br)
    ti = np.copysign(np.where(np.isinf(bi), one, zero), bi)
    rec_re = np.select([zero_den, inf_num, inf_den],
                       [sign_inf * ar, inf * (sr * br + si * bi), zero * (ar * tr + ai * ti)], re)
    rec_im = np.select([zero_den, inf_num, inf_den],
                       [sign_inf * ai, inf * (si * br - sr * bi), zero * (ai * tr - ar * ti)], im)
    both_nan = np.isnan(re) & np.isnan(im)
    return make_complex(np.where(both_nan, rec_re, re), np.where(both_nan, rec_im, im), a.dtype)


def _multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(ac - bd) + (ad + bc)i`` as plain products (``0 * inf`` gives NaN), as XLA multiplies."""
    re = a.real * b.real - a.imag * b.imag
    im = a.real * b.imag + a.imag * b.real
    return make_complex(re, im, np.result_type(a, b))


def complex_cbrt(z: np.ndarray) -> np.ndarray:
    """XLA's complex cube root: its complex power formula with exponent ``1/3 + 0i``."""
    re, im = z.real, z.imag
    ft = re.dtype.type
    third, zero = ft(1.0 / 3.0), ft(0.0)
    norm2 = re * re + im * im
    angle = np.arctan2(im, re)
    coeff = np.power(norm2, ft(0.5) * third) * np.exp(-zero * angle)
    q = third * angle + (ft(0.5) * zero) * np.log(norm2)
    out = make_complex(coeff * np.cos(q), coeff * np.sin(q), z.dtype)
    return np.where(norm2 == 0, np.zeros((), z.dtype), out)


def complex_atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """XLA's complex ``atan2(y, x) = -i log((x + i y) / sqrt(x**2 + y**2))``."""
    ft = x.real.dtype.type
    i = make_complex(ft(0.0), ft(1.0), x.dtype)
    minus_i = make_complex(ft(0.0), ft(-1.0), x.dtype)
    root = complex_sqrt(_multiply(x, x) + _multiply(y, y))
    return _multiply(minus_i, complex_log(complex_divide(x + _multiply(i, y), root)))


# The complex unary ops computed here (XLA's results differ from NumPy's on inf, NaN and -0);
# the other complex unary ops the op table accepts use NumPy's function.
COMPLEX_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sqrt": complex_sqrt, "exponential": complex_exp, "log": complex_log,
    "log-plus-one": complex_log1p, "exponential-minus-one": complex_expm1,
    "sine": complex_sin, "cosine": complex_cos, "tan": complex_tan, "tanh": complex_tanh,
    "cbrt": complex_cbrt,
}
