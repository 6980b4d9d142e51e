"""The generated f32 packed GEMM (xlapy/backends/cpu/packed_gemm.py, packed_kernels.py)
against NumPy and the interpreter.

Shape families: odd sizes around the register blocks (6x64, 12x32, 14x16) and the work
units of the native driver, transposed operands (K-major lhs, ``[N, K]`` rhs), strided
views, batch dims, column-major outputs (computed in a scratch and copied out), one to
three threads, the driver run by several threads at once with the same parameters, and
the dot thunk's choice between this kernel and OpenBLAS (``XLAPY_F32_GEMM=packed``; the
default is OpenBLAS). The kernel needs AVX-512; the tests of the kernel skip without it.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from test_bf16_dot import source_layout
from test_cpu_blas import every_other, in_layout, make_dot, run
from xlapy.backends.cpu import blas, blas_lib, packed_gemm
from xlapy.backends.interpreter import Evaluator
from xlapy.errors import InvalidArgumentError

native = pytest.mark.skipif(not packed_gemm.host_has_avx512(), reason="the CPU has no AVX-512")


def f32(shape, rng) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def expect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def assert_f32_close(got: np.ndarray, ref: np.ndarray, k: int) -> None:
    """f32 rounding of a sum of ``k`` products of unit normals."""
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=4e-7 * np.sqrt(k) * 4)


def parallel_with(threads: int):
    """A ``parallel(items, work)`` on ``threads`` Python threads (each item on its own)."""
    ex = ThreadPoolExecutor(threads)

    def parallel(items, work):
        list(ex.map(lambda it: work(it, {}), items))
    return ex, parallel


def reference_pack(x: np.ndarray, width: int) -> np.ndarray:
    """The f32 packed layout built with NumPy: ``[B*G, K, width]``, zero past N."""
    bsz, k, n = x.shape
    groups = -(-n // width)
    full = np.zeros((bsz, k, groups * width), np.float32)
    full[:, :, :n] = x
    return full.reshape(bsz, k, groups, width).transpose(0, 2, 1, 3).reshape(-1, k, width)


@native
@pytest.mark.parametrize("layout", ["k_contiguous", "n_contiguous", "strided"])
@pytest.mark.parametrize("width", [6, 12, 14, 16, 32, 64])
def test_f32_packing_layouts(layout, width):
    """Each loop nest of the packer, a partial last panel, more than one tile of rows."""
    rng = np.random.default_rng(width)
    for bsz, k, n in ((2, 7, 5), (1, 131, 3 * width + 1), (3, 130, width)):
        x = f32((bsz, k, n), rng)
        src = source_layout(x, layout)
        out = packed_gemm.pack_panels(src, width, "f32")
        assert out.ctypes.data % 64 == 0
        np.testing.assert_array_equal(out.view(np.float32), reference_pack(x, width))


SIZES = [(1, 1, 1, 2), (1, 7, 5, 3), (1, 13, 33, 17), (1, 50, 129, 70), (1, 15, 200, 16),
         (1, 97, 300, 130), (1, 257, 64, 513), (3, 37, 65, 29), (5, 40, 66, 33),
         (2, 29, 17, 70)]


@native
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("bsz,m,k,n", SIZES)
def test_driver_over_threads_and_layouts(bsz, m, k, n, threads):
    """The native driver (packing and row-block units from a shared counter) on plain,
    transposed (a weight gradient's K-major lhs and [N, K] rhs) and strided operands."""
    rng = np.random.default_rng(bsz * m + k + n)
    a0, b0 = f32((bsz, m, k), rng), f32((bsz, k, n), rng)
    ref = expect(a0, b0)
    variants = [
        (a0, b0),
        (np.ascontiguousarray(a0.transpose(0, 2, 1)).transpose(0, 2, 1),
         np.ascontiguousarray(b0.transpose(0, 2, 1)).transpose(0, 2, 1)),
        (every_other(a0), every_other(b0)),
    ]
    ex, parallel = parallel_with(threads)
    with ex:
        scratch = packed_gemm.Scratch()
        for a, b in variants:
            for _ in range(2):           # scratch reused: the padding must stay zero
                out = np.full((bsz, m, n), np.nan, np.float32)
                got = packed_gemm.packed_matmul(a, b, "f32", threads, parallel, scratch, out,
                                                dynamic=True)
                assert np.shares_memory(got, out)
                assert_f32_close(out, ref, k)


@native
def test_static_items_match_the_driver():
    """The Python work items (``dynamic=False``) give the same f32 result."""
    rng = np.random.default_rng(4)
    a, b = f32((2, 45, 77), rng), f32((2, 77, 90), rng)
    ex, parallel = parallel_with(2)
    with ex:
        got = packed_gemm.packed_matmul(a, b, "f32", 2, parallel)
        dyn = packed_gemm.packed_matmul(a, b, "f32", 2, parallel, dynamic=True)
    np.testing.assert_array_equal(got, dyn)          # one FMA chain per element either way
    assert_f32_close(got, expect(a, b), 77)


@native
def test_threads_share_one_call():
    """Several threads call the driver at once with the same parameters (as the pool
    does): every unit is done exactly once, whichever thread takes it."""
    from xlapy.backends.cpu.packed_kernels import kernel  # noqa: F401 - compiled on use
    rng = np.random.default_rng(6)
    a, b = f32((1, 300, 90), rng), f32((1, 90, 200), rng)
    ref = expect(a, b)
    for threads in (2, 4, 8):                     # more callers than cores and units
        ex, parallel = parallel_with(threads)
        with ex:
            for _ in range(5):
                got = packed_gemm.packed_matmul(a, b, "f32", threads, parallel, dynamic=True)
                assert_f32_close(got, ref, 90)


@native
def test_row_units_pack_panels_whose_packer_never_runs():
    """Packing units taken but never done (a thread the host does not run): every row
    unit stops waiting after its polls and packs the ``B`` panels itself."""
    rng = np.random.default_rng(7)
    for bsz, m, k, n in ((1, 50, 70, 130), (3, 20, 33, 40)):
        a, b = f32((bsz, m, k), rng), f32((bsz, k, n), rng).transpose(0, 2, 1).copy()
        b = b.transpose(0, 2, 1)                       # K-contiguous: the transposing packer
        g = packed_gemm.Geometry(bsz, m, k, n)
        kw = packed_gemm.k_words(k, "f32")
        ap = packed_gemm.aligned((bsz * g.mblocks, kw, g.mr), np.uint32)
        bp = packed_gemm.aligned((bsz * g.groups, kw, 16 * g.nv), np.uint32)
        pack_a = packed_gemm.Packed(a.transpose(0, 2, 1), g.mr, ap, "f32")
        pack_b = packed_gemm.Packed(b, 16 * g.nv, bp, "f32")
        out = np.full((bsz, m, n), np.nan, np.float32)
        scratch = packed_gemm.Scratch()
        call = packed_gemm.DriverCall(g, pack_a, pack_b, "f32xf32", out, 1,
                                      lambda name, shape: scratch.get(name, shape, np.uint32))
        call.reset()
        call.state[0] = call.packs            # the packing units are "taken"
        call()
        assert call.state[0] >= call.units
        assert (call.state[1:1 + call.packs] == 1).all()
        assert_f32_close(out, expect(a, b), k)


def test_chunks_and_units():
    assert packed_gemm.chunk_blocks(43, 2) == packed_gemm.MAX_CHUNK_BLOCKS
    assert packed_gemm.chunk_blocks(6, 2) == 1              # four units a thread
    assert packed_gemm.chunk_blocks(3, 4) == 1
    assert packed_gemm.chunk_blocks(1000, 1) == packed_gemm.MAX_CHUNK_BLOCKS


# --------------------------------------------------------------------------- the dot thunk
# (lhs dims, rhs dims, lhs_batch, lhs_contracting, rhs_batch, rhs_contracting)
DOTS = [
    ((270, 250), (250, 260), (), (1,), (), (0,)),         # x @ w
    ((250, 270), (250, 260), (), (0,), (), (0,)),         # a weight gradient: x^T @ g
    ((270, 250), (260, 250), (), (1,), (), (1,)),         # g @ w^T
    ((250, 270), (260, 250), (), (0,), (), (1,)),         # both transposed
    ((1, 101, 130), (1, 130, 99), (0,), (2,), (0,), (1,)),          # a batch dim
    ((101, 1, 130), (99, 130, 1), (1,), (2,), (2,), (1,)),         # batch dims elsewhere
    ((1, 1, 61, 40, 3), (3, 1, 40, 1, 70), (0, 1), (3, 4), (3, 1), (2, 0)),  # 2 batch/2 K
]


@native
@pytest.mark.parametrize("case", DOTS, ids=lambda c: f"{c[0]}x{c[1]}")
@pytest.mark.parametrize("out_layout", ["row", "column"])
def test_dot_thunk_takes_the_packed_path(case, out_layout, monkeypatch):
    monkeypatch.setenv(packed_gemm.F32_ENV_SWITCH, "packed")
    monkeypatch.setattr(blas_lib, "PARALLEL_GEMM_FLOPS", 2 * 40**3)
    ls, rs, lb, lc, rb, rc = case
    instr = make_dot(ls, rs, "f32", lb, lc, rb, rc)
    rng = np.random.default_rng(len(ls) + ls[0])
    lhs, rhs = f32(ls, rng), f32(rs, rng)
    dims = instr.shape.dims
    out = np.empty(dims, np.float32)
    if out_layout == "column":
        out = in_layout(out, tuple(range(len(dims))))
    got, ref, thunk = run(instr, lhs, rhs, out)
    k = int(np.prod([ls[d] for d in lc]))
    assert_f32_close(got, ref, k)
    (plan,) = thunk.plans.values()
    copies = "none" if out_layout == "row" or len(dims) < 2 else "out"
    assert plan.summary().startswith("packed f32") and plan.summary().endswith(copies)
    got2 = np.full(dims, np.nan, np.float32)         # the plan again, a fresh output
    thunk([lhs, rhs], got2)
    np.testing.assert_array_equal(got2, got)


@pytest.mark.parametrize("choice,process_blas,path", [
    ("", False, "packed"), ("openblas", False, "gemm"),
    ("", True, "gemm"), ("packed", True, "packed")])
def test_dot_thunk_path_by_switch(choice, process_blas, path, monkeypatch):
    """Packed by default on AVX-512 CPUs; OpenBLAS on request, and while the process's BLAS
    (PyTorch's MKL) takes products unless the packed GEMM is asked for."""
    monkeypatch.setenv(packed_gemm.F32_ENV_SWITCH, choice)
    monkeypatch.setattr(blas_lib, "PARALLEL_GEMM_FLOPS", 0)
    monkeypatch.setattr(blas, "SMALL_DOT_FLOPS", 0)
    monkeypatch.setattr(blas, "process_blas_in_use", lambda: process_blas)
    monkeypatch.setattr(blas, "process_gemm", lambda call: None)
    instr = make_dot((70, 50), (50, 60), "f32", (), (1,), (), (0,))
    rng = np.random.default_rng(2)
    lhs, rhs = f32((70, 50), rng), f32((50, 60), rng)
    got, ref, thunk = run(instr, lhs, rhs)
    assert_f32_close(got, ref, 50)
    (plan,) = thunk.plans.values()
    if path == "packed" and not packed_gemm.host_has_avx512():
        path = "gemm"
    assert plan.summary().startswith(path)


def test_unknown_switch_value_is_an_error(monkeypatch):
    monkeypatch.setenv(packed_gemm.F32_ENV_SWITCH, "fast")
    with pytest.raises(InvalidArgumentError, match="XLAPY_F32_GEMM='fast'"):
        packed_gemm.f32_enabled()


@native
def test_prepared_call_is_rebound_to_new_arrays(monkeypatch):
    """Calls after the first reuse the thread's driver call with the new arrays'
    addresses: every call's result is its own operands' product (views with offsets
    included), and nothing of an earlier call's arrays is read."""
    monkeypatch.setattr(blas_lib, "PARALLEL_GEMM_FLOPS", 0)
    monkeypatch.setattr(blas, "SMALL_DOT_FLOPS", 0)
    monkeypatch.setenv(packed_gemm.F32_ENV_SWITCH, "packed")
    instr = make_dot((90, 70), (70, 80), "f32", (), (1,), (), (0,))
    thunk = blas.make_dot_thunk(instr)
    rng = np.random.default_rng(5)
    calls = []
    for i in range(4):
        big = f32((92, 70), rng)
        lhs, rhs = big[i % 2:90 + i % 2], f32((70, 80), rng)
        out = np.full((90, 80), np.nan, np.float32)
        thunk([lhs, rhs], out)
        calls.append((lhs.copy(), rhs.copy(), out))
        del big, lhs, rhs
    (plan,) = thunk.plans.values()
    assert plan.summary().startswith("packed f32")
    assert plan.packed.scratch.last_call() is not None
    for lhs, rhs, out in calls:
        assert_f32_close(out, expect(lhs[None], rhs[None])[0], 70)


@pytest.mark.parametrize("batch,m,k,n,flops,wanted", [
    (1, 256, 784, 512, 2 * 256**3, True),
    (64, 128, 64, 128, 2 * 256**3, False),    # many matrices: whole ones per thread
    (1, 256, 2048, 512, 2 * 256**3, False),   # K past F32_MAX_K: OpenBLAS blocks K
    (1, 256, 512, 2304, 2 * 256**3, False),   # B of 4.5 MiB packed: OpenBLAS blocks N
    (1, 2048, 256, 1024, 2 * 256**3, True),   # B of 1 MiB
    (1, 1, 784, 512, 0, False),               # a vector side: gemv
    (1, 64, 64, 64, 2 * 256**3, False),       # below the parallel size
])
def test_f32_wanted(batch, m, k, n, flops, wanted, monkeypatch):
    monkeypatch.setenv(packed_gemm.F32_ENV_SWITCH, "packed")
    monkeypatch.setattr(blas_lib, "PARALLEL_GEMM_FLOPS", flops)
    monkeypatch.setattr(packed_gemm, "cores", lambda: 2)
    assert packed_gemm.f32_wanted(batch, m, k, n) == (wanted and packed_gemm.host_has_avx512())
    monkeypatch.delenv(packed_gemm.F32_ENV_SWITCH)
    assert packed_gemm.f32_wanted(batch, m, k, n) == (wanted and packed_gemm.host_has_avx512())
    assert not packed_gemm.f32_wanted(batch, m, k, n, process_blas=True)
    monkeypatch.setenv(packed_gemm.F32_ENV_SWITCH, "openblas")
    assert not packed_gemm.f32_wanted(batch, m, k, n)
    monkeypatch.delenv(packed_gemm.F32_ENV_SWITCH)      # OpenBLAS asked to thread products
    monkeypatch.setenv("XLAPY_CPU_OPENBLAS_THREADS", "1")
    assert not packed_gemm.f32_wanted(batch, m, k, n)
    monkeypatch.setenv(packed_gemm.F32_ENV_SWITCH, "packed")
    assert packed_gemm.f32_wanted(batch, m, k, n) == (wanted and packed_gemm.host_has_avx512())


@native
def test_nonfinite_values_propagate(monkeypatch):
    """inf and NaN reach the result as in the interpreter (no flushing, no skipping)."""
    monkeypatch.setenv(packed_gemm.F32_ENV_SWITCH, "packed")
    monkeypatch.setattr(blas_lib, "PARALLEL_GEMM_FLOPS", 0)
    monkeypatch.setattr(blas, "SMALL_DOT_FLOPS", 0)
    instr = make_dot((30, 20), (20, 40), "f32", (), (1,), (), (0,))
    rng = np.random.default_rng(8)
    lhs, rhs = f32((30, 20), rng), f32((20, 40), rng)
    lhs[3, 4], rhs[5, 7] = np.inf, np.nan
    out = np.empty((30, 40), np.float32)
    thunk = blas.make_dot_thunk(instr)
    thunk([lhs, rhs], out)
    assert next(iter(thunk.plans.values())).summary().startswith("packed f32")
    ref = Evaluator().evaluate(instr, [lhs, rhs])
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(ref))
    finite = np.isfinite(ref)
    assert_f32_close(out[finite], ref[finite], 20)


@native
def test_routines_come_from_the_disk_cache_once_compiled(tmp_path, monkeypatch):
    """A packed routine compiled once is stored in the disk cache and loaded from there
    (not compiled) by the next process that needs it; the loaded code runs."""
    from xlapy.backends.cpu import packed_kernels
    from xlapy.backends.cpu.jit_engine import engine
    monkeypatch.setenv("XLAPY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("XLAPY_DISABLE_CACHE", raising=False)
    key = ("pack_f32", 16)
    monkeypatch.delitem(packed_kernels._loaded, key, raising=False)
    packed_kernels.kernel(key)
    assert len(list((tmp_path / packed_kernels.CACHE_SUBDIR).glob("*.xcache"))) == 1

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled again")
    monkeypatch.delitem(packed_kernels._loaded, key)       # as a new process would
    monkeypatch.setattr(engine(), "compile", no_compile)
    x = np.arange(40 * 20, dtype=np.float32).reshape(1, 40, 20)
    panels = packed_gemm.pack_panels(x, 16, "f32")          # [2 panels, K = 40, 16]
    words = panels.view(np.float32)
    np.testing.assert_array_equal(words[0], x[0, :, :16])
    np.testing.assert_array_equal(words[1][:, :4], x[0, :, 16:])
    assert not words[1][:, 4:].any()


@native
def test_products_share_the_threads_packing_buffers(monkeypatch):
    """Prepared products pack into the thread's arena; when a larger product grows it
    (the old buffer freed), a smaller product prepared before packs into the new one."""
    monkeypatch.setattr(blas_lib, "PARALLEL_GEMM_FLOPS", 0)
    monkeypatch.setattr(blas, "SMALL_DOT_FLOPS", 0)
    monkeypatch.setenv(packed_gemm.F32_ENV_SWITCH, "packed")
    monkeypatch.setattr(packed_gemm, "ARENA", packed_gemm.PackArena())   # empty buffers
    rng = np.random.default_rng(11)
    small = blas.make_dot_thunk(make_dot((40, 30), (30, 50), "f32", (), (1,), (), (0,)))
    large = blas.make_dot_thunk(make_dot((300, 200), (200, 250), "f32", (), (1,), (), (0,)))

    def check(thunk, ls, rs):
        lhs, rhs = f32(ls, rng), f32(rs, rng)
        out = np.full((ls[0], rs[1]), np.nan, np.float32)
        thunk([lhs, rhs], out)
        assert_f32_close(out, expect(lhs[None], rhs[None])[0], ls[1])
    check(small, (40, 30), (30, 50))
    before = packed_gemm.ARENA.words("b", 1).ctypes.data
    check(large, (300, 200), (200, 250))
    assert packed_gemm.ARENA.words("b", 1).ctypes.data != before     # grown: a new buffer
    check(small, (40, 30), (30, 50))                     # rebound to the new buffers
    check(large, (300, 200), (200, 250))


@native
def test_one_executable_from_several_threads_at_once(monkeypatch):
    """A compiled program whose products take the packed GEMM, called from four Python
    threads at once on different arguments: every call gets its own product (each thread
    prepares its own driver call and packs into its own buffers)."""
    import xlapy
    import xlapy.numpy as xnp
    monkeypatch.setenv(packed_gemm.F32_ENV_SWITCH, "packed")
    monkeypatch.setattr(blas_lib, "PARALLEL_GEMM_FLOPS", 0)
    monkeypatch.setattr(blas, "SMALL_DOT_FLOPS", 0)
    threads_seen = set()
    real_call = packed_gemm.PackedGemm.__call__

    def counted(self, *args, **kwargs):
        threads_seen.add(threading.get_ident())
        return real_call(self, *args, **kwargs)
    monkeypatch.setattr(packed_gemm.PackedGemm, "__call__", counted)

    @xlapy.jit
    def f(a, b, c):
        return xnp.tanh(a @ b) @ c
    rng = np.random.default_rng(13)
    # above the generated dot kernels' size: library (here packed) products
    args = [(f32((150, 160), rng), f32((160, 150), rng), f32((150, 140), rng))
            for _ in range(8)]
    expected = [np.tanh(a.astype(np.float64) @ b) @ c for a, b, c in args]

    def run(i: int) -> list:
        return [np.asarray(f(*args[(i + j) % 8])) for j in range(12)]
    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(run, range(4)))
    for i, outs in enumerate(results):
        for j, got in enumerate(outs):
            np.testing.assert_allclose(got, expected[(i + j) % 8], rtol=1e-4, atol=1e-4)
    assert len(threads_seen) > 1            # the products ran packed, from several threads
