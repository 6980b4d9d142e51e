"""Scaffolding shared by the CPU backend's kernel emitters.

The structured kernels compute one **hero** instruction (``reduce-window``,
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

Every emitter (loop, reduction and the structured ones) shares :class:`PlannedEmitter`
(analyze an instruction once, emit from the plan), the counted loops
(:func:`for_loop`, :func:`carried_loop`), layout offsets (:func:`linear_offset`),
in-place buffer detection (:func:`buffer_aliases`) and :func:`annotate_noalias`.
:func:`emit_scalar_computation` emits a called computation (a reducer, comparator or
``select``) on scalar register values with the elemental emitter.
"""
from __future__ import annotations

import abc
from typing import Any, Callable, Iterable, Sequence

from llvmlite import ir

from ...errors import InvalidArgumentError
from ...hlo.ir import HloComputation, HloInstruction
from ...hlo.shape import Shape
from .elemental import ElementalEmitter
from .elemental_data import delinearize
from .kernel_api import (I64, Generator, KernelBuffer, KernelSpec, buffer_pointer,
                         declare_kernel, kernel_buffers)
from .llvm_types import llvm_type, load_element, storage_type, store_element
from .thunks import element_strides, major_to_minor

# Fused instructions that never become elemental producers of a hero operand.
_NOT_PRODUCERS = frozenset({"tuple", "get-tuple-element", "while", "conditional", "call",
                            "custom-call", "rng", "rng-bit-generator",
                            "rng-get-and-update-state", "dot", "convolution"})


def c64(value: int) -> ir.Constant:
    """An ``i64`` constant."""
    return ir.Constant(I64, value)


def linear_offset(b: ir.IRBuilder, index: Sequence[ir.Value], shape: Shape) -> ir.Value:
    """Physical element offset of a logical ``index`` in ``shape``'s layout (row-major
    without one); size-1 dimensions (index 0) are skipped."""
    linear = None
    for d in major_to_minor(shape):
        if linear is None:
            linear = index[d]
        elif shape.dims[d] != 1:
            linear = b.add(b.mul(linear, c64(shape.dims[d])), index[d])
    return linear if linear is not None else c64(0)


def strip_root_bitcasts(value: HloInstruction) -> HloInstruction:
    """Look through bitcasts that keep the element type: a root bitcast's bytes are its
    operand's bytes, so a kernel stores the operand (in the operand's layout)."""
    while value.opcode == "bitcast" and value.operands[0].shape.is_array and \
            value.operands[0].shape.element_type == value.shape.element_type:
        value = value.operands[0]
    return value


def has_register_type(shape: Shape) -> bool:
    """Whether every element of the array ``shape`` has an LLVM register type."""
    try:
        llvm_type(shape.element_type)
    except Exception:          # noqa: BLE001 - no register type: not emittable
        return False
    return True


# ----------------------------------------------------------------------------- loops
def loop_hints(module: ir.Module, hints: Sequence[tuple[str, int]]) -> ir.values.MDValue:
    """A distinct ``llvm.loop`` node (first operand: itself) carrying ``hints``."""
    ops = [module.add_metadata([ir.MetaDataString(module, name), ir.Constant(ir.IntType(32), v)])
           for name, v in hints]
    node = ir.values.MDValue(module, [], name=str(len(module.metadata)))
    node.operands = (node, *ops)
    return node


def carried_loop(b: ir.IRBuilder, lo: ir.Value | int, hi: ir.Value | int, carried: list,
                 body: Callable[[ir.Value, list], list], name: str,
                 hints: Sequence[tuple[str, int]] = ()) -> list:
    """``for (i = lo; i < hi; ++i) carried = body(i, carried)`` at the builder's
    position; returns the final carried values (phis of the loop header). ``hints``
    (e.g. ``("llvm.loop.vectorize.width", 8)``) go on the back edge as ``llvm.loop``
    metadata."""
    lo = c64(lo) if isinstance(lo, int) else lo
    hi = c64(hi) if isinstance(hi, int) else hi
    pre = b.block
    header = b.append_basic_block(f"{name}.header")
    inner = b.append_basic_block(f"{name}.body")
    exit_ = b.append_basic_block(f"{name}.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(I64, name=name)
    iv.add_incoming(lo, pre)
    phis = []
    for v in carried:
        p = b.phi(v.type)
        p.add_incoming(v, pre)
        phis.append(p)
    b.cbranch(b.icmp_signed("<", iv, hi), inner, exit_)
    b.position_at_end(inner)
    new = body(iv, list(phis))
    end = b.block
    iv.add_incoming(b.add(iv, c64(1), name=f"{name}.next", flags=["nsw"]), end)
    for p, v in zip(phis, new):
        p.add_incoming(v, end)
    latch = b.branch(header)
    if hints:
        latch.set_metadata("llvm.loop", loop_hints(b.module, hints))
    b.position_at_end(exit_)
    return list(phis)


# The innermost loops of a nest unrolled in the IR make at most this many copies of the
# loop body (see :func:`unrolled_from`).
MAX_UNROLLED_COPIES = 16


def unrolled_from(extents: Sequence[Any], limit: int,
                  max_copies: int = MAX_UNROLLED_COPIES) -> int:
    """The first level of a loop nest (``extents`` outermost first; an ``int`` is a
    constant trip count) from which every loop is unrolled in the IR: the longest
    innermost run of constant trip counts of at most ``limit`` whose product stays within
    ``max_copies``. Only innermost loops are unrolled: straight-line tiny loops let LLVM's
    SLP vectorizer combine the copies, while unrolling a tiny loop around an inner loop
    only copies that loop (and LLVM vectorizes each copy on its own: many times the
    compile time, no gain when run)."""
    k, copies = len(extents), 1
    while k > 0:
        n = extents[k - 1]
        if not isinstance(n, int) or n > limit or copies * n > max_copies:
            break
        copies *= n
        k -= 1
    return k


def for_loop(b: ir.IRBuilder, lo: ir.Value | int, hi: ir.Value | int,
             body: Callable[[ir.Value], None], name: str) -> None:
    """``for (i = lo; i < hi; ++i) body(i)`` at the builder's position."""
    def step(i: ir.Value, _: list) -> list:
        body(i)
        return []
    carried_loop(b, lo, hi, [], step, name)


# ----------------------------------------------------------------------------- emitters
class PlannedEmitter(abc.ABC):
    """A ``KernelEmitter`` that analyzes an instruction once (:meth:`analyze`: a plan,
    or None when it declines) and builds the kernel from that plan (:meth:`build`).

    ``assignment`` (a ``BufferAssignment``) tells which operand shares an output buffer;
    without it no buffers are assumed to coincide. ``kind`` names the emitter in errors.
    """

    kind = "kernel"

    def __init__(self, assignment: Any = None) -> None:
        self.assignment = assignment
        self._plans: dict[int, Any] = {}

    @abc.abstractmethod
    def analyze(self, instr: HloInstruction) -> Any | None:
        """The plan of a kernel for ``instr``, or None if this emitter cannot emit it."""

    @abc.abstractmethod
    def build(self, module: ir.Module, name: str, plan: Any) -> KernelSpec:
        """Emit kernel ``name`` into ``module`` from ``plan``."""

    def plan(self, instr: HloInstruction) -> Any | None:
        """The (memoized) analysis of ``instr``."""
        key = id(instr)
        if key not in self._plans:
            self._plans[key] = self.analyze(instr)
        return self._plans[key]

    def can_emit(self, instr: HloInstruction) -> bool:
        return self.plan(instr) is not None

    def emit(self, module: ir.Module, name: str, instr: HloInstruction) -> KernelSpec:
        plan = self.plan(instr)
        if plan is None:
            raise InvalidArgumentError(f"the {self.kind} emitter cannot emit {instr.name} "
                                       f"({instr.opcode}); ask can_emit first")
        return self.build(module, name, plan)


class PlanKernelEmitter(PlannedEmitter):
    """A :class:`PlannedEmitter` made of a module's analysis function and kernel class:
    the plan is ``analyze_plan(instr, assignment)`` (a ``staticmethod``) and the kernel
    ``kernel_class(module, name, plan).build()``."""

    analyze_plan: Callable[[HloInstruction, Any], Any]
    kernel_class: Callable[[ir.Module, str, Any], Any]

    def analyze(self, instr: HloInstruction) -> Any | None:
        return self.analyze_plan(instr, self.assignment)

    def build(self, module: ir.Module, name: str, plan: Any) -> KernelSpec:
        return self.kernel_class(module, name, plan).build()


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
        for_loop(self.b, lo, hi, body, name)

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
        return delinearize(self.b, linear, extents)

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
    run-time overlap checks). Buffers that share memory must share a pointer value, or
    casts of one: pointers are told apart by what they are casts of."""
    def root(v: ir.Value) -> ir.Value:
        while isinstance(v, ir.CastInstr):
            v = v.operands[0]
        return v
    distinct: list[ir.Value] = []
    for p in map(root, ptrs):
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


__all__ = ["c64", "major_to_minor", "element_strides", "linear_offset", "strip_root_bitcasts",
           "has_register_type", "carried_loop", "for_loop", "unrolled_from", "PlannedEmitter",
           "PlanKernelEmitter",
           "scalar_computation_supported", "emit_scalar_computation", "find_hero",
           "fused_parameter", "KernelScaffold", "annotate_noalias", "buffer_aliases",
           "bytes_of"]
