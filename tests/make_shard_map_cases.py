"""Regenerate ``tests/data/shard_map/``: JAX's answers to the ``shard_map`` programs of
``tests/shard_map_cases.py`` on a 2x2 mesh of host devices
(``--xla_force_host_platform_device_count=4``).

Run with the test extra installed: ``python tests/make_shard_map_cases.py [NAME ...]`` (all
cases, or the ones named). Each case writes
``<name>.npz`` with its inputs ``arg0..`` and JAX's results ``out0..`` (the leaves of the
result, in pytree order: dict keys sorted).
"""
from __future__ import annotations

import os
import pathlib
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import shard_map_cases as cases  # noqa: E402

OUT = pathlib.Path(__file__).parent / "data" / "shard_map"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("x", "y"))
    todo = [(c, ()) for c in cases.FORWARD] + [(c, (jax.grad,)) for c in cases.GRADIENTS]
    if sys.argv[1:]:                            # only the cases named on the command line
        todo = [(c, e) for c, e in todo if c.__name__ in sys.argv[1:]]
    for case, extra in todo:
        fn, args = case(lax, jnp, jax.shard_map, P, mesh, *extra)
        out = jax.jit(fn)(*args)
        leaves = [np.asarray(v) for v in jax.tree_util.tree_leaves(out)]
        np.savez(OUT / f"{case.__name__}.npz", **{f"arg{i}": a for i, a in enumerate(args)},
                 **{f"out{i}": v for i, v in enumerate(leaves)})
        print(case.__name__, [v.shape for v in leaves])


if __name__ == "__main__":
    main()
