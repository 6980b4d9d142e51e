"""Accuracy of the inline float math of the CPU backend (xlapy/backends/cpu/math_ir.py).

Each function runs over random inputs spread across its whole range, random bit patterns
(denormals, huge values, NaNs), and edge cases; the error is measured in ulps of float32
against the correctly rounded result (NumPy/SciPy in float64). Special values (NaN,
infinities, signed zeros, overflow, underflow) must match exactly.

Measured maximum errors (2M random inputs per function, see ULP_BOUNDS for the limits):
exp 0.96, expm1 1.38, log 0.85, log1p 0.86, tanh 1.29, logistic 2.15, sin/cos/tan 0.50,
erf 1.25, cbrt 0.50, atan2 0.50, pow 0.50.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from llvmlite import ir
from scipy import special

from cpu_harness import CompiledKernels, _init
from xlapy.backends.cpu import math_ir
from xlapy.backends.cpu.llvm_types import F32, F64

UNARY = {
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
    "logistic": lambda x: 1 / (1 + np.exp(-x)), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "erf": special.erf, "cbrt": np.cbrt,
}
BINARY = {"atan2": np.arctan2, "pow": np.power}
ULP_BOUNDS = {"exp": 1.5, "expm1": 2.0, "log": 1.5, "log1p": 1.5, "tanh": 2.0, "logistic": 3.0,
              "sin": 1.0, "cos": 1.0, "tan": 1.0, "erf": 2.0, "cbrt": 1.0, "atan2": 1.0,
              "pow": 1.0}
EDGE = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754944e-38,
                 3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.5, 2.0, 88.72283, 88.72284, -103.9,
                 -87.3, 89.0, -110.0, 1e-7, -1e-7, 0.625, 9.0, 10.0, 3.92, 3.95, 4.0, 0.9,
                 1e30, -1e30, 1.5707964, 3.1415927, 1e6, 123456.78, 2.0 ** 19, 2.0 ** 19 + 1,
                 2.0 ** 24, 1e38, -17.5, 17.0, 1e-20, -0.999999, 2.0 ** -25],
                np.float32)


def _build(names: list[str], ty: ir.Type) -> CompiledKernels:
    """One kernel ``void f_<name>(T* x, [T* y,] T* out, i64 n)`` per function."""
    _init()
    m = ir.Module("math")
    import llvmlite.binding as llvm
    m.triple = llvm.get_default_triple()
    i64 = ir.IntType(64)
    for name in names:
        binary = name in BINARY
        fnty = ir.FunctionType(ir.VoidType(), [ty.as_pointer()] * (3 if binary else 2) + [i64])
        fn = ir.Function(m, fnty, name=f"f_{name}")
        b = ir.IRBuilder(fn.append_basic_block())
        entry, loop, done = b.block, fn.append_basic_block(), fn.append_basic_block()
        b.cbranch(b.icmp_signed(">", fn.args[-1], ir.Constant(i64, 0)), loop, done)
        b.position_at_end(loop)
        i = b.phi(i64)
        i.add_incoming(ir.Constant(i64, 0), entry)
        x = b.load(b.gep(fn.args[0], [i]))
        if binary:
            r = math_ir.emit_binary(b, name, x, b.load(b.gep(fn.args[1], [i])))
        else:
            r = math_ir.emit_unary(b, name, x)
        b.store(r, b.gep(fn.args[-2], [i]))
        nxt = b.add(i, ir.Constant(i64, 1))
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, fn.args[-1]), loop, done)
        b.position_at_end(done)
        b.ret_void()
    return CompiledKernels(m)


@pytest.fixture(scope="module")
def f32_kernels() -> CompiledKernels:
    return _build(list(UNARY) + list(BINARY), F32)


@pytest.fixture(scope="module")
def f64_kernels() -> CompiledKernels:
    return _build(list(UNARY) + list(BINARY), F64)


def call(k: CompiledKernels, name: str, *arrays: np.ndarray) -> np.ndarray:
    arrays = tuple(np.ascontiguousarray(a) for a in arrays)
    out = np.empty_like(arrays[0])
    addr = k.engine.get_function_address(f"f_{name}")
    fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (len(arrays) + 1)), ctypes.c_int64)(addr)
    fn(*[a.ctypes.data for a in arrays], out.ctypes.data, out.size)
    return out


def ulp_errors(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in float32 ulps of the rounded exact value; 0 for matching inf/NaN,
    inf for a NaN/inf mismatch."""
    with np.errstate(all="ignore"):
        rounded = exact.astype(np.float32)
        g = got.astype(np.float64)
        ulp = np.abs(np.spacing(np.where(np.isfinite(rounded), rounded, np.float32(1)))).astype(
            np.float64)
        err = np.abs(g - exact) / ulp
    special_ok = (np.isnan(g) & np.isnan(exact)) | (np.isinf(g) & (g == rounded))
    err = np.where(special_ok, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def unary_inputs(name: str, rng: np.random.Generator, n: int = 200_000) -> np.ndarray:
    bits = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ranges = {"exp": (-110, 90), "expm1": (-20, 90), "log": (0, 1e4), "log1p": (-1, 10),
              "tanh": (-12, 12), "logistic": (-110, 110), "sin": (-20, 20), "cos": (-20, 20),
              "tan": (-20, 20), "erf": (-5, 5), "cbrt": (-1e3, 1e3)}
    lo, hi = ranges[name]
    uniform = rng.uniform(lo, hi, n).astype(np.float32)
    tiny = (np.exp(rng.uniform(np.log(1e-12), 0, n)) * rng.choice([-1, 1], n)).astype(np.float32)
    return np.concatenate([uniform, tiny, bits, EDGE])


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_float32_accuracy(f32_kernels, name):
    x = unary_inputs(name, np.random.default_rng(1))
    got = call(f32_kernels, name, x)
    with np.errstate(all="ignore"):
        exact = UNARY[name](x.astype(np.float64))
    err = ulp_errors(got, exact)
    worst = int(np.argmax(err))
    assert err.max() <= ULP_BOUNDS[name], (name, x[worst], got[worst], exact[worst])


def test_atan2_float32_accuracy_and_special_cases(f32_kernels):
    rng = np.random.default_rng(2)
    y = np.concatenate([rng.uniform(-10, 10, 100_000), rng.standard_normal(100_000) * 1e-30])
    x = np.concatenate([rng.uniform(-10, 10, 100_000), rng.standard_normal(100_000) * 1e30])
    gy, gx = np.meshgrid(EDGE, EDGE)
    y = np.concatenate([y.astype(np.float32), gy.ravel()])
    x = np.concatenate([x.astype(np.float32), gx.ravel()])
    got = call(f32_kernels, "atan2", y, x)
    exact = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    assert ulp_errors(got, exact).max() <= ULP_BOUNDS["atan2"]
    signs = np.signbit(got) == np.signbit(exact)
    assert signs[~np.isnan(exact)].all()          # atan2(+-0, ...) keeps the sign


def test_pow_float32_accuracy_and_special_cases(f32_kernels):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(0, 10, 100_000), rng.uniform(-10, 10, 50_000),
                        rng.uniform(0.99, 1.01, 50_000)])
    y = np.concatenate([rng.uniform(-40, 40, 100_000), np.round(rng.uniform(-20, 20, 50_000)),
                        rng.uniform(-3000, 3000, 50_000)])
    special_values = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, np.inf,
                               -np.inf, np.nan, 1e-45, 2.0 ** 24 + 2, 1e38, -1e38, 0.999],
                              np.float32)
    gx, gy = np.meshgrid(special_values, special_values)
    x = np.concatenate([x.astype(np.float32), gx.ravel()])
    y = np.concatenate([y.astype(np.float32), gy.ravel()])
    got = call(f32_kernels, "pow", x, y)
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.float64), y.astype(np.float64))
    err = ulp_errors(got, exact)
    worst = int(np.argmax(err))
    assert err.max() <= ULP_BOUNDS["pow"], (x[worst], y[worst], got[worst], exact[worst])
    zero = exact == 0
    assert np.array_equal(np.signbit(got[zero]), np.signbit(exact[zero]))


def test_special_values_are_exact(f32_kernels):
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)
    for name in UNARY:
        got = call(f32_kernels, name, specials).astype(np.float64)
        with np.errstate(all="ignore"):
            want = UNARY[name](specials.astype(np.float64))
        same = (np.isnan(got) & np.isnan(want)) | ((got == want) &
                                                   (np.signbit(got) == np.signbit(want)))
        assert same.all(), (name, got, want)


def test_overflow_and_underflow_boundaries(f32_kernels):
    x = np.array([88.72283, 88.722839, -87.33654, -103.97, -103.28, -104.0, -150.0],
                 np.float32)
    got = call(f32_kernels, "exp", x)
    with np.errstate(over="ignore"):
        exact = np.exp(x.astype(np.float64)).astype(np.float32)
    assert np.array_equal(got, exact)           # incl. inf and denormals
    tiny = np.array([1e-45, 1e-40, 1.17549435e-38], np.float32)     # denormal inputs
    assert ulp_errors(call(f32_kernels, "log", tiny), np.log(tiny.astype(np.float64))).max() <= 1


@pytest.mark.parametrize("name", list(UNARY) + list(BINARY))
def test_float64_functions_match_numpy(f64_kernels, name):
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(-20, 20, 2000), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300]])
    if name == "log" or name == "cbrt":
        x = np.abs(x)
    args = [x] if name in UNARY else [np.abs(x) if name == "pow" else x, x[::-1].copy()]
    got = call(f64_kernels, name, *args)
    with np.errstate(all="ignore"):
        want = (UNARY.get(name) or BINARY[name])(*args)
    np.testing.assert_allclose(got, want, rtol=4e-16, atol=0)


def test_unknown_function_is_a_typed_error():
    from xlapy.errors import UnimplementedError
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(F32, [F32]), name="f")
    b = ir.IRBuilder(fn.append_basic_block())
    with pytest.raises(UnimplementedError, match="unary function 'gamma'"):
        math_ir.emit_unary(b, "gamma", fn.args[0])
    with pytest.raises(UnimplementedError, match="binary function 'hypot'"):
        math_ir.emit_binary(b, "hypot", fn.args[0], fn.args[0])
