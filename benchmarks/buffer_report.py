"""Peak temp bytes after xlapy's CPU pipeline vs the unfused sum of all intermediates.

Usage: .venv/bin/python benchmarks/buffer_report.py [CASE_DIR ...]
Defaults to the conformance training cases in ../shared/conformance/cases/training.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from xlapy.client import optimize_with_report
from xlapy.hlo import parse_module
from xlapy.passes.buffer_assignment import assign_buffers, intermediate_bytes

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = sorted((ROOT.parent / "shared/conformance/cases/training").glob("*"))


def main(argv: list[str]) -> None:
    dirs = [Path(a) for a in argv] or DEFAULT
    print("| case | instructions (entry) | unfused intermediates | temp bytes, no fusion | "
          "peak temp bytes after pipeline | fusions | pipeline time | XLA's optimized module: "
          "temp bytes, fusions |")
    print("|---|---|---|---|---|---|---|---|")
    for d in dirs:
        module = parse_module((d / "module.hlo").read_text())
        unfused = intermediate_bytes(module)
        plain = assign_buffers(module).total_temp_bytes
        t0 = time.perf_counter()
        res = optimize_with_report(module)
        dt = time.perf_counter() - t0
        fusions = sum(1 for i in res.module.entry.instructions if i.opcode == "fusion")
        xla = parse_module((d / "module.optimized.hlo").read_text())
        xla_temp = assign_buffers(xla).total_temp_bytes
        xla_fusions = sum(1 for i in xla.entry.instructions if i.opcode == "fusion")
        print(f"| {d.name} | {len(module.entry.instructions)} | {unfused:,} B | {plain:,} B | "
              f"{res.buffers.total_temp_bytes:,} B | {fusions} | {dt:.2f} s | "
              f"{xla_temp:,} B, {xla_fusions} |")


if __name__ == "__main__":
    main(sys.argv[1:])
