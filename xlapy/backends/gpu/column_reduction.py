"""Reductions that keep the minor dimension on the GPU: a thread per kept element.

``sum(x, axis=0)`` of a row-major ``[batch, features]`` array (a bias gradient), or any
reduce whose input's last dimension is kept: thread ``u`` owns kept element ``u`` and
combines the reduced elements in order, starting from the reduce's init value (the
interpreter's order, so results match it). Consecutive threads own consecutive elements
of the minor dimension, so each step of the loop is one coalesced load per warp. Outputs
are per-kept-element values (the reduces and elementwise ops of them); a fusion may hold
several reduces of the same input dims whose inputs do not read other reduces.

The output may be written over an operand's buffer (an in-place update such as a donated
bias, ``b - lr * sum(g, axis=0)``) when that operand is read only elementwise at the
thread's own kept element and not by any reduce: each thread reads its element before
it writes it, and no other thread reads it.
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
from .reduction import ReductionEmitterBase, _Builder, _Parts, buffers_usable
from .simt import KernelFrame

# few kept elements and long sums: too little parallelism for a thread per element
MIN_COLUMNS_FOR_LONG = 256
LONG_SUM = 1 << 16


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
        return plan.grid, 0, [f"column reduction: {plan.cols} kept elements, "
                              f"{plan.length} reduced each"]

    def build(self, frame: KernelFrame, plan: _ColumnPlan, buffers: list) -> None:
        _ColumnBuilder(frame, plan, buffers).build()


class _ColumnBuilder(_Builder):
    def build(self) -> None:
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
                        index = [None] * len(plan.dims)
                        for d, v in zip(plan.kept_pos, kept):
                            index[d] = v
                        for d, v in zip(plan.red, delinearize(b, i, list(plan.reduced))):
                            index[d] = v
                        return [self.combine(r, acc[0], gens[id(r.operands[0])](index))]
                    (acc,), _ = self._strided(c64(0), c64(plan.length), 1,
                                              [gens[id(r.operands[1])]([])], step)
                    b.store(acc, slots[id(r)])
                    self.values[id(r)] = slots[id(r)]
                gens = self.generators()
                for k, o in enumerate(plan.outputs):
                    shape = self.store_shape(k)
                    store_element(b, gens[id(o)](kept),
                                  b.gep(self._ptr(nops + k), [linear_offset(b, kept, shape)]),
                                  shape.element_type)
        f.threads(thread)


__all__ = ["ColumnReductionEmitter"]
