"""The CPU elemental emitter against the real XLA:CPU (through jaxlib), bit for bit.

Needs jax and jaxlib (the ``test`` extra installs them). Each group of ops is compiled once by XLA
(a tuple of results) and op by op by the elemental emitter (tests/cpu_harness.py); the
inputs are the edge-rich values of test_cpu_elemental.py. XLA:CPU contracts
multiply-add into FMA, so complex multiply/divide/abs are compared to a few ulps and the
transcendental functions (whose approximations differ) to a relative tolerance.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.peers

from cpu_harness import run_native, same_values  # noqa: E402
from real_xla import run_on_xla  # noqa: E402
from test_cpu_elemental import CONVERT_TYPES, DTYPES, FLOATS, INTS, N, values  # noqa: E402
from xlapy.hlo import parse_module  # noqa: E402


def text(params: list[str], roots: list[tuple[str, str]]) -> str:
    """A module computing each ``(shape, expression)`` of ``roots`` (a tuple if several)."""
    lines = [f"  p{i} = {s} parameter({i})" for i, s in enumerate(params)]
    names = []
    for k, (shape, expr) in enumerate(roots):
        lines.append(f"  r{k} = {shape} {expr}")
        names.append(f"r{k}")
    if len(roots) > 1:
        shapes = ", ".join(s for s, _ in roots)
        lines.append(f"  ROOT t = ({shapes}) tuple({', '.join(names)})")
    else:
        lines[-1] = "  ROOT" + lines[-1][1:]
    return "HloModule t\n\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


def compare_group(params: list[str], roots: list[tuple[str, str]], args: list[np.ndarray],
                  rtol: float = 0.0, atol: float = 0.0) -> None:
    """XLA's results (one compile) against the native kernel of each root."""
    args = [np.asarray(a) for a in args]
    want = run_on_xla(text(params, roots), args)
    for (shape, expr), w in zip(roots, want):
        got = run_native(parse_module(text(params, [(shape, expr)])), args)
        if rtol:
            g, x = got.astype(np.complex128), w.astype(np.complex128)
            nan = np.isnan(g) & np.isnan(x)
            close = np.isclose(g, x, rtol=rtol, atol=atol) | nan | (g == x)
            assert close.all(), (expr, args[0][~close][:3], got[~close][:3], w[~close][:3])
        else:
            assert same_values(got, w), (expr, got, w)


@pytest.mark.parametrize("t", INTS)
def test_integer_ops_match_xla(t):
    x, y = values(t, seed=1), values(t, seed=2)
    y[:6] = np.array([0, 0, 1, 2, 3, 4], dtype=y.dtype)
    if t[0] == "s":
        x[:2] = np.iinfo(x.dtype).min
        y[1] = -1
    bits = np.dtype(DTYPES[t]).itemsize * 8
    shift = (np.arange(N) % (bits + 3)).astype(y.dtype)
    shape = f"{t}[{N}]"
    roots = [(shape, f"{op}(p0, p1)") for op in
             ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and",
              "or", "xor", "power"]]
    roots += [(shape, f"{op}(p0, p2)") for op in
              ["shift-left", "shift-right-arithmetic", "shift-right-logical"]]
    unary = ["negate", "not", "popcnt", "count-leading-zeros"]
    unary += ["abs", "sign"] if t[0] == "s" else []
    roots += [(shape, f"{op}(p0)") for op in unary]
    roots += [(f"pred[{N}]", f"compare(p0, p1), direction={d}") for d in ["LT", "GE", "NE"]]
    compare_group([shape] * 3, roots, [x, y, shift])


@pytest.mark.parametrize("t", FLOATS)
def test_float_ops_match_xla(t):
    x, y, z = values(t, seed=3), values(t, seed=4), values(t, seed=5)
    y[::3] = x[::3]
    shape = f"{t}[{N}]"
    roots = [(shape, f"{op}(p0, p1)") for op in
             ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum"]]
    roots += [(shape, f"{op}(p0)") for op in
              ["abs", "negate", "sign", "floor", "ceil", "round-nearest-afz",
               "round-nearest-even", "sqrt"]]
    roots += [(f"pred[{N}]", "is-finite(p0)"), (shape, "clamp(p0, p1, p2)")]
    roots += [(f"pred[{N}]", f"compare(p0, p1), direction={d}, type={c}")
              for d in ["EQ", "NE", "LT", "GE"] for c in ["FLOAT", "TOTALORDER"]]
    roots += [(shape, "reduce-precision(p0), exponent_bits=4, mantissa_bits=2"),
              (shape, "reduce-precision(p0), exponent_bits=2, mantissa_bits=0")]
    compare_group([shape] * 3, roots, [x, y, z])


@pytest.mark.parametrize("frm", [t for t in CONVERT_TYPES if t not in ("s4", "u4")])
def test_converts_match_xla(frm):
    x = values(frm, seed=20)
    if frm in FLOATS:
        extra = np.array([3e9, -3e9, 2.0 ** 31, -2.0 ** 31 - 1, 2.0 ** 63, -2.0 ** 64, 300.5,
                          -129.5, 65535.7, 2.0 ** 64, 1e20, 4294967295.0], np.float64)
        with np.errstate(over="ignore"):
            x[-len(extra):] = extra.astype(x.dtype)
    targets = [t for t in CONVERT_TYPES if t not in ("s4", "u4")] + ["c64", "c128"]
    compare_group([f"{frm}[{N}]"], [(f"{to}[{N}]", "convert(p0)") for to in targets], [x])


def test_complex_ops_match_xla():
    a, b = values("c64", seed=21), values("c64", seed=22)
    re, im = values("f32", seed=1), values("f32", seed=2)
    shape = f"c64[{N}]"
    compare_group([shape] * 2 + [f"f32[{N}]"] * 2,
                  [(shape, "add(p0, p1)"), (shape, "subtract(p0, p1)"), (shape, "negate(p0)"),
                   (f"f32[{N}]", "real(p0)"), (f"f32[{N}]", "imag(p0)"),
                   (shape, "complex(p2, p3)"), (f"pred[{N}]", "compare(p0, p1), direction=EQ")],
                  [a, b, re, im])
    z = np.array([0, 1, np.inf, -np.inf, np.nan, 2.5, -0.0], np.float32)
    grid = np.empty(z.size ** 2, np.complex64)
    grid.real, grid.imag = np.repeat(z, z.size), np.tile(z, z.size)
    num, den = np.repeat(grid, grid.size), np.tile(grid, grid.size)
    n = num.size
    compare_group([f"c64[{n}]"] * 2, [(f"c64[{n}]", "divide(p0, p1)"),
                                      (f"c64[{n}]", "multiply(p0, p1)")], [num, den], rtol=1e-6)
    compare_group([shape] * 2, [(shape, "divide(p0, p1)"), (shape, "multiply(p0, p1)"),
                                (f"f32[{N}]", "abs(p0)")], [a, b], rtol=3e-7)


@pytest.mark.parametrize("t", ["f32", "f64", "f16", "bf16"])
def test_transcendental_functions_close_to_xla(t):
    x, y = values(t, seed=9), values(t, seed=10)
    shape = f"{t}[{N}]"
    ops = ["exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic",
           "sine", "cosine", "tan", "erf", "cbrt", "rsqrt"]
    roots = [(shape, f"{op}(p0)") for op in ops]
    roots += [(shape, "power(p0, p1)"), (shape, "atan2(p0, p1)")]
    tol = {"f32": 1e-5, "f64": 1e-13, "f16": 2e-3, "bf16": 1.6e-2}[t]
    # XLA computes f16 logistic as 1 / (1 + exp(-x)) in f16, which underflows to 0
    # below x = -11; this emitter keeps the small results.
    compare_group([shape] * 2, roots, [x, y], rtol=tol,
                  atol=2e-5 if t in ("f16", "bf16") else 0.0)
