"""Comparison rules: how a side's output must match the oracle's.

Exact outputs (``err`` 0) must have the oracle's bits, NaN payloads excepted and the
sign of zero included; approximate ones must be within ``tol_scale * err`` relative to
the output's largest finite magnitude, with NaN positions and infinities equal.
Integers are compared exactly.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from .module import OutSpec
from .types_and_values import NP_DTYPE, is_float


def _float64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def compare_output(got, want, spec: OutSpec, tol_scale: float = 10.0) -> str | None:
    """None if ``got`` matches ``want`` under ``spec``; else a description."""
    with np.errstate(invalid="ignore", over="ignore"):
        return _compare_output(got, want, spec, tol_scale)


def _compare_output(got, want, spec: OutSpec, tol_scale: float) -> str | None:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape} {got.dtype} != expected {want.shape} {want.dtype}"
    if got.size == 0:
        return None
    if not is_float(spec.ty) or want.dtype.kind in "biu":
        bad = got != want
        if not bad.any():
            return None
        i = np.unravel_index(np.argmax(bad), got.shape)
        return (f"{int(bad.sum())}/{got.size} differ, first at {tuple(map(int, i))}: "
                f"{got[i]!r} != {want[i]!r}")
    g, w = _float64(got), _float64(want)
    gn, wn = np.isnan(g), np.isnan(w)
    if (gn != wn).any():
        i = np.unravel_index(np.argmax(gn != wn), g.shape)
        return (f"NaN positions differ ({int((gn != wn).sum())}/{g.size}), first at "
                f"{tuple(map(int, i))}: {g[i]!r} != {w[i]!r}")
    m = ~wn
    if spec.err == 0:
        ub = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
        gb, wb = got.view(ub), want.view(ub)
        bad = (gb != wb) & m
        if not bad.any():
            return None
        i = np.unravel_index(np.argmax(bad), g.shape)
        return (f"{int(bad.sum())}/{g.size} differ (exact op), first at {tuple(map(int, i))}: "
                f"{g[i]!r} != expected {w[i]!r}")
    ginf, winf = np.isinf(g) & m, np.isinf(w) & m
    badinf = (ginf | winf) & (g != w)
    if badinf.any():
        i = np.unravel_index(np.argmax(badinf), g.shape)
        return f"infinities differ at {tuple(map(int, i))}: {g[i]!r} != expected {w[i]!r}"
    fin = m & ~winf
    if not fin.any():
        return None
    scale = float(np.abs(w[fin]).max())
    tol = tol_scale * spec.err
    diff = np.abs(g - w)
    bad = fin & (diff > tol * (np.abs(w) + scale) + 1e-300)
    # tiny absolute differences in the denormal range of the output type
    fi = ml_dtypes.finfo(NP_DTYPE[spec.ty]) if spec.ty in NP_DTYPE else None
    if fi is not None:
        bad &= diff > 4 * float(fi.smallest_normal)
    if not bad.any():
        return None
    i = np.unravel_index(np.argmax(np.where(bad, diff, -1)), g.shape)
    return (f"{int(bad.sum())}/{g.size} beyond tol {tol:.3g} (scale {scale:.3g}), worst at "
            f"{tuple(map(int, i))}: {g[i]!r} != expected {w[i]!r}")


def same_bits(a, b) -> bool:
    """The same dtype, shape and bits; NaN payloads are not compared, NaN positions are."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or a.dtype == NP_DTYPE["bf16"]:
        nan_a = np.isnan(a.astype(np.float64))
        if (nan_a != np.isnan(b.astype(np.float64))).any():
            return False
        a, b = np.where(nan_a, 0, a).astype(a.dtype), np.where(nan_a, 0, b).astype(b.dtype)
    return a.tobytes() == b.tobytes()
