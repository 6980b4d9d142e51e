"""Element types and input values for the wide HLO generator.

Type tables (NumPy dtypes, bit widths, unit roundoffs, largest finite values), error
bounds of one operation or a reassociated sum, HLO shape and literal text, and random
inputs with edge values mixed in (NaN, +-Inf, -0.0, denormals, extremes, out-of-range
indices).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

INF = math.inf

FLOATS = ("f32", "f64", "f16", "bf16")
SINTS = ("s8", "s16", "s32", "s64")
UINTS = ("u8", "u16", "u32", "u64")
INTS = SINTS + UINTS
ALL_TYPES = FLOATS + INTS + ("pred",)
NP_DTYPE = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
            "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16),
            "s8": np.dtype(np.int8), "s16": np.dtype(np.int16), "s32": np.dtype(np.int32),
            "s64": np.dtype(np.int64), "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16),
            "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64), "pred": np.dtype(np.bool_)}
BITS = {"f32": 32, "f64": 64, "f16": 16, "bf16": 16, "s8": 8, "s16": 16, "s32": 32, "s64": 64,
        "u8": 8, "u16": 16, "u32": 32, "u64": 64, "pred": 8}
EPS = {"f32": 2.0 ** -23, "f64": 2.0 ** -52, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}
FMAX = {t: float(ml_dtypes.finfo(NP_DTYPE[t]).max) for t in FLOATS}
EXP_BITS = {"f32": 8, "f64": 11, "f16": 5, "bf16": 8}
MANT_BITS = {"f32": 23, "f64": 52, "f16": 10, "bf16": 7}
TYPE_WEIGHTS = {"f32": 30, "f64": 6, "f16": 6, "bf16": 6, "s8": 4, "s16": 2, "s32": 14,
                "s64": 4, "u8": 4, "u16": 2, "u32": 4, "u64": 2, "pred": 4}


def is_float(t: str) -> bool:
    return t in FLOATS


def is_int(t: str) -> bool:
    return t in INTS


def is_signed(t: str) -> bool:
    return t in SINTS


def imax(t: str) -> int:
    return int(np.iinfo(NP_DTYPE[t]).max)


def imin(t: str) -> int:
    return int(np.iinfo(NP_DTYPE[t]).min)


def type_max(t: str) -> float:
    if is_float(t):
        return FMAX[t]
    if t == "pred":
        return 1.0
    return float(max(imax(t), -imin(t)))


def acc_eps(t: str) -> float:
    """Unit roundoff of the accumulation type of float reductions/dots of ``t``."""
    return EPS["f64"] if t == "f64" else EPS["f32"]


def op_err(t: str) -> float:
    """Error of one transcendental function (a few ulps; narrow floats round once more)."""
    if t == "f64":
        return 8 * EPS["f64"]
    if t == "f32":
        return 8 * EPS["f32"]
    return EPS[t] + 8 * EPS["f32"]


def sum_err(t: str, n: int) -> float:
    """Error of a reassociated sum of ``n`` terms, normwise."""
    e = 4 * math.sqrt(max(n, 1)) * acc_eps(t)
    if t in ("f16", "bf16"):
        e += EPS[t]
    return e


def shape_text(t: str, dims, layout=None) -> str:
    s = f"{t}[{','.join(map(str, dims))}]"
    if layout is not None:
        s += "{" + ",".join(map(str, layout)) + "}"
    return s


def fmt_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "-0" if math.copysign(1, x) < 0 else "0"
    return repr(float(x))


def literal_text(t: str, value) -> str:
    """HLO literal text of a scalar or array value (NumPy) of type ``t``."""
    a = np.asarray(value)

    def scalar(v) -> str:
        if t == "pred":
            return "true" if bool(v) else "false"
        if is_float(t):
            return fmt_float(float(v))
        return str(int(v))

    def rec(x) -> str:
        if x.ndim == 0:
            return scalar(x)
        return "{" + ", ".join(rec(x[i]) for i in range(x.shape[0])) + "}"
    return rec(a)


# ----------------------------------------------------------------------------------------------
# inputs

def edge_values(t: str, wild: bool) -> list:
    if is_float(t):
        fi = ml_dtypes.finfo(NP_DTYPE[t])
        vals = [math.nan, math.inf, -math.inf, -0.0, 0.0, float(fi.smallest_subnormal),
                -float(fi.smallest_subnormal), float(fi.smallest_normal), 1.0, -1.0, 0.5,
                -2.0, 3.0]
        if wild:
            vals += [float(fi.max), -float(fi.max), float(fi.max) / 2, float(fi.eps),
                     -float(fi.smallest_normal) * 3, 3 * float(fi.smallest_subnormal),
                     1e4, -6e4]
        return vals
    if t == "pred":
        return [True, False]
    lo, hi = imin(t), imax(t)
    if wild:
        return [lo, hi, 0, 1, lo + 1, hi - 1] + ([-1, -2] if lo < 0 else [2, hi // 2 + 1])
    return [0, 1] + ([-1] if lo < 0 else [2])


def random_values(rng: np.random.Generator, t: str, dims, profile: str) -> np.ndarray:
    """Inputs of type ``t``: ``tame`` (|x| <= 4 for floats, small ints), ``wild`` (any
    finite magnitude, integer extremes), ``index`` (small, some out of range), both
    with edge values mixed in at a random rate."""
    dims = tuple(dims)
    n = int(np.prod(dims)) if dims else 1
    dt = NP_DTYPE[t]
    if t == "pred":
        p = rng.choice([0.1, 0.5, 0.9])
        return rng.random(dims) < p
    wild = profile == "wild"
    p_edge = float(rng.choice([0.0, 0.02, 0.1, 0.3])) if n > 1 else 0.3
    if is_float(t):
        if wild:
            fi = ml_dtypes.finfo(dt)
            lo_e, hi_e = math.log2(float(fi.smallest_subnormal)), math.log2(float(fi.max))
            mag = np.exp2(rng.uniform(max(lo_e, -60), min(hi_e, 60), n))
            base = np.where(rng.random(n) < 0.5, -mag, mag)
        else:
            base = rng.uniform(-4, 4, n)
            if rng.random() < 0.4:                          # ties for sort/max/select
                base = np.round(base * 2) / 2
        edges = np.array(edge_values(t, wild), np.float64)
        mask = rng.random(n) < p_edge
        base[mask] = rng.choice(edges, int(mask.sum()))
        if not wild:
            base = np.where(np.isfinite(base), np.clip(base, -4, 4), base)
        return base.astype(dt).reshape(dims)
    if profile == "index":
        base = rng.integers(-3, 12, n)
        if not is_signed(t):
            base = np.abs(base)
        base = np.clip(base, imin(t), imax(t))
        return base.astype(dt).reshape(dims)
    if wild:
        base = rng.integers(imin(t), imax(t), n, dtype=dt, endpoint=True)
    else:
        lo = -8 if is_signed(t) else 0
        base = rng.integers(lo, 9 if is_signed(t) else 17, n).astype(dt)
    edges = edge_values(t, wild)
    mask = rng.random(n) < p_edge
    if mask.any():
        base[mask] = np.array(rng.choice(np.array(edges, dtype=object), int(mask.sum())),
                              dtype=object).astype(dt)
    return base.astype(dt).reshape(dims)


def profile_mag(t: str, profile: str) -> float:
    if t == "pred":
        return 1.0
    if is_float(t):
        return 4.0 if profile == "tame" else INF
    if profile == "index":
        return 16.0
    if profile == "tame":
        return 16.0
    return type_max(t)
