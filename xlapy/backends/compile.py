"""Optimizing a module for a backend: clone -> pipeline -> assign buffers -> dump.

:func:`optimize_module` is the one place this happens, for ``xlapy.optimize``, the front
end's ``compiler_ir("optimized_hlo")`` and every backend's compiler (the CPU backend
then emits code from the result). With dumping on (``--xla_dump_to``) it writes the
files XLA writes: ``module_NNNN.<name>.before_optimizations.txt``,
``...after_optimizations.txt`` and ``...after_optimizations-buffer-assignment.txt``
(plus ``.dot``/``.html`` when asked, and per-pass files for ``--xla_dump_hlo_pass_re``).

:func:`pass_context` makes the :class:`~xlapy.passes.context.PassContext` a compilation
gives its passes: the options, and the reference interpreter as constant evaluator.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from ..config import DebugOptions, get_debug_options
from ..hlo.ir import HloInstruction, HloModule
from ..passes.buffer_assignment import BufferAssignment
from ..passes.context import PassContext
from ..passes.dump import dump_hlo_module, dump_text, module_key, share_dump_key
from ..passes.pipeline import PipelineResult
from .target import Target

log = logging.getLogger("xlapy.optimize")


@dataclass
class OptimizationResult:
    """The optimized module with the pipeline's per-pass records and its buffer assignment
    (``buffer_seconds``: how long assigning the buffers took)."""

    module: HloModule
    pipeline: PipelineResult
    buffers: BufferAssignment
    buffer_seconds: float = 0.0


def evaluate_constant(instr: HloInstruction, operands: list) -> Any:
    """``instr`` applied to constant operand values by the reference interpreter (exact
    HLO semantics): the constant evaluator of every compilation's passes."""
    from .interpreter.evaluator import Evaluator     # imported on the first fold
    return Evaluator().evaluate(instr, operands)


def pass_context(options: DebugOptions | None = None, *, verify: bool = False,
                 reference_mode: bool = False) -> PassContext:
    """The context a compilation gives its passes: ``options`` (default: ``XLA_FLAGS``),
    the reference interpreter as constant evaluator, verification and reference mode."""
    return PassContext(options if options is not None else get_debug_options(),
                       constant_evaluator=evaluate_constant, verify=verify,
                       reference_mode=reference_mode)


def optimize_module(source: HloModule, target: Target,
                    ctx: PassContext | None = None) -> OptimizationResult:
    """Run ``target``'s pipeline on a clone of ``source`` (not modified), assign its
    buffers and write the dumps ``ctx.dump`` asks for (module docstring)."""
    ctx = ctx if ctx is not None else pass_context()
    dump = ctx.dump
    key = module_key(source)
    module = source.clone()
    share_dump_key(module, key)             # the per-pass dumps carry the compile's number
    if dump.enabled:
        dump_hlo_module(module, "before_optimizations", dump, key=key)
    result = target.pipeline(ctx).run_with_report(module, ctx)
    start = time.perf_counter()
    buffers = target.assign_buffers(module)
    buffer_seconds = time.perf_counter() - start
    if dump.enabled:
        dump_hlo_module(module, "after_optimizations", dump, key=key)
        dump_text(module, "after_optimizations-buffer-assignment.txt", buffers.to_text(), dump,
                  key=key)
    log.debug("optimized %s for %s in %.3f s", module.name, target.name, result.seconds)
    return OptimizationResult(module, result, buffers, buffer_seconds)


__all__ = ["OptimizationResult", "evaluate_constant", "optimize_module", "pass_context"]
