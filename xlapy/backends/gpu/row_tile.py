"""Row reductions whose row fits in the registers of its threads: the row is read once.

:func:`tile_rows` decides, for a row-reduction plan (``reduction._Plan``), whether each
thread's share of a row fits an unrolled per-thread array of at most
:data:`MAX_THREAD_ELEMENTS` elements, and if so how the row is cut:

- ``tpr`` threads per row and ``rpb`` rows per block: ``tpr`` is the power of two
  nearest above ``rowlen / TARGET_THREAD_ELEMENTS``; rows of up to :data:`WARP_ROW_MAX`
  elements get 4 to 32 threads (an aligned group of a warp's lanes, whose shuffles alone
  combine the row) and as many rows as fill :data:`SHORT_ROW_BLOCK` threads, longer rows
  a block of 64 to 1024 threads each, as XLA sizes its row-reduction tiles;
- ``vec`` elements per chunk: thread ``l`` of a row owns the chunks ``l, l + tpr, ...``
  of ``vec`` consecutive elements, loaded (and stored) as one ``<vec x T>`` access --
  ``ld.global.v4.f32`` for f32 -- when the row length is a multiple of ``vec`` and every
  buffer accessed this way is 16-byte aligned in the buffer assignment; a warp's accesses
  stay contiguous (coalesced);
- ``cache``: whether the loaded values of the *row sources* (the fusion parameters, or the
  bare reduce's operand, stored row-major with the reduce's input dims) stay in registers
  (an ``alloca`` array indexed by constants, which SROA promotes) across the kernel's
  phases. Then softmax reads its input once: the max phase loads it, the exp-sum phase
  and the output phase recompute the fused elementwise producers from the cached values.
  Without the cache (more row-sized parameters than the register budget holds) every
  phase loads its chunks again;
- ``kept_operands``: a reduce's operand that other fused values read too (softmax's
  ``exp(x - max)``, summed and then divided) is kept per element from the reduce's phase
  for the later phases, within the same register budget, so it is computed once.

:class:`RowTileBuilder` emits the kernel: per reduce, a phase in which each thread loads
its chunks (first phase, or every phase without the cache), combines its elements in
chunk order, and the row's threads combine (warp shuffles; for a block per row, the warps'
values through shared memory, :meth:`reduction._Builder.block_reduce`); the row value
goes to a shared slot per row of the block. Then the per-row outputs (lane 0 of each row)
and the per-element outputs (each thread its chunks, vector stores when aligned).
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir

from ...hlo.ir import HloInstruction
from ...hlo.shape import Shape
from ..cpu.elemental_data import delinearize
from ..cpu.kernel_api import Generator, operand_slots
from ..cpu.kernel_support import c64, linear_offset
from ..cpu.llvm_types import (from_storage, llvm_type, load_element, storage_type, store_element,
                              to_storage)
from .reduction import _Builder, identity
from .simt import I8, WARP

MAX_THREAD_ELEMENTS = 32      # a thread's share of a row, unrolled, at most
TARGET_THREAD_ELEMENTS = 16   # a block-per-row's size aims at this many elements a thread
WARP_ROW_MAX = 512            # rows up to this long: a warp or part of one per row
SHORT_ROW_BLOCK = 256         # ... and as many rows as fill a block of this size
MAX_TILE_BLOCK = 1024
TILED_ROW_MAX = MAX_THREAD_ELEMENTS * MAX_TILE_BLOCK   # longer rows: the looped sweep
REGISTERS = 65536             # 32-bit registers per block (sm_80, sm_90)
VECTOR_BYTES = 16             # widest global access (ld.global.v4.f32)


def _row_major(shape: Shape) -> bool:
    lay = shape.layout
    return lay is None or (not lay.extra and tuple(lay.minor_to_major) ==
                           tuple(range(len(shape.dims) - 1, -1, -1)))


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def aligned(assignment: Any, kb: Any, nbytes: int) -> bool:
    """Whether buffer ``kb`` starts at a multiple of ``nbytes`` of its allocation (whose
    base the runtime aligns to 256 bytes)."""
    if assignment is None:
        return False
    try:
        return assignment.slice(kb.instruction, kb.index).offset % nbytes == 0
    except Exception:   # noqa: BLE001 - an ambiguous slice: use scalar accesses
        return False


def _bytes(shape: Shape) -> int:
    et = shape.element_type
    return 1 if storage_type(et) == I8 else max(1, et.byte_size)


def tile_rows(plan: Any, buffers: list, assignment: Any, stored: list) -> None:
    """Set ``plan.per`` (chunks per thread; 0 keeps the looped sweep), ``tpr``, ``rpb``,
    ``block``, ``vec``, ``cache``, ``sources``, ``kept_operands`` and ``vector_outputs``
    (module docstring)."""
    plan.per = 0
    if plan.splits > 1 or plan.rows == 1:
        # one row is one block either way: the looped sweep gives it up to 512 threads
        return
    slots = operand_slots(buffers)
    if plan.comp is None:
        keys = [(id(plan.instr.operands[0]), slots[(0, ())])]
    else:
        keys = [(id(p), slots[(p.parameter_number, ())]) for p in plan.comp.parameters]
    sources = [(k, s) for k, s in keys if tuple(buffers[s].shape.dims) == plan.dims
               and _row_major(buffers[s].shape)]
    nops = sum(1 for kb in buffers if kb.role == "operand")
    outs = [(k, stored[k] or buffers[nops + k].shape) for k in range(len(plan.outputs))
            if not plan.row_outputs[k]]
    sizes = [_bytes(buffers[s].shape) for _, s in sources] + [_bytes(sh) for _, sh in outs]
    vec = 4 if max(sizes, default=4) <= 4 else VECTOR_BYTES // max(sizes)
    if vec < 2 or plan.rowlen % vec or not all(
            aligned(assignment, buffers[s], VECTOR_BYTES) for _, s in sources):
        vec = 1
    if plan.rowlen <= WARP_ROW_MAX:
        tpr = min(WARP, max(4, _pow2_at_least(-(-plan.rowlen // TARGET_THREAD_ELEMENTS))))
        rpb = min(SHORT_ROW_BLOCK // tpr, _pow2_at_least(plan.rows))
    else:
        tpr = min(MAX_TILE_BLOCK, max(2 * WARP, _pow2_at_least(
            -(-plan.rowlen // TARGET_THREAD_ELEMENTS))))
        rpb = 1
    per = -(-plan.rowlen // (vec * tpr))
    if per * vec > MAX_THREAD_ELEMENTS:
        return
    plan.per, plan.tpr, plan.rpb, plan.vec = per, tpr, rpb, vec
    plan.block = tpr * rpb
    plan.sources = sources
    # half the registers a thread may have at this block size hold the cached values
    budget = min(255, REGISTERS // plan.block) // 2
    words = sum(per * vec * -(-_bytes(buffers[s].shape) // 4) for _, s in sources)
    plan.cache = words <= budget
    plan.kept_operands = []
    for r in plan.reduces if plan.comp is not None else []:
        op = r.operands[0]
        size = per * vec * -(-max(1, op.shape.element_type.byte_size) // 4)
        if op.opcode != "parameter" and any(u is not r for u in op.users) and \
                all(op is not o for o in plan.kept_operands) and \
                plan.cache and words + size <= budget:
            plan.kept_operands.append(op)
            words += size
    plan.vector_outputs = {k for k, sh in outs if vec > 1 and _row_major(sh)
                           and aligned(assignment, buffers[nops + k], VECTOR_BYTES)}


class RowTileBuilder(_Builder):
    """Emits a tiled row-reduction kernel (module docstring)."""

    def __init__(self, frame: Any, plan: Any, buffers: list) -> None:
        super().__init__(frame, plan, buffers)
        p = plan
        self.chunks = p.rowlen // p.vec if p.vec > 1 else p.rowlen
        self.exact = self.chunks == p.per * p.tpr
        # per source: a per-thread array of its per * vec row values
        self.cache = {key: frame.per_thread(ir.ArrayType(
            llvm_type(buffers[s].shape.element_type), p.per * p.vec))
            for key, s in p.sources}
        for op in p.kept_operands:
            self.cache[id(op)] = frame.per_thread(ir.ArrayType(
                llvm_type(op.shape.element_type), p.per * p.vec))
        self.filled: set[int] = set()     # kept operands stored by an earlier phase
        self.cur: tuple | None = None     # (index, m * vec + e) of the element being computed

    # ----- coordinates of the current thread (set at the start of every phase)
    def _coords(self, tid: ir.Value) -> None:
        p, b = self.plan, self.b
        self.tid = tid
        if p.rpb > 1:
            self.rib = b.lshr(tid, c64(p.tpr.bit_length() - 1))
            self.lane = b.and_(tid, c64(p.tpr - 1))
            self.row = b.add(b.mul(self.f.block, c64(p.rpb)), self.rib)
        else:
            self.rib, self.lane, self.row = c64(0), tid, self.f.block
        self.row_ok = b.icmp_unsigned("<", self.row, c64(p.rows)) \
            if p.rows % p.rpb else None
        self.kept = delinearize(b, self.row, list(p.kept)) if p.kept else []

    def _phase(self, body, guard_row: bool = True) -> None:
        def run(tid: ir.Value) -> None:
            self._coords(tid)
            if guard_row and self.row_ok is not None:
                with self.b.if_then(self.row_ok):
                    body()
            else:
                body()
        self.f.threads(run)

    def _chunk(self, m: int) -> tuple[ir.Value, ir.Value | None]:
        """Chunk ``m`` of this thread: (chunk index, in-row condition or None)."""
        b, p = self.b, self.plan
        c = b.add(self.lane, c64(m * p.tpr))
        ok = None if self.exact else b.icmp_unsigned("<", c, c64(self.chunks))
        return c, ok

    def _each_chunk(self, body) -> None:
        for m in range(self.plan.per):
            c, ok = self._chunk(m)
            if ok is None:
                body(m, c)
            else:
                with self.b.if_then(ok):
                    body(m, c)

    # ----- values
    def _load_sources(self) -> None:
        p, b = self.plan, self.b
        base = b.mul(self.row, c64(p.rowlen))

        def load(m: int, c: ir.Value) -> None:
            start = b.add(base, b.mul(c, c64(p.vec)) if p.vec > 1 else c)
            for key, s in p.sources:
                et = self.buffers[s].shape.element_type
                ptr = b.gep(self._ptr(s), [start], inbounds=True)
                slot = self.cache[key].ptr(self.tid)
                if p.vec == 1:
                    values = [load_element(b, ptr, et)]
                else:
                    st = storage_type(et)
                    vty = ir.VectorType(st, p.vec)
                    raw = b.load(b.bitcast(ptr, vty.as_pointer()),
                                 align=_bytes(self.buffers[s].shape) * p.vec)
                    values = [from_storage(b, b.extract_element(raw, ir.Constant(
                        ir.IntType(32), e)), et) for e in range(p.vec)]
                for e, v in enumerate(values):
                    b.store(v, b.gep(slot, [c64(0), c64(m * p.vec + e)], inbounds=True))
        self._each_chunk(load)

    def generators(self) -> dict[int, Generator]:
        gens = super().generators()
        b = self.b
        for r in self.plan.reduces:
            if id(r) in self.values:
                def row_value(index: Any, base: ir.Value = self.values[id(r)]) -> ir.Value:
                    return b.load(b.gep(base, [self.rib]))
                gens[id(r)] = row_value
        keys = [key for key, _ in self.plan.sources] + \
            [id(op) for op in self.plan.kept_operands if id(op) in self.filled]
        for key in keys:
            def cached(index: list, key: int = key, load: Generator = gens[key]) -> ir.Value:
                cur = self.cur
                if cur is not None and len(index) == len(cur[0]) and \
                        all(a is c for a, c in zip(index, cur[0])):
                    slot = self.cache[key].ptr(self.tid)
                    return b.load(b.gep(slot, [c64(0), c64(cur[1])], inbounds=True))
                return load(index)
            gens[key] = cached
        return gens

    def _elements(self, m: int, c: ir.Value, body) -> None:
        """``body(e, index)`` for the ``vec`` elements of chunk ``m`` (``self.cur`` set)."""
        p, b = self.plan, self.b
        for e in range(p.vec):
            j = b.add(b.mul(c, c64(p.vec)), c64(e)) if p.vec > 1 else c
            index = self.full_index(self.kept, j)
            self.cur = (index, m * p.vec + e)
            body(e, index)
        self.cur = None

    # ----- the kernel
    def build(self) -> None:
        p, f, b = self.plan, self.f, self.b
        for n, r in enumerate(p.reduces):
            ty = llvm_type(r.shape.element_type)
            acc = f.per_thread(ty)
            running = f.entry_alloca(ty)

            def sweep(r: HloInstruction = r, acc: Any = acc, running: Any = running,
                      first: bool = n == 0) -> None:
                b.store(identity(r), running)

                def rows() -> None:
                    if first or not p.cache:
                        self._load_sources()
                    gens = self.generators()

                    op = id(r.operands[0])
                    keep = op in self.cache and op not in self.filled and op not in dict(
                        p.sources)

                    def chunk(m: int, c: ir.Value) -> None:
                        def one(e: int, index: list) -> None:
                            v = gens[op](index)
                            if keep:
                                slot = self.cache[op].ptr(self.tid)
                                b.store(v, b.gep(slot, [c64(0), c64(m * p.vec + e)],
                                                 inbounds=True))
                            b.store(self.combine(r, b.load(running), v), running)
                        self._elements(m, c, one)
                    self._each_chunk(chunk)
                if self.row_ok is not None:
                    with b.if_then(self.row_ok):
                        rows()
                else:
                    rows()
                acc.store(self.tid, b.load(running))
            self._phase(sweep, guard_row=False)
            if id(r.operands[0]) in self.cache:
                self.filled.add(id(r.operands[0]))
            self.values[id(r)] = self._row_reduce(r, acc)
        self._write()

    def _row_reduce(self, r: HloInstruction, acc: Any) -> ir.Value:
        """Combine each row's threads; returns the shared array of the block's row values."""
        p, f, b = self.plan, self.f, self.b
        start = lambda: self.generators()[id(r.operands[1])]([])   # noqa: E731
        if p.rpb == 1:
            return self.block_reduce(r, acc, lambda: identity(r), start)
        f.warp_reduce(acc, lambda x, y: self.combine(r, x, y), width=p.tpr)
        slots = f.shared(acc.ty, p.rpb)

        def final() -> None:
            with b.if_then(b.icmp_unsigned("==", self.lane, c64(0))):
                b.store(self.combine(r, start(), acc.load(self.tid)),
                        b.gep(slots, [self.rib]))
        self._phase(final)
        f.barrier()
        return slots

    def _write(self) -> None:
        p, b = self.plan, self.b
        nops = sum(1 for kb in self.buffers if kb.role == "operand")
        row_outs = [(k, o) for k, o in enumerate(p.outputs) if p.row_outputs[k]]
        elem_outs = [(k, o) for k, o in enumerate(p.outputs) if not p.row_outputs[k]]
        if row_outs:
            def per_row() -> None:
                gens = self.generators()
                with b.if_then(b.icmp_unsigned("==", self.lane, c64(0))):
                    for k, o in row_outs:
                        shape = self.store_shape(k)
                        store_element(b, gens[id(o)](self.kept), b.gep(
                            self._ptr(nops + k), [linear_offset(b, self.kept, shape)]),
                            shape.element_type)
            self._phase(per_row)
        if elem_outs:
            def per_element() -> None:
                if not p.cache:
                    self._load_sources()
                gens = self.generators()
                self._each_chunk(lambda m, c: self._store_chunk(m, c, gens, elem_outs, nops))
            self._phase(per_element)

    def _store_chunk(self, m: int, c: ir.Value, gens: dict, outs: list, nops: int) -> None:
        p, b = self.plan, self.b
        vectors: dict[int, ir.Value] = {}

        def one(e: int, index: list) -> None:
            for k, o in outs:
                shape = self.store_shape(k)
                et = shape.element_type
                v = gens[id(o)](index)
                if k in p.vector_outputs:
                    st = storage_type(et)
                    vec = vectors.get(k, ir.Constant(ir.VectorType(st, p.vec), ir.Undefined))
                    vectors[k] = b.insert_element(vec, to_storage(b, v, et),
                                                  ir.Constant(ir.IntType(32), e))
                else:
                    store_element(b, v, b.gep(self._ptr(nops + k),
                                              [linear_offset(b, index, shape)]), et)
        self._elements(m, c, one)
        for k, vec in vectors.items():
            start = b.add(b.mul(self.row, c64(p.rowlen)), b.mul(c, c64(p.vec)))
            ptr = b.gep(self._ptr(nops + k), [start], inbounds=True)
            size = _bytes(self.store_shape(k)) * p.vec
            b.store(vec, b.bitcast(ptr, vec.type.as_pointer()), align=size)


__all__ = ["tile_rows", "RowTileBuilder", "MAX_THREAD_ELEMENTS", "WARP_ROW_MAX",
           "TILED_ROW_MAX"]
