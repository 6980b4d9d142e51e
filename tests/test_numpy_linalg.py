"""``xnp.linalg`` vs NumPy (eagerly and under jit), and the LAPACK custom-calls it emits.

The factorizations lower to the ``lapack_*_ffi`` custom-calls JAX emits on CPU; the
``peers`` tests run xlapy's HLO text on the real XLA:CPU (through jaxlib) and compare.
Gradients are in ``test_autodiff_rules_linalg.py``.
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.errors import InvalidArgumentError, ShapeError
from xlapy.frontend import primitives_linalg as PL
from xlapy.hlo import parse_module

L = xnp.linalg
RNG = np.random.default_rng(7)


def well(*shape, dtype=np.float32):
    x = RNG.standard_normal(shape) + 3 * np.eye(shape[-1])
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def spd(*shape, dtype=np.float32):
    x = well(*shape, dtype=dtype)
    return (x @ np.conj(np.swapaxes(x, -1, -2))).astype(dtype)


def rect(*shape, dtype=np.float32):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def close(got, want, tol=2e-4, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)


def both(fn, *args):
    """fn eagerly and jitted."""
    return [fn(*args), xlapy.jit(fn)(*args)]


def _abs_cols(x):
    return np.abs(np.asarray(x))


# (id, xnp function, NumPy reference, argument makers); outputs compared up to sign
# conventions where LAPACK has one (eigen/singular vectors, Q/R signs).
CASES = [
    ("solve", L.solve, np.linalg.solve, [lambda: well(2, 3, 3), lambda: rect(2, 3, 2)]),
    ("solve_vector", L.solve, np.linalg.solve, [lambda: well(3, 3), lambda: rect(3)]),
    ("solve_broadcast", L.solve, np.linalg.solve, [lambda: well(3, 3), lambda: rect(2, 3, 2)]),
    ("solve_int_rhs", L.solve, np.linalg.solve, [lambda: well(3, 3), lambda: np.arange(6, dtype=np.int32).reshape(3, 2)]),
    ("solve_complex", L.solve, np.linalg.solve, [lambda: well(2, 3, 3, dtype=np.complex64), lambda: rect(2, 3, 1, dtype=np.complex64)]),
    ("inv", L.inv, np.linalg.inv, [lambda: well(2, 1, 3, 3)]),
    ("inv_complex", L.inv, np.linalg.inv, [lambda: well(3, 3, dtype=np.complex64)]),
    ("det", L.det, np.linalg.det, [lambda: well(2, 3, 3)]),
    ("det_pivoting_sign", L.det, np.linalg.det, [lambda: np.array([[0, 1, 0], [0, 0, 2], [3, 0, 0]], np.float32)]),
    ("det_singular", L.det, np.linalg.det, [lambda: np.ones((3, 3), np.float32)]),
    ("det_complex", L.det, np.linalg.det, [lambda: well(2, 3, 3, dtype=np.complex64)]),
    ("det_int", L.det, np.linalg.det, [lambda: np.array([[2, 1], [1, 3]], np.int32)]),
    ("slogdet", lambda a: tuple(L.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)), [lambda: rect(2, 3, 3)]),
    ("slogdet_singular", lambda a: tuple(L.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)), [lambda: np.zeros((3, 3), np.float32)]),
    ("slogdet_complex", lambda a: tuple(L.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)), [lambda: well(2, 3, 3, dtype=np.complex64)]),
    ("cholesky", L.cholesky, np.linalg.cholesky, [lambda: spd(2, 3, 3)]),
    ("cholesky_upper", lambda a: L.cholesky(a, upper=True), lambda a: np.linalg.cholesky(a, upper=True), [lambda: spd(3, 3)]),
    ("cholesky_complex", L.cholesky, np.linalg.cholesky, [lambda: spd(3, 3, dtype=np.complex64)]),
    ("eigvalsh", L.eigvalsh, np.linalg.eigvalsh, [lambda: spd(2, 3, 3)]),
    ("eigvalsh_upper", lambda a: L.eigh(a, UPLO="U", symmetrize_input=False).eigenvalues, lambda a: np.linalg.eigvalsh(a, UPLO="U"), [lambda: rect(3, 3)]),
    ("eigvalsh_complex", L.eigvalsh, np.linalg.eigvalsh, [lambda: spd(3, 3, dtype=np.complex64)]),
    ("svdvals", L.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), [lambda: rect(2, 4, 3)]),
    ("svd_values_wide_complex", lambda a: L.svd(a, compute_uv=False), lambda a: np.linalg.svd(a, compute_uv=False), [lambda: rect(3, 4, dtype=np.complex64)]),
    ("matrix_power", lambda a: [L.matrix_power(a, k) for k in (0, 1, 3, -2)], lambda a: [np.linalg.matrix_power(a, k) for k in (0, 1, 3, -2)], [lambda: well(2, 3, 3) / 3]),
    ("pinv", L.pinv, np.linalg.pinv, [lambda: rect(2, 4, 3)]),
    ("pinv_rank_deficient", L.pinv, lambda a: np.linalg.pinv(a, rcond=1e-5), [lambda: np.outer(np.arange(1, 5), np.arange(1, 4)).astype(np.float32)]),
    ("lstsq", lambda a, b: L.lstsq(a, b)[:2] + (L.lstsq(a, b)[3],), lambda a, b: np.linalg.lstsq(a, b)[:2] + (np.linalg.lstsq(a, b)[3],), [lambda: rect(4, 3), lambda: rect(4, 2)]),
    ("lstsq_vector_wide", lambda a, b: L.lstsq(a, b)[0], lambda a, b: np.linalg.lstsq(a, b)[0], [lambda: rect(3, 4), lambda: rect(3)]),
    ("matrix_rank", L.matrix_rank, lambda a: np.int32(np.linalg.matrix_rank(a)), [lambda: np.outer(np.arange(1, 5), np.arange(1, 4)).astype(np.float32)]),
    ("multi_dot", lambda a, b, c: L.multi_dot([a, b, c]), lambda a, b, c: np.linalg.multi_dot([a, b, c]), [lambda: rect(2, 3), lambda: rect(3, 4), lambda: rect(4)]),
    ("trace_diagonal", lambda a: (L.trace(a, offset=1), L.diagonal(a, offset=-1)), lambda a: (np.linalg.trace(a, offset=1), np.linalg.diagonal(a, offset=-1)), [lambda: rect(2, 3, 4)]),
    ("vecdot_cross_outer", lambda a, b: (L.vecdot(a, b), L.cross(a, b), L.outer(a[0], b[1])), lambda a, b: (np.linalg.vecdot(a, b), np.linalg.cross(a, b), np.linalg.outer(a[0], b[1])), [lambda: rect(2, 3), lambda: rect(2, 3)]),
]

NORM_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]
VECTOR_ORDS = [None, 0, 1, 2, 3, 0.5, np.inf, -np.inf]
CASES += [
    ("norm_matrix", lambda a: [L.norm(a, o) for o in NORM_ORDS], lambda a: [np.linalg.norm(a, o) for o in NORM_ORDS], [lambda: rect(4, 3)]),
    ("norm_vector", lambda v: [L.norm(v, o) for o in VECTOR_ORDS], lambda v: [np.linalg.norm(v, o) for o in VECTOR_ORDS], [lambda: rect(3)]),
    ("norm_axes_keepdims", lambda a: (L.norm(a, axis=1, keepdims=True), L.norm(a, 2, axis=(2, 0)), L.norm(a, "nuc", axis=(0, 1), keepdims=True)), lambda a: (np.linalg.norm(a, axis=1, keepdims=True), np.linalg.norm(a, 2, axis=(2, 0)), np.linalg.norm(a, "nuc", axis=(0, 1), keepdims=True)), [lambda: rect(2, 3, 4)]),
    ("norm_complex_and_flat", lambda a: (L.norm(a), L.norm(a, 1), L.vector_norm(a), L.matrix_norm(a, ord=np.inf)), lambda a: (np.linalg.norm(a), np.linalg.norm(a, 1), np.linalg.vector_norm(a), np.linalg.matrix_norm(a, ord=np.inf)), [lambda: rect(3, 3, dtype=np.complex64)]),
]


@pytest.mark.parametrize("name,xfn,nfn,makers", CASES, ids=[c[0] for c in CASES])
def test_linalg_vs_numpy(name, xfn, nfn, makers):
    args = [m() for m in makers]
    want = nfn(*[np.asarray(a, np.complex128 if np.iscomplexobj(a) else np.float64) for a in args])
    for label, got in zip(("eager", "jit"), both(xfn, *args)):
        if isinstance(want, (list, tuple)):
            assert len(got) == len(want)
            for i, (g, w) in enumerate(zip(got, want)):
                close(g, w, what=f"{name}[{i}] {label}")
        else:
            close(got, want, what=f"{name} {label}")


@pytest.mark.parametrize("shape,mode", [((4, 3), "reduced"), ((4, 3), "complete"), ((3, 4), "reduced"),
                                        ((2, 3, 3), "complete"), ((4, 3), "r")])
def test_qr_reconstructs(shape, mode):
    a = rect(*shape)
    for out in both(lambda x: L.qr(x, mode), a):
        want_r = np.linalg.qr(a, mode=mode if mode != "r" else "r")
        if mode == "r":
            close(np.abs(np.asarray(out)), np.abs(want_r))
            continue
        q, r = (np.asarray(t) for t in out)
        wq, wr = np.linalg.qr(a, mode=mode)
        assert q.shape == wq.shape and r.shape == wr.shape
        close(q @ r, a, what="q @ r")
        close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2))
        close(np.abs(r), np.abs(wr), what="|r|")
        assert np.allclose(np.tril(r, -1), 0)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eigh_and_svd_reconstruct(dtype):
    h = spd(2, 3, 3, dtype=dtype)
    for w, v in both(lambda x: tuple(L.eigh(x)), h):
        w, v = np.asarray(w), np.asarray(v)
        close(w, np.linalg.eigvalsh(h))
        close((v * w[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2)), h, what="v diag(w) v^H")
    a = rect(2, 4, 3, dtype=dtype)
    for full in (True, False):
        for u, s, vh in both(lambda x: tuple(L.svd(x, full_matrices=full)), a):
            u, s, vh = (np.asarray(t) for t in (u, s, vh))
            assert u.shape == (2, 4, 4 if full else 3) and vh.shape == (2, 3, 3)
            close(s, np.linalg.svd(a, compute_uv=False))
            close((u[..., :3] * s[..., None, :]) @ vh, a, what="u s vh")


def test_failures_give_nans_not_errors():
    not_spd = np.array([[1.0, 2.0], [2.0, 1.0]], np.float32)
    out = np.asarray(L.cholesky(not_spd))
    assert np.isnan(out[np.tril_indices(2)]).all() and not np.triu(out, 1).any()   # as JAX
    inv = np.asarray(L.inv(np.ones((2, 2), np.float32)))
    assert not np.isfinite(inv).all()
    sign, logdet = L.slogdet(np.zeros((3, 3), np.float32))
    assert float(sign) == 0 and float(logdet) == -np.inf


def test_bad_inputs():
    with pytest.raises(ShapeError):
        L.inv(np.ones((2, 3), np.float32))
    with pytest.raises(InvalidArgumentError, match="dtype"):
        L.det(np.ones((2, 2), np.float16))
    with pytest.raises(InvalidArgumentError, match="mode"):
        L.qr(np.ones((2, 2), np.float32), mode="raw")
    with pytest.raises(InvalidArgumentError, match="norm order"):
        L.norm(np.ones((2, 2), np.float32), 3)
    with pytest.raises(ShapeError):
        L.solve(np.eye(3, dtype=np.float32), np.ones(4, np.float32))


# ----------------------------------------------------------------------- the lowering
def _fn_all(a, b):
    h = xnp.matmul(a, xnp.swapaxes(a, -1, -2))
    q, r = L.qr(a)
    w, v = L.eigh(h)
    return (L.solve(a, b), L.det(a), L.cholesky(h), xnp.abs(r), xnp.matmul(q, r), w,
            L.svd(a, compute_uv=False), (v * w[..., None, :]) @ xnp.swapaxes(v, -1, -2))


def test_custom_call_targets_and_layouts_are_jax_s():
    a, b = well(4, 4), rect(4, 3)
    text = xlapy.jit(_fn_all).get_compiler_ir(a, b)(stage="hlo")
    targets = {t for t in ("lapack_sgetrf_ffi", "lapack_strsm_ffi", "lapack_spotrf_ffi",
                           "lapack_sgeqrf_ffi", "lapack_sorgqr_ffi", "lapack_ssyevd_ffi",
                           "lapack_sgesdd_ffi") if f'custom_call_target="{t}"' in text}
    assert len(targets) == 7, targets
    assert "operand_layout_constraints={f32[4,4]{0,1}}" in text
    assert "backend_config={uplo = 76 : ui8}" in text
    assert "backend_config={mode = 86 : ui8, uplo = 76 : ui8}" in text
    assert "api_version=API_VERSION_TYPED_FFI" in text
    module = parse_module(text)                        # xlapy reads its own text back
    again = xlapy.run_hlo(module, [a, b], backend="interpreter")
    for got, want in zip(again, xlapy.jit(_fn_all)(a, b)):
        close(got, want)


def test_batched_calls_are_one_custom_call():
    """As in JAX, one custom-call covers a batch: matrices column-major, vector results
    (eigenvalues, info) row-major; the interpreter runs that form."""
    a = spd(3, 4, 4)
    f = xlapy.jit(lambda x: L.eigh(x))
    text = f.get_compiler_ir(a)(stage="hlo")
    assert text.count('custom_call_target="lapack_ssyevd_ffi"') == 1
    w, v = f(a)
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a), rtol=1e-4, atol=1e-4)
    text = xlapy.jit(L.cholesky).get_compiler_ir(spd(3, 4, 4))(stage="hlo")
    assert text.count('custom_call_target="lapack_spotrf_ffi"') == 1
    assert "f32[3,4,4]{1,2,0}" in text


@pytest.mark.peers
def test_hlo_runs_on_real_xla():
    """xlapy's HLO text, in the batched form JAX emits, parsed, compiled and run by the real
    XLA:CPU with jaxlib's LAPACK kernels, against NumPy."""
    from real_xla import run_on_xla
    a, b = well(2, 4, 4), rect(2, 4, 3)
    h = a @ np.swapaxes(a, -1, -2)
    outs = run_on_xla(xlapy.jit(_fn_all).get_compiler_ir(a, b)(stage="hlo"), [a, b])
    a64 = a.astype(np.float64)
    want = [np.linalg.solve(a64, b), np.linalg.det(a64), np.linalg.cholesky(h.astype(np.float64)),
            np.abs(np.linalg.qr(a64)[1]), a64, np.linalg.eigvalsh(h.astype(np.float64)),
            np.linalg.svd(a64, compute_uv=False), h]
    for i, (got, w) in enumerate(zip(outs, want)):
        close(got, w, what=f"output {i}")
    c = well(2, 3, 3, dtype=np.complex64)
    g = xlapy.jit(lambda x: (L.det(x), L.inv(x), L.eigvalsh(x @ xnp.conj(xnp.swapaxes(x, 1, 2)))))
    outs = run_on_xla(g.get_compiler_ir(c)(stage="hlo"), [c])
    c128 = c.astype(np.complex128)
    want = [np.linalg.det(c128), np.linalg.inv(c128),
            np.linalg.eigvalsh(c128 @ np.conj(np.swapaxes(c128, 1, 2)))]
    for i, (got, w) in enumerate(zip(outs, want)):
        close(got, w, what=f"complex output {i}")


@pytest.mark.peers
def test_matches_jax_numpy_linalg():
    import jax
    jnp = jax.numpy
    a, b, h = well(2, 3, 3), rect(2, 3, 2), spd(3, 3)

    def ops(m, a, b, h):
        return (m.linalg.solve(a, b), m.linalg.det(a), m.linalg.inv(a), m.linalg.cholesky(h),
                m.linalg.eigvalsh(h), m.linalg.norm(a, 2, axis=(1, 2)), m.linalg.pinv(a[0]),
                m.linalg.slogdet(a)[1], m.linalg.matrix_power(a, 3))
    for got, want in zip(ops(xnp, a, b, h), jax.jit(lambda *x: ops(jnp, *x))(a, b, h)):
        close(got, want)
