"""Pass pipelines: ordered, named lists of passes, fixed-point loops, timing, dumps, verification.

:class:`HloPassPipeline` runs its passes (plain passes, nested pipelines or
:class:`HloPassFix` loops) in order. Around every pass it

- skips passes disabled by ``--xla_disable_hlo_passes``, ``--xla_enable_hlo_passes_only``
  or ``--xla_disable_all_hlo_passes`` (a nested pipeline is filtered only by the disable
  list, so ``--xla_enable_hlo_passes_only=algsimp`` still reaches an ``algsimp`` nested in
  ``simplification``);
- records wall time and whether the module changed (:class:`PassRecord`; see
  :meth:`HloPassPipeline.run_with_report` and :func:`format_pass_timings`);
- runs the HLO verifier after each pass that changed the module when the context's
  ``verify`` is on;
- dumps the module after each changing pass whose name matches ``--xla_dump_hlo_pass_re``,
  as ``module_0001.<name>.0003.<pipeline>.after_<pass>.before_<next>.txt``;
- prefixes any error raised by a pass with the pass name.

Every pass gets the run's :class:`~xlapy.passes.context.PassContext` (flags, constant
evaluator, verification, dumps, reference mode). A run that takes longer than
``slow_warning_seconds`` logs a warning naming the slowest passes. Python's cyclic
garbage collector is paused during a top-level run: passes allocate many linked
instructions that live until the run ends, and each collection those allocations
trigger walks the whole (growing) module again, which made the passes' time grow
faster than the module (docs/performance.md).

:func:`target_independent_passes` is the target-independent part every backend's
pipeline starts with; the backends' own pipelines are in ``xlapy/backends/<name>/pipeline.py``.
"""
from __future__ import annotations

import contextlib
import gc
import logging
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from ..config import DebugOptions
from ..errors import VerificationError
from ..hlo.ir import HloModule
from .base import HloPass
from .context import PassContext
from .dump import dump_hlo_module, module_key

log = logging.getLogger("xlapy.passes")

SLOW_PIPELINE_SECONDS = 5.0


@dataclass
class PassRecord:
    """One pass execution: where it ran, how long it took and whether it changed the module."""

    pipeline: str
    name: str
    seconds: float
    changed: bool
    iteration: int = 0         # 1-based iteration of the enclosing HloPassFix, 0 outside one
    disabled: bool = False     # skipped because of the pass-control flags


@dataclass
class PipelineResult:
    """What :meth:`HloPassPipeline.run_with_report` returns."""

    changed: bool
    records: list[PassRecord] = field(default_factory=list)
    seconds: float = 0.0

    def slowest(self, n: int = 3) -> list[PassRecord]:
        return sorted((r for r in self.records if not r.disabled),
                      key=lambda r: -r.seconds)[:n]


@dataclass
class _RunContext:
    """State shared by nested pipelines during one top-level run."""

    module: HloModule
    pass_ctx: PassContext
    records: list[PassRecord] = field(default_factory=list)
    iteration: int = 0


class HloPassPipeline(HloPass):
    """An ordered, named list of passes; itself a pass, so pipelines nest.

    ``run(module, ctx)`` runs it with the given :class:`PassContext`; run without one,
    it uses ``context`` (the compilation a backend built it for), else makes one from
    ``debug_options`` (default: ``XLA_FLAGS``).
    Verification (``verify=True`` here or in the context) runs
    ``xlapy.hlo.verifier.verify_module`` before the first pass and after each pass that
    changed the module (nested pipelines follow the top-level run).
    """

    def __init__(self, name: str, passes: Iterable[HloPass] = (), *, verify: bool = False,
                 debug_options: DebugOptions | None = None,
                 context: PassContext | None = None,
                 slow_warning_seconds: float = SLOW_PIPELINE_SECONDS) -> None:
        self.name = name
        self.passes: list[HloPass] = list(passes)
        self.verify = verify
        self.debug_options = debug_options
        self.context = context
        self.slow_warning_seconds = slow_warning_seconds
        self.last_result: PipelineResult | None = None

    def add_pass(self, p: HloPass) -> HloPass:
        """Append a pass (or pipeline) and return it."""
        self.passes.append(p)
        return p

    @property
    def pass_names(self) -> list[str]:
        return [p.name for p in self.passes]

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        return self.run_with_report(module, ctx).changed

    def run_with_report(self, module: HloModule,
                        ctx: PassContext | None = None) -> PipelineResult:
        """Run every enabled pass; the result lists one :class:`PassRecord` per pass run."""
        if ctx is None:
            ctx = self.context if self.context is not None else \
                PassContext(self.debug_options) if self.debug_options is not None else \
                PassContext()
        if self.verify and not ctx.verify:
            ctx = ctx.replace(verify=True)
        run = _RunContext(module, ctx)
        start = time.perf_counter()
        if ctx.verify:
            _verify(module, "before pipeline " + repr(self.name))
        with gc_paused():
            changed = self._run(module, run)
        result = PipelineResult(changed, run.records, time.perf_counter() - start)
        self.last_result = result
        if result.seconds > self.slow_warning_seconds:
            slow = ", ".join(f"{r.name} {r.seconds:.1f}s" for r in result.slowest())
            log.warning("HLO pass pipeline '%s' took %.1fs on module %s; slowest passes: %s. "
                        "Run with XLA_FLAGS=--xla_dump_to=DIR to dump the module.",
                        self.name, result.seconds, module.name, slow)
        return result

    def _run(self, module: HloModule, ctx: _RunContext) -> bool:
        enabled = [p for p in self.passes if _enabled(p, ctx, self.name)]
        dump_names = [p.name for p in enabled]
        dump = ctx.pass_ctx.dump
        if enabled and (dump.should_dump_pass("pipeline-start")
                        or dump.should_dump_pass(dump_names[0])):
            self._dump(module, ctx, "pipeline-start", dump_names[0])
        changed = False
        for i, p in enumerate(enabled):
            if isinstance(p, (HloPassPipeline, HloPassFix)):
                changed |= p._run(module, ctx)
                continue
            pass_changed = _run_leaf(p, module, ctx, self.name)
            changed |= pass_changed
            if pass_changed and dump.should_dump_pass(p.name):
                nxt = dump_names[i + 1] if i + 1 < len(dump_names) else "pipeline-end"
                self._dump(module, ctx, p.name, nxt)
        return changed

    def _dump(self, module: HloModule, ctx: _RunContext, after: str, before: str) -> None:
        dump = ctx.pass_ctx.dump
        if not dump.should_dump_module(module.name):
            return
        key = module_key(module)
        suffix = dump.pass_dump_suffix(key, self.name, after, before)
        dump_hlo_module(module, suffix, dump, key)

    def __repr__(self) -> str:
        return f"<HloPassPipeline {self.name}: {', '.join(self.pass_names)}>"


class HloPassFix(HloPass):
    """Run a pass or pipeline until it no longer changes the module (XLA's ``HloPassFix``).

    Stops after ``max_iterations`` with a warning. The name is the wrapped pass's name.
    """

    def __init__(self, inner: HloPass, max_iterations: int = 25) -> None:
        if max_iterations < 1:
            raise ValueError(f"HloPassFix max_iterations must be >= 1, got {max_iterations}")
        self.inner = inner
        self.name = inner.name
        self.max_iterations = max_iterations

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        pipeline = HloPassPipeline(self.name, [self])
        return pipeline.run(module, ctx)

    def _run(self, module: HloModule, ctx: _RunContext) -> bool:
        changed = False
        outer = ctx.iteration
        try:
            for iteration in range(1, self.max_iterations + 1):
                ctx.iteration = iteration
                if isinstance(self.inner, (HloPassPipeline, HloPassFix)):
                    step = self.inner._run(module, ctx)
                else:
                    step = _run_leaf(self.inner, module, ctx, self.name)
                changed |= step
                if not step:
                    return changed
            log.warning("HloPassFix(%s) did not reach a fixed point after %d iterations on "
                        "module %s", self.name, self.max_iterations, module.name)
            return changed
        finally:
            ctx.iteration = outer

    def __repr__(self) -> str:
        return f"<HloPassFix {self.inner!r} max_iterations={self.max_iterations}>"


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (if it runs) for the block (module docstring);
    nested uses are fine (the outermost one enables it again)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _enabled(p: HloPass, ctx: _RunContext, pipeline: str) -> bool:
    options = ctx.pass_ctx.options
    is_group = isinstance(p, HloPassPipeline) or (
        isinstance(p, HloPassFix) and isinstance(p.inner, (HloPassPipeline, HloPassFix)))
    if is_group:
        ok = not options.xla_disable_all_hlo_passes and p.name not in options.disabled_passes
    else:
        ok = options.pass_enabled(p.name)
    if not ok:
        log.debug("HLO pass '%s' disabled by XLA_FLAGS", p.name)
        ctx.records.append(PassRecord(pipeline, p.name, 0.0, False, ctx.iteration, disabled=True))
    return ok


def _run_leaf(p: HloPass, module: HloModule, ctx: _RunContext, pipeline: str) -> bool:
    start = time.perf_counter()
    try:
        changed = bool(p.run(module, ctx.pass_ctx))
    except Exception as e:
        _prefix_error(e, f"HLO pass '{p.name}' (pipeline '{pipeline}')")
        raise
    ctx.records.append(PassRecord(pipeline, p.name, time.perf_counter() - start, changed,
                                  ctx.iteration))
    if changed and ctx.pass_ctx.verify:
        _verify(module, f"after HLO pass '{p.name}' (pipeline '{pipeline}')")
    return changed


def _prefix_error(e: BaseException, where: str) -> None:
    """Put ``where`` in front of the exception's message (once)."""
    if getattr(e, "_xlapy_pass_prefixed", False):
        return
    if e.args and isinstance(e.args[0], str):
        e.args = (f"{where}: {e.args[0]}",) + e.args[1:]
    else:
        e.args = (f"{where}: {e!r}",)
    try:
        e._xlapy_pass_prefixed = True  # type: ignore[attr-defined]
    except AttributeError:
        pass


def _verify(module: HloModule, when: str) -> None:
    """Run the HLO verifier; a failure names the point of the run."""
    from ..hlo.verifier import verify_module     # with every shape rule: on first use
    try:
        verify_module(module)
    except VerificationError as e:
        raise VerificationError(f"HLO verification failed {when}: {e}") from e


def format_pass_timings(records: Sequence[PassRecord] | PipelineResult) -> str:
    """A text table of pass runs: pipeline, pass, fixed-point iteration, changed?, time."""
    if isinstance(records, PipelineResult):
        records = records.records
    rows = [("pipeline", "pass", "iter", "changed", "ms")]
    total = 0.0
    for r in records:
        total += r.seconds
        rows.append((r.pipeline, r.name, str(r.iteration) if r.iteration else "",
                     "disabled" if r.disabled else ("yes" if r.changed else "no"),
                     f"{r.seconds * 1e3:.2f}"))
    rows.append(("total", "", "", "", f"{total * 1e3:.2f}"))
    widths = [max(len(row[c]) for row in rows) for c in range(5)]
    lines = []
    for k, row in enumerate(rows):
        cells = [row[c].ljust(widths[c]) if c < 4 else row[c].rjust(widths[c]) for c in range(5)]
        lines.append("  ".join(cells).rstrip())
        if k == 0 or k == len(rows) - 2:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# The target-independent passes every backend's pipeline starts with (XLA's order)


def simplification_pipeline(name: str = "simplification") -> HloPass:
    """XLA's "simplification" fixed-point pipeline, restricted to the passes implemented here."""
    from .algebraic_simplifier import AlgebraicSimplifier
    from .constant_folding import HloConstantFolding
    from .dce import HloDCE
    from .reshape_mover import ReshapeMover
    from .tuple_simplifier import TupleSimplifier
    from .while_loop_invariant_code_motion import WhileLoopInvariantCodeMotion
    from .while_loop_simplifier import WhileLoopSimplifier
    from .zero_sized_simplifier import ZeroSizedHloElimination
    return HloPassFix(HloPassPipeline(name, [
        AlgebraicSimplifier(), HloDCE(), ZeroSizedHloElimination(),
        WhileLoopInvariantCodeMotion(), TupleSimplifier(), WhileLoopSimplifier(), ReshapeMover(),
        HloDCE(), HloConstantFolding(),
    ]))


def target_independent_passes() -> list[HloPass]:
    """The target-independent passes before layout assignment, in the order of XLA's
    ``CpuCompiler::RunHloPassesThroughLayoutAssn``."""
    from .batchnorm_expander import BatchNormExpander
    from .call_inliner import CallInliner
    from .comparison_expander import ComparisonExpander
    from .convolution_canonicalization import ConvolutionCanonicalization
    from .cse import HloCSE
    from .dce import HloDCE
    from .dot_decomposer import DotDecomposer
    from .sharding_remover import ShardingRemover
    from .dynamic_padder import DynamicPadder
    from .reducer_operand_types import ReducerOperandTypes
    from .transpose_folding import TransposeFolding
    from .tuple_simplifier import TupleSimplifier
    from .zero_sized_simplifier import ZeroSizedHloElimination
    return [
        ShardingRemover(),
        HloDCE(),
        DynamicPadder(),                  # before any pass that reshapes dynamic dims
        DotDecomposer(),
        ZeroSizedHloElimination(),
        ComparisonExpander(),
        ReducerOperandTypes(),            # fp operands in their reducer's types
        CallInliner(),
        DotDecomposer(),
        BatchNormExpander(),
        ConvolutionCanonicalization(),
        simplification_pipeline(),        # with the while-loop passes and reshape-mover
        TransposeFolding(),
        HloCSE(),
        TupleSimplifier(),
        HloDCE(),                         # the transposes that folding left unused
    ]


__all__ = ["HloPassFix", "HloPassPipeline", "PassRecord", "PipelineResult",
           "format_pass_timings", "gc_paused", "simplification_pipeline",
           "target_independent_passes"]
