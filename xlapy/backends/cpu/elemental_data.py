"""Elemental generators for data movement: each maps an output index to an operand index.

Covers broadcast, reshape, bitcast, transpose, slice, concatenate, pad, reverse, iota,
dynamic-slice, dynamic-update-slice, gather and constant. Indices are logical
(row-major order of the logical shape); ``reshape`` relates two shapes through their
row-major linear index, split into groups of dimensions with equal products so only the
dimensions that really change are linearized. ``bitcast`` does the same on the physical
order given by the two layouts.

Every generated index stays inside its operand: XLA clamps dynamic-slice,
dynamic-update-slice and gather starts to ``[0, dim - size]``, and ops that choose
between operands (pad, concatenate, dynamic-update-slice) branch (:func:`if_else`), so
an operand is only asked for elements that exist.
"""
from __future__ import annotations

import weakref
from math import prod
from typing import Callable, Sequence

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import types as T
from ...hlo.ir import HloInstruction
from ...hlo.types import ElementType
from .elemental import ElementalEmitter, elemental, is_native_float
from .elemental_convert import convert_value, from_bits, to_bits
from .kernel_api import Generator, IrIndex
from .llvm_types import (I64, array_bytes_global, call_intrinsic, constant, llvm_type,
                         load_element, storage_type)
from .thunks import major_to_minor


def movable(et: ElementType) -> bool:
    """Element types whose register values data-movement ops can carry."""
    try:
        llvm_type(et)
    except UnimplementedError:
        return False
    return True


def _supports_movement(instr: HloInstruction) -> bool:
    return movable(instr.shape.element_type)


# ----------------------------------------------------------------------------------------------
# index arithmetic

def linearize(b: ir.IRBuilder, index: Sequence[ir.Value], dims: Sequence[int]) -> ir.Value:
    """The row-major linear position of ``index`` in an array of ``dims``."""
    linear = None
    for i, d in zip(index, dims):
        if linear is None:
            linear = i
        elif d == 1:
            continue
        else:
            linear = b.add(b.mul(linear, ir.Constant(I64, d)), i)
    return linear if linear is not None else ir.Constant(I64, 0)


def delinearize(b: ir.IRBuilder, linear: ir.Value, dims: Sequence[int]) -> list[ir.Value]:
    """The multi-index of row-major position ``linear`` in an array of ``dims``."""
    out: list[ir.Value] = [ir.Constant(I64, 0)] * len(dims)
    significant = [k for k, d in enumerate(dims) if d != 1]
    for pos, k in enumerate(reversed(significant)):
        if pos == len(significant) - 1:
            out[k] = linear
        else:
            out[k] = b.urem(linear, ir.Constant(I64, dims[k]))
            linear = b.udiv(linear, ir.Constant(I64, dims[k]))
    return out


def common_factors(a: Sequence[int], c: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """Groups ``(a0, a1, c0, c1)`` covering both dim lists with ``prod(a[a0:a1]) ==
    prod(c[c0:c1])``, as fine as possible (one group if an array is empty)."""
    if 0 in a or 0 in c or prod(a) != prod(c):
        return [(0, len(a), 0, len(c))]
    groups = []
    i0 = j0 = i = j = 0
    pa = pc = 1
    while i < len(a) or j < len(c):
        if (pa <= pc and i < len(a)) or j == len(c):
            pa *= a[i]
            i += 1
        else:
            pc *= c[j]
            j += 1
        if pa == pc:
            groups.append((i0, i, j0, j))
            i0, j0, pa, pc = i, j, 1, 1
    if i0 < len(a) or j0 < len(c):
        groups.append((i0, len(a), j0, len(c)))
    return groups


def reshape_index(b: ir.IRBuilder, out_index: Sequence[ir.Value], out_dims: Sequence[int],
                  in_dims: Sequence[int]) -> list[ir.Value]:
    """The operand index of a row-major reshape from ``in_dims`` to ``out_dims``."""
    in_index: list[ir.Value] = [ir.Constant(I64, 0)] * len(in_dims)
    for a0, a1, c0, c1 in common_factors(in_dims, out_dims):
        if a1 - a0 == 1 and c1 - c0 == 1:
            in_index[a0] = out_index[c0]
            continue
        linear = linearize(b, out_index[c0:c1], out_dims[c0:c1])
        in_index[a0:a1] = delinearize(b, linear, in_dims[a0:a1])
    return in_index


def clamp_index(b: ir.IRBuilder, v: ir.Value, lo: int, hi: int) -> ir.Value:
    """``min(max(v, lo), hi)`` on signed i64."""
    v = call_intrinsic(b, "llvm.smax", [v, ir.Constant(I64, lo)])
    return call_intrinsic(b, "llvm.smin", [v, ir.Constant(I64, hi)])


def index_to_i64(b: ir.IRBuilder, v: ir.Value, signed: bool) -> ir.Value:
    """An integer index value (any width) as i64, extended by its signedness; u64 values of
    2**63 and above saturate to the i64 maximum (they clamp to the top, as XLA compares
    unsigned indices unsigned, instead of wrapping negative)."""
    if v.type.width == 64:
        if signed:
            return v
        wrapped = b.icmp_signed("<", v, ir.Constant(I64, 0))
        return b.select(wrapped, ir.Constant(I64, 2**63 - 1), v)
    return b.sext(v, I64) if signed else b.zext(v, I64)


# ----------------------------------------------------------------------------------------------
# shape-only ops

@elemental("broadcast", supports=_supports_movement)
def _broadcast(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    dims = instr.dimensions
    (gen,) = gens
    return lambda index: gen([index[d] for d in dims])


@elemental("reshape", supports=_supports_movement)
def _reshape(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    out_dims, in_dims = instr.shape.dims, instr.operands[0].shape.dims
    (gen,) = gens
    return lambda index: gen(reshape_index(em.builder, index, out_dims, in_dims))


def _supports_bitcast(instr: HloInstruction) -> bool:
    src, dst = instr.operands[0].shape, instr.shape
    for s in (src, dst):
        if s.layout is not None and (s.layout.extra or
                                     sorted(s.layout.minor_to_major) != list(range(s.rank))):
            return False
    fe, te = src.element_type, dst.element_type
    if fe != te and not (fe.bits == te.bits and not fe.is_complex and not te.is_complex
                         and not fe.is_pred and not te.is_pred):
        return False
    return movable(te) and src.num_elements == dst.num_elements


@elemental("bitcast", supports=_supports_bitcast)
def _bitcast(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    """Physical element order is kept: a reshape between the two layouts' physical orders."""
    b = em.builder
    src, dst = instr.operands[0].shape, instr.shape
    src_order, dst_order = major_to_minor(src), major_to_minor(dst)
    src_phys = [src.dims[d] for d in src_order]
    dst_phys = [dst.dims[d] for d in dst_order]
    (gen,) = gens

    def element(index: IrIndex) -> ir.Value:
        phys = reshape_index(b, [index[d] for d in dst_order], dst_phys, src_phys)
        src_index: list[ir.Value] = [ir.Constant(I64, 0)] * src.rank
        for k, d in enumerate(src_order):
            src_index[d] = phys[k]
        v = gen(src_index)
        if src.element_type != dst.element_type:
            v = from_bits(b, to_bits(b, v, src.element_type), dst.element_type)
        return v
    return element


@elemental("transpose", supports=_supports_movement)
def _transpose(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    perm = instr.dimensions
    (gen,) = gens

    def element(index: IrIndex) -> ir.Value:
        src: list[ir.Value] = [None] * len(perm)      # type: ignore[list-item]
        for i, p in enumerate(perm):
            src[p] = index[i]
        return gen(src)
    return element


@elemental("reverse", supports=_supports_movement)
def _reverse(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    b, dims = em.builder, set(instr.dimensions)
    sizes = instr.shape.dims
    (gen,) = gens
    return lambda index: gen([b.sub(ir.Constant(I64, sizes[d] - 1), i) if d in dims else i
                              for d, i in enumerate(index)])


@elemental("slice", supports=_supports_movement)
def _slice(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    b = em.builder
    spec = instr.attrs["slice"]
    (gen,) = gens

    def element(index: IrIndex) -> ir.Value:
        src = []
        for i, (start, _limit, stride) in zip(index, spec):
            stride = stride or 1
            v = i if stride == 1 else b.mul(i, ir.Constant(I64, stride))
            src.append(v if start == 0 else b.add(v, ir.Constant(I64, start)))
        return gen(src)
    return element


# ----------------------------------------------------------------------------------------------
# concatenate, pad

def if_else(b: ir.IRBuilder, cond: ir.Value, then: Callable[[], ir.Value],
            otherwise: Callable[[], ir.Value], name: str) -> ir.Value:
    """``cond ? then() : otherwise()`` with each side emitted in its own block.

    Branches rather than a select keep every load's address affine in the loop index,
    so LLVM can still check aliasing at runtime and vectorize with masked loads; the
    side not taken is never evaluated (its indices need not be valid).
    """
    fn = b.function
    then_block = fn.append_basic_block(f"{name}.then")
    else_block = fn.append_basic_block(f"{name}.else")
    done = fn.append_basic_block(f"{name}.done")
    b.cbranch(cond, then_block, else_block)
    b.position_at_end(then_block)
    a = then()
    a_end = b.block
    b.branch(done)
    b.position_at_end(else_block)
    c = otherwise()
    c_end = b.block
    b.branch(done)
    b.position_at_end(done)
    phi = b.phi(a.type)
    phi.add_incoming(a, a_end)
    phi.add_incoming(c, c_end)
    return phi


@elemental("concatenate", supports=_supports_movement)
def _concatenate(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    """Operand ``k`` covers ``[offset_k, offset_k + size_k)`` of the concatenated dim."""
    b = em.builder
    (dim,) = instr.dimensions
    parts, offset = [], 0
    for op, gen in zip(instr.operands, gens):
        size = op.shape.dims[dim]
        if op.shape.num_elements > 0:
            parts.append((gen, offset, size))
        offset += size

    def part(index: IrIndex, k: int) -> ir.Value:
        gen, off, size = parts[k]
        if k == len(parts) - 1:
            return load_part(index, gen, off)
        inside = b.icmp_signed("<", index[dim], ir.Constant(I64, off + size))
        return if_else(b, inside, lambda: load_part(index, gen, off),
                       lambda: part(index, k + 1), "concat")

    def load_part(index: IrIndex, gen: Generator, off: int) -> ir.Value:
        local = b.sub(index[dim], ir.Constant(I64, off)) if off else index[dim]
        return gen(list(index[:dim]) + [local] + list(index[dim + 1:]))

    return lambda index: part(index, 0)


@elemental("pad", supports=_supports_movement)
def _pad(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    """Output position ``lo + k * (interior + 1)`` holds operand element ``k``; the rest is
    the padding value (negative ``lo``/``hi`` crop)."""
    b = em.builder
    operand = instr.operands[0].shape
    config = instr.attrs["padding"]
    gen, pad_gen = gens
    if operand.num_elements == 0:
        return lambda index: pad_gen([])

    def element(index: IrIndex) -> ir.Value:
        inside = ir.Constant(ir.IntType(1), 1)
        src = []
        for i, n, (lo, _hi, interior) in zip(index, operand.dims, config):
            t = b.sub(i, ir.Constant(I64, lo)) if lo else i
            step = interior + 1
            q = t if step == 1 else b.sdiv(t, ir.Constant(I64, step))
            ok = b.and_(b.icmp_signed(">=", t, ir.Constant(I64, 0)),
                        b.icmp_signed("<", q, ir.Constant(I64, n)))
            if step != 1:
                on_grid = b.icmp_signed("==", b.srem(t, ir.Constant(I64, step)),
                                        ir.Constant(I64, 0))
                ok = b.and_(ok, on_grid)
            inside = b.and_(inside, ok)
            src.append(q)
        return if_else(b, inside, lambda: gen(src), lambda: pad_gen([]), "pad")
    return element


# ----------------------------------------------------------------------------------------------
# iota, constants

def _supports_iota(instr: HloInstruction) -> bool:
    et = instr.shape.element_type
    return et.is_pred or et.is_integral or is_native_float(et) or et.is_complex


@elemental("iota", supports=_supports_iota)
def _iota(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    axis = instr.attrs["iota_dimension"]
    et = instr.shape.element_type
    return lambda index: convert_value(em.builder, index[axis], T.S64, et)


_CONSTANT_GLOBALS: "weakref.WeakKeyDictionary[ir.Module, dict]" = weakref.WeakKeyDictionary()


def _constant_global(em: ElementalEmitter, instr: HloInstruction) -> ir.Value:
    """The module's global holding ``instr``'s literal, created once per module."""
    cache = _CONSTANT_GLOBALS.setdefault(em.module, {})
    g = cache.get(instr)
    if g is None:
        g = array_bytes_global(em.module, f"constant.{instr.name}", instr.literal,
                               instr.shape.element_type)
        cache[instr] = g
    return g


def _supports_constant(instr: HloInstruction) -> bool:
    return movable(instr.shape.element_type) and not isinstance(instr.literal, tuple)


@elemental("constant", supports=_supports_constant)
def _constant(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    """Scalars (and one-element arrays) are immediates; arrays load from a global."""
    b, shape = em.builder, instr.shape
    et = shape.element_type
    if shape.num_elements == 1:
        value = constant(et, instr.literal.reshape(()) if hasattr(instr.literal, "reshape")
                         else instr.literal)
        return lambda index: value
    g = _constant_global(em, instr)

    def element(index: IrIndex) -> ir.Value:
        base = b.bitcast(g, storage_type(et).as_pointer())
        ptr = b.gep(base, [linearize(b, index, shape.dims)], inbounds=True)
        return load_element(b, ptr, et)
    return element


from . import elemental_slicing  # noqa: E402,F401  (dynamic slices and gather)

__all__ = ["movable", "linearize", "delinearize", "common_factors", "reshape_index",
           "clamp_index", "if_else", "index_to_i64"]
