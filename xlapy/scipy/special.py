"""``xlapy.scipy.special``: ``jax.scipy.special``'s functions.

Floating inputs (integers promote to float32); the gamma-family, Bessel and error
functions come from :mod:`xlapy.frontend.lax_special` (see its methods). ``ndtri`` refines
an Abramowitz-Stegun start with Newton steps on ``log_ndtr`` (accurate in the tails);
``log_ndtr`` uses ``log(erfc)`` down to -10 and the asymptotic series below.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend import lax_special as S
from ..frontend.core import Array
from ..frontend.tracing import concrete_int
from .. import numpy as xnp
from ..nn import log_softmax as _log_softmax, softmax as _softmax
from ..numpy._elementwise import promote


def _f(*xs: Any) -> list[Array]:
    out = promote(*xs, to_inexact=True)
    if dtypes.is_complex(out[0].dtype):
        raise InvalidArgumentError("this special function does not take complex input")
    return out


def erf(x: Any) -> Array:
    """The error function."""
    (x,) = _f(x)
    return lax.erf(x)


def erfc(x: Any) -> Array:
    """The complementary error function ``1 - erf(x)``."""
    (x,) = _f(x)
    return S.erfc(x)


def erfinv(x: Any) -> Array:
    """The inverse error function."""
    (x,) = _f(x)
    return lax.erf_inv(x)


def erfcx(x: Any) -> Array:
    """The scaled complementary error function ``exp(x^2) erfc(x)``."""
    (x,) = _f(x)
    big = x > 0.5
    safe = xnp.where(big, x, 1.0)
    w = 1.0 / (safe + 1.0)
    tail = S._clenshaw(w * 3.0 - 1.0, S._cheb_coeffs("erfcx")) * w
    small = xnp.exp(x * x) * S.erfc(xnp.where(big, 0.0, x))
    return xnp.where(big, tail, small)


def expit(x: Any) -> Array:
    """The logistic sigmoid ``1 / (1 + exp(-x))``."""
    (x,) = _f(x)
    return lax.logistic(x)


def logit(x: Any) -> Array:
    """``log(x / (1 - x))``."""
    (x,) = _f(x)
    return lax.log(lax.div(x, lax.sub(lax.full_like(x, 1), x)))


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """``log(sum(b * exp(a)))`` over ``axis``, stably (``return_sign`` for negative ``b``)."""
    (x,) = _f(a)
    if where is not None:
        x = xnp.where(where, x, -np.inf)
    if b is None and not return_sign:
        return xnp.logsumexp(x, axis=axis, keepdims=keepdims)
    bb = xnp.ones_like(x) if b is None else xnp.broadcast_to(_f(b)[0], x.shape)
    if where is not None:
        bb = xnp.where(where, bb, 0.0)
    m = xnp.max(xnp.where(bb != 0, x, -np.inf), axis=axis, keepdims=True)
    m = xnp.where(xnp.isfinite(m), m, 0.0)
    s = xnp.sum(bb * xnp.exp(x - m), axis=axis, keepdims=True)
    sign = xnp.sign(s)
    out = xnp.log(xnp.abs(s)) + m
    if not keepdims:
        axes = tuple(range(x.ndim)) if axis is None else axis
        out, sign = xnp.squeeze(out, axes), xnp.squeeze(sign, axes)
    if return_sign:
        return out, sign
    return xnp.where(sign < 0, np.nan, out)


def softmax(x: Any, axis: Any = -1) -> Array:
    """``exp(x) / sum(exp(x))`` along ``axis``."""
    return _softmax(x, axis=axis)


def log_softmax(x: Any, axis: Any = -1) -> Array:
    """``x - logsumexp(x)`` along ``axis``."""
    return _log_softmax(x, axis=axis)


def gammaln(x: Any) -> Array:
    """``log |Gamma(x)|``."""
    (x,) = _f(x)
    return S.lgamma(x)


def loggamma(x: Any) -> Array:
    """The principal ``log Gamma(x)`` for real ``x``: ``gammaln`` for ``x > 0``, NaN
    elsewhere (as JAX)."""
    (x,) = _f(x)
    return xnp.where(x > 0, S.lgamma(x), np.nan)


def gammasgn(x: Any) -> Array:
    """The sign of ``Gamma(x)`` (NaN at the poles and NaN; ``+-1`` at signed zeros)."""
    (x,) = _f(x)
    floor_x = xnp.floor(x)
    neg_odd = (x < 0) & (xnp.remainder(floor_x, 2) != 0)
    out = xnp.where(neg_odd, -1.0, 1.0)
    out = xnp.where(x == 0, xnp.copysign(1.0, x), out)
    return xnp.where(((x < 0) & (floor_x == x)) | xnp.isnan(x), np.nan, out)


def gamma(x: Any) -> Array:
    """The gamma function (``gammasgn(x) * exp(gammaln(x))``)."""
    (x,) = _f(x)
    return gammasgn(x) * xnp.exp(S.lgamma(x))


def digamma(x: Any) -> Array:
    """The logarithmic derivative of the gamma function."""
    (x,) = _f(x)
    return S.digamma(x)


def polygamma(n: Any, x: Any) -> Array:
    """The ``n``-th derivative of ``digamma``."""
    n, x = _f(n, x)
    return S.polygamma(n, x)


def zeta(x: Any, q: Any = None) -> Array:
    """The Hurwitz zeta function ``sum (k + q)^-x`` (Riemann's for ``q = 1``)."""
    if q is None:
        q = 1.0
    x, q = _f(x, q)
    return S.zeta(x, q)


def betaln(a: Any, b: Any) -> Array:
    """``log |B(a, b)|``."""
    a, b = _f(a, b)
    return S.lgamma(a) + S.lgamma(b) - S.lgamma(a + b)


def beta(a: Any, b: Any) -> Array:
    """The beta function (with its sign)."""
    a, b = _f(a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * xnp.exp(betaln(a, b))


def betainc(a: Any, b: Any, x: Any) -> Array:
    """The regularized incomplete beta function."""
    a, b, x = _f(a, b, x)
    return S.betainc(a, b, x)


def gammainc(a: Any, x: Any) -> Array:
    """The regularized lower incomplete gamma function."""
    a, x = _f(a, x)
    return S.igamma(a, x)


def gammaincc(a: Any, x: Any) -> Array:
    """The regularized upper incomplete gamma function."""
    a, x = _f(a, x)
    return S.igammac(a, x)


def i0e(x: Any) -> Array:
    """``exp(-|x|) I0(x)``."""
    (x,) = _f(x)
    return S.bessel_i0e(x)


def i1e(x: Any) -> Array:
    """``exp(-|x|) I1(x)``."""
    (x,) = _f(x)
    return S.bessel_i1e(x)


def i0(x: Any) -> Array:
    """The modified Bessel function ``I0``."""
    (x,) = _f(x)
    return S.bessel_i0e(x) * xnp.exp(xnp.abs(x))


def i1(x: Any) -> Array:
    """The modified Bessel function ``I1``."""
    (x,) = _f(x)
    return S.bessel_i1e(x) * xnp.exp(xnp.abs(x))


def _float_only(x: Any, name: str) -> Array:
    a = xnp.asarray(x)
    if not dtypes.is_float(a.dtype):
        raise InvalidArgumentError(f"special.{name} takes floating input (as JAX), got "
                                   f"{a.type_text()}")
    return a


def ndtr(x: Any) -> Array:
    """The standard normal CDF (floating input only, as JAX)."""
    x = _float_only(x, "ndtr")
    return 0.5 * S.erfc(x * -np.sqrt(0.5))


def log_ndtr(x: Any, series_order: int = 3) -> Array:
    """``log(ndtr(x))``, accurate far into the lower tail (asymptotic series)."""
    x = _float_only(x, "log_ndtr")
    lower = -10.0 if x.dtype != np.float64 else -20.0
    direct = xnp.where(x > 6.0, -ndtr(-x),           # log1p(-q) ~ -q for tiny q
                       xnp.log(ndtr(xnp.maximum(x, lower))))
    safe = xnp.minimum(x, lower)
    x2 = safe * safe
    series = xnp.ones_like(safe)
    term = xnp.ones_like(safe)
    for k in range(1, series_order + 1):
        term = term * (-(2 * k - 1)) / x2
        series = series + term
    asym = -0.5 * x2 - xnp.log(-safe) - 0.5 * math.log(2 * math.pi) + xnp.log(series)
    return xnp.where(x < lower, asym, direct)


def ndtri(p: Any) -> Array:
    """The inverse of ``ndtr`` (``-inf`` at 0, ``inf`` at 1, NaN outside)."""
    (p,) = _f(p)
    q = xnp.minimum(p, 1.0 - p)
    qs = xnp.clip(q, float(dtypes.finfo(p.dtype).tiny), 0.5)
    t = xnp.sqrt(-2.0 * xnp.log(qs))
    x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
          / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t))
    log_q = xnp.log(qs)
    for _ in range(3):
        ln = log_ndtr(x)
        logpdf = -0.5 * x * x - 0.5 * math.log(2 * math.pi)
        x = x - (ln - log_q) * xnp.exp(ln - logpdf)
    x = xnp.where(q == 0.5, 0.0, x)
    out = xnp.where(p > 0.5, -x, x)
    out = xnp.where(p == 0, -np.inf, xnp.where(p == 1, np.inf, out))
    return xnp.where((p < 0) | (p > 1) | xnp.isnan(p), np.nan, out)


def _xlogx(x: Array) -> Array:
    return xnp.where(x == 0, 0.0, x * xnp.log(xnp.where(x == 0, 1.0, x)))


def xlogy(x: Any, y: Any) -> Array:
    """``x * log(y)``, 0 where ``x == 0``."""
    x, y = _f(x, y)
    return xnp.where(x == 0, 0.0, x * xnp.log(xnp.where(x == 0, 1.0, y)))


def xlog1py(x: Any, y: Any) -> Array:
    """``x * log1p(y)``, 0 where ``x == 0``."""
    x, y = _f(x, y)
    return xnp.where(x == 0, 0.0, x * xnp.log1p(xnp.where(x == 0, 0.0, y)))


def entr(x: Any) -> Array:
    """``-x log x`` (0 at 0, ``-inf`` below)."""
    (x,) = _f(x)
    return xnp.where(x < 0, -np.inf, -_xlogx(x))


def rel_entr(p: Any, q: Any) -> Array:
    """``p log(p / q)`` (0 at ``p = 0``, ``inf`` where not both positive)."""
    p, q = _f(p, q)
    both = (p > 0) & (q > 0)
    safe_p, safe_q = xnp.where(both, p, 1.0), xnp.where(both, q, 1.0)
    val = safe_p * xnp.log(safe_p / safe_q)
    return xnp.where(both, val, xnp.where((p == 0) & (q >= 0), 0.0, np.inf))


def kl_div(p: Any, q: Any) -> Array:
    """``rel_entr(p, q) - p + q``."""
    p, q = _f(p, q)
    return rel_entr(p, q) - p + q


def multigammaln(a: Any, d: int) -> Array:
    """The log of the multivariate gamma function of dimension ``d``."""
    d = concrete_int(d, "multigammaln d")
    (a,) = _f(a)
    out = (d * (d - 1) / 4.0) * math.log(math.pi)
    terms = [S.lgamma(a - 0.5 * j) for j in range(d)]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total + out


def factorial(n: Any, exact: bool = False) -> Array:
    """``n!`` as ``gamma(n + 1)`` (0 for negative ``n``)."""
    if exact:
        raise InvalidArgumentError("factorial: exact=True is not supported (as in JAX)")
    (n,) = _f(n)
    return xnp.where(n < 0, 0.0, xnp.exp(S.lgamma(n + 1)))


def comb(N: Any, k: Any, *, exact: bool = False, repetition: bool = False) -> Array:
    """The number of ``k``-combinations of ``N`` items (0 outside ``0 <= k <= N``)."""
    if exact:
        raise InvalidArgumentError("comb: exact=True is not supported (as in JAX)")
    N, k = _f(N, k)
    if repetition:
        N = N + k - 1
    val = xnp.exp(S.lgamma(N + 1) - S.lgamma(k + 1) - S.lgamma(N - k + 1))
    return xnp.where((k < 0) | (k > N) | (N < 0), 0.0, val)


def poch(z: Any, m: Any) -> Array:
    """The rising factorial ``Gamma(z + m) / Gamma(z)``."""
    z, m = _f(z, m)
    return xnp.where(m == 0, 1.0, gamma(z + m) / gamma(z))


def boxcox(x: Any, lmbda: Any) -> Array:
    """The Box-Cox transform ``(x^l - 1) / l`` (``log x`` at ``l = 0``)."""
    x, lmbda = _f(x, lmbda)
    small = lmbda == 0
    safe = xnp.where(small, 1.0, lmbda)
    return xnp.where(small, xnp.log(x), xnp.expm1(safe * xnp.log(x)) / safe)


def boxcox1p(x: Any, lmbda: Any) -> Array:
    """``boxcox(1 + x, l)`` accurate for small ``x``."""
    x, lmbda = _f(x, lmbda)
    small = lmbda == 0
    safe = xnp.where(small, 1.0, lmbda)
    return xnp.where(small, xnp.log1p(x), xnp.expm1(safe * xnp.log1p(x)) / safe)


def bernoulli(n: int) -> Array:
    """The Bernoulli numbers ``B_0 .. B_n`` (``B_1 = -1/2``, SciPy's convention)."""
    n = concrete_int(n, "bernoulli n")
    if n < 0:
        raise InvalidArgumentError("bernoulli: n must be non-negative")
    from fractions import Fraction
    out = []
    for m in range(n + 1):
        # the Akiyama-Tanigawa algorithm (it gives B_1 = +1/2)
        a = [Fraction(1, k + 1) for k in range(m + 1)]
        for mm in range(m, 0, -1):
            for j in range(mm):
                a[j] = (j + 1) * (a[j] - a[j + 1])
        out.append(-float(a[0]) if m == 1 else float(a[0]))
    return xnp.asarray(np.array(out, np.float32))


from ._special_integrals import exp1, expi, expn, spence  # noqa: E402,F401
from ._special_sici import dawsn, sici  # noqa: E402,F401
from ._special_more import (bessel_jn, fresnel, hyp1f1, owens_t, sph_harm_y,  # noqa: E402,F401
                            wofz)
