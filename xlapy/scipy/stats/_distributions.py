"""The other ``jax.scipy.stats`` distributions: log-densities, densities and
distribution functions with SciPy's parameters (``loc``/``scale`` where SciPy has them).
Each becomes a submodule of :mod:`xlapy.scipy.stats` (``stats.expon.logpdf``)."""
from __future__ import annotations

import math
import sys
import types
from typing import Any, Callable

import numpy as np

from ...frontend import lax_special as LS
from ...frontend.core import Array
from ... import numpy as xnp
from ...numpy._elementwise import promote
from .. import special


def _p(*xs: Any) -> list[Array]:
    return promote(*xs, to_inexact=True)


def _exp_of(logf: Callable[..., Array]) -> Callable[..., Array]:
    def f(*args: Any, **kw: Any) -> Array:
        return xnp.exp(logf(*args, **kw))
    f.__doc__ = (logf.__doc__ or "").replace("log-", "", 1)
    return f


def _module(name: str, doc: str, **fns: Callable[..., Any]) -> types.ModuleType:
    mod = types.ModuleType(f"xlapy.scipy.stats.{name}", doc)
    for k, v in fns.items():
        setattr(mod, k, v)
    sys.modules[mod.__name__] = mod
    return mod


# ----------------------------------------------------------------- continuous
def _expon_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The exponential log-density."""
    x, loc, scale = _p(x, loc, scale)
    z = (x - loc) / scale
    return xnp.where(z < 0, -np.inf, -z - xnp.log(scale))


def _expon_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    x, loc, scale = _p(x, loc, scale)
    z = (x - loc) / scale
    return xnp.where(z < 0, 0.0, -xnp.expm1(-z))


def _expon_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Array:
    q, loc, scale = _p(q, loc, scale)
    return -xnp.log1p(-q) * scale + loc


expon = _module("expon", "The exponential distribution.", logpdf=_expon_logpdf,
                pdf=_exp_of(_expon_logpdf), cdf=_expon_cdf,
                logcdf=lambda x, loc=0, scale=1: xnp.log(_expon_cdf(x, loc, scale)),
                sf=lambda x, loc=0, scale=1: 1 - _expon_cdf(x, loc, scale),
                logsf=lambda x, loc=0, scale=1: _expon_logpdf(x, loc, scale) + xnp.log(
                    _p(scale)[0]),
                ppf=_expon_ppf)


def _uniform_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The uniform log-density on ``[loc, loc + scale]``."""
    x, loc, scale = _p(x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return xnp.where(inside, -xnp.log(scale), -np.inf)


def _uniform_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    x, loc, scale = _p(x, loc, scale)
    return xnp.clip((x - loc) / scale, 0, 1)


uniform = _module("uniform", "The uniform distribution.", logpdf=_uniform_logpdf,
                  pdf=_exp_of(_uniform_logpdf), cdf=_uniform_cdf,
                  logcdf=lambda x, loc=0, scale=1: xnp.log(_uniform_cdf(x, loc, scale)),
                  sf=lambda x, loc=0, scale=1: 1 - _uniform_cdf(x, loc, scale),
                  ppf=lambda q, loc=0, scale=1: _p(q)[0] * scale + loc)


def _laplace_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The Laplace log-density."""
    x, loc, scale = _p(x, loc, scale)
    return -xnp.abs(x - loc) / scale - xnp.log(2 * scale)


def _laplace_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    x, loc, scale = _p(x, loc, scale)
    z = (x - loc) / scale
    return xnp.where(z < 0, 0.5 * xnp.exp(z), 1 - 0.5 * xnp.exp(-z))


laplace = _module("laplace", "The Laplace distribution.", logpdf=_laplace_logpdf,
                  pdf=_exp_of(_laplace_logpdf), cdf=_laplace_cdf)


def _logistic_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The logistic log-density."""
    x, loc, scale = _p(x, loc, scale)
    z = (x - loc) / scale
    return -z - 2 * xnp.logaddexp(0.0, -z) - xnp.log(scale)


logistic = _module("logistic", "The logistic distribution.", logpdf=_logistic_logpdf,
                   pdf=_exp_of(_logistic_logpdf),
                   cdf=lambda x, loc=0, scale=1: special.expit((_p(x)[0] - loc) / scale),
                   sf=lambda x, loc=0, scale=1: special.expit(-(_p(x)[0] - loc) / scale),
                   ppf=lambda q, loc=0, scale=1: special.logit(q) * scale + loc,
                   isf=lambda q, loc=0, scale=1: -special.logit(q) * scale + loc)


def _cauchy_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The Cauchy log-density."""
    x, loc, scale = _p(x, loc, scale)
    z = (x - loc) / scale
    return -math.log(math.pi) - xnp.log(scale) - xnp.log1p(z * z)


cauchy = _module("cauchy", "The Cauchy distribution.", logpdf=_cauchy_logpdf,
                 pdf=_exp_of(_cauchy_logpdf),
                 cdf=lambda x, loc=0, scale=1: 0.5 + xnp.arctan((_p(x)[0] - loc) / scale)
                 / np.pi,
                 ppf=lambda q, loc=0, scale=1: loc + scale * xnp.tan(np.pi * (_p(q)[0] - 0.5)))


def _t_logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """Student's t log-density."""
    x, df, loc, scale = _p(x, df, loc, scale)
    z = (x - loc) / scale
    half = (df + 1) / 2
    return (LS.lgamma(half) - LS.lgamma(df / 2) - 0.5 * xnp.log(df * np.pi)
            - xnp.log(scale) - half * xnp.log1p(z * z / df))


t = _module("t", "Student's t distribution.", logpdf=_t_logpdf, pdf=_exp_of(_t_logpdf))


def _gamma_logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The gamma log-density of shape ``a``."""
    x, a, loc, scale = _p(x, a, loc, scale)
    y = (x - loc) / scale
    val = special.xlogy(a - 1, y) - y - LS.lgamma(a) - xnp.log(scale)
    return xnp.where(y < 0, -np.inf, val)


def _gamma_cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Array:
    x, a, loc, scale = _p(x, a, loc, scale)
    return special.gammainc(a, xnp.maximum((x - loc) / scale, 0))


gamma = _module("gamma", "The gamma distribution.", logpdf=_gamma_logpdf,
                pdf=_exp_of(_gamma_logpdf), cdf=_gamma_cdf,
                sf=lambda x, a, loc=0, scale=1: 1 - _gamma_cdf(x, a, loc, scale))


def _chi2_logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The chi-square log-density."""
    x, df, loc, scale = _p(x, df, loc, scale)
    return _gamma_logpdf(x, df / 2, loc, 2 * scale)


chi2 = _module("chi2", "The chi-square distribution.", logpdf=_chi2_logpdf,
               pdf=_exp_of(_chi2_logpdf),
               cdf=lambda x, df, loc=0, scale=1: _gamma_cdf(x, _p(df)[0] / 2, loc, 2 * scale))


def _beta_logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The beta log-density."""
    x, a, b, loc, scale = _p(x, a, b, loc, scale)
    y = (x - loc) / scale
    val = (special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y) - special.betaln(a, b)
           - xnp.log(scale))
    return xnp.where((y < 0) | (y > 1), -np.inf, val)


beta = _module("beta", "The beta distribution.", logpdf=_beta_logpdf,
               pdf=_exp_of(_beta_logpdf),
               cdf=lambda x, a, b, loc=0, scale=1: special.betainc(
                   a, b, xnp.clip((_p(x)[0] - loc) / scale, 0, 1)))


def _pareto_logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The Pareto log-density."""
    x, b, loc, scale = _p(x, b, loc, scale)
    y = (x - loc) / scale
    return xnp.where(y < 1, -np.inf, xnp.log(b) - (b + 1) * xnp.log(y) - xnp.log(scale))


pareto = _module("pareto", "The Pareto distribution.", logpdf=_pareto_logpdf,
                 pdf=_exp_of(_pareto_logpdf))


def _gumbel_r_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The right-skewed Gumbel log-density."""
    x, loc, scale = _p(x, loc, scale)
    z = (x - loc) / scale
    return -z - xnp.exp(-z) - xnp.log(scale)


def _gumbel_l_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The left-skewed Gumbel log-density."""
    x, loc, scale = _p(x, loc, scale)
    z = (x - loc) / scale
    return z - xnp.exp(z) - xnp.log(scale)


gumbel_r = _module("gumbel_r", "The right-skewed Gumbel distribution.",
                   logpdf=_gumbel_r_logpdf, pdf=_exp_of(_gumbel_r_logpdf),
                   cdf=lambda x, loc=0, scale=1: xnp.exp(-xnp.exp(-(_p(x)[0] - loc) / scale)))
gumbel_l = _module("gumbel_l", "The left-skewed Gumbel distribution.",
                   logpdf=_gumbel_l_logpdf, pdf=_exp_of(_gumbel_l_logpdf),
                   cdf=lambda x, loc=0, scale=1: -xnp.expm1(-xnp.exp((_p(x)[0] - loc) / scale)))


def _mvn_logpdf(x: Any, mean: Any, cov: Any, allow_singular: Any = None) -> Array:
    """The multivariate normal log-density (``x`` ``[..., n]``)."""
    x, mean, cov = (xnp.asarray(v) for v in (x, mean, cov))
    dt = xnp.result_type(x, mean, cov)
    dt = dt if dt.kind in "fc" else np.dtype(np.float32)
    x, mean, cov = x.astype(dt), mean.astype(dt), cov.astype(dt)
    n = cov.shape[-1]
    L = xnp.linalg.cholesky(cov)
    diff = xnp.broadcast_to(x - mean, x.shape)
    from ..linalg import solve_triangular
    y = solve_triangular(xnp.broadcast_to(L, diff.shape[:-1] + (n, n)), diff, lower=True)
    logdet = xnp.sum(xnp.log(xnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * xnp.sum(y * y, axis=-1) - logdet - 0.5 * n * math.log(2 * math.pi)


multivariate_normal = _module("multivariate_normal", "The multivariate normal distribution.",
                              logpdf=_mvn_logpdf, pdf=_exp_of(_mvn_logpdf))


# ------------------------------------------------------------------- discrete
def _poisson_logpmf(k: Any, mu: Any, loc: Any = 0) -> Array:
    """The Poisson log-probability of ``k``."""
    k, mu, loc = _p(k, mu, loc)
    x = k - loc
    val = special.xlogy(x, mu) - LS.lgamma(x + 1) - mu
    return xnp.where((x < 0) | (xnp.floor(x) != x), -np.inf, val)


poisson = _module("poisson", "The Poisson distribution.", logpmf=_poisson_logpmf,
                  pmf=_exp_of(_poisson_logpmf),
                  cdf=lambda k, mu, loc=0: special.gammaincc(
                      xnp.floor(_p(k)[0] - loc) + 1, mu))


def _bernoulli_logpmf(k: Any, p: Any, loc: Any = 0) -> Array:
    """The Bernoulli log-probability of ``k`` (0 or 1)."""
    k, p, loc = _p(k, p, loc)
    x = k - loc
    val = special.xlogy(x, p) + special.xlog1py(1 - x, -p)
    return xnp.where((x == 0) | (x == 1), val, -np.inf)


bernoulli = _module("bernoulli", "The Bernoulli distribution.", logpmf=_bernoulli_logpmf,
                    pmf=_exp_of(_bernoulli_logpmf))


def _binom_logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Array:
    """The binomial log-probability of ``k`` successes in ``n`` trials."""
    k, n, p, loc = _p(k, n, p, loc)
    x = k - loc
    comb = LS.lgamma(n + 1) - LS.lgamma(x + 1) - LS.lgamma(n - x + 1)
    val = comb + special.xlogy(x, p) + special.xlog1py(n - x, -p)
    return xnp.where((x < 0) | (x > n) | (xnp.floor(x) != x), -np.inf, val)


binom = _module("binom", "The binomial distribution.", logpmf=_binom_logpmf,
                pmf=_exp_of(_binom_logpmf))


def _geom_logpmf(k: Any, p: Any, loc: Any = 0) -> Array:
    """The geometric log-probability of ``k`` (trials to the first success)."""
    k, p, loc = _p(k, p, loc)
    x = k - loc
    val = special.xlog1py(x - 1, -p) + xnp.log(p)
    return xnp.where(x < 1, -np.inf, val)


geom = _module("geom", "The geometric distribution.", logpmf=_geom_logpmf,
               pmf=_exp_of(_geom_logpmf))
