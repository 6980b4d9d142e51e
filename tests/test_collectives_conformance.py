"""Real-XLA conformance for collectives: modules that JAX 0.10.2 compiled for 4 CPU devices
(``pmap`` and ``shard_map`` over a 2x2 mesh; ``tests/make_collective_cases.py`` re-makes them)
run with one argument list per device on the interpreter and on 4 in-process CPU devices, and
give XLA's outputs on every device."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy.config import debug_options

CASES = Path(__file__).parent / "data" / "collectives"
NAMES = sorted(p.stem for p in CASES.glob("*.hlo"))


def _load(name: str) -> tuple[str, list[list[np.ndarray]], list[np.ndarray]]:
    text = (CASES / f"{name}.hlo").read_text()
    data = np.load(CASES / f"{name}.npz")
    args = [[data[f"d{d}_arg{k}"] for k in range(sum(1 for key in data.files
                                                      if key.startswith(f"d{d}_arg")))]
            for d in range(4)]
    return text, args, [data[f"d{d}_out0"] for d in range(4)]


def test_the_cases_are_there():
    assert len(NAMES) >= 15


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("name", NAMES)
def test_collective_case_matches_xla(name, backend):
    text, args, expected = _load(name)
    with debug_options(xla_force_host_platform_device_count=4):
        outs = xlapy.run_hlo(text, args, backend=backend, timeout=60)
    assert len(outs) == 4
    for d in range(4):
        np.testing.assert_allclose(outs[d][0], expected[d], rtol=1e-6, atol=0,
                                   err_msg=f"{name} device {d} on {backend}")
        assert outs[d][0].dtype == expected[d].dtype
