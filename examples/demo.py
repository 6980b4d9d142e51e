"""xlapy demo: read XLA's HLO text for ``sum(x + y*z)``, optimize it into one fusion, run both.

Run with ``make demo``.
"""
from __future__ import annotations

import time

import numpy as np

import xlapy
from xlapy.client import optimize_with_report
from xlapy.hlo import parse_module
from xlapy.passes import format_pass_timings

HLO = """
HloModule jit_model_fn, entry_computation_layout={(f32[1000]{0}, f32[1000]{0}, f32[1000]{0})->f32[]}

region_0.1 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT sum = f32[] add(a, b)
}

ENTRY main {
  x = f32[1000]{0} parameter(0)
  y = f32[1000]{0} parameter(1)
  z = f32[1000]{0} parameter(2)
  yz = f32[1000]{0} multiply(y, z)
  xyz = f32[1000]{0} add(x, yz)
  zero = f32[] constant(0)
  ROOT total = f32[] reduce(xyz, zero), dimensions={0}, to_apply=region_0.1
}
"""


def main() -> None:
    module = parse_module(HLO)
    print("Parsed module, printed back in XLA's long form:\n")
    print(module.to_text())
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(1000, dtype=np.float32) for _ in range(3))
    t0 = time.perf_counter()
    (result,) = xlapy.run_hlo(module, [x, y, z], backend="interpreter")
    dt = time.perf_counter() - t0
    expected = np.sum(x + y * z, dtype=np.float32)
    print(f"interpreter: sum(x + y*z) = {float(result):.6f} in {dt * 1e3:.2f} ms "
          f"(NumPy: {float(expected):.6f})")
    assert np.allclose(result, expected, rtol=1e-5, atol=1e-4)

    report = optimize_with_report(module)
    print("\nAfter the CPU pass pipeline (one fusion; no intermediate reaches memory):\n")
    print(report.module.to_text())
    print(format_pass_timings(report.pipeline))
    print(f"\ntemp bytes after buffer assignment: {report.buffers.total_temp_bytes}")
    (fused,) = xlapy.run_hlo(report.module, [x, y, z])
    assert np.array_equal(fused, result), "optimization must not change the result"
    print(f"optimized module gives the same result: {float(fused):.6f}")


if __name__ == "__main__":
    main()
