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
from ..backends.cpu.plan_builder import library_target
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


def open_kernel(module: ir.Module, name: str, instr: HloInstruction, op: HloInstruction,
                feeds: list[int]) -> tuple[ir.Function, ir.IRBuilder, list, list[ir.Value]]:
    """Declare the kernel for ``instr`` computing ``op`` (a dot or convolution whose operand
    ``i`` is ``instr``'s operand ``feeds[i]``): the function, a builder, the buffer table
    and the typed pointers to the lhs, the rhs and the result."""
    buffers = kernel_buffers(instr)
    slots = {(kb.operand, kb.index): i for i, kb in enumerate(buffers) if kb.role == "operand"}
    out_slot = next(i for i, kb in enumerate(buffers) if kb.role == "output")
    fn, b = declare_kernel(module, name)
    ptrs = [buffer_pointer(b, fn, slots[(feeds[k], ())], storage_type(o.shape.element_type))
            for k, o in enumerate(op.operands)]
    ptrs.append(buffer_pointer(b, fn, out_slot, storage_type(op.shape.element_type)))
    return fn, b, buffers, ptrs


def counted_loop(fn: ir.Function, b: ir.IRBuilder, label: str, count: int, body,
                 limit: ir.Value | None = None) -> None:
    """``for i in range(count): body(i)`` at the builder's position (``count`` >= 1; a
    run-time ``limit`` >= 1 replaces ``count`` when given)."""
    pre = b.block
    loop = fn.append_basic_block(label)
    after = fn.append_basic_block(label + ".end")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64, label + ".i")
    i.add_incoming(ir.Constant(I64, 0), pre)
    body(i)
    nxt = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(nxt, b.block)
    end = ir.Constant(I64, count) if limit is None else limit
    b.cbranch(b.icmp_signed("<", nxt, end), loop, after)
    b.position_at_end(after)


def unit_range(fn: ir.Function, b: ir.IRBuilder, body) -> None:
    """The kernel's body: ``body(u - begin)`` for ``u`` in ``[begin, end)``, then return."""
    work = fn.append_basic_block("work")
    done = fn.append_basic_block("done")
    b.cbranch(b.icmp_signed("<", fn.args[1], fn.args[2]), work, done)
    b.position_at_end(work)
    counted_loop(fn, b, "unit", 0, body, limit=b.sub(fn.args[2], fn.args[1]))
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()


class UnitLoop:
    """The per-output-element loop both element kernels share: ``for u in [begin, end)``
    with the logical output index of ``u`` (row-major over ``shape``'s dims); the body
    runs a nested loop in block ``inner`` and stores in block ``store``."""

    def __init__(self, fn: ir.Function, b: ir.IRBuilder, shape, inner_name: str) -> None:
        self.fn, self.b = fn, b
        entry = b.block
        self.loop = fn.append_basic_block("unit")
        self.inner = fn.append_basic_block(inner_name)
        self.store = fn.append_basic_block("store")
        self.done = fn.append_basic_block("done")
        b.cbranch(b.icmp_signed("<", fn.args[1], fn.args[2]), self.loop, self.done)
        b.position_at_end(self.loop)
        self.u = b.phi(I64, "u")
        self.u.add_incoming(fn.args[1], entry)
        self.index: list[ir.Value] = [None] * shape.rank
        rem = self.u
        for d in reversed(range(shape.rank)):
            self.index[d] = b.urem(rem, ir.Constant(I64, shape.dims[d])) if d else rem
            rem = b.udiv(rem, ir.Constant(I64, shape.dims[d]))

    def close(self) -> None:
        """After the store (builder in ``store``): next unit or return."""
        b = self.b
        nxt = b.add(self.u, ir.Constant(I64, 1))
        self.u.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, self.fn.args[2]), self.loop, self.done)
        b.position_at_end(self.done)
        b.ret_void()


class DotKernelEmitter:
    """Emits a naive, layout-aware dot kernel (see the module docstring)."""

    def can_emit(self, instr: HloInstruction) -> bool:
        target = library_target(instr)
        if target is None or target[0].opcode != "dot":
            return False
        dot = target[0]
        kinds = {_kind(s.element_type) for s in (dot.shape, *(o.shape for o in dot.operands))}
        return len(kinds) == 1 and None not in kinds

    def emit(self, module: ir.Module, name: str, instr: HloInstruction) -> KernelSpec:
        dot, feeds = library_target(instr)
        dims = dot_dims(dot)
        if _row_eligible(dot, dims):
            return self._emit_rows(module, name, instr, dot, feeds, dims)
        ls, rs, os_ = dot.operands[0].shape, dot.operands[1].shape, dot.shape
        out_et = os_.element_type
        acc_ty = compute_type(out_et)
        is_float = _kind(out_et) == "float"
        fn, b, buffers, (lp, rp, op) = open_kernel(module, name, instr, dot, feeds)
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

        units_loop = UnitLoop(fn, b, os_, "k")
        inner, store_bb, idx = units_loop.inner, units_loop.store, units_loop.index
        loff, roff, ooff = c(0), c(0), c(0)
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
        units_loop.close()
        units = os_.num_elements
        return KernelSpec(name, instr, buffers, units=units, cost=float(units * max(k_total, 1)))


    def _emit_rows(self, module: ir.Module, name: str, instr: HloInstruction,
                   dot: HloInstruction, feeds: list[int], dims) -> KernelSpec:
        """One unit per output row (batch index x lhs row): ``out[n] = 0``, then for each
        ``k`` in order ``out[n] += lhs[k] * rhs[k, n]`` -- the same additions, in the same
        order, as the per-element loop, with an inner loop over ``n`` that LLVM vectorizes
        when the rows are contiguous."""
        ls, rs, os_ = dot.operands[0].shape, dot.operands[1].shape, dot.shape
        ty = storage_type(os_.element_type)
        fn, b, buffers, (lp, rp, op) = open_kernel(module, name, instr, dot, feeds)
        lstr, rstr, ostr = element_strides(ls), element_strides(rs), element_strides(os_)
        nb = len(dims.lhs_batch)
        m_size = ls.dims[dims.lhs_free[0]] if dims.lhs_free else 1
        n_size = rs.dims[dims.rhs_free[0]] if dims.rhs_free else 1
        k_size = ls.dims[dims.lhs_contract[0]]
        lsk, rsk = lstr[dims.lhs_contract[0]], rstr[dims.rhs_contract[0]]
        rsn = rstr[dims.rhs_free[0]] if dims.rhs_free else 0
        osn = ostr[os_.rank - 1] if dims.rhs_free else 0
        c = lambda v: ir.Constant(I64, v)     # noqa: E731

        def counted(label: str, count: int, body) -> None:
            counted_loop(fn, b, label, count, body)

        def unit_body(u: ir.Value) -> None:
            rem, loff, roff, ooff = b.add(u, fn.args[1]), c(0), c(0), c(0)
            if dims.lhs_free:
                m = b.urem(rem, c(m_size))
                rem = b.udiv(rem, c(m_size))
                loff = b.mul(m, c(lstr[dims.lhs_free[0]]))
                ooff = b.mul(m, c(ostr[nb]))
            for j in reversed(range(nb)):
                size = ls.dims[dims.lhs_batch[j]]
                bi = b.urem(rem, c(size)) if j else rem
                rem = b.udiv(rem, c(size))
                loff = b.add(loff, b.mul(bi, c(lstr[dims.lhs_batch[j]])))
                roff = b.add(roff, b.mul(bi, c(rstr[dims.rhs_batch[j]])))
                ooff = b.add(ooff, b.mul(bi, c(ostr[j])))
            counted("zero", n_size, lambda n: b.store(
                ir.Constant(ty, 0.0), b.gep(op, [b.add(ooff, b.mul(n, c(osn)))], inbounds=True)))

            def k_body(k: ir.Value) -> None:
                a = b.load(b.gep(lp, [b.add(loff, b.mul(k, c(lsk)))], inbounds=True))
                rk = b.add(roff, b.mul(k, c(rsk)))

                def n_body(n: ir.Value) -> None:
                    optr = b.gep(op, [b.add(ooff, b.mul(n, c(osn)))], inbounds=True)
                    y = b.load(b.gep(rp, [b.add(rk, b.mul(n, c(rsn)))], inbounds=True))
                    b.store(b.fadd(b.load(optr), b.fmul(a, y)), optr)
                counted("n", n_size, n_body)
            counted("k", k_size, k_body)

        units = os_.num_elements // max(n_size, 1)
        unit_range(fn, b, unit_body)
        return KernelSpec(name, instr, buffers, units=units,
                          cost=float(os_.num_elements * max(k_size, 1)))


def _row_eligible(dot: HloInstruction, dims) -> bool:
    """Whether :meth:`DotKernelEmitter._emit_rows` applies: f32/f64 throughout, one
    non-empty contracting dim, at most one free dim per side, a non-empty result."""
    ets = {dot.shape.element_type.name, *(o.shape.element_type.name for o in dot.operands)}
    return (len(ets) == 1 and ets <= {"f32", "f64"} and len(dims.lhs_contract) == 1
            and len(dims.lhs_free) <= 1 and len(dims.rhs_free) <= 1
            and dot.shape.num_elements > 0
            and dot.operands[0].shape.dims[dims.lhs_contract[0]] > 0)


def _width(ty: ir.Type) -> int:
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(ty)]


__all__ = ["DotKernelEmitter", "UnitLoop", "counted_loop", "open_kernel", "unit_range"]
