"""Random HLO programs compute the same on the CPU backend as on the interpreter."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

from hlo_gen import hlo_programs
from xlapy.client.run import flatten_result
from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu
_BACKEND = None


def backend():
    global _BACKEND
    if _BACKEND is None:
        _BACKEND = cpu.CpuBackend(use_disk_cache=False)
    return _BACKEND


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hlo_programs())
def test_random_programs_match_the_interpreter(program):
    from xlapy.backends.interpreter import evaluate_module
    text, inputs = program
    module = parse_module(text)
    expected = flatten_result(evaluate_module(module, inputs))
    exe = backend().compile(module)
    actual = flatten_result(exe.execute(inputs))
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape and a.dtype == e.dtype
        # tanh/exp/sine/logistic are inline polynomials: a few ulps from NumPy's libm
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6, equal_nan=True)
