"""The XLA talk's running example: the mean of ``x**2 * 3 + y`` for two random vectors.

Eagerly the expression runs as separate ops (square, multiply, add, mean), one kernel
each in the talk's GPU profile. With ``jit_compile=True`` it is traced to HLO, and the
optimized module is one loop fusion: the elementwise ops, the reduction and the final
division run in a single kernel, with no intermediate written to memory. The script
prints the HLO before and after optimization and compares the result with NumPy.
"""
import numpy as np

import xlapy
import xlapy.numpy as xnp


@xlapy.function(jit_compile=True)
def f(x, y):
    return xnp.mean(x ** 2 * 3 + y)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(10_000).astype(np.float32) for _ in range(2))
    ir = f.experimental_get_compiler_ir(x, y)
    print("=== HLO before optimizations")
    print(ir(stage="hlo"))
    optimized = ir(stage="optimized_hlo")
    print("=== HLO after optimizations")
    print(optimized)
    entry = optimized[optimized.index("ENTRY"):]
    print("fusions in the entry computation:", entry.count(" fusion("))
    got = float(np.asarray(f(x, y)))
    want = float(np.mean(x.astype(np.float64) ** 2 * 3 + y))
    print(f"result: {got:.6f}  numpy: {want:.6f}  relative difference: "
          f"{abs(got - want) / abs(want):.2e}")
