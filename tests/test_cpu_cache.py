"""The CPU backend's disk cache: a second compile reuses object code; bad files recompile."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from xlapy.config import debug_options, get_debug_options
from xlapy.hlo import parse_module

cpu = pytest.importorskip("xlapy.backends.cpu")
from xlapy.backends.cpu import cache as cache_mod          # noqa: E402
from xlapy.backends.cpu.jit_engine import engine           # noqa: E402

PROGRAM = """
HloModule cached
ENTRY main {
  x = f32[100,7] parameter(0)
  y = f32[7] parameter(1)
  b = f32[100,7] broadcast(y), dimensions={1}
  s = f32[100,7] multiply(x, b)
  ROOT t = f32[100,7] tanh(s)
}
"""


def inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((100, 7)).astype(np.float32),
            rng.standard_normal(7).astype(np.float32)]


def expected(x, y):
    return np.tanh(x * y)


def compile_and_run(cache_dir):
    backend = cpu.CpuBackend(cache_dir=str(cache_dir))
    before = engine().compile_count
    exe = backend.compile(parse_module(PROGRAM))
    out = exe.execute(inputs())
    np.testing.assert_allclose(out, expected(*inputs()), rtol=2e-6, atol=1e-7)
    return backend, exe, engine().compile_count - before


def test_second_compile_in_a_new_backend_compiles_nothing(tmp_path):
    first, exe1, llvm_runs = compile_and_run(tmp_path)
    assert llvm_runs == 1 and first.disk_cache.stats.stores == 1
    second, exe2, llvm_runs = compile_and_run(tmp_path)
    assert llvm_runs == 0, "the cached object code was loaded"
    assert second.disk_cache.stats.hits == 1
    assert exe2.thunk_kinds() == exe1.thunk_kinds()
    assert exe2.module.to_text() == exe1.module.to_text()   # optimized HLO from the cache


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupt_cache_file_is_recompiled(tmp_path, caplog, damage):
    compile_and_run(tmp_path)
    (path,) = list(tmp_path.glob("*.xcache"))
    data = path.read_bytes()
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        pos = len(data) - 10
        data = data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1:]
    elif damage == "garbage":
        data = b"not a cache file at all"
    else:
        data = b""
    path.write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="xlapy.cpu"):
        backend, _exe, llvm_runs = compile_and_run(tmp_path)
    assert llvm_runs == 1 and backend.disk_cache.stats.corrupt == 1
    assert any("corrupt" in r.message for r in caplog.records)
    rewritten = cache_mod.decode(path.read_bytes(), path.stem)      # a valid entry again
    assert rewritten.objects and "fusion(" in rewritten.optimized_hlo


def test_disabled_cache_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XLAPY_DISABLE_CACHE", "1")
    backend = cpu.CpuBackend(cache_dir=str(tmp_path))
    backend.compile(parse_module(PROGRAM))
    assert not list(tmp_path.iterdir()) and not backend.disk_cache.enabled


def test_cache_dir_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("XLAPY_CACHE_DIR", str(tmp_path / "here"))
    monkeypatch.delenv("XLAPY_DISABLE_CACHE", raising=False)
    cpu.CpuBackend().compile(parse_module(PROGRAM))
    assert list((tmp_path / "here").glob("*.xcache"))


def test_key_depends_on_program_and_flags():
    host = engine().host
    text = parse_module(PROGRAM).to_text()
    base = cache_mod.cache_key(text, host, get_debug_options())
    assert base == cache_mod.cache_key(text, host, get_debug_options())
    assert base != cache_mod.cache_key(text.replace("tanh", "exponential"), host,
                                       get_debug_options())
    with debug_options(xla_cpu_enable_fast_math=True):
        assert base != cache_mod.cache_key(text, host, get_debug_options())
    with debug_options(xla_dump_to="/tmp/somewhere"):            # dumping is not a codegen flag
        assert base == cache_mod.cache_key(text, host, get_debug_options())


def test_entry_stored_under_another_key_is_rejected(tmp_path):
    compile_and_run(tmp_path)
    (path,) = list(tmp_path.glob("*.xcache"))
    with pytest.raises(ValueError, match="key mismatch"):
        cache_mod.decode(path.read_bytes(), "0" * 64)
