"""``unique`` has a data-dependent output shape: under jit_compile=True it cannot compile.

Must-compile semantics: the call raises InvalidArgumentError naming the op and this
file's line instead of silently running uncompiled. Eagerly the same code works.
"""
import numpy as np

import xlapy
import xlapy.numpy as xnp


@xlapy.function(jit_compile=True)
def not_compilable(x):
    return xnp.unique(x)


if __name__ == "__main__":
    x = np.array([3, 1, 3, 2, 1], np.int32)
    print("eager:", xnp.unique(x))
    try:
        not_compilable(x)
    except xlapy.errors.InvalidArgumentError as e:
        print("InvalidArgumentError:", e)
