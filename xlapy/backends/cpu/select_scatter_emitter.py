"""Native ``select-and-scatter`` kernels (the max-pool gradient), top level or fusion roots.

Semantics (XLA's evaluator and the interpreter): the output starts as the init value
everywhere. For every source element, in row-major source order, the window over the
operand at that position is scanned in window order (positions in the padding or in
holes of base dilation skipped); the first valid element is the current choice and
each later one replaces it when ``select(current, candidate)`` is false. The source
value is then combined into the output at the chosen position with the ``scatter``
computation: ``out[chosen] = scatter(out[chosen], source)``. A window with no valid
position scatters nothing.

Work units: when the windows along some dimension ``p`` never overlap (``stride >=``
window extent, no base dilation) each source index along ``p`` is a unit that owns the
output band ``[s * stride - pad_lo, (s + 1) * stride - pad_lo)`` along ``p`` (the first
and last units also own the rows before / after every band): it writes the init value
there, then scatters its own windows, which lie inside its band. Otherwise the kernel
is one unit doing everything in source order.

When the windows **tile** the operand (stride == size, no padding or dilation, and the
operand is exactly covered: the usual 2x2/2 max pool), every output element lies in
exactly one window, so no init fill is needed: each window's elements are written once,
``scatter(init, source)`` at the chosen position and ``init`` elsewhere.

When the output's minor-most physical dimension passes through the window (the
channels of an NHWC pool), a block of it is handled at once: window validity is the
same for the whole block, and the select / scatter loops over the block vectorize.
"""
from __future__ import annotations

from math import prod
from typing import Any, Callable

from llvmlite import ir

from ...hlo.attrs import Window
from ...hlo.ir import HloInstruction
from .kernel_api import KernelSpec, kernel_buffers
from .kernel_support import (KernelScaffold, PlanKernelEmitter, buffer_aliases, bytes_of, c64,
                             element_strides, emit_scalar_computation, find_hero,
                             has_register_type, major_to_minor, scalar_computation_supported)
from .llvm_types import I1, llvm_type
from .reduction_reducers import Reducer
from .window_emitter import VECTOR_BLOCK, WindowGeometry


class _Plan:
    def __init__(self, instr: HloInstruction, hero: HloInstruction, geo: WindowGeometry,
                 combiner: Reducer) -> None:
        self.instr, self.hero, self.geo, self.combiner = instr, hero, geo, combiner


def _analyze(instr: HloInstruction, assignment: Any) -> _Plan | None:
    hero = find_hero(instr, ("select-and-scatter",))
    if hero is None or len(hero.operands) != 3 or not hero.shape.is_array:
        return None
    operand, source, init = hero.operands
    window = hero.attrs.get("window") or Window(())
    select, scatter = hero.attrs.get("select"), hero.attrs.get("scatter")
    if select is None or scatter is None or len(window.dims) != operand.shape.rank or \
            source.shape.rank != operand.shape.rank or init.shape.rank != 0 or \
            hero.shape.dims != operand.shape.dims:
        return None
    et_x, et_y = operand.shape.element_type, source.shape.element_type
    if hero.shape.element_type != et_y or init.shape.element_type != et_y:
        return None
    if not all(has_register_type(s) for s in (operand.shape, source.shape)):
        return None
    params = select.parameters
    if len(params) != 2 or any(p.shape.element_type != et_x for p in params) or \
            not select.root.shape.is_array or not select.root.shape.element_type.is_pred or \
            not scalar_computation_supported(select):
        return None
    if not Reducer.supported(scatter, [et_y]):
        return None
    if buffer_aliases(assignment, instr, kernel_buffers(instr)) != {}:
        return None
    geo = WindowGeometry(window, operand.shape.dims, source.shape.dims)
    return _Plan(instr, hero, geo, Reducer(scatter, [et_y]))


class _Kernel:
    def __init__(self, module: ir.Module, name: str, plan: _Plan) -> None:
        self.plan, self.geo = plan, plan.geo
        self.sc = KernelScaffold(module, name, plan.instr, plan.hero)
        self.b = self.sc.b
        self.out = self.sc.output_slot(0)
        self.out_shape = self.sc.buffers[self.out].shape
        self.out_strides = element_strides(self.out_shape)
        order = major_to_minor(self.out_shape)
        self.order = order
        self.m = order[-1] if order and self.geo.passes_through(order[-1]) else None
        self.block = min(self.geo.out_dims[self.m], VECTOR_BLOCK) if self.m is not None else 1
        self.p = self._partition_dim()
        hero = plan.hero
        et_x = hero.operands[0].shape.element_type
        self.et_x = et_x
        self.sel_val = self.sc.alloca(llvm_type(et_x), self.block, "sel.val")
        self.sel_off = self.sc.alloca(ir.IntType(64), self.block, "sel.off")
        self.have = self.sc.alloca(I1, 1, "have")

    def _partition_dim(self) -> int | None:
        """A dimension whose windows never overlap (see the module docstring)."""
        src = self.geo.out_dims
        if prod(src) == 0:
            return None
        for d in self.order:
            w = self.geo.wd[d]
            extent = (w.size - 1) * w.rhs_dilate + 1
            if d != self.m and src[d] > 1 and w.lhs_dilate == 1 and w.stride >= extent:
                return d
        return None

    # -- lanes: a block of the pass-through dimension, or one element
    def _lanes(self, lo: ir.Value | None, hi: ir.Value | None,
               body: Callable[[ir.Value | None, ir.Value], None], name: str) -> None:
        if self.m is None:
            body(None, c64(0))
        else:
            self.sc.loop(lo, hi, lambda c: body(c, self.b.sub(c, lo)), name)

    def _at(self, index: dict[int, ir.Value] | list, c: ir.Value | None) -> list:
        rank = len(self.geo.in_dims)
        return [c if d == self.m else index[d] for d in range(rank)]

    # -- phases
    def _fill_band(self, u: ir.Value, units: int) -> None:
        """Write the init value over the output rows this unit owns."""
        b, sc = self.b, self.sc
        init = sc.operand(2)([])
        ranges = {}
        if self.p is not None:
            w, n = self.geo.wd[self.p], self.geo.in_dims[self.p]

            def clamp(v: ir.Value) -> ir.Value:
                v = b.select(b.icmp_signed("<", v, c64(0)), c64(0), v)
                return b.select(b.icmp_signed(">", v, c64(n)), c64(n), v)
            start = b.sub(b.mul(u, c64(w.stride)), c64(w.pad_lo))
            lo = b.select(b.icmp_signed("==", u, c64(0)), c64(0), clamp(start))
            hi = b.select(b.icmp_signed("==", u, c64(units - 1)), c64(n),
                          clamp(b.add(start, c64(w.stride))))
            ranges[self.p] = (lo, hi)

        def put(index: list) -> None:
            sc.store(self.out, init, sc.element_ptr(self.out, index))
        sc.nest(self.geo.in_dims, self.order, put, ranges, "fill")

    def _select(self, y_index: list, lo: ir.Value | None, hi: ir.Value | None) -> None:
        """Choose a position in the window of source position ``y_index``."""
        b, sc = self.b, self.sc
        b.store(ir.Constant(I1, 0), self.have)
        zero = ir.Constant(llvm_type(self.et_x), None)
        self._lanes(lo, hi, lambda c, j: b.store(zero, b.gep(self.sel_val, [j])), "clear")
        dims = [d for d in range(len(y_index)) if d != self.m]
        select = self.plan.hero.attrs["select"]

        def slot(found: dict[int, ir.Value]) -> None:
            have = b.load(self.have)

            def lane(c: ir.Value | None, j: ir.Value) -> None:
                index = self._at(found, c)
                x = sc.operand(0)(index)
                off = sc.offset(index, self.out_strides)
                cur_ptr, off_ptr = b.gep(self.sel_val, [j]), b.gep(self.sel_off, [j])
                cur = b.load(cur_ptr)
                (keep,) = emit_scalar_computation(b, select, [cur, x])
                take = b.or_(b.not_(have), b.not_(keep))
                b.store(b.select(take, x, cur), cur_ptr)
                b.store(b.select(take, off, b.load(off_ptr)), off_ptr)
            self._lanes(lo, hi, lane, "sel")
            b.store(ir.Constant(I1, 1), self.have)
        self.geo.walk(sc, dims, y_index, slot)

    def _scatter(self, y_index: list, lo: ir.Value | None, hi: ir.Value | None) -> None:
        b, sc = self.b, self.sc
        comb = self.plan.combiner
        with b.if_then(b.load(self.have)):
            def lane(c: ir.Value | None, j: ir.Value) -> None:
                ptr = b.gep(sc.ptrs[self.out], [b.load(b.gep(self.sel_off, [j]))],
                            inbounds=True)
                src = sc.operand(1)(self._at(y_index, c))
                old = sc.load(self.out, ptr)
                (new,) = comb.from_acc(b, comb.combine(b, comb.to_acc(b, [old]),
                                                       comb.to_acc(b, [src])))
                sc.store(self.out, new, ptr)
            self._lanes(lo, hi, lane, "scat")

    def _tiles(self) -> bool:
        """Whether the windows tile the operand exactly (each element in one window)."""
        geo = self.geo
        return all(w.stride == w.size and w.rhs_dilate == 1 and w.lhs_dilate == 1
                   and w.pad_lo == 0 and w.pad_hi == 0 and n == o * w.size
                   for w, n, o in zip(geo.wd, geo.in_dims, geo.out_dims))

    def _write_windows(self, y_index: list, lo: ir.Value | None, hi: ir.Value | None) -> None:
        """Tiling windows: write every element of the window once, ``scatter(init,
        source)`` at the chosen position and ``init`` elsewhere (no separate fill)."""
        b, sc = self.b, self.sc
        comb = self.plan.combiner
        init = sc.operand(2)([])
        dims = [d for d in range(len(y_index)) if d != self.m]

        def slot(found: dict[int, ir.Value]) -> None:
            def lane(c: ir.Value | None, j: ir.Value) -> None:
                off = sc.offset(self._at(found, c), self.out_strides)
                src = sc.operand(1)(self._at(y_index, c))
                (value,) = comb.from_acc(b, comb.combine(b, comb.to_acc(b, [init]),
                                                         comb.to_acc(b, [src])))
                hit = b.icmp_signed("==", b.load(b.gep(self.sel_off, [j])), off)
                sc.store(self.out, b.select(hit, value, init),
                         b.gep(sc.ptrs[self.out], [off], inbounds=True))
            self._lanes(lo, hi, lane, "tile")
        self.geo.walk(sc, dims, y_index, slot)

    def build(self) -> KernelSpec:
        b, sc, geo = self.b, self.sc, self.geo
        src_dims = geo.out_dims
        tiles = self._tiles()
        units = (src_dims[self.p] if self.p is not None else 1) if prod(geo.in_dims) else 0
        # source dimensions walked inside a unit, row-major (ascending)
        walk = [d for d in range(len(src_dims)) if d != self.p and d != self.m]
        nblocks = -(-src_dims[self.m] // self.block) if self.m is not None else 1

        finish = self._write_windows if tiles else self._scatter

        def unit(u: ir.Value) -> None:
            if not tiles:
                self._fill_band(u, units)
            if prod(src_dims) == 0:
                return
            y_index: list = [None] * len(src_dims)
            if self.p is not None:
                y_index[self.p] = u

            def position(index: list) -> None:
                for d in walk:
                    y_index[d] = index[d]
                if self.m is None:
                    self._select(y_index, None, None)
                    finish(y_index, None, None)
                    return

                def block(k: ir.Value) -> None:
                    lo = b.mul(k, c64(self.block))
                    end = b.add(lo, c64(self.block))
                    hi = b.select(b.icmp_signed("<", end, c64(src_dims[self.m])), end,
                                  c64(src_dims[self.m]))
                    y_index[self.m] = lo
                    self._select(y_index, lo, hi)
                    finish(y_index, lo, hi)
                sc.loop(0, nblocks, block, "blk")
            sc.nest(src_dims, walk, position, name="src")

        if units:
            sc.units_loop(unit)
        sc.finish()
        work = prod(src_dims) * geo.window_elements * 4
        return KernelSpec(sc.name, self.plan.instr, sc.buffers, units=units,
                          cost=float(bytes_of(sc.buffers) + 2 * work),
                          notes=[f"select-and-scatter of {prod(src_dims)} source elements in "
                                 f"{units} units" + (" (vector lanes)" if self.m is not None
                                                     else "") + (" (tiling windows)" if tiles
                                                                 else "")])


class SelectAndScatterEmitter(PlanKernelEmitter):
    """A ``KernelEmitter`` for ``select-and-scatter`` and loop fusions rooted at one."""

    kind = "select-and-scatter"
    analyze_plan = staticmethod(_analyze)
    kernel_class = _Kernel


__all__ = ["SelectAndScatterEmitter"]
