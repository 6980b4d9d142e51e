"""Interpreter semantics of the linalg family: dot, convolution, fft, cholesky,
triangular-solve and the batch-norm ops.

Each case builds one instruction directly and calls its handler on NumPy values.
Convolutions are checked against a direct loop over output elements and kernel taps
that follows XLA's definition literally (the test oracle).
"""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from xlapy.backends.interpreter import HANDLERS, Evaluator
from xlapy.errors import ShapeError
from xlapy.hlo.attrs import ConvDimensionNumbers, Window
from xlapy.hlo.ir import HloInstruction
from xlapy.hlo.shape import Shape
from xlapy.hlo.types import from_dtype

RNG = np.random.default_rng(0)


def run(opcode: str, result: Shape, operands: list, **attrs):
    """Evaluate one ``opcode`` instruction on ``operands`` (NumPy values)."""
    params = [HloInstruction("parameter", Shape.array(from_dtype(np.asarray(v).dtype),
                                                      np.shape(v)), parameter_number=i)
              for i, v in enumerate(operands)]
    instr = HloInstruction(opcode, result, params, attrs)
    return HANDLERS[opcode](Evaluator(), instr, [np.asarray(v) for v in operands])


def arr(et: str, dims) -> Shape:
    return Shape.array(et, dims)


# ------------------------------------------------------------------------------------- dot

def dot(lhs, rhs, et, out_dims, lb=(), rb=(), lc=(), rc=()):
    return run("dot", arr(et, out_dims), [lhs, rhs], lhs_batch_dims=lb, rhs_batch_dims=rb,
               lhs_contracting_dims=lc, rhs_contracting_dims=rc)


def test_dot_matmul_and_vector():
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((4, 5)).astype(np.float32)
    out = dot(a, b, "f32", (3, 5), lc=(1,), rc=(0,))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-6)
    v = RNG.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(dot(a, v, "f32", (3,), lc=(1,), rc=(0,)), a @ v, rtol=1e-5)


def test_dot_outer_product_no_contraction():
    a, b = np.arange(3.0), np.arange(4.0)
    np.testing.assert_array_equal(dot(a, b, "f64", (3, 4)), np.outer(a, b))


def test_dot_batched_with_batch_dims_not_leading():
    a = RNG.standard_normal((4, 2, 3)).astype(np.float32)     # [k, batch, m]
    b = RNG.standard_normal((5, 4, 2)).astype(np.float32)     # [n, k, batch]
    out = dot(a, b, "f32", (2, 3, 5), lb=(1,), rb=(2,), lc=(0,), rc=(1,))
    np.testing.assert_allclose(out, np.einsum("kbm,nkb->bmn", a, b), rtol=1e-5, atol=1e-5)


def test_dot_multiple_contracting_and_batch_dims():
    a = RNG.standard_normal((2, 3, 4, 5, 6))    # b0 c0 m b1 c1
    b = RNG.standard_normal((6, 5, 7, 2, 3))    # c1 b1 n b0 c0
    out = dot(a, b, "f64", (2, 5, 4, 7), lb=(0, 3), rb=(3, 1), lc=(1, 4), rc=(4, 0))
    np.testing.assert_allclose(out, np.einsum("xcmyd,dynxc->xymn", a, b), rtol=1e-12)


def test_dot_int8_to_int32_wraps():
    a = np.full((2, 300), 127, np.int8)
    b = np.full((300, 2), -128, np.int8)
    out = dot(a, b, "s32", (2, 2), lc=(1,), rc=(0,))
    assert out.dtype == np.int32
    assert (out == 127 * -128 * 300).all()
    big = np.full((1, 3), 2 ** 30, np.int32)
    wrapped = dot(big, big.T.copy(), "s32", (1, 1), lc=(1,), rc=(0,))
    assert wrapped[0, 0] == 0                 # 3 * 2^60 wraps to 0 modulo 2^32
    odd = np.array([[2 ** 31 - 1, 2]], np.int32)
    wrapped = dot(odd, np.array([[3], [1]], np.int32), "s32", (1, 1), lc=(1,), rc=(0,))
    assert wrapped[0, 0] == np.int32(((3 * (2 ** 31 - 1) + 2 + 2 ** 31) % 2 ** 32) - 2 ** 31)


def test_dot_uint8_result_wraps():
    a = np.array([[200, 100]], np.uint8)
    b = np.array([[2], [1]], np.uint8)
    assert dot(a, b, "u8", (1, 1), lc=(1,), rc=(0,))[0, 0] == (400 + 100) % 256


def test_dot_bf16_operands_f32_result_and_bf16_result():
    a = RNG.standard_normal((4, 64)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((64, 3)).astype(ml_dtypes.bfloat16)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    wide = dot(a, b, "f32", (4, 3), lc=(1,), rc=(0,))
    assert wide.dtype == np.float32
    np.testing.assert_allclose(wide, exact, rtol=1e-5, atol=1e-5)
    narrow = dot(a, b, "bf16", (4, 3), lc=(1,), rc=(0,))
    assert narrow.dtype == ml_dtypes.bfloat16
    # accumulated in f32 and rounded once: equal to the rounded exact value (or a neighbour)
    np.testing.assert_allclose(narrow.astype(np.float64), exact, rtol=2 ** -7, atol=1e-2)


def test_dot_complex_and_pred():
    a = (RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))).astype(np.complex64)
    b = (RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))).astype(np.complex64)
    np.testing.assert_allclose(dot(a, b, "c64", (2, 2), lc=(1,), rc=(0,)), a @ b, rtol=1e-5)
    p = np.array([[True, False], [False, False]])
    q = np.array([[False, True], [True, True]])
    out = dot(p, q, "pred", (2, 2), lc=(1,), rc=(0,))
    np.testing.assert_array_equal(out, [[False, True], [False, False]])


def test_dot_rejects_mismatched_contracting_sizes():
    with pytest.raises(ShapeError, match="contracting"):
        dot(np.zeros((2, 3)), np.zeros((4, 2)), "f64", (2, 2), lc=(1,), rc=(0,))


# ------------------------------------------------------------------------------ convolution

def naive_conv(lhs, rhs, labels: str, window: Window, fgc: int = 1, bgc: int = 1,
               acc=np.float64):
    """XLA's convolution by its definition: one output element and one tap at a time."""
    dn = ConvDimensionNumbers.from_string(labels)
    nsp = len(dn.input_spatial)
    wd = window.dims
    n_in = lhs.shape[dn.input_batch]
    o_out = rhs.shape[dn.kernel_output_feature]
    c_grp = rhs.shape[dn.kernel_input_feature]
    in_sp = [lhs.shape[d] for d in dn.input_spatial]
    k_sp = [rhs.shape[d] for d in dn.kernel_spatial]
    out_sp = []
    for s in range(nsp):
        dilated = (in_sp[s] - 1) * wd[s].lhs_dilate + 1 if in_sp[s] else 0
        padded = dilated + wd[s].pad_lo + wd[s].pad_hi
        eff = (k_sp[s] - 1) * wd[s].rhs_dilate + 1
        out_sp.append(max(0, (padded - eff) // wd[s].stride + 1) if padded >= eff else 0)
    n_out = n_in // bgc
    out_shape = [0] * (nsp + 2)
    out_shape[dn.output_batch], out_shape[dn.output_feature] = n_out, o_out
    for s, d in enumerate(dn.output_spatial):
        out_shape[d] = out_sp[s]
    out = np.zeros(out_shape, dtype=acc)
    o_per_fg, o_per_bg = o_out // fgc, o_out // bgc
    for nb, o in itertools.product(range(n_out), range(o_out)):
        g_f, g_b = o // o_per_fg, o // o_per_bg
        n = g_b * n_out + nb
        for pos in itertools.product(*[range(v) for v in out_sp]):
            total = acc(0)
            for ci in range(c_grp):
                c = g_f * c_grp + ci
                for tap in itertools.product(*[range(v) for v in k_sp]):
                    in_idx, ok = [], True
                    for s in range(nsp):
                        x = pos[s] * wd[s].stride + tap[s] * wd[s].rhs_dilate - wd[s].pad_lo
                        if x % wd[s].lhs_dilate or not 0 <= x // wd[s].lhs_dilate < in_sp[s]:
                            ok = False
                            break
                        in_idx.append(x // wd[s].lhs_dilate)
                    if not ok:
                        continue
                    li = [0] * (nsp + 2)
                    li[dn.input_batch], li[dn.input_feature] = n, c
                    ki = [0] * (nsp + 2)
                    ki[dn.kernel_input_feature], ki[dn.kernel_output_feature] = ci, o
                    for s in range(nsp):
                        li[dn.input_spatial[s]] = in_idx[s]
                        t = k_sp[s] - 1 - tap[s] if wd[s].rhs_reversal else tap[s]
                        ki[dn.kernel_spatial[s]] = t
                    total += acc(lhs[tuple(li)]) * acc(rhs[tuple(ki)])
            oi = [0] * (nsp + 2)
            oi[dn.output_batch], oi[dn.output_feature] = nb, o
            for s, d in enumerate(dn.output_spatial):
                oi[d] = pos[s]
            out[tuple(oi)] = total
    return out


def _dims_for(labels: str, part: int, sizes: dict[str, int], spatial: list[int]):
    spec = labels.replace("->", "_").split("_")[part]
    return tuple(spatial[int(ch)] if ch.isdigit() else sizes[ch] for ch in spec)


# (labels, input spatial, kernel spatial, window kwargs, feature groups, batch groups)
CONV_CASES = [
    ("b0f_0io->b0f", [7], [3], {}, 1, 1),
    ("bf0_oi0->bf0", [9], [2], dict(stride=(2,), padding=((1, 2),)), 1, 1),
    ("b0f_0io->b0f", [6], [3], dict(padding=((-1, 2),), lhs_dilate=(2,)), 1, 1),
    ("f0b_i0o->0bf", [8], [3], dict(rhs_dilate=(2,), rhs_reversal=(True,)), 1, 1),
    ("b01f_01io->b01f", [5, 6], [3, 2], {}, 1, 1),
    ("bf01_oi01->bf01", [6, 5], [3, 3], dict(stride=(2, 1), padding=((1, 1), (0, 2))), 1, 1),
    ("b01f_01io->b01f", [5, 5], [3, 3], dict(padding=((2, 2), (2, 2)), lhs_dilate=(2, 2)), 1, 1),
    ("b01f_01io->b01f", [7, 6], [2, 3], dict(rhs_dilate=(2, 3), stride=(2, 2)), 1, 1),
    ("bf01_oi01->bf01", [6, 6], [3, 3], dict(padding=((-1, -1), (1, -2))), 1, 1),
    ("b01f_01io->b01f", [5, 4], [2, 2], dict(rhs_reversal=(True, False)), 1, 1),
    ("01bf_o01i->f01b", [5, 4], [2, 3], dict(padding=((1, 0), (0, 1))), 1, 1),
    ("b01f_01io->b01f", [5, 5], [3, 3], dict(padding=((1, 1), (1, 1))), 3, 1),   # grouped
    ("bf01_oi01->bf01", [4, 5], [2, 2], {}, 4, 1),                                # depthwise
    ("f01b_i01o->01bf", [6, 6], [3, 3], dict(padding=((1, 1), (1, 1))), 1, 3),   # filter grad
    ("bf01_oi01->bf01", [4, 4], [2, 2], dict(stride=(2, 2)), 1, 2),
    ("b012f_012io->b012f", [4, 3, 5], [2, 2, 3], dict(padding=((1, 0), (0, 1), (1, 1))), 1, 1),
    ("bf012_oi012->bf012", [5, 4, 4], [3, 2, 2],
     dict(stride=(2, 1, 2), lhs_dilate=(1, 2, 1), rhs_dilate=(1, 1, 2),
          rhs_reversal=(False, True, True), padding=((0, 1), (1, 1), (2, 0))), 2, 1),
    ("b01f_01io->b01f", [3, 3], [5, 5], {}, 1, 1),       # window larger than input: empty
]


@pytest.mark.parametrize("labels,in_sp,k_sp,win,fgc,bgc", CONV_CASES)
def test_convolution_matches_naive_loop(labels, in_sp, k_sp, win, fgc, bgc):
    n_out, c_grp, o_out = 2, 2, 2 * fgc * bgc
    sizes_in = {"b": n_out * bgc, "f": c_grp * fgc}
    sizes_k = {"i": c_grp, "o": o_out}
    lhs = RNG.standard_normal(_dims_for(labels, 0, sizes_in, in_sp)).astype(np.float32)
    rhs = RNG.standard_normal(_dims_for(labels, 1, sizes_k, k_sp)).astype(np.float32)
    window = Window.make(k_sp, **win)
    expected = naive_conv(lhs, rhs, labels, window, fgc, bgc).astype(np.float32)
    out = run("convolution", arr("f32", expected.shape), [lhs, rhs], window=window,
              dim_labels=ConvDimensionNumbers.from_string(labels), feature_group_count=fgc,
              batch_group_count=bgc)
    assert out.dtype == np.float32 and out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_convolution_int8_to_int32_and_s32_wrap():
    lhs = RNG.integers(-128, 128, (1, 6, 3)).astype(np.int8)
    rhs = RNG.integers(-128, 128, (3, 3, 4)).astype(np.int8)
    window = Window.make([3], padding=((1, 1),))
    labels = "b0f_0io->b0f"
    expected = naive_conv(lhs, rhs, labels, window, acc=np.int64)
    out = run("convolution", arr("s32", expected.shape), [lhs, rhs], window=window,
              dim_labels=ConvDimensionNumbers.from_string(labels))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, expected)
    big = np.full((1, 2, 1), 2 ** 30, np.int32)
    wk = np.full((2, 1, 1), 2, np.int32)
    wrapped = run("convolution", arr("s32", (1, 1, 1)), [big, wk], window=Window.make([2]),
                  dim_labels=ConvDimensionNumbers.from_string(labels))
    assert wrapped[0, 0, 0] == 0          # 2 * 2^31 wraps to 0


def test_convolution_bf16_rounds_once():
    lhs = RNG.standard_normal((1, 8, 8, 4)).astype(ml_dtypes.bfloat16)
    rhs = RNG.standard_normal((3, 3, 4, 2)).astype(ml_dtypes.bfloat16)
    window = Window.make([3, 3])
    labels = "b01f_01io->b01f"
    exact = naive_conv(lhs.astype(np.float64), rhs.astype(np.float64), labels, window)
    out = run("convolution", arr("bf16", exact.shape), [lhs, rhs], window=window,
              dim_labels=ConvDimensionNumbers.from_string(labels))
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out, exact.astype(ml_dtypes.bfloat16))


def test_convolution_shape_mismatch_is_an_error():
    with pytest.raises(ShapeError, match="do not match"):
        run("convolution", arr("f32", (1, 4, 1)), [np.zeros((1, 5, 1), np.float32),
                                                  np.zeros((3, 1, 1), np.float32)],
            window=Window.make([3]), dim_labels=ConvDimensionNumbers.from_string("b0f_0io->b0f"))


# --------------------------------------------------------------------------------------- fft

def test_fft_and_ifft_c64_over_trailing_dims():
    x = (RNG.standard_normal((3, 4, 8)) + 1j * RNG.standard_normal((3, 4, 8))).astype(np.complex64)
    out = run("fft", arr("c64", x.shape), [x], fft_type="FFT", fft_length=(4, 8))
    assert out.dtype == np.complex64
    np.testing.assert_allclose(out, np.fft.fft2(x), rtol=1e-4, atol=1e-4)
    inv = run("fft", arr("c64", x.shape), [x], fft_type="IFFT", fft_length=(8,))
    np.testing.assert_allclose(inv, np.fft.ifft(x, axis=-1), rtol=1e-4, atol=1e-5)


def test_rfft_and_irfft():
    x = RNG.standard_normal((2, 6, 10)).astype(np.float32)
    out = run("fft", arr("c64", (2, 6, 6)), [x], fft_type="RFFT", fft_length=(6, 10))
    np.testing.assert_allclose(out, np.fft.rfft2(x), rtol=1e-4, atol=1e-4)
    back = run("fft", arr("f32", (2, 6, 10)), [out], fft_type="IRFFT", fft_length=(6, 10))
    assert back.dtype == np.float32
    np.testing.assert_allclose(back, x, rtol=1e-4, atol=1e-5)
    odd = run("fft", arr("f64", (9,)), [np.fft.rfft(np.arange(9.0))], fft_type="IRFFT",
              fft_length=(9,))
    np.testing.assert_allclose(odd, np.arange(9.0), atol=1e-12)


# -------------------------------------------------------------------- cholesky / trsm

def spd(n: int, batch=(), dtype=np.float64):
    a = RNG.standard_normal(batch + (n, n))
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * RNG.standard_normal(batch + (n, n))
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_reads_one_triangle(lower):
    a = spd(5, (3,))
    garbage = a.copy()
    mask = np.triu(np.ones((5, 5), bool), 1) if lower else np.tril(np.ones((5, 5), bool), -1)
    garbage[:, mask] = 1e6
    out = run("cholesky", arr("f64", a.shape), [garbage], lower=lower)
    ref = np.linalg.cholesky(a)
    np.testing.assert_allclose(out, ref if lower else np.swapaxes(ref, -1, -2), rtol=1e-12)


def test_cholesky_complex_upper_and_non_pd_gives_nan():
    a = spd(4, dtype=np.complex64)
    out = run("cholesky", arr("c64", a.shape), [a], lower=False)
    np.testing.assert_allclose(np.conj(out.T) @ out, a, rtol=1e-4, atol=1e-4)
    assert np.allclose(np.tril(out, -1), 0)
    bad = np.stack([spd(3), -np.eye(3)]).astype(np.float32)
    res = run("cholesky", arr("f32", bad.shape), [bad], lower=True)
    assert np.isfinite(res[0]).all() and np.isnan(res[1]).all()


@pytest.mark.parametrize("left,lower,unit,transpose", list(itertools.product(
    [True, False], [True, False], [True, False], ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])))
def test_triangular_solve_all_flags(left, lower, unit, transpose):
    m, n = 4, 3
    a = RNG.standard_normal((2, m if left else n, m if left else n)) + 4 * np.eye(m if left else n)
    a = (a + 1j * RNG.standard_normal(a.shape)).astype(np.complex128)
    b = (RNG.standard_normal((2, m, n)) + 1j * RNG.standard_normal((2, m, n)))
    x = run("triangular-solve", arr("c128", b.shape), [a, b], left_side=left, lower=lower,
            unit_diagonal=unit, transpose_a=transpose)
    tri = np.tril(a) if lower else np.triu(a)
    if unit:
        idx = np.arange(tri.shape[-1])
        tri[:, idx, idx] = 1
    op = {"NO_TRANSPOSE": tri, "TRANSPOSE": np.swapaxes(tri, -1, -2),
          "ADJOINT": np.conj(np.swapaxes(tri, -1, -2))}[transpose]
    recon = op @ x if left else x @ op
    np.testing.assert_allclose(recon, b, rtol=1e-10, atol=1e-10)


def test_triangular_solve_f32_dtype():
    a = np.tril(RNG.standard_normal((3, 3))).astype(np.float32) + 3 * np.eye(3, dtype=np.float32)
    b = RNG.standard_normal((3, 2)).astype(np.float32)
    x = run("triangular-solve", arr("f32", (3, 2)), [a, b], left_side=True, lower=True,
            unit_diagonal=False, transpose_a="NO_TRANSPOSE")
    assert x.dtype == np.float32
    np.testing.assert_allclose(a @ x, b, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------- batch norm

def bn_training_ref(x, scale, offset, eps, fi):
    axes = tuple(d for d in range(x.ndim) if d != fi)
    mean = x.mean(axis=axes)
    var = x.var(axis=axes)
    shp = [1] * x.ndim
    shp[fi] = -1
    y = (x - mean.reshape(shp)) / np.sqrt(var.reshape(shp) + eps) * scale.reshape(shp) \
        + offset.reshape(shp)
    return y, mean, var


@pytest.mark.parametrize("fi", [1, 3])
def test_batch_norm_training(fi):
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32) * 3 + 1
    c = x.shape[fi]
    scale, offset = RNG.standard_normal(c).astype(np.float32), RNG.standard_normal(c).astype(np.float32)
    shapes = Shape.tuple([arr("f32", x.shape), arr("f32", (c,)), arr("f32", (c,))])
    y, mean, var = run("batch-norm-training", shapes, [x, scale, offset], epsilon=1e-3,
                       feature_index=fi)
    ry, rmean, rvar = bn_training_ref(x.astype(np.float64), scale, offset, 1e-3, fi)
    assert y.dtype == mean.dtype == var.dtype == np.float32
    np.testing.assert_allclose(y, ry, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mean, rmean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, rvar, rtol=1e-5, atol=1e-5)


def test_batch_norm_inference():
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    scale, offset = np.array([1.0, 2.0, 0.5], np.float32), np.array([0.0, 1.0, -1.0], np.float32)
    mean, var = np.array([0.1, -0.2, 0.3], np.float32), np.array([1.0, 4.0, 0.25], np.float32)
    y = run("batch-norm-inference", arr("f32", x.shape), [x, scale, offset, mean, var],
            epsilon=0.0, feature_index=1)
    ref = (x.astype(np.float64) - mean) / np.sqrt(var.astype(np.float64)) * scale + offset
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)


def test_batch_norm_grad_matches_finite_differences():
    x = RNG.standard_normal((3, 2, 4))
    scale, offset = np.array([1.5, -0.7]), np.array([0.2, 0.1])
    dy = RNG.standard_normal(x.shape)
    eps = 1e-2

    def loss(xv, sv, ov):
        return (dy * bn_training_ref(xv, sv, ov, eps, 1)[0]).sum()

    _, mean, var = bn_training_ref(x, scale, offset, eps, 1)
    shapes = Shape.tuple([arr("f64", x.shape), arr("f64", (2,)), arr("f64", (2,))])
    gx, gs, go = run("batch-norm-grad", shapes, [x, scale, mean, var, dy], epsilon=eps,
                     feature_index=1)
    h = 1e-6
    num_gx = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        num_gx[idx] = (loss(x + e, scale, offset) - loss(x - e, scale, offset)) / (2 * h)
    num_gs = [(loss(x, scale + h * np.eye(2)[k], offset)
               - loss(x, scale - h * np.eye(2)[k], offset)) / (2 * h) for k in range(2)]
    np.testing.assert_allclose(gx, num_gx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gs, num_gs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(go, dy.sum(axis=(0, 2)), rtol=1e-12)


# ------------------------------------------------------------------------- parsed HLO text

def test_parsed_module_with_linalg_ops():
    from xlapy.backends.interpreter import evaluate_module
    from xlapy.hlo import parse_module
    text = """
HloModule linalg_e2e

ENTRY main {
  x = f32[1,5,5,2]{3,2,1,0} parameter(0)
  w = f32[3,3,2,4]{3,2,1,0} parameter(1)
  a = f32[3,3]{1,0} parameter(2)
  conv = f32[1,3,3,4]{3,2,1,0} convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  chol = f32[3,3]{1,0} cholesky(a), lower=true
  ts = f32[3,3]{1,0} triangular-solve(chol, a), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  d = f32[3,3]{1,0} dot(chol, ts), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  c = c64[3,2]{1,0} fft(d), fft_type=RFFT, fft_length={3,3}
  ROOT t = (f32[1,3,3,4]{3,2,1,0}, f32[3,3]{1,0}, c64[3,2]{1,0}) tuple(conv, d, c)
}
"""
    x = RNG.standard_normal((1, 5, 5, 2)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 2, 4)).astype(np.float32)
    a = spd(3).astype(np.float32)
    conv, d, c = evaluate_module(parse_module(text), [x, w, a])
    expected = naive_conv(x, w, "b01f_01io->b01f",
                          Window.make([3, 3], stride=(2, 2), padding=((1, 1), (1, 1))))
    np.testing.assert_allclose(conv, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d, a, rtol=1e-4, atol=1e-4)          # L (L^-1 a) = a
    np.testing.assert_allclose(c, np.fft.rfft2(d), rtol=1e-4, atol=1e-4)


def test_parsed_batch_norm_training():
    from xlapy.backends.interpreter import evaluate_module
    from xlapy.hlo import parse_module
    text = """
HloModule bn

ENTRY main {
  x = f32[4,3]{1,0} parameter(0)
  s = f32[3]{0} parameter(1)
  o = f32[3]{0} parameter(2)
  ROOT bn = (f32[4,3]{1,0}, f32[3]{0}, f32[3]{0}) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
}
"""
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    s, o = np.ones(3, np.float32), np.zeros(3, np.float32)
    y, mean, var = evaluate_module(parse_module(text), [x, s, o])
    ry, rmean, rvar = bn_training_ref(x.astype(np.float64), s, o, 1e-3, 1)
    np.testing.assert_allclose(y, ry, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(var, rvar, rtol=1e-5, atol=1e-6)
