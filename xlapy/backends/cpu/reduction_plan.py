"""The data of a reduction kernel and how it walks its input (see ``reduction_analysis``
for what is accepted, ``reduction_emitter`` for the code).

A :class:`ReductionPlan` also fixes the iteration geometry (:func:`geometry`). The input
is walked in its physical order (the heroes' input layout), dimensions of size 1 dropped:

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
reducer is a fast-path one, the outermost reduced dimension is split into ``split``
chunks: each unit is (item, chunk) and writes a partial result; the kernel call that
finishes the last unit combines the partials in chunk order (see ``reduction_emitter``).

An expensive input-space value needed by several sweeps of a row (``exp(x - max)`` in a
softmax: by the sum and by the output) is computed once per element: the first sweep
keeps it in a row-sized stack array (:attr:`ReductionPlan.row_cache`), later sweeps read it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from ...hlo.ir import HloComputation, HloInstruction
from ...hlo.opcodes import ELEMENTWISE
from ...hlo.shape import Shape
from ...passes.fusion_utils import is_expensive
from .kernel_api import KernelBuffer
from .kernel_support import major_to_minor
from .reduction_reducers import ReduceOrder, Reducer

UNIT_WORK = 1 << 15          # input elements per work unit (at least, when there are many)
COLUMN_BLOCK = 512           # kept minor-dimension elements accumulated together (column mode)
MAX_SPLIT = 16               # chunks a reduction with few outputs is split into, at most
SPLIT_ITEMS = 8              # split only when there are fewer items than this
MAX_PARTIALS = 1 << 14       # partial results kept for a split reduction, at most
ROW_CACHE_ELEMENTS = 8192    # rows at most this long keep shared values between sweeps


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
    number: int = 0                # sweeps over a row: phase k is sweep k


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
def geometry(plan: ReductionPlan, in_shape: Shape) -> None:
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


def sweep_roots(plan: ReductionPlan) -> list[list[HloInstruction]]:
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


def row_cache(plan: ReductionPlan) -> dict[int, int]:
    """Expensive input-space values evaluated elementwise by several sweeps: id -> the
    first sweep (which computes and keeps them)."""
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


__all__ = ["Hero", "Output", "Phase", "ReductionPlan", "geometry", "row_cache", "sweep_roots",
           "with_layout", "squeezed", "UNIT_WORK", "COLUMN_BLOCK", "MAX_SPLIT",
           "ROW_CACHE_ELEMENTS"]
