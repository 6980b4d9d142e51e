"""A self-contained ``dot`` kernel for ahead-of-time objects (no BLAS).

The JIT runs dots through ``blas.py`` (a Python routine calling a BLAS library), which an
object file cannot contain. :class:`DotKernelEmitter` emits a plain LLVM kernel with the
CPU backend's kernel contract (``void(i8** buffers, i64 begin, i64 end)``, buffer table
from :func:`~xlapy.backends.cpu.kernel_api.kernel_buffers`) for a ``dot`` or a ``kCustom``
fusion wrapping one on its parameters: one work unit per output element, each a loop
over the contracting elements accumulated in the result's compute type (``float`` for
f16/bf16). Any layouts are handled (strides come from each shape's layout). Operands and
result must be all floating point (f16, bf16, f32, f64) or all integers; anything else is
declined, so the caller reports the dot as unplaceable.
"""
from __future__ import annotations

from llvmlite import ir

from ..backends.cpu.blas import dot_dims
from ..backends.cpu.kernel_api import (KernelSpec, buffer_pointer, declare_kernel,
                                       kernel_buffers)
from ..backends.cpu.kernel_support import element_strides
from ..backends.cpu.llvm_types import (compute_type, from_compute, load_element,
                                       storage_type, store_element, to_compute)
from ..backends.cpu.plan_builder import _library_target
from ..hlo.ir import HloInstruction
from ..hlo.types import ElementType

I64 = ir.IntType(64)
_FLOATS = ("f16", "bf16", "f32", "f64")


def _kind(et: ElementType) -> str | None:
    if et.name in _FLOATS:
        return "float"
    if et.is_integral and not et.is_pred and et.bits >= 8:
        return "int"
    return None


class DotKernelEmitter:
    """Emits a naive, layout-aware dot kernel (see the module docstring)."""

    def can_emit(self, instr: HloInstruction) -> bool:
        target = _library_target(instr)
        if target is None or target[0].opcode != "dot":
            return False
        dot = target[0]
        kinds = {_kind(s.element_type) for s in (dot.shape, *(o.shape for o in dot.operands))}
        return len(kinds) == 1 and None not in kinds

    def emit(self, module: ir.Module, name: str, instr: HloInstruction) -> KernelSpec:
        dot, feeds = _library_target(instr)
        dims = dot_dims(dot)
        buffers = kernel_buffers(instr)
        slots = {(kb.operand, kb.index): i for i, kb in enumerate(buffers) if kb.role == "operand"}
        out_slot = next(i for i, kb in enumerate(buffers) if kb.role == "output")
        lhs_slot, rhs_slot = slots[(feeds[0], ())], slots[(feeds[1], ())]
        ls, rs, os_ = dot.operands[0].shape, dot.operands[1].shape, dot.shape
        out_et = os_.element_type
        acc_ty = compute_type(out_et)
        is_float = _kind(out_et) == "float"
        fn, b = declare_kernel(module, name)
        lp = buffer_pointer(b, fn, lhs_slot, storage_type(ls.element_type))
        rp = buffer_pointer(b, fn, rhs_slot, storage_type(rs.element_type))
        op = buffer_pointer(b, fn, out_slot, storage_type(out_et))
        lstr, rstr, ostr = element_strides(ls), element_strides(rs), element_strides(os_)
        # output logical dims: lhs batch, lhs free, rhs free
        out_src = ([("b", k) for k in range(len(dims.lhs_batch))]
                   + [("lf", d) for d in dims.lhs_free] + [("rf", d) for d in dims.rhs_free])
        contract = [ls.dims[d] for d in dims.lhs_contract]
        k_total = 1
        for n in contract:
            k_total *= n
        c = lambda v: ir.Constant(I64, v)     # noqa: E731

        def convert(value: ir.Value, et: ElementType) -> ir.Value:
            value = to_compute(b, value, et)
            src_ty = compute_type(et)
            if src_ty == acc_ty:
                return value
            if is_float:
                return (b.fpext(value, acc_ty) if _width(src_ty) < _width(acc_ty)
                        else b.fptrunc(value, acc_ty))
            if src_ty.width < acc_ty.width:
                return b.sext(value, acc_ty) if et.is_signed_integral else b.zext(value, acc_ty)
            return b.trunc(value, acc_ty)

        entry = b.block
        loop = fn.append_basic_block("unit")
        inner = fn.append_basic_block("k")
        store_bb = fn.append_basic_block("store")
        done = fn.append_basic_block("done")
        b.cbranch(b.icmp_signed("<", fn.args[1], fn.args[2]), loop, done)
        b.position_at_end(loop)
        u = b.phi(I64, "u")
        u.add_incoming(fn.args[1], entry)
        # logical output index from u (row-major over the logical dims)
        rem, loff, roff, ooff = u, c(0), c(0), c(0)
        idx = [None] * os_.rank
        for d in reversed(range(os_.rank)):
            size = os_.dims[d]
            idx[d] = b.urem(rem, c(size)) if d else rem
            rem = b.udiv(rem, c(size))
        for d, (src, k) in enumerate(out_src):
            ooff = b.add(ooff, b.mul(idx[d], c(ostr[d])))
            if src == "b":
                loff = b.add(loff, b.mul(idx[d], c(lstr[dims.lhs_batch[k]])))
                roff = b.add(roff, b.mul(idx[d], c(rstr[dims.rhs_batch[k]])))
            elif src == "lf":
                loff = b.add(loff, b.mul(idx[d], c(lstr[k])))
            else:
                roff = b.add(roff, b.mul(idx[d], c(rstr[k])))
        zero = ir.Constant(acc_ty, 0.0 if is_float else 0)
        b.cbranch(b.icmp_signed(">", c(k_total), c(0)), inner, store_bb)
        unit_end = b.block
        b.position_at_end(inner)
        k = b.phi(I64, "k")
        acc = b.phi(acc_ty, "acc")
        k.add_incoming(c(0), unit_end)
        acc.add_incoming(zero, unit_end)
        krem, kl, kr = k, loff, roff
        for j in reversed(range(len(contract))):
            part = b.urem(krem, c(contract[j])) if j else krem
            krem = b.udiv(krem, c(contract[j]))
            kl = b.add(kl, b.mul(part, c(lstr[dims.lhs_contract[j]])))
            kr = b.add(kr, b.mul(part, c(rstr[dims.rhs_contract[j]])))
        x = convert(load_element(b, b.gep(lp, [kl], inbounds=True), ls.element_type),
                    ls.element_type)
        y = convert(load_element(b, b.gep(rp, [kr], inbounds=True), rs.element_type),
                    rs.element_type)
        acc_next = b.fadd(acc, b.fmul(x, y)) if is_float else b.add(acc, b.mul(x, y))
        k_next = b.add(k, c(1))
        k.add_incoming(k_next, b.block)
        acc.add_incoming(acc_next, b.block)
        b.cbranch(b.icmp_signed("<", k_next, c(k_total)), inner, store_bb)
        b.position_at_end(store_bb)
        total = b.phi(acc_ty, "total")
        total.add_incoming(zero, unit_end)
        total.add_incoming(acc_next, inner)
        value = from_compute(b, total, out_et) if is_float else total
        store_element(b, value, b.gep(op, [ooff], inbounds=True), out_et)
        u_next = b.add(u, c(1))
        u.add_incoming(u_next, store_bb)
        b.cbranch(b.icmp_signed("<", u_next, fn.args[2]), loop, done)
        b.position_at_end(done)
        b.ret_void()
        units = os_.num_elements
        return KernelSpec(name, instr, buffers, units=units, cost=float(units * max(k_total, 1)))


def _width(ty: ir.Type) -> int:
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(ty)]


__all__ = ["DotKernelEmitter"]
