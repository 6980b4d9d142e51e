"""The SPMD partitioner (XLA's ``SpmdPartitioner``, pass name ``spmd-partitioning``).

Rewrites a module whose entry instructions all carry shardings (run
:class:`~xlapy.passes.sharding_propagation.ShardingPropagation` first) into the program each
of ``num_partitions`` partitions runs: entry ``<name>_spmd`` with per-partition parameter and
result shapes (the padded shards, ``ceil(dim / tiles)``), ``partition-id``-based offsets and
the collectives the shardings call for; the module gets ``num_partitions=N``. Resharding is
:class:`~xlapy.passes.spmd_reshard.SpmdBuilder.reshard`. Per op:

- conditional with an array result: branch operands as sharded, each branch partitioned
  into ``<name>_spmd`` with its root in the conditional's sharding;
- while (flat state): the state resharded to the loop sharding propagation tied to it, body
  and condition partitioned into ``<name>_spmd`` computations;
- ``shard_map`` regions (``{manual}``, marked by propagation): entering and leaving are
  no-ops on the per-device value, the instructions inside are copied as they are;
- parameters, constants, iotas: a local parameter of the shard shape; a constant or iota is
  built whole (replicated) and resharded;
- elementwise ops, copy: operands resharded to the result's sharding, local op;
- broadcast, transpose: the operand resharded to the sharding the result implies for it;
- reshape: local when the split moves through it evenly, else via replicated;
- reduce: local reduce in the operand's sharding (padding masked with the init value), then
  ``all-reduce`` with the reducer over the devices holding the reduced dims' tiles;
- dot, and convolution without feature/batch groups (as a dot: input batch and kernel output
  feature map to the output, input and kernel input features are contracted, spatial dims are
  not split): two plans are built and the one moving fewer collective bytes is kept: (a) operands
  resharded to what the result sharding implies (gathering contracting dims), local dot; (b)
  when the operands' shardings merge into one sharding of the dot's iteration space, each
  operand refined to it (local slices), local dot over the local contracting tile (padding
  zeroed on both sides) and ``all-reduce`` of the partial sums over the contracting groups,
  then a reshard to the result sharding.

- gather: (a) split on its batch dims (from the indices) and on pass-through operand dims,
  local with each partition's indices (an embedding lookup with the ids split by batch); (b)
  an operand split along dims the index vector addresses with slice size 1 (a
  vocabulary-parallel embedding; :mod:`~xlapy.passes.spmd_gather_scatter`): indices moved into
  each partition's range, the rest masked to zero, all-reduce; the cheaper plan is kept;
- scatter: the operand kept split (indexed dims with window size 1, pass-through dims), or
  index-parallel for an add combiner (partial scatters all-reduced), or replicated, whichever
  moves fewer bytes (:mod:`~xlapy.passes.spmd_gather_scatter`);
- convolution split on spatial dims; reduce-window, select-and-scatter, pad and slice split
  on the dims they work along: halo exchange with ``collective-permute``
  (:mod:`~xlapy.passes.spmd_windowed`, :mod:`~xlapy.passes.spmd_conv`); for a convolution
  these are two more plans next to the two below;
- concatenate, dynamic-slice, dynamic-update-slice, sort, reverse (and the ops above when
  their halo exchange does not apply): local when the dims they work along are not split in the
  result (``touched_dims``);
- anything else runs replicated: operands gathered, the op as in the unpartitioned program,
  the result resharded. Ops whose meaning depends on the partition (``partition-id``,
  collectives, ...) raise :class:`~xlapy.errors.UnimplementedError` naming the instruction.
"""
from __future__ import annotations

import logging
from functools import partial
from typing import Any, Callable

import numpy as np

from ..errors import InvalidArgumentError, UnimplementedError
from ..hlo.ir import HloComputation, HloInstruction, HloModule, post_order_from
from ..hlo.opcodes import ELEMENTWISE
from ..hlo.shape import ProgramShape, Shape
from ..hlo.sharding import HloSharding
from ..hlo.sharding_util import groups_along, merge, remap
from .base import HloPass
from .hlo_utils import remove_unreachable_computations
from .context import PassContext
from .sharding_propagation import (branch_computations, contraction, gather_dims,
                                   infer_operand, reshape_mapping, touched_dims)
from . import spmd_conv, spmd_gather_scatter, spmd_windowed
from .spmd_reshard import SpmdBuilder, count_collective_bytes, local_dims

log = logging.getLogger("xlapy.passes")


def _sharding(i: HloInstruction) -> HloSharding:
    s = i.attrs.get("sharding")
    if not isinstance(s, HloSharding) or s.kind == "tuple":
        return HloSharding.replicate()
    return s


class SpmdPartitioner(HloPass):
    """XLA's ``spmd-partitioning`` for ``num_partitions`` partitions (default: the module's
    ``num_partitions``)."""

    name = "spmd-partitioning"

    def __init__(self, num_partitions: int | None = None) -> None:
        self.num_partitions = num_partitions

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        n = self.num_partitions or module.attributes.get("num_partitions", 1)
        if n < 2:
            raise InvalidArgumentError(f"SPMD partitioning of {module.name} needs "
                                       f"num_partitions >= 2, got {n}")
        for comp in module.computations:
            for i in comp.instructions:
                s = i.attrs.get("sharding")
                problems = s.problems(i.shape, n) if s is not None else []
                if problems:
                    raise InvalidArgumentError(f"SPMD partitioning of {module.name} for {n} "
                                               f"partitions: {comp.name}/{i.name}: {problems[0]}")
        old = module.entry
        self.module, self.n = module, n
        used = [int(i.attrs.get("channel_id", 0)) for i in module.instructions()]
        self.shared: dict[str, Any] = {"channel": max(used, default=0), "adders": {}}
        comp = self._computation(old, old.name + "_spmd")
        module.add_computation(comp, is_entry=True)
        module.remove_computation(old)
        remove_unreachable_computations(module)      # the unpartitioned loop bodies
        module.attributes["num_partitions"] = n
        if "entry_computation_layout" in module.attributes:
            module.attributes["entry_computation_layout"] = ProgramShape(
                [p.shape for p in comp.parameters], comp.root.shape)
        log.info("spmd-partitioning %s for %d partitions: collective bytes %s", module.name,
                 n, count_collective_bytes(comp))
        return True

    def _computation(self, old: HloComputation, name: str) -> HloComputation:
        """The per-partition version of ``old`` (whose instructions carry shardings)."""
        saved = getattr(self, "b", None), getattr(self, "local", None)
        comp = HloComputation(self.module.unique_name(name))
        self.b = SpmdBuilder(self.module, comp, self.n, self.shared)
        self.local: dict[int, tuple[HloInstruction, HloSharding]] = {}
        for instr in old.post_order():
            self.local[id(instr)] = self._partition(instr)
        root, rs = self.local[id(old.root)]
        want = old.root.attrs.get("sharding")
        if want is not None and want.kind != "tuple":
            root = self.b.reshard(root, rs, want, old.root.shape.dims)
        elif want is not None and rs.kind == "tuple" and len(want.elements) == len(rs.elements):
            root = self._reshard_tuple(root, rs, want, old.root.shape)
        comp.root = root
        _remove_dead(comp)
        self.b, self.local = saved                      # type: ignore[assignment]
        return comp

    def _while(self, instr: HloInstruction, loop: HloSharding):
        """A while whose state has one array sharding per element (``loop``, tied to the
        body's parameter and root and the condition's parameter by propagation): the state
        resharded to it, body and condition partitioned into new computations."""
        x, s = self.local[id(instr.operands[0])]
        state = self._reshard_tuple(x, s, loop, instr.shape) if s != loop else x
        body = self._computation(instr.attrs["body"], instr.attrs["body"].name + "_spmd")
        cond = self._computation(instr.attrs["condition"],
                                 instr.attrs["condition"].name + "_spmd")
        self.module.add_computation(body)
        self.module.add_computation(cond)
        w = self.b.add("while", state.shape, [state], {"body": body, "condition": cond},
                       instr.name)
        return w, loop

    def _manual(self, instr: HloInstruction, target: str | None, out: HloSharding):
        """``shard_map`` regions: entering, the operand's shard is the per-device value;
        inside, instructions are copied as they are (their shapes are already per device,
        ``partition-id`` and collectives keep their meaning); leaving, the per-device value
        is the shard of the result's sharding."""
        if target in ("SPMDFullToShardShape", "SPMDShardToFullShape"):
            x, s = self.local[id(instr.operands[0])]
            want = out if target == "SPMDShardToFullShape" else s
            if tuple(x.shape.dims) != local_dims(instr.shape.dims if target ==
                                                 "SPMDShardToFullShape" else
                                                 instr.operands[0].shape.dims, want) or (
                    target == "SPMDFullToShardShape"
                    and tuple(x.shape.dims) != tuple(instr.shape.dims)):
                raise UnimplementedError(
                    f"SPMD partitioner: {target} {instr.name}: the per-device shape "
                    f"{instr.shape.to_text(False)} does not match the shard "
                    f"{x.shape.to_text(False)} (uneven manual regions are not supported)")
            return x, (HloSharding.manual() if target == "SPMDFullToShardShape" else out)
        for o in instr.operands:
            s = self.local[id(o)][1]
            if s.kind == "tiled":
                raise UnimplementedError(
                    f"SPMD partitioner: {instr.opcode} {instr.name} combines a per-device value "
                    f"(partition-id or shard_map code) with {o.name}, sharded {s}: outside a "
                    "manual region the meaning is ambiguous")
        ops = [self.local[id(o)][0] for o in instr.operands]
        attrs = {k: v for k, v in instr.attrs.items() if k != "sharding"}
        new = self.b.add(instr.opcode, instr.shape, ops, attrs, instr.name)
        new.literal = instr.literal
        return new, HloSharding.manual()

    def _conditional(self, instr: HloInstruction, out: HloSharding):
        """Branch operands passed as they are sharded (propagation gave each branch's
        parameter its operand's sharding), the selector replicated, each branch partitioned
        into a new computation whose root has the conditional's sharding."""
        sel = self._get(instr.operands[0], HloSharding.replicate())
        ops = [self.local[id(o)][0] for o in instr.operands[1:]]
        new = []
        for b in branch_computations(instr):
            nb = self._computation(b, b.name + "_spmd")
            self.module.add_computation(nb)
            new.append(nb)
        attrs = {k: v for k, v in instr.attrs.items()
                 if k not in ("sharding", "branch_computations", "true_computation",
                              "false_computation")}
        if "branch_computations" in instr.attrs:
            attrs["branch_computations"] = tuple(new)
        else:
            attrs["true_computation"], attrs["false_computation"] = new
        return self.b.add("conditional", self._shape(instr, out), [sel] + ops, attrs,
                          instr.name), out

    # ------------------------------------------------------------------ per op
    def _get(self, instr: HloInstruction, want: HloSharding | None = None) -> HloInstruction:
        x, s = self.local[id(instr)]
        if want is None:
            return x
        return self.b.reshard(x, s, want, instr.shape.dims)

    def _shape(self, instr: HloInstruction, s: HloSharding) -> Shape:
        return Shape.array(instr.shape.element_type, local_dims(instr.shape.dims, s))

    def _partition(self, instr: HloInstruction) -> tuple[HloInstruction, HloSharding]:
        op, b = instr.opcode, self.b
        out = _sharding(instr)
        if op == "tuple":
            parts = [self.local[id(o)] for o in instr.operands]
            t = b.add("tuple", Shape.tuple([x.shape for x, _ in parts]), [x for x, _ in parts],
                      {}, instr.name)
            return t, HloSharding.tuple_of([s for _, s in parts])
        if op == "get-tuple-element":
            t, ts = self.local[id(instr.operands[0])]
            k = instr.attrs["index"]
            es = ts.elements[k] if ts.kind == "tuple" else HloSharding.replicate()
            g = b.add(op, t.shape.tuple_shapes[k], [t], {"index": k}, instr.name)
            if ts.kind == "manual":     # a loop or conditional inside a shard_map region
                return g, ts
            return b.reshard(g, es, out, instr.shape.dims), out
        full = instr.attrs.get("sharding")
        target = instr.attrs.get("custom_call_target") if op == "custom-call" else None
        if target in ("SPMDFullToShardShape", "SPMDShardToFullShape") or (
                full is not None and full.kind == "manual"):
            return self._manual(instr, target, out)
        if op == "while" and full is not None and full.kind == "tuple" \
                and all(not t.is_tuple for t in instr.shape.tuple_shapes):
            return self._while(instr, full)
        if op == "conditional" and not instr.shape.is_tuple and all(
                b.parameters[0].attrs.get("sharding") is not None
                for b in branch_computations(instr)):
            return self._conditional(instr, out)
        if op == "parameter":
            if instr.shape.is_tuple and full is not None and full.kind == "tuple":
                shape = Shape.tuple([Shape.array(t.element_type, local_dims(t.dims, e))
                                     for t, e in zip(instr.shape.tuple_shapes, full.elements)])
                out = full
            else:
                shape = self._shape(instr, out)
            p = HloInstruction("parameter", shape, attrs={"sharding": out}, name=instr.name)
            p.parameter_number = instr.parameter_number
            return b.comp.add_instruction(p), out
        if op in ("constant", "iota"):
            whole = b.add(op, instr.shape, [], dict(instr.attrs))
            whole.attrs.pop("sharding", None)
            whole.literal = instr.literal
            return b.reshard(whole, None, out, instr.shape.dims), out
        if op in ELEMENTWISE or op == "copy":
            ops = [self._get(o, out) for o in instr.operands]
            attrs = {k: v for k, v in instr.attrs.items() if k != "sharding"}
            return b.add(op, self._shape(instr, out), ops, attrs, instr.name), out
        if op in ("broadcast", "transpose"):
            want = infer_operand(instr, 0, out)
            x = self._get(instr.operands[0], want)
            return b.add(op, self._shape(instr, out), [x], {"dimensions": instr.dimensions},
                         instr.name), out
        if op == "reshape":
            return self._reshape(instr, out)
        if op == "reduce":
            return self._reduce(instr, out)
        if op in ("dot", "convolution") and contraction(instr) is not None:
            plans: tuple[Callable, ...] = (self._dot_by_output, self._dot_by_operands)
            if op == "convolution":
                plans = (partial(spmd_conv.convolution, self),
                         partial(spmd_conv.convolution_split_kernel, self)) + plans
            return self._cheapest(instr, out, plans)
        if op in _WINDOWED and not instr.shape.is_tuple:
            got = _WINDOWED[op](self, instr, out)
            if got is not None:
                return got, out
        if op == "gather" and gather_dims(instr) is not None:
            # on a tie the sliced-operand plan (all-reduce of the output) wins, as in XLA
            return self._cheapest(instr, out, (
                partial(spmd_gather_scatter.gather_sliced_operand, self), self._gather))
        if op == "scatter" and not instr.shape.is_tuple:
            return self._cheapest(instr, out, (
                partial(spmd_gather_scatter.scatter_sharded_operand, self),
                partial(spmd_gather_scatter.scatter_batch_parallel, self),
                partial(spmd_gather_scatter.scatter_index_parallel, self),
                lambda i, o: self._replicated(i, o)[0]))
        if touched_dims(instr) is not None:
            done = self._dim_local(instr, out)
            if done is not None:
                return done
        return self._replicated(instr, out)

    def _replicated(self, instr, out):
        """Any other op: its operands gathered whole, the op run on every partition as in
        the unpartitioned program, the result resharded (correct, not fast)."""
        if instr.opcode in _NOT_PARTITIONABLE:
            raise UnimplementedError(
                f"SPMD partitioner: {instr.opcode} ({instr.name}) is not supported for SPMD "
                "partitioning since the meaning is ambiguous outside a manual region")
        b = self.b
        ops = [self._whole(*self.local[id(o)], o.shape) for o in instr.operands]
        whole = b.add(instr.opcode, instr.shape, ops,
                      {k: v for k, v in instr.attrs.items() if k != "sharding"}, instr.name)
        whole.literal = instr.literal
        if instr.shape.is_tuple:
            return whole, HloSharding.tuple_of(
                [HloSharding.replicate()] * len(instr.shape.tuple_shapes))
        log.debug("spmd-partitioning: %s runs replicated", instr.name)
        return b.reshard(whole, None, out, instr.shape.dims), out

    def _reshard_tuple(self, x: HloInstruction, s: HloSharding, want: HloSharding,
                       shape: Shape) -> HloInstruction:
        """A flat tuple of arrays resharded element by element."""
        parts = []
        for k, sub in enumerate(shape.tuple_shapes):
            g = self.b.add("get-tuple-element", x.shape.tuple_shapes[k], [x], {"index": k})
            parts.append(self.b.reshard(g, s.elements[k], want.elements[k], sub.dims))
        return self.b.add("tuple", Shape.tuple([p.shape for p in parts]), parts)

    def _whole(self, x: HloInstruction, s: HloSharding, shape: Shape) -> HloInstruction:
        """``x`` (local under ``s``) gathered to the global value; tuples element-wise."""
        if not shape.is_tuple:
            return self.b.reshard(x, s, None, shape.dims)
        if s.kind != "tuple" or all(e.kind == "replicated" for e in s.elements):
            return x
        parts = []
        for k, sub in enumerate(shape.tuple_shapes):
            g = self.b.add("get-tuple-element", x.shape.tuple_shapes[k], [x], {"index": k})
            parts.append(self._whole(g, s.elements[k], sub))
        return self.b.add("tuple", Shape.tuple([p.shape for p in parts]), parts)

    def _dim_local(self, instr, out):
        """An op of ``DIM_LOCAL`` whose touched dims are not split in the result: array
        operands resharded to the result's sharding, scalars replicated, the op run locally
        (slice bounds and dynamic-slice sizes of the other dims made local)."""
        b = self.b
        touched = touched_dims(instr)
        if out.kind == "tiled" and any(out.data_tiles[d] > 1 for d in touched):
            return None
        rank = len(instr.shape.dims)
        ops = [self._get(o, out if len(o.shape.dims) == rank else HloSharding.replicate())
               for o in instr.operands]
        attrs = {k: v for k, v in instr.attrs.items() if k != "sharding"}
        shape = self._shape(instr, out)
        if instr.opcode == "slice":
            attrs["slice"] = tuple(t if d in touched else (0, shape.dims[d], 1)
                                   for d, t in enumerate(instr.attrs["slice"]))
        if instr.opcode == "dynamic-slice":
            attrs["dynamic_slice_sizes"] = tuple(shape.dims)
        return b.add(instr.opcode, shape, ops, attrs, instr.name), out

    def _cheapest(self, instr, out, plans):
        """Build every plan that applies; keep the one whose live collectives move the fewest
        bytes (the others' instructions are dead and removed at the end)."""
        b = self.b
        built: list[tuple[int, int, HloInstruction]] = []
        for plan in plans:
            start = len(b.comp.instructions)
            got = plan(instr, out)
            if got is None:
                continue
            live = {id(i) for i in post_order_from([got])}
            cost = sum(i.shape.byte_size for i in b.comp.instructions[start:]
                       if id(i) in live and i.opcode in ("all-gather", "all-reduce",
                                                         "all-to-all", "collective-permute"))
            built.append((cost, len(built), got))
        built.sort(key=lambda p: p[:2])
        return built[0][2], out

    def _gather(self, instr, out):
        """Gather split only on the batch dims (from the indices; operand batching dims split
        alike: index-parallel) and on operand dims sliced whole (pass-through): each
        partition gathers its rows with its own indices."""
        omap, imap = gather_dims(instr)
        rank = len(instr.shape.dims)
        mapped = {d for d in omap + imap if d is not None}
        res = remap(out, [d if d in mapped else None for d in range(rank)], rank)
        ot, it = infer_operand(instr, 0, res), infer_operand(instr, 1, res)
        operand = self._get(instr.operands[0], ot)
        indices = self._get(instr.operands[1], it)
        attrs = {k: v for k, v in instr.attrs.items() if k != "sharding"}
        batching = instr.attrs.get("operand_batching_dims", ())
        attrs["slice_sizes"] = tuple(
            n if omap[d] is None or d in batching else operand.shape.dims[d]
            for d, n in enumerate(instr.attrs["slice_sizes"]))
        g = self.b.add("gather", self._shape(instr, res), [operand, indices], attrs, instr.name)
        return self.b.reshard(g, res, out, instr.shape.dims)

    def _reshape(self, instr, out):
        b, src = self.b, instr.operands[0]
        want = infer_operand(instr, 0, out)
        if want is not None and reshape_mapping(src.shape.dims, instr.shape.dims, want) == out:
            x = self._get(src, want)
            return b.add("reshape", self._shape(instr, out), [x], {}, instr.name), out
        x = self._get(src, HloSharding.replicate())
        whole = b.add("reshape", instr.shape, [x], {}, instr.name)
        return b.reshard(whole, None, out, instr.shape.dims), out

    def _reduce(self, instr, out):
        b = self.b
        src, init = instr.operands
        x, s = self.local[id(src)]
        dims = instr.dimensions
        iv = self._get(init, HloSharding.replicate())
        x = b.mask(x, s, dims, src.shape.dims, iv)
        kept = [d for d in range(len(src.shape.dims)) if d not in dims]
        res = remap(s, [kept.index(d) if d in kept else None
                        for d in range(len(src.shape.dims))], len(kept))
        local = b.add("reduce", self._shape(instr, res), [x, iv],
                      {"dimensions": dims, "to_apply": instr.attrs["to_apply"]}, instr.name)
        split = [d for d in dims if s.kind == "tiled" and s.data_tiles[d] > 1]
        if split:
            local = b.all_reduce(local, groups_along(s, split), instr.attrs["to_apply"])
        return b.reshard(local, res, out, instr.shape.dims), out

    # ------------------------------------------------------------------ dot
    def _dot_local(self, instr, lhs, rhs, s_out):
        attrs = {k: v for k, v in instr.attrs.items() if k != "sharding"}
        return self.b.add(instr.opcode, self._shape(instr, s_out), [lhs, rhs], attrs,
                          instr.name)

    def _dot_by_output(self, instr, out):
        lmap, rmap, _, _ = contraction(instr)
        rank = len(instr.shape.dims)
        mapped = {d for d in lmap + rmap if d is not None}
        res = remap(out, [d if d in mapped else None for d in range(rank)], rank)
        lhs = self._get(instr.operands[0], infer_operand(instr, 0, res))
        rhs = self._get(instr.operands[1], infer_operand(instr, 1, res))
        return self.b.reshard(self._dot_local(instr, lhs, rhs, res), res, out,
                              instr.shape.dims)

    def _dot_by_operands(self, instr, out):
        b = self.b
        lo, ro = instr.operands
        lmap, rmap, lc, rc = contraction(instr)
        rank = len(instr.shape.dims)
        space = rank + len(lc)
        lsp = [lmap[d] if lmap[d] is not None else rank + lc.index(d) if d in lc else None
               for d in range(len(lmap))]
        rsp = [rmap[d] if rmap[d] is not None else rank + rc.index(d) if d in rc else None
               for d in range(len(rmap))]
        (lx, ls), (rx, rs) = self.local[id(lo)], self.local[id(ro)]
        d = merge(remap(ls, lsp, space), remap(rs, rsp, space))
        if d is None:
            return None
        inv_l: list[int | None] = [lsp.index(k) if k in lsp else None for k in range(space)]
        inv_r: list[int | None] = [rsp.index(k) if k in rsp else None for k in range(space)]
        lt, rt = remap(d, inv_l, len(lmap)), remap(d, inv_r, len(rmap))
        lhs = b.reshard(lx, ls, lt, lo.shape.dims)
        rhs = b.reshard(rx, rs, rt, ro.shape.dims)
        k_split = [k for k in range(rank, space) if d.kind == "tiled" and d.data_tiles[k] > 1]
        if k_split:
            et = lo.shape.element_type
            zl = b.constant(np.zeros((), et.dtype), et)
            zr = b.constant(np.zeros((), ro.shape.element_type.dtype), ro.shape.element_type)
            lhs = b.mask(lhs, lt, lc, lo.shape.dims, zl)
            rhs = b.mask(rhs, rt, rc, ro.shape.dims, zr)
        mapped = {x for x in lmap + rmap if x is not None}
        res = remap(d, [x if x in mapped else None for x in range(rank)] + [None] * len(lc), rank)
        local = self._dot_local(instr, lhs, rhs, res)
        if k_split:
            local = b.all_reduce(local, groups_along(d, k_split), b.adder(instr.shape.element_type))
        return b.reshard(local, res, out, instr.shape.dims)


#: Ops split along the dims they work along, partitioned with halo exchanges.
_WINDOWED = {"reduce-window": spmd_windowed.reduce_window, "pad": spmd_windowed.pad_or_slice,
             "slice": spmd_windowed.pad_or_slice,
             "select-and-scatter": spmd_windowed.select_and_scatter}

#: Ops whose meaning depends on the partition (XLA rejects them outside manual regions).
_NOT_PARTITIONABLE = frozenset({"partition-id", "replica-id", "all-reduce", "all-gather",
                                "reduce-scatter", "all-to-all", "collective-permute",
                                "collective-broadcast", "send", "recv", "infeed", "outfeed"})


def _remove_dead(comp: HloComputation) -> None:
    live = {id(i) for i in post_order_from([comp.root] + comp.parameters)}
    dead = [i for i in comp.instructions if id(i) not in live]
    for i in dead:
        i.users = []
    for i in dead:
        i.detach()
    comp.instructions = [i for i in comp.instructions if id(i) in live]


__all__ = ["SpmdPartitioner"]
