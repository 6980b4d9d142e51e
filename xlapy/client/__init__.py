"""Client layer: backend registry, running HLO (``run_hlo``) and result comparison."""
from __future__ import annotations

from .backends import available_backends, get_backend, register_backend
from .compare import compare_arrays, compare_outputs
from .optimize import OptimizationResult, optimize, optimize_with_report, pipeline_for
from .run import as_module, flatten_result, run_hlo


def _evaluate_constant(instr, operands):
    """Constant folding (layer 2) evaluates through the interpreter (layer 3) via this hook;
    the interpreter is imported on the first fold, keeping ``import xlapy`` light."""
    from ..backends.interpreter.evaluator import Evaluator
    return Evaluator().evaluate(instr, operands)


def _install_constant_evaluator() -> None:
    from ..passes.constant_folding import set_constant_evaluator
    set_constant_evaluator(_evaluate_constant)


_install_constant_evaluator()

__all__ = ["run_hlo", "as_module", "flatten_result", "get_backend", "register_backend",
           "available_backends", "compare_arrays", "compare_outputs", "optimize",
           "optimize_with_report", "OptimizationResult", "pipeline_for"]
