"""A self-contained direct ``convolution`` kernel for ahead-of-time objects (no BLAS).

The JIT computes convolutions in ``conv.py`` (NumPy copies + BLAS), which an object file
cannot contain. :class:`ConvKernelEmitter` emits a plain LLVM kernel with the CPU
backend's kernel contract for a ``convolution`` (or a ``kCustom`` fusion wrapping one on
its parameters). Ungrouped convolutions get one work unit per block of output positions
(vector accumulators over the output features, :func:`_emit_positions`), grouped ones one
unit per output element, each a loop over the window taps and the group's input features,
accumulated in the result type. Every feature of the HLO op is
handled -- strides, padding, lhs (input) and rhs (kernel) dilation, kernel reversal,
``feature_group_count``, ``batch_group_count``, any dim labels and layouts -- for f32 and
f64 (other element types, and 0-D convolutions, are declined, so the caller reports the
instruction as unplaceable). A tap that falls into padding or between dilated input
elements reads a clamped in-bounds element and adds zero.
"""
from __future__ import annotations

from math import prod
from typing import Callable

from llvmlite import ir

from ..backends.cpu.conv_plan import ConvGeometry, conv_geometry
from ..backends.cpu.elemental_data import delinearize
from ..backends.cpu.kernel_api import KernelSpec
from ..backends.cpu.kernel_support import c64, carried_loop, element_strides, for_loop
from ..backends.cpu.llvm_types import storage_type
from ..backends.cpu.plan_builder import library_target
from ..hlo.ir import HloInstruction
from ..hlo.shape import Shape
from .dot_kernel import (f32_or_f64, open_kernel, splat, strided_offset, ty_bytes,
                         units_loop)

#: Output positions per unit of the blocked ungrouped kernel.
POSITIONS = 4


class ConvKernelEmitter:
    """Emits a direct, layout-aware convolution kernel (see the module docstring)."""

    def can_emit(self, instr: HloInstruction) -> bool:
        target = library_target(instr)
        if target is None or target[0].opcode != "convolution":
            return False
        conv = target[0]
        if not f32_or_f64(conv):
            return False
        try:
            g = conv_geometry(conv)
        except Exception:                # noqa: BLE001 - malformed: leave it to the verifier
            return False
        taps = g.cg * prod(g.kernel)
        return len(g.dn.input_spatial) > 0 and taps > 0 and conv.operands[0].shape.num_elements > 0

    def emit(self, module: ir.Module, name: str, instr: HloInstruction) -> KernelSpec:
        conv, feeds = library_target(instr)
        g = conv_geometry(conv)
        fn, b, buffers, ptrs = open_kernel(module, name, instr, conv, feeds)
        strides = [element_strides(s) for s in (conv.operands[0].shape, conv.operands[1].shape,
                                                conv.shape)]
        ungrouped = g.groups == 1 and g.batch_groups == 1 and g.o > 0
        units, body = (_emit_positions if ungrouped else _emit_elements)(b, g, conv.shape, ptrs,
                                                                         strides)
        units_loop(fn, b, body)
        return KernelSpec(name, instr, buffers, units=units,
                          cost=float(conv.shape.num_elements * g.cg * prod(g.kernel)))


def _emit_elements(b: ir.IRBuilder, g: ConvGeometry, ys: Shape, ptrs: list[ir.Value],
                   strides: list[list[int]]) -> tuple[int, Callable[[ir.Value], None]]:
    """Any convolution: one unit per output element, a loop over the window taps and the
    group's input features. Returns the unit count and the unit's body."""
    dn = g.dn
    xp, wp, yp = ptrs
    xstr, wstr, ystr = strides
    opg_f = g.o // g.groups                # output features per feature group
    opg_b = g.o // g.batch_groups          # output features per batch group
    zero = ir.Constant(storage_type(ys.element_type), 0.0)

    def unit(u: ir.Value) -> None:
        idx = delinearize(b, u, ys.dims)
        yoff = strided_offset(b, idx, ystr)
        o = idx[dn.output_feature]
        n = b.add(idx[dn.output_batch], b.mul(b.udiv(o, c64(opg_b)), c64(g.nb)))
        cbase = b.mul(b.udiv(o, c64(opg_f)), c64(g.cg))
        xbase = b.mul(n, c64(xstr[dn.input_batch]))
        wbase = b.mul(o, c64(wstr[dn.kernel_output_feature]))

        def tap(r: ir.Value, carried: list) -> list:
            # r -> (kernel taps in spatial order, then the group's input feature)
            ci = b.urem(r, c64(g.cg))
            krem = b.udiv(r, c64(g.cg))
            xoff = b.add(xbase, b.mul(b.add(cbase, ci), c64(xstr[dn.input_feature])))
            woff = b.add(wbase, b.mul(ci, c64(wstr[dn.kernel_input_feature])))
            xoff, woff, valid = tap_offsets(b, g, idx, krem, xoff, woff, xstr, wstr)
            x = b.load(b.gep(xp, [b.select(valid, xoff, c64(0))], inbounds=True))
            w = b.load(b.gep(wp, [woff], inbounds=True))
            return [b.fadd(carried[0], b.select(valid, b.fmul(x, w), zero))]
        (total,) = carried_loop(b, 0, g.cg * prod(g.kernel), [zero], tap, "tap")
        b.store(total, b.gep(yp, [yoff], inbounds=True))
    return ys.num_elements, unit


def _emit_positions(b: ir.IRBuilder, g: ConvGeometry, ys: Shape, ptrs: list[ir.Value],
                    strides: list[list[int]]) -> tuple[int, Callable[[ir.Value], None]]:
    """Ungrouped convolutions: one unit per block of :data:`POSITIONS` output positions
    along the last spatial dim (the batch and the other spatial indices fixed). Every
    output element gets ``y[o] = 0``, then for each tap (kernel position, input feature)
    in the element kernel's order ``y[o] += x[tap] * w[tap, o]``, taps in the padding
    skipped -- the same additions in the same order as the per-element kernel. A full
    block with contiguous output and kernel features computes 64-byte strips of ``o``
    for all its positions in vector accumulators (one kernel load feeds every position);
    other features, short blocks and other layouts take a loop over ``o`` per position.
    Returns the unit count and the unit's body."""
    dn = g.dn
    xp, wp, yp = ptrs
    xstr, wstr, ystr = strides
    ty = storage_type(ys.element_type)
    zero = ir.Constant(ty, 0.0)
    last = dn.output_spatial[-1]
    row_dims = [dn.output_batch, *dn.output_spatial[:-1]]
    wout = ys.dims[last]
    blocks = -(-wout // POSITIONS)
    yo, wo = ystr[dn.output_feature], wstr[dn.kernel_output_feature]
    lanes = 64 // ty_bytes(ty)
    strips = g.o // lanes if (yo == 1 and wo == 1) else 0
    vec = ir.VectorType(ty, lanes)
    taps = prod(g.kernel)
    xci, wci = xstr[dn.input_feature], wstr[dn.kernel_input_feature]

    def scalar(idx: dict, o_lo: int) -> None:
        """Features ``[o_lo, O)`` of the position ``idx``."""
        yoff = strided_offset(b, [idx[d] for d in row_dims + [last]],
                              [ystr[d] for d in row_dims + [last]])
        for_loop(b, o_lo, g.o, lambda o: b.store(
            zero, b.gep(yp, [b.add(yoff, b.mul(o, c64(yo)))], inbounds=True)), "zero")
        xbase = b.mul(idx[dn.output_batch], c64(xstr[dn.input_batch]))

        def tap(kflat: ir.Value) -> None:
            xoff, woff, valid = tap_offsets(b, g, idx, kflat, xbase, c64(0), xstr, wstr)
            with b.if_then(valid):
                def feature(ci: ir.Value) -> None:
                    a = b.load(b.gep(xp, [b.add(xoff, b.mul(ci, c64(xci)))], inbounds=True))
                    wrow = b.add(woff, b.mul(ci, c64(wci)))

                    def out(o: ir.Value) -> None:
                        ptr = b.gep(yp, [b.add(yoff, b.mul(o, c64(yo)))], inbounds=True)
                        w = b.load(b.gep(wp, [b.add(wrow, b.mul(o, c64(wo)))], inbounds=True))
                        b.store(b.fadd(b.load(ptr), b.fmul(a, w)), ptr)
                    for_loop(b, o_lo, g.o, out, "o")
                for_loop(b, 0, g.c, feature, "c")
        for_loop(b, 0, taps, tap, "tap")

    def vector_block(row: dict, w0: ir.Value) -> None:
        """Strips of ``o`` for the ``POSITIONS`` positions from ``w0`` (a full block)."""
        pos = [{**row, last: b.add(w0, c64(p))} for p in range(POSITIONS)]
        xbase = b.mul(row[dn.output_batch], c64(xstr[dn.input_batch]))

        def strip(s_: ir.Value) -> None:
            o0 = b.mul(s_, c64(lanes))

            def tap(kflat: ir.Value, acc: list) -> list:
                at = [tap_offsets(b, g, idx, kflat, xbase, c64(0), xstr, wstr) for idx in pos]
                woff = at[0][1]

                def feature(ci: ir.Value, acc: list) -> list:
                    wptr = b.gep(wp, [b.add(b.add(woff, b.mul(ci, c64(wci))), o0)],
                                 inbounds=True)
                    wv = b.load(b.bitcast(wptr, vec.as_pointer()), align=ty_bytes(ty))
                    out = []
                    for p, (xoff, _, valid) in enumerate(at):
                        xi = b.select(valid, b.add(xoff, b.mul(ci, c64(xci))), c64(0))
                        a = b.load(b.gep(xp, [xi], inbounds=True))
                        out.append(b.select(valid, b.fadd(acc[p], b.fmul(splat(b, a, vec), wv)),
                                            acc[p]))
                    return out
                return carried_loop(b, 0, g.c, acc, feature, "c")
            acc = carried_loop(b, 0, taps, [ir.Constant(vec, [0.0] * lanes)] * POSITIONS,
                               tap, "tap")
            for p, idx in enumerate(pos):
                yoff = strided_offset(b, [idx[d] for d in row_dims + [last]],
                                      [ystr[d] for d in row_dims + [last]])
                ptr = b.gep(yp, [b.add(yoff, o0)], inbounds=True)
                b.store(acc[p], b.bitcast(ptr, vec.as_pointer()), align=ty_bytes(ty))
        for_loop(b, 0, strips, strip, "strip")

    def unit(u: ir.Value) -> None:
        r, blk = b.udiv(u, c64(blocks)), b.urem(u, c64(blocks))
        row = dict(zip(row_dims, delinearize(b, r, [ys.dims[d] for d in row_dims])))
        w0 = b.mul(blk, c64(POSITIONS))
        w1 = b.add(w0, c64(POSITIONS))
        full = b.icmp_signed("<=", w1, c64(wout))
        if strips:
            with b.if_then(full):
                vector_block(row, w0)
        done = strips * lanes
        end = b.select(full, w1, c64(wout))
        if done < g.o:
            with b.if_then(full):
                for_loop(b, w0, w1, lambda w: scalar({**row, last: w}, done), "wf")
        # a short block: every feature per position
        with b.if_then(b.not_(full)):
            for_loop(b, w0, end, lambda w: scalar({**row, last: w}, 0), "ws")
    units = prod(ys.dims[d] for d in row_dims) * blocks
    return units, unit


def tap_offsets(b: ir.IRBuilder, g: ConvGeometry, idx, krem: ir.Value, xoff: ir.Value,
                woff: ir.Value, xstr: list[int], wstr: list[int]
                ) -> tuple[ir.Value, ir.Value, ir.Value]:
    """For kernel position ``krem`` (flat, row-major over the kernel's spatial dims) at the
    output index ``idx``: the input and kernel element offsets added to ``xoff``/``woff``
    and whether the tap reads a real input element (not padding, not between dilated
    elements; a tap that does not gets a clamped in-bounds offset)."""
    dn = g.dn
    valid: ir.Value = ir.Constant(ir.IntType(1), 1)
    for j in reversed(range(len(dn.input_spatial))):
        wd, ksize = g.window[j], g.kernel[j]
        kj = b.urem(krem, c64(ksize)) if j else krem
        krem = b.udiv(krem, c64(ksize))
        kread = b.sub(c64(ksize - 1), kj) if wd.rhs_reversal else kj
        woff = b.add(woff, b.mul(kread, c64(wstr[dn.kernel_spatial[j]])))
        # position in the dilated, padded input
        pos = b.sub(b.add(b.mul(idx[dn.output_spatial[j]], c64(wd.stride)),
                          b.mul(kj, c64(wd.rhs_dilate))), c64(wd.pad_lo))
        size = g.spatial[j]
        span = (size - 1) * wd.lhs_dilate + 1 if size else 0
        inside = b.and_(b.icmp_signed(">=", pos, c64(0)), b.icmp_signed("<", pos, c64(span)))
        if wd.lhs_dilate != 1:
            inside = b.and_(inside, b.icmp_signed("==", b.srem(pos, c64(wd.lhs_dilate)), c64(0)))
            pos = b.sdiv(pos, c64(wd.lhs_dilate))
        valid = b.and_(valid, inside)
        xoff = b.add(xoff, b.mul(b.select(inside, pos, c64(0)), c64(xstr[dn.input_spatial[j]])))
    return xoff, woff, valid


__all__ = ["ConvKernelEmitter"]
