"""A self-contained ``dot`` kernel for ahead-of-time objects (no BLAS).

The JIT runs dots through ``blas.py`` (a Python routine calling a BLAS library), which an
object file cannot contain. :class:`DotKernelEmitter` emits a plain LLVM kernel with the
CPU backend's kernel contract (``void(i8** buffers, i64 begin, i64 end)``, buffer table
from :func:`~xlapy.backends.cpu.kernel_api.kernel_buffers`) for a ``dot`` or a ``kCustom``
fusion wrapping one on its parameters: for f32/f64 with one contracting dim a
register-blocked kernel (blocks of output rows, :meth:`DotKernelEmitter._emit_rows`),
otherwise one work unit per output element, each a loop over the contracting elements
accumulated in the result's compute type (``float`` for f16/bf16). Any layouts are
handled (strides come from each shape's layout). Operands and result must be all floating
point (f16, bf16, f32, f64) or all integers; anything else is declined, so the caller
reports the dot as unplaceable.
"""
from __future__ import annotations

from math import prod
from typing import Callable

from llvmlite import ir

from ..backends.cpu.blas import dot_dims
from ..backends.cpu.elemental_convert import convert_value
from ..backends.cpu.elemental_data import delinearize
from ..backends.cpu.kernel_api import (KernelSpec, buffer_pointer, declare_kernel,
                                       kernel_buffers)
from ..backends.cpu.kernel_support import c64, carried_loop, element_strides, for_loop
from ..backends.cpu.llvm_types import (compute_type, from_compute, load_element,
                                       storage_type, store_element)
from ..backends.cpu.plan_builder import library_target
from ..hlo import types as T
from ..hlo.ir import HloInstruction
from ..hlo.types import ElementType

_FLOATS = ("f16", "bf16", "f32", "f64")
#: Output rows per unit of the register-blocked kernel, and the f32 lanes of one column
#: strip (f64: half as many; 64 bytes, one AVX-512 register or two AVX2 ones).
ROWS = 4
LANES = 16


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


def units_loop(fn: ir.Function, b: ir.IRBuilder, body: Callable[[ir.Value], None]) -> None:
    """The kernel's body: ``body(u)`` for every unit ``u`` in ``[begin, end)``, then
    return."""
    for_loop(b, fn.args[1], fn.args[2], body, "unit")
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
        acc_et = T.F32 if out_et in (T.F16, T.BF16) else out_et    # acc_ty's element type
        is_float = _kind(out_et) == "float"
        fn, b, buffers, (lp, rp, op) = open_kernel(module, name, instr, dot, feeds)
        lstr, rstr, ostr = element_strides(ls), element_strides(rs), element_strides(os_)
        # per output dim (lhs batch, lhs free, rhs free): the operands' strides (0: the
        # operand does not have that dim)
        out_lstr = [lstr[d] for d in dims.lhs_batch + dims.lhs_free] + [0] * len(dims.rhs_free)
        out_rstr = ([rstr[d] for d in dims.rhs_batch] + [0] * len(dims.lhs_free)
                    + [rstr[d] for d in dims.rhs_free])
        contract = [ls.dims[d] for d in dims.lhs_contract]
        k_total = prod(contract)

        zero = ir.Constant(acc_ty, 0.0 if is_float else 0)

        def unit(u: ir.Value) -> None:
            idx = delinearize(b, u, os_.dims)
            loff, roff, ooff = (strided_offset(b, idx, st) for st in (out_lstr, out_rstr, ostr))

            def step(k: ir.Value, carried: list) -> list:
                krem, kl, kr = k, loff, roff
                for j in reversed(range(len(contract))):
                    part = b.urem(krem, c64(contract[j])) if j else krem
                    krem = b.udiv(krem, c64(contract[j]))
                    kl = b.add(kl, b.mul(part, c64(lstr[dims.lhs_contract[j]])))
                    kr = b.add(kr, b.mul(part, c64(rstr[dims.rhs_contract[j]])))
                x = convert_value(b, load_element(b, b.gep(lp, [kl], inbounds=True),
                                                  ls.element_type), ls.element_type, acc_et)
                y = convert_value(b, load_element(b, b.gep(rp, [kr], inbounds=True),
                                                  rs.element_type), rs.element_type, acc_et)
                acc = carried[0]
                return [b.fadd(acc, b.fmul(x, y)) if is_float else b.add(acc, b.mul(x, y))]
            (total,) = carried_loop(b, 0, k_total, [zero], step, "k")
            value = from_compute(b, total, out_et) if is_float else total
            store_element(b, value, b.gep(op, [ooff], inbounds=True), out_et)
        units_loop(fn, b, unit)
        units = os_.num_elements
        return KernelSpec(name, instr, buffers, units=units, cost=float(units * max(k_total, 1)))


    def _emit_rows(self, module: ir.Module, name: str, instr: HloInstruction,
                   dot: HloInstruction, feeds: list[int], dims) -> KernelSpec:
        """Register-blocked: one unit per block of :data:`ROWS` output rows of one batch
        matrix. A full block computes :data:`LANES`-wide column strips with ``ROWS``
        vector accumulators: ``acc_i = 0``, then for each ``k`` in order ``acc_i +=
        lhs[row_i, k] * rhs[k, strip]`` -- every output element gets the same additions,
        in the same order, as the per-element loop. Columns past the last full strip, a
        short last block and non-contiguous rows take the scalar per-element loop."""
        ls, rs, os_ = dot.operands[0].shape, dot.operands[1].shape, dot.shape
        ty = storage_type(os_.element_type)
        fn, b, buffers, (lp, rp, op) = open_kernel(module, name, instr, dot, feeds)
        lstr, rstr, ostr = element_strides(ls), element_strides(rs), element_strides(os_)
        nb = len(dims.lhs_batch)
        n_size = rs.dims[dims.rhs_free[0]] if dims.rhs_free else 1
        m_size = ls.dims[dims.lhs_free[0]] if dims.lhs_free else 1
        k_size = ls.dims[dims.lhs_contract[0]]
        lsk, rsk = lstr[dims.lhs_contract[0]], rstr[dims.rhs_contract[0]]
        rsn = rstr[dims.rhs_free[0]] if dims.rhs_free else 0
        osn = ostr[os_.rank - 1] if dims.rhs_free else 0
        lsm = lstr[dims.lhs_free[0]] if dims.lhs_free else 0
        osm = ostr[nb] if dims.lhs_free else 0
        lanes = LANES * 4 // ty_bytes(ty)
        strips = n_size // lanes if (rsn == 1 and osn == 1) else 0
        vec = ir.VectorType(ty, lanes)
        blocks = -(-m_size // ROWS)
        batch_dims = os_.dims[:nb]

        def rows_kernel(rows: int, loff: ir.Value, roff: ir.Value, ooff: ir.Value) -> None:
            """``rows`` consecutive output rows starting at these offsets."""
            def strip(s_: ir.Value) -> None:
                n0 = b.mul(s_, c64(lanes))
                zero = ir.Constant(vec, [0.0] * lanes)

                def k_step(k: ir.Value, acc: list) -> list:
                    ptr = b.gep(rp, [b.add(b.add(roff, b.mul(k, c64(rsk))), n0)], inbounds=True)
                    y = b.load(b.bitcast(ptr, vec.as_pointer()), align=ty_bytes(ty))
                    out = []
                    for i in range(rows):
                        a = b.load(b.gep(lp, [b.add(b.add(loff, c64(i * lsm)),
                                                    b.mul(k, c64(lsk)))], inbounds=True))
                        out.append(b.fadd(acc[i], b.fmul(splat(b, a, vec), y)))
                    return out
                acc = carried_loop(b, 0, k_size, [zero] * rows, k_step, "k")
                for i in range(rows):
                    ptr = b.gep(op, [b.add(b.add(ooff, c64(i * osm)), n0)], inbounds=True)
                    b.store(acc[i], b.bitcast(ptr, vec.as_pointer()), align=ty_bytes(ty))
            if strips:
                for_loop(b, 0, strips, strip, "strip")

            def element(i: int, n: ir.Value) -> None:
                def k_step(k: ir.Value, acc: list) -> list:
                    a = b.load(b.gep(lp, [b.add(b.add(loff, c64(i * lsm)), b.mul(k, c64(lsk)))],
                                     inbounds=True))
                    y = b.load(b.gep(rp, [b.add(b.add(roff, b.mul(k, c64(rsk))),
                                                b.mul(n, c64(rsn)))], inbounds=True))
                    return [b.fadd(acc[0], b.fmul(a, y))]
                (total,) = carried_loop(b, 0, k_size, [ir.Constant(ty, 0.0)], k_step, "kt")
                b.store(total, b.gep(op, [b.add(b.add(ooff, c64(i * osm)), b.mul(n, c64(osn)))],
                                     inbounds=True))
            for i in range(rows):
                for_loop(b, strips * lanes, n_size, lambda n, i=i: element(i, n), "tail")

        def unit(u: ir.Value) -> None:
            bi, blk = b.udiv(u, c64(blocks)), b.urem(u, c64(blocks))
            bidx = delinearize(b, bi, batch_dims)
            m0 = b.mul(blk, c64(ROWS))
            loff = b.add(strided_offset(b, bidx, [lstr[d] for d in dims.lhs_batch]),
                         b.mul(m0, c64(lsm)))
            roff = strided_offset(b, bidx, [rstr[d] for d in dims.rhs_batch])
            ooff = b.add(strided_offset(b, bidx, ostr[:nb]), b.mul(m0, c64(osm)))
            if m_size % ROWS == 0:
                rows_kernel(ROWS, loff, roff, ooff)
                return
            full = b.icmp_signed("<=", b.add(m0, c64(ROWS)), c64(m_size))
            with b.if_else(full) as (then, otherwise):
                with then:
                    rows_kernel(ROWS, loff, roff, ooff)
                with otherwise:
                    for_loop(b, m0, m_size, lambda m: rows_kernel(
                        1, b.add(loff, b.mul(b.sub(m, m0), c64(lsm))), roff,
                        b.add(ooff, b.mul(b.sub(m, m0), c64(osm)))), "row")

        units_loop(fn, b, unit)
        return KernelSpec(name, instr, buffers, units=prod(batch_dims) * blocks,
                          cost=float(os_.num_elements * max(k_size, 1)))


def splat(b: ir.IRBuilder, value: ir.Value, vec: ir.VectorType) -> ir.Value:
    """``value`` in every lane of a ``vec``."""
    undef = ir.Constant(vec, ir.Undefined)
    return b.shuffle_vector(b.insert_element(undef, value, c64(0)), undef, ir.Constant(
        ir.VectorType(ir.IntType(32), vec.count), [0] * vec.count))


def ty_bytes(ty: ir.Type) -> int:
    """Bytes of a float or double."""
    return 4 if ty == ir.FloatType() else 8


def strided_offset(b: ir.IRBuilder, index: list[ir.Value], strides: list[int]) -> ir.Value:
    """``sum(index[d] * strides[d])`` over the leading ``len(index)`` dims (the element
    offset of ``index``; zero strides are skipped)."""
    total: ir.Value = c64(0)
    for i, st in zip(index, strides):
        if st:
            total = b.add(total, b.mul(i, c64(st)))
    return total


def f32_or_f64(op: HloInstruction) -> bool:
    """Whether ``op`` and its operands all have one element type, f32 or f64."""
    ets = {op.shape.element_type.name, *(o.shape.element_type.name for o in op.operands)}
    return len(ets) == 1 and ets <= {"f32", "f64"}


def _row_eligible(dot: HloInstruction, dims) -> bool:
    """Whether :meth:`DotKernelEmitter._emit_rows` applies: f32/f64 throughout, one
    non-empty contracting dim, at most one free dim per side, a non-empty result."""
    return (f32_or_f64(dot) and len(dims.lhs_contract) == 1
            and len(dims.lhs_free) <= 1 and len(dims.rhs_free) <= 1
            and dot.shape.num_elements > 0
            and dot.operands[0].shape.dims[dims.lhs_contract[0]] > 0)


__all__ = ["DotKernelEmitter", "f32_or_f64", "open_kernel", "splat", "strided_offset",
           "ty_bytes", "units_loop"]
