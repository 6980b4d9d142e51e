"""Data-movement ops end to end: HLO text parsed and run by the interpreter.

Includes post-layout-assignment forms (copy to a column-major layout, then bitcast)
and the real-XLA conformance programs of the ``shape`` category.
"""
from __future__ import annotations

import numpy as np

from xlapy.backends.interpreter import evaluate_module
from xlapy.hlo import parse_module

RNG = np.random.default_rng(2)


def run_text(text: str, *args):
    return evaluate_module(parse_module(text), list(args))


def test_copy_to_column_major_then_bitcast_is_a_transpose():
    text = """
HloModule m, entry_computation_layout={(f32[3,4]{1,0})->f32[4,3]{1,0}}

fused {
  p0 = f32[3,4]{1,0} parameter(0)
  c = f32[3,4]{0,1} copy(p0)
  ROOT bc = f32[4,3]{1,0} bitcast(c)
}

ENTRY main {
  x = f32[3,4]{1,0} parameter(0)
  ROOT t = f32[4,3]{1,0} fusion(x), kind=kLoop, calls=fused
}
"""
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_array_equal(run_text(text, x), x.T)


def test_bitcast_layout_permutation_from_text():
    text = """
HloModule m

ENTRY main {
  x = f32[4,6,8]{2,1,0} parameter(0)
  ROOT b = f32[6,4,8]{2,0,1} bitcast(x)
}
"""
    x = RNG.normal(size=(4, 6, 8)).astype(np.float32)
    np.testing.assert_array_equal(run_text(text, x), np.transpose(x, (1, 0, 2)))


def test_scatter_add_with_duplicates_and_out_of_bounds_from_text():
    text = """
HloModule m

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[3,4]{1,0} parameter(0)
  i = s32[5]{0} parameter(1)
  u = f32[5,4]{1,0} parameter(2)
  ii = s32[5,1]{1,0} bitcast(i)
  ROOT sc = f32[3,4]{1,0} scatter(x, ii, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32
}
"""
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    i = np.array([0, 2, 2, 5, -1], np.int32)
    u = RNG.normal(size=(5, 4)).astype(np.float32)
    expected = x.copy()
    np.add.at(expected, i[:3], u[:3])                   # rows 5 and -1 are skipped
    np.testing.assert_allclose(run_text(text, x, i, u), expected, rtol=1e-6)


def test_scatter_combiner_with_constant_runs_in_update_order():
    text = """
HloModule m

combine {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  two = f32[] constant(2)
  twice = f32[] multiply(a, two)
  ROOT s = f32[] add(twice, b)
}

ENTRY main {
  x = f32[4]{0} parameter(0)
  i = s32[3,1]{1,0} parameter(1)
  u = f32[3]{0} parameter(2)
  ROOT sc = f32[4]{0} scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=combine
}
"""
    x = np.array([1, 1, 1, 1], np.float32)
    i = np.array([[3], [3], [0]], np.int32)
    u = np.array([10, 100, 5], np.float32)
    # element 3: 2*1 + 10 = 12, then 2*12 + 100 = 124
    np.testing.assert_array_equal(run_text(text, x, i, u), [7, 1, 1, 124])


def test_gather_and_dynamic_slices_from_text():
    text = """
HloModule m

ENTRY main {
  x = f32[5,3]{1,0} parameter(0)
  i = s32[4]{0} parameter(1)
  k = u32[] parameter(2)
  g = f32[4,3]{1,0} gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
  zero = u32[] constant(0)
  ds = f32[2,3]{1,0} dynamic-slice(x, k, zero), dynamic_slice_sizes={2,3}
  upd = f32[2,3]{1,0} negate(ds)
  dus = f32[5,3]{1,0} dynamic-update-slice(x, upd, k, zero)
  ROOT r = (f32[4,3]{1,0}, f32[2,3]{1,0}, f32[5,3]{1,0}) tuple(g, ds, dus)
}
"""
    x = RNG.normal(size=(5, 3)).astype(np.float32)
    i = np.array([4, 0, 7, -2], np.int32)
    g, ds, dus = run_text(text, x, i, np.uint32(9))
    np.testing.assert_array_equal(g, x[np.clip(i, 0, 4)])
    np.testing.assert_array_equal(ds, x[3:5])                   # start 9 clamps to 5 - 2
    expected = x.copy()
    expected[3:5] = -x[3:5]
    np.testing.assert_array_equal(dus, expected)


def test_pad_iota_reverse_from_text():
    text = """
HloModule m

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  v = f32[] constant(-1)
  p = f32[4,4]{1,0} pad(x, v), padding=1_1x-1_0_1
  io = s32[4,4]{1,0} iota(), iota_dimension=0
  f = f32[4,4]{1,0} convert(io)
  s = f32[4,4]{1,0} add(p, f)
  ROOT r = f32[4,4]{1,0} reverse(s), dimensions={1}
}
"""
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    padded = np.full((4, 4), -1, np.float32)
    padded[1:3, [1, 3]] = x[:, 1:]          # columns land at -1, 1, 3: column 0 is cropped
    expected = (padded + np.arange(4).reshape(4, 1))[:, ::-1]
    np.testing.assert_array_equal(run_text(text, x), expected)
