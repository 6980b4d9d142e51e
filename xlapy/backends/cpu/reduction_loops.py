"""LLVM IR building blocks of the reduction kernels: loops carrying accumulators over
the reduced dimensions, the walk of XLA's reduction tree, and index relabelling.

**Pinned vector loops.** A reassociated float sum (``"vector"`` order) is left to LLVM's
loop vectorizer, whose choice of vector width and interleave count depends on the loop
body: the same sum fused with more work (``sum(tanh(x))`` in one kernel instead of
``tanh`` in another) would be added in another order. :meth:`Loops.sweep` therefore
splits the innermost reduced loop of such a sweep into a *main* loop over the largest
multiple of ``lanes * INTERLEAVE`` elements, whose ``llvm.loop`` metadata fixes the
width (``lanes``) and the interleave count (:data:`INTERLEAVE`), a loop of single
vectors (width ``lanes``, no interleaving) over the largest multiple of ``lanes`` of
what remains, and a scalar *tail* (width 1) folding the last elements in order. Each
loop starts from the previous one's (horizontally reduced) result, so the order of a
row depends only on its length and the accumulator type (:func:`vector_lanes`).
"""
from __future__ import annotations

from typing import Callable, Sequence

from llvmlite import ir

from .elemental_data import delinearize
from .kernel_support import c64, carried_loop, for_loop, loop_hints
from .reduction_reducers import ReduceOrder

Carried = list  # list[ir.Value]: values carried around a loop

VECTOR_BYTES = 32            # one 256-bit register of accumulators per interleaved part
INTERLEAVE = 4               # independent vector accumulators in a pinned main loop


def vector_lanes(acc_types: Sequence[ir.Type]) -> int:
    """Lanes of a pinned vector loop for accumulators of ``acc_types`` (the first float
    type decides: 8 for ``float``, 4 for ``double``)."""
    for t in acc_types:
        if isinstance(t, ir.DoubleType):
            return VECTOR_BYTES // 8
        if isinstance(t, (ir.FloatType, ir.HalfType)):
            return VECTOR_BYTES // 4
    return VECTOR_BYTES // 4


def reindex(index: Sequence[ir.Value], src: Sequence[int], dst: Sequence[int]) -> list:
    """An index of ``src`` dims as an index of ``dst`` dims with the same non-1 dimensions
    in the same order (size-1 dimensions added or dropped)."""
    values = [v for v, n in zip(index, src) if n != 1]
    out, k = [], 0
    for n in dst:
        if n == 1:
            out.append(c64(0))
        else:
            out.append(values[k])
            k += 1
    return out


class Loops:
    """Loop constructs at a builder's insertion point."""

    def __init__(self, b: ir.IRBuilder) -> None:
        self.b = b

    def loop(self, lo: ir.Value, hi: ir.Value, carried: Carried,
             body: Callable[[ir.Value, Carried], Carried], name: str) -> Carried:
        """``for (i = lo; i < hi; ++i) carried = body(i, carried)``; the final values."""
        return carried_loop(self.b, lo, hi, carried, body, name)

    def hinted_loop(self, lo: ir.Value, hi: ir.Value, carried: Carried,
                    body: Callable[[ir.Value, Carried], Carried], name: str,
                    width: int, interleave: int) -> Carried:
        """:meth:`loop` whose back edge carries ``llvm.loop`` hints fixing the vector
        width and interleave count (1 and 1: a scalar loop, folded in order)."""
        hints = [("llvm.loop.vectorize.width", width),
                 ("llvm.loop.interleave.count", interleave)]
        if width > 1:
            hints.append(("llvm.loop.vectorize.enable", 1))
        return carried_loop(self.b, lo, hi, carried, body, name, hints)

    def each(self, lo: ir.Value, hi: ir.Value, body: Callable[[ir.Value], None],
             name: str) -> None:
        """``for (i = lo; i < hi; ++i) body(i)`` (nothing carried)."""
        for_loop(self.b, lo, hi, body, name)

    def min(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.select(self.b.icmp_signed("<", x, y), x, y)

    def max(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.select(self.b.icmp_signed("<", x, y), y, x)

    def sweep(self, dims: Sequence[tuple[int, int]], idx: list, carried: Carried,
              body: Callable[[Carried], Carried],
              chunk: tuple[ir.Value, int] | None = None, lanes: int = 0) -> Carried:
        """Nested loops over ``(dimension, size)`` pairs (outermost first) setting ``idx``;
        ``chunk = (c, n)`` restricts the first dimension to chunk ``c`` of ``n``.
        ``lanes > 0``: the innermost loop is a pinned vector loop and its scalar tail
        (module docstring)."""
        if not dims:
            return body(carried)
        (d, size), rest = dims[0], dims[1:]
        lo, hi = c64(0), c64(size)
        if chunk is not None:
            length = -(-size // chunk[1])
            lo = self.b.mul(chunk[0], c64(length))
            hi = self.min(self.b.add(lo, c64(length)), c64(size))

        def step(iv: ir.Value, cur: Carried) -> Carried:
            idx[d] = iv
            return self.sweep(rest, idx, cur, body, lanes=lanes)
        if rest or lanes <= 0:
            return self.loop(lo, hi, carried, step, f"r{d}")
        cur, start = carried, lo
        for width, interleave, part in ((lanes, INTERLEAVE, "v"), (lanes, 1, "w")):
            block = width * interleave
            if chunk is None:
                end = c64(size - size % block)
            else:
                count = self.b.sub(hi, lo)
                end = self.b.add(lo, self.b.sub(count, self.b.urem(count, c64(block))))
            cur = self.hinted_loop(start, end, cur, step, f"r{d}.{part}", width, interleave)
            start = end
        return self.hinted_loop(start, hi, cur, step, f"r{d}.t", 1, 1)

    def tree(self, order: ReduceOrder, idx: list, start: Carried,
             leaf: Callable[[Carried], Carried], combine: Callable[[Carried, Carried], Carried],
             identities: Callable[[], Carried]) -> Carried:
        """Walk XLA's reduction tree (``order.kind == "tree"``): each window of the input
        is folded from the identity, each window of window results likewise, and the last
        level's results are folded into ``start`` in row-major order. ``leaf(acc)`` folds
        the input element at ``idx`` (set here for the reduced dimensions) into ``acc``."""
        b, rdims = self.b, order.reduced

        def box(sizes: dict, window: tuple | None, pos: dict,
                fold: Callable[[dict, Carried], Carried], cur: Carried) -> Carried:
            """Fold the positions of one level (inside window ``pos`` of the next level,
            padding excluded) in row-major order."""
            def level(k: int, q: dict, acc: Carried) -> Carried:
                if k == len(rdims):
                    return fold(q, acc)
                d = rdims[k]
                lo, hi = c64(0), c64(sizes[d])
                if window is not None:
                    _, wins, lows = window
                    first = b.sub(b.mul(pos[d], c64(wins[d])), c64(lows[d]))
                    lo = self.max(first, c64(0))
                    hi = self.min(b.add(first, c64(wins[d])), hi)
                return self.loop(lo, hi, acc, lambda iv, a: level(k + 1, {**q, d: iv}, a),
                                 f"t{d}")
            return level(0, {}, cur)

        def value(level_no: int, q: dict, acc: Carried) -> Carried:
            """Fold element ``q`` of level ``level_no`` (0: the input) into ``acc``."""
            if level_no == 0:
                for d in rdims:
                    idx[d] = q[d]
                return leaf(acc)
            window = order.levels[level_no - 1]
            folded = box(window[0], window, q, lambda q2, a: value(level_no - 1, q2, a),
                         identities())
            return combine(acc, folded)

        top = len(order.levels)
        return box(order.top, None, {}, lambda q, a: value(top, q, a), start)

    def delinearize(self, item: ir.Value, dims: Sequence[tuple[int, int]], idx: list) -> None:
        """Set ``idx[d]`` for ``(d, size)`` pairs (major to minor) from a row-major position."""
        for (d, _), v in zip(dims, delinearize(self.b, item, [size for _, size in dims])):
            idx[d] = v


__all__ = ["Loops", "Carried", "reindex", "vector_lanes", "loop_hints", "VECTOR_BYTES",
           "INTERLEAVE"]
