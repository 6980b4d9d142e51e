"""xlapy.optimize: the full CPU pipeline preserves semantics and writes XLA's dump files."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import xlapy
from conformance import case_params
from hlo_gen import hlo_programs
from xlapy.client import compare_outputs, optimize_with_report
from xlapy.config import debug_options, reset_dump_numbering
from xlapy.hlo import parse_module
from xlapy.hlo.verifier import verify_module


@pytest.mark.parametrize("case,which", case_params())
def test_conformance_after_full_pipeline(case, which):
    module = parse_module(case.text(which))
    optimized = xlapy.optimize(module, verify=True)
    verify_module(optimized)
    args, expected = case.inputs_and_outputs([p.shape for p in module.entry.parameters])
    bad = compare_outputs(xlapy.run_hlo(optimized, args), expected, case.rtol, case.atol)
    assert not bad, "\n".join(m.message for m in bad)
    assert parse_module(optimized.to_text()) == optimized


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hlo_programs())
def test_random_programs_compute_the_same_after_the_pipeline(program):
    text, inputs = program
    module = parse_module(text)
    before = xlapy.run_hlo(module, inputs)
    optimized = xlapy.optimize(module, verify=True)
    after = xlapy.run_hlo(optimized, inputs)
    for b, a in zip(before, after):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, equal_nan=True)


SUM_XYZ = """
HloModule jit_model_fn
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY main {
  x = f32[1024] parameter(0)
  y = f32[1024] parameter(1)
  z = f32[1024] parameter(2)
  yz = f32[1024] multiply(y, z)
  s = f32[1024] add(x, yz)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(s, zero), dimensions={0}, to_apply=add_f32
}
"""


def test_sum_xyz_is_one_fusion_with_scalar_temps():
    result = optimize_with_report(SUM_XYZ)
    entry = result.module.entry
    fusions = [i for i in entry.instructions if i.opcode == "fusion"]
    assert len(fusions) == 1 and entry.root is fusions[0]
    assert result.buffers.total_temp_bytes <= 16
    assert result.pipeline.records, "pass records are reported"


def test_input_module_is_not_modified():
    module = parse_module(SUM_XYZ)
    text = module.to_text()
    xlapy.optimize(module)
    assert module.to_text() == text


def test_dump_files_use_xla_names(tmp_path):
    reset_dump_numbering()
    with debug_options(xla_dump_to=str(tmp_path), xla_dump_hlo_pass_re=".*"):
        xlapy.optimize(SUM_XYZ)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "module_0000.jit_model_fn.before_optimizations.txt" in names or any(
        n.endswith(".jit_model_fn.before_optimizations.txt") for n in names)
    prefix = [n for n in names if n.endswith("before_optimizations.txt")][0].split(".")[0]
    assert f"{prefix}.jit_model_fn.after_optimizations.txt" in names
    assert f"{prefix}.jit_model_fn.after_optimizations-buffer-assignment.txt" in names
    per_pass = [n for n in names if ".after_" in n and ".before_" in n]
    assert any("after_fusion" in n for n in per_pass), names
    after = (tmp_path / f"{prefix}.jit_model_fn.after_optimizations.txt").read_text()
    assert "fusion(" in after and parse_module(after).entry.root.opcode == "fusion"
    report = (tmp_path / f"{prefix}.jit_model_fn.after_optimizations-buffer-assignment.txt").read_text()
    assert "temp" in report.lower()


def test_unknown_backend_pipeline_is_an_error():
    with pytest.raises(xlapy.errors.InvalidArgumentError, match="no optimization pipeline"):
        xlapy.optimize(SUM_XYZ, backend="tpu")
