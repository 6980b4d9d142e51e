"""The collective-bytes table of docs/performance.md ("SPMD partitioning"): for each program in
``tests/data/spmd`` (``tests/make_spmd_cases.py``), the collectives and their bytes in xlapy's
partitioned module and in XLA's. Run: ``python benchmarks/spmd_collectives.py``."""
from __future__ import annotations

import collections
import pathlib
import sys

from xlapy.client.spmd import spmd_partition
from xlapy.hlo.parser import parse_module
from xlapy.passes.spmd_reshard import COLLECTIVES

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from test_spmd_jax import CASES, DATA, collective_bytes, partitions  # noqa: E402


def kinds(module) -> str:
    c = collections.Counter(i.opcode.removesuffix("-start") for comp in module.computations
                            for i in comp.instructions
                            if i.opcode.removesuffix("-start") in COLLECTIVES)
    return ", ".join(f"{v}× {k}" for k, v in sorted(c.items())) or "none"


def main() -> None:
    print("| program | partitions | xlapy collectives | xlapy bytes | XLA collectives | "
          "XLA bytes |")
    print("|---|---|---|---|---|---|")
    for name in CASES:
        m = parse_module((DATA / f"{name}.hlo").read_text())
        xla = parse_module((DATA / f"{name}.partitioned.hlo").read_text())
        n = partitions(m)
        ours = spmd_partition(m, n).module
        print(f"| {name} | {n} | {kinds(ours)} | {collective_bytes(ours)} | {kinds(xla)} | "
              f"{collective_bytes(xla)} |")


if __name__ == "__main__":
    main()
