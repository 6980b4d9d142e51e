"""Reachability between the instructions of one computation ("is b a user of a user ... of a?").

Fusion passes ask it many times over the same computation; a graph search per question
makes them quadratic. As XLA's ``HloReachabilityMap`` does, the answers come from one bit
set per instruction built in a single sweep over the post order (Python integers as bit
sets: an OR of two n-bit sets is one C loop over n/64 words). The bit sets take about
n^2/8 bytes, so above :data:`BITSET_LIMIT` instructions, and with ``reference=True`` (the
pass context's ``reference_mode``), the answers come from graph searches instead.

- :func:`reachability`: a fixed graph;
- :class:`ContractedReachability`: a graph in which groups of instructions are replaced
  by one fusion each as the pass goes (``reduction_consumer_fusion``).
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

from ..hlo.ir import HloInstruction

BITSET_LIMIT = 30_000


def _descendant_bits(post_order: Sequence[HloInstruction]) -> tuple[dict[int, int], list[int]]:
    """Position of each instruction, and per position the set of positions reachable from
    it through users (itself included)."""
    position = {id(n): k for k, n in enumerate(post_order)}
    bits = [0] * len(post_order)
    for k in range(len(post_order) - 1, -1, -1):
        b = 1 << k
        for u in post_order[k].users:
            j = position.get(id(u))
            if j is not None:
                b |= bits[j]
        bits[k] = b
    return position, bits


def _search(a: HloInstruction) -> set[int]:
    seen: set[int] = set()
    work = [a]
    while work:
        n = work.pop()
        if id(n) not in seen:
            seen.add(id(n))
            work.extend(n.users)
    return seen


def reachability(post_order: Sequence[HloInstruction], reference: bool = False
                 ) -> Callable[[HloInstruction, HloInstruction], bool]:
    """``reaches(a, b)``: is ``b`` reachable from ``a`` by following users (``b is a``
    included)? The graph must not change while ``reaches`` is used."""
    if reference or len(post_order) > BITSET_LIMIT:
        descendants: dict[int, set[int]] = {}

        def search(a: HloInstruction, b: HloInstruction) -> bool:
            if id(a) not in descendants:
                descendants[id(a)] = _search(a)
            return id(b) in descendants[id(a)]
        return search
    position, bits = _descendant_bits(post_order)

    def test(a: HloInstruction, b: HloInstruction) -> bool:
        i, j = position.get(id(a)), position.get(id(b))
        if i is None or j is None:
            return a is b
        return bool((bits[i] >> j) & 1)
    return test


class ContractedReachability:
    """Reachability in a computation whose groups of instructions are, one after another,
    replaced by a fusion (and its get-tuple-elements).

    Bit sets are built once for the computation as it was (:func:`reachability`). A path
    in the current graph either existed then, or goes through fusions made since: into a
    fusion through any member and out of it through any output. So the instructions
    reachable now from ``a`` are those reachable then, plus, for every fusion one of
    whose members is reachable, everything reachable then from its members (repeated
    until nothing is added). :meth:`descendants` computes that set once per start;
    :meth:`reaches` tests it.

    ``None`` from :meth:`descendants` means "no bit sets" (too many instructions, or
    reference mode): the caller searches the graph itself.
    """

    def __init__(self, post_order: Sequence[HloInstruction], reference: bool = False) -> None:
        self.enabled = not reference and len(post_order) <= BITSET_LIMIT
        # Positions are keyed by id: holding the instructions keeps a removed one's id
        # from being reused by an instruction made later.
        self._originals = list(post_order)
        self._position: dict[int, int] = {}
        self._bits: list[int] = []
        if self.enabled:
            self._position, self._bits = _descendant_bits(post_order)
        self._fusions: list[tuple[int, int]] = []     # (member bits, reachable bits)
        self._fusion_of: dict[int, int] = {}          # id(new instruction) -> fusion index

    def contract(self, members: Iterable[HloInstruction],
                 new: Sequence[HloInstruction]) -> None:
        """``members`` (instructions of the original computation) were replaced by the
        instructions ``new`` (a fusion and its get-tuple-elements)."""
        if not self.enabled:
            return
        self._originals.extend(new)
        member_bits = reach = 0
        for m in members:
            k = self._position[id(m)]
            member_bits |= 1 << k
            reach |= self._bits[k]
        index = len(self._fusions)
        self._fusions.append((member_bits, reach))
        for n in new:
            self._fusion_of[id(n)] = index

    def descendants(self, a: HloInstruction) -> int | None:
        """The current descendants of ``a`` (an instruction of the original computation)
        as a bit set over original positions and fusion members; None without bit sets."""
        if not self.enabled:
            return None
        reach = self._bits[self._position[id(a)]]
        pending = list(self._fusions)
        grew = True
        while grew:
            grew = False
            rest = []
            for member_bits, fused_reach in pending:
                if reach & member_bits:
                    reach |= fused_reach
                    grew = True
                else:
                    rest.append((member_bits, fused_reach))
            pending = rest
        return reach

    def reaches(self, descendants: int, b: HloInstruction) -> bool:
        """Is ``b`` in ``descendants`` (from :meth:`descendants`)?"""
        k = self._position.get(id(b))
        if k is not None:
            return bool((descendants >> k) & 1)
        f = self._fusion_of.get(id(b))
        return f is not None and bool(descendants & self._fusions[f][0])


__all__ = ["BITSET_LIMIT", "ContractedReachability", "reachability"]
