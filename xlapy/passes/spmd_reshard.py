"""The per-partition program builder of the SPMD partitioner: instructions of the new
computation, ``partition-id``-based offsets, collectives, and resharding a local value from
one sharding to another (XLA's ``PartitionedHlo::Reshard``).

Local values are padded shards: along a dimension of size ``n`` split ``t`` ways every device
holds ``ceil(n/t)`` elements; the padding past ``n`` holds unspecified values, so ops that
would read it (reductions over the dimension, dots contracting it) mask it first
(:meth:`SpmdBuilder.mask`).

Resharding ``S -> T`` of a value of global ``dims``:

- equal shardings: nothing;
- ``T`` refines ``S`` (each of ``T``'s tiles lies inside the tile the device already holds):
  a local ``dynamic-slice`` at offsets looked up by ``partition-id`` (replicated -> tiled is
  this case; a replicated dimension is padded first when the split is uneven);
- otherwise ``all-gather`` along the dimensions ``T`` does not refine (groups: devices that
  differ only in that dimension's tile), cutting the padding off, then the refinement;
- maximal and manual shardings cannot be resharded here (``UnimplementedError``).
"""
from __future__ import annotations

import logging
import math
from typing import Any, Sequence

import numpy as np

from ..errors import UnimplementedError
from ..hlo import types as T
from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.replica_groups import ReplicaGroups
from ..hlo.shape import Shape
from ..hlo.sharding import HloSharding
from ..hlo.sharding_util import coords, groups_along, remap

log = logging.getLogger("xlapy.passes")

#: Collectives whose result bytes count as communication.
COLLECTIVES = frozenset({"all-gather", "all-reduce", "reduce-scatter", "all-to-all",
                         "collective-permute"})


def local_dims(dims: Sequence[int], s: HloSharding | None) -> tuple[int, ...]:
    """The padded per-device dims of a value of ``dims`` under ``s``."""
    if s is None or s.kind != "tiled":
        return tuple(dims)
    return s.shard_shape(dims)


def _tiles(s: HloSharding, rank: int) -> tuple[int, ...]:
    return s.data_tiles if s.kind == "tiled" else (1,) * rank


class SpmdBuilder:
    """Emits the per-partition computation ``comp`` of ``module`` for ``n`` partitions."""

    def __init__(self, module: HloModule, comp: HloComputation, n: int,
                 shared: dict[str, Any] | None = None) -> None:
        self.module, self.comp, self.n = module, comp, n
        self._pid: HloInstruction | None = None
        self._offsets: dict[tuple, HloInstruction] = {}
        # channel numbers and reducer computations are per module (all computations)
        self.shared: dict[str, Any] = shared if shared is not None else {"channel": 0,
                                                                          "adders": {}}
        self._adders: dict[Any, Any] = self.shared["adders"]

    # ----- instructions
    def add(self, opcode: str, shape: Shape, operands: Sequence[HloInstruction] = (),
            attrs: dict[str, Any] | None = None, name: str | None = None) -> HloInstruction:
        instr = HloInstruction(opcode, shape, operands, attrs or {},
                               name=self.module.unique_name(name or opcode))
        return self.comp.add_instruction(instr)

    def constant(self, value: np.ndarray, et: T.ElementType) -> HloInstruction:
        instr = self.add("constant", Shape.array(et, value.shape))
        instr.literal = np.asarray(value, dtype=et.dtype)
        return instr

    def partition_id(self) -> HloInstruction:
        if self._pid is None:
            self._pid = self.add("partition-id", Shape.array("u32", ()))
        return self._pid

    def offset(self, s: HloSharding, dim: int, size: int, k: int | None = None
               ) -> HloInstruction:
        """``s32[]``: this partition's tile coordinate along ``dim`` times ``size`` (the
        global offset of its tile); with ``k``, the coordinate modulo ``k`` (the offset inside
        a held tile made of ``k`` tiles of ``s``)."""
        c = coords(s)
        return self.per_device([((c[dev][dim] % k) if k else c[dev][dim]) * size
                                if dev in c else 0 for dev in range(self.n)])

    def per_device(self, values: Sequence[int]) -> HloInstruction:
        """``s32[]``: ``values[partition-id]`` (a constant table looked up by partition; one
        instruction per distinct table)."""
        key = tuple(int(v) for v in values)
        if key not in self._offsets:
            table = np.asarray(key, dtype=np.int32)
            if len(set(key)) == 1:
                self._offsets[key] = self.constant(np.int32(key[0]), T.S32)
            else:
                tab = self.constant(table, T.S32)
                one = self.add("dynamic-slice", Shape.array("s32", (1,)),
                               [tab, self.partition_id()], {"dynamic_slice_sizes": (1,)})
                self._offsets[key] = self.add("reshape", Shape.array("s32", ()), [one])
        return self._offsets[key]

    def _next_channel(self) -> int:
        channel = int(self.shared["channel"]) + 1
        self.shared["channel"] = channel
        return channel

    def adder(self, et: T.ElementType) -> HloComputation:
        """A scalar ``add`` computation for all-reduce."""
        if et not in self._adders:
            comp = HloComputation(self.module.unique_name("add"))
            sh = Shape.array(et, ())
            for i in range(2):
                p = HloInstruction("parameter", sh, name=self.module.unique_name(f"x.{i}"))
                p.parameter_number = i
                comp.add_instruction(p)
            comp.root = comp.add_instruction(HloInstruction(
                "add" if et != T.PRED else "or", sh, comp.parameters,
                name=self.module.unique_name("sum")))
            self.module.add_computation(comp)
            self._adders[et] = comp
        return self._adders[et]

    def all_reduce(self, x: HloInstruction, groups: list[list[int]],
                   reducer: HloComputation) -> HloInstruction:
        if all(len(g) == 1 for g in groups):
            return x
        return self.add("all-reduce", x.shape, [x], {
            "channel_id": self._next_channel(), "replica_groups": ReplicaGroups.of(groups),
            "use_global_device_ids": True, "to_apply": reducer})

    def all_gather(self, x: HloInstruction, dim: int, groups: list[list[int]]) -> HloInstruction:
        dims = list(x.shape.dims)
        dims[dim] *= len(groups[0])
        return self.add("all-gather", Shape.array(x.shape.element_type, dims), [x], {
            "channel_id": self._next_channel(), "replica_groups": ReplicaGroups.of(groups),
            "dimensions": (dim,), "use_global_device_ids": True})

    def slice_to(self, x: HloInstruction, dims: Sequence[int]) -> HloInstruction:
        if tuple(dims) == tuple(x.shape.dims):
            return x
        return self.add("slice", Shape.array(x.shape.element_type, dims), [x],
                        {"slice": tuple((0, d, 1) for d in dims)})

    def pad_to(self, x: HloInstruction, dims: Sequence[int]) -> HloInstruction:
        if tuple(dims) == tuple(x.shape.dims):
            return x
        zero = self.constant(np.zeros((), x.shape.element_type.dtype),
                             x.shape.element_type)
        return self.add("pad", Shape.array(x.shape.element_type, dims), [x, zero],
                        {"padding": tuple((0, d - o, 0) for o, d in zip(x.shape.dims, dims))})

    def mask(self, x: HloInstruction, s: HloSharding, dims: Sequence[int], global_dims,
             value: HloInstruction) -> HloInstruction:
        """``x`` (local under ``s``) with the padding along ``dims`` replaced by the scalar
        ``value``; dims split evenly need nothing."""
        et, ldims = x.shape.element_type, x.shape.dims
        tiles = _tiles(s, len(ldims))
        ok = None
        for d in dims:
            if tiles[d] == 1 or global_dims[d] % tiles[d] == 0:
                continue
            c = ldims[d]
            start = self.offset(s, d, c)
            iota = self.add("iota", Shape.array("s32", ldims), [], {"iota_dimension": d})
            lim = self.add("subtract", Shape.array("s32", ()), [
                self.constant(np.int32(global_dims[d]), T.S32), start])
            limb = self.add("broadcast", Shape.array("s32", ldims), [lim], {"dimensions": ()})
            cmp = self.add("compare", Shape.array("pred", ldims), [iota, limb],
                           {"direction": "LT"})
            ok = cmp if ok is None else self.add("and", cmp.shape, [ok, cmp])
        if ok is None:
            return x
        vb = self.add("broadcast", Shape.array(et, ldims), [value], {"dimensions": ()})
        return self.add("select", x.shape, [ok, x, vb])

    # ----- resharding
    def refine(self, x: HloInstruction, src: HloSharding, dst: HloSharding,
               global_dims: Sequence[int]) -> HloInstruction | None:
        """``dynamic-slice`` when every tile of ``dst`` lies in the tile ``src`` gives the
        same device; None otherwise."""
        rank = len(global_dims)
        ts, td = _tiles(src, rank), _tiles(dst, rank)
        cs = coords(src) if src.kind == "tiled" else None
        cd = coords(dst) if dst.kind == "tiled" else None
        for d in range(rank):
            if td[d] % ts[d]:
                return None
            k = td[d] // ts[d]
            for dev in range(self.n):
                a = cs[dev][d] if cs is not None else 0
                b = cd[dev][d] if cd is not None else 0
                if b // k != a:
                    return None
        src_local = local_dims(global_dims, src)
        dst_local = local_dims(global_dims, dst)
        need = []
        for d in range(rank):
            k = td[d] // ts[d]
            if k > 1 and src_local[d] != k * dst_local[d]:
                if ts[d] != 1:
                    return None
            need.append(max(src_local[d], k * dst_local[d]))
        x = self.pad_to(x, need)
        if tuple(dst_local) == tuple(x.shape.dims):
            return x
        starts = [self.offset(dst, d, dst_local[d], td[d] // ts[d]) if td[d] > ts[d]
                  else self.constant(np.int32(0), T.S32) for d in range(rank)]
        return self.add("dynamic-slice", Shape.array(x.shape.element_type, dst_local),
                        [x] + starts, {"dynamic_slice_sizes": tuple(dst_local)})

    def gather_dim(self, x: HloInstruction, s: HloSharding, d: int, global_dims
                   ) -> tuple[HloInstruction, HloSharding]:
        """All-gather dimension ``d`` of ``x`` (local under ``s``); the result is unsplit
        along ``d`` (padding cut off)."""
        rank = len(global_dims)
        g = self.all_gather(x, d, groups_along(s, [d]))
        dims = list(g.shape.dims)
        dims[d] = global_dims[d]
        out = remap(s, [i if i != d else None for i in range(rank)], rank)
        return self.slice_to(g, dims), out

    def all_to_all_step(self, x: HloInstruction, s: HloSharding, i: int, j: int, k: int
                        ) -> tuple[HloInstruction, HloSharding]:
        """Move a factor ``k`` of the split of dim ``i`` to dim ``j`` with one ``all-to-all``
        (groups: devices differing only in the minor factor ``k`` of their dim-``i`` tile
        coordinate): each device splits its tile along ``j`` into ``k`` chunks, sends chunk
        ``m`` to member ``m`` and concatenates what it gets along ``i``."""
        arr = s.device_array()
        ti = arr.shape[i]
        shape = list(arr.shape)
        split = shape[:i] + [ti // k, k] + shape[i + 1:]
        a5 = arr.reshape(split)                     # axis i+1 = the minor factor r
        groups = groups_along_axis(a5, i + 1)
        et, L = x.shape.element_type, list(x.shape.dims)
        # [.., k, L_j/k, ..] with the k axis moved first
        sp = L[:j] + [k, L[j] // k] + L[j + 1:]
        y = self.add("reshape", Shape.array(et, sp), [x])
        perm = [j] + [a for a in range(len(sp)) if a != j]
        y = self.add("transpose", Shape.array(et, [sp[a] for a in perm]), [y],
                     {"dimensions": tuple(perm)})
        y = self.add("all-to-all", y.shape, [y], {
            "channel_id": self._next_channel(), "replica_groups": ReplicaGroups.of(groups),
            "dimensions": (0,)})
        # now axis 0 = the sender's r = block position along dim i; merge it in, major
        rest = [sp[a] for a in perm][1:]           # dims of L with j shrunk by k
        ii = i                                       # position of dim i inside ``rest``
        perm2 = list(range(1, ii + 1)) + [0] + list(range(ii + 1, len(rest) + 1))
        y = self.add("transpose", Shape.array(et, [([k] + rest)[a] for a in perm2]), [y],
                     {"dimensions": tuple(perm2)})
        out = rest[:ii] + [k * rest[ii]] + rest[ii + 1:]
        y = self.add("reshape", Shape.array(et, out), [y])
        # new device array: dim i loses the minor factor, dim j gains it as its minor factor
        moved = np.moveaxis(a5, i + 1, j + 1)        # r right after dim j's coordinate
        new_shape = list(arr.shape)
        new_shape[i] //= k
        new_shape[j] *= k
        return y, HloSharding.tile(moved.reshape(new_shape), list(s.subgroups), True)

    def permute(self, x: HloInstruction, src: HloSharding, dst: HloSharding
                ) -> HloInstruction | None:
        """``collective-permute`` when ``src`` and ``dst`` have the same tiles on other
        devices; None when they do not."""
        if src.tile_dims != dst.tile_dims or src.subgroups != dst.subgroups \
                or sorted(src.devices) != sorted(dst.devices):
            return None
        where = {c: d for d, c in coords(src).items()}
        pairs = []
        for d, c in sorted(coords(dst).items()):
            pairs.append((where[c], d))
        if src.subgroups:
            return None
        return self.add("collective-permute", x.shape, [x], {
            "channel_id": self._next_channel(), "source_target_pairs": tuple(pairs)})

    def move_tiles(self, x: HloInstruction, src: HloSharding, dst: HloSharding,
                   global_dims: Sequence[int]) -> HloInstruction | None:
        """Reshard between two tilings of the same devices with ``all-to-all`` steps and a
        final ``collective-permute`` (evenly divided dims only); None when that does not
        apply."""
        rank = len(global_dims)
        if src.subgroups or dst.subgroups or src.tiled_data_rank != rank \
                or sorted(src.devices) != sorted(dst.devices):
            return None
        if any(global_dims[d] % max(src.data_tiles[d], dst.data_tiles[d]) for d in range(rank)):
            return None
        cur, s = x, src
        while s.data_tiles != dst.data_tiles:
            ts, td = s.data_tiles, dst.data_tiles
            step = None
            for i in range(rank):
                for j in range(rank):
                    if i != j and ts[i] > td[i] and td[j] > ts[j] and ts[i] % td[i] == 0 \
                            and td[j] % ts[j] == 0:
                        k = math.gcd(ts[i] // td[i], td[j] // ts[j])
                        if k > 1:
                            step = (i, j, k)
                            break
                if step:
                    break
            if step is None:
                return None
            cur, s = self.all_to_all_step(cur, s, *step)
        if s == dst:
            return cur
        return self.permute(cur, s, dst)

    def reshard(self, x: HloInstruction, src: HloSharding | None, dst: HloSharding | None,
                global_dims: Sequence[int]) -> HloInstruction:
        src = src or HloSharding.replicate()
        dst = dst or HloSharding.replicate()
        for s in (src, dst):
            if s.kind not in ("tiled", "replicated"):
                raise UnimplementedError(f"SPMD partitioner: resharding {src} -> {dst} of "
                                         f"{x.name} ({s.kind} shardings are not partitioned)")
        if src == dst or (src.kind == "replicated" and dst.kind == "replicated"):
            return x
        done = self.refine(x, src, dst, global_dims)
        if done is not None:
            return done
        rank = len(global_dims)
        if src.kind == "tiled" and dst.kind == "tiled":
            moved = self.move_tiles(x, src, dst, global_dims)
            if moved is not None:
                return moved
        ts, td = _tiles(src, rank), _tiles(dst, rank)
        cur, s = x, src
        # first the dims dst does not split as a multiple of src, then all that are left
        for pick in (lambda d: td[d] % ts[d] != 0, lambda d: True):
            for d in range(rank):
                if s.kind == "tiled" and _tiles(s, rank)[d] > 1 and pick(d):
                    cur, s = self.gather_dim(cur, s, d, global_dims)
            done = self.refine(cur, s, dst, global_dims)
            if done is not None:
                return done
        raise AssertionError(f"reshard {src} -> {dst}: replicated value did not refine")


def groups_along_axis(arr: np.ndarray, axis: int) -> list[list[int]]:
    """Rows of ``arr`` along ``axis`` (all other axes fixed), as device groups."""
    moved = np.moveaxis(arr, axis, -1)
    return [[int(v) for v in row] for row in moved.reshape(-1, arr.shape[axis])]


def count_collective_bytes(comp: HloComputation) -> dict[str, int]:
    """Bytes each collective kind produces per device (its result sizes), by opcode."""
    out: dict[str, int] = {}
    for i in comp.instructions:
        op = i.opcode.removesuffix("-start")
        if op in COLLECTIVES:
            out[op] = out.get(op, 0) + i.shape.byte_size
    return out


__all__ = ["SpmdBuilder", "local_dims", "count_collective_bytes", "COLLECTIVES"]
