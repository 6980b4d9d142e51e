"""The remaining ``jax.random`` samplers, written as JAX 0.10.2 writes them: ``poisson``
(Knuth's method below 10, Hörmann's transformed rejection above), ``binomial``
(inversion for ``n p <= 10``, BTRS above), ``multinomial`` (a scan of binomials),
``multivariate_normal``, ``orthogonal`` and the CDF-inverse and derived samplers
(``cauchy``, ``pareto``, ``rayleigh``, ``wald``, ``weibull_min``, ``geometric``,
``triangular``, ``lognormal``, ``rademacher``, ``maxwell``, ``double_sided_maxwell``);
plus ``clone``, ``key_impl`` and ``key_dtype``."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend import lax_special
from ..frontend.control_flow import scan, while_loop
from ..frontend.core import Array, to_array
from ..frontend.jit import jit
from .. import numpy as xnp
from ._distributions import F32, _param, _row, bernoulli, exponential, normal, uniform
from ._keys import check_broadcast, check_dtype, check_key, check_shape, split


def _shape_of(name: str, shape: Any, *params: Array) -> tuple[int, ...]:
    if shape is None:
        return xnp.broadcast_shapes(*[p.shape for p in params])
    shape = check_shape(name, shape)
    check_broadcast(name, shape, *[p.shape for p in params])
    return shape


def _float_args(name: str, key: Any, dtype: Any) -> tuple[Array, np.dtype]:
    return check_key(name, key), check_dtype(name, dtype, "float", F32)


# ------------------------------------------------------------------------------ poisson
def _poisson_knuth(key: Array, lam: Array, shape: tuple[int, ...], dtype: np.dtype) -> Array:
    def body(c: tuple) -> tuple:
        rng, k, log_prod = c
        keys = split(rng)
        rng, sub = _row(keys, 0), _row(keys, 1)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, lax.full_like(k, 1)), k)
        u = uniform(sub, shape, np.float32)
        return rng, k, lax.add(log_prod, lax.log(u))

    def cond(c: tuple) -> Array:
        return xnp.any(lax.gt(c[2], lax.neg(lam)))
    k0 = xnp.zeros(shape, dtype)
    k = while_loop(cond, body, (key, k0, xnp.zeros(shape, np.float32)))[1]
    return lax.sub(k, lax.full_like(k, 1))


def _poisson_rejection(key: Array, lam: Array, shape: tuple[int, ...],
                       dtype: np.dtype) -> Array:
    log_lam = lax.log(lam)
    b = xnp.add(0.931, xnp.multiply(2.53, lax.sqrt(lam)))
    a = xnp.add(-0.059, xnp.multiply(0.02483, b))
    inv_alpha = xnp.add(1.1239, xnp.true_divide(1.1328, xnp.subtract(b, 3.4)))
    v_r = xnp.subtract(0.9277, xnp.true_divide(3.6224, xnp.subtract(b, 2)))

    def body(c: tuple) -> tuple:
        k_out, accepted, rng = c
        keys = split(rng, 3)
        rng, k0, k1 = _row(keys, 0), _row(keys, 1), _row(keys, 2)
        u = xnp.subtract(uniform(k0, shape, lam.dtype), 0.5)
        v = uniform(k1, shape, lam.dtype)
        us = xnp.subtract(0.5, xnp.abs(u))
        k = lax.floor(xnp.add(xnp.add(xnp.multiply(xnp.add(xnp.true_divide(
            xnp.multiply(2, a), us), b), u), lam), 0.43))
        s = lax.log(xnp.true_divide(xnp.multiply(v, inv_alpha),
                                    xnp.add(xnp.true_divide(a, xnp.multiply(us, us)), b)))
        tt = xnp.subtract(xnp.add(xnp.negative(lam), xnp.multiply(k, log_lam)),
                          lax_special.lgamma(xnp.add(k, 1)))
        accept1 = xnp.logical_and(xnp.greater_equal(us, 0.07), xnp.less_equal(v, v_r))
        reject = xnp.logical_or(xnp.less(k, 0), xnp.logical_and(xnp.less(us, 0.013),
                                                                 xnp.greater(v, us)))
        accept = xnp.logical_or(accept1, xnp.logical_and(xnp.logical_not(reject),
                                                         xnp.less_equal(s, tt)))
        return lax.select(accept, k, k_out), xnp.logical_or(accepted, accept), rng

    def cond(c: tuple) -> Array:
        return xnp.any(xnp.logical_not(c[1]))
    k0 = xnp.full(shape, -1, lam.dtype)
    acc0 = xnp.zeros(shape, np.bool_)
    return lax.convert_element_type(while_loop(cond, body, (k0, acc0, key))[0], dtype)


def poisson(key: Any, lam: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Poisson counts with rate ``lam`` (integer ``dtype``, default int32)."""
    k = check_key("poisson", key)
    dt = check_dtype("poisson", dtype, "int", np.int32)
    lam = to_array(lam)
    shape = _shape_of("poisson", shape, lam)
    lam = lax.convert_element_type(xnp.broadcast_to(lam, shape), np.float32)
    return _poisson_compiled(k, lam, shape, dt)


def _poisson(k: Array, lam: Array, shape: tuple[int, ...], dt: np.dtype) -> Array:
    use_knuth = xnp.logical_or(xnp.isnan(lam), xnp.less(lam, 10))
    lam_knuth = lax.select(use_knuth, lam, xnp.zeros_like(lam))
    lam_rej = lax.select(use_knuth, xnp.full_like(lam, 1e5), lam)
    out = lax.select(use_knuth, _poisson_knuth(k, lam_knuth, shape, dt),
                     _poisson_rejection(k, lam_rej, shape, dt))
    return lax.select(xnp.equal(lam, 0), xnp.zeros_like(out), out)


# Each sampler's loops run as one compiled program (op by op every operation of every
# iteration would be dispatched separately); under an enclosing jit this inlines.
_poisson_compiled = jit(_poisson, static_argnums=(2, 3))


# ----------------------------------------------------------------------------- binomial
_STIRLING_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                           0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                           0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                           0.00833056343336287])


def _stirling_tail(k: Array) -> Array:
    use_table = xnp.less_equal(k, 9)
    kc = xnp.clip(k, 0.0, 9.0)
    kp1sq = xnp.multiply(xnp.add(kc, 1), xnp.add(kc, 1))
    approx = xnp.true_divide(xnp.subtract(1.0 / 12, xnp.true_divide(
        xnp.subtract(1.0 / 360, xnp.true_divide(1.0 / 1260, kp1sq)), kp1sq)), xnp.add(kc, 1))
    table = to_array(_STIRLING_TAIL.astype(k.dtype))
    looked = xnp.take(table, lax.convert_element_type(xnp.floor(kc), np.int32))
    return lax.select(use_table, looked, approx)


def _binomial_inversion(key: Array, count: Array, prob: Array, shape: tuple[int, ...]) -> Array:
    log1mp = xnp.log1p(xnp.negative(prob))

    def body(c: tuple) -> tuple:
        num_geom, geom_sum, rng = c
        keys = split(rng)
        sub, rng = _row(keys, 0), _row(keys, 1)
        num_geom = lax.select(xnp.less_equal(geom_sum, count), xnp.add(num_geom, 1), num_geom)
        u = uniform(sub, shape, prob.dtype)
        geom = xnp.ceil(xnp.true_divide(xnp.log(u), log1mp))
        return num_geom, xnp.add(geom_sum, geom), rng

    def cond(c: tuple) -> Array:
        return xnp.any(xnp.less_equal(c[1], count))
    z = xnp.zeros(shape, prob.dtype)
    k = while_loop(cond, body, (z, z, key))[0]
    return xnp.subtract(k, 1)


def _btrs(key: Array, count: Array, prob: Array, shape: tuple[int, ...]) -> Array:
    stddev = xnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = xnp.floor((count + 1) * prob)

    def body(carry: tuple) -> tuple:
        k_out, accepted, rng = carry
        keys = split(rng, 3)
        rng, k0, k1 = _row(keys, 0), _row(keys, 1), _row(keys, 2)
        u = uniform(k0, shape, prob.dtype)
        v = uniform(k1, shape, prob.dtype)
        u = u - 0.5
        us = 0.5 - xnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = xnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = xnp.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * xnp.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * xnp.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * xnp.log(r * (count - k + 1) / (k + 1))
              + _stirling_tail(m) + _stirling_tail(count - m)
              - _stirling_tail(k) - _stirling_tail(count - k))
        accept = accept1 | (~reject & (v <= ub))
        return lax.select(accept, k, k_out), accepted | accept, rng

    def cond(carry: tuple) -> Array:
        return xnp.any(~carry[1])
    k0 = xnp.full(shape, -1, prob.dtype)
    return while_loop(cond, body, (k0, xnp.zeros(shape, np.bool_), key))[0]


def binomial(key: Any, n: Any, p: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Binomial counts of ``n`` trials with success probability ``p`` (float ``dtype``)."""
    k, dt = _float_args("binomial", key, dtype)
    (prob,) = xnp._elementwise.promote(p, to_inexact=True)
    count = to_array(n)
    shape = _shape_of("binomial", shape, count, prob)
    count = xnp.broadcast_to(lax.convert_element_type(count, prob.dtype), shape)
    prob = xnp.broadcast_to(prob, shape)
    return _binomial_compiled(k, count, prob, shape, dt)


def _binomial(k: Array, count: Array, prob: Array, shape: tuple[int, ...],
              dt: np.dtype) -> Array:
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_bad = xnp.isnan(count) | (count < 0.0)
    count_inf = xnp.isinf(count)
    q_nan, q_neg = xnp.isnan(q), q < 0.0
    q = lax.select(q_nan | q_neg, xnp.full_like(q, 0.01), q)
    use_inv = count_bad | (count * q <= 10.0)
    count = xnp.floor(count)
    count_inv = lax.select(use_inv, count, xnp.zeros_like(count))
    count_btrs = lax.select(use_inv, xnp.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inv, xnp.full_like(q, 0.5), q)
    samples = lax.select(use_inv, _binomial_inversion(k, count_inv, q, shape),
                         _btrs(k, count_btrs, q_btrs, shape))
    samples = lax.convert_element_type(samples, dt)
    invalid = q_neg | q_nan | count_bad
    samples = lax.select(invalid, xnp.full_like(samples, np.nan), samples)
    samples = lax.select(count_inf & ~invalid, xnp.full_like(samples, np.inf), samples)
    return lax.select(p_lt_half | count_bad | q_nan | count_inf, samples,
                      xnp.subtract(count.astype(dt), samples))


_binomial_compiled = jit(_binomial, static_argnums=(3, 4))


def multinomial(key: Any, n: Any, p: Any, *, shape: Any = None, dtype: Any = None,
                unroll: Any = 1) -> Array:
    """Counts of ``n`` draws over the outcomes of ``p`` (last axis), as floats."""
    k, dt = _float_args("multinomial", key, dtype)
    n, p = xnp.asarray(n), xnp.asarray(p)
    dt_in = dtypes.promote_types((n.dtype, n.weak_type), (p.dtype, p.weak_type))[0]
    dt_in = dt_in if dtypes.is_inexact(dt_in) else F32
    n, p = n.astype(dt_in), p.astype(dt_in)
    shape = p.shape if shape is None else check_shape("multinomial", shape)
    n = xnp.broadcast_to(n, shape[:-1])
    p = xnp.broadcast_to(p, shape)
    p = xnp.moveaxis(p, -1, 0)
    remaining = lax.cumulative("sum", p, 0, reverse=True)
    ratios = p / xnp.where(remaining == 0, 1, remaining)
    keys = split(k, ratios.shape[0])

    def step(rem: Array, rk: tuple) -> tuple:
        ratio, kk = rk
        count = binomial(kk, rem, xnp.clip(ratio, 0, 1), dtype=rem.dtype)
        return rem - count, count
    _, counts = scan(step, n, (ratios, keys))
    return xnp.moveaxis(counts, 0, -1).astype(dt)


# -------------------------------------------------------------------- other samplers
def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Any = None,
                        dtype: Any = None, method: str = "cholesky") -> Array:
    """Normal vectors with ``mean`` (``[..., n]``) and covariance ``cov``
    (``[..., n, n]``), from a ``cholesky``, ``eigh`` or ``svd`` factor."""
    k = check_key("multivariate_normal", key)
    mean, cov = (xnp.asarray(v) for v in (mean, cov))
    dt_in = dtypes.promote_types((mean.dtype, mean.weak_type), (cov.dtype, cov.weak_type))[0]
    dt_in = dt_in if dtypes.is_inexact(dt_in) else F32
    mean, cov = mean.astype(dt_in), cov.astype(dt_in)
    if method not in ("svd", "eigh", "cholesky"):
        raise InvalidArgumentError(f"random.multivariate_normal: method must be svd, eigh "
                                   f"or cholesky, got {method!r}")
    dt = check_dtype("multivariate_normal", dtype, "float", mean.dtype)
    if mean.ndim < 1 or cov.ndim < 2 or cov.shape[-2:] != (mean.shape[-1],) * 2:
        raise InvalidArgumentError(f"random.multivariate_normal: mean [..., n] and cov "
                                   f"[..., n, n] expected, got {mean.type_text()} and "
                                   f"{cov.type_text()}")
    if shape is None:
        shape = xnp.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    else:
        shape = check_shape("multivariate_normal", shape)
        check_broadcast("multivariate_normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "svd":
        u, s, _ = xnp.linalg.svd(cov)
        factor = u * xnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = xnp.linalg.eigh(cov)
        factor = v * xnp.sqrt(w[..., None, :])
    else:
        factor = xnp.linalg.cholesky(cov)
    z = normal(k, shape + mean.shape[-1:], dt)
    return mean + xnp.einsum("...ij,...j->...i", factor, z)


def cauchy(key: Any, shape: Any = (), dtype: Any = None) -> Array:
    """Standard Cauchy values: ``tan(pi (u - 1/2))``."""
    k, dt = _float_args("cauchy", key, dtype)
    u = uniform(k, check_shape("cauchy", shape), dt, dtypes.finfo(dt).eps, 1.)
    return lax.tan(lax.mul(lax.full_like(u, np.pi), lax.sub(u, lax.full_like(u, 0.5))))


def pareto(key: Any, b: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Pareto values of shape ``b`` (on ``[1, inf)``): ``exp(e / b)``."""
    k, dt = _float_args("pareto", key, dtype)
    b = _param(b, dt)
    shape = _shape_of("pareto", shape, b)
    return xnp.exp(xnp.true_divide(exponential(k, shape, dt), b))


def rademacher(key: Any, shape: Any = (), dtype: Any = None) -> Array:
    """-1 or +1 with equal probability (integer ``dtype`` by default int32)."""
    k = check_key("rademacher", key)
    dt = check_dtype("rademacher", dtype, "int", np.int32) if dtype is None or \
        not dtypes.is_inexact(dtype) else np.dtype(dtypes.canonicalize(dtype))
    b = bernoulli(k, 0.5, check_shape("rademacher", shape)).astype(dt)
    return (2 * b - 1).astype(dt)


def maxwell(key: Any, shape: Any = (), dtype: Any = None) -> Array:
    """Maxwell values: the norm of a standard normal 3-vector."""
    k, dt = _float_args("maxwell", key, dtype)
    z = normal(k, check_shape("maxwell", shape) + (3,), dt)
    return xnp.linalg.norm(z, axis=-1)


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Any = (),
                         dtype: Any = None) -> Array:
    """Maxwell values with a random sign, scaled and shifted."""
    k, dt = _float_args("double_sided_maxwell", key, dtype)
    loc, scale = xnp.asarray(loc), xnp.asarray(scale)
    pshape = xnp.broadcast_shapes(loc.shape, scale.shape)
    shape = check_shape("double_sided_maxwell", shape)
    shape = (shape or pshape) + pshape
    keys = split(k)
    m = maxwell(_row(keys, 0), shape, dt)
    sign = rademacher(_row(keys, 1), shape, dt)
    return sign * m * scale + loc


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Any = (),
                dtype: Any = None) -> Array:
    """Weibull values: ``scale * (-log1p(-u))^(1/concentration)``."""
    k, dt = _float_args("weibull_min", key, dtype)
    u = uniform(k, check_shape("weibull_min", shape), dt, 0, 1)
    return xnp.power(-xnp.log1p(-u), 1.0 / xnp.asarray(concentration)) * scale


def orthogonal(key: Any, n: int, shape: Any = (), dtype: Any = None,
               m: int | None = None) -> Array:
    """Matrices uniform over the orthogonal (unitary for complex) group O(n), or
    semi-orthogonal ``n x m`` ones."""
    k = check_key("orthogonal", key)
    dt = check_dtype("orthogonal", dtype, "inexact", F32)
    shape = check_shape("orthogonal", shape)
    n = int(n)
    m_ = n if m is None else int(m)
    z = normal(k, shape + (max(n, m_), min(n, m_)), dt)
    q, r = xnp.linalg.qr(z)
    d = xnp.linalg.diagonal(r)
    x = q * xnp.expand_dims(xnp.sign(d), -2)
    return xnp.swapaxes(x, -1, -2) if n < m_ else x


def rayleigh(key: Any, scale: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Rayleigh values: ``scale * sqrt(-2 log u)``."""
    k, dt = _float_args("rayleigh", key, dtype)
    scale = _param(scale, dt)
    shape = _shape_of("rayleigh", shape, scale)
    u = uniform(k, shape, dt)
    scale = xnp.broadcast_to(scale, shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), lax.full_like(u, -2))))


def wald(key: Any, mean: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Wald (inverse Gaussian) values of ``mean`` (scale 1)."""
    k, dt = _float_args("wald", key, dtype)
    mean = _param(mean, dt)
    shape = _shape_of("wald", shape, mean)
    keys = split(k)
    mean = xnp.broadcast_to(mean, shape)
    v = normal(_row(keys, 0), shape, dt)
    z = uniform(_row(keys, 1), shape, dt)
    y = v * v
    y_sq = y * y
    mean_sq = mean * mean
    sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


def geometric(key: Any, p: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Geometric counts (trials to the first success, from 1), integer ``dtype``."""
    k = check_key("geometric", key)
    dt = check_dtype("geometric", dtype, "int", np.int32)
    (p,) = xnp._elementwise.promote(p, to_inexact=True)
    shape = _shape_of("geometric", shape, p)
    u = uniform(k, shape, p.dtype)
    u = xnp.where(u == 0, 1, u)
    log_1mp = xnp.broadcast_to(lax.log1p(lax.neg(p)), shape)
    g = lax.floor(lax.div(lax.log(u), log_1mp)) + 1
    return g.astype(dt)


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Any = None,
               dtype: Any = None) -> Array:
    """Triangular values on ``[left, right]`` peaking at ``mode``."""
    k, dt = _float_args("triangular", key, dtype)
    left, mode, right = (_param(v, dt) for v in (left, mode, right))
    shape = _shape_of("triangular", shape, left, mode, right)
    left, mode, right = (xnp.broadcast_to(v, shape) for v in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = uniform(k, shape, dt)
    out1 = left + lax.sqrt(u * (right - left) * (mode - left))
    out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select(u < fc, out1, out2)


def lognormal(key: Any, sigma: Any = np.float32(1), shape: Any = None,
              dtype: Any = None) -> Array:
    """Log-normal values: ``exp(sigma * z)``."""
    k = check_key("lognormal", key)
    dt = check_dtype("lognormal", dtype, "inexact", F32)
    sigma = _param(sigma, dt)
    shape = _shape_of("lognormal", shape, sigma)
    return lax.exp(xnp.multiply(normal(k, shape, dt), sigma))


def clone(key: Any) -> Array:
    """The same key (key-reuse checking is not modelled)."""
    return check_key("clone", key)


def key_impl(keys: Any) -> str:
    """The generator of ``keys``: always ``"threefry2x32"``."""
    k = to_array(keys)
    if k.dtype != np.uint32 or k.shape[-1:] != (2,):
        raise InvalidArgumentError(f"random.key_impl: expected uint32[..., 2] keys, got "
                                   f"{k.type_text()}")
    return "threefry2x32"


def key_dtype(impl_spec: Any = None) -> np.dtype:
    """The dtype of key data: keys are raw ``uint32[..., 2]`` arrays here."""
    if impl_spec not in (None, "threefry2x32"):
        raise InvalidArgumentError(f"random.key_dtype: only threefry2x32 keys exist, got "
                                   f"{impl_spec!r}")
    return np.dtype(np.uint32)
