"""``--xla_hlo_profile`` on the CPU backend (xlapy/backends/cpu/profile.py): per-instruction
times, call counts (loop bodies included), flops of dots and convolutions, the INFO log, the
dump file, and that an executable compiled without the flag runs its thunks unwrapped."""
from __future__ import annotations

import logging
import os

import numpy as np
import pytest

from xlapy.backends import cpu
from xlapy.backends.cpu.profile import PROFILE_SUFFIX, instruction_flops
from xlapy.backends.cpu.thunks import _KernelRun
from xlapy.backends.interpreter import Evaluator
from xlapy.config import debug_options, reset_dump_numbering
from xlapy.errors import InvalidArgumentError
from xlapy.hlo import parse_module

# a dot, a convolution, a fusion, and a while loop running its body 4 times
MODULE = """
HloModule profiled

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

cond {
  p = (s32[], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  four = s32[] constant(4)
  ROOT lt = pred[] compare(i, four), direction=LT
}

body {
  p = (s32[], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  m = f32[8,8] get-tuple-element(p), index=1
  sq = f32[8,8] dot(m, m), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  half = f32[] constant(0.125)
  b = f32[8,8] broadcast(half), dimensions={}
  scaled = f32[8,8] multiply(sq, b)
  ROOT t = (s32[], f32[8,8]) tuple(next, scaled)
}

ENTRY main {
  x = f32[2,9,9,3] parameter(0)
  k = f32[3,3,3,5] parameter(1)
  m = f32[8,8] parameter(2)
  c = f32[2,7,7,5] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f
  e = f32[2,7,7,5] exponential(c)
  zero = f32[] constant(0)
  r = f32[2,5] reduce(e, zero), dimensions={1,2}, to_apply=add
  d = f32[8,8] dot(m, m), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  start = s32[] constant(0)
  init = (s32[], f32[8,8]) tuple(start, d)
  w = (s32[], f32[8,8]) while(init), condition=cond, body=body
  out = f32[8,8] get-tuple-element(w), index=1
  ROOT result = (f32[2,5], f32[8,8]) tuple(r, out)
}
"""


def _args(rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.standard_normal((2, 9, 9, 3)).astype(np.float32) * 0.3,
            rng.standard_normal((3, 3, 3, 5)).astype(np.float32) * 0.3,
            rng.standard_normal((8, 8)).astype(np.float32)]


def _compile(profile: bool, **flags):
    with debug_options(xla_hlo_profile=profile, **flags):
        return cpu.CpuBackend(use_disk_cache=False).compile(parse_module(MODULE))


@pytest.fixture(scope="module")
def profiled():
    exe = _compile(True)
    args = _args(np.random.default_rng(0))
    results = [exe.execute(args) for _ in range(3)]
    return exe, args, results


def test_profiled_results_match_the_interpreter(profiled):
    exe, args, results = profiled
    module = parse_module(MODULE)
    want = Evaluator(module).run(args)
    for got in results:
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)


def test_rows_count_calls_per_instruction(profiled):
    exe, _, _ = profiled
    rows = {r.name: r for r in exe.profile()}
    assert rows["c"].calls == 3 and rows["c"].opcode == "convolution"
    assert rows["c"].thunk == "library"
    assert rows["d"].calls == 3 and rows["w"].calls == 3 and rows["w"].thunk == "while"
    # the body runs 4 times per call; the condition 5 times
    body_dot = [r for r in exe.profile() if r.computation == "body" and r.opcode == "dot"]
    assert len(body_dot) == 1 and body_dot[0].calls == 12
    cond_rows = [r for r in exe.profile() if r.computation == "cond"]
    assert cond_rows and all(r.calls == 15 for r in cond_rows)
    fusions = [r for r in exe.profile() if r.opcode.startswith("fusion(")]
    assert fusions, "the exponential/reduce should run as a fusion"


def test_rows_times_and_shares(profiled):
    exe, _, _ = profiled
    rows = exe.profile()
    assert [r.total_s for r in rows] == sorted((r.total_s for r in rows), reverse=True)
    for r in rows:
        assert r.total_s > 0 and r.mean_s == pytest.approx(r.total_s / r.calls)
        assert 0 < r.percent <= 100
    entry = [r for r in rows if r.computation == "main"]
    # entry instructions run one after another inside the timed run
    assert sum(r.percent for r in entry) <= 100.0 + 1e-6
    w = next(r for r in rows if r.name == "w")
    inside = sum(r.total_s for r in rows if r.computation in ("body", "cond"))
    assert inside <= w.total_s


def test_flops_for_dot_and_convolution(profiled):
    exe, _, _ = profiled
    rows = {r.name: r for r in exe.profile() if r.computation == "main"}
    assert rows["c"].flops == 2.0 * (2 * 7 * 7 * 5) * (3 * 3 * 3)
    assert rows["d"].flops == 2.0 * 8 * 8 * 8
    assert rows["c"].gflops == pytest.approx(rows["c"].flops * 3 / rows["c"].total_s * 1e-9)
    assert all(r.flops is None and r.gflops is None for r in rows.values()
               if r.opcode not in ("dot", "convolution"))


def test_flops_of_grouped_convolution():
    text = """
HloModule g
ENTRY e {
  x = f32[1,6,8] parameter(0)
  k = f32[3,2,8] parameter(1)
  ROOT c = f32[1,4,8] convolution(x, k), window={size=3}, dim_labels=b0f_0io->b0f,
    feature_group_count=4
}"""
    conv = parse_module(text).entry.root
    # each output element sums 3 taps x 2 input features of its group
    assert instruction_flops(conv) == 2.0 * (4 * 8) * 3 * 2


def test_text_table(profiled):
    exe, _, _ = profiled
    text = exe.profile_text()
    assert text.startswith("Execution profile for profiled: 3 calls")
    for name in ("convolution", "while", "body/"):
        assert name in text
    short = exe.profile_text(2)
    assert len(short.strip().splitlines()) == 2 + 2 + 1      # head, columns, 2 rows, rest


def test_reset_profile():
    exe = _compile(True)
    args = _args(np.random.default_rng(1))
    exe.execute(args)
    exe.reset_profile()
    assert exe.profile() == []
    exe.execute(args)
    assert {r.calls for r in exe.profile() if r.computation == "main"} == {1}


def test_profile_needs_the_flag():
    exe = _compile(False)
    assert exe.profiler is None
    with pytest.raises(InvalidArgumentError, match="xla_hlo_profile"):
        exe.profile()


def test_unprofiled_plans_call_thunks_directly():
    exe = _compile(False)
    assert exe._run == exe.plan.run
    plans = [exe.plan] + [p for t in exe.plan.walk() for p in getattr(t, "subplans", ())]
    for plan in plans:
        # each run is a thunk's own run, or one native call for consecutive kernels
        direct = [t.run for t in plan.thunks]
        assert all(run in direct or isinstance(run.__self__, _KernelRun) for run in plan._runs)
        assert len(plan._runs) <= len(plan.thunks)


def test_flag_from_the_environment(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_hlo_profile")
    exe = cpu.CpuBackend(use_disk_cache=False).compile(parse_module(MODULE))
    exe.execute(_args(np.random.default_rng(2)))
    assert exe.profiler is not None and exe.profile()


def test_logged_at_info(caplog):
    exe = _compile(True)
    with caplog.at_level(logging.INFO, logger="xlapy.cpu.profile"):
        exe.execute(_args(np.random.default_rng(3)))
    messages = [r.getMessage() for r in caplog.records if r.name == "xlapy.cpu.profile"]
    assert len(messages) == 1 and "Execution profile for profiled: 1 call" in messages[0]


def test_dumped_with_xla_dump_to(tmp_path):
    reset_dump_numbering()
    exe = _compile(True, xla_dump_to=str(tmp_path))
    args = _args(np.random.default_rng(4))
    exe.execute(args)
    exe.execute(args)
    files = [f for f in os.listdir(tmp_path) if f.endswith(PROFILE_SUFFIX)]
    assert len(files) == 1 and files[0].startswith("module_")
    text = (tmp_path / files[0]).read_text()
    assert "Execution profile for profiled: 2 calls" in text and "convolution" in text
