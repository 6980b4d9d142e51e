"""Running a sharded (SPMD) module: propagate shardings, partition, run one program per
device, and move arrays between global and per-device form.

:func:`spmd_partition` runs :class:`~xlapy.passes.sharding_propagation.ShardingPropagation`
and :class:`~xlapy.passes.spmd_partitioner.SpmdPartitioner` on a copy of the module, dumping
``...after_sharding-propagation.txt`` and ``...after_spmd-partitioning.txt`` under
``--xla_dump_to``. :func:`shard_array` cuts a global array into the padded per-device shards
the partitioned program takes; :func:`unshard` puts one output back together.
:func:`run_spmd` does all of it on the multi-device runtime (``run_hlo`` with one argument
list per partition).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.ir import HloModule
from ..hlo.sharding import HloSharding
from ..hlo.verifier import verify_module
from ..passes.call_inliner import CallInliner
from ..passes.dump import dump_hlo_module
from ..passes.sharding_propagation import ShardingPropagation
from ..passes.spmd_partitioner import SpmdPartitioner
from ..passes.spmd_reshard import count_collective_bytes

log = logging.getLogger("xlapy.spmd")


@dataclass
class PartitionedModule:
    """The per-partition module with the shardings of its inputs and output."""

    module: HloModule
    propagated: HloModule
    num_partitions: int
    in_shardings: list[HloSharding]
    out_sharding: HloSharding
    #: the sharding of each output (the root's tuple elements, or the one array)
    out_shardings: list[HloSharding]

    def collective_bytes(self) -> dict[str, int]:
        """Bytes per device each collective kind moves (result sizes)."""
        return count_collective_bytes(self.module.entry)


def _array_sharding(s: Any) -> HloSharding:
    return s if isinstance(s, HloSharding) and s.kind != "tuple" else HloSharding.replicate()


def spmd_partition(module: HloModule, num_partitions: int | None = None) -> PartitionedModule:
    """Propagate and partition a copy of ``module`` for ``num_partitions`` partitions (default:
    the module's ``num_partitions``)."""
    n = num_partitions or module.attributes.get("num_partitions", 1)
    work = module.clone()
    CallInliner().run(work)             # JAX wraps helpers (take, clip, ...) in calls
    ShardingPropagation().run(work)
    dump_hlo_module(work, "after_sharding-propagation")
    propagated = work.clone()
    entry = work.entry
    ins = [_array_sharding(p.attrs.get("sharding")) for p in entry.parameters]
    root = entry.root
    out = _array_sharding(root.attrs.get("sharding"))
    if root.shape.is_tuple:
        rs = root.attrs.get("sharding")
        if not isinstance(rs, HloSharding) or rs.kind != "tuple":
            # the partitioner returns a tuple's elements as their operands are sharded
            rs = HloSharding.tuple_of([_array_sharding(o.attrs.get("sharding"))
                                       for o in root.operands]) \
                if root.opcode == "tuple" else HloSharding.tuple_of(
                    [HloSharding.replicate()] * len(root.shape.tuple_shapes))
            root.attrs["sharding"] = rs
        outs = [_array_sharding(e) for e in rs.elements]
    else:
        outs = [out]
    SpmdPartitioner(n).run(work)
    verify_module(work, unique_names="computation")
    dump_hlo_module(work, "after_spmd-partitioning")
    return PartitionedModule(work, propagated, n, ins, out, outs)


def shard_array(x: np.ndarray, s: HloSharding, n: int,
                devices: Sequence[int] | None = None) -> list[Any]:
    """The padded shard of ``x`` each of ``n`` devices holds under ``s`` (padding zeros);
    with ``devices``, only those devices' shards are made (the others are None)."""
    x = np.asarray(x)
    if s.kind != "tiled":
        return [x if devices is None or dev in devices else None for dev in range(n)]
    if s.tiled_data_rank != x.ndim:
        raise InvalidArgumentError(f"sharding {s} is for rank {s.tiled_data_rank}, the array "
                                   f"has shape {x.shape}")
    local = s.shard_shape(x.shape)
    out = []
    for dev in range(n):
        if devices is not None and dev not in devices:
            out.append(None)
            continue
        idx = s.tile_index(dev)
        piece = np.zeros(local, dtype=x.dtype)
        sl = tuple(slice(min(i * c, d), min((i + 1) * c, d)) for i, c, d in
                   zip(idx, local, x.shape))
        part = x[sl]
        piece[tuple(slice(0, k) for k in part.shape)] = part
        out.append(piece)
    return out


def unshard(pieces: Sequence[np.ndarray], s: HloSharding, dims: Sequence[int]) -> np.ndarray:
    """The global array of ``dims`` from each device's padded shard under ``s``."""
    if s.kind != "tiled":
        return np.asarray(pieces[0])
    local = s.shard_shape(dims)
    out = np.zeros(tuple(dims), dtype=np.asarray(pieces[0]).dtype)
    for dev, piece in enumerate(pieces):
        idx = s.tile_index(dev)
        sl = tuple(slice(min(i * c, d), min((i + 1) * c, d)) for i, c, d in
                   zip(idx, local, dims))
        out[sl] = np.asarray(piece)[tuple(slice(0, t.stop - t.start) for t in sl)]
    return out


def run_spmd(module: HloModule, args: Sequence[Any], num_partitions: int | None = None,
             backend: str = "interpreter") -> np.ndarray:
    """Partition ``module`` and run it on ``num_partitions`` devices with the global ``args``;
    returns the global result (the entry root must be an array)."""
    from .run import run_hlo
    p = spmd_partition(module, num_partitions)
    n = p.num_partitions
    per_device = [[] for _ in range(n)]
    for a, s in zip(args, p.in_shardings):
        for dev, piece in enumerate(shard_array(a, s, n)):
            per_device[dev].append(piece)
    outs = run_hlo(p.module, per_device, backend=backend)
    return unshard([o[0] for o in outs], p.out_sharding, module.entry.root.shape.dims)


__all__ = ["PartitionedModule", "spmd_partition", "shard_array", "unshard", "run_spmd"]
