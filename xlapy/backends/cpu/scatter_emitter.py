"""Native ``scatter`` kernels (top level, or the root of a loop fusion).

Semantics (XLA's, as the interpreter implements them): the outputs start as copies of
the operands; then for every position ``p`` of the updates' scatter dimensions, in
row-major order, the index vector at ``p`` gives the operand start (components go to the
dims named by ``scatter_dims_to_operand_dims``; operand batching dims take ``p``'s
coordinate along the paired indices batching dim). An update whose whole window does not
fit inside the operand (``0 <= start_d <= dim_d - window_d`` for every dim) is **skipped
entirely**; otherwise every window element, in row-major window order, is combined into
the output: ``out[start + w] = combiner(out[start + w], update[p, w])`` (one after
another, so duplicates and ``set``-style combiners give the interpreter's result).
Index values are read as signed or unsigned by their type; a ``u64`` index above
``2**63`` is out of bounds like any other too-large index.

In place: when buffer assignment gives an output the buffer of its operand (and nothing
else reads that operand), the copy is skipped.

Work units: scatter is sequential in update order, so the kernel is one unit, unless
some operand dimension ``d`` is covered whole by every update window (``window_d ==
dim_d``, so every in-bounds start is 0 along ``d``, e.g. the row dimension of a
scatter-add of embedding rows). Then units are blocks of ``d``: each unit copies and
updates only its block, in the same update order, so units write disjoint elements.
"""
from __future__ import annotations

from math import prod
from typing import Any

from llvmlite import ir

from ...hlo.ir import HloInstruction
from .elemental_data import index_to_i64
from .kernel_api import KernelSpec, kernel_buffers
from .kernel_support import (KernelScaffold, PlanKernelEmitter, buffer_aliases, bytes_of, c64,
                             find_hero, fused_parameter, has_register_type, major_to_minor)
from .reduction_reducers import Reducer

MIN_BLOCK = 256      # elements of the free dimension per unit, at least (each unit
                     # reads every index again, so small blocks cost more than they gain)
MAX_UNITS = 8


def _ints(instr: HloInstruction, name: str) -> list[int]:
    return [int(v) for v in instr.attrs.get(name, ()) or ()]


class _Plan:
    """The geometry of one scatter (see the module docstring)."""

    def __init__(self, instr: HloInstruction, hero: HloInstruction) -> None:
        self.instr, self.hero = instr, hero
        self.n = len(hero.operands) // 2
        self.inputs = hero.operands[:self.n]
        self.indices = hero.operands[self.n]
        self.updates = hero.operands[self.n + 1:]
        self.dims = list(self.inputs[0].shape.dims)
        self.update_dims = list(self.updates[0].shape.dims)
        self.update_window = _ints(hero, "update_window_dims")
        self.inserted = _ints(hero, "inserted_window_dims")
        self.index_map = _ints(hero, "scatter_dims_to_operand_dims")
        self.input_batching = _ints(hero, "input_batching_dims")
        self.indices_batching = _ints(hero, "scatter_indices_batching_dims")
        self.ivd = int(hero.attrs.get("index_vector_dim", len(self.indices.shape.dims)))
        self.window_dims = [d for d in range(len(self.dims))
                            if d not in self.inserted and d not in self.input_batching]
        self.scatter_dims = [d for d in range(len(self.update_dims))
                             if d not in self.update_window]
        self.window_size = [1] * len(self.dims)
        for d, ud in zip(self.window_dims, self.update_window):
            self.window_size[d] = self.update_dims[ud]
        self.copy = [True] * self.n      # operand k must be copied into output k
        self.free: int | None = None     # the dimension units split (see docstring)

    def valid(self) -> bool:
        ind = self.indices.shape
        rank = len(self.dims)
        if any(list(x.shape.dims) != self.dims for x in self.inputs) or \
                any(list(u.shape.dims) != self.update_dims for u in self.updates):
            return False
        if not ind.element_type.is_integral or not 0 <= self.ivd <= ind.rank:
            return False
        if len(self.window_dims) != len(self.update_window) or \
                sorted(self.update_window) != self.update_window or \
                any(not 0 <= d < len(self.update_dims) for d in self.update_window):
            return False
        batch = [ind.dims[d] for d in range(ind.rank) if d != self.ivd]
        if [self.update_dims[d] for d in self.scatter_dims] != batch:
            return False
        vector = ind.dims[self.ivd] if self.ivd < ind.rank else 1
        if vector != len(self.index_map) or any(not 0 <= d < rank for d in self.index_map):
            return False
        if len(self.input_batching) != len(self.indices_batching) or \
                any(not 0 <= d < rank for d in self.input_batching) or \
                any(d == self.ivd or not 0 <= d < ind.rank for d in self.indices_batching):
            return False
        return True

    def batch_position(self, indices_dim: int) -> int:
        """Which scatter dimension of the updates pairs with an indices dimension."""
        return indices_dim - 1 if indices_dim > self.ivd else indices_dim


def _analyze(instr: HloInstruction, assignment: Any) -> _Plan | None:
    hero = find_hero(instr, ("scatter",))
    if hero is None or len(hero.operands) < 3 or len(hero.operands) % 2 != 1:
        return None
    plan = _Plan(instr, hero)
    if not plan.valid():
        return None
    ets = [x.shape.element_type for x in plan.inputs]
    outs = hero.shape.tuple_shapes if hero.shape.is_tuple else (hero.shape,)
    if [s.element_type for s in outs] != ets or \
            [u.shape.element_type for u in plan.updates] != ets or \
            not all(has_register_type(s) for s in outs) or \
            not Reducer.supported(hero.to_apply, ets):
        return None
    buffers = kernel_buffers(instr)
    aliases = buffer_aliases(assignment, instr, buffers)
    if aliases is None or not _in_place_ok(plan, aliases, buffers):
        return None
    num_operands = sum(1 for kb in buffers if kb.role == "operand")
    for j, out_slot in aliases.items():
        plan.copy[out_slot - num_operands] = False
    plan.free = _free_dim(plan, buffers[num_operands].shape)
    return plan


def _in_place_ok(plan: _Plan, aliases: dict[int, int], buffers) -> bool:
    """Every operand buffer shared with an output is that output's own operand, read
    directly and by nothing else (the copy is skipped and the buffer is updated)."""
    instr, hero = plan.instr, plan.hero
    num_operands = sum(1 for kb in buffers if kb.role == "operand")
    for j, out_slot in aliases.items():
        k = out_slot - num_operands
        if k >= plan.n or fused_parameter(instr, hero, hero.operands[k]) != j:
            return False
        if major_to_minor(buffers[j].shape) != major_to_minor(buffers[out_slot].shape):
            return False
        operand = hero.operands[k]
        if instr is hero:
            shared = sum(1 for o in hero.operands if o is operand) > 1
        else:
            shared = len(operand.users) > 1      # the fused parameter feeds other values too
        if shared:
            return False
    return True


def _free_dim(plan: _Plan, out_shape) -> int | None:
    """The operand dimension units split (whole in every window), or None."""
    for d in major_to_minor(out_shape):
        if d in plan.window_dims and plan.window_size[d] == plan.dims[d] and \
                plan.dims[d] >= 2 * MIN_BLOCK:
            return d
    return None


class _Kernel:
    def __init__(self, module: ir.Module, name: str, plan: _Plan) -> None:
        self.plan = plan
        self.sc = KernelScaffold(module, name, plan.instr, plan.hero)
        self.b = self.sc.b
        self.combiner = Reducer(plan.hero.to_apply, [x.shape.element_type for x in plan.inputs])
        free = plan.free
        if free is None:
            self.units, self.block = 1, 0
        else:
            size = plan.dims[free]
            units = min(MAX_UNITS, size // MIN_BLOCK)
            self.block = -(-size // units)
            self.units = -(-size // self.block)

    def _range(self, u: ir.Value) -> dict[int, tuple[Any, Any]]:
        """The block of the free dimension unit ``u`` owns."""
        free = self.plan.free
        if free is None:
            return {}
        b = self.b
        lo = b.mul(u, c64(self.block))
        end = b.add(lo, c64(self.block))
        size = c64(self.plan.dims[free])
        return {free: (lo, b.select(b.icmp_signed("<", end, size), end, size))}

    def _copy(self, ranges: dict) -> None:
        sc, plan = self.sc, self.plan
        for k in range(plan.n):
            if not plan.copy[k]:
                continue
            slot = sc.output_slot(k)
            gen = sc.operand(k)

            def put(index: list, slot: int = slot, gen=gen) -> None:
                sc.store(slot, gen(index), sc.element_ptr(slot, index))
            sc.nest(plan.dims, major_to_minor(sc.buffers[slot].shape), put, ranges, f"copy{k}_")

    def _starts(self, p: list) -> tuple[list, ir.Value | None]:
        """Operand start per dimension for scatter position ``p`` and the in-bounds test."""
        b, plan = self.b, self.plan
        ind = plan.indices.shape
        starts: list = [c64(0)] * len(plan.dims)
        gen = self.sc.operand(plan.n)
        signed = ind.element_type.is_signed_integral
        batch_dims = [d for d in range(ind.rank) if d != plan.ivd]
        for j, d in enumerate(plan.index_map):
            index: list = [None] * ind.rank
            for pos, idim in enumerate(batch_dims):
                index[idim] = p[pos]
            if plan.ivd < ind.rank:
                index[plan.ivd] = c64(j)
            starts[d] = index_to_i64(b, gen(index), signed)
        for od, idim in zip(plan.input_batching, plan.indices_batching):
            starts[od] = p[plan.batch_position(idim)]
        tests = []
        runtime = set(plan.index_map) | set(plan.input_batching)
        for d, s in enumerate(starts):
            limit = plan.dims[d] - plan.window_size[d]
            if limit < 0:
                return starts, ir.Constant(ir.IntType(1), 0)
            if d in runtime:
                tests.append(b.icmp_unsigned("<=", s, c64(limit)))   # also rejects s < 0
        ok = None
        for t in tests:
            ok = t if ok is None else b.and_(ok, t)
        return starts, ok

    def _apply(self, starts: list, p: list, w: list) -> None:
        """Combine the update element at (``p``, ``w``) into every output."""
        b, sc, plan = self.b, self.sc, self.plan
        u_index: list = [None] * len(plan.update_dims)
        for pos, d in enumerate(plan.scatter_dims):
            u_index[d] = p[pos]
        for pos, d in enumerate(plan.update_window):
            u_index[d] = w[pos]
        target = list(starts)
        for j, d in enumerate(plan.window_dims):
            target[d] = w[j] if d == plan.free else b.add(starts[d], w[j], flags=["nsw"])
        ptrs = [sc.element_ptr(sc.output_slot(k), target) for k in range(plan.n)]
        olds = [sc.load(sc.output_slot(k), ptrs[k]) for k in range(plan.n)]
        news = [sc.operand(plan.n + 1 + k)(u_index) for k in range(plan.n)]
        comb = self.combiner
        result = comb.from_acc(b, comb.combine(b, comb.to_acc(b, olds), comb.to_acc(b, news)))
        for k in range(plan.n):
            sc.store(sc.output_slot(k), result[k], ptrs[k])

    def build(self) -> KernelSpec:
        sc, plan, b = self.sc, self.plan, self.b
        scatter_extents = [plan.update_dims[d] for d in plan.scatter_dims]
        window_extents = [plan.update_dims[d] for d in plan.update_window]
        free_pos = plan.window_dims.index(plan.free) if plan.free is not None else None
        empty = prod(plan.dims) == 0

        def unit(u: ir.Value) -> None:
            ranges = self._range(u)
            self._copy(ranges)
            if empty or prod(plan.update_dims) == 0:
                return

            def position(p: list) -> None:
                starts, ok = self._starts(p)

                def windows() -> None:
                    w_ranges = {free_pos: ranges[plan.free]} if free_pos is not None else {}
                    sc.nest(window_extents, list(range(len(window_extents))),
                            lambda w: self._apply(starts, p, w), w_ranges, "win")
                if ok is None:
                    windows()
                else:
                    with b.if_then(ok):
                        windows()
            sc.nest(scatter_extents, list(range(len(scatter_extents))), position, name="pos")

        units = self.units if not empty else 0
        if units:
            sc.units_loop(unit)
        sc.finish()
        updates = prod(plan.update_dims) * plan.n
        return KernelSpec(sc.name, plan.instr, sc.buffers, units=units,
                          cost=float(bytes_of(sc.buffers) + 4 * updates),
                          notes=[f"scatter of {updates} update elements in {units} units"
                                 + ("" if all(plan.copy) else " (in place)")])


class ScatterEmitter(PlanKernelEmitter):
    """A ``KernelEmitter`` for ``scatter`` and loop fusions rooted at one."""

    kind = "scatter"
    analyze_plan = staticmethod(_analyze)
    kernel_class = _Kernel


__all__ = ["ScatterEmitter"]
