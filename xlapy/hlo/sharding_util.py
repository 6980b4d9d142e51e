"""Sharding algebra shared by propagation and the SPMD partitioner (XLA's
``hlo_sharding_util``): moving a sharding across a dimension mapping, merging two partial
shardings, how specific a sharding is, and the device groups collectives run over.

A tiled sharding's device array has one axis per data dimension, then its subgroup axes.
Moving a sharding from a value of rank ``r`` to one of rank ``r'`` through ``mapping``
(``mapping[i]`` = the target dimension of source dimension ``i``, or None when it has no
counterpart) keeps each device's tile coordinate on mapped dimensions; tiles of unmapped
dimensions become replication, unmapped target dimensions are not split.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .sharding import HloSharding


def remap(s: HloSharding, mapping: Sequence[int | None], target_rank: int) -> HloSharding:
    """``s`` of a rank-``len(mapping)`` value moved to a rank-``target_rank`` value."""
    if s.kind != "tiled":
        return s
    arr = s.device_array()
    rank = s.tiled_data_rank
    sub = list(s.subgroups)
    kept = [i for i in range(rank) if mapping[i] is not None]
    dropped = [i for i in range(rank) if mapping[i] is None and arr.shape[i] > 1]
    ones = [i for i in range(rank) if mapping[i] is None and arr.shape[i] == 1]
    order = sorted(kept, key=lambda i: mapping[i])  # type: ignore[arg-type,return-value]
    arr = arr.transpose(order + list(range(rank, arr.ndim)) + dropped + ones)
    arr = arr.reshape(arr.shape[:len(order) + len(sub) + len(dropped)])
    # kept axes are in target order: inserting size-1 axes for the other target dims is a reshape
    target_of = {mapping[i]: k for k, i in enumerate(order)}
    shape = [arr.shape[target_of[t]] if t in target_of else 1 for t in range(target_rank)]
    full = arr.reshape(tuple(shape) + tuple(arr.shape[len(order):]))
    return HloSharding.tile(full, sub + ["replicated"] * len(dropped), s.iota is not None)


def invert(mapping: Sequence[int | None], rank: int) -> list[int | None]:
    """The inverse of a dimension ``mapping`` (source dim -> target dim or None) for a
    rank-``rank`` target: target dim -> source dim or None."""
    inv: list[int | None] = [None] * rank
    for i, t in enumerate(mapping):
        if t is not None:
            inv[t] = i
    return inv


def coords(s: HloSharding) -> dict[int, tuple[int, ...]]:
    """Device -> its tile coordinate on the data dims."""
    arr = s.device_array()
    rank = s.tiled_data_rank
    out = {}
    for idx in np.ndindex(arr.shape):
        out[int(arr[idx])] = tuple(int(i) for i in idx[:rank])
    return out


def merge(a: HloSharding, b: HloSharding) -> HloSharding | None:
    """One sharding that splits every dimension either ``a`` or ``b`` splits, with each
    device keeping its tile coordinates from both (XLA's ``MergeSharding``); None when they
    disagree (a dimension split by both differently, different device sets, or groups of
    unequal size)."""
    if a.kind != "tiled":
        return b if a.kind == "replicated" and b.kind == "tiled" else (a if a == b else None)
    if b.kind != "tiled":
        return a if b.kind == "replicated" else None
    if a.subgroups not in ((), ("replicated",)) or b.subgroups not in ((), ("replicated",)):
        return a if a == b else None
    if sorted(a.devices) != sorted(b.devices) or a.tiled_data_rank != b.tiled_data_rank:
        return None
    ca, cb = coords(a), coords(b)
    ta, tb = a.data_tiles, b.data_tiles
    tiles: list[int] = []
    for d in range(len(ta)):
        if ta[d] > 1 and tb[d] > 1 and ta[d] != tb[d]:
            return None
        tiles.append(max(ta[d], tb[d]))
    groups: dict[tuple[int, ...], list[int]] = {}
    for dev in a.devices:            # a's order decides the order inside replication groups
        c = []
        for d in range(len(ta)):
            if ta[d] > 1 and tb[d] > 1:
                if ca[dev][d] != cb[dev][d]:
                    return None
                c.append(ca[dev][d])
            else:
                c.append(ca[dev][d] if ta[d] > 1 else cb[dev][d])
        groups.setdefault(tuple(c), []).append(dev)
    n = len(a.devices)
    per = n // int(np.prod(tiles))
    if len(groups) != int(np.prod(tiles)) or any(len(g) != per for g in groups.values()):
        return None
    arr = np.zeros(tuple(tiles) + ((per,) if per > 1 else ()), dtype=np.int64)
    for key, devs in groups.items():
        arr[key] = devs if per > 1 else devs[0]
    return HloSharding.tile(arr, ["replicated"] if per > 1 else [],
                            a.iota is not None or b.iota is not None)


def tile_count(s: HloSharding | None) -> int:
    """How many pieces the data is split into (1 for replicated or none)."""
    if s is None or s.kind != "tiled":
        return 1
    return int(np.prod(s.data_tiles))


def more_specific(a: HloSharding | None, b: HloSharding | None) -> bool:
    """Whether ``a`` splits the data into more pieces than ``b`` (XLA's
    ``IsShardingMoreSpecific`` for array shardings)."""
    if a is None:
        return False
    if b is None:
        return True
    return tile_count(a) > tile_count(b)


def groups_along(s: HloSharding, dims: Sequence[int]) -> list[list[int]]:
    """Device groups that differ only in their coordinates on data ``dims``; each group is
    ordered by those coordinates (row-major), so position = tile index along ``dims``."""
    arr = s.device_array()
    dims = list(dims)
    other = [i for i in range(arr.ndim) if i not in dims]
    moved = arr.transpose(other + dims)
    k = int(np.prod([arr.shape[i] for i in dims])) if dims else 1
    return [[int(v) for v in row] for row in moved.reshape(-1, k)]


__all__ = ["remap", "invert", "merge", "coords", "tile_count", "more_specific", "groups_along"]
