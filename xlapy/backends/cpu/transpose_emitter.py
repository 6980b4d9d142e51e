"""Tiled loop nests for loop kernels that transpose: XLA's "transpose emitter" on the CPU.

A loop kernel walks its output in the output's physical order, minor-most dimension
innermost. When the kernel reads a large operand whose physical minor-most dimension
maps to a *different* output dimension (a ``transpose`` or a layout-changing ``copy``,
alone or inside a loop fusion), every inner-loop step reads that operand with a large
stride: one element per cache line, one page per element for wide arrays.

:func:`plan_tiling` finds such a **transposed read**: it follows each output back through
the fused computation to the operand buffers, composing how each value's dimensions map
to output dimensions (elementwise ops keep them, ``transpose`` permutes them,
``broadcast`` drops some, ``reshape``/``bitcast`` keep the dimensions a reshape keeps). For
the largest operand whose physical minor dimension ``b`` is not the output's minor
dimension ``a``, it chooses a **tile**: a box of the output index space covering about
:data:`TILE_ELEMENTS` contiguous output elements (the output's minor dimensions, ``a``
first) times about as many contiguous operand elements (the operand's minor dimensions,
``b`` first), e.g. 64x64 for a 2-D f32 transpose. As in XLA, the **heroes** are the values
whose computation reads that operand transposed: from the outputs down through
elementwise ops, the first transpose (or the parameter itself when its layout is the
transposed one); the rest of the fusion is elementwise on the heroes' results.

:func:`emit_tiled_nest` emits one work unit per tile:

1. **read phase**: a loop nest over the tile in the *operand's* physical order (operand
   minor innermost) computes each hero element with the elemental generators (so the
   large operand is read contiguously) and stores it into a stack buffer per hero;
2. **block phase** (element types of 1-8 bytes): the tile buffer is transposed into a
   second one laid out in the output's order, in blocks of :data:`BLOCK` x :data:`BLOCK`
   elements held in vector registers (rows loaded along the operand's minor dimension,
   shuffled into columns, stored along the output's). Without it the write phase reads
   the tile buffer with a stride, which LLVM vectorises as gathers;
3. **write phase**: a loop nest over the tile in the *output's* physical order computes
   the outputs, the heroes' generators replaced by loads from their tile buffers, and
   stores them with unit stride (other operands are read in output order here).

Every element is computed by the same generators as in the untiled nest (the heroes are
only needed at the output index being computed, as elementwise ops connect them to the
outputs), so values are bit-identical; only the order of the work changes. When a hero
would be needed elsewhere too, the heroes are the outputs themselves (the write phase
copies). Edge tiles are clipped to the array. Units are independent, so the runtime
splits them across threads as for any loop kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, Callable, Sequence

from llvmlite import ir

from ...hlo.ir import HloComputation, HloInstruction
from ...hlo.opcodes import ELEMENTWISE
from ...hlo.shape import Shape
from .elemental_data import common_factors, delinearize
from .kernel_api import Generator, KernelBuffer, memoize, operand_slots
from .kernel_support import c64, for_loop, linear_offset, major_to_minor, unrolled_from
from .llvm_types import load_element, storage_type, store_element

# A kernel is tiled only when its output has at least this many elements (smaller
# transposes stay in cache, where the untiled nest is as fast).
MIN_TILED_ELEMENTS = 1 << 14

# Elements per side of a tile (the output-contiguous and the operand-contiguous run):
# TILE_ELEMENTS, but at least TILE_MIN_BYTES and at most TILE_MAX_BYTES per run: the best
# sizes on 2-D and 4-D transposes of 3-64 MB (f32 64x64, s8 128x128; wider tiles lose once
# the buffer leaves L1; the measurements: docs/performance.md).
TILE_ELEMENTS = 64
TILE_MIN_BYTES = 128
TILE_MAX_BYTES = 512

# Stack space for the tile buffers of one kernel (one buffer per hero); a kernel whose
# buffers would need more stays untiled.
MAX_TILE_BUFFER_BYTES = 128 * 1024

# Rows and columns of the blocks the block phase transposes in registers; the tile
# buffers' extents along the two transposed dimensions are rounded up to a multiple of it
# (an edge tile's block phase moves a few unused elements).
BLOCK = 8

# Innermost tile loops over a constant trip count this small are unrolled in the IR
# (``kernel_support.unrolled_from``).
UNROLL_LIMIT = 4

# Data-movement ops whose array operands are read along the result's dimensions: the
# operand index is the result index shifted, strided or reversed dimension by dimension.
_SAME_RANK = frozenset({"slice", "pad", "reverse", "concatenate", "dynamic-slice",
                        "dynamic-update-slice"})

# One operand read: (buffer slot, per operand dimension the output dimension it follows).
DimMap = tuple  # tuple[int | None, ...]


def _pad(n: int) -> int:
    """``n`` rounded up to a multiple of :data:`BLOCK`."""
    return -(-n // BLOCK) * BLOCK


@dataclass(frozen=True)
class TilePlan:
    """How a tiled loop kernel walks its output (see the module docstring).

    ``tile[d]`` is the tile extent along output dimension ``d`` (1: one index per unit);
    ``read_order``/``write_order`` are the tiled dimensions (extent > 1) from outermost
    to innermost loop of the read and the write phase; ``hero_slot`` is the buffer slot
    of the operand whose reads the tiling makes contiguous; ``heroes`` are the values
    the read phase computes into tile buffers (see :func:`_heroes`).
    """

    dims: tuple[int, ...]
    tile: tuple[int, ...]
    read_order: tuple[int, ...]
    write_order: tuple[int, ...]
    hero_slot: int
    heroes: tuple[HloInstruction, ...]
    out_order: tuple[int, ...]          # the output's dimensions, major to minor

    @property
    def grid(self) -> tuple[int, ...]:
        """Tiles along each output dimension."""
        return tuple(-(-n // t) for n, t in zip(self.dims, self.tile))

    @property
    def units(self) -> int:
        return prod(self.grid)

    @property
    def tile_elements(self) -> int:
        return prod(self.tile)

    @property
    def block_dims(self) -> tuple[int, int] | None:
        """(output-minor dim, operand-minor dim) when the block phase runs: element
        types of 1-8 bytes, both tile buffers within :data:`MAX_TILE_BUFFER_BYTES`, and
        both dims' tile extents at least 3/4 of their padded extents (a 3-wide minor dim
        would move 8-wide blocks: the gathers were faster there)."""
        out_minor, in_minor = self.write_order[-1], self.read_order[-1]
        types = [h.shape.element_type for h in self.heroes]
        if any(4 * self.tile[d] < 3 * _pad(self.tile[d]) for d in (out_minor, in_minor)):
            return None
        if out_minor == in_minor or not all(
                isinstance(storage_type(et), (ir.IntType, ir.HalfType, ir.FloatType,
                                              ir.DoubleType)) for et in types):
            return None
        padded = prod(self.buffer_extents((out_minor, in_minor)).values())
        if 2 * padded * sum(et.byte_size for et in types) > MAX_TILE_BUFFER_BYTES:
            return None
        return out_minor, in_minor

    def buffer_extents(self, blocked: tuple[int, int] | None) -> dict[int, int]:
        """A tile buffer's extent along each tiled dim: the tile's, rounded up to a
        multiple of :data:`BLOCK` along the ``blocked`` dims."""
        return {d: _pad(self.tile[d]) if blocked and d in blocked else self.tile[d]
                for d in self.read_order}

    def describe(self) -> str:
        sizes = "x".join(str(self.tile[d]) for d in self.write_order)
        blocks = f", {BLOCK}x{BLOCK} register blocks" if self.block_dims else ""
        return f"tiled transpose: {sizes} tiles of dims {list(self.write_order)}, " \
               f"{self.units} units, tile buffers for {[h.name for h in self.heroes]}{blocks}"


# ----------------------------------------------------------------------------- analysis
def _operand_maps(instr: HloInstruction, dim_map: DimMap) -> list[tuple[int, DimMap]]:
    """For each operand of ``instr`` whose dimensions relate to ``instr``'s: (operand
    number, the output dimension each operand dimension follows, or None)."""
    op = instr.opcode
    out: list[tuple[int, DimMap]] = []
    if op == "transpose":
        perm = instr.attrs["dimensions"]
        opmap: list = [None] * len(perm)
        for k, p in enumerate(perm):      # result dim k is operand dim perm[k]
            opmap[p] = dim_map[k]
        out.append((0, tuple(opmap)))
    elif op == "broadcast":
        out.append((0, tuple(dim_map[d] for d in instr.attrs["dimensions"])))
    elif op in ("reshape", "bitcast"):
        # a reshape of the row-major orders (bitcast: of the physical orders); in each
        # group of dims it keeps together, the minor-most dims move together
        src, dst = instr.operands[0].shape, instr.shape
        src_order = major_to_minor(src) if op == "bitcast" else list(range(src.rank))
        dst_order = major_to_minor(dst) if op == "bitcast" else list(range(dst.rank))
        opmap = [None] * src.rank
        for a0, a1, c0, c1 in common_factors([src.dims[d] for d in src_order],
                                             [dst.dims[d] for d in dst_order]):
            a = [src_order[k] for k in range(a0, a1) if src.dims[src_order[k]] > 1]
            c = [dst_order[k] for k in range(c0, c1) if dst.dims[dst_order[k]] > 1]
            if a and c:
                opmap[a[-1]] = dim_map[c[-1]]
        out.append((0, tuple(opmap)))
    elif op in ELEMENTWISE:
        out.extend((n, dim_map) for n, o in enumerate(instr.operands)
                   if o.shape.is_array and tuple(o.shape.dims) == tuple(instr.shape.dims))
    elif op in _SAME_RANK:
        # index operands are scalars; the array operands are indexed along the same dims
        out.extend((n, dim_map) for n, o in enumerate(instr.operands)
                   if o.shape.is_array and o.shape.rank == instr.shape.rank)
    return out


def _leaf_slot(value: HloInstruction, slot: dict) -> int | None:
    """The buffer slot a fused ``parameter`` (or ``get-tuple-element`` chain of one) reads."""
    path: list[int] = []
    base = value
    while base.opcode == "get-tuple-element":
        path.insert(0, base.attrs["index"])
        base = base.operands[0]
    if base.opcode != "parameter":
        return None
    return slot.get((base.parameter_number, tuple(path)))


def operand_reads(instr: HloInstruction, outputs: Sequence[HloInstruction],
                  buffers: Sequence[KernelBuffer]) -> list[tuple[int, DimMap]]:
    """(buffer slot, dimension map) of every operand-buffer read the kernel for ``instr``
    does that depends on output indices; the map gives, per dimension of the buffer's
    array, the output dimension whose index it follows (None: not one)."""
    slot = operand_slots(buffers)
    fused = instr.opcode == "fusion"
    seen: set[tuple[int, DimMap]] = set()
    reads: list[tuple[int, DimMap]] = []
    work = [(o, tuple(range(o.shape.rank))) for o in outputs]
    while work:
        value, dim_map = work.pop()
        key = (id(value), dim_map)
        if key in seen:
            continue
        seen.add(key)
        if not fused:                     # a plain instruction: its operands are buffers
            for n, opmap in _operand_maps(value, dim_map):
                if (n, ()) in slot:
                    reads.append((slot[(n, ())], opmap))
            continue
        if value.opcode in ("parameter", "get-tuple-element"):
            s = _leaf_slot(value, slot)
            if s is not None:
                reads.append((s, dim_map))
            continue
        for n, opmap in _operand_maps(value, dim_map):
            if any(d is not None for d in opmap):
                work.append((value.operands[n], opmap))
    return reads


def _minor_first(shape: Shape) -> list[int]:
    """The dimensions of extent > 1 from the physically minor-most one outward."""
    return [d for d in reversed(major_to_minor(shape)) if shape.dims[d] > 1]


def minor_run(shape: Shape, dim_map: DimMap) -> list[int]:
    """The output dims that ``shape``'s dims follow (``dim_map``, from
    :func:`operand_reads`), from its physically minor-most dim outward, up to the first
    dim that follows none."""
    src: list[int] = []
    for d in _minor_first(shape):
        if dim_map[d] is None:
            break
        if dim_map[d] not in src:
            src.append(dim_map[d])
    return src


def _run_length(element_bytes: int) -> int:
    """Elements per contiguous run of a tile for elements of ``element_bytes``."""
    size = max(element_bytes, 1)
    return max(1, min(max(TILE_ELEMENTS, TILE_MIN_BYTES // size), TILE_MAX_BYTES // size))


def _grow(tile: list[int], dims: Sequence[int], order: Sequence[int], budget: int) -> None:
    """Extend ``tile`` along ``order`` (dims, minor-most first) until it covers a
    contiguous run of ``budget`` elements or a dimension is only partly inside it (whole
    dimensions, else a power of two)."""
    for d in order:
        if budget <= 1:
            return
        want = dims[d] if dims[d] <= budget else 1 << (budget.bit_length() - 1)
        tile[d] = max(tile[d], want)
        if tile[d] < dims[d]:
            return
        budget //= tile[d]


def _elementwise_region(comp: HloComputation, outputs: Sequence[HloInstruction],
                        dims: tuple[int, ...]) -> set[int]:
    """Ids of the fused values that only reach the outputs through elementwise ops on
    the output's dimensions: such a value is only ever needed at the index of the output
    element being computed."""
    out_ids = {id(o) for o in outputs}
    sinks: set[int] = set()                 # the root tuple and looked-through bitcasts
    root = comp.root
    for leaf in (root.operands if root.opcode == "tuple" else [root]):
        while id(leaf) not in out_ids:
            sinks.add(id(leaf))
            leaf = leaf.operands[0]
    if root.opcode == "tuple":
        sinks.add(id(root))
    region: set[int] = set()
    for v in reversed(comp.post_order()):  # users first
        if not v.shape.is_array or tuple(v.shape.dims) != dims:
            continue
        if not v.users and id(v) not in out_ids:
            continue
        if all((id(u) in sinks and id(v) in out_ids) or
               (id(u) in region and u.opcode in ELEMENTWISE) for u in v.users):
            region.add(id(v))
    return region


def _heroes(instr: HloInstruction, outputs: Sequence[HloInstruction],
            buffers: Sequence[KernelBuffer], hero_slot: int) -> tuple[HloInstruction, ...]:
    """The values the read phase computes into tile buffers: from the outputs down
    through elementwise ops, the first values whose computation reads the hero buffer
    other than elementwise (a transpose, or the parameter itself when its layout is the
    transposed one). Everything else is computed in the write phase, in output order."""
    dims = tuple(outputs[0].shape.dims)
    if instr.opcode != "fusion":
        operand = instr.operands[buffers[hero_slot].operand]
        if instr.opcode in ELEMENTWISE and tuple(operand.shape.dims) == dims:
            return (operand,)
        return (instr,)
    comp = instr.attrs["calls"]
    slot = operand_slots(buffers)
    hot: dict[int, bool] = {}               # the value's computation reads the hero buffer
    for v in comp.post_order():
        if v.opcode in ("parameter", "get-tuple-element"):
            hot[id(v)] = _leaf_slot(v, slot) == hero_slot
        else:
            hot[id(v)] = any(hot[id(o)] for o in v.operands)
    region = _elementwise_region(comp, outputs, dims)
    heroes: list[HloInstruction] = []
    seen: set[int] = set()
    work = [o for o in outputs if hot[id(o)]]
    while work:
        v = work.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        hot_operands = [o for o in v.operands if hot[id(o)]]
        if hot_operands and v.opcode in ELEMENTWISE and \
                all(id(o) in region for o in hot_operands):
            work.extend(hot_operands)
        else:
            heroes.append(v)
    if all(id(h) in region for h in heroes):
        return tuple(heroes)
    return tuple(outputs)       # every output computed in the read phase, copied out


def plan_tiling(instr: HloInstruction, outputs: Sequence[HloInstruction],
                buffers: Sequence[KernelBuffer], out_shape: Shape) -> TilePlan | None:
    """A tiling for the kernel of ``instr`` writing ``outputs`` (the first stored in
    ``out_shape``'s layout), or None when no large operand is read transposed."""
    dims = tuple(out_shape.dims)
    if out_shape.rank < 2 or prod(dims) < MIN_TILED_ELEMENTS:
        return None
    out_order = _minor_first(out_shape)
    if len(out_order) < 2:
        return None
    best: tuple[int, int, list[int]] | None = None
    for slot, dim_map in operand_reads(instr, outputs, buffers):
        shape = buffers[slot].shape
        src = minor_run(shape, dim_map)
        if not src or src[0] == out_order[0] or shape.num_elements < MIN_TILED_ELEMENTS:
            continue
        if best is None or shape.byte_size > best[0]:
            best = (shape.byte_size, slot, src)
    if best is None:
        return None
    _, hero_slot, src = best
    run = _run_length(out_shape.element_type.byte_size)
    tile = [1] * len(dims)
    _grow(tile, dims, out_order, run)
    _grow(tile, dims, src, _run_length(buffers[hero_slot].shape.element_type.byte_size))
    write_order = tuple(d for d in reversed(out_order) if tile[d] > 1)
    read_inner = [d for d in reversed(src) if tile[d] > 1]
    read_order = tuple([d for d in write_order if d not in read_inner] + read_inner)
    heroes = _heroes(instr, outputs, buffers, hero_slot)
    if prod(tile) * sum(h.shape.element_type.byte_size for h in heroes) > MAX_TILE_BUFFER_BYTES:
        return None
    return TilePlan(dims, tuple(tile), read_order, write_order, hero_slot, heroes,
                    tuple(major_to_minor(out_shape)))


# ----------------------------------------------------------------------------- emission
@dataclass
class TiledStore:
    """One output of a tiled kernel: its element generator, pointer and stored shape."""

    gen: Generator
    ptr: ir.Value
    shape: Shape


def _box_loops(b: ir.IRBuilder, order: Sequence[int], extent: dict[int, ir.Value | int],
               body: Callable[[dict[int, ir.Value]], None], name: str) -> None:
    """Nested loops over ``[0, extent[d])`` for ``d`` in ``order`` (outermost first);
    ``body`` gets the loop variables by dimension. The innermost loops over small
    constant extents are unrolled (:func:`~.kernel_support.unrolled_from`)."""
    ivs: dict[int, ir.Value] = {}
    unroll = unrolled_from([extent[d] for d in order], UNROLL_LIMIT)

    def level(k: int) -> None:
        if k == len(order):
            body(dict(ivs))
            return
        d = order[k]

        def step(iv: ir.Value) -> None:
            ivs[d] = iv
            level(k + 1)
        n = extent[d]
        if k >= unroll:
            for t in range(n):
                step(c64(t))
        else:
            for_loop(b, c64(0), n if isinstance(n, ir.Value) else c64(n), step, f"{name}{d}")
    level(0)


def _strides(order: Sequence[int], extent: dict[int, int]) -> dict[int, int]:
    """Row-major element strides of a tile buffer over ``order`` (outermost first)."""
    strides: dict[int, int] = {}
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= extent[d]
    return strides


def _transpose_block(b: ir.IRBuilder, rows: list[ir.Value]) -> list[ir.Value]:
    """The columns of the :data:`BLOCK` x :data:`BLOCK` block whose rows are ``rows``
    (vectors): three rounds of two-input shuffles, interleaving single elements, pairs,
    then halves."""
    def shuffle(x: ir.Value, y: ir.Value, mask: list[int]) -> ir.Value:
        return b.shuffle_vector(x, y, ir.Constant(ir.VectorType(ir.IntType(32), BLOCK), mask))
    lo1, hi1 = [0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15]
    lo2, hi2 = [0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]
    lo4, hi4 = [0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]
    t: list[ir.Value] = []
    for k in range(0, BLOCK, 2):
        t += [shuffle(rows[k], rows[k + 1], lo1), shuffle(rows[k], rows[k + 1], hi1)]
    # t[2m] holds columns 0,1,4,5 of rows 2m, 2m+1 interleaved; t[2m+1] columns 2,3,6,7
    s: list[ir.Value] = []
    for k in (0, 4):
        s += [shuffle(t[k], t[k + 2], lo2), shuffle(t[k], t[k + 2], hi2),
              shuffle(t[k + 1], t[k + 3], lo2), shuffle(t[k + 1], t[k + 3], hi2)]
    # s[4h + c] holds column c (first half) and column c + 4 (second half) of rows 4h..4h+3
    cols: list[ir.Value] = [None] * BLOCK  # type: ignore[list-item]
    for c in range(4):
        cols[c] = shuffle(s[c], s[4 + c], lo4)
        cols[c + 4] = shuffle(s[c], s[4 + c], hi4)
    return cols


def _emit_block_phase(b: ir.IRBuilder, plan: TilePlan, dims: tuple[int, int],
                      extent: dict[int, int], src: ir.Value, src_strides: dict[int, int],
                      dst: ir.Value, dst_strides: dict[int, int], et: Any) -> None:
    """Copy tile buffer ``src`` (operand-minor dim contiguous) into ``dst`` (output-minor
    dim contiguous), :data:`BLOCK` x :data:`BLOCK` blocks at a time."""
    out_minor, in_minor = dims
    vec = ir.VectorType(storage_type(et), BLOCK)
    align = min(64, BLOCK * et.byte_size)
    others = [d for d in plan.read_order if d not in dims]
    blocks = {d: extent[d] // BLOCK if d in dims else extent[d] for d in plan.read_order}

    def at(buf: ir.Value, ivs: dict[int, ir.Value], strides: dict[int, int],
           line: int, moved: int) -> ir.Value:
        pos: ir.Value = c64(line * strides[moved])
        for d, iv in ivs.items():
            scale = strides[d] * (BLOCK if d in dims else 1)
            pos = b.add(pos, b.mul(iv, c64(scale), flags=["nsw"]), flags=["nsw"])
        ptr = b.gep(buf, [c64(0), pos], inbounds=True)
        return b.bitcast(ptr, vec.as_pointer())

    def body(ivs: dict[int, ir.Value]) -> None:
        rows = [b.load(at(src, ivs, src_strides, i, out_minor), align=align)
                for i in range(BLOCK)]
        for j, col in enumerate(_transpose_block(b, rows)):
            b.store(col, at(dst, ivs, dst_strides, j, in_minor), align=align)

    _box_loops(b, others + [out_minor, in_minor], blocks, body, "t")


def emit_tiled_nest(b: ir.IRBuilder, fn: ir.Function, plan: TilePlan,
                    heroes: Sequence[Generator],
                    outputs_with: Callable[[list[Generator]], Sequence[TiledStore]]) -> None:
    """Emit the unit loop of a tiled kernel (the builder is in the entry block).

    ``heroes`` are the generators of ``plan.heroes``; ``outputs_with(loads)`` gives the
    outputs' stores when each hero is replaced by the generator in ``loads`` (which reads
    the tile buffer; valid at indices inside the current tile only)."""
    rank = len(plan.dims)
    types = [h.shape.element_type for h in plan.heroes]
    blocked = plan.block_dims
    # each tile buffer is row-major over the tiled dims in read order: the read phase
    # stores to it contiguously; with the block phase a second buffer per hero is
    # row-major in write order, which the write phase reads contiguously (else it
    # gathers from the first; in L1 either way)
    extent_of = plan.buffer_extents(blocked)
    buffer_elements = prod(extent_of.values())

    def alloc(name: str) -> list[ir.Value]:
        bufs = [b.alloca(ir.ArrayType(storage_type(et), buffer_elements), name=f"{name}{k}")
                for k, et in enumerate(types)]
        for buf in bufs:
            buf.align = 64
        return bufs
    buffers = alloc("tile")
    read_strides = _strides(plan.read_order, extent_of)
    if blocked:
        columns = alloc("cols")
        write_strides = _strides(plan.write_order, extent_of)
    else:
        columns, write_strides = buffers, read_strides
    grid = plan.grid
    grid_order = [d for d in plan.out_order if grid[d] > 1]

    def unit(u: ir.Value) -> None:
        coords = delinearize(b, u, [grid[d] for d in grid_order]) if grid_order else []
        start: list[ir.Value] = [c64(0)] * rank
        for d, t in zip(grid_order, coords):
            start[d] = t if plan.tile[d] == 1 else b.mul(t, c64(plan.tile[d]), flags=["nsw"])
        extent: dict[int, ir.Value | int] = {}
        for d in plan.read_order:
            size = plan.tile[d]
            if grid[d] > 1 and plan.dims[d] % size:       # an edge tile is clipped
                rest = b.sub(c64(plan.dims[d]), start[d])
                extent[d] = b.select(b.icmp_signed("<", rest, c64(size)), rest, c64(size))
            else:
                extent[d] = size

        def index_of(ivs: dict[int, ir.Value]) -> list[ir.Value]:
            index = list(start)
            for d, iv in ivs.items():
                index[d] = iv if grid[d] == 1 else b.add(start[d], iv, flags=["nsw"])
            return index

        def slot(buf: ir.Value, index: list, strides: dict[int, int]) -> ir.Value:
            pos = None
            for d in plan.read_order:
                iv = index[d] if grid[d] == 1 else b.sub(index[d], start[d], flags=["nsw"])
                term = iv if strides[d] == 1 else b.mul(iv, c64(strides[d]), flags=["nsw"])
                pos = term if pos is None else b.add(pos, term, flags=["nsw"])
            return b.gep(buf, [c64(0), pos if pos is not None else c64(0)], inbounds=True)

        def read(ivs: dict[int, ir.Value]) -> None:
            index = index_of(ivs)
            for gen, buf, et in zip(heroes, buffers, types):
                store_element(b, gen(index), slot(buf, index, read_strides), et)

        _box_loops(b, plan.read_order, extent, read, "r")
        if blocked:
            for src, dst, et in zip(buffers, columns, types):
                _emit_block_phase(b, plan, blocked, extent_of, src, read_strides, dst,
                                  write_strides, et)

        def loader(buf: ir.Value, et: Any) -> Generator:
            return lambda index: load_element(b, slot(buf, index, write_strides), et)
        loads: list[Generator] = [memoize(b, loader(buf, et)) for buf, et in zip(columns, types)]
        stores = outputs_with(loads)

        def write(ivs: dict[int, ir.Value]) -> None:
            index = index_of(ivs)
            for s in stores:
                where = b.gep(s.ptr, [linear_offset(b, index, s.shape)], inbounds=True)
                store_element(b, s.gen(index), where, s.shape.element_type)

        _box_loops(b, plan.write_order, extent, write, "w")

    for_loop(b, fn.args[1], fn.args[2], unit, "unit")


__all__ = ["BLOCK", "MIN_TILED_ELEMENTS", "TILE_ELEMENTS", "TilePlan", "TiledStore",
           "emit_tiled_nest", "operand_reads", "plan_tiling", "minor_run"]
