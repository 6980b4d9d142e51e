"""Row reductions on the GPU: a block per row, warp shuffles, split rows.

:class:`RowReductionEmitter` takes a ``reduce`` or a fusion whose reduces all reduce the
same input dims over the same trailing (minor) dims -- a row reduction (a full reduction
is one row) -- with outputs that are either per-row values (the kept dims) or per-element
values (the input dims). Softmax and layernorm rows (``ReductionConsumerFusion``) qualify
when the fused computation passes ``row_fusion_decision`` (every reduce-dependent value
is read only at its own row). Reducers are one binary op with an identity (add, multiply,
maximum, minimum, and, or, xor); rows shorter than :data:`MIN_ROW` are left to the
per-unit kernels.

One block of ``block`` threads per row (``rows x splits`` blocks in all):

1. for each reduce in order, each thread combines the elements ``j = t, t + block, ...``
   of the row (consecutive threads read consecutive elements: coalesced), then the block
   combines its threads' values: ``shfl.sync.down`` within each warp, the warps' results
   through shared memory, and one warp again; thread 0 leaves the row's value in shared
   memory, read by the later phases (the generators of a reduce return it);
2. thread 0 computes and stores the per-row outputs; the threads then write the
   per-element outputs in the same strided order.

A long row with few rows (``sum(x + y*z)`` over 1e8 elements) is **split**: the row's
``splits`` blocks each reduce a chunk; thread 0 stores the block's partial result in
the kernel's scratch buffer, fences (``membar.gl``) and increments the row's counter
(``atomicrmw add``, acquire-release); the block that brings the count to ``splits``
combines the partials (read with atomic loads, so no stale cache line is used) with all
its threads, writes the outputs and resets the counter for the next launch. Only single
reduce fusions with per-row outputs are split.

The order of the combination differs from a sequential loop, so floating-point sums
differ from the interpreter's in the last bits (as XLA's GPU reductions do).
"""
from __future__ import annotations

from math import prod
from typing import Any, Callable, NamedTuple

from llvmlite import ir

from ...hlo.ir import HloComputation, HloInstruction
from ...hlo.shape import Shape
from ..cpu.elemental import ElementalEmitter
from ..cpu.elemental_data import delinearize
from ..cpu.kernel_api import Generator, kernel_buffers, memoize, operand_slots
from ..cpu.kernel_support import (buffer_aliases, c64, emit_scalar_computation, linear_offset,
                                  scalar_computation_supported, strip_root_bitcasts)
from ..cpu.llvm_types import declare_function, llvm_type, load_element, storage_type, \
    store_element
from .kernels import GpuKernel
from .simt import I32, WARP, KernelFrame, Target

_TYPES = frozenset({"f32", "f64", "s32", "s64", "u32", "u64"})
MAX_BLOCK = 512
# Shorter rows are left to the per-unit kernel (a thread per row, summing in order):
# a warp would idle most of its lanes, and the sequential order matches the CPU's.
MIN_ROW = 32
SPLIT_MIN_ROW = 32768          # rows at least this long may be split over blocks
TARGET_BLOCKS = 2048           # about this many blocks when splitting
MIN_CHUNK_PER_THREAD = 16      # elements per thread per chunk, at least
UNROLL = 4                     # elements per trip of a thread's sweep
# A split row's thread reads GROUP consecutive elements a stripe (LLVM merges them into one
# 128-bit load where the buffer is aligned), SPLIT_UNROLL stripes a trip.
GROUP = 4
SPLIT_UNROLL = 1


_IDENTITY_OPS = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor"})


def reducer_op(reduce: HloInstruction) -> str | None:
    """The opcode of a reducer that is one binary op on its two parameters, else None."""
    root = reduce.attrs["to_apply"].root
    if root.opcode not in _IDENTITY_OPS or len(root.operands) != 2 or \
            any(o.opcode != "parameter" for o in root.operands):
        return None
    if root.opcode in ("and", "or", "xor") and root.shape.element_type.is_floating:
        return None
    return root.opcode


def identity(reduce: HloInstruction) -> ir.Constant:
    """The identity of ``reduce``'s reducer (threads start from it; the reduce's own init
    value is applied once at the end)."""
    op, et = reducer_op(reduce), reduce.shape.element_type
    ty = llvm_type(et)
    if et.is_floating:
        value = {"add": -0.0, "multiply": 1.0, "maximum": float("-inf"),
                 "minimum": float("inf")}[op]
        return ir.Constant(ty, value)
    bits = et.bits
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if et.is_signed_integral \
        else (0, (1 << bits) - 1)
    value = {"add": 0, "multiply": 1, "maximum": lo, "minimum": hi, "and": -1, "or": 0,
             "xor": 0}[op]
    return ir.Constant(ty, value)


class _Parts(NamedTuple):
    comp: HloComputation | None
    outputs: list
    order: list
    reduces: list
    dims: tuple
    red: tuple
    stored: list           # per output: the shape it is stored in when not its buffer's


class _Plan:
    def __init__(self, instr: HloInstruction, comp: HloComputation | None,
                 reduces: list[HloInstruction], outputs: list[HloInstruction],
                 dims: tuple[int, ...], nred: int) -> None:
        self.instr, self.comp, self.reduces, self.outputs = instr, comp, reduces, outputs
        self.dims = dims
        self.kept = dims[:len(dims) - nred]
        self.reduced = dims[len(dims) - nred:]
        self.rows = prod(self.kept)
        self.rowlen = prod(self.reduced)
        self.row_outputs = [o.shape.dims == self.kept for o in outputs]
        self.block = min(MAX_BLOCK, max(WARP, 1 << max(0, (self.rowlen - 1).bit_length())))
        if self.rowlen >= 8192 and self.rows >= 4096:
            self.block = 256
        self.splits = 1
        if len(reduces) == 1 and all(self.row_outputs) and self.rowlen >= SPLIT_MIN_ROW \
                and self.rows < TARGET_BLOCKS // 2:
            per_block = self.block * MIN_CHUNK_PER_THREAD
            self.splits = max(1, min(-(-self.rowlen // per_block),
                                     TARGET_BLOCKS // max(1, self.rows)))
        self.chunk = -(-self.rowlen // self.splits)
        # a split row's sweep: consecutive elements a thread reads a stripe, and the operand
        # slots marked 16-byte aligned (split_groups sets both)
        self.group = 1
        self.aligned_slots: list[int] = []
        # the looped sweep; row_tile.tile_rows may tile the rows instead (its docstring)
        self.per, self.rpb, self.tpr, self.vec, self.cache = 0, 1, self.block, 1, False
        self.sources: list[tuple[int, int]] = []
        self.kept_operands: list[HloInstruction] = []
        self.vector_outputs: set[int] = set()
        self.stored: list[Shape | None] = []   # each output's stored shape (None: as is)


def reduction_parts(instr: HloInstruction) -> _Parts | None:
    """The reduces of ``instr`` (a ``reduce`` or a fusion of reduces and elemental ops)
    when they all reduce the same input dims over the same dims with a one-op reducer of
    a plain type, every other fused op has an elemental generator and every output is an
    array; else None."""
    stored: list[Shape | None]
    if instr.opcode == "reduce":
        comp, outputs, stored = None, [instr], [None]
        order = [instr]
    elif instr.opcode == "fusion" and instr.attrs.get("kind") != "kCustom":
        comp = instr.attrs["calls"]
        if any(not p.shape.is_array for p in comp.parameters):
            return None
        root = comp.root
        roots = list(root.operands) if root.opcode == "tuple" else [root]
        # a root bitcast's bytes are its operand's: store the operand in its layout
        outputs = [strip_root_bitcasts(o) for o in roots]
        stored = [None if o is r else (o.shape if o.shape.layout is not None
                                       else o.shape.with_default_layout())
                  for o, r in zip(outputs, roots)]
        order = comp.post_order()
    else:
        return None
    reduces = [i for i in order if i.opcode == "reduce"]
    if not reduces or any(not o.shape.is_array for o in outputs):
        return None
    first = reduces[0]
    dims = tuple(first.operands[0].shape.dims)
    red = tuple(sorted(first.attrs.get("dimensions", ())))
    if not red:
        return None
    for r in reduces:
        if len(r.operands) != 2 or not r.shape.is_array or \
                r.shape.element_type.name not in _TYPES or \
                tuple(r.operands[0].shape.dims) != dims or \
                tuple(sorted(r.attrs.get("dimensions", ()))) != red or \
                reducer_op(r) is None or \
                not scalar_computation_supported(r.attrs["to_apply"]):
            return None
    if comp is not None:
        for i in order:
            if i.opcode in ("parameter", "reduce") or (i is comp.root and i.opcode == "tuple"):
                continue
            if not ElementalEmitter.supports(i) or i.opcode in ("tuple", "get-tuple-element"):
                return None
    return _Parts(comp, outputs, order, reduces, dims, red, stored)


def buffers_usable(assignment: Any, instr: HloInstruction, outputs: list) -> bool:
    """No operand buffer is (part of) an output buffer, one output buffer per output."""
    buffers = kernel_buffers(instr)
    aliases = buffer_aliases(assignment, instr, buffers)
    return aliases == {} and sum(1 for b in buffers if b.role == "output") == len(outputs)


def split_groups(plan: Any, buffers: list, assignment: Any) -> None:
    """Set a split row plan's ``group`` (:data:`GROUP` consecutive elements a thread reads
    per stripe; the chunks rounded up to whole groups) and ``aligned_slots``: the operand
    buffers that start 16-byte aligned, whose kernel arguments say so, so that LLVM can
    merge a group's loads into one vector load."""
    from .row_tile import VECTOR_BYTES, aligned
    plan.group = GROUP
    plan.chunk = -(-plan.chunk // GROUP) * GROUP
    plan.aligned_slots = [i for i, kb in enumerate(buffers) if kb.role == "operand"
                          and aligned(assignment, kb, VECTOR_BYTES)]


class ReductionEmitterBase:
    """What the reduction emitters share: the buffer assignment, the target and
    :meth:`emit` (a subclass's ``analyze``, ``launch`` and ``build``)."""

    kind = ""

    def __init__(self, assignment: Any, target: Target) -> None:
        self.assignment, self.target = assignment, target

    def analyze(self, instr: HloInstruction, parts: _Parts) -> Any:
        """The kernel's plan (with ``block``) for ``instr`` and its :func:`reduction_parts`,
        or None when the emitter declines."""
        raise NotImplementedError

    def launch(self, plan: Any) -> tuple[int, int, list[str]]:
        """(grid, bytes of scratch, notes) of a plan's kernel."""
        raise NotImplementedError

    def build(self, frame: KernelFrame, plan: Any, buffers: list) -> None:
        """Emit the kernel's body."""
        raise NotImplementedError

    def emit(self, name: str, instr: HloInstruction) -> GpuKernel | None:
        parts = reduction_parts(instr)
        plan = None if parts is None else self.analyze(instr, parts)
        if parts is None or plan is None:
            return None
        plan.stored = parts.stored
        module = self.target.new_module(name)
        buffers = kernel_buffers(instr)
        grid, scratch, notes = self.launch(plan)

        def body(frame: KernelFrame) -> None:
            self.build(frame, plan, buffers)
        # the scratch buffer is the argument after the buffer table
        self.target.kernel(module, name, len(buffers) + (1 if scratch else 0), plan.block,
                           body)
        return GpuKernel(name, instr, buffers, grid, plan.block, self.kind, module,
                         scratch=scratch, notes=notes)


class RowReductionEmitter(ReductionEmitterBase):
    """GPU kernels for row reductions (module docstring)."""

    kind = "row-reduction"

    def analyze(self, instr: HloInstruction, parts: _Parts) -> _Plan | None:
        comp, outputs, order, reduces, dims, red, _ = parts
        nred = len(red)
        if red != tuple(range(len(dims) - nred, len(dims))):
            return None
        if comp is not None:
            internal = [r for r in reduces if r.users and not (
                len(r.users) == 1 and r.users[0] is comp.root and comp.root.opcode == "tuple")
                and r is not comp.root]
            if internal:
                from ...passes.reduction_consumer_fusion import row_fusion_decision
                from .pipeline import TARGETS
                if not row_fusion_decision(comp, TARGETS["gpu"].row_reduction_rules):
                    return None
        plan = _Plan(instr, comp, reduces, outputs, dims, nred)
        if any(o.shape.dims not in (plan.kept, dims) for o in outputs):
            return None
        if plan.rowlen < MIN_ROW or plan.rows == 0:
            return None
        if not buffers_usable(self.assignment, instr, outputs):
            return None
        if plan.rows * plan.splits >= 2 ** 31:
            return None
        from .row_tile import tile_rows
        tile_rows(plan, kernel_buffers(instr), self.assignment, parts.stored)
        if plan.splits > 1:
            split_groups(plan, kernel_buffers(instr), self.assignment)
        return plan

    def launch(self, plan: _Plan) -> tuple[int, int, list[str]]:
        scratch = 0
        if plan.splits > 1:
            # the partial results, then a counter per row
            acc_bytes = max(4, plan.reduces[0].shape.element_type.byte_size)
            part = plan.rows * plan.splits * acc_bytes
            scratch = -(-part // 16) * 16 + 4 * plan.rows
        notes = [f"row reduction: {plan.rows} rows of {plan.rowlen}, block {plan.block}, "
                 f"{plan.splits} splits, {len(plan.reduces)} reduces"]
        if plan.per:
            notes.append(f"row tiles: {plan.rpb} rows x {plan.tpr} threads a block, "
                         f"{plan.per} chunks of {plan.vec} a thread, "
                         f"{'cached' if plan.cache else 'reloaded'} across phases")
        return -(-plan.rows // plan.rpb) * plan.splits, scratch, notes

    def build(self, frame: KernelFrame, plan: _Plan, buffers: list) -> None:
        if plan.per:
            from .row_tile import RowTileBuilder
            RowTileBuilder(frame, plan, buffers).build()
        else:
            _Builder(frame, plan, buffers).build()


class _Builder:
    def __init__(self, frame: KernelFrame, plan: Any, buffers) -> None:
        # ``plan``: a row plan (_Plan) or a column plan (column_reduction._ColumnPlan)
        self.f, self.plan, self.buffers = frame, plan, buffers
        self.b = frame.b
        self.em = ElementalEmitter(self.b, frame.module)
        self.values: dict[int, ir.Value] = {}     # reduce -> generic pointer to its row value

    # ----- generators
    def _load(self, ptr: ir.Value, shape: Shape) -> Generator:
        b = self.b

        def gen(index: list) -> ir.Value:
            return load_element(b, b.gep(ptr, [linear_offset(b, index, shape)], inbounds=True),
                                shape.element_type)
        return memoize(b, gen)

    def _ptr(self, slot: int) -> ir.Value:
        kb = self.buffers[slot]
        return self.b.bitcast(self.f.buffers[slot],
                              storage_type(kb.shape.element_type).as_pointer())

    def generators(self) -> dict[int, Generator]:
        """Generators of the values the kernel needs; a reduce's returns its row value."""
        plan, b = self.plan, self.b
        slots = operand_slots(self.buffers)
        gens: dict[int, Generator] = {}
        for r in plan.reduces:
            if id(r) in self.values:
                def load_value(index: Any, p: ir.Value = self.values[id(r)]) -> ir.Value:
                    return b.load(p)
                gens[id(r)] = load_value
        if plan.comp is None:
            instr = plan.instr
            for n, op in enumerate(instr.operands):
                s = slots[(n, ())]
                gens[id(op)] = self._load(self._ptr(s), self.buffers[s].shape)
            return gens
        for i in plan.comp.post_order():
            if id(i) in gens or i.opcode in ("reduce", "tuple"):
                continue
            if i.opcode == "parameter":
                s = slots[(i.parameter_number, ())]
                gens[id(i)] = self._load(self._ptr(s), self.buffers[s].shape)
            else:
                gens[id(i)] = self.em.generator(i, [self._operand(gens, o) for o in i.operands])
        return gens

    @staticmethod
    def _operand(gens: dict[int, Generator], o: HloInstruction) -> Generator:
        # a reduce's generator is filled in when its phase has run; look it up lazily
        return lambda index: gens[id(o)](index)

    # ----- pieces
    def _strided(self, start: ir.Value, limit: ir.Value, step: int, carried: list,
                 body: Callable[[ir.Value, list], list], signed: bool = False
                 ) -> tuple[list, ir.Value]:
        """``for (j = start; j < limit; j += step) carried = body(j, carried)``; returns
        (carried, final j)."""
        b = self.b
        pre = b.block
        head = b.append_basic_block("sweep.head")
        loop = b.append_basic_block("sweep.body")
        done = b.append_basic_block("sweep.done")
        b.branch(head)
        b.position_at_end(head)
        j = b.phi(ir.IntType(64))
        phis = [b.phi(v.type) for v in carried]
        j.add_incoming(start, pre)
        for p, v in zip(phis, carried):
            p.add_incoming(v, pre)
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        b.cbranch(cmp("<", j, limit), loop, done)
        b.position_at_end(loop)
        nxt = body(j, list(phis))
        j.add_incoming(b.add(j, c64(step)), b.block)
        for p, v in zip(phis, nxt):
            p.add_incoming(v, b.block)
        b.branch(head)
        b.position_at_end(done)
        return list(phis), j

    def _combine_many(self, r: HloInstruction, a: ir.Value, values: list) -> ir.Value:
        for v in values:
            a = self.combine(r, a, v)
        return a

    def combine(self, reduce: HloInstruction, a: ir.Value, c: ir.Value) -> ir.Value:
        return emit_scalar_computation(self.b, reduce.attrs["to_apply"], [a, c])[0]

    def full_index(self, kept: list, j: ir.Value) -> list:
        return kept + (delinearize(self.b, j, list(self.plan.reduced))
                       if len(self.plan.reduced) > 1 else [j])

    def block_reduce(self, reduce: HloInstruction, acc, init: Callable[[], ir.Value],
                     start: Callable[[], ir.Value] | None) -> ir.Value:
        """Combine ``acc`` (threads started from the reducer's identity ``init``) over the
        block; thread 0 stores ``start() (+) total`` (``start``: the reduce's init value,
        so it is applied once, first, as the interpreter does) or the bare total."""
        f, b = self.f, self.b
        ty = acc.ty
        comb = lambda x, y: self.combine(reduce, x, y)      # noqa: E731
        f.warp_reduce(acc, comb)
        nwarps = f.block_size // WARP
        slot = f.shared(ty, 1)
        if nwarps > 1:
            warps = f.shared(ty, nwarps)

            def put(tid: ir.Value) -> None:
                with b.if_then(b.icmp_unsigned("==", b.and_(tid, c64(WARP - 1)), c64(0))):
                    b.store(acc.load(tid), b.gep(warps, [b.lshr(tid, c64(5))]))
            f.threads(put)
            f.barrier()

            def gather(tid: ir.Value) -> None:
                ok = b.icmp_unsigned("<", tid, c64(nwarps))
                with b.if_else(ok) as (then, other):
                    with then:
                        acc.store(tid, b.load(b.gep(warps, [tid])))
                    with other:
                        acc.store(tid, init())
            f.threads(gather)
            f.warp_reduce(acc, comb)

        def final(tid: ir.Value) -> None:
            with b.if_then(b.icmp_unsigned("==", tid, c64(0))):
                total = acc.load(tid)
                b.store(comb(start(), total) if start is not None else total, slot)
        f.threads(final)
        f.barrier()
        return slot

    # ----- the kernel
    def build(self) -> None:
        plan, f, b = self.plan, self.f, self.b
        if plan.splits > 1:
            row = b.udiv(f.block, c64(plan.splits))
            part = b.urem(f.block, c64(plan.splits))
        else:
            row, part = f.block, c64(0)
        kept = delinearize(b, row, list(plan.kept)) if plan.kept else []
        lo = b.mul(part, c64(plan.chunk))
        hi_raw = b.add(lo, c64(plan.chunk))
        hi = b.select(b.icmp_unsigned("<", hi_raw, c64(plan.rowlen)), hi_raw, c64(plan.rowlen))
        group = plan.group
        if not f.target.simulated:
            for slot in plan.aligned_slots:
                f.fn.args[slot].attributes.align = 16
        for r in plan.reduces:
            gens = self.generators()
            ty = llvm_type(r.shape.element_type)
            acc = f.per_thread(ty)
            start = lambda r=r, gens=gens: gens[id(r.operands[1])]([])   # noqa: E731
            init = lambda r=r: identity(r)   # noqa: E731

            def sweep(tid: ir.Value, r=r, gens=gens, acc=acc, init=init) -> None:
                if group > 1:
                    acc.store(tid, self._grouped_sweep(r, gens, kept, tid, lo, hi, init()))
                    return
                a = init()
                step = f.block_size
                # UNROLL elements a trip (their loads are independent), then the rest
                (a,), j = self._strided(
                    b.add(lo, tid), b.sub(hi, c64(step * (UNROLL - 1))), step * UNROLL, [a],
                    lambda j, a: [self._combine_many(
                        r, a[0], [gens[id(r.operands[0])](
                            self.full_index(kept, b.add(j, c64(step * u))))
                            for u in range(UNROLL)])], signed=True)
                (a,), _ = self._strided(j, hi, step, [a], lambda j, a: [self.combine(
                    r, a[0], gens[id(r.operands[0])](self.full_index(kept, j)))])
                acc.store(tid, a)
            f.threads(sweep)
            slot = self.block_reduce(r, acc, init, start if plan.splits == 1 else None)
            if plan.splits > 1:
                self._combine_splits(r, row, part, slot, acc, init, start)
                return
            self.values[id(r)] = slot
        self.write_outputs(kept)

    def _grouped_sweep(self, r: HloInstruction, gens: dict, kept: list, tid: ir.Value,
                       lo: ir.Value, hi: ir.Value, a: ir.Value) -> ir.Value:
        """A split row's sweep: the thread's groups of ``plan.group`` consecutive elements,
        one per stripe of ``block x group`` elements (:data:`SPLIT_UNROLL` stripes a trip,
        then single stripes), then the part of a group that the chunk's end cuts."""
        b, g = self.b, self.plan.group
        step = self.f.block_size * g
        load = gens[id(r.operands[0])]

        def groups(j: ir.Value, a: list, stripes: int) -> list:
            return [self._combine_many(r, a[0], [
                load(self.full_index(kept, b.add(j, c64(s * step + e))))
                for s in range(stripes) for e in range(g)])]
        start = b.add(lo, b.mul(tid, c64(g)))
        (a,), j = self._strided(start, b.sub(hi, c64(step * (SPLIT_UNROLL - 1) + g - 1)),
                                step * SPLIT_UNROLL, [a],
                                lambda j, a: groups(j, a, SPLIT_UNROLL), signed=True)
        (a,), j = self._strided(j, b.sub(hi, c64(g - 1)), step, [a],
                                lambda j, a: groups(j, a, 1), signed=True)
        (a,), _ = self._strided(j, hi, 1, [a], lambda j, a: [self.combine(
            r, a[0], load(self.full_index(kept, j)))], signed=True)
        return a

    def _combine_splits(self, r: HloInstruction, row, part, slot, acc, init, start
                        ) -> None:
        """Store the partial, count it; the last block of the row combines the partials
        and writes the outputs (module docstring)."""
        plan, f, b = self.plan, self.f, self.b
        ty = acc.ty
        scratch = f.buffers[-1]
        partials = b.bitcast(scratch, ty.as_pointer())
        part_bytes = -(-(plan.rows * plan.splits * max(4, r.shape.element_type.byte_size))
                       // 16) * 16
        counters = b.bitcast(b.gep(scratch, [c64(part_bytes)]), I32.as_pointer())
        counter = b.gep(counters, [row])
        last_flag = f.shared(I32, 1)
        size = r.shape.element_type.byte_size

        def publish(tid: ir.Value) -> None:
            with b.if_then(b.icmp_unsigned("==", tid, c64(0))):
                where = b.gep(partials, [b.add(b.mul(row, c64(plan.splits)), part)])
                b.store_atomic(b.load(slot), where, "monotonic", size)
                if not f.target.simulated:
                    b.call(declare_function(f.module, "llvm.nvvm.membar.gl", ir.VoidType(), []),
                           [])
                old = b.atomic_rmw("add", counter, ir.Constant(I32, 1), "acq_rel")
                if not f.target.simulated:
                    b.call(declare_function(f.module, "llvm.nvvm.membar.gl", ir.VoidType(), []),
                           [])
                is_last = b.icmp_unsigned("==", old, ir.Constant(I32, plan.splits - 1))
                b.store(b.zext(is_last, I32), last_flag)
        f.threads(publish)
        f.barrier()
        last = b.icmp_unsigned("!=", b.load(last_flag), ir.Constant(I32, 0))
        with b.if_then(last):
            def gather(tid: ir.Value) -> None:
                base = b.mul(row, c64(plan.splits))
                (a,), _ = self._strided(tid, c64(plan.splits), f.block_size, [init()],
                                        lambda k, a: [self.combine(r, a[0], b.load_atomic(
                                            b.gep(partials, [b.add(base, k)]), "monotonic",
                                            size))])
                acc.store(tid, a)
            f.threads(gather)
            final = self.block_reduce(r, acc, init, start)
            self.values[id(r)] = final
            kept = delinearize(b, row, list(plan.kept)) if plan.kept else []

            def reset(tid: ir.Value) -> None:
                with b.if_then(b.icmp_unsigned("==", tid, c64(0))):
                    b.store_atomic(ir.Constant(I32, 0), counter, "monotonic", 4)
            f.threads(reset)
            self.write_outputs(kept)

    def store_shape(self, k: int):
        """The shape output ``k`` is stored in (its buffer's, or a stripped bitcast's)."""
        nops = sum(1 for kb in self.buffers if kb.role == "operand")
        return self.plan.stored[k] or self.buffers[nops + k].shape

    def write_outputs(self, kept: list) -> None:
        plan, f, b = self.plan, self.f, self.b
        gens = self.generators()
        nops = sum(1 for kb in self.buffers if kb.role == "operand")
        row_outs = [(k, o) for k, o in enumerate(plan.outputs) if plan.row_outputs[k]]
        elem_outs = [(k, o) for k, o in enumerate(plan.outputs) if not plan.row_outputs[k]]
        if row_outs:
            def per_row(tid: ir.Value) -> None:
                with b.if_then(b.icmp_unsigned("==", tid, c64(0))):
                    for k, o in row_outs:
                        shape = self.store_shape(k)
                        v = gens[id(o)](kept)
                        store_element(b, v, b.gep(self._ptr(nops + k),
                                                  [linear_offset(b, kept, shape)]),
                                      shape.element_type)
            f.threads(per_row)
        if elem_outs:
            def per_element(tid: ir.Value) -> None:
                def store(j: ir.Value, carried: list) -> list:
                    index = self.full_index(kept, j)
                    for k, o in elem_outs:
                        shape = self.store_shape(k)
                        store_element(b, gens[id(o)](index),
                                      b.gep(self._ptr(nops + k), [linear_offset(b, index, shape)]),
                                      shape.element_type)
                    return carried
                self._strided(tid, c64(plan.rowlen), f.block_size, [], store)
            f.threads(per_element)


__all__ = ["RowReductionEmitter"]
