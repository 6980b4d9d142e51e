"""End to end: HLO text with elementwise and RNG ops, parsed and run by the interpreter.

The real-XLA conformance cases run in tests/test_conformance_interpreter.py.
"""
from __future__ import annotations

import numpy as np

from xlapy.backends.interpreter import evaluate_module
from xlapy.hlo import parse_module


def run_text(text: str, *args):
    return evaluate_module(parse_module(text), [np.asarray(x) for x in args])


def test_int_edge_cases_in_a_module():
    text = """
HloModule m, entry_computation_layout={(s32[4]{0}, s32[4]{0})->(s32[4]{0}, s32[4]{0}, s32[4]{0})}

ENTRY main {
  x = s32[4]{0} parameter(0)
  y = s32[4]{0} parameter(1)
  d = s32[4]{0} divide(x, y)
  r = s32[4]{0} remainder(x, y)
  s = s32[4]{0} shift-right-arithmetic(x, y)
  ROOT t = (s32[4]{0}, s32[4]{0}, s32[4]{0}) tuple(d, r, s)
}
"""
    x = np.array([7, -2**31, 9, -8], np.int32)
    y = np.array([-2, -1, 0, 40], np.int32)
    d, r, s = run_text(text, x, y)
    assert d.tolist() == [-3, -2**31, -1, 0]
    assert r.tolist() == [1, 0, 9, -8]
    assert s.tolist() == [0, -1, 9, -1]         # negative amounts read as huge unsigned


def test_compare_totalorder_select_and_convert_in_a_module():
    text = """
HloModule m

ENTRY main {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  lt = pred[3] compare(a, b), direction=LT, type=TOTALORDER
  m = f32[3] select(lt, a, b)
  c = s8[3] convert(m)
  mx = f32[3] maximum(a, b)
  ROOT t = (s8[3], f32[3]) tuple(c, mx)
}
"""
    a = np.array([-0.0, np.nan, 300.0], np.float32)
    b = np.array([0.0, 1.0, -1000.0], np.float32)
    c, mx = run_text(text, a, b)
    assert c.tolist() == [0, 1, -128]           # NaN sorts last in total order
    assert np.isnan(mx[1]) and mx[0] == 0 and not np.signbit(mx[0]) and mx[2] == 300


def test_reducer_runs_vectorized_through_clamp_and_power():
    text = """
HloModule m

ENTRY main {
  x = s32[5] parameter(0)
  e = s32[] constant(3)
  eb = s32[5] broadcast(e), dimensions={}
  p = s32[5] power(x, eb)
  lo = s32[] constant(-10)
  hi = s32[] constant(10)
  ROOT c = s32[5] clamp(lo, p, hi)
}
"""
    got = run_text(text, np.array([-3, -1, 0, 2, 5], np.int32))
    assert got.tolist() == [-10, -1, 0, 8, 10]


def test_rng_bit_generator_module():
    text = """
HloModule m

ENTRY main {
  s = u64[2] parameter(0)
  g = (u64[2], u32[2,3]) rng-bit-generator(s), algorithm=rng_three_fry
  ROOT bits = u32[2,3] get-tuple-element(g), index=1
}
"""
    state = np.array([0x200000001, 0x400000003], np.uint64)   # JAX key [1, 2, 3, 4]
    bits = run_text(text, state)
    assert bits.shape == (2, 3) and bits.dtype == np.uint32
    # (2, 3): dim 0 is even, so it is halved: rows 0 and 1 come from the two ThreeFry words
    from xlapy.backends.interpreter.rng import threefry2x32
    x0, x1 = threefry2x32((1, 2), np.array([3, 4, 5], np.uint32), np.array([4, 4, 4], np.uint32))
    assert bits[0].tolist() == x0.tolist() and bits[1].tolist() == x1.tolist()
