"""The CPU reduction emitter on plain reduces: modes, layouts, types, orders, units.

Kernels are compiled for one instruction and run on NumPy buffers (``cpu_kernel_harness``)
and compared with the reference interpreter; float sums of small inputs are compared with
XLA:CPU's own summation order bit for bit.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import xlapy
from xlapy.hlo import parse_module

import xlapy.backends.cpu  # noqa: F401

from cpu_kernel_harness import ADD_F32, Kernel, check_direct, rand, reduce_module  # noqa: E402
from xlapy.backends.cpu.jit_engine import engine  # noqa: E402
from xlapy.backends.cpu.reduction_emitter import ReductionEmitter  # noqa: E402


# ----------------------------------------------------------------------------- plain reduces
@pytest.mark.parametrize("dims,layout,rdims,mode", [
    ((1000,), None, (0,), "row"),                       # full, split into chunks
    ((37, 129), None, (0, 1), "row"),                   # full over two dims
    ((64, 300), None, (1,), "row"),                     # row reduction
    ((300, 64), None, (0,), "column"),                  # column reduction
    ((6, 50, 70), None, (1,), "column"),                # middle dimension
    ((6, 50, 7), None, (0, 2), "row"),                  # outer and minor dims
    ((64, 300), (0, 1), (0,), "row"),                   # column-major: dim 0 is minor
    ((5, 6, 7), (1, 2, 0), (1,), "row"),                # minor dim reduced via layout
    ((3, 1, 200), None, (2,), "row"),                   # size-1 dimension
    ((20000, 3), None, (0,), "column"),                 # few columns: split
    ((300, 64), (0, 1), (1,), "column"),                # column-major: dim 0 is kept minor
])
def test_f32_add_reductions_match_interpreter(dims, layout, rdims, mode):
    text = reduce_module("f32", dims, layout, rdims, "add", "0")
    kernel = check_direct(text, [rand(*dims)], rtol=2e-5, atol=1e-4)
    assert kernel.spec.notes[0].startswith(mode)


@pytest.mark.parametrize("dims,rdims,out_layout", [
    ((6, 50, 70), (1,), (0, 1)), ((70, 50, 6), (1,), (0, 1)), ((9, 8, 7, 6), (0, 2), (0, 1))])
def test_output_layouts(dims, rdims, out_layout):
    text = reduce_module("f32", dims, None, rdims, "add", "0", out_layout)
    check_direct(text, [rand(*dims, seed=16)], rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("et,op,init,dtype", [
    ("f64", "add", "0", np.float64),
    ("f64", "multiply", "1", np.float64),
    ("s32", "add", "0", np.int32),
    ("s32", "maximum", "-2147483648", np.int32),
    ("u8", "minimum", "255", np.uint8),
    ("s64", "xor", "0", np.int64),
    ("s32", "and", "-1", np.int32),
])
def test_dtypes_and_ops(et, op, init, dtype):
    for dims, rdims in (((40, 33), (1,)), ((40, 33), (0,)), ((3000,), (0,))):
        text = reduce_module(et, dims, None, rdims, op, init)
        rng = np.random.default_rng(1)
        if dtype(0).dtype.kind == "f":
            x = (rng.random(dims) + 0.5).astype(dtype) if op == "multiply" else \
                rng.standard_normal(dims).astype(dtype)
            if op == "multiply":
                x = x ** (1.0 / dims[rdims[0]])
        else:
            info = np.iinfo(dtype)
            x = rng.integers(max(info.min, -1000), min(info.max, 1000), dims, dtype=dtype)
        check_direct(text, [x], rtol=1e-12)


@pytest.mark.parametrize("op,init", [("and", "true"), ("or", "false"), ("and", "false"),
                                     ("or", "true")])
def test_pred_and_or(op, init):
    dims = (50, 70)
    x = np.random.default_rng(3).random(dims) > 0.02
    x[7] = True
    x[8] = False
    for rdims in ((1,), (0,), (0, 1)):
        check_direct(reduce_module("pred", dims, None, rdims, op, init), [x])


def test_init_value_is_applied_once():
    # sum with init 10 over a split (full) and an unsplit (row) reduction
    x = rand(100_000)
    k = check_direct(reduce_module("f32", (100_000,), None, (0,), "add", "10"), [x], rtol=1e-5)
    assert "split" in k.spec.notes[0]
    assert k.run([np.zeros(100_000, np.float32)])[0] == 10.0
    check_direct(reduce_module("f32", (30, 40), None, (1,), "add", "10"), [rand(30, 40)])
    check_direct(reduce_module("f32", (300, 4), None, (0,), "multiply", "-2"),
                 [1 + 0.001 * rand(300, 4)], rtol=1e-4)


def test_max_propagates_nan_and_orders_signed_zeros():
    x = rand(16, 40)
    x[3, 17] = np.nan
    x[5, :] = -0.0
    x[5, 9] = 0.0
    x[6, :] = -np.inf
    y = x.copy()
    y[3, 17], y[12, 39] = -1.0, np.nan
    for text in (reduce_module("f32", (16, 40), None, (1,), "maximum", "-inf"),
                 reduce_module("f32", (16, 40), None, (0,), "maximum", "-inf")):
        check_direct(text, [x])
        check_direct(text, [y])
    row = Kernel(reduce_module("f32", (16, 40), None, (1,), "maximum", "-inf")).run([x])[0]
    assert np.isnan(row[3]) and np.signbit(row[5]) == False and row[5] == 0.0  # noqa: E712
    assert row[6] == -np.inf
    # a NaN in one chunk of a split full reduction reaches the combined result
    full = Kernel(reduce_module("f32", (100_000,), None, (0,), "minimum", "inf"))
    assert "split" in full.spec.notes[0]
    z = rand(100_000)
    z[74321] = np.nan
    assert np.isnan(full.run([z])[0])


def test_f16_and_bf16_accumulate_in_f32():
    import ml_dtypes
    for et, dtype in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
        x = (np.random.default_rng(4).random((8, 2000)) + 1).astype(dtype)
        text = reduce_module(et, (8, 2000), None, (1,), "add", "0")
        got = Kernel(text).run([x])[0].astype(np.float64)
        want = x.astype(np.float64).sum(axis=1)
        # one rounding at the end: within half an ulp of the exact sum (plus f32 noise)
        np.testing.assert_allclose(got, want, rtol=2 ** -(8 if et == "bf16" else 11))
        check_direct(text, [x], rtol=1e-2)


def test_empty_dimensions():
    # reduced dimension of size 0: every output is the init value
    k = check_direct(reduce_module("f32", (5, 0), None, (1,), "add", "3"),
                     [np.zeros((5, 0), np.float32)])
    assert k.spec.units >= 1
    check_direct(reduce_module("f32", (0, 5), None, (0,), "maximum", "-inf"),
                 [np.zeros((0, 5), np.float32)])
    # kept dimension of size 0: nothing to do
    k = Kernel(reduce_module("f32", (0, 5), None, (1,), "add", "0"))
    assert k.spec.units == 0 and k.run([np.zeros((0, 5), np.float32)])[0].shape == (0,)
    check_direct(reduce_module("s32", (), None, (), "add", "4"), [np.array(5, np.int32)])


ARGMAX = """HloModule argmax
argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  nan0 = pred[] compare(v0, v0), direction=NE
  nan1 = pred[] compare(v1, v1), direction=NE
  gt = pred[] compare(v1, v0), direction=GT
  not0 = pred[] not(nan0)
  n1n0 = pred[] and(nan1, not0)
  better = pred[] or(gt, n1n0)
  eq = pred[] compare(v1, v0), direction=EQ
  both = pred[] and(nan1, nan0)
  same = pred[] or(eq, both)
  lt = pred[] compare(i1, i0), direction=LT
  tie = pred[] and(same, lt)
  take = pred[] or(better, tie)
  v = f32[] select(take, v1, v0)
  i = s32[] select(take, i1, i0)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY main {
  x = f32[DIMS] parameter(0)
  iota = s32[DIMS] parameter(1)
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[KEPT], s32[KEPT]) reduce(x, iota, ninf, zero), dimensions={RDIM}, to_apply=argmax
}
"""


@pytest.mark.parametrize("dims,rdim", [((33, 70), 1), ((70, 33), 0), ((500,), 0)])
def test_variadic_argmax(dims, rdim):
    kept = [d for i, d in enumerate(dims) if i != rdim]
    text = (ARGMAX.replace("KEPT", ",".join(map(str, kept)))
            .replace("DIMS", ",".join(map(str, dims))).replace("RDIM", str(rdim)))
    x = np.round(rand(*dims, seed=5), 1)                  # ties
    flat = x.reshape(-1)
    flat[7] = np.nan
    iota = np.indices(dims)[rdim].astype(np.int32)
    k = check_direct(text, [x, iota])
    values, index = k.run([x, iota])
    np.testing.assert_array_equal(index, np.argmax(np.where(np.isnan(x), np.inf, x), axis=rdim))


# ----------------------------------------------------------------------------- XLA's order
def xla_sum(x: np.ndarray, rdims: tuple, window: int = 32) -> np.ndarray:
    """XLA:CPU's f32 sum of a small input, in its order: windows of ``window`` elements per
    reduced dimension (TreeReductionRewriter, SAME padding, repeated), then a sequential fold.
    Checked bit for bit against ``jax.jit(jnp.sum)`` (JAX 0.10) on the shapes below."""
    x = np.asarray(x, np.float32)
    while any(x.shape[d] > window for d in rdims):
        wins = [min(x.shape[d], window) if d in rdims else 1 for d in range(x.ndim)]
        outs = [-(-x.shape[d] // wins[d]) for d in range(x.ndim)]
        lows = [(outs[d] * wins[d] - x.shape[d]) // 2 for d in range(x.ndim)]
        y = np.zeros(outs, np.float32)
        for o in np.ndindex(*outs):
            acc = np.float32(0)
            for k in np.ndindex(*wins):
                pos = tuple(o[d] * wins[d] + k[d] - lows[d] for d in range(x.ndim))
                if all(0 <= p < x.shape[d] for d, p in enumerate(pos)):
                    acc = np.float32(acc + x[pos])
            y[o] = acc
        x = y
    kept = [d for d in range(x.ndim) if d not in rdims]
    rows = np.transpose(x, kept + list(rdims)).reshape([x.shape[d] for d in kept] + [-1])
    out = np.zeros(rows.shape[:-1], np.float32)
    for o in np.ndindex(*rows.shape[:-1]):
        acc = np.float32(0)
        for v in rows[o]:
            acc = np.float32(acc + v)
        out[o] = acc
    return out


ORDER_CASES = [((8, 16), (0, 1), "sequential"), ((16, 8), (0,), "sequential"),
               ((100,), (0,), "tree"), ((1100,), (0,), "tree"), ((40, 40), (0, 1), "tree"),
               ((8, 100), (1,), "tree"), ((100, 8), (0,), "tree"), ((5, 33, 7), (1,), "tree")]


@pytest.mark.parametrize("dims,rdims,order", ORDER_CASES)
def test_small_sums_follow_xla_order_bit_for_bit(dims, rdims, order):
    x = rand(*dims, seed=12)
    k = Kernel(reduce_module("f32", dims, None, rdims, "add", "0"))
    assert f"in {order} order" in k.spec.notes[0]
    got = k.run([x])[0]
    assert got.tobytes() == xla_sum(x, rdims).tobytes()


@pytest.mark.peers
@pytest.mark.parametrize("dims,rdims,order", ORDER_CASES[:4])
def test_small_sums_match_jax_bits(dims, rdims, order):
    import jax
    x = rand(*dims, seed=13)
    want = np.asarray(jax.jit(lambda a: a.sum(axis=rdims))(x))
    got = Kernel(reduce_module("f32", dims, None, rdims, "add", "0")).run([x])[0]
    assert got.tobytes() == want.tobytes()


# ----------------------------------------------------------------------------- units
def test_split_units_in_any_order_give_the_same_bits():
    text = reduce_module("f32", (300_000,), None, (0,), "add", "0.25")
    x = rand(300_000, seed=11)
    k = Kernel(text)
    units = k.spec.units
    assert units > 2
    whole = k.run([x])[0]
    bounds = [0, 1, units // 2, units - 1, units]
    ranges = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    for order in (ranges, ranges[::-1], ranges[1:] + ranges[:1]):
        again = k.run([x], order)[0]
        assert again.tobytes() == whole.tobytes()
    # a second run reuses the (reset) completion counter
    assert k.run([x])[0].tobytes() == whole.tobytes()
    np.testing.assert_allclose(whole, x.astype(np.float64).sum() + 0.25, rtol=1e-5)


def test_vector_accumulators_in_optimized_ir():
    k = Kernel(reduce_module("f32", (64, 1024), None, (1,), "add", "0"))
    assert re.search(r"phi (reassoc )?<(8|16) x float>", k.ir), "row sum was not vectorized"
    k = Kernel(reduce_module("f32", (64, 1024), None, (1,), "maximum", "-inf"))
    assert re.search(r"<(8|16) x float> @llvm\.maximum", k.ir), "row max was not vectorized"


INIT_FROM_SUM = "HloModule init_from_sum\n" + ADD_F32 + """\
%fused (p0: f32[8,16]) -> f32[KEPT] {
  %p0 = f32[8,16]{1,0} parameter(0)
  %z = f32[] constant(0)
  %total = f32[] reduce(%p0, %z), dimensions={0,1}, to_apply=%add_f32
  %again = f32[KEPT] reduce(%p0, %total), dimensions={RDIMS}, to_apply=%add_f32
  ROOT %n = f32[KEPT] negate(%again)
}
ENTRY main {
  %x = f32[8,16]{1,0} parameter(0)
  ROOT %f = f32[KEPT] fusion(%x), kind=kLoop, calls=%fused
}
"""


def test_declines_what_it_cannot_do():
    reversed_rows = "HloModule bcast\n" + ADD_F32 + """\
%fused (p0: f32[8,16]) -> f32[8] {
  %p0 = f32[8,16]{1,0} parameter(0)
  %z = f32[] constant(0)
  %rows = f32[8]{0} reduce(%p0, %z), dimensions={1}, to_apply=%add_f32
  ROOT %b = f32[8]{0} reverse(%rows), dimensions={0}
}
ENTRY main {
  %x = f32[8,16]{1,0} parameter(0)
  ROOT %f = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused
}
"""
    module = parse_module(reversed_rows)
    assert not ReductionEmitter().can_emit(module.entry.root)     # reads another row's sum
    assert not ReductionEmitter().can_emit(module.entry.parameters[0])
    assert not ReductionEmitter().can_emit(parse_module(INIT_FROM_SUM.replace(
        "KEPT", "").replace("RDIMS", "0,1")).entry.root)       # a hero's init is a hero
    # an init computed by a reduce of another space is an elemental reduce: fine
    check_direct(INIT_FROM_SUM.replace("KEPT", "8").replace("RDIMS", "1"), [rand(8, 16, seed=21)])
    f8 = parse_module(reduce_module("f8e4m3fn", (8, 16), None, (1,), "add", "0"))
    assert not ReductionEmitter().can_emit(f8.entry.root)         # no f8 arithmetic
    with pytest.raises(xlapy.errors.InvalidArgumentError, match="cannot emit"):
        ReductionEmitter().emit(engine().new_module("x"), "x", module.entry.root)
