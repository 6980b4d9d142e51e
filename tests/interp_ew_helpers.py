"""Helpers for the elementwise interpreter tests: run one handler, compare bit for bit."""
from __future__ import annotations

import warnings

import numpy as np

from xlapy.backends.interpreter import HANDLERS, Evaluator
from xlapy.hlo.ir import HloInstruction
from xlapy.hlo.shape import Shape

NAN, INF = float("nan"), float("inf")


def run(opcode: str, out_type: str, *operands, **attrs):
    """Evaluate one elementwise instruction on NumPy operand values."""
    values = [np.asarray(o) for o in operands]
    shape = Shape.array(out_type, np.broadcast_shapes(*(v.shape for v in values)))
    instr = HloInstruction(opcode, shape, [], attrs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # no NumPy warning may leak
        return HANDLERS[opcode](Evaluator(), instr, values)


def check(got, expected, dtype):
    """Same dtype and bitwise-equal values; NaNs of any sign or payload are equal (-0 != +0)."""
    expected = np.asarray(expected, dtype=dtype)
    got = np.asarray(got)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if got.dtype.kind in "fcV" or got.dtype.name in ("bfloat16", "float16"):
        gnan = np.isnan(got.astype(np.complex128) if got.dtype.kind == "c" else
                        got.astype(np.float64))
        enan = np.isnan(expected.astype(np.complex128) if got.dtype.kind == "c" else
                        expected.astype(np.float64))
        assert (gnan == enan).all(), f"NaN positions differ: got {got!r}, expected {expected!r}"
        got, expected = np.where(gnan, 0, got).astype(dtype), np.where(enan, 0, expected).astype(dtype)
    assert got.tobytes() == expected.tobytes(), f"got {got!r}, expected {expected!r}"


def a(values, dtype):
    return np.array(values, dtype=dtype)
