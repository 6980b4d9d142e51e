"""The pass interface: a pass rewrites an HloModule in place and says whether it changed it.

Every pass lives in its own file with one class deriving :class:`HloPass`. Its
docstring states what it needs (preconditions) and what it guarantees. Whatever a pass
depends on besides the module comes in the :class:`~xlapy.passes.context.PassContext`
given to ``run``; run without one, a pass makes a default context.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from ..hlo.ir import HloModule
from .context import PassContext


class HloPass(ABC):
    """One HLO→HLO rewrite. ``name`` is XLA's pass name where one exists (used by
    ``--xla_disable_hlo_passes`` and in per-pass dump file names)."""

    name: str = "unnamed-pass"

    @abstractmethod
    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        """Rewrite ``module`` in place; return True if anything changed."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
