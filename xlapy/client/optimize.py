"""``optimize``: the HLO pass pipeline a backend runs before code generation, with XLA's dumps.

With ``--xla_dump_to`` set (``XLA_FLAGS``), ``optimize`` writes the files XLA
writes: ``module_NNNN.<name>.before_optimizations.txt``,
``...after_optimizations.txt`` and ``...after_optimizations-buffer-assignment.txt``
(plus ``.dot``/``.html`` when asked and per-pass files for
``--xla_dump_hlo_pass_re``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from ..config import DebugOptions, DumpConfig, get_debug_options
from ..errors import InvalidArgumentError
from ..hlo.ir import HloModule
from ..passes import HloPassPipeline, PipelineResult, cpu_pipeline, target_independent_passes
from ..passes.buffer_assignment import BufferAssignment, assign_buffers
from ..passes.dump import dump_hlo_module, dump_text, module_key
from .run import as_module, verify_for_execution

log = logging.getLogger("xlapy.optimize")


@dataclass
class OptimizationResult:
    """The optimized module with the pipeline's per-pass records and its buffer assignment."""

    module: HloModule
    pipeline: PipelineResult
    buffers: BufferAssignment


def pipeline_for(backend: str, debug_options: DebugOptions | None = None,
                 verify: bool = False) -> HloPassPipeline:
    """The pass pipeline ``backend`` runs (``"cpu"``, ``"gpu"``/``"gpu_sim"``;
    ``"interpreter"`` runs the target-independent passes only)."""
    name = backend.lower()
    if name in ("cpu", "host"):
        return cpu_pipeline(debug_options, verify=verify)
    if name in ("gpu", "gpu_sim"):
        from ..backends.gpu.pipeline import gpu_pipeline
        return gpu_pipeline(debug_options, verify=verify)
    if name == "interpreter":
        return HloPassPipeline("interpreter", target_independent_passes(), verify=verify,
                               debug_options=debug_options)
    raise InvalidArgumentError(f"no optimization pipeline for backend {backend!r} "
                               "(known: cpu, gpu, gpu_sim, interpreter)")


def optimize_with_report(module_or_text: HloModule | str, backend: str = "cpu", *,
                         verify: bool = False,
                         debug_options: DebugOptions | None = None) -> OptimizationResult:
    """Like :func:`optimize`, also returning pass timings and the buffer assignment."""
    source = as_module(module_or_text)
    verify_for_execution(source, module_or_text if isinstance(module_or_text, str) else None)
    options = debug_options or get_debug_options()
    dump = DumpConfig(options)
    key = module_key(source)
    module = source.clone()
    if dump.enabled:
        dump_hlo_module(module, "before_optimizations", dump, key=key)
    result = pipeline_for(backend, options, verify).run_with_report(module)
    buffers = assign_buffers(module)
    if dump.enabled:
        dump_hlo_module(module, "after_optimizations", dump, key=key)
        dump_text(module, "after_optimizations-buffer-assignment.txt", buffers.to_text(), dump,
                  key=key)
    log.debug("optimized %s for %s in %.3f s", module.name, backend, result.seconds)
    return OptimizationResult(module, result, buffers)


def optimize(module_or_text: HloModule | str, backend: str = "cpu", *, verify: bool = False,
             debug_options: DebugOptions | None = None) -> HloModule:
    """Run the HLO pass pipeline ``backend`` would run and return the optimized module.

    The input is not modified. The result still runs on the interpreter and computes
    the same values. The input is verified first (a malformed module raises
    ``VerificationError``, with ``line:column`` when given as text); ``verify=True`` also
    runs the HLO verifier after every changing pass.
    """
    return optimize_with_report(module_or_text, backend, verify=verify,
                                debug_options=debug_options).module
