"""Reductions that keep the minor dimension on the GPU: a thread per kept element.

``sum(x, axis=0)`` of a row-major ``[batch, features]`` array (a bias gradient), or any
reduce whose input's last dimension is kept: thread ``u`` owns kept element ``u`` and
combines the reduced elements in order, starting from the reduce's init value (the
interpreter's order, so results match it). Consecutive threads own consecutive elements
of the minor dimension, so each step of the loop is one coalesced load per warp. Outputs
are per-kept-element values (the reduces and elementwise ops of them); a fusion may hold
several reduces of the same input dims whose inputs do not read other reduces.

Long reductions (at least :data:`TILE_MIN_LENGTH` reduced elements) are **tiled** as XLA
tiles them: a block owns 32 kept elements (the x of a thread, a warp's coalesced 128
bytes) and ``groups`` row groups (the y); thread ``(x, y)`` combines the reduced elements
``y, y + groups, ...`` of its kept element, the block's partials go through shared
memory, and the threads of the first group combine their column's ``groups`` partials in
order after the init value and write the outputs. ``groups`` (8 to 32) grows while the
grid is small, so a ``[1024, 4096]`` bias gradient runs 128 blocks of 1024 threads, each
thread summing 32 rows, instead of 16 blocks of threads summing 1024 rows each. The
order differs from the interpreter's (floating-point sums differ in the last bits).

The output may be written over an operand's buffer (an in-place update such as a donated
bias, ``b - lr * sum(g, axis=0)``) when that operand is read only elementwise at the
thread's own kept element and not by any reduce: each thread reads its element before
it writes it, and no other thread reads it (tiled: the thread of the first row group
that writes the element is the only one that reads it, in the output phase).
"""
from __future__ import annotations

from math import prod
from llvmlite import ir

from ...hlo.ir import HloInstruction
from ...passes.fusion_utils import is_elementwise
from ..cpu.elemental_data import delinearize
from ..cpu.kernel_api import kernel_buffers
from ..cpu.kernel_support import buffer_aliases, c64, linear_offset
from ..cpu.llvm_types import llvm_type, store_element
from .fusion import computed_from
from .kernels import launch_dims
from .reduction import ReductionEmitterBase, _Builder, _Parts, buffers_usable, identity
from .simt import WARP, KernelFrame

# few kept elements and long sums: too little parallelism for a thread per element
MIN_COLUMNS_FOR_LONG = 256
LONG_SUM = 1 << 16
TILE_MIN_LENGTH = 128        # reduced elements per kept element from which to tile
TILE_COLUMNS = WARP          # kept elements per tiled block
MAX_GROUPS = 32              # row groups per tiled block (32 x 32 = 1024 threads)
TARGET_THREADS = 1 << 18     # about this many threads in a tiled grid (an H100/H200 holds 270K)
UNROLL = 4


class _ColumnPlan:
    def __init__(self, instr, comp, reduces, outputs, dims, red) -> None:
        self.instr, self.comp, self.reduces, self.outputs = instr, comp, reduces, outputs
        self.dims, self.red = dims, red
        self.stored: list = []          # each output's stored shape (None: as is)
        self.kept_pos = [d for d in range(len(dims)) if d not in red]
        self.kept = tuple(dims[d] for d in self.kept_pos)
        self.reduced = tuple(dims[d] for d in red)
        self.cols, self.length = prod(self.kept), prod(self.reduced)
        self.grid, self.block = launch_dims(self.cols)
        self.groups = 0                 # tiled: row groups per block (module docstring)
        if self.length >= TILE_MIN_LENGTH and self.cols:
            blocks = -(-self.cols // TILE_COLUMNS)
            want = -(-TARGET_THREADS // (blocks * TILE_COLUMNS))
            self.groups = min(MAX_GROUPS, max(8, 1 << (want - 1).bit_length()))
            self.grid, self.block = blocks, TILE_COLUMNS * self.groups


def _reads_a_reduce(value: HloInstruction) -> bool:
    stack, seen = [value], set()
    while stack:
        i = stack.pop()
        if id(i) in seen:
            continue
        seen.add(id(i))
        if i.opcode == "reduce":
            return True
        stack.extend(i.operands)
    return False


def _elementwise_only(start: HloInstruction) -> bool:
    """Whether every value computed from ``start`` (in its fused computation) is
    elementwise, so it is read at the output's own element, and none is a reduce."""
    return all(is_elementwise(u) for u in computed_from(start))


class ColumnReductionEmitter(ReductionEmitterBase):
    """GPU kernels for reductions that keep the minor dimension (module docstring)."""

    kind = "column-reduction"

    def analyze(self, instr: HloInstruction, parts: _Parts) -> _ColumnPlan | None:
        comp, outputs, order, reduces, dims, red, _ = parts
        if not dims or len(dims) - 1 in red:
            return None
        plan = _ColumnPlan(instr, comp, reduces, outputs, dims, red)
        if plan.cols == 0 or plan.length == 0 or plan.grid >= 2 ** 31:
            return None
        if plan.cols < MIN_COLUMNS_FOR_LONG and plan.length >= LONG_SUM:
            return None
        if any(tuple(o.shape.dims) != plan.kept for o in outputs):
            return None
        if any(_reads_a_reduce(r.operands[0]) or _reads_a_reduce(r.operands[1])
               for r in reduces):
            return None
        if comp is not None:
            # every value computed from a reduce is elementwise in it: read at its own element
            for i in order:
                if i.opcode not in ("reduce", "parameter") and i is not comp.root and \
                        any(_reads_a_reduce(o) for o in i.operands) and not is_elementwise(i):
                    return None
            root = comp.root
            if root.opcode != "tuple" and root.opcode != "reduce" and not is_elementwise(root):
                return None
        if not buffers_usable(self.assignment, instr, outputs) and \
                not self._in_place_usable(plan):
            return None
        return plan

    def _in_place_usable(self, plan: _ColumnPlan) -> bool:
        """One output written over operands read only elementwise at its own element
        (module docstring)."""
        instr, comp = plan.instr, plan.comp
        buffers = kernel_buffers(instr)
        aliases = buffer_aliases(self.assignment, instr, buffers)
        if not aliases or comp is None or len(plan.outputs) != 1 \
                or sum(1 for b in buffers if b.role == "output") != 1:
            return False
        for slot in aliases:
            kb = buffers[slot]
            if kb.index != () or tuple(kb.shape.dims) != plan.kept:
                return False
            params = [p for p in comp.parameters if p.parameter_number == kb.operand]
            if not params or not all(_elementwise_only(p) for p in params):
                return False
        return True

    def launch(self, plan: _ColumnPlan) -> tuple[int, int, list[str]]:
        tiles = f", tiled: 32 kept x {plan.groups} row groups a block" if plan.groups else ""
        return plan.grid, 0, [f"column reduction: {plan.cols} kept elements, "
                              f"{plan.length} reduced each{tiles}"]

    def build(self, frame: KernelFrame, plan: _ColumnPlan, buffers: list) -> None:
        _ColumnBuilder(frame, plan, buffers).build()


class _ColumnBuilder(_Builder):
    def index(self, kept: list, i: ir.Value) -> list:
        """The input index of kept element ``kept`` at reduced (linear) position ``i``."""
        plan = self.plan
        index = [None] * len(plan.dims)
        for d, v in zip(plan.kept_pos, kept):
            index[d] = v
        for d, v in zip(plan.red, delinearize(self.b, i, list(plan.reduced))):
            index[d] = v
        return index

    def build(self) -> None:
        if self.plan.groups:
            self.build_tiled()
            return
        plan, f, b = self.plan, self.f, self.b
        slots = {id(r): f.entry_alloca(llvm_type(r.shape.element_type)) for r in plan.reduces}
        nops = sum(1 for kb in self.buffers if kb.role == "operand")

        def thread(tid: ir.Value) -> None:
            u = b.add(b.mul(f.block, c64(f.block_size)), tid)
            with b.if_then(b.icmp_signed("<", u, c64(plan.cols))):
                kept = delinearize(b, u, list(plan.kept)) if plan.kept else []
                self.values.clear()
                gens = self.generators()
                for r in plan.reduces:
                    def step(i: ir.Value, acc: list, r=r) -> list:
                        return [self.combine(r, acc[0], gens[id(r.operands[0])](
                            self.index(kept, i)))]
                    (acc,), _ = self._strided(c64(0), c64(plan.length), 1,
                                              [gens[id(r.operands[1])]([])], step)
                    b.store(acc, slots[id(r)])
                    self.values[id(r)] = slots[id(r)]
                self.store_outputs(kept, nops)
        f.threads(thread)

    def store_outputs(self, kept: list, nops: int) -> None:
        """Store every output at kept element ``kept`` (the reduces' values set)."""
        b = self.b
        gens = self.generators()
        for k, o in enumerate(self.plan.outputs):
            shape = self.store_shape(k)
            store_element(b, gens[id(o)](kept),
                          b.gep(self._ptr(nops + k), [linear_offset(b, kept, shape)]),
                          shape.element_type)

    def _coords(self, tid: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(x, y, kept element u) of thread ``tid`` of a tiled block."""
        b = self.b
        x, y = b.and_(tid, c64(TILE_COLUMNS - 1)), b.lshr(tid, c64(5))
        return x, y, b.add(b.mul(self.f.block, c64(TILE_COLUMNS)), x)

    def build_tiled(self) -> None:
        plan, f, b = self.plan, self.f, self.b
        groups = plan.groups
        nops = sum(1 for kb in self.buffers if kb.role == "operand")
        totals = {}
        for r in plan.reduces:
            ty = llvm_type(r.shape.element_type)
            running = f.entry_alloca(ty)
            partials = f.shared(ty, groups * TILE_COLUMNS)

            def sweep(tid: ir.Value, r: HloInstruction = r, running=running,
                      partials=partials) -> None:
                x, y, u = self._coords(tid)
                b.store(identity(r), running)
                with b.if_then(b.icmp_signed("<", u, c64(plan.cols))):
                    kept = delinearize(b, u, list(plan.kept)) if plan.kept else []
                    gens = self.generators()
                    value = lambda i: gens[id(r.operands[0])](self.index(kept, i))  # noqa: E731
                    step = groups * UNROLL
                    # UNROLL independent loads a trip, then the rest
                    (a,), i = self._strided(
                        y, c64(plan.length - groups * (UNROLL - 1)), step, [b.load(running)],
                        lambda i, a: [self._combine_many(r, a[0], [value(b.add(
                            i, c64(groups * k))) for k in range(UNROLL)])], signed=True)
                    (a,), _ = self._strided(i, c64(plan.length), groups, [a], lambda i, a: [
                        self.combine(r, a[0], value(i))])
                    b.store(a, running)
                b.store(b.load(running), b.gep(partials, [tid]))
            f.threads(sweep)
            f.barrier()
            total = f.per_thread(ty)
            totals[id(r)] = total

            def combine(tid: ir.Value, r: HloInstruction = r, partials=partials,
                        total=total) -> None:
                x, y, u = self._coords(tid)
                with b.if_then(b.and_(b.icmp_unsigned("==", y, c64(0)),
                                      b.icmp_signed("<", u, c64(plan.cols)))):
                    t = self.generators()[id(r.operands[1])]([])
                    for g in range(groups):
                        t = self.combine(r, t, b.load(b.gep(partials, [
                            b.add(x, c64(g * TILE_COLUMNS))])))
                    total.store(tid, t)
            f.threads(combine)

        def write(tid: ir.Value) -> None:
            x, y, u = self._coords(tid)
            with b.if_then(b.and_(b.icmp_unsigned("==", y, c64(0)),
                                  b.icmp_signed("<", u, c64(plan.cols)))):
                kept = delinearize(b, u, list(plan.kept)) if plan.kept else []
                self.values = {k: t.ptr(tid) for k, t in totals.items()}
                self.store_outputs(kept, nops)
        f.threads(write)


__all__ = ["ColumnReductionEmitter"]
