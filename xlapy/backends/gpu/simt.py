"""Kernel frames for the two GPU targets: NVPTX (real threads) and the host simulator.

A GPU kernel is written once against a :class:`KernelFrame` and emitted for either target:

- :class:`NvptxTarget`: ``void @k(i8* b0, ..., i8* bn)`` with the ``ptx_kernel`` calling
  convention; the block index is ``llvm.nvvm.read.ptx.sreg.ctaid.x``, the thread index
  ``tid.x``; :meth:`KernelFrame.threads` emits its body once (it *is* one thread's code),
  :meth:`KernelFrame.barrier` is ``llvm.nvvm.barrier0``, shared memory is an
  ``addrspace(3)`` global, a per-thread value is one register (an ``alloca`` that
  ``mem2reg`` removes) and warp reductions use ``llvm.nvvm.shfl.sync.down``.
- :class:`SimTarget`: ``void @k(i8** buffers, i64 block_begin, i64 block_end)`` (the CPU
  kernel ABI, so the host JIT and the CPU runtime's calling code apply): a loop over the
  blocks of the grid; inside a block every :meth:`KernelFrame.threads` body is a loop over
  the block's threads. Barriers are *loop fission by construction*: a kernel is a sequence
  of ``threads`` phases, and a barrier may only stand between phases (never inside one),
  so running each phase for all threads before the next is exactly the barrier's
  guarantee. Values that cross a phase live in per-thread arrays (``[block x T]``) or in
  the per-block shared array; a warp shuffle is its own phase reading the other lane's
  slot (``shfl.down`` by ``d`` reads lane ``l + d`` before lane ``l + d`` updates it, as
  the ascending loop guarantees).

So a kernel that puts a barrier inside a data-dependent branch cannot be written in this
form: the structure forbids the divergent barriers that hang real GPUs.
"""
from __future__ import annotations

import abc
from typing import Callable

from llvmlite import ir

from ..cpu.kernel_support import c64, for_loop
from ..cpu.llvm_types import declare_function
from .ptx import TRIPLE, data_layout

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
I8P = I8.as_pointer()
WARP = 32
SIM_KERNEL_TYPE = ir.FunctionType(ir.VoidType(), [I8P.as_pointer(), I64, I64])


class PerThread:
    """One value per thread of the block (a register on the GPU, an array in the simulator)."""

    def __init__(self, frame: "KernelFrame", ty: ir.Type) -> None:
        self.frame, self.ty = frame, ty
        count = frame.block_size if frame.target.simulated else 1
        self.slot = frame.entry_alloca(ir.ArrayType(ty, count))

    def ptr(self, tid: ir.Value) -> ir.Value:
        index = tid if self.frame.target.simulated else c64(0)
        return self.frame.b.gep(self.slot, [c64(0), index], inbounds=True)

    def load(self, tid: ir.Value) -> ir.Value:
        return self.frame.b.load(self.ptr(tid))

    def store(self, tid: ir.Value, value: ir.Value) -> None:
        self.frame.b.store(value, self.ptr(tid))


class KernelFrame:
    """The code of one block of a kernel being emitted (see the module docstring)."""

    def __init__(self, target: "Target", module: ir.Module, fn: ir.Function,
                 b: ir.IRBuilder, buffers: list[ir.Value], block_size: int,
                 entry: ir.Block) -> None:
        self.target, self.module, self.fn, self.b = target, module, fn, b
        self.buffers = buffers            # i8* per kernel buffer
        self.block_size = block_size
        self.block: ir.Value = c64(0)     # i64 block index (set by the target)
        self._entry = entry
        self._shared = 0

    def entry_alloca(self, ty: ir.Type) -> ir.Value:
        """An ``alloca`` in the function's entry block."""
        with self.b.goto_block(self._entry):
            return self.b.alloca(ty)

    def threads(self, body: Callable[[ir.Value], None]) -> None:
        """Run ``body(tid)`` (``tid`` an i64) for every thread of the block."""
        if self.target.simulated:
            for_loop(self.b, c64(0), c64(self.block_size), body, "tid")
        else:
            tid = self.b.zext(self.b.call(_sreg(self.module, "tid.x"), []), I64)
            body(tid)

    def barrier(self) -> None:
        """All threads of the block reach this point before any goes on (between phases)."""
        if not self.target.simulated:
            self.b.call(declare_function(self.module, "llvm.nvvm.barrier0",
                                         ir.VoidType(), []), [])

    def per_thread(self, ty: ir.Type) -> PerThread:
        return PerThread(self, ty)

    def shared(self, ty: ir.Type, count: int) -> ir.Value:
        """A generic pointer to ``count`` elements of ``ty`` shared by the block."""
        arr = ir.ArrayType(ty, count)
        if self.target.simulated:
            slot = self.entry_alloca(arr)
            return self.b.gep(slot, [c64(0), c64(0)], inbounds=True)
        g = ir.GlobalVariable(self.module, arr, name=self.module.get_unique_name(
            f"{self.fn.name}.shared"), addrspace=3)
        g.linkage = "internal"
        g.initializer = ir.Constant(arr, ir.Undefined)
        g.align = 16
        first = self.b.gep(g, [c64(0), c64(0)], inbounds=True)
        return self.b.addrspacecast(first, ty.as_pointer())

    def warp_reduce(self, var: PerThread, combine: Callable[[ir.Value, ir.Value], ir.Value],
                    width: int = WARP) -> None:
        """Lane 0 of each warp ends with the combination of its warp's 32 values of ``var``
        (other lanes hold partial combinations). With ``width`` (a power of two below 32),
        the first lane of each aligned group of ``width`` lanes ends with its group's
        combination: the shuffles start at ``width / 2``, so that lane reads only lanes
        of its group."""
        b = self.b
        for off in (16, 8, 4, 2, 1):
            if off >= width:
                continue
            if self.target.simulated:
                def body(tid: ir.Value, off: int = off) -> None:
                    lane = b.and_(tid, c64(WARP - 1))
                    ok = b.and_(b.icmp_unsigned("<", b.add(lane, c64(off)), c64(WARP)),
                                b.icmp_unsigned("<", b.add(tid, c64(off)),
                                                c64(self.block_size)))
                    with b.if_then(ok):
                        var.store(tid, combine(var.load(tid), var.load(b.add(tid, c64(off)))))
                self.threads(body)
            else:
                def body(tid: ir.Value, off: int = off) -> None:
                    v = var.load(tid)
                    var.store(tid, combine(v, shfl_down(b, self.module, v, off)))
                self.threads(body)


def _sreg(module: ir.Module, name: str) -> ir.Function:
    return declare_function(module, f"llvm.nvvm.read.ptx.sreg.{name}", I32, [])


def shfl_down(b: ir.IRBuilder, module: ir.Module, v: ir.Value, off: int) -> ir.Value:
    """``__shfl_down_sync(0xffffffff, v, off)`` for a value of up to 64 bits."""
    fn = declare_function(module, "llvm.nvvm.shfl.sync.down.i32", I32, [I32, I32, I32, I32])
    mask, c = ir.Constant(I32, -1), ir.Constant(I32, 0x1f)

    def one(x32: ir.Value) -> ir.Value:
        return b.call(fn, [mask, x32, ir.Constant(I32, off), c])
    ty = v.type
    bits = ty.width if isinstance(ty, ir.IntType) else {"float": 32, "double": 64,
                                                         "half": 16}[str(ty)]
    as_int = b.bitcast(v, ir.IntType(bits)) if not isinstance(ty, ir.IntType) else v
    if bits <= 32:
        wide = b.zext(as_int, I32) if bits < 32 else as_int
        got = one(wide)
        got = b.trunc(got, ir.IntType(bits)) if bits < 32 else got
    else:
        lo = one(b.trunc(as_int, I32))
        hi = one(b.trunc(b.lshr(as_int, ir.Constant(ir.IntType(64), 32)), I32))
        got = b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), c64(32)))
    return b.bitcast(got, ty) if not isinstance(ty, ir.IntType) else got


class Target(abc.ABC):
    """Where kernels run: :class:`NvptxTarget` or :class:`SimTarget`."""

    name = "target"
    simulated = False

    @abc.abstractmethod
    def new_module(self, name: str) -> ir.Module:
        """An empty LLVM module for this target (triple and data layout set)."""

    @abc.abstractmethod
    def kernel(self, module: ir.Module, name: str, nbuf: int, block_size: int,
               body: Callable[[KernelFrame], None]) -> ir.Function:
        """Define kernel ``name`` over ``nbuf`` buffers whose block code ``body`` emits."""


class NvptxTarget(Target):
    """Kernels for NVIDIA GPUs (PTX through LLVM's NVPTX back end)."""

    name = "nvptx"

    def new_module(self, name: str) -> ir.Module:
        m = ir.Module(name=name)
        m.triple, m.data_layout = TRIPLE, data_layout()
        return m

    def kernel(self, module: ir.Module, name: str, nbuf: int, block_size: int,
               body: Callable[[KernelFrame], None]) -> ir.Function:
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P] * nbuf), name=name)
        fn.calling_convention = "ptx_kernel"
        # older LLVMs find kernels through this annotation (newer ones upgrade it)
        module.add_named_metadata("nvvm.annotations",
                                  [fn, "kernel", ir.Constant(I32, 1)])
        # .maxntid: ptxas sizes the registers for the block actually launched (without it,
        # a 1024-thread block may ask for more registers than a multiprocessor has)
        module.add_named_metadata("nvvm.annotations",
                                  [fn, "maxntidx", ir.Constant(I32, block_size)])
        for i, a in enumerate(fn.args):
            a.name = f"b{i}"
        entry = fn.append_basic_block("entry")
        b = ir.IRBuilder(entry)
        start = fn.append_basic_block("start")
        b.position_at_end(start)
        frame = KernelFrame(self, module, fn, b, list(fn.args), block_size, entry)
        frame.block = b.zext(b.call(_sreg(module, "ctaid.x"), []), I64)
        body(frame)
        b.ret_void()
        with b.goto_block(entry):
            b.branch(start)
        return fn


class SimTarget(Target):
    """Kernels for the host that emulate the grid (module docstring)."""

    name = "sim"
    simulated = True

    def __init__(self) -> None:
        from ..cpu.jit_engine import engine
        self._engine = engine

    def new_module(self, name: str) -> ir.Module:
        return self._engine().new_module(name)

    def kernel(self, module: ir.Module, name: str, nbuf: int, block_size: int,
               body: Callable[[KernelFrame], None]) -> ir.Function:
        fn = ir.Function(module, SIM_KERNEL_TYPE, name=name)
        table, lo, hi = fn.args
        entry = fn.append_basic_block("entry")
        b = ir.IRBuilder(entry)
        start = fn.append_basic_block("start")
        b.position_at_end(start)
        buffers = [b.load(b.gep(table, [c64(i)], inbounds=True)) for i in range(nbuf)]
        frame = KernelFrame(self, module, fn, b, buffers, block_size, entry)

        def block(blk: ir.Value) -> None:
            frame.block = blk
            body(frame)
        for_loop(b, lo, hi, block, "block")
        b.ret_void()
        with b.goto_block(entry):
            b.branch(start)
        return fn


__all__ = ["KernelFrame", "PerThread", "Target", "NvptxTarget", "SimTarget", "shfl_down",
           "WARP", "SIM_KERNEL_TYPE"]
