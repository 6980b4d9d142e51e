"""Large outputs on recycled memory (``xlapy/backends/cpu/output_pool.py``): a dropped
result's block serves the next call, a result still in use is never written again, and
a pooled result can be donated and written in place."""
from __future__ import annotations

import resource

import ml_dtypes
import numpy as np

import xlapy
import xlapy.numpy as xnp
from xlapy.backends.cpu import output_pool

N = 1 << 18          # 1 MB of float32: above output_pool.MIN_BYTES


def data_address(a) -> int:
    return np.asarray(a).__array_interface__["data"][0]


def test_pool_reuses_a_released_block_and_never_a_live_one():
    a = output_pool.empty((N,), np.float32)
    assert isinstance(a.base, output_pool.Lease)
    assert a.flags.c_contiguous and a.flags.writeable and a.ctypes.data % 64 == 0
    first = a.ctypes.data
    view = a[10:]
    del a
    b = output_pool.empty((N,), np.float32)            # the view keeps the block in use
    assert b.ctypes.data != first
    del view
    c = output_pool.empty((N,), np.float32)
    assert c.ctypes.data == first
    small = output_pool.empty((16,), np.float32)
    assert small.base is None                            # small arrays: plain malloc
    assert output_pool.empty((N,), ml_dtypes.bfloat16).dtype == ml_dtypes.bfloat16


def test_an_allocator_makes_what_empty_makes():
    """``allocator(shape, dtype)()``: pooled blocks for large builtin dtypes (a released
    one reused), plain arrays for small ones and ml_dtypes' types."""
    make = output_pool.allocator((512, 512), np.float32)
    a = make()
    assert isinstance(a.base, output_pool.Lease) and a.shape == (512, 512)
    assert a.dtype == np.float32 and a.flags.c_contiguous and a.ctypes.data % 64 == 0
    first = a.ctypes.data
    b = make()
    assert b.ctypes.data != first                       # a is alive: never its block
    del a
    assert make().ctypes.data == first
    small = output_pool.allocator((16,), np.float32)()
    assert small.base is None and small.shape == (16,)
    half = output_pool.allocator((N,), ml_dtypes.bfloat16)()
    assert half.base is None and half.dtype == ml_dtypes.bfloat16


def test_a_lease_exports_its_block_to_numpy_through_the_buffer_protocol():
    """Each block size has one ctypes lease type; the array is made on the lease itself
    (its base), at the block's address, writable, with the shape asked for."""
    a = output_pool.empty((512, 2, 256), np.float32)
    lease = a.base
    assert isinstance(lease, output_pool.Lease) and lease.memory_lease
    assert type(lease) is output_pool.lease_type(a.nbytes)
    assert a.ctypes.data == lease.block.ctypes.data
    assert a.shape == (512, 2, 256) and a.flags.writeable and a.flags.c_contiguous
    a[...] = 3.0
    assert np.all(lease.block.view(np.float32) == 3.0)


def test_calls_write_large_outputs_into_mapped_memory():
    """Three outputs of 1, 3 and 2 MB: on fresh malloc memory every call took ~1,500 page
    faults here (glibc unmaps or trims freed blocks of this size)."""
    f = xlapy.jit(lambda a, b, c: (a * 2.0, b + 1.0, c - 1.0, a.sum()), backend="cpu")
    a, b, c = (np.ones(k * N, np.float32) for k in (1, 3, 2))
    for _ in range(3):
        f(a, b, c)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        f(a, b, c)                              # each result dropped before the next call
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10
    assert faults < 100, f"{faults} page faults per call writing 6 MB of results"


def test_results_in_use_keep_their_values():
    f = xlapy.jit(lambda x, k: x * k, backend="cpu")
    x = np.ones(N, np.float32)
    kept = [f(x, np.float32(k)) for k in range(4)]
    for k, r in enumerate(kept):
        assert np.all(np.asarray(r) == k)
    assert len({data_address(r) for r in kept}) == 4


def test_pooled_result_donated_is_written_in_place():
    f = xlapy.jit(lambda x: x * 0.5 + 1.0, donate_argnums=0, backend="cpu")
    x = f(xnp.asarray(np.arange(N, dtype=np.float32)))
    where = data_address(x)
    for _ in range(3):
        x = f(x)
        assert data_address(x) == where
    expected = np.arange(N, dtype=np.float32)
    for _ in range(4):
        expected = expected * 0.5 + 1.0
    np.testing.assert_allclose(np.asarray(x), expected, rtol=1e-6)
