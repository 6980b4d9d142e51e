"""The interpreter backend's pipeline: the target-independent passes only.

The reference interpreter runs any HLO as written, so ``xlapy.optimize(m,
"interpreter")`` runs just :func:`xlapy.passes.target_independent_passes` (the
interpreter backend itself compiles nothing: it evaluates the module it is given).
"""
from __future__ import annotations

from typing import Any

from ...passes.context import PassContext
from ...passes.pipeline import HloPassPipeline, target_independent_passes
from ..target import Target


class InterpreterTarget(Target):
    """The ``"interpreter"`` backend: NumPy reference semantics, no code generation."""

    name = "interpreter"

    def pipeline(self, ctx: PassContext) -> HloPassPipeline:
        return HloPassPipeline("interpreter", target_independent_passes(), context=ctx)

    def create_backend(self) -> Any:
        from .runtime import InterpreterBackend
        return InterpreterBackend()


TARGET = InterpreterTarget()

__all__ = ["InterpreterTarget", "TARGET"]
