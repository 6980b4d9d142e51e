"""The added ``xlapy.random`` samplers (moments, supports, shapes, determinism under
``jit``), ``xlapy.nn.dot_product_attention`` against a NumPy reference, the
initializers' statistics and ``scaled_matmul``'s formula (no JAX needed; bit-level
agreement with JAX is in ``tests/test_jax_parity_more.py``)."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.nn as xnn
import xlapy.random as xr
from xlapy.errors import InvalidArgumentError
from backend_fixtures import interpreter_backend  # noqa: F401

N = 4000



@pytest.mark.parametrize("name,args,mean,var", [
    ("gamma", (2.5,), 2.5, 2.5), ("gamma", (0.4,), 0.4, 0.4), ("beta", (2., 3.), 0.4, 0.04),
    ("chisquare", (3.,), 3., 6.), ("poisson", (4.,), 4., 4.), ("poisson", (30.,), 30., 30.),
    ("binomial", (20., 0.3), 6., 4.2), ("binomial", (200., 0.6), 120., 48.),
    ("geometric", (0.25,), 4., 12.), ("rayleigh", (2.,), 2 * np.sqrt(np.pi / 2),
                                      (4 - np.pi) / 2 * 4),
    ("t", (5.,), 0., 5 / 3), ("triangular", (0., 1., 3.), 4 / 3, 7 / 18),
    ("lognormal", (0.5,), np.exp(0.125), (np.exp(0.25) - 1) * np.exp(0.25)),
    ("weibull_min", (1., 1.), 1., 1.), ("wald", (2.,), 2., 8.), ("maxwell", (), 2 * np.sqrt(
        2 / np.pi), 3 - 8 / np.pi), ("rademacher", (), 0., 1.),
])
def test_moments(name, args, mean, var):
    x = np.asarray(getattr(xr, name)(xr.key(11), *args, (N,) if name not in (
        "maxwell", "rademacher") else (N,)), np.float64)
    assert x.shape == (N,)
    se = np.sqrt(var / N)
    assert abs(x.mean() - mean) < 5 * se + 1e-3, (x.mean(), mean)
    assert abs(x.var() - var) < 0.15 * var + 1e-3, (x.var(), var)


def test_supports_dtypes_and_jit():
    k = xr.key(3)
    g = xr.gamma(k, np.float32([0.01, 1., 50.]), (2, 3))
    assert g.dtype == np.float32 and g.shape == (2, 3) and (np.asarray(g) >= 0).all()
    d = np.asarray(xr.dirichlet(k, np.float32([0.5, 1., 2.]), (5,)))
    np.testing.assert_allclose(d.sum(-1), 1, rtol=1e-5)
    assert xr.poisson(k, 3., (4,)).dtype == np.int32
    m = np.asarray(xr.multinomial(k, 20., np.float32([0.2, 0.3, 0.5]), shape=(6, 3)))
    np.testing.assert_array_equal(m.sum(-1), 20)
    q = np.asarray(xr.orthogonal(k, 4))
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)
    b = np.asarray(xr.ball(k, 3, 2, (50,)))
    assert (np.linalg.norm(b, axis=-1) <= 1 + 1e-6).all()
    mv = xr.multivariate_normal(k, np.zeros(2, np.float32), np.float32([[2, .5], [.5, 1]]),
                                (3,))
    assert mv.shape == (3, 2)
    eager = np.asarray(xr.gamma(k, 2.5, (8,)))
    compiled = np.asarray(xlapy.jit(lambda key: xr.gamma(key, 2.5, (8,)))(k))
    np.testing.assert_array_equal(eager, compiled)
    assert not np.array_equal(eager, np.asarray(xr.gamma(xr.key(4), 2.5, (8,))))
    with pytest.raises(InvalidArgumentError):
        xr.gamma(k, np.float32([1., 2.]), (3,))            # does not broadcast
    with pytest.raises(InvalidArgumentError):
        xr.poisson(k, 3., (2,), np.float32)                # integer dtype required


def _attention_reference(q, k, v, mask=None, scale=None):
    g = q.shape[2] // k.shape[2]
    k, v = np.repeat(k, g, axis=2), np.repeat(v, g, axis=2)
    s = np.einsum("btnh,bsnh->bnts", q, k) * (scale or 1 / np.sqrt(q.shape[-1]))
    if mask is not None:
        s = np.where(mask, s, -0.7 * np.finfo(np.float32).max)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bnts,bsnh->btnh", p, v)


def test_dot_product_attention():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 5, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, 6, 2, 8)).astype(np.float32)
    v = rng.standard_normal((2, 6, 2, 8)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(xnn.dot_product_attention(q, k, v)),
                               _attention_reference(q, k, v), atol=2e-5)
    causal = np.tril(np.ones((5, 6), bool))[None, None]
    np.testing.assert_allclose(np.asarray(xnn.dot_product_attention(q, k, v, is_causal=True,
                                                                    scale=0.3)),
                               _attention_reference(q, k, v, causal, 0.3), atol=2e-5)
    out, lse = xnn.dot_product_attention(q, k, v, return_residual=True)
    assert lse.shape == (2, 5, 4)
    g = xlapy.grad(lambda qq: xnn.dot_product_attention(qq, k, v).sum())(q)
    assert g.shape == q.shape and np.isfinite(np.asarray(g)).all()
    with pytest.raises(Exception):
        xnn.dot_product_attention(q[:, :, :3], k, v)       # 3 heads over 2 kv heads


def test_initializers_and_scaled_matmul():
    init = xnn.initializers
    key = xr.key(0)
    w = np.asarray(init.glorot_uniform()(key, (200, 300)))
    assert abs(w.var() - 2 / 500) < 0.1 * 2 / 500 and np.abs(w).max() <= np.sqrt(6 / 500)
    w = np.asarray(init.he_normal()(key, (3, 3, 64, 32)))
    assert abs(w.var() - 2 / (9 * 64)) < 0.1 * 2 / (9 * 64)
    o = np.asarray(init.orthogonal()(key, (6, 4)))
    np.testing.assert_allclose(o.T @ o, np.eye(4), atol=1e-5)
    d = np.asarray(init.delta_orthogonal()(key, (3, 3, 4, 4)))
    assert np.count_nonzero(d[0]) == 0 and np.count_nonzero(d[1, 1]) > 0
    assert init.zeros(key, (2,)).dtype == np.float32
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3, 8)), rng.standard_normal((2, 4, 8))
    sa, sb = rng.random((2, 3, 2)), rng.random((2, 4, 2))
    want = np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 4, -1), b * np.repeat(sb, 4, -1))
    np.testing.assert_allclose(np.asarray(xnn.scaled_matmul(*(x.astype(np.float32) for x in
                                                              (a, b, sa, sb)))), want,
                               rtol=1e-5, atol=1e-5)
