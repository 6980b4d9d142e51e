"""The benchmark scripts keep working: each runs in ``--smoke`` mode (tiny sizes, one sample,
backend "interpreter"), every implementation agrees with the float64 reference, and the
harness's statistics, checks and refusals behave."""
from __future__ import annotations

import gc
import importlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

harness = importlib.import_module("harness")
machine = importlib.import_module("machine")

SCRIPTS = ["elementwise", "rows", "transformer", "jit_overhead", "training", "loops"]
EXPECTED_ROWS = {"elementwise": 2, "rows": 2, "transformer": 1, "jit_overhead": 2,
                 "training": 3, "loops": 2}
JAX_COLUMNS = {"jit_overhead": {"jax jit", "jax eager"}, "loops": {"xlapy (JAX HLO)", "JAX jit"}}
HAVE_GCC = shutil.which("gcc") is not None
HAVE_JAX = harness.jax_available()


def expected_impls(script: str) -> tuple[str, set[str]]:
    """The compiled xlapy column of ``script`` and every column that must be ok."""
    jit, names = {"jit_overhead": ("xlapy jit", {"xlapy execute()", "xlapy eager", "numpy"}),
                  "training": ("xlapy", {"eager"}),
                  "loops": ("xlapy jit", set())}.get(script, ("xlapy", {"numpy"}))
    names.add(jit)
    if HAVE_JAX:
        names |= JAX_COLUMNS.get(script, {"jax"})
    if HAVE_GCC and script not in ("jit_overhead", "training", "loops"):
        names.add("c")
    return jit, names


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_smoke(script, tmp_path, capsys):
    import xlapy
    module = importlib.import_module(script)
    out_json = tmp_path / f"{script}.json"
    backend = xlapy.default_backend()
    rc = module.main(["--smoke", "--backend", "interpreter", "--json", str(out_json)])
    # a script leaves the process's default backend as it found it (later tests rely on it)
    assert xlapy.default_backend() == backend
    printed = capsys.readouterr().out
    assert rc == 0, printed
    data = json.loads(out_json.read_text())
    assert data["backend"] == "interpreter"
    assert data["header"]["cores"] >= 1 and data["header"]["versions"]["numpy"] == np.__version__
    assert len(data["rows"]) == EXPECTED_ROWS[script]
    jit, names = expected_impls(script)
    for row in data["rows"]:
        impls = row["impls"]
        absent = {n for n, r in impls.items() if r["status"] == "missing"}
        assert set(impls) - absent == names, sorted(impls)
        if not HAVE_JAX:  # a peer that is not installed is a column marked missing
            assert {"jax jit" if script == "jit_overhead" else "JAX jit" if script == "loops"
                    else "jax"} <= absent, impls
        for name in names:
            assert impls[name]["status"] == "ok", (name, impls[name])
            assert impls[name]["median_s"] > 0
        assert impls[jit]["compile_s"] > 0
    table_head = ("| call (backend interpreter) |" if script == "jit_overhead" else
                  "| workload | size | xlapy")
    assert sum(line.startswith(table_head) for line in printed.splitlines()) == 1, printed


def test_command_line_run(tmp_path):
    """``python benchmarks/elementwise.py`` works as a script (imports its siblings)."""
    out = subprocess.run([sys.executable, str(BENCH / "elementwise.py"), "--smoke",
                          "--backend", "interpreter", "--no-jax", "--no-c"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "| W1 sum(x + y*z) | N=1e3 |" in out.stdout
    assert "# BLAS:" in out.stdout


@pytest.mark.skipif(not HAVE_GCC, reason="gcc not found")
def test_c_call_keeps_its_inputs_alive():
    """The call closure owns its input buffers: dropping the caller's arrays and reusing the
    freed memory must not change the answer (it read freed memory once)."""
    elementwise = importlib.import_module("elementwise")
    rng = np.random.default_rng(0)
    x, y, z = (rng.random(64, dtype=np.float32) for _ in range(3))
    expected = float(np.sum(x.astype(np.float64) + y.astype(np.float64) * z))
    call = elementwise.c_w1(x.copy(), y.copy(), z.copy())
    del x, y, z
    gc.collect()
    reuse = [np.zeros(64, np.float32) for _ in range(16)]
    assert float(call()) == pytest.approx(expected, rel=1e-6)
    assert len(reuse) == 16


def test_summarize_median_and_quartiles():
    s = harness.summarize([5.0, 1.0, 3.0, 2.0, 4.0], number=10)
    assert (s.median, s.q1, s.q3, s.iqr, s.number) == (3.0, 2.0, 4.0, 2.0, 10)
    one = harness.summarize([0.5], number=1)
    assert (one.median, one.iqr) == (0.5, 0.0)


def test_fmt_time_units():
    assert harness.fmt_time(2.5) == "2.5 s"
    assert harness.fmt_time(0.0123) == "12.3 ms"
    assert harness.fmt_time(0.000456) == "456 us"
    assert harness.fmt_time(7e-7) == "700 ns"


def test_check_result_reports_mismatch():
    ref = np.array([1.0, 2.0, 3.0])
    assert harness.check_result(np.float32([1, 2, 3]), ref, 1e-6, 0) == ""
    msg = harness.check_result(np.float32([1, 2, 3.1]), ref, 1e-4, 1e-6)
    assert "max abs error 0.1" in msg and "flat index 2" in msg
    assert "shape (2,)" in harness.check_result(np.float32([1, 2]), ref, 1e-4, 1e-6)


def test_wrong_implementation_is_reported_and_not_timed():
    calls = {"good": 0, "bad": 0}

    def good():
        calls["good"] += 1
        return np.float32(6.0)

    def bad():
        calls["bad"] += 1
        return np.float32(6.5)

    case = harness.Case("w", "n", np.float64(6.0),
                        [harness.Impl("numpy", good), harness.Impl("xlapy", bad),
                         harness.Impl("c", None, note="gcc not found")])
    res = harness.run_case(case, repeat=3, warmup=2, min_sample_s=0.0)
    assert res.results["xlapy"].status == "WRONG" and res.results["xlapy"].stats is None
    assert calls["bad"] == 1                      # the check call only
    assert res.results["numpy"].status == "ok"
    assert len(res.results["numpy"].stats.samples) == 3
    assert res.results["c"].status == "missing" and "gcc" in res.results["c"].detail
    table = harness.format_table([res], "cpu")
    assert "| w | n | WRONG |" in table and "xlapy: WRONG: output 0" in table
    timed = harness.run_case(case, repeat=2, warmup=1, min_sample_s=0.0, time_wrong=True)
    assert timed.results["xlapy"].status == "WRONG"
    assert len(timed.results["xlapy"].stats.samples) == 2
    assert "(WRONG)" in harness.format_table([timed], "cpu")


def test_ratios_in_table():
    res = harness.CaseResult("w", "n")
    for name, t in (("xlapy", 3e-3), ("c", 1e-3), ("jax", 6e-3), ("numpy", 9e-3)):
        res.results[name] = harness.ImplResult(name, harness.summarize([t], 1))
    assert res.ratio("xlapy", "c") == pytest.approx(3.0)
    row = harness.format_table([res], "cpu").splitlines()[2]
    assert row.endswith("| 3.00 | 0.50 |")
    assert harness.time_cell(res.results["c"]) == "1 ms"
    assert harness.ratio_cell(None) == "-" and harness.compile_cell(None) == "-"


def test_exit_status_and_notes():
    ok = harness.CaseResult("w", "n", {"numpy": harness.ImplResult("numpy")})
    assert harness.exit_status([ok]) == 0 and harness.notes([ok]) == []
    bad = harness.CaseResult("w", "n", {"xlapy": harness.ImplResult("xlapy", status="error",
                                                                    detail="boom")})
    assert harness.exit_status([ok, bad]) == 1
    assert harness.notes([ok, bad]) == ["- w n, xlapy: error: boom"]


def test_openblas_env_refused_unless_allowed(capsys):
    env = {"OPENBLAS_CORETYPE": "Haswell"}
    with pytest.raises(SystemExit) as e:
        machine.check_openblas_env(allow=False, environ=env)
    assert e.value.code == 2
    assert "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE" in capsys.readouterr().err
    machine.check_openblas_env(allow=True, environ=env)
    assert "WARNING: OPENBLAS_CORETYPE=Haswell" in capsys.readouterr().err
    machine.check_openblas_env(allow=False, environ={})


def test_missing_backend_falls_back_to_interpreter(capsys):
    assert harness.resolve_backend("interpreter") == "interpreter"
    assert harness.resolve_backend("no_such_backend") == "interpreter"
    assert "falling back to backend 'interpreter'" in capsys.readouterr().err


def test_round_robin_samples_start_after_a_pause_and_an_untimed_call():
    """Each timed sample follows a settle pause and an untimed sample of the same
    implementation, so another implementation's spinning threads are asleep and the sampled
    implementation's own are awake; a lone implementation needs neither."""
    log: list[tuple[str, float]] = []

    def impl(name):
        def call():
            log.append((name, time.perf_counter()))
            return np.ones(2)
        return harness.Impl(name, call)
    case = harness.Case("w", "n", np.ones(2), [impl("a"), impl("b")])
    harness.run_case(case, repeat=2, warmup=1, min_sample_s=0.0, settle_s=0.05)
    timed = log[2:]                       # after the one checking call of each
    names = [n for n, _ in timed]
    assert names == ["a", "a", "b", "b", "a", "a", "b", "b"]
    gaps = [t1 - t0 for (_, t0), (_, t1) in zip(timed, timed[1:])]
    assert all(g >= 0.045 for g in gaps[1::2])        # a pause before each untimed call
    log.clear()
    harness.run_case(harness.Case("w", "n", np.ones(2), [impl("a")]), repeat=3, warmup=1,
                     min_sample_s=0.0, settle_s=0.05)
    assert [n for n, _ in log] == ["a"] * 4               # check + 3 samples, no extra calls


def test_w4b_pool_script_times_every_variant(capsys):
    """``benchmarks/w4b_pool.py --smoke``: one round of every pool variant (and JAX where
    installed); the pool is left as configured."""
    import os
    w4b_pool = importlib.import_module("w4b_pool")
    from xlapy.backends.cpu import thread_pool
    assert w4b_pool.main(["--smoke", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("| samples"))
    assert all(v in header for v in ("default", "short-poll", "openblas", "openblas-threads"))
    assert ("jax" in header) is HAVE_JAX
    for mode in ("harness-like", "steady"):
        row = next(line for line in out.splitlines() if line.startswith(f"| {mode}"))
        assert row.count(" ms") == header.count("|") - 2
    assert "XLAPY_CPU_OPENBLAS_THREADS" not in os.environ and "XLAPY_F32_GEMM" not in os.environ
    assert "_update_spin" not in thread_pool.shared_pool().__dict__


def test_pool_latency_script_measures_the_second_unit(capsys):
    """``benchmarks/pool_latency.py --smoke``: one row per unit length and gap, each with
    the second unit's start and the call in microseconds."""
    pool_latency = importlib.import_module("pool_latency")
    from xlapy.backends.cpu.thread_pool import shared_pool
    assert pool_latency.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and " us |" in line]
    if shared_pool().size < 2:
        assert "no worker" in out and not rows
        return
    assert len(rows) == 5
    for row in rows:
        second, call = (float(cell.split()[0]) for cell in row.strip("|").split("|")[2:4])
        assert 0 <= second < call
