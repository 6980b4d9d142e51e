"""``--xla_hlo_profile`` for the CPU backend: per-instruction execution times.

When the flag is set at compile time, :class:`HloProfiler` wraps every thunk of the
executable's plans (the entry computation's and those of the computations that
``while``/``conditional``/``call`` run) in a timer (``time.perf_counter_ns`` before and
after ``thunk.run``) and counts calls; an executable compiled without the flag runs its
plans untouched. Each row of :meth:`HloProfiler.rows` is one instruction: computation,
name, opcode (``fusion`` rows show their kind), thunk kind, calls, total and mean time,
share of the executable's run time, and for ``dot``/``convolution`` (or a fusion whose root
is one) the flops per call and the achieved GFLOP/s. Times are cumulative since compile
(or :meth:`HloProfiler.reset`); instructions in called computations are counted once per
run of their computation, and their time is also inside their caller's row.

After every call the executable reports the profile the way XLA does: the table is logged
at INFO on the ``xlapy.cpu.profile`` logger, and with ``--xla_dump_to=DIR`` it is written
to ``DIR/module_NNNN.<module>.hlo_execution_profile.txt`` (XLA writes its binary
``hlo_execution_profile_data`` there; this is the text form of the same numbers).
"""
from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from math import prod
from typing import Any, Callable

from ...config import DumpConfig
from ...hlo.ir import HloInstruction, HloModule
from .thunks import Memory, Plan, Thunk

log = logging.getLogger("xlapy.cpu.profile")

#: The dump-file suffix of the profile (``module_0001.jit_f.hlo_execution_profile.txt``).
PROFILE_SUFFIX = "hlo_execution_profile.txt"


@dataclass(frozen=True)
class ProfileRow:
    """One instruction's accumulated execution time (see the module docstring)."""

    computation: str
    name: str
    opcode: str              # "fusion(kLoop)" for fusions
    thunk: str               # kernel, library, fallback, copy, while, ...
    calls: int
    total_s: float
    mean_s: float
    percent: float           # of the executable's total run time
    flops: float | None      # per call, for dot / convolution
    gflops: float | None     # achieved GFLOP/s, for dot / convolution


def instruction_flops(instr: HloInstruction) -> float | None:
    """Floating-point operations of one ``dot``/``convolution`` (2 per multiply-add), or of
    the one a fusion's root is; None for every other instruction."""
    if instr.opcode == "fusion":
        instr = instr.attrs["calls"].root
    if instr.opcode not in ("dot", "convolution") or not instr.shape.is_array:
        return None
    out = instr.shape.num_elements
    if instr.opcode == "dot":
        lhs = instr.operands[0].shape
        contract = instr.attrs.get("lhs_contracting_dims") or ()
        return 2.0 * out * prod(lhs.dims[d] for d in contract)
    dn = instr.attrs.get("dim_labels")
    rhs = instr.operands[1].shape
    if dn is None or isinstance(dn, str) or dn.labels is not None:
        return None
    window = prod(rhs.dims[d] for d in dn.kernel_spatial)
    return 2.0 * out * window * rhs.dims[dn.kernel_input_feature]


def _opcode_label(instr: HloInstruction) -> str:
    if instr.opcode == "fusion":
        return f"fusion({instr.attrs.get('kind', '?')})"
    return instr.opcode


def _all_plans(entry: Plan) -> list[Plan]:
    """``entry`` and every plan reachable through control-flow thunks, each once."""
    seen: dict[int, Plan] = {}
    stack = [entry]
    while stack:
        plan = stack.pop()
        if id(plan) in seen:
            continue
        seen[id(plan)] = plan
        for t in plan.thunks:
            stack.extend(getattr(t, "subplans", ()))
    return list(seen.values())


class HloProfiler:
    """Times every thunk of an executable's plans (see the module docstring)."""

    def __init__(self, module: HloModule, entry: Plan, dump: DumpConfig | None = None,
                 dump_key: Any = None) -> None:
        self.module = module
        self.dump = dump if dump is not None and dump.enabled and dump.directory else None
        self.dump_key = dump_key
        self.thunks: list[tuple[str, Thunk]] = []
        self.calls: list[int] = []
        self.total_ns: list[int] = []
        self.runs = 0
        self.run_ns = 0
        for plan in _all_plans(entry):
            plan.instrument(functools.partial(self._timed, plan.name))

    def _timed(self, computation: str, thunk: Thunk) -> Callable[[Memory], None]:
        slot = len(self.thunks)
        self.thunks.append((computation, thunk))
        self.calls.append(0)
        self.total_ns.append(0)
        run, calls, totals, clock = thunk.run, self.calls, self.total_ns, time.perf_counter_ns

        def timed_run(mem: Memory) -> None:
            t0 = clock()
            try:
                run(mem)
            finally:
                totals[slot] += clock() - t0
                calls[slot] += 1
        return timed_run

    def wrap_entry(self, run: Callable[[Memory], None]) -> Callable[[Memory], None]:
        """``run`` (the entry plan) timed as a whole, reporting the profile after each call."""
        clock = time.perf_counter_ns

        def profiled_run(mem: Memory) -> None:
            t0 = clock()
            try:
                run(mem)
            finally:
                self.run_ns += clock() - t0
                self.runs += 1
            self.report()
        return profiled_run

    def reset(self) -> None:
        """Forget every count and time."""
        self.calls[:] = [0] * len(self.calls)
        self.total_ns[:] = [0] * len(self.total_ns)
        self.runs = self.run_ns = 0

    def rows(self) -> list[ProfileRow]:
        """One row per instruction that ran, slowest first."""
        total = self.run_ns
        rows = []
        for (comp, thunk), calls, ns in zip(self.thunks, self.calls, self.total_ns):
            if not calls:
                continue
            instr = thunk.instruction
            flops = instruction_flops(instr)
            seconds = ns * 1e-9
            rows.append(ProfileRow(
                comp, instr.name, _opcode_label(instr), thunk.kind, calls, seconds,
                seconds / calls, 100.0 * ns / total if total else 0.0, flops,
                flops * calls / seconds * 1e-9 if flops and ns else None))
        rows.sort(key=lambda r: -r.total_s)
        return rows

    def to_text(self, limit: int | None = None) -> str:
        """The profile as a table (``limit``: only the slowest rows)."""
        rows = self.rows()
        runs = max(1, self.runs)
        head = (f"Execution profile for {self.module.name}: {self.runs} call"
                f"{'' if self.runs == 1 else 's'}, {_ms(self.run_ns * 1e-9)} total, "
                f"{_ms(self.run_ns * 1e-9 / runs)} per call")
        lines = [head, f"{'total ms':>10} {'%':>6} {'calls':>7} {'mean ms':>10} {'GFLOP/s':>8}  "
                       f"{'thunk':<8} {'opcode':<22} instruction"]
        shown = rows if limit is None else rows[:limit]
        for r in shown:
            gf = f"{r.gflops:8.1f}" if r.gflops is not None else f"{'':8}"
            where = r.name if r.computation == self.module.entry.name \
                else f"{r.computation}/{r.name}"
            lines.append(f"{r.total_s * 1e3:10.3f} {r.percent:6.2f} {r.calls:7d} "
                         f"{r.mean_s * 1e3:10.3f} {gf}  {r.thunk:<8} {r.opcode:<22} {where}")
        if limit is not None and len(rows) > limit:
            rest = rows[limit:]
            lines.append(f"{sum(r.total_s for r in rest) * 1e3:10.3f} "
                         f"{sum(r.percent for r in rest):6.2f} ... {len(rest)} more rows")
        return "\n".join(lines) + "\n"

    def report(self) -> None:
        """Log the profile at INFO and write it into the dump directory, when those are on."""
        logging_on = log.isEnabledFor(logging.INFO)
        if not logging_on and self.dump is None:
            return
        text = self.to_text()
        if logging_on:
            log.info("%s", text)
        if self.dump is not None:
            self.dump.write(self.dump_key, self.module.name, PROFILE_SUFFIX, text)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


__all__ = ["HloProfiler", "ProfileRow", "instruction_flops", "PROFILE_SUFFIX"]
