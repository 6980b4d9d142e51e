"""Native ``sort`` kernels: a stable merge sort of every row along the sort dimension.

Semantics: the operands are permuted together along ``dimensions={d}``; the comparator
(``less(lhs_0, rhs_0, lhs_1, rhs_1, ...)``, any computation the elemental emitter can
emit -- plain ``compare`` LT/GT, TOTALORDER, JAX's NaN-canonicalizing comparators,
multi-key comparators) says whether ``lhs`` goes before ``rhs``. The sort is always
stable (elements that neither goes before keep their order), as the interpreter's,
whether or not ``is_stable`` is set, so results match it exactly for any strict weak
order.

Algorithm, per row: the row's elements (all operands) are copied into scratch array
``A``; runs of :data:`RUN` elements are insertion-sorted; then bottom-up merge passes
of doubling width ping-pong between ``A`` and ``B`` (a branch-free merge that takes
the right element only when ``less(right, left)``); the sorted row is copied to the
outputs (each in its own layout). The comparator is one internal function that LLVM
inlines at its three call sites.

Scratch: ``2 * n * (sum of element sizes)`` bytes per row, on the stack when that is at
most :data:`STACK_SCRATCH` bytes, else one ``malloc`` per kernel call (reused for
every row of the call, freed at the end). If ``malloc`` fails the kernel still sorts:
it copies each row to the output and insertion-sorts it there (quadratic, but correct).

Work units: rows (every index of the other dimensions); rows are independent.
"""
from __future__ import annotations

import functools
from math import prod
from typing import Any, Callable, Sequence

from llvmlite import ir

from ...hlo.ir import HloInstruction
from .kernel_api import KernelSpec, kernel_buffers
from .kernel_support import (KernelScaffold, PlannedEmitter, buffer_aliases, bytes_of, c64,
                             element_strides, find_hero, has_register_type, major_to_minor,
                             scalar_computation_supported)
from .llvm_types import I1, I8, declare_function, llvm_type
from .sort_comparator import SortComparator

RUN = 16                    # rows are insertion-sorted in runs of this many first
STACK_SCRATCH = 32 * 1024   # scratch bytes per row that still go on the stack


def _analyze(instr: HloInstruction, assignment: Any) -> HloInstruction | None:
    """The sort ``instr`` computes, if this emitter can emit it."""
    hero = find_hero(instr, ("sort",))
    if hero is None or not hero.operands:
        return None
    dims = hero.operands[0].shape.dims
    outs = hero.shape.tuple_shapes if hero.shape.is_tuple else (hero.shape,)
    if len(outs) != len(hero.operands) or len(hero.dimensions) != 1 or \
            not 0 <= hero.dimensions[0] < max(len(dims), 1):
        return None
    for op, out in zip(hero.operands, outs):
        if op.shape.dims != dims or not out.is_array or out.dims != dims or \
                out.element_type != op.shape.element_type or not has_register_type(out):
            return None
    comp = hero.to_apply
    params = comp.parameters
    if len(params) != 2 * len(hero.operands) or not scalar_computation_supported(comp) or \
            not comp.root.shape.is_array or not comp.root.shape.element_type.is_pred:
        return None
    for k, op in enumerate(hero.operands):
        et = op.shape.element_type
        if params[2 * k].shape.element_type != et or params[2 * k + 1].shape.element_type != et:
            return None
    if buffer_aliases(assignment, instr, kernel_buffers(instr)) != {}:
        return None
    return hero


class SortEmitter(PlannedEmitter):
    """A ``KernelEmitter`` for ``sort`` (and loop fusions rooted at one)."""

    kind = "sort"

    def analyze(self, instr: HloInstruction) -> tuple[HloInstruction, HloInstruction] | None:
        """``(instr, the sort it computes)``, or None."""
        hero = _analyze(instr, self.assignment)
        return None if hero is None else (instr, hero)

    def build(self, module: ir.Module, name: str,
              plan: tuple[HloInstruction, HloInstruction]) -> KernelSpec:
        return _SortKernel(module, name, *plan).build()


class _View:
    """Operand arrays of one row: element ``i`` of array ``k`` at ``ptrs[k] + i * stride``.

    Scratch views hold register values; output views hold the storage format."""

    def __init__(self, kernel: "_SortKernel", ptrs: Sequence[ir.Value],
                 strides: Sequence[int], slots: Sequence[int] | None = None) -> None:
        self.k, self.ptrs, self.strides, self.slots = kernel, list(ptrs), list(strides), slots

    def _ptr(self, k: int, i: ir.Value) -> ir.Value:
        s = self.strides[k]
        off = i if s == 1 else self.k.b.mul(i, c64(s))
        return self.k.b.gep(self.ptrs[k], [off], inbounds=True)

    def load(self, k: int, i: ir.Value) -> ir.Value:
        if self.slots is None:
            return self.k.b.load(self._ptr(k, i))
        return self.k.sc.load(self.slots[k], self._ptr(k, i))

    def store(self, k: int, i: ir.Value, v: ir.Value) -> None:
        if self.slots is None:
            self.k.b.store(v, self._ptr(k, i))
        else:
            self.k.sc.store(self.slots[k], v, self._ptr(k, i))


class _SortKernel:
    def __init__(self, module: ir.Module, name: str, instr: HloInstruction,
                 hero: HloInstruction) -> None:
        self.hero = hero
        self.sc = KernelScaffold(module, name, instr, hero)
        self.b = self.sc.b
        self.n = len(hero.operands)
        self.dims = list(hero.operands[0].shape.dims)
        self.d = hero.dimensions[0] if self.dims else 0
        self.length = self.dims[self.d] if self.dims else 1
        types = [llvm_type(op.shape.element_type) for op in hero.operands]
        self.cmp = SortComparator(module, name, hero.to_apply, types)
        # scratch arrays: the operands, then the precomputed keys (see sort_comparator)
        self.types = types + ([self.cmp.key_type] if self.cmp.key is not None else [])

    # ----- helpers
    def _less(self, lhs: list, rhs: list) -> ir.Value:
        return self.cmp.less(self.b, lhs, rhs)

    def _var(self, name: str, ty: ir.Type = ir.IntType(64)) -> ir.Value:
        return self.sc.alloca(ty, 1, name)

    def _while(self, cond: Callable[[], ir.Value], body: Callable[[], None], name: str) -> None:
        b = self.b
        header = b.append_basic_block(f"{name}.cond")
        block = b.append_basic_block(f"{name}.body")
        exit_ = b.append_basic_block(f"{name}.exit")
        b.branch(header)
        b.position_at_end(header)
        b.cbranch(cond(), block, exit_)
        b.position_at_end(block)
        body()
        b.branch(header)
        b.position_at_end(exit_)

    # ----- sorting pieces
    def _insertion_sort(self, view: _View, lo: ir.Value, hi: ir.Value) -> None:
        """Stable insertion sort of ``view[lo:hi]``."""
        b = self.b
        j = self._var("ins.j")

        def element(i: ir.Value) -> None:
            x = [view.load(k, i) for k in range(len(view.ptrs))]
            b.store(i, j)

            def cond() -> ir.Value:
                jj = b.load(j)
                result = self._var("ins.c", I1)
                b.store(ir.Constant(I1, 0), result)
                with b.if_then(b.icmp_signed(">", jj, lo)):
                    prev = [view.load(k, b.sub(jj, c64(1))) for k in range(len(view.ptrs))]
                    b.store(self._less(x, prev), result)
                return b.load(result)

            def shift() -> None:
                jj = b.load(j)
                for k in range(len(view.ptrs)):
                    view.store(k, jj, view.load(k, b.sub(jj, c64(1))))
                b.store(b.sub(jj, c64(1)), j)
            self._while(cond, shift, "ins")
            for k in range(len(view.ptrs)):
                view.store(k, b.load(j), x[k])
        self.sc.loop(b.add(lo, c64(1)), hi, element, "ins.i")

    def _merge(self, src: _View, dst: _View, runs: list[tuple[ir.Value, ir.Value, ir.Value]]
               ) -> None:
        """Merge ``src[lo:mid]`` and ``src[mid:hi]`` into ``dst[lo:hi]`` for each
        ``(lo, mid, hi)`` of ``runs``: while every merge has both runs left they step
        together (independent dependency chains keep the core busy), then each finishes
        alone. A step takes the right head only when ``less(right, left)`` (stable)."""
        b = self.b
        state = []
        for lo, mid, hi in runs:
            i, j, o = self._var("m.i"), self._var("m.j"), self._var("m.o")
            b.store(lo, i)
            b.store(mid, j)
            b.store(lo, o)
            state.append((i, j, o, mid, hi))

        def both(st) -> ir.Value:
            i, j, _, mid, hi = st
            return b.and_(b.icmp_signed("<", b.load(i), mid), b.icmp_signed("<", b.load(j), hi))

        def step(st) -> None:
            i, j, o = st[:3]
            ii, jj, oo = b.load(i), b.load(j), b.load(o)
            left = [src.load(k, ii) for k in range(len(src.ptrs))]
            right = [src.load(k, jj) for k in range(len(src.ptrs))]
            take = self._less(right, left)
            for k in range(len(src.ptrs)):
                dst.store(k, oo, b.select(take, right[k], left[k]))
            one = b.zext(take, ir.IntType(64))
            b.store(b.add(jj, one), j)
            b.store(b.add(ii, b.sub(c64(1), one)), i)
            b.store(b.add(oo, c64(1)), o)

        if len(state) > 1:
            def all_both() -> ir.Value:
                conds = [both(st) for st in state]
                out = conds[0]
                for c in conds[1:]:
                    out = b.and_(out, c)
                return out
            def step_all() -> None:
                for st in state:
                    step(st)
            self._while(all_both, step_all, "merge2")
        for st in state:
            self._while(functools.partial(both, st), functools.partial(step, st), "merge")
            i, j, o, mid, hi = st
            for var, end in ((i, mid), (j, hi)):
                def rest(p: ir.Value, o: ir.Value = o) -> None:
                    oo = b.load(o)
                    for k in range(len(src.ptrs)):
                        dst.store(k, oo, src.load(k, p))
                    b.store(b.add(oo, c64(1)), o)
                self.sc.loop(b.load(var), end, rest, "rest")

    def _merge_pass(self, src: _View, dst: _View, width: ir.Value) -> None:
        """Merge neighbouring sorted runs of ``width`` from ``src`` into ``dst``; pairs
        ``t`` and ``t + pairs // 2`` are merged together (see :meth:`_merge`)."""
        b, length = self.b, c64(self.length)
        double = b.mul(width, c64(2))

        def bounds(t: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
            lo = b.mul(t, double)
            mid = b.select(b.icmp_signed("<", b.add(lo, width), length), b.add(lo, width), length)
            hi = b.select(b.icmp_signed("<", b.add(mid, width), length), b.add(mid, width), length)
            return lo, mid, hi
        pairs = b.sdiv(b.add(length, b.sub(double, c64(1))), double)
        half = b.sdiv(pairs, c64(2))
        self.sc.loop(0, half, lambda t: self._merge(src, dst, [bounds(t), bounds(b.add(t, half))]),
                     "pair")
        with b.if_then(b.icmp_signed("!=", b.srem(pairs, c64(2)), c64(0))):
            self._merge(src, dst, [bounds(b.sub(pairs, c64(1)))])

    # ----- the kernel
    def _array_bytes(self) -> list[int]:
        """Bytes of one scratch array per operand (a row, rounded up to 16)."""
        import llvmlite.binding as llvm
        from .jit_engine import engine
        td = llvm.create_target_data(engine().data_layout)
        return [-(-self.length * t.get_abi_size(td) // 16) * 16 for t in self.types]

    def _scratch(self) -> tuple[ir.Value, ir.Value | None]:
        """(base pointer of the two array sets, the malloc'd pointer or None)."""
        b = self.b
        total = 2 * sum(self._array_bytes())
        if total <= STACK_SCRATCH:
            raw = self.sc.alloca(ir.ArrayType(I8, total), 1, "scratch")
            raw.align = 16
            return b.bitcast(raw, I8.as_pointer()), None
        malloc = declare_function(self.sc.module, "malloc", I8.as_pointer(), [ir.IntType(64)])
        heap = b.call(malloc, [c64(total)])
        return heap, heap

    def _arrays(self, base: ir.Value) -> tuple[_View, _View]:
        """The two scratch array sets (``A`` and ``B``) carved out of ``base``."""
        b, sizes = self.b, self._array_bytes()
        views, offset = [], 0
        for _ in range(2):
            ptrs = []
            for t, size in zip(self.types, sizes):
                ptrs.append(b.bitcast(b.gep(base, [c64(offset)], inbounds=True), t.as_pointer()))
                offset += size
            views.append(_View(self, ptrs, [1] * len(ptrs)))
        return views[0], views[1]

    def build(self) -> KernelSpec:
        sc, b, n = self.sc, self.b, self.n
        out_shape = sc.buffers[sc.output_slot(0)].shape
        others = [d for d in major_to_minor(out_shape) if d != self.d] if self.dims else []
        rows = prod(self.dims[d] for d in others) if self.dims else 1
        units = rows if prod(self.dims) else 0
        if units:
            with b.if_then(b.icmp_signed("<", sc.begin, sc.end)):
                base, heap = self._scratch()
                if heap is None:
                    self._rows(others, *self._arrays(base))
                else:
                    null = ir.Constant(I8.as_pointer(), None)
                    with b.if_else(b.icmp_unsigned("!=", heap, null)) as (ok, failed):
                        with ok:
                            self._rows(others, *self._arrays(base))
                            free = declare_function(sc.module, "free", ir.VoidType(),
                                                    [I8.as_pointer()])
                            b.call(free, [heap])
                        with failed:
                            self._rows(others, None, None)
        sc.finish()
        length = max(self.length, 2)
        compares = prod(self.dims) * max(1, length.bit_length())
        return KernelSpec(sc.name, sc.instr, sc.buffers, units=units,
                          cost=float(bytes_of(sc.buffers) + 8 * compares * n),
                          notes=[f"sort of {rows} rows of {self.length} elements "
                                 f"({n} operands)"])

    def _rows(self, others: list[int], a: _View | None, scratch_b: _View | None) -> None:
        """The unit loop: each unit sorts one row (in ``a``/``b``, or in the output)."""
        sc, b, n = self.sc, self.b, self.n
        slots = [sc.output_slot(k) for k in range(n)]
        strides = [element_strides(sc.buffers[s].shape) for s in slots]

        def unit(u: ir.Value) -> None:
            index: list = [None] * len(self.dims)
            for d, v in zip(others, sc.delinearize(u, [self.dims[d] for d in others])):
                index[d] = v
            zero_at = [c64(0) if d == self.d else index[d] for d in range(len(self.dims))]
            out = _View(self, [sc.element_ptr(s, zero_at) for s in slots],
                        [st[self.d] if self.dims else 1 for st in strides], slots)
            target = a if a is not None else out

            def load(i: ir.Value) -> None:
                at = [i if d == self.d else index[d] for d in range(len(self.dims))]
                values = [sc.operand(k)(at) for k in range(n)]
                if a is not None and self.cmp.key is not None:
                    values.append(self.cmp.element_key(b, values))
                for k, v in enumerate(values):
                    target.store(k, i, v)
            sc.loop(0, self.length, load, "in")
            if a is None:
                self._insertion_sort(out, c64(0), c64(self.length))
                return
            final = self._sort(a, scratch_b)

            def store(i: ir.Value) -> None:
                for k in range(n):
                    out.store(k, i, final.load(k, i))
            sc.loop(0, self.length, store, "out")
        sc.units_loop(unit)

    def _sort(self, a: _View, other: _View) -> _View:
        """Sort the row in ``a``; returns a view whose pointers (selected at run time)
        hold the result (``a`` or ``other``)."""
        b, n = self.b, len(self.types)
        runs = -(-self.length // RUN)

        def run(t: ir.Value) -> None:
            lo = b.mul(t, c64(RUN))
            end = b.add(lo, c64(RUN))
            hi = b.select(b.icmp_signed("<", end, c64(self.length)), end, c64(self.length))
            self._insertion_sort(a, lo, hi)
        self.sc.loop(0, runs, run, "runs")
        if self.length <= RUN:
            return a
        src_vars = [self._var(f"src{k}", t.as_pointer()) for k, t in enumerate(self.types)]
        dst_vars = [self._var(f"dst{k}", t.as_pointer()) for k, t in enumerate(self.types)]
        width = self._var("width")
        for k in range(n):
            b.store(a.ptrs[k], src_vars[k])
            b.store(other.ptrs[k], dst_vars[k])
        b.store(c64(RUN), width)

        def merge() -> None:
            src = _View(self, [b.load(v) for v in src_vars], [1] * n)
            dst = _View(self, [b.load(v) for v in dst_vars], [1] * n)
            w = b.load(width)
            self._merge_pass(src, dst, w)
            for k in range(n):
                b.store(dst.ptrs[k], src_vars[k])
                b.store(src.ptrs[k], dst_vars[k])
            b.store(b.mul(w, c64(2)), width)
        self._while(lambda: b.icmp_signed("<", b.load(width), c64(self.length)), merge, "pass")
        return _View(self, [b.load(v) for v in src_vars], [1] * n)


__all__ = ["SortEmitter", "RUN"]
