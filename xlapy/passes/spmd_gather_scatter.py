"""Gather and scatter with a sharded operand in the SPMD partitioner (XLA's
``gather_scatter_handler.cc``: the trivially-sliced-operand, operand-passthrough and
index-parallel forms).

- gather, operand split on dims the index vector addresses with slice size 1
  (``PartitionGatherTrivialSlicedOperandDimensions``; a vocabulary-parallel embedding, or a
  multi-dim index vector into a table split on several dims): the split components of the start
  indices clamped as gather clamps them and moved into the partition's range, the local gather,
  rows whose start falls outside the partition zeroed, an ``all-reduce`` add over the devices
  holding the split dims' tiles;
- scatter, operand split on dims the index vector addresses with window size 1 or on dims the
  update windows cover whole (pass-through): the operand stays split, the updates are split
  like it on the pass-through dims, the split components of the indices are moved into the
  partition's range, and the local scatter drops what falls outside (scatter skips windows out
  of bounds) — no collective;
- scatter with batching dims (``vmap``), the operand split on them: indices and updates split
  alike, local scatter (XLA's explicit-batch form; a gather with batching dims is the
  partitioner's pass-through plan with the batching dims mapped like batch dims);
- scatter with an add combiner and the indices split on their batch dims (index-parallel):
  each partition scatters its updates (padding rows zeroed) into zeros, an ``all-reduce`` adds
  the partitions' contributions, the operand is added.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..hlo.ir import HloInstruction
from ..hlo.shape import Shape
from ..hlo.sharding import HloSharding
from ..hlo.sharding_util import groups_along, invert, merge, remap
from .sharding_propagation import gather_dims
from .spmd_reshard import SpmdBuilder, local_dims

if TYPE_CHECKING:
    from .spmd_partitioner import SpmdPartitioner


def _split_dims(s: HloSharding) -> list[int]:
    if s.kind != "tiled" or s.subgroups not in ((), ("replicated",)):
        return []
    return [d for d, t in enumerate(s.data_tiles) if t > 1]


def _shift_indices(b: SpmdBuilder, idx: HloInstruction, ivd: int, smap: list[int],
                   s: HloSharding, local: tuple[int, ...], global_dims: tuple[int, ...],
                   clamp: bool) -> tuple[HloInstruction, HloInstruction | None]:
    """``idx`` with the components addressing dims split by ``s`` made local (minus the
    partition's offset; with ``clamp``, first clamped to ``[0, n - 1]`` as gather does), and
    with ``clamp`` the predicate (shape: ``idx`` with the index vector dim of size 1) that every
    such start lies in the partition's ``local`` rows."""
    it = idx.shape.element_type
    rank = len(idx.shape.dims)
    one = ivd == rank
    comp_dims = list(idx.shape.dims) if one else [1 if k == ivd else n
                                                   for k, n in enumerate(idx.shape.dims)]
    cshape = Shape.array(it, comp_dims)
    pshape = Shape.array("pred", comp_dims)

    def scalar(v: int | HloInstruction) -> HloInstruction:
        if isinstance(v, int):
            v = b.constant(np.asarray(v, it.dtype), it)
        elif v.shape.element_type != it:
            v = b.add("convert", Shape.array(it, ()), [v])
        return b.add("broadcast", cshape, [v], {"dimensions": ()})

    comps, ok = [], None
    for k, d in enumerate(smap):
        c = idx if one else b.add("slice", cshape, [idx], {"slice": tuple(
            (k, k + 1, 1) if j == ivd else (0, n, 1) for j, n in enumerate(idx.shape.dims))})
        if s.data_tiles[d] > 1:
            if clamp:
                c = b.add("clamp", cshape, [scalar(0), c, scalar(global_dims[d] - 1)])
            c = b.add("subtract", cshape, [c, scalar(b.offset(s, d, local[d]))])
            if clamp:
                inside = b.add("and", pshape, [
                    b.add("compare", pshape, [c, scalar(0)], {"direction": "GE"}),
                    b.add("compare", pshape, [c, scalar(local[d])], {"direction": "LT"})])
                ok = inside if ok is None else b.add("and", pshape, [ok, inside])
        comps.append(c)
    if one:
        return comps[0], ok
    return b.add("concatenate", idx.shape, comps, {"dimensions": (ivd,)}), ok


def gather_sliced_operand(part: "SpmdPartitioner", instr: HloInstruction, out: HloSharding
                          ) -> HloInstruction | None:
    """A gather whose operand is split on dims its index vector addresses with slice size 1
    (and maybe on pass-through dims), its indices maybe split on batch dims by other devices:
    local masked gathers added by an all-reduce over the devices holding the sliced dims'
    tiles (see the module docstring). Works in one sharding ``D`` of the output dims plus one
    axis per sliced dim, merged from both operands' shardings."""
    b, a = part.b, instr.attrs
    operand, indices = instr.operands
    dims = gather_dims(instr)
    s, si = part.local[id(operand)][1], part.local[id(indices)][1]
    smap = list(a.get("start_index_map", ()))
    if dims is None or not _split_dims(s):
        return None
    omap, imap = dims
    sliced = [d for d in _split_dims(s) if omap[d] is None]
    if not sliced or any(d not in smap or a["slice_sizes"][d] != 1 for d in sliced):
        return None
    rank = len(instr.shape.dims)
    space = rank + len(sliced)
    osp = [omap[d] if omap[d] is not None else rank + sliced.index(d) if d in sliced else None
           for d in range(len(operand.shape.dims))]
    whole = remap(s, osp, space)
    d_s = merge(whole, remap(si, imap, space)) if si.kind == "tiled" else None
    d_s = d_s or whole
    ot = remap(d_s, invert(osp, space), len(operand.shape.dims))
    it = remap(d_s, invert(imap, space), len(indices.shape.dims))
    res = remap(d_s, [k if k < rank else None for k in range(space)], rank)
    x, idx = part._get(operand, ot), part._get(indices, it)
    ivd = a.get("index_vector_dim", len(indices.shape.dims))
    local_idx, ok = _shift_indices(b, idx, ivd, smap, ot, tuple(x.shape.dims),
                                   tuple(operand.shape.dims), clamp=True)
    attrs = {k: v for k, v in a.items() if k != "sharding"}
    attrs["slice_sizes"] = tuple(x.shape.dims[d] if omap[d] is not None and d not in a.get(
        "operand_batching_dims", ()) else n for d, n in enumerate(a["slice_sizes"]))
    shape = Shape.array(instr.shape.element_type, local_dims(instr.shape.dims, res))
    g = b.add("gather", shape, [x, local_idx], attrs, instr.name)
    batch = [n for k, n in enumerate(idx.shape.dims) if k != ivd]
    ok = b.add("reshape", Shape.array("pred", batch), [ok])
    offset = list(a.get("offset_dims", ()))
    batch_out = [k for k in range(rank) if k not in offset]
    okb = b.add("broadcast", Shape.array("pred", shape.dims), [ok],
                {"dimensions": tuple(batch_out)})
    et = instr.shape.element_type
    zero = b.add("broadcast", shape, [b.constant(np.zeros((), et.dtype), et)],
                 {"dimensions": ()})
    g = b.add("select", shape, [okb, g, zero])
    g = b.all_reduce(g, groups_along(d_s, list(range(rank, space))), b.adder(et))
    return b.reshard(g, res, out, instr.shape.dims)


def _scatter_layout(instr: HloInstruction):
    """(window operand dims, their update dims, update scatter dims, index batch dims, ivd)."""
    a = instr.attrs
    operand, indices, updates = instr.operands
    inserted = list(a.get("inserted_window_dims", ()))
    window = [d for d in range(len(operand.shape.dims)) if d not in inserted]
    upd_window = list(a.get("update_window_dims", ()))
    scatter = [u for u in range(len(updates.shape.dims)) if u not in upd_window]
    ivd = a.get("index_vector_dim", len(indices.shape.dims))
    batch = [k for k in range(len(indices.shape.dims)) if k != ivd]
    return window, upd_window, scatter, batch, ivd


def _plain_scatter(instr: HloInstruction) -> bool:
    a = instr.attrs
    return len(instr.operands) == 3 and not instr.shape.is_tuple \
        and not a.get("input_batching_dims") and not a.get("scatter_indices_batching_dims")


def scatter_sharded_operand(part: "SpmdPartitioner", instr: HloInstruction, out: HloSharding
                            ) -> HloInstruction | None:
    """A scatter whose operand stays split (on indexed dims with window size 1 and on
    pass-through dims): local scatter with shifted indices, no collective."""
    if not _plain_scatter(instr):
        return None
    b, a = part.b, instr.attrs
    operand, indices, updates = instr.operands
    window, upd_window, _, _, ivd = _scatter_layout(instr)
    smap = list(a.get("scatter_dims_to_operand_dims", ()))
    size = {d: updates.shape.dims[u] for d, u in zip(window, upd_window)}
    for s in (out, part.local[id(operand)][1]):
        split = _split_dims(s)
        if split and all(size.get(d, 1) == 1 if d in smap
                         else size.get(d) == operand.shape.dims[d] for d in split):
            break
    else:
        return None
    x = part._get(operand, s)
    to_upd: list[int | None] = [None] * len(operand.shape.dims)
    for d, u in zip(window, upd_window):
        if d in split and d not in smap:
            to_upd[d] = u
    upd = part._get(updates, remap(s, to_upd, len(updates.shape.dims)))
    idx = part._get(indices, HloSharding.replicate())
    idx, _ = _shift_indices(b, idx, ivd, smap, s, tuple(x.shape.dims),
                            tuple(operand.shape.dims), clamp=False)
    attrs = {k: v for k, v in a.items() if k != "sharding"}
    y = b.add("scatter", x.shape, [x, idx, upd], attrs, instr.name)
    return b.reshard(y, s, out, instr.shape.dims)


def scatter_batch_parallel(part: "SpmdPartitioner", instr: HloInstruction, out: HloSharding
                           ) -> HloInstruction | None:
    """A scatter with batching dims (``vmap``) whose operand is split only on its batching
    dims: indices and updates split alike on the matching batch dims, local scatter."""
    a = instr.attrs
    obatch = list(a.get("input_batching_dims", ()))
    if len(instr.operands) != 3 or instr.shape.is_tuple or not obatch:
        return None
    operand, indices, updates = instr.operands
    _, _, scatter, batch, _ = _scatter_layout(instr)
    for s in (out, part.local[id(operand)][1]):
        split = _split_dims(s)
        if split and set(split) <= set(obatch):
            break
    else:
        return None
    to_idx: list[int | None] = [None] * len(operand.shape.dims)
    to_upd: list[int | None] = [None] * len(operand.shape.dims)
    for ob, ib in zip(obatch, a.get("scatter_indices_batching_dims", ())):
        to_idx[ob] = ib
        to_upd[ob] = scatter[batch.index(ib)]
    x = part._get(operand, s)
    idx = part._get(indices, remap(s, to_idx, len(indices.shape.dims)))
    upd = part._get(updates, remap(s, to_upd, len(updates.shape.dims)))
    attrs = {k: v for k, v in a.items() if k != "sharding"}
    y = part.b.add("scatter", x.shape, [x, idx, upd], attrs, instr.name)
    return part.b.reshard(y, s, out, instr.shape.dims)


def _adds(comp) -> bool:
    root = comp.root
    return root.opcode == "add" and len(comp.parameters) == 2 \
        and set(map(id, root.operands)) == set(map(id, comp.parameters))


def scatter_index_parallel(part: "SpmdPartitioner", instr: HloInstruction, out: HloSharding
                           ) -> HloInstruction | None:
    """An add-combining scatter whose indices are split on batch dims: partial scatters into
    zeros, all-reduce, plus the operand."""
    if not _plain_scatter(instr) or not _adds(instr.attrs["to_apply"]):
        return None
    b = part.b
    operand, indices, updates = instr.operands
    _, _, scatter, batch, ivd = _scatter_layout(instr)
    si = part.local[id(indices)][1]
    split = [k for k in _split_dims(si) if k != ivd]
    if not split:
        return None
    rank_i = len(indices.shape.dims)
    ri = remap(si, [None if k == ivd else k for k in range(rank_i)], rank_i)
    to_upd: list[int | None] = [None] * rank_i
    for k, u in zip(batch, scatter):
        to_upd[k] = u
    ru = remap(ri, to_upd, len(updates.shape.dims))
    idx = part._get(indices, ri)
    et = instr.shape.element_type
    zero = b.constant(np.zeros((), et.dtype), et)
    upd = b.mask(part._get(updates, ru), ru, scatter, updates.shape.dims, zero)
    base = b.add("broadcast", instr.shape, [zero], {"dimensions": ()})
    attrs = {k: v for k, v in instr.attrs.items() if k != "sharding"}
    y = b.add("scatter", instr.shape, [base, idx, upd], attrs, instr.name)
    y = b.all_reduce(y, groups_along(ri, split), b.adder(et))
    y = b.add("add", instr.shape, [part._get(operand, HloSharding.replicate()), y])
    return b.reshard(y, HloSharding.replicate(), out, instr.shape.dims)


__all__ = ["gather_sliced_operand", "scatter_sharded_operand", "scatter_batch_parallel",
           "scatter_index_parallel"]
