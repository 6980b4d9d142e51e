"""``change-op-data-type`` (XLA's ChangeOpDataType) and the CPU backend's use of it: the
bf16 dots its kernels run no faster than the f32 path become f32 dots on converted
operands (``bf16_dot.upcast_wanted``)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from xlapy.backends.compile import optimize_module, pass_context
from xlapy.backends.cpu import bf16_dot, compiler, packed_gemm
from xlapy.backends.interpreter import Evaluator
from xlapy.backends.target import get_target
from xlapy.client import get_backend
from xlapy.hlo import parse_module
from xlapy.hlo.types import BF16, F32
from xlapy.passes.change_op_data_type import ChangeOpDataType

NP_BF16 = np.dtype(ml_dtypes.bfloat16)

MIXED = """
HloModule mixed

ENTRY main {
  a = bf16[8,16] parameter(0)
  b = bf16[16,4] parameter(1)
  c = f32[4,4] parameter(2)
  d = bf16[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  f = f32[8,4] dot(e, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  g = bf16[8,4] add(d, d)
  ROOT t = (bf16[8,4], f32[8,4], f32[8,4], bf16[8,4]) tuple(d, e, f, g)
}
"""


def _run(module, args):
    return get_backend("interpreter").compile(module).execute(args)


def test_matched_ops_run_in_the_wider_type():
    module = parse_module(MIXED)
    assert ChangeOpDataType({BF16: F32}, lambda i: i.opcode == "dot").run(module)
    entry = module.entry
    dots = [i for i in entry.instructions if i.opcode == "dot"]
    assert len(dots) == 3 and all(i.shape.element_type is F32 for i in dots)
    for dot in dots:
        assert all(o.shape.element_type is F32 for o in dot.operands)
    d, e, f, g = entry.root.operands
    # a bf16 result is the f32 dot rounded once; an f32 result needs no convert
    assert d.opcode == "convert" and d.shape.element_type is BF16
    assert d.operands[0].opcode == "dot"
    assert e.opcode == "dot" and all(o.opcode == "convert" for o in e.operands)
    assert f.opcode == "dot" and f.operands[1].opcode == "parameter"   # f32 operands: as was
    assert g.opcode == "add" and g.shape.element_type is BF16           # not matched
    assert not ChangeOpDataType({BF16: F32}, lambda i: i.opcode == "dot").run(module)


def test_same_values_before_and_after():
    rng = np.random.default_rng(0)
    # small integers: every product and sum exact in bf16 -> f32 either way
    args = [rng.integers(-3, 4, (8, 16)).astype(NP_BF16),
            rng.integers(-3, 4, (16, 4)).astype(NP_BF16),
            rng.integers(-3, 4, (4, 4)).astype(np.float32)]
    before = _run(parse_module(MIXED), args)
    module = parse_module(MIXED)
    ChangeOpDataType({BF16: F32}, lambda i: i.opcode == "dot").run(module)
    after = _run(module, args)
    for x, y in zip(before, after):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(np.asarray(x, np.float64), np.asarray(y, np.float64))


def test_the_matcher_and_the_type_map_decide():
    module = parse_module(MIXED)
    assert not ChangeOpDataType({BF16: F32}, lambda i: False).run(module)
    assert not ChangeOpDataType({F32: BF16}, lambda i: i.opcode == "add").run(module)
    text = """
HloModule m

ENTRY main {
  a = bf16[4,4] parameter(0)
  b = f32[4,4] parameter(1)
  ROOT d = f32[4,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    mixed = parse_module(text)                      # operands of two types: left alone
    assert not ChangeOpDataType({BF16: F32}, lambda i: True).run(mixed)


def _dot_module(m: int, k: int, n: int, out: str = "bf16") -> str:
    return f"""
HloModule wgrad

ENTRY main {{
  a = bf16[{k},{m}] parameter(0)
  b = bf16[{k},{n}] parameter(1)
  ROOT d = {out}[{m},{n}] dot(a, b), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
}}
"""


def _f32_dots(text: str) -> int:
    module = optimize_module(parse_module(text), get_target("cpu"), pass_context()).module
    return sum(1 for c in module.computations for i in c.instructions
               if i.opcode == "dot" and i.shape.element_type is F32
               and all(o.shape.element_type is F32 for o in i.operands))


@pytest.mark.parametrize("choice", ["fma", "off", "dpbf16"])
def test_cpu_upcasts_the_dots_its_bf16_kernel_does_not_win(choice, monkeypatch):
    if choice != "off" and not packed_gemm.host_has_avx512():
        pytest.skip("the CPU has no AVX-512")
    if choice == "dpbf16" and not bf16_dot.host_has_avx512_bf16():
        pytest.skip("the CPU has no AVX512-BF16")
    monkeypatch.setenv(bf16_dot.ENV_SWITCH, choice)
    long_k = _dot_module(64, packed_gemm.F32_MAX_K + 8, 96)
    short_k = _dot_module(64, packed_gemm.F32_MAX_K, 96)
    wide_n = _dot_module(64, 512, packed_gemm.F32_MAX_PACKED_B_BYTES // (4 * 512) + 16)
    expect_long = {"fma": 1, "off": 1, "dpbf16": 0}[choice]
    expect_short = {"fma": 0, "off": 1, "dpbf16": 0}[choice]
    assert _f32_dots(long_k) == expect_long
    assert _f32_dots(short_k) == expect_short
    assert _f32_dots(wide_n) == expect_long


@pytest.mark.parametrize("out", ["bf16", "f32"])
def test_upcast_long_products_match_the_interpreter(out, monkeypatch):
    if not packed_gemm.host_has_avx512():
        pytest.skip("the CPU has no AVX-512")
    monkeypatch.setenv(bf16_dot.ENV_SWITCH, "fma")
    m, k, n = 40, packed_gemm.F32_MAX_K + 200, 72
    text = _dot_module(m, k, n, out)
    assert _f32_dots(text) == 1
    rng = np.random.default_rng(3)
    a = rng.standard_normal((k, m)).astype(NP_BF16)
    b = rng.standard_normal((k, n)).astype(NP_BF16)
    instr = parse_module(text).entry.root
    ref = Evaluator().evaluate(instr, [a, b]).astype(np.float64)
    got = np.asarray(get_backend("cpu").compile(parse_module(text)).execute([a, b]),
                     np.float64)
    if out == "bf16":
        np.testing.assert_allclose(got, ref, rtol=2 ** -7, atol=1e-5 * np.sqrt(k))
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=2e-6 * np.sqrt(k))


def test_cache_key_follows_the_bf16_kernel_choice(monkeypatch):
    with_dot = parse_module(_dot_module(8, 16, 8))
    without = parse_module(MIXED.replace("bf16", "f32"))
    keys = {}
    for choice in ("fma", "off"):
        monkeypatch.setenv(bf16_dot.ENV_SWITCH, choice)
        keys[choice] = (compiler.kernel_choices(with_dot), compiler.kernel_choices(without))
    assert keys["fma"][1] == keys["off"][1] == ""
    if packed_gemm.host_has_avx512():
        assert keys["fma"][0] == "bf16_dot=bf16w" and keys["off"][0] == "bf16_dot=None"
        backend = compiler.CpuBackend(use_disk_cache=False)
        monkeypatch.setenv(bf16_dot.ENV_SWITCH, "fma")
        fma = backend.cache_key(with_dot)
        monkeypatch.setenv(bf16_dot.ENV_SWITCH, "off")
        assert backend.cache_key(with_dot) != fma
