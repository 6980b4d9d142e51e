"""``PassContext``: everything a pass may depend on besides the module, given to ``run``.

A pass reads no hidden state: no environment variables, no process-wide hooks, no
context variables. What it needs from outside comes in the context its ``run(module,
ctx)`` receives:

- ``options``: the :class:`~xlapy.config.DebugOptions` of this compilation (pass
  control flags, dump flags, ``xla_backend_extra_options``);
- ``constant_evaluator``: ``evaluate(instr, operand_values) -> value`` with exact HLO
  semantics, used by constant folding and the while-loop simplifier. Passes sit below
  the backends, so the caller supplies it (the backends layer gives the reference
  interpreter's, :func:`xlapy.backends.compile.pass_context`); without one those passes
  fold nothing;
- ``verify``: run the HLO verifier before a pipeline and after every pass that changed
  the module;
- ``dump``: where per-pass dumps go (:class:`~xlapy.config.DumpConfig` of ``options``
  unless given);
- ``reference_mode``: use the straightforward forms of the passes instead of the ones
  kept fast for big modules: eager list edits instead of
  :class:`~xlapy.passes.computation_edits.DeferredEdits`, analyses of fused computations
  recomputed at every query instead of cached per fusion, reachability by graph search
  instead of bit sets. Results are the same either way (tests compare them).

``PassContext()`` takes ``options`` from ``XLA_FLAGS`` (:func:`~xlapy.config.get_debug_options`)
when it is made; a pass run without a context (``HloDCE().run(module)``) makes one so.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from ..config import DebugOptions, DumpConfig, get_debug_options
from ..hlo.ir import HloInstruction

ConstantEvaluator = Callable[[HloInstruction, list], Any]


@dataclass(frozen=True)
class PassContext:
    """The inputs of one pass run besides the module (module docstring)."""

    options: DebugOptions = field(default_factory=get_debug_options)
    constant_evaluator: ConstantEvaluator | None = None
    verify: bool = False
    dump: DumpConfig = None  # type: ignore[assignment]   # DumpConfig(options) when None
    reference_mode: bool = False

    def __post_init__(self) -> None:
        if self.dump is None:
            object.__setattr__(self, "dump", DumpConfig(self.options))

    def replace(self, **changes: Any) -> "PassContext":
        """A copy with ``changes`` (``dump`` follows new ``options`` unless given)."""
        if "options" in changes and "dump" not in changes:
            changes["dump"] = None
        return dataclasses.replace(self, **changes)


def context_or_default(ctx: PassContext | None) -> PassContext:
    """``ctx``, or a default :class:`PassContext` for a pass run on its own."""
    return ctx if ctx is not None else PassContext()


__all__ = ["ConstantEvaluator", "PassContext", "context_or_default"]
