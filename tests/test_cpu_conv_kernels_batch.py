"""An executable's generated convolution kernels are compiled together, in one JIT engine
compile shared with its helper processes, before its thunks are made
(``conv_kernels.compile_kernels``), and kept in the per-process and disk caches."""
from __future__ import annotations

import os

import numpy as np
import pytest

import xlapy
from xlapy import lax
from xlapy.backends.cpu import CpuBackend, conv, conv_kernels, jit_engine
from xlapy.errors import ExecutionError

pytestmark = pytest.mark.skipif(not conv_kernels.lanes(), reason="no vector FMA: no kernels")


def _model(w1, w2, x):
    dn = ("NHWC", "HWIO", "NHWC")
    y = lax.conv_general_dilated(x, w1, (1, 1), ((1, 1), (1, 1)), dimension_numbers=dn)
    return lax.conv_general_dilated(y * y, w2, (1, 1), ((0, 0), (0, 0)),
                                    dimension_numbers=dn)


def _args(width: int = 11):
    """Operands; each test its own ``width``, so no executable or kernel is shared."""
    rng = np.random.default_rng(3)
    return (rng.standard_normal((3, 3, 5, 24)).astype(np.float32),
            rng.standard_normal((3, 3, 24, 16)).astype(np.float32),
            rng.standard_normal((2, 9, width, 5)).astype(np.float32))


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """An empty per-process kernel table, a new disk cache and a log of engine compiles
    (modules, counted) that the per-kernel path would bypass."""
    monkeypatch.setenv("XLAPY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("XLAPY_DISABLE_CACHE", raising=False)
    monkeypatch.setattr(conv_kernels, "_KERNELS", {})
    calls: list[tuple[int, bool]] = []
    real = jit_engine.JitEngine.compile

    def logged(self, modules, symbols, keep_text=False, levels=None, count=True):
        calls.append((len(modules), count))
        return real(self, modules, symbols, keep_text, levels, count)
    monkeypatch.setattr(jit_engine.JitEngine, "compile", logged)
    return calls, tmp_path


def _convolutions(module):
    return [i for c in module.computations for i in c.instructions
            if i.opcode == "convolution"]


def _module(width: int):
    """The HLO module of :func:`_model` (traced; compiled by the caller's fresh backend)."""
    return xlapy.jit(_model).lower(*_args(width)).hlo_module


def _check(exe, width: int) -> None:
    want = np.asarray(xlapy.jit(_model, backend="interpreter")(*_args(width)))
    got = np.asarray(exe.execute(list(_args(width))))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_kernels_compile_together_and_come_from_the_disk_cache(fresh, monkeypatch):
    calls, cache_dir = fresh
    module = _module(11)
    monkeypatch.setattr(conv_kernels, "_KERNELS", {})
    monkeypatch.setenv("XLAPY_CACHE_DIR", str(cache_dir / "fresh"))
    calls.clear()

    def one_by_one(*args):
        raise AssertionError("a kernel was compiled on its own")
    monkeypatch.setattr(conv_kernels, "compile_one", one_by_one)
    exe = CpuBackend(use_disk_cache=False).compile(module)
    # one compile: the module's own kernels and both convolution kernels
    assert len(calls) == 1 and calls[0][0] >= 3 and calls[0][1]
    thunks = [conv.make_convolution_thunk(i) for i in _convolutions(exe.module)]
    assert [t.strategy for t in thunks] == ["direct", "direct"]
    assert len(conv_kernels._KERNELS) == 2
    assert len(os.listdir(cache_dir / "fresh" / conv_kernels.CACHE_SUBDIR)) >= 2
    _check(exe, 11)
    # as a new process: the kernels load from the disk cache, nothing is compiled
    monkeypatch.setattr(conv_kernels, "_KERNELS", {})
    calls.clear()
    conv_kernels.compile_kernels(conv.direct_kernels(_convolutions(exe.module)))
    assert calls == [] and len(conv_kernels._KERNELS) == 2


def test_a_failed_joint_compile_leaves_each_kernel_to_its_thunk(fresh, monkeypatch, caplog):
    module = _module(12)
    monkeypatch.setattr(conv_kernels, "_KERNELS", {})
    monkeypatch.setenv("XLAPY_CACHE_DIR", str(fresh[1] / "fresh"))
    real = jit_engine.JitEngine.compile

    def reject_convs(self, modules, symbols, keep_text=False, levels=None, count=True):
        if any(s.startswith("xlapy_conv_") for s in symbols):
            raise ExecutionError("generated LLVM IR is invalid: test")
        return real(self, modules, symbols, keep_text, levels, count)
    monkeypatch.setattr(jit_engine.JitEngine, "compile", reject_convs)
    with caplog.at_level("INFO", logger="xlapy.cpu"):
        exe = CpuBackend(use_disk_cache=False).compile(module)
    assert "compiling with 2 convolution kernels failed" in caplog.text
    assert "compiling 2 convolution kernels together failed" in caplog.text
    assert len(conv_kernels._KERNELS) == 2        # built one by one by the thunks
    _check(exe, 12)


def test_kernels_already_loaded_are_not_compiled_again(fresh):
    calls, _ = fresh
    spec = conv_kernels.DirectSpec(4, 7, 3, 2, 5, 16, 3, 3, (1, 1), (1, 1), (0, 0),
                                   conv_kernels.lanes())
    wanted = [(spec, conv_kernels.direct_kernel)] * 2
    counted = jit_engine.engine().compile_count
    conv_kernels.compile_kernels(wanted)
    assert calls == [(1, False)] and jit_engine.engine().compile_count == counted
    fn = conv_kernels.compiled(spec, conv_kernels.direct_kernel)
    conv_kernels.compile_kernels(wanted)
    assert calls == [(1, False)]
    assert conv_kernels.compiled(spec, conv_kernels.direct_kernel) is fn


def test_unoptimized_modules_are_shared_out_after_optimized_ones():
    """In a joint compile the O0 convolution modules (cheap per byte of IR) come after
    the optimized kernels of the same size or a few times smaller."""
    small_o3, big_o0 = ("x" * 1000, 3, False), ("x" * 4000, 0, False)
    assert jit_engine._cost(small_o3) > jit_engine._cost(big_o0)
    assert jit_engine._cost(("x" * 9000, 0, False)) > jit_engine._cost(small_o3)
