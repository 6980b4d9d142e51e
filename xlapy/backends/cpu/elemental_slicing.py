"""Elemental generators for slicing at runtime starts: dynamic-slice,
dynamic-update-slice and gather.

Start indices come from operand generators (scalar start operands are called with
``[]``), are read as signed or unsigned by their element type, widened to ``i64`` and
clamped to ``[0, dim - size]`` as XLA specifies, so every load stays in bounds.

A slice size of 0 would let a start reach ``dim`` itself; the clamps use ``max(size, 1)``
(:func:`_last_start`), which changes nothing a valid program can observe: a kernel only
reads when its result has elements, and the verifier rejects a gather whose dropped
dimension has slice size 0 while its result has elements (a dynamic-slice with a size-0
dimension has an empty result).
"""
from __future__ import annotations

from llvmlite import ir

from ...hlo.ir import HloInstruction
from .elemental import ElementalEmitter, elemental, operand_type
from .elemental_data import movable, clamp_index, if_else, index_to_i64
from .kernel_api import Generator, IrIndex
from .llvm_types import I1, I64


def _starts_are_ints(instr: HloInstruction, first: int) -> bool:
    starts = instr.operands[first:]
    rank = instr.operands[0].shape.rank
    if len(starts) == 1 and starts[0].shape.rank == 1:          # legacy: one start vector
        ok = starts[0].shape.dims[0] == rank
    else:
        ok = len(starts) == rank and all(s.shape.rank == 0 for s in starts)
    return ok and all(s.shape.element_type.is_integral for s in starts)


def _start_values(em: ElementalEmitter, instr: HloInstruction, gens: list, first: int
                  ) -> list[ir.Value]:
    """The raw start indices as i64 (not clamped)."""
    b = em.builder
    starts = instr.operands[first:]
    out = []
    if len(starts) == 1 and starts[0].shape.rank == 1:
        signed = starts[0].shape.element_type.is_signed_integral
        for k in range(starts[0].shape.dims[0]):
            out.append(index_to_i64(b, gens[first]([em.i64(k)]), signed))
        return out
    for s, gen in zip(starts, gens[first:]):
        out.append(index_to_i64(b, gen([]), s.shape.element_type.is_signed_integral))
    return out


def _last_start(dim: int, size: int) -> int:
    """The largest start whose slice of ``size`` (at least one element) fits in ``dim``."""
    return max(dim - max(size, 1), 0)


def _clamped_starts(em: ElementalEmitter, instr: HloInstruction, gens: list, first: int,
                    sizes) -> list[ir.Value]:
    dims = instr.operands[0].shape.dims
    return [clamp_index(em.builder, s, 0, _last_start(d, n))
            for s, d, n in zip(_start_values(em, instr, gens, first), dims, sizes)]


def _supports_dynamic_slice(instr: HloInstruction) -> bool:
    return movable(instr.shape.element_type) and _starts_are_ints(instr, 1)


@elemental("dynamic-slice", supports=_supports_dynamic_slice)
def _dynamic_slice(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    b = em.builder
    sizes = tuple(instr.attrs.get("dynamic_slice_sizes", instr.shape.dims))

    def element(index: IrIndex) -> ir.Value:
        starts = _clamped_starts(em, instr, gens, 1, sizes)
        return gens[0]([b.add(s, i) for s, i in zip(starts, index)])
    return element


def _supports_dynamic_update_slice(instr: HloInstruction) -> bool:
    return movable(instr.shape.element_type) and _starts_are_ints(instr, 2)


@elemental("dynamic-update-slice", supports=_supports_dynamic_update_slice)
def _dynamic_update_slice(em: ElementalEmitter, instr: HloInstruction, gens: list
                          ) -> Generator:
    """``update[index - start]`` inside the (clamped) update window, else ``operand[index]``."""
    b = em.builder
    update = instr.operands[1].shape
    operand_gen, update_gen = gens[0], gens[1]
    if update.num_elements == 0:
        return operand_gen

    def element(index: IrIndex) -> ir.Value:
        starts = _clamped_starts(em, instr, gens, 2, update.dims)
        inside = ir.Constant(I1, 1)
        local = []
        for i, s, n in zip(index, starts, update.dims):
            d = b.sub(i, s)
            inside = b.and_(inside, b.icmp_unsigned("<", d, ir.Constant(I64, n)))
            local.append(d)
        return if_else(b, inside, lambda: update_gen(local), lambda: operand_gen(index), "dus")
    return element


# ----------------------------------------------------------------------------------------------
# gather

def _ints(instr: HloInstruction, name: str) -> tuple[int, ...]:
    return tuple(instr.attrs.get(name, ()))


def _supports_gather(instr: HloInstruction) -> bool:
    if not movable(instr.shape.element_type) or not operand_type(instr, 1).is_integral:
        return False
    operand = instr.operands[0].shape
    window = [d for d in range(operand.rank) if d not in _ints(instr, "collapsed_slice_dims")
              and d not in _ints(instr, "operand_batching_dims")]
    return (len(_ints(instr, "slice_sizes")) == operand.rank
            and len(window) == len(_ints(instr, "offset_dims")))


@elemental("gather", supports=_supports_gather)
def _gather(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    """Output = batch dims (positions in the index space) and offset dims (the window).

    Each batch position yields a start vector: component ``k`` of its index vector goes
    to operand dim ``start_index_map[k]``, operand batching dims take the position's
    coordinate; starts are clamped so the slice fits, then the window offset is added.
    """
    b = em.builder
    operand, indices = instr.operands[0].shape, instr.operands[1].shape
    offset_dims = _ints(instr, "offset_dims")
    start_index_map = _ints(instr, "start_index_map")
    slice_sizes = _ints(instr, "slice_sizes")
    operand_batching = _ints(instr, "operand_batching_dims")
    indices_batching = _ints(instr, "start_indices_batching_dims")
    ivd = instr.attrs["index_vector_dim"]
    signed = indices.element_type.is_signed_integral
    batch_out = [d for d in range(instr.shape.rank) if d not in offset_dims]
    window = [d for d in range(operand.rank)
              if d not in _ints(instr, "collapsed_slice_dims") and d not in operand_batching]
    operand_gen, indices_gen = gens

    def indices_index(batch: list, k: int) -> list:
        it = iter(batch)
        return [em.i64(k) if a == ivd else next(it) for a in range(indices.rank)]

    def element(index: IrIndex) -> ir.Value:
        batch = [index[d] for d in batch_out]
        starts: list[ir.Value] = [em.i64(0)] * operand.rank
        for k, od in enumerate(start_index_map):
            starts[od] = index_to_i64(b, indices_gen(indices_index(batch, k)), signed)
        for od, idim in zip(operand_batching, indices_batching):
            starts[od] = batch[idim - 1 if idim > ivd else idim]
        src = []
        for d in range(operand.rank):
            s = clamp_index(b, starts[d], 0, _last_start(operand.dims[d], slice_sizes[d]))
            if d in window:
                s = b.add(s, index[offset_dims[window.index(d)]])
            src.append(s)
        return operand_gen(src)
    return element


__all__: list[str] = []
