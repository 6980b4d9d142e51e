"""Reduction kernels: ``reduce`` and fusions containing reduces, as vectorizable LLVM loops.

:class:`ReductionEmitter` is a ``KernelEmitter`` (see ``kernel_api``) for

- a ``reduce`` instruction (one or several inputs: variadic, argmax-style reducers too);
- a fusion (``kLoop`` as XLA:CPU's fusion pass makes them, ``kInput``, or XLA's
  ``kCustom`` YNNPACK reductions) whose fused computation reduces one input space with one
  or several reduces, followed by an elementwise *epilogue* on the reduced values
  (``mean = sum * (1/n)``, ``rsqrt(var + eps)``), possibly exporting elementwise values of
  the input space (multi-output fusions) and possibly containing other, smaller reduces
  (computed elementally where they are used, e.g. the inner reduce of a reduce of a
  reduce). The reduce's input is computed by composing the fused computation's elemental
  generators, so ``sum(x + y*z)`` reads x, y and z once and writes one scalar.

What is accepted and how the input is walked (row / column mode, work units, splitting)
is decided by :mod:`.reduction_analysis` and :mod:`.reduction_plan`; how values are
combined, and in which order, by :mod:`.reduction_reducers`; loops by
:mod:`.reduction_loops`.

**Vectorization.** In row mode (reducing the minor-most physical dimension, full
reductions included) the innermost loop runs over contiguous elements and carries the
accumulators in registers. For an order-insensitive reducer (max/min/integer/boolean
ops), and for a float add/multiply over an input of 4096 elements or more, this is a
reduction LLVM's loop vectorizer recognizes: the generated code keeps several independent
vector accumulators (4 x ``<8 x float>``, interleaved to hide the add latency) and
combines them with a horizontal reduction at the end of the row. A float
``add``/``multiply`` of such a large input is therefore **reassociated** (its
``fadd``/``fmul`` carry the ``reassoc`` flag and nothing else: no FMA contraction, NaN and
infinities as IEEE), as XLA:CPU does for these sizes (it hands them to YNNPACK's
vectorized reduction). Its loop is *pinned* (``reduction_loops``): the vector width and
interleave count are fixed by loop metadata and the rest of the row is folded by a loop
of single vectors and a scalar tail, so the order depends on the row length and the
accumulator type only, never on what else the kernel computes (fusing a sum with its
producers and consumers keeps its bits, unless one of the two kernels splits the rows
across threads, see below). Smaller float sums follow XLA:CPU's
exact order (a sequential fold, or the window tree of its ``TreeReductionRewriter``), so
they agree with XLA bit for bit.
``maximum``/``minimum`` are ``llvm.maximum``/``llvm.minimum``: NaN propagates and
``-0 < +0``, in any order. General reducers (argmax) combine in index order.
In column mode (the minor-most dimension is kept) the accumulators of a block of
consecutive output elements live in a small stack array updated with unit stride by every
reduced position: this vectorizes across the kept dimension and keeps the index order.

**Work units and determinism.** A kernel writes only its own output elements per unit:
in row mode a unit is a group of output rows; in column mode a group of (outer index,
block) items. A large reduction with few outputs (a full reduction, a few long rows or
columns) whose reducers all have an identity is *split*: unit ``(item, chunk)`` reduces a
fixed chunk of the outermost reduced dimension starting from the identity and stores its
partial result in an internal global array; every kernel call adds the number of units it
did to an internal atomic counter, and the call that completes the last unit combines the
partials in chunk order (from the init value, so the init is applied once) and writes the
outputs. The number of chunks depends only on the shapes, so results are the same bits
for any thread count and any run. The global state makes such a kernel non-reentrant:
the runtime never runs one kernel concurrently with itself (an executable runs one call
at a time).
"""
from __future__ import annotations

from math import prod
from typing import Any, Callable

from llvmlite import ir

from ...hlo.ir import HloInstruction
from ...hlo.shape import Shape
from .elemental import ElementalEmitter
from .kernel_api import (I64, Generator, KernelSpec, buffer_pointer, constant_generator,
                         declare_kernel, element_generator, memoize)
from .kernel_support import (PlannedEmitter, annotate_noalias, c64, linear_offset,
                             major_to_minor)
from .llvm_types import llvm_type, load_element, storage_type, store_element
from .reduction_analysis import analyze
from .reduction_loops import Carried, Loops, reindex, vector_lanes
from .reduction_plan import Hero, Phase, ReductionPlan, with_layout
from .reduction_reducers import ReduceOrder


class ReductionEmitter(PlannedEmitter):
    """A ``KernelEmitter`` for reductions and reduction fusions (see the module docstring).

    ``assignment`` (a ``BufferAssignment``) tells which operand shares an output buffer;
    without it no buffers are assumed to coincide.
    """

    kind = "reduction"

    def analyze(self, instr: HloInstruction) -> ReductionPlan | None:
        return analyze(instr, self.assignment)

    def build(self, module: ir.Module, name: str, plan: ReductionPlan) -> KernelSpec:
        return _ReductionKernel(module, name, plan).build()


# ----------------------------------------------------------------------------------------------
def _pinned_lanes(heroes: list[Hero], order: ReduceOrder) -> int:
    """Lanes of the pinned vector loop of a reassociated float sum or product (0: none;
    see ``reduction_loops``)."""
    sensitive = [t for h in heroes if h.reducer.order_sensitive for t in h.reducer.acc_types()]
    return vector_lanes(sensitive) if order.reassociate and sensitive else 0


class _Site:
    """Generators of the fused values at one place in the kernel.

    ``hero_values`` maps each hero to its finished values (register types) where the
    epilogue is evaluated; on the input side it is empty. Generated values are reused for
    the same index within a basic block."""

    def __init__(self, kernel: "_ReductionKernel", hero_values: dict[int, list[ir.Value]],
                 sweep: int | None = None) -> None:
        self.k = kernel
        self.hero_values = hero_values
        self.sweep = sweep               # which sweep over a row (for the row cache)
        self.gens: dict[int, Generator] = {}

    def operand(self, hero: Hero, position: int) -> Generator:
        """Generator of operand ``position`` of ``hero`` (inputs, then inits)."""
        plan = self.k.plan
        if plan.comp is None:
            return self.k.load(plan.operand_slots[(position, ())])
        return self.gen(hero.instr.operands[position])

    def gen(self, instr: HloInstruction) -> Generator:
        if id(instr) not in self.gens:
            self._build(instr)
        return self.gens[id(instr)]

    def _build(self, top: HloInstruction) -> None:
        """Create generators for ``top`` and the values it needs, operands first."""
        stack = [(top, False)]
        while stack:
            instr, ready = stack.pop()
            if id(instr) in self.gens:
                continue
            leaf = self._leaf(instr)
            if leaf is not None:
                self.gens[id(instr)] = leaf
                continue
            if not ready:
                stack.append((instr, True))
                stack.extend((o, False) for o in instr.operands if id(o) not in self.gens)
                continue
            operands = [self.gens[id(o)] for o in instr.operands]
            if instr.opcode == "get-tuple-element":          # of an elemental reduce
                k, whole = instr.attrs["index"], operands[0]
                self.gens[id(instr)] = element_generator(whole, k)
            elif instr.opcode == "reduce":
                self.gens[id(instr)] = memoize(self.k.b, self.k.elemental_reduce(
                    self.k.plan.elemental[id(instr)], operands))
            else:
                gen = self.k.em.generator(instr, operands)       # memoized by the emitter
                if self.sweep is not None and id(instr) in self.k.plan.row_cache:
                    gen = memoize(self.k.b, self.k.keep_in_row(instr, gen))
                self.gens[id(instr)] = gen

    def _leaf(self, instr: HloInstruction) -> Generator | None:
        """Generators that need no operand generators: hero results, buffer reads and
        values kept in the row cache by an earlier sweep."""
        values = self.hero_values.get(id(instr))
        if values is not None:
            return constant_generator(values[0])
        first = self.k.plan.row_cache.get(id(instr))
        if first is not None and self.sweep is not None and self.sweep > first:
            return self.k.from_row(instr)
        if instr.opcode == "get-tuple-element":
            path: list[int] = []
            base = instr
            while base.opcode == "get-tuple-element":
                path.insert(0, base.attrs["index"])
                base = base.operands[0]
            if id(base) in self.hero_values:
                return constant_generator(self.hero_values[id(base)][path[0]])
            if base.opcode != "parameter":
                return None
            return self.k.load(self.k.plan.operand_slots[(base.parameter_number, tuple(path))])
        if instr.opcode == "parameter":
            return self.k.load(self.k.plan.operand_slots[(instr.parameter_number, ())])
        return None


class _ReductionKernel:
    """Builds one reduction kernel from a plan."""

    def __init__(self, module: ir.Module, name: str, plan: ReductionPlan) -> None:
        self.module, self.name, self.plan = module, name, plan
        self.fn, self.b = declare_kernel(module, name)
        self.em = ElementalEmitter(self.b, module)
        self.loops = Loops(self.b)
        self.rank = len(plan.in_dims)
        # accumulators of the first phase (the only one in column mode and when split)
        self.acc_types = [t for h in plan.phases[0].heroes for t in h.reducer.acc_types()]

    # ----- buffers
    def load(self, slot: int) -> Generator:
        b, ptr = self.b, self.ptrs[slot]
        shape = with_layout(self.plan.buffers[slot].shape)

        def gen(index: list) -> ir.Value:
            where = b.gep(ptr, [linear_offset(b, index, shape)], inbounds=True)
            return load_element(b, where, shape.element_type)
        return memoize(b, gen)

    def store(self, value: ir.Value, slot: int, shape: Shape, index: list) -> None:
        b = self.b
        where = b.gep(self.ptrs[slot], [linear_offset(b, index, shape)], inbounds=True)
        store_element(b, value, where, shape.element_type)

    # ----- the row cache: values computed by one sweep over a row and read by later ones
    def _row_slot(self, instr: HloInstruction, index: list) -> ir.Value:
        b, plan = self.b, self.plan
        pos = c64(0)
        for d in plan.reduced_phys:
            pos = b.add(b.mul(pos, c64(plan.in_dims[d])), index[d])
        return b.gep(self.row_arrays[id(instr)], [c64(0), pos], inbounds=True)

    def keep_in_row(self, instr: HloInstruction, gen: Generator) -> Generator:
        def keep(index: list) -> ir.Value:
            value = gen(index)
            self.b.store(value, self._row_slot(instr, index))
            return value
        return keep

    def from_row(self, instr: HloInstruction) -> Generator:
        return memoize(self.b, lambda index: self.b.load(self._row_slot(instr, index)))

    def _dims(self, dims: list[int]) -> list[tuple[int, int]]:
        return [(d, self.plan.in_dims[d]) for d in dims]

    # ----- combining (per phase: the heroes reduced in one sweep)
    @staticmethod
    def _split_accs(heroes: list[Hero], accs: Carried) -> list[Carried]:
        """Concatenated accumulators -> one list per hero."""
        out, pos = [], 0
        for h in heroes:
            out.append(accs[pos:pos + h.reducer.n])
            pos += h.reducer.n
        return out

    def accumulate(self, phase: Phase, idx: list, accs: Carried,
                   hero_values: dict[int, list[ir.Value]], first: bool) -> Carried:
        """Fold the input elements at ``idx`` into the accumulators of ``phase``'s heroes
        (earlier phases' values in ``hero_values``); the ``first`` sweep also stores the
        input-side outputs that do not depend on heroes."""
        b, site = self.b, _Site(self, hero_values, phase.number)
        reassociate = phase.order.reassociate
        new: Carried = []
        for h, acc in zip(phase.heroes, self._split_accs(phase.heroes, accs)):
            values = h.reducer.to_acc(b, [site.operand(h, k)(idx) for k in range(h.reducer.n)])
            new.extend(h.reducer.combine(b, acc, values, reassociate))
        if first:
            for o in self.plan.input_outputs:
                self.store(site.gen(o.value)(idx), o.slot, o.store_shape, idx)
        return new

    def combine(self, phase: Phase, accs: Carried, values: Carried) -> Carried:
        """Combine two sets of accumulators (partial results) of ``phase``."""
        out: Carried = []
        for h, a, v in zip(phase.heroes, self._split_accs(phase.heroes, accs),
                           self._split_accs(phase.heroes, values)):
            out.extend(h.reducer.combine(self.b, a, v, phase.order.reassociate))
        return out

    @staticmethod
    def identities(phase: Phase) -> Carried:
        return [c for h in phase.heroes for c in h.reducer.identity()]

    def inits(self, phase: Phase) -> Carried:
        return [v for h in phase.heroes for v in self.init_values[id(h.instr)]]

    def values(self, phase: Phase, accs: Carried) -> dict[int, list[ir.Value]]:
        """The finished values (register types) of ``phase``'s heroes."""
        return {id(h.instr): h.reducer.from_acc(self.b, a)
                for h, a in zip(phase.heroes, self._split_accs(phase.heroes, accs))}

    def reduce_into(self, phase: Phase, idx: list, start: Carried,
                    hero_values: dict[int, list[ir.Value]], first: bool,
                    chunk: tuple[ir.Value, int] | None = None) -> Carried:
        """Fold every input element of the row at ``idx`` (kept dims set) into ``start``."""
        def leaf(acc: Carried) -> Carried:
            return self.accumulate(phase, idx, acc, hero_values, first)
        if phase.order.kind == "tree":
            return self.loops.tree(phase.order, idx, start, leaf,
                                   lambda a, v: self.combine(phase, a, v),
                                   lambda: self.identities(phase))
        return self.loops.sweep(self._dims(self.plan.reduced_phys), idx, start, leaf, chunk,
                                lanes=_pinned_lanes(phase.heroes, phase.order))

    def finish(self, idx: list, hero_values: dict[int, list[ir.Value]]) -> None:
        """Evaluate the reduce-side outputs at the output element of ``idx``; store them."""
        plan = self.plan
        site = _Site(self, hero_values)
        out_index = [idx[d] for d in plan.kept]
        for o in plan.reduce_outputs:
            index = reindex(out_index, plan.out_dims, o.store_shape.dims)
            if o.leaf is not None:
                value = hero_values[id(o.value)][o.leaf]
            else:
                value = site.gen(o.value)(reindex(out_index, plan.out_dims, o.value.shape.dims))
            self.store(value, o.slot, o.store_shape, index)

    def store_late(self, idx: list, hero_values: dict[int, list[ir.Value]]) -> None:
        """One more sweep over the row at ``idx`` storing the hero-dependent input-side
        outputs (the row is still in cache from the phases)."""
        def body(acc: Carried) -> Carried:
            site = _Site(self, hero_values, len(self.plan.phases))
            for o in self.plan.late_outputs:
                self.store(site.gen(o.value)(idx), o.slot, o.store_shape, idx)
            return acc
        self.loops.sweep(self._dims(self.plan.reduced_phys), idx, [], body)

    def elemental_reduce(self, h: Hero, gens: list[Generator]) -> Generator:
        """Generator of a reduce computed where it is used: a loop over its reduced
        dimensions (in its order) for each requested element. Tuple-shaped reduces give
        the list of their values."""
        b, n, r = self.b, h.reducer.n, h.reducer
        rank = len(h.in_dims)
        kept = [d for d in range(rank) if d not in h.instr.dimensions]
        phys = [d for d in major_to_minor(with_layout(h.inputs[0].shape))
                if d in h.instr.dimensions and h.in_dims[d] != 1]
        reassociate = h.order.reassociate

        def gen(index: list) -> Any:
            idx = [c64(0)] * rank
            for k, d in enumerate(kept):
                idx[d] = index[k]
            start = r.to_acc(b, [gens[n + k]([]) for k in range(n)])

            def leaf(acc: Carried) -> Carried:
                return r.combine(b, acc, r.to_acc(b, [gens[k](idx) for k in range(n)]),
                                 reassociate)
            if h.order.kind == "tree":
                accs = self.loops.tree(h.order, idx, start, leaf,
                                       lambda a, v: r.combine(b, a, v), r.identity)
            else:
                accs = self.loops.sweep([(d, h.in_dims[d]) for d in phys], idx, start, leaf,
                                        lanes=_pinned_lanes([h], h.order))
            values = r.from_acc(b, accs)
            return values if h.instr.shape.is_tuple else values[0]
        return gen

    # ----- the kernel
    def build(self) -> KernelSpec:
        plan, b = self.plan, self.b
        self.ptrs = [buffer_pointer(b, self.fn, i, storage_type(buf.shape.element_type))
                     for i, buf in enumerate(plan.buffers)]
        for j, k in plan.aliases.items():
            same = self.ptrs[k].type == self.ptrs[j].type
            self.ptrs[j] = self.ptrs[k] if same else b.bitcast(self.ptrs[k], self.ptrs[j].type)
        if plan.mode == "column":
            self.scratch = [b.alloca(ir.ArrayType(t, max(plan.block, 1)), name=f"acc{i}")
                            for i, t in enumerate(self.acc_types)]
        self.row_arrays = {}
        for key in plan.row_cache:
            instr = next(i for i in plan.comp.instructions if id(i) == key)
            ty = ir.ArrayType(llvm_type(instr.shape.element_type), plan.reduced_size)
            self.row_arrays[key] = b.alloca(ty, name="row")
        site = _Site(self, {})
        self.init_values = {id(h.instr): h.reducer.to_acc(
            b, [site.operand(h, h.reducer.n + k)([]) for k in range(h.reducer.n)])
            for h in plan.heroes}
        if plan.split > 1:
            self._declare_partials()
        unit = self._row_unit if plan.mode == "row" else self._column_unit
        self.loops.each(self.fn.args[1], self.fn.args[2], unit, "unit")
        if plan.split > 1:
            self._combine_partials()
        b.ret_void()
        annotate_noalias(self.module, self.name, self.fn, self.ptrs)
        nbytes = sum(buf.shape.byte_size for buf in plan.buffers)
        ops = len(plan.comp.instructions) if plan.comp is not None else 1
        orders = "/".join(p.order.kind for p in plan.phases)
        notes = [f"{plan.mode} reduction of {list(plan.in_dims)} over {sorted(plan.reduced)} "
                 f"in {orders} order: {plan.items} items in {plan.units} units"
                 + (f", split in {plan.split} chunks" if plan.split > 1 else "")
                 + (f", {len(plan.phases)} phases" if len(plan.phases) > 1 else "")]
        return KernelSpec(self.name, plan.instr, plan.buffers, units=plan.units,
                          cost=float(nbytes + prod(plan.in_dims) * ops), notes=notes)

    def _items(self, u: ir.Value, body: Callable[[ir.Value, ir.Value | None], None]) -> None:
        """Call ``body(item, chunk)`` for every item of unit ``u``."""
        plan, b = self.plan, self.b
        if plan.split > 1:
            body(b.udiv(u, c64(plan.split)), b.urem(u, c64(plan.split)))
        elif plan.items_per_unit == 1:
            body(u, None)
        else:
            lo = b.mul(u, c64(plan.items_per_unit))
            hi = self.loops.min(b.add(lo, c64(plan.items_per_unit)), c64(plan.items))
            self.loops.each(lo, hi, lambda item: body(item, None), "item")

    def _row_unit(self, u: ir.Value) -> None:
        plan, b = self.plan, self.b

        def item_body(item: ir.Value, chunk: ir.Value | None) -> None:
            idx = [c64(0)] * self.rank
            self.loops.delinearize(item, self._dims(plan.kept_phys), idx)
            if chunk is not None:
                phase = plan.phases[0]
                accs = self.reduce_into(phase, idx, self.identities(phase), {}, True,
                                        (chunk, plan.split))
                self._store_partial(b.add(b.mul(item, c64(plan.split)), chunk), accs)
                return
            hero_values: dict[int, list[ir.Value]] = {}
            for p, phase in enumerate(plan.phases):
                accs = self.reduce_into(phase, idx, self.inits(phase), hero_values, p == 0)
                hero_values.update(self.values(phase, accs))
            self.finish(idx, hero_values)
            if plan.late_outputs:
                self.store_late(idx, hero_values)
        self._items(u, item_body)

    def _column_block(self, item: ir.Value, idx: list) -> tuple[ir.Value, ir.Value]:
        """Set the outer kept indices of column item ``item``; its first vector-dimension
        index and its length."""
        plan, b = self.plan, self.b
        c = plan.in_dims[plan.vdim]
        blocks = -(-c // plan.block)
        outer, blk = (b.udiv(item, c64(blocks)), b.urem(item, c64(blocks))) if blocks > 1 \
            else (item, c64(0))
        self.loops.delinearize(outer, self._dims(plan.kept_phys), idx)
        j0 = b.mul(blk, c64(plan.block))
        return j0, self.loops.min(b.sub(c64(c), j0), c64(plan.block))

    def _scratch(self, i: int, j: ir.Value) -> ir.Value:
        return self.b.gep(self.scratch[i], [c64(0), j], inbounds=True)

    def _column_unit(self, u: ir.Value) -> None:
        plan, b, loops = self.plan, self.b, self.loops
        count = len(self.acc_types)
        phase = plan.phases[0]

        def item_body(item: ir.Value, chunk: ir.Value | None) -> None:
            idx = [c64(0)] * self.rank
            j0, length = self._column_block(item, idx)
            start = self.identities(phase) if chunk is not None else self.inits(phase)

            def init(j: ir.Value) -> None:
                for i, v in enumerate(start):
                    b.store(v, self._scratch(i, j))
            loops.each(c64(0), length, init, "c.init")

            def lane(j: ir.Value) -> None:
                idx[plan.vdim] = b.add(j0, j)
                cur = [b.load(self._scratch(i, j)) for i in range(count)]
                for i, v in enumerate(self.accumulate(phase, idx, cur, {}, True)):
                    b.store(v, self._scratch(i, j))

            def rows(acc: Carried) -> Carried:
                loops.each(c64(0), length, lane, "c.lane")
                return acc
            loops.sweep(self._dims(plan.reduced_phys), idx, [], rows,
                        (chunk, plan.split) if chunk is not None else None)

            def out(j: ir.Value) -> None:
                idx[plan.vdim] = b.add(j0, j)
                accs = [b.load(self._scratch(i, j)) for i in range(count)]
                if chunk is None:
                    self.finish(idx, self.values(phase, accs))
                else:
                    slot = b.add(b.mul(item, c64(plan.block)), j)
                    self._store_partial(b.add(b.mul(slot, c64(plan.split)), chunk), accs)
            loops.each(c64(0), length, out, "c.out")
        self._items(u, item_body)

    # ----- split reductions: partial results and their combination
    def _declare_partials(self) -> None:
        plan, m = self.plan, self.module
        count = plan.items * plan.outputs_per_item * plan.split
        self.partials = []
        for i, t in enumerate(self.acc_types):
            ty = ir.ArrayType(t, count)
            g = ir.GlobalVariable(m, ty, name=m.get_unique_name(f"{self.name}.partial{i}"))
            g.linkage = "internal"
            g.initializer = ir.Constant(ty, None)
            g.align = 64
            self.partials.append(g)
        counter = ir.GlobalVariable(m, I64, name=m.get_unique_name(f"{self.name}.done"))
        counter.linkage = "internal"
        counter.initializer = c64(0)
        counter.align = 64
        self.counter = counter

    def _partial(self, i: int, slot: ir.Value) -> ir.Value:
        return self.b.gep(self.partials[i], [c64(0), slot], inbounds=True)

    def _store_partial(self, slot: ir.Value, accs: Carried) -> None:
        for i, v in enumerate(accs):
            self.b.store(v, self._partial(i, slot))

    def _combine_partials(self) -> None:
        """The call that completes the last unit combines all partials, in chunk order."""
        plan, b, loops = self.plan, self.b, self.loops
        phase = plan.phases[0]
        done = b.sub(self.fn.args[2], self.fn.args[1])
        before = b.atomic_rmw("add", self.counter, done, "acq_rel")
        with b.if_then(b.icmp_signed("==", b.add(before, done), c64(plan.units))):
            b.store_atomic(c64(0), self.counter, "monotonic", 8)

            def reduce_slot(slot: ir.Value) -> dict[int, list[ir.Value]]:
                base = b.mul(slot, c64(plan.split))

                def step(s: ir.Value, cur: Carried) -> Carried:
                    where = b.add(base, s)
                    return self.combine(phase, cur, [b.load(self._partial(i, where))
                                                     for i in range(len(cur))])
                accs = loops.loop(c64(0), c64(plan.split), self.inits(phase), step, "chunk")
                return self.values(phase, accs)

            def item_body(item: ir.Value) -> None:
                idx = [c64(0)] * self.rank
                if plan.mode == "row":
                    loops.delinearize(item, self._dims(plan.kept_phys), idx)
                    self.finish(idx, reduce_slot(item))
                    return
                j0, length = self._column_block(item, idx)

                def out(j: ir.Value) -> None:
                    idx[plan.vdim] = b.add(j0, j)
                    self.finish(idx, reduce_slot(b.add(b.mul(item, c64(plan.block)), j)))
                loops.each(c64(0), length, out, "p.out")
            loops.each(c64(0), c64(plan.items), item_body, "p.item")


__all__ = ["ReductionEmitter"]
