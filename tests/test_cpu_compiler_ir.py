"""``CpuBackend.compiler_ir``: the LLVM IR before/after optimization and the assembly of a
module, as ``--xla_dump_to`` writes them (``get_compiler_ir(stage="llvm" | "asm")``)."""
from __future__ import annotations

import pytest

from xlapy.config import debug_options
from xlapy.errors import InvalidArgumentError, VerificationError
from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu

SOFTPLUS = """
HloModule softplus
ENTRY main {
  x = f32[256] parameter(0)
  e = f32[256] exponential(x)
  one = f32[] constant(1)
  b = f32[256] broadcast(one), dimensions={}
  s = f32[256] add(e, b)
  ROOT l = f32[256] log(s)
}
"""


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    backend = cpu.CpuBackend(cache_dir=str(cache))
    module = parse_module(SOFTPLUS)
    out = {stage: backend.compiler_ir(module, stage)
           for stage in ("llvm", "llvm_no_opt", "llvm-no-opt", "asm", "optimized_hlo")}
    out["stored"] = list(cache.iterdir())
    return out


def test_stages(texts):
    before, after, asm = texts["llvm_no_opt"], texts["llvm"], texts["asm"]
    assert texts["llvm-no-opt"] == before
    assert 'define void @"xk_' in before or "define void @xk_" in before
    assert "fmul" in before and "fadd" in before
    assert "<8 x float>" in after or "<16 x float>" in after or "<4 x float>" in after
    assert after != before
    kernel = after.split("define void @")[1].split("(")[0].strip('"')
    assert f"{kernel}:" in asm and ".globl" in asm
    assert "fusion" in texts["optimized_hlo"]


def test_nothing_is_stored_or_dumped(texts, tmp_path):
    assert texts["stored"] == []
    with debug_options(xla_dump_to=str(tmp_path)):
        cpu.CpuBackend(use_disk_cache=False).compiler_ir(parse_module(SOFTPLUS), "asm")
    assert list(tmp_path.iterdir()) == []


def test_unknown_stage_and_malformed_module():
    backend = cpu.CpuBackend(use_disk_cache=False)
    with pytest.raises(InvalidArgumentError, match="unknown compiler IR stage 'ptx'"):
        backend.compiler_ir(parse_module(SOFTPLUS), "ptx")
    bad = SOFTPLUS.replace("ROOT l = f32[256] log(s)", "ROOT l = f32[512] log(s)")
    with pytest.raises(VerificationError, match="main/l"):
        backend.compiler_ir(parse_module(bad), "llvm")


def test_module_without_kernels_has_empty_code():
    # a library call, no kernel (a product above the generated kernels' size limit)
    text = ("HloModule p\nENTRY e {\n  a = f32[256,256] parameter(0)\n"
            "  ROOT d = f32[256,256] dot(a, a), lhs_contracting_dims={1}, "
            "rhs_contracting_dims={0}\n}\n")
    assert cpu.CpuBackend(use_disk_cache=False).compiler_ir(parse_module(text), "asm") == ""
