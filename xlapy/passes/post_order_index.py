"""A computation's post order kept up to date while groups of instructions are contracted.

A pass that replaces a group of instructions by one fusion and then needs the
computation's post order again would call ``comp.post_order()`` after every group: O(n)
each time, O(n * groups) for the pass. :class:`PostOrderIndex` keeps the order and gives
every instruction a *label* (a float, increasing along the order, so positions compare
without renumbering) and updates both when a group is contracted
(:meth:`PostOrderIndex.contract`), in time proportional to the group and its users.

The updated order is exactly what ``comp.post_order()`` would return after the
contraction, when the instruction list was the old post order with the group removed and
the fusion (then its ``get-tuple-element`` s) appended. ``comp.post_order()`` visits the
list in order and places an instruction's unvisited operands just before it, so:

- every old instruction keeps its relative order;
- the fusion goes just before its first user in the old order (at the end if it has none)
  followed by the get-tuple-elements that user reads (in operand order);
- every other get-tuple-element goes just before its first user (at the end if none),

provided every operand of the fusion comes before that first user. When one does not,
``post_order()`` would move that operand (and what it depends on) earlier;
:meth:`PostOrderIndex.contract` then returns False and the caller rebuilds the index
from ``comp.post_order()``.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterator, Sequence

from ..hlo.ir import HloInstruction

STRIDE = 1024.0     # label spacing after a (re)numbering


class PostOrderIndex:
    """The post order of a computation as a list with float labels (see module doc)."""

    def __init__(self, order: Sequence[HloInstruction]) -> None:
        self.nodes: list[HloInstruction] = []
        self.keys: list[float] = []
        self.label: dict[int, float] = {}
        self._renumber(list(order))

    def _renumber(self, order: list[HloInstruction]) -> None:
        self.nodes = order
        self.keys = [k * STRIDE for k in range(len(order))]
        self.label = {id(n): k for n, k in zip(order, self.keys)}

    # ----- queries
    def after(self, label: float) -> Iterator[HloInstruction]:
        """The instructions whose label is greater than ``label``, in order; the order may
        change between steps (each step looks the next position up)."""
        while True:
            k = bisect_right(self.keys, label)
            if k >= len(self.nodes):
                return
            node = self.nodes[k]
            label = self.keys[k]
            yield node

    # ----- edits
    def remove(self, instr: HloInstruction) -> None:
        k = bisect_left(self.keys, self.label.pop(id(instr)))
        del self.keys[k]
        del self.nodes[k]

    def insert_before(self, new: HloInstruction, anchor: HloInstruction) -> None:
        k = bisect_left(self.keys, self.label[id(anchor)])
        high = self.keys[k]
        low = self.keys[k - 1] if k > 0 else high - 2 * STRIDE
        key = (low + high) / 2
        if not low < key < high:                  # the gap is used up: renumber
            self._renumber(self.nodes[:k] + [new] + self.nodes[k:])
            return
        self.keys.insert(k, key)
        self.nodes.insert(k, new)
        self.label[id(new)] = key

    def append(self, new: HloInstruction) -> None:
        key = self.keys[-1] + STRIDE if self.keys else 0.0
        self.keys.append(key)
        self.nodes.append(new)
        self.label[id(new)] = key

    def contract(self, removed: Sequence[HloInstruction], fusion: HloInstruction,
                 gtes: Sequence[HloInstruction]) -> bool:
        """Update the order for ``removed`` (the group, and anything else that left the
        computation) replaced by ``fusion`` and its ``gtes`` (already wired to their
        users). False, with nothing changed, when the fusion has an operand after its
        first user (the caller must rebuild the index from ``comp.post_order()``)."""
        new = {id(fusion)} | {id(g) for g in gtes}
        users = [u for n in (fusion, *gtes) for u in n.users if id(u) not in new]
        first = min(users, key=lambda u: self.label[id(u)], default=None)
        if first is not None and any(self.label[id(o)] > self.label[id(first)]
                                     for o in fusion.operands):
            return False
        for r in removed:
            self.remove(r)
        placed: set[int] = set()
        if first is None:
            self.append(fusion)
        else:
            self.insert_before(fusion, first)
        for user in sorted(set(users), key=lambda u: self.label[id(u)]):
            for o in user.operands:
                if id(o) in new and o is not fusion and id(o) not in placed:
                    placed.add(id(o))
                    self.insert_before(o, user)
        for g in gtes:
            if id(g) not in placed:
                self.append(g)
        return True


__all__ = ["PostOrderIndex"]
