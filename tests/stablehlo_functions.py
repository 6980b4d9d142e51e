"""JAX functions whose StableHLO text the round-trip tests convert and run.

``FUNCTIONS[name] = (fn, make_args)``: ``make_args(rs)`` returns the NumPy inputs from a
``np.random.RandomState``. ``tests/make_stablehlo_cases.py`` lowers each with JAX and stores
the text and JAX's outputs under ``tests/data/stablehlo/functions`` (for machines without
JAX); ``tests/test_stablehlo_roundtrip.py`` converts them and compares. The functions cover
control flow, gather/scatter, sort, LAPACK custom calls, batched dot_general, convolutions
and the random-bit generator, written as a JAX user would.
"""
from __future__ import annotations

import numpy as np

FUNCTIONS: dict = {}


def _f32(rs, *shape, scale=1.0):
    return (rs.randn(*shape) * scale).astype(np.float32)


def case(make_args):
    def register(fn):
        FUNCTIONS[fn.__name__] = (fn, make_args)
        return fn
    return register


def _define() -> None:
    import jax
    import jax.numpy as jnp
    from jax import lax

    @case(lambda rs: [_f32(rs, 8), np.int32(5)])
    def cond_scalar(x, n):
        return lax.cond(n > 3, lambda v: jnp.sin(v) * 2.0, lambda v: jnp.cos(v) - 1.0, x)

    @case(lambda rs: [_f32(rs, 4, 4), np.int32(2)])
    def switch_four(x, i):
        return lax.switch(i, [lambda v: v, lambda v: v.T, lambda v: v @ v, lambda v: -v], x)

    @case(lambda rs: [_f32(rs, 16)])
    def while_newton_sqrt(x):
        a = jnp.abs(x) + 1.0

        def body(s):
            k, y = s
            return k + 1, 0.5 * (y + a / y)
        return lax.while_loop(lambda s: s[0] < 20, body, (0, a))[1]

    @case(lambda rs: [_f32(rs, 5, 3), _f32(rs, 3)])
    def scan_cumulative(xs, h0):
        return lax.scan(lambda c, x: (jnp.tanh(c + x), c * x), h0, xs)

    @case(lambda rs: [_f32(rs, 6), _f32(rs, 6)])
    def fori_nested_cond(x, y):
        def body(i, c):
            return lax.cond(i % 2 == 0, lambda c: c + y, lambda c: c * 0.5, c)
        return lax.fori_loop(0, 7, body, x)

    @case(lambda rs: [_f32(rs, 10, 4), rs.randint(0, 10, size=(6,)).astype(np.int32)])
    def gather_rows(table, idx):
        return table[idx], jnp.take(table, idx[:3], axis=0).sum(0)

    @case(lambda rs: [_f32(rs, 6, 5), rs.randint(0, 6, size=(4, 2)).astype(np.int32)])
    def gather_points(x, pts):
        return x[pts[:, 0], pts[:, 1] % 5]

    @case(lambda rs: [_f32(rs, 8), rs.randint(0, 8, size=(12,)).astype(np.int32),
                      _f32(rs, 12)])
    def scatter_add_segment(x, idx, upd):
        return x.at[idx].add(upd), jax.ops.segment_sum(upd, idx, num_segments=8)

    @case(lambda rs: [_f32(rs, 5, 4), rs.randint(0, 5, size=(3,)).astype(np.int32),
                      _f32(rs, 3, 4)])
    def scatter_set_max_min(x, idx, upd):
        return x.at[idx].set(upd), x.at[idx].max(upd), x.at[idx].min(upd), x.at[idx].mul(upd)

    @case(lambda rs: [_f32(rs, 4, 9), rs.randint(-3, 3, size=(4, 9)).astype(np.int32)])
    def sort_variants(x, k):
        return (jnp.sort(x, axis=1), jnp.argsort(x, axis=0), lax.sort((k, x), num_keys=1)[1],
                jnp.sort(k.ravel())[::-1])

    @case(lambda rs: [_f32(rs, 3, 10)])
    def top_k_and_argmax(x):
        v, i = lax.top_k(x, 4)
        return v, i, jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)

    @case(lambda rs: [_f32(rs, 6, 6), _f32(rs, 6, 2)])
    def lapack_cholesky_solve(a, b):
        spd = a @ a.T + 6.0 * jnp.eye(6)
        return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(spd), b)

    @case(lambda rs: [_f32(rs, 5, 5) + 5 * np.eye(5, dtype=np.float32), _f32(rs, 5, 3)])
    def lapack_lu_solve_det(a, b):
        return jnp.linalg.solve(a, b), jnp.linalg.slogdet(a)[1], jnp.linalg.inv(a)

    @case(lambda rs: [_f32(rs, 6, 4)])
    def lapack_qr_svd(a):
        q, r = jnp.linalg.qr(a)
        s = jnp.linalg.svd(a, compute_uv=False)
        return q @ r, jnp.abs(jnp.diag(r)), s

    @case(lambda rs: [_f32(rs, 5, 5)])
    def lapack_eigh(a):
        w, v = jnp.linalg.eigh(a + a.T)
        return w, (v * w) @ v.T

    @case(lambda rs: [_f32(rs, 3, 4, 5), _f32(rs, 3, 5, 6)])
    def dot_batched(a, b):
        return jnp.matmul(a, b), jnp.einsum("bij,bjk->bki", a, b)

    @case(lambda rs: [_f32(rs, 2, 3, 4, 5), _f32(rs, 3, 2, 5, 4)])
    def dot_two_batch_dims(a, b):
        return lax.dot_general(a, b, (((3, 2), (2, 3)), ((0, 1), (1, 0))))

    @case(lambda rs: [rs.randint(-9, 9, size=(4, 6)).astype(np.int8),
                      rs.randint(-9, 9, size=(6, 3)).astype(np.int8)])
    def dot_int8_preferred(a, b):
        return lax.dot(a, b, preferred_element_type=jnp.int32)

    @case(lambda rs: [_f32(rs, 2, 3, 9, 9), _f32(rs, 4, 3, 3, 3, scale=0.3)])
    def conv_nchw_stride(x, w):
        return lax.conv_general_dilated(x, w, (2, 2), "SAME")

    @case(lambda rs: [_f32(rs, 2, 10, 3), _f32(rs, 3, 3, 5, scale=0.3)])
    def conv1d_dilated(x, w):
        return lax.conv_general_dilated(x, w, (1,), [(2, 2)], rhs_dilation=(2,),
                                        dimension_numbers=("NWC", "WIO", "NWC"))

    @case(lambda rs: [_f32(rs, 1, 6, 6, 4), _f32(rs, 3, 3, 2, 4, scale=0.3)])
    def conv_transpose_grouped(x, w):
        t = lax.conv_transpose(x, w.transpose(0, 1, 3, 2), (2, 2), "SAME",
                               dimension_numbers=("NHWC", "HWIO", "NHWC"))
        g = lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=2,
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return t, g

    @case(lambda rs: [_f32(rs, 2, 5, 5, 3), _f32(rs, 3, 3, 3, 2, scale=0.3)])
    def conv_grad_kernel(x, w):
        f = lambda w: jnp.sum(lax.conv_general_dilated(  # noqa: E731
            x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) ** 2)
        return jax.grad(f)(w)

    @case(lambda rs: [np.array([7, 11, 13, 17], np.uint32)])
    def rng_bits_default(key):
        s, a = lax.rng_bit_generator(key, (3, 5), dtype=jnp.uint32)
        s2, b = lax.rng_bit_generator(s, (8,), dtype=jnp.uint8,
                                      algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)
        return s, a, s2, b

    @case(lambda rs: [np.array([3, 5, 7, 9], np.uint32)])
    def rng_bits_philox_u64(key):
        return lax.rng_bit_generator(key, (6,), dtype=jnp.uint32,
                                     algorithm=lax.RandomAlgorithm.RNG_PHILOX)

    @case(lambda rs: [np.array([0, 99], np.uint32)])
    def random_keys(key):
        k1, k2 = jax.random.split(key)
        return (jax.random.normal(k1, (3, 4)), jax.random.bernoulli(k2, 0.3, (10,)),
                jax.random.choice(k2, 10, (4,), replace=False))

    @case(lambda rs: [_f32(rs, 4, 6)])
    def reductions_multi(x):
        return (jnp.argmax(x), jnp.var(x, axis=0), jnp.cumsum(x, axis=1), jnp.cumprod(x[:, :3], 0),
                lax.cummax(x, axis=1))

    @case(lambda rs: [_f32(rs, 1, 8, 8, 2)])
    def pooling(x):
        mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        g = jax.grad(lambda v: jnp.sum(lax.reduce_window(
            v, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") ** 2))(x)
        return mx, g

    @case(lambda rs: [_f32(rs, 3, 8)])
    def complex_math(x):
        z = lax.complex(x, jnp.roll(x, 1, axis=1))
        f = jnp.fft.fft(z)
        return jnp.real(f), jnp.imag(f), jnp.abs(z), jnp.angle(z), jnp.conj(z * z)

    @case(lambda rs: [_f32(rs, 6, 7, scale=2.0)])
    def special_functions(x):
        p = jnp.abs(x) + 0.5
        return (jax.scipy.special.erf(x), lax.lgamma(p), lax.digamma(p), jnp.arcsinh(x),
                jnp.arctan(x), jnp.sinh(x * 0.3), jnp.cosh(x * 0.3), jnp.arccos(jnp.tanh(x)),
                jnp.arcsin(jnp.tanh(x)), jnp.round(x), jnp.floor(x), jnp.ceil(x),
                jax.nn.sigmoid(x), lax.logistic(x))

    @case(lambda rs: [_f32(rs, 4, 5)])
    def shape_ops(x):
        return (jnp.pad(x, ((1, 2), (0, 3)), mode="reflect"), jnp.tile(x, (2, 1)),
                jnp.flip(x, 1), jnp.roll(x, 2, axis=0), jnp.repeat(x, 2, axis=1),
                x[::2, 1:4:2], jnp.stack([x, x * 2], axis=-1).reshape(4, 10),
                lax.dynamic_slice(x, (1, 2), (2, 2)))

    @case(lambda rs: [_f32(rs, 4, 8), _f32(rs, 8, 3), _f32(rs, 4, 3)])
    def mlp_grad_step(x, w, y):
        def loss(w):
            return jnp.mean((jax.nn.gelu(x @ w) - y) ** 2)
        value, g = jax.value_and_grad(loss)(w)
        return value, w - 0.1 * g

    @case(lambda rs: [_f32(rs, 8), rs.randint(0, 2, size=(8,)).astype(np.bool_),
                      rs.randint(0, 100, size=(8,)).astype(np.int32)])
    def dtype_mix(x, m, i):
        h = x.astype(jnp.float16)
        b = x.astype(jnp.bfloat16)
        return ((h * h).astype(jnp.float32), (b + b).astype(jnp.float32),
                jnp.where(m, i, -i), i.astype(jnp.uint8), (i >> 2) & 7,
                lax.reduce_precision(x, 5, 10), jnp.isnan(x / (x - x)))

    @case(lambda rs: [_f32(rs, 4, 4)])
    def custom_jvp_and_checkpoint(x):
        f = jax.checkpoint(lambda v: jnp.sin(v) @ jnp.cos(v))
        return jax.grad(lambda v: jnp.sum(f(v)))(x), jax.nn.softplus(x), jax.nn.logsumexp(x, 1)

    @case(lambda rs: [_f32(rs, 3, 4), _f32(rs, 3)])
    def vmap_and_linalg_norm(x, v):
        f = jax.vmap(lambda r, s: jnp.dot(r, r) * s)
        return f(x, v), jnp.linalg.norm(x, axis=1), jnp.linalg.norm(x)

    @case(lambda rs: [_f32(rs, 6, 6) + 4 * np.eye(6, dtype=np.float32), _f32(rs, 6)])
    def triangular_and_cholesky_grad(a, b):
        spd = a @ a.T
        lo = jnp.linalg.cholesky(spd)
        return (jax.scipy.linalg.solve_triangular(lo, b, lower=True),
                jax.grad(lambda m: jnp.sum(jnp.linalg.cholesky(m @ m.T)))(a))

    @case(lambda rs: [rs.randint(-50, 50, size=(12,)).astype(np.int32)])
    def integer_ops(i):
        return (jnp.unique(i, size=12, fill_value=0), jnp.bincount(i % 7 + 7, length=14),
                jnp.cumsum(i), jnp.clip(i, -5, 5), lax.population_count(i), i // 3, i % 3)


def _define_more() -> None:
    import jax
    import jax.numpy as jnp
    from jax import lax

    @case(lambda rs: [_f32(rs, 4, 5), rs.randint(0, 5, size=(4, 3)).astype(np.int32),
                      _f32(rs, 4)])
    def gather_scatter_batching_dims(x, i, u):
        return (jnp.take_along_axis(x, i, axis=1),
                jax.vmap(lambda r, j, v: r.at[j].add(v))(x, i[:, 0], u))

    @case(lambda rs: [np.abs(_f32(rs, 6)) + 1.0, np.abs(_f32(rs, 6)) + 0.5])
    def special_functions_more(a, x):
        return (jax.scipy.special.polygamma(1, a), jax.scipy.special.zeta(a + 1.0, 2.0),
                jax.scipy.special.i1e(x - 1.0), jax.scipy.special.gammainc(a, x),
                jax.scipy.special.erfc(x.astype(jnp.float16)).astype(jnp.float32))

    @case(lambda rs: [_f32(rs, 4, 4), _f32(rs, 5), _f32(rs, 5, 2)])
    def linalg_more(a, d, b):
        return (jnp.sort(jnp.abs(jnp.linalg.eigvals(a @ a.T))), jnp.linalg.svd(a)[1],
                lax.linalg.tridiagonal_solve(d * 0.1, d + 4.0, d * 0.1, b),
                jnp.abs(jnp.linalg.qr(a.astype(jnp.complex64))[1]))

    @case(lambda rs: [np.bool_(True), _f32(rs, 9), np.sort(_f32(rs, 10))])
    def control_more(p, x, table):
        return (lax.cond(p, lambda v: v * 2.0, lambda v: v - 1.0, x),
                lax.platform_dependent(x, cpu=lambda v: v * 3.0, default=lambda v: v),
                lax.associative_scan(jnp.add, x), jnp.searchsorted(table, x),
                jax.random.normal(jax.random.key(0, impl="rbg"), (4,)))


_define_done = False


def load() -> dict:
    """``FUNCTIONS``, defined on first use (needs jax)."""
    global _define_done
    if not _define_done:
        _define()
        _define_more()
        _define_done = True
    return FUNCTIONS
