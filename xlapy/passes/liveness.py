"""Schedules, logical buffers and live ranges of one computation (input to buffer assignment).

- :func:`post_order_schedule` / :func:`list_schedule` / :func:`best_schedule`: a
  sequential order of a computation's instructions. The list scheduler is
  greedy like XLA's ``ListMemoryScheduler``: among ready instructions it picks the
  one that frees the most bytes net of what it allocates; :func:`best_schedule`
  keeps whichever schedule has the smaller peak of live bytes (XLA's
  ``DefaultMemoryScheduler`` picks the best of several the same way).
- :class:`LogicalBuffer`: one array (or tuple pointer table) an instruction
  *defines*, at a ShapeIndex. As ``TuplePointsToAnalysis``: ``tuple`` defines only
  its top-level table (elements alias the operands), ``get-tuple-element`` and
  ``bitcast`` define nothing (they alias their operand), nor do the ops that forward
  operand 0's value (``FORWARDING_OPS``: ``opt-barrier``, ``add-dependency``,
  ``domain``, as in XLA's dataflow analysis). ``while``, ``conditional``,
  ``call`` and ``fusion`` define fresh buffers for their outputs (the runtime
  moves values across the call boundary).
- :class:`Liveness`: points-to sets, each buffer's ``[start, end]`` interval in
  the schedule (parameters live from the start, values reachable from the root
  live to the end) and the set of instructions reading each buffer.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Sequence

from ..hlo.ir import HloComputation, HloInstruction
from ..hlo.shape import Shape

POINTER_SIZE = 8
ShapeIndex = tuple[int, ...]

# Ops whose result is operand 0's value (the other operands only order the program).
FORWARDING_OPS = frozenset({"opt-barrier", "add-dependency", "domain"})
# Ops that define no buffer: their value is (part of) operand 0's.
ALIASING_OPS = frozenset({"get-tuple-element", "bitcast"}) | FORWARDING_OPS


def buffer_size(shape: Shape) -> int:
    """Bytes of one buffer: dense array bytes, or a table of pointers for a tuple."""
    if shape.is_tuple:
        return POINTER_SIZE * len(shape.tuple_shapes)
    if shape.is_token:
        return 0
    return shape.byte_size


def _indices(shape: Shape, prefix: ShapeIndex = ()) -> list[ShapeIndex]:
    """Every ShapeIndex of a shape, pre-order (``()`` first)."""
    out = [prefix]
    if shape.is_tuple:
        for k, s in enumerate(shape.tuple_shapes):
            out.extend(_indices(s, prefix + (k,)))
    return out


@dataclass(eq=False)
class LogicalBuffer:
    """One buffer defined by ``instruction`` at ``index`` (XLA's LogicalBuffer / HloValue)."""

    id: int
    instruction: HloInstruction
    index: ShapeIndex
    shape: Shape
    size: int

    @property
    def label(self) -> str:
        idx = "{" + ",".join(str(i) for i in self.index) + "}"
        return f"<{self.id} {self.instruction.name}{idx}>"

    def __repr__(self) -> str:
        return f"LogicalBuffer{self.label}"


@dataclass
class LiveRange:
    start: int
    end: int

    def overlaps(self, other: "LiveRange") -> bool:
        return self.start <= other.end and other.start <= self.end


# ----------------------------------------------------------------------------- schedules
def post_order_schedule(comp: HloComputation) -> list[HloInstruction]:
    return comp.post_order()


def list_schedule(comp: HloComputation) -> list[HloInstruction]:
    """Greedy memory-minimizing topological order (ready op freeing the most bytes first;
    on equal bytes, the one first in post order).

    The ready ops are kept in a heap. An op's bytes freed change only when one of its
    operands gets down to one unscheduled user (this op), so only that user is pushed
    again; older heap entries of an op are skipped when popped."""
    order = comp.post_order()
    position = {id(i): k for k, i in enumerate(order)}
    deps = {id(i): {id(o) for o in i.operands + i.control_predecessors} for i in order}
    succ: dict[int, list[HloInstruction]] = {id(i): [] for i in order}
    for i in order:
        for d in {id(o): o for o in i.operands + i.control_predecessors}.values():
            succ[id(d)].append(i)
    remaining_uses = {id(i): len({id(u) for u in i.users}) for i in order}
    unique_operands = {id(i): list({id(o): o for o in i.operands}.values()) for i in order}
    scheduled: set[int] = set()
    ready: set[int] = set()
    current: dict[int, int] = {}             # id -> the gain of its valid heap entry
    heap: list[tuple[int, int, HloInstruction]] = []

    def push(instr: HloInstruction) -> None:
        freed = sum(_own_bytes(o) for o in unique_operands[id(instr)]
                    if remaining_uses[id(o)] == 1 and not o.is_root)
        gain = freed - _own_bytes(instr)
        current[id(instr)] = gain
        heapq.heappush(heap, (-gain, position[id(instr)], instr))

    for i in order:
        if not deps[id(i)]:
            ready.add(id(i))
            push(i)
    out: list[HloInstruction] = []
    while heap:
        neg_gain, _, best = heapq.heappop(heap)
        if id(best) not in ready or current[id(best)] != -neg_gain:
            continue                           # scheduled already, or an older entry
        ready.discard(id(best))
        out.append(best)
        scheduled.add(id(best))
        for o in unique_operands[id(best)]:
            remaining_uses[id(o)] -= 1
            if remaining_uses[id(o)] == 1:
                for u in o.users:
                    if id(u) in ready:
                        push(u)
        for s in succ[id(best)]:
            if id(s) not in scheduled and id(s) not in ready and deps[id(s)] <= scheduled:
                ready.add(id(s))
                push(s)
    return out


def _own_bytes(instr: HloInstruction) -> int:
    if instr.opcode in ALIASING_OPS or instr.opcode == "parameter":
        return 0
    if instr.opcode == "tuple":
        return buffer_size(instr.shape)
    return sum(buffer_size(instr.shape.subshape(ix)) for ix in _indices(instr.shape))


def best_schedule(comp: HloComputation) -> list[HloInstruction]:
    """The post-order or list schedule, whichever has the smaller peak of live bytes."""
    candidates = [post_order_schedule(comp), list_schedule(comp)]
    return min(candidates, key=lambda s: Liveness(comp, s).peak_live_bytes())


# ----------------------------------------------------------------------------- liveness
@dataclass
class Liveness:
    """Buffers, points-to sets and live ranges of ``comp`` under ``schedule``."""

    comp: HloComputation
    schedule: Sequence[HloInstruction]
    buffers: list[LogicalBuffer] = field(default_factory=list)
    points_to: dict[int, dict[ShapeIndex, list[LogicalBuffer]]] = field(default_factory=dict)
    ranges: dict[int, LiveRange] = field(default_factory=dict)
    readers: dict[int, list[HloInstruction]] = field(default_factory=dict)
    time_of: dict[int, int] = field(default_factory=dict)
    live_out: set[int] = field(default_factory=set)
    first_id: int = 0

    def __post_init__(self) -> None:
        self.time_of = {id(i): t for t, i in enumerate(self.schedule)}
        for instr in self.schedule:
            self._define(instr)
        self._ranges()

    # ----- points-to
    def _new(self, instr: HloInstruction, index: ShapeIndex) -> LogicalBuffer:
        shape = instr.shape.subshape(index)
        b = LogicalBuffer(self.first_id + len(self.buffers), instr, index, shape,
                          buffer_size(shape))
        self.buffers.append(b)
        return b

    def _define(self, instr: HloInstruction) -> None:
        pts: dict[ShapeIndex, list[LogicalBuffer]] = {}
        if instr.opcode == "get-tuple-element":
            k = instr.attrs["index"]
            src = self.points_to[id(instr.operands[0])]
            for ix, bufs in src.items():
                if ix[:1] == (k,):
                    pts[ix[1:]] = bufs
        elif instr.opcode in ALIASING_OPS:       # bitcast and the forwarding ops
            pts = dict(self.points_to[id(instr.operands[0])])
        elif instr.opcode == "tuple":
            pts[()] = [self._new(instr, ())]
            for k, o in enumerate(instr.operands):
                for ix, bufs in self.points_to[id(o)].items():
                    pts[(k,) + ix] = bufs
        else:
            for ix in _indices(instr.shape):
                pts[ix] = [self._new(instr, ix)]
        self.points_to[id(instr)] = pts

    def buffers_of(self, instr: HloInstruction) -> list[LogicalBuffer]:
        """Every distinct buffer ``instr``'s value may live in (all shape indices)."""
        seen: dict[int, LogicalBuffer] = {}
        for bufs in self.points_to[id(instr)].values():
            for b in bufs:
                seen[b.id] = b
        return list(seen.values())

    def owns(self, buffer: LogicalBuffer) -> bool:
        """Is ``buffer`` one of this computation's buffers?"""
        return self.first_id <= buffer.id < self.first_id + len(self.buffers)

    def defined_by(self, instr: HloInstruction) -> list[LogicalBuffer]:
        return [b for b in self.buffers_of(instr) if b.instruction is instr]

    # ----- live ranges
    def _ranges(self) -> None:
        end_time = len(self.schedule)
        for b in self.buffers:
            t = self.time_of[id(b.instruction)]
            # parameters are written before the computation runs (by the caller, or by
            # the copies into a called computation's parameters)
            start = 0 if b.instruction.opcode == "parameter" else t
            self.ranges[b.id] = LiveRange(start, t)
            self.readers[b.id] = []
        for instr in self.schedule:
            if instr.opcode in ALIASING_OPS or instr.opcode == "tuple":
                continue
            t = self.time_of[id(instr)]
            for o in {id(o): o for o in instr.operands}.values():
                for b in self.buffers_of(o):
                    r = self.ranges[b.id]
                    r.end = max(r.end, t)
                    self.readers[b.id].append(instr)
        if self.comp.root is not None:
            for b in self.buffers_of(self.comp.root):
                self.live_out.add(b.id)
                self.ranges[b.id].end = end_time

    def peak_live_bytes(self, include_parameters: bool = False) -> int:
        """Max over time of the bytes of simultaneously live buffers (no reuse, no
        fragmentation)."""
        events = [0] * (len(self.schedule) + 2)
        for b in self.buffers:
            if b.instruction.opcode == "parameter" and not include_parameters:
                continue
            r = self.ranges[b.id]
            events[r.start] += b.size
            events[r.end + 1] -= b.size
        peak = cur = 0
        for e in events:
            cur += e
            peak = max(peak, cur)
        return peak
