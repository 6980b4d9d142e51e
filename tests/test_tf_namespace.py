"""``xlapy.tf``: TF's ops against NumPy (eager and under ``jit_compile=True``), tf.function
modes (including the ``set_jit`` soft-compile fallback), Dataset, random, distribute,
config, printing, assertions and the errors for arguments xlapy cannot honour."""
from __future__ import annotations

import inspect
import logging
import math

import numpy as np
import pytest

import xlapy
import xlapy.tf as tf
from xlapy.errors import InvalidArgumentError
from xlapy.frontend.jit import JitFunction
from xlapy.frontend.tf_function import auto_jit, set_auto_jit
from xlapy.tf.graph_function import GraphFunction

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
I = np.array([[3, -1, 5], [1, 5, -10]], np.int32)
IMG = RNG.standard_normal((2, 5, 5, 3)).astype(np.float32)
KER = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)


@pytest.fixture(autouse=True)
def _restore_auto_jit():
    before = auto_jit()
    yield
    set_auto_jit(before)


def _np_conv_same(x, k, s):
    """NHWC / HWIO cross-correlation with TF's SAME padding and stride ``s``."""
    n, h, w, _ = x.shape
    kh, kw, _, co = k.shape
    oh, ow = -(-h // s), -(-w // s)
    ph = max((oh - 1) * s + kh - h, 0)
    pw = max((ow - 1) * s + kw - w, 0)
    xp = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    out = np.zeros((n, oh, ow, co), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * s:i * s + kh, j * s:j * s + kw, :]
            out[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return out


def _np_log_softmax(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


_erf = np.vectorize(math.erf)

# (id, tf function, inputs, NumPy reference)
CASES = [
    ("reduce_sum", lambda x: tf.reduce_sum(x, axis=1, keepdims=True), (A,),
     lambda x: x.sum(1, keepdims=True)),
    ("reduce_sum_uint8_wraps", lambda x: tf.reduce_sum(x), (np.array([200, 100], np.uint8),),
     lambda x: np.sum(x, dtype=np.uint8)),
    ("reduce_mean_int_truncates", lambda x: tf.reduce_mean(x, 1), (I,),
     lambda x: np.trunc(x.sum(1) / 3).astype(np.int32)),
    ("reduce_max_min_prod", lambda x: (tf.reduce_max(x, 0), tf.reduce_min(x), tf.reduce_prod(x, -1)),
     (A,), lambda x: (x.max(0), x.min(), x.prod(-1))),
    ("reduce_any_all", lambda x: (tf.reduce_any(x > 1, 1), tf.reduce_all(x > -3)), (A,),
     lambda x: ((x > 1).any(1), (x > -3).all())),
    ("reduce_logsumexp", lambda x: tf.reduce_logsumexp(x, axis=0), (A,),
     lambda x: np.log(np.exp(x).sum(0))),
    ("cast_truncates", lambda x: tf.cast(x, tf.int32), (np.array([-1.7, 1.7, 2.5], np.float32),),
     lambda x: np.array([-1, 1, 2], np.int32)),
    ("reshape_transpose", lambda x: tf.transpose(tf.reshape(x, [2, -1, 3]), perm=[2, 0, 1]), (A,),
     lambda x: x.reshape(2, -1, 3).transpose(2, 0, 1)),
    ("concat_stack", lambda x, y: (tf.concat([x, y], axis=-1), tf.stack([x, y], axis=1)), (A, B),
     lambda x, y: (np.concatenate([x, y], -1), np.stack([x, y], 1))),
    ("split_sizes", lambda x: tf.split(x, [1, -1], axis=1), (A,), lambda x: np.split(x, [1], 1)),
    ("split_equal", lambda x: tf.split(x, 2, axis=1), (A,), lambda x: np.split(x, 2, 1)),
    ("unstack", lambda x: tf.unstack(x, axis=1), (A,), lambda x: list(x.T)),
    ("squeeze_expand", lambda x: tf.squeeze(tf.expand_dims(x, 1), [1]), (A,), lambda x: x),
    ("tile", lambda x: tf.tile(x, [2, 1]), (A,), lambda x: np.tile(x, (2, 1))),
    ("pad_constant", lambda x: tf.pad(x, [[1, 0], [0, 2]], constant_values=7), (A,),
     lambda x: np.pad(x, ((1, 0), (0, 2)), constant_values=7)),
    ("pad_reflect", lambda x: tf.pad(x, [[1, 1], [2, 0]], "REFLECT"), (A,),
     lambda x: np.pad(x, ((1, 1), (2, 0)), "reflect")),
    ("pad_symmetric", lambda x: tf.pad(x, [[2, 1], [0, 1]], mode="SYMMETRIC"), (A,),
     lambda x: np.pad(x, ((2, 1), (0, 1)), "symmetric")),
    ("gather_axis", lambda x: tf.gather(x, [3, 0, 0], axis=1), (A,), lambda x: x[:, [3, 0, 0]]),
    ("gather_batch_dims", lambda x: tf.gather(x, np.array([[0, 2], [1, 1], [3, 0]]), axis=1,
                                              batch_dims=1), (A,),
     lambda x: np.take_along_axis(x, np.array([[0, 2], [1, 1], [3, 0]]), 1)),
    ("gather_nd", lambda x: tf.gather_nd(x, [[0, 1], [2, 3]]), (A,), lambda x: x[[0, 2], [1, 3]]),
    ("scatter_nd_adds_duplicates", lambda x: tf.scatter_nd([[1], [1], [3]], x[0, :3], [5]), (A,),
     lambda x: np.array([0, x[0, 0] + x[0, 1], 0, x[0, 2], 0])),
    ("where_clip", lambda x, y: tf.where(x > y, x, tf.clip_by_value(y, -0.5, 0.5)), (A, B),
     lambda x, y: np.where(x > y, x, np.clip(y, -0.5, 0.5))),
    ("argmax_default_axis0", lambda x: tf.argmax(x), (A,), lambda x: x.argmax(0)),
    ("argmin_axis1", lambda x: tf.math.argmin(x, axis=1, output_type=tf.int32), (A,),
     lambda x: x.argmin(1)),
    ("comparisons", lambda x, y: (tf.equal(x, x), tf.not_equal(x, y), tf.less(x, y),
                                  tf.greater_equal(x, y)), (A, B),
     lambda x, y: (x == x, x != y, x < y, x >= y)),
    ("max_min_pow", lambda x, y: (tf.maximum(x, y), tf.minimum(x, y), tf.pow(tf.abs(x), 1.5)),
     (A, B), lambda x, y: (np.maximum(x, y), np.minimum(x, y), np.abs(x) ** 1.5)),
    ("int_divide_gives_float", lambda x: tf.divide(x, 4), (I,), lambda x: x / 4),
    ("floordiv_floormod", lambda x: (tf.math.floordiv(x, 4), tf.math.floormod(x, 4)), (I,),
     lambda x: (x // 4, x % 4)),
    ("round_half_even_sign", lambda x: (tf.round(x), tf.sign(x)),
     (np.array([0.5, 1.5, 2.5, -0.5, -2.0], np.float32),),
     lambda x: (np.round(x), np.sign(x))),
    ("unary_math", lambda x: (tf.sqrt(tf.abs(x)), tf.exp(x), tf.math.log(tf.abs(x)),
                              tf.math.log1p(tf.abs(x)), tf.square(x), tf.math.rsqrt(tf.abs(x))),
     (A,), lambda x: (np.sqrt(abs(x)), np.exp(x), np.log(abs(x)), np.log1p(abs(x)), x * x,
                      1 / np.sqrt(abs(x)))),
    ("math_activations", lambda x: (tf.math.sigmoid(x), tf.math.softplus(x),
                                    tf.math.squared_difference(x, 1.0)), (A,),
     lambda x: (1 / (1 + np.exp(-x)), np.log1p(np.exp(x)), (x - 1) ** 2)),
    ("add_n_divide_no_nan", lambda x, y: (tf.math.add_n([x, y, x]),
                                          tf.math.divide_no_nan(x, tf.zeros_like(y))), (A, B),
     lambda x, y: (2 * x + y, np.zeros_like(x))),
    ("matmul_transpose", lambda x, y: (tf.matmul(x, y, transpose_b=True),
                                       tf.linalg.matmul(x, y, transpose_a=True)), (A, B),
     lambda x, y: (x @ y.T, x.T @ y)),
    ("tensordot_einsum", lambda x, y: (tf.tensordot(x, y, [[1], [1]]),
                                       tf.einsum("ij,kj->ik", x, y)), (A, B),
     lambda x, y: (x @ y.T, x @ y.T)),
    ("one_hot", lambda x: tf.one_hot(x, 4, on_value=5, off_value=-1, axis=0),
     (np.array([0, 3, 7], np.int32),),
     lambda x: np.where(np.arange(4)[:, None] == x[None, :], 5, -1)),
    ("cumsum_exclusive_reverse", lambda x: tf.math.cumsum(x, axis=1, exclusive=True,
                                                         reverse=True), (A,),
     lambda x: np.flip(np.cumsum(np.flip(x, 1), 1), 1) - x),
    ("top_k", lambda x: tuple(tf.math.top_k(x, 2)), (A,),
     lambda x: (-np.sort(-x, 1)[:, :2], np.argsort(-x, 1, kind="stable")[:, :2])),
    ("unsorted_segment_sum_drops_negative", lambda x: tf.math.unsorted_segment_sum(
        x, [0, -1, 0], 2), (A,), lambda x: np.stack([x[0] + x[2], np.zeros(4)])),
    ("creation", lambda x: (tf.range(5), tf.range(1.0, 2.0, 0.25), tf.fill([2, 2], 3),
                            tf.eye(2, 3, batch_shape=[2]), tf.linspace(0.0, 1.0, 5),
                            tf.ones_like(x), tf.zeros([2], tf.int32)), (A,),
     lambda x: (np.arange(5), np.arange(1.0, 2.0, 0.25), np.full((2, 2), 3),
                np.broadcast_to(np.eye(2, 3), (2, 2, 3)), np.linspace(0, 1, 5),
                np.ones_like(x), np.zeros(2))),
    ("reverse_slice", lambda x: (tf.reverse(x, [1]), tf.slice(x, [1, 1], [-1, 2])), (A,),
     lambda x: (x[:, ::-1], x[1:, 1:3])),
    ("relu_family", lambda x: (tf.nn.relu(x), tf.nn.relu6(x * 4), tf.nn.leaky_relu(x),
                               tf.nn.elu(x)), (A,),
     lambda x: (np.maximum(x, 0), np.clip(x * 4, 0, 6), np.where(x > 0, x, 0.2 * x),
                np.where(x > 0, x, np.expm1(x)))),
    ("softmax_logsoftmax", lambda x: (tf.nn.softmax(x), tf.nn.log_softmax(x, axis=0)), (A,),
     lambda x: (np.exp(_np_log_softmax(x)), _np_log_softmax(x, 0))),
    ("gelu_exact_by_default", lambda x: (tf.nn.gelu(x), tf.nn.gelu(x, approximate=True)), (A,),
     lambda x: (x / 2 * (1 + _erf(x / np.sqrt(2))),
                x / 2 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))))),
    ("sparse_softmax_xent", lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=np.array([0, 3, 1]), logits=x), (A,),
     lambda x: -_np_log_softmax(x)[np.arange(3), [0, 3, 1]]),
    ("softmax_xent", lambda x, y: tf.nn.softmax_cross_entropy_with_logits(
        labels=tf.nn.softmax(y), logits=x), (A, B),
     lambda x, y: -(np.exp(_np_log_softmax(y)) * _np_log_softmax(x)).sum(-1)),
    ("sigmoid_xent", lambda x, y: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(y > 0, tf.float32), logits=x), (A, B),
     lambda x, y: -((y > 0) * np.log(1 / (1 + np.exp(-x))) +
                    (y <= 0) * np.log(1 - 1 / (1 + np.exp(-x))))),
    ("conv2d_same_strided", lambda x, k: tf.nn.conv2d(x, k, strides=[1, 2, 2, 1],
                                                      padding="SAME"), (IMG, KER),
     lambda x, k: _np_conv_same(x, k, 2)),
    ("conv2d_valid_nchw", lambda x, k: tf.nn.conv2d(tf.transpose(x, [0, 3, 1, 2]), k, 1,
                                                    "VALID", data_format="NCHW"), (IMG, KER),
     lambda x, k: _np_conv_same(x, k, 1)[:, 1:-1, 1:-1, :].transpose(0, 3, 1, 2)),
    ("pools", lambda x: (tf.nn.max_pool2d(x, 2, 2, "SAME"), tf.nn.avg_pool2d(x, [1, 2, 2, 1],
                                                                            2, "VALID")),
     (IMG,), lambda x: (np.pad(x, ((0, 0), (0, 1), (0, 1), (0, 0)), constant_values=-np.inf)
                        .reshape(2, 3, 2, 3, 2, 3).max((2, 4)),
                        x[:, :4, :4].reshape(2, 2, 2, 2, 2, 3).mean((2, 4)))),
    ("bias_add", lambda x: (tf.nn.bias_add(x, [1.0, 2.0, 3.0]),
                            tf.nn.bias_add(tf.transpose(x, [0, 3, 1, 2]), [1.0, 2.0, 3.0],
                                           data_format="NCHW")), (IMG,),
     lambda x: (x + [1, 2, 3], (x + [1, 2, 3]).transpose(0, 3, 1, 2))),
    ("l2_normalize_moments", lambda x: (tf.math.l2_normalize(x, axis=1),) + tuple(
        tf.nn.moments(x, axes=[0])), (A,),
     lambda x: (x / np.sqrt((x * x).sum(1, keepdims=True)), x.mean(0), x.var(0))),
    ("all_reduce_single_replica", lambda x: (
        tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, x),
        tf.distribute.get_replica_context().all_reduce("MEAN", {"a": x})["a"]), (A,),
     lambda x: (x, x)),
    ("control_flow", lambda x: (
        tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2, lambda: -x),
        tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * 2), [tf.constant(0), x]),
        tf.switch_case(tf.constant(1), [lambda: x, lambda: x + 1])), (A,),
     lambda x: (x * 2 if x.sum() > 0 else -x, [3, x * 8], x + 1)),
    ("control_flow_limits", lambda k: (
        tf.while_loop(lambda i, s: s < 100, lambda i, s: (i + 1, s * 2), (tf.constant(0), k),
                      maximum_iterations=3),
        [tf.switch_case(k + d, {0: lambda: k * 10, 1: lambda: k * 11}, default=lambda: -k)
         for d in (-1, 0, 4)]), (np.int32(1),),
     lambda k: ((3, 8), [10, 11, -1])),
]


def _close(got, want):
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
        return
    g = np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    if w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("fn,inputs,ref", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_ops_match_numpy_eagerly_and_compiled(fn, inputs, ref):
    want = ref(*inputs)
    _close(fn(*inputs), want)
    _close(tf.function(fn, jit_compile=True)(*inputs), want)


def test_tf_typing_rules():
    c = tf.constant(2.0)
    assert isinstance(c, tf.Tensor) and c.dtype == tf.float32 and not c.weak_type
    assert tf.constant(1).dtype == tf.int32
    np.testing.assert_array_equal(np.asarray(tf.constant(7, shape=[2, 2])), np.full((2, 2), 7))
    np.testing.assert_array_equal(np.asarray(tf.constant([1, 2, 3, 4], shape=[2, 2])),
                                  [[1, 2], [3, 4]])
    assert tf.cast(tf.constant([1, 2]), tf.int64).dtype == tf.int32        # x64 off
    assert tf.as_dtype("bfloat16") == tf.bfloat16 and tf.as_dtype(float) == tf.float64
    with pytest.raises(InvalidArgumentError, match="use tf.cast"):
        tf.convert_to_tensor(tf.constant([1, 2]), dtype=tf.float32)
    assert tf.convert_to_tensor(3, dtype_hint=tf.float32).dtype == tf.float32
    assert tf.shape(tf.zeros([2, 5])).tolist() == [2, 5] and int(tf.rank(A)) == 2
    assert int(tf.size(A)) == 12 and tf.is_tensor(tf.Variable(1.0))


def test_unique_eager_and_must_compile_error():
    y, idx = tf.unique(tf.constant([1, 1, 2, 4, 4, 4, 7, 8, 8]))      # TF's doc example
    assert np.asarray(y).tolist() == [1, 2, 4, 7, 8]
    assert np.asarray(idx).tolist() == [0, 0, 1, 2, 2, 2, 3, 4, 4]
    out = tf.unique([3.0, 1.0, 3.0, 2.0])                            # first-occurrence order
    assert np.asarray(out.y).tolist() == [3.0, 1.0, 2.0] and np.asarray(out.idx).tolist() == [0, 1, 0, 2]

    @tf.function(jit_compile=True)
    def not_compilable(x):
        return tf.unique(x)
    line = inspect.getsourcelines(not_compilable.python_function)[1] + 2
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        not_compilable(tf.constant([1, 2, 1]))
    assert "tf.unique has a data-dependent output shape" in str(info.value)
    assert f"test_tf_namespace.py:{line}: return tf.unique(x)" in str(info.value)
    with pytest.raises(InvalidArgumentError, match=r"tf.where\(condition\)"):
        tf.function(lambda x: tf.where(x > 0), jit_compile=True)(A)
    np.testing.assert_array_equal(np.asarray(tf.where(A > 0)), np.argwhere(A > 0))
    np.testing.assert_array_equal(np.asarray(tf.boolean_mask(A, A[:, 0] > 0)), A[A[:, 0] > 0])


def test_function_modes_and_arguments():
    def f(x):
        return x * 2

    assert isinstance(tf.function(f)._inner, GraphFunction)
    assert isinstance(tf.function(jit_compile=True)(f)._inner, JitFunction)
    assert isinstance(tf.function(f, experimental_compile=True)._inner, JitFunction)
    assert tf.function(f, jit_compile=True).python_function is f

    class Model:                              # tf.function on methods: bound per instance
        def __init__(self, scale):
            self.w = tf.Variable(scale)

        @tf.function(jit_compile=True)
        def __call__(self, x):
            return x * self.w

        @tf.function
        def eager(self, x):
            return x + self.w
    m2, m3 = Model(2.0), Model(3.0)
    np.testing.assert_allclose(np.asarray(m2(A)), 2 * A)
    np.testing.assert_allclose(np.asarray(m3(A)), 3 * A)
    np.testing.assert_allclose(np.asarray(m2.eager(A)), A + 2)
    m2(A)
    assert m2.eager is m2.eager and m2.__call__.cache_info().misses == 1
    assert m2.__call__.cache_info().hits == 1
    seen = []
    tf.function(lambda x: seen.append(tf.executing_eagerly()) or x, jit_compile=True)(A)
    tf.function(lambda x: seen.append(tf.executing_eagerly()) or x)(A)
    assert seen == [False, False] and tf.executing_eagerly()       # graph mode, as in TF
    with pytest.raises(InvalidArgumentError, match="experimental_implements"):
        tf.function(f, experimental_implements="embedded_matmul")
    with pytest.raises(InvalidArgumentError, match="jit_compile"):
        tf.function(f, jit_compile="yes")
    g = tf.function(f, input_signature=[tf.TensorSpec([None, 4], tf.float32)],
                    jit_compile=True)
    np.testing.assert_allclose(np.asarray(g(A)), 2 * A)
    with pytest.raises(InvalidArgumentError, match="not compatible with TensorSpec"):
        g(np.ones((2, 3), np.float32))


def test_set_jit_soft_compiles_and_falls_back_per_signature(caplog):
    calls = []

    @tf.function
    def f(x):
        calls.append(x.shape)
        if x.shape[0] > 3:                       # static: fine when compiled
            return tf.unique(x).y                # cannot be compiled
        return x * 2

    tf.config.optimizer.set_jit(False)
    assert tf.config.optimizer.get_jit() == ""
    np.testing.assert_array_equal(np.asarray(f(tf.constant([1, 2]))), [2, 4])
    np.testing.assert_array_equal(np.asarray(f(tf.constant([3, 4]))), [6, 8])
    assert f.cache_info().misses == 0 and len(calls) == 1   # a graph, recorded once
    tf.config.optimizer.set_jit("autoclustering")
    assert tf.config.optimizer.get_jit() == "autoclustering" and auto_jit() is True
    with caplog.at_level(logging.INFO, logger="xlapy.jit"):
        np.testing.assert_array_equal(np.asarray(f(tf.constant([1, 2]))), [2, 4])
        assert f.cache_info().misses == 1                             # compiled
        x = tf.constant([5, 1, 5, 1, 2])
        np.testing.assert_array_equal(np.asarray(f(x)), [5, 1, 2])    # fell back
        np.testing.assert_array_equal(np.asarray(f(x)), [5, 1, 2])
    infos = [r.getMessage() for r in caplog.records if r.name == "xlapy.jit"]
    assert len(infos) == 1 and "is not compiled whole for (x: s32[5])" in infos[0]
    assert "tf.unique has a data-dependent output shape" in infos[0]
    assert list(f.fallbacks) == ["x: s32[5]"]
    n = len(calls)
    f(x)                                   # remembered: no new trace attempt, the graph runs
    assert len(calls) == n and f.cache_info().misses == 1
    f(tf.constant([3, 4]))
    assert f.cache_info().hits >= 1 and f.cache_info().misses == 1

    @tf.function
    def branchy(x):                        # Python control flow on a traced value
        return x if tf.reduce_sum(x) > 0 else -x
    np.testing.assert_allclose(np.asarray(branchy(A)), A if A.sum() > 0 else -A)
    assert len(branchy.fallbacks) == 1
    with pytest.raises(InvalidArgumentError, match="converting to a Python bool"):
        tf.function(branchy.python_function, jit_compile=True)(A)
    with pytest.raises(InvalidArgumentError, match="set_jit"):
        tf.config.optimizer.set_jit("sometimes")
    plain = xlapy.function(lambda x: x + 1)           # the front end's own API, same rule
    set_auto_jit(False)
    plain(A)
    set_auto_jit(None)
    plain(A)
    assert plain.cache_info().misses == 0
    set_auto_jit(True)
    np.testing.assert_allclose(np.asarray(plain(A)), A + 1)
    assert plain.cache_info().misses == 1
    assert xlapy.function(lambda x: x, jit_compile=False)(A) is A    # False: never compiles


def test_variables_and_tape_in_a_compiled_step():
    w = tf.Variable(tf.zeros([4, 1]))
    x = tf.constant(A)
    y = tf.matmul(x, tf.constant([[1.0], [-2.0], [0.5], [3.0]]))

    @tf.function(jit_compile=True)
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        (g,) = tape.gradient(loss, [w])
        w.assign_sub(0.1 * g)
        return loss

    losses = [float(step(x, y)) for _ in range(20)]
    assert losses[-1] < 0.5 * losses[0] and step.cache_info().misses == 1
    with tf.GradientTape() as tape:
        v = tf.constant([1.0, -2.0])
        tape.watch(v)
        z = tf.reduce_sum(v * v)
    np.testing.assert_allclose(np.asarray(tape.gradient(z, v)), [2.0, -4.0])
    with tf.GradientTape() as tape:
        u = tf.Variable(3.0)
        c = tf.constant(1.0) * 2
    assert tape.gradient(c, u, unconnected_gradients=tf.UnconnectedGradients.ZERO) == 0


def test_dataset_batch_repeat_take_skip_enumerate():
    x = np.arange(10, dtype=np.float32)
    y = np.arange(10, dtype=np.int64) * 10
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    assert len(ds) == 10
    first = next(iter(ds))
    assert isinstance(first, tuple) and isinstance(first[0], tf.Tensor)
    assert first[1].dtype == tf.int32 and int(first[1]) == 0           # x64 off
    assert [b[0].shape[0] for b in ds.batch(4)] == [4, 4, 2]
    assert [b[0].shape[0] for b in ds.batch(4, drop_remainder=True)] == [4, 4]
    assert int(ds.batch(4).cardinality()) == 3 and len(ds.batch(4, True)) == 2
    rep = ds.repeat(2).skip(8).take(4)
    assert [int(a) for a, _ in rep] == [8, 9, 0, 1] and len(rep) == 4
    assert int(ds.repeat().cardinality()) == tf.data.INFINITE_CARDINALITY
    with pytest.raises(TypeError, match="infinite"):
        len(ds.repeat())
    assert [int(b[0][0]) for b in ds.batch(3).repeat().take(5)] == [0, 3, 6, 9, 0]
    pairs = list(ds.take(3).enumerate(start=5).as_numpy_iterator())
    assert [(int(i), float(e[0])) for i, e in pairs] == [(5, 0.0), (6, 1.0), (7, 2.0)]
    assert isinstance(pairs[0][1][0], np.float32) and isinstance(pairs[0][0], np.int64)
    d = tf.data.Dataset.from_tensor_slices({"a": x, "b": y}).batch(5)
    batch = next(iter(d))
    assert set(batch) == {"a", "b"} and batch["a"].shape == (5,)
    assert [int(v) for v in tf.data.Dataset.range(2, 8, 3)] == [2, 5]
    with pytest.raises(InvalidArgumentError, match="different first dimensions"):
        tf.data.Dataset.from_tensor_slices((x, y[:3]))
    assert ds.prefetch(tf.data.AUTOTUNE) is ds


def test_dataset_shuffle_map_filter():
    x = np.arange(20, dtype=np.int32)
    ds = tf.data.Dataset.from_tensor_slices(x)
    order = [int(v) for v in ds.shuffle(100, seed=1)]
    assert sorted(order) == list(range(20)) and order != list(range(20))
    assert order == [int(v) for v in ds.shuffle(100, seed=1)]         # same seed, same order
    shuffled = ds.shuffle(100, seed=2)
    epoch1, epoch2 = [int(v) for v in shuffled], [int(v) for v in shuffled]
    assert epoch1 != epoch2 and sorted(epoch2) == list(range(20))     # reshuffled
    fixed = ds.shuffle(100, seed=2, reshuffle_each_iteration=False)
    assert [int(v) for v in fixed] == [int(v) for v in fixed]
    assert [int(v) for v in ds.shuffle(1, seed=3)] == list(range(20))  # buffer 1: no change
    small = [int(v) for v in ds.shuffle(3, seed=4)]                   # a buffer of 3 can
    assert all(v <= pos + 2 for pos, v in enumerate(small))           # only delay by <= 2
    pairs = tf.data.Dataset.from_tensor_slices((x, x * 2)).map(
        lambda a, b: a + b, num_parallel_calls=tf.data.AUTOTUNE)
    assert [int(v) for v in pairs] == list(range(0, 60, 3))
    odd = ds.filter(lambda v: v % 2 == 1)
    assert [int(v) for v in odd] == list(range(1, 20, 2))
    uniq = tf.data.Dataset.from_tensor_slices(np.array([[1, 1], [2, 3]])).map(
        lambda r: tf.unique(r).y.shape[0])                            # not compilable: op by op
    assert [int(v) for v in uniq] == [1, 2]
    total = tf.data.Dataset.range(5).reduce(np.int64(0), lambda s, v: s + v)
    assert int(total) == 10


def test_random_seeds_generators_and_compiled_draws():
    tf.random.set_seed(5)
    a, b = tf.random.uniform([3]), tf.random.uniform([3])
    tf.random.set_seed(5)
    a2 = tf.random.uniform([3])
    np.testing.assert_array_equal(np.asarray(a), np.asarray(a2))
    assert not np.array_equal(np.asarray(a), np.asarray(b))
    assert np.all((np.asarray(a) >= 0) & (np.asarray(a) < 1))
    s1, s2 = tf.random.normal([2], seed=7), tf.random.normal([2], seed=7)
    assert not np.array_equal(np.asarray(s1), np.asarray(s2))           # an op seed advances
    tf.random.set_seed(5)
    np.testing.assert_array_equal(np.asarray(tf.random.normal([2], seed=7)), np.asarray(s1))
    ints = tf.random.uniform([50], 3, 7, dtype=tf.int32)
    assert ints.dtype == tf.int32 and set(np.asarray(ints).tolist()) <= {3, 4, 5, 6}
    with pytest.raises(InvalidArgumentError, match="maxval is required"):
        tf.random.uniform([2], dtype=tf.int32)
    np.testing.assert_array_equal(np.asarray(tf.random.stateless_uniform([3], seed=[1, 2])),
                                  np.asarray(tf.random.stateless_uniform([3], seed=[1, 2])))
    g = tf.random.Generator.from_seed(1)
    assert g.normal([2, 3]).shape == (2, 3)

    @tf.function(jit_compile=True)
    def draw(x):
        return x + tf.random.uniform([4])
    d1, d2 = draw(tf.zeros([4])), draw(tf.zeros([4]))
    assert not np.array_equal(np.asarray(d1), np.asarray(d2)) and draw.cache_info().misses == 1
    kept = np.asarray(tf.nn.dropout(tf.ones([1000]), 0.25, seed=3))
    assert set(np.unique(kept).tolist()) == {0.0, np.float32(1 / 0.75)}
    assert 0.6 < (kept > 0).mean() < 0.9
    perm = np.asarray(tf.random.shuffle(tf.range(10)))
    assert sorted(perm.tolist()) == list(range(10))


def test_distribute_config_and_devices():
    @tf.function(jit_compile=True)
    def step_fn():
        t = tf.ones(shape=[100], dtype=tf.float32)
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce(tf.distribute.ReduceOp.SUM, t)
    hlo = step_fn.experimental_get_compiler_ir()(stage="hlo")
    assert "all-reduce(" in hlo and "to_apply=" in hlo
    strategy = tf.distribute.MirroredStrategy()
    np.testing.assert_array_equal(np.asarray(strategy.run(step_fn)), np.ones(100))
    with strategy.scope():
        assert tf.distribute.get_replica_context() is None
        assert strategy.run(tf.distribute.get_replica_context).num_replicas_in_sync == 1
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        tf.distribute.MirroredStrategy(devices=["/gpu:0"])
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.distribute.get_replica_context().all_reduce("SUM", x * x))
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), [2.0, 4.0])
    assert tf.config.list_physical_devices() == [("/physical_device:CPU:0", "CPU")]
    assert tf.config.list_physical_devices("GPU") == []
    assert tf.test.gpu_device_name() == "" and tf.test.is_gpu_available() is False
    with pytest.raises(InvalidArgumentError, match="not a GPU"):
        tf.config.experimental.set_memory_growth(tf.config.list_physical_devices()[0], True)
    tf.compat.v1.enable_eager_execution()
    with pytest.raises(InvalidArgumentError, match="graph mode"):
        tf.compat.v1.disable_eager_execution()


def test_print_and_assertions(capsys):
    tf.print("x:", tf.constant([1, 2, 3, 4, 5, 6, 7, 8]), output_stream=__import__("sys").stdout)
    assert capsys.readouterr().out == "x: [1 2 3 ... 6 7 8]\n"
    tf.print(tf.constant([[1.5, 2.0]]), summarize=-1)
    assert capsys.readouterr().err == "[[1.5 2. ]]\n"
    printing = tf.function(lambda x: (tf.print("compiled", x), x)[1], jit_compile=True)
    printing(tf.constant([1.5, -2.0]))           # a host callback in the compiled program
    assert capsys.readouterr().err == "compiled [ 1.5 -2. ]\n"
    tf.config.optimizer.set_jit(True)
    soft = tf.function(lambda x: (tf.print("soft", output_stream=__import__("sys").stdout), x)[1])
    soft(A)
    assert capsys.readouterr().out == "soft\n"
    tf.debugging.assert_equal(tf.constant([1, 2]), [1, 2])
    with pytest.raises(InvalidArgumentError, match="x < y did not hold"):
        tf.debugging.assert_less(tf.constant([1, 2]), 2, message="bad")
    checked = tf.function(lambda x: (tf.debugging.assert_positive(x), x)[1], jit_compile=True)
    np.testing.assert_array_equal(np.asarray(checked(tf.constant([-1.0]))), [-1.0])  # skipped
    with pytest.raises(InvalidArgumentError, match="must have rank 3"):
        tf.function(lambda x: (tf.debugging.assert_rank(x, 3), x)[1], jit_compile=True)(A)
    with pytest.raises(InvalidArgumentError, match="NaN or Inf"):
        tf.debugging.check_numerics(tf.constant([np.nan]), "bad")


def test_unsupported_arguments_are_named():
    for call, arg in [
        (lambda: tf.pad(A, [[1, 1], [1, 1]], mode="WRAP"), "mode='WRAP'"),
        (lambda: tf.nn.conv2d(IMG, KER, 1, "SAME", data_format="NHCW"), "data_format='NHCW'"),
        (lambda: tf.nn.conv2d(IMG, KER, [2, 1, 1, 1], "SAME"), "strides=[2, 1, 1, 1]"),
        (lambda: tf.nn.max_pool2d(IMG, 2, 2, "FULL"), "padding='FULL'"),
        (lambda: tf.linspace(0.0, 1.0, 3, axis=1), "axis=1"),
        (lambda: tf.sort(A, direction="UP"), "direction='UP'"),
        (lambda: tf.matmul(A, B, transpose_b=True, output_type=tf.int32), "output_type"),
        (lambda: tf.while_loop(lambda i: i < 2, lambda i: i + 1, [0], shape_invariants=[None]),
         "shape_invariants"),
        (lambda: tf.data.Dataset.range(3).cache("/tmp/x"), "filename='/tmp/x'"),
        (lambda: tf.random.Generator.from_seed(1, alg="philox"), "alg='philox'"),
        (lambda: tf.distribute.MirroredStrategy(cross_device_ops="nccl"), "cross_device_ops"),
    ]:
        with pytest.raises(InvalidArgumentError, match="not supported by xlapy") as info:
            call()
        assert arg in str(info.value), (arg, str(info.value))


@pytest.mark.peers
def test_ops_agree_with_jax_numpy():
    import jax.numpy as jnp
    import jax.nn as jax_nn
    np.testing.assert_allclose(np.asarray(tf.nn.gelu(A)), np.asarray(jax_nn.gelu(A, False)),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(tf.reduce_logsumexp(A, 1)),
                               np.asarray(jax_nn.logsumexp(A, 1)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tf.einsum("ij,kj->ik", A, B)),
                               np.asarray(jnp.einsum("ij,kj->ik", A, B)), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(tf.round(A * 3)), np.asarray(jnp.round(A * 3)))
    np.testing.assert_allclose(np.asarray(tf.nn.log_softmax(A)),
                               np.asarray(jax_nn.log_softmax(A)), rtol=1e-6, atol=1e-6)


def test_tensor_numpy_method_and_lazy_attribute():
    """``t.numpy()`` (TF's idiom) returns a NumPy copy eagerly and is a must-compile error
    when traced; ``xlapy.tf`` is reachable as an attribute after ``import xlapy``."""
    import xlapy
    t = tf.constant([1.0, 2.0])
    n = t.numpy()
    assert isinstance(n, np.ndarray) and n.tolist() == [1.0, 2.0]
    n[0] = 5.0
    assert t.numpy()[0] == 1.0
    with pytest.raises(InvalidArgumentError, match=r"\.numpy\(\)"):
        tf.function(lambda x: x.numpy(), jit_compile=True)(t)
    assert xlapy.tf is tf
