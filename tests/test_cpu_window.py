"""Native reduce-window and select-and-scatter kernels on the CPU backend vs the interpreter.

Every module is compiled by the whole CPU backend (pass pipeline, buffer assignment,
runtime); the tests check that the window instruction runs as a native kernel and
that its result is the interpreter's, bit for bit (both fold in window order).
"""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu

from cpu_kernel_harness import assert_same, rand, run_both  # noqa: E402
from xlapy.backends.cpu.select_scatter_emitter import SelectAndScatterEmitter  # noqa: E402
from xlapy.backends.cpu.window_emitter import ReduceWindowEmitter  # noqa: E402


@pytest.fixture(scope="module")
def backend():
    return cpu.CpuBackend(use_disk_cache=False)


REDUCERS = {
    "add": "add", "max": "maximum", "min": "minimum", "mul": "multiply", "and": "and",
    "or": "or",
}


def reduce_window_module(et: str, in_dims, out_dims, window: str, op: str, init: str,
                         layout: str = "") -> str:
    ind = ",".join(map(str, in_dims))
    outd = ",".join(map(str, out_dims))
    return f"""HloModule rw
red {{ a = {et}[] parameter(0)
  b = {et}[] parameter(1)
  ROOT r = {et}[] {REDUCERS[op]}(a, b) }}
ENTRY main {{
  x = {et}[{ind}]{layout} parameter(0)
  z = {et}[] constant({init})
  ROOT rw = {et}[{outd}]{layout} reduce-window(x, z), window={{{window}}}, to_apply=red
}}"""


def window_out_dims(in_dims, size, stride=None, pad=None, lhs=None, rhs=None):
    rank = len(in_dims)
    stride = stride or [1] * rank
    pad = pad or [(0, 0)] * rank
    lhs = lhs or [1] * rank
    rhs = rhs or [1] * rank
    out = []
    for n, k, s, (lo, hi), ld, rd in zip(in_dims, size, stride, pad, lhs, rhs):
        dilated = (n - 1) * ld + 1 if n else 0
        extent = (k - 1) * rd + 1
        out.append(max(0, (dilated + lo + hi - extent) // s + 1))
    return out


def window_text(size, stride=None, pad=None, lhs=None, rhs=None) -> str:
    parts = ["size=" + "x".join(map(str, size))]
    if stride:
        parts.append("stride=" + "x".join(map(str, stride)))
    if pad:
        parts.append("pad=" + "x".join(f"{a}_{b}" for a, b in pad))
    if lhs:
        parts.append("lhs_dilate=" + "x".join(map(str, lhs)))
    if rhs:
        parts.append("rhs_dilate=" + "x".join(map(str, rhs)))
    return " ".join(parts)


# ----------------------------------------------------------------------------- reduce-window
WINDOWS = [
    # (input dims, size, stride, pad, lhs_dilate, rhs_dilate)
    ((4, 8, 8, 3), (1, 2, 2, 1), (1, 2, 2, 1), None, None, None),          # NHWC max pool
    ((2, 9, 9, 5), (1, 3, 3, 1), (1, 2, 2, 1), None, None, None),          # overlapping
    ((2, 8, 8, 3), (1, 3, 3, 1), None, [(0, 0), (1, 1), (1, 1), (0, 0)], None, None),
    ((8, 16), (3, 3), (1, 2), [(1, 1), (0, 2)], None, None),
    ((8, 16), (2, 3), (2, 1), [(0, 0), (1, 1)], None, (1, 2)),             # window dilation
    ((8, 16), (2, 2), None, [(0, 1), (0, 1)], (2, 1), None),                # base dilation
    ((5, 7), (3, 2), (2, 3), [(2, 1), (0, 3)], (3, 2), (2, 2)),             # everything
    ((3, 10, 10), (1, 4, 4), (1, 3, 3), [(0, 0), (2, 2), (1, 3)], None, None),
    ((2, 3, 12, 12), (1, 1, 3, 3), (1, 1, 2, 2), [(0, 0), (0, 0), (1, 1), (1, 1)], None, None),
    ((8, 1), (8, 1), None, None, None, None),
    ((17,), (5,), (3,), [(4, 4)], None, None),
]


@pytest.mark.parametrize("op,init", [("add", "0"), ("max", "-inf"), ("min", "inf")])
@pytest.mark.parametrize("case", range(len(WINDOWS)))
def test_f32_windows_match_interpreter(backend, case, op, init):
    dims, size, stride, pad, lhs, rhs = WINDOWS[case]
    out = window_out_dims(dims, size, stride, pad, lhs, rhs)
    text = reduce_window_module("f32", dims, out, window_text(size, stride, pad, lhs, rhs),
                                op, init)
    assert_same(*run_both(backend, text, [rand(*dims, seed=case)], native=("rw",)))


@pytest.mark.parametrize("et,dtype,op,init", [
    ("f64", np.float64, "add", "0"), ("s32", np.int32, "add", "0"),
    ("s32", np.int32, "max", "-2147483648"), ("u8", np.uint8, "min", "255"),
    ("f32", np.float32, "mul", "1"), ("s64", np.int64, "mul", "1")])
def test_other_types(backend, et, dtype, op, init):
    dims = (6, 10)
    out = window_out_dims(dims, (3, 3), (1, 2), [(1, 1), (1, 1)])
    text = reduce_window_module(et, dims, out, window_text((3, 3), (1, 2), [(1, 1), (1, 1)]),
                                op, init)
    x = (rand(*dims, seed=3) * 4).astype(dtype)
    assert_same(*run_both(backend, text, [x], native=("rw",)))


@pytest.mark.parametrize("et", ["bf16", "f16"])
def test_narrow_floats_accumulate_in_f32(backend, et):
    import ml_dtypes
    dtype = ml_dtypes.bfloat16 if et == "bf16" else np.float16
    dims = (4, 40)
    text = reduce_window_module(et, dims, (4, 40), "size=1x40 pad=0_0x39_0", "add", "0")
    x = (rand(*dims, seed=5) * 100).astype(dtype)
    got, want = run_both(backend, text, [x], native=("rw",))
    assert_same(got, want)
    accumulated_in_f32 = np.cumsum(x.astype(np.float32), axis=1).astype(dtype)
    assert got[0].tobytes() == accumulated_in_f32.tobytes()


def test_pred_reductions(backend):
    dims = (6, 9)
    x = rand(*dims, seed=7) > 0.3
    for op, init in (("and", "true"), ("or", "false")):
        text = reduce_window_module("pred", dims, (6, 7), "size=1x3", op, init)
        assert_same(*run_both(backend, text, [x], native=("rw",)))


def test_column_major_layout_and_nan(backend):
    dims = (9, 12)
    out = window_out_dims(dims, (2, 3), (2, 1), [(0, 1), (1, 1)])
    text = reduce_window_module("f32", dims, out, window_text((2, 3), (2, 1), [(0, 1), (1, 1)]),
                                "max", "-inf", layout="{0,1}")
    x = rand(*dims, seed=8)
    x[3, 4] = np.nan
    got, want = run_both(backend, text, [x], native=("rw",))
    assert_same(got, want)
    assert np.isnan(got[0]).any()


@pytest.mark.parametrize("dims,axis", [((5, 1000), 1), ((300, 7), 0), ((3, 4, 50), 2),
                                       ((40, 3, 6), 0)])
def test_cumulative_sums_use_the_scan_kernel(backend, dims, axis):
    size = ["1"] * len(dims)
    pad = ["0_0"] * len(dims)
    size[axis], pad[axis] = str(dims[axis]), f"{dims[axis] - 1}_0"
    text = reduce_window_module("f32", dims, dims, f"size={'x'.join(size)} pad={'x'.join(pad)}",
                                "add", "0")
    module = parse_module(text)
    spec_note = _emit_notes(module)
    assert "scan mode" in spec_note, spec_note
    x = rand(*dims, seed=9)
    got, want = run_both(backend, text, [x], native=("rw",))
    assert_same(got, want)
    np.testing.assert_allclose(got[0], np.cumsum(x, axis=axis), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("et,dtype,op,init,mode", [
    ("f32", np.float32, "max", "-inf", "reverse scan"),
    ("s32", np.int32, "add", "0", "reverse scan"),
    ("f32", np.float32, "add", "0", "scalar mode"),      # float sums keep XLA's order
    ("f32", np.float32, "mul", "1", "scalar mode")])
def test_reverse_cumulative_reductions(backend, et, dtype, op, init, mode):
    # pad_hi = n - 1: output i folds x[i:] in order (the gradient of a cumsum)
    dims = (4, 33)
    text = reduce_window_module(et, dims, dims, "size=1x33 pad=0_0x0_32", op, init)
    assert mode in _emit_notes(parse_module(text))
    x = (rand(*dims, seed=10) * (0.5 if et == "f32" else 50) + 1).astype(dtype)
    got, want = run_both(backend, text, [x], native=("rw",))
    assert_same(got, want)
    if op == "max":
        np.testing.assert_array_equal(got[0], np.maximum.accumulate(x[:, ::-1], axis=1)[:, ::-1])


def _emit_notes(module) -> str:
    from xlapy.backends.cpu.jit_engine import engine
    em = ReduceWindowEmitter()
    root = module.entry.root
    assert em.can_emit(root)
    return " ".join(em.emit(engine().new_module("notes"), "notes_kernel", root).notes)


def test_vector_mode_for_pass_through_minor_dimension():
    text = reduce_window_module("f32", (2, 8, 8, 600), (2, 4, 4, 600),
                                "size=1x2x2x1 stride=1x2x2x1", "max", "-inf")
    assert "vector mode" in _emit_notes(parse_module(text))


VARIADIC = """HloModule argmax_window
pick {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT
  eq = pred[] compare(v0, v1), direction=EQ
  lt = pred[] compare(i0, i1), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, v0, v1)
  i = s32[] select(keep, i0, i1)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY main {
  x = f32[2,9,9,4] parameter(0)
  idx = s32[2,9,9,4] iota(), iota_dimension=2
  ninf = f32[] constant(-inf)
  neg = s32[] constant(-1)
  ROOT rw = (f32[2,4,4,4], s32[2,4,4,4]) reduce-window(x, idx, ninf, neg),
      window={size=1x3x3x1 stride=1x2x2x1}, to_apply=pick
}
"""


def test_variadic_argmax_reducer(backend):
    x = np.round(rand(2, 9, 9, 4, seed=11) * 2) / 2          # many ties
    assert_same(*run_both(backend, VARIADIC, [x], native=("rw",)))


FUSED = """HloModule fused_window
max_f32 { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b) }
fused {
  p0 = f32[2,10,10,8] parameter(0)
  p1 = f32[] parameter(1)
  e = f32[2,10,10,8] multiply(p0, p0)
  ROOT rw = f32[2,5,5,8] reduce-window(e, p1), window={size=1x2x2x1 stride=1x2x2x1},
      to_apply=max_f32
}
wrapped {
  q0 = f32[2,10,10,8] parameter(0)
  q1 = f32[] parameter(1)
  ROOT rw2 = f32[2,9,9,8] reduce-window(q0, q1), window={size=1x2x2x1}, to_apply=max_f32
}
ENTRY main {
  x = f32[2,10,10,8] parameter(0)
  z = f32[] constant(-inf)
  f = f32[2,5,5,8] fusion(x, z), kind=kLoop, calls=fused
  g = f32[2,9,9,8] fusion(x, z), kind=kCustom, calls=wrapped
  ROOT t = (f32[2,5,5,8], f32[2,9,9,8]) tuple(f, g)
}
"""


def test_fusions_rooted_at_reduce_window(backend):
    assert_same(*run_both(backend, FUSED, [rand(2, 10, 10, 8, seed=12)], native=("f", "g")))


def test_empty_and_scalar_shapes(backend):
    text = reduce_window_module("f32", (0, 4), (2, 4), "size=1x1 pad=1_1x0_0", "add", "5")
    assert_same(*run_both(backend, text, [np.zeros((0, 4), np.float32)], native=("rw",)))
    text = reduce_window_module("f32", (3, 0), (3, 0), "size=1x1", "add", "0")
    assert_same(*run_both(backend, text, [np.zeros((3, 0), np.float32)]))


# ----------------------------------------------------------------------------- select-and-scatter
def select_and_scatter_module(in_dims, src_dims, window: str, select: str = "GE",
                              layout: str = "") -> str:
    ind = ",".join(map(str, in_dims))
    sd = ",".join(map(str, src_dims))
    return f"""HloModule sas
sel {{ a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction={select} }}
add {{ a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b) }}
ENTRY main {{
  x = f32[{ind}]{layout} parameter(0)
  s = f32[{sd}]{layout} parameter(1)
  z = f32[] constant(0.5)
  ROOT r = f32[{ind}]{layout} select-and-scatter(x, s, z), window={{{window}}}, select=sel, scatter=add
}}"""


@pytest.mark.parametrize("case", [k for k, w in enumerate(WINDOWS) if not w[4]])
def test_select_and_scatter_matches_interpreter(backend, case):
    """Every window without base dilation (select-and-scatter has none)."""
    dims, size, stride, pad, _, rhs = WINDOWS[case]
    src = window_out_dims(dims, size, stride, pad, None, rhs)
    text = select_and_scatter_module(dims, src, window_text(size, stride, pad, None, rhs))
    x = np.round(rand(*dims, seed=case) * 2) / 2                 # ties: GE keeps the first
    s = rand(*src, seed=100 + case)
    assert_same(*run_both(backend, text, [x, s], native=("r",)))


def test_select_and_scatter_nan_min_pool_and_layout(backend):
    dims, src = (6, 9, 9, 3), (6, 4, 4, 3)
    x = rand(*dims, seed=13)
    x[0, 1:3, 1:3, 0] = np.nan
    for select, layout in (("GE", ""), ("LE", ""), ("GT", "{0,1,2,3}")):
        text = select_and_scatter_module(dims, src, "size=1x3x3x1 stride=1x2x2x1", select,
                                         layout)
        assert_same(*run_both(backend, text, [x, rand(*src, seed=14)], native=("r",)))


def test_select_and_scatter_vector_lanes_and_threads():
    """NHWC max-pool gradient: channel lanes, one unit per image; 1 or 2 threads agree."""
    dims, src = (8, 16, 16, 64), (8, 8, 8, 64)
    text = select_and_scatter_module(dims, src, "size=1x2x2x1 stride=1x2x2x1")
    x, s = rand(*dims, seed=15), rand(*src, seed=16)
    results = []
    for threads in (1, 2):
        be = cpu.CpuBackend(use_disk_cache=False, num_threads=threads, parallel_cost=0)
        exe = be.compile(parse_module(text))
        assert set(exe.thunk_kinds().values()) == {"kernel"}
        results.append(exe.execute([x, s]))
    assert results[0].tobytes() == results[1].tobytes()
    want = x.reshape(8, 8, 2, 8, 2, 64).transpose(0, 1, 3, 5, 2, 4).reshape(8, 8, 8, 64, 4)
    first = np.argmax(want, axis=-1)
    expect = np.zeros((8, 8, 8, 64, 4), np.float32)
    np.put_along_axis(expect, first[..., None], s[..., None], axis=-1)
    expect = expect.reshape(8, 8, 8, 64, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(dims) + 0.5
    np.testing.assert_array_equal(results[0], expect)


def test_emitters_decline_what_they_cannot_do():
    text = """HloModule m
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b) }
ENTRY main {
  x = f32[4,4] parameter(0)
  ROOT n = f32[4,4] negate(x)
}"""
    root = parse_module(text).entry.root
    assert not ReduceWindowEmitter().can_emit(root)
    assert not SelectAndScatterEmitter().can_emit(root)
