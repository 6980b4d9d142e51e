"""Every HLO file dumped by the real XLA parses, prints, and re-parses to the same module."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conformance import case_params
from xlapy.hlo.ir import literal_equal
from xlapy.hlo.parser import parse_module

_INSTR_LINE = re.compile(r"^\s*(?:ROOT\s+)?%?[A-Za-z_][\w.\-]*\s*=\s", re.M)


@pytest.mark.parametrize("case,file", case_params())
def test_round_trip(case, file):
    text = case.text(file)
    module = parse_module(text)

    printed = module.to_text()
    reparsed = parse_module(printed)
    assert reparsed.to_text() == printed

    short = module.to_text(long=False)
    assert "%" not in re.sub(r'"(?:[^"\\]|\\.)*"', "", short)
    assert parse_module(short).to_text() == printed

    # every instruction line of the file became exactly one instruction
    n_instr = sum(len(c.instructions) for c in module.computations)
    assert n_instr == len(_INSTR_LINE.findall(text))
    assert sum(len(c.instructions) for c in reparsed.computations) == n_instr

    params = [p.shape.to_text(print_layout=False) for p in module.entry.parameters]
    assert params == case.info["entry_params_hlo"]
    assert module.entry.is_entry and module.entry is module.computations_post_order()[-1]


@pytest.mark.parametrize("case,file", case_params(("module.optimized.hlo",)))
def test_constants_survive_round_trip(case, file):
    """Constant values are bit-identical after print + parse (NaN and -0 included)."""
    module = parse_module(case.text(file))
    again = parse_module(module.to_text())
    for a, b in zip(module.instructions(), again.instructions()):
        assert a.name == b.name and a.opcode == b.opcode
        if a.opcode == "constant" and a.literal is not None:
            assert literal_equal(a.literal, b.literal), a.name
            assert np.asarray(a.literal).shape == a.shape.dims
            assert np.asarray(a.literal).dtype == a.shape.dtype
