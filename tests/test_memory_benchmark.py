"""benchmarks/memory.py in smoke mode: a child per workload, with and without --warm-up,
reports the RSS growth and the runtime's counters of xlapy's step."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.slow
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm-up"])
def test_smoke_rows_for_xlapy(warm, capsys):
    sys.path.insert(0, str(BENCH))
    import memory
    argv = ["--smoke", "--frameworks", "xlapy", "--steps", "1"] + (["--warm-up"] if warm else [])
    try:
        assert memory.main(argv) == 0
    finally:
        memory.WARM_UP[0] = False
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| W")]
    assert {r.split("|")[1].strip() for r in rows} == {"W5", "W7s"}
    for row in rows:
        cells = [c.strip() for c in row.split("|")[1:-1]]
        assert cells[2] == "xlapy" and int(cells[3]) >= 0 and int(cells[4]) >= 0, row
        assert int(cells[5]) >= int(cells[4]), row      # held peak covers the step's bytes
    w5 = next(r for r in rows if r.startswith("| W5"))
    assert int(w5.split("|")[5]) > 0                   # the CNN step holds some MiB
