"""Bounded dynamic dimensions (``f32[<=N]``, get/set-dimension-size, the dynamic padder)
and shape buckets (``jit(shape_buckets=...)``, Keras ``compile(shape_buckets=...)``)."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp

from xlapy.errors import InvalidArgumentError, UnimplementedError
from xlapy.hlo import parse_module
from xlapy.passes.dynamic_padder import DynamicPadder, is_dynamic

BACKENDS = ["interpreter", "cpu"]
RNG = np.random.default_rng(7)

HEADER = """HloModule m
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
"""

REDUCE = HEADER + """ENTRY e {
  x = f32[8,4] parameter(0)
  n = s32[] parameter(1)
  d = f32[<=8,4] set-dimension-size(x, n), dimensions={0}
  t = f32[4,<=8] transpose(d), dimensions={1,0}
  e = f32[4,<=8] exponential(t)
  z = f32[] constant(0)
  r = f32[4] reduce(e, z), dimensions={1}, to_apply=add_f32
  m = f32[] constant(-inf)
  mx = f32[4] reduce(t, m), dimensions={1}, to_apply=max_f32
  g = s32[] get-dimension-size(e), dimensions={1}
  ROOT out = (f32[4], f32[4], s32[]) tuple(r, mx, g)
}"""

DOT = """HloModule m
ENTRY e {
  a = f32[3,8] parameter(0)
  b = f32[8,2] parameter(1)
  n = s32[] parameter(2)
  da = f32[3,<=8] set-dimension-size(a, n), dimensions={1}
  ROOT d = f32[3,2] dot(da, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_reductions_see_only_the_dynamic_size(backend):
    module = parse_module(REDUCE)
    assert "f32[<=8,4] set-dimension-size" in module.to_text()
    x = RNG.standard_normal((8, 4)).astype(np.float32)
    x[5:] = 1e30                                     # padding that must not leak
    r, mx, g = xlapy.run_hlo(module, [x, np.int32(5)], backend=backend)
    np.testing.assert_allclose(r, np.exp(x[:5]).sum(0), rtol=1e-6)
    np.testing.assert_array_equal(mx, x[:5].max(0))
    assert int(g) == 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dynamic_contracting_dimension_is_masked(backend):
    a = RNG.standard_normal((3, 8)).astype(np.float32)
    b = RNG.standard_normal((8, 2)).astype(np.float32)
    b[3:] = np.nan                                   # NaN * 0 would poison an unmasked dot
    (d,) = xlapy.run_hlo(parse_module(DOT), [a, b, np.int32(3)], backend=backend)
    np.testing.assert_allclose(d, a[:, :3] @ b[:3], rtol=1e-5)


def test_the_padder_leaves_a_static_module():
    module = parse_module(REDUCE)
    assert is_dynamic(module)
    assert DynamicPadder().run(module)
    assert not is_dynamic(module)
    assert not DynamicPadder().run(module)


def test_a_dynamic_value_entering_a_loop_is_refused_by_name():
    text = HEADER + """cond {
  p = (f32[<=8]) parameter(0)
  ROOT c = pred[] constant(false)
}
body {
  ROOT p = (f32[<=8]) parameter(0)
}
ENTRY e {
  x = f32[8] parameter(0)
  n = s32[] parameter(1)
  d = f32[<=8] set-dimension-size(x, n), dimensions={0}
  t = (f32[<=8]) tuple(d)
  ROOT w = (f32[<=8]) while(t), condition=cond, body=body
}"""
    with pytest.raises(UnimplementedError, match=r"dynamic-padder: .* in %w \(while\)"):
        DynamicPadder().run(parse_module(text))


E0 = RNG.standard_normal((50, 8)).astype(np.float32)
W0 = RNG.standard_normal((8, 3)).astype(np.float32)


def _model(tokens, scale):
    e = xnp.take(E0, tokens, axis=0) * scale          # [B, T, 8]
    h = xnp.mean(e, axis=1) + xnp.max(e, axis=1) + xnp.var(e, axis=1)
    return xnp.tanh(h @ W0), e.sum(-1)                # [B, 3] and [B, T]


def _loss(params, tokens, y):
    emb, w = params
    e = xnp.take(emb, tokens, axis=0)
    logits = (xnp.mean(e, axis=1) + xnp.max(e, axis=1)) @ w
    lp = logits - xnp.log(xnp.sum(xnp.exp(logits), -1, keepdims=True))
    return -xnp.mean(xnp.take_along_axis(lp, y[:, None], axis=1))


def test_bucketed_jit_equals_the_unpadded_computation_and_counts_buckets():
    f = xlapy.jit(_model, shape_buckets={"tokens": 1})
    exact = xlapy.jit(_model)
    for t in (3, 7, 8, 13, 5):
        tokens = RNG.integers(0, 50, (4, t)).astype(np.int32)
        got, want = f(tokens, 2.0), exact(tokens, 2.0)
        assert np.asarray(got[1]).shape == (4, t)        # outputs sliced to their size
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)
    assert f.bucket_info() == {"tokens[1]=4": {"compiles": 1, "hits": 0},
                               "tokens[1]=8": {"compiles": 1, "hits": 2},
                               "tokens[1]=16": {"compiles": 1, "hits": 0}}
    assert f.cache_info().misses == 3
    text = f.lower(np.zeros((4, 5), np.int32), 2.0).compiler_ir("hlo")
    assert "s32[<=8]" in text or "<=8" in text


def test_gradients_through_buckets_equal_the_unpadded_ones():
    grad = xlapy.jit(xlapy.grad(_loss), shape_buckets={1: {1: [4, 16]}})
    exact = xlapy.jit(xlapy.grad(_loss))
    for t in (3, 11):
        tokens = RNG.integers(1, 50, (4, t)).astype(np.int32)   # 0 only as padding
        y = RNG.integers(0, 3, 4).astype(np.int32)
        for g, w in zip(grad((E0, W0), tokens, y), exact((E0, W0), tokens, y)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
    assert set(grad.bucket_info()) == {"1[1]=4", "1[1]=16"}
    with pytest.raises(InvalidArgumentError, match="larger than the largest shape bucket 16"):
        grad((E0, W0), np.ones((4, 17), np.int32), np.zeros(4, np.int32))


def test_auto_buckets_fall_back_to_exact_shapes_for_ops_the_padder_refuses():
    def flat(x):
        return xnp.cumsum(x.reshape(-1))              # merges two padded dimensions
    f = xlapy.jit(flat, shape_buckets="auto")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(f(x)), np.cumsum(x))
    np.testing.assert_array_equal(np.asarray(f(x[:, :2])), np.cumsum(x[:, :2]))


def test_relax_shapes_tf_function_uses_buckets():
    import xlapy.tf as tf

    @tf.function(jit_compile=True, experimental_relax_shapes=True)
    def norm(x):
        return tf.reduce_sum(x * x, axis=-1) / tf.cast(tf.shape(x)[-1], tf.float32)

    for n in (5, 6, 7):
        x = RNG.standard_normal((2, n)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(norm(x)), (x * x).sum(-1) / n, rtol=1e-6)
    assert norm.cache_info().misses == 1               # 5, 6, 7 share the bucket 8

    @tf.function(jit_compile=True, reduce_retracing=True)
    def flat(x):                                       # tf.shape in a reshape: exact shapes
        return tf.reshape(x, tf.shape(x)[::-1])

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(flat(x)), x.reshape(3, 2))


def _sequences(n, seed, vocab, max_len=512, batch=4):
    r = np.random.default_rng(seed)
    for _ in range(n):
        t = int(r.integers(1, max_len + 1))
        x = r.integers(1, vocab, (batch, t)).astype(np.int32)
        yield x, (x.mean(1) > vocab / 2).astype(np.int32)


def _classifier(buckets):
    from xlapy import keras
    model = keras.Sequential([keras.layers.Embedding(100, 8),
                              keras.layers.GlobalAveragePooling1D(),
                              keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
    model.compile(optimizer="adam", jit_compile=True, shape_buckets=buckets,
                  loss=__import__("xlapy").keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    return model


def test_keras_fit_on_ragged_batches_equals_the_unpadded_training():
    data = list(_sequences(4, 1, 100, max_len=40))
    bucketed, exact = _classifier({1: "pow2"}), _classifier(None)
    bucketed.build((None, None))
    exact.build((None, None))
    exact.set_weights(bucketed.get_weights())
    h1 = bucketed.fit(iter(data), epochs=1, verbose=0).history["loss"]
    h2 = exact.fit(iter(data), epochs=1, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for a, b in zip(bucketed.get_weights(), exact.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    probe = np.asarray(data[0][0])
    np.testing.assert_allclose(bucketed.predict(probe, verbose=0),
                               exact.predict(probe, verbose=0), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_keras_fit_on_fifty_random_lengths_compiles_at_most_ten_times():
    model = _classifier({1: "pow2"})
    model.fit(iter(list(_sequences(50, 3, 100))), epochs=1, verbose=0)
    info = model.train_function.bucket_info()
    assert model.train_function.cache_info().misses <= 10
    assert sum(c["compiles"] + c["hits"] for c in info.values()) == 50
    assert all(c["compiles"] == 1 for c in info.values())



def test_set_dimension_size_is_for_compiled_code_only():
    from xlapy.frontend.buckets import set_dimension_size
    with pytest.raises(InvalidArgumentError, match="exists only inside a compiled function"):
        set_dimension_size(xnp.ones((2, 3)), 2, 1)
    f = xlapy.jit(lambda x: xnp.sum(set_dimension_size(x, 2, 1) * x, axis=1))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(f(x)), (x[:, :2] ** 2).sum(1))
    g = xlapy.jit(xlapy.grad(lambda x: xnp.sum(f(x))))
    # the gradient is dynamic along dimension 1 too: past size 2 it is padding
    np.testing.assert_allclose(np.asarray(g(x))[:, :2], 2 * x[:, :2])
