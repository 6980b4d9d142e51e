"""The contract between the CPU backend's parts: kernels, buffers and generators.

A **kernel** is one native LLVM function compiled from one top-level instruction of a
scheduled computation (a fusion, an elementwise op, a reduce, ...)::

    void @<name>(i8** buffers, i64 begin, i64 end)

``buffers[i]`` is the base address of ``KernelSpec.buffers[i]``: the instruction's
operands first, in operand order, then its result (one entry per array leaf of a tuple
result, in leaf order). The kernel does the part ``[begin, end)`` of ``units`` work
units (for a loop kernel: iterations of its outermost loop). Disjoint ranges may run
at the same time on different threads, so a kernel writes only the output elements of
its own units. ``cost`` (≈ bytes moved + flops) lets the runtime decide whether to
split a kernel across threads.

An **elemental generator** computes one element of an instruction's result from a
multi-dimensional index (``IrIndex``: one ``i64`` value per dimension of the logical
shape, in dimension order; ``[]`` for scalars). Generators compose: a loop fusion's
root generator calls its operands' generators, so no intermediate touches memory.
They emit at the builder's current insertion point and may create basic blocks (the
builder is left at the end of the block holding the value). In registers, ``pred`` is
``i1``, complex types are ``{re, im}`` structs and every other element type is its LLVM
type (``bf16``: its ``i16`` bits; ``f8*`` types: their ``i8`` bits); in memory ``pred`` is one
byte. No fast-math flags are used, and ``a*b + c`` is not contracted into an FMA, so a
last-bit difference from XLA:CPU (which contracts) is possible.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from llvmlite import ir

from ...hlo.ir import HloInstruction
from ...hlo.shape import Shape

IrIndex = list  # list[ir.Value], each i64
Generator = Callable[[IrIndex], ir.Value]

# The kernel function type: void(i8**, i64, i64).
I8P = ir.IntType(8).as_pointer()
I64 = ir.IntType(64)
KERNEL_TYPE = ir.FunctionType(ir.VoidType(), [I8P.as_pointer(), I64, I64])


@dataclass(frozen=True)
class KernelBuffer:
    """One entry of a kernel's buffer table: an array-shaped value with its layout."""

    role: str                 # "operand" or "output"
    shape: Shape              # array shape, with the layout the bytes are stored in
    instruction: HloInstruction
    index: tuple[int, ...] = ()   # shape index inside a tuple-shaped value
    operand: int | None = None    # operand number of an "operand" entry


@dataclass
class KernelSpec:
    """A compiled-to-be kernel: its LLVM name, buffer table, work units and cost."""

    name: str
    instruction: HloInstruction
    buffers: list[KernelBuffer]
    units: int = 1
    cost: float = 0.0
    notes: list[str] = field(default_factory=list)


class KernelEmitter(Protocol):
    """Emits kernels for the instructions it supports into a shared ``ir.Module``."""

    def can_emit(self, instr: HloInstruction) -> bool: ...

    def emit(self, module: ir.Module, name: str, instr: HloInstruction) -> KernelSpec: ...


def kernel_buffers(instr: HloInstruction) -> list[KernelBuffer]:
    """The buffer table of a kernel for ``instr``: array operands, then result leaves."""
    out: list[KernelBuffer] = []
    for n, op in enumerate(instr.operands):
        for index, sub in indexed_leaves(op.shape):
            out.append(KernelBuffer("operand", sub, op, index, n))
    for index, sub in indexed_leaves(instr.shape):
        out.append(KernelBuffer("output", sub, instr, index))
    return out


def operand_slots(buffers: Sequence[KernelBuffer]) -> dict[tuple[int, tuple[int, ...]], int]:
    """``(operand number, shape index) -> slot`` of a buffer table's operand entries."""
    return {(kb.operand, kb.index): slot for slot, kb in enumerate(buffers)
            if kb.role == "operand"}


def indexed_leaves(shape: Shape, prefix: tuple[int, ...] = ()
                   ) -> list[tuple[tuple[int, ...], Shape]]:
    """``(shape index, array shape)`` of every array leaf, depth first."""
    if not shape.is_tuple:
        return [] if shape.is_token else [(prefix, shape)]
    out = []
    for i, s in enumerate(shape.tuple_shapes):
        out.extend(indexed_leaves(s, prefix + (i,)))
    return out


def constant_generator(value: Any) -> Generator:
    """A generator giving ``value`` (an IR value computed already) at every index."""
    return lambda index: value


def element_generator(whole: Generator, k: int) -> Generator:
    """A generator giving element ``k`` of what ``whole`` gives (a tuple of values)."""
    return lambda index: whole(index)[k]


class _Memo:
    """A generator computing each element once per basic block (see :func:`memoize`)."""

    def __init__(self, builder: ir.IRBuilder, gen: Generator) -> None:
        self.builder, self.gen = builder, gen
        self.cache: dict[tuple[int, ...], tuple[tuple, Any, ir.Value]] = {}

    def lookup(self, index: IrIndex) -> ir.Value | None:
        """The element at ``index`` if it was computed in the builder's current block."""
        hit = self.cache.get(tuple(id(v) for v in index))
        if hit is not None and hit[1] is self.builder.block:
            return hit[2]
        return None

    def __call__(self, index: IrIndex) -> ir.Value:
        value = self.lookup(index)
        if value is None:
            value = self.gen(index)
            # the entry keeps the index values alive, so their ids stay unique
            self.cache[tuple(id(v) for v in index)] = (tuple(index), self.builder.block, value)
        return value


def memoize(builder: ir.IRBuilder, gen: Generator) -> "_Memo":
    """``gen`` computing each element once per basic block: a value is reused when the
    same index values (by identity) are asked for again in the block that computed it.
    The result also has ``lookup(index)``: the value if already computed, else None."""
    return _Memo(builder, gen)


def declare_kernel(module: ir.Module, name: str) -> tuple[ir.Function, ir.IRBuilder]:
    """Add ``void name(i8**, i64, i64)`` to ``module``; return it and a builder at entry."""
    fn = ir.Function(module, KERNEL_TYPE, name=name)
    fn.args[0].name, fn.args[1].name, fn.args[2].name = "buffers", "begin", "end"
    fn.args[0].add_attribute("noalias")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    return fn, builder


def buffer_pointer(builder: ir.IRBuilder, fn: ir.Function, i: int,
                   element: ir.Type) -> ir.Value:
    """``buffers[i]`` cast to ``element*``."""
    slot = builder.gep(fn.args[0], [ir.Constant(I64, i)], inbounds=True)
    raw = builder.load(slot, name=f"buf{i}")
    return builder.bitcast(raw, element.as_pointer(), name=f"p{i}")


__all__ = ["IrIndex", "Generator", "KERNEL_TYPE", "KernelBuffer", "KernelSpec",
           "KernelEmitter", "kernel_buffers", "operand_slots", "indexed_leaves", "memoize",
           "constant_generator", "element_generator",
           "declare_kernel", "buffer_pointer"]
