"""``reducer-operand-types``: reductions whose inputs or init values have another
floating-point type than their reducer's parameters (valid HLO: XLA compares them
ignoring fp precision) get explicit converts, and the CPU backend runs them as the
interpreter does (its reduction emitters combine values of one type)."""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.client import get_backend
from xlapy.hlo import parse_module
from xlapy.hlo.verifier import verify_module
from xlapy.passes.reducer_operand_types import ReducerOperandTypes

REDUCER = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""

# an f16 init value for an f32 sum, at the entry and inside a fusion; bf16 inputs of an
# f32 reduce-window
CASES = {
    "f16 init": """
ENTRY main {
  x = f32[8,16] parameter(0)
  z = f16[] constant(0.5)
  ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=add
}
""",
    "fused f16 init": """
fused {
  p = f32[8,16] parameter(0)
  z = f16[] constant(0)
  ROOT r = f32[8] reduce(p, z), dimensions={1}, to_apply=add
}

ENTRY main {
  x = f32[8,16] parameter(0)
  ROOT f = f32[8] fusion(x), kind=kLoop, calls=fused
}
""",
    "bf16 inputs": """
ENTRY main {
  x = bf16[8,16] parameter(0)
  z = bf16[] constant(0)
  ROOT r = f32[8,8] reduce-window(x, z), window={size=1x2 stride=1x2}, to_apply=add
}
""",
}


def _args(module):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(p.shape.dims).astype(np.float32).astype(p.shape.dtype)
            for p in module.entry.parameters]


@pytest.mark.parametrize("name", list(CASES))
def test_operands_take_their_reducer_types(name):
    text = "HloModule m\n" + REDUCER + CASES[name]
    module = parse_module(text)
    verify_module(module)                              # valid as it is
    assert ReducerOperandTypes().run(module)
    verify_module(module)
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode in ("reduce", "reduce-window"):
                assert {o.shape.element_type.name for o in instr.operands} == {"f32"}
    assert not ReducerOperandTypes().run(module)       # a fixed point


@pytest.mark.parametrize("name", list(CASES))
def test_cpu_runs_them_as_the_interpreter(name):
    text = "HloModule m\n" + REDUCER + CASES[name]
    args = _args(parse_module(text))
    want = np.asarray(get_backend("interpreter").compile(parse_module(text)).execute(args))
    got = np.asarray(get_backend("cpu").compile(parse_module(text)).execute(args))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_other_reductions_are_left_alone():
    text = "HloModule m\n" + REDUCER + """
ENTRY main {
  x = f32[8,16] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=add
}
"""
    assert not ReducerOperandTypes().run(parse_module(text))
