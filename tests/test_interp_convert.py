"""Reference interpreter: convert, bitcast-convert, reduce-precision, stochastic-convert."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from xlapy.errors import InvalidArgumentError, UnimplementedError

from interp_ew_helpers import INF, NAN, a, check, run

BF16, F8E4M3FN, F8E5M2 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2


# ----------------------------------------------------------------------------------------------
# convert

CONVERT_CASES = [
    # (to, to dtype, operand, expected)
    ("s32", np.int32, a([NAN, 1e10, -1e10, -3.7, 3.7, -0.5, 2.0**31], np.float32),
     [0, 2**31 - 1, -2**31, -3, 3, 0, 2**31 - 1]),
    ("s8", np.int8, a([127.9, 128, -128.9, -129, INF, -INF], np.float32),
     [127, 127, -128, -128, 127, -128]),
    ("u8", np.uint8, a([NAN, 300, -5, 3.9, 255.5], np.float32), [0, 255, 0, 3, 255]),
    ("s64", np.int64, a([2.0**63, -2.0**63, 1e300, NAN, -7.9], np.float64),
     [2**63 - 1, -2**63, 2**63 - 1, 0, -7]),
    ("u64", np.uint64, a([2.0**64, 2.0**63, -1.0], np.float64), [2**64 - 1, 2**63, 0]),
    ("u32", np.uint32, a([4.5e9, 1.5], np.float32), [2**32 - 1, 1]),
    ("s16", np.int16, a([1e5, -1e5, 12.5], BF16), [32767, -32768, 12]),
    ("s8", np.int8, a([300, -2, 127], np.int32), [44, -2, 127]),
    ("u8", np.uint8, a([-1, 256, 7], np.int32), [255, 0, 7]),
    ("s64", np.int64, a([2**32 - 1], np.uint32), [2**32 - 1]),
    ("s64", np.int64, a([-1], np.int8), [-1]),
    ("u64", np.uint64, a([-1], np.int32), [2**64 - 1]),
    ("s32", np.int32, a([2**64 - 1], np.uint64), [-1]),
    ("f32", np.float32, a([2**24 + 1, -7], np.int32), [2.0**24, -7]),
    ("f32", np.float32, a([2**63 - 1], np.int64), [2.0**63]),
    ("f64", np.float64, a([2**64 - 1], np.uint64), [2.0**64]),
    ("f16", np.float16, a([65520, 2049], np.int32), [INF, 2048]),
    ("bf16", BF16, a([257, 259], np.int32), [256, 260]),
    ("pred", bool, a([0, 2, -1], np.int32), [False, True, True]),
    ("pred", bool, a([0.0, -0.0, NAN, 0.1], np.float32), [False, False, True, True]),
    ("pred", bool, a([0j, 1j, 2], np.complex64), [False, False, True]),
    ("f32", np.float32, np.array([True, False]), [1, 0]),
    ("s4", ml_dtypes.int4, np.array([True, False]), [1, 0]),
    ("f32", np.float32, a([1.5 + 2j, complex(-0.0, -3)], np.complex64), [1.5, -0.0]),
    ("s32", np.int32, a([7.9 + 1j], np.complex128), [7]),
    ("c64", np.complex64, a([1.5, -2], np.float64), [1.5, -2]),
    ("c128", np.complex128, a([3], np.int32), [3]),
    ("c128", np.complex128, a([1 + 2j], np.complex64), [1 + 2j]),
    ("bf16", BF16, a([1.00390625, 1.01171875, 3.4e38, NAN], np.float32),
     [1.0, 1.015625, INF, NAN]),
    ("f16", np.float16, a([1e5, 6e-8, 0.1], np.float32), [INF, 5.96e-08, 0.1]),
    ("f8e4m3fn", F8E4M3FN, a([1.0, 1.0625, 1.1875, 448, 464], np.float32),
     [1.0, 1.0, 1.25, 448, 448]),
    ("f8e5m2", F8E5M2, a([1.125, 1.375, -3.0], np.float32), [1.0, 1.5, -3.0]),
    ("f32", np.float32, a([0.5, -448], F8E4M3FN), [0.5, -448]),
    ("s4", ml_dtypes.int4, a([9.7, -9.7, 5.5, NAN], np.float32), [7, -8, 5, 0]),
    ("u4", ml_dtypes.uint4, a([17, -1], np.int32), [1, 15]),
    ("s32", np.int32, a([-8, 7], ml_dtypes.int4), [-8, 7]),
    ("u8", np.uint8, a([-1], ml_dtypes.int4), [255]),
]


@pytest.mark.parametrize("to,dtype,x,expected", CONVERT_CASES,
                         ids=[f"{np.asarray(c[2]).dtype.name}-to-{c[0]}-{i}"
                              for i, c in enumerate(CONVERT_CASES)])
def test_convert(to, dtype, x, expected):
    check(run("convert", to, x), np.array(expected, dtype=dtype), dtype)


def test_convert_same_type_copies():
    x = a([1, 2], np.int32)
    got = run("convert", "s32", x)
    check(got, x, np.int32)
    assert got is not x


# ----------------------------------------------------------------------------------------------
# bitcast-convert

def test_bitcast_same_width():
    check(run("bitcast-convert", "u32", a([1.0, -0.0], np.float32)),
          [0x3F800000, 0x80000000], np.uint32)
    check(run("bitcast-convert", "f32", a([0x7FC00000], np.uint32)), [NAN], np.float32)
    check(run("bitcast-convert", "s16", a([1.0], BF16)), [0x3F80], np.int16)
    check(run("bitcast-convert", "u8", a([-1, 1], np.int8)), [255, 1], np.uint8)
    check(run("bitcast-convert", "u4", a([-1, -8], ml_dtypes.int4)), [15, 8], ml_dtypes.uint4)
    check(run("bitcast-convert", "f64", a([2**62], np.int64)),
          np.array([2**62], np.int64).view(np.float64), np.float64)


def test_bitcast_wider_to_narrower_adds_minor_dim_little_endian():
    got = run("bitcast-convert", "u8", a([[0x01020304, 0xA0B0C0D0]], np.uint32))
    check(got, [[[4, 3, 2, 1], [0xD0, 0xC0, 0xB0, 0xA0]]], np.uint8)
    got = run("bitcast-convert", "u32", a([2**32 + 7], np.uint64))
    check(got, [[7, 1]], np.uint32)
    got = run("bitcast-convert", "f32", a([1 + 2j], np.complex64))
    check(got, [[1, 2]], np.float32)
    got = run("bitcast-convert", "s4", np.array(0xF1, np.uint8))
    check(got, [1, -1], ml_dtypes.int4)
    got = run("bitcast-convert", "u16", np.array(1.0, np.float32))
    check(got, [0, 0x3F80], np.uint16)


def test_bitcast_narrower_to_wider_consumes_minor_dim():
    got = run("bitcast-convert", "u32", a([[4, 3, 2, 1], [0, 0, 0x80, 0x3F]], np.uint8))
    check(got, [0x01020304, 0x3F800000], np.uint32)
    check(run("bitcast-convert", "f32", a([0, 0x3F80], np.uint16)), 1.0, np.float32)
    check(run("bitcast-convert", "u8", a([1, -1], ml_dtypes.int4)), 0xF1, np.uint8)
    with pytest.raises(InvalidArgumentError, match="minor dimension of size 4"):
        run("bitcast-convert", "u32", a([1, 2, 3], np.uint8))


def test_bitcast_round_trip_of_all_u16_patterns_through_bf16():
    bits = np.arange(1 << 16, dtype=np.uint16)
    back = run("bitcast-convert", "u16", run("bitcast-convert", "bf16", bits))
    check(back, bits, np.uint16)


# ----------------------------------------------------------------------------------------------
# reduce-precision

def _reduce(x, e, m, et="f32"):
    return run("reduce-precision", et, x, exponent_bits=e, mantissa_bits=m)


def test_reduce_precision_to_bf16_matches_ml_dtypes_rounding():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4000).astype(np.float32) * np.float32(2.0) ** rng.integers(
        -30, 30, 4000).astype(np.float32)
    x = np.concatenate([x, a([1.00390625, 1.01171875, 3.3e38, INF, -INF, -0.0, 0.0], np.float32)])
    want = x.astype(BF16).astype(np.float32)
    check(_reduce(x, 8, 7), want, np.float32)


def test_reduce_precision_to_f16_matches_numpy_in_normal_range():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(4000) * 1000).astype(np.float32)
    x = x[np.abs(x) >= 2.0**-14]                       # f16 normals: no denormal rounding
    x = np.concatenate([x, a([65504, 65519, 65520, 1e6, -1e6], np.float32)])
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).astype(np.float32)
    check(_reduce(x, 5, 10), want, np.float32)


def test_reduce_precision_flushes_reduced_denormals_and_keeps_nan():
    x = a([2.0**-15, -2.0**-20, 2.0**-14, NAN, -NAN], np.float32)
    got = _reduce(x, 5, 10)
    check(got[:3], a([0.0, -0.0, 2.0**-14], np.float32), np.float32)
    assert np.isnan(got[3:]).all()
    got = _reduce(a([NAN, 3.0], np.float32), 8, 0)      # XLA:CPU keeps NaN also with 0 mantissa bits
    assert np.isnan(got[0])
    check(got[1:], a([2.0], np.float32), np.float32)


def test_reduce_precision_on_f64_and_bf16_operands():
    x = a([1 + 2.0**-30, 1 + 2.0**-23 + 2.0**-30, 1e300], np.float64)
    check(_reduce(x, 8, 23, "f64"), a([1.0, 1 + 2.0**-23, INF], np.float64), np.float64)
    b = a([1.0078125, 1.0234375], BF16)     # 1+2^-7, 1+3*2^-7
    check(_reduce(b, 8, 6, "bf16"), a([1.0, 1.03125], BF16), BF16)
    check(_reduce(a([1e-30], BF16), 8, 7, "bf16"), a([1e-30], BF16), BF16)  # no-op


def test_reduce_precision_rejects_bad_attributes():
    with pytest.raises(InvalidArgumentError, match="exponent_bits"):
        _reduce(a([1.0], np.float32), 0, 3)


# ----------------------------------------------------------------------------------------------
# stochastic-convert

def test_stochastic_convert_to_signed_int():
    x = a([2.25, 2.25, -2.75, -2.75, 1e10, -1e10, 3.0, NAN], np.float32)
    quarter = np.uint32(2**30)                  # 0.25 * 2^32
    rnd = a([quarter - 1, quarter, 0, 3 * quarter, 0, 0, 0, 0], np.uint32)
    got = run("stochastic-convert", "s32", x, rnd)
    check(got, [3, 2, -3, -2, 2**31 - 1, -2**31, 3, 0], np.int32)


def test_stochastic_convert_f16_to_s8():
    x = a([0.5, 0.5, -126.5, 200], np.float16)
    rnd = a([0x7FFF, 0x8000, 0, 0], np.uint16)
    check(run("stochastic-convert", "s8", x, rnd), [1, 0, -127, 127], np.int8)


def test_stochastic_convert_rejects_unsupported():
    with pytest.raises(UnimplementedError, match="signed integer"):
        run("stochastic-convert", "bf16", a([1.0], np.float32), a([0], np.uint32))
    with pytest.raises(InvalidArgumentError, match="same width"):
        run("stochastic-convert", "s32", a([1.0], np.float32), a([0], np.uint16))
