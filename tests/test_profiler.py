"""xlapy.profiler: the step's memory equals Compiled.memory_analysis(), the process-wide
counters follow executables and the output pool, and reset_peak restarts the mark."""
from __future__ import annotations

import gc

import numpy as np

import xlapy
import xlapy.numpy as xnp
import xlapy.profiler as profiler
from xlapy.backends.cpu import output_pool


def _step(w, x):
    h = xnp.tanh(x @ w)
    return h @ w.T, xnp.sum(h)


def _args(n=256):
    rng = np.random.default_rng(0)
    return (rng.normal(size=(n, n)).astype(np.float32),
            rng.normal(size=(n, n)).astype(np.float32))


def test_last_step_memory_is_the_compiled_memory_analysis():
    f = xlapy.jit(_step)
    args = _args()
    profiler.reset_peak()
    assert profiler.last_step_memory() is None
    f(*args)
    step = profiler.last_step_memory()
    ma = f.lower(*args).compile().memory_analysis()
    assert step == ma
    assert ma.peak_memory_in_bytes == (ma.temp_size_in_bytes + ma.argument_size_in_bytes
                                       + ma.output_size_in_bytes + ma.constant_size_in_bytes)
    assert ma.argument_size_in_bytes == 2 * 256 * 256 * 4
    assert ma.output_size_in_bytes >= 256 * 256 * 4 + 4
    stats = profiler.memory_stats()
    assert stats["last_step_peak_bytes"] == ma.peak_memory_in_bytes
    assert stats["largest_step_peak_bytes"] >= ma.peak_memory_in_bytes
    # the high-water mark covers the step: arena, arguments and outputs held together
    assert profiler.peak_memory_bytes() >= ma.peak_memory_in_bytes
    assert xlapy.devices()[0].memory_stats()["peak_bytes_in_use"] == \
        profiler.peak_memory_bytes()


def test_bytes_in_use_follow_executables_and_pooled_outputs():
    gc.collect()
    output_pool.POOL.clear()        # a block pooled by an earlier test is already counted
    before = profiler.memory_stats()["bytes_in_use"]
    f = xlapy.jit(lambda a: xnp.exp(a) * 2.0 + xnp.sin(a))
    a = np.ones((512, 512), np.float32)         # 1 MiB: the output comes from the pool
    out = f(a)
    exe_bytes = profiler.last_step_memory().temp_size_in_bytes
    held = profiler.memory_stats()["bytes_in_use"] - before
    assert held >= out.nbytes + exe_bytes - 64
    del out
    gc.collect()
    # the block went back to the pool: still held by xlapy, until the pool is cleared
    pooled = output_pool.POOL.pooled
    assert pooled >= a.nbytes
    output_pool.POOL.clear()
    assert profiler.memory_stats()["bytes_in_use"] <= before + held - a.nbytes
    del f
    gc.collect()


def test_reset_peak_restarts_from_what_is_held():
    f = xlapy.jit(_step)
    args = _args(128)
    f(*args)
    profiler.reset_peak()
    stats = profiler.memory_stats()
    assert stats["peak_bytes_in_use"] == stats["bytes_in_use"]
    assert stats["last_step_peak_bytes"] == 0 and profiler.largest_step_memory() is None
    f(*args)
    assert profiler.peak_memory_bytes() >= profiler.memory_stats()["bytes_in_use"]
    assert profiler.peak_memory_bytes() > stats["peak_bytes_in_use"]    # the arguments


def test_memory_limit_lowers_the_step_memory_the_profiler_reports():
    from test_rematerialization import _deep_tanh_step

    from xlapy.config import debug_options
    step, args = _deep_tanh_step()
    want = xlapy.jit(step)(*args)
    base = profiler.last_step_memory()
    budget = base.peak_memory_in_bytes - base.temp_size_in_bytes // 4
    with debug_options(xla_cpu_memory_limit_bytes=budget):
        got = xlapy.jit(step)(*args)
    assert profiler.last_step_memory().peak_memory_in_bytes <= budget
    for g, w in zip(xlapy.tree_util.tree_leaves(got), xlapy.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-6)


def test_arrays_kept_by_library_routines_count_until_collected():
    # a convolution keeps its padded inputs between calls this way (conv.py)
    from xlapy.backends.memory_stats import tracked
    gc.collect()
    before = profiler.memory_stats()["bytes_in_use"]
    kept = tracked(np.zeros(1 << 20, np.uint8))
    assert profiler.memory_stats()["bytes_in_use"] == before + (1 << 20)
    assert profiler.peak_memory_bytes() >= before + (1 << 20)
    del kept
    gc.collect()
    assert profiler.memory_stats()["bytes_in_use"] == before
