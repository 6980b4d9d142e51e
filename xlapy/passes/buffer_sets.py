"""Sets of logical buffers that share one piece of memory (input to buffer assignment).

Buffer assignment (:mod:`xlapy.passes.buffer_assignment`) gives every *set* of logical
buffers one slice. A set grows two ways:

- **colocation** across a call boundary (XLA's colocated buffers of ``while`` and
  ``conditional``): a ``while``'s result leaf ``i``, its initial value's leaf ``i``, the
  condition's and the body's parameter leaf ``i`` and the body's root leaf ``i``; a
  ``conditional``'s (or ``call``'s) result leaf and each branch's root leaf, and each
  branch's parameter leaf and the operand it receives. The runtime then copies nothing
  between them (its copies of a pair in one set are dropped);
- **in place**: an instruction whose output may be written into a dying operand's
  buffer (``can_share_operand_buffer``: elementwise ops, ``dynamic-update-slice``,
  in-place fusions and array all-reduces) joins the operand's set.

Each set remembers, per computation, the hull ``[start, end]`` of its members' live
ranges in that computation's schedule. A join is refused when it could change a value:

- **interference**: in a computation where both sets have members, their hulls overlap,
  unless one ends at the instruction that starts the other by writing in place into it
  (a ``while`` into its initial value's leaf at the same index, or an op with
  ``can_share_operand_buffer``). Colocation of a leaf the body passes through unchanged
  joins by *value identity*: the values are equal, nothing writes the set, and the
  hulls may overlap;
- **copies out of order**: the runtime's copies across a call boundary (init -> state,
  state -> parameters, root -> state) are a parallel assignment, done one pair at a
  time. A set may therefore hold the leaves of one call's copy list at one index only
  (per call and branch, the *tags*); two indices in one set could make a copy read
  memory an earlier copy of the same list wrote;
- **read-only memory**: a set holding an entry parameter or a constant joins only by
  value identity; parameters of a ``while`` condition and of ``conditional``/``call``
  branches are never written in place (they may be the caller's memory);
- **shared callees**: a computation called from more than one place is never colocated
  (its buffers would need one address per call site).

A set is placed in the heap of its *outermost* computation (the one nearest the entry):
its hull there covers the calls during which its members in called computations live,
and a called computation's own temps are in a separate region of the arena.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..hlo.ir import HloComputation, HloInstruction
from .copy_insertion import array_leaf_indices
from .liveness import ALIASING_OPS, Liveness, LogicalBuffer, ShapeIndex

CanShare = Callable[[HloInstruction, int, ShapeIndex], bool]
_ALIASING = ALIASING_OPS | {"tuple"}


def branches_of(instr: HloInstruction) -> list[HloComputation]:
    """The computations a ``conditional`` or ``call`` runs, in branch order."""
    if instr.opcode == "call":
        return [instr.attrs["to_apply"]]
    branches = instr.attrs.get("branch_computations")
    if branches is None:
        branches = [instr.attrs["true_computation"], instr.attrs["false_computation"]]
    return list(branches)


class BufferSets:
    """Union-find over the buffers of several computations with the checks of the module
    docstring. ``lives`` are the computations' liveness (buffer ids unique across them),
    ``depth`` each computation's call depth (entry 0), ``shared`` the ids of
    computations called from more than one place, ``can_share(instr, operand_number,
    index)`` whether ``instr`` may write its output at ``index`` into that operand."""

    def __init__(self, lives: Sequence[Liveness], depth: dict[int, int], shared: set[int],
                 can_share: CanShare) -> None:
        self.can_share = can_share
        self.lives = {id(live.comp): live for live in lives}
        self.depth, self.shared = depth, shared
        self.parent: dict[int, int] = {}
        self.members: dict[int, list[LogicalBuffer]] = {}
        self.live_of: dict[int, Liveness] = {}
        self.hull: dict[int, dict[int, list[int]]] = {}
        self.tags: dict[int, dict[tuple[int, int, int], set[ShapeIndex]]] = {}
        self.value: dict[int, int] = {}           # buffer id -> its value class's buffer
        self.read_only: set[int] = set()
        self.fixed_in: dict[int, set[int]] = {}
        for live in lives:
            comp = live.comp
            for b in live.buffers:
                self.parent[b.id] = b.id
                self.value[b.id] = b.id
                self.members[b.id] = [b]
                self.live_of[b.id] = live
                r = live.ranges[b.id]
                self.hull[b.id] = {id(comp): [r.start, r.end]}
                self.tags[b.id] = {}
                op = b.instruction.opcode
                if op == "constant" or (op == "parameter" and comp.is_entry):
                    self.read_only.add(b.id)
        for live in lives:
            self._tag(live)

    # ----- union-find
    def find(self, bid: int) -> int:
        """The set (its root buffer id) holding buffer ``bid``."""
        root = bid
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[bid] != root:
            self.parent[bid], bid = root, self.parent[bid]
        return root

    def _union(self, a: int, b: int) -> int:
        a, b = self.find(a), self.find(b)
        if a == b:
            return a
        if len(self.members[a]) < len(self.members[b]):
            a, b = b, a
        self.parent[b] = a
        self.members[a].extend(self.members.pop(b))
        for c, (s, e) in self.hull.pop(b).items():
            h = self.hull[a].setdefault(c, [s, e])
            h[0], h[1] = min(h[0], s), max(h[1], e)
        for key, idx in self.tags.pop(b).items():
            self.tags[a].setdefault(key, set()).update(idx)
        if b in self.read_only:
            self.read_only.discard(b)
            self.read_only.add(a)
        fixed = self.fixed_in.pop(b, set())
        if fixed:
            self.fixed_in.setdefault(a, set()).update(fixed)
        return a

    def set_members(self, root: int) -> list[LogicalBuffer]:
        return self.members[root]

    def roots(self) -> list[int]:
        return list(self.members)

    def comp_hull(self, root: int, comp: HloComputation) -> tuple[int, int] | None:
        h = self.hull[root].get(id(comp))
        return (h[0], h[1]) if h is not None else None

    def outermost(self, root: int) -> int:
        """id of the set's computation nearest the entry."""
        return min(self.hull[root], key=lambda c: self.depth.get(c, 0))

    def writable_in(self, root: int, comp: HloComputation) -> bool:
        """May an instruction of ``comp`` write into the set's memory in place?"""
        return root not in self.read_only and id(comp) not in self.fixed_in.get(root, ())

    # ----- tags: (call, branch, list) -> indices of the leaves in one copy list
    def _buffer(self, live: Liveness, instr: HloInstruction, index: ShapeIndex
                ) -> LogicalBuffer | None:
        bufs = live.points_to[id(instr)].get(index)
        return bufs[0] if bufs is not None and len(bufs) == 1 else None

    def _add_tag(self, buf: LogicalBuffer | None, key: tuple[int, int, int],
                 index: ShapeIndex) -> None:
        if buf is not None:
            self.tags[self.find(buf.id)].setdefault(key, set()).add(index)

    def _tag(self, live: Liveness) -> None:
        """Tag the buffers of every copy list of the control-flow ops of ``live.comp`` and
        mark the parameters that their computations may not write."""
        for instr in live.comp.instructions:
            if instr.opcode == "while":
                key = (id(instr), 0, 0)
                cond, body = instr.attrs["condition"], instr.attrs["body"]
                self._fix_parameters(cond)
                for ix in array_leaf_indices(instr.shape):
                    self._add_tag(self._buffer(live, instr.operands[0], ix), key, ix)
                    self._add_tag(self._buffer(live, instr, ix), key, ix)
                    for comp, value in ((body, body.parameters[0]), (body, body.root),
                                        (cond, cond.parameters[0])):
                        callee = self.lives.get(id(comp))
                        if callee is not None:
                            self._add_tag(self._buffer(callee, value, ix), key, ix)
            elif instr.opcode in ("conditional", "call"):
                first = 1 if instr.opcode == "conditional" else 0
                for k, comp in enumerate(branches_of(instr)):
                    key, key_in = (id(instr), k, 1), (id(instr), k, 2)
                    self._fix_parameters(comp)
                    callee = self.lives.get(id(comp))
                    if callee is None:
                        continue
                    for ix in array_leaf_indices(instr.shape):
                        self._add_tag(self._buffer(live, instr, ix), key, ix)
                        self._add_tag(self._buffer(callee, comp.root, ix), key, ix)
                    params = comp.parameters if instr.opcode == "call" else comp.parameters[:1]
                    for p_no, param in enumerate(params):
                        operand = instr.operands[first + k if first else p_no]
                        for ix in array_leaf_indices(param.shape):
                            self._add_tag(self._buffer(live, operand, ix), key_in, (p_no,) + ix)
                            self._add_tag(self._buffer(callee, param, ix), key_in, (p_no,) + ix)

    def _fix_parameters(self, comp: HloComputation) -> None:
        live = self.lives.get(id(comp))
        if live is None:
            return
        for param in comp.parameters:
            for b in live.buffers_of(param):
                self.fixed_in.setdefault(self.find(b.id), set()).add(id(comp))

    # ----- joins
    def try_join(self, a: LogicalBuffer, b: LogicalBuffer, same_value: bool = False) -> bool:
        """Join the sets of ``a`` and ``b`` unless a check of the module docstring fails.
        ``same_value``: the two always hold the same value (a leaf passed through a call)
        and nothing writes them, so their live ranges may overlap."""
        ra, rb = self.find(a.id), self.find(b.id)
        if ra == rb:
            return True
        if a.size != b.size:
            return False
        for key in self.tags[ra].keys() & self.tags[rb].keys():
            if len(self.tags[ra][key] | self.tags[rb][key]) > 1:
                return False
        if ra in self.read_only or rb in self.read_only:
            if not same_value or (ra in self.read_only and rb in self.read_only):
                return False
        if same_value:
            va, vb = self._value(a.id), self._value(b.id)
            self.value[vb] = va
        for c in self.hull[ra].keys() & self.hull[rb].keys():
            if same_value and self._one_value(ra, rb, c):
                continue
            if not self._apart(ra, rb, c) and not self._apart(rb, ra, c):
                if same_value:
                    self.value[vb] = vb
                return False
        self._union(ra, rb)
        return True

    def _value(self, bid: int) -> int:
        while self.value[bid] != bid:
            bid = self.value[bid]
        return bid

    def _one_value(self, ra: int, rb: int, comp_id: int) -> bool:
        """Do all members of the two sets in the computation hold one value?"""
        classes = {self._value(m.id) for r in (ra, rb) for m in self.members[r]
                   if id(self.live_of[m.id].comp) == comp_id}
        return len(classes) == 1

    def _apart(self, first: int, then: int, comp_id: int) -> bool:
        """Set ``first`` is dead in the computation before ``then`` starts, or ends at the
        instruction that starts ``then`` by writing in place into ``first``."""
        f_start, f_end = self.hull[first][comp_id]
        t_start, _ = self.hull[then][comp_id]
        if f_end < t_start:
            return True
        if f_end != t_start:
            return False
        live = self.lives[comp_id]
        instr = live.schedule[t_start]
        starters = [m for m in self.members[then]
                    if m.instruction is instr and live.ranges[m.id].start == t_start]
        if len(starters) != 1:
            return False
        out = starters[0]
        if instr.opcode == "while":
            src = self._buffer(live, instr.operands[0], out.index)
            return src is not None and self.find(src.id) == first
        for k, operand in enumerate(instr.operands):
            src = self._buffer(live, operand, ())
            if src is not None and self.find(src.id) == first \
                    and self.can_share(instr, k, out.index):
                return True
        return False

    # ----- colocation of control flow
    def colocate(self, comp: HloComputation) -> None:
        """Colocate the buffers of every control-flow op of ``comp`` with those of the
        computations it calls (module docstring)."""
        live = self.lives[id(comp)]
        for instr in live.schedule:
            if instr.opcode == "while":
                self._colocate_while(live, instr)
            elif instr.opcode in ("conditional", "call"):
                self._colocate_branches(live, instr)

    def _callee(self, comp: HloComputation) -> Liveness | None:
        return None if id(comp) in self.shared else self.lives.get(id(comp))

    def _colocate_while(self, live: Liveness, loop: HloInstruction) -> None:
        body = self._callee(loop.attrs["body"])
        cond = self._callee(loop.attrs["condition"])
        if body is None or cond is None:
            return
        bparam, cparam = body.comp.parameters[0], cond.comp.parameters[0]
        for ix in array_leaf_indices(loop.shape):
            state = self._buffer(live, loop, ix)
            init = self._buffer(live, loop.operands[0], ix)
            p = self._buffer(body, bparam, ix)
            r = self._buffer(body, body.comp.root, ix)
            c = self._buffer(cond, cparam, ix)
            if state is None or p is None or r is None:
                continue
            through = r is p
            if init is not None:
                self.try_join(state, init, same_value=through)
            if c is not None:
                self.try_join(state, c, same_value=True)
            if self.try_join(state, p, same_value=through) and not through:
                self.try_join(state, r)

    def _colocate_branches(self, live: Liveness, instr: HloInstruction) -> None:
        first = 1 if instr.opcode == "conditional" else 0
        for k, comp in enumerate(branches_of(instr)):
            callee = self._callee(comp)
            if callee is None:
                continue
            for ix in array_leaf_indices(instr.shape):
                out = self._buffer(live, instr, ix)
                root = self._buffer(callee, comp.root, ix)
                if out is not None and root is not None:
                    self.try_join(out, root)
            params = comp.parameters if instr.opcode == "call" else comp.parameters[:1]
            for p_no, param in enumerate(params):
                operand = instr.operands[first + k if first else p_no]
                for ix in array_leaf_indices(param.shape):
                    src = self._buffer(live, operand, ix)
                    dst = self._buffer(callee, param, ix)
                    if src is not None and dst is not None:
                        self.try_join(src, dst, same_value=True)

    # ----- in place
    def share_in_place(self, live: Liveness, keep_apart: set[int],
                       shares: list[tuple[str, str]]) -> None:
        """Join each result with an operand buffer that dies at the writing op and that
        the op may overwrite (``can_share``); results in
        ``keep_apart`` (donated outputs) stay alone."""
        comp = live.comp
        for instr in live.schedule:
            if instr.opcode in _ALIASING or instr.opcode in ("parameter", "constant"):
                continue
            for out in live.defined_by(instr):
                if out.id in keep_apart:
                    continue
                for i, operand in enumerate(instr.operands):
                    if not self.can_share(instr, i, out.index):
                        continue
                    src = self._buffer(live, operand, ())
                    if src is None:
                        continue
                    root = self.find(src.id)
                    if root == self.find(out.id):
                        break
                    if not self.writable_in(root, comp) or root in self.read_only:
                        continue
                    if self.try_join(src, out):
                        shares.append((instr.name, operand.name))
                        break


__all__ = ["BufferSets", "branches_of"]
