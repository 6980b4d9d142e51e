"""``xlapy.scipy.stats.norm``: the normal distribution (``loc``, ``scale``)."""
from __future__ import annotations

import math
from typing import Any

from ...frontend.core import Array
from ... import numpy as xnp
from ...numpy._elementwise import promote
from .. import special

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _std(x: Any, loc: Any, scale: Any) -> tuple[Array, Array]:
    x, loc, scale = promote(x, loc, scale, to_inexact=True)
    return (x - loc) / scale, scale


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """``log`` of the density."""
    z, scale = _std(x, loc, scale)
    return -0.5 * z * z - _HALF_LOG_2PI - xnp.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The density."""
    return xnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The distribution function."""
    z, _ = _std(x, loc, scale)
    return special.ndtr(z)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """``log cdf``, accurate in the lower tail."""
    z, _ = _std(x, loc, scale)
    return special.log_ndtr(z)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The survival function ``1 - cdf``."""
    z, _ = _std(x, loc, scale)
    return special.ndtr(-z)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """``log sf``, accurate in the upper tail."""
    z, _ = _std(x, loc, scale)
    return special.log_ndtr(-z)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The quantile function (inverse ``cdf``)."""
    q, loc, scale = promote(q, loc, scale, to_inexact=True)
    return special.ndtri(q) * scale + loc


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Array:
    """The inverse survival function, ``-ppf(q)`` scaled (accurate for tiny ``q``, where
    JAX's ``ppf(1 - q)`` rounds ``1 - q`` to 1)."""
    q, loc, scale = promote(q, loc, scale, to_inexact=True)
    return -special.ndtri(q) * scale + loc
