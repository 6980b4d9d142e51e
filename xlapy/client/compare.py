"""Result comparison in the manner of XLA's ``literal_comparison::Near``.

Floats match where ``|a-b| <= abs_error`` or ``|a-b| <= rel_error*|b|``; NaN
matches NaN and infinities must match exactly; integers and bools must be equal.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Mismatch:
    index: int            # output number
    message: str


def _as_comparable(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind in "fc" or a.dtype.kind == "V":
        return a
    if a.dtype.kind not in "biu" and a.dtype.itemsize <= 2:   # ml_dtypes floats
        return a.astype(np.float32)
    return a


def compare_arrays(actual, expected, rtol: float, atol: float) -> str | None:
    """None if ``actual`` is close enough to ``expected``, else a description of the worst element."""
    a, e = np.asarray(actual), np.asarray(expected)
    if a.shape != e.shape:
        return f"shape {a.shape} != expected {e.shape}"
    if a.size == 0:
        return None
    float_like = a.dtype.kind in "fc" or e.dtype.kind in "fc" or (
        a.dtype.kind not in "biu" and a.dtype != np.bool_)
    if not float_like:
        bad = a != e
        if not bad.any():
            return None
        i = np.unravel_index(np.argmax(bad), a.shape)
        return f"{int(bad.sum())} of {a.size} elements differ; first at {i}: {a[i]!r} != {e[i]!r}"
    ac = a.astype(np.complex128 if a.dtype.kind == "c" or e.dtype.kind == "c" else np.float64)
    ec = e.astype(ac.dtype)
    nan_a, nan_e = np.isnan(ac), np.isnan(ec)
    inf_mismatch = (np.isinf(ac) | np.isinf(ec)) & ~(nan_a | nan_e) & (ac != ec)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(ac - ec)
        ok = (diff <= atol) | (diff <= rtol * np.abs(ec)) | (ac == ec)
    ok = np.where(nan_a | nan_e, nan_a & nan_e, ok) & ~inf_mismatch
    if ok.all():
        return None
    bad = ~ok
    with np.errstate(invalid="ignore"):
        score = np.where(bad, np.nan_to_num(diff, nan=np.inf, posinf=np.inf), -1)
    i = np.unravel_index(np.argmax(score), a.shape)
    return (f"{int(bad.sum())} of {a.size} elements differ beyond rtol={rtol}, atol={atol}; "
            f"worst at {tuple(int(x) for x in i)}: {ac[i]!r} != expected {ec[i]!r}")


def compare_outputs(actual: list, expected: list, rtol: float, atol: float) -> list[Mismatch]:
    """Compare two output lists; returns one Mismatch per differing output."""
    if len(actual) != len(expected):
        return [Mismatch(-1, f"{len(actual)} outputs != expected {len(expected)}")]
    out = []
    for i, (a, e) in enumerate(zip(actual, expected)):
        msg = compare_arrays(a, e, rtol, atol)
        if msg:
            out.append(Mismatch(i, f"output {i}: {msg}"))
    return out
