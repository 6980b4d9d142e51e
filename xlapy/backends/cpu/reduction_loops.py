"""LLVM IR building blocks of the reduction kernels: loops carrying accumulators, the
walk of XLA's reduction tree, layout offsets, and alias metadata for the buffers."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from llvmlite import ir

from ...hlo.shape import Shape
from .kernel_api import I64, Generator
from .reduction_plan import major_to_minor
from .reduction_reducers import ReduceOrder

Carried = list  # list[ir.Value]: values carried around a loop


def c64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def linear_offset(b: ir.IRBuilder, index: Sequence[ir.Value], shape: Shape) -> ir.Value:
    """Physical element offset of a logical ``index`` in ``shape``'s layout."""
    linear = None
    for d in major_to_minor(shape):
        if linear is None:
            linear = index[d]
        elif shape.dims[d] == 1:
            continue
        else:
            linear = b.add(b.mul(linear, c64(shape.dims[d])), index[d])
    return linear if linear is not None else c64(0)


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


def memoize(b: ir.IRBuilder, gen: Generator) -> Generator:
    """Reuse a generated value for the same index within the same basic block."""
    cache: dict[tuple, tuple[Any, Any]] = {}

    def cached(index: list) -> Any:
        key = tuple(id(v) for v in index)
        hit = cache.get(key)
        if hit is not None and hit[0] is b.block:
            return hit[1]
        value = gen(index)
        cache[key] = (b.block, value)
        return value
    return cached


class Loops:
    """Loop constructs at a builder's insertion point."""

    def __init__(self, b: ir.IRBuilder) -> None:
        self.b = b

    def loop(self, lo: ir.Value, hi: ir.Value, carried: Carried,
             body: Callable[[ir.Value, Carried], Carried], name: str) -> Carried:
        """``for (i = lo; i < hi; ++i) carried = body(i, carried)``; the final values."""
        b = self.b
        pre = b.block
        header = b.append_basic_block(f"{name}.header")
        inner = b.append_basic_block(f"{name}.body")
        exit_ = b.append_basic_block(f"{name}.exit")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(I64, name=name)
        iv.add_incoming(lo, pre)
        phis = []
        for v in carried:
            p = b.phi(v.type)
            p.add_incoming(v, pre)
            phis.append(p)
        b.cbranch(b.icmp_signed("<", iv, hi), inner, exit_)
        b.position_at_end(inner)
        new = body(iv, list(phis))
        end = b.block
        iv.add_incoming(b.add(iv, c64(1), name=f"{name}.next", flags=["nsw"]), end)
        for p, v in zip(phis, new):
            p.add_incoming(v, end)
        b.branch(header)
        b.position_at_end(exit_)
        return list(phis)

    def each(self, lo: ir.Value, hi: ir.Value, body: Callable[[ir.Value], None],
             name: str) -> None:
        """``for (i = lo; i < hi; ++i) body(i)`` (nothing carried)."""
        def step(i: ir.Value, _: Carried) -> Carried:
            body(i)
            return []
        self.loop(lo, hi, [], step, name)

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
        b = self.b
        for pos in range(len(dims) - 1, -1, -1):
            d, size = dims[pos]
            if pos == 0:
                idx[d] = item
            else:
                idx[d] = b.urem(item, c64(size))
                item = b.udiv(item, c64(size))


def annotate_aliasing(module: ir.Module, name: str, fn: ir.Function,
                      ptrs: list[ir.Value], aliases: dict[int, int]) -> None:
    """Scoped ``noalias`` metadata: each buffer's loads and stores do not alias the others'
    (an operand sharing an output's memory, ``aliases[operand] = output``, gets that
    output's scope)."""
    distinct: list[ir.Value] = []
    for j, p in enumerate(ptrs):
        if j not in aliases and all(p is not q for q in distinct):
            distinct.append(p)
    if len(distinct) < 2:
        return
    domain = module.add_metadata([ir.MetaDataString(module, f"{name}.buffers")])
    scopes = [module.add_metadata([ir.MetaDataString(module, f"{name}.b{i}"), domain])
              for i in range(len(distinct))]
    own = [module.add_metadata([s]) for s in scopes]
    others = [module.add_metadata([o for j, o in enumerate(scopes) if j != i])
              for i in range(len(scopes))]
    index = {id(p): i for i, p in enumerate(distinct)}
    for j, k in aliases.items():
        index[id(ptrs[j])] = index[id(ptrs[k])]
    memo: dict[int, int | None] = {}

    def base(v: ir.Value) -> int | None:
        key = id(v)
        if key not in memo:
            found = index.get(key)
            if found is None and isinstance(v, (ir.GEPInstr, ir.CastInstr)):
                found = base(v.operands[0])
            memo[key] = found
        return memo[key]

    for block in fn.blocks:
        for ins in block.instructions:
            if isinstance(ins, ir.LoadInstr):
                k = base(ins.operands[0])
            elif isinstance(ins, ir.StoreInstr):
                k = base(ins.operands[1])
            else:
                continue
            if k is not None:
                ins.set_metadata("alias.scope", own[k])
                ins.set_metadata("noalias", others[k])


__all__ = ["Loops", "Carried", "c64", "linear_offset", "reindex", "memoize",
           "annotate_aliasing"]
