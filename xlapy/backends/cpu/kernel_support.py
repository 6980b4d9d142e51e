"""Scaffolding shared by the CPU backend's structured kernels (windows, scatter, sort).

These kernels compute one **hero** instruction (``reduce-window``,
``select-and-scatter``, ``scatter``, ``sort``) either as a top-level instruction or as
the root of a fusion whose other instructions are elementwise / data-movement
producers of the hero's operands (XLA's ``wrapped_*`` fusions have only parameters).
:func:`find_hero` recognizes both; :class:`KernelScaffold` gives a kernel function
(``kernel_api`` signature) with:

- generators for the hero's operands (:meth:`KernelScaffold.operand`): loads from the
  operand buffers in their layouts, composed through the fused producers with the
  elemental emitter;
- output element pointers in each output buffer's layout;
- counted loops, stack scratch (``alloca`` in the entry block, so LLVM promotes
  one-element slots to registers) and scoped ``noalias`` metadata for the buffers.

:func:`emit_scalar_computation` emits a called computation (a reducer, comparator or
``select``) on scalar register values with the elemental emitter.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from llvmlite import ir

from ...hlo.ir import HloComputation, HloInstruction
from ...hlo.shape import Shape
from .elemental import ElementalEmitter
from .kernel_api import (I64, Generator, KernelBuffer, buffer_pointer, declare_kernel,
                         kernel_buffers)
from .llvm_types import llvm_type, load_element, storage_type, store_element

# Fused instructions that never become elemental producers of a hero operand.
_NOT_PRODUCERS = frozenset({"tuple", "get-tuple-element", "while", "conditional", "call",
                            "custom-call", "rng", "rng-bit-generator",
                            "rng-get-and-update-state", "dot", "convolution"})


def c64(value: int) -> ir.Constant:
    """An ``i64`` constant."""
    return ir.Constant(I64, value)


def major_to_minor(shape: Shape) -> list[int]:
    """Dimensions from most major to most minor (row-major without a layout)."""
    if shape.layout is None or len(shape.layout.minor_to_major) != shape.rank:
        return list(range(shape.rank))
    return list(reversed(shape.layout.minor_to_major))


def element_strides(shape: Shape) -> list[int]:
    """Per logical dimension, the distance in elements between neighbours in memory."""
    strides = [0] * shape.rank
    step = 1
    for d in reversed(major_to_minor(shape)):
        strides[d] = step
        step *= shape.dims[d]
    return strides


def has_register_type(shape: Shape) -> bool:
    """Whether every element of the array ``shape`` has an LLVM register type."""
    try:
        llvm_type(shape.element_type)
    except Exception:          # noqa: BLE001 - no register type: not emittable
        return False
    return True


def scalar_computation_supported(comp: HloComputation) -> bool:
    """Whether every instruction of ``comp`` (scalar parameters, scalar values, an
    optional root tuple) has an elemental generator."""
    for instr in comp.instructions:
        if instr.opcode == "parameter":
            if not (instr.shape.is_array and instr.shape.rank == 0
                    and has_register_type(instr.shape)):
                return False
        elif instr.opcode == "tuple":
            if instr is not comp.root:
                return False
        elif not (instr.shape.is_array and instr.shape.rank == 0
                  and ElementalEmitter.supports(instr)):
            return False
    return True


def emit_scalar_computation(b: ir.IRBuilder, comp: HloComputation,
                            args: Sequence[ir.Value]) -> list[ir.Value]:
    """Emit ``comp`` on the scalar register values ``args`` (its parameters in order);
    returns its root's values (the elements of a root tuple, else one value)."""
    em = ElementalEmitter(b, b.module)
    values: dict[int, ir.Value] = {}
    for instr in comp.post_order():
        if instr.opcode == "parameter":
            values[id(instr)] = args[instr.parameter_number]
        elif instr.opcode != "tuple":
            gens = [(lambda index, o=o: values[id(o)]) for o in instr.operands]
            values[id(instr)] = em.generator(instr, gens)([])
    root = comp.root
    if root.opcode == "tuple":
        return [values[id(o)] for o in root.operands]
    return [values[id(root)]]


def find_hero(instr: HloInstruction, opcodes: Iterable[str]) -> HloInstruction | None:
    """The hero (an instruction with one of ``opcodes``) that ``instr`` computes.

    ``instr`` itself, or the root of a fusion (of any kind: XLA also wraps a lone
    reduce-window in a ``kCustom`` fusion) whose other instructions are parameters or
    elementwise / data-movement producers of the hero's operands."""
    opcodes = frozenset(opcodes)
    if instr.opcode in opcodes:
        return instr if all(o.shape.is_array for o in instr.operands) else None
    if instr.opcode != "fusion":
        return None
    comp = instr.attrs["calls"]
    hero = comp.root
    if hero.opcode not in opcodes or any(not p.shape.is_array for p in comp.parameters):
        return None
    for i in comp.instructions:
        if i is hero or i.opcode == "parameter":
            continue
        if i.opcode in _NOT_PRODUCERS or i.opcode in opcodes or \
                not ElementalEmitter.supports(i):
            return None
    return hero


def fused_parameter(instr: HloInstruction, hero: HloInstruction,
                    operand: HloInstruction) -> int | None:
    """The operand number of ``instr`` whose buffer ``operand`` (a hero operand) is
    read from directly (no producer in between), or None."""
    if instr is hero:
        return list(hero.operands).index(operand)
    if operand.opcode == "parameter":
        return operand.parameter_number
    return None


class KernelScaffold:
    """One kernel function under construction for ``instr`` with hero ``hero``."""

    def __init__(self, module: ir.Module, name: str, instr: HloInstruction,
                 hero: HloInstruction) -> None:
        self.module, self.name, self.instr, self.hero = module, name, instr, hero
        self.fn, self.b = declare_kernel(module, name)
        self.entry = self.b.block
        self.buffers: list[KernelBuffer] = kernel_buffers(instr)
        self.num_operands = sum(1 for kb in self.buffers if kb.role == "operand")
        self.ptrs = [buffer_pointer(self.b, self.fn, i, storage_type(kb.shape.element_type))
                     for i, kb in enumerate(self.buffers)]
        self.begin, self.end = self.fn.args[1], self.fn.args[2]
        self.b.position_at_end(self.fn.append_basic_block("start"))
        self._start = self.b.block
        self._operand_gens = self._hero_operand_generators()

    # ----- operands and outputs
    def _load(self, slot: int) -> Generator:
        b, shape, ptr = self.b, self.buffers[slot].shape, self.ptrs[slot]
        strides = element_strides(shape)

        def gen(index: list) -> ir.Value:
            return load_element(b, b.gep(ptr, [self.offset(index, strides)], inbounds=True),
                                shape.element_type)
        return gen

    def _hero_operand_generators(self) -> list[Generator]:
        if self.instr is self.hero:
            return [self._load(k) for k in range(len(self.hero.operands))]
        em = ElementalEmitter(self.b, self.module)
        gens: dict[int, Generator] = {}
        for i in self.instr.attrs["calls"].post_order():
            if i is self.hero:
                continue
            if i.opcode == "parameter":
                gens[id(i)] = self._load(i.parameter_number)
            else:
                gens[id(i)] = em.generator(i, [gens[id(o)] for o in i.operands])
        return [gens[id(o)] for o in self.hero.operands]

    def operand(self, k: int) -> Generator:
        """Generator of the hero's operand ``k`` (a logical index of its shape)."""
        return self._operand_gens[k]

    def output_slot(self, k: int) -> int:
        """Buffer-table slot of output leaf ``k``."""
        return self.num_operands + k

    def offset(self, index: Sequence[ir.Value], strides: Sequence[int]) -> ir.Value:
        """``sum(index[d] * strides[d])`` (dimensions of extent 0 or stride 0 skipped)."""
        b, total = self.b, None
        for i, s in zip(index, strides):
            term = i if s == 1 else b.mul(i, c64(s), flags=["nsw"])
            total = term if total is None else b.add(total, term, flags=["nsw"])
        return total if total is not None else c64(0)

    def element_ptr(self, slot: int, index: Sequence[ir.Value]) -> ir.Value:
        """Pointer to the element at logical ``index`` of buffer ``slot``."""
        strides = element_strides(self.buffers[slot].shape)
        return self.b.gep(self.ptrs[slot], [self.offset(index, strides)], inbounds=True)

    def load(self, slot: int, ptr: ir.Value) -> ir.Value:
        return load_element(self.b, ptr, self.buffers[slot].shape.element_type)

    def store(self, slot: int, value: ir.Value, ptr: ir.Value) -> None:
        store_element(self.b, value, ptr, self.buffers[slot].shape.element_type)

    # ----- control flow and scratch
    def alloca(self, ty: ir.Type, count: int = 1, name: str = "") -> ir.Value:
        """Stack scratch of ``count`` elements, allocated once in the entry block."""
        with self.b.goto_block(self.entry):
            return self.b.alloca(ty, size=count, name=name)

    def loop(self, lo: ir.Value | int, hi: ir.Value | int,
             body: Callable[[ir.Value], None], name: str = "i") -> None:
        """``for (i = lo; i < hi; ++i) body(i)`` at the builder's position."""
        b = self.b
        lo = c64(lo) if isinstance(lo, int) else lo
        hi = c64(hi) if isinstance(hi, int) else hi
        pre = b.block
        header = b.append_basic_block(f"{name}.header")
        block = b.append_basic_block(f"{name}.body")
        exit_ = b.append_basic_block(f"{name}.exit")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(I64, name=name)
        iv.add_incoming(lo, pre)
        b.cbranch(b.icmp_signed("<", iv, hi), block, exit_)
        b.position_at_end(block)
        body(iv)
        nxt = b.add(iv, c64(1), name=f"{name}.next", flags=["nsw"])
        iv.add_incoming(nxt, b.block)
        b.branch(header)
        b.position_at_end(exit_)

    def nest(self, dims: Sequence[int], order: Sequence[int],
             body: Callable[[list], None], ranges: dict[int, tuple[Any, Any]] | None = None,
             name: str = "n") -> None:
        """Loops over the index space ``dims`` in ``order`` (outermost first); dimension
        ``d`` runs over ``ranges[d]`` (values or ints) when given, else ``[0, dims[d])``."""
        ranges = ranges or {}
        index: list = [None] * len(dims)

        def level(pos: int) -> None:
            if pos == len(order):
                body(list(index))
                return
            d = order[pos]

            def step(iv: ir.Value) -> None:
                index[d] = iv
                level(pos + 1)
            lo, hi = ranges.get(d, (0, dims[d]))
            if isinstance(lo, int) and isinstance(hi, int) and hi - lo == 1:
                step(c64(lo))
            else:
                self.loop(lo, hi, step, f"{name}{d}")
        level(0)

    def units_loop(self, body: Callable[[ir.Value], None]) -> None:
        """``for (u = begin; u < end; ++u) body(u)``."""
        self.loop(self.begin, self.end, body, "unit")

    def delinearize(self, linear: ir.Value, extents: Sequence[int]) -> list[ir.Value]:
        """Row-major coordinates of ``linear`` in a box of ``extents``."""
        b, out = self.b, [c64(0)] * len(extents)
        for k in range(len(extents) - 1, -1, -1):
            if k == 0:
                out[k] = linear
            elif extents[k] != 1:
                out[k] = b.urem(linear, c64(extents[k]))
                linear = b.udiv(linear, c64(extents[k]))
        return out

    # ----- finishing
    def finish(self) -> None:
        """Return, link the entry block to the body and annotate buffer aliasing."""
        self.b.ret_void()
        with self.b.goto_block(self.entry):
            self.b.branch(self._start)
        annotate_noalias(self.module, self.name, self.fn, self.ptrs)


def annotate_noalias(module: ir.Module, name: str, fn: ir.Function,
                     ptrs: Sequence[ir.Value]) -> None:
    """Scoped ``noalias`` metadata: every load/store through a buffer pointer gets that
    buffer's scope and ``noalias`` for the other buffers (so LLVM vectorizes without
    run-time overlap checks). Buffers that share memory must share a pointer value."""
    distinct: list[ir.Value] = []
    for p in ptrs:
        if all(p is not q for q in distinct):
            distinct.append(p)
    if len(distinct) < 2:
        return
    domain = module.add_metadata([ir.MetaDataString(module, f"{name}.buffers")])
    scopes = [module.add_metadata([ir.MetaDataString(module, f"{name}.b{i}"), domain])
              for i in range(len(distinct))]
    own = [module.add_metadata([s]) for s in scopes]
    others = [module.add_metadata([o for j, o in enumerate(scopes) if j != i])
              for i in range(len(scopes))]
    index = {id(p): i for i, p in enumerate(distinct)}
    memo: dict[int, int | None] = {}

    def base(v: ir.Value) -> int | None:
        key = id(v)
        if key not in memo:
            found = index.get(key)
            if found is None and isinstance(v, (ir.GEPInstr, ir.CastInstr)):
                found = base(v.operands[0])
            memo[key] = found
        return memo[key]

    for block in fn.blocks:
        for ins in block.instructions:
            if isinstance(ins, ir.LoadInstr):
                k = base(ins.operands[0])
            elif isinstance(ins, ir.StoreInstr):
                k = base(ins.operands[1])
            else:
                continue
            if k is not None:
                ins.set_metadata("alias.scope", own[k])
                ins.set_metadata("noalias", others[k])


def buffer_aliases(assignment: Any, instr: HloInstruction,
                   buffers: Sequence[KernelBuffer]) -> dict[int, int] | None:
    """``operand slot -> output slot`` for operand buffers that are an output buffer
    (same bytes); None when an operand buffer overlaps an output buffer only partly."""
    if assignment is None:
        return {}
    slices = [assignment.slice(kb.instruction, kb.index) for kb in buffers]
    out: dict[int, int] = {}
    for j, kb in enumerate(buffers):
        if kb.role != "operand" or slices[j].size == 0:
            continue
        for k, ob in enumerate(buffers):
            if ob.role != "output" or slices[k].allocation is not slices[j].allocation:
                continue
            a, c = slices[j], slices[k]
            if a.offset == c.offset and a.size == c.size:
                out[j] = k
            elif a.offset < c.offset + c.size and c.offset < a.offset + a.size:
                return None
    return out


def bytes_of(buffers: Sequence[KernelBuffer]) -> int:
    """Total bytes of a buffer table (for ``KernelSpec.cost``)."""
    return sum(kb.shape.byte_size for kb in buffers)


__all__ = ["c64", "major_to_minor", "element_strides", "has_register_type",
           "scalar_computation_supported", "emit_scalar_computation", "find_hero",
           "fused_parameter", "KernelScaffold", "annotate_noalias", "buffer_aliases",
           "bytes_of"]
