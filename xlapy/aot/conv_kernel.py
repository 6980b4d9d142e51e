"""A self-contained direct ``convolution`` kernel for ahead-of-time objects (no BLAS).

The JIT computes convolutions in ``conv.py`` (NumPy copies + BLAS), which an object file
cannot contain. :class:`ConvKernelEmitter` emits a plain LLVM kernel with the CPU
backend's kernel contract for a ``convolution`` (or a ``kCustom`` fusion wrapping one on
its parameters): one work unit per output element, each a loop over the window taps and
the group's input features, accumulated in the result type. Every feature of the HLO op is
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
from .dot_kernel import f32_or_f64, open_kernel, strided_offset, units_loop


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
    """Ungrouped convolutions: one unit per output position (batch x spatial):
    ``y[o] = 0``, then for each tap (kernel position, input feature) in the element
    kernel's order, ``y[o] += x[tap] * w[tap, o]`` over all ``o`` -- the same additions
    in the same order, with an inner loop LLVM vectorizes when the output and kernel
    features are contiguous (NHWC / HWIO). Returns the unit count and the unit's body."""
    dn = g.dn
    xp, wp, yp = ptrs
    xstr, wstr, ystr = strides
    zero = ir.Constant(storage_type(ys.element_type), 0.0)
    pos_dims = [dn.output_batch, *dn.output_spatial]
    yo, wo = ystr[dn.output_feature], wstr[dn.kernel_output_feature]

    def position(u: ir.Value) -> None:
        idx = dict(zip(pos_dims, delinearize(b, u, [ys.dims[d] for d in pos_dims])))
        yoff = strided_offset(b, [idx[d] for d in pos_dims], [ystr[d] for d in pos_dims])
        for_loop(b, 0, g.o, lambda o: b.store(
            zero, b.gep(yp, [b.add(yoff, b.mul(o, c64(yo)))], inbounds=True)), "zero")
        xbase = b.mul(idx[dn.output_batch], c64(xstr[dn.input_batch]))

        def tap(kflat: ir.Value) -> None:
            xoff, woff, valid = tap_offsets(b, g, idx, kflat, xbase, c64(0), xstr, wstr)
            with b.if_then(valid):
                def feature(ci: ir.Value) -> None:
                    a = b.load(b.gep(xp, [b.add(xoff, b.mul(ci, c64(xstr[dn.input_feature])))],
                                     inbounds=True))
                    wrow = b.add(woff, b.mul(ci, c64(wstr[dn.kernel_input_feature])))

                    def out(o: ir.Value) -> None:
                        ptr = b.gep(yp, [b.add(yoff, b.mul(o, c64(yo)))], inbounds=True)
                        w = b.load(b.gep(wp, [b.add(wrow, b.mul(o, c64(wo)))], inbounds=True))
                        b.store(b.fadd(b.load(ptr), b.fmul(a, w)), ptr)
                    for_loop(b, 0, g.o, out, "o")
                for_loop(b, 0, g.c, feature, "c")
        for_loop(b, 0, prod(g.kernel), tap, "tap")
    return prod(ys.dims[d] for d in pos_dims), position


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
