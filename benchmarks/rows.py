"""W3 row softmax and row layernorm on a [4096, 1024] float32 matrix.

Each is a row reduction followed by an elementwise pass that uses the reduced values: a
fused implementation reads every row once from memory (it then stays in L1) and writes the
output once; unfused, the intermediates make several more trips through memory.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/rows.py
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any, Callable, Iterator, Sequence

import numpy as np

import harness
from c_loops import Pinned, load, ptr

SHAPE = (4096, 1024)
SMOKE_SHAPE = (8, 16)
EPS = 1e-5


def softmax(xp: Any, x: Any) -> Any:
    m = xp.max(x, axis=-1, keepdims=True)
    e = xp.exp(x - m)
    return e / xp.sum(e, axis=-1, keepdims=True)


def layernorm(xp: Any, x: Any, gamma: Any, beta: Any) -> Any:
    mean = xp.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = xp.mean(d * d, axis=-1, keepdims=True)
    return d / xp.sqrt(var + EPS) * gamma + beta


def c_softmax(x: np.ndarray) -> Callable[[], Any]:
    f = load("rows").softmax_rows
    f.restype = None
    f.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 2
    rows, cols = x.shape
    inputs = Pinned(x)

    def call() -> np.ndarray:
        out = np.empty_like(x)           # a fresh output per call, as every peer returns
        f(*inputs.ptrs, ptr(out), rows, cols)
        return out
    return call


def c_layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> Callable[[], Any]:
    f = load("rows").layernorm_rows
    f.restype = None
    f.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 2 + [ctypes.c_float]
    rows, cols = x.shape
    inputs = Pinned(x, gamma, beta)

    def call() -> np.ndarray:
        out = np.empty_like(x)
        f(*inputs.ptrs, ptr(out), rows, cols, EPS)
        return out
    return call


def make_case(name: str, fn: Callable[..., Any], c_build: Callable[..., Callable[[], Any]],
              args: list[np.ndarray], s: harness.Settings) -> harness.Case:
    impls = harness.peer_impls(fn, args, s, lambda: c_build(*args))
    ref = fn(np, *[a.astype(np.float64) for a in args])
    size = "x".join(map(str, args[0].shape))
    return harness.Case(name, size, ref, impls, rtol=1e-4, atol=1e-6)


def build_cases(s: harness.Settings) -> Iterator[harness.Case]:
    shape = SMOKE_SHAPE if s.smoke else SHAPE
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape, dtype=np.float32) * 3).astype(np.float32)
    yield make_case("W3 row softmax", softmax, c_softmax, [x], s)
    gamma = (1 + 0.1 * rng.standard_normal(shape[1])).astype(np.float32)
    beta = (0.1 * rng.standard_normal(shape[1])).astype(np.float32)
    yield make_case("W3 row layernorm", layernorm, c_layernorm, [x, gamma, beta], s)


def main(argv: Sequence[str] | None = None) -> int:
    return harness.main(argv, __doc__.splitlines()[0], build_cases)


if __name__ == "__main__":
    sys.exit(main())
