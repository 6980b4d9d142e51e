"""``gaussian_kde``: the Gaussian kernel density estimator of ``jax.scipy.stats`` (SciPy's
``scipy.stats.gaussian_kde``), a pytree so it passes through ``jit``."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...errors import InvalidArgumentError, ShapeError
from ...frontend import dtypes
from ...frontend.core import Array
from ...frontend.pytree import register_pytree_node_class
from ... import numpy as xnp
from .. import linalg as SL
from ..special import logsumexp, ndtr


def _inexact(*arrays: Array) -> np.dtype:
    """The promoted dtype of ``arrays``, made inexact."""
    return dtypes.to_inexact(xnp.result_type(*arrays))


@register_pytree_node_class
class gaussian_kde:
    """Gaussian kernel density estimate of ``dataset`` (shape ``(n,)`` or ``(d, n)``).

    ``bw_method`` is ``"scott"`` (default), ``"silverman"``, a scalar factor or a callable
    of the estimator; ``weights`` (length ``n``) weight the data points.
    """

    def __init__(self, dataset: Any, bw_method: str | float | Callable[..., Any] | None = None,
                 weights: Any = None) -> None:
        data = xnp.atleast_2d(xnp.asarray(dataset))
        if dtypes.is_complex(data.dtype):
            raise InvalidArgumentError("gaussian_kde: complex data is not supported")
        if not data.size > 1:
            raise ShapeError("gaussian_kde: dataset must have more than one element")
        d, n = data.shape
        if weights is not None:
            w = xnp.atleast_1d(xnp.asarray(weights))
            dt = _inexact(data, w)
            data, w = data.astype(dt), w.astype(dt)
            if w.ndim != 1 or w.shape[0] != n:
                raise ShapeError(f"gaussian_kde: weights must be 1-D of length {n}, got "
                                 f"{w.type_text()}")
            w = w / xnp.sum(w)
        else:
            data = data.astype(_inexact(data))
            w = xnp.full(n, 1.0 / n, dtype=data.dtype)
        self.dataset, self.weights = data, w
        self.neff = 1 / xnp.sum(w ** 2)
        self._set_covariance(bw_method)

    def _set_covariance(self, bw_method: Any) -> None:
        d = self.d
        bw = "scott" if bw_method is None else bw_method
        if isinstance(bw, str) and bw == "scott":
            factor = xnp.power(self.neff, -1.0 / (d + 4))
        elif isinstance(bw, str) and bw == "silverman":
            factor = xnp.power(self.neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif xnp.isscalar(bw) and not isinstance(bw, str):
            factor = bw
        elif callable(bw):
            factor = bw(self)
        else:
            raise InvalidArgumentError("gaussian_kde: bw_method must be 'scott', "
                                       f"'silverman', a scalar or a callable, got {bw!r}")
        cov = xnp.atleast_2d(xnp.cov(self.dataset, rowvar=True, bias=False,
                                     aweights=self.weights))
        self.covariance = cov * factor ** 2
        self.inv_cov = xnp.linalg.inv(cov) / factor ** 2

    def set_bandwidth(self, bw_method: Any = None) -> None:
        """Recompute the kernel covariance with a new bandwidth rule or factor."""
        self._set_covariance(bw_method)

    def tree_flatten(self) -> tuple[tuple, None]:
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux: Any, children: Any) -> "gaussian_kde":
        kde = cls.__new__(cls)
        kde.neff, kde.dataset, kde.weights, kde.covariance, kde.inv_cov = children
        return kde

    @property
    def d(self) -> int:
        """Number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        """Number of data points."""
        return self.dataset.shape[1]

    def _points(self, points: Any) -> Array:
        p = xnp.atleast_2d(xnp.asarray(points))
        if dtypes.is_complex(p.dtype):
            raise InvalidArgumentError("gaussian_kde: complex points are not supported")
        d, m = p.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return xnp.reshape(p, (self.d, 1))
            raise ShapeError(f"gaussian_kde: points have dimension {d}, the dataset {self.d}")
        return p

    def _kernel(self, points: Any, in_log: bool) -> Array:
        xi = self._points(points).T
        dt = _inexact(self.dataset, self.weights, self.inv_cov, xi)
        data, w, prec, xi = (a.astype(dt) for a in (self.dataset.T, self.weights,
                                                    self.inv_cov, xi))
        white = SL.cholesky(prec, lower=True)
        pts, xw = xnp.dot(data, white), xnp.dot(xi, white)
        log_norm = xnp.sum(xnp.log(xnp.diag(white))) - 0.5 * self.d * np.log(2 * np.pi)
        arg = log_norm - 0.5 * xnp.sum((pts[None, :, :] - xw[:, None, :]) ** 2, axis=-1)
        if in_log:
            return logsumexp(xnp.log(w)[None, :] + arg, axis=1)
        return xnp.sum(w[None, :] * xnp.exp(arg), axis=1)

    def evaluate(self, points: Any) -> Array:
        """The estimated density at ``points`` (shape ``(d, m)``)."""
        return self._kernel(points, False)

    __call__ = pdf = evaluate

    def logpdf(self, x: Any) -> Array:
        """The log of the estimated density at ``x``."""
        return self._kernel(x, True)

    def _convolve(self, chol: Any, norm: Any, target: Array, weights: Array,
                  mean: Array) -> Array:
        diff = target - mean[:, None]
        arg = 0.5 * xnp.sum(diff * SL.cho_solve(chol, diff), axis=0)
        return norm * xnp.sum(xnp.exp(-arg) * weights)

    def integrate_gaussian(self, mean: Any, cov: Any) -> Array:
        """The integral of the density times the Gaussian ``N(mean, cov)``."""
        mean = xnp.atleast_1d(xnp.squeeze(xnp.asarray(mean)))
        cov = xnp.atleast_2d(xnp.asarray(cov))
        if mean.shape != (self.d,) or cov.shape != (self.d, self.d):
            raise ShapeError(f"integrate_gaussian: mean and cov must have dimension {self.d}")
        chol = SL.cho_factor(self.covariance + cov)
        norm = 1.0 / (np.sqrt(2 * np.pi) ** self.d * xnp.prod(xnp.diag(chol[0])))
        return self._convolve(chol, norm, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low: Any, high: Any) -> Array:
        """The probability mass between ``low`` and ``high`` (1-D estimators)."""
        if self.d != 1:
            raise ShapeError("integrate_box_1d: only 1-D densities")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ShapeError("integrate_box_1d: the limits must be scalars")
        sigma = xnp.squeeze(xnp.sqrt(self.covariance))
        lo = xnp.squeeze((low - self.dataset) / sigma)
        hi = xnp.squeeze((high - self.dataset) / sigma)
        return xnp.sum(self.weights * (ndtr(hi) - ndtr(lo)))

    def integrate_kde(self, other: "gaussian_kde") -> Array:
        """The integral of the product of this density and ``other``."""
        if other.d != self.d:
            raise ShapeError("integrate_kde: the estimators have different dimensions")
        chol = SL.cho_factor(self.covariance + other.covariance)
        norm = 1.0 / (np.sqrt(2 * np.pi) ** self.d * xnp.prod(xnp.diag(chol[0])))
        sm, lg = (self, other) if self.n < other.n else (other, self)
        vals = xnp.stack([self._convolve(chol, norm, lg.dataset, lg.weights,
                                         sm.dataset[:, i]) for i in range(sm.n)])
        return xnp.sum(vals * sm.weights)

    def resample(self, key: Any, shape: tuple[int, ...] = ()) -> Array:
        """Draw samples of shape ``(d,) + shape`` from the estimated density."""
        from ... import random as xr
        ind_key, eps_key = xr.split(key)
        ind = xr.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = xr.multivariate_normal(eps_key, xnp.zeros(self.d, self.covariance.dtype),
                                     self.covariance, shape=shape,
                                     dtype=self.dataset.dtype).T
        return self.dataset[:, ind] + eps
