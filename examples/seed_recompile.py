"""Shapes may differ between calls: each new shape compiles once, then hits the cache."""
import numpy as np

import xlapy
import xlapy.numpy as xnp


@xlapy.function(jit_compile=True)
def recompiled_on_launch(a, b):
    return a + b


if __name__ == "__main__":
    recompiled_on_launch(xnp.ones([1, 10]), xnp.ones([1, 10]))
    recompiled_on_launch(xnp.ones([1, 100]), xnp.ones([1, 100]))
    out = recompiled_on_launch(xnp.ones([1, 10]), xnp.ones([1, 10]))
    assert np.array_equal(np.asarray(out), np.full((1, 10), 2, np.float32))
    info = recompiled_on_launch.cache_info()
    print(f"compiles: {info.misses}, cache hits: {info.hits}")
    for record in info.compiles:
        print(f"  compiled for ({record.signature}): {record.reason}")
