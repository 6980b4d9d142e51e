"""``xlapy.sharding``: ``Mesh``, ``PartitionSpec``, ``NamedSharding`` (as ``jax.sharding``);
see :mod:`xlapy.frontend.sharding`."""
from __future__ import annotations

from .frontend.sharding import (Mesh, NamedSharding, PartitionSpec, Shard, ShardedArray,
                                device_put, make_array_from_callback,
                                with_sharding_constraint)

__all__ = ["Mesh", "NamedSharding", "PartitionSpec", "Shard", "ShardedArray", "device_put",
           "make_array_from_callback", "with_sharding_constraint"]
