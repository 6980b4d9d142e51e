"""The CPU elemental emitter against the reference interpreter, op by op and type by type.

Each test builds a small HLO module, compiles its whole entry computation into one fused
native loop (tests/cpu_harness.py) and compares with the interpreter: bit for bit (NaN
equal to NaN, signed zeros distinguished) for everything except the transcendental
functions, whose accuracy is tested in test_cpu_math.py.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from cpu_harness import check_against_interpreter, run_native, same_values
from xlapy.backends.cpu.elemental import ElementalEmitter
from xlapy.backends.interpreter.evaluator import Evaluator
from xlapy.backends.interpreter.numeric import f64_to_f16_rounds_once
from xlapy.errors import UnimplementedError
from xlapy.hlo import parse_module

INTS = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
DTYPES = {"pred": np.bool_, "s2": ml_dtypes.int2, "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4,
          "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64, "u8": np.uint8,
          "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16,
          "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
          "c64": np.complex64, "c128": np.complex128}
N = 64


def module(body: str, params: list[str]) -> object:
    """An HLO module whose entry has ``params`` (shape strings) and ``body`` lines."""
    lines = [f"  p{i} = {s} parameter({i})" for i, s in enumerate(params)]
    return parse_module("HloModule t\n\nENTRY e {\n" + "\n".join(lines) + "\n" + body + "\n}\n")


def values(t: str, n: int = N, seed: int = 0) -> np.ndarray:
    """``n`` values of type ``t`` rich in edge cases (extremes, zeros, NaN, inf, -1)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(DTYPES[t])
    if t == "pred":
        return rng.integers(0, 2, n).astype(bool)
    if t in ("s2", "s4", "u4"):
        info = ml_dtypes.iinfo(dt)
        return rng.integers(int(info.min), int(info.max) + 1, n).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        edge = [info.min, info.max, 0, 1, 2, info.max - 1, info.min + 1, 7]
        if dt.kind == "i":
            edge += [-1, -2, -7]
        edge = np.array(edge, dtype=dt)
        small = rng.integers(-9 if dt.kind == "i" else 0, 10, n // 4).astype(dt)
        big = rng.integers(int(info.min), int(info.max), n, dtype=np.int64 if dt.kind == "i"
                           or dt.itemsize < 8 else np.uint64, endpoint=True).astype(dt)
        out = np.concatenate([edge, small, big])[:n]
        return rng.permutation(out)
    if dt.kind == "c":
        out = np.empty(n, dt)
        out.real = values("f32" if t == "c64" else "f64", n, seed)
        out.imag = values("f32" if t == "c64" else "f64", n, seed + 1)
        return out
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-3,
                     3.0, -7.0, 1.5, 65504.0], np.float64)
    rand = rng.standard_normal(n) * np.exp(rng.uniform(-4, 4, n))
    out = np.concatenate([edge, rand])[:n]
    return rng.permutation(out).astype(dt)


def ulps(x: np.ndarray, t: str) -> np.ndarray:
    """The spacing of type ``t`` at each value of ``x``, as float64."""
    v = np.asarray(x).astype(DTYPES[t])
    if t == "bf16":
        v32 = v.astype(np.float32)
        return np.abs(np.spacing(v32).astype(np.float64)) * 2.0 ** 16
    return np.abs(np.spacing(v).astype(np.float64))


def check(body: str, params: list[str], args: list[np.ndarray]) -> np.ndarray:
    return check_against_interpreter(module(body, params), args)


# ----------------------------------------------------------------------------------------------
# binary ops

INT_BINARY = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
              "and", "or", "xor", "shift-left", "shift-right-arithmetic",
              "shift-right-logical", "power", "mulhi"]


@pytest.mark.parametrize("t", INTS + ["s4", "u4"])
def test_integer_binary_ops_match_interpreter(t):
    """All integer binary ops in one kernel per type; edge values include x/0, INT_MIN/-1,
    shifts by >= the bit width and negative exponents."""
    x, y = values(t, seed=1), values(t, seed=2)
    if t not in ("s4", "u4"):
        y[:6] = np.array([0, 0, 1, 2, 3, 4], dtype=y.dtype)
        if np.dtype(DTYPES[t]).kind == "i":
            x[:2] = np.iinfo(x.dtype).min
            y[1] = -1
    for op in INT_BINARY:
        yy = y
        if op == "power":   # exponents in [-4, 63]; the interpreter differs from XLA beyond
            e = np.asarray(y).astype(np.int64) % 68 - 4
            if t in ("s4", "u4"):
                e = e % 8 - (4 if t == "s4" else 0)
            elif t[0] == "u":
                e = np.abs(e)
            e = np.where((np.asarray(x).astype(np.int64) == -1) & (e < 0), 2, e)
            yy = e.astype(y.dtype)
        if op.startswith("shift"):
            bits = np.dtype(DTYPES[t]).itemsize * 8 if t not in ("s4", "u4") else 4
            yy = (np.arange(N) % (bits + 3)).astype(y.dtype)
        check(f"  ROOT r = {t}[{N}] {op}(p0, p1)", [f"{t}[{N}]"] * 2, [x, yy])


@pytest.mark.parametrize("t", FLOATS)
def test_float_arithmetic_matches_interpreter(t):
    x, y = values(t, seed=3), values(t, seed=4)
    for op in ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum"]:
        check(f"  ROOT r = {t}[{N}] {op}(p0, p1)", [f"{t}[{N}]"] * 2, [x, y])


def test_float_maximum_propagates_nan_and_orders_signed_zeros():
    x = np.array([np.nan, 1.0, -0.0, 0.0, np.nan, -np.inf], np.float32)
    y = np.array([1.0, np.nan, 0.0, -0.0, np.nan, np.inf], np.float32)
    mx = check("  ROOT r = f32[6] maximum(p0, p1)", ["f32[6]"] * 2, [x, y])
    mn = check("  ROOT r = f32[6] minimum(p0, p1)", ["f32[6]"] * 2, [x, y])
    assert np.isnan(mx[:2]).all() and np.isnan(mn[:2]).all()
    assert not np.signbit(mx[2]) and not np.signbit(mx[3])
    assert np.signbit(mn[2]) and np.signbit(mn[3])


def test_integer_division_edge_semantics():
    x = np.array([7, -7, -128, 5, -128, 0], np.int8)
    y = np.array([0, 0, -1, -1, 3, 0], np.int8)
    q = check("  ROOT r = s8[6] divide(p0, p1)", ["s8[6]"] * 2, [x, y])
    r = check("  ROOT r = s8[6] remainder(p0, p1)", ["s8[6]"] * 2, [x, y])
    np.testing.assert_array_equal(q, [-1, -1, -128, -5, -42, -1])
    np.testing.assert_array_equal(r, [7, -7, 0, 0, -2, 0])
    u = check("  ROOT r = u16[2] divide(p0, p1)", ["u16[2]"] * 2,
              [np.array([9, 0], np.uint16), np.array([0, 0], np.uint16)])
    np.testing.assert_array_equal(u, [65535, 65535])


@pytest.mark.parametrize("t,cases", [
    # (base, exponent, XLA:CPU's result), measured with jax 0.10.2
    ("s32", [(3, 64, 1), (-1, -1, -1), (-1, -3, -1), (2, -1, 0), (3, 65, 3), (5, 70, 15625),
             (1, -5, 1), (7, 100, 1729633), (-3, 127, -2111105451), (0, 0, 1), (0, -1, 0),
             (-1, -4, 1), (2, 63, 0)]),
    ("u8", [(231, 177, 0), (254, 70, 64), (255, 129, 255), (255, 128, 1), (1, 200, 1),
            (3, 63, 171), (2, 7, 128), (0, 0, 1)]),
    ("s8", [(-1, -43, -1), (3, 127, -85), (-128, -1, 0), (2, 7, -128)])])
def test_integer_power_follows_xla_cpu(t, cases):
    """XLA:CPU squares over the exponent's low 6 bits; a top-bit-set exponent gives 1 for
    base 1, +-1 for base -1 (all ones) and 0 otherwise."""
    base, exponent, want = (np.array(c, dtype=DTYPES[t]) for c in zip(*cases))
    n = len(cases)
    got = run_native(module(f"  ROOT r = {t}[{n}] power(p0, p1)", [f"{t}[{n}]"] * 2),
                     [base, exponent])
    np.testing.assert_array_equal(got, want)


def test_pred_binary_ops():
    x, y = values("pred", seed=5), values("pred", seed=6)
    for op in ["add", "multiply", "maximum", "minimum", "and", "or", "xor"]:
        check(f"  ROOT r = pred[{N}] {op}(p0, p1)", [f"pred[{N}]"] * 2, [x, y])


# ----------------------------------------------------------------------------------------------
# unary ops

@pytest.mark.parametrize("t", INTS + ["s4", "u4", "s2"])
def test_integer_unary_ops_match_interpreter(t):
    x = values(t, seed=7)
    for op in ["negate", "abs", "sign", "not", "popcnt", "count-leading-zeros"]:
        check(f"  ROOT r = {t}[{N}] {op}(p0)", [f"{t}[{N}]"], [x])


@pytest.mark.parametrize("t", FLOATS)
def test_exact_float_unary_ops_match_interpreter(t):
    x = values(t, seed=8)
    x[:6] = np.array([2.5, -2.5, 0.5, -0.5, 3.5, -0.3], np.float64).astype(x.dtype)
    for op in ["abs", "negate", "sign", "floor", "ceil", "round-nearest-afz",
               "round-nearest-even", "sqrt", "rsqrt"]:
        check(f"  ROOT r = {t}[{N}] {op}(p0)", [f"{t}[{N}]"], [x])
    check(f"  ROOT r = pred[{N}] is-finite(p0)", [f"{t}[{N}]"], [x])


def test_pred_unary_and_real_imag():
    check(f"  ROOT r = pred[{N}] not(p0)", [f"pred[{N}]"], [values("pred")])
    check(f"  ROOT r = f32[{N}] imag(p0)", [f"f32[{N}]"], [values("f32")])
    check(f"  ROOT r = f64[{N}] real(p0)", [f"f64[{N}]"], [values("f64")])
    # real/imag of an integer is rejected by the shape rule (as in XLA), so no layer has it
    m = module(f"  ROOT r = s32[{N}] real(p0)", [f"s32[{N}]"])
    assert not ElementalEmitter.supports(m.entry.root)


@pytest.mark.parametrize("op", ["exponential", "log", "tanh", "logistic", "sine", "cosine",
                                "tan", "erf", "cbrt", "exponential-minus-one",
                                "log-plus-one", "atan", "sinh", "acosh"])
@pytest.mark.parametrize("t", FLOATS)
def test_transcendental_unary_close_to_interpreter(op, t):
    """Within 2 ulps of f32 (f16/bf16: 1 ulp of the type after rounding; f64: libm)."""
    x = values(t, seed=9)
    m = module(f"  ROOT r = {t}[{N}] {op}(p0)", [f"{t}[{N}]"])
    got = run_native(m, [x]).astype(np.float64)
    with np.errstate(all="ignore"):
        want = np.asarray(Evaluator(m).run([x])).astype(np.float64)
    nan_mismatch = np.isnan(got) != np.isnan(want)
    assert not nan_mismatch.any(), (op, t, x[nan_mismatch])
    ok = ~np.isnan(want)
    assert np.array_equal(np.isinf(got[ok]), np.isinf(want[ok]))
    fin = ok & np.isfinite(want)
    limit = ulps(want[fin], t) * (1.01 if t in ("f16", "bf16") else 2)
    assert np.all(np.abs(got[fin] - want[fin]) <= limit), (op, t)


@pytest.mark.parametrize("t", FLOATS)
def test_power_and_atan2_close_to_interpreter(t):
    x, y = values(t, seed=10), values(t, seed=11)
    y[:8] = np.array([2, 3, -1, 0.5, 0, -2, 1, -3], np.float64).astype(y.dtype)
    for op in ["power", "atan2"]:
        m = module(f"  ROOT r = {t}[{N}] {op}(p0, p1)", [f"{t}[{N}]"] * 2)
        got = run_native(m, [x, y]).astype(np.float64)
        with np.errstate(all="ignore"):
            want = np.asarray(Evaluator(m).run([x, y])).astype(np.float64)
        assert np.array_equal(np.isnan(got), np.isnan(want)), op
        fin = np.isfinite(want)
        assert np.array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
        assert np.all(np.abs(got[fin] - want[fin]) <= 2 * ulps(want[fin], t)), (op, t)


# ----------------------------------------------------------------------------------------------
# compare, select, clamp

@pytest.mark.parametrize("t", INTS + FLOATS + ["pred", "s4"])
def test_compare_all_directions(t):
    x, y = values(t, seed=12), values(t, seed=13)
    y[::3] = x[::3]                                     # plenty of equal pairs
    types = ["FLOAT", "TOTALORDER"] if t in FLOATS else (
        ["UNSIGNED"] if t.startswith("u") else ["SIGNED", "UNSIGNED", "TOTALORDER"])
    for ctype in types:
        for d in ["EQ", "NE", "LT", "LE", "GT", "GE"]:
            check(f"  ROOT r = pred[{N}] compare(p0, p1), direction={d}, type={ctype}",
                  [f"{t}[{N}]"] * 2, [x, y])


def test_totalorder_orders_nans_and_zeros():
    x = np.array([-np.nan, -np.inf, -0.0, 0.0, np.inf, np.nan], np.float32)
    x[0] = -np.abs(np.float32(np.nan))
    lt = np.zeros((6, 6), bool)
    for i in range(6):
        r = check("  ROOT r = pred[6] compare(p0, p1), direction=LT, type=TOTALORDER",
                  ["f32[6]"] * 2, [np.full(6, x[i], np.float32), x])
        lt[i] = r
    assert np.array_equal(lt, np.triu(np.ones((6, 6), bool), 1))


@pytest.mark.parametrize("t", ["f32", "s8", "bf16", "pred", "c64"])
def test_select_with_array_and_scalar_predicates(t):
    p, x, y = values("pred", seed=14), values(t, seed=15), values(t, seed=16)
    check(f"  ROOT r = {t}[{N}] select(p0, p1, p2)", [f"pred[{N}]", f"{t}[{N}]", f"{t}[{N}]"],
          [p, x, y])
    check(f"  ROOT r = {t}[{N}] select(p0, p1, p2)", ["pred[]", f"{t}[{N}]", f"{t}[{N}]"],
          [np.array(True), x, y])


@pytest.mark.parametrize("t", ["f32", "f16", "s32", "u8", "pred"])
def test_clamp_with_scalar_and_array_bounds(t):
    lo, x, hi = values(t, seed=17), values(t, seed=18), values(t, seed=19)
    check(f"  ROOT r = {t}[{N}] clamp(p0, p1, p2)", [f"{t}[{N}]"] * 3, [lo, x, hi])
    check(f"  ROOT r = {t}[{N}] clamp(p0, p1, p2)", [f"{t}[]", f"{t}[{N}]", f"{t}[]"],
          [lo[3], x, hi[7]])


# ----------------------------------------------------------------------------------------------
# conversions

CONVERT_TYPES = ["pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "bf16",
                 "f32", "f64", "s4", "u4"]


@pytest.mark.parametrize("frm", CONVERT_TYPES)
def test_convert_to_every_type(frm):
    x = values(frm, seed=20)
    if frm in FLOATS:           # values near integer limits and halfway cases
        extra = np.array([3e9, -3e9, 2.0 ** 31, -2.0 ** 31 - 1, 2.0 ** 63, -2.0 ** 64, 300.5,
                          -129.5, 65535.7, 2.0 ** 64, 1e20, 4294967295.0], np.float64)
        with np.errstate(over="ignore"):
            x[-len(extra):] = extra.astype(x.dtype)
    for to in CONVERT_TYPES + ["c64", "c128"]:
        check(f"  ROOT r = {to}[{N}] convert(p0)", [f"{frm}[{N}]"], [x])


def test_convert_f64_to_f16_and_bf16_through_f32():
    # 1 + 2**-11 + 2**-40 is above the f16 halfway point: rounded once (CPUs with
    # AVX512-FP16, where XLA:CPU converts in one instruction) it goes up; XLA:CPU elsewhere
    # rounds it to f32 first (1 + 2**-11, a tie), then to f16 (ties to even): 1.0.
    x = np.array([1 + 2 ** -11 + 2 ** -40, 1 + 2 ** -11, 65520.0, 1e-8, -1.00390625 - 1e-12],
                 np.float64)
    h = check("  ROOT r = f16[5] convert(p0)", ["f64[5]"], [x])
    once = f64_to_f16_rounds_once()
    assert h[0] == np.float16(1 + 2 ** -10 if once else 1.0)
    assert h[1] == np.float16(1.0) and np.isinf(h[2])
    check("  ROOT r = bf16[5] convert(p0)", ["f64[5]"], [x])


def test_complex_ops():
    a, b = values("c64", seed=21), values("c64", seed=22)
    for op in ["add", "subtract"]:
        check(f"  ROOT r = c64[{N}] {op}(p0, p1)", [f"c64[{N}]"] * 2, [a, b])
    # divide: Smith's algorithm, close to NumPy for finite values
    fin = np.isfinite(a) & np.isfinite(b) & (b != 0)
    n = int(fin.sum())
    q = run_native(module(f"  ROOT r = c128[{n}] divide(p0, p1)", [f"c128[{n}]"] * 2),
                   [a[fin].astype(np.complex128), b[fin].astype(np.complex128)])
    exact = a[fin].astype(np.complex128) / b[fin]
    assert np.all(np.abs(q - exact) <= np.abs(exact) * 1e-15)
    # multiply: (ac - bd) + (ad + bc)i rounded per operation (NumPy may fuse a multiply-add)
    fin = np.isfinite(a) & np.isfinite(b)
    m = module(f"  ROOT r = c64[{int(fin.sum())}] multiply(p0, p1)", [f"c64[{int(fin.sum())}]"] * 2)
    got = run_native(m, [a[fin], b[fin]])
    exact = a[fin].astype(np.complex128) * b[fin].astype(np.complex128)
    scale = np.abs(a[fin]).astype(np.float64) * np.abs(b[fin])
    assert np.all(np.abs(got - exact) <= scale * 2 ** -22)
    for op, out in [("real", "f32"), ("imag", "f32"), ("negate", "c64")]:
        check(f"  ROOT r = {out}[{N}] {op}(p0)", [f"c64[{N}]"], [a])
    # abs is XLA's max * sqrt(1 + (min/max)**2), min where that is NaN
    mag = run_native(module(f"  ROOT r = f32[{N}] abs(p0)", [f"c64[{N}]"]), [a])
    with np.errstate(all="ignore"):
        big = np.maximum(np.abs(a.real), np.abs(a.imag))
        small = np.minimum(np.abs(a.real), np.abs(a.imag))
        want = big * np.sqrt(np.float32(1) + (small / big) ** 2)
        want = np.where(np.isnan(want), small, want)
    assert same_values(mag, want)
    # complex(re, im) pairs the parts as they are (inf, NaN and -0 included)
    re, im = values("f32", seed=1), values("f32", seed=2)
    z = run_native(module(f"  ROOT r = c64[{N}] complex(p0, p1)", [f"f32[{N}]"] * 2), [re, im])
    assert same_values(z.real, re) and same_values(z.imag, im)
    for d in ["EQ", "NE"]:
        check(f"  ROOT r = pred[{N}] compare(p0, p1), direction={d}", [f"c64[{N}]"] * 2,
              [a, np.where(np.arange(N) % 2 == 0, a, b)])
    check(f"  ROOT r = c128[{N}] convert(p0)", [f"c64[{N}]"], [a])


@pytest.mark.parametrize("frm,to", [("f32", "s32"), ("u32", "f32"), ("f16", "s16"),
                                    ("bf16", "u16"), ("f64", "s64"), ("s8", "u8"),
                                    ("pred", "u8"), ("u8", "pred")])
def test_bitcast_convert_same_width(frm, to):
    check(f"  ROOT r = {to}[{N}] bitcast-convert(p0)", [f"{frm}[{N}]"], [values(frm, seed=23)])


@pytest.mark.parametrize("frm,to,shape_in,shape_out", [
    ("f32", "u8", "[16]", "[16,4]"), ("s64", "s16", "[8]", "[8,4]"), ("f64", "f32", "[4]", "[4,2]"),
    ("u8", "f32", "[16,4]", "[16]"), ("s16", "u64", "[8,4]", "[8]"),
    ("f16", "s32", "[3,2]", "[3]")])
def test_bitcast_convert_changing_width(frm, to, shape_in, shape_out):
    dims = tuple(int(d) for d in shape_in.strip("[]").split(","))
    x = values(frm, n=int(np.prod(dims)), seed=24).reshape(dims)
    check(f"  ROOT r = {to}{shape_out} bitcast-convert(p0)", [f"{frm}{shape_in}"], [x])


@pytest.mark.parametrize("t,e,m", [("f32", 5, 10), ("f32", 8, 7), ("f32", 4, 3), ("f32", 2, 0),
                                   ("f16", 4, 2), ("bf16", 5, 3), ("f64", 8, 23),
                                   ("f64", 11, 52), ("f32", 11, 30)])
def test_reduce_precision(t, e, m):
    x = values(t, seed=25)
    body = f"  ROOT r = {t}[{N}] reduce-precision(p0), exponent_bits={e}, mantissa_bits={m}"
    nan = np.isnan(x.astype(np.float64))
    check(body, [f"{t}[{N}]"], [np.where(nan, x.dtype.type(1.5), x)])
    # NaN stays the same NaN, also with mantissa_bits=0 (XLA:CPU; the interpreter gives inf)
    got = run_native(module(body, [f"{t}[{N}]"]), [x])
    assert np.array_equal(got[nan].view(np.uint8), x[nan].view(np.uint8))


# ----------------------------------------------------------------------------------------------
# supports() and errors

def test_supports_rejects_what_it_cannot_emit():
    m = module("  a = f8e4m3fn[4] add(p0, p0)\n  d = c64[4] power(p1, p1)\n"
               "  ROOT t = (f8e4m3fn[4], c64[4]) tuple(a, d)", ["f8e4m3fn[4]", "c64[4]"])
    by_name = {i.name: i for i in m.entry.instructions}
    assert not ElementalEmitter.supports(by_name["a"])
    assert not ElementalEmitter.supports(by_name["d"])
    assert not ElementalEmitter.supports(by_name["t"])
    assert ElementalEmitter.supports(by_name["p0"]) is False
    from llvmlite import ir
    mod = ir.Module()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), []), "f")
    em = ElementalEmitter(ir.IRBuilder(fn.append_basic_block()), mod)
    with pytest.raises(UnimplementedError, match="power"):
        em.generator(by_name["d"], [lambda i: None, lambda i: None])
