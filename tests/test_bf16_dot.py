"""The AVX512-BF16 dot kernel (xlapy/backends/cpu/bf16_dot.py) against the interpreter.

Shape families: odd sizes around the register blocks (6x64, 12x32, 14x16) and the K block,
odd K (a padded pair), transposed operands, several and non-leading batch dims, f32 and
bf16 results, operands in column-major layouts and strided views, empty and K = 0 dots.
The kernel tests skip on a CPU without AVX512-BF16; the fallback (``XLAPY_BF16_DOT=off``:
``blas.py``'s f32 path) is checked everywhere.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from test_cpu_blas import every_other, in_layout, make_dot
from xlapy.backends.cpu import bf16_dot, blas, packed_gemm
from xlapy.backends.interpreter import Evaluator
from xlapy.errors import InvalidArgumentError

native = pytest.mark.skipif(not bf16_dot.host_has_avx512_bf16(),
                            reason="the CPU has no AVX512-BF16")
BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(params=["dpbf16", "fma"])
def kernel(request, monkeypatch) -> str:
    """Each bf16 GEMM in turn (``XLAPY_BF16_DOT``), where the CPU has it."""
    if not packed_gemm.host_has_avx512():
        pytest.skip("the CPU has no AVX-512")
    if request.param == "dpbf16" and not bf16_dot.host_has_avx512_bf16():
        pytest.skip("the CPU has no AVX512-BF16")
    monkeypatch.setenv(bf16_dot.ENV_SWITCH, request.param)
    return request.param


def bf16_random(shape, rng) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32).astype(BF16)


def check(instr, lhs, rhs, expect_native: bool = True) -> None:
    """The thunk's result against the interpreter: f32 results to f32 rounding of a sum of
    K exact products, bf16 results to one bf16 rounding step."""
    ref = Evaluator().evaluate(instr, [np.array(lhs, order="C"), np.array(rhs, order="C")])
    out = np.full(instr.shape.dims, np.nan, instr.shape.dtype)
    thunk = blas.make_dot_thunk(instr)
    assert isinstance(thunk, bf16_dot.Bf16DotThunk) == expect_native
    before = (lhs.copy(), rhs.copy())
    thunk([lhs, rhs], out)
    np.testing.assert_array_equal(lhs, before[0])
    np.testing.assert_array_equal(rhs, before[1])
    k = max(1, int(np.prod([lhs.shape[d] for d in instr.attrs["lhs_contracting_dims"]])))
    scale = np.sqrt(k)
    if instr.shape.dtype == BF16:
        np.testing.assert_allclose(out.astype(np.float64), ref.astype(np.float64),
                                   rtol=2 ** -7, atol=1e-5 * scale)
    else:
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=2e-6 * scale)


# (lhs dims, rhs dims, lhs_batch, lhs_contracting, rhs_batch, rhs_contracting)
FAMILIES = [
    ((1, 1), (1, 1), (), (1,), (), (0,)),
    ((7, 5), (5, 3), (), (1,), (), (0,)),                 # everything smaller than a block
    ((13, 33), (33, 17), (), (1,), (), (0,)),             # 12x2 block, odd K
    ((50, 129), (129, 70), (), (1,), (), (0,)),           # 6x4 block, edge rows and columns
    ((15, 200), (200, 16), (), (1,), (), (0,)),           # 14x1 block, K past one K block
    ((31, 195), (195, 130), (), (1,), (), (0,)),          # K = 2 * KC + 3, three groups
    ((9, 12), (9, 7), (), (0,), (), (0,)),                # lhs transposed
    ((12, 9), (7, 9), (), (1,), (), (1,)),                # rhs transposed
    ((9, 12), (7, 9), (), (0,), (), (1,)),                # both transposed
    ((3, 37, 65), (3, 65, 29), (0,), (2,), (0,), (1,)),   # one batch dim
    ((2, 3, 20, 16), (2, 3, 16, 45), (0, 1), (3,), (0, 1), (2,)),   # two batch dims
    ((11, 4, 19), (6, 4, 11), (1,), (0,), (1,), (2,)),    # non-leading batch dims
    ((5, 6, 7), (6, 7, 8), (), (1, 2), (), (0, 1)),       # two contracting dims
    ((64,), (64, 10), (), (0,), (), (0,)),                # a vector times a matrix
]


@pytest.mark.parametrize("out_et", ["f32", "bf16"])
@pytest.mark.parametrize("ls,rs,lb,lc,rb,rc", FAMILIES)
def test_kernel_matches_interpreter(ls, rs, lb, lc, rb, rc, out_et, kernel):
    instr = make_dot(ls, rs, "bf16", lb, lc, rb, rc, out_et=out_et)
    rng = np.random.default_rng(sum(ls) + 7 * sum(rs))
    check(instr, bf16_random(ls, rng), bf16_random(rs, rng))


@pytest.mark.parametrize("layout", ["column_major", "every_other"])
def test_strided_operands(layout, kernel):
    instr = make_dot((2, 23, 41), (2, 41, 35), "bf16", (0,), (2,), (0,), (1,), out_et="f32")
    rng = np.random.default_rng(3)
    lhs, rhs = bf16_random((2, 23, 41), rng), bf16_random((2, 41, 35), rng)
    if layout == "column_major":
        lhs, rhs = in_layout(lhs, (1, 2, 0)), in_layout(rhs, (0, 1, 2))
    else:
        lhs, rhs = every_other(lhs), every_other(rhs)
    check(instr, lhs, rhs)


def test_large_product_split_over_threads(kernel):
    instr = make_dot((301, 257), (257, 190), "bf16", (), (1,), (), (0,), out_et="f32")
    rng = np.random.default_rng(11)
    check(instr, bf16_random((301, 257), rng), bf16_random((257, 190), rng))
    g = packed_gemm.Geometry(1, 301, 257, 190)
    items = packed_gemm.pieces(g, 2)
    assert len(items) == 2 and items[0][2] == 0 and items[-1][3] == g.mblocks


def test_pieces_cover_every_block_once():
    for g in (packed_gemm.Geometry(5, 40, 8, 8), packed_gemm.Geometry(1, 100, 8, 100),
              packed_gemm.Geometry(3, 7, 8, 8)):
        for threads in (1, 2, 3, 8):
            seen = [(b, m) for b0, b1, m0, m1 in packed_gemm.pieces(g, threads)
                    for b in range(b0, b1) for m in range(m0, m1)]
            assert sorted(seen) == [(b, m) for b in range(g.batch) for m in range(g.mblocks)]


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_special_values_and_empty(kernel):
    instr = make_dot((4, 6), (6, 5), "bf16", (), (1,), (), (0,), out_et="f32")
    lhs = np.ones((4, 6), BF16)
    rhs = np.ones((6, 5), BF16)
    lhs[1, 2] = np.inf
    rhs[3, 4] = np.nan
    out = np.empty((4, 5), np.float32)
    blas.make_dot_thunk(instr)([lhs, rhs], out)
    ref = Evaluator().evaluate(instr, [lhs, rhs])
    np.testing.assert_array_equal(out, ref)           # inf and NaN propagate as in f32
    empty = make_dot((0, 6), (6, 5), "bf16", (), (1,), (), (0,), out_et="f32")
    blas.make_dot_thunk(empty)([np.ones((0, 6), BF16), rhs], np.empty((0, 5), np.float32))
    zero_k = make_dot((3, 0), (0, 5), "bf16", (), (1,), (), (0,), out_et="bf16")
    out = np.full((3, 5), np.nan, BF16)
    blas.make_dot_thunk(zero_k)([np.ones((3, 0), BF16), np.ones((0, 5), BF16)], out)
    assert (out.astype(np.float32) == 0).all()


@pytest.mark.parametrize("out_et", ["f32", "bf16"])
def test_fallback_without_the_kernel(out_et, monkeypatch):
    monkeypatch.setenv(bf16_dot.ENV_SWITCH, "off")
    instr = make_dot((3, 37, 65), (3, 65, 29), "bf16", (0,), (2,), (0,), (1,), out_et=out_et)
    rng = np.random.default_rng(2)
    check(instr, bf16_random((3, 37, 65), rng), bf16_random((3, 65, 29), rng),
          expect_native=False)


def test_other_dots_keep_the_blas_thunk():
    for et, out_et in (("f32", "f32"), ("bf16", "f64"), ("f16", "f32")):
        instr = make_dot((4, 6), (6, 5), et, (), (1,), (), (0,), out_et=out_et)
        assert not bf16_dot.handles(instr)
        assert isinstance(blas.make_dot_thunk(instr), blas.DotThunk)
    mixed = make_dot((4, 6), (6, 5), "bf16", (), (1,), (), (0,), out_et="f32", rhs_et="f32")
    assert not bf16_dot.handles(mixed)


def reference_pack(x: np.ndarray, width: int) -> np.ndarray:
    """packed_kernels.py's packed layout, built with NumPy: [B*G, ceil(K/2), width] words."""
    bsz, k, n = x.shape
    groups, kp = -(-n // width), (k + 1) // 2
    bits = np.zeros((bsz, 2 * kp, groups * width), np.uint32)
    bits[:, :k, :n] = x.view(np.uint16)
    words = bits[:, 0::2] | (bits[:, 1::2] << 16)
    return words.reshape(bsz, kp, groups, width).transpose(0, 2, 1, 3).reshape(-1, kp, width)


def source_layout(x: np.ndarray, layout: str) -> np.ndarray:
    """``x`` ([B, K, N]) stored for one of the packer's loop nests: K contiguous, N
    contiguous, or strided (no unit stride)."""
    if layout == "k_contiguous":
        return np.ascontiguousarray(x.transpose(0, 2, 1)).transpose(0, 2, 1)
    return x if layout == "n_contiguous" else every_other(x)


@native
@pytest.mark.parametrize("layout", ["k_contiguous", "n_contiguous", "strided"])
@pytest.mark.parametrize("width", [6, 12, 14, 16, 32, 64])
def test_packing_layouts(layout, width):
    """Every source layout the packer has a loop nest for, odd K, a partial last panel
    and more than one tile of pairs."""
    rng = np.random.default_rng(width)
    for bsz, k, n in ((2, 7, 5), (1, 2 * 64 * 2 + 3, 3 * width + 1), (3, 130, width)):
        x = bf16_random((bsz, k, n), rng)
        src = source_layout(x, layout)
        assert np.array_equal(src, x)
        out = bf16_dot.pack_pairs(src, width)
        assert out.ctypes.data % 64 == 0
        np.testing.assert_array_equal(out, reference_pack(x, width))


@pytest.mark.skipif(not packed_gemm.host_has_avx512(), reason="the CPU has no AVX-512")
@pytest.mark.parametrize("layout", ["k_contiguous", "n_contiguous", "strided"])
@pytest.mark.parametrize("width", [6, 14, 16, 64])
def test_widened_packing_matches_f32_packing(layout, width):
    """bf16 operands widened while packing: the same panels as the f32 packer makes of
    the same values in f32 (the widening is exact)."""
    rng = np.random.default_rng(width + 1)
    for bsz, k, n in ((2, 7, 5), (1, 2 * 64 * 2 + 3, 3 * width + 1), (3, 130, width)):
        x = bf16_random((bsz, k, n), rng)
        x[0, 0, 0] = np.float32(1e-40)              # a denormal keeps its value
        src = source_layout(x, layout)
        widened = packed_gemm.pack_panels(src, width, "bf16w")
        f32 = packed_gemm.pack_panels(source_layout(x.astype(np.float32), layout), width,
                                      "f32")
        np.testing.assert_array_equal(widened, f32)


def test_kernel_choice_follows_the_switch_and_the_measurement(monkeypatch):
    instr = make_dot((4, 6), (6, 5), "bf16", (), (1,), (), (0,), out_et="f32")
    monkeypatch.setattr(bf16_dot, "host_has_avx512", lambda: True)
    monkeypatch.setattr(bf16_dot, "host_has_avx512_bf16", lambda: True)
    monkeypatch.setenv(bf16_dot.ENV_SWITCH, "fma")
    assert bf16_dot.dot_operand() == "bf16w"
    assert blas.make_dot_thunk(instr).operand == "bf16w"
    monkeypatch.setenv(bf16_dot.ENV_SWITCH, "dpbf16")
    assert bf16_dot.dot_operand() == "bf16"
    monkeypatch.setenv(bf16_dot.ENV_SWITCH, "off")
    assert bf16_dot.dot_operand() is None
    assert isinstance(blas.make_dot_thunk(instr), blas.DotThunk)
    monkeypatch.setenv(bf16_dot.ENV_SWITCH, "fast")
    with pytest.raises(InvalidArgumentError, match="XLAPY_BF16_DOT"):
        bf16_dot.dot_operand()
    monkeypatch.delenv(bf16_dot.ENV_SWITCH)
    # unset: vdpbf16ps only where it takes at most DPBF16_MARGIN of the FMA kernel's time
    for pairs, widened, faster in ((1.0, 2.0, True), (1.0, 1.1, False), (2.0, 1.0, False)):
        times = {"bf16": pairs, "bf16w": widened}
        monkeypatch.setattr(bf16_dot, "_product_seconds", lambda op, *a: times[op])
        bf16_dot.dpbf16_faster.cache_clear()
        try:
            assert bf16_dot.dpbf16_faster() is faster
            assert bf16_dot.dot_operand() == ("bf16" if faster else "bf16w")
        finally:
            bf16_dot.dpbf16_faster.cache_clear()
    monkeypatch.setattr(bf16_dot, "host_has_avx512", lambda: False)
    assert bf16_dot.dot_operand() is None          # no AVX-512: blas.py's path


def test_scratch_buffers_reused_between_calls(kernel):
    instr = make_dot((2, 25, 33), (2, 33, 47), "bf16", (0,), (2,), (0,), (1,), out_et="bf16")
    thunk = blas.make_dot_thunk(instr)
    rng = np.random.default_rng(9)
    for _ in range(3):           # odd K, edge rows and columns: the padding must stay zero
        lhs, rhs = bf16_random((2, 25, 33), rng), bf16_random((2, 33, 47), rng)
        out = np.full((2, 25, 47), np.nan, BF16)
        thunk([lhs, rhs], out)
        ref = Evaluator().evaluate(instr, [lhs, rhs])
        np.testing.assert_allclose(out.astype(np.float64), ref.astype(np.float64),
                                   rtol=2 ** -7, atol=1e-4)
    (gemm,) = thunk.gemms.values()       # one prepared product, rebound on each call
    assert gemm.scratch.arena is packed_gemm.ARENA     # packing into the thread's buffers
    assert {"a", "b"} <= set(packed_gemm.ARENA._local.bufs)
    assert "c" not in getattr(thunk.scratch._local, "bufs", {})   # the result in place


@pytest.mark.parametrize("out_et", ["f32", "bf16"])
def test_result_in_a_strided_buffer(out_et, kernel):
    """A result buffer the kernel cannot write directly goes through an f32 scratch."""
    instr = make_dot((21, 35), (35, 40), "bf16", (), (1,), (), (0,), out_et=out_et)
    rng = np.random.default_rng(5)
    lhs, rhs = bf16_random((21, 35), rng), bf16_random((35, 40), rng)
    out = np.full((40, 21), np.nan, instr.shape.dtype).T
    blas.make_dot_thunk(instr)([lhs, rhs], out)
    ref = Evaluator().evaluate(instr, [lhs, rhs])
    np.testing.assert_allclose(out.astype(np.float64), ref.astype(np.float64),
                               rtol=2 ** -7, atol=1e-5)
    with pytest.raises(InvalidArgumentError, match="C-contiguous"):
        bf16_dot.bf16_matmul(lhs[None], rhs[None], out=out)


@native
def test_empty_products_through_the_pool():
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as ex:
        def parallel(items, work):
            list(ex.map(work, items))
        for m, k, n in ((0, 5, 7), (4, 5, 0), (4, 0, 7)):
            got = bf16_dot.bf16_matmul(np.ones((1, m, k), BF16), np.ones((1, k, n), BF16),
                                       2, parallel)
            assert got.shape == (1, m, n) and not got.any()


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("bsz,m,k,n", [(1, 97, 300, 130), (5, 40, 66, 33), (2, 29, 17, 70),
                                        (1, 50, 520, 260)])   # B shared, packed by all
def test_weight_gradient_layouts_over_threads(bsz, m, k, n, threads, kernel):
    """Both operands transposed (a weight gradient: K-major lhs, [N, K] rhs) and plain
    ones, one matrix shared by row blocks or whole matrices per thread."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(bsz * m + k)
    a = bf16_random((bsz, k, m), rng).transpose(0, 2, 1)
    b = bf16_random((bsz, n, k), rng).transpose(0, 2, 1)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    with ThreadPoolExecutor(threads) as ex:
        def parallel(items, work):
            list(ex.map(work, items))
        for x, y in ((a, b), (np.ascontiguousarray(a), np.ascontiguousarray(b))):
            for dtype in (np.float32, BF16):
                out = np.full((bsz, m, n), np.nan, dtype)
                got = packed_gemm.packed_matmul(x, y, bf16_dot.dot_operand(), threads,
                                                parallel, bf16_dot.Scratch(), out)
                assert got.base is not None and np.shares_memory(got, out)
                tol = 2 ** -7 if dtype == BF16 else 1e-5
                np.testing.assert_allclose(out.astype(np.float64), ref, rtol=tol,
                                           atol=tol * np.sqrt(k))


def test_k_major_lhs_packs_as_panels_of_rows():
    rng = np.random.default_rng(12)
    x = bf16_random((1, 9, 12), rng)                 # stored [K, M]: a weight gradient's lhs
    packed = bf16_dot.pack_pairs(x, 6, "a")          # A^T's panels of MR = 6 rows
    bits = x.view(np.uint16)
    assert packed.shape == (2, 5, 6)
    assert packed[1, 1, 5] == int(bits[0, 2, 11]) | (int(bits[0, 3, 11]) << 16)
    assert packed[0, 4, 2] == int(bits[0, 8, 2])     # the odd last row pairs with zero


@native
def test_rows_shared_without_a_pool():
    """More threads than matrices but no pool: the row pieces run in turn, after B's
    panels are packed once."""
    rng = np.random.default_rng(13)
    a = bf16_random((1, 9, 40), rng).transpose(0, 2, 1)
    b = bf16_random((1, 9, 70), rng)
    got = bf16_dot.bf16_matmul(a, b, threads=2)
    np.testing.assert_allclose(got, np.matmul(a.astype(np.float64), b.astype(np.float64)),
                               rtol=1e-5, atol=1e-5)
