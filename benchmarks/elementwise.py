"""W1 ``sum(x + y*z)`` at N = 1e6, 1e7, 1e8 and W2 ``mean(3*x**2 + y)`` at N = 1e7 (float32).

Both are one fused loop with a reduction: memory bound at the larger sizes (12 bytes read per
element for W1), so the C loop's time is close to what the memory system allows.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/elementwise.py
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any, Callable, Iterator, Sequence

import numpy as np

import harness
from c_loops import Pinned, load

SIZES = (10**6, 10**7, 10**8)
W2_SIZE = 10**7
SMOKE_SIZE = 1000
CHUNK = 1 << 22


def w1(xp: Any, x: Any, y: Any, z: Any) -> Any:
    return xp.sum(x + y * z)


def w2(xp: Any, x: Any, y: Any) -> Any:
    return xp.mean(3 * x ** 2 + y)


def reference(fn: Callable[..., Any], args: Sequence[np.ndarray], mean: bool) -> np.ndarray:
    """``fn`` in float64, in chunks (the 1e8 case would need 2.4 GB of float64 copies)."""
    n = args[0].size
    total = 0.0
    for s in range(0, n, CHUNK):
        part = [a[s:s + CHUNK].astype(np.float64) for a in args]
        total += float(fn(np, *part)) * (part[0].size if mean else 1)
    return np.float64(total / n if mean else total)


def c_w1(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> Callable[[], Any]:
    f = load("elementwise").w1_sum_xyz
    f.restype = ctypes.c_float
    f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64]
    inputs = Pinned(x, y, z)
    return lambda: np.float32(f(*inputs.ptrs, x.size))


def c_w2(x: np.ndarray, y: np.ndarray) -> Callable[[], Any]:
    f = load("elementwise").w2_mean_3x2_y
    f.restype = ctypes.c_float
    f.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64]
    inputs = Pinned(x, y)
    return lambda: np.float32(f(*inputs.ptrs, x.size))


def make_case(name: str, fn: Callable[..., Any], c_build: Callable[..., Callable[[], Any]],
              n: int, nargs: int, mean: bool, s: harness.Settings) -> harness.Case:
    rng = np.random.default_rng(n)
    args = [rng.random(n, dtype=np.float32) for _ in range(nargs)]
    impls = harness.peer_impls(fn, args, s, lambda: c_build(*args))
    # f32 results of a good reduction are within ~1e-6 relative; rtol 1e-4 still catches a
    # sequential f32 accumulator, which loses whole digits at 1e7+ elements.
    return harness.Case(name, f"N={n:.0e}".replace("e+0", "e"), reference(fn, args, mean),
                        impls, rtol=1e-4, atol=1e-6)


def build_cases(s: harness.Settings) -> Iterator[harness.Case]:
    for n in ((SMOKE_SIZE,) if s.smoke else SIZES):
        yield make_case("W1 sum(x + y*z)", w1, c_w1, n, 3, False, s)
    yield make_case("W2 mean(3*x**2 + y)", w2, c_w2, SMOKE_SIZE if s.smoke else W2_SIZE,
                    2, True, s)


def main(argv: Sequence[str] | None = None) -> int:
    return harness.main(argv, __doc__.splitlines()[0], build_cases)


if __name__ == "__main__":
    sys.exit(main())
