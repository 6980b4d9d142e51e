"""Transposes through shared memory on the GPU: XLA's tiled transpose emitter.

A loop kernel is a thread per output element, consecutive threads on consecutive
elements of the output's physical order: its writes are coalesced, but an operand whose
physically minor dimension follows a *different* output dimension (a ``transpose``, a
layout-changing ``copy`` or ``bitcast``, alone or in a loop fusion, e.g. the transposed
gradient of a weight update ``w - lr * transpose(g)``) is read with a large stride, one
memory transaction per element. :class:`TransposeEmitter` takes such kernels instead.

**Detection** (:func:`plan_transpose`): the CPU loop emitter's analysis of the instruction
(its outputs, buffers, in-place operands) and the CPU tiling's dimension maps
(``transpose_emitter.operand_reads``: per operand buffer, which output dimension each of
its dimensions follows, through elementwise ops, transposes, broadcasts, reshapes and
bitcasts). Let ``a`` be the output's physically minor dimension; an operand buffer whose
minor dimension follows another output dimension ``b`` is read *transposed*. The ``b``
with the most bytes of such operands is chosen, and all the operands transposed onto it
are tiled together. Short minor dims are collapsed as XLA normalizes a transpose to
``0-2-1`` form: the tile's ``a`` axis is the output's minor-most dims (``a`` first) and its
``b`` axis the largest transposed operand's minor-most dims (as output dims, ``b`` first),
each grown until it spans a tile side or reaches a dim of the other axis (``[4, 8, 64]``
transposed by ``{2, 0, 1}`` is a ``[32, 64]`` transpose). Both axes must span at least
:data:`MIN_DIM` elements; every other output dimension (the leading batch dims of a
``0-2-1`` transpose...) is one index per block.

**Heroes** (as in XLA and the CPU's tiling, ``transpose_emitter._heroes``): from the
outputs down through elementwise ops, the first values whose computation reads a tiled
operand other than elementwise (the transpose, or the parameter itself when its layout
is the transposed one). The rest of the fusion is elementwise on the heroes.

**Kernel**: a block of ``32 x 8`` threads per ``32 x 32`` tile of the axes ``(a, b)``:

1. read phase: thread ``(x, y)`` computes the heroes at ``b = b0 + x``,
   ``a = a0 + y + 8k`` for ``k < 4`` (consecutive threads on consecutive elements of the
   transposed operands: coalesced) into a shared-memory tile per hero, ``[32][33]`` (the
   padding column puts a tile column in 32 different banks);
2. a barrier;
3. write phase: thread ``(x, y)`` computes the outputs at ``a = a0 + x``,
   ``b = b0 + y + 8k`` with the heroes read from the tiles, the other operands read in
   output order, and stores them (coalesced).

In a full tile a thread computes its four rows before storing them (four independent
loads in flight); edge tiles are clipped (a bounds check per row). Every value is
computed by the same elemental generators as in the loop kernel, so results are
bit-identical to it. The phases are :class:`~xlapy.backends.gpu.simt.KernelFrame`
phases, so the same kernel runs on the grid emulator.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, Callable

from llvmlite import ir

from ...hlo.ir import HloInstruction
from ..cpu.elemental import ElementalEmitter
from ..cpu.elemental_data import delinearize
from ..cpu.kernel_api import Generator
from ..cpu.kernel_support import c64, linear_offset, major_to_minor
from ..cpu.llvm_types import load_element, storage_type, store_element
from ..cpu.loop_emitter import LoopEmitter, fused_generators
from ..cpu.transpose_emitter import _heroes, _minor_first, minor_run, operand_reads
from .kernels import MAX_GRID, GpuKernel, _external_calls
from .simt import WARP, KernelFrame, Target

TILE = WARP             # tile side: a warp reads one tile row, writes one tile column
ROWS = 8                # thread rows of a block (32 x 8 threads, each doing TILE/ROWS rows)
PAD = 1                 # extra tile column against shared-memory bank conflicts
MIN_DIM = 16            # both tiled dims at least this long (else the loop kernel)
MAX_SHARED_BYTES = 40 * 1024    # the heroes' tiles of one block


@dataclass(frozen=True)
class TransposePlan:
    """How a tiled transpose kernel covers its output (module docstring).

    The tile's two axes are dimension *groups*, each listed minor-most first: ``a``, the
    output's physically minor dims (contiguous in the output), and ``b``, the output dims
    the transposed operands' minor dims follow (contiguous in those operands); a group of
    several dims is collapsed into one axis (a ``0-2-1`` transpose after collapsing)."""

    analysis: Any                       # the CPU loop emitter's analysis of the instruction
    dims: tuple[int, ...]
    a: tuple[int, ...]
    b: tuple[int, ...]
    slots: tuple[int, ...]              # the operand buffers read transposed onto ``b``
    heroes: tuple[HloInstruction, ...]
    order: tuple[int, ...]              # output dims, major to minor

    def extent(self, group: tuple[int, ...]) -> int:
        return prod(self.dims[d] for d in group)

    @property
    def others(self) -> list[int]:
        """The output dims outside both groups, major to minor (one index per block)."""
        return [d for d in self.order if d not in self.a and d not in self.b]

    @property
    def blocks(self) -> list[int]:
        """Blocks along the other dims, then the ``b`` tiles, then the ``a`` tiles."""
        return [self.dims[d] for d in self.others] + \
            [-(-self.extent(self.b) // TILE), -(-self.extent(self.a) // TILE)]

    @property
    def grid(self) -> int:
        return prod(self.blocks)

    def transposed(self) -> list[str]:
        """The names of the operands read transposed."""
        return [self.analysis.buffers[s].instruction.name for s in self.slots]

    def describe(self) -> str:
        return (f"tiled transpose: {TILE}x{TILE} tiles of dims {list(self.a)} x "
                f"{list(self.b)} of {list(self.dims)}, {self.grid} blocks, operands "
                f"{self.transposed()} read transposed, shared tiles for "
                f"{[h.name for h in self.heroes]}")


def _tile_bytes(heroes: tuple[HloInstruction, ...]) -> int:
    return sum(TILE * (TILE + PAD) * max(1, h.shape.element_type.byte_size) for h in heroes)


def _groups(dims: tuple[int, ...], out_minor: list[int], src: list[int]
            ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The tile's dimension groups: prefixes of the output's minor-first dims (``a``) and
    of the operand's (``src``, as output dims), disjoint, each grown until it spans a
    tile side or the next dim is the other group's."""
    a, b = [out_minor[0]], [src[0]]
    for d in out_minor[1:]:
        if prod(dims[x] for x in a) >= TILE or d in b:
            break
        a.append(d)
    for d in src[1:]:
        if prod(dims[x] for x in b) >= TILE or d in a:
            break
        b.append(d)
    return tuple(a), tuple(b)


def plan_transpose(analysis: Any) -> TransposePlan | None:
    """The tiled plan for a loop kernel's analysis (``LoopEmitter.analyze``), or None when
    no operand is read transposed or the tiled dims are too short."""
    a = analysis
    if a.in_place_dus:
        return None
    out_shape = a.store_shape(0)
    dims = tuple(out_shape.dims)
    out_minor = _minor_first(out_shape)
    if len(out_minor) < 2:
        return None
    by_dim: dict[int, dict[int, int]] = {}      # b's minor dim -> {slot: bytes}
    srcs: dict[int, list[int]] = {}             # b's minor dim -> the largest slot's dims
    for slot, dim_map in operand_reads(a.instr, a.outputs, a.buffers):
        shape = a.buffers[slot].shape
        src = minor_run(shape, dim_map)
        if not src or src[0] == out_minor[0]:
            continue
        group = by_dim.setdefault(src[0], {})
        if not group or shape.byte_size > max(group.values()):
            srcs[src[0]] = src
        group[slot] = shape.byte_size
    if not by_dim:
        return None
    first = max(by_dim, key=lambda d: sum(by_dim[d].values()))
    ga, gb = _groups(dims, out_minor, srcs[first])
    if prod(dims[d] for d in ga) < MIN_DIM or prod(dims[d] for d in gb) < MIN_DIM:
        return None
    slots = tuple(sorted(by_dim[first]))
    heroes: list[HloInstruction] = []
    for s in slots:
        for h in _heroes(a.instr, a.outputs, a.buffers, s):
            if all(h is not g for g in heroes):
                heroes.append(h)
    if any(h is o for h in heroes for o in a.outputs):
        # a hero outside the elementwise region: the read phase computes the outputs
        heroes = list(a.outputs)
    if _tile_bytes(tuple(heroes)) > MAX_SHARED_BYTES:
        return None
    return TransposePlan(a, dims, ga, gb, slots, tuple(heroes),
                         tuple(major_to_minor(out_shape)))


class TransposeEmitter:
    """GPU kernels for loop kernels that read an operand transposed (module docstring)."""

    kind = "transpose"

    def __init__(self, assignment: Any, target: Target) -> None:
        self.target = target
        self.loop = LoopEmitter(assignment)

    def emit(self, name: str, instr: HloInstruction) -> GpuKernel | None:
        """The tiled kernel for ``instr``, or None when it is not a transposing loop kernel
        (or its elemental code calls a library function)."""
        analysis = self.loop.analyze(instr)
        plan = None if analysis is None else plan_transpose(analysis)
        if plan is None or plan.grid >= MAX_GRID:
            return None
        module = self.target.new_module(name)

        def body(frame: KernelFrame) -> None:
            _Builder(frame, plan).build()
        self.target.kernel(module, name, len(analysis.buffers), TILE * ROWS, body)
        if _external_calls(module):
            return None
        return GpuKernel(name, instr, analysis.buffers, plan.grid, TILE * ROWS, self.kind,
                         module, notes=[plan.describe()])


class _Builder:
    def __init__(self, frame: KernelFrame, plan: TransposePlan) -> None:
        self.f, self.plan, self.b = frame, plan, frame.b
        self.a = plan.analysis
        self.em = ElementalEmitter(self.b, frame.module)
        b, a = self.b, self.a
        self.ptrs = [b.bitcast(p, storage_type(kb.shape.element_type).as_pointer())
                     for p, kb in zip(frame.buffers, a.buffers)]
        for j, k in a.aliases.items():          # an operand in the output's buffer
            self.ptrs[j] = b.bitcast(self.ptrs[k], self.ptrs[j].type)

    def generators(self, given: dict[int, Generator]) -> dict[int, Generator]:
        """Generators of the values the kernel computes; ``given`` fixes some (by id)."""
        return fused_generators(self.a, self.b, self.em, self.ptrs, given)

    def build(self) -> None:
        plan, f, b = self.plan, self.f, self.b
        others = plan.others
        coords = delinearize(b, f.block, plan.blocks)
        start: list[ir.Value] = [c64(0)] * len(plan.dims)
        for d, t in zip(others, coords):
            start[d] = t
        tile0 = {plan.a: b.mul(coords[-1], c64(TILE)), plan.b: b.mul(coords[-2], c64(TILE))}
        types = [h.shape.element_type for h in plan.heroes]
        tiles = [f.shared(storage_type(et), TILE * (TILE + PAD)) for et in types]

        def tile_slot(tile: ir.Value, ia: ir.Value, ib: ir.Value) -> ir.Value:
            return b.gep(tile, [b.add(b.mul(ia, c64(TILE + PAD)), ib)], inbounds=True)

        def place(index: list, group: tuple[int, ...], pos: ir.Value) -> None:
            # a position along a (collapsed) group: its dims' indices
            if len(group) == 1:
                index[group[0]] = pos
                return
            major = list(reversed(group))
            for d, v in zip(major, delinearize(b, pos, [plan.dims[x] for x in major])):
                index[d] = v

        Store = list[tuple[ir.Value, ir.Value, Any]]       # (value, where, element type)

        def each_row(tid: ir.Value, fixed: tuple[int, ...],
                     compute: Callable[[list, ir.Value, ir.Value], Store]) -> None:
            # thread (x, y): group ``fixed`` at x, the other group at y + ROWS * k. In a
            # full tile the rows are computed first and stored after (independent loads
            # in flight together), else each row is checked and stored on its own.
            x, y = b.and_(tid, c64(TILE - 1)), b.lshr(tid, c64(5))
            other = plan.b if fixed == plan.a else plan.a
            at = b.add(tile0[fixed], x)
            in_fixed = b.icmp_unsigned("<", at, c64(plan.extent(fixed)))
            full = b.icmp_unsigned("<=", b.add(tile0[other], c64(TILE)),
                                   c64(plan.extent(other)))

            def row(k: int) -> tuple[list, ir.Value, ir.Value]:
                local = b.add(y, c64(ROWS * k))
                pos = b.add(tile0[other], local)
                index = list(start)
                place(index, fixed, at)
                place(index, other, pos)
                return index, local, pos

            def commit(stores: Store) -> None:
                for value, where, et in stores:
                    store_element(b, value, where, et)
            with b.if_else(b.and_(full, in_fixed)) as (whole, edge):
                with whole:
                    pending = []
                    for k in range(TILE // ROWS):
                        index, local, _ = row(k)
                        pending.append(compute(index, x, local))
                    for stores in pending:
                        commit(stores)
                with edge:
                    for k in range(TILE // ROWS):
                        local = b.add(y, c64(ROWS * k))
                        ok = b.and_(in_fixed, b.icmp_unsigned(
                            "<", b.add(tile0[other], local), c64(plan.extent(other))))
                        with b.if_then(ok):
                            index, local, _ = row(k)
                            commit(compute(index, x, local))

        def read(tid: ir.Value) -> None:
            def one(index: list, x: ir.Value, ia: ir.Value) -> Store:
                gens = self.generators({})
                return [(gens[id(h)](index), tile_slot(tile, ia, x), et)
                        for h, tile, et in zip(plan.heroes, tiles, types)]
            each_row(tid, plan.b, one)
        f.threads(read)
        f.barrier()

        nops = self.a.num_operand_buffers

        def write(tid: ir.Value) -> None:
            def one(index: list, x: ir.Value, ib: ir.Value) -> Store:
                # a hero is only needed at the element being written (it is in the
                # elementwise region of the outputs): its tile slot is this thread's
                def from_tile(tile: ir.Value, et: Any) -> Generator:
                    return lambda idx: load_element(b, tile_slot(tile, x, ib), et)
                gens = self.generators({id(h): from_tile(t, et)
                                        for h, t, et in zip(plan.heroes, tiles, types)})
                out = []
                for k, value in enumerate(self.a.outputs):
                    shape = self.a.store_shape(k)
                    where = b.gep(self.ptrs[nops + k], [linear_offset(b, index, shape)],
                                  inbounds=True)
                    out.append((gens[id(value)](index), where, shape.element_type))
                return out
            each_row(tid, plan.a, one)
        f.threads(write)


__all__ = ["TransposeEmitter", "TransposePlan", "plan_transpose", "TILE", "ROWS"]
