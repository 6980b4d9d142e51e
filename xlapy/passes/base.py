"""The pass interface: a pass rewrites an HloModule in place and says whether it changed it.

Every pass lives in its own file with one class deriving :class:`HloPass`. Its
docstring states what it needs (preconditions) and what it guarantees.
"""
from __future__ import annotations

import contextlib
import contextvars
from abc import ABC, abstractmethod
from typing import ClassVar, Iterator

from ..hlo.ir import HloModule

_REFERENCE_MODE = contextvars.ContextVar("xlapy_passes_reference_mode", default=False)


@contextlib.contextmanager
def reference_mode(enabled: bool = True) -> Iterator[None]:
    """Passes run in this block use their straightforward forms instead of the ones kept
    fast for big modules: eager list edits instead of
    :class:`~xlapy.passes.computation_edits.DeferredEdits`, analyses of fused
    computations recomputed at every query instead of cached per fusion, reachability by
    graph search instead of bit sets. Results are the same either way (tests compare
    them); this exists to check that."""
    token = _REFERENCE_MODE.set(enabled)
    try:
        yield
    finally:
        _REFERENCE_MODE.reset(token)


def in_reference_mode() -> bool:
    """Whether :func:`reference_mode` is on in this context."""
    return _REFERENCE_MODE.get()


class HloPass(ABC):
    """One HLO→HLO rewrite. ``name`` is XLA's pass name where one exists (used by
    ``--xla_disable_hlo_passes`` and in per-pass dump file names)."""

    name: ClassVar[str] = "unnamed-pass"

    @abstractmethod
    def run(self, module: HloModule) -> bool:
        """Rewrite ``module`` in place; return True if anything changed."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
