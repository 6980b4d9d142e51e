"""The CPU elemental emitter's data-movement generators against the interpreter.

Every case compiles the whole entry computation into one fused native loop
(tests/cpu_harness.py), so chains such as pad(transpose(x)) also test that index
transforms compose. Results must equal the interpreter's bit for bit.
"""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

from cpu_harness import check_against_interpreter, compile_computation, run_native
from xlapy.backends.cpu.elemental import ElementalEmitter
from xlapy.backends.cpu.elemental_data import common_factors
from xlapy.hlo import parse_module

DTYPES = {"pred": np.bool_, "s8": np.int8, "s32": np.int32, "s64": np.int64, "u8": np.uint8,
          "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
          "f32": np.float32, "f64": np.float64, "c64": np.complex64, "s4": ml_dtypes.int4,
          "f8e4m3fn": ml_dtypes.float8_e4m3fn}


def module(body: str, params: list[str]):
    lines = [f"  p{i} = {s} parameter({i})" for i, s in enumerate(params)]
    return parse_module("HloModule t\n\nENTRY e {\n" + "\n".join(lines) + "\n" + body + "\n}\n")


def arange(t: str, dims) -> np.ndarray:
    n = int(np.prod(dims))
    v = np.arange(1, n + 1)
    if t == "pred":
        return (v % 3 == 0).reshape(dims)
    if t == "s4":
        return (v % 16 - 8).astype(ml_dtypes.int4).reshape(dims)
    if t == "f8e4m3fn":
        return (v % 50 / 4).astype(ml_dtypes.float8_e4m3fn).reshape(dims)
    if t == "c64":
        return (v + 0.5j * v).astype(np.complex64).reshape(dims)
    return v.astype(DTYPES[t]).reshape(dims)


def check(body: str, params: list[str], args) -> np.ndarray:
    return check_against_interpreter(module(body, params), args)


def shape_text(t: str, dims) -> str:
    return f"{t}[{','.join(str(d) for d in dims)}]"


# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("t", ["f32", "pred", "s4", "bf16", "c64", "f8e4m3fn", "u64"])
def test_broadcast_transpose_reverse_slice_for_many_types(t):
    x = arange(t, (3, 4))
    check(f"  ROOT r = {t}[2,4,5,3] broadcast(p0), dimensions={{3,1}}", [f"{t}[3,4]"], [x])
    check(f"  ROOT r = {t}[4,3] transpose(p0), dimensions={{1,0}}", [f"{t}[3,4]"], [x])
    check(f"  ROOT r = {t}[3,4] reverse(p0), dimensions={{0,1}}", [f"{t}[3,4]"], [x])
    check(f"  ROOT r = {t}[2,2] slice(p0), slice={{[1:3], [0:4:2]}}", [f"{t}[3,4]"], [x])
    check(f"  ROOT r = {t}[3,4] copy(p0)", [f"{t}[3,4]"], [x])


def test_transpose_rank4_and_strided_slices():
    x = arange("f32", (2, 3, 4, 5))
    check("  ROOT r = f32[5,2,4,3] transpose(p0), dimensions={3,0,2,1}", ["f32[2,3,4,5]"], [x])
    check("  ROOT r = f32[1,2,2,2] slice(p0), slice={[1:2], [0:3:2], [1:4:2], [0:5:3]}",
          ["f32[2,3,4,5]"], [x])


@pytest.mark.parametrize("src,dst", [
    ((2, 3, 4), (6, 4)), ((2, 3, 4), (4, 6)), ((24,), (2, 3, 4)), ((2, 3, 4), (24,)),
    ((1, 6, 1, 4), (6, 4)), ((6, 4), (1, 2, 3, 1, 4, 1)), ((4, 6), (3, 8)), ((2, 12), (4, 3, 2)),
    ((1,), ()), ((), (1, 1)), ((0, 3), (3, 0))])
def test_reshape(src, dst):
    x = arange("s32", src)
    check(f"  ROOT r = {shape_text('s32', dst)} reshape(p0)", [shape_text("s32", src)], [x])


def test_common_factors_groups_equal_products():
    assert common_factors((2, 3, 4), (6, 4)) == [(0, 2, 0, 1), (2, 3, 1, 2)]
    assert common_factors((4, 6), (3, 8)) == [(0, 2, 0, 2)]
    groups = common_factors((1, 6, 1, 4), (6, 4))
    assert all(np.prod((1, 6, 1, 4)[a0:a1]) == np.prod((6, 4)[c0:c1])
               for a0, a1, c0, c1 in groups)


@pytest.mark.parametrize("src_layout,dst,dst_layout", [
    ("{1,0}", "[6,4]", "{1,0}"), ("{0,1}", "[4,6]", "{1,0}"), ("{0,1}", "[2,3,4]", "{0,1,2}"),
    ("{1,0}", "[3,2,4]", "{2,1,0}"), ("{0,1}", "[24]", "{0}")])
def test_bitcast_follows_physical_order(src_layout, dst, dst_layout):
    x = arange("f32", (6, 4))
    check(f"  ROOT r = f32{dst}{dst_layout} bitcast(p0)", [f"f32[6,4]{src_layout}"], [x])


def test_bitcast_between_same_width_types():
    x = arange("f32", (4, 2))
    check("  ROOT r = s32[8]{0} bitcast(p0)", ["f32[4,2]{1,0}"], [x])


@pytest.mark.parametrize("n_ops,t", [(2, "f32"), (3, "pred"), (6, "c64"), (2, "s4")])
def test_concatenate(n_ops, t):
    shapes = [(2, 1 + k % 3, 3) for k in range(n_ops)]
    args = [arange(t, s) for s in shapes]
    total = sum(s[1] for s in shapes)
    params = [shape_text(t, s) for s in shapes]
    ops = ", ".join(f"p{k}" for k in range(n_ops))
    check(f"  ROOT r = {t}[2,{total},3] concatenate({ops}), dimensions={{1}}", params, args)


def test_concatenate_skips_empty_operands():
    args = [arange("s8", (0, 2)), arange("s8", (3, 2)), arange("s8", (0, 2)), arange("s8", (1, 2))]
    check("  ROOT r = s8[4,2] concatenate(p0, p1, p2, p3), dimensions={0}",
          ["s8[0,2]", "s8[3,2]", "s8[0,2]", "s8[1,2]"], args)


@pytest.mark.parametrize("padding", ["1_2x0_0", "0_0_1x2_1_2", "-1_-1x1_-2_1", "2_-3_3x-1_0",
                                     "0_0x-2_-1", "1_1_2x3_0_1"])
def test_pad_edges_interior_and_negative(padding):
    x = arange("f32", (3, 4))
    lo_hi = [tuple(int(v) for v in d.split("_")) for d in padding.split("x")]
    out = []
    for n, cfg in zip((3, 4), lo_hi):
        lo, hi, interior = (cfg + (0,))[:3]
        out.append(lo + hi + n + max(n - 1, 0) * interior)
    check(f"  ROOT r = {shape_text('f32', out)} pad(p0, p1), padding={padding}",
          ["f32[3,4]", "f32[]"], [x, np.float32(-1.5)])


def test_pad_of_empty_operand_is_all_padding():
    check("  ROOT r = pred[3,2] pad(p0, p1), padding=1_2x1_1", ["pred[0,0]", "pred[]"],
          [np.zeros((0, 0), bool), np.array(True)])


@pytest.mark.parametrize("t", ["s32", "u32", "f32", "f16", "bf16", "pred", "s8", "f64", "c64"])
def test_iota(t):
    check(f"  ROOT r = {t}[3,300] iota(), iota_dimension=1", [], [])
    check(f"  ROOT r = {t}[5,2] iota(), iota_dimension=0", [], [])


@pytest.mark.parametrize("it", ["s32", "u32", "s64", "u8", "s8"])
def test_dynamic_slice_clamps_starts(it):
    x = arange("f32", (5, 6))
    for a, b in [(1, 2), (-3, 4), (4, 100), (0, 0), (127, -128)]:
        if it[0] == "u" and (a < 0 or b < 0):
            continue
        starts = [np.array(v).astype(DTYPES[it]) for v in (a, b)]
        check("  ROOT r = f32[2,3] dynamic-slice(p0, p1, p2), dynamic_slice_sizes={2,3}",
              ["f32[5,6]", f"{it}[]", f"{it}[]"], [x] + starts)


def test_dynamic_slice_u32_high_bit_start_clamps_to_end():
    x = arange("s32", (8,))
    r = check("  ROOT r = s32[3] dynamic-slice(p0, p1), dynamic_slice_sizes={3}",
              ["s32[8]", "u32[]"], [x, np.uint32(2 ** 31 + 5)])
    np.testing.assert_array_equal(r, x[5:])


def test_u64_starts_at_and_above_two_to_the_63_clamp_to_the_end():
    """A u64 start of 2**63 or more is a huge unsigned index (not a negative one): it clamps
    to the last slice in dynamic-slice, dynamic-update-slice and gather."""
    x = arange("s32", (8,))
    for start in (2 ** 63, 2 ** 64 - 1):
        r = check("  ROOT r = s32[3] dynamic-slice(p0, p1), dynamic_slice_sizes={3}",
                  ["s32[8]", "u64[]"], [x, np.uint64(start)])
        np.testing.assert_array_equal(r, x[5:])
        u = np.array([-1, -2], np.int32)
        r = check("  ROOT r = s32[8] dynamic-update-slice(p0, p1, p2)",
                  ["s32[8]", "s32[2]", "u64[]"], [x, u, np.uint64(start)])
        np.testing.assert_array_equal(r, np.concatenate([x[:6], u]))
    idx = np.array([[2 ** 63], [1], [2 ** 64 - 1]], np.uint64)
    r = check("  ROOT r = s32[3,2] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={}, "
              "start_index_map={0}, index_vector_dim=1, slice_sizes={2}",
              ["s32[8]", "u64[3,1]"], [x, idx])
    np.testing.assert_array_equal(r, [x[6:], x[1:3], x[6:]])


@pytest.mark.parametrize("starts", [(1, 2), (-1, 5), (9, 9), (0, 0)])
def test_dynamic_update_slice_clamps_starts(starts):
    x, u = arange("s64", (4, 5)), -arange("s64", (2, 3))
    s = [np.int32(v) for v in starts]
    check("  ROOT r = s64[4,5] dynamic-update-slice(p0, p1, p2, p3)",
          ["s64[4,5]", "s64[2,3]", "s32[]", "s32[]"], [x, u] + s)


def test_gather_like_take_and_with_batching_dims():
    x = arange("f32", (5, 3))
    idx = np.array([[4], [0], [2], [7], [-3]], np.int32)
    check("  ROOT r = f32[5,3] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, "
          "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}",
          ["f32[5,3]", "s32[5,1]"], [x, idx])
    # 2-d windows at 2-d starts, index vector in dim 0
    y = arange("s32", (6, 7))
    starts = np.array([[0, 5, 3], [1, 6, -2]], np.int64)
    check("  ROOT r = s32[3,2,3] gather(p0, p1), offset_dims={1,2}, collapsed_slice_dims={}, "
          "start_index_map={0,1}, index_vector_dim=0, slice_sizes={2,3}",
          ["s32[6,7]", "s64[2,3]"], [y, starts])
    # operand batching dim 0 paired with indices dim 0
    z = arange("f32", (3, 4, 2))
    ids = np.array([[1], [3], [0]], np.uint8)
    check("  ROOT r = f32[3,2] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={1}, "
          "start_index_map={1}, index_vector_dim=1, slice_sizes={1,1,2}, "
          "operand_batching_dims={0}, start_indices_batching_dims={0}",
          ["f32[3,4,2]", "u8[3,1]"], [z, ids])


def test_constants_scalars_and_arrays():
    body = ("  c = f32[2,3] constant({{1.5, -2, 3}, {4, 5, -0}})\n"
            "  k = f32[] constant(0.25)\n"
            "  b = f32[2,3] broadcast(k), dimensions={}\n"
            "  m = f32[2,3] multiply(c, b)\n"
            "  ROOT r = f32[2,3] add(m, p0)")
    check(body, ["f32[2,3]"], [arange("f32", (2, 3))])
    body = ("  c = pred[4] constant({1, 0, 1, 1})\n"
            "  d = s4[4] constant({-8, 7, 0, -1})\n"
            "  z = s4[4] broadcast(p0), dimensions={}\n"
            "  ROOT r = s4[4] select(c, d, z)")
    check(body, ["s4[]"], [np.array(3, ml_dtypes.int4)])


def test_fused_chain_of_data_movement_and_arithmetic():
    body = ("  t = f32[4,3] transpose(p0), dimensions={1,0}\n"
            "  r = f32[2,6] reshape(t)\n"
            "  s = f32[2,4] slice(r), slice={[0:2], [1:5]}\n"
            "  v = f32[2,4] reverse(s), dimensions={1}\n"
            "  z = f32[] constant(0)\n"
            "  p = f32[4,6] pad(v, z), padding=1_1x0_2_0\n"
            "  e = f32[4,6] exponential(p)\n"
            "  i = s32[4,6] iota(), iota_dimension=1\n"
            "  c = f32[4,6] convert(i)\n"
            "  ROOT o = f32[4,6] add(e, c)")
    m = module(body, ["f32[3,4]"])
    x = arange("f32", (3, 4)) / 10
    got = run_native(m, [x])
    t = x.T.reshape(2, 6)[:, 1:5][:, ::-1]
    p = np.zeros((4, 6), np.float32)
    p[1:3, 0:4] = t
    np.testing.assert_allclose(got, np.exp(p) + np.arange(6, dtype=np.float32), rtol=3e-7)


@pytest.mark.parametrize("body,params", [
    ("  ROOT c = f32[64] concatenate(p0, p1), dimensions={0}", ["f32[32]", "f32[32]"]),
    ("  ROOT c = f32[64] pad(p0, p1), padding=10_22", ["f32[32]", "f32[]"])])
def test_concatenate_and_pad_loops_vectorize(body, params):
    """Branches (not clamped selects) keep the loads affine, so LLVM vectorizes them."""
    kernels = compile_computation(module(body, params).entry)
    text = str(kernels.module)
    assert re.search(r"<(8|16) x float>", text)


def test_elementwise_loop_with_exp_and_tanh_vectorizes():
    """``exp(x) * y + tanh(z)`` on f32 compiles to vector instructions at O3 (no libm calls)."""
    m = module("  e = f32[1024] exponential(p0)\n  m = f32[1024] multiply(e, p1)\n"
               "  t = f32[1024] tanh(p2)\n  ROOT r = f32[1024] add(m, t)", ["f32[1024]"] * 3)
    kernels = compile_computation(m.entry)
    text = str(kernels.module)
    widths = {int(w) for w in re.findall(r"<(\d+) x float>", text)}
    assert widths and max(widths) >= 4, "loop was not vectorized"
    assert not re.search(r"call [^@\n]*@(expf|tanhf|exp|tanh)\(", text)
    rng = np.random.default_rng(0)
    args = [rng.uniform(-5, 5, 1024).astype(np.float32) for _ in range(3)]
    got = kernels.run("kernel", args, m.entry.root.shape)
    np.testing.assert_allclose(got, np.exp(args[0]) * args[1] + np.tanh(args[2]), rtol=1e-6,
                               atol=1e-6)


def test_supports_data_movement_rules():
    m = module("  b = f32[4,2]{0,1:T(2,128)} bitcast(p0)\n"
               "  d = f32[2] dynamic-slice(p0, p1), dynamic_slice_sizes={2}\n"
               "  ROOT t = (f32[4,2]{0,1:T(2,128)}, f32[2]) tuple(b, d)", ["f32[8]", "f32[]"])
    by_name = {i.name: i for i in m.entry.instructions}
    assert not ElementalEmitter.supports(by_name["b"])      # tiled layout
    assert not ElementalEmitter.supports(by_name["d"])      # float start index
