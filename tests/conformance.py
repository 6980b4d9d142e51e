"""Shared access to the real-XLA conformance cases in ``../shared/conformance/cases``.

Set ``XLAPY_CONFORMANCE_DIR`` to use another folder of cases with the same layout.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xlapy.client import compare_outputs
from xlapy.client.run import flatten_result, prepare_argument
from xlapy.hlo import parse_module

ROOT = Path(__file__).resolve().parents[1]
CASES_DIR = Path(os.environ.get("XLAPY_CONFORMANCE_DIR",
                                ROOT.parent / "shared" / "conformance" / "cases"))


@dataclass
class Case:
    path: Path
    info: dict

    @property
    def name(self) -> str:
        return self.info.get("name", self.path.name)

    @property
    def rtol(self) -> float:
        return float(self.info.get("rtol", 1e-5))

    @property
    def atol(self) -> float:
        return float(self.info.get("atol", 1e-5))

    def text(self, which: str = "module.hlo") -> str:
        return (self.path / which).read_text()

    def inputs_and_outputs(self, param_shapes) -> tuple[list, list]:
        """Inputs cast to the entry parameter dtypes (bf16 is stored as f32) and expected outputs."""
        data = np.load(self.path / "data.npz")
        args = [np.asarray(data[f"arg{i}"]).astype(s.dtype) for i, s in enumerate(param_shapes)]
        outs = sorted((k for k in data.files if k.startswith("out")), key=lambda k: int(k[3:]))
        return args, [data[k] for k in outs]


def all_cases() -> list[Case]:
    if not CASES_DIR.is_dir():
        return []
    return [Case(p.parent, json.loads(p.read_text()))
            for p in sorted(CASES_DIR.glob("*/*/case.json"))]


def case_params(files=("module.hlo", "module.optimized.hlo")):
    """pytest parameters (case, file) with readable ids."""
    import pytest
    cases = all_cases()
    if not cases:
        return [pytest.param(None, None, marks=pytest.mark.skip(
            reason=f"no conformance cases at {CASES_DIR}"))]
    return [pytest.param(c, f, id=f"{c.name}-{f.split('.')[1] if f.count('.') > 1 else 'hlo'}")
            for c in cases for f in files]


def run_case(backend, case: Case, which: str = "module.hlo") -> tuple:
    """Compile ``case``'s file ``which`` on ``backend`` and run it on the case's inputs:
    (the executable, the mismatches of its outputs against XLA's (``compare_outputs``))."""
    module = parse_module(case.text(which))
    params = module.entry.parameters
    args, expected = case.inputs_and_outputs([p.shape for p in params])
    args = [prepare_argument(a, p.shape, f"argument {i}")
            for i, (a, p) in enumerate(zip(args, params))]
    exe = backend.compile(module)
    return exe, compare_outputs(flatten_result(exe.execute(args)), expected, case.rtol,
                                case.atol)
