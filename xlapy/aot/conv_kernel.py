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

from llvmlite import ir

from ..backends.cpu.conv_plan import conv_geometry
from ..backends.cpu.kernel_api import KernelSpec
from ..backends.cpu.kernel_support import element_strides
from ..backends.cpu.llvm_types import storage_type
from ..backends.cpu.plan_builder import library_target
from ..hlo.ir import HloInstruction
from .dot_kernel import UnitLoop, counted_loop, open_kernel, unit_range

I1, I64 = ir.IntType(1), ir.IntType(64)


class ConvKernelEmitter:
    """Emits a direct, layout-aware convolution kernel (see the module docstring)."""

    def can_emit(self, instr: HloInstruction) -> bool:
        target = library_target(instr)
        if target is None or target[0].opcode != "convolution":
            return False
        conv = target[0]
        ets = {conv.shape.element_type.name, *(o.shape.element_type.name for o in conv.operands)}
        if len(ets) != 1 or not ets <= {"f32", "f64"}:
            return False
        try:
            g = conv_geometry(conv)
        except Exception:                # noqa: BLE001 - malformed: leave it to the verifier
            return False
        taps = g.cg * kernel_size(g)
        return len(g.dn.input_spatial) > 0 and taps > 0 and conv.operands[0].shape.num_elements > 0

    def emit(self, module: ir.Module, name: str, instr: HloInstruction) -> KernelSpec:
        conv, feeds = library_target(instr)
        g = conv_geometry(conv)
        if g.groups == 1 and g.batch_groups == 1 and g.o > 0:
            return self._emit_positions(module, name, instr, conv, feeds, g)
        dn = g.dn
        xs, ws, ys = conv.operands[0].shape, conv.operands[1].shape, conv.shape
        ty = storage_type(ys.element_type)
        fn, b, buffers, (xp, wp, yp) = open_kernel(module, name, instr, conv, feeds)
        xstr, wstr, ystr = element_strides(xs), element_strides(ws), element_strides(ys)
        c = lambda v: ir.Constant(I64, v)     # noqa: E731
        opg_f = g.o // g.groups                # output features per feature group
        opg_b = g.o // g.batch_groups          # output features per batch group
        taps = g.cg * kernel_size(g)
        units_loop = UnitLoop(fn, b, ys, "tap")
        loop, inner, store_bb = units_loop.loop, units_loop.inner, units_loop.store
        idx = units_loop.index
        yoff = c(0)
        for d in range(ys.rank):
            yoff = b.add(yoff, b.mul(idx[d], c(ystr[d])))
        o = idx[dn.output_feature]
        n = b.add(idx[dn.output_batch], b.mul(b.udiv(o, c(opg_b)), c(g.nb)))
        cbase = b.mul(b.udiv(o, c(opg_f)), c(g.cg))
        xbase = b.mul(n, c(xstr[dn.input_batch]))
        wbase = b.mul(o, c(wstr[dn.kernel_output_feature]))
        zero = ir.Constant(ty, 0.0)
        b.branch(inner)
        b.position_at_end(inner)
        r = b.phi(I64, "r")
        acc = b.phi(ty, "acc")
        r.add_incoming(c(0), loop)
        acc.add_incoming(zero, loop)
        # r -> (kernel taps in spatial order, then the group's input feature)
        ci = b.urem(r, c(g.cg))
        krem = b.udiv(r, c(g.cg))
        xoff = b.add(xbase, b.mul(b.add(cbase, ci), c(xstr[dn.input_feature])))
        woff = b.add(wbase, b.mul(ci, c(wstr[dn.kernel_input_feature])))
        xoff, woff, valid = tap_offsets(b, g, idx, krem, xoff, woff, xstr, wstr)
        x = b.load(b.gep(xp, [b.select(valid, xoff, c(0))], inbounds=True))
        w = b.load(b.gep(wp, [woff], inbounds=True))
        acc_next = b.fadd(acc, b.select(valid, b.fmul(x, w), zero))
        r_next = b.add(r, c(1))
        r.add_incoming(r_next, b.block)
        acc.add_incoming(acc_next, b.block)
        b.cbranch(b.icmp_signed("<", r_next, c(taps)), inner, store_bb)
        b.position_at_end(store_bb)
        b.store(acc_next, b.gep(yp, [yoff], inbounds=True))
        units_loop.close()
        units = ys.num_elements
        return KernelSpec(name, instr, buffers, units=units, cost=float(units * taps))


    def _emit_positions(self, module: ir.Module, name: str, instr: HloInstruction,
                        conv: HloInstruction, feeds: list[int], g) -> KernelSpec:
        """Ungrouped convolutions: one unit per output position (batch x spatial):
        ``y[o] = 0``, then for each tap (kernel position, input feature) in the element
        kernel's order, ``y[o] += x[tap] * w[tap, o]`` over all ``o`` -- the same additions
        in the same order, with an inner loop LLVM vectorizes when the output and kernel
        features are contiguous (NHWC / HWIO)."""
        dn = g.dn
        xs, ws, ys = conv.operands[0].shape, conv.operands[1].shape, conv.shape
        ty = storage_type(ys.element_type)
        fn, b, buffers, (xp, wp, yp) = open_kernel(module, name, instr, conv, feeds)
        xstr, wstr, ystr = element_strides(xs), element_strides(ws), element_strides(ys)
        c = lambda v: ir.Constant(I64, v)     # noqa: E731
        pos_dims = [dn.output_batch, *dn.output_spatial]
        units = 1
        for d in pos_dims:
            units *= ys.dims[d]
        yo, wo = ystr[dn.output_feature], wstr[dn.kernel_output_feature]

        def position(u: ir.Value) -> None:
            rem = b.add(u, fn.args[1])
            idx = {}
            for j, d in reversed(list(enumerate(pos_dims))):
                idx[d] = b.urem(rem, c(ys.dims[d])) if j else rem
                rem = b.udiv(rem, c(ys.dims[d]))
            yoff = c(0)
            for d in pos_dims:
                yoff = b.add(yoff, b.mul(idx[d], c(ystr[d])))
            counted_loop(fn, b, "zero", g.o, lambda o: b.store(
                ir.Constant(ty, 0.0), b.gep(yp, [b.add(yoff, b.mul(o, c(yo)))], inbounds=True)))
            xbase = b.mul(idx[dn.output_batch], c(xstr[dn.input_batch]))

            def tap(kflat: ir.Value) -> None:
                xoff, woff, valid = tap_offsets(b, g, idx, kflat, xbase, c(0), xstr, wstr)
                with b.if_then(valid):
                    def feature(ci: ir.Value) -> None:
                        a = b.load(b.gep(xp, [b.add(xoff, b.mul(ci, c(xstr[dn.input_feature])))],
                                         inbounds=True))
                        wrow = b.add(woff, b.mul(ci, c(wstr[dn.kernel_input_feature])))

                        def out(o: ir.Value) -> None:
                            ptr = b.gep(yp, [b.add(yoff, b.mul(o, c(yo)))], inbounds=True)
                            w = b.load(b.gep(wp, [b.add(wrow, b.mul(o, c(wo)))], inbounds=True))
                            b.store(b.fadd(b.load(ptr), b.fmul(a, w)), ptr)
                        counted_loop(fn, b, "o", g.o, out)
                    counted_loop(fn, b, "c", g.c, feature)
            counted_loop(fn, b, "tap", kernel_size(g), tap)

        unit_range(fn, b, position)
        return KernelSpec(name, instr, buffers, units=units,
                          cost=float(ys.num_elements * g.c * max(1, kernel_size(g))))


def tap_offsets(b: ir.IRBuilder, g, idx, krem: ir.Value, xoff: ir.Value, woff: ir.Value,
                xstr: list[int], wstr: list[int]) -> tuple[ir.Value, ir.Value, ir.Value]:
    """For kernel position ``krem`` (flat, row-major over the kernel's spatial dims) at the
    output index ``idx``: the input and kernel element offsets added to ``xoff``/``woff``
    and whether the tap reads a real input element (not padding, not between dilated
    elements; a tap that does not gets a clamped in-bounds offset)."""
    dn = g.dn
    c = lambda v: ir.Constant(I64, v)     # noqa: E731
    valid: ir.Value = ir.Constant(I1, 1)
    for j in reversed(range(len(dn.input_spatial))):
        wd, ksize = g.window[j], g.kernel[j]
        kj = b.urem(krem, c(ksize)) if j else krem
        krem = b.udiv(krem, c(ksize))
        kread = b.sub(c(ksize - 1), kj) if wd.rhs_reversal else kj
        woff = b.add(woff, b.mul(kread, c(wstr[dn.kernel_spatial[j]])))
        # position in the dilated, padded input
        pos = b.sub(b.add(b.mul(idx[dn.output_spatial[j]], c(wd.stride)),
                          b.mul(kj, c(wd.rhs_dilate))), c(wd.pad_lo))
        size = g.spatial[j]
        span = (size - 1) * wd.lhs_dilate + 1 if size else 0
        inside = b.and_(b.icmp_signed(">=", pos, c(0)), b.icmp_signed("<", pos, c(span)))
        if wd.lhs_dilate != 1:
            inside = b.and_(inside, b.icmp_signed("==", b.srem(pos, c(wd.lhs_dilate)), c(0)))
            pos = b.sdiv(pos, c(wd.lhs_dilate))
        valid = b.and_(valid, inside)
        xoff = b.add(xoff, b.mul(b.select(inside, pos, c(0)), c(xstr[dn.input_spatial[j]])))
    return xoff, woff, valid


def kernel_size(g) -> int:
    """Kernel spatial positions of a convolution geometry."""
    n = 1
    for k in g.kernel:
        n *= k
    return n


__all__ = ["ConvKernelEmitter"]
