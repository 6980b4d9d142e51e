"""Reference interpreter: elementwise unary, binary, compare, select and clamp handlers.

Handlers are called directly on HloInstructions without operands (operand values
are passed in), and compared with NumPy or with hand-computed XLA results.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import scipy.special

from xlapy.backends.interpreter import HANDLERS
from xlapy.errors import InvalidArgumentError
from xlapy.hlo.opcodes import OPCODES
from xlapy.hlo.types import from_dtype

from interp_ew_helpers import INF, NAN, a, check, run


def test_every_elementwise_opcode_has_a_handler():
    ew = [name for name, info in OPCODES.items() if info.family == "elementwise"]
    assert ew and all(name in HANDLERS for name in ew), [n for n in ew if n not in HANDLERS]


# ----------------------------------------------------------------------------------------------
# integer arithmetic

INT_BINARY_CASES = [
    # (opcode, dtype, lhs, rhs, expected)
    ("add", np.int8, [127, -128, 5], [1, -1, -3], [-128, 127, 2]),
    ("subtract", np.uint8, [0, 5], [1, 3], [255, 2]),
    ("multiply", np.int32, [2**30, -7], [4, 3], [0, -21]),
    ("multiply", np.int64, [2**62, 3], [4, -3], [0, -9]),
    ("divide", np.int32, [7, -7, 7, -7, 5, -2**31, -2**31], [2, 2, -2, -2, 0, -1, 2],
     [3, -3, -3, 3, -1, -2**31, -2**30]),
    ("divide", np.int64, [-2**63, 9, -9], [-1, 0, 4], [-2**63, -1, -2]),
    ("divide", np.uint8, [200, 7, 0], [3, 0, 0], [66, 255, 255]),
    ("divide", np.uint64, [2**64 - 1, 5], [2, 0], [2**63 - 1, 2**64 - 1]),
    ("remainder", np.int32, [7, -7, 7, -7, 5, -2**31], [3, 3, -3, -3, 0, -1],
     [1, -1, 1, -1, 5, 0]),
    ("remainder", np.int64, [-2**63, 10], [-1, 0], [0, 10]),
    ("remainder", np.uint16, [65535, 9], [10, 0], [5, 9]),
    ("power", np.int32, [2, 3, 0, 5, 2, 1, -1, -1, 2, -2], [10, 3, 0, 0, 31, -7, -1, -2, -1, 3],
     [1024, 27, 1, 1, -2**31, 1, -1, 1, 0, -8]),      # XLA: (-1)**-1 == -1, (-1)**-2 == 1
    ("power", np.int64, [3, 2, 2], [40, 63, 64], [3**40 - 2**64, -2**63, 1]),   # low 6 bits: 2**64 == 2**0
    ("power", np.uint8, [3, 2, 255], [5, 8, 2], [243, 0, 1]),
    ("maximum", np.int16, [-5, 3], [2, -9], [2, 3]),
    ("minimum", np.uint32, [2**32 - 1, 3], [2, 9], [2, 3]),
    ("and", np.int8, [0b0110, -1], [0b0011, 5], [0b0010, 5]),
    ("or", np.uint8, [0b0110, 0], [0b0011, 0], [0b0111, 0]),
    ("xor", np.int32, [-1, 5], [0, 3], [-1, 6]),
    ("shift-left", np.int32, [1, 1, 1, 3, 1], [3, 31, 32, 1, -1], [8, -2**31, 0, 6, 0]),
    ("shift-left", np.uint8, [0x81, 1], [1, 8], [0x02, 0]),
    ("shift-right-logical", np.int32, [-8, -8, 16, -1], [1, 32, 2, -1],
     [2**31 - 4, 0, 4, 0]),
    ("shift-right-arithmetic", np.int32, [-8, -8, 8, -8], [1, 32, 40, -1], [-4, -1, 0, -1]),
    ("shift-right-arithmetic", np.uint8, [0x80, 0x40, 0x80], [1, 1, 9], [0xC0, 0x20, 0xFF]),
    ("shift-right-logical", np.int64, [-1, -1], [63, 64], [1, 0]),
    ("mulhi", np.int32, [-1, 2**30, -2**31], [1, 8, -2**31], [-1, 2, 2**30]),
    ("mulhi", np.uint32, [2**31, 2**32 - 1], [4, 2**32 - 1], [2, 2**32 - 2]),
    ("mulhi", np.int64, [-1, 2**62, -2**63], [1, 4, -2**63], [-1, 1, 2**62]),
    ("mulhi", np.uint64, [2**63, 2**64 - 1], [4, 2**64 - 1], [2, 2**64 - 2]),
]


@pytest.mark.parametrize("op,dtype,lhs,rhs,expected", INT_BINARY_CASES,
                         ids=[f"{c[0]}-{np.dtype(c[1]).name}-{i}"
                              for i, c in enumerate(INT_BINARY_CASES)])
def test_int_binary(op, dtype, lhs, rhs, expected):
    out = np.dtype(dtype)
    got = run(op, from_dtype(out).name, a(lhs, dtype), a(rhs, dtype))
    check(got, a(expected, dtype), dtype)


def test_narrow_int_arithmetic_wraps():
    s4 = ml_dtypes.int4
    check(run("add", "s4", a([7, -8, 3], s4), a([1, -1, 2], s4)), a([-8, 7, 5], s4), s4)
    check(run("multiply", "s4", a([4, -3], s4), a([4, 3], s4)), a([0, 7], s4), s4)
    u4 = ml_dtypes.uint4
    check(run("subtract", "u4", a([0, 9], u4), a([1, 2], u4)), a([15, 7], u4), u4)
    check(run("divide", "u4", a([9, 9], u4), a([0, 2], u4)), a([15, 4], u4), u4)
    check(run("divide", "s4", a([-8, 7], s4), a([-1, 0], s4)), a([-8, -1], s4), s4)
    check(run("shift-right-arithmetic", "s4", a([-8, 4], s4), a([2, 3], s4)), a([-2, 0], s4), s4)
    check(run("shift-left", "u2", a([1, 3], ml_dtypes.uint2), a([1, 2], ml_dtypes.uint2)),
          a([2, 0], ml_dtypes.uint2), ml_dtypes.uint2)


def test_int_binary_broadcasts_scalar_values():
    # reducers run vectorized: a 0-d operand meets an array
    got = run("add", "s32", np.int32(2**31 - 1), a([1, 2], np.int32))
    check(got, a([-2**31, -2**31 + 1], np.int32), np.int32)
    got = run("divide", "s32", np.array(7, np.int32), np.array(0, np.int32))
    check(got, np.array(-1, np.int32), np.int32)


# ----------------------------------------------------------------------------------------------
# integer unary

INT_UNARY_CASES = [
    ("negate", np.int8, [-128, 5, 0], [-128, -5, 0]),
    ("negate", np.uint8, [1, 0], [255, 0]),
    ("abs", np.int32, [-2**31, -3, 4], [-2**31, 3, 4]),
    ("abs", np.uint16, [65535], [65535]),
    ("sign", np.int32, [-7, 0, 9], [-1, 0, 1]),
    ("sign", np.uint8, [0, 200], [0, 1]),
    ("not", np.int8, [0, -1, 5], [-1, 0, -6]),
    ("not", np.uint16, [0, 1], [65535, 65534]),
    ("count-leading-zeros", np.int8, [0, 1, -1, 64, 127], [8, 7, 0, 1, 1]),
    ("count-leading-zeros", np.uint16, [0, 1, 0x8000, 0x00FF], [16, 15, 0, 8]),
    ("count-leading-zeros", np.int32, [0, 1, -1, 2**30], [32, 31, 0, 1]),
    ("count-leading-zeros", np.uint64, [0, 1, 2**63, 2**40], [64, 63, 0, 23]),
    ("popcnt", np.int8, [-1, 0, 5, -128], [8, 0, 2, 1]),
    ("popcnt", np.uint16, [65535, 256, 0x0F0F], [16, 1, 8]),
    ("popcnt", np.int32, [-1, 7], [32, 3]),
    ("popcnt", np.uint64, [2**64 - 1, 2**63 + 1], [64, 2]),
]


@pytest.mark.parametrize("op,dtype,x,expected", INT_UNARY_CASES,
                         ids=[f"{c[0]}-{np.dtype(c[1]).name}-{i}"
                              for i, c in enumerate(INT_UNARY_CASES)])
def test_int_unary(op, dtype, x, expected):
    check(run(op, from_dtype(np.dtype(dtype)).name, a(x, dtype)), a(expected, dtype), dtype)


def test_narrow_int_unary():
    s4, u4 = ml_dtypes.int4, ml_dtypes.uint4
    check(run("count-leading-zeros", "s4", a([0, 1, -1, 4], s4)), a([4, 3, 0, 1], s4), s4)
    check(run("popcnt", "s4", a([-1, 7, -8], s4)), a([4, 3, 1], s4), s4)
    check(run("popcnt", "u4", a([15, 8], u4)), a([4, 1], u4), u4)
    check(run("negate", "s4", a([-8, 3], s4)), a([-8, -3], s4), s4)
    check(run("not", "u4", a([0, 5], u4)), a([15, 10], u4), u4)


def test_pred_ops():
    t, f = np.array([True, True, False, False]), np.array([True, False, True, False])
    check(run("and", "pred", t, f), t & f, bool)
    check(run("or", "pred", t, f), t | f, bool)
    check(run("xor", "pred", t, f), t ^ f, bool)
    check(run("maximum", "pred", t, f), t | f, bool)
    check(run("minimum", "pred", t, f), t & f, bool)
    check(run("add", "pred", t, f), t | f, bool)
    check(run("multiply", "pred", t, f), t & f, bool)
    check(run("not", "pred", t), ~t, bool)
    with pytest.raises(InvalidArgumentError, match="divide"):
        run("divide", "pred", t, f)


# ----------------------------------------------------------------------------------------------
# float unary

FLOAT_UNARY_NUMPY = {
    "ceil": np.ceil, "floor": np.floor, "cbrt": np.cbrt, "cosine": np.cos, "sine": np.sin,
    "tan": np.tan, "tanh": np.tanh, "exponential": np.exp, "exponential-minus-one": np.expm1,
    "log": np.log, "log-plus-one": np.log1p, "sqrt": np.sqrt, "erf": scipy.special.erf,
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
    "atan": np.arctan, "atanh": np.arctanh, "cosh": np.cosh, "sinh": np.sinh,
    "negate": np.negative, "abs": np.abs, "round-nearest-even": np.rint,
    "rsqrt": lambda x: 1 / np.sqrt(x), "logistic": lambda x: 1 / (1 + np.exp(-x)),
}


@pytest.mark.parametrize("op", sorted(FLOAT_UNARY_NUMPY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_unary_matches_numpy(op, dtype):
    x = a([-2.5, -0.75, -0.0, 0.3, 0.9, 1.5, 3.0, 20.0, NAN, INF, -INF], dtype)
    got = run(op, from_dtype(np.dtype(dtype)).name, x)
    with np.errstate(all="ignore"):
        want = FLOAT_UNARY_NUMPY[op](x).astype(dtype)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == np.float32 else 1e-14)


@pytest.mark.parametrize("dtype,name", [(np.float16, "f16"), (ml_dtypes.bfloat16, "bf16"),
                                        (ml_dtypes.float8_e4m3fn, "f8e4m3fn"),
                                        (ml_dtypes.float8_e5m2, "f8e5m2")])
def test_narrow_float_unary_computes_in_f32_and_rounds(dtype, name):
    x = a([0.5, 1.0, 2.0, -1.5, 3.0], dtype)
    for op, fn in (("exponential", np.exp), ("sine", np.sin), ("sqrt", np.sqrt),
                   ("logistic", lambda v: 1 / (1 + np.exp(-v)))):
        with np.errstate(all="ignore"):
            want = fn(x.astype(np.float32)).astype(dtype)
        check(run(op, name, x), want, dtype)


def test_rounding_half_cases():
    x = a([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.3, 0.49999997, 2.0**23 + 1, NAN, -INF], np.float32)
    check(run("round-nearest-afz", "f32", x),
          a([1, 2, 3, -1, -2, -3, -0.0, 0, 2.0**23 + 1, NAN, -INF], np.float32), np.float32)
    check(run("round-nearest-even", "f32", x),
          a([0, 2, 2, -0.0, -2, -2, -0.0, 0, 2.0**23 + 1, NAN, -INF], np.float32), np.float32)
    b = a([0.5, 2.5, -3.5], ml_dtypes.bfloat16)
    check(run("round-nearest-afz", "bf16", b), a([1, 3, -4], ml_dtypes.bfloat16),
          ml_dtypes.bfloat16)


def test_sign_float_and_complex():
    check(run("sign", "f32", a([NAN, -0.0, 0.0, -3, 5, -INF], np.float32)),
          a([NAN, -0.0, 0.0, -1, 1, -1], np.float32), np.float32)
    z = a([3 + 4j, 0, -2j], np.complex64)
    check(run("sign", "c64", z), a([0.6 + 0.8j, 0, -1j], np.complex64), np.complex64)


def test_complex_parts_and_abs():
    z = a([3 + 4j, -1 - 2j], np.complex128)
    check(run("abs", "f64", z), a([5, np.sqrt(5)], np.float64), np.float64)
    check(run("real", "f64", z), a([3, -1], np.float64), np.float64)
    check(run("imag", "f64", z), a([4, -2], np.float64), np.float64)
    check(run("imag", "f32", a([1.5], np.float32)), a([0], np.float32), np.float32)
    check(run("exponential", "c64", a([1j * np.pi], np.complex64)),
          np.exp(a([1j * np.pi], np.complex64)), np.complex64)
    with pytest.raises(InvalidArgumentError, match="floor"):
        run("floor", "c64", z.astype(np.complex64))


def test_is_finite():
    check(run("is-finite", "pred", a([1, NAN, INF, -INF, 0], np.float32)),
          [True, False, False, False, True], bool)
    check(run("is-finite", "pred", a([1, INF], ml_dtypes.bfloat16)), [True, False], bool)


def test_copy_returns_a_new_array():
    x = a([1, 2], np.int32)
    got = run("copy", "s32", x)
    check(got, x, np.int32)
    assert got is not x
    pair = (x, (np.float32(1.5),))
    got = HANDLERS["copy"](None, None, [pair])
    assert isinstance(got, tuple) and got[0] is not x and float(got[1][0]) == 1.5


# ----------------------------------------------------------------------------------------------
# float binary

def _rounded_power(x, y):
    """The correctly rounded power (NumPy's float32 pow is off by an ulp, e.g. 1.5**0.5)."""
    return np.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)


def test_float_binary_matches_numpy():
    x = a([1.5, -2.0, 0.0, 7.0, -0.0, INF], np.float32)
    y = a([0.5, 3.0, 0.0, -2.0, 1.0, 2.0], np.float32)
    with np.errstate(all="ignore"):
        for op, fn in (("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
                       ("divide", np.divide), ("remainder", np.fmod), ("power", _rounded_power),
                       ("atan2", np.arctan2)):
            check(run(op, "f32", x, y), fn(x, y), np.float32)


def test_float_power_special_cases():
    x = a([NAN, 1.0, 0.0, -8.0, 2.0], np.float64)
    y = a([0.0, NAN, 0.0, 1 / 3, -1.0], np.float64)
    check(run("power", "f64", x, y), a([1, 1, 1, NAN, 0.5], np.float64), np.float64)


def test_float_maximum_minimum_nan_and_signed_zero():
    x = a([1, NAN, -0.0, 0.0, 2, NAN], np.float32)
    y = a([NAN, 1, 0.0, -0.0, 3, 5], np.float32)
    check(run("maximum", "f32", x, y), a([NAN, NAN, 0.0, 0.0, 3, NAN], np.float32), np.float32)
    check(run("minimum", "f32", x, y), a([NAN, NAN, -0.0, -0.0, 2, NAN], np.float32), np.float32)


def test_bf16_binary_rounds_once_from_f32():
    x = a([1.0, 3.0], ml_dtypes.bfloat16)
    y = a([2.0**-8, 7.0], ml_dtypes.bfloat16)
    want = (x.astype(np.float32) + y.astype(np.float32)).astype(ml_dtypes.bfloat16)
    check(run("add", "bf16", x, y), want, ml_dtypes.bfloat16)
    check(run("divide", "f16", a([1.0], np.float16), a([3.0], np.float16)),
          a([1 / 3], np.float16), np.float16)


def test_complex_binary_and_construction():
    x = a([1 + 2j, 0], np.complex64)
    y = a([3 - 1j, 0], np.complex64)
    check(run("multiply", "c64", x, y), x * y, np.complex64)
    # Smith's algorithm in f32, as XLA:CPU: (1+2j)/(3-1j) has real part 0.099999994, not 0.1
    check(run("divide", "c64", x[:1], y[:1]), a([np.float32(0.099999994) + 0.7j], np.complex64),
          np.complex64)
    np.testing.assert_allclose(run("power", "c64", x, y), [(1 + 2j) ** (3 - 1j), 1], rtol=1e-6)
    assert run("power", "c64", x, y).dtype == np.complex64
    check(run("complex", "c128", a([1.0, -2.0], np.float64), a([0.5, 3.0], np.float64)),
          a([1 + 0.5j, -2 + 3j], np.complex128), np.complex128)
    with pytest.raises(InvalidArgumentError, match="maximum"):
        run("maximum", "c64", x, y)


# ----------------------------------------------------------------------------------------------
# compare

def cmp(x, y, direction, ctype=None):
    attrs = {"direction": direction}
    if ctype:
        attrs["type"] = ctype
    return run("compare", "pred", x, y, **attrs)


@pytest.mark.parametrize("direction,fn", [("EQ", np.equal), ("NE", np.not_equal),
                                          ("LT", np.less), ("LE", np.less_equal),
                                          ("GT", np.greater), ("GE", np.greater_equal)])
def test_compare_float_ieee(direction, fn):
    x = a([1.0, NAN, NAN, -0.0, 2.0, -INF], np.float32)
    y = a([1.0, 1.0, NAN, 0.0, 1.0, INF], np.float32)
    with np.errstate(all="ignore"):
        check(cmp(x, y, direction), fn(x, y), bool)
        check(cmp(x, y, direction, "FLOAT"), fn(x, y), bool)


def test_compare_total_order():
    order = a([-NAN, -INF, -1.0, -0.0, 0.0, 1e-30, 1.0, INF, NAN], np.float32)
    order[0] = np.float32(-NAN) if np.signbit(np.float32(-NAN)) else -np.abs(np.float32(NAN))
    n = len(order)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    x, y = order[i], order[j]
    check(cmp(x, y, "LT", "TOTALORDER"), i < j, bool)
    check(cmp(x, y, "EQ", "TOTALORDER"), i == j, bool)
    check(cmp(x, y, "GE", "TOTALORDER"), i >= j, bool)
    b = order.astype(ml_dtypes.bfloat16)
    check(cmp(b[i], b[j], "LE", "TOTALORDER"), i <= j, bool)


def test_compare_integers_signed_unsigned():
    x = a([-1, 0, 5], np.int32)
    y = a([1, 0, -3], np.int32)
    check(cmp(x, y, "LT"), [True, False, False], bool)
    check(cmp(x, y, "LT", "SIGNED"), [True, False, False], bool)
    check(cmp(x, y, "LT", "UNSIGNED"), [False, False, True], bool)   # -1 is 0xffffffff
    u = a([2**32 - 1, 3], np.uint32)
    v = a([1, 4], np.uint32)
    check(cmp(u, v, "GT"), [True, False], bool)
    check(cmp(u, v, "GT", "SIGNED"), [False, False], bool)
    s4 = ml_dtypes.int4
    check(cmp(a([-8, 7], s4), a([7, -8], s4), "LT"), [True, False], bool)
    check(cmp(np.array([False, True]), np.array([True, True]), "LT"), [True, False], bool)


def test_compare_complex_only_eq_ne():
    z = a([1 + 1j, 2], np.complex64)
    w = a([1 + 1j, 2 + 1j], np.complex64)
    check(cmp(z, w, "EQ"), [True, False], bool)
    check(cmp(z, w, "NE"), [False, True], bool)
    with pytest.raises(InvalidArgumentError, match="LT"):
        cmp(z, w, "LT")


def test_compare_bad_direction():
    with pytest.raises(InvalidArgumentError, match="direction"):
        cmp(a([1], np.int32), a([1], np.int32), "XX")


# ----------------------------------------------------------------------------------------------
# select, clamp

def test_select_scalar_and_elementwise_predicate():
    t, f = a([1, 2, 3], np.int32), a([7, 8, 9], np.int32)
    check(run("select", "s32", np.array(False), t, f), f, np.int32)
    check(run("select", "s32", np.array([True, False, True]), t, f), [1, 8, 3], np.int32)
    b = a([1, 2], ml_dtypes.bfloat16)
    check(run("select", "bf16", np.array([False, True]), b, b * 2),
          a([2, 2], ml_dtypes.bfloat16), ml_dtypes.bfloat16)


def test_clamp():
    check(run("clamp", "s32", np.int32(0), a([-5, 3, 12], np.int32), np.int32(10)),
          [0, 3, 10], np.int32)
    check(run("clamp", "u8", a([2, 2, 2], np.uint8), a([0, 5, 255], np.uint8),
              a([4, 4, 4], np.uint8)), [2, 4, 4], np.uint8)
    check(run("clamp", "f32", np.float32(-1), a([-3, 0.5, 9, NAN, -0.0], np.float32),
              np.float32(1)), a([-1, 0.5, 1, NAN, -0.0], np.float32), np.float32)
    check(run("clamp", "f32", np.float32(NAN), a([0.5], np.float32), np.float32(1)),
          a([NAN], np.float32), np.float32)
    check(run("clamp", "bf16", np.array(0, ml_dtypes.bfloat16), a([-1, 2], ml_dtypes.bfloat16),
              np.array(1, ml_dtypes.bfloat16)), a([0, 1], ml_dtypes.bfloat16), ml_dtypes.bfloat16)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_total_order_keys_sort_every_float_width(dtype):
    from xlapy.backends.interpreter.elementwise import total_order_key
    from xlapy.hlo import types as T
    v = np.array([np.inf, 2.0, 0.0, -0.0, -1.5, -np.inf, np.nan, -np.nan], dtype)
    v[-1] = np.copysign(np.nan, -1)
    keys = total_order_key(v, T.from_dtype(dtype))
    got = v[np.argsort(keys, kind="stable")]
    assert np.signbit(got[0]) and np.isnan(got[0])          # -NaN first
    np.testing.assert_array_equal(got[1:7], np.array([-np.inf, -1.5, -0.0, 0.0, 2.0, np.inf], dtype))
    assert np.signbit(got[3]) and not np.signbit(got[4])    # -0 before +0
    assert np.isnan(got[7]) and not np.signbit(got[7])
