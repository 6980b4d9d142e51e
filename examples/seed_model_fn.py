"""The XLA overview's first example: ``model_fn(x, y, z) = reduce_sum(x + y * z)``.

Compiled with ``xlapy.function(jit_compile=True)``; prints the HLO it traces to (a
multiply, an add and a reduce) and, after the CPU pass pipeline, the single fusion.
"""
import numpy as np

import xlapy
import xlapy.numpy as xnp


@xlapy.function(jit_compile=True)
def model_fn(x, y, z):
    return xnp.sum(x + y * z)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(8).astype(np.float32) for _ in range(3))
    print("result:", model_fn(x, y, z), " numpy:", np.sum(x + y * z))
    ir = model_fn.experimental_get_compiler_ir(x, y, z)
    print(ir(stage="hlo"))
    print(ir(stage="optimized_hlo"))
