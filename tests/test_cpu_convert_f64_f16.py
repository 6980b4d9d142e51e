"""``convert`` f64 -> f16 on the CPU backend rounds once, as NumPy and XLA do.

x86 has no double -> half instruction before AVX512-FP16, so LLVM calls
``__truncdfhf2``, which the backend defines itself (``backends/cpu/runtime_support.py``).
Rounding through ``float`` first would round twice: ``1 + 2^-11 + 2^-40`` would become
the tie ``1 + 2^-11`` and then ``1.0`` instead of ``1 + 2^-10``.
"""
import numpy as np

import xlapy

CONVERT = """HloModule convert_f64_f16
ENTRY e {
  p = f64[{n}] parameter(0)
  ROOT c = f16[{n}] convert(p)
}"""


def _values() -> np.ndarray:
    rng = np.random.default_rng(7)
    special = [1 + 2**-11 + 2**-40, 1 + 2**-11, 1 + 3 * 2**-11, 65519.99, 65520.0, -65504.5,
               2**-25, 2**-25 + 2**-60, 3 * 2**-26, 1.5 * 2**-24, 2**-14 * (1 - 2**-11),
               np.nan, -np.inf, np.inf, 1e-300, 5e-324, -0.0, 0.0, 1e300]
    near_halves = rng.integers(0, 0x7C00, 2000).astype(np.uint16).view(np.float16)
    jitter = 1 + rng.uniform(-2**-11, 2**-11, near_halves.size)
    wide = rng.standard_normal(2000) * 10.0 ** rng.integers(-9, 6, 2000)
    return np.concatenate([special, near_halves.astype(np.float64) * jitter, wide])


def test_f64_to_f16_rounds_once_like_numpy():
    x = _values()
    out = xlapy.run_hlo(CONVERT.replace("{n}", str(x.size)), [x], backend="cpu")
    got = np.asarray(out[0] if isinstance(out, (list, tuple)) else out)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])
