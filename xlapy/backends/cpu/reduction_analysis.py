"""What a reduction kernel computes and how it walks its input (see ``reduction_emitter``).

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

An expensive input-space value needed by several sweeps of a row (``exp(x - max)`` in a
softmax: by the sum and by the output) is computed once per element: the first sweep
keeps it in a row-sized stack array (:attr:`ReductionPlan.row_cache`), later sweeps read it.

Every other instruction must have an elemental generator (``ElementalEmitter.supports``)
and every reducer must be emittable (:class:`~.reduction_reducers.Reducer`).

:class:`ReductionPlan` also fixes the iteration geometry. The input is walked in its
physical order (the heroes' input layout), dimensions of size 1 dropped:

- **row** mode (the minor-most dimension is reduced, or everything is, or the fusion has
  phases or hero-dependent input-side outputs): one *item* per output element; the
  reduced dimensions are nested loops whose innermost loop runs over contiguous memory
  and carries the accumulators (in ``"tree"`` order, the loops walk XLA's reduction tree
  instead, see :mod:`.reduction_reducers`); each phase is one sweep over the row, which
  stays in cache between sweeps;
- **column** mode (the minor-most dimension is kept): one item per block of
  :data:`COLUMN_BLOCK` consecutive elements of that dimension (for each index of the
  other kept dimensions); the block's accumulators live in a small stack array and every
  reduced position updates the whole block (unit-stride, vectorizable, and in order).

Items are grouped into work units of about :data:`UNIT_WORK` input elements. When there
are few items but much work (a full reduction, or a few long rows), one phase, and every
reducer is a fast-path one, the outermost reduced dimension is split into ``split`` chunks: each unit
is (item, chunk) and writes a partial result; the kernel call that finishes the last unit
combines the partials in chunk order (see ``reduction_emitter``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from ...hlo.ir import HloComputation, HloInstruction
from ...hlo.opcodes import ELEMENTWISE
from ...hlo.shape import Shape
from .elemental import ElementalEmitter
from .kernel_api import KernelBuffer, kernel_buffers
from .llvm_types import llvm_type, storage_type
from .reduction_reducers import ReduceOrder, Reducer, reduction_order

UNIT_WORK = 1 << 15          # input elements per work unit (at least, when there are many)
COLUMN_BLOCK = 512           # kept minor-dimension elements accumulated together (column mode)
MAX_SPLIT = 16               # chunks a reduction with few outputs is split into, at most
SPLIT_ITEMS = 8              # split only when there are fewer items than this
MAX_PARTIALS = 1 << 14       # partial results kept for a split reduction, at most
ROW_CACHE_ELEMENTS = 8192    # rows at most this long keep shared values between sweeps

# Opcodes never handled here, whatever the elemental emitter supports.
_NEVER = frozenset({"parameter", "tuple", "get-tuple-element", "reduce", "fusion", "call",
                    "while", "conditional", "custom-call", "dot", "convolution", "rng",
                    "rng-bit-generator", "rng-get-and-update-state", "after-all"})
# Shape ops that may relabel a reduce's result when they only add or drop size-1 dims.
_RELABEL = frozenset({"reshape", "bitcast", "broadcast", "copy"})


def major_to_minor(shape: Shape) -> list[int]:
    """Dimensions from most major to most minor (row-major if ``shape`` has no layout)."""
    if shape.layout is None or len(shape.layout.minor_to_major) != shape.rank:
        return list(range(shape.rank))
    return list(reversed(shape.layout.minor_to_major))


def with_layout(shape: Shape) -> Shape:
    """``shape`` with a row-major layout if it has none."""
    return shape if shape.layout is not None else shape.with_default_layout()


def squeezed(dims) -> tuple[int, ...]:
    """``dims`` without its size-1 dimensions."""
    return tuple(n for n in dims if n != 1)


@dataclass
class Hero:
    """One reduce of the kernel: its input and init values, reducer and order."""

    instr: HloInstruction
    inputs: list[HloInstruction]
    inits: list[HloInstruction]
    reducer: Reducer
    order: ReduceOrder | None = None

    @property
    def in_dims(self) -> tuple[int, ...]:
        return self.inputs[0].shape.dims


@dataclass
class Output:
    """One output buffer: which value is stored, in which index space and layout."""

    value: HloInstruction          # instruction in the fused computation (or the reduce)
    leaf: int | None               # element of a variadic (tuple-shaped) reduce value
    side: str                      # "reduce" (output elements) or "input"
    store_shape: Shape             # dims and layout the bytes are written in
    slot: int                      # index in the kernel buffer table
    late: bool = False             # input-side and hero-dependent: stored after the phases


@dataclass
class Phase:
    """Heroes reduced in one sweep (they depend only on heroes of earlier phases)."""

    heroes: list[Hero]
    order: ReduceOrder


@dataclass
class ReductionPlan:
    """Everything the kernel builder needs (see the module docstring)."""

    instr: HloInstruction
    comp: HloComputation | None
    heroes: list[Hero]
    elemental: dict[int, Hero]                              # id(reduce) -> elemental reduce
    outputs: list[Output]
    buffers: list[KernelBuffer]
    operand_slots: dict[tuple[int, tuple[int, ...]], int]   # (operand, shape index) -> slot
    aliases: dict[int, int]                                 # operand slot -> output slot
    in_dims: tuple[int, ...]
    reduced: frozenset[int]
    phases: list[Phase] = field(default_factory=list)
    row_cache: dict[int, int] = field(default_factory=dict)   # id(value) -> first sweep
    mode: str = "row"
    reduced_phys: list[int] = field(default_factory=list)   # reduced dims, major to minor
    kept_phys: list[int] = field(default_factory=list)      # kept dims (column: minus vdim)
    vdim: int | None = None                                  # column mode: vector dimension
    block: int = 1                                           # column mode: block size
    items: int = 1
    items_per_unit: int = 1
    split: int = 1
    units: int = 1

    @property
    def kept(self) -> list[int]:
        """Kept (output) dimensions of the input, in logical order."""
        return [d for d in range(len(self.in_dims)) if d not in self.reduced]

    @property
    def out_dims(self) -> tuple[int, ...]:
        return tuple(self.in_dims[d] for d in self.kept)

    @property
    def reduce_outputs(self) -> list[Output]:
        return [o for o in self.outputs if o.side == "reduce"]

    @property
    def input_outputs(self) -> list[Output]:
        """Input-side outputs stored during the (first) sweep."""
        return [o for o in self.outputs if o.side == "input" and not o.late]

    @property
    def late_outputs(self) -> list[Output]:
        return [o for o in self.outputs if o.late]

    @property
    def phased(self) -> bool:
        """Several phases or late outputs: only row mode, one row after the other."""
        return len(self.phases) > 1 or bool(self.late_outputs)

    @property
    def order(self) -> ReduceOrder:
        """The order of a single-phase plan."""
        return self.phases[0].order

    @property
    def outputs_per_item(self) -> int:
        return self.block if self.mode == "column" else 1

    @property
    def reduced_size(self) -> int:
        return prod(self.in_dims[d] for d in self.reduced)


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
    dependent = _hero_dependent(heroes) if comp is not None else hero_ids
    if any(k in dependent for k in elemental):
        return None
    outputs = _outputs(roots, heroes, buffers, in_dims, reduced, dependent)
    if outputs is None:
        return None
    if comp is not None:
        if not _fused_supported(comp, heroes, outputs):
            return None
        needed = _needed(outputs, heroes)
        if not all(_reads_own_row(i, dependent, hero_ids, in_dims, reduced)
                   for i in needed if id(i) in dependent):
            return None
    plan = ReductionPlan(instr, comp, heroes, elemental, outputs, buffers,
                         _operand_slots(instr, buffers), _aliases(buffers, assignment),
                         in_dims, reduced)
    if not _aliases_safe(plan):
        return None
    plan.phases = _phases(heroes, in_dims, reduced)
    _geometry(plan, with_layout(heroes[0].inputs[0].shape))
    if plan.phased and plan.reduced_size <= ROW_CACHE_ELEMENTS:
        plan.row_cache = _row_cache(plan)
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

    def feeds_reduce(r: HloInstruction) -> bool:
        seen, work = set(), list(r.users)
        while work:
            u = work.pop()
            if id(u) in ids:
                return True
            if id(u) not in seen:
                seen.add(id(u))
                work.extend(u.users)
        return False
    tops = [r for r in reduces if not feeds_reduce(r.instr)]
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
            used = _heroes_used(h.instr.operands, ids)
            depth[id(h.instr)] = 1 + max((phase_of(ids[u]) for u in used), default=-1)
        return depth[id(h.instr)]
    count = 1 + max(phase_of(h) for h in heroes)
    groups = [[h for h in heroes if depth[id(h.instr)] == p] for p in range(count)]
    return [Phase(g, reduction_order([h.reducer for h in g], in_dims, reduced))
            for g in groups]


def _heroes_used(values: list[HloInstruction], ids: dict[int, Hero]) -> set[int]:
    """ids of the heroes that ``values`` (transitively) use."""
    seen: set[int] = set()
    found: set[int] = set()
    work = list(values)
    while work:
        i = work.pop()
        if id(i) in seen:
            continue
        seen.add(id(i))
        if id(i) in ids:
            found.add(id(i))
            continue
        work.extend(i.operands)
    return found


def sweep_roots(plan: "ReductionPlan") -> list[list[HloInstruction]]:
    """The values each sweep over a row evaluates at every input element: one sweep per
    phase (its heroes' operands; the first also stores the early input-side outputs),
    then the sweep storing the late outputs."""
    sweeps = []
    for p, phase in enumerate(plan.phases):
        roots = [x for h in phase.heroes for x in h.inputs]
        if p == 0:
            roots += [o.value for o in plan.input_outputs]
        sweeps.append(roots)
    sweeps.append([o.value for o in plan.late_outputs])
    return sweeps


def _row_cache(plan: "ReductionPlan") -> dict[int, int]:
    """Expensive input-space values evaluated elementwise by several sweeps: id -> the
    first sweep (which computes and keeps them)."""
    from ...passes.fusion_utils import is_expensive
    hero_ids = {id(h.instr) for h in plan.heroes}
    used: dict[int, list[int]] = {}
    values: dict[int, HloInstruction] = {}
    for s, roots in enumerate(sweep_roots(plan)):
        stack, seen = list(roots), set()
        while stack:                  # along elementwise paths of the input space only
            i = stack.pop()
            if id(i) in seen or id(i) in hero_ids or i.shape.dims != plan.in_dims:
                continue
            seen.add(id(i))
            values[id(i)] = i
            used.setdefault(id(i), []).append(s)
            if i.opcode in ELEMENTWISE:
                stack.extend(i.operands)
    def read_in_place(i: HloInstruction) -> bool:
        """Every user reads ``i`` at the element it computes (so at the sweep's index)."""
        return all(id(u) in hero_ids or u.opcode == "tuple" or
                   (u.opcode in ELEMENTWISE and u.shape.dims == plan.in_dims) for u in i.users)
    return {k: min(sweeps) for k, sweeps in used.items()
            if len(sweeps) > 1 and values[k].opcode in ELEMENTWISE and is_expensive(values[k])
            and values[k].shape.is_array and read_in_place(values[k])}


def _needed(outputs: list[Output], heroes: list[Hero]) -> list[HloInstruction]:
    """Every instruction the outputs and heroes (transitively) use."""
    seen: dict[int, HloInstruction] = {}
    work = [o.value for o in outputs] + [h.instr for h in heroes]
    while work:
        i = work.pop()
        if id(i) not in seen:
            seen[id(i)] = i
            work.extend(i.operands)
    return list(seen.values())


def _storable(shape: Shape) -> bool:
    try:
        storage_type(shape.element_type)
        llvm_type(shape.element_type)
    except Exception:              # noqa: BLE001 - element type without an LLVM type
        return False
    return True


def _strip_bitcasts(value: HloInstruction) -> HloInstruction:
    """Root bitcasts that keep the element type store their operand's bytes."""
    while value.opcode == "bitcast" and value.operands[0].shape.is_array and \
            value.operands[0].shape.element_type == value.shape.element_type:
        value = value.operands[0]
    return value


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
        stored = _strip_bitcasts(value) if leaf is None else value
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


def _hero_dependent(heroes: list[Hero]) -> set[int]:
    """ids of the heroes and every instruction that (transitively) uses one."""
    seen: set[int] = set()
    work = [h.instr for h in heroes]
    while work:
        i = work.pop()
        if id(i) in seen:
            continue
        seen.add(id(i))
        work.extend(i.users)
    return seen


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


def _operand_slots(instr: HloInstruction, buffers: list[KernelBuffer]
                   ) -> dict[tuple[int, tuple[int, ...]], int]:
    """(operand number, shape index) -> buffer slot, for the operand entries."""
    out: dict[tuple[int, tuple[int, ...]], int] = {}
    for slot, b in enumerate(buffers):
        if b.role != "operand":
            continue
        for n, op in enumerate(instr.operands):
            if op is b.instruction and (n, b.index) not in out:
                out[(n, b.index)] = slot
                break
    return out


def _aliases(buffers: list[KernelBuffer], assignment) -> dict[int, int]:
    """Operand slots that the buffer assignment placed in an output slot's memory."""
    if assignment is None:
        return {}
    slices = [assignment.slice(b.instruction, b.index) for b in buffers]
    out = {}
    for j, b in enumerate(buffers):
        if b.role != "operand" or slices[j].size == 0:
            continue
        for k, o in enumerate(buffers):
            if o.role == "output" and slices[k].allocation is slices[j].allocation and \
                    slices[k].offset == slices[j].offset:
                out[j] = k
    return out


def _aliases_safe(plan: ReductionPlan) -> bool:
    """An operand sharing an output buffer must be read only where that output element is
    written, i.e. only by the reduce-side epilogue, elementwise (what buffer assignment
    allows for a fusion elementwise on that operand)."""
    if not plan.aliases:
        return True
    if plan.comp is None or len(plan.outputs) != 1 or plan.outputs[0].side != "reduce" or \
            plan.outputs[0].store_shape.dims != plan.out_dims:
        return False
    from ...passes.fusion_utils import is_elementwise_on_operand
    numbers = {slot: n for (n, _), slot in plan.operand_slots.items()}
    out = plan.outputs[0]
    return all(is_elementwise_on_operand(plan.instr, numbers[j]) and
               plan.buffers[j].shape.layout == out.store_shape.layout
               for j in plan.aliases)


# ----------------------------------------------------------------------------------------------
def _geometry(plan: ReductionPlan, in_shape: Shape) -> None:
    """Mode, loop dimensions, work units and split of ``plan`` (module docstring)."""
    dims = plan.in_dims
    phys = [d for d in major_to_minor(in_shape) if dims[d] != 1]
    plan.reduced_phys = [d for d in phys if d in plan.reduced]
    kept_phys = [d for d in phys if d not in plan.reduced]
    if any(dims[d] == 0 for d in plan.kept):       # no output elements: nothing to do
        plan.mode, plan.kept_phys, plan.items, plan.units = "row", kept_phys, 0, 0
        return
    row_only = plan.phased or any(p.order.kind == "tree" for p in plan.phases)
    if phys and phys[-1] not in plan.reduced and not row_only:
        plan.mode = "column"
        plan.vdim = phys[-1]
        plan.kept_phys = kept_phys[:-1]
        c = dims[plan.vdim]
        plan.block = min(c, COLUMN_BLOCK)
        blocks = -(-c // plan.block)
        plan.items = prod(dims[d] for d in plan.kept_phys) * blocks
        item_work = plan.reduced_size * plan.block
    else:
        plan.mode = "row"
        plan.kept_phys = kept_phys
        plan.items = prod(dims[d] for d in kept_phys)
        item_work = plan.reduced_size
    plan.split = _split(plan, plan.items * item_work)
    if plan.split > 1:
        plan.items_per_unit = 1
        plan.units = plan.items * plan.split
    else:
        plan.items_per_unit = max(1, min(plan.items, UNIT_WORK // max(item_work, 1)))
        plan.units = -(-plan.items // plan.items_per_unit) if plan.items else 0


def _split(plan: ReductionPlan, total: int) -> int:
    if plan.items == 0 or plan.items >= SPLIT_ITEMS or not plan.reduced_phys or \
            plan.phased or plan.order.kind != "vector":
        return 1
    if not all(h.reducer.is_fast for h in plan.heroes):
        return 1
    chunks = min(MAX_SPLIT, plan.in_dims[plan.reduced_phys[0]], total // UNIT_WORK,
                 MAX_PARTIALS // max(1, plan.items * plan.outputs_per_item))
    return chunks if chunks >= 2 else 1


__all__ = ["analyze", "ReductionPlan", "Hero", "Output", "Phase", "sweep_roots",
           "major_to_minor", "with_layout",
           "squeezed", "UNIT_WORK", "COLUMN_BLOCK", "MAX_SPLIT"]
