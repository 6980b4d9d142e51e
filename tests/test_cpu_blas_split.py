"""Large products split into pieces on the runtime's pool (``GemmCall.pieces``: column/row
blocks of one product, ``split_product``, or parts of a batch; the dot thunk's path from
``PARALLEL_GEMM_FLOPS``) against NumPy / the interpreter, for every transpose combination
and odd sizes."""
from __future__ import annotations

import numpy as np
import pytest

from test_cpu_blas import assert_close, in_layout, make_dot, random, run
from xlapy.backends.cpu import blas
from xlapy.backends.cpu.blas_lib import PARALLEL_GEMM_FLOPS, GemmCall, MatrixArg


@pytest.mark.parametrize("m,n,k", [(7, 23, 5), (23, 7, 5), (1, 9, 4), (9, 1, 4), (13, 13, 1)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("pieces", [1, 2, 3, 40])
def test_split_product_blocks_cover_the_product(m, n, k, ta, tb, pieces):
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    # stored as BLAS sees them, with leading dims larger than the rows
    lda, ldb, ldc = (m if ta else k) + 3, (k if tb else n) + 2, n + 5
    sa = np.zeros((k if ta else m) * lda, np.float32)
    sb = np.zeros((n if tb else k) * ldb, np.float32)
    (sa.reshape(-1, lda)[:, :m] if ta else sa.reshape(-1, lda)[:, :k])[...] = a.T if ta else a
    (sb.reshape(-1, ldb)[:, :k] if tb else sb.reshape(-1, ldb)[:, :n])[...] = b.T if tb else b
    c = np.full(m * ldc, np.nan, np.float32)
    call = GemmCall(np.dtype(np.float32), m, n, k, MatrixArg(ta, lda), MatrixArg(tb, ldb), ldc)
    parts = call.split_product(pieces)
    assert 1 <= len(parts) <= pieces
    assert sum(p[0].n if n >= m else p[0].m for p in parts) == max(m, n)
    for piece, oa, ob, oc in parts:
        piece.run(sa.ctypes.data + oa, sb.ctypes.data + ob, c.ctypes.data + oc)
    got = c.reshape(m, ldc)[:, :n]
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lc,rc", [((1,), (0,)), ((0,), (1,)), ((1,), (1,)), ((0,), (0,))])
@pytest.mark.parametrize("out_layout", [(1, 0), (0, 1)])
def test_large_dot_runs_split(lc, rc, out_layout, monkeypatch):
    monkeypatch.setenv("XLAPY_F32_GEMM", "openblas")     # f32: the packed GEMM's by default
    m, k, n = 270, 250, 260
    assert 2 * m * n * k >= PARALLEL_GEMM_FLOPS
    ls = (m, k) if lc == (1,) else (k, m)
    rs = (k, n) if rc == (0,) else (n, k)
    instr = make_dot(ls, rs, "f32", (), lc, (), rc)
    rng = np.random.default_rng(3)
    lhs, rhs = random(ls, np.float32, rng), random(rs, np.float32, rng)
    out = in_layout(np.empty((m, n), np.float32), out_layout)
    got, ref, thunk = run(instr, lhs, rhs, out)
    assert_close(got, ref, k)
    (plan,) = thunk.plans.values()
    if blas.cores() > 1:
        assert "parallel=" in plan.summary()


@pytest.mark.parametrize("batch,workers", [(1, 2), (2, 4), (3, 2), (3, 8), (9, 2)])
def test_pieces_cover_every_matrix_of_a_batch(batch, workers):
    m, n, k = 130, 150, 900
    rng = np.random.default_rng(batch * 10 + workers)
    a = rng.standard_normal((batch, m, k)).astype(np.float32)
    b = rng.standard_normal((batch, k, n)).astype(np.float32)
    c = np.full((batch, m, n), np.nan, np.float32)
    call = GemmCall(np.dtype(np.float32), m, n, k, MatrixArg(False, k), MatrixArg(False, n), n,
                    batch, m * k, k * n, m * n)
    assert batch * call.matrix_flops >= PARALLEL_GEMM_FLOPS
    pieces = call.pieces(workers)
    assert pieces is not None and len(pieces) >= min(workers, batch * workers)
    if batch >= workers:
        assert all(p[0].m == m and p[0].n == n for p in pieces)       # whole matrices
    else:
        assert all(p[0].batch == 1 for p in pieces)                   # blocks of products
    for piece, oa, ob, oc in pieces:
        piece.run(a.ctypes.data + oa, b.ctypes.data + ob, c.ctypes.data + oc)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def test_small_or_single_worker_calls_stay_whole():
    arg = MatrixArg(False, 8)
    assert GemmCall(np.dtype(np.float32), 8, 8, 8, arg, arg, 8).pieces(2) is None
    big = GemmCall(np.dtype(np.float32), 512, 512, 512, MatrixArg(False, 512),
                   MatrixArg(False, 512), 512)
    assert big.pieces(1) is None
    assert len(big.pieces(2)) == 2
