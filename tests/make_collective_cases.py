"""Re-make the real-XLA collective cases in ``tests/data/collectives``.

Runs JAX (jax/jaxlib 0.10.2 from the test extra) on 4 CPU devices
(``--xla_force_host_platform_device_count=4``): for each case, ``pmap`` or a ``shard_map``
over a 2x2 mesh is compiled, and XLA's optimized per-device module (the SPMD partitioner's
output: ``num_partitions=4``, collectives with ``channel_id`` and flattened ids) is written as
``<case>.hlo`` with ``<case>.npz`` holding each device's arguments (``d<device>_arg<i>``) and
XLA's outputs (``d<device>_out<j>``). Usage::

    python tests/make_collective_cases.py [output_dir]
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402


def pmap_cases():
    i = "i"
    return {
        "pmap_psum": lambda v: lax.psum(v, i),
        "pmap_pmean": lambda v: lax.pmean(v, i),
        "pmap_pmax": lambda v: lax.pmax(v, i),
        "pmap_pmin_int": lambda v: lax.pmin(v.astype(np.int32), i),
        "pmap_all_gather": lambda v: lax.all_gather(v, i),
        "pmap_all_gather_tiled": lambda v: lax.all_gather(v, i, tiled=True),
        "pmap_psum_scatter": lambda v: lax.psum_scatter(v, i, tiled=True),
        "pmap_ppermute_ring": lambda v: lax.ppermute(v, i, [(k, (k + 1) % 4) for k in range(4)]),
        "pmap_ppermute_partial": lambda v: lax.ppermute(v, i, [(0, 2), (3, 1)]),
        "pmap_all_to_all": lambda v: lax.all_to_all(v, i, 0, 0, tiled=True),
        "pmap_axis_index": lambda v: v * lax.axis_index(i),
        "pmap_psum_twice": lambda v: lax.psum(v * lax.psum(v, i), i),
    }


def mesh_cases(mesh):
    def smap(f, out=P("a", "b")):
        return jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("a", "b"), out_specs=out))
    return {
        "mesh_psum_b": smap(lambda v: lax.psum(v, "b")),
        "mesh_psum_a": smap(lambda v: lax.psum(v, "a")),
        "mesh_all_gather_a": smap(lambda v: lax.all_gather(v, "a", tiled=True)),
        "mesh_ppermute_b": smap(lambda v: lax.ppermute(v, "b", [(0, 1), (1, 0)])),
        "mesh_psum_scatter_b": smap(lambda v: lax.psum_scatter(v, "b", scatter_dimension=0,
                                                               tiled=True)),
    }


def save(out_dir: Path, name: str, compiled, device_args, result) -> None:
    """``device_args[d]``: the argument list of device d."""
    text = compiled.as_text()
    (out_dir / f"{name}.hlo").write_text(text)
    arrays = {}
    for d, args in enumerate(device_args):
        for k, a in enumerate(args):
            arrays[f"d{d}_arg{k}"] = np.asarray(a)
    for shard in result.addressable_shards:
        arrays[f"d{shard.device.id}_out0"] = np.asarray(shard.data)
    np.savez(out_dir / f"{name}.npz", **arrays)
    print(f"{name}: {len(text)} chars")


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "data" / \
        "collectives"
    out_dir.mkdir(parents=True, exist_ok=True)
    assert jax.device_count() == 4
    x = (np.arange(32, dtype=np.float32).reshape(4, 8) * 1.5 - 7).astype(np.float32)
    for name, fn in pmap_cases().items():
        f = jax.pmap(fn, axis_name="i")
        save(out_dir, name, f.lower(x).compile(), [[x[k:k + 1]] for k in range(4)], f(x))
    mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("a", "b"))
    g = np.arange(64, dtype=np.float32).reshape(8, 8) - 20
    for name, f in mesh_cases(mesh).items():
        ga = jax.device_put(g, jax.sharding.NamedSharding(mesh, P("a", "b")))
        shards = {s.device.id: np.asarray(s.data) for s in ga.addressable_shards}
        save(out_dir, name, f.lower(ga).compile(), [[shards[d]] for d in range(4)], f(ga))


if __name__ == "__main__":
    main()
