"""Sharding propagation (XLA's ``ShardingPropagation``, GSPMD mode).

Gives every instruction of the entry computation (and of its while loops) a ``sharding`` from
the ones the user provided: parameters, the root, and ``custom-call(x),
custom_call_target="Sharding"`` constraints (each becomes a ``copy`` carrying the constraint,
so the partitioner reshards there; an unsharded operand gets the constraint too). Provided
shardings are never changed. For aggressiveness levels 0..2 the pass walks
the computation in post order inferring from operands (forward), then in reverse post order
inferring from users (backward), until nothing changes; level 0 passes only shape-preserving
ops (elementwise, copy, transpose, reshape), level 1 adds reductions and dots, level 2
broadcasts. An inferred sharding is replaced only by a more specific one (more pieces), so
the walk ends; the result depends only on the module.

Rules: elementwise ops take their most specific operand's sharding and give theirs to every
operand; broadcast, transpose and reduce move shardings through their dimension mapping
(reduced dims become replication); slice and pad pass it unchanged, concatenate with the dim
it concatenates unsplit; reshape moves a split dimension when it is the major
non-unit dimension of a merged/split group and the tile count divides it; dot maps batch and
non-contracting dims from each operand (the larger operand first, the other merged in) and,
backward, gives each operand the output's split of its own dims; a convolution without
groups is the same with input batch and kernel output feature as the mapped dims, and its
input's spatial splits map to the output's spatial dims when the kernel is not split there
(the partitioner exchanges halos); a reduce-window and a select-and-scatter keep every split;
a scatter's result and operand share their sharding.
Instructions left without a sharding, and unsharded parameters whose
``allow_spmd_sharding_propagation_to_parameters`` entry is false, are replicated. Maximal
and manual shardings are not propagated.
"""
from __future__ import annotations

import logging
from typing import Callable

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.opcodes import ELEMENTWISE
from ..hlo.sharding import HloSharding
from ..hlo.sharding_util import invert, merge, more_specific, remap
from .base import HloPass
from .context import PassContext

log = logging.getLogger("xlapy.passes")

_LEVEL0 = frozenset({"copy", "transpose", "reshape", "get-tuple-element", "tuple"})
#: Ops that act along some dims and leave the others as they are (see ``touched_dims``).
DIM_LOCAL = frozenset({"slice", "pad", "concatenate", "dynamic-slice", "dynamic-update-slice",
                       "reduce-window", "select-and-scatter", "sort", "reverse"})
_LEVEL1 = frozenset({"reduce", "dot", "convolution", "gather", "scatter"}) | DIM_LOCAL
_LEVEL2 = frozenset({"broadcast"})
#: Ops whose result keeps its (first) operand's splits, also along the dims they work along
#: (as XLA; the partitioner exchanges halos there).
_KEEP_SPLITS = frozenset({"reduce-window", "select-and-scatter", "pad", "slice"})


def _level(instr: HloInstruction) -> int | None:
    """The lowest aggressiveness at which ``instr`` propagates; None: never."""
    if instr.opcode in ELEMENTWISE or instr.opcode in _LEVEL0:
        return 0
    if instr.opcode in _LEVEL1:
        return 1
    if instr.opcode in _LEVEL2:
        return 2
    return None


def _array_sharding(s: HloSharding | None) -> HloSharding | None:
    """``s`` when it is a sharding propagation moves (tiled or replicated)."""
    return s if s is not None and s.kind in ("tiled", "replicated") else None


# ----------------------------------------------------------------------------- reshape
def reshape_mapping(src: tuple[int, ...], dst: tuple[int, ...], s: HloSharding
                    ) -> HloSharding | None:
    """``s`` of a ``src``-shaped value moved through a reshape to ``dst``, when each split
    dimension is the major non-unit dimension of its group and its tile count divides both
    sides; None otherwise."""
    if s.kind != "tiled":
        return s
    tiles = s.data_tiles
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        gi: list[int] = []
        gj: list[int] = []
        pi = pj = 1
        while True:
            if pi <= pj and i < len(src) and (not gi or pi < pj or src[i] == 1):
                gi.append(i)
                pi *= src[i]
                i += 1
            elif j < len(dst) and (pj < pi or not gj or dst[j] == 1):
                gj.append(j)
                pj *= dst[j]
                j += 1
            else:
                break
            if pi == pj and (i == len(src) or src[i] != 1) and (j == len(dst) or dst[j] != 1):
                break
        if pi != pj:
            return None
        groups.append((gi, gj))
    mapping: list[int | None] = [None] * len(src)
    for gi, gj in groups:
        split = [d for d in gi if tiles[d] > 1]
        if not split:
            continue
        major_src = next((d for d in gi if src[d] != 1), None)
        major_dst = next((d for d in gj if dst[d] != 1), None)
        if len(split) != 1 or split[0] != major_src or major_dst is None:
            return None
        t = tiles[split[0]]
        if src[split[0]] % t or dst[major_dst] % t:
            return None
        mapping[split[0]] = major_dst
    for d in range(len(src)):
        if tiles[d] > 1 and mapping[d] is None:
            return None
    return remap(s, mapping, len(dst))


# ----------------------------------------------------------------------------- dot
def dot_dims(instr: HloInstruction) -> tuple[list[int | None], list[int | None]]:
    """For lhs and rhs: the output dim of each operand dim (None for contracting dims)."""
    a = instr.attrs
    lb, rb = list(a.get("lhs_batch_dims", ())), list(a.get("rhs_batch_dims", ()))
    lc, rc = list(a.get("lhs_contracting_dims", ())), list(a.get("rhs_contracting_dims", ()))
    lrank, rrank = len(instr.operands[0].shape.dims), len(instr.operands[1].shape.dims)
    lfree = [d for d in range(lrank) if d not in lb and d not in lc]
    rfree = [d for d in range(rrank) if d not in rb and d not in rc]
    lmap: list[int | None] = [None] * lrank
    rmap: list[int | None] = [None] * rrank
    for k, (x, y) in enumerate(zip(lb, rb)):
        lmap[x] = k
        rmap[y] = k
    for k, d in enumerate(lfree):
        lmap[d] = len(lb) + k
    for k, d in enumerate(rfree):
        rmap[d] = len(lb) + len(lfree) + k
    return lmap, rmap


def contraction(instr: HloInstruction
                ) -> tuple[list[int | None], list[int | None], list[int], list[int]] | None:
    """For a dot or a convolution without feature/batch groups: the output dim of each lhs
    and rhs dim (None: contracted, or a convolution's spatial dim, which must not be split)
    and the contracting dims of each side, paired in order; None for other convolutions."""
    if instr.opcode == "dot":
        dl, dr = dot_dims(instr)
        return (dl, dr, list(instr.attrs.get("lhs_contracting_dims", ())),
                list(instr.attrs.get("rhs_contracting_dims", ())))
    if instr.attrs.get("feature_group_count", 1) != 1 \
            or instr.attrs.get("batch_group_count", 1) != 1:
        return None
    dn = instr.attrs["dim_labels"]
    lmap: list[int | None] = [None] * len(instr.operands[0].shape.dims)
    rmap: list[int | None] = [None] * len(instr.operands[1].shape.dims)
    lmap[dn.input_batch] = dn.output_batch
    rmap[dn.kernel_output_feature] = dn.output_feature
    return lmap, rmap, [dn.input_feature], [dn.kernel_input_feature]


def gather_dims(instr: HloInstruction) -> tuple[list[int | None], list[int | None]] | None:
    """For a gather: the output dim of each operand dim (dims sliced whole and not indexed:
    pass-through; operand batching dims: the output dim of their indices batching dim) and of
    each indices dim (the batch dims; not the index vector dim)."""
    a = instr.attrs
    operand, indices = instr.operands
    rank = len(instr.shape.dims)
    offset = list(a.get("offset_dims", ()))
    batch_out = [d for d in range(rank) if d not in offset]
    ivd = a.get("index_vector_dim", len(indices.shape.dims))
    imap: list[int | None] = [None] * len(indices.shape.dims)
    for k, d in enumerate(d for d in range(len(indices.shape.dims)) if d != ivd):
        imap[d] = batch_out[k]
    obatch = list(a.get("operand_batching_dims", ()))
    kept = [d for d in range(len(operand.shape.dims))
            if d not in a.get("collapsed_slice_dims", ()) and d not in obatch]
    omap: list[int | None] = [None] * len(operand.shape.dims)
    sizes = a.get("slice_sizes", ())
    for k, d in enumerate(kept):
        if sizes[d] == operand.shape.dims[d] and d not in a.get("start_index_map", ()):
            omap[d] = offset[k]
    for ob, ib in zip(obatch, a.get("start_indices_batching_dims", ())):
        omap[ob] = imap[ib]
    return omap, imap


def conv_spatial_lhs_map(instr: HloInstruction, kernel: HloSharding | None = None
                         ) -> list[int | None] | None:
    """For a convolution without groups: ``contraction``'s lhs map with each input spatial
    dim also mapped to its output spatial dim (a spatial split is partitioned with a halo
    exchange), except dims with window reversal; None when the kernel
    (``kernel``) is split on a spatial dim (XLA then keeps the spatial dims unsplit)."""
    dims = contraction(instr)
    if dims is None or instr.opcode != "convolution":
        return None
    dn, window = instr.attrs["dim_labels"], instr.attrs.get("window")
    if kernel is not None and kernel.kind == "tiled" and any(
            kernel.data_tiles[d] > 1 for d in dn.kernel_spatial):
        return None
    lmap = list(dims[0])
    for k, d in enumerate(dn.input_spatial):
        wd = window.dims[k] if window is not None and k < len(window.dims) else None
        if wd is None or not wd.rhs_reversal:
            lmap[d] = dn.output_spatial[k]
    return lmap


# ----------------------------------------------------------------------------- rules
def infer_from_operands(instr: HloInstruction, get: Callable) -> HloSharding | None:
    """The sharding of ``instr`` implied by its operands' (forward)."""
    op = instr.opcode
    rank = len(instr.shape.dims) if not instr.shape.is_tuple else -1
    if op in ELEMENTWISE or op == "copy":
        best = None
        for o in instr.operands:
            s = _array_sharding(get(o))
            if s is not None and len(o.shape.dims) == rank and (best is None
                                                               or more_specific(s, best)):
                best = s
        return best
    if op == "get-tuple-element":
        t, k = instr.operands[0], instr.attrs["index"]
        if t.opcode == "tuple":
            return _array_sharding(get(t.operands[k]))
        ts = get(t)
        return _array_sharding(ts.elements[k]) if ts is not None and ts.kind == "tuple" \
            and k < len(ts.elements) else None
    src = _array_sharding(get(instr.operands[0])) if instr.operands else None
    if op in ("dot", "convolution", "gather"):
        dims = contraction(instr) if op != "gather" else gather_dims(instr)
        if dims is None:
            return None
        lmap, rmap = dims[0], dims[1]
        ls, rs = (_array_sharding(get(o)) for o in instr.operands)
        if op == "convolution":
            lmap = conv_spatial_lhs_map(instr, rs) or lmap
        cands = []
        for s, m, o in ((ls, lmap, instr.operands[0]), (rs, rmap, instr.operands[1])):
            if s is not None:
                cands.append((-o.shape.byte_size, remap(s, m, rank)))
        if not cands:
            return None
        cands.sort(key=lambda c: c[0])         # the larger operand first
        out = cands[0][1]
        for _, s in cands[1:]:
            merged = merge(out, s)
            if merged is not None:
                out = merged
        return out
    if src is None:
        return None
    if op in _KEEP_SPLITS and not instr.shape.is_tuple:
        return src                      # every split kept: the partitioner exchanges halos
    if op == "scatter":
        return src if len(instr.operands) == 3 and not instr.shape.is_tuple else None
    touched = touched_dims(instr)
    if touched is not None:
        return remap(src, [None if d in touched else d for d in range(rank)], rank)
    if op == "transpose":
        perm = instr.dimensions
        return remap(src, [perm.index(i) for i in range(rank)], rank)
    if op == "broadcast":
        return remap(src, list(instr.dimensions), rank)
    if op == "reshape":
        return reshape_mapping(tuple(instr.operands[0].shape.dims), tuple(instr.shape.dims),
                               src)
    if op == "reduce" and not instr.shape.is_tuple:
        reduced = instr.dimensions
        kept = [d for d in range(len(instr.operands[0].shape.dims)) if d not in reduced]
        return remap(src, [kept.index(d) if d in kept else None
                           for d in range(len(instr.operands[0].shape.dims))], rank)
    return None


def infer_operand(user: HloInstruction, index: int, s: HloSharding) -> HloSharding | None:
    """The sharding of ``user``'s operand ``index`` implied by ``user``'s sharding ``s``."""
    op = user.opcode
    operand = user.operands[index]
    orank = len(operand.shape.dims) if not operand.shape.is_tuple else -1
    s = _array_sharding(s)
    if s is None:
        return None
    if op in ELEMENTWISE or op == "copy":
        return s if orank == len(user.shape.dims) else None
    if op == "get-tuple-element":
        return None
    rank = len(user.shape.dims)
    if op in _KEEP_SPLITS and op != "select-and-scatter" and not user.shape.is_tuple:
        return s if index == 0 else None
    if op == "select-and-scatter":      # operand, result and source split alike
        return s if index < 2 else None
    if op == "scatter":                 # the result is the operand, updated
        return s if index == 0 and len(user.operands) == 3 else None
    touched = touched_dims(user)
    if touched is not None:
        if orank != rank:
            return None                 # a scalar operand (pad value, init, start index)
        return remap(s, [None if d in touched else d for d in range(rank)], rank)
    if op == "transpose":
        return remap(s, list(user.dimensions), orank)
    if op == "broadcast":
        return remap(s, invert(list(user.dimensions), rank), orank)
    if op == "reshape":
        return reshape_mapping(tuple(user.shape.dims), tuple(operand.shape.dims), s)
    if op == "reduce" and index == 0 and not user.shape.is_tuple:
        kept = [d for d in range(orank) if d not in user.dimensions]
        return remap(s, kept, orank)
    if op in ("dot", "convolution", "gather"):
        dims = contraction(user) if op != "gather" else gather_dims(user)
        if dims is None:
            return None
        m = dims[0] if index == 0 else dims[1]
        if op == "convolution" and index == 0:
            m = conv_spatial_lhs_map(user, _array_sharding(user.operands[1].attrs.get(
                "sharding"))) or m
        return remap(s, invert(m, rank), orank)
    return None


class ShardingPropagation(HloPass):
    """XLA's ``sharding-propagation`` for the entry computation (see the module docstring)."""

    name = "sharding-propagation"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        comp = module.entry
        changed = self._constraints(comp)
        self._manual_regions(comp)
        provided = {id(i) for i in comp.instructions if "sharding" in i.attrs}
        changed |= len(provided) < len(comp.instructions)
        allow_params = module.attributes.get("allow_spmd_sharding_propagation_to_parameters")
        allow_out = module.attributes.get("allow_spmd_sharding_propagation_to_output",
                                          (True,))
        for p in comp.parameters:
            n = p.parameter_number
            allowed = allow_params is not None and (
                allow_params[n] if n < len(allow_params) else allow_params[-1])
            if id(p) not in provided and not allowed:
                p.attrs["sharding"] = HloSharding.replicate()
                provided.add(id(p))
        root = comp.root
        if id(root) not in provided and not all(allow_out):
            provided.add(id(root))
        self._propagate(comp, provided)
        return changed

    def _propagate(self, comp: HloComputation, provided: set[int]) -> None:
        """The fixed point over ``comp``; each ``while`` then gets one state sharding (its
        operand's, element by element) tied to its body's parameter and root and its
        condition's parameter, the body and condition are propagated the same way, and
        ``comp`` once more (for the users of the loop's results); leftovers replicated."""
        for level in range(3):
            while self._sweep(comp, provided, level):
                pass
        loops = [i for i in comp.post_order() if i.opcode == "while"]
        for w in loops:
            state = self._loop_sharding(w)
            if state is None:
                continue
            w.attrs["sharding"] = state
            provided.add(id(w))
            body, cond = w.attrs["body"], w.attrs["condition"]
            body.parameters[0].attrs["sharding"] = state
            body.root.attrs["sharding"] = state
            cond.parameters[0].attrs["sharding"] = state
            for c in (body, cond):
                self._propagate(c, {id(i) for i in c.instructions if "sharding" in i.attrs})
        for c in [i for i in comp.post_order() if i.opcode == "conditional"]:
            self._conditional(c)
            loops.append(c)
        if loops:
            for level in range(3):
                while self._sweep(comp, provided, level):
                    pass
        for i in comp.instructions:
            if "sharding" not in i.attrs:
                i.attrs["sharding"] = self._replicated_for(i)

    def _conditional(self, c: HloInstruction) -> None:
        """Each branch's parameter takes its operand's sharding; the branches are propagated;
        an array result takes the first branch root's sharding, given to every root."""
        branches = branch_computations(c)
        for b, op in zip(branches, c.operands[1:]):
            s = _value_sharding(op)
            if s is None:
                return
            b.parameters[0].attrs["sharding"] = s
        roots = None
        for b in branches:
            self._propagate(b, {id(i) for i in b.instructions if "sharding" in i.attrs})
            if roots is None and not c.shape.is_tuple:
                roots = b.root.attrs.get("sharding")
        if roots is not None and roots.kind != "tuple":
            c.attrs.setdefault("sharding", roots)
            for b in branches:
                b.root.attrs["sharding"] = c.attrs["sharding"]

    @staticmethod
    def _loop_sharding(w: HloInstruction) -> HloSharding | None:
        """One array sharding per element of a flat loop state, from the while's operand."""
        if "sharding" in w.attrs:
            s = w.attrs["sharding"]
            return s if s.kind == "tuple" else None
        shapes = w.shape.tuple_shapes
        if any(t.is_tuple for t in shapes):
            return None
        op = w.operands[0]
        elems = []
        for k in range(len(shapes)):
            if op.opcode == "tuple":
                s = _array_sharding(op.operands[k].attrs.get("sharding"))
            else:
                t = op.attrs.get("sharding")
                s = _array_sharding(t.elements[k]) if t is not None and t.kind == "tuple" \
                    else None
            elems.append(s or HloSharding.replicate())
        return HloSharding.tuple_of(elems)

    @staticmethod
    def _replicated_for(i: HloInstruction) -> HloSharding:
        if i.shape.is_tuple:
            return HloSharding.tuple_of([HloSharding.replicate()] * _leaves(i.shape))
        return HloSharding.replicate()

    @staticmethod
    def _manual_regions(comp: HloComputation) -> None:
        """``{manual}`` on what runs inside ``shard_map`` regions: everything computed from a
        ``SPMDFullToShardShape`` (or from ``partition-id``, which only manual code may use)
        up to the ``SPMDShardToFullShape`` that leaves the region."""
        for i in comp.post_order():
            target = i.attrs.get("custom_call_target") if i.opcode == "custom-call" else None
            if target == "SPMDFullToShardShape" or i.opcode in ("partition-id", "replica-id"):
                i.attrs["sharding"] = HloSharding.manual()    # only legal in manual code
            elif target != "SPMDShardToFullShape" and "sharding" not in i.attrs and any(
                    (o.attrs.get("sharding") or HloSharding.replicate()).kind == "manual"
                    for o in i.operands):
                i.attrs["sharding"] = HloSharding.manual()
        for i in comp.instructions:             # constants only manual code reads
            if i.opcode in ("constant", "iota") and "sharding" not in i.attrs and i.users \
                    and all((u.attrs.get("sharding") or HloSharding.replicate()).kind
                            == "manual" for u in i.users):
                i.attrs["sharding"] = HloSharding.manual()

    @staticmethod
    def _constraints(comp: HloComputation) -> bool:
        changed = False
        for i in list(comp.instructions):
            if i.opcode == "custom-call" and i.attrs.get("custom_call_target") == "Sharding":
                op = i.operands[0]
                if "sharding" not in op.attrs and "sharding" in i.attrs:
                    op.attrs["sharding"] = i.attrs["sharding"]      # as XLA: provided too
                i.opcode = "copy"
                for k in [k for k in i.attrs if k not in ("sharding", "metadata")]:
                    del i.attrs[k]
                changed = True
        return changed

    @staticmethod
    def _from_users(i: HloInstruction, level: int, get: Callable) -> list[HloSharding]:
        """The shardings ``i``'s users (at this level) imply for it; through a tuple, the
        tuple's own sharding element and the ``get-tuple-element`` users reading ``i``."""
        out = []
        for u in i.users:
            lv = _level(u)
            if lv is None or lv > level:
                continue
            s = get(u)
            for k, o in enumerate(u.operands):
                if o is not i:
                    continue
                if u.opcode == "tuple":
                    if s is not None and s.kind == "tuple" and k < len(s.elements):
                        out.append(s.elements[k])
                    out += [get(g) for g in u.users if g.opcode == "get-tuple-element"
                            and g.attrs["index"] == k and get(g) is not None]
                elif s is not None:
                    out.append(infer_operand(u, k, s))
        return [c for c in (_array_sharding(c) for c in out if c is not None) if c is not None]

    def _sweep(self, comp: HloComputation, provided: set[int], level: int) -> bool:
        changed = False

        def get(i: HloInstruction) -> HloSharding | None:
            return i.attrs.get("sharding")

        def offer(i: HloInstruction, s: HloSharding | None) -> bool:
            if s is None or id(i) in provided or i.shape.is_tuple:
                return False
            if s.kind == "tiled" and s.tiled_data_rank != len(i.shape.dims):
                return False
            cur = get(i)
            if cur is None or (more_specific(s, cur) and merge(cur, s) == s):
                i.attrs["sharding"] = s
                log.debug("sharding-propagation: %s <- %s", i.name, s)
                return True
            return False

        order = comp.post_order()
        for i in order:
            lv = _level(i)
            if lv is not None and lv <= level and i.operands:
                changed |= offer(i, infer_from_operands(i, get))
        for i in reversed(order):
            own = _level(i) if i.opcode != "parameter" else 0
            if own is None and i.opcode != "constant":
                continue
            best = None
            if (own or 0) <= level:
                for cand in self._from_users(i, level, get):
                    if best is None or more_specific(cand, best):
                        best = cand
            changed |= offer(i, best)
        return changed


def touched_dims(instr: HloInstruction) -> set[int] | None:
    """For the ops in ``DIM_LOCAL``: the dims the op works along (every other dim passes
    through position by position, so a split there stays local); None for other ops and for
    the multi-operand forms of sort and reduce-window."""
    op, a = instr.opcode, instr.attrs
    if op not in DIM_LOCAL or instr.shape.is_tuple:
        return None
    in_dims = instr.operands[0].shape.dims
    if op == "concatenate":
        return {instr.dimensions[0]}
    if op == "slice":
        return {d for d, t in enumerate(a["slice"])
                if tuple(t)[:2] != (0, in_dims[d]) or (len(t) > 2 and t[2] != 1)}
    if op == "pad":
        return {d for d, t in enumerate(a["padding"]) if any(t)}
    if op == "dynamic-slice":
        return {d for d, n in enumerate(a["dynamic_slice_sizes"]) if n != in_dims[d]}
    if op == "dynamic-update-slice":
        return {d for d, n in enumerate(instr.operands[1].shape.dims) if n != in_dims[d]}
    if op in ("reduce-window", "select-and-scatter"):
        window = a.get("window")
        dims = window.dims if window is not None else ()
        return {d for d, w in enumerate(dims)
                if (w.size, w.stride, w.pad_lo, w.pad_hi, w.lhs_dilate, w.rhs_dilate)
                != (1, 1, 0, 0, 1, 1)}
    if op == "sort":
        return {a.get("dimensions", (0,))[0]} if len(instr.operands) == 1 else None
    return set(instr.dimensions)                      # reverse


def branch_computations(c: HloInstruction) -> list[HloComputation]:
    if "branch_computations" in c.attrs:
        return list(c.attrs["branch_computations"])
    return [c.attrs["true_computation"], c.attrs["false_computation"]]


def _value_sharding(op: HloInstruction) -> HloSharding | None:
    """The sharding of an array, or of a flat tuple element by element (None: deeper)."""
    if not op.shape.is_tuple:
        return op.attrs.get("sharding") or HloSharding.replicate()
    if any(t.is_tuple for t in op.shape.tuple_shapes):
        return None
    if op.opcode == "tuple":
        return HloSharding.tuple_of([_array_sharding(o.attrs.get("sharding"))
                                     or HloSharding.replicate() for o in op.operands])
    s = op.attrs.get("sharding")
    return s if s is not None and s.kind == "tuple" else None


def _leaves(shape) -> int:
    if not shape.is_tuple:
        return 1
    return sum(_leaves(s) for s in shape.tuple_shapes)


__all__ = ["ShardingPropagation", "infer_from_operands", "infer_operand", "reshape_mapping",
           "dot_dims", "contraction", "conv_spatial_lhs_map", "gather_dims", "touched_dims",
           "DIM_LOCAL",
           "branch_computations"]
