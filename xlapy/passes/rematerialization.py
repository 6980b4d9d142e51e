"""Rematerialization under a memory budget (XLA's ``HloRematerialization``).

Run only when a budget is set (``--xla_cpu_memory_limit_bytes=N``, N > 0), after copy
insertion and before buffer assignment. The budget is for the bytes an executable holds
while it runs: its parameters, constants, outputs and the temps live at each point of the
schedule (what ``memory_analysis().peak_memory_in_bytes`` reports, less the heap's
fragmentation).

Algorithm (XLA's ``RematerializeComputation``, on the entry computation):

1. schedule the computation as buffer assignment will (:func:`~xlapy.passes.liveness.
   best_schedule`) and walk the schedule with a tracker of the bytes live at each program
   point: parameters, constants and the computation's results for the whole run (the
   runtime allocates the output buffers before the call, as the caller holds the
   arguments), every other value from the instruction defining it until its last reader;
2. at a program point where the live bytes exceed the budget, pick among the values
   defined earlier that are live across this point, not read by the current instruction
   and cheap to recompute, the one with the lowest cost, XLA's
   ``256 * duplication * (flops + elements accessed) / bytes saved`` (bytes saved: the
   value's size less the operands whose live range would be extended over this point),
   and recompute it: a clone of the instruction is placed right before each of its
   remaining readers, which read the clone; the original dies at its last earlier
   reader. Repeat until the point is within the budget or no candidate saves bytes;
3. the clones keep their place in the schedule through a control predecessor (the
   instruction before them in the walked schedule), so the schedule buffer assignment
   computes afterwards recomputes them late rather than next to the original.

The result is checked with buffer assignment itself (its heap packing and in-place reuse
are not in the tracker's model): the edits are kept only when the assigned peak
(``BufferAssignment.peak_memory``) drops. When the budget is not met, a greedy walk
aiming at it may recompute more than helps, so walks aiming at three budgets between the
limit and the peak are tried as well, and the one with the smallest assigned peak kept.

Not recomputed (XLA's ``IsRematerializable``): parameters, constants, instructions with
side effects or calling computations other than a fusion's (``while``, ``call``,
``conditional``, ``custom-call``, collectives, random number generators), tuple-shaped
values or values read through a tuple, ``bitcast`` or ``get-tuple-element`` (their
buffers alias others), values returned by the computation, and the clones themselves.
Loop bodies and other called computations are left alone.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from ..hlo.ir import HloComputation, HloInstruction, HloModule, clone_computation
from ..hlo.opcodes import ops_with
from .base import HloPass
from .computation_edits import remove_instructions
from .buffer_assignment import assign_buffers
from .context import PassContext, context_or_default
from .hlo_utils import has_side_effect
from .liveness import ALIASING_OPS, best_schedule, buffer_size

log = logging.getLogger("xlapy.passes")

NAME = "rematerialization"
# as in liveness: these own no memory (a tuple owns only its pointer table, counted apart)
_ALIASING = ALIASING_OPS | {"tuple"}
_NEVER = ops_with(family="collective") | ops_with(family="io") | frozenset({
    "parameter", "constant", "while", "call", "conditional", "custom-call", "rng",
    "rng-bit-generator", "rng-get-and-update-state", "iota-rng", "after-all", "opt-barrier",
    "optimization-barrier", "copy-start", "copy-done", "domain", "add-dependency"})
_FREE_IN_FUSION = frozenset({"parameter", "constant", "bitcast", "reshape", "broadcast",
                             "get-tuple-element", "tuple"})


def total_bytes(instr: HloInstruction) -> int:
    """Bytes of every buffer ``instr`` defines (all leaves and tuple tables; aliasing ops
    define none)."""
    if instr.opcode in ("bitcast", "get-tuple-element"):
        return 0
    shape = instr.shape
    if instr.opcode == "tuple":
        return buffer_size(shape)
    total, work = 0, [shape]
    while work:
        s = work.pop()
        total += buffer_size(s)
        if s.is_tuple:
            work.extend(s.tuple_shapes)
    return total


def _elements(instr: HloInstruction) -> int:
    s = instr.shape
    return s.num_elements if s.is_array else 0


def flop_estimate(instr: HloInstruction) -> int:
    """Rough floating-point operations of one instruction (XLA's ``HloCostAnalysis``
    flop count, as far as the cost of recomputing needs it)."""
    out = _elements(instr)
    if instr.opcode == "dot":
        lhs = instr.operands[0].shape
        contract = instr.attrs.get("lhs_contracting_dims", ()) or ()
        k = 1
        for d in contract:
            k *= lhs.dims[d]
        return 2 * out * k
    if instr.opcode == "convolution":
        kernel = instr.operands[1].shape
        dn = instr.attrs.get("dim_labels")
        o = kernel.dims[dn.kernel_output_feature] if dn is not None else 1
        return 2 * out * max(1, kernel.num_elements // max(1, o))
    if instr.opcode == "fusion":
        return sum(flop_estimate(i) if i.opcode in ("dot", "convolution") else _elements(i)
                   for c in instr.called_computations for i in c.instructions
                   if i.opcode not in _FREE_IN_FUSION)
    return out


def rematerialization_cost(instr: HloInstruction, duplication: int, saved: int) -> float:
    """XLA's ``RematerializationCost``: extra work per byte saved."""
    accessed = _elements(instr) + sum(_elements(o) for o in instr.operands)
    return 256.0 * max(1, duplication) * (flop_estimate(instr) + accessed) / saved


def rematerializable(instr: HloInstruction) -> bool:
    """Whether ``instr`` may be recomputed (module docstring)."""
    if instr.opcode in _NEVER or instr.opcode in _ALIASING or not instr.shape.is_array:
        return False
    if any(not o.shape.is_array for o in instr.operands):
        return False
    if instr.is_root or any(u.opcode in _ALIASING for u in instr.users):
        return False
    if instr.opcode != "fusion" and instr.called_computations \
            and instr.opcode not in ("reduce", "reduce-window", "map", "sort", "scatter",
                                     "select-and-scatter"):
        return False
    return not has_side_effect(instr)


@dataclass
class _Tracker:
    """Bytes live at the current point of a schedule (XLA's ``MemoryUsageTracker``, with
    the buffers that ``bitcast``/``get-tuple-element``/``tuple`` alias followed to the
    instructions defining them)."""

    comp: HloComputation
    sources: dict[int, set[int]] = field(default_factory=dict)   # id -> owner ids
    size: dict[int, int] = field(default_factory=dict)
    remaining: dict[int, list[HloInstruction]] = field(default_factory=dict)
    placed: set[int] = field(default_factory=set)
    live_in: set[int] = field(default_factory=set)
    live_out: set[int] = field(default_factory=set)
    usage: int = 0
    current: HloInstruction | None = None
    position: dict[int, int] = field(default_factory=dict)      # id -> place in schedule

    def add(self, instr: HloInstruction) -> None:
        """Register ``instr`` (its operands registered first) before the walk."""
        if instr.opcode in ALIASING_OPS:
            self.sources[id(instr)] = set(self.sources[id(instr.operands[0])])
        else:
            own = {id(instr)}
            if instr.opcode == "tuple":
                for o in instr.operands:
                    own |= self.sources[id(o)]
            self.sources[id(instr)] = own
            self.size[id(instr)] = total_bytes(instr)
            self.remaining[id(instr)] = []
        if instr.opcode in ("parameter", "constant"):
            self.live_in.add(id(instr))
            self.usage += self.size[id(instr)]

    def add_reads(self, instr: HloInstruction) -> None:
        if instr.opcode in _ALIASING:
            return
        for s in self.read_owners(instr):
            self.remaining[s].append(instr)

    def read_owners(self, instr: HloInstruction) -> set[int]:
        out: set[int] = set()
        for o in instr.operands:
            out |= self.sources[id(o)]
        return out

    def mark_live_out(self) -> None:
        """The computation's results live in output buffers the runtime allocates before
        the call: they count from the start, as parameters do."""
        if self.comp.root is not None:
            self.live_out |= self.sources[id(self.comp.root)] - self.live_in
        for owner in self.live_out:
            self.usage += self.size[owner]

    @classmethod
    def of(cls, comp: HloComputation, order: list[HloInstruction]) -> "_Tracker":
        tracker = cls(comp, position={id(i): k for k, i in enumerate(order)})
        for instr in order:
            tracker.add(instr)
        for instr in order:
            tracker.add_reads(instr)
        tracker.mark_live_out()
        return tracker

    def live(self, owner: int) -> bool:
        if owner in self.live_in or owner in self.live_out:
            return True
        return owner in self.placed and bool(self.remaining[owner])

    def begin(self, instr: HloInstruction) -> None:
        self.current = instr
        if id(instr) in self.size and id(instr) not in self.live_in \
                and id(instr) not in self.live_out:
            self.usage += self.size[id(instr)]
        self.placed.add(id(instr))

    def end(self) -> None:
        instr = self.current
        assert instr is not None
        if instr.opcode not in _ALIASING:
            for s in self.read_owners(instr):
                uses = self.remaining[s]
                uses.remove(instr)
                if not uses and s not in self.live_out and s not in self.live_in:
                    self.usage -= self.size[s]
        if id(instr) in self.size and not self.remaining[id(instr)] \
                and id(instr) not in self.live_out and id(instr) not in self.live_in:
            self.usage -= self.size[id(instr)]
        self.current = None

    def block(self, instr: HloInstruction, ok: "set[int]",
              max_size: int) -> list[HloInstruction]:
        """``instr`` and the producers recomputed with it, operands first: an operand whose
        value is dead at this point joins when it may be recomputed (``ok``), up to
        ``max_size`` instructions (XLA's block rematerialization)."""
        members = [instr]
        work = [instr]
        while work and len(members) < max_size:
            m = work.pop(0)
            for o in m.operands:
                if len(members) >= max_size:
                    break
                if o not in members and id(o) in ok and id(o) in self.size \
                        and not self.live(id(o)) and id(o) in self.placed:
                    members.append(o)
                    work.append(o)
        return sorted(members, key=lambda m: self.position[id(m)])

    def saved_by(self, block: list[HloInstruction]) -> int:
        """Bytes freed at this point by recomputing ``block`` (its last instruction's value)
        later; 0 when it cannot help (XLA's ``MemoryReducedIfRematerialized``)."""
        instr = block[-1]
        key = id(instr)
        if key in self.live_in or key in self.live_out or not self.live(key):
            return 0
        cur = self.current
        if cur is instr or (cur is not None and cur in self.remaining[key]):
            return 0
        inside = {id(m) for m in block}
        saved = self.size[key]
        for s in set().union(*(self.read_owners(m) for m in block)) - inside:
            if not self.live(s):
                saved -= self.size[s]
        return saved

    def recompute_for(self, original: HloInstruction, block: list[HloInstruction],
                      copies: list[HloInstruction], use: HloInstruction) -> None:
        """Account for ``use`` reading ``copies[-1]`` (``original`` computed again by
        ``copies``, the copies of ``block``) instead of ``original``."""
        self.remaining[id(original)].remove(use)
        if not self.live(id(original)):
            self.usage -= self.size[id(original)]
        new = {id(c) for c in copies}
        for c, m in zip(copies, block):
            self.sources[id(c)] = {id(c)}
            self.size[id(c)] = self.size[id(m)]
            self.remaining[id(c)] = []
        for c in copies:
            for s in self.read_owners(c):
                if s not in new and not self.live(s):
                    self.usage += self.size[s]
                self.remaining[s].append(c)
        self.remaining[id(copies[-1])].append(use)


def peak_bytes(comp: HloComputation, order: list[HloInstruction]) -> int:
    """The most bytes ``comp`` holds at once under the schedule ``order``: parameters,
    constants and results for the whole run, every other value from its definition to
    its last reader (no reuse within an instruction, no fragmentation)."""
    tracker = _Tracker.of(comp, order)
    peak = tracker.usage
    for instr in order:
        tracker.begin(instr)
        peak = max(peak, tracker.usage)
        tracker.end()
    return peak


def _clone(module: HloModule, instr: HloInstruction,
           mapping: dict[int, HloInstruction]) -> HloInstruction:
    """A copy of ``instr`` reading the same operands (or their copies in ``mapping``),
    with a fusion's body copied."""
    attrs = dict(instr.attrs)
    if instr.opcode == "fusion":
        body = attrs["calls"]
        copy = clone_computation(body, name=module.unique_name(body.name))
        for i in copy.instructions:
            i.name = module.unique_name(i.name)
        module.add_computation(copy)
        attrs["calls"] = copy
    return HloInstruction(instr.opcode, instr.shape,
                          [mapping.get(id(o), o) for o in instr.operands], attrs,
                          name=module.unique_name(f"{instr.name}.remat"),
                          literal=instr.literal)


@dataclass
class RematerializationResult:
    """What one run did: instructions recomputed, clones made, and the peak of live bytes
    (parameters included) before and after."""

    recomputed: list[str] = field(default_factory=list)
    clones: int = 0
    peak_before: int = 0
    peak_after: int = 0
    kept: bool = False


class HloRematerialization(HloPass):
    """Recompute values instead of keeping them live when the peak of live bytes is over
    ``memory_limit_bytes`` (see the module docstring). ``memory_limit_bytes=None`` reads
    ``--xla_cpu_memory_limit_bytes`` from the pass context (0: the pass does nothing)."""

    name = NAME

    def __init__(self, memory_limit_bytes: int | None = None,
                 block_size_limit: int = 3) -> None:
        self.memory_limit_bytes = memory_limit_bytes
        self.block_size_limit = block_size_limit
        self.last: RematerializationResult | None = None

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        ctx = context_or_default(ctx)
        limit = self.memory_limit_bytes
        if limit is None:
            limit = int(getattr(ctx.options, "xla_cpu_memory_limit_bytes", 0) or 0)
        comp = module.entry
        if limit <= 0 or comp is None:
            return False
        result = RematerializationResult()
        self.last = result
        result.peak_before = result.peak_after = assign_buffers(module).peak_memory
        if result.peak_before <= limit:
            return False
        span = result.peak_before - limit
        best: tuple[int, int] | None = None                # (assigned peak, target)
        for target in (limit, limit + span // 4, limit + span // 2, limit + 3 * span // 4):
            peak = self._attempt(module, comp, target, RematerializationResult(), undo=True)
            if peak is not None and (best is None or peak < best[0]):
                best = (peak, target)
            if best is not None and best[0] <= limit:
                break
        if best is None or best[0] >= result.peak_before:
            log.info("rematerialization cannot lower the peak of %s (%d bytes)",
                     module.name, result.peak_before)
            return False
        result.peak_after = self._attempt(module, comp, best[1], result, undo=False) \
            or result.peak_before
        result.kept = True
        if result.peak_after > limit:
            log.warning("cannot reduce the memory of %s below %d bytes by rematerialization "
                        "(only to %d, from %d)", module.name, limit, result.peak_after,
                        result.peak_before)
        log.debug("rematerialized %d instructions (%d clones) in %s: peak %d -> %d bytes",
                  len(result.recomputed), result.clones, module.name, result.peak_before,
                  result.peak_after)
        return True

    def candidate(self, instr: HloInstruction) -> bool:
        """Whether the walk may recompute ``instr`` (:func:`rematerializable`)."""
        return rematerializable(instr)

    def worth(self, tracker: "_Tracker", block: list[HloInstruction], saved: int) -> bool:
        """Whether recomputing ``block`` (freeing ``saved`` bytes at the current point) is
        allowed; here any saving is."""
        return True

    def _attempt(self, module: HloModule, comp: HloComputation, target: int,
                 result: RematerializationResult, undo: bool) -> int | None:
        """Rematerialize aiming at ``target`` live bytes; the assigned peak after it (None
        when nothing was recomputed). ``undo``: restore the module afterwards."""
        peak, restore = self._apply(module, comp, target, result)
        if undo and restore is not None:
            restore()
        return peak

    def _apply(self, module: HloModule, comp: HloComputation, target: int,
               result: RematerializationResult
               ) -> tuple[int | None, Callable[[], None] | None]:
        """:meth:`_attempt`, keeping the edits: ``(assigned peak, a function restoring the
        module)``; ``(None, None)`` when nothing was recomputed."""
        saved = (list(comp.instructions), list(module.computations),
                 [(i, list(i.users)) for i in comp.instructions])
        clones, sequence = self._walk(module, comp, best_schedule(comp), target, result)
        if not clones:
            return None, None
        originals = list({id(o): o for o, _ in reversed(clones)}.values())
        dead = _dead_after(originals)
        _pin(clones, sequence, {id(o) for o in dead})
        removed = _remove_all(module, dead)
        peak = assign_buffers(module).peak_memory

        def restore() -> None:
            _undo(module, clones, removed)
            comp.instructions, module.computations = saved[0], saved[1]
            for instr, users in saved[2]:
                instr.users = users
        return peak, restore

    def _walk(self, module: HloModule, comp: HloComputation, order: list[HloInstruction],
              limit: int, result: RematerializationResult
              ) -> tuple[list[tuple[HloInstruction, HloInstruction]], list[HloInstruction]]:
        tracker = _Tracker.of(comp, order)
        sequence = list(order)
        clones: list[tuple[HloInstruction, HloInstruction]] = []
        # instructions ordered by control edges keep their place (and their existence)
        ordered = {id(p) for i in order for p in i.control_predecessors}
        ordered |= {id(i) for i in order if i.control_predecessors}
        ok = {id(i) for i in order if id(i) not in ordered and self.candidate(i)}
        pool: dict[int, HloInstruction] = {}     # placed candidates, in schedule order
        k = 0
        while k < len(sequence):
            instr = sequence[k]
            tracker.begin(instr)
            if id(instr) in ok:
                pool[id(instr)] = instr
            while tracker.usage > limit:
                best, best_cost = None, 0.0
                for cand in list(pool.values()):
                    if id(cand) not in ok or not tracker.live(id(cand)):
                        del pool[id(cand)]       # dead values stay dead: no later benefit
                        continue
                    block = tracker.block(cand, ok, self.block_size_limit)
                    saved = tracker.saved_by(block)
                    if saved <= 0 or not self.worth(tracker, block, saved):
                        continue
                    uses = tracker.remaining[id(cand)]
                    dup = len(uses) - (1 if len(uses) == len(cand.users) else 0)
                    cost = sum(rematerialization_cost(m, dup, saved) for m in block)
                    if best is None or cost < best_cost:
                        best, best_cost = block, cost
                if best is None:
                    break
                original = best[-1]
                result.recomputed.append(original.name)
                for use in list(tracker.remaining[id(original)]):
                    copies: list[HloInstruction] = []
                    mapping: dict[int, HloInstruction] = {}
                    for m in best:
                        c = _clone(module, m, mapping)
                        mapping[id(m)] = c
                        comp.add_instruction(c)
                        copies.append(c)
                        clones.append((m, c))
                    use.replace_operands(original, copies[-1])
                    tracker.recompute_for(original, best, copies, use)
                    at = sequence.index(use)
                    sequence[at:at] = copies
                    result.clones += len(copies)
                ok.discard(id(original))
            tracker.end()
            k += 1
        return clones, sequence


def _dead_after(originals: list[HloInstruction]) -> list[HloInstruction]:
    """The originals left without readers once the dead among them are removed, each
    before its operands."""
    dead: list[HloInstruction] = []
    gone: set[int] = set()
    changed = True
    while changed:
        changed = False
        for o in originals:
            if id(o) not in gone and not o.is_root \
                    and all(id(u) in gone for u in o.users):
                dead.append(o)
                gone.add(id(o))
                changed = True
    return dead


def _pin(clones: list[tuple[HloInstruction, HloInstruction]],
         sequence: list[HloInstruction], dead: set[int]) -> None:
    """Give each clone the instruction before it in ``sequence`` as control predecessor
    (skipping its operands, other clones and the originals about to be removed), so the
    final schedule keeps it late."""
    position = {id(i): k for k, i in enumerate(sequence)}
    skip = {id(c) for _, c in clones} | dead
    for _, clone in clones:
        k = position[id(clone)] - 1
        while k >= 0 and (id(sequence[k]) in skip or sequence[k] in clone.operands
                          or sequence[k].opcode in ("parameter", "constant")):
            k -= 1
        if k >= 0:
            clone.control_predecessors = [sequence[k]]


_Removed = tuple[HloInstruction, list[HloInstruction], list[HloComputation]]


def _remove_all(module: HloModule, instrs: list[HloInstruction]) -> list[_Removed]:
    """Remove dead entry instructions (and fusions' bodies) in one sweep, each listed before
    its operands; returns what :func:`_undo` needs to put them back."""
    removed = [(i, list(i.operands), i.called_computations if i.opcode == "fusion" else [])
               for i in instrs]
    if instrs:
        remove_instructions(module.entry, instrs)
    for _, _, called in removed:
        for body in called:
            module.remove_computation(body)
    return removed


def _undo(module: HloModule, clones: list[tuple[HloInstruction, HloInstruction]],
          removed: list[_Removed]) -> None:
    """Put back the removed originals, move every reader of a clone back to its original
    and remove the clones."""
    comp = module.entry
    for instr, operands, called in removed:
        for body in called:
            module.add_computation(body)
        instr.operands = operands
        for o in operands:
            o._add_user(instr)
        comp.add_instruction(instr)
    for _, clone in clones:
        clone.control_predecessors = []
    for orig, clone in reversed(clones):
        for use in list(clone.users):
            use.replace_operands(clone, orig)
    _remove_all(module, [clone for _, clone in reversed(clones)])


__all__ = ["HloRematerialization", "RematerializationResult", "flop_estimate", "peak_bytes",
           "rematerializable", "rematerialization_cost", "total_bytes"]
