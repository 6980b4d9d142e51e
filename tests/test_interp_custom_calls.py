"""Interpreter semantics of the LAPACK custom-calls JAX emits on CPU (``lapack_?xxxx_ffi``).

Each case builds the custom-call as JAX 0.10 writes it (column-major layouts, dict-form
backend_config of ASCII character codes) and checks the factorization against NumPy.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from xlapy.backends.interpreter import Evaluator
from xlapy.hlo.shape_inference.custom_calls import backend_config_fields
from xlapy.backends.interpreter.evaluator import CUSTOM_CALLS
from xlapy.errors import InvalidArgumentError, UnimplementedError
from xlapy.hlo.attrs import RawAttr
from xlapy.hlo.ir import HloInstruction
from xlapy.hlo.shape import Shape
from xlapy.hlo.types import from_dtype

RNG = np.random.default_rng(1)
DT = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}
TOL = {"s": 2e-4, "d": 1e-10, "c": 2e-4, "z": 1e-10}
REAL = {"s": "f32", "d": "f64", "c": "f32", "z": "f64"}


def col_major(et: str, dims) -> Shape:
    """A shape with JAX's LAPACK layout: matrix dims column-major, batch dims major."""
    r = len(dims)
    layout = (r - 2, r - 1, *range(r - 3, -1, -1)) if r >= 2 else tuple(range(r - 1, -1, -1))
    return Shape.array(et, dims, layout=layout)


def et_of(dtype) -> str:
    return from_dtype(np.dtype(dtype)).name


def call(target: str, result: Shape, operands: list, config: str = "{}"):
    shapes = [col_major(et_of(np.asarray(o).dtype), np.shape(o)) for o in operands]
    instr = HloInstruction("custom-call", result, [], {
        "custom_call_target": target, "operand_layout_constraints": tuple(shapes),
        "api_version": "API_VERSION_TYPED_FFI", "backend_config": RawAttr(config)})
    return CUSTOM_CALLS[target](Evaluator(), instr, [np.asarray(o) for o in operands])


def rand(p: str, *dims):
    x = RNG.standard_normal(dims)
    if p in "cz":
        x = x + 1j * RNG.standard_normal(dims)
    return x.astype(DT[p])


def herm(x):
    return np.conj(np.swapaxes(x, -1, -2))


def test_backend_config_fields():
    instr = HloInstruction("custom-call", Shape.array("f32", ()), [], {
        "backend_config": RawAttr("{diag = 78 : ui8, low = 1 : i32, flag = true, s = \"x\"}")})
    assert backend_config_fields(instr) == {"diag": 78, "low": 1, "flag": True, "s": "x"}
    assert backend_config_fields(HloInstruction("custom-call", Shape.array("f32", ()))) == {}


# ----------------------------------------------------------------------------------- potrf

@pytest.mark.parametrize("p,uplo", list(itertools.product("sdcz", "LU")))
def test_potrf(p, uplo):
    a = rand(p, 2, 5, 5)
    a = a @ herm(a) + 5 * np.eye(5)
    a = a.astype(DT[p])
    res = Shape.tuple([col_major(et_of(DT[p]), (2, 5, 5)), Shape.array("s32", (2,))])
    out, info = call(f"lapack_{p}potrf_ffi", res, [a], f"{{uplo = {ord(uplo)} : ui8}}")
    assert info.dtype == np.int32 and (info == 0).all()
    if uplo == "L":
        f = np.tril(out)
        np.testing.assert_allclose(f @ herm(f), a, rtol=TOL[p], atol=TOL[p] * 10)
        np.testing.assert_array_equal(np.triu(out, 1), np.triu(a, 1))   # untouched triangle
    else:
        f = np.triu(out)
        np.testing.assert_allclose(herm(f) @ f, a, rtol=TOL[p], atol=TOL[p] * 10)
        np.testing.assert_array_equal(np.tril(out, -1), np.tril(a, -1))


def test_potrf_reports_not_positive_definite():
    a = np.diag([1.0, -2.0, 3.0]).astype(np.float32)
    res = Shape.tuple([col_major("f32", (3, 3)), Shape.array("s32", ())])
    _, info = call("lapack_spotrf_ffi", res, [a], "{uplo = 76 : ui8}")
    assert info.shape == () and info == 2


# ----------------------------------------------------------------------------------- getrf

def apply_pivots(a, piv):
    """Rows of ``a`` permuted by LAPACK's sequential 1-based row interchanges."""
    a = a.copy()
    for i, p in enumerate(piv):
        a[[i, p - 1]] = a[[p - 1, i]]
    return a


@pytest.mark.parametrize("p,m,n", [("s", 6, 6), ("d", 5, 3), ("c", 4, 4), ("z", 3, 5)])
def test_getrf(p, m, n):
    a = rand(p, 2, m, n)
    k = min(m, n)
    res = Shape.tuple([col_major(et_of(DT[p]), (2, m, n)), Shape.array("s32", (2, k)),
                       Shape.array("s32", (2,))])
    lu, piv, info = call(f"lapack_{p}getrf_ffi", res, [a])
    assert piv.dtype == np.int32 and piv.min() >= 1 and piv.max() <= m
    assert (info == 0).all()
    for b in range(2):
        low = np.tril(lu[b], -1)[:, :k] + np.eye(m, k)
        up = np.triu(lu[b])[:k, :]
        np.testing.assert_allclose(low @ up, apply_pivots(a[b], piv[b]), rtol=TOL[p],
                                   atol=TOL[p] * 10)


def test_getrf_singular_info():
    a = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    res = Shape.tuple([col_major("f32", (2, 2)), Shape.array("s32", (2,)), Shape.array("s32", ())])
    _, piv, info = call("lapack_sgetrf_ffi", res, [a])
    assert info == 2 and list(piv) == [2, 2]


# ----------------------------------------------------------------------------- geqrf/orgqr

@pytest.mark.parametrize("p,m,n", [("s", 8, 8), ("d", 6, 4), ("c", 5, 3), ("z", 4, 4)])
def test_geqrf_then_householder_product(p, m, n):
    a = rand(p, 3, m, n)
    et = et_of(DT[p])
    res = Shape.tuple([col_major(et, (3, m, n)), Shape.array(et, (3, n))])
    packed, tau = call(f"lapack_{p}geqrf_ffi", res, [a])
    routine = "ungqr" if p in "cz" else "orgqr"
    q = call(f"lapack_{p}{routine}_ffi", col_major(et, (3, m, n)), [packed, tau])
    r = np.triu(packed)[:, :n, :]
    np.testing.assert_allclose(q @ r, a, rtol=TOL[p], atol=TOL[p] * 10)
    np.testing.assert_allclose(herm(q) @ q, np.broadcast_to(np.eye(n), (3, n, n)),
                               atol=TOL[p] * 10)


def test_geqp3_column_pivoting():
    a = RNG.standard_normal((5, 4))
    res = Shape.tuple([col_major("f64", (5, 4)), Shape.array("s32", (4,)),
                       Shape.array("f64", (4,))])
    packed, jpvt, tau = call("lapack_dgeqp3_ffi", res, [a, np.zeros(4, np.int32)])
    assert sorted(jpvt) == [1, 2, 3, 4]
    q = call("lapack_dorgqr_ffi", col_major("f64", (5, 4)), [packed, tau])
    np.testing.assert_allclose(q @ np.triu(packed)[:4], a[:, jpvt - 1], atol=1e-10)
    diag = np.abs(np.diagonal(packed))
    assert (diag[:-1] >= diag[1:] - 1e-12).all()


# ----------------------------------------------------------------------------------- eigh

@pytest.mark.parametrize("p,uplo", [("s", "L"), ("d", "U"), ("c", "L"), ("z", "U")])
def test_syevd_heevd(p, uplo):
    x = rand(p, 2, 6, 6)
    a = (x + herm(x)).astype(DT[p])
    routine = "heevd" if p in "cz" else "syevd"
    res = Shape.tuple([col_major(et_of(DT[p]), (2, 6, 6)), Shape.array(REAL[p], (2, 6)),
                       Shape.array("s32", (2,))])
    v, w, info = call(f"lapack_{p}{routine}_ffi", res, [a],
                      f"{{mode = 86 : ui8, uplo = {ord(uplo)} : ui8}}")
    assert (info == 0).all() and w.dtype == np.dtype(REAL[p].replace("f", "float"))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=TOL[p], atol=TOL[p] * 10)
    np.testing.assert_allclose(a @ v, v * w[:, None, :], rtol=TOL[p], atol=TOL[p] * 50)
    _, w_only, _ = call(f"lapack_{p}{routine}_ffi", res, [a],
                        f"{{mode = 78 : ui8, uplo = {ord(uplo)} : ui8}}")
    np.testing.assert_allclose(w_only, w, rtol=TOL[p], atol=TOL[p] * 10)


# ------------------------------------------------------------------------------------ trsm

@pytest.mark.parametrize("side,uplo,trans,diag", list(itertools.product("LR", "LU", "NTC", "NU")))
def test_trsm_flags(side, uplo, trans, diag):
    m, n = 4, 3
    k = m if side == "L" else n
    a = rand("z", 2, k, k) + 4 * np.eye(k)
    b = rand("z", 2, m, n)
    cfg = (f"{{diag = {ord(diag)} : ui8, side = {ord(side)} : ui8, "
           f"trans_x = {ord(trans)} : ui8, uplo = {ord(uplo)} : ui8}}")
    x = call("lapack_ztrsm_ffi", col_major("c128", (2, m, n)), [a, b], cfg)
    tri = np.tril(a) if uplo == "L" else np.triu(a)
    if diag == "U":
        tri[:, np.arange(k), np.arange(k)] = 1
    op = {"N": tri, "T": np.swapaxes(tri, -1, -2), "C": herm(tri)}[trans]
    np.testing.assert_allclose(op @ x if side == "L" else x @ op, b, atol=1e-10)


def test_strsm_with_alpha_operand():
    a = np.tril(RNG.standard_normal((3, 3))).astype(np.float32) + 3 * np.eye(3, dtype=np.float32)
    b = RNG.standard_normal((3, 2)).astype(np.float32)
    cfg = "{diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}"
    x = call("lapack_strsm_ffi", col_major("f32", (3, 2)), [a, b, np.float32(2.0)], cfg)
    assert x.dtype == np.float32
    np.testing.assert_allclose(a @ x, 2 * b, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------- svd

@pytest.mark.parametrize("routine,p,mode", [("gesdd", "s", "A"), ("gesdd", "d", "S"),
                                            ("gesdd", "c", "N"), ("gesvd", "z", "S"),
                                            ("gesvd", "d", "A")])
def test_svd(routine, p, mode):
    m, n = 5, 3
    a = rand(p, 2, m, n)
    et = et_of(DT[p])
    u_cols, vt_rows = {"A": (m, n), "S": (n, n), "N": (m, n)}[mode]
    res = Shape.tuple([col_major(et, (2, m, n)), Shape.array(REAL[p], (2, n)),
                       col_major(et, (2, m, u_cols)), col_major(et, (2, vt_rows, n)),
                       Shape.array("s32", (2,))])
    _, s, u, vt, info = call(f"lapack_{p}{routine}_ffi", res, [a], f"{{mode = {ord(mode)} : ui8}}")
    assert (info == 0).all()
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=TOL[p],
                               atol=TOL[p] * 10)
    if mode != "N":
        recon = u[:, :, :n] * s[:, None, :] @ vt[:, :n, :]
        np.testing.assert_allclose(recon, a, rtol=TOL[p], atol=TOL[p] * 10)


# ------------------------------------------------------------------------------------ geev

def test_sgeev_real_input_complex_pairs():
    a = np.array([[0.0, -2.0, 1.0], [2.0, 0.0, 0.5], [0.0, 0.0, 3.0]])   # eigenvalues ±2i, 3
    res = Shape.tuple([Shape.array("f64", (3,)), Shape.array("f64", (3,)),
                       col_major("c128", (3, 3)), col_major("c128", (3, 3)), Shape.array("s32", ())])
    wr, wi, vl, vr, info = call("lapack_dgeev_ffi", res, [a],
                                "{compute_left = 86 : ui8, compute_right = 86 : ui8}")
    w = wr + 1j * wi
    assert info == 0
    np.testing.assert_allclose(np.sort_complex(w), np.sort_complex([2j, -2j, 3]), atol=1e-12)
    np.testing.assert_allclose(a @ vr, vr * w, atol=1e-12)
    np.testing.assert_allclose(herm(vl) @ a, w[:, None] * herm(vl), atol=1e-12)


def test_cgeev_and_non_finite_input():
    a = rand("c", 4, 4)
    res = Shape.tuple([Shape.array("c64", (2, 4)), col_major("c64", (2, 4, 4)),
                       col_major("c64", (2, 4, 4)), Shape.array("s32", (2,))])
    bad = a.copy()
    bad[0, 0] = np.nan
    w, vl, vr, info = call("lapack_cgeev_ffi", res, [np.stack([a, bad])],
                           "{compute_left = 78 : ui8, compute_right = 86 : ui8}")
    assert list(info) == [0, -4]
    np.testing.assert_allclose(a @ vr[0], vr[0] * w[0], atol=1e-4)
    assert np.isnan(w[1]).all()


# --------------------------------------------------------------------- gehrd / sytrd / gees

def test_gehrd_matches_scipy_hessenberg():
    import scipy.linalg
    a = RNG.standard_normal((6, 6))
    res = Shape.tuple([col_major("f64", (6, 6)), Shape.array("f64", (5,)), Shape.array("s32", ())])
    h, tau, info = call("lapack_dgehrd_ffi", res, [a], "{high = 6 : i32, low = 1 : i32}")
    assert info == 0
    np.testing.assert_allclose(np.triu(h, -1), scipy.linalg.hessenberg(a), atol=1e-12)
    assert tau.shape == (5,)


@pytest.mark.parametrize("p,uplo", [("s", "L"), ("z", "U")])
def test_sytrd_hetrd_preserves_eigenvalues(p, uplo):
    x = rand(p, 5, 5)
    a = (x + herm(x)).astype(DT[p])
    name = "hetrd" if p in "cz" else "sytrd"
    et = et_of(DT[p])
    res = Shape.tuple([col_major(et, (5, 5)), Shape.array(REAL[p], (5,)),
                       Shape.array(REAL[p], (4,)), Shape.array(et, (4,)), Shape.array("s32", ())])
    _, d, e, tau, info = call(f"lapack_{p}{name}_ffi", res, [a], f"{{uplo = {ord(uplo)} : ui8}}")
    assert info == 0
    t = np.diag(d.astype(np.float64)) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(np.linalg.eigvalsh(t), np.linalg.eigvalsh(a), rtol=TOL[p],
                               atol=TOL[p] * 10)


def test_dgees_schur_form():
    a = RNG.standard_normal((4, 4))
    res = Shape.tuple([col_major("f64", (4, 4)), col_major("f64", (4, 4)),
                       Shape.array("f64", (4,)), Shape.array("f64", (4,)),
                       Shape.array("s32", ()), Shape.array("s32", ())])
    t, z, wr, wi, sdim, info = call("lapack_dgees_ffi", res, [a], "{mode = 86 : ui8, sort = 78 : ui8}")
    assert info == 0 and sdim == 0
    np.testing.assert_allclose(z @ t @ z.T, a, atol=1e-10)
    assert np.allclose(np.tril(t, -2), 0)
    np.testing.assert_allclose(np.sort_complex(wr + 1j * wi), np.sort_complex(np.linalg.eigvals(a)),
                               atol=1e-10)


def test_gtsv_tridiagonal_solve():
    n = 5
    dl, d, du = RNG.standard_normal(n), RNG.standard_normal(n) + 4, RNG.standard_normal(n)
    b = RNG.standard_normal((n, 2))
    res = Shape.tuple([Shape.array("f64", (n,))] * 3 + [col_major("f64", (n, 2)),
                                                        Shape.array("s32", ())])
    *_, x, info = call("lapack_dgtsv_ffi", res, [dl, d, du, b])
    dense = np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)
    assert info == 0
    np.testing.assert_allclose(dense @ x, b, atol=1e-12)


# ---------------------------------------------------------------------------------- errors

def test_bad_character_code_and_row_major_layout_are_errors():
    a = np.eye(2, dtype=np.float32)
    res = Shape.tuple([col_major("f32", (2, 2)), Shape.array("s32", ())])
    with pytest.raises(InvalidArgumentError, match="uplo"):
        call("lapack_spotrf_ffi", res, [a], "{uplo = 88 : ui8}")
    row_major = Shape.tuple([Shape.array("f32", (2, 2), layout=(1, 0)), Shape.array("s32", ())])
    with pytest.raises(UnimplementedError, match="column-major"):
        call("lapack_spotrf_ffi", row_major, [a], "{uplo = 76 : ui8}")


def test_empty_matrices_skip_lapack():
    a = np.zeros((2, 0, 0), np.float32)
    res = Shape.tuple([col_major("f32", (2, 0, 0)), Shape.array("s32", (2, 0)),
                       Shape.array("s32", (2,))])
    lu, piv, info = call("lapack_sgetrf_ffi", res, [a])
    assert lu.shape == (2, 0, 0) and piv.shape == (2, 0) and list(info) == [0, 0]


def test_parsed_jax_cholesky_and_trsm_custom_calls():
    """The custom-calls exactly as JAX 0.10 prints them, through the parser and evaluator."""
    from xlapy.backends.interpreter import evaluate_module
    from xlapy.hlo import parse_module
    text = """
HloModule jit_solve

ENTRY main.1 {
  a = f32[4,4]{1,0} parameter(0)
  b = f32[4,2]{1,0} parameter(1)
  chol = (f32[4,4]{0,1}, s32[]) custom-call(a), custom_call_target="lapack_spotrf_ffi", operand_layout_constraints={f32[4,4]{0,1}}, output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, frontend_attributes={num_batch_dims="0"}, backend_config={uplo = 76 : ui8}
  l = f32[4,4]{0,1} get-tuple-element(chol), index=0
  info = s32[] get-tuple-element(chol), index=1
  y = f32[4,2]{0,1} custom-call(l, b), custom_call_target="lapack_strsm_ffi", operand_layout_constraints={f32[4,4]{0,1}, f32[4,2]{0,1}}, output_to_operand_aliasing={{}: (1, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}
  x = f32[4,2]{0,1} custom-call(l, y), custom_call_target="lapack_strsm_ffi", operand_layout_constraints={f32[4,4]{0,1}, f32[4,2]{0,1}}, output_to_operand_aliasing={{}: (1, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 76 : ui8}
  ROOT t = (f32[4,2]{0,1}, s32[]) tuple(x, info)
}
"""
    g = RNG.standard_normal((4, 4))
    a = (g @ g.T + 4 * np.eye(4)).astype(np.float32)
    b = RNG.standard_normal((4, 2)).astype(np.float32)
    x, info = evaluate_module(parse_module(text), [a, b])
    assert info == 0
    np.testing.assert_allclose(a.astype(np.float64) @ x, b, rtol=1e-4, atol=1e-4)
