"""``xlapy.experimental``: JAX's ``jax.experimental`` paths (``shard_map``)."""
from __future__ import annotations

from . import shard_map

__all__ = ["shard_map"]
