"""Loop kernels: elementwise / data-movement instructions and loop fusions as LLVM loops.

For an instruction ``instr`` the kernel computes every element of the result by
composing elemental generators (``elemental.ElementalEmitter``): a fusion's fused
computation becomes a tree of generators whose leaves are its **parameters**, which
load from the fusion's operand buffers with layout-aware linearization (the buffer's
``Layout.minor_to_major``). A plain instruction is treated as a one-op fusion.

The **loop nest** walks the (first) output in its layout's physical order, the
minor-most dimension innermost, so stores are unit-stride and LLVM's loop vectorizer
can vectorize the inner loop (the innermost loops over dimensions of at most
:data:`UNROLL_LIMIT` elements are unrolled here, ``kernel_support.unrolled_from``; LLVM's
own unroller is off, see ``jit_engine``). Work
**units** partition the nest: the major dimensions before a *unit dimension* ``j``
times blocks of dimension ``j``, chosen so a unit holds about :data:`UNIT_ELEMENTS`
elements; ``kernel(buffers, begin, end)`` runs units ``[begin, end)``.

Multi-output (tuple-rooted) loop fusions whose outputs share dims are one loop
writing every output (each in its own layout). A root ``bitcast`` that keeps the
element type is looked through: the bytes of a bitcast are its operand's bytes, so
the operand is stored in the operand's layout.

**Transposes.** When the kernel reads a large operand whose physical minor dimension
is not the output's (a transpose or layout-changing copy, alone or fused), the nest is
tiled instead (``transpose_emitter``): each unit is a tile of the output; the values that
read the operand transposed (the heroes) are computed in the operand's order into stack
buffers, then the outputs in the output's order from those buffers.

**In place.** When the buffer assignment puts an operand in the output's buffer, the
kernel reads that operand through the output pointer (so LLVM sees one pointer); this
is accepted only when every read of that operand is at the element being written
(elementwise on that operand). A ``dynamic-update-slice`` (top level, or a fusion's
root) whose operand 0 shares the output buffer only writes the update window.
"""
from __future__ import annotations

from math import prod
from typing import Any

from llvmlite import ir

from ...hlo.ir import HloComputation, HloInstruction, post_order_from
from ...hlo.opcodes import OPCODES
from ...hlo.shape import Shape
from ...passes.fusion_utils import is_elementwise_on_operand
from .elemental import ElementalEmitter
from .elemental_data import clamp_index, delinearize, index_to_i64
from .kernel_api import (Generator, KernelBuffer, KernelSpec, buffer_pointer, declare_kernel,
                         kernel_buffers, memoize, operand_slots)
from .kernel_support import (PlannedEmitter, annotate_noalias, buffer_aliases, c64, for_loop,
                             linear_offset, major_to_minor, strip_root_bitcasts,
                             unrolled_from)
from .llvm_types import load_element, storage_type, store_element
from .transpose_emitter import TiledStore, TilePlan, emit_tiled_nest, plan_tiling

UNIT_ELEMENTS = 4096        # elements per work unit (at least, when the output is large)
UNROLL_LIMIT = 4            # loops over a dimension this small are unrolled in the IR

# Rough cost of one element of an op relative to an add (for KernelSpec.cost, which the
# runtime compares with its threshold for splitting a kernel across threads): the op
# table's transcendental ops (a polynomial or a library call) cost 20.
_OP_COST = {op: 20 for op, info in OPCODES.items() if info.transcendental}
_OP_COST.update({"divide": 4, "sqrt": 4, "rsqrt": 4, "remainder": 8})

# Never emitted by this emitter, whatever the elemental emitter supports.
_EXCLUDED = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                       "while", "conditional", "call", "custom-call", "after-all",
                       "dot", "convolution", "rng", "rng-get-and-update-state",
                       "rng-bit-generator", "opt-barrier", "add-dependency"})


class _Analysis:
    """What a kernel for ``instr`` needs: the computation, outputs and buffer aliasing."""

    def __init__(self, instr: HloInstruction, comp: HloComputation | None,
                 outputs: list[HloInstruction], buffers: list[KernelBuffer],
                 aliases: dict[int, int], in_place_dus: bool) -> None:
        self.instr = instr
        self.comp = comp                  # fused computation (None for a plain instruction)
        self.outputs = outputs            # values stored, one per output buffer
        self.buffers = buffers
        self.aliases = aliases            # operand buffer index -> output buffer index
        self.in_place_dus = in_place_dus
        self.num_operand_buffers = sum(1 for b in buffers if b.role == "operand")
        self.stripped = [False] * len(outputs)   # output k looks through root bitcasts
        self.tiling: TilePlan | None = None       # a tiled transpose nest, when it pays

    def store_shape(self, k: int) -> Shape:
        """The shape output ``k``'s bytes are written in: the output buffer's, or for a
        looked-through root bitcast its operand's (same bytes)."""
        if not self.stripped[k]:
            return self.buffers[self.num_operand_buffers + k].shape
        out = self.outputs[k]
        return out.shape if out.shape.layout is not None else out.shape.with_default_layout()

    def needed(self) -> list[HloInstruction]:
        """Fused instructions whose generators the kernel calls, operands first.

        For an in-place dynamic-update-slice the update and the start indices are needed,
        not the dynamic-update-slice itself."""
        if self.comp is None:
            return [self.instr]
        wanted = [o for out in self.outputs
                  for o in (out.operands[1:] if self.in_place_dus else [out])]
        # the element of a tuple parameter is read through its get-tuple-element
        return post_order_from(wanted, expand=lambda i: i.opcode != "get-tuple-element")


class LoopEmitter(PlannedEmitter):
    """A ``KernelEmitter`` for loop fusions and elementwise / data-movement instructions.

    ``assignment`` (a ``BufferAssignment``) tells which operand shares the output
    buffer; without it no buffers are assumed to coincide.
    """

    kind = "loop"

    def __init__(self, assignment: Any = None, unit_elements: int = UNIT_ELEMENTS) -> None:
        super().__init__(assignment)
        self.unit_elements = unit_elements

    def analyze(self, instr: HloInstruction) -> _Analysis | None:
        if instr.opcode in _EXCLUDED:
            return None
        if instr.opcode == "fusion":
            if instr.attrs.get("kind") == "kCustom":
                return None
            comp = instr.attrs["calls"]
            root = comp.root
            roots = list(root.operands) if root.opcode == "tuple" else [root]
        else:
            if not instr.shape.is_array or any(not op.shape.is_array for op in instr.operands):
                return None
            comp, roots = None, [instr]
        outputs = [strip_root_bitcasts(o) for o in roots]
        if any(not o.shape.is_array for o in outputs) or \
                len({tuple(o.shape.dims) for o in outputs}) != 1:
            return None
        buffers = kernel_buffers(instr)
        if sum(1 for b in buffers if b.role == "output") != len(outputs):
            return None
        aliases = buffer_aliases(self.assignment, instr, buffers)
        if aliases is None:
            return None
        in_place_dus = False
        if aliases:
            if len(outputs) != 1:
                return None
            in_place_dus = self._is_in_place_dus(instr, comp, outputs[0], aliases)
            if not in_place_dus and not all(
                    self._elementwise_on(instr, buffers[j]) for j in aliases):
                return None
        a = _Analysis(instr, comp, outputs, buffers, aliases, in_place_dus)
        a.stripped = [o is not r for o, r in zip(outputs, roots)]
        if comp is None:
            if not (in_place_dus or ElementalEmitter.supports(instr)):
                return None
        elif not all(self._fusable(i) for i in a.needed()):
            return None
        if not in_place_dus:
            a.tiling = plan_tiling(instr, outputs, buffers, a.store_shape(0))
        return a

    def build(self, module: ir.Module, name: str, a: _Analysis) -> KernelSpec:
        return _KernelBuilder(module, name, a, self.unit_elements).build()

    @staticmethod
    def _fusable(i: HloInstruction) -> bool:
        if i.opcode == "parameter":
            return i.shape.is_array
        if i.opcode == "get-tuple-element":
            base = i.operands[0]
            while base.opcode == "get-tuple-element":
                base = base.operands[0]
            return base.opcode == "parameter" and i.shape.is_array
        if i.opcode in _EXCLUDED - {"constant", "bitcast"}:
            return False
        return ElementalEmitter.supports(i)

    @staticmethod
    def _elementwise_on(instr: HloInstruction, buf: KernelBuffer) -> bool:
        if buf.index != ():
            return False
        return is_elementwise_on_operand(instr, buf.operand) and \
            buf.shape.dims == instr.shape.dims and buf.shape.layout == instr.shape.layout

    @staticmethod
    def _is_in_place_dus(instr: HloInstruction, comp: HloComputation | None,
                         out: HloInstruction, aliases: dict[int, int]) -> bool:
        """A dynamic-update-slice whose operand 0 (only read there) is the output buffer."""
        if out.opcode != "dynamic-update-slice" or len(aliases) != 1:
            return False
        (j,) = aliases
        # the elements outside the window keep their bytes: operand 0 must be stored in
        # the result's layout
        if out.operands[0].shape.layout != out.shape.layout:
            return False
        if comp is None:
            return j == 0 and out is instr
        base = out.operands[0]
        while base.opcode == "bitcast" and len(base.users) == 1:
            base = base.operands[0]
        return base.opcode == "parameter" and base.parameter_number == j and \
            len(base.users) == 1 and all(p.shape.is_array for p in comp.parameters)


def fused_generators(a: _Analysis, b: ir.IRBuilder, em: ElementalEmitter,
                     ptrs: list[ir.Value],
                     given: dict[int, Generator] | None = None) -> dict[int, Generator]:
    """Generators of every value of an analysis' fused computation (or of its operands),
    reading the operand buffers at ``ptrs`` (by slot); ``given`` fixes the generators of
    some values (by id)."""
    slot = operand_slots(a.buffers)
    gens: dict[int, Generator] = dict(given or {})

    def load(s: int) -> Generator:
        ptr, shape = ptrs[s], a.buffers[s].shape
        return memoize(b, lambda index: load_element(
            b, b.gep(ptr, [linear_offset(b, index, shape)], inbounds=True), shape.element_type))
    if a.comp is None:
        for n, op in enumerate(a.instr.operands):
            if id(op) not in gens:
                gens[id(op)] = load(slot[(n, ())])
        if not a.in_place_dus and id(a.instr) not in gens:
            gens[id(a.instr)] = em.generator(a.instr, [gens[id(op)] for op in a.instr.operands])
        return gens
    for i in a.needed():
        if id(i) in gens:
            continue
        if i.opcode in ("parameter", "get-tuple-element"):
            path: list[int] = []
            base = i
            while base.opcode == "get-tuple-element":
                path.insert(0, base.attrs["index"])
                base = base.operands[0]
            gens[id(i)] = load(slot[(base.parameter_number, tuple(path))])
        else:
            gens[id(i)] = em.generator(i, [gens[id(o)] for o in i.operands])
    return gens


class _KernelBuilder:
    """Builds one kernel function from an analysis."""

    def __init__(self, module: ir.Module, name: str, a: _Analysis, unit_elements: int) -> None:
        self.module, self.name, self.a = module, name, a
        self.unit_elements = unit_elements
        self.fn, self.b = declare_kernel(module, name)
        self.em = ElementalEmitter(self.b, module)

    # -- buffers and generators
    def _pointers(self) -> list[ir.Value]:
        ptrs: list[ir.Value] = []
        for i, buf in enumerate(self.a.buffers):
            ptrs.append(buffer_pointer(self.b, self.fn, i, storage_type(buf.shape.element_type)))
        for j, k in self.a.aliases.items():
            ptrs[j] = self.b.bitcast(ptrs[k], ptrs[j].type)
        return ptrs

    def build(self) -> KernelSpec:
        a, b = self.a, self.b
        ptrs = self._pointers()
        gens = fused_generators(self.a, self.b, self.em, ptrs)
        out_bufs = [(ptrs[a.num_operand_buffers + k], a.buffers[a.num_operand_buffers + k])
                    for k in range(len(a.outputs))]
        notes = []
        if a.in_place_dus:
            units, elements = self._in_place_dus(gens, out_bufs[0][0])
        elif a.tiling is not None:
            heroes = a.tiling.heroes

            def outputs_with(loads: list[Generator]) -> list[TiledStore]:
                given = {id(h): g for h, g in zip(heroes, loads)}
                out_gens = fused_generators(self.a, self.b, self.em, ptrs, given)
                return [TiledStore(out_gens[id(out)], out_bufs[k][0], a.store_shape(k))
                        for k, out in enumerate(a.outputs)]
            emit_tiled_nest(b, self.fn, a.tiling, [gens[id(h)] for h in heroes], outputs_with)
            units, elements = a.tiling.units, prod(a.tiling.dims)
            notes.append(a.tiling.describe())
        else:
            space = Shape.array(a.outputs[0].shape.element_type, a.outputs[0].shape.dims,
                                layout=a.store_shape(0).layout)
            stores = []
            for k, out in enumerate(a.outputs):
                ptr, _buf = out_bufs[k]
                stores.append((gens[id(out)], ptr, a.store_shape(k), None))
            units, elements = self._nest(space, stores)
        b.ret_void()
        annotate_noalias(self.module, self.name, self.fn, ptrs)
        nbytes = sum(buf.shape.byte_size for buf in a.buffers)
        ops = sum(_OP_COST.get(i.opcode, 1) for i in a.needed())
        return KernelSpec(self.name, a.instr, a.buffers, units=units,
                          cost=float(nbytes + elements * ops),
                          notes=[f"loop over {elements} elements in {units} units"] + notes)

    def _units(self, dims_phys: list[int]) -> tuple[int, int, int]:
        """(unit dim j, block size along j, blocks along j) for a physical nest."""
        rank = len(dims_phys)
        for j in range(rank):
            inner = prod(dims_phys[j + 1:])
            if inner < self.unit_elements or j == rank - 1:
                block = max(1, min(dims_phys[j], -(-self.unit_elements // max(inner, 1))))
                return j, block, -(-dims_phys[j] // block)
        return 0, 1, 1

    def _nest(self, space: Shape, stores: list) -> tuple[int, int]:
        """Emit the unit loop and the loop nest over ``space``; returns (units, elements)."""
        b, fn = self.b, self.fn
        order = major_to_minor(space)
        phys = [space.dims[d] for d in order]
        elements = prod(phys)
        if space.rank == 0:
            self._store_all(stores, [])
            return 1, 1
        if elements == 0:
            return 0, 0
        j, block, nblocks = self._units(phys)
        units = prod(phys[:j]) * nblocks
        c = c64

        def unit_body(u: ir.Value) -> None:
            outer, blk = (b.sdiv(u, c(nblocks)), b.srem(u, c(nblocks))) if nblocks > 1 \
                else (u, c(0))
            # physical indices: the major dims before j from the unit, the rest from loops
            idx_phys: list = delinearize(b, outer, phys[:j]) + [None] * (len(phys) - j)
            lo = b.mul(blk, c(block))
            unroll = max(j + 1, unrolled_from(phys, UNROLL_LIMIT))
            hi = b.select(b.icmp_signed("<", b.add(lo, c(block)), c(phys[j])),
                          b.add(lo, c(block)), c(phys[j]))

            def level(k: int, lo_k: ir.Value, hi_k: ir.Value) -> None:
                def body(iv: ir.Value) -> None:
                    idx_phys[k] = iv
                    if k + 1 < len(phys):
                        level(k + 1, c(0), c(phys[k + 1]))
                    else:
                        index = [None] * len(phys)
                        for pos, d in enumerate(order):
                            index[d] = idx_phys[pos]
                        self._store_all(stores, index)
                if k >= unroll:
                    for t in range(phys[k]):       # tiny constant trip count: unrolled
                        body(c(t))
                else:
                    for_loop(b, lo_k, hi_k, body, f"i{k}")
            level(j, lo, hi)

        for_loop(b, fn.args[1], fn.args[2], unit_body, "unit")
        return units, elements

    def _store_all(self, stores: list, index: list) -> None:
        """Compute and store each output at ``index`` (shifted by the store's offsets)."""
        b = self.b
        for gen, ptr, shape, offsets in stores:
            value = gen(index)
            where = index if offsets is None else [b.add(i, o) for i, o in zip(index, offsets)]
            store_element(b, value, b.gep(ptr, [linear_offset(b, where, shape)], inbounds=True),
                          shape.element_type)

    def _in_place_dus(self, gens: dict[int, Generator], out_ptr: ir.Value) -> tuple[int, int]:
        """Write only the update window of a dynamic-update-slice into the shared buffer.

        Start indices are clamped to ``[0, dim - update_dim]`` as XLA specifies.
        """
        b = self.b
        dus = self.a.outputs[0]
        update, starts = dus.operands[1], dus.operands[2:]
        shape = self.a.store_shape(0)
        offsets = []
        for d, s in enumerate(starts):
            et = s.shape.element_type
            v = index_to_i64(b, gens[id(s)]([]), et.is_signed_integral)
            limit = shape.dims[d] - update.shape.dims[d]
            if et.is_unsigned_integral and et.bits == 64:
                # a u64 start above 2^63 reads as negative: it is past the end, clamp high
                v = b.select(b.icmp_signed("<", v, c64(0)), c64(limit), v)
            offsets.append(clamp_index(b, v, 0, limit))
        space = Shape.array(update.shape.element_type, update.shape.dims, layout=shape.layout)
        return self._nest(space, [(gens[id(update)], out_ptr, shape, offsets)])


__all__ = ["LoopEmitter", "UNIT_ELEMENTS"]
