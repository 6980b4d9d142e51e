"""Arrays that stay on the GPU between calls, and donation, on the ``gpu_sim`` backend.

A ``gpu``/``gpu_sim`` jit returns :class:`DeviceArray` s owning device buffers; the next
call binds them with no copy (the device's copy counters say so), reads copy back once,
donation hands the argument's buffer to the output, and dead Arrays give their buffers
back to the caching allocator. With ``XLAPY_GPU_TEST_DEVICE=1`` (a machine with an NVIDIA
GPU) the same runs on the device, and ``gpu`` is the default backend there.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.errors import InvalidArgumentError
from xlapy.frontend import core
from xlapy.frontend.core import Array
from xlapy.frontend.device_array import DeviceArray

gpu = pytest.importorskip("xlapy.backends.gpu")
from xlapy.client.backends import get_backend  # noqa: E402

DEVICE = os.environ.get("XLAPY_GPU_TEST_DEVICE") == "1"
device_only = pytest.mark.skipif(not DEVICE, reason="needs an NVIDIA GPU "
                                 "(XLAPY_GPU_TEST_DEVICE=1)")
RNG = np.random.default_rng(0)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def copies(dev) -> dict:
    return dev.copies.snapshot()


def moved(before: dict, after: dict) -> dict:
    return {k: after[k] - before[k] for k in ("h2d", "d2h", "d2d")}


@pytest.fixture
def dev():
    return get_backend("gpu_sim").device


def _update(w, x):
    return w - 0.05 * (x.T @ xnp.tanh(x @ w)), (x @ w).sum()


# ----------------------------------------------------------------------------- residency
def test_results_stay_on_the_device_until_read_and_match_the_interpreter(dev):
    w, x = f32(8, 8), f32(4, 8)
    want = xlapy.jit(_update, backend="interpreter")(w, x)
    got = xlapy.jit(_update, backend="gpu_sim")(w, x)
    assert all(type(g) is DeviceArray for g in got)
    assert not got[0].is_fully_replicated_on_host()
    before = copies(dev)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(got[1]), float(want[1]), rtol=1e-5, atol=1e-5)
    assert moved(before, copies(dev))["d2h"] == 2
    # read once: the host copy is kept (printing, item, tolist, indexing copy nothing)
    before = copies(dev)
    assert repr(got[0]).startswith("Array([[")
    np.testing.assert_allclose(got[0].tolist(), np.asarray(want[0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got[0][1, 2]), np.asarray(want[0])[1, 2], rtol=1e-5)
    assert moved(before, copies(dev))["d2h"] == 0


def test_a_loop_of_calls_on_resident_arrays_copies_no_argument(dev):
    step = xlapy.jit(lambda w, x: (w - 0.01 * (x.T @ (x @ w)), x * 0.5 + 1.0),
                     backend="gpu_sim")
    w0, x0 = f32(16, 16), f32(8, 16)
    w, x = step(w0, x0)                       # host arguments: copied in once
    before = copies(dev)
    for _ in range(5):
        w, x = step(w, x)
    assert moved(before, copies(dev)) == {"h2d": 0, "d2h": 0, "d2d": 0}
    ref_w, ref_x = w0, x0
    for _ in range(6):
        ref_w, ref_x = ref_w - 0.01 * (ref_x.T @ (ref_x @ ref_w)), ref_x * 0.5 + 1.0
    np.testing.assert_allclose(np.asarray(w), ref_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(x), ref_x, rtol=1e-6)


def test_host_arguments_are_copied_once_per_call_and_results_not_at_all(dev):
    f = xlapy.jit(lambda a, b: a * b + 1.0, backend="gpu_sim")
    a, b = f32(32), f32(32)
    f(a, b)
    before = copies(dev)
    out = f(a, b)
    assert moved(before, copies(dev)) == {"h2d": 2, "d2h": 0, "d2d": 0}
    np.testing.assert_allclose(np.asarray(out), a * b + 1.0, rtol=1e-6)


def test_device_array_in_a_cpu_computation_is_read_back(dev):
    x = xlapy.jit(lambda v: v * 2.0, backend="gpu_sim")(np.arange(6, dtype=np.float32))
    g = xlapy.jit(lambda v: v + 1.0, backend="cpu")
    np.testing.assert_array_equal(np.asarray(g(x)), np.arange(6) * 2.0 + 1.0)
    np.testing.assert_array_equal(np.asarray(g(x)), np.arange(6) * 2.0 + 1.0)  # fast path
    np.testing.assert_array_equal(np.asarray(x + 1.0), np.arange(6) * 2.0 + 1.0)  # eager


def test_a_value_of_another_device_goes_through_the_host(dev):
    from xlapy.backends.gpu.device import SimDevice
    from xlapy.hlo import parse_module
    other = gpu.GpuSimBackend(SimDevice())
    exe = other.compile(parse_module(
        "HloModule m\nENTRY e {\n x = f32[4] parameter(0)\n ROOT y = f32[4] negate(x)\n}\n"))
    a = xlapy.device_put(np.arange(4, dtype=np.float32), xlapy.devices("gpu_sim")[0])
    before = copies(other.device)
    np.testing.assert_array_equal(exe.execute([a]), -np.arange(4))
    np.testing.assert_array_equal(exe.execute([a.device_value]), -np.arange(4))
    assert moved(before, copies(other.device))["h2d"] == 2       # copied in, not bound


def test_im2col_convolutions_bind_device_arguments(monkeypatch):
    # the im2col kernel and its gemm hold parameter and output addresses: rebound per call
    from gpu_programs import ColumnMajorGemm, conv_text
    from xlapy.backends.gpu import conv_im2col
    from xlapy.client.run import run_hlo
    from xlapy.hlo import parse_module
    monkeypatch.setattr(conv_im2col, "blas_handle", lambda device: ColumnMajorGemm())
    monkeypatch.setattr(conv_im2col, "MIN_MACS", 0)
    text = conv_text((2, 6, 6, 4), (3, 3, 4, 5), "size=3x3 pad=1_1x1_1", "b01f_01io->b01f")
    be = gpu.GpuSimBackend()
    exe = be.compile(parse_module(text))
    assert "im2col-gemm" in {t.kind for t in exe.plan.walk()}
    for seed in (1, 2):
        x, w = f32(2, 6, 6, 4), f32(3, 3, 4, 5)
        want = run_hlo(parse_module(text), [x, w], backend="interpreter")[0]
        dx, dw = be.device.put(x), be.device.put(w)
        before = copies(be.device)
        got = exe.execute_resident([dx, dw])
        assert moved(before, copies(be.device))["h2d"] == 0
        np.testing.assert_allclose(got.read(), want, rtol=1e-5, atol=1e-4)


def test_results_that_are_parameters_or_constants_get_buffers_of_their_own(dev):
    f = xlapy.jit(lambda a: (a, xnp.asarray(np.full(4, 3.0, np.float32))), backend="gpu_sim")
    a = xlapy.device_put(f32(4), xlapy.devices("gpu_sim")[0])
    same, const = f(a)
    assert same.device_value.buffer is not a.device_value.buffer
    np.testing.assert_array_equal(np.asarray(same), np.asarray(a))
    np.testing.assert_array_equal(np.asarray(const), np.full(4, 3.0, np.float32))


def test_block_until_ready_and_device_put(dev):
    d = xlapy.devices("gpu_sim")[0]
    x = xlapy.device_put({"a": f32(3), "b": [np.arange(2, dtype=np.int32)]}, d)
    assert type(x["a"]) is DeviceArray and type(x["b"][0]) is DeviceArray
    assert x["a"].block_until_ready() is x["a"]
    assert xlapy.device_put(x["a"], d) is x["a"]            # already there
    host = xlapy.device_put(x["a"], xlapy.devices()[0])
    assert type(host) is Array
    np.testing.assert_array_equal(np.asarray(host), np.asarray(x["a"]))
    with pytest.raises(InvalidArgumentError, match="device_put"):
        xlapy.device_put(x["a"], "gpu")


def test_pickle_gives_a_host_array_and_deepcopy_a_device_copy(dev):
    import copy
    import pickle
    x = xlapy.device_put(np.arange(5, dtype=np.float32), xlapy.devices("gpu_sim")[0])
    host = pickle.loads(pickle.dumps(x))
    assert type(host) is Array
    np.testing.assert_array_equal(np.asarray(host), np.arange(5))
    y = copy.deepcopy(x)
    assert type(y) is DeviceArray and y.device_value.buffer is not x.device_value.buffer
    np.testing.assert_array_equal(np.asarray(y), np.arange(5))


def test_a_dead_array_gives_its_buffer_back_to_the_allocator(dev):
    f = xlapy.jit(lambda a: a * 2.0, backend="gpu_sim")
    a = np.ones(1 << 16, np.float32)
    f(a)
    gc.collect()
    live = dev.allocator.live_bytes
    out = f(a)
    assert dev.allocator.live_bytes == live + a.nbytes
    cached = dev.allocator.cached_bytes
    del out
    gc.collect()
    assert dev.allocator.live_bytes == live
    assert dev.allocator.cached_bytes == cached + a.nbytes
    out = f(a)                                    # the freed block is reused
    assert dev.allocator.cached_bytes == cached
    np.testing.assert_array_equal(np.asarray(out), a * 2.0)


def test_eager_ops_on_a_device_default_backend_stay_resident(dev):
    old = core._DEFAULT_BACKEND[0]
    try:
        core.set_default_backend("gpu_sim")
        x = xlapy.device_put(f32(5), xlapy.devices("gpu_sim")[0])
        want = np.asarray(x) * 3.0 + 1.0
        y = x * 3.0
        before = copies(dev)
        z = y + 1.0                   # the Python scalar is copied in; y is bound
        assert type(z) is DeviceArray
        assert moved(before, copies(dev))["d2h"] == 0
        np.testing.assert_allclose(np.asarray(z), want, rtol=1e-6)
    finally:
        core._DEFAULT_BACKEND[0] = old


# ----------------------------------------------------------------------------- donation
def _sgd(p, g):
    return p - 0.1 * g


def test_donation_hands_the_buffer_to_the_output_and_deletes_the_argument(dev):
    step = xlapy.jit(_sgd, donate_argnums=0, backend="gpu_sim")
    p0, g = f32(64), f32(64)
    p = xlapy.device_put(p0, xlapy.devices("gpu_sim")[0])
    addr = p.device_value.address
    before = copies(dev)
    q = step(p, g)
    assert moved(before, copies(dev)) == {"h2d": 1, "d2h": 0, "d2d": 0}   # only g
    assert q.device_value.address == addr             # input_output_alias: in place
    assert p.is_deleted() and not q.is_deleted()
    with pytest.raises(InvalidArgumentError, match="Array has been deleted"):
        np.asarray(p)
    with pytest.raises(InvalidArgumentError, match="Array has been deleted"):
        step(p, g)
    with pytest.raises(InvalidArgumentError, match="Array has been deleted"):
        p + 1.0
    r = step(q, g)
    np.testing.assert_allclose(np.asarray(r), p0 - 0.2 * g, rtol=1e-6)


def test_a_shared_donated_buffer_is_copied_first(dev):
    step = xlapy.jit(lambda p, g: p - g, donate_argnums=0, backend="gpu_sim")
    p = xlapy.device_put(f32(16), xlapy.devices("gpu_sim")[0])
    keep = core.new_ref(p)                      # another Array on the same buffer
    before = np.asarray(p).copy()
    q = step(p, np.ones(16, np.float32))
    assert q.device_value.buffer is not keep.device_value.buffer
    np.testing.assert_array_equal(np.asarray(q), before - np.float32(1.0))
    np.testing.assert_array_equal(np.asarray(keep), before)           # unchanged
    # the same array for a donated and a read argument: not written in place
    two = xlapy.jit(lambda p, r: p * 2.0 + r, donate_argnums=0, backend="gpu_sim")
    a = xlapy.device_put(np.arange(8, dtype=np.float32), xlapy.devices("gpu_sim")[0])
    np.testing.assert_array_equal(np.asarray(two(a, a)), np.arange(8) * 3.0)


def test_donating_host_or_unaliasable_arguments_warns_and_still_runs(dev):
    step = xlapy.jit(_sgd, donate_argnums=0, backend="gpu_sim")
    p, g = f32(8), f32(8)
    with pytest.warns(UserWarning, match="not on the device"):
        out = step(p, g)
    np.testing.assert_allclose(np.asarray(out), p - 0.1 * g, rtol=1e-6)
    with pytest.warns(UserWarning, match="Some donated buffers were not usable"):
        shrink = xlapy.jit(lambda a: a[:2] * 2.0, donate_argnums=0, backend="gpu_sim")
        out = shrink(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0])


def test_a_donated_training_loop_keeps_one_buffer_per_parameter(dev):
    @xlapy.jit
    def loss(w, x):
        return ((x @ w) ** 2).mean()

    step = xlapy.jit(lambda w, x: w - 0.05 * xlapy.grad(loss)(w, x), donate_argnums=0,
                     backend="gpu_sim")
    w0, x = f32(8, 4), f32(16, 8)
    w = xlapy.device_put(w0, xlapy.devices("gpu_sim")[0])
    xd = xlapy.device_put(x, xlapy.devices("gpu_sim")[0])
    w = step(w, xd)
    addr = w.device_value.address
    before = copies(dev)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(4):
            w = step(w, xd)
    assert moved(before, copies(dev)) == {"h2d": 0, "d2h": 0, "d2d": 0}
    assert w.device_value.address == addr
    ref = w0
    for _ in range(5):
        ref = ref - 0.05 * (2.0 / (16 * 4)) * x.T @ (x @ ref)
    np.testing.assert_allclose(np.asarray(w), ref, rtol=1e-4, atol=1e-6)


def test_a_donated_bias_update_with_a_column_sum_runs_in_place_on_the_device(dev):
    # b - lr * sum(g, axis=0) written over the donated b: a column-reduction kernel (no
    # host fallback), each thread reading its own element of b before writing it
    step = xlapy.jit(lambda b, g: b - 0.01 * g.sum(axis=0), donate_argnums=0,
                     backend="gpu_sim")
    b, g = f32(512), f32(128, 512)
    exe = get_backend("gpu_sim").compile(step.lower(b, g).hlo_module)
    assert exe.fallback_opcodes() == [] and exe.donatable_parameters() == [0]
    bd = xlapy.device_put(b, xlapy.devices("gpu_sim")[0])
    addr = bd.device_value.address
    before = copies(dev)
    out = step(bd, g)
    assert moved(before, copies(dev)) == {"h2d": 1, "d2h": 0, "d2d": 0}    # g only
    assert out.device_value.address == addr
    np.testing.assert_allclose(np.asarray(out), b - 0.01 * g.sum(axis=0), rtol=1e-5,
                               atol=1e-6)


# ----------------------------------------------------------------------------- default
def test_default_backend_is_gpu_only_with_a_usable_gpu(monkeypatch):
    from xlapy.backends import cuda_probe
    old = core._DEFAULT_BACKEND[0]
    try:
        monkeypatch.delenv("XLAPY_DEFAULT_BACKEND", raising=False)
        for present, want in ((True, "gpu"), (False, "cpu")):
            monkeypatch.setattr(cuda_probe, "usable_gpu", lambda p=present: p)
            core._DEFAULT_BACKEND[0] = None
            assert core.default_backend() == want
        monkeypatch.setenv("XLAPY_DEFAULT_BACKEND", "interpreter")
        core._DEFAULT_BACKEND[0] = None
        assert core.default_backend() == "interpreter"
    finally:
        core._DEFAULT_BACKEND[0] = old


def test_import_does_not_touch_the_gpu_driver():
    code = ("import sys, xlapy; "
            "print('xlapy.backends.cuda_probe' in sys.modules, "
            "'xlapy.backends.gpu.cuda' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "XLAPY_DEFAULT_BACKEND"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.split()
    assert out == ["False", "False"]


def test_without_a_gpu_the_default_stays_cpu():
    if DEVICE:
        pytest.skip("this machine has a GPU")
    from xlapy.backends.cuda_probe import usable_gpu
    assert usable_gpu() is False


# ----------------------------------------------------------------------------- device
@device_only
def test_device_loop_resident_and_donated():
    dev = get_backend("gpu").device
    step = xlapy.jit(_sgd, donate_argnums=0, backend="gpu")
    p0, g0 = f32(1 << 20), f32(1 << 20)
    d = xlapy.devices("gpu")[0]
    p, g = xlapy.device_put(p0, d), xlapy.device_put(g0, d)
    p = step(p, g)
    addr = p.device_value.address
    before = copies(dev)
    for _ in range(10):
        p = step(p, g)
    assert moved(before, copies(dev)) == {"h2d": 0, "d2h": 0, "d2d": 0}
    assert p.device_value.address == addr
    np.testing.assert_allclose(np.asarray(p.block_until_ready()), p0 - 1.1 * g0,
                               rtol=1e-4, atol=1e-5)


@device_only
def test_device_results_read_back_and_free():
    dev = get_backend("gpu").device
    f = xlapy.jit(_update, backend="gpu")
    w, x = f32(64, 64), f32(32, 64)
    got = f(w, x)
    want = xlapy.jit(_update, backend="interpreter")(w, x)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-4, atol=1e-5)
    gc.collect()
    live = dev.allocator.live_bytes
    del got
    gc.collect()
    assert dev.allocator.live_bytes < live


@device_only
def test_device_is_the_default_backend_when_present():
    code = "import xlapy.frontend.core as c; print(c.default_backend())"
    env = {k: v for k, v in os.environ.items() if k != "XLAPY_DEFAULT_BACKEND"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.split()
    assert out[-1] == "gpu"
