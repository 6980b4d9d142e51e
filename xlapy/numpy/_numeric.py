"""Numerical routines: convolution, polynomials, differences and integration, spaced
ranges, window functions, vector-matrix products and multi-dimensional histograms."""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import dtypes, lax
from ..frontend.core import Array
from ..frontend.tracing import concrete_int, concrete_value
from . import _reductions as R
from ._array_extra import histogram, searchsorted, vander
from ._elementwise import asarray, conj, cos, promote, sqrt, where
from ._indexing import scatter_update
from ._linalg import matmul
from ._reductions import normalize_axis
from ._shape_ops import arange, concatenate, linspace, moveaxis, ravel, reshape, zeros


def _same_dtype(*args: Any, inexact: bool = False) -> list[Array]:
    """The arguments converted to their promoted dtype (shapes kept)."""
    xs = [asarray(a) for a in args]
    dt, weak = dtypes.promote_types(*[(x.dtype, x.weak_type) for x in xs])
    if inexact and not dtypes.is_inexact(dt):
        dt = dtypes.DEFAULT_FLOAT
    return [lax.convert_element_type(x, dt, weak) for x in xs]


# ----------------------------------------------------------------------------- convolution
def _conv_full(a: Array, v: Array) -> Array:
    n, m = a.shape[0], v.shape[0]
    from ._pad import pad
    padded = pad(a, [(m - 1, m - 1)])
    idx = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
    windows = padded[asarray(idx.astype(np.int32))]
    return R.sum(windows * v[::-1], axis=-1)


def _conv(name: str, a: Any, v: Any, mode: str, conj_flip: bool) -> Array:
    a, v = _same_dtype(a, v, inexact=True)
    if a.ndim != 1 or v.ndim != 1:
        raise ShapeError(f"{name}: only 1-D inputs are supported, got {a.type_text()} and "
                         f"{v.type_text()}")
    if a.size == 0 or v.size == 0:
        raise InvalidArgumentError(f"{name}: inputs cannot be empty")
    if conj_flip:
        v = conj(v)[::-1]
    n, m = a.shape[0], v.shape[0]
    swapped = m > n
    full = _conv_full(v, a) if swapped else _conv_full(a, v)
    if mode == "full":
        out = full
    elif mode == "same":
        # NumPy correlates the longer input with the shorter one and reverses the result
        # when it swapped them, which moves the centred window by one for even lengths
        lo = builtins.min(n, m) // 2 if conj_flip and swapped else (builtins.min(n, m) - 1) // 2
        out = full[lo:lo + builtins.max(n, m)]
    elif mode == "valid":
        lo = builtins.min(n, m) - 1
        out = full[lo:lo + builtins.max(n, m) - builtins.min(n, m) + 1]
    else:
        raise InvalidArgumentError(f"{name}: mode must be full, same or valid, got {mode!r}")
    return out


def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
             preferred_element_type: Any = None) -> Array:
    """Discrete linear convolution of two 1-D arrays (``full``, ``same`` or ``valid``)."""
    out = _conv("convolve", a, v, mode, False)
    return out.astype(preferred_element_type) if preferred_element_type else out


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None) -> Array:
    """Cross-correlation of two 1-D arrays, NumPy's definition (``v`` conjugated)."""
    out = _conv("correlate", a, v, mode, True)
    return out.astype(preferred_element_type) if preferred_element_type else out


# ----------------------------------------------------------------------------- polynomials
def _poly1d(p: Any, name: str) -> Array:
    x = asarray(p)
    if x.ndim != 1:
        raise ShapeError(f"{name}: coefficients must be 1-D, got {x.type_text()}")
    return x


def polyval(p: Any, x: Any, *, unroll: int = 16) -> Array:
    """``p[0] x^(n-1) + ... + p[n-1]`` by Horner's rule."""
    p, x = _same_dtype(_poly1d(p, "polyval"), x)
    out = x * 0
    for i in range(p.shape[0]):
        out = out * x + p[i]
    return out


def polyadd(a1: Any, a2: Any) -> Array:
    """The sum of two polynomials (highest power first)."""
    a, b = _promote_1d(a1, a2, "polyadd")
    n = builtins.max(a.shape[0], b.shape[0])
    from ._pad import pad
    return pad(a, [(n - a.shape[0], 0)]) + pad(b, [(n - b.shape[0], 0)])


def _promote_1d(a1: Any, a2: Any, name: str) -> tuple[Array, Array]:
    a, b = _same_dtype(_poly1d(a1, name), _poly1d(a2, name))
    return a, b


def polysub(a1: Any, a2: Any) -> Array:
    """The difference of two polynomials."""
    a, b = _promote_1d(a1, a2, "polysub")
    return polyadd(a, -b)


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Array:
    """The product of two polynomials."""
    a, b = _promote_1d(a1, a2, "polymul")
    if trim_leading_zeros:
        from ._manipulation import trim_zeros
        a, b = trim_zeros(a, "f"), trim_zeros(b, "f")
    if a.size == 0 or b.size == 0:
        return zeros((1,), a.dtype)
    return convolve(a, b)


def polyder(p: Any, m: int = 1) -> Array:
    """The ``m``-th derivative of a polynomial."""
    p = _poly1d(p, "polyder")
    m = concrete_int(m, "polyder m")
    if m < 0:
        raise InvalidArgumentError("polyder: order of derivative must be non-negative")
    for _ in range(m):
        n = p.shape[0]
        if n <= 1:
            return p[:0]
        p = p[:-1] * asarray(np.arange(n - 1, 0, -1)).astype(p.dtype)
    return p


def polyint(p: Any, m: int = 1, k: Any = None) -> Array:
    """The ``m``-th antiderivative of a polynomial, integration constants ``k``."""
    p = promote(_poly1d(p, "polyint"), to_inexact=True)[0]
    m = concrete_int(m, "polyint m")
    if m < 0:
        raise InvalidArgumentError("polyint: order of integral must be non-negative")
    ks = np.zeros(m) if k is None else np.broadcast_to(np.asarray(concrete_value(k, "k")),
                                                         (m,))
    for i in range(m):
        n = p.shape[0]
        p = concatenate([p / asarray(np.arange(n, 0, -1)).astype(p.dtype),
                         asarray(ks[i]).astype(p.dtype)[None]])
    return p


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Array, Array]:
    """Quotient and remainder of polynomial division (``v``'s leading coefficient must be
    non-zero)."""
    u = promote(_poly1d(u, "polydiv"), to_inexact=True)[0]
    v = _poly1d(v, "polydiv").astype(u.dtype)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    q = zeros((builtins.max(m - n + 1, 1),), u.dtype)
    r = u
    for k in range(m - n + 1):
        d = scale * r[k]
        q = q.at[k].set(d)
        r = r.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        from ._manipulation import trim_zeros
        r = trim_zeros(r, "f")
    return q, r


def polyfit(x: Any, y: Any, deg: int, rcond: Any = None, full: bool = False, w: Any = None,
            cov: Any = False) -> Any:
    """Least-squares polynomial fit of degree ``deg`` (coefficients highest power first)."""
    from . import linalg
    deg = concrete_int(deg, "polyfit deg")
    if deg < 0:
        raise InvalidArgumentError("polyfit: expected deg >= 0")
    x, y = _same_dtype(x, y, inexact=True)
    lhs = vander(x, deg + 1)
    rhs = y
    if w is not None:
        ww = asarray(w).astype(lhs.dtype)
        lhs = lhs * ww[:, None]
        rhs = rhs * (ww if rhs.ndim == 1 else ww[:, None])
    scale = sqrt(R.sum(lhs * lhs, axis=0))
    c, resids, rank, s = linalg.lstsq(lhs / scale, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, asarray(rcond if rcond is not None else
                                           x.shape[0] * float(np.finfo(np.float32).eps))
    if cov:
        raise InvalidArgumentError("polyfit: cov=True is not supported")
    return c


def poly(seq_of_zeros: Any) -> Array:
    """The coefficients of the monic polynomial with the given roots (1-D input)."""
    z = asarray(seq_of_zeros)
    if z.ndim != 1:
        raise ShapeError("poly: only 1-D sequences of roots are supported")
    (z,) = promote(z, to_inexact=True)
    a = asarray(np.ones((1,), z.dtype))
    for i in range(z.shape[0]):
        a = convolve(a, concatenate([asarray(np.ones((1,), z.dtype)), -z[i:i + 1]]))
    return a


def roots(p: Any, *, strip_zeros: bool = True) -> Array:
    """The roots of a polynomial: the eigenvalues of its companion matrix (complex).
    Leading zeros are stripped (which needs concrete coefficients, as in JAX); trailing
    zeros give zero roots."""
    p = promote(_poly1d(p, "roots"), to_inexact=True)[0]
    if strip_zeros:
        v = np.asarray(concrete_value(p, "roots coefficients (strip_zeros=True)"))
        nz = np.flatnonzero(v)
        if nz.size == 0:
            return zeros((0,), np.complex64)
        p = p[int(nz[0]):]
        trailing = int(len(v) - 1 - nz[-1])
        p = p[:p.shape[0] - trailing] if trailing else p
    else:
        trailing = 0
    n = p.shape[0] - 1
    if n < 1:
        found = zeros((0,), np.complex64)
    else:
        from . import linalg
        from ._shape_ops import eye
        first = reshape(-p[1:] / p[0], (1, n))
        comp = concatenate([first, eye(n - 1, n, dtype=p.dtype)], 0) if n > 1 else first
        found = linalg.eigvals(comp)
    if trailing:
        found = concatenate([found, zeros((trailing,), found.dtype)])
    return found


# ------------------------------------------------------------------ differences, integrals
def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int | None = None) -> Any:
    """Second-order central differences inside, first-order at the edges (unit or scalar
    spacing, or coordinate arrays)."""
    (y,) = promote(f, to_inexact=True)
    axes = list(range(y.ndim)) if axis is None else \
        [normalize_axis(a, y.ndim) for a in (axis if isinstance(axis, (tuple, list))
                                             else (axis,))]
    if edge_order not in (None, 1):
        raise InvalidArgumentError("gradient: only edge_order=1 is supported")
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise InvalidArgumentError("gradient: invalid number of spacing arguments")
    out = []
    for ax, h in zip(axes, spacing):
        if y.shape[ax] < 2:
            raise ShapeError("gradient: each dimension must have at least 2 elements")
        z = moveaxis(y, ax, 0)
        if np.ndim(h) == 0:
            interior = (z[2:] - z[:-2]) / (2.0 * h)
            first, last = (z[1] - z[0]) / h, (z[-1] - z[-2]) / h
        else:
            x = asarray(h).astype(z.dtype)
            d = x[1:] - x[:-1]
            d1, d2 = d[:-1], d[1:]
            bshape = (-1,) + (1,) * (z.ndim - 1)
            a_ = reshape(-d2 / (d1 * (d1 + d2)), bshape)
            b_ = reshape((d2 - d1) / (d1 * d2), bshape)
            c_ = reshape(d1 / (d2 * (d1 + d2)), bshape)
            interior = a_ * z[:-2] + b_ * z[1:-1] + c_ * z[2:]
            first, last = (z[1] - z[0]) / d[0], (z[-1] - z[-2]) / d[-1]
        g = concatenate([first[None], interior, last[None]], 0)
        out.append(moveaxis(g, 0, ax))
    return out[0] if len(out) == 1 else out


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Array:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule."""
    (y,) = promote(y, to_inexact=True)
    ax = normalize_axis(axis, y.ndim)
    z = moveaxis(y, ax, -1)
    if x is None:
        d = asarray(dx)
    else:
        xv = asarray(x)
        d = xv[1:] - xv[:-1] if xv.ndim == 1 else moveaxis(xv, ax, -1)[..., 1:] - \
            moveaxis(xv, ax, -1)[..., :-1]
    return R.sum(d * (z[..., 1:] + z[..., :-1]), axis=-1) * 0.5


def _linspace_axis(start: Any, stop: Any, num: int, endpoint: bool, axis: int) -> Array:
    out = linspace(start, stop, num, endpoint)
    return moveaxis(out, 0, axis) if axis != 0 else out


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
             dtype: Any = None, axis: int = 0) -> Array:
    """``base ** linspace(start, stop, num)``."""
    from ._elementwise import power
    out = power(asarray(base), _linspace_axis(start, stop, num, endpoint, axis))
    return out.astype(dtype) if dtype is not None else out


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> Array:
    """Numbers spaced evenly on a log scale from ``start`` to ``stop`` (same signs)."""
    from ._elementwise import exp, log, sign
    s, e = promote(start, stop, to_inexact=True)
    sgn = sign(s)
    ls, le = log(s * sgn), log(e * sgn)
    out = sgn * exp(_linspace_axis(ls, le, num, endpoint, axis))
    n = concrete_int(num, "geomspace num")
    if n > 0:
        out = out.at[0].set(s) if axis == 0 and out.ndim == 1 else out
        if endpoint and n > 1 and axis == 0 and out.ndim == 1:
            out = out.at[-1].set(e)
    return out.astype(dtype) if dtype is not None else out


# ------------------------------------------------------------------------------- windows
def _window_n(M: Any) -> int:
    return concrete_int(M, "window length")


def _cos_window(M: Any, coeffs: Sequence[float]) -> Array:
    n = _window_n(M)
    if n < 1:
        return zeros((0,), np.float32)
    if n == 1:
        return asarray(np.ones((1,), np.float32))
    k = arange(0, n).astype(np.float32)
    out = asarray(np.float32(coeffs[0])) + 0 * k
    for j, c in enumerate(coeffs[1:], start=1):
        out = out + np.float32(c) * cos(np.float32(2 * np.pi * j) * k / np.float32(n - 1))
    return out


def hanning(M: Any) -> Array:
    """The Hann window of length ``M``."""
    return _cos_window(M, (0.5, -0.5))


def hamming(M: Any) -> Array:
    """The Hamming window of length ``M``."""
    return _cos_window(M, (0.54, -0.46))


def blackman(M: Any) -> Array:
    """The Blackman window of length ``M``."""
    return _cos_window(M, (0.42, -0.5, 0.08))


def bartlett(M: Any) -> Array:
    """The triangular (Bartlett) window of length ``M``."""
    n = _window_n(M)
    if n < 1:
        return zeros((0,), np.float32)
    if n == 1:
        return asarray(np.ones((1,), np.float32))
    k = arange(0, n).astype(np.float32)
    half = np.float32((n - 1) / 2)
    from ._elementwise import absolute
    return 1 - absolute(k - half) / half


def kaiser(M: Any, beta: Any) -> Array:
    """The Kaiser window of length ``M`` and shape ``beta``."""
    from ._math_special import i0
    n = _window_n(M)
    if n < 1:
        return zeros((0,), np.float32)
    if n == 1:
        return asarray(np.ones((1,), np.float32))
    (b,) = promote(beta, to_inexact=True)
    k = arange(0, n).astype(b.dtype)
    alpha = (n - 1) / 2.0
    r = (k - alpha) / alpha
    return i0(b * sqrt(1 - r * r)) / i0(b)


# ------------------------------------------------------------------ vector-matrix products
def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Array:
    """``sum(conj(x1) * x2, axis)`` with broadcasting."""
    a, b = promote(x1, x2)
    out = R.sum(conj(a) * b, axis=axis)
    return out.astype(preferred_element_type) if preferred_element_type else out


def matvec(x1: Any, x2: Any, /) -> Array:
    """Matrix-vector products over broadcast batch dimensions."""
    return matmul(x1, asarray(x2)[..., None])[..., 0]


def vecmat(x1: Any, x2: Any, /) -> Array:
    """Vector-matrix products ``conj(x1) @ x2`` over broadcast batch dimensions."""
    return matmul(conj(asarray(x1))[..., None, :], x2)[..., 0, :]


def einsum_path(subscripts: str, *operands: Any, optimize: Any = "greedy") -> tuple:
    """NumPy's contraction order for ``einsum`` on operands of these shapes."""
    shapes = [np.empty(asarray(o).shape, np.float32) if not isinstance(o, str) else o
              for o in operands]
    path, text = np.einsum_path(subscripts, *shapes, optimize=optimize)
    return path[1:], text             # JAX's form: the pairs only, then the report


# ----------------------------------------------------------------------------- histograms
def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None,
                        weights: Any = None) -> Array:
    """The edges ``histogram`` would use."""
    return histogram(a, bins, range, weights)[1]


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, weights: Any = None,
                density: bool | None = None) -> tuple[Array, list[Array]]:
    """A D-dimensional histogram of ``sample`` (``N x D``); counts are int32 without
    weights or density (as in JAX), floats otherwise."""
    x = promote(sample, to_inexact=True)[0]
    if x.ndim != 2:
        raise ShapeError(f"histogramdd: sample must be N x D, got {x.type_text()}")
    n, d = x.shape
    bins_l = bins if isinstance(bins, (list, tuple)) else [bins] * d
    ranges = range if range is not None else [None] * d
    edges = [histogram(x[:, i], bins_l[i], ranges[i])[1] for i in builtins.range(d)]
    nbins = [e.shape[0] + 1 for e in edges]
    flat = asarray(np.int32(0))
    for i, e in enumerate(edges):
        idx = searchsorted(e, x[:, i], side="right")
        idx = where(x[:, i] == e[-1], e.shape[0] - 1, idx)
        flat = flat * nbins[i] + idx
    cdt = np.dtype(np.int32) if weights is None and not density else x.dtype
    w = asarray(np.ones((n,), cdt)) if weights is None else ravel(weights).astype(cdt)
    total = int(np.prod(nbins))
    counts = scatter_update(zeros((total,), cdt), flat, w, "add")
    counts = reshape(counts, tuple(nbins))[tuple(slice(1, -1) for _ in edges)]
    if density:
        widths = [e[1:] - e[:-1] for e in edges]
        vol = widths[0]
        for wd in widths[1:]:
            vol = vol[..., None] * wd
        counts = counts / R.sum(counts) / vol
    return counts, edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, weights: Any = None,
                density: bool | None = None) -> tuple[Array, Array, Array]:
    """A 2-D histogram of the points ``(x, y)``."""
    from ._shape_ops import stack
    counts, (ex, ey) = histogramdd(stack([ravel(x), ravel(y)], axis=1), bins, range, weights,
                                   density)
    return counts, ex, ey
