"""Editing a computation's instruction list in linear time.

``HloComputation.remove_instruction`` rebuilds the computation's instruction list and
scans every instruction's control predecessors, and inserting at a position means
finding it first: O(n) each, so a pass making k edits to an n-instruction computation
spends O(k * n). The helpers here batch that work:

- :func:`remove_instructions` removes a set of dead instructions in one sweep (``dce``);
- :class:`DeferredEdits` does at once everything an edit does to the instructions
  involved (use-def links, ``parent``), and the list work (removing, placing a new
  instruction before or after an anchor) in one sweep at :meth:`DeferredEdits.flush`.
  It also answers "which instructions name this one as a control predecessor?" from a
  map built once.

Between edits and the flush, ``comp.instructions`` still holds removed instructions
(detached, ``parent`` None) and holds inserted ones at its end, so a pass using
:class:`DeferredEdits` must not walk the computation's list (``comp.post_order()``
included) before flushing. Walking a snapshot taken earlier is fine: removed
instructions show ``parent is None`` there, as they would after an eager removal.
After the flush the list is exactly what the same edits made eagerly would give.
"""
from __future__ import annotations

from typing import Iterable

from ..hlo.ir import HloComputation, HloInstruction, HloModule


def reserve_names(module: HloModule) -> None:
    """Record the names in use now as taken (``HloModule.unique_name`` records them on its
    first call otherwise), so that a removal the computation's list has not seen yet
    cannot free a name, whether the edits are deferred or not."""
    module.unique_name(module.name)


def remove_instructions(comp: HloComputation, dead: Iterable[HloInstruction]) -> None:
    """Remove ``dead`` from ``comp`` in one sweep (``HloComputation.remove_instruction`` for
    each, without its per-instruction scans of the whole computation).

    Every instruction's users must be among ``dead``, and none may be the root. Operand
    links of the removed instructions are dropped, control predecessors naming them are
    removed from the instructions that stay, and their ``parent`` becomes None.
    """
    dead = list(dead)
    ids = {id(i) for i in dead}
    for instr in dead:
        if instr is comp.root:
            raise ValueError(f"cannot remove the root {instr.name}")
        if any(id(u) not in ids for u in instr.users):
            raise ValueError(f"cannot remove {instr.name}: still used by "
                             f"{', '.join(u.name for u in instr.users if id(u) not in ids)}")
    touched: dict[int, HloInstruction] = {}
    for instr in dead:
        for op in instr.operands:
            if id(op) not in ids:
                touched[id(op)] = op
        instr.operands = []
        instr.users = []
        instr.parent = None
    for op in touched.values():
        op.users = [u for u in op.users if id(u) not in ids]
    _drop_from_list(comp, ids)


def _drop_from_list(comp: HloComputation, ids: set[int]) -> None:
    """Drop the instructions with these ids from ``comp``'s list and control edges."""
    if not ids:
        return
    comp.instructions = [i for i in comp.instructions if id(i) not in ids]
    for other in comp.instructions:
        if other.control_predecessors and any(id(c) in ids for c in other.control_predecessors):
            other.control_predecessors = [c for c in other.control_predecessors
                                          if id(c) not in ids]


def take_out(comp: HloComputation, instr: HloInstruction, eager: bool = False) -> None:
    """Remove a dead instruction from ``comp`` except from its instruction list, which the
    caller rebuilds itself; with ``eager`` (reference mode), remove it as usual."""
    if eager:
        comp.remove_instruction(instr)
        return
    if instr.users:
        raise ValueError(f"cannot remove {instr.name}: still used by "
                         f"{', '.join(u.name for u in instr.users)}")
    instr.detach()
    instr.parent = None


class DeferredEdits:
    """Edits of one computation whose list work is done in one sweep (see module doc).

    Use as a context manager (the list is fixed up when the block ends) or call
    :meth:`flush` before walking the computation's list again. With ``eager`` (the
    pass context's ``reference_mode``) every edit is made at once instead.
    """

    def __init__(self, comp: HloComputation, eager: bool = False) -> None:
        self.comp = comp
        self.eager = eager
        if comp.parent is not None:
            reserve_names(comp.parent)
        self._dead: set[int] = set()
        self._before: dict[int, list[HloInstruction]] = {}
        self._after: dict[int, list[HloInstruction]] = {}
        self._moved: set[int] = set()
        self._successors: dict[int, list[HloInstruction]] | None = None

    # ----- removal
    def remove(self, instr: HloInstruction) -> None:
        """Remove a dead instruction (no users, not the root)."""
        if instr.users:
            raise ValueError(f"cannot remove {instr.name}: still used by "
                             f"{', '.join(u.name for u in instr.users)}")
        if instr is self.comp.root:
            raise ValueError(f"cannot remove the root {instr.name}")
        if self.eager:
            self.comp.remove_instruction(instr)
            return
        instr.detach()
        instr.parent = None
        self._dead.add(id(instr))

    def replace(self, old: HloInstruction, new: HloInstruction) -> None:
        """``HloComputation.replace_instruction``: uses of ``old`` (and the root) read
        ``new``; ``old`` is removed when nothing uses it any more."""
        old.replace_all_uses_with(new)
        if not old.users:
            self.remove(old)

    # ----- insertion
    def insert_before(self, new: HloInstruction, anchor: HloInstruction,
                      added: bool = False) -> None:
        """Add ``new`` to the computation, placed just before ``anchor`` in text order
        (``added``: ``new`` was just appended with ``comp.add_instruction``)."""
        if not added:
            self.comp.add_instruction(new)
        if self.eager:
            self._place(new, anchor, 0)
            return
        self._moved.add(id(new))
        self._before.setdefault(id(anchor), []).append(new)

    def insert_after(self, new: HloInstruction, anchor: HloInstruction) -> None:
        """Add ``new`` to the computation, placed just after ``anchor`` in text order."""
        self.comp.add_instruction(new)
        if self.eager:
            self._place(new, anchor, 1)
            return
        self._moved.add(id(new))
        self._after.setdefault(id(anchor), []).insert(0, new)

    def _place(self, new: HloInstruction, anchor: HloInstruction, offset: int) -> None:
        self.comp.instructions.pop()
        k = next(k for k, i in enumerate(self.comp.instructions) if i is anchor)
        self.comp.instructions.insert(k + offset, new)

    # ----- control edges
    def control_successors(self, instr: HloInstruction) -> list[HloInstruction]:
        """The instructions that name ``instr`` as a control predecessor."""
        if self.eager:
            return [o for o in self.comp.instructions
                    if any(c is instr for c in o.control_predecessors)]
        if self._successors is None:
            self._successors = {}
            for other in self.comp.instructions:
                if id(other) in self._dead:
                    continue
                for c in other.control_predecessors:
                    self._successors.setdefault(id(c), []).append(other)
        return [s for s in self._successors.get(id(instr), ())
                if s.parent is self.comp and id(s) not in self._dead]

    def move_control_edges(self, old: HloInstruction, new: HloInstruction) -> None:
        """``new`` takes ``old``'s control predecessors, and ``old``'s control successors
        name ``new`` instead."""
        successors = self.control_successors(old)
        new.control_predecessors = list(old.control_predecessors)
        for s in successors:
            s.control_predecessors = [new if c is old else c for c in s.control_predecessors]
        if self._successors is None:
            return
        for c in new.control_predecessors:
            self._successors.setdefault(id(c), []).append(new)
        self._successors[id(new)] = self._successors.get(id(new), []) + successors
        self._successors.pop(id(old), None)

    # ----- the sweep
    def flush(self) -> None:
        """Apply the list work of every edit since the last flush."""
        if self._moved:
            out: list[HloInstruction] = []

            def place(instr: HloInstruction) -> None:
                for b in self._before.get(id(instr), ()):
                    place(b)
                if id(instr) not in self._dead:
                    out.append(instr)
                for a in self._after.get(id(instr), ()):
                    place(a)
            for instr in self.comp.instructions:
                if id(instr) not in self._moved:
                    place(instr)
            self.comp.instructions = out
        _drop_from_list(self.comp, self._dead)
        self._dead, self._before, self._after, self._moved = set(), {}, {}, set()

    def __enter__(self) -> "DeferredEdits":
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()


__all__ = ["DeferredEdits", "remove_instructions", "reserve_names", "take_out"]
