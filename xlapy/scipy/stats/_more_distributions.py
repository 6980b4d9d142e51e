"""More ``jax.scipy.stats`` distributions: ``truncnorm``, ``gennorm``, ``vonmises``,
``wrapcauchy``, ``nbinom``, ``betabinom``, ``dirichlet`` and ``multinomial`` (log-densities,
densities and, where simple, distribution functions; SciPy's parameters)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...frontend import lax_special as LS
from ...frontend.core import Array
from ... import numpy as xnp
from .. import special
from . import norm
from ._distributions import _exp_of, _module, _p


def _truncnorm_logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The log-density of the normal truncated to ``[a, b]`` (standardized bounds)."""
    x, a, b, loc, scale = _p(x, a, b, loc, scale)
    z = (x - loc) / scale
    # log(cdf(b) - cdf(a)) from the lower tail when the interval is below 0, else from
    # the upper tail (no cancellation on either side)
    lower = norm.logcdf(b) + xnp.log1p(-xnp.exp(norm.logcdf(a) - norm.logcdf(b)))
    upper = norm.logsf(a) + xnp.log1p(-xnp.exp(norm.logsf(b) - norm.logsf(a)))
    log_mass = xnp.where(b <= 0, lower, upper)
    val = norm.logpdf(z) - log_mass - xnp.log(scale)
    return xnp.where((z < a) | (z > b), -np.inf, val)


def _truncnorm_cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Array:
    x, a, b, loc, scale = _p(x, a, b, loc, scale)
    z = xnp.clip((x - loc) / scale, a, b)
    return (norm.cdf(z) - norm.cdf(a)) / (norm.cdf(b) - norm.cdf(a))


truncnorm = _module("truncnorm", "The truncated normal distribution.",
                    logpdf=_truncnorm_logpdf, pdf=_exp_of(_truncnorm_logpdf),
                    cdf=_truncnorm_cdf)


def _gennorm_logpdf(x: Any, beta: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The generalized normal log-density ``beta / (2 Gamma(1/beta)) exp(-|z|^beta)``."""
    x, beta, loc, scale = _p(x, beta, loc, scale)
    z = (x - loc) / scale
    return (xnp.log(beta) - math.log(2) - LS.lgamma(1 / beta) - xnp.abs(z) ** beta
            - xnp.log(scale))


gennorm = _module("gennorm", "The generalized normal distribution.", logpdf=_gennorm_logpdf,
                  pdf=_exp_of(_gennorm_logpdf))


def _vonmises_logpdf(x: Any, kappa: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The von Mises log-density ``exp(kappa cos z) / (2 pi I0(kappa))``."""
    x, kappa, loc, scale = _p(x, kappa, loc, scale)
    z = (x - loc) / scale
    return (kappa * (xnp.cos(z) - 1) - math.log(2 * math.pi) - xnp.log(LS.bessel_i0e(kappa))
            - xnp.log(scale))


vonmises = _module("vonmises", "The von Mises distribution.", logpdf=_vonmises_logpdf,
                   pdf=_exp_of(_vonmises_logpdf))


def _wrapcauchy_logpdf(x: Any, c: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The wrapped Cauchy log-density on ``[0, 2 pi]``."""
    x, c, loc, scale = _p(x, c, loc, scale)
    z = (x - loc) / scale
    val = xnp.log1p(-c * c) - math.log(2 * math.pi) - xnp.log1p(c * c - 2 * c * xnp.cos(z)) \
        - xnp.log(scale)
    return xnp.where((z < 0) | (z > 2 * np.pi), -np.inf, val)


wrapcauchy = _module("wrapcauchy", "The wrapped Cauchy distribution.",
                     logpdf=_wrapcauchy_logpdf, pdf=_exp_of(_wrapcauchy_logpdf))


def _nbinom_logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Array:
    """The negative binomial log-probability of ``k`` failures before ``n`` successes."""
    k, n, p, loc = _p(k, n, p, loc)
    y = k - loc
    comb = LS.lgamma(n + y) - LS.lgamma(y + 1) - LS.lgamma(n)
    val = comb + special.xlogy(n, p) + special.xlog1py(y, -p)
    return xnp.where((y < 0) | (xnp.floor(y) != y), -np.inf, val)


nbinom = _module("nbinom", "The negative binomial distribution.", logpmf=_nbinom_logpmf,
                 pmf=_exp_of(_nbinom_logpmf))


def _betabinom_logpmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Array:
    """The beta-binomial log-probability of ``k`` successes in ``n`` trials."""
    k, n, a, b, loc = _p(k, n, a, b, loc)
    y = k - loc
    comb = LS.lgamma(n + 1) - LS.lgamma(y + 1) - LS.lgamma(n - y + 1)
    val = comb + special.betaln(y + a, n - y + b) - special.betaln(a, b)
    return xnp.where((y < 0) | (y > n) | (xnp.floor(y) != y), -np.inf, val)


betabinom = _module("betabinom", "The beta-binomial distribution.",
                    logpmf=_betabinom_logpmf, pmf=_exp_of(_betabinom_logpmf))


def _dirichlet_logpdf(x: Any, alpha: Any) -> Array:
    """The Dirichlet log-density of points ``x`` (components on the first axis, as SciPy)."""
    x, alpha = (xnp.asarray(v) for v in (x, alpha))
    dt = xnp.result_type(x, alpha)
    dt = dt if dt.kind == "f" else np.dtype(np.float32)
    x, alpha = x.astype(dt), alpha.astype(dt)
    a = xnp.reshape(alpha, alpha.shape + (1,) * (x.ndim - 1))
    norm_c = xnp.sum(LS.lgamma(alpha)) - LS.lgamma(xnp.sum(alpha))
    return xnp.sum(special.xlogy(a - 1, x), axis=0) - norm_c


dirichlet = _module("dirichlet", "The Dirichlet distribution.", logpdf=_dirichlet_logpdf,
                    pdf=_exp_of(_dirichlet_logpdf))


def _multinomial_logpmf(x: Any, n: Any, p: Any) -> Array:
    """The multinomial log-probability of counts ``x`` (last axis) of ``n`` draws."""
    x, n, p = (xnp.asarray(v) for v in (x, n, p))
    dt = xnp.result_type(x, n, p)
    dt = dt if dt.kind == "f" else np.dtype(np.float32)
    x, n, p = x.astype(dt), n.astype(dt), p.astype(dt)
    val = LS.lgamma(n + 1) + xnp.sum(special.xlogy(x, p) - LS.lgamma(x + 1), axis=-1)
    return xnp.where(xnp.sum(x, axis=-1) != n, -np.inf, val)


multinomial = _module("multinomial", "The multinomial distribution.",
                      logpmf=_multinomial_logpmf, pmf=_exp_of(_multinomial_logpmf))
