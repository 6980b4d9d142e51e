"""Buffer assignment: where every value of a scheduled module lives (XLA's ``BufferAssigner``).

:func:`assign_buffers` schedules the entry computation (and every while /
conditional / call body), collects its logical buffers and live ranges
(:mod:`xlapy.passes.liveness`), then builds allocations:

- one per entry **parameter** buffer (read-only unless donated to an output);
- one per **constant** buffer (read-only data, never allocated at run time);
- one per buffer that may be live out (**output**), unless it is written into a
  donated parameter's allocation (``input_output_alias``);
- one **preallocated temp** allocation holding every other buffer at offsets
  chosen by the heap simulator, so buffers whose live ranges do not overlap share
  bytes.

Sets of buffers that share memory (:mod:`xlapy.passes.buffer_sets`): a ``while``'s
state, its initial value, its condition's and body's parameters and its body's root
share one buffer per leaf, and so do a ``conditional``'s (or ``call``'s) result and its
branches' roots, and each branch's parameter and operand, unless that could change a
value (then the runtime copies that leaf across the call). In-place reuse: an
elementwise op (or a loop fusion that is elementwise on that operand, or a
dynamic-update-slice on operand 0, alone or as a fusion root, or an array all-reduce)
whose operand buffer dies
at that op and has the same byte size writes its result into the operand's buffer,
inside loop bodies too. A set spanning several computations is a temp of the outermost
one, an output, a parameter's or a constant's memory as any of its members is.

Donation: an alias entry is honoured when the output is a fresh value of the same
shape and the parameter is not read after the output is written (or only by the
op that writes it in place). Otherwise the refusal is recorded in
:attr:`BufferAssignment.donation_messages` (the runtime warns, as JAX's "Some
donated buffers were not usable") and the output gets its own allocation.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from ..errors import InvalidArgumentError
from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.shape import Shape
from . import heap_simulator as heap
from .fusion_utils import is_elementwise, is_elementwise_on_operand
from .instruction_fusion import in_place_operands
from .buffer_sets import BufferSets
from .liveness import Liveness, LogicalBuffer, ShapeIndex, best_schedule, post_order_schedule

PARAMETER, CONSTANT, OUTPUT, TEMP = "parameter", "constant", "output", "preallocated-temp"
_ALIAS_ONLY = frozenset({"get-tuple-element", "bitcast", "tuple"})
_CONTROL_FLOW = frozenset({"while", "conditional", "call"})


@dataclass
class BufferAllocation:
    """A contiguous block of memory; ``assigned`` lists (buffer, offset, size)."""

    index: int
    size: int
    kind: str
    parameter_number: int | None = None
    param_index: ShapeIndex = ()
    param_shape: Shape | None = None
    maybe_live_out: bool = False
    aliased_with_output: bool = False
    assigned: list[tuple[LogicalBuffer, int, int]] = field(default_factory=list)

    def header(self) -> str:
        text = f"allocation {self.index}: size {self.size}"
        if self.kind == PARAMETER:
            idx = "{" + ",".join(map(str, self.param_index)) + "}"
            text += (f", parameter {self.parameter_number}, shape "
                     f"|{self.param_shape.to_text(False)}| at ShapeIndex {idx}")
        elif self.kind == CONSTANT:
            text += ", constant"
        if self.maybe_live_out or self.aliased_with_output:
            text += ", maybe-live-out"
        if self.kind == TEMP:
            text += ", preallocated-temp"
        return text + ":"


@dataclass(frozen=True)
class BufferSlice:
    """Where one value lives: ``size`` bytes at ``offset`` in ``allocation``."""

    allocation: BufferAllocation
    offset: int
    size: int


@dataclass(frozen=True)
class DonationMessage:
    """Outcome of one ``input_output_alias`` entry."""

    param_number: int
    param_index: ShapeIndex
    output_index: ShapeIndex
    honoured: bool
    message: str


def human_bytes(n: int) -> str:
    """XLA's ``HumanReadableNumBytes``: ``400B``, ``1.17KiB``, ``3.06MiB``."""
    if n < 1024:
        return f"{n}B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024.0
        if value < 1024 or unit == "TiB":
            return f"{value:.2f}{unit}"
    return f"{n}B"


def can_share_operand_buffer(instr: HloInstruction, operand_index: int,
                             index: ShapeIndex = ()) -> bool:
    """May ``instr`` write its output at ``index`` into operand ``operand_index``'s buffer?"""
    operand = instr.operands[operand_index]
    out = instr.shape.subshape(index)
    if not (out.is_array and operand.shape.is_array) or out.byte_size != operand.shape.byte_size:
        return False
    if instr.opcode in ("dynamic-update-slice", "scatter") or (
            instr.opcode == "fusion" and operand_index in in_place_operands(instr)):
        return operand_index in in_place_operands(instr) and index == ()
    if index != ():
        return False
    if _physical_order(out) != _physical_order(operand.shape):
        return False            # a layout-changing copy would overwrite values still unread
    if instr.opcode == "fusion":
        return not instr.shape.is_tuple and is_elementwise_on_operand(instr, operand_index) \
            and out.dims == operand.shape.dims
    if instr.opcode in ("all-reduce", "all-reduce-start"):
        # elementwise across the participants: reduced in the operand's buffer
        # (MPI_IN_PLACE; the portable path writes its result after the group read it)
        return out.dims == operand.shape.dims
    return is_elementwise(instr) and out.dims == operand.shape.dims


def _physical_order(shape: Shape) -> tuple[int, ...]:
    layout = shape.layout if shape.layout is not None else shape.with_default_layout().layout
    return tuple(layout.minor_to_major)


@dataclass
class _CompInfo:
    comp: HloComputation
    live: Liveness
    groups: BufferSets          # the module's sets of buffers sharing memory


class BufferAssignment:
    """Allocations of a module and the lookup ``(instruction, index) -> BufferSlice``."""

    def __init__(self, module: HloModule) -> None:
        self.module = module
        self.allocations: list[BufferAllocation] = []
        self.donation_messages: list[DonationMessage] = []
        self.schedules: dict[str, list[HloInstruction]] = {}
        self.heap_algorithm = ""
        self.min_temp_bytes = 0
        self.no_reuse_temp_bytes = 0
        self.in_place_shares: list[tuple[str, str]] = []   # (writer, reused operand)
        self._slices: dict[int, BufferSlice] = {}
        self._infos: dict[int, _CompInfo] = {}

    # ----- queries
    def _new_allocation(self, size: int, kind: str, **kw) -> BufferAllocation:
        a = BufferAllocation(len(self.allocations), size, kind, **kw)
        self.allocations.append(a)
        return a

    def _bytes(self, kind: str) -> int:
        return sum(a.size for a in self.allocations if a.kind == kind)

    @property
    def temp_allocation(self) -> BufferAllocation | None:
        return next((a for a in self.allocations if a.kind == TEMP), None)

    @property
    def total_temp_bytes(self) -> int:
        """Size of the preallocated temp block (XLA's ``temp_allocation_total_size``)."""
        return self._bytes(TEMP)

    @property
    def parameter_bytes(self) -> int:
        return self._bytes(PARAMETER)

    @property
    def constant_bytes(self) -> int:
        return self._bytes(CONSTANT)

    @property
    def output_bytes(self) -> int:
        return self._bytes(OUTPUT)

    @property
    def peak_memory(self) -> int:
        """Bytes held while the program runs: parameters + constants + outputs + temps."""
        return sum(a.size for a in self.allocations)

    def buffers_of(self, instr: HloInstruction) -> list[LogicalBuffer]:
        info = self._infos[id(instr.parent)]
        return info.live.buffers_of(instr)

    def slice(self, instr: HloInstruction, index: ShapeIndex = ()) -> BufferSlice:
        """The slice holding ``instr``'s value at ``index`` (ambiguous values raise)."""
        info = self._infos.get(id(instr.parent))
        if info is None:
            raise InvalidArgumentError(
                f"instruction {instr.name} is not in a computation with assigned buffers "
                f"(fusion bodies and reducer computations have none)")
        bufs = info.live.points_to[id(instr)].get(tuple(index))
        if bufs is None:
            raise InvalidArgumentError(f"{instr.name} of shape {instr.shape} has no index "
                                       f"{tuple(index)}")
        if len(bufs) != 1:
            raise InvalidArgumentError(f"{instr.name}{{{index}}} may live in several buffers")
        return self._slices[bufs[0].id]

    def slice_of_buffer(self, buffer: LogicalBuffer) -> BufferSlice:
        return self._slices[buffer.id]

    # ----- report
    def stats_text(self) -> str:
        temp = self.temp_allocation
        frag = (temp.size - self.min_temp_bytes) if temp else 0
        pct = 100.0 * frag / temp.size if temp and temp.size else 0.0
        total = self.peak_memory
        rows = [("parameter allocation", human_bytes(self.parameter_bytes)),
                ("constant allocation", human_bytes(self.constant_bytes)),
                ("maybe_live_out allocation", human_bytes(self.output_bytes)),
                ("preallocated temp allocation", human_bytes(self.total_temp_bytes)),
                ("preallocated temp fragmentation", f"{human_bytes(frag):>10s} ({pct:.2f}%)"),
                ("total allocation", human_bytes(total)),
                ("total fragmentation", f"{human_bytes(frag):>10s} "
                                        f"({100.0 * frag / total if total else 0.0:.2f}%)")]
        lines = ["BufferAssignment stats:"]
        for label, value in rows:
            lines.append(f"{label:>33s}: {value:>10s}" if "(" not in value
                         else f"{label:>33s}: {value}")
        return "\n".join(lines)

    def to_text(self) -> str:
        """XLA's ``-buffer-assignment.txt`` layout: allocations, values, then stats."""
        lines = ["BufferAssignment:"]
        for a in self.allocations:
            lines.append(a.header())
            for buf, off, size in sorted(a.assigned, key=lambda x: (x[1], x[0].id)):
                lines.append(f" value: {buf.label} (size={size},offset={off}): "
                             f"{buf.shape.to_text()}")
        for d in self.donation_messages:
            lines.append(f"donation: {d.message}")
        lines.append("")
        lines.append(f"Total bytes used: {self.peak_memory} ({human_bytes(self.peak_memory)})")
        lines.append(f"Total temp bytes: {self.total_temp_bytes} "
                     f"(lower bound {self.min_temp_bytes}, without reuse "
                     f"{self.no_reuse_temp_bytes}, heap {self.heap_algorithm})")
        lines.append("")
        lines.append(self.stats_text())
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.to_text()


# ----------------------------------------------------------------------------- the assigner
def _assigned_computations(module: HloModule) -> list[HloComputation]:
    """The entry and every computation it reaches through while / conditional / call."""
    out: list[HloComputation] = []
    work = [module.entry]
    while work:
        comp = work.pop(0)
        if comp is None or any(c is comp for c in out):
            continue
        out.append(comp)
        for instr in comp.instructions:
            if instr.opcode in _CONTROL_FLOW:
                work.extend(instr.called_computations)
    return out


def _call_graph(module: HloModule, comps: list[HloComputation]
                ) -> tuple[dict[int, int], set[int]]:
    """Call depth of each computation (entry 0, ``comps`` in breadth-first order) and the
    ids of those called from more than one place."""
    depth = {id(module.entry): 0}
    sites: dict[int, int] = {}
    for comp in comps:
        for instr in comp.instructions:
            if instr.opcode in _CONTROL_FLOW:
                for callee in instr.called_computations:
                    sites[id(callee)] = sites.get(id(callee), 0) + 1
                    depth.setdefault(id(callee), depth.get(id(comp), 0) + 1)
    return depth, {c for c, n in sites.items() if n > 1}


def _donation_targets(module: HloModule, live: Liveness) -> set[int]:
    """ids of output buffers named by ``input_output_alias`` (they go to their parameter)."""
    out: set[int] = set()
    root = live.comp.root
    for entry in module.input_output_alias:
        out.update(b.id for b in live.points_to[id(root)].get(tuple(entry.output_index), ()))
    return out


def _honour_donations(ba: BufferAssignment, info: _CompInfo,
                      param_allocs: dict[int, BufferAllocation]) -> set[int]:
    """Place donated outputs (with every buffer sharing their memory) into their
    parameters' allocations; returns those sets."""
    module, live, sets = ba.module, info.live, info.groups
    comp = info.comp
    donated: set[int] = set()
    for entry in module.input_output_alias:
        where = (f"output {{{','.join(map(str, entry.output_index))}}} <- parameter "
                 f"{entry.param_number} {{{','.join(map(str, entry.param_index))}}} "
                 f"({entry.kind})")

        def refuse(reason: str) -> None:
            ba.donation_messages.append(DonationMessage(
                entry.param_number, entry.param_index, entry.output_index, False,
                f"{where} not honoured: {reason}; the output gets its own buffer and the "
                f"donated parameter is left untouched"))

        if entry.param_number >= len(comp.parameters):
            refuse(f"the entry computation has only {len(comp.parameters)} parameters")
            continue
        param = comp.parameters[entry.param_number]
        pbufs = live.points_to[id(param)].get(tuple(entry.param_index))
        obufs = live.points_to[id(comp.root)].get(tuple(entry.output_index))
        if not pbufs or not obufs:
            refuse("the shape index does not exist")
            continue
        pbuf, obuf = pbufs[0], obufs[0]
        if obuf is pbuf:
            ba.donation_messages.append(DonationMessage(
                entry.param_number, entry.param_index, entry.output_index, True,
                f"{where} honoured: the output is the parameter itself"))
            continue
        if not pbuf.shape.compatible(obuf.shape) or pbuf.size != obuf.size:
            refuse(f"shape mismatch: parameter is {pbuf.shape}, output is {obuf.shape}")
            continue
        g = sets.find(obuf.id)
        if g in sets.read_only:
            refuse(f"the output is {obuf.instruction.opcode} {obuf.instruction.name} or "
                   f"shares its memory with a parameter or constant, not a value computed "
                   f"by the program")
            continue
        if g in donated or sum(1 for bs in live.points_to[id(comp.root)].values()
                               if any(sets.find(b.id) == g for b in bs)) > 1:
            refuse("the output value is returned more than once or already donated to")
            continue
        hull = sets.comp_hull(g, comp)
        start = hull[0] if hull is not None else 0
        mine = [m for m in sets.set_members(g) if live.owns(m)]
        writer = min(mine, key=lambda m: live.ranges[m.id].start).instruction
        last_read = live.ranges[pbuf.id].end
        late_readers = [r.name for r in live.readers[pbuf.id]
                        if live.time_of[id(r)] > start
                        or (live.time_of[id(r)] == start and not (
                            r is writer and any(o is param and can_share_operand_buffer(r, i)
                                                for i, o in enumerate(r.operands))))]
        if last_read >= start and late_readers:
            refuse(f"parameter {param.name} is still read by {', '.join(late_readers)} after "
                   f"{writer.name} writes the output")
            continue
        alloc = param_allocs[pbuf.id]
        alloc.aliased_with_output = True
        for m in sets.set_members(g):
            alloc.assigned.append((m, 0, m.size))
            ba._slices[m.id] = BufferSlice(alloc, 0, m.size)
        donated.add(g)
        ba.donation_messages.append(DonationMessage(
            entry.param_number, entry.param_index, entry.output_index, True,
            f"{where} honoured: {writer.name} writes into the parameter's buffer"))
    return donated


def assign_buffers(module: HloModule, schedule: str = "best", allow_reuse: bool = True,
                   alignment: int = heap.DEFAULT_ALIGNMENT) -> BufferAssignment:
    """Assign every buffer of ``module`` (see the module docstring).

    ``schedule`` is ``"best"`` (smaller peak of post order and list scheduling) or
    ``"post_order"``; ``allow_reuse=False`` gives every temp its own bytes (baseline):
    no in-place reuse and no colocation of control flow (its values are copied).
    """
    if module.entry is None:
        raise InvalidArgumentError(f"module {module.name} has no entry computation")
    if schedule not in ("best", "post_order"):
        raise InvalidArgumentError(f"unknown schedule {schedule!r} (best or post_order)")
    ba = BufferAssignment(module)
    comps = _assigned_computations(module)
    lives: list[Liveness] = []
    next_id = 0
    for comp in comps:
        order = best_schedule(comp) if schedule == "best" else post_order_schedule(comp)
        ba.schedules[comp.name] = order
        live = Liveness(comp, order, first_id=next_id)
        next_id += len(live.buffers)
        lives.append(live)
    depth, shared = _call_graph(module, comps)
    sets = BufferSets(lives, depth, shared, can_share_operand_buffer)
    for live in lives:
        ba._infos[id(live.comp)] = _CompInfo(live.comp, live, sets)
    entry_live = lives[0]
    if allow_reuse:
        for live in lives:
            sets.colocate(live.comp)
        keep_apart = _donation_targets(module, entry_live)
        for live in lives:
            sets.share_in_place(live, keep_apart if live.comp.is_entry else set(),
                                ba.in_place_shares)
    param_allocs: dict[int, BufferAllocation] = {}
    for b in entry_live.buffers:
        if b.instruction.opcode == "parameter":
            param_allocs[b.id] = ba._new_allocation(
                b.size, PARAMETER, parameter_number=b.instruction.parameter_number,
                param_index=b.index, param_shape=b.instruction.shape.subshape(b.index))
    donated = _honour_donations(ba, ba._infos[id(module.entry)], param_allocs)
    temp_intervals: list[heap.BufferInterval] = []
    no_reuse_intervals: list[heap.BufferInterval] = []
    names = {id(live.comp): live.comp.name for live in lives}
    for root in sets.roots():
        if root in donated:
            continue
        members = sets.set_members(root)
        size = max(m.size for m in members)
        params = [m for m in members if m.id in param_allocs]
        if params:
            _place(ba, param_allocs[params[0].id], members)
        elif any(m.instruction.opcode == "constant" for m in members):
            _place(ba, ba._new_allocation(size, CONSTANT), members)
        elif any(m.id in entry_live.live_out for m in members):
            _place(ba, ba._new_allocation(size, OUTPUT, maybe_live_out=True), members)
        else:
            outer = sets.outermost(root)
            start, end = sets.hull[root][outer]
            temp_intervals.append(heap.BufferInterval((names[outer], root), size, start, end))
            for m in members:
                r = sets.live_of[m.id].ranges[m.id]
                no_reuse_intervals.append(heap.BufferInterval(m.id, m.size, r.start, r.end))
    _place_temps(ba, temp_intervals, no_reuse_intervals, allow_reuse, alignment)
    return ba


def _place(ba: BufferAssignment, alloc: BufferAllocation, members: list[LogicalBuffer]) -> None:
    for m in members:
        alloc.assigned.append((m, 0, m.size))
        ba._slices[m.id] = BufferSlice(alloc, 0, m.size)


def _place_temps(ba: BufferAssignment, intervals: list[heap.BufferInterval],
                 no_reuse_intervals: list[heap.BufferInterval], allow_reuse: bool,
                 alignment: int) -> None:
    """Pack temps: one heap per computation (a callee's temps may be live during its
    caller's whole call), stacked in one preallocated temp allocation. A set of buffers
    spanning several computations is in the heap of the outermost one."""
    ba.no_reuse_temp_bytes = heap.no_reuse(no_reuse_intervals, alignment).heap_size
    if not intervals:
        return
    per_comp: dict[str, list[heap.BufferInterval]] = {}
    for iv in intervals:
        per_comp.setdefault(cast(tuple, iv.key)[0], []).append(iv)
    sets = next(iter(ba._infos.values())).groups
    placements: list[tuple[heap.BufferInterval, int]] = []
    base = 0
    algorithms = []
    for comp_name, ivs in per_comp.items():
        result = heap.simulate(ivs, alignment, allow_reuse)
        algorithms.append(result.algorithm)
        ba.min_temp_bytes += heap.min_memory(ivs) if allow_reuse else result.heap_size
        placements.extend((iv, base + result.offsets[iv.key]) for iv in ivs)
        base = heap.align(base + result.heap_size, alignment)
    ba.heap_algorithm = ",".join(sorted(set(algorithms)))
    size = max(off + iv.size for iv, off in placements)
    temp = ba._new_allocation(size, TEMP)
    for iv, off in placements:
        _, root = cast("tuple[str, int]", iv.key)
        for m in sets.set_members(root):
            temp.assigned.append((m, off, m.size))
            ba._slices[m.id] = BufferSlice(temp, off, m.size)


def intermediate_bytes(module: HloModule) -> int:
    """Sum of the output bytes of every entry instruction that materializes a value,
    without any reuse: parameters, constants and aliasing ops (tuple elements,
    get-tuple-element, bitcast) excluded. The "unfused sum" reported next to
    :attr:`BufferAssignment.total_temp_bytes`."""
    from .liveness import buffer_size
    total = 0
    for instr in module.entry.instructions:
        if instr.opcode in ("parameter", "constant") or instr.opcode in _ALIAS_ONLY:
            continue
        total += sum(buffer_size(s) for s in instr.shape.leaves())
    return total
