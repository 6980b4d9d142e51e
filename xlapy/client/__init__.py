"""Client layer: backend registry, running HLO (``run_hlo``) and result comparison."""
from __future__ import annotations

from .backends import available_backends, get_backend, register_backend
from .compare import compare_arrays, compare_outputs
from .optimize import OptimizationResult, optimize, optimize_with_report, pipeline_for
from .run import as_module, flatten_result, run_hlo

__all__ = ["run_hlo", "as_module", "flatten_result", "get_backend", "register_backend",
           "available_backends", "compare_arrays", "compare_outputs", "optimize",
           "optimize_with_report", "OptimizationResult", "pipeline_for"]
