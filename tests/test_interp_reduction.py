"""Interpreter semantics of reduce, reduce-window, select-and-scatter and map.

References are naive loops written from XLA's definition: the init value is the
first left operand, elements are combined in index order, and window slots in
the padding or in base-dilation holes are skipped.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from interp_builders import Comp, binary, run_one, run_text, sh
from xlapy.hlo.attrs import Window

RNG = np.random.default_rng(0)


def add_via_subtract(elem: str) -> "Comp":
    """a + b written as a - (-b): not recognized as a plain add, so the tree path runs."""
    c = Comp("add_slow")
    a, b = c.param(sh(elem)), c.param(sh(elem))
    return c.done(c.op("subtract", sh(elem), a, c.op("negate", sh(elem), b)))


def pick(which: int, elem: str = "s32"):
    """f(a, b) = a (which=0) or b (which=1): associative, not commutative."""
    c = Comp(f"pick{which}")
    a, b = c.param(sh(elem)), c.param(sh(elem))
    return c.done(c.op("copy", sh(elem), (a, b)[which]))


# (value, index) reducer keeping the larger value, the lower index on ties.
ARGMAX = """
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, av, bv)
  i = s32[] select(keep, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
"""


def naive_reduce(x, dims, init, f):
    kept = [d for d in range(x.ndim) if d not in dims]
    out = np.empty([x.shape[d] for d in kept], dtype=np.asarray(init).dtype)
    for oi in np.ndindex(*out.shape):
        acc = init
        for ri in np.ndindex(*[x.shape[d] for d in dims]):
            idx = [0] * x.ndim
            for d, v in zip(kept, oi):
                idx[d] = v
            for d, v in zip(dims, ri):
                idx[d] = v
            acc = f(acc, x[tuple(idx)])
        out[oi] = acc
    return out


# ------------------------------------------------------------------------------------- reduce
@pytest.mark.parametrize("dims", [(), (0,), (1,), (2,), (0, 2), (2, 0), (0, 1, 2)])
def test_reduce_sum_dims(dims):
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    out_dims = [n for d, n in enumerate(x.shape) if d not in dims]
    got = run_one("reduce", sh("f32", *out_dims), [x, np.float32(0.5)],
                  dimensions=dims, to_apply=binary("add"))
    np.testing.assert_allclose(got, x.sum(axis=dims) + 0.5, rtol=1e-5, atol=1e-5)
    assert got.dtype == np.float32 and got.shape == tuple(out_dims)


@pytest.mark.parametrize("dims", [(0,), (1,), (0, 1), ()])
def test_reduce_tree_path_is_exact_for_integers(dims):
    x = RNG.integers(-1000, 1000, (7, 9)).astype(np.int32)
    out_dims = [n for d, n in enumerate(x.shape) if d not in dims]
    got = run_one("reduce", sh("s32", *out_dims), [x, np.int32(3)],
                  dimensions=dims, to_apply=add_via_subtract("s32"))
    np.testing.assert_array_equal(got, x.sum(axis=dims, dtype=np.int32) + 3)


def test_reduce_keeps_order_and_init_is_left_operand():
    x = RNG.integers(0, 100, (4, 13)).astype(np.int32)
    last = run_one("reduce", sh("s32", 4), [x, np.int32(-1)], dimensions=(1,),
                   to_apply=pick(1))
    np.testing.assert_array_equal(last, x[:, -1])
    first = run_one("reduce", sh("s32", 4), [x, np.int32(-1)], dimensions=(1,),
                    to_apply=pick(0))
    np.testing.assert_array_equal(first, np.full(4, -1, np.int32))


def test_reduce_variadic_argmax_with_ties():
    x = np.array([[1, 5, 5, 2, 5], [7, 7, 7, 7, 7], [0, -1, 3, 3, 2]], np.float32)
    got = run_text("HloModule m" + ARGMAX + """
ENTRY e {
  x = f32[3,5] parameter(0)
  idx = s32[3,5] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  m1 = s32[] constant(-1)
  ROOT r = (f32[3], s32[3]) reduce(x, idx, ninf, m1), dimensions={1}, to_apply=argmax
}""", x)
    assert isinstance(got, tuple) and len(got) == 2
    np.testing.assert_array_equal(got[0], [5, 7, 3])
    np.testing.assert_array_equal(got[1], [1, 0, 2])
    np.testing.assert_array_equal(got[0], naive_reduce(x, (1,), np.float32(-np.inf), max))


@pytest.mark.parametrize("op,np_fn", [("maximum", np.max), ("minimum", np.min)])
def test_reduce_max_min_propagates_nan(op, np_fn):
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    x[1, 2] = np.nan
    init = np.float32(-np.inf if op == "maximum" else np.inf)
    fast = run_one("reduce", sh("f32", 3), [x, init], dimensions=(1,), to_apply=binary(op))
    np.testing.assert_array_equal(fast, np_fn(x, axis=1))
    assert np.isnan(fast[1]) and not np.isnan(fast[[0, 2]]).any()


def test_reduce_empty_dimension_gives_init():
    x = np.zeros((3, 0), np.float32)
    got = run_one("reduce", sh("f32", 3), [x, np.float32(7)], dimensions=(1,),
                  to_apply=binary("add"))
    np.testing.assert_array_equal(got, [7, 7, 7])
    got = run_one("reduce", sh("f32", 0), [x, np.float32(7)], dimensions=(0,),
                  to_apply=binary("add"))
    assert got.shape == (0,)


@pytest.mark.parametrize("op,np_fn,elem,init", [
    ("and", np.all, "pred", True), ("or", np.any, "pred", False),
    ("maximum", np.max, "s32", np.iinfo(np.int32).min), ("multiply", np.prod, "s32", 1),
    ("and", np.bitwise_and.reduce, "u8", 255), ("xor", np.bitwise_xor.reduce, "s32", 0)])
def test_reduce_logical_and_integer(op, np_fn, elem, init):
    dtype = sh(elem).dtype
    x = (RNG.integers(0, 2, (4, 5)) if elem == "pred" else RNG.integers(1, 9, (4, 5))).astype(dtype)
    got = run_one("reduce", sh(elem, 4), [x, np.asarray(init, dtype)], dimensions=(1,),
                  to_apply=binary(op, elem))
    np.testing.assert_array_equal(got, np_fn(x, axis=1).astype(dtype))
    assert got.dtype == dtype


def test_reduce_bf16_sum():
    import ml_dtypes
    x = RNG.standard_normal((4, 64)).astype(ml_dtypes.bfloat16)
    got = run_one("reduce", sh("bf16", 4), [x, np.asarray(0, ml_dtypes.bfloat16)],
                  dimensions=(1,), to_apply=binary("add", "bf16"))
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float32), x.astype(np.float32).sum(1), rtol=1e-2,
                               atol=1e-2)


# ------------------------------------------------------------------------------- reduce-window
def naive_reduce_window(x, init, window: Window, f):
    """XLA's loop: per output position, init then every in-bounds, non-hole window slot."""
    out_dims = []
    for n, wd in zip(x.shape, window.dims):
        padded = wd.pad_lo + wd.pad_hi + ((n - 1) * wd.lhs_dilate + 1 if n else 0)
        span = (wd.size - 1) * wd.rhs_dilate + 1
        out_dims.append(max(0, (padded - span) // wd.stride + 1))
    out = np.empty(out_dims, dtype=object if isinstance(init, tuple) else np.asarray(init).dtype)
    for oi in np.ndindex(*out_dims):
        acc = init
        for ki in np.ndindex(*[wd.size for wd in window.dims]):
            idx = []
            for o, k, wd, n in zip(oi, ki, window.dims, x.shape):
                p = o * wd.stride + k * wd.rhs_dilate - wd.pad_lo
                if p < 0 or p % wd.lhs_dilate or p // wd.lhs_dilate >= n:
                    break
                idx.append(p // wd.lhs_dilate)
            else:
                acc = f(acc, x[tuple(idx)])
        out[oi] = acc
    return out


WINDOWS = [
    Window.make((2, 2)),
    Window.make((3, 3), (1, 2), ((1, 1), (0, 2))),
    Window.make((2, 3), (2, 1), ((0, 0), (1, 1)), rhs_dilate=(1, 2)),
    Window.make((2, 2), (1, 1), ((0, 1), (0, 1)), lhs_dilate=(2, 1)),
    Window.make((3, 2), (2, 3), ((2, 1), (1, 0)), lhs_dilate=(2, 3), rhs_dilate=(2, 1)),
    Window.make((5, 1)),
    Window.make((2, 2), (1, 1), ((-1, 0), (0, -1))),          # negative padding crops
]


@pytest.mark.parametrize("window", WINDOWS, ids=lambda w: w.to_text())
@pytest.mark.parametrize("reducer", ["add", "maximum", "add_slow"])
def test_reduce_window_matches_naive_loop(window, reducer):
    x = RNG.integers(-50, 50, (5, 7)).astype(np.int32)
    init = np.int32(3)   # not an identity: padding must be skipped, init applied once
    comp = add_via_subtract("s32") if reducer == "add_slow" else binary(reducer, "s32")
    f = {"add": lambda a, b: a + b, "add_slow": lambda a, b: a + b, "maximum": max}[reducer]
    ref = naive_reduce_window(x, init, window, f)
    got = run_one("reduce-window", sh("s32", *ref.shape), [x, init], window=window,
                  to_apply=comp)
    np.testing.assert_array_equal(got, ref)


def test_reduce_window_variadic_argmax():
    x = RNG.integers(0, 4, (6, 6)).astype(np.float32)     # many ties
    idx = np.arange(36, dtype=np.int32).reshape(6, 6)
    window = Window.make((3, 3), (2, 2), ((1, 1), (1, 1)))
    ref_v = naive_reduce_window(x, np.float32(-np.inf), window, max)
    pairs = np.empty(x.shape, dtype=object)
    for i in np.ndindex(*x.shape):
        pairs[i] = (x[i], -idx[i])
    ref_pair = naive_reduce_window(pairs, (-np.inf, 1), window, max)
    got = run_text("HloModule m" + ARGMAX + """
ENTRY e {
  x = f32[6,6] parameter(0)
  idx = s32[6,6] parameter(1)
  ninf = f32[] constant(-inf)
  m1 = s32[] constant(-1)
  ROOT r = (f32[3,3], s32[3,3]) reduce-window(x, idx, ninf, m1),
      window={size=3x3 stride=2x2 pad=1_1x1_1}, to_apply=argmax
}""", x, idx)
    np.testing.assert_array_equal(got[0], ref_v)
    np.testing.assert_array_equal(got[1], [[-p[1] for p in row] for row in ref_pair])


def test_reduce_window_all_padding_window_gives_init():
    x = np.ones((2,), np.float32)
    window = Window.make((1,), (1,), ((2, 0),))
    got = run_one("reduce-window", sh("f32", 4), [x, np.float32(-5)], window=window,
                  to_apply=binary("add"))
    np.testing.assert_array_equal(got, [-5, -5, -4, -4])


def test_reduce_window_float_max_pool():
    x = RNG.standard_normal((2, 8, 8, 3)).astype(np.float32)
    window = Window.make((1, 2, 2, 1), (1, 2, 2, 1))
    got = run_one("reduce-window", sh("f32", 2, 4, 4, 3), [x, np.float32(-np.inf)],
                  window=window, to_apply=binary("maximum"))
    np.testing.assert_array_equal(got, x.reshape(2, 4, 2, 4, 2, 3).max(axis=(2, 4)))


# -------------------------------------------------------------------------- select-and-scatter
def ge_select(elem="f32"):
    c = Comp("ge")
    a, b = c.param(sh(elem)), c.param(sh(elem))
    return c.done(c.op("compare", sh("pred"), a, b, direction="GE"))


def naive_select_and_scatter(x, src, init, window, select, scatter):
    out = np.full(x.shape, init, dtype=x.dtype)
    for si in np.ndindex(*src.shape):
        chosen = None
        for ki in np.ndindex(*[wd.size for wd in window.dims]):
            idx = []
            for o, k, wd, n in zip(si, ki, window.dims, x.shape):
                p = o * wd.stride + k * wd.rhs_dilate - wd.pad_lo
                if p < 0 or p >= n:
                    break
                idx.append(p)
            else:
                idx = tuple(idx)
                if chosen is None or not select(x[chosen], x[idx]):
                    chosen = idx
        if chosen is not None:
            out[chosen] = scatter(out[chosen], src[si])
    return out


@pytest.mark.parametrize("window", [
    Window.make((2, 2), (2, 2)),
    Window.make((3, 3), (1, 1), ((1, 1), (1, 1))),          # overlapping windows
    Window.make((3, 2), (2, 1), ((1, 2), (0, 1))),
])
def test_select_and_scatter_max_pool_gradient(window):
    x = RNG.integers(0, 3, (6, 5)).astype(np.float32)       # ties: the first maximum wins
    src_shape = naive_reduce_window(x, np.float32(0), window, lambda a, b: a).shape
    src = RNG.standard_normal(src_shape).astype(np.float32)
    ref = naive_select_and_scatter(x, src, np.float32(0.25), window,
                                   lambda a, b: a >= b, lambda a, b: a + b)
    got = run_one("select-and-scatter", sh("f32", *x.shape), [x, src, np.float32(0.25)],
                  window=window, select=ge_select(), scatter=binary("add"))
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


def test_select_and_scatter_uses_select_result_and_scatter_order():
    # select = GT keeps the current choice only on a strict win, so the LAST maximum is chosen;
    # scatter = "keep the newer source" shows the combiner's operand order (output, source).
    x = np.array([[1, 3, 3, 0]], np.float32)
    src = np.array([[10, 20, 30]], np.float32)
    window = Window.make((1, 2), (1, 1))
    c = Comp("gt")
    a, b = c.param(sh("f32")), c.param(sh("f32"))
    gt = c.done(c.op("compare", sh("pred"), a, b, direction="GT"))
    got = run_one("select-and-scatter", sh("f32", 1, 4), [x, src, np.float32(0)],
                  window=window, select=gt, scatter=pick(1, "f32"))
    ref = naive_select_and_scatter(x, src, np.float32(0), window, lambda p, q: p > q,
                                   lambda o, s: s)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got, [[0, 10, 30, 0]])


# ---------------------------------------------------------------------------------------- map
def test_map_binary_and_constant_computation():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    y = RNG.standard_normal((3, 4)).astype(np.float32)
    got = run_one("map", sh("f32", 3, 4), [x, y], dimensions=(0, 1), to_apply=binary("multiply"))
    np.testing.assert_array_equal(got, x * y)
    c = Comp("seven")
    c.param(sh("f32"))
    c.const(np.float32(7))
    got = run_one("map", sh("f32", 3, 4), [x], dimensions=(0, 1), to_apply=c.done())
    np.testing.assert_array_equal(got, np.full((3, 4), 7, np.float32))


def test_map_falls_back_per_element_for_non_scalar_ops():
    # The mapped computation broadcasts its scalar to f32[2] and reduces it back: not
    # expressible elementwise, so it is evaluated per element.
    c = Comp("double_via_reduce")
    p = c.param(sh("f32"))
    b = c.op("broadcast", sh("f32", 2), p, dimensions=())
    c.op("reduce", sh("f32"), b, c.const(np.float32(0)), dimensions=(0,), to_apply=binary("add"))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = run_one("map", sh("f32", 2, 3), [x], dimensions=(0, 1), to_apply=c.done())
    np.testing.assert_array_equal(got, 2 * x)


def test_every_window_slot_enumerated_once():
    # Sum of ones with stride 1 and no padding counts the window size exactly.
    for size in itertools.product((1, 2, 3), repeat=2):
        x = np.ones((4, 5), np.int32)
        got = run_one("reduce-window", sh("s32", 5 - size[0], 6 - size[1]), [x, np.int32(0)],
                      window=Window.make(size), to_apply=binary("add", "s32"))
        assert (got == size[0] * size[1]).all()
