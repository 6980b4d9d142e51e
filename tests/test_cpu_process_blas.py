"""The CPU runtime's products on a BLAS already loaded into the process
(``backends/cpu/process_blas.py``: PyTorch's MKL under ``torch.compile``): results equal
the interpreter's for plain, transposed, strided, batched, f32 and f64 products; the
library is only taken when already loaded and exporting the routines; the switch
``XLAPY_CPU_PROCESS_BLAS=0`` keeps OpenBLAS."""
from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from xlapy.backends.cpu import process_blas, thread_pool  # noqa: E402
from test_cpu_blas import make_dot, padded, random, run  # noqa: E402

TORCH_LIB = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")


def plan_summary(thunk) -> str:
    """The dot thunk's (one) plan, as its summary string."""
    return next(iter(thunk.plans.values())).summary()


def assert_close(got: np.ndarray, ref: np.ndarray, k: int) -> None:
    """Within the rounding of another summation order (the library blocks K its own way)."""
    assert got.shape == ref.shape and got.dtype == ref.dtype
    eps = float(np.finfo(got.dtype).eps)
    np.testing.assert_allclose(got, ref, rtol=64 * eps, atol=64 * eps * np.sqrt(k))


def checked(instr, rng, k: int):
    """The dot thunk for ``instr`` run on random operands and checked against the
    interpreter (contraction length ``k``); the thunk."""
    lhs, rhs = (random(o.shape.dims, o.shape.dtype, rng) for o in instr.operands)
    got, ref, thunk = run(instr, lhs, rhs)
    assert_close(got, ref, k)
    return thunk


@pytest.fixture
def mkl():
    """The process's BLAS in use, and the shared pool on PyTorch's OpenMP team (as under
    ``torch.compile``)."""
    pool = thread_pool.shared_pool()
    saved = pool.openmp
    process_blas.stop_process_blas()
    if not process_blas.use_process_blas(TORCH_LIB):
        pytest.skip("PyTorch's library exports no sgemm_/sgemm_batch_ (not an MKL build)")
    if not thread_pool.share_openmp_threads():
        pytest.skip("no OpenMP team to share (one CPU, or XLAPY_CPU_OPENMP=0)")
    yield
    process_blas.stop_process_blas()
    pool.openmp = saved


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("lc,rc", [((1,), (0,)), ((0,), (0,)), ((1,), (1,)), ((0,), (1,))])
def test_products_match_the_interpreter(mkl, dtype, lc, rc):
    m, k, n = 300, 257, 190
    ls = (m, k) if lc == (1,) else (k, m)
    rs = (k, n) if rc == (0,) else (n, k)
    thunk = checked(make_dot(ls, rs, dtype, (), lc, (), rc), np.random.default_rng(0), k)
    assert plan_summary(thunk) == "gemm process-blas batch=1 copies=none"


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_batches_of_small_products_are_one_call(mkl, dtype):
    # the attention products of a transformer: [B, H, S, D] x [B, H, S, D] over D and S
    rng = np.random.default_rng(1)
    thunk = checked(make_dot((3, 4, 16, 8), (3, 4, 16, 8), dtype, (0, 1), (3,), (0, 1), (3,)),
                    rng, 8)
    assert plan_summary(thunk) == "gemm process-blas batch=12 copies=none"
    checked(make_dot((12, 16, 16), (12, 16, 8), dtype, (0,), (1,), (0,), (1,)), rng, 16)


def test_padded_rows_and_outputs(mkl):
    instr = make_dot((3, 20, 30), (3, 30, 17), "f32", (0,), (2,), (0,), (1,))
    rng = np.random.default_rng(2)
    out = padded(np.empty((3, 20, 17), np.float32))
    got, ref, thunk = run(instr, padded(random((3, 20, 30), np.float32, rng)),
                          padded(random((3, 30, 17), np.float32, rng)), out)
    assert got is out
    assert_close(out, ref, 30)
    assert "process-blas" in plan_summary(thunk)


def test_batches_that_need_copies_stay_with_numpy(mkl):
    instr = make_dot((4, 8, 6), (4, 6, 5), "f32", (0,), (2,), (0,), (1,))
    rng = np.random.default_rng(3)
    lhs = random((4, 8, 12), np.float32, rng)[:, :, ::2]      # no unit stride: a copy
    got, ref, thunk = run(instr, lhs, random((4, 6, 5), np.float32, rng))
    assert_close(got, ref, 6)
    assert plan_summary(thunk) == "numpy"


def test_complex_and_vector_products_stay_with_openblas(mkl):
    rng = np.random.default_rng(4)
    thunk = checked(make_dot((64, 80), (80, 70), "c64", (), (1,), (), (0,)), rng, 80)
    assert "process-blas" not in plan_summary(thunk)
    thunk = checked(make_dot((600, 700), (700,), "f32", (), (1,), (), (0,)), rng, 700)
    assert plan_summary(thunk).startswith("gemv")


def test_only_a_loaded_library_exporting_the_routines_is_taken(tmp_path):
    process_blas.stop_process_blas()
    try:
        assert not process_blas.use_process_blas(str(tmp_path / "libnone.so"))
        libc = next((p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6")
                     if os.path.exists(p)), None)
        if libc is not None:        # loaded, but no ?gemm_
            assert not process_blas.use_process_blas(libc)
        assert process_blas.process_blas_path() is None
        thunk = checked(make_dot((300, 257), (257, 190), "f32", (), (1,), (), (0,)),
                        np.random.default_rng(5), 257)
        assert "process-blas" not in plan_summary(thunk)
    finally:
        process_blas.stop_process_blas()


def test_switch_keeps_openblas(monkeypatch):
    process_blas.stop_process_blas()
    monkeypatch.setenv("XLAPY_CPU_PROCESS_BLAS", "0")
    assert not process_blas.use_process_blas(TORCH_LIB)
    assert process_blas.process_blas_path() is None


def test_torch_compile_uses_the_process_blas(mkl):
    process_blas.stop_process_blas()
    model = torch.nn.Sequential(torch.nn.Linear(64, 300), torch.nn.ReLU(),
                                torch.nn.Linear(300, 10))
    x = torch.randn(256, 64)
    want = model(x)
    got = torch.compile(model, backend="xlapy")(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    if thread_pool.shared_pool().openmp is not None:
        assert process_blas.process_blas_path() == TORCH_LIB


def test_plans_made_on_the_process_blas_run_on_openblas_once_it_is_gone(mkl):
    rng = np.random.default_rng(6)
    for lshape, rshape, lb, lc, rb, rc in (((300, 257), (257, 190), (), (1,), (), (0,)),
                                           ((12, 16, 8), (12, 8, 16), (0,), (2,), (0,), (1,))):
        instr = make_dot(lshape, rshape, "f32", lb, lc, rb, rc)
        lhs, rhs = random(lshape, np.float32, rng), random(rshape, np.float32, rng)
        got, ref, thunk = run(instr, lhs, rhs)
        assert "process-blas" in plan_summary(thunk)
        process_blas.stop_process_blas()        # as in a forked child
        out = np.full(instr.shape.dims, np.nan, np.float32)
        thunk([lhs, rhs], out)
        assert_close(out, ref, lshape[-1])
        assert process_blas.use_process_blas(TORCH_LIB)


def test_a_forked_child_plans_on_openblas(mkl):
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as p:
        assert p.apply(process_blas.in_use) is False
    assert process_blas.in_use()


def test_products_go_back_to_openblas_while_the_pool_backs_off(mkl, monkeypatch):
    instr = make_dot((600, 300), (300, 500), "f32", (), (1,), (), (0,))
    rng = np.random.default_rng(7)
    lhs, rhs = random((600, 300), np.float32, rng), random((300, 500), np.float32, rng)
    got, ref, thunk = run(instr, lhs, rhs)
    (plan,) = thunk.plans.values()
    calls = []
    external = plan.external
    plan.external = lambda *a: (calls.append(a), external(*a))
    out = np.full((600, 500), np.nan, np.float32)
    thunk([lhs, rhs], out)
    assert len(calls) == 1
    runtime = thread_pool.shared_pool().openmp
    monkeypatch.setattr(runtime, "_backoff_until", 1e300)      # the team keeps coming late
    out[...] = np.nan
    thunk([lhs, rhs], out)
    assert len(calls) == 1                                       # OpenBLAS pieces instead
    assert_close(out, ref, 300)
    assert "parallel=" in plan.summary()
