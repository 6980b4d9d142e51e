"""GPU kernels: one per fused instruction, with its launch dimensions.

Every kernel takes the instruction's buffer table (``kernel_api.kernel_buffers``: operands,
then result leaves; :attr:`GpuKernel.scratch` adds one zeroed scratch buffer last) and
runs on a 1-D grid of ``grid`` blocks of ``block`` threads (XLA's ``LaunchDimensions``).

Two sources of kernels, tried in order:

1. the GPU's own emitters (``reduction.py``: row and full reductions, a block per row with
   warp shuffles; split rows combined by the last block);
2. **per-unit kernels** from the CPU backend's emitters: a CPU kernel
   ``void(i8** buffers, i64 begin, i64 end)`` does work units that may run concurrently
   and writes only its own units' outputs (``kernel_api``), so a GPU kernel in which
   global thread ``u`` runs unit ``[u, u+1)`` computes the same result. The CPU loop
   emitter is asked for one element per unit, so a loop fusion or elementwise op becomes
   XLA's loop kernel (one thread per element, consecutive threads on consecutive
   elements of the output's physical order: coalesced writes; the CPU's tiled transpose
   nest is not used -- kernels that read an operand transposed are ``transpose.py``'s
   shared-memory tiles, tried first). The CPU emitters' elemental
   generators and inline math (``math_ir``) are target-independent LLVM IR. A CPU kernel
   that calls a function outside LLVM's intrinsics (the C library's double-precision
   math, ``malloc`` in the sort emitter) or keeps state in mutable globals (the CPU's
   split reductions combine partial results through a global counter, whose ordering
   the per-unit wrapper does not make safe across GPU blocks) is not used: the
   instruction runs in the host fallback instead, on both targets alike (so the
   simulator runs the GPU's plan).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from llvmlite import ir

from ...hlo.ir import HloInstruction
from ..cpu.kernel_api import KernelBuffer
from ..cpu.kernel_support import c64
from .simt import I8P, KernelFrame, Target

log = logging.getLogger("xlapy.gpu")

BLOCK = 256             # threads per block of per-unit kernels
MAX_GRID = 2 ** 31 - 1


@dataclass
class GpuKernel:
    """An emitted kernel: its symbol, instruction, buffer table and launch dimensions."""

    name: str
    instruction: HloInstruction
    buffers: list[KernelBuffer]
    grid: int
    block: int
    kind: str
    module: ir.Module | None = None
    scratch: int = 0                  # bytes of zeroed scratch (the last kernel argument)
    notes: list[str] = field(default_factory=list)
    #: kernels of the same module launched after this one with the same arguments:
    #: ``(symbol, grid, block)``
    after: list[tuple[str, int, int]] = field(default_factory=list)
    #: a convolution's im2col kernel (``conv_im2col.Im2col``), in the same module, used
    #: instead of this kernel when cuBLAS is found
    im2col: Any = None

    @property
    def symbols(self) -> list[str]:
        """The kernel functions to load: this one, those of :attr:`after` and the im2col
        kernel."""
        return [self.name] + [a[0] for a in self.after] + \
            ([self.im2col.name] if self.im2col is not None else [])

    @property
    def threads(self) -> int:
        return self.grid * self.block


def _external_calls(module: ir.Module) -> list[str]:
    """Functions ``module`` declares but does not define, other than LLVM intrinsics."""
    return sorted(g.name for g in module.globals.values()
                  if isinstance(g, ir.Function) and g.is_declaration
                  and not g.name.startswith("llvm."))


def launch_dims(units: int, block: int = BLOCK) -> tuple[int, int]:
    """(grid, block) covering ``units`` threads, as XLA's ``CalculateLaunchDimensions``:
    blocks of ``block`` threads (fewer, a multiple of the warp, for small kernels)."""
    if units <= 0:
        return 0, 1
    threads = min(block, -(-units // 32) * 32)
    return -(-units // threads), threads


def _untiled_loop_emitter(assignment: Any):
    """The CPU loop emitter without its tiled-transpose nest: a CPU tile is one unit, so
    on the GPU one thread would do a whole 64x64 tile through local memory; a thread per
    element (coalesced writes, strided reads) keeps the GPU busy instead."""
    from ..cpu.loop_emitter import LoopEmitter

    class UntiledLoopEmitter(LoopEmitter):
        def analyze(self, instr: HloInstruction):
            a = super().analyze(instr)
            if a is not None:
                a.tiling = None
            return a
    return UntiledLoopEmitter(assignment, unit_elements=1)


class UnitKernelEmitter:
    """Per-unit GPU kernels from the CPU emitters (module docstring, item 2)."""

    def __init__(self, assignment: Any, target: Target) -> None:
        from ..cpu.compiler import kernel_emitters
        from ..cpu.loop_emitter import LoopEmitter
        self.target = target
        self.emitters = [_untiled_loop_emitter(assignment) if isinstance(e, LoopEmitter)
                         else e for e in kernel_emitters(assignment)]
        self.refused: dict[str, str] = {}

    def emit(self, name: str, instr: HloInstruction) -> GpuKernel | None:
        em = next((e for e in self.emitters if e.can_emit(instr)), None)
        if em is None:
            return None
        module = self.target.new_module(name)
        spec = em.emit(module, f"{name}.unit", instr)
        external = _external_calls(module)
        state = [g.name for g in module.globals.values()
                 if isinstance(g, ir.GlobalVariable) and not g.global_constant]
        if external or state:
            why = f"calls {', '.join(external)}" if external else \
                f"keeps state between threads in {', '.join(state)}"
            self.refused[instr.name] = why
            log.debug("no GPU kernel for %s: the CPU kernel %s", instr.name, why)
            return None
        inner = module.globals[f"{name}.unit"]
        inner.linkage = "internal"
        inner.attributes.add("alwaysinline")
        units = spec.units
        grid, block = launch_dims(units)
        if grid > MAX_GRID:
            return None
        nbuf = len(spec.buffers)

        def body(frame: KernelFrame) -> None:
            b = frame.b
            table = frame.entry_alloca(ir.ArrayType(I8P, max(1, nbuf)))
            for i, p in enumerate(frame.buffers):
                b.store(p, b.gep(table, [c64(0), c64(i)], inbounds=True))
            first = b.gep(table, [c64(0), c64(0)], inbounds=True)

            def thread(tid: ir.Value) -> None:
                u = b.add(b.mul(frame.block, c64(block)), tid)
                with b.if_then(b.icmp_signed("<", u, c64(units))):
                    b.call(inner, [first, u, b.add(u, c64(1))])
            frame.threads(thread)
        self.target.kernel(module, name, nbuf, block, body)
        return GpuKernel(name, instr, spec.buffers, grid, block, f"unit:{em.kind}", module,
                         notes=list(spec.notes))


__all__ = ["GpuKernel", "UnitKernelEmitter", "launch_dims", "BLOCK"]
