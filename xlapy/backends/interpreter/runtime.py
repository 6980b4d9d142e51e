"""The interpreter backend's runtime: a verified module bound to the reference evaluator."""
from __future__ import annotations

from typing import Any, Collection, Sequence

from ...hlo.ir import HloModule
from ...hlo.verifier import verify_module
from ...passes.dynamic_padder import DynamicPadder, is_dynamic
from .evaluator import Evaluator


class InterpreterExecutable:
    """The reference interpreter bound to one module."""

    def __init__(self, module: HloModule) -> None:
        self.module = module
        # One evaluator per executable: instruction orders are computed once, and the
        # stateful rng op advances across executions as XLA's does.
        self._evaluator = Evaluator(module)

    def execute(self, args: Sequence[Any], owned: Collection[int] = ()) -> Any:
        """Evaluate the module (``owned`` is accepted and ignored: arguments are never
        written)."""
        return self._evaluator.run(args)

    def new_instance(self) -> "InterpreterExecutable":
        """Another executable of the same module that may run at the same time as this one
        (one per device of a multi-device run)."""
        return InterpreterExecutable(self.module)


class InterpreterBackend:
    """Runs HLO on the NumPy reference interpreter (no optimization passes)."""

    name = "interpreter"

    def compile(self, module: HloModule) -> InterpreterExecutable:
        """Verify ``module`` (``VerificationError`` names the instruction) and bind it. A
        module with dynamic dimensions is bound after XLA's ``DynamicPadder`` made it
        static (XLA's interpreter compiler runs that pass too)."""
        verify_module(module, unique_names="computation")
        if is_dynamic(module):
            module = module.clone()
            DynamicPadder().run(module)
        return InterpreterExecutable(module)


__all__ = ["InterpreterBackend", "InterpreterExecutable"]
