"""What a reduction kernel computes: which fusions are accepted, heroes, phases, outputs.

:func:`analyze` accepts a ``reduce``, or a fusion (any kind; ``kCustom`` ones are XLA's
YNNPACK reductions, which compute their fused computation like any other fusion)
containing ``reduce`` instructions. The **heroes** are the reduces over the same input
and reduced dimensions as the largest reduce that feeds no other reduce; the kernel sweeps
their input space. Every other reduce of the fusion (the inner one of a reduce of a
reduce, a small reduce of another shape) is **elemental**: its value at an index is
computed where it is needed by a loop over its reduced dimensions.

Heroes may depend on other heroes *row by row*, as in XLA's softmax and layernorm fusions
(``sum(exp(x - broadcast(max(x))))``): the heroes then run in **phases**, a phase's
heroes reading the finished values of earlier phases. Every instruction that depends on
a hero must read hero-dependent values only at its own row: elementwise ops, gets of a
variadic reduce's leaves, reshapes/bitcasts/broadcasts that only add or drop size-1
dimensions (all on the reduce's output elements), and broadcasts of such a value back to
the input space along the reduced dimensions followed by elementwise ops.

Every output (a root, a root tuple element, or a leaf of a variadic reduce) is either

- *reduce-side*: a value with the reduce's output elements (the same dimensions up to
  dimensions of size 1), such as an epilogue ``log(sum) + m``, evaluated once per output
  element after the reduction, or
- *input-side*: a value of the heroes' input dimensions: stored while the input is swept
  if it does not depend on a hero (a multi-output fusion exporting an elementwise value),
  or in a last sweep over the row after every phase (the softmax itself).

Every other instruction must have an elemental generator (``ElementalEmitter.supports``)
and every reducer must be emittable (:class:`~.reduction_reducers.Reducer`).

The plan's data and its iteration geometry are in :mod:`.reduction_plan`.
"""
from __future__ import annotations

from math import prod

from ...hlo.ir import HloComputation, HloInstruction
from ...hlo.opcodes import ELEMENTWISE
from ...hlo.shape import Shape
from ...passes.copy_insertion import ancestors
from ...passes.fusion_utils import is_elementwise_on_operand, reachable_from
from .elemental import ElementalEmitter
from .kernel_api import KernelBuffer, kernel_buffers, operand_slots
from .kernel_support import buffer_aliases, major_to_minor, strip_root_bitcasts
from .llvm_types import llvm_type, storage_type
from .reduction_plan import (ROW_CACHE_ELEMENTS, Hero, Output, Phase, ReductionPlan, geometry,
                             row_cache, squeezed, with_layout)
from .reduction_reducers import Reducer, reduction_order

# Opcodes never handled here, whatever the elemental emitter supports.
_NEVER = frozenset({"parameter", "tuple", "get-tuple-element", "reduce", "fusion", "call",
                    "while", "conditional", "custom-call", "dot", "convolution", "rng",
                    "rng-bit-generator", "rng-get-and-update-state", "after-all"})
# Shape ops that may relabel a reduce's result when they only add or drop size-1 dims.
_RELABEL = frozenset({"reshape", "bitcast", "broadcast", "copy"})


# ----------------------------------------------------------------------------------------------
def analyze(instr: HloInstruction, assignment=None) -> ReductionPlan | None:
    """The plan of a reduction kernel for ``instr``, or None if this emitter cannot do it."""
    try:
        return _analyze(instr, assignment)
    except (KeyError, ValueError, AttributeError, IndexError, TypeError):
        return None


def _analyze(instr: HloInstruction, assignment) -> ReductionPlan | None:
    if instr.opcode == "reduce":
        comp, roots, reduces = None, [instr], [instr]
    elif instr.opcode == "fusion":
        comp = instr.attrs["calls"]
        root = comp.root
        roots = list(root.operands) if root.opcode == "tuple" else [root]
        reduces = [i for i in comp.instructions if i.opcode == "reduce"]
        if not reduces:
            return None
    else:
        return None
    described = {}
    for r in reduces:
        hero = _hero(r)
        if hero is None:
            return None
        described[id(r)] = hero
    heroes = _choose_heroes([described[id(r)] for r in reduces]) if comp is not None \
        else [described[id(instr)]]
    hero_ids = {id(h.instr) for h in heroes}
    elemental = {k: h for k, h in described.items() if k not in hero_ids}
    for h in elemental.values():
        h.order = reduction_order([h.reducer], h.in_dims, h.instr.dimensions)
    in_dims = heroes[0].in_dims
    reduced = frozenset(heroes[0].instr.dimensions)
    buffers = kernel_buffers(instr)
    if not all(_storable(b.shape) for b in buffers):
        return None
    dependent = reachable_from([h.instr for h in heroes]) if comp is not None else hero_ids
    if any(k in dependent for k in elemental) or \
            any(id(i) in dependent for h in heroes for i in h.inits):
        return None                  # evaluated before (or apart from) the heroes' sweeps
    outputs = _outputs(roots, heroes, buffers, in_dims, reduced, dependent)
    if outputs is None:
        return None
    if comp is not None:
        if not _fused_supported(comp, heroes, outputs):
            return None
        needed = set().union(*(ancestors(i) for i in [o.value for o in outputs] +
                               [h.instr for h in heroes]))
        if not all(_reads_own_row(i, dependent, hero_ids, in_dims, reduced)
                   for i in comp.instructions if id(i) in needed and id(i) in dependent):
            return None
    aliases = buffer_aliases(assignment, instr, buffers)
    if aliases is None:
        return None
    plan = ReductionPlan(instr, comp, heroes, elemental, outputs, buffers,
                         operand_slots(buffers), aliases, in_dims, reduced)
    if not _aliases_safe(plan):
        return None
    plan.phases = _phases(heroes, in_dims, reduced)
    geometry(plan, with_layout(heroes[0].inputs[0].shape))
    if plan.phased and plan.reduced_size <= ROW_CACHE_ELEMENTS:
        plan.row_cache = row_cache(plan)
    return plan


def _hero(h: HloInstruction) -> Hero | None:
    """The description of reduce ``h``, or None if its operands or reducer are unsupported."""
    n = len(h.operands) // 2
    if n == 0 or len(h.operands) != 2 * n:
        return None
    inputs, inits = list(h.operands[:n]), list(h.operands[n:])
    if any(not x.shape.is_array for x in h.operands):
        return None
    if any(x.shape.dims != inputs[0].shape.dims for x in inputs) or \
            any(i.shape.rank != 0 for i in inits):
        return None
    comp = h.attrs.get("to_apply")
    if not isinstance(comp, HloComputation):
        return None
    types = [x.shape.element_type for x in inputs]
    if not Reducer.supported(comp, types):
        return None
    return Hero(h, inputs, inits, Reducer(comp, types))


def _choose_heroes(reduces: list[Hero]) -> list[Hero]:
    """Every reduce with the input and reduced dimensions of the largest reduce feeding no
    other reduce (ties: the first)."""
    ids = {id(r.instr) for r in reduces}
    tops = [r for r in reduces if not ids & reachable_from(r.instr.users)]
    best = max(tops, key=lambda r: prod(r.in_dims))
    key = (best.in_dims, frozenset(best.instr.dimensions))
    return [r for r in reduces if (r.in_dims, frozenset(r.instr.dimensions)) == key]


def _phases(heroes: list[Hero], in_dims: tuple[int, ...], reduced: frozenset[int]
            ) -> list[Phase]:
    """Group the heroes by dependence depth: a hero's phase is one more than the latest
    phase of the heroes its operands use."""
    ids = {id(h.instr): h for h in heroes}
    depth: dict[int, int] = {}

    def phase_of(h: Hero) -> int:
        if id(h.instr) not in depth:
            depth[id(h.instr)] = 0           # provisional (no cycles in HLO)
            used = (ancestors(h.instr) - {id(h.instr)}) & ids.keys()
            depth[id(h.instr)] = 1 + max((phase_of(ids[u]) for u in used), default=-1)
        return depth[id(h.instr)]
    count = 1 + max(phase_of(h) for h in heroes)
    groups = [[h for h in heroes if depth[id(h.instr)] == p] for p in range(count)]
    return [Phase(g, reduction_order([h.reducer for h in g], in_dims, reduced), p)
            for p, g in enumerate(groups)]


def _storable(shape: Shape) -> bool:
    try:
        storage_type(shape.element_type)
        llvm_type(shape.element_type)
    except Exception:              # noqa: BLE001 - element type without an LLVM type
        return False
    return True


def _outputs(roots: list[HloInstruction], heroes: list[Hero], buffers: list[KernelBuffer],
             in_dims: tuple[int, ...], reduced: frozenset[int],
             dependent: set[int]) -> list[Output] | None:
    out_dims = tuple(n for d, n in enumerate(in_dims) if d not in reduced)
    hero_ids = {id(h.instr) for h in heroes}
    leaves: list[tuple[HloInstruction, int | None]] = []
    for r in roots:
        if r.shape.is_tuple:
            if id(r) not in hero_ids:
                return None
            leaves.extend((r, k) for k in range(len(r.shape.tuple_shapes)))
        else:
            leaves.append((r, None))
    slots = [i for i, b in enumerate(buffers) if b.role == "output"]
    if len(slots) != len(leaves):
        return None
    outputs = []
    for (value, leaf), slot in zip(leaves, slots):
        stored = strip_root_bitcasts(value) if leaf is None else value
        shape = stored.shape if leaf is None else stored.shape.tuple_shapes[leaf]
        store_shape = buffers[slot].shape if stored is value else with_layout(shape)
        late = False
        if id(stored) in dependent and squeezed(shape.dims) == squeezed(out_dims):
            side = "reduce"
        elif shape.dims == in_dims:
            side, late = "input", id(stored) in dependent
        elif squeezed(shape.dims) == squeezed(out_dims):
            side = "reduce"
        else:
            return None
        outputs.append(Output(stored, leaf, side, store_shape, slot, late))
    return outputs


def _reads_own_row(i: HloInstruction, dependent: set[int], hero_ids: set[int],
                   in_dims: tuple[int, ...], reduced: frozenset[int]) -> bool:
    """A hero-dependent instruction reads its hero-dependent operands only at its own row
    (module docstring): evaluated at any element of row r, it needs heroes only at r."""
    if id(i) in hero_ids:
        return True                          # a hero reads its input in its own sweep
    if i.opcode == "get-tuple-element":
        return id(i.operands[0]) in hero_ids
    if not i.shape.is_array:
        return False
    out_dims = tuple(n for d, n in enumerate(in_dims) if d not in reduced)
    deps = [o for o in i.operands if id(o) in dependent]
    if squeezed(i.shape.dims) == squeezed(out_dims):           # output elements
        if i.opcode in _RELABEL:
            return _relabels(i)
        return i.opcode in ELEMENTWISE and all(o.shape.dims == i.shape.dims for o in deps)
    if i.shape.dims != in_dims:
        return False
    if i.opcode == "broadcast":              # a row's value spread along the reduced dims
        op = deps[0].shape.dims
        targets = [t for k, t in enumerate(i.dimensions) if op[k] != 1]
        return squeezed(op) == squeezed(out_dims) and targets == sorted(targets) and \
            not any(t in reduced for t in targets)
    return i.opcode in ELEMENTWISE and all(o.shape.dims == in_dims for o in deps)


def _relabels(i: HloInstruction) -> bool:
    """A reshape/bitcast/broadcast/copy that keeps every element at the same place in
    row-major order of the non-1 dimensions (only size-1 dims added or dropped)."""
    op = i.operands[0]
    if squeezed(op.shape.dims) != squeezed(i.shape.dims):
        return False
    if i.opcode == "broadcast":
        dims = list(i.dimensions)
        return dims == sorted(dims)
    if i.opcode == "bitcast":
        order_in = [op.shape.dims[d] for d in major_to_minor(with_layout(op.shape))]
        order_out = [i.shape.dims[d] for d in major_to_minor(with_layout(i.shape))]
        return squeezed(order_in) == squeezed(order_out) and \
            squeezed(order_in) == squeezed(op.shape.dims)
    return True


def _fused_supported(comp: HloComputation, heroes: list[Hero], outputs: list[Output]) -> bool:
    """Every instruction the kernel evaluates has a generator (or is a buffer read)."""
    hero_ids = {id(h.instr) for h in heroes}
    wanted = [o.value for o in outputs] + [x for h in heroes for x in h.instr.operands]
    seen: set[int] = set()
    while wanted:
        i = wanted.pop()
        if id(i) in seen:
            continue
        seen.add(id(i))
        if id(i) in hero_ids:
            continue
        if i.opcode == "parameter":
            if not i.shape.is_array:
                return False
            continue
        if i.opcode == "get-tuple-element":
            base = i.operands[0]
            if base.opcode == "reduce":
                wanted.append(base)
                continue
            while base.opcode == "get-tuple-element":
                base = base.operands[0]
            if not i.shape.is_array or base.opcode != "parameter":
                return False
            continue
        if i.opcode == "reduce":            # an elemental reduce (described by the caller)
            if any(u.opcode not in ("get-tuple-element",) for u in i.users) and \
                    i.shape.is_tuple:
                return False
            wanted.extend(i.operands)
            continue
        if i.opcode in _NEVER or not ElementalEmitter.supports(i):
            return False
        wanted.extend(i.operands)
    for h in heroes:           # a tuple-shaped hero is read through get-tuple-element only
        for u in h.instr.users:
            if h.instr.shape.is_tuple and u.opcode not in ("get-tuple-element", "tuple"):
                return False
            if u.opcode == "tuple" and u is not comp.root:
                return False
    return True


def _aliases_safe(plan: ReductionPlan) -> bool:
    """An operand sharing an output buffer must be read only where that output element is
    written, i.e. only by the reduce-side epilogue, elementwise (what buffer assignment
    allows for a fusion elementwise on that operand)."""
    if not plan.aliases:
        return True
    if plan.comp is None or len(plan.outputs) != 1 or plan.outputs[0].side != "reduce" or \
            plan.outputs[0].store_shape.dims != plan.out_dims:
        return False
    out = plan.outputs[0]
    return all(is_elementwise_on_operand(plan.instr, plan.buffers[j].operand) and
               plan.buffers[j].shape.layout == out.store_shape.layout
               for j in plan.aliases)


__all__ = ["analyze"]
