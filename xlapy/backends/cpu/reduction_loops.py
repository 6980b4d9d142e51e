"""LLVM IR building blocks of the reduction kernels: loops carrying accumulators over
the reduced dimensions, the walk of XLA's reduction tree, and index relabelling."""
from __future__ import annotations

from typing import Callable, Sequence

from llvmlite import ir

from .elemental_data import delinearize
from .kernel_support import c64, carried_loop, for_loop
from .reduction_reducers import ReduceOrder

Carried = list  # list[ir.Value]: values carried around a loop


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
              chunk: tuple[ir.Value, int] | None = None) -> Carried:
        """Nested loops over ``(dimension, size)`` pairs (outermost first) setting ``idx``;
        ``chunk = (c, n)`` restricts the first dimension to chunk ``c`` of ``n``."""
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
            return self.sweep(rest, idx, cur, body)
        return self.loop(lo, hi, carried, step, f"r{d}")

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


__all__ = ["Loops", "Carried", "reindex"]
