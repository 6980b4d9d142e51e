"""Pass pipelines: ordered, named lists of passes, fixed-point loops, timing, dumps, verification.

:class:`HloPassPipeline` runs its passes (plain passes, nested pipelines or
:class:`HloPassFix` loops) in order. Around every pass it

- skips passes disabled by ``--xla_disable_hlo_passes``, ``--xla_enable_hlo_passes_only``
  or ``--xla_disable_all_hlo_passes`` (a nested pipeline is filtered only by the disable
  list, so ``--xla_enable_hlo_passes_only=algsimp`` still reaches an ``algsimp`` nested in
  ``simplification``);
- records wall time and whether the module changed (:class:`PassRecord`; see
  :meth:`HloPassPipeline.run_with_report` and :func:`format_pass_timings`);
- runs the HLO verifier after each pass that changed the module when ``verify=True``;
- dumps the module after each changing pass whose name matches ``--xla_dump_hlo_pass_re``,
  as ``module_0001.<name>.0003.<pipeline>.after_<pass>.before_<next>.txt``;
- prefixes any error raised by a pass with the pass name.

A run that takes longer than ``slow_warning_seconds`` logs a warning naming the
slowest passes. Python's cyclic garbage collector is paused during a top-level run:
passes allocate many linked instructions that live until the run ends, and each
collection those allocations trigger walks the whole (growing) module again, which made
the passes' time grow faster than the module (15% of the time at 20k instructions).
:func:`cpu_pipeline` builds the CPU compiler's pass list.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import logging
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from ..config import DebugOptions, DumpConfig, get_debug_options
from ..errors import VerificationError
from ..hlo.ir import HloModule
from .base import HloPass
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
    options: DebugOptions
    dump: DumpConfig
    verify: bool
    records: list[PassRecord] = field(default_factory=list)
    iteration: int = 0


class HloPassPipeline(HloPass):
    """An ordered, named list of passes; itself a pass, so pipelines nest.

    ``debug_options`` defaults to :func:`xlapy.config.get_debug_options` at run time.
    ``verify`` runs ``xlapy.hlo.verifier.verify_module`` before the first pass and after
    each pass that changed the module (nested pipelines inherit the top-level setting).
    """

    def __init__(self, name: str, passes: Iterable[HloPass] = (), *, verify: bool = False,
                 debug_options: DebugOptions | None = None,
                 slow_warning_seconds: float = SLOW_PIPELINE_SECONDS) -> None:
        self.name = name
        self.passes: list[HloPass] = list(passes)
        self.verify = verify
        self.debug_options = debug_options
        self.slow_warning_seconds = slow_warning_seconds
        self.last_result: PipelineResult | None = None

    def add_pass(self, p: HloPass) -> HloPass:
        """Append a pass (or pipeline) and return it."""
        self.passes.append(p)
        return p

    @property
    def pass_names(self) -> list[str]:
        return [p.name for p in self.passes]

    def run(self, module: HloModule) -> bool:
        return self.run_with_report(module).changed

    def run_with_report(self, module: HloModule) -> PipelineResult:
        """Run every enabled pass; the result lists one :class:`PassRecord` per pass run."""
        options = self.debug_options or get_debug_options()
        ctx = _RunContext(module, options, DumpConfig(options), self.verify)
        start = time.perf_counter()
        if ctx.verify:
            _verify(module, "before pipeline " + repr(self.name))
        with _gc_paused():
            changed = self._run(module, ctx)
        result = PipelineResult(changed, ctx.records, time.perf_counter() - start)
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
        if enabled and (ctx.dump.should_dump_pass("pipeline-start")
                        or ctx.dump.should_dump_pass(dump_names[0])):
            self._dump(module, ctx, "pipeline-start", dump_names[0])
        changed = False
        for i, p in enumerate(enabled):
            if isinstance(p, (HloPassPipeline, HloPassFix)):
                changed |= p._run(module, ctx)
                continue
            pass_changed = _run_leaf(p, module, ctx, self.name)
            changed |= pass_changed
            if pass_changed and ctx.dump.should_dump_pass(p.name):
                nxt = dump_names[i + 1] if i + 1 < len(dump_names) else "pipeline-end"
                self._dump(module, ctx, p.name, nxt)
        return changed

    def _dump(self, module: HloModule, ctx: _RunContext, after: str, before: str) -> None:
        if not ctx.dump.should_dump_module(module.name):
            return
        key = module_key(module)
        suffix = ctx.dump.pass_dump_suffix(key, self.name, after, before)
        dump_hlo_module(module, suffix, ctx.dump, key)

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

    def run(self, module: HloModule) -> bool:
        pipeline = HloPassPipeline(self.name, [self])
        return pipeline.run(module)

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
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (if it runs) for the block (module docstring)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _enabled(p: HloPass, ctx: _RunContext, pipeline: str) -> bool:
    options = ctx.options
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
        changed = bool(p.run(module))
    except Exception as e:
        _prefix_error(e, f"HLO pass '{p.name}' (pipeline '{pipeline}')")
        raise
    ctx.records.append(PassRecord(pipeline, p.name, time.perf_counter() - start, changed,
                                  ctx.iteration))
    if changed and ctx.verify:
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
    """Run the HLO verifier if it is available (it is imported lazily)."""
    if importlib.util.find_spec("xlapy.hlo.verifier") is None:
        return
    verifier = importlib.import_module("xlapy.hlo.verifier")
    try:
        verifier.verify_module(module)
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
# The CPU compiler's pipeline (reference section 3)


def cpu_simplification_pipeline(name: str = "simplification") -> HloPass:
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
    """The target-independent CPU passes before layout assignment, in XLA's order (3.1-3.2)."""
    from .batchnorm_expander import BatchNormExpander
    from .call_inliner import CallInliner
    from .comparison_expander import ComparisonExpander
    from .convolution_canonicalization import ConvolutionCanonicalization
    from .cse import HloCSE
    from .dce import HloDCE
    from .dot_decomposer import DotDecomposer
    from .transpose_folding import TransposeFolding
    from .tuple_simplifier import TupleSimplifier
    from .zero_sized_simplifier import ZeroSizedHloElimination
    return [
        HloDCE(),                         # sharding-removal
        DotDecomposer(),                  # 3.2 #3
        ZeroSizedHloElimination(),        # #7
        ComparisonExpander(),             # #12
        CallInliner(),                    # #15
        DotDecomposer(),                  # #16
        BatchNormExpander(),              # #22
        ConvolutionCanonicalization(),    # #28
        cpu_simplification_pipeline(),    # #30 (with the while-loop passes and reshape-mover)
        TransposeFolding(),               # #36
        HloCSE(),                         # #37
        TupleSimplifier(),                # #39
    ]


FUSION_PIPELINE_MODULE = "xlapy.passes.fusion_pipeline"


def cpu_pipeline(debug_options: DebugOptions | None = None, verify: bool = False) -> HloPassPipeline:
    """The CPU compiler's HLO pass pipeline.

    The target-independent passes come first. Layout assignment, fusion and the passes
    after them are supplied by ``xlapy/passes/fusion_pipeline.py``: when that module
    exists, its ``fusion_passes(debug_options) -> list[HloPass]`` is appended here;
    otherwise the pipeline stops after the simplification passes (nothing is fused).
    """
    passes = target_independent_passes()
    if importlib.util.find_spec(FUSION_PIPELINE_MODULE) is not None:
        fusion = importlib.import_module(FUSION_PIPELINE_MODULE)
        passes.extend(fusion.fusion_passes(debug_options or get_debug_options()))
    return HloPassPipeline("cpu", passes, verify=verify, debug_options=debug_options)


__all__ = ["HloPassFix", "HloPassPipeline", "PassRecord", "PipelineResult",
           "cpu_pipeline", "cpu_simplification_pipeline", "format_pass_timings",
           "target_independent_passes"]
