"""Compile time by stage for programs of growing size (cpu backend, disk cache off).

Programs, each at sizes N (default 5, 10, 20, 40):

- ``blocks``: N stacked blocks ``x = layernorm(softmax(x)) @ w_i`` on f32[64,128]
  (forward only);
- ``blocks-grad``: a training step of the same stack: loss ``sum(blocks(x)^2)``,
  gradients for every ``w_i`` and an SGD update;
- ``mlp-train``: an N-hidden-layer ReLU MLP training step (64 wide, batch 32, softmax
  cross-entropy, gradients, SGD update);
- ``ew-chain`` (only when named in ``--programs``): N steps of ``x = sin(x) + 1`` on
  f32[16], one long chain of elementwise ops (default sizes 100, 300, 1000, 3000, 10000).

For every program and size the script traces the function (``xlapy.jit(...).lower`` on
the interpreter backend, which does not optimize), then compiles the traced module with
a new ``CpuBackend(use_disk_cache=False)`` and reads its
:class:`~xlapy.backends.cpu.compiler.CompileTimings`: the HLO passes (each pass summed
over its runs), buffer assignment, LLVM IR emission, LLVM (IR text, parse, optimization,
machine code; the last three summed over the modules LLVM compiles in parallel, so they
can exceed the wall time: they run in helper processes too), loading and plan building,
and the total. Each cell is the median over ``--repeat`` compiles. The growth table fits ``time ~ N^k`` between the
smallest and the largest size: k near 1 is linear, k near 2 quadratic.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/compile_time.py
    ... compile_time.py --sizes 10,20,40,80 --programs blocks --no-llvm
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from harness import fmt_time, print_footer, print_header
from machine import check_openblas_env, machine_header

DEFAULT_SIZES = (5, 10, 20, 40)
SMOKE_SIZES = (1, 2)
ROWS, COLS = 64, 128
MLP_WIDTH, MLP_BATCH = 64, 32
#: Stages of the stage table: (key in a measurement, column title).
STAGES = (("trace", "trace"), ("passes", "HLO passes"), ("buffer_assignment", "buffer assign"),
          ("emit_ir", "LLVM IR emit"), ("llvm_ir_text", "IR text"), ("llvm", "LLVM wall"),
          ("llvm_optimize", "LLVM opt (sum)"), ("llvm_codegen", "codegen (sum)"),
          ("build", "load+plan"), ("total", "compile total"))
#: How many of the slowest passes get their own column in the pass table.
PASS_COLUMNS = 7


# ------------------------------------------------------------------------------ programs
def _softmax(xp: Any, x: Any) -> Any:
    e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


def _layernorm(xp: Any, x: Any, g: Any, b: Any) -> Any:
    mean = xp.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = xp.mean(d * d, axis=-1, keepdims=True)
    return d / xp.sqrt(var + 1e-5) * g + b


def _blocks(xp: Any, x: Any, g: Any, b: Any, ws: Sequence[Any]) -> Any:
    for w in ws:
        x = xp.matmul(_layernorm(xp, _softmax(xp, x), g, b), w)
    return x


def blocks_program(n: int) -> tuple[Callable[..., Any], tuple]:
    """N softmax+layernorm+matmul blocks, forward."""
    import xlapy.numpy as xnp

    def blocks(x, g, b, ws):
        return _blocks(xnp, x, g, b, ws)
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((COLS, COLS), dtype=np.float32) / np.sqrt(COLS) for _ in range(n)]
    return blocks, (rng.random((ROWS, COLS), dtype=np.float32),
                    np.ones(COLS, np.float32), np.zeros(COLS, np.float32), ws)


def blocks_grad_program(n: int) -> tuple[Callable[..., Any], tuple]:
    """A training step of the N-block stack: loss, gradients for every w_i, SGD."""
    import xlapy
    import xlapy.numpy as xnp

    def blocks_step(x, g, b, ws):
        loss, grads = xlapy.value_and_grad(
            lambda ws: xnp.sum(xnp.square(_blocks(xnp, x, g, b, ws))))(ws)
        return [w - 0.01 * dw for w, dw in zip(ws, grads)], loss
    _, args = blocks_program(n)
    return blocks_step, args


def mlp_program(n: int) -> tuple[Callable[..., Any], tuple]:
    """An N-hidden-layer ReLU MLP training step (softmax cross-entropy, SGD)."""
    import xlapy
    import xlapy.numpy as xnp

    def loss_fn(params, x, y):
        h = x
        for i, (w, b) in enumerate(params):
            h = xnp.matmul(h, w) + b
            if i < len(params) - 1:
                h = xnp.maximum(h, 0.0)
        logp = h - xnp.log(xnp.sum(xnp.exp(h - xnp.max(h, axis=1, keepdims=True)), axis=1,
                                   keepdims=True)) - xnp.max(h, axis=1, keepdims=True)
        return -xnp.mean(xnp.sum(logp * y, axis=1))

    def mlp_step(params, x, y):
        loss, grads = xlapy.value_and_grad(loss_fn)(params, x, y)
        return [(w - 0.01 * dw, b - 0.01 * db) for (w, b), (dw, db) in zip(params, grads)], loss
    rng = np.random.default_rng(0)
    dims = [MLP_WIDTH] * (n + 1) + [10]
    params = [(rng.standard_normal((a, c), dtype=np.float32) / np.sqrt(a),
               np.zeros(c, np.float32)) for a, c in zip(dims[:-1], dims[1:])]
    x = rng.random((MLP_BATCH, MLP_WIDTH), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, MLP_BATCH)]
    return mlp_step, (params, x, y)


def chain_program(n: int) -> tuple[Callable[..., Any], tuple]:
    """N steps of ``x = sin(x) + 1``: 2N elementwise ops in one chain."""
    import xlapy.numpy as xnp

    def chain(x):
        for _ in range(n):
            x = xnp.sin(x) + 1.0
        return x
    return chain, (np.linspace(-1, 1, 16, dtype=np.float32),)


PROGRAMS: dict[str, Callable[[int], tuple[Callable[..., Any], tuple]]] = {
    "blocks": blocks_program, "blocks-grad": blocks_grad_program, "mlp-train": mlp_program,
    "ew-chain": chain_program}
#: Programs run when ``--programs`` is not given, and sizes for programs that have their own.
DEFAULT_PROGRAMS = ("blocks", "blocks-grad", "mlp-train")
PROGRAM_SIZES = {"ew-chain": (100, 300, 1000, 3000, 10000)}


# --------------------------------------------------------------------------- measuring
@dataclass
class Measurement:
    """Medians over the repeats of one (program, N): stage and pass seconds."""

    program: str
    n: int
    instructions: int                 # HLO instructions as traced (all computations)
    optimized_instructions: int       # entry instructions after the passes
    kernels: int
    stages: dict[str, float] = field(default_factory=dict)
    passes: dict[str, float] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"program": self.program, "n": self.n, "instructions": self.instructions,
                "optimized_entry_instructions": self.optimized_instructions,
                "kernels": self.kernels, "stages_s": self.stages, "passes_s": self.passes,
                "samples_s": self.samples}


def _median_dicts(samples: list[dict[str, float]]) -> tuple[dict[str, float], dict]:
    keys = sorted({k for s in samples for k in s})
    raw = {k: [s.get(k, 0.0) for s in samples] for k in keys}
    return {k: statistics.median(v) for k, v in raw.items()}, raw


def measure(program: str, n: int, repeat: int, llvm: bool = True) -> Measurement:
    """Trace and compile ``program`` at size ``n`` ``repeat`` times (see module doc).
    Without ``llvm`` only the passes and buffer assignment run."""
    import xlapy
    from xlapy.backends.cpu.compiler import CpuBackend
    from xlapy.backends.compile import optimize_module
    from xlapy.backends.target import get_target
    fn, args = PROGRAMS[program](n)
    stage_samples, pass_samples = [], []
    module = optimized = None
    kernels = 0
    for _ in range(repeat):
        jitted = xlapy.jit(fn, backend="interpreter")
        t0 = time.perf_counter()
        module = jitted.lower(*args).hlo_module
        stages = {"trace": time.perf_counter() - t0}
        if llvm:
            backend = CpuBackend(use_disk_cache=False)
            exe = backend.compile(module)
            t = backend.last_timings
            optimized, kernels = exe.module, t.kernels
            stages.update({key: getattr(t, key) for key, _ in STAGES if key != "trace"})
            pass_samples.append(t.pass_seconds())
        else:
            result = optimize_module(module, get_target("cpu"))
            optimized = result.module
            stages.update(passes=result.pipeline.seconds, buffer_assignment=result.buffer_seconds)
            stages["total"] = stages["passes"] + stages["buffer_assignment"]
            per_pass: dict[str, float] = {}
            for r in result.pipeline.records:
                per_pass[r.name] = per_pass.get(r.name, 0.0) + r.seconds
            pass_samples.append(per_pass)
        stage_samples.append(stages)
    stages, raw = _median_dicts(stage_samples)
    passes, _ = _median_dicts(pass_samples)
    return Measurement(program, n, sum(len(c.instructions) for c in module.computations),
                       len(optimized.entry.instructions), kernels, stages, passes, raw)


# ----------------------------------------------------------------------------- reports
def growth_exponent(t0: float, t1: float, n0: int, n1: int) -> float | None:
    """k in ``t ~ N^k`` from two points (None when a time is ~0 or the sizes are equal)."""
    if n1 == n0 or t0 < 1e-5 or t1 < 1e-5:
        return None
    return math.log(t1 / t0) / math.log(n1 / n0)


def stage_table(rows: Sequence[Measurement]) -> str:
    present = [(k, title) for k, title in STAGES if any(k in m.stages for m in rows)]
    lines = ["| program | N | HLO instrs | kernels | " +
             " | ".join(title for _, title in present) + " |",
             "|" + "---|" * (4 + len(present))]
    for m in rows:
        cells = [fmt_time(m.stages.get(k)) for k, _ in present]
        lines.append(f"| {m.program} | {m.n} | {m.instructions} | {m.kernels} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def pass_table(rows: Sequence[Measurement]) -> str:
    totals: dict[str, float] = {}
    for m in rows:
        for name, s in m.passes.items():
            totals[name] = totals.get(name, 0.0) + s
    top = [name for name, _ in sorted(totals.items(), key=lambda kv: -kv[1])[:PASS_COLUMNS]]
    lines = ["| program | N | " + " | ".join(top) + " | other passes | all passes |",
             "|" + "---|" * (len(top) + 4)]
    for m in rows:
        other = sum(s for name, s in m.passes.items() if name not in top)
        cells = [fmt_time(m.passes.get(name, 0.0)) for name in top]
        lines.append(f"| {m.program} | {m.n} | " + " | ".join(cells)
                     + f" | {fmt_time(other)} | {fmt_time(sum(m.passes.values()))} |")
    return "\n".join(lines)


def growth_rows(rows: Sequence[Measurement]) -> list[dict]:
    """Per program and stage (and the three slowest passes): times at the smallest and
    largest N and the fitted exponent."""
    out = []
    for program in dict.fromkeys(m.program for m in rows):
        ms = sorted((m for m in rows if m.program == program), key=lambda m: m.n)
        if len(ms) < 2:
            continue
        a, b = ms[0], ms[-1]
        slow = sorted(b.passes, key=lambda k: -b.passes[k])[:3]
        items = [(title, a.stages.get(k), b.stages.get(k)) for k, title in STAGES
                 if k in a.stages] + [(f"pass {p}", a.passes.get(p, 0.0), b.passes[p])
                                      for p in slow]
        for what, t0, t1 in items:
            if t0 is None or t1 is None:
                continue
            out.append({"program": program, "stage": what, "n0": a.n, "n1": b.n,
                        "t0_s": t0, "t1_s": t1,
                        "exponent": growth_exponent(t0, t1, a.n, b.n)})
    return out


def growth_table(growth: Sequence[dict]) -> str:
    lines = ["| program | stage | N0 | time at N0 | N1 | time at N1 | exponent k (t ~ N^k) |",
             "|---|---|---|---|---|---|---|"]
    for g in growth:
        k = "-" if g["exponent"] is None else f"{g['exponent']:.2f}"
        lines.append(f"| {g['program']} | {g['stage']} | {g['n0']} | {fmt_time(g['t0_s'])} | "
                     f"{g['n1']} | {fmt_time(g['t1_s'])} | {k} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------- CLI
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", default=",".join(DEFAULT_PROGRAMS),
                   help="comma-separated subset of: " + ", ".join(PROGRAMS))
    p.add_argument("--sizes", default=None,
                   help="comma-separated N (default %s)" % ",".join(map(str, DEFAULT_SIZES)))
    p.add_argument("--repeat", type=int, default=3, help="compiles per size (median)")
    p.add_argument("--no-llvm", action="store_true",
                   help="run only the HLO passes and buffer assignment (fast scans of big N)")
    p.add_argument("--smoke", action="store_true",
                   help="N = 1, 2 and one compile each: checks that the script works")
    p.add_argument("--json", metavar="OUT.json", help="also write all samples as JSON")
    p.add_argument("--allow-openblas-env", action="store_true",
                   help="run even though OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set")
    args = p.parse_args(argv)
    unknown = [x for x in args.programs.split(",") if x not in PROGRAMS]
    if unknown:
        p.error(f"unknown program(s) {', '.join(unknown)}; choose from {', '.join(PROGRAMS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    check_openblas_env(allow=args.allow_openblas_env or args.smoke)
    os.environ["XLAPY_DISABLE_CACHE"] = "1"
    sizes = (SMOKE_SIZES if args.smoke else
             tuple(int(s) for s in args.sizes.split(",")) if args.sizes else DEFAULT_SIZES)
    repeat = 1 if args.smoke else max(1, args.repeat)
    header = machine_header(measure_busy=not args.smoke)
    print_header(header)
    if not args.no_llvm:
        from xlapy.backends.cpu.jit_engine import engine
        header["llvm_parallelism"] = engine().parallelism
        print(f"# LLVM compiles in {engine().parallelism} process(es): this one and "
              f"{engine().parallelism - 1} helper(s) (XLAPY_LLVM_HELPERS)")
    measure("blocks", 1, 1, llvm=not args.no_llvm)      # imports, LLVM start-up: untimed
    rows = []
    for program in args.programs.split(","):
        own = PROGRAM_SIZES.get(program) if not (args.smoke or args.sizes) else None
        for n in own or sizes:
            rows.append(measure(program, n, repeat, llvm=not args.no_llvm))
            print(f"... {program} N={n} done", file=sys.stderr, flush=True)
    header.update(print_footer(measure_busy=not args.smoke))
    growth = growth_rows(rows)
    print(f"# median of {repeat} compile(s) per row; disk cache off"
          + ("; --no-llvm: passes and buffer assignment only" if args.no_llvm else ""))
    print("\n## Stages\n")
    print(stage_table(rows))
    print("\n## HLO passes (each summed over its runs)\n")
    print(pass_table(rows))
    print("\n## Growth\n")
    print(growth_table(growth))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "repeat": repeat, "llvm": not args.no_llvm,
                       "rows": [m.as_dict() for m in rows], "growth": growth}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
