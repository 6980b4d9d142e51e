"""The CPU backend's BLAS dot thunk (xlapy/backends/cpu/blas.py) against the interpreter.

Operands and outputs are given as the runtime gives them: logical-dims NumPy views whose
strides follow a layout (row-major, column-major, permuted), or non-contiguous slices.
Each case runs with the NumPy small-dot path and with BLAS forced (``SMALL_DOT_FLOPS``).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from xlapy.backends.cpu import blas, blas_lib
from xlapy.backends.interpreter import Evaluator
from xlapy.errors import ShapeError, UnimplementedError
from xlapy.hlo.ir import HloInstruction
from xlapy.hlo.shape import Shape


def make_dot(lshape, rshape, et="f32", lb=(), lc=(), rb=(), rc=(), out_et=None, rhs_et=None,
             **attrs) -> HloInstruction:
    p0 = HloInstruction("parameter", Shape.array(et, lshape), parameter_number=0)
    p1 = HloInstruction("parameter", Shape.array(rhs_et or et, rshape), parameter_number=1)
    lf = [d for d in range(len(lshape)) if d not in lb + lc]
    rf = [d for d in range(len(rshape)) if d not in rb + rc]
    dims = [lshape[d] for d in lb] + [lshape[d] for d in lf] + [rshape[d] for d in rf]
    return HloInstruction("dot", Shape.array(out_et or et, dims), [p0, p1], dict(
        lhs_batch_dims=tuple(lb), lhs_contracting_dims=tuple(lc), rhs_batch_dims=tuple(rb),
        rhs_contracting_dims=tuple(rc), **attrs))


def in_layout(x: np.ndarray, minor_to_major) -> np.ndarray:
    """``x`` stored in ``minor_to_major`` order, viewed in logical dims (as the runtime does)."""
    if x.ndim == 0:
        return x.copy()
    major_to_minor = list(reversed(list(minor_to_major)))
    physical = np.array(x.transpose(major_to_minor), order="C")
    return physical.transpose(np.argsort(major_to_minor))


def padded(x: np.ndarray) -> np.ndarray:
    """A view of ``x`` whose rows are further apart than the row length (leading dim > cols)."""
    if x.ndim == 0:
        return x
    big = np.zeros(x.shape[:-1] + (x.shape[-1] + 3,), x.dtype)
    big[..., :x.shape[-1]] = x
    return big[..., :x.shape[-1]]


def every_other(x: np.ndarray) -> np.ndarray:
    """A view of ``x`` with no unit stride (must be copied before BLAS)."""
    if x.ndim == 0:
        return x
    big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
    big[..., ::2] = x
    return big[..., ::2]


def random(shape, dtype, rng) -> np.ndarray:
    return np.asarray(_random(shape, dtype, rng))


def _random(shape, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def run(instr: HloInstruction, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray | None = None):
    """Run the thunk into ``out`` (NaN-filled by default); return out and the reference."""
    ref = Evaluator().evaluate(instr, [np.array(lhs, order="C"), np.array(rhs, order="C")])
    if out is None:
        out = np.empty(instr.shape.dims, instr.shape.dtype)
    if out.dtype.kind in "fc":
        out[...] = np.nan
    else:
        out[...] = 7
    before = (lhs.copy(), rhs.copy())
    thunk = blas.make_dot_thunk(instr)
    thunk([lhs, rhs], out)
    np.testing.assert_array_equal(lhs, before[0])       # operands are only read
    np.testing.assert_array_equal(rhs, before[1])
    return out, ref, thunk


def assert_close(got: np.ndarray, ref: np.ndarray, k: int) -> None:
    assert got.shape == ref.shape and got.dtype == ref.dtype
    if got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, ref)
        return
    g, r = got.astype(np.complex128), ref.astype(np.complex128)
    eps = float(np.finfo(got.real.dtype).eps) if got.dtype.kind == "c" else \
        float(ml_dtypes.finfo(got.dtype).eps)
    np.testing.assert_allclose(g, r, rtol=4 * eps, atol=4 * eps * np.sqrt(max(k, 1)) * 4)


@pytest.fixture(params=["numpy", "blas"])
def path(request, monkeypatch):
    monkeypatch.setattr(blas, "SMALL_DOT_FLOPS", float("inf") if request.param == "numpy" else 0)
    return request.param


# (lhs dims, rhs dims, lhs_batch, lhs_contracting, rhs_batch, rhs_contracting)
DIMENSION_NUMBERS = [
    ((12, 9), (9, 7), (), (1,), (), (0,)),               # plain matmul
    ((9, 12), (9, 7), (), (0,), (), (0,)),               # lhs transposed
    ((12, 9), (7, 9), (), (1,), (), (1,)),               # rhs transposed (x @ w.T)
    ((9, 12), (7, 9), (), (0,), (), (1,)),               # both transposed
    ((12, 9), (9,), (), (1,), (), (0,)),                 # matrix-vector
    ((9,), (9, 7), (), (0,), (), (0,)),                  # vector-matrix
    ((9,), (9,), (), (0,), (), (0,)),                    # vector-vector -> scalar
    ((5, 6), (7, 8), (), (), (), ()),                    # outer product (no contraction)
    ((4, 12, 9), (4, 9, 7), (0,), (2,), (0,), (1,)),     # batched
    ((12, 4, 9), (9, 7, 4), (1,), (2,), (2,), (0,)),     # batch dims in the middle / last
    ((2, 3, 5, 6), (2, 3, 6, 4), (0, 1), (3,), (0, 1), (2,)),   # two batch dims
    ((3, 2, 5, 6), (2, 6, 3, 4), (1, 0), (3,), (0, 2), (1,)),   # batch dims listed out of order
    ((5, 3, 4, 7), (4, 6, 3), (), (1, 2), (), (2, 0)),   # two contracting dims, swapped order
    ((3, 5, 4, 2), (2, 4, 3, 6), (3,), (0, 2), (0,), (2, 1)),   # batch + 2 contracting
    ((1, 9), (9, 1), (), (1,), (), (0,)),                # degenerate 1x1 result
]


@pytest.mark.parametrize("case", DIMENSION_NUMBERS, ids=lambda c: f"{c[0]}x{c[1]}")
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_dimension_numbers(case, dtype, path):
    ls, rs, lb, lc, rb, rc = case
    instr = make_dot(ls, rs, dtype, lb, lc, rb, rc)
    rng = np.random.default_rng(0)
    lhs, rhs = random(ls, instr.shape.dtype, rng), random(rs, instr.shape.dtype, rng)
    out, ref, _ = run(instr, lhs, rhs)
    k = int(np.prod([ls[d] for d in lc]))
    assert_close(out, ref, k)


LAYOUTS_2D = [(1, 0), (0, 1)]


@pytest.mark.parametrize("lhs_layout", LAYOUTS_2D)
@pytest.mark.parametrize("rhs_layout", LAYOUTS_2D)
@pytest.mark.parametrize("out_layout", LAYOUTS_2D)
@pytest.mark.parametrize("contract", [((1,), (0,)), ((0,), (1,))])
def test_matrix_layouts_need_no_copy(lhs_layout, rhs_layout, out_layout, contract, path):
    lc, rc = contract
    ls = (40, 33) if lc == (1,) else (33, 40)
    rs = (33, 36) if rc == (0,) else (36, 33)
    instr = make_dot(ls, rs, "f32", (), lc, (), rc)
    rng = np.random.default_rng(1)
    lhs = in_layout(random(ls, np.float32, rng), lhs_layout)
    rhs = in_layout(random(rs, np.float32, rng), rhs_layout)
    out = in_layout(np.empty((40, 36), np.float32), out_layout)
    got, ref, thunk = run(instr, lhs, rhs, out)
    assert got is out
    assert_close(out, ref, 33)
    if path == "blas":
        (plan,) = thunk.plans.values()
        assert plan.summary() == "gemm batch=1 copies=none"


@pytest.mark.parametrize("view", ["padded", "every_other"])
@pytest.mark.parametrize("dtype", ["f32", "c64", "c128"])
def test_strided_views(view, dtype, path):
    instr = make_dot((3, 20, 30), (3, 30, 17), dtype, (0,), (2,), (0,), (1,))
    rng = np.random.default_rng(2)
    make = padded if view == "padded" else every_other
    lhs = make(random((3, 20, 30), instr.shape.dtype, rng))
    rhs = make(random((3, 30, 17), instr.shape.dtype, rng))
    out = make(np.empty((3, 20, 17), instr.shape.dtype))
    got, ref, thunk = run(instr, lhs, rhs, out)
    assert got is out
    assert_close(out, ref, 30)
    if path == "blas":
        (plan,) = thunk.plans.values()
        expect = "none" if view == "padded" else "lhs,rhs,out"
        assert plan.summary() == f"gemm batch=3 copies={expect}"


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_reversed_and_broadcast_views(dtype, path):
    instr = make_dot((4, 20, 30), (4, 30, 18), dtype, (0,), (2,), (0,), (1,))
    rng = np.random.default_rng(10)
    lhs = random((4, 20, 30), instr.shape.dtype, rng)[::-1, :, ::-1]      # negative strides
    rhs = np.broadcast_to(random((1, 30, 18), instr.shape.dtype, rng), (4, 30, 18))
    out = np.empty((6, 20, 18), instr.shape.dtype)[1:5][::-1]              # reversed output
    got, ref, _ = run(instr, lhs, rhs, out)
    assert got is out
    assert_close(out, ref, 30)


@pytest.mark.parametrize("perm", [(2, 1, 0), (0, 2, 1), (1, 0, 2), (1, 2, 0)])
def test_batched_layouts(perm, path):
    instr = make_dot((4, 16, 24), (4, 24, 20), "f32", (0,), (2,), (0,), (1,))
    rng = np.random.default_rng(3)
    lhs = in_layout(random((4, 16, 24), np.float32, rng), perm)
    rhs = in_layout(random((4, 24, 20), np.float32, rng), perm[::-1])
    out = in_layout(np.empty((4, 16, 20), np.float32), perm)
    got, ref, _ = run(instr, lhs, rhs, out)
    assert_close(got, ref, 24)


@pytest.mark.parametrize("mode", ["parallel", "whole"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c64"])
def test_batched_parallel_and_whole(mode, dtype, monkeypatch):
    """Batches split over the cores, or one call (a batch call; for complex types one
    ``?gemm`` per matrix)."""
    monkeypatch.setattr(blas, "SMALL_DOT_FLOPS", 0)
    monkeypatch.setattr(blas_lib, "PARALLEL_GEMM_FLOPS", 0 if mode == "parallel" else float("inf"))
    instr = make_dot((8, 12, 9), (9, 8, 7), dtype, (0,), (2,), (1,), (0,))
    rng = np.random.default_rng(11)
    lhs = random((8, 12, 9), instr.shape.dtype, rng)
    rhs = random((9, 8, 7), instr.shape.dtype, rng)
    out = in_layout(np.empty((8, 12, 7), instr.shape.dtype), (1, 2, 0))     # swapped C
    got, ref, thunk = run(instr, lhs, rhs, out)
    assert_close(got, ref, 9)
    (plan,) = thunk.plans.values()
    assert ("parallel=" in plan.summary()) == (mode == "parallel" and blas.cores() > 1)


@pytest.mark.parametrize("batch", [2, 5, 64])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c64"])
def test_small_products_batch_split_over_the_pool(batch, dtype, monkeypatch):
    """A batch of small products (attention's per-head ``[64,32]x[32,64]``) cut along the
    batch, one ``numpy.matmul`` slice per core, the batch dim not the leading one."""
    monkeypatch.setattr(blas, "PARALLEL_SMALL_BATCH_FLOPS", 0)
    instr = make_dot((16, batch, 32), (batch, 32, 16), dtype, (1,), (2,), (0,), (1,))
    rng = np.random.default_rng(batch)
    lhs = random((16, batch, 32), instr.shape.dtype, rng)
    rhs = in_layout(random((batch, 32, 16), instr.shape.dtype, rng), (1, 2, 0))
    out = np.empty((batch, 16, 16), instr.shape.dtype)
    got, ref, thunk = run(instr, lhs, rhs, out)
    assert_close(got, ref, 32)
    (plan,) = thunk.plans.values()
    parts = min(batch, blas.cores())
    assert plan.summary() == (f"numpy parallel={parts}" if parts > 1 else "numpy")


def test_small_products_below_the_batch_threshold_run_whole():
    instr = make_dot((4, 8, 8), (4, 8, 8), "f32", (0,), (2,), (0,), (1,))
    rng = np.random.default_rng(2)
    got, ref, thunk = run(instr, random((4, 8, 8), np.float32, rng),
                          random((4, 8, 8), np.float32, rng), np.empty((4, 8, 8), np.float32))
    assert_close(got, ref, 8)
    assert [p.summary() for p in thunk.plans.values()] == ["numpy"]


@pytest.mark.parametrize("shape", [((64, 48), (48,)), ((48,), (48, 64)), ((300,), (300,))])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("layout", ["row", "col", "every_other"])
def test_vector_paths(shape, dtype, layout, monkeypatch):
    monkeypatch.setattr(blas, "SMALL_DOT_FLOPS", 0)
    ls, rs = shape
    lc, rc = (len(ls) - 1,), (0,)
    instr = make_dot(ls, rs, dtype, (), lc, (), rc)
    rng = np.random.default_rng(4)
    lhs, rhs = random(ls, instr.shape.dtype, rng), random(rs, instr.shape.dtype, rng)
    if layout == "col":
        lhs, rhs = in_layout(lhs, range(lhs.ndim)), in_layout(rhs, range(rhs.ndim))
    elif layout == "every_other":
        lhs, rhs = every_other(lhs), every_other(rhs)
    out, ref, thunk = run(instr, lhs, rhs)
    assert_close(out, ref, ls[-1])
    (plan,) = thunk.plans.values()
    kind = "dot" if len(ls) == len(rs) == 1 else "gemv"
    copies = "none"
    if layout == "every_other" and kind == "gemv":     # a matrix without a unit stride
        copies = "lhs" if len(ls) == 2 else "rhs"
    assert plan.summary() == f"{kind} batch=1 copies={copies}"


@pytest.mark.parametrize("et,out_et", [("bf16", "bf16"), ("f16", "f16"), ("bf16", "f32"),
                                       ("f16", "f32"), ("f8e4m3fn", "f32"), ("s8", "f32"),
                                       ("f32", "bf16")])
def test_narrow_floats_accumulate_in_f32(et, out_et, path):
    instr = make_dot((24, 40), (40, 20), et, (), (1,), (), (0,), out_et=out_et)
    rng = np.random.default_rng(5)
    dtype = instr.operands[0].shape.dtype
    lhs = rng.standard_normal((24, 40)).astype(np.float32).astype(dtype)
    rhs = rng.standard_normal((40, 20)).astype(np.float32).astype(dtype)
    out, ref, _ = run(instr, lhs, rhs)
    assert out.dtype == instr.shape.dtype
    # products are exact in f32 and summed in f32: at most one rounding step of the result
    # type apart from the interpreter (whose summation order differs)
    np.testing.assert_allclose(out.astype(np.float64), ref.astype(np.float64),
                               rtol=float(ml_dtypes.finfo(instr.shape.dtype).eps), atol=1e-5)


@pytest.mark.parametrize("et,out_et", [("s32", "s32"), ("s8", "s32"), ("u8", "u8"),
                                       ("s64", "s64"), ("u32", "u32"), ("s16", "s16"),
                                       ("u64", "u64"), ("s4", "s4")])
def test_integers_wrap(et, out_et, path):
    instr = make_dot((6, 5, 7), (6, 7, 4), et, (0,), (2,), (0,), (1,), out_et=out_et)
    dtype = instr.operands[0].shape.dtype
    rng = np.random.default_rng(6)
    info = ml_dtypes.iinfo(dtype)
    gen = dtype if dtype.type in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                  np.uint32, np.uint64) else np.int8

    def full_range(shape):
        return rng.integers(int(info.min), int(info.max), shape, dtype=gen,
                            endpoint=True).astype(dtype)
    lhs, rhs = full_range((6, 5, 7)), full_range((6, 7, 4))
    out, ref, _ = run(instr, lhs, in_layout(rhs, (1, 2, 0)))
    np.testing.assert_array_equal(out, ref)


def test_integer_overflow_wraps_like_xla():
    instr = make_dot((1, 2), (2, 1), "s32", (), (1,), (), (0,))
    lhs = np.array([[2**30, 2**30]], np.int32)
    rhs = np.array([[2], [2]], np.int32)
    out, _, _ = run(instr, lhs, rhs)
    assert out[0, 0] == 0            # 2^32 wraps to 0
    instr = make_dot((3,), (3,), "u8", (), (0,), (), (0,))
    out, _, _ = run(instr, np.array([200, 100, 3], np.uint8), np.array([2, 3, 1], np.uint8))
    assert out[()] == (400 + 300 + 3) % 256


def test_pred_dot():
    instr = make_dot((3, 4), (4, 2), "pred", (), (1,), (), (0,))
    rng = np.random.default_rng(7)
    lhs, rhs = rng.random((3, 4)) < 0.5, rng.random((4, 2)) < 0.5
    out, ref, _ = run(instr, lhs, rhs)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("shapes", [((0, 5), (5, 3)), ((4, 0), (0, 3)), ((4, 5), (5, 0))])
def test_zero_sized(shapes, path):
    ls, rs = shapes
    instr = make_dot(ls, rs, "f32", (), (1,), (), (0,))
    out, ref, _ = run(instr, np.ones(ls, np.float32), np.ones(rs, np.float32))
    np.testing.assert_array_equal(out, ref)
    if ls[1] == 0:
        assert out.shape == (4, 3) and not out.any()   # empty contraction: zeros, not NaN


def test_plans_are_reused_and_follow_strides(monkeypatch):
    monkeypatch.setattr(blas, "SMALL_DOT_FLOPS", 0)
    instr = make_dot((40, 33), (33, 36), "f32", (), (1,), (), (0,))
    thunk = blas.make_dot_thunk(instr)
    rng = np.random.default_rng(8)
    lhs, rhs = random((40, 33), np.float32, rng), random((33, 36), np.float32, rng)
    out = np.empty((40, 36), np.float32)
    for _ in range(3):
        out[...] = np.nan
        thunk([lhs, rhs], out)
        np.testing.assert_allclose(out, lhs @ rhs, rtol=1e-5, atol=1e-4)
    assert len(thunk.plans) == 1
    lhs2 = in_layout(lhs, (0, 1))
    out[...] = np.nan
    thunk([lhs2, rhs], out)
    np.testing.assert_allclose(out, lhs @ rhs, rtol=1e-5, atol=1e-4)
    assert len(thunk.plans) == 2
    # new array objects at new addresses each call (the address cache must not go stale)
    for _ in range(3):
        a, b = lhs.copy(), rhs.copy()
        out[...] = np.nan
        thunk([a, b], out)
        np.testing.assert_allclose(out, lhs @ rhs, rtol=1e-5, atol=1e-4)
        del a, b


def test_matmul_into_accumulates():
    rng = np.random.default_rng(9)
    a = random((3, 40, 30), np.float32, rng)
    b = in_layout(random((3, 30, 50), np.float32, rng), (1, 2, 0))
    c = random((3, 40, 50), np.float32, rng)
    expect = c + a @ b
    blas.matmul_into(a, b, c, accumulate=True)
    np.testing.assert_allclose(c, expect, rtol=1e-5, atol=1e-4)
    c2 = every_other(np.zeros((40, 50), np.float32))
    blas.matmul_into(a[0], b[0], c2)
    np.testing.assert_allclose(c2, a[0] @ b[0], rtol=1e-5, atol=1e-4)


def test_errors():
    with pytest.raises(ShapeError, match="contracting"):
        blas.make_dot_thunk(make_dot((3, 4), (5, 6), "f32", (), (1,), (), (0,)))
    bad = make_dot((3, 4), (4, 6), "f32", (), (1,), (), (0,))
    bad.shape = Shape.array("f32", (3, 5))
    with pytest.raises(ShapeError, match="result dims"):
        blas.make_dot_thunk(bad)
    assert not blas.supports_dot(bad)
    sparse = make_dot((3, 4), (4, 6), "f32", (), (1,), (), (0,), sparsity="L.1@2:4")
    assert not blas.supports_dot(sparse)
    with pytest.raises(UnimplementedError, match="sparse"):
        blas.make_dot_thunk(sparse)
    ok = make_dot((3, 4), (4, 6), "f32", (), (1,), (), (0,))
    assert blas.supports_dot(ok)
    thunk = blas.make_dot_thunk(ok)
    with pytest.raises(Exception, match="dims"):
        thunk([np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)],
              np.empty((3, 6), np.float32))


def test_library_reports_kernel():
    lib = blas.library()
    assert lib.corename()
    assert lib.num_threads() == 1      # the runtime's pool parallelises, not OpenBLAS


def test_random_dots_and_layouts(path):
    """Random dimension numbers, sizes, operand/output layouts and strided views."""
    rng = np.random.default_rng(13)
    for _ in range(60):
        nb, nc = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        nlf, nrf = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        batch = [int(rng.integers(1, 4)) for _ in range(nb)]
        contract = [int(rng.integers(1, 6)) for _ in range(nc)]
        lrank, rrank = nb + nc + nlf, nb + nc + nrf
        lperm, rperm = rng.permutation(lrank), rng.permutation(rrank)
        lb, lc = tuple(int(d) for d in lperm[:nb]), tuple(int(d) for d in lperm[nb:nb + nc])
        rb, rc = tuple(int(d) for d in rperm[:nb]), tuple(int(d) for d in rperm[nb:nb + nc])
        ls, rs = [0] * lrank, [0] * rrank
        for d, n in zip(lb + lc, batch + contract):
            ls[d] = n
        for d, n in zip(rb + rc, batch + contract):
            rs[d] = n
        for d in lperm[nb + nc:]:
            ls[d] = int(rng.integers(1, 7))
        for d in rperm[nb + nc:]:
            rs[d] = int(rng.integers(1, 7))
        dtype = str(rng.choice(["f32", "f64", "c64"]))
        instr = make_dot(tuple(ls), tuple(rs), dtype, lb, lc, rb, rc)
        np_dtype = instr.shape.dtype
        lhs = in_layout(random(ls, np_dtype, rng), rng.permutation(lrank))
        rhs = in_layout(random(rs, np_dtype, rng), rng.permutation(rrank))
        out = in_layout(np.empty(instr.shape.dims, np_dtype), rng.permutation(instr.shape.rank))
        if rng.random() < 0.3:
            lhs, out = padded(lhs), every_other(out)
        got, ref, _ = run(instr, lhs, rhs, out)
        assert got is out
        assert_close(out, ref, int(np.prod(contract)))
