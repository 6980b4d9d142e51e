"""``xlapy.scipy.stats``: distributions (``stats.norm.logpdf`` ...) and summary statistics
with ``jax.scipy.stats``' API."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...errors import InvalidArgumentError
from ...frontend.core import Array
from ... import numpy as xnp
from . import norm  # noqa: F401
from ._kde import gaussian_kde  # noqa: F401
from ._distributions import (bernoulli, beta, binom, cauchy, chi2, expon, gamma, geom,
                             gumbel_l, gumbel_r, laplace, logistic, multivariate_normal,
                             pareto, poisson, t, uniform)
from ._more_distributions import (betabinom, dirichlet, gennorm, multinomial, nbinom,
                                  truncnorm, vonmises, wrapcauchy)


def sem(a: Any, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate",
        *, keepdims: bool = False) -> Array:
    """The standard error of the mean: ``std(a, ddof) / sqrt(n)``."""
    x = xnp.asarray(a)
    if nan_policy not in ("propagate", "omit"):
        raise InvalidArgumentError(f"sem: nan_policy must be propagate or omit, got "
                                   f"{nan_policy!r}")
    if axis is None:
        x, axis = xnp.ravel(x), 0
    if nan_policy == "omit":
        n = xnp.sum(~xnp.isnan(x), axis=axis, keepdims=keepdims)
        return xnp.nanstd(x, axis=axis, ddof=ddof, keepdims=keepdims) / xnp.sqrt(n)
    n = x.shape[axis]
    return xnp.std(x, axis=axis, ddof=ddof, keepdims=keepdims) / np.sqrt(n)


class ModeResult(NamedTuple):
    mode: Array
    count: Array


def mode(a: Any, axis: int | None = 0, nan_policy: str = "propagate",
         keepdims: bool = False) -> ModeResult:
    """The most common value along ``axis`` (the smallest on ties) and its count."""
    x = xnp.asarray(a)
    if axis is None:
        x, axis = xnp.ravel(x), 0
    y = xnp.moveaxis(x, axis, -1)
    s = xnp.sort(y, axis=-1)
    eq = s[..., :, None] == s[..., None, :]
    counts = xnp.sum(eq, axis=-1)
    idx = xnp.argmax(counts, axis=-1)
    m = xnp.take_along_axis(s, idx[..., None], -1)[..., 0]
    c = xnp.take_along_axis(counts, idx[..., None], -1)[..., 0]
    if keepdims:
        m, c = xnp.expand_dims(m, axis), xnp.expand_dims(c, axis)
    return ModeResult(m, c)


def rankdata(a: Any, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate") -> Array:
    """Ranks from 1 (``average``, ``min``, ``max``, ``dense`` or ``ordinal`` for ties)."""
    x = xnp.asarray(a)
    if axis is None:
        x, axis = xnp.ravel(x), 0
    y = xnp.moveaxis(x, axis, -1)
    n = y.shape[-1]
    order = xnp.argsort(y, axis=-1)
    ranks_ord = xnp.argsort(order, axis=-1) + 1
    if method == "ordinal":
        out = ranks_ord
    else:
        less = xnp.sum(y[..., None, :] < y[..., :, None], axis=-1)
        equal = xnp.sum(y[..., None, :] == y[..., :, None], axis=-1)
        if method == "min":
            out = less + 1
        elif method == "max":
            out = less + equal
        elif method == "average":
            out = less + (equal + 1) / 2.0
        elif method == "dense":
            s = xnp.sort(y, axis=-1)
            new = xnp.concatenate([xnp.ones_like(s[..., :1], dtype=np.int32),
                                   (s[..., 1:] != s[..., :-1]).astype(np.int32)], -1)
            dense_sorted = xnp.cumsum(new, axis=-1)
            pos = xnp.searchsorted(s[..., :] if s.ndim == 1 else s[0], y) if s.ndim == 1 \
                else None
            if pos is None:
                raise InvalidArgumentError("rankdata: method='dense' supports 1-D input")
            out = dense_sorted[pos]
        else:
            raise InvalidArgumentError(f"rankdata: unknown method {method!r}")
    del n
    return xnp.moveaxis(out, -1, axis)


__all__ = ["gaussian_kde",
           "norm", "expon", "uniform", "laplace", "logistic", "cauchy", "t", "gamma", "chi2",
           "beta", "pareto", "gumbel_r", "gumbel_l", "multivariate_normal", "poisson",
           "bernoulli", "binom", "geom", "sem", "mode", "rankdata", "truncnorm", "gennorm",
           "vonmises", "wrapcauchy", "nbinom", "betabinom", "dirichlet", "multinomial"]
