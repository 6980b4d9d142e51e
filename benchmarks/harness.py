"""Shared machinery of the benchmark scripts: implementations, timing, checking, reporting.

A *case* is one workload at one size with several implementations of it (xlapy through
``xlapy.jit``, NumPy eager, JAX jit, a hand-written fused C loop). :func:`run_case`

1. runs every implementation once and checks its answer against a float64 NumPy reference
   (an implementation that disagrees is reported as ``WRONG`` and not timed);
2. warms every implementation up, then takes ``repeat`` samples *round-robin* (one sample of
   each implementation in turn), so slow drifts of a noisy machine hit all of them alike;
   each sample starts after a short pause and an untimed sample (:data:`SETTLE_S`), so the
   previous implementation's BLAS/OpenMP threads have stopped spinning and its own are awake;
   a sample times ``number`` back-to-back calls, with ``number`` chosen so that one sample
   lasts at least ``--min-sample-ms``;
3. reports medians and interquartile ranges per call, and ratios against the peers
   measured in the same run.

Compile time is kept out of the timings: xlapy's is ``jitted.lower(*args)`` (trace, passes,
code generation), JAX's is ``jax.jit(f).lower(*args).compile()``; both are reported as
"compile s".
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from c_loops import c_available
from machine import blas_libraries, busy_text, check_openblas_env, machine_header, others_busy

Fn = Callable[..., Any]

#: Above this many input elements (all inputs together) the interpreter is not timed: it is
#: NumPy op by op with no fusion, and slow enough there to make a run take minutes.
INTERPRETER_MAX_ELEMENTS = 3_000_000


# ----------------------------------------------------------------------------- statistics
@dataclass
class Stats:
    """Per-call times (seconds) of one implementation: median and quartiles of the samples."""

    median: float
    q1: float
    q3: float
    samples: list[float]
    number: int

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    def as_dict(self) -> dict:
        return {"median_s": self.median, "q1_s": self.q1, "q3_s": self.q3, "iqr_s": self.iqr,
                "calls_per_sample": self.number, "samples_s": self.samples}


def summarize(samples: Sequence[float], number: int) -> Stats:
    """Median and quartiles (inclusive method; a single sample is its own quartiles)."""
    xs = sorted(samples)
    if len(xs) == 1:
        return Stats(xs[0], xs[0], xs[0], list(xs), number)
    q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return Stats(statistics.median(xs), q1, q3, list(samples), number)


def fmt_time(seconds: float | None) -> str:
    """``812 ns``, ``12.3 us``, ``4.56 ms``, ``1.23 s``."""
    if seconds is None or math.isnan(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            v = seconds / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{seconds / 1e-9:.0f} ns"


# ------------------------------------------------------------------------ implementations
@dataclass
class Impl:
    """One implementation of a case: ``call()`` runs it once and returns its result."""

    name: str                        # column: "xlapy", "numpy", "jax", "c"
    call: Callable[[], Any] | None   # None when it could not be built (see ``note``)
    compile_s: float | None = None
    note: str = ""                   # why it is missing, or what is special about it
    failed: bool = False             # building it raised (reported as an error)


def failed_impl(name: str, what: str, e: BaseException) -> Impl:
    """An implementation whose build raised: the traceback goes to stderr, the row says error."""
    traceback.print_exc(file=sys.stderr)
    return Impl(name, None, note=f"{what} failed: {type(e).__name__}: {e}", failed=True)


def xlapy_impl(fn: Fn, args: Sequence[np.ndarray], backend: str) -> Impl:
    """``xlapy.jit(lambda *a: fn(xlapy.numpy, *a), backend=backend)`` called on NumPy arrays."""
    import xlapy
    import xlapy.numpy as xnp

    def body(*a: Any) -> Any:
        return fn(xnp, *a)

    body.__name__ = getattr(fn, "__name__", "fn")
    return jitted_impl(xlapy.jit(body, backend=backend), args, backend)


def jitted_impl(jitted: Any, args: Sequence[Any], backend: str,
                result: Callable[[Any], Any] = lambda r: r) -> Impl:
    """The "xlapy" implementation calling ``jitted(*args)`` (``result`` maps what it returns
    to what is checked), compiled first so that its compile time is kept apart."""
    t0 = time.perf_counter()
    try:
        jitted.lower(*args)          # traces and compiles; the calls below hit the cache
    except Exception as e:
        return failed_impl("xlapy", "compile", e)
    compile_s = time.perf_counter() - t0
    return Impl("xlapy", lambda: result(jitted(*args)), compile_s,
                note=fallback_note(jitted, args, backend))


def fallback_note(jitted: Any, args: Sequence[np.ndarray], backend: str) -> str:
    """Which instructions the backend runs as interpreter fallbacks, when it can say
    (the cpu executable's ``fallback_opcodes()``); costs one more compile of the module."""
    from xlapy.client import get_backend
    try:
        exe = get_backend(backend).compile(jitted.lower(*args).hlo_module)
        fallbacks = exe.fallback_opcodes()
    except Exception:            # a backend without the method, or a compile problem
        return ""                # already reported by the timed implementation
    return f"fallback thunks: {', '.join(fallbacks)}" if fallbacks else ""


def numpy_impl(fn: Fn, args: Sequence[np.ndarray]) -> Impl:
    """NumPy eager, op by op (single-threaded except inside BLAS)."""
    return Impl("numpy", lambda: fn(np, *args))


def jax_available() -> bool:
    return importlib.util.find_spec("jax") is not None


def jax_impl(fn: Fn, args: Sequence[np.ndarray]) -> Impl:
    """``jax.jit(lambda *a: fn(jax.numpy, *a))`` on device arrays made once."""
    if not jax_available():
        return Impl("jax", None, note="jax is not installed")
    import jax
    import jax.numpy as jnp

    def body(*a: Any) -> Any:
        return fn(jnp, *a)

    dargs = [jax.device_put(a) for a in args]
    t0 = time.perf_counter()
    try:
        jax.jit(body).lower(*dargs).compile()
    except Exception as e:
        return failed_impl("jax", "compile", e)
    compile_s = time.perf_counter() - t0
    jitted = jax.jit(body)

    def call() -> Any:
        return jax.block_until_ready(jitted(*dargs))
    return Impl("jax", call, compile_s)


def c_impl(build: Callable[[], Callable[[], Any]]) -> Impl:
    """A C loop: ``build()`` compiles/loads the library and returns the call (see c_loops)."""
    if not c_available():
        return Impl("c", None, note="gcc not found")
    try:
        return Impl("c", build())
    except (OSError, RuntimeError) as e:
        return failed_impl("c", "C build", e)


# ------------------------------------------------------------------------------ the cases
@dataclass
class Case:
    """One workload at one size: a float64 reference and the implementations to compare."""

    workload: str
    size: str
    reference: Any                   # array or tuple of arrays
    impls: list[Impl]
    rtol: float = 1e-4
    atol: float = 1e-5


@dataclass
class ImplResult:
    name: str
    stats: Stats | None = None
    compile_s: float | None = None
    status: str = "ok"               # ok | WRONG | error | missing
    detail: str = ""


@dataclass
class CaseResult:
    workload: str
    size: str
    results: dict[str, ImplResult] = field(default_factory=dict)

    def median(self, name: str) -> float | None:
        r = self.results.get(name)
        return r.stats.median if r is not None and r.stats is not None else None

    def ratio(self, a: str, b: str) -> float | None:
        ma, mb = self.median(a), self.median(b)
        return ma / mb if ma is not None and mb else None


def _leaves(x: Any) -> list[np.ndarray]:
    if isinstance(x, (tuple, list)):
        return [np.asarray(v) for v in x]
    return [np.asarray(x)]


def check_result(got: Any, reference: Any, rtol: float, atol: float) -> str:
    """'' when ``got`` matches the reference (allclose), else a description of the mismatch."""
    gs, rs = _leaves(got), _leaves(reference)
    if len(gs) != len(rs):
        return f"{len(gs)} outputs, expected {len(rs)}"
    for i, (g, r) in enumerate(zip(gs, rs)):
        if g.shape != r.shape:
            return f"output {i}: shape {g.shape}, expected {r.shape}"
        g64 = g.astype(np.float64)
        if not np.allclose(g64, r, rtol=rtol, atol=atol):
            err = np.abs(g64 - r)
            k = int(np.argmax(err - rtol * np.abs(r)))
            return (f"output {i}: max abs error {err.max():.3g} (at flat index {k}: got "
                    f"{g64.flat[k]:.7g}, expected {r.flat[k]:.7g}; rtol={rtol}, atol={atol})")
    return ""


def _calibrate(call: Callable[[], Any], min_sample_s: float) -> int:
    t0 = time.perf_counter()
    call()
    one = max(time.perf_counter() - t0, 1e-7)
    return max(1, math.ceil(min_sample_s / one))


def _sample(call: Callable[[], Any], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        call()
    return (time.perf_counter() - t0) / number


# OpenBLAS worker threads spin for about 2**28 cycles (~0.1 s) after a call before they sleep,
# and NumPy, JAX and xlapy each bring their own thread pools: a sample taken right after
# another implementation's sample shares the 2 cores with that implementation's spinning
# threads (this doubled W6's times). Each sample therefore starts after a pause that lets
# them sleep, and after an untimed sample (as long as a timed one) that brings its own
# implementation back to steady state (threads awake, caches and clocks warm).
SETTLE_S = 0.25


def run_case(case: Case, repeat: int, warmup: int, min_sample_s: float,
             time_wrong: bool = False, settle_s: float = SETTLE_S) -> CaseResult:
    """Check every implementation, then time the ones that agree (round-robin samples,
    each after a ``settle_s`` pause and an untimed sample); ``time_wrong`` times the
    disagreeing ones too (they stay marked WRONG)."""
    out = CaseResult(case.workload, case.size)
    live: list[Impl] = []
    for impl in case.impls:
        res = ImplResult(impl.name, compile_s=impl.compile_s)
        out.results[impl.name] = res
        if impl.call is None:
            res.status, res.detail = ("error" if impl.failed else "missing"), impl.note
            continue
        try:
            problem = check_result(impl.call(), case.reference, case.rtol, case.atol)
        except Exception as e:   # a failing implementation is reported, the others still run
            res.status, res.detail = "error", f"{type(e).__name__}: {e}"
            traceback.print_exc(file=sys.stderr)
            continue
        if problem:
            res.status, res.detail = "WRONG", problem
            print(f"[{case.workload} {case.size}] {impl.name} gives a wrong answer: {problem}",
                  file=sys.stderr)
            if time_wrong:
                live.append(impl)
            continue
        res.detail = impl.note
        live.append(impl)
    numbers = {}
    for impl in live:
        for _ in range(max(0, warmup - 1)):
            impl.call()
        numbers[impl.name] = _calibrate(impl.call, min_sample_s) if min_sample_s > 0 else 1
    samples: dict[str, list[float]] = {impl.name: [] for impl in live}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            for impl in live:
                if len(live) > 1 and settle_s > 0:
                    time.sleep(settle_s)
                    _sample(impl.call, numbers[impl.name])      # untimed: back to steady state
                samples[impl.name].append(_sample(impl.call, numbers[impl.name]))
    finally:
        if gc_was_enabled:
            gc.enable()
    for impl in live:
        out.results[impl.name].stats = summarize(samples[impl.name], numbers[impl.name])
    return out


# -------------------------------------------------------------------------------- reports
COLUMNS = ("xlapy", "numpy", "jax", "c")
TITLES = {"xlapy": "xlapy", "numpy": "NumPy eager", "jax": "JAX jit", "c": "C loop"}


def time_cell(r: ImplResult | None) -> str:
    """A table cell: the median per call ± half the IQR, or why there is none."""
    if r is None:
        return "-"
    if r.stats is None:
        return {"missing": "-", "WRONG": "WRONG", "error": "error"}.get(r.status, r.status)
    text = fmt_time(r.stats.median)
    if len(r.stats.samples) > 1:
        text += f" ±{fmt_time(r.stats.iqr / 2)}"
    return text + (" (WRONG)" if r.status == "WRONG" else "")


def ratio_cell(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def compile_cell(r: ImplResult | None) -> str:
    return "-" if r is None or r.compile_s is None else f"{r.compile_s:.2f}"


def notes(results: Sequence[CaseResult]) -> list[str]:
    """One line per implementation that is not plainly ok (its status and detail)."""
    return [f"- {c.workload} {c.size}, {TITLES.get(r.name, r.name)}: "
            f"{r.status}{': ' + r.detail if r.detail else ''}"
            for c in results for r in c.results.values() if r.status != "ok" or r.detail]


def format_table(results: Sequence[CaseResult], backend: str) -> str:
    """A Markdown table: medians ± half the IQR per call, compile seconds and ratios."""
    head = (f"| workload | size | xlapy ({backend}) | compile s | NumPy eager | JAX jit | "
            "JAX compile s | C loop | xlapy/C | xlapy/JAX |")
    lines = [head, "|" + "---|" * 10]
    for c in results:
        r = c.results
        lines.append(
            f"| {c.workload} | {c.size} | {time_cell(r.get('xlapy'))} | "
            f"{compile_cell(r.get('xlapy'))} | {time_cell(r.get('numpy'))} | "
            f"{time_cell(r.get('jax'))} | {compile_cell(r.get('jax'))} | "
            f"{time_cell(r.get('c'))} | {ratio_cell(c.ratio('xlapy', 'c'))} | "
            f"{ratio_cell(c.ratio('xlapy', 'jax'))} |")
    extra = notes(results)
    return "\n".join(lines + ([""] + extra if extra else []))


def to_json(header: dict, backend: str, results: Sequence[CaseResult]) -> dict:
    rows = []
    for c in results:
        impls = {}
        for name, r in c.results.items():
            d = {"status": r.status, "detail": r.detail, "compile_s": r.compile_s}
            if r.stats is not None:
                d.update(r.stats.as_dict())
            impls[name] = d
        rows.append({"workload": c.workload, "size": c.size, "impls": impls,
                     "xlapy_over_c": c.ratio("xlapy", "c"),
                     "xlapy_over_jax": c.ratio("xlapy", "jax"),
                     "xlapy_over_numpy": c.ratio("xlapy", "numpy")})
    return {"header": header, "backend": backend, "rows": rows}


def load_text(load: Sequence[float] | None = None) -> str:
    return ", ".join(f"{v:.2f}" for v in (load if load is not None else os.getloadavg()))


def print_footer(measure_busy: bool = True) -> dict:
    """How busy the machine was just after the run (see machine.others_busy)."""
    busy = others_busy() if measure_busy else None
    print(f"# after the run: other processes kept {busy_text(busy)} of the cores busy; "
          f"load average {load_text()}")
    return {"others_busy_after": busy, "load_average_after": os.getloadavg()}


def print_header(header: dict) -> None:
    print(f"# {header['cpu']} (LLVM: {header['llvm_host_cpu']}), {header['cores']} cores "
          f"({header['usable_cores']} usable); Python {header['python']}")
    print(f"# before the run: other processes kept {busy_text(header['others_busy'])} of the "
          f"cores busy; load average {load_text(header['load_average'])}")
    print(f"# C loops: {header['c_threads']} OpenMP threads, OMP_WAIT_POLICY="
          f"{header['omp_wait_policy']}; xlapy disk cache "
          f"{'on' if header['xlapy_disk_cache'] else 'off (compile s is a cold compile)'}")
    print("# " + ", ".join(f"{k} {v}" for k, v in header["versions"].items()))
    for lib in header["blas"]:
        print(f"# BLAS: {lib}")
    for w in header["warnings"]:
        print(f"# WARNING: {w}")


# ------------------------------------------------------------------------------------ CLI
def parser(description: str, default_repeat: int = 15) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--backend", choices=("cpu", "interpreter"), default="cpu",
                   help="xlapy backend (falls back to interpreter when cpu is not registered)")
    p.add_argument("--repeat", type=int, default=default_repeat,
                   help="timed samples per implementation (default %(default)s)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls before timing")
    p.add_argument("--min-sample-ms", type=float, default=20.0,
                   help="each sample repeats the call until it lasts this long")
    p.add_argument("--smoke", action="store_true",
                   help="tiny sizes, 1 sample of 1 call: checks that the script works")
    p.add_argument("--json", metavar="OUT.json", help="also write all samples as JSON")
    p.add_argument("--time-wrong", action="store_true",
                   help="also time implementations whose answer is wrong (marked WRONG)")
    p.add_argument("--no-jax", action="store_true", help="do not run the JAX peer")
    p.add_argument("--no-c", action="store_true", help="do not run the C loops")
    p.add_argument("--disk-cache", action="store_true",
                   help="let the cpu backend use its disk cache (default: off, so 'compile s' "
                        "is a cold compile)")
    p.add_argument("--allow-openblas-env", action="store_true",
                   help="run even though OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set")
    return p


def resolve_backend(name: str) -> str:
    """``name`` if registered; for "cpu", import ``xlapy.backends.cpu`` first; else interpreter."""
    from xlapy.client import get_backend
    from xlapy.errors import InvalidArgumentError
    try:
        get_backend(name)
        return name
    except InvalidArgumentError:
        pass
    reason = "it is not registered"
    try:
        __import__(f"xlapy.backends.{name}")
        get_backend(name)
        return name
    except ImportError as e:
        reason = f"importing xlapy.backends.{name} failed: {e}"
    except InvalidArgumentError:
        reason = f"xlapy.backends.{name} imports but does not register backend {name!r}"
    print(f"NOTE: xlapy backend {name!r} is not available ({reason}); "
          "falling back to backend 'interpreter'.", file=sys.stderr)
    return "interpreter"


def setup(args: argparse.Namespace) -> str:
    """Environment checks and cache choice from the common flags; returns the backend."""
    check_openblas_env(allow=args.allow_openblas_env or args.smoke)
    if not args.disk_cache:
        os.environ["XLAPY_DISABLE_CACHE"] = "1"
    return resolve_backend(args.backend)


@dataclass
class Settings:
    """What a workload script needs to build its cases."""

    backend: str
    smoke: bool
    jax: bool
    c: bool

    def xlapy_allowed(self, elements: int) -> str:
        """'' when xlapy should be timed on inputs of ``elements`` elements, else why not."""
        if self.backend == "interpreter" and not self.smoke \
                and elements > INTERPRETER_MAX_ELEMENTS:
            return (f"not timed on the interpreter above {INTERPRETER_MAX_ELEMENTS:,} input "
                    "elements (use --backend cpu)")
        return ""


def peer_impls(fn: Fn, args: Sequence[np.ndarray], s: Settings,
               c_build: Callable[[], Callable[[], Any]]) -> list[Impl]:
    """xlapy (unless the inputs are too big for the interpreter), NumPy, and JAX and the C
    loop ``c_build`` when the flags allow them."""
    skip = s.xlapy_allowed(sum(a.size for a in args))
    impls = [Impl("xlapy", None, note=skip) if skip else xlapy_impl(fn, args, s.backend),
             numpy_impl(fn, args)]
    if s.jax:
        impls.append(jax_impl(fn, args))
    if s.c:
        impls.append(c_impl(c_build))
    return impls


def exit_status(results: Sequence[CaseResult]) -> int:
    """1 when an implementation failed or gave a wrong answer, else 0."""
    return int(any(r.status in ("WRONG", "error") for c in results for r in c.results.values()))


def run(args: argparse.Namespace, build_cases: Callable[[Settings], Iterable[Case]],
        table: Callable[[Sequence[CaseResult], str], str] = format_table,
        legend: str = "cells are median ± half the IQR per call") -> int:
    """Build the cases from parsed flags, run them, print the header and ``table``, write
    JSON; returns :func:`exit_status`."""
    backend = setup(args)
    settings = Settings(backend, args.smoke, not args.no_jax, not args.no_c)
    repeat, warmup, min_sample = ((1, 1, 0.0) if args.smoke else
                                  (args.repeat, args.warmup, args.min_sample_ms / 1e3))
    header = machine_header(measure_busy=not args.smoke)
    print_header(header)
    results = []
    for case in build_cases(settings):      # one case at a time: big inputs are freed
        results.append(run_case(case, repeat, warmup, min_sample, args.time_wrong,
                                settle_s=0.0 if args.smoke else SETTLE_S))
        print(f"... {case.workload} {case.size} done", file=sys.stderr, flush=True)
        del case
    blas_after = blas_libraries()
    if blas_after != header["blas"]:
        header["blas"] = blas_after
        for lib in blas_after:
            print(f"# BLAS (after the run): {lib}")
    header.update(print_footer(measure_busy=not args.smoke))
    print(f"# {repeat} samples per implementation; {legend}")
    print(table(results, backend))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(to_json(header, backend, results), f, indent=1)
    return exit_status(results)


def main(argv: Sequence[str] | None, description: str,
         build_cases: Callable[[Settings], Iterable[Case]], default_repeat: int = 15) -> int:
    """Parse the common flags and :func:`run`; returns the exit status."""
    return run(parser(description, default_repeat).parse_args(argv), build_cases)
