"""Gamma-family samplers, written as JAX 0.10.2 writes them: ``gamma``, ``loggamma``,
``beta``, ``dirichlet``, ``chisquare``, ``f``, ``t``, ``generalized_normal``, ``ball``.

``gamma`` is Marsaglia and Tsang's method with JAX's key schedule: the key is split into
one key per element, and each element runs its own rejection loop (an inner loop
redraws the normal until ``1 + c x > 0``), splitting its key as JAX's ``_gamma_one``
does; shape parameters below 1 are boosted by ``u^(1/a)`` (in log space for
``loggamma``). Here the per-element loops run side by side over all elements, each
element's state advancing only while it is still rejecting, so every element sees the
same keys and the same operations as in JAX: equal values up to the float-op
differences described in :mod:`xlapy.random` (``log`` and ``erf_inv`` enter the
acceptance test, so a last-ulp difference could, rarely, change one element's draw).
The other samplers are JAX's compositions of these.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend.control_flow import while_loop
from ..frontend.jit import jit
from ..frontend.core import Array
from .. import numpy as xnp
from . import _threefry as tf
from ._distributions import F32, _param, _row, exponential, normal
from ._keys import check_broadcast, check_dtype, check_key, check_shape, split


# ------------------------------------------------------------- per-element key helpers
def _split_each(keys: Array, m: int) -> list[Array]:
    """``split(k, m)`` for each key of ``keys`` (``u32[N, 2]``): ``m`` arrays ``u32[N, 2]``."""
    n = keys.shape[0]
    k1 = lax.broadcast_in_dim(lax.reshape(lax.slice(keys, (0, 0), (n, 1)), (n,)), (n, m), (0,))
    k2 = lax.broadcast_in_dim(lax.reshape(lax.slice(keys, (0, 1), (n, 2)), (n,)), (n, m), (0,))
    lo = lax.broadcast_in_dim(lax.iota(tf.UINT32, m), (n, m), (1,))
    b1, b2 = tf.threefry2x32(k1, k2, tf.u32_full(0, (n, m)), lo)
    out = []
    for j in range(m):
        w1 = lax.reshape(lax.slice(b1, (0, j), (n, j + 1)), (n, 1))
        w2 = lax.reshape(lax.slice(b2, (0, j), (n, j + 1)), (n, 1))
        out.append(lax.concatenate([w1, w2], 1))
    return out


def _uniform_each(keys: Array, dtype: np.dtype, lo: float = 0.0, hi: float = 1.0) -> Array:
    """``uniform(k, (), dtype, lo, hi)`` for each key (f32 and narrower floats)."""
    n = keys.shape[0]
    k1 = lax.reshape(lax.slice(keys, (0, 0), (n, 1)), (n,))
    k2 = lax.reshape(lax.slice(keys, (0, 1), (n, 2)), (n,))
    zero = tf.u32_full(0, (n,))
    b1, b2 = tf.threefry2x32(k1, k2, zero, zero)
    bits = lax.bitwise_xor(b1, b2)
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    rng_bits = 8 if nmant < 8 else nbits
    uint = tf.UINT_DTYPES[nbits]
    if rng_bits != 32:
        bits = lax.convert_element_type(bits, tf.UINT_DTYPES[rng_bits])
    bits = lax.convert_element_type(bits, uint)
    fb = lax.shift_right_logical(bits, lax.full_like(bits, rng_bits - nmant))
    fb = lax.bitwise_or(fb, lax.full_like(bits, np.array(1.0, dtype).view(uint)))
    floats = lax.sub(lax.bitcast_convert_type(fb, dtype), lax.full_like(fb, 1.0, dtype=dtype))
    lo_a, hi_a = lax.full_like(floats, lo), lax.full_like(floats, hi)
    return lax.max(lo_a, lax.add(lax.mul(floats, lax.sub(hi_a, lo_a)), lo_a))


def _normal_each(keys: Array, dtype: np.dtype) -> Array:
    lo = float(np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype))
    u = _uniform_each(keys, dtype, lo, 1.0)
    return lax.mul(lax.full_like(u, np.sqrt(2)), lax.erf_inv(u))


def _select_rows(mask: Array, a: Array, b: Array) -> Array:
    """Per-element choice between keys ``a`` and ``b`` (``u32[N, 2]``)."""
    return lax.select(lax.broadcast_in_dim(mask, a.shape, (0,)), a, b)


def _gamma_flat(keys: Array, alpha: Array, log_space: bool) -> Array:
    """JAX's ``_gamma_one`` for every element: ``keys`` ``u32[N, 2]``, ``alpha`` ``[N]``."""
    dt = alpha.dtype

    def c(v: float) -> Array:
        return lax.full_like(alpha, v)
    boost_mask = lax.ge(alpha, c(1))
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, c(1)))
    d = lax.sub(alpha, c(1. / 3.))
    cc = lax.div(c(1. / 3.), lax.sqrt(d))

    def rejecting(X: Array, V: Array, U: Array) -> Array:
        return lax.bitwise_and(
            lax.ge(U, lax.sub(c(1), lax.mul(c(0.0331), lax.mul(X, X)))),
            lax.ge(lax.log(U), lax.add(lax.mul(X, c(0.5)),
                                       lax.mul(d, lax.add(lax.sub(c(1), V), lax.log(V))))))

    def outer_cond(s: tuple) -> Array:
        _, X, V, U = s
        return lax.reduce_or(rejecting(X, V, U), (0,))

    def outer_body(s: tuple) -> tuple:
        key, X, V, U = s
        active = rejecting(X, V, U)
        key2, x_key, u_key = _split_each(key, 3)

        def inner_cond(t: tuple) -> Array:
            return lax.reduce_or(lax.bitwise_and(active, lax.le(t[2], c(0))), (0,))

        def inner_body(t: tuple) -> tuple:
            kx, x, v = t
            go = lax.bitwise_and(active, lax.le(v, c(0)))
            kx2, sub = _split_each(kx, 2)
            x2 = _normal_each(sub, dt)
            v2 = lax.add(c(1), lax.mul(x2, cc))
            return (_select_rows(go, kx2, kx), lax.select(go, x2, x), lax.select(go, v2, v))
        _, x, v = while_loop(inner_cond, inner_body, (x_key, c(0), c(-1)))
        X2 = lax.mul(x, x)
        V2 = lax.mul(lax.mul(v, v), v)
        U2 = _uniform_each(u_key, dt)
        return (_select_rows(active, key2, key), lax.select(active, X2, X),
                lax.select(active, V2, V), lax.select(active, U2, U))

    key, subkey = _split_each(keys, 2)
    _, _, V, _ = while_loop(outer_cond, outer_body, (key, c(0), c(1), c(2)))
    if log_space:
        log_samples = lax.log1p(lax.neg(_uniform_each(subkey, dt)))   # -exponential
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, c(0))), c(0),
                               lax.mul(log_samples, lax.div(c(1), alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
    samples = lax.sub(c(1), _uniform_each(subkey, dt))
    boost = lax.select(boost_mask, c(1), lax.pow(samples, lax.div(c(1), alpha_orig)))
    return lax.mul(lax.mul(d, V), boost)


# The rejection loops run as one compiled program (op by op they would dispatch every
# operation of every iteration separately); under an enclosing jit this inlines.
_gamma_compiled = jit(_gamma_flat, static_argnums=(2,))


def _gamma(name: str, key: Any, a: Any, shape: Any, dtype: Any, log_space: bool) -> Array:
    k = check_key(name, key)
    dt = check_dtype(name, dtype, "float", F32)
    a = _param(a, dt)
    if shape is None:
        shape = a.shape
    else:
        shape = check_shape(name, shape)
        check_broadcast(name, shape, a.shape)
    a = xnp.broadcast_to(a, shape)
    n = int(np.prod(shape))
    if n == 0:
        return lax.reshape(a, shape)
    keys = lax.reshape(split(k, n), (n, 2))
    wide = dt if dt.itemsize >= 4 else np.dtype(np.float32)
    flat = lax.convert_element_type(lax.reshape(a, (n,)), wide) if wide != dt else \
        lax.reshape(a, (n,))
    out = _gamma_compiled(keys, flat, log_space)
    return lax.reshape(lax.convert_element_type(out, dt), shape)


def gamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Gamma values of shape parameter ``a`` (scale 1); ``shape`` defaults to ``a``'s."""
    return _gamma("gamma", key, a, shape, dtype, False)


def loggamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Logarithms of gamma values, computed in log space (accurate for small ``a``)."""
    return _gamma("loggamma", key, a, shape, dtype, True)


def beta(key: Any, a: Any, b: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Beta values, ``Gamma(a) / (Gamma(a) + Gamma(b))`` from log-space gammas."""
    k = check_key("beta", key)
    dt = check_dtype("beta", dtype, "float", F32)
    a, b = _param(a, dt), _param(b, dt)
    if shape is None:
        shape = xnp.broadcast_shapes(a.shape, b.shape)
    else:
        shape = check_shape("beta", shape)
        check_broadcast("beta", shape, a.shape, b.shape)
    keys = split(k)
    a, b = xnp.broadcast_to(a, shape), xnp.broadcast_to(b, shape)
    log_a = loggamma(_row(keys, 0), a, shape, dt)
    log_b = loggamma(_row(keys, 1), b, shape, dt)
    log_max = lax.max(log_a, log_b)
    ga = lax.exp(lax.sub(log_a, log_max))
    gb = lax.exp(lax.sub(log_b, log_max))
    return lax.div(ga, lax.add(ga, gb))


def dirichlet(key: Any, alpha: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Dirichlet values (the last axis sums to 1) of concentrations ``alpha``."""
    k = check_key("dirichlet", key)
    dt = check_dtype("dirichlet", dtype, "float", F32)
    alpha = _param(alpha, dt)
    if alpha.ndim < 1:
        raise InvalidArgumentError(f"random.dirichlet: alpha must have at least one "
                                   f"dimension, got {alpha.type_text()}")
    if shape is None:
        shape = alpha.shape[:-1]
    else:
        shape = check_shape("dirichlet", shape)
        check_broadcast("dirichlet", shape, alpha.shape[:-1])
    log_g = loggamma(k, alpha, shape + alpha.shape[-1:], dt)
    from ..nn import softmax
    return softmax(log_g, -1)


def chisquare(key: Any, df: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Chi-square values with ``df`` degrees of freedom: ``2 exp(loggamma(df / 2))``."""
    check_key("chisquare", key)
    dt = check_dtype("chisquare", dtype, "float", F32)
    df = _param(df, dt)
    shape = df.shape if shape is None else check_shape("chisquare", shape)
    check_broadcast("chisquare", shape, df.shape)
    half = lax.div(df, lax.full_like(df, 2))
    return xnp.multiply(lax.exp(loggamma(key, half, shape, dt)), 2)


def f(key: Any, dfnum: Any, dfden: Any, shape: Any = None, dtype: Any = None) -> Array:
    """F-distribution values: the ratio of two scaled chi-squares."""
    k = check_key("f", key)
    dt = check_dtype("f", dtype, "float", F32)
    dfnum, dfden = _param(dfnum, dt), _param(dfden, dt)
    shape = xnp.broadcast_shapes(dfnum.shape, dfden.shape) if shape is None else \
        check_shape("f", shape)
    check_broadcast("f", shape, dfnum.shape, dfden.shape)
    keys = split(k)
    chi_n = chisquare(_row(keys, 1), dfnum, shape, dt)
    chi_d = chisquare(_row(keys, 0), dfden, shape, dt)
    return xnp.true_divide(xnp.true_divide(chi_n, dfnum), xnp.true_divide(chi_d, dfden))


def t(key: Any, df: Any, shape: Any = None, dtype: Any = None) -> Array:
    """Student's t values with ``df`` degrees of freedom."""
    k = check_key("t", key)
    dt = check_dtype("t", dtype, "float", F32)
    df = _param(df, dt)
    shape = df.shape if shape is None else check_shape("t", shape)
    check_broadcast("t", shape, df.shape)
    keys = split(k)
    n = normal(_row(keys, 0), shape, dt)
    half = xnp.true_divide(df, 2)
    g = gamma(_row(keys, 1), half, shape, dt)
    return xnp.multiply(n, xnp.sqrt(xnp.true_divide(half, g)))


def generalized_normal(key: Any, p: float, shape: Any = (), dtype: Any = None) -> Array:
    """Values with density proportional to ``exp(-|x|^p)``."""
    k = check_key("generalized_normal", key)
    shape = check_shape("generalized_normal", shape)
    dt = check_dtype("generalized_normal", dtype, "float", F32)
    keys = split(k)
    g = gamma(_row(keys, 0), xnp.true_divide(1, p), shape, dt)
    from ._more import rademacher
    r = rademacher(_row(keys, 1), shape, dt)
    return xnp.multiply(r, xnp.power(g, xnp.true_divide(1, p)))


def ball(key: Any, d: int, p: float = 2, shape: Any = (), dtype: Any = None) -> Array:
    """Points uniform in the unit ``p``-norm ball of dimension ``d``."""
    k = check_key("ball", key)
    shape = check_shape("ball", shape)
    dt = check_dtype("ball", dtype, "float", F32)
    d = int(d)
    keys = split(k)
    g = generalized_normal(_row(keys, 0), p, shape + (d,), dt)
    e = exponential(_row(keys, 1), shape, dt)
    norm_p = xnp.power(xnp.add(xnp.sum(xnp.power(xnp.abs(g), p), axis=-1), e),
                       xnp.true_divide(1, p))
    return xnp.true_divide(g, norm_p[..., None])


