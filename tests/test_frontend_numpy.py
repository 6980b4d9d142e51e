"""xlapy.numpy vs NumPy: each op eagerly and under jit, values and result dtypes."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.frontend.dtypes import canonicalize

RNG = np.random.default_rng(0)


def f32(*shape, lo=-2.0, hi=2.0):
    return lambda: RNG.uniform(lo, hi, shape).astype(np.float32)


def i32(*shape, lo=-5, hi=6):
    return lambda: RNG.integers(lo, hi, shape).astype(np.int32)


def boolean(*shape):
    return lambda: RNG.random(shape) < 0.5


# (id, xnp function, numpy function, argument makers)
CASES = [
    ("add", xnp.add, np.add, [f32(3, 4), f32(4)]),
    ("subtract_int", xnp.subtract, np.subtract, [i32(2, 3), i32(2, 3)]),
    ("multiply_bcast", xnp.multiply, np.multiply, [f32(2, 1, 3), f32(4, 1)]),
    ("divide_int", xnp.divide, np.divide, [i32(5), i32(5, lo=1)]),
    ("floor_divide_int", xnp.floor_divide, np.floor_divide, [i32(8), i32(8, lo=1, hi=4)]),
    ("floor_divide_neg", xnp.floor_divide, np.floor_divide, [i32(8), lambda: -np.arange(1, 9, dtype=np.int32)]),
    ("floor_divide_f", xnp.floor_divide, np.floor_divide, [f32(6), f32(6, lo=0.5, hi=2)]),
    ("remainder_int", xnp.remainder, np.remainder, [i32(8), lambda: np.array([3, -3, 2, -2, 5, -5, 7, 1], np.int32)]),
    ("remainder_f", xnp.remainder, np.remainder, [f32(6), f32(6, lo=-2, hi=-0.5)]),
    ("power", xnp.power, np.power, [f32(5, lo=0.1, hi=2), f32(5)]),
    ("negative", xnp.negative, np.negative, [i32(4)]),
    ("abs", xnp.abs, np.abs, [f32(4)]),
    ("sign", xnp.sign, np.sign, [i32(6)]),
    ("exp", xnp.exp, np.exp, [f32(5)]),
    ("exp2", xnp.exp2, np.exp2, [f32(5)]),
    ("expm1", xnp.expm1, np.expm1, [f32(5)]),
    ("log", xnp.log, np.log, [f32(5, lo=0.1, hi=3)]),
    ("log2", xnp.log2, np.log2, [f32(5, lo=0.1, hi=3)]),
    ("log10", xnp.log10, np.log10, [f32(5, lo=0.1, hi=3)]),
    ("log1p", xnp.log1p, np.log1p, [f32(5, lo=0, hi=3)]),
    ("sqrt_int", xnp.sqrt, np.sqrt, [i32(5, lo=0)]),
    ("square", xnp.square, np.square, [i32(5)]),
    ("reciprocal", xnp.reciprocal, np.reciprocal, [f32(5, lo=0.5)]),
    ("sin", xnp.sin, np.sin, [f32(5)]),
    ("cos", xnp.cos, np.cos, [f32(5)]),
    ("tan", xnp.tan, np.tan, [f32(5, lo=-1, hi=1)]),
    ("arcsin", xnp.arcsin, np.arcsin, [f32(5, lo=-1, hi=1)]),
    ("arccos", xnp.arccos, np.arccos, [f32(5, lo=-1, hi=1)]),
    ("arctan", xnp.arctan, np.arctan, [f32(5)]),
    ("arctan2", xnp.arctan2, np.arctan2, [f32(5), f32(5)]),
    ("sinh", xnp.sinh, np.sinh, [f32(5)]),
    ("cosh", xnp.cosh, np.cosh, [f32(5)]),
    ("tanh", xnp.tanh, np.tanh, [f32(5)]),
    ("floor", xnp.floor, np.floor, [f32(5)]),
    ("ceil", xnp.ceil, np.ceil, [f32(5)]),
    ("round", xnp.round, np.round, [lambda: np.array([0.5, 1.5, 2.5, -0.5, -1.7], np.float32)]),
    ("rint", xnp.rint, np.rint, [lambda: np.array([0.5, 1.5, 2.5, -0.5, -1.7], np.float32)]),
    ("trunc", xnp.trunc, np.trunc, [f32(5)]),
    ("maximum", xnp.maximum, np.maximum, [f32(3, 2), f32(2)]),
    ("minimum", xnp.minimum, np.minimum, [i32(4), i32(4)]),
    ("clip", lambda x: xnp.clip(x, -1.0, 0.5), lambda x: np.clip(x, -1.0, 0.5), [f32(6)]),
    ("where", xnp.where, np.where, [boolean(2, 3), f32(2, 3), f32(3)]),
    ("isfinite", xnp.isfinite, np.isfinite, [lambda: np.array([1, np.inf, np.nan, -np.inf], np.float32)]),
    ("isnan", xnp.isnan, np.isnan, [lambda: np.array([1, np.inf, np.nan], np.float32)]),
    ("isinf", xnp.isinf, np.isinf, [lambda: np.array([1, -np.inf, np.nan], np.float32)]),
    ("logical_and", xnp.logical_and, np.logical_and, [boolean(5), boolean(5)]),
    ("logical_or", xnp.logical_or, np.logical_or, [boolean(5), boolean(5)]),
    ("logical_xor", xnp.logical_xor, np.logical_xor, [i32(5), boolean(5)]),
    ("logical_not", xnp.logical_not, np.logical_not, [i32(5)]),
    ("bitwise_and", xnp.bitwise_and, np.bitwise_and, [i32(5), i32(5)]),
    ("bitwise_or", xnp.bitwise_or, np.bitwise_or, [i32(5), i32(5)]),
    ("bitwise_xor", xnp.bitwise_xor, np.bitwise_xor, [i32(5), i32(5)]),
    ("invert", xnp.invert, np.invert, [i32(5)]),
    ("left_shift", xnp.left_shift, np.left_shift, [i32(5, lo=0), i32(5, lo=0, hi=4)]),
    ("right_shift", xnp.right_shift, np.right_shift, [i32(5), i32(5, lo=0, hi=4)]),
    ("equal", xnp.equal, np.equal, [i32(6, lo=0, hi=2), i32(6, lo=0, hi=2)]),
    ("less_equal", xnp.less_equal, np.less_equal, [f32(4), f32(4)]),
    ("greater", xnp.greater, np.greater, [f32(4), f32(1)]),
    ("sum", xnp.sum, np.sum, [f32(3, 4)]),
    ("sum_axis_keep", lambda x: xnp.sum(x, axis=1, keepdims=True), lambda x: np.sum(x, axis=1, keepdims=True), [i32(3, 4)]),
    ("sum_bool", lambda x: xnp.sum(x, axis=0), lambda x: np.sum(x, axis=0), [boolean(4, 3)]),
    ("mean", lambda x: xnp.mean(x, axis=(0, 2)), lambda x: np.mean(x, axis=(0, 2)), [f32(2, 3, 4)]),
    ("mean_int", xnp.mean, np.mean, [i32(6)]),
    ("var", lambda x: xnp.var(x, axis=0), lambda x: np.var(x, axis=0), [f32(5, 3)]),
    ("std_ddof", lambda x: xnp.std(x, ddof=1), lambda x: np.std(x, ddof=1), [f32(6)]),
    ("max", lambda x: xnp.max(x, axis=-1), lambda x: np.max(x, axis=-1), [f32(3, 4)]),
    ("min_int", xnp.min, np.min, [i32(3, 4)]),
    ("prod", lambda x: xnp.prod(x, axis=0), lambda x: np.prod(x, axis=0), [i32(3, 2, lo=1, hi=4)]),
    ("argmax", lambda x: xnp.argmax(x, axis=1), lambda x: np.argmax(x, axis=1), [i32(4, 5, lo=0, hi=3)]),
    ("argmin_flat", xnp.argmin, np.argmin, [f32(3, 4)]),
    ("argmax_nan", xnp.argmax, np.argmax, [lambda: np.array([1, np.nan, 5, np.nan], np.float32)]),
    ("all", lambda x: xnp.all(x, axis=0), lambda x: np.all(x, axis=0), [boolean(3, 4)]),
    ("any", xnp.any, np.any, [i32(3, 4, lo=0, hi=2)]),
    ("cumsum", lambda x: xnp.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1), [i32(2, 5)]),
    ("cumprod", xnp.cumprod, np.cumprod, [f32(2, 3, lo=0.5, hi=1.5)]),
    ("reshape", lambda x: xnp.reshape(x, (4, -1)), lambda x: np.reshape(x, (4, -1)), [f32(2, 6)]),
    ("transpose", lambda x: xnp.transpose(x, (2, 0, 1)), lambda x: np.transpose(x, (2, 0, 1)), [f32(2, 3, 4)]),
    ("moveaxis", lambda x: xnp.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), [f32(2, 3, 4)]),
    ("swapaxes", lambda x: xnp.swapaxes(x, 0, 2), lambda x: np.swapaxes(x, 0, 2), [f32(2, 3, 4)]),
    ("squeeze", xnp.squeeze, np.squeeze, [f32(1, 3, 1)]),
    ("expand_dims", lambda x: xnp.expand_dims(x, (0, 3)), lambda x: np.expand_dims(x, (0, 3)), [f32(2, 3)]),
    ("concatenate", lambda a, b: xnp.concatenate([a, b], axis=1), lambda a, b: np.concatenate([a, b], axis=1), [f32(2, 3), i32(2, 2)]),
    ("stack", lambda a, b: xnp.stack([a, b], axis=-1), lambda a, b: np.stack([a, b], axis=-1), [f32(2, 3), f32(2, 3)]),
    ("split", lambda x: xnp.split(x, [1, 3], axis=1), lambda x: np.split(x, [1, 3], axis=1), [f32(2, 5)]),
    ("pad", lambda x: xnp.pad(x, ((1, 0), (2, 1)), constant_values=7), lambda x: np.pad(x, ((1, 0), (2, 1)), constant_values=7), [i32(2, 3)]),
    ("flip", lambda x: xnp.flip(x, 1), lambda x: np.flip(x, 1), [f32(2, 3)]),
    ("tile", lambda x: xnp.tile(x, (2, 3)), lambda x: np.tile(x, (2, 3)), [f32(2, 2)]),
    ("repeat", lambda x: xnp.repeat(x, 2, axis=0), lambda x: np.repeat(x, 2, axis=0), [f32(2, 3)]),
    ("broadcast_to", lambda x: xnp.broadcast_to(x, (3, 2, 4)), lambda x: np.broadcast_to(x, (3, 2, 4)), [f32(2, 1)]),
    ("ravel", xnp.ravel, np.ravel, [f32(2, 3)]),
    ("sort", xnp.sort, np.sort, [f32(3, 5)]),
    ("sort_axis0", lambda x: xnp.sort(x, axis=0), lambda x: np.sort(x, axis=0), [i32(4, 3)]),
    ("argsort", lambda x: xnp.argsort(x), lambda x: np.argsort(x, kind="stable"), [i32(7, lo=0, hi=3)]),
    ("matmul", xnp.matmul, np.matmul, [f32(2, 3, 4), f32(4, 5)]),
    ("matmul_vec", xnp.matmul, np.matmul, [f32(4), f32(4, 2)]),
    ("dot", xnp.dot, np.dot, [f32(2, 3), f32(3)]),
    ("dot_nd", xnp.dot, np.dot, [f32(2, 3), f32(4, 3, 2)]),
    ("tensordot", lambda a, b: xnp.tensordot(a, b, axes=([1, 2], [0, 1])), lambda a, b: np.tensordot(a, b, axes=([1, 2], [0, 1])), [f32(2, 3, 4), f32(3, 4, 5)]),
    ("outer", xnp.outer, np.outer, [f32(3), f32(4)]),
    ("einsum_matmul", lambda a, b: xnp.einsum("ij,jk->ik", a, b), lambda a, b: np.einsum("ij,jk->ik", a, b), [f32(2, 3), f32(3, 4)]),
    ("einsum_batch", lambda a, b: xnp.einsum("bij,bjk->bki", a, b), lambda a, b: np.einsum("bij,bjk->bki", a, b), [f32(2, 3, 4), f32(2, 4, 5)]),
    ("einsum_implicit", lambda a, b: xnp.einsum("ij,kj", a, b), lambda a, b: np.einsum("ij,kj", a, b), [f32(2, 3), f32(4, 3)]),
    ("einsum_trace", lambda a: xnp.einsum("ii->", a), lambda a: np.einsum("ii->", a), [f32(3, 3)]),
    ("einsum_three", lambda a, b, c: xnp.einsum("ij,jk,k->i", a, b, c), lambda a, b, c: np.einsum("ij,jk,k->i", a, b, c), [f32(2, 3), f32(3, 4), f32(4)]),
    ("logsumexp", lambda x: xnp.logsumexp(x, axis=1), lambda x: np.log(np.sum(np.exp(x), axis=1)), [f32(3, 4)]),
    ("astype", lambda x: xnp.asarray(x).astype(xnp.int32), lambda x: x.astype(np.int32), [f32(5, lo=-3, hi=3)]),
    ("getitem_basic", lambda x: x[1:, ::-2, None, 0], lambda x: x[1:, ::-2, None, 0], [f32(3, 5, 2)]),
    ("getitem_ellipsis", lambda x: x[..., 1], lambda x: x[..., 1], [f32(2, 3, 4)]),
    ("getitem_int_array", lambda x, i: x[i], lambda x, i: x[i], [f32(5, 3), lambda: np.array([[0, 4], [-1, 2]], np.int32)]),
    ("getitem_mixed", lambda x, i: x[:, i, 1:], lambda x, i: x[:, i, 1:], [f32(2, 5, 3), lambda: np.array([3, 0, -2], np.int32)]),
    ("getitem_nonadjacent", lambda x, i: x[i, :, i], lambda x, i: x[i, :, i], [f32(4, 2, 4), lambda: np.array([1, 3], np.int32)]),
    ("at_set", lambda x: xnp.asarray(x).at[1, ::2].set(9.0), lambda x: _np_at(x, (1, slice(None, None, 2)), "set", 9.0), [f32(3, 4)]),
    ("at_add", lambda x, i: xnp.asarray(x).at[i].add(1.0), lambda x, i: _np_at(x, i, "add", 1.0), [f32(5), lambda: np.array([0, 2, 2], np.int32)]),
    ("at_max", lambda x: xnp.asarray(x).at[:, 0].max(0.0), lambda x: _np_at(x, (slice(None), 0), "max", 0.0), [f32(3, 2)]),
]


def _np_at(x, idx, op, v):
    y = x.copy()
    if op == "set":
        y[idx] = v
    elif op == "add":
        np.add.at(y, idx, v)
    elif op == "max":
        y[idx] = np.maximum(y[idx], v)
    return y


def _check(out, expected, name):
    if isinstance(expected, (list, tuple)):
        assert len(out) == len(expected)
        for o, e in zip(out, expected):
            _check(o, e, name)
        return
    expected = np.asarray(expected)
    got = np.asarray(out)
    assert got.shape == expected.shape, f"{name}: shape {got.shape} != {expected.shape}"
    assert got.dtype == canonicalize(expected.dtype), f"{name}: dtype {got.dtype} != {expected.dtype}"
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5, err_msg=name)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=name)


@pytest.mark.parametrize("name,xfn,nfn,makers", CASES, ids=[c[0] for c in CASES])
def test_numpy_op_eager_and_jit(name, xfn, nfn, makers):
    args = [m() for m in makers]
    expected = nfn(*args)
    _check(xfn(*args), expected, name + " (eager)")
    _check(xlapy.jit(xfn)(*args), expected, name + " (jit)")


def test_creation_functions():
    cases = [
        (xnp.zeros((2, 3)), np.zeros((2, 3), np.float32)),
        (xnp.ones(4, dtype=xnp.int32), np.ones(4, np.int32)),
        (xnp.full((2,), 7), np.full((2,), 7, np.int32)),
        (xnp.arange(5), np.arange(5, dtype=np.int32)),
        (xnp.arange(2, 11, 3), np.arange(2, 11, 3, dtype=np.int32)),
        (xnp.arange(0.0, 1.0, 0.25), np.arange(0.0, 1.0, 0.25, dtype=np.float32)),
        (xnp.linspace(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5, dtype=np.float32)),
        (xnp.linspace(0.0, 1.0, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False, dtype=np.float32)),
        (xnp.eye(3, 4, k=1), np.eye(3, 4, k=1, dtype=np.float32)),
        (xnp.zeros_like(np.ones((2, 2), np.int32)), np.zeros((2, 2), np.int32)),
        (xnp.full_like(np.ones(3, np.float32), 2.5), np.full(3, 2.5, np.float32)),
        (xnp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32)),
        (xnp.asarray(np.arange(3, dtype=np.float64)), np.arange(3, dtype=np.float32)),
    ]
    for got, want in cases:
        _check(got, want, "creation")


def test_creation_inside_jit():
    f = xlapy.jit(lambda x: x + xnp.arange(4) + xnp.ones(4) * xnp.eye(4)[1])
    x = np.full(4, 2.0, np.float32)
    _check(f(x), x + np.arange(4) + np.eye(4, dtype=np.float32)[1], "creation in jit")


@pytest.mark.parametrize("a,b,want", [
    (np.ones(2, np.float32), 2.0, np.float32), (np.ones(2, np.int8), 3, np.int8),
    (np.ones(2, np.int32), 2.0, np.float32), (np.ones(2, np.uint8), np.ones(2, np.int8), np.int16),
    (np.ones(2, np.float16), np.ones(2, np.int32), np.float16),
    (np.ones(2, np.bool_), 1, np.int32), (np.ones(2, np.float16), 1.5, np.float16),
])
def test_promotion_with_weak_scalars(a, b, want):
    assert (xnp.asarray(a) + b).dtype == np.dtype(want)
    assert xlapy.jit(lambda x: x + b)(a).dtype == np.dtype(want)


def test_weak_type_survives_and_is_dropped():
    w = xnp.asarray(2.0) * 3.0
    assert w.weak_type and w.dtype == np.float32
    assert not (w + np.ones(2, np.float32)).weak_type
    assert (xnp.asarray(np.ones(2, np.float16)) * w).dtype == np.float16


def test_array_methods_and_properties():
    x = xnp.arange(6).reshape(2, 3)
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(x.T), np.arange(6).reshape(2, 3).T)
    assert int(x.sum()) == 15 and float(x.mean()) == 2.5
    np.testing.assert_array_equal(np.asarray(x.max(axis=0)), [3, 4, 5])
    np.testing.assert_array_equal(np.asarray(-x + 1), 1 - np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(x @ x.T), np.arange(6).reshape(2, 3) @ np.arange(6).reshape(2, 3).T)
    np.testing.assert_array_equal(np.asarray(2 ** x), 2 ** np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(x > 2), np.arange(6).reshape(2, 3) > 2)
    np.testing.assert_array_equal(np.asarray(np.ones((2, 3), np.int32) - x), 1 - np.arange(6).reshape(2, 3))
    assert [int(r.sum()) for r in x] == [3, 12]
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 1


def test_boolean_mask_eager_and_noncompilable_ops_eager():
    x = xnp.asarray(np.array([3, -1, 4, -1, 5], np.int32))
    np.testing.assert_array_equal(np.asarray(x[x > 0]), [3, 4, 5])
    np.testing.assert_array_equal(np.asarray(xnp.unique(x)), [-1, 3, 4, 5])
    np.testing.assert_array_equal(np.asarray(xnp.nonzero(x > 3)[0]), [2, 4])
    np.testing.assert_array_equal(np.asarray(xnp.argwhere(x < 0)), [[1], [3]])
    np.testing.assert_array_equal(np.asarray(xnp.where(x > 3)[0]), [2, 4])


def test_save_load_eager(tmp_path):
    path = tmp_path / "a.npy"
    xnp.save(path, xnp.arange(3))
    np.testing.assert_array_equal(np.asarray(xnp.load(path)), [0, 1, 2])


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((5, 2, 3), (3, 4)),
                 ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 6)), ((1, 2, 3), (7, 3, 4)),
                 ((6, 1, 2, 3), (1, 5, 3, 4)), ((2, 5, 2, 3), (2, 5, 3, 4)),
                 ((1, 1, 2, 3), (1, 3, 4)), ((3,), (6, 3, 4)), ((6, 2, 3), (3,))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_broadcasting_values_and_gradients(sa, sb):
    """Batch dims of one operand stay free dims of one dot_general; values and both gradients
    of sum(sin(a @ b)) match NumPy's broadcasting matmul."""
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    want = np.matmul(a.astype(np.float64), b)
    for got in (xnp.matmul(a, b), xlapy.jit(lambda u, v: u @ v)(a, b)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    ga, gb = xlapy.grad(lambda u, v: xnp.sum(xnp.sin(u @ v)), argnums=(0, 1))(a, b)
    a2 = a[None] if a.ndim == 1 else a.astype(np.float64)
    b2 = b[:, None] if b.ndim == 1 else b.astype(np.float64)
    g = np.cos(np.matmul(a2, b2))                       # d loss / d (a2 @ b2)
    da, db = g @ np.swapaxes(b2, -1, -2), np.swapaxes(a2, -1, -2) @ g

    def unbroadcast(d, shape):
        d = d.sum(axis=tuple(range(d.ndim - len(shape)))) if d.ndim > len(shape) else d
        return d.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)
    da = unbroadcast(da, a2.shape).reshape(sa)
    db = unbroadcast(db, b2.shape).reshape(sb)
    np.testing.assert_allclose(np.asarray(ga), da, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(gb), db, rtol=1e-4, atol=1e-4)


def test_matmul_by_a_matrix_is_one_dot_without_broadcast():
    x, w = np.ones((8, 16, 32), np.float32), np.ones((32, 4), np.float32)
    hlo = xlapy.jit(lambda u, v: u @ v).get_compiler_ir(x, w)(stage="hlo")
    assert hlo.count(" dot(") == 1 and " broadcast(" not in hlo
