# ruff: noqa: E501  (HLO text as TensorFlow prints it)
"""Three defects found running other front ends' HLO, each with the input that showed it:
elided constants (``constant({...})``), JAX's ``cumsum`` of f32[100000] (one reduce-window
as long as the array), and TensorFlow's ``custom-call "Qr"`` (tf.linalg.qr / inv / eigh)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import xlapy
from xlapy.errors import VerificationError
from xlapy.hlo import parse_module
from xlapy.tools.run_hlo_module import main as run_hlo_module

# ---------------------------------------------------------------------- elided constants
ELIDED = """HloModule m

ENTRY main {
  p = f32[4] parameter(0)
  c = f32[4] constant({...})
  t = (f32[2], s32[]) constant(({1, 2}, {...}))
  ROOT a = f32[4] add(p, c)
}
"""


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_elided_constant_is_rejected_with_line_and_column(backend):
    with pytest.raises(VerificationError) as e:
        xlapy.run_hlo(ELIDED, [np.ones(4, np.float32)], backend=backend)
    text = str(e.value)
    assert "5:3: main/c: the constant's value was elided" in text
    assert "6:3: main/t:" in text                       # a tuple with one part elided
    with pytest.raises(VerificationError, match="elided"):
        xlapy.run_hlo(parse_module(ELIDED), [np.ones(4, np.float32)], backend=backend)


def test_elided_constants_filled_with_zeros_on_request(tmp_path, capsys):
    m = parse_module(ELIDED, fill_elided_constants=True)
    (out,) = xlapy.run_hlo(m, [np.arange(4, dtype=np.float32)])
    np.testing.assert_array_equal(out, np.arange(4, dtype=np.float32))
    t = next(i for i in m.entry.instructions if i.name == "t").literal
    np.testing.assert_array_equal(t[0], [1, 2]) and np.testing.assert_array_equal(t[1], 0)
    assert "constant({...})" in parse_module(ELIDED).to_text()      # shape-only round trip
    path = tmp_path / "elided.hlo"
    path.write_text(ELIDED)
    assert run_hlo_module([str(path)]) == 2
    assert "5:3" in capsys.readouterr().err
    assert run_hlo_module([str(path), "--fill_elided_constants"]) == 0


# -------------------------------------------------------------------------- reduce-window
def _cumulative_module(n: int, op: str, reverse: bool, dtype: str = "f32") -> str:
    init = {"add": "0", "maximum": "-inf", "multiply": "1"}[op]
    pad = f"0_{n - 1}" if reverse else f"{n - 1}_0"
    return f"""HloModule jit_cumulative

region_0.3 {{
  Arg_0.4 = {dtype}[] parameter(0)
  Arg_1.5 = {dtype}[] parameter(1)
  ROOT r.6 = {dtype}[] {op}(Arg_0.4, Arg_1.5)
}}

ENTRY main.8 {{
  Arg_0.1 = {dtype}[{n}]{{0}} parameter(0)
  constant.2 = {dtype}[] constant({init})
  ROOT reduce-window.7 = {dtype}[{n}]{{0}} reduce-window(Arg_0.1, constant.2), window={{size={n} pad={pad}}}, to_apply=region_0.3
}}
"""


def _peak_bytes(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_cumsum_of_100000_runs_in_memory_proportional_to_the_output():
    """JAX lowers ``jnp.cumsum(x)`` of f32[100000] to this reduce-window; gathering its
    windows would need 100000 x 100000 elements."""
    n = 100_000
    x = np.random.default_rng(0).normal(size=n).astype(np.float32)
    module = parse_module(_cumulative_module(n, "add", False))
    result = []
    peak = _peak_bytes(lambda: result.append(xlapy.run_hlo(module, [x], backend="interpreter")))
    assert peak < 20 * x.nbytes, peak
    got = result[0][0]
    # the sequential left fold in f32, as XLA's evaluator defines it
    np.testing.assert_array_equal(got, np.cumsum(x, dtype=np.float32))
    np.testing.assert_allclose(got, np.cumsum(x.astype(np.float64)), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("op,reverse", [("add", True), ("maximum", False), ("maximum", True),
                                        ("multiply", False)])
def test_running_prefix_and_suffix_windows(op, reverse):
    n = 300
    rng = np.random.default_rng(1)
    x = (rng.uniform(0.9, 1.1, n) if op == "multiply" else rng.normal(size=n)).astype(np.float32)
    (got,) = xlapy.run_hlo(_cumulative_module(n, op, reverse), [x], backend="interpreter")
    ufunc = {"add": np.add, "maximum": np.maximum, "multiply": np.multiply}[op]
    v = x[::-1] if reverse else x
    want = ufunc.accumulate(v.astype(np.float64))
    want = want[::-1] if reverse else want
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_signed_zeros_in_a_running_max():
    x = np.array([-0.0, 0.0, -0.0, -1.0], np.float32)
    (got,) = xlapy.run_hlo(_cumulative_module(4, "maximum", False), [x], backend="interpreter")
    assert np.signbit(got).tolist() == [True, False, False, False]


def test_large_sliding_window_is_reduced_in_chunks():
    """A window that is not a running prefix takes the general path, slab by slab."""
    from xlapy.backends.interpreter import reduction
    n, k = 40_000, 400                      # 16e6 gathered elements without chunks
    text = _cumulative_module(n, "add", False).replace(
        f"size={n} pad={n - 1}_0", f"size={k} pad={k - 1}_0")
    x = np.random.default_rng(2).integers(-8, 8, n).astype(np.float32)   # exact sums
    result = []
    peak = _peak_bytes(lambda: result.append(xlapy.run_hlo(text, [x], backend="interpreter")))
    want = np.convolve(x, np.ones(k, np.float32))[:n]
    np.testing.assert_array_equal(result[0][0], want)
    # about 40 bytes per gathered element of one slab (values, indices, masks)
    assert peak < 48 * reduction.WINDOW_CHUNK_ELEMENTS, peak
    assert peak < 4 * n * k, peak       # less than the gathered windows alone (f32)


# ------------------------------------------------------------------------------ Qr / Eigh
# TensorFlow's stage="hlo" for tf.linalg.qr(a) (XLA's QrExplicit, full_matrices=False).
TF_QR = """HloModule a_inference_qr_fn

ENTRY %main (arg0.1: f32[2,5,3]) -> (f32[2,5,3], f32[2,3,3]) {
  %arg0.1 = f32[2,5,3]{2,1,0} parameter(0)
  %custom-call.2 = (f32[2,5,3]{2,1,0}, f32[2,3]{1,0}) custom-call(f32[2,5,3]{2,1,0} %arg0.1), custom_call_target="Qr"
  %get-tuple-element.3 = f32[2,5,3]{2,1,0} get-tuple-element((f32[2,5,3]{2,1,0}, f32[2,3]{1,0}) %custom-call.2), index=0
  %get-tuple-element.4 = f32[2,3]{1,0} get-tuple-element((f32[2,5,3]{2,1,0}, f32[2,3]{1,0}) %custom-call.2), index=1
  %custom-call.5 = f32[2,5,3]{2,1,0} custom-call(f32[2,5,3]{2,1,0} %get-tuple-element.3, f32[2,3]{1,0} %get-tuple-element.4), custom_call_target="ProductOfElementaryHouseholderReflectors"
  %slice.6 = f32[2,3,3]{2,1,0} slice(f32[2,5,3]{2,1,0} %get-tuple-element.3), slice={[0:2], [0:3], [0:3]}
  %iota.7 = s32[2,3,3]{2,1,0} iota(), iota_dimension=1
  %iota.8 = s32[2,3,3]{2,1,0} iota(), iota_dimension=2
  %compare.9 = pred[2,3,3]{2,1,0} compare(s32[2,3,3]{2,1,0} %iota.7, s32[2,3,3]{2,1,0} %iota.8), direction=LE
  %constant.10 = f32[] constant(0)
  %broadcast.11 = f32[2,3,3]{2,1,0} broadcast(f32[] %constant.10), dimensions={}
  %select.12 = f32[2,3,3]{2,1,0} select(pred[2,3,3]{2,1,0} %compare.9, f32[2,3,3]{2,1,0} %slice.6, f32[2,3,3]{2,1,0} %broadcast.11)
  ROOT %tuple.13 = (f32[2,5,3]{2,1,0}, f32[2,3,3]{2,1,0}) tuple(f32[2,5,3]{2,1,0} %custom-call.5, f32[2,3,3]{2,1,0} %select.12)
}
"""

TF_EIGH = """HloModule a_inference_eigh_fn

ENTRY %main (arg0.1: f64[4,4]) -> (f64[4], f64[4,4]) {
  %arg0.1 = f64[4,4]{1,0} parameter(0)
  %custom-call.2 = (f64[4,4]{1,0}, f64[4]{0}) custom-call(f64[4,4]{1,0} %arg0.1), custom_call_target="Eigh", backend_config="1,1,100,0.000001"
  %get-tuple-element.3 = f64[4,4]{1,0} get-tuple-element((f64[4,4]{1,0}, f64[4]{0}) %custom-call.2), index=0
  %get-tuple-element.4 = f64[4]{0} get-tuple-element((f64[4,4]{1,0}, f64[4]{0}) %custom-call.2), index=1
  ROOT %tuple.5 = (f64[4]{0}, f64[4,4]{1,0}) tuple(f64[4]{0} %get-tuple-element.4, f64[4,4]{1,0} %get-tuple-element.3)
}
"""


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_tensorflow_qr_custom_calls_run_on_lapack(backend):
    a = np.random.default_rng(3).normal(size=(2, 5, 3)).astype(np.float32)
    q, r = xlapy.run_hlo(TF_QR, [a], backend=backend)
    for i in range(2):
        qn, rn = np.linalg.qr(a[i])               # LAPACK geqrf + orgqr: the same signs
        np.testing.assert_allclose(q[i], qn, atol=2e-6)
        np.testing.assert_allclose(r[i], rn, atol=2e-6)
        np.testing.assert_allclose(q[i] @ r[i], a[i], atol=2e-6)
        np.testing.assert_allclose(q[i].T @ q[i], np.eye(3), atol=2e-6)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_tensorflow_eigh_custom_call_runs_on_lapack(backend):
    rng = np.random.default_rng(4)
    m = rng.normal(size=(4, 4))
    a = np.tril(m + m.T) + np.triu(rng.normal(size=(4, 4)), 1)   # only the lower half counts
    w, v = xlapy.run_hlo(TF_EIGH, [a], backend=backend)
    sym = np.tril(a) + np.tril(a, -1).T
    np.testing.assert_allclose(w, np.linalg.eigvalsh(sym), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sym @ v, v * w, atol=1e-10)
    np.testing.assert_allclose(v.T @ v, np.eye(4), atol=1e-12)


def test_householder_product_with_fewer_reflectors_and_complex_qr():
    rng = np.random.default_rng(5)
    a = (rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))).astype(np.complex64)
    text = """HloModule m
ENTRY main {
  a = c64[4,3] parameter(0)
  qr = (c64[4,3], c64[3]) custom-call(a), custom_call_target="Qr"
  packed = c64[4,3] get-tuple-element(qr), index=0
  taus = c64[3] get-tuple-element(qr), index=1
  padded_zero = c64[] constant((0, 0))
  full = c64[4,4] pad(packed, padded_zero), padding=0_0x0_1
  ROOT q = c64[4,4] custom-call(full, taus), custom_call_target="ProductOfElementaryHouseholderReflectors"
}
"""
    (q,) = [xlapy.run_hlo(text, [a], backend="interpreter")[0]]
    np.testing.assert_allclose(q.conj().T @ q, np.eye(4), atol=2e-6)
    qn, _ = np.linalg.qr(a, mode="complete")
    np.testing.assert_allclose(q[:, :3], qn[:, :3], atol=2e-6)


def test_qr_custom_call_shapes_are_checked():
    bad = TF_QR.replace("(f32[2,5,3]{2,1,0}, f32[2,3]{1,0})", "(f32[2,5,3]{2,1,0}, f32[2,4]{1,0})"
                        ).replace("f32[2,3]{1,0} get", "f32[2,4]{1,0} get").replace(
        "f32[2,3]{1,0} %get", "f32[2,4]{1,0} %get")
    with pytest.raises(VerificationError, match="Qr result"):
        xlapy.run_hlo(bad, [np.zeros((2, 5, 3), np.float32)])


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5)])
def test_lu_decomposition_custom_call_matches_jax_conventions(shape):
    m, n = shape[-2:]
    k = min(m, n)
    batch = shape[:-2]
    dims = ",".join(map(str, shape))
    bk = ",".join(map(str, batch + (k,)))
    bm = ",".join(map(str, batch + (m,)))
    text = f"""HloModule tf_lu
ENTRY main {{
  a = f32[{dims}] parameter(0)
  ROOT lu = (f32[{dims}], s32[{bk}], s32[{bm}]) custom-call(a), custom_call_target="LuDecomposition"
}}
"""
    a = np.random.default_rng(7).normal(size=shape).astype(np.float32)
    lu, piv, perm = xlapy.run_hlo(text, [a], backend="interpreter")
    for i in np.ndindex(*batch):
        L = np.tril(lu[i], -1)[:, :k] + np.eye(m, k, dtype=np.float32)
        U = np.triu(lu[i])[:k, :]
        np.testing.assert_allclose(L @ U, a[i][perm[i]], atol=1e-5)    # a[perm] = L U
        rows = np.arange(m)
        for j, p in enumerate(piv[i]):                                  # 0-based swaps
            rows[[j, p]] = rows[[p, j]]
        np.testing.assert_array_equal(rows, perm[i])
    jax = pytest.importorskip("jax")
    lu_j, piv_j, perm_j = jax.lax.linalg.lu(a)
    np.testing.assert_array_equal(piv, np.asarray(piv_j))
    np.testing.assert_array_equal(perm, np.asarray(perm_j))
    np.testing.assert_allclose(lu, np.asarray(lu_j), atol=1e-5)


def test_legacy_qr_decomposition_custom_call():
    text = """HloModule old_tf_qr
ENTRY main {
  a = f32[5,3] parameter(0)
  ROOT qr = (f32[5,5], f32[5,3]) custom-call(a), custom_call_target="QrDecomposition"
}
"""
    a = np.random.default_rng(8).normal(size=(5, 3)).astype(np.float32)
    q, r = xlapy.run_hlo(text, [a], backend="cpu")
    qn, rn = np.linalg.qr(a, mode="complete")
    np.testing.assert_allclose(q, qn, atol=2e-6)
    np.testing.assert_allclose(r, rn, atol=2e-6)
