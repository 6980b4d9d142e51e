"""examples/seed_talk_mean.py: the XLA talk's running example compiles to one fusion and
computes NumPy's value."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import xlapy
from xlapy.hlo import parse_module

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "seed_talk_mean.py"


def test_talk_mean_example_prints_one_fusion_and_numpys_value():
    proc = subprocess.run([sys.executable, str(EXAMPLE)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    before, after = out.split("=== HLO after optimizations")
    assert "fusion(" not in before and "reduce(" in before and "multiply(" in before
    assert "fusions in the entry computation: 1" in out
    got, want = (float(v) for v in re.search(r"result: (\S+)\s+numpy: (\S+)", out).groups())
    assert abs(got - want) <= 1e-5 * abs(want)
    assert "seed_talk_mean.py" in before              # metadata leads to the user's file


def test_talk_mean_optimized_module_has_exactly_one_fusion():
    """The same function in-process: the optimized entry is one kLoop fusion holding the
    square, the multiply, the add, the reduce and the division, and nothing else runs."""
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        import seed_talk_mean
    finally:
        sys.path.pop(0)
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    text = seed_talk_mean.f.experimental_get_compiler_ir(x, y)(stage="optimized_hlo")
    module = parse_module(text)
    entry = [i for i in module.entry.instructions if i.opcode != "parameter"]
    assert [i.opcode for i in entry] == ["fusion"]
    fused = {i.opcode for i in entry[0].attrs["calls"].instructions}
    assert {"multiply", "add", "reduce", "divide"} <= fused
    got = np.asarray(seed_talk_mean.f(x, y))
    np.testing.assert_allclose(got, np.mean(x.astype(np.float64) ** 2 * 3 + y), rtol=1e-5)
    assert isinstance(seed_talk_mean.f, xlapy.frontend.JitFunction)
