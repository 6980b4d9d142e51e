"""``benchmarks/training.py --profile``: the W5 step's ``--xla_hlo_profile`` table (smoke
sizes), and the ``--w5`` case list of ``benchmarks/conv_bench.py``."""
from __future__ import annotations

import sys
from pathlib import Path


BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import conv_bench  # noqa: E402
import training  # noqa: E402


def test_profile_smoke(capsys):
    assert training.main(["--profile", "--smoke", "--warmup", "1",
                          "--profile-rows", "500"]) == 0
    out = capsys.readouterr().out
    assert "Execution profile for" in out and "1 call," in out
    table = out[out.index("Execution profile for"):].strip().splitlines()
    assert table[1].split()[:3] == ["total", "ms", "%"]
    assert 2 + 10 < len(table) <= 2 + 500              # head, columns, every row
    assert "more rows" not in out and "convolution" in out


def test_w5_convolution_cases():
    cases = conv_bench.w5_cases(2)
    assert len(cases) == 4 + 3 + 4 + 4
    for c in cases:
        instr = conv_bench.make_instr(c)           # shapes are consistent
        assert instr.shape.dims
    names = [c.name for c in cases]
    assert "W5 conv2 weight grad f01b_i01o" in names and "W5 conv1 fwd" in names
