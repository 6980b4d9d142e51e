"""Speed of the HLO text parser (``xlapy.hlo.parse_module``).

The CPU backend's disk compile cache stores optimized HLO text and parses it again on a cache
hit in a new process, so the parser's speed is part of every warm compile. Modules timed:

- every real-XLA conformance module (``../shared/conformance/cases/*/*/module*.hlo``,
  ``$XLAPY_CONFORMANCE_DIR`` or ``--cases DIR``): the largest few alone, then all together;
- generated modules: the optimized HLO (what the disk cache stores) of ``benchmarks/training.py``'s
  W4a MNIST step and W5 CIFAR-10 CNN step, printed by
  ``xlapy.jit(step).get_compiler_ir(*args)(stage="optimized_hlo")`` (``--no-generate`` skips them);
- any HLO files given on the command line.

Each row is the median over ``--repeat`` parses (after one untimed parse), with the
instructions per second that median gives. The machine should be quiet: on a shared one,
compare runs made one right after the other.

    .venv/bin/python benchmarks/parse_speed.py
    .venv/bin/python benchmarks/parse_speed.py --repeat 31 --top 5 --no-generate dump.hlo
"""
from __future__ import annotations

import argparse
import gc
import glob
import os
import statistics
import sys
import time
from typing import Callable, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))   # xlapy from this checkout
sys.path.insert(0, HERE)                    # training.py's models

DEFAULT_CASES = os.environ.get("XLAPY_CONFORMANCE_DIR", os.path.join(
    os.path.dirname(os.path.dirname(HERE)), "shared", "conformance", "cases"))


def count_instructions(text: str) -> int:
    """Instructions in a module's text (as parsed)."""
    from xlapy.hlo import parse_module
    return sum(len(c.instructions) for c in parse_module(text).computations)


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``fn()`` over ``repeat`` runs after one untimed run."""
    fn()
    samples = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def generated_modules() -> list[tuple[str, str]]:
    """(label, optimized HLO text) of the W4a and W5 training steps at their benchmark sizes."""
    import training
    import xlapy
    out = []
    for key, label in (("W4a seed MNIST 784-10 Adam", "W4a MNIST step (optimized)"),
                       ("W5 CIFAR-10 CNN RMSprop", "W5 CNN step (optimized)")):
        make, problem, _ = training.WORKLOADS[key]
        args = problem(False)
        step = xlapy.jit(make(training.namespace("xlapy")))
        out.append((label, step.get_compiler_ir(*args)(stage="optimized_hlo")))
    return out


def row(label: str, text: str, seconds: float, instructions: int) -> str:
    return (f"| {label} | {len(text) / 1024:.1f} | {instructions} | {seconds * 1e3:.2f} | "
            f"{instructions / seconds:,.0f} |")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=15, help="timed parses per module (median)")
    ap.add_argument("--top", type=int, default=8, help="largest conformance modules shown alone")
    ap.add_argument("--cases", default=DEFAULT_CASES, help="conformance cases directory")
    ap.add_argument("--no-generate", action="store_true",
                    help="skip the generated training-step modules")
    ap.add_argument("files", nargs="*", help="more HLO text files to time")
    args = ap.parse_args(argv)

    from xlapy.hlo import parse_module

    paths = sorted(glob.glob(os.path.join(args.cases, "*", "*", "module*.hlo")))
    texts = [(os.path.relpath(p, args.cases), open(p).read()) for p in paths]
    print("| module | KB | instructions | parse ms (median) | instructions/s |")
    print("|---|---|---|---|---|")
    for label, text in sorted(texts, key=lambda t: -len(t[1]))[:args.top]:
        t = median_seconds(lambda: parse_module(text), args.repeat)
        print(row(label, text, t, count_instructions(text)))
    if texts:
        def parse_all() -> None:
            for _, text in texts:
                parse_module(text)
        t = median_seconds(parse_all, max(3, args.repeat // 3))
        joined = "".join(text for _, text in texts)
        print(row(f"all {len(texts)} conformance modules", joined, t,
                  sum(count_instructions(text) for _, text in texts)))
    else:
        print(f"(no conformance modules under {args.cases})", file=sys.stderr)
    more = [] if args.no_generate else generated_modules()
    more += [(path, open(path).read()) for path in args.files]
    for label, text in more:
        t = median_seconds(lambda: parse_module(text), args.repeat)
        print(row(label, text, t, count_instructions(text)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
