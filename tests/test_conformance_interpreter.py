"""Every real-XLA conformance program runs on the interpreter to XLA's outputs."""
from __future__ import annotations

import pytest

from conformance import case_params
from xlapy.client import compare_outputs, run_hlo
from xlapy.hlo import parse_module


@pytest.mark.parametrize("case,which", case_params())
def test_case_runs_to_xla_outputs(case, which):
    module = parse_module(case.text(which))
    args, expected = case.inputs_and_outputs([p.shape for p in module.entry.parameters])
    result = run_hlo(module, args, backend="interpreter")
    bad = compare_outputs(result, expected, case.rtol, case.atol)
    assert not bad, f"{case.name}/{which}:\n" + "\n".join(m.message for m in bad)
