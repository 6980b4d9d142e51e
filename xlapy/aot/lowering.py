"""HLO module -> the pieces of an ahead-of-time object: optimized HLO, buffer assignment,
every kernel in one LLVM module, and the CPU backend's plan of thunks.

The same stages as :class:`~xlapy.backends.cpu.compiler.CpuBackend` run (verifier, CPU
pass pipeline, buffer assignment, kernel emitters, :class:`PlanBuilder`), with two
differences: dots and convolutions get kernels that call BLAS themselves
(``blas_kernels.py``) or self-contained ones (``dot_kernel.py``, ``conv_kernel.py``)
instead of the BLAS/NumPy library routines, and nothing is
JIT-compiled -- the kernels stay in the ``ir.Module`` the entry function (``entry_ir.py``)
is added to. An instruction no kernel takes -- the JIT would run it as a library call
those kernels decline or in the interpreter (a host callback, fft, LAPACK custom-calls,
topk, ...) -- is an :class:`~xlapy.errors.UnimplementedError` naming the instruction and,
when the source text is known, its line there, raised before the plan is built.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from llvmlite import ir

from ..backends.cpu.compiler import KernelNames, kernel_candidates, kernel_emitters
from ..backends.cpu.plan_builder import PlanBuilder, library_supports
from ..backends.cpu.thunks import Plan
from ..config import debug_options
from ..errors import UnimplementedError
from ..hlo.ir import HloInstruction, HloModule
from ..hlo.shape import ProgramShape
from ..hlo.verifier import verify_module
from ..backends.compile import optimize_module
from ..backends.interpreter.host_callbacks import is_host_callback
from ..backends.target import get_target
from ..passes.buffer_assignment import BufferAssignment
from .blas_kernels import BlasConvEmitter, BlasDotEmitter, scratch_bytes
from .conv_kernel import ConvKernelEmitter
from .dot_kernel import DotKernelEmitter

@dataclass
class Lowered:
    """What the entry-function generator needs: the optimized module, its buffers, the
    kernels' LLVM module (kernel names are the thunks' ``name``) and the entry plan."""

    module: HloModule
    assignment: BufferAssignment
    llvm_module: ir.Module
    plan: Plan
    kernel_count: int
    scratch: dict[str, int]           # kernel name -> scratch bytes per thread (if any)
    uses_blas: bool


def lower(source: HloModule, llvm_module: ir.Module, prefix: str,
          source_text: str | None = None, blas: bool = True) -> Lowered:
    """Verify, optimize and emit ``source`` (not modified) into ``llvm_module``; kernel
    symbols start with ``prefix``. ``blas``: dots and convolutions call BLAS where
    ``blas_kernels.py`` can describe them (the self-contained kernels otherwise). Raises
    UnimplementedError for unplaceable steps."""
    verify_module(source, unique_names="computation")
    module = source.clone()
    entry = module.entry
    # the C interface takes and returns row-major buffers: layout assignment inserts the
    # copies to and from any other layout the source asked for
    module.attributes["entry_computation_layout"] = ProgramShape(
        [p.shape.without_layout().with_default_layout() for p in entry.parameters],
        entry.root.shape.without_layout().with_default_layout())
    # the object's own convolution kernels store the bare convolution: no bias/relu output
    # fusion (the JIT's generated kernel applies it as it stores a tile)
    with debug_options(xla_cpu_conv_output_fusion=False):
        optimized = optimize_module(module, get_target("cpu"))
    module, assignment = optimized.module, optimized.buffers
    own: list[Any] = ([BlasDotEmitter(), BlasConvEmitter()] if blas else []) + [
        DotKernelEmitter(), ConvKernelEmitter()]
    emitters = own + kernel_emitters(assignment)
    names = KernelNames(f"{prefix}_k_")
    kernels: dict[int, tuple[Any, int]] = {}
    scratch: dict[str, int] = {}
    uses_blas = False
    for comp_name, instr in kernel_candidates(assignment):
        library = library_supports(instr)
        em = next((e for e in emitters if e.can_emit(instr)
                   and (not library or e in own)), None)
        if em is None:
            raise UnimplementedError(_unplaceable(instr, library, source_text))
        spec = em.emit(llvm_module, names.new(comp_name, instr), instr)
        uses_blas |= isinstance(em, (BlasDotEmitter, BlasConvEmitter))
        if scratch_bytes(spec):
            scratch[spec.name] = scratch_bytes(spec)
        kernels[id(instr)] = (spec, 0)
    builder = PlanBuilder(module, assignment, kernels, None, float("inf"))
    plan = builder.plan(module.entry)
    return Lowered(module, assignment, llvm_module, plan, len(kernels), scratch, uses_blas)


def _unplaceable(instr: HloInstruction, library: bool, source_text: str | None) -> str:
    why = ("a library call (the self-contained dot/convolution kernels decline its element "
           "types)" if library else
           "a call back into this Python process (a host callback)" if is_host_callback(instr)
           else "the reference interpreter (no native kernel for it)")
    names = [instr.name]
    if instr.opcode == "fusion":
        names += [i.name for i in instr.attrs["calls"].instructions
                  if i.opcode not in ("parameter", "constant")]
    where = ""
    for n in names:
        line = _line_of(source_text, n)
        if line is not None:
            where = f" (line {line} of the source HLO, instruction %{n})"
            break
    ops = sorted({i.opcode for i in instr.attrs["calls"].instructions}) \
        if instr.opcode == "fusion" else [instr.opcode]
    return (f"ahead-of-time compilation cannot place %{instr.name} ({'/'.join(ops)}) in "
            f"computation {instr.parent.name}{where}: the CPU backend runs it as {why}, which "
            f"an object file cannot contain")


def _line_of(text: str | None, name: str) -> int | None:
    """1-based line of ``text`` defining instruction ``name`` (None if absent)."""
    if not text:
        return None
    pattern = re.compile(r"^\s*(ROOT\s+)?%?" + re.escape(name) + r"\s*=", re.M)
    m = pattern.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else None


__all__ = ["Lowered", "lower"]
