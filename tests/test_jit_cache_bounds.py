"""Memory of compiles (issue 20, item 6), each defect with its input:

- the per-function jit cache had no bound (500 recompiles kept 501 entries): it keeps at
  most ``XLAPY_JIT_CACHE_PER_FUNCTION`` entries, least recently used evicted, and all
  live functions together at most ``XLAPY_JIT_CACHE_GLOBAL``; a recompile of an evicted
  signature and the recompilation warning say that eviction caused it;
- compiled code was never released: when an executable dies its JIT library is
  unloaded and LLJITs are recycled; LLVM optimization moves to recycled helper
  processes after a budget (llvmlite leaks on every optimization);
- RSS over compile/delete cycles (the script ``benchmarks/compile_memory.py``, fewer
  cycles and a proportionate bound here).
"""
from __future__ import annotations

import gc
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.frontend import jit_cache

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def small_limits(monkeypatch):
    monkeypatch.setenv("XLAPY_JIT_CACHE_PER_FUNCTION", "4")
    monkeypatch.setenv("XLAPY_JIT_CACHE_GLOBAL", "6")


def sizes(n):
    return [np.arange(k + 1, dtype=np.float32) for k in range(n)]


def test_per_function_bound_evicts_least_recently_used(small_limits):
    f = xlapy.jit(lambda x: x * 2.0 + 1.0)
    xs = sizes(6)
    for x in xs[:4]:
        np.testing.assert_allclose(f(x), x * 2 + 1)
    f(xs[0])                                   # fast-path hit: 0 is now the most recent
    f(xs[4])                                   # evicts 1, the least recently used
    assert len(f._cache) == 4 and f._cache.evictions == 1
    misses = f.cache_info().misses
    f(xs[0])                                   # still cached
    assert f.cache_info().misses == misses
    np.testing.assert_allclose(f(xs[1]), xs[1] * 2 + 1)     # recompiled
    info = f.cache_info()
    assert info.misses == misses + 1
    assert info.reasons[-1] == ("signature seen before was evicted from the jit cache "
                                "(per-function limit XLAPY_JIT_CACHE_PER_FUNCTION=4)")


def test_500_recompiles_keep_a_bounded_cache(monkeypatch):
    """The issue's input: one function called with 500 shapes."""
    monkeypatch.setenv("XLAPY_JIT_CACHE_PER_FUNCTION", "16")
    f = xlapy.jit(lambda x: x + 1.0)
    for k in range(1, 501):
        f(np.zeros(k, np.float32))
    assert len(f._cache) == 16 and f._cache.evictions == 484
    assert sum(len(b.calls) for b in f._bindings.values()) <= 16   # fast path forgot them


def test_global_bound_spans_functions(small_limits):
    fs = [xlapy.jit(lambda x, k=k: x + float(k)) for k in range(4)]
    x, y = np.ones(3, np.float32), np.ones(5, np.float32)
    for f in fs:
        f(x)
        f(y)
    assert sum(len(f._cache) for f in fs) == 6
    assert len(fs[0]._cache) == 0 and len(fs[3]._cache) == 2    # oldest function first
    np.testing.assert_allclose(fs[0](x), x)
    assert "global limit XLAPY_JIT_CACHE_GLOBAL=6" in fs[0].cache_info().reasons[-1]
    assert jit_cache.total_entries() <= 6


def test_recompile_warning_blames_eviction(small_limits, caplog):
    f = xlapy.jit(lambda x: x - 1.0, recompile_warning_threshold=8)
    xs = sizes(5)
    with caplog.at_level(logging.WARNING, logger="xlapy.jit"):
        for _ in range(2):
            for x in xs:
                f(x)
    (warning,) = [r.message for r in caplog.records if "has been compiled" in r.message]
    assert "compiles of signatures the jit cache had evicted" in warning
    assert "XLAPY_JIT_CACHE_PER_FUNCTION" in warning


def test_evicted_executable_is_released():
    """An evicted entry's executable dies (nothing else holds it but the backend's own
    bounded cache), and with it the JIT library."""
    import weakref
    from xlapy.backends.cpu import CpuBackend
    from xlapy.backends.cpu.jit_engine import engine
    from xlapy.hlo import parse_module
    backend = CpuBackend(use_disk_cache=False, memory_cache_size=1)
    text = "HloModule m\nENTRY e {\n  x = f32[8] parameter(0)\n  ROOT y = f32[8] sine(x)\n}\n"
    exe = backend.compile(parse_module(text))
    loaded = exe._keep_alive[0]
    first_jit = engine()._jit
    tracker, live = loaded.tracker, first_jit.live
    ref = weakref.ref(loaded)
    backend.compile(parse_module(text.replace("sine", "cosine")))     # evicts the first
    assert not tracker.closed
    del exe, loaded
    gc.collect()
    assert ref() is None and tracker.closed
    # one library loaded, one released; the second may have gone to a fresh LLJIT when
    # the first had taken its LIBRARIES_PER_JIT libraries
    jits = {id(j): j for j in (first_jit, engine()._jit)}.values()
    assert sum(j.live for j in jits) == live


def test_lljit_instances_are_recycled(monkeypatch):
    from xlapy.backends.cpu import jit_engine
    from xlapy.backends.cpu.jit_engine import engine
    from llvmlite import ir
    e = engine()
    monkeypatch.setattr(jit_engine, "LIBRARIES_PER_JIT", 3)
    m = e.new_module("recycle")
    fn = ir.Function(m, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), "xk_recycle")
    b = ir.IRBuilder(fn.append_basic_block())
    b.ret(b.fadd(fn.args[0], ir.Constant(ir.DoubleType(), 1.0)))
    objects = e.compile([m], ["xk_recycle"]).objects
    before = e.jit_instances
    kept = e.load(objects, ["xk_recycle"])
    first = e._jit
    for _ in range(8):
        e.load(objects, ["xk_recycle"])        # dies at once
    assert e.jit_instances >= before + 2 and first.retired and not first.lljit.closed
    import ctypes
    add_one = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(kept.address("xk_recycle"))
    assert add_one(2.0) == 3.0                 # a retired LLJIT's live library still runs
    del kept, add_one
    gc.collect()
    assert first.lljit.closed


def test_llvm_work_moves_to_a_recycled_helper(monkeypatch):
    from xlapy.backends.cpu import jit_engine, llvm_worker
    from xlapy.backends.cpu.jit_engine import JitEngine
    from llvmlite import ir
    monkeypatch.setattr(jit_engine, "IN_PROCESS_MODULES", 2)
    monkeypatch.setattr(llvm_worker, "RECYCLE_JOBS", 3)
    e = JitEngine(helpers=0)
    try:
        for k in range(7):
            m = e.new_module(f"m{k}")
            fn = ir.Function(m, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), f"k{k}")
            b = ir.IRBuilder(fn.append_basic_block())
            b.ret(b.fmul(fn.args[0], ir.Constant(ir.DoubleType(), float(k))))
            loaded = e.load(e.compile([m], [f"k{k}"]).objects, [f"k{k}"])
            import ctypes
            f = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(loaded.address(f"k{k}"))
            assert f(3.0) == 3.0 * k
        assert e.local_modules == 2
        assert e._recycler.starts == 2         # 5 jobs: 3, then a new process for 2
    finally:
        e.close_helpers()


def test_rss_over_compile_delete_cycles():
    """``benchmarks/compile_memory.py`` with 200 cycles after 150 of warm-up (past the
    in-process LLVM budget and the backend's cache): growth within 10 MiB per 1,000
    cycles, proportionately 2 MiB here plus 2 MiB of allocator noise."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), XLAPY_DISABLE_CACHE="1")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compile_memory.py"), "--cycles", "200",
         "--warmup", "150", "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["growth_mib"] <= 4.0, result
    assert result["jit_entries"] <= 1024


def test_interrupted_helper_job_does_not_shift_replies(monkeypatch):
    """A KeyboardInterrupt between a helper's request and its reply ends that helper:
    otherwise the next job would read the interrupted job's object code."""
    from xlapy.backends.cpu import llvm_worker
    from xlapy.backends.cpu.jit_engine import engine
    from llvmlite import ir
    e = engine()
    helper = llvm_worker.HelperProcess()
    texts = []
    for k in range(2):
        m = e.new_module(f"h{k}")
        fn = ir.Function(m, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), f"h{k}")
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(b.fadd(fn.args[0], ir.Constant(ir.DoubleType(), float(k + 10))))
        texts.append(str(m))
    real_read = llvm_worker._read

    def interrupted(stream):
        monkeypatch.setattr(llvm_worker, "_read", real_read)
        raise KeyboardInterrupt
    try:
        monkeypatch.setattr(llvm_worker, "_read", interrupted)
        with pytest.raises(KeyboardInterrupt):
            helper.compile(texts[0], 2, False, e.target_spec)
        obj = helper.compile(texts[1], 2, False, e.target_spec)[0]
        loaded = e.load([obj], ["h1"])
        import ctypes
        f = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(loaded.address("h1"))
        assert f(1.0) == 12.0 and helper.starts == 2
    finally:
        helper.close()


def test_eager_op_cache_is_bounded(monkeypatch):
    """Eager ops kept one compiled program per new operand shape, without a bound."""
    from xlapy.frontend import core
    monkeypatch.setenv("XLAPY_EAGER_CACHE_SIZE", "3")
    for n in range(1, 9):
        x = xnp.asarray(np.arange(n, dtype=np.float32))
        np.testing.assert_allclose(np.asarray(xnp.sin(x) * 2.0),
                                   np.sin(np.arange(n, dtype=np.float32)) * 2, rtol=1e-6)
        assert core.eager_cache_size() <= 3
