"""Interpreter semantics of sort, topk and the TopK custom-call.

Comparators are built as XLA programs; the expected orders come from NumPy's
stable argsort / lexsort or from XLA's float total order written out by hand.
"""
from __future__ import annotations

import numpy as np
import pytest

from interp_builders import Comp, compare, run_one, run_text, sh, shape_of
from xlapy.backends.interpreter.sort import _network
from xlapy.hlo.shape import Shape

RNG = np.random.default_rng(1)


def slow_compare(direction: str, elem: str = "f32", pairs: int = 1, cmp_type: str | None = None):
    """compare(p0, p1) plus an unused constant, so the generic sorting network runs."""
    c = Comp(f"slow_{direction}")
    a, b = c.param(sh(elem)), c.param(sh(elem))
    for _ in range(pairs - 1):
        c.param(sh("s32"))
        c.param(sh("s32"))
    c.const(np.float32(0))
    attrs = {"direction": direction}
    if cmp_type:
        attrs["type"] = cmp_type
    return c.done(c.op("compare", sh("pred"), a, b, **attrs))


def lexicographic(elem0: str = "s32", elem1: str = "f32"):
    """(k0, k1) ascending: k0 < k0' or (k0 == k0' and k1 > k1') -- second key descending."""
    c = Comp("lex")
    a0, b0, a1, b1 = c.param(sh(elem0)), c.param(sh(elem0)), c.param(sh(elem1)), c.param(sh(elem1))
    lt = c.op("compare", sh("pred"), a0, b0, direction="LT")
    eq = c.op("compare", sh("pred"), a0, b0, direction="EQ")
    gt1 = c.op("compare", sh("pred"), a1, b1, direction="GT")
    return c.done(c.op("or", sh("pred"), lt, c.op("and", sh("pred"), eq, gt1)))


def sort(operands, dim, comparator, is_stable=True):
    shapes = [shape_of(o) for o in operands]
    result = shapes[0] if len(shapes) == 1 else Shape.tuple(shapes)
    return run_one("sort", result, operands, dimensions=(dim,), is_stable=is_stable,
                   to_apply=comparator)


@pytest.mark.parametrize("n", list(range(0, 40)) + [64, 100, 129])
def test_network_sorts_every_length(n):
    stages = _network(n)
    x = RNG.integers(0, 10, (50, n))
    for lo, hi in stages:
        assert (lo < hi).all() and (hi < n).all()
        assert len(set(lo) | set(hi)) == 2 * lo.size            # disjoint pairs per stage
        a, b = x[:, lo], x[:, hi]
        x[:, lo], x[:, hi] = np.minimum(a, b), np.maximum(a, b)
    assert (np.diff(x, axis=1) >= 0).all()


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("comparator", ["fast", "network"])
def test_sort_2d_along_each_axis(dim, comparator):
    x = RNG.standard_normal((7, 11)).astype(np.float32)
    comp = compare("LT") if comparator == "fast" else slow_compare("LT")
    got = sort([x], dim, comp)
    np.testing.assert_array_equal(got, np.sort(x, axis=dim))


@pytest.mark.parametrize("comparator", ["fast", "network"])
@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_sort_key_value_stable_ties(comparator, direction):
    keys = RNG.integers(0, 4, (5, 23)).astype(np.int32)
    vals = np.broadcast_to(np.arange(23, dtype=np.int32), keys.shape).copy()
    comp = (compare(direction, "s32", extra_params=("s32",)) if comparator == "fast"
            else slow_compare(direction, "s32", pairs=2))
    got_k, got_v = sort([keys, vals], 1, comp, is_stable=(comparator == "fast"))
    sign = 1 if direction == "LT" else -1
    order = np.argsort(sign * keys, axis=1, kind="stable")
    np.testing.assert_array_equal(got_v, order)
    np.testing.assert_array_equal(got_k, np.take_along_axis(keys, order, axis=1))


def test_sort_multi_key_lexicographic():
    k0 = RNG.integers(0, 3, (4, 30)).astype(np.int32)
    k1 = RNG.integers(0, 5, (4, 30)).astype(np.float32)
    got0, got1 = sort([k0, k1], 1, lexicographic())
    for r in range(4):
        order = np.lexsort((-k1[r], k0[r]))
        np.testing.assert_array_equal(got0[r], k0[r][order])
        np.testing.assert_array_equal(got1[r], k1[r][order])


TOTAL_ORDER = np.array([-np.nan, -np.inf, -2.5, -0.0, 0.0, 1.0, np.inf, np.nan], np.float32)


def _bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


@pytest.mark.parametrize("comparator", ["fast", "network"])
def test_sort_totalorder_nan_and_signed_zero(comparator):
    x = TOTAL_ORDER.copy()
    x[0] = -x[-1]                       # a NaN with the sign bit set
    assert np.signbit(x[0]) and np.isnan(x[0])
    perm = RNG.permutation(x.size)
    comp = (compare("LT", cmp_type="TOTALORDER") if comparator == "fast"
            else slow_compare("LT", cmp_type="TOTALORDER"))
    got = sort([x[perm][None, :]], 1, comp)[0]
    np.testing.assert_array_equal(_bits(got), _bits(x))


def test_sort_jax_comparator_with_argsort():
    # JAX's argsort: NaN -> canonical NaN, -0 -> +0, then TOTALORDER LT; is_stable=true.
    x = np.array([[3, np.nan, -0.0, 0.0, -1, np.nan, 0.0, -0.0, -np.inf, 2]], np.float32)
    got_x, got_i = run_text("""HloModule m
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  nan = f32[] constant(nan)
  zero = f32[] constant(0)
  a_nan = pred[] compare(a, a), direction=NE
  a_zero = pred[] compare(a, zero), direction=EQ
  a1 = f32[] select(a_zero, zero, a)
  a2 = f32[] select(a_nan, nan, a1)
  b_nan = pred[] compare(b, b), direction=NE
  b_zero = pred[] compare(b, zero), direction=EQ
  b1 = f32[] select(b_zero, zero, b)
  b2 = f32[] select(b_nan, nan, b1)
  ROOT lt = pred[] compare(a2, b2), direction=LT, type=TOTALORDER
}
ENTRY e {
  x = f32[1,10] parameter(0)
  i = s32[1,10] iota(), iota_dimension=1
  ROOT s = (f32[1,10], s32[1,10]) sort(x, i), dimensions={1}, is_stable=true, to_apply=lt
}""", x)
    # -0 and +0 tie (stable by index); NaNs are last, in index order.
    np.testing.assert_array_equal(got_i[0], [8, 4, 2, 3, 6, 7, 9, 0, 1, 5])
    np.testing.assert_array_equal(_bits(got_x[0]), _bits(x[0][got_i[0]]))


def test_sort_trivial_shapes():
    x = np.zeros((3, 0), np.float32)
    assert sort([x], 1, compare("LT")).shape == (3, 0)
    y = np.array([[5.0]], np.float32)
    np.testing.assert_array_equal(sort([y], 1, compare("LT")), y)


def test_sort_bf16_and_u8():
    import ml_dtypes
    x = RNG.standard_normal((3, 9)).astype(ml_dtypes.bfloat16)
    got = sort([x], 1, slow_compare("GT", "bf16"))
    np.testing.assert_array_equal(got.astype(np.float32), -np.sort(-x.astype(np.float32), 1))
    u = RNG.integers(0, 255, (2, 17)).astype(np.uint8)
    np.testing.assert_array_equal(sort([u], 1, compare("GT", "u8")), np.sort(u, 1)[:, ::-1])


# ---------------------------------------------------------------------------------------- topk
def test_topk_ties_to_lower_index_and_total_order():
    x = np.array([[1, 3, 3, -0.0, 0.0, np.nan, 3], [2, 2, 2, 2, 2, 2, 2]], np.float32)
    vals, idx = run_one("topk", Shape.tuple([sh("f32", 2, 4), sh("s32", 2, 4)]), [x], k=4,
                        largest=True)
    np.testing.assert_array_equal(idx, [[5, 1, 2, 6], [0, 1, 2, 3]])
    assert np.isnan(vals[0, 0]) and idx.dtype == np.int32
    vals, idx = run_one("topk", Shape.tuple([sh("f32", 2, 3), sh("s32", 2, 3)]), [x], k=3,
                        largest=False)
    np.testing.assert_array_equal(idx, [[3, 4, 0], [0, 1, 2]])
    assert np.signbit(vals[0, 0]) and not np.signbit(vals[0, 1])


# The TopK custom-call as XLA:CPU emits it: total-order GT through an s32 bitcast.
TOPK_MODULE = """HloModule m
gt_total {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  zero = s32[] constant(0)
  mx = s32[] constant(2147483647)
  a_bits = s32[] bitcast(a)
  b_bits = s32[] bitcast(b)
  a_flip = s32[] xor(mx, a_bits)
  b_flip = s32[] xor(mx, b_bits)
  a_neg = pred[] compare(a_bits, zero), direction=LT
  b_neg = pred[] compare(b_bits, zero), direction=LT
  a_key = s32[] select(a_neg, a_flip, a_bits)
  b_key = s32[] select(b_neg, b_flip, b_bits)
  ROOT gt = pred[] compare(a_key, b_key), direction=GT
}
ENTRY e {
  x = f32[6,16] parameter(0)
  ROOT t = (f32[6,3], s32[6,3]) custom-call(x), custom_call_target="TopK",
      called_computations={gt_total}
}
"""


def test_topk_custom_call_matches_topk_op():
    x = RNG.integers(-3, 4, (6, 16)).astype(np.float32)
    x[0, 3] = np.nan
    x[1, 5] = -0.0
    result = Shape.tuple([sh("f32", 6, 3), sh("s32", 6, 3)])
    got_v, got_i = run_text(TOPK_MODULE, x)
    ref_v, ref_i = run_one("topk", result, [x], k=3, largest=True)
    np.testing.assert_array_equal(got_i, ref_i)
    np.testing.assert_array_equal(_bits(got_v), _bits(ref_v))
    for r in range(6):
        order = sorted(range(16), key=lambda j: (-np.float64(x[r, j])
                                                 if not np.isnan(x[r, j]) else -np.inf, j))
        np.testing.assert_array_equal(got_i[r], order[:3])
