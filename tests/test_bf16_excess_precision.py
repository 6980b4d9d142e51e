"""The ``bf16-excess-precision`` pass: bf16 arithmetic chains computed in f32 and rounded
once, as XLA:CPU does with ``--xla_allow_excess_precision`` (its default)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

import xlapy
import xlapy.numpy as xnp
from xlapy.config import debug_options
from xlapy.hlo import parse_module
from xlapy.passes.bf16_excess_precision import Bf16ExcessPrecision

BF16 = np.dtype(ml_dtypes.bfloat16)

CHAIN = """
HloModule chain

add_bf16 {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT s = bf16[] add(a, b)
}

ENTRY main {
  x = bf16[8,16] parameter(0)
  y = bf16[8,16] parameter(1)
  m = bf16[8,16] multiply(x, y)
  t = bf16[8,16] tanh(m)
  p = pred[8,16] compare(t, y), direction=GT
  s = bf16[8,16] select(p, t, x)
  zero = bf16[] constant(0)
  r = bf16[8] reduce(s, zero), dimensions={1}, to_apply=add_bf16
  ROOT out = (bf16[8,16], bf16[8]) tuple(s, r)
}
"""


def test_chain_runs_in_f32_and_rounds_once():
    module = parse_module(CHAIN)
    assert Bf16ExcessPrecision().run(module)
    entry = {i.name: i for i in module.entry.instructions}
    ops = [i for i in module.entry.instructions if i.opcode in ("multiply", "tanh", "select")]
    assert len(ops) == 3 and all(i.shape.element_type.name == "f32" for i in ops)
    tanh = next(i for i in ops if i.opcode == "tanh")
    assert tanh.operands[0].opcode == "multiply"          # no rounding in between
    select = next(i for i in ops if i.opcode == "select")
    assert select.operands[1] is tanh
    # the compare reads the rounded tanh; the reducer computation is left as it was
    compare = next(i for i in module.entry.instructions if i.opcode == "compare")
    assert compare.operands[0].opcode == "convert"
    reducer = module.computation("add_bf16")
    assert reducer.root.opcode == "add" and reducer.root.shape.element_type.name == "bf16"
    assert "m" not in entry or entry["m"].shape.element_type.name == "f32"
    assert not Bf16ExcessPrecision().run(module)          # a fixed point


def _gelu(x):
    return 0.5 * x * (1.0 + xnp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def test_cpu_results_with_and_without_excess_precision():
    x = np.random.default_rng(0).standard_normal((64, 40)).astype(BF16)
    xf = x.astype(np.float64)
    c1, c2 = (float(np.float32(c).astype(BF16)) for c in (0.7978845608028654, 0.044715))
    ref = 0.5 * xf * (1 + np.tanh(c1 * (xf + c2 * xf ** 3)))    # bf16 (weak-typed) constants
    interp = np.asarray(xlapy.jit(_gelu, backend="interpreter")(x), np.float64)
    fast = np.asarray(xlapy.jit(_gelu)(x), np.float64)
    # rounded once: within half a bf16 step of the exact value (plus f32 noise)
    step = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(ref), 1e-30))) - 7)
    assert (np.abs(fast - ref) <= 0.5 * step * 1.001 + 1e-6).all()
    assert np.abs(interp - ref).max() > np.abs(fast - ref).max()  # per-op rounding is worse
    with debug_options(xla_allow_excess_precision=False):
        strict = np.asarray(xlapy.jit(lambda v: _gelu(v) + 0.0)(x), np.float64)
    np.testing.assert_array_equal(strict, interp)
