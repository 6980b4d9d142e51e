"""The ``bf16-excess-precision`` pass: bf16 arithmetic chains computed in f32 and rounded
once, as XLA:CPU does with ``--xla_allow_excess_precision`` (its default)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

import xlapy
import xlapy.numpy as xnp
from xlapy.backends.compile import optimize_module, pass_context
from xlapy.backends.target import get_target
from xlapy.client import get_backend
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


BIAS_GELU = """
HloModule bias

ENTRY main {
  d = bf16[64,32] parameter(0)
  b = bf16[32] parameter(1)
  bb = bf16[64,32] broadcast(b), dimensions={1}
  x = bf16[64,32] add(d, bb)
  c = bf16[] constant(0.044715)
  cb = bf16[64,32] broadcast(c), dimensions={}
  x2 = bf16[64,32] multiply(x, x)
  x3 = bf16[64,32] multiply(x2, cb)
  u = bf16[64,32] add(x, x3)
  t = bf16[64,32] tanh(u)
  g = bf16[64,32] multiply(x, t)
  t2 = bf16[64,32] multiply(t, t)
  ROOT out = (bf16[64,32], bf16[64,32]) tuple(g, t2)
}
"""


def test_broadcast_operands_are_widened_before_the_broadcast():
    module = parse_module(BIAS_GELU)
    assert Bf16ExcessPrecision().run(module)
    ops = module.entry.instructions
    # a bias or constant is widened where it is small and broadcast in f32: no convert as
    # large as the ops reading it (fusion takes a broadcast as free, a convert of one not)
    big_converts = [i for i in ops if i.opcode == "convert" and i.shape.element_type.name == "f32"
                    and i.operands[0].opcode == "broadcast"]
    assert big_converts == []
    wide_bcasts = [i for i in ops if i.opcode == "broadcast"
                   and i.shape.element_type.name == "f32"]
    assert {i.operands[0].opcode for i in wide_bcasts} == {"convert"}
    assert {i.operands[0].operands[0].name for i in wide_bcasts} == {"b", "c"}
    # the f32 bias add reads the f32 broadcast directly
    assert any(i.opcode == "add" and i.shape.element_type.name == "f32"
               and any(o in wide_bcasts for o in i.operands) for i in ops)
    rng = np.random.default_rng(1)
    d = rng.standard_normal((64, 32)).astype(BF16)
    b = rng.standard_normal(32).astype(BF16)
    exact, fast = (np.asarray(get_backend(name).compile(parse_module(BIAS_GELU))
                              .execute([d, b])[0][0], np.float64)
                   for name in ("interpreter", "cpu"))
    step = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(exact), 1e-30))) - 7)
    assert (np.abs(fast - exact) <= 2.0 * step + 1e-6).all()    # per-op rounding vs once


def test_a_bias_add_gelu_fuses_as_in_f32():
    """With the bias broadcast in f32 the add stays cheap to duplicate into each reader,
    as in the f32 program, also where the tanh it feeds has two readers (the GELU and its
    gradient): no f32 temporary of the add's size."""
    module = optimize_module(parse_module(BIAS_GELU), get_target("cpu"), pass_context()).module
    entry = module.entry
    temps = [i for i in entry.instructions if i.shape.is_array and i.shape.rank == 2
             and i.shape.element_type.name == "f32"]
    # the tanh (expensive, two readers) is the only f32 temporary, the add fused into it
    assert len(temps) == 1 and temps[0].opcode == "fusion"
    fused = temps[0].attrs["calls"]
    assert fused.root.opcode == "tanh"
    assert {"add", "broadcast"} <= {i.opcode for i in fused.instructions}
