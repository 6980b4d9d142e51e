"""NumPy references for the convolution / window tests (float64 loops written from XLA's
operation semantics) and small helpers shared by ``test_lax_nn.py`` and ``test_nn.py``."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import xlapy

RNG = np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def fixed_rng():
    """Each test draws the same data whatever ran before it in its worker (autouse in the
    test modules that import it)."""
    RNG.bit_generator.state = np.random.default_rng(1234).bit_generator.state


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def distinct(*shape):
    """Values at least 0.1 apart, so window maxima are unique and stable under small steps."""
    n = int(np.prod(shape))
    return (RNG.permutation(n).reshape(shape) * 0.1 - n * 0.05).astype(np.float32)


# ------------------------------------------------------------------- NumPy references
def _dilate_pad(x, first_axis, dilation, pads):
    """Insert ``d - 1`` zeros between neighbours, then pad with zeros (negative trims)."""
    for i, (d, (lo, hi)) in enumerate(zip(dilation, pads)):
        ax = first_axis + i
        n = x.shape[ax]
        shape = list(x.shape)
        shape[ax] = (n - 1) * d + 1 if n else 0
        y = np.zeros(shape, x.dtype)
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(None, None, d)
        y[tuple(idx)] = x
        y = np.pad(y, [(max(lo, 0), max(hi, 0)) if j == ax else (0, 0) for j in range(x.ndim)])
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(max(-lo, 0), y.shape[ax] - max(-hi, 0))
        x = y[tuple(idx)]
    return x


def np_conv(x, w, strides, pads, lhs_dil=None, rhs_dil=None, fgc=1, bgc=1):
    """ConvGeneralDilated on canonical layouts: x (N, C, S...), w (O, I, K...)."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    nsp = x.ndim - 2
    lhs_dil, rhs_dil = lhs_dil or (1,) * nsp, rhs_dil or (1,) * nsp
    xp = _dilate_pad(x, 2, lhs_dil, pads)
    ks = w.shape[2:]
    eff = [(k - 1) * d + 1 for k, d in zip(ks, rhs_dil)]
    out_sp = [(p - e) // s + 1 if p >= e else 0 for p, e, s in zip(xp.shape[2:], eff, strides)]
    n, i_per = x.shape[0] // bgc, w.shape[1]
    o_per = w.shape[0] // (fgc * bgc)
    out = np.zeros((n, w.shape[0], *out_sp))
    for pos in itertools.product(*map(range, out_sp)):
        for k in itertools.product(*map(range, ks)):
            idx = tuple(p * s + kk * d for p, s, kk, d in zip(pos, strides, k, rhs_dil))
            patch = xp[(slice(None), slice(None)) + idx]
            wk = w[(slice(None), slice(None)) + k]
            for b, g in itertools.product(range(bgc), range(fgc)):
                o = slice((b * fgc + g) * o_per, (b * fgc + g + 1) * o_per)
                out[(slice(None), o) + pos] += (patch[b * n:(b + 1) * n, g * i_per:(g + 1) * i_per]
                                                @ wk[o].T)
    return out


def identity(kind):
    return {"sum": 0.0, "max": -np.inf, "min": np.inf}[kind]


def out_size(n, w, s, lo, hi, b=1, d=1):
    """XLA's window arithmetic: window positions along one dimension."""
    padded = lo + ((n - 1) * b + 1 if n else 0) + hi
    span = (w - 1) * d + 1
    return (padded - span) // s + 1 if padded >= span else 0


def window_slots(shape, wd, ws, pads, bd, wdil):
    """Yield (output index, input indices of the window in window order, output shape)."""
    out = tuple(out_size(n, w, s, lo, hi, b, d)
                for n, w, s, (lo, hi), b, d in zip(shape, wd, ws, pads, bd, wdil))
    for o in itertools.product(*map(range, out)):
        slots = []
        for k in itertools.product(*map(range, wd)):
            p = [oi * s + ki * d - lo for oi, s, ki, d, (lo, _) in zip(o, ws, k, wdil, pads)]
            if all(pi >= 0 and pi % b == 0 and pi // b < n for pi, b, n in zip(p, bd, shape)):
                slots.append(tuple(pi // b for pi, b in zip(p, bd)))
        yield o, slots, out


def np_reduce_window(x, kind, wd, ws, pads, bd=None, wdil=None):
    bd, wdil = bd or (1,) * x.ndim, wdil or (1,) * x.ndim
    fn = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    res = {}
    out_shape = None
    for o, slots, out_shape in window_slots(x.shape, wd, ws, pads, bd, wdil):
        res[o] = fn([x[s] for s in slots]) if slots else identity(kind)
    out = np.zeros(out_shape if out_shape is not None else (0,) * x.ndim)
    for o, v in res.items():
        out[o] = v
    return out


def np_chooser_grad(x, ct, kind, wd, ws, pads, bd=None, wdil=None):
    """``ct`` of each window added at its first max (min) element: select-and-scatter."""
    bd, wdil = bd or (1,) * x.ndim, wdil or (1,) * x.ndim
    g = np.zeros(x.shape)
    better = np.greater if kind == "max" else np.less
    for o, slots, _ in window_slots(x.shape, wd, ws, pads, bd, wdil):
        if slots:
            best = slots[0]
            for s in slots[1:]:
                if better(x[s], x[best]):
                    best = s
            g[best] += ct[o]
    return g


def fd_directional(f, x, d, eps=1e-4):
    """Central difference of a float64 reference ``f`` along ``d``."""
    x, d = np.asarray(x, np.float64), np.asarray(d, np.float64)
    return (f(x + eps * d) - f(x - eps * d)) / (2 * eps)


def both(fn, *args):
    """``fn`` eagerly and under jit; asserts they agree and returns the eager result."""
    eager = np.asarray(fn(*args))
    jitted = np.asarray(xlapy.jit(fn)(*args))
    np.testing.assert_allclose(jitted, eager, rtol=1e-6, atol=1e-6)
    return eager
