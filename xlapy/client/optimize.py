"""``optimize``: the HLO pass pipeline a backend runs before code generation, with XLA's dumps.

The work is :func:`xlapy.backends.compile.optimize_module` (clone -> the backend's
pipeline -> buffer assignment -> dumps); this is the user-facing entry: it accepts HLO
text, verifies the input first and picks the backend's target by name.
"""
from __future__ import annotations

from ..backends.compile import OptimizationResult, optimize_module, pass_context
from ..backends.target import get_target
from ..config import DebugOptions
from ..hlo.ir import HloModule
from ..passes import HloPassPipeline
from .run import as_module, verify_for_execution


def pipeline_for(backend: str, debug_options: DebugOptions | None = None,
                 verify: bool = False) -> HloPassPipeline:
    """The pass pipeline ``backend`` runs (its ``xlapy/backends/<name>/pipeline.py``;
    ``"interpreter"`` runs the target-independent passes only)."""
    return get_target(backend).pipeline(pass_context(debug_options, verify=verify))


def optimize_with_report(module_or_text: HloModule | str, backend: str = "cpu", *,
                         verify: bool = False,
                         debug_options: DebugOptions | None = None) -> OptimizationResult:
    """Like :func:`optimize`, also returning pass timings and the buffer assignment."""
    source = as_module(module_or_text)
    verify_for_execution(source, module_or_text if isinstance(module_or_text, str) else None)
    return optimize_module(source, get_target(backend),
                           pass_context(debug_options, verify=verify))


def optimize(module_or_text: HloModule | str, backend: str = "cpu", *, verify: bool = False,
             debug_options: DebugOptions | None = None) -> HloModule:
    """Run the HLO pass pipeline ``backend`` would run and return the optimized module.

    The input is not modified. The result still runs on the interpreter and computes
    the same values. The input is verified first (a malformed module raises
    ``VerificationError``, with ``line:column`` when given as text); ``verify=True`` also
    runs the HLO verifier after every changing pass. With ``--xla_dump_to`` set
    (``XLA_FLAGS``) the files XLA writes are written (:mod:`xlapy.backends.compile`).
    """
    return optimize_with_report(module_or_text, backend, verify=verify,
                                debug_options=debug_options).module


__all__ = ["OptimizationResult", "optimize", "optimize_with_report", "pipeline_for"]
