"""``benchmarks/compile_time.py`` keeps working: ``--smoke`` compiles every program at two
sizes on the cpu backend and reports every stage, pass and growth exponent; the helpers
that make the tables compute what they say."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

compile_time = importlib.import_module("compile_time")


def test_smoke_run_reports_every_stage(tmp_path, capsys):
    out_json = tmp_path / "compile.json"
    assert compile_time.main(["--smoke", "--json", str(out_json)]) == 0
    printed = capsys.readouterr().out
    data = json.loads(out_json.read_text())
    assert data["llvm"] is True and data["repeat"] == 1
    rows = data["rows"]
    assert [(r["program"], r["n"]) for r in rows] == [
        (p, n) for p in compile_time.DEFAULT_PROGRAMS for n in compile_time.SMOKE_SIZES]
    for r in rows:
        stages = r["stages_s"]
        for key, _ in compile_time.STAGES:
            assert key in stages, (r["program"], key)
        assert stages["trace"] > 0 and stages["passes"] > 0 and stages["llvm"] > 0
        # the parts of a compile add up to no more than its total
        parts = (stages["passes"] + stages["buffer_assignment"] + stages["emit_ir"]
                 + stages["llvm"] + stages["build"])
        assert parts <= stages["total"] * 1.0001
        assert r["kernels"] > 0 and r["instructions"] > 0
        assert r["passes_s"]["fusion"] > 0
        assert 0 < sum(r["passes_s"].values()) <= stages["passes"] * 1.0001
    # larger N, more HLO
    by_program = {}
    for r in rows:
        by_program.setdefault(r["program"], []).append(r["instructions"])
    assert all(a < b for a, b in by_program.values())
    assert {g["program"] for g in data["growth"]} == set(compile_time.DEFAULT_PROGRAMS)
    for title in ("## Stages", "## HLO passes", "## Growth"):
        assert printed.count(title) == 1
    assert "| blocks-grad | 2 |" in printed


def test_no_llvm_mode_runs_passes_only(capsys):
    assert compile_time.main(["--smoke", "--no-llvm", "--programs", "mlp-train"]) == 0
    printed = capsys.readouterr().out
    assert "LLVM wall" not in printed and "| mlp-train | 1 |" in printed


def test_unknown_program_is_an_error():
    with pytest.raises(SystemExit):
        compile_time.main(["--programs", "blocks,nonsense"])


def test_growth_exponent():
    assert compile_time.growth_exponent(1.0, 2.0, 10, 20) == pytest.approx(1.0)
    assert compile_time.growth_exponent(1.0, 4.0, 10, 20) == pytest.approx(2.0)
    assert compile_time.growth_exponent(0.0, 4.0, 10, 20) is None
    assert compile_time.growth_exponent(1.0, 4.0, 10, 10) is None


def test_programs_compute_what_numpy_computes():
    """The benchmark's programs are real programs: the blocks forward pass agrees with
    NumPy, and a training step lowers the loss."""
    import numpy as np

    import xlapy
    fn, (x, g, b, ws) = compile_time.blocks_program(2)
    got = np.asarray(xlapy.jit(fn, backend="interpreter")(x, g, b, ws))
    want = compile_time._blocks(np, x.astype(np.float64), g, b, ws)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    step, args = compile_time.mlp_program(2)
    jitted = xlapy.jit(step, backend="interpreter")
    params, loss0 = jitted(*args)
    _, loss1 = jitted(params, *args[1:])
    assert float(loss1) < float(loss0)


def test_elementwise_chain_program(capsys):
    """The long-chain program (opt-in) compiles and reports like the others."""
    assert compile_time.main(["--smoke", "--no-llvm", "--programs", "ew-chain"]) == 0
    assert "| ew-chain | 2 |" in capsys.readouterr().out
    fn, (x,) = compile_time.PROGRAMS["ew-chain"](3)
    import numpy as np
    want = x
    for _ in range(3):
        want = np.sin(want) + np.float32(1)
    np.testing.assert_allclose(np.asarray(fn(x)), want, rtol=1e-6)
