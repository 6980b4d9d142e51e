"""Every real-XLA conformance program runs on the CPU backend to XLA's outputs.

Both files of each case are compiled: the front end's ``module.hlo`` and XLA's own
``module.optimized.hlo`` (which the CPU pipeline runs over again).
"""
from __future__ import annotations

import pytest

from conformance import case_params
from xlapy.client import compare_outputs
from xlapy.client.run import flatten_result, prepare_argument
from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu


@pytest.fixture(scope="module")
def backend():
    return cpu.CpuBackend(use_disk_cache=False)


@pytest.mark.parametrize("case,which", case_params())
def test_case_runs_to_xla_outputs_on_cpu(backend, case, which):
    module = parse_module(case.text(which))
    params = module.entry.parameters
    args, expected = case.inputs_and_outputs([p.shape for p in params])
    args = [prepare_argument(a, p.shape, f"argument {i}") for i, (a, p) in
            enumerate(zip(args, params))]
    exe = backend.compile(module)
    result = flatten_result(exe.execute(args))
    bad = compare_outputs(result, expected, case.rtol, case.atol)
    assert not bad, f"{case.name}/{which}:\n" + "\n".join(m.message for m in bad)
