"""``xlapy.experimental.shard_map.shard_map``: JAX's older path of ``xlapy.shard_map``
(see :mod:`xlapy.frontend.shard_map`)."""
from __future__ import annotations

from ..frontend.shard_map import shard_map

__all__ = ["shard_map"]
