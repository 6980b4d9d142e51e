"""``lax``-level convolution and windowed reductions (``xlapy.frontend.lax_nn``) against
NumPy references, eagerly and under jit, and their gradient rules: adjoint identities,
float64 finite differences of the references, ``xlapy.grad``; JAX in ``peers`` tests."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.lax
from xlapy.errors import InvalidArgumentError
from xlapy.frontend import lax_nn as L
from xlapy.frontend import primitives_nn as PN
from xlapy.frontend.core import to_array
from nn_reference import fixed_rng  # noqa: F401  (autouse: same data in any order)
from nn_reference import (RNG, both, distinct, fd_directional, identity, np_chooser_grad,
                          np_conv, np_reduce_window, rand, window_slots)


# ------------------------------------------------------------------------ convolution
CONV_CASES = [
    # strides, padding, lhs_dilation, rhs_dilation
    ((1, 1), "VALID", (1, 1), (1, 1)),
    ((1, 1), "SAME", (1, 1), (1, 1)),
    ((2, 3), "SAME", (1, 1), (1, 1)),
    ((2, 1), "SAME_LOWER", (1, 1), (2, 1)),
    ((1, 2), "VALID", (1, 1), (2, 2)),
    ((1, 1), ((1, 2), (2, 0)), (1, 1), (1, 1)),
    ((2, 2), ((-1, 1), (0, -1)), (1, 1), (1, 1)),
    ((1, 1), ((0, 1), (1, 1)), (2, 1), (1, 1)),
    ((2, 1), ((2, 2), (1, 0)), (2, 3), (1, 2)),
]


@pytest.mark.parametrize("strides,padding,lhs_dil,rhs_dil", CONV_CASES)
def test_conv_matches_numpy_nhwc(strides, padding, lhs_dil, rhs_dil):
    x, w = rand(2, 6, 7, 3), rand(3, 2, 3, 4)
    dn = ("NHWC", "HWIO", "NHWC")
    got = both(lambda a, b: L.conv_general_dilated(a, b, strides, padding, lhs_dil, rhs_dil, dn),
               x, w)
    eff = [(k - 1) * d + 1 for k, d in zip(w.shape[:2], rhs_dil)]
    pads = (L.padtype_to_pads(x.shape[1:3], eff, strides, padding)
            if isinstance(padding, str) else padding)
    want = np_conv(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), strides, pads, lhs_dil,
                   rhs_dil).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_padtype_to_pads_follows_tensorflow():
    # in 7, window 3, stride 2: out 4, total padding 2 -> (1, 1); in 6: out 3, total 1 -> (0, 1)
    assert L.padtype_to_pads((7, 6), (3, 3), (2, 2), "SAME") == [(1, 1), (0, 1)]
    assert L.padtype_to_pads((6,), (4,), (1,), "SAME") == [(1, 2)]
    assert L.padtype_to_pads((6,), (4,), (1,), "SAME_LOWER") == [(2, 1)]
    assert L.padtype_to_pads((6,), (4,), (1,), "valid") == [(0, 0)]


@pytest.mark.parametrize("fgc,bgc", [(2, 1), (4, 1), (1, 2), (1, 3)])
def test_conv_feature_and_batch_groups(fgc, bgc):
    x, w = rand(6, 4, 5, 6), rand(12, 4 // fgc, 3, 2)
    pads = ((1, 0), (0, 1))
    got = both(lambda a, b: L.conv_general_dilated(a, b, (1, 2), pads, None, (1, 2), None,
                                                   fgc, bgc), x, w)
    want = np_conv(x, w, (1, 2), pads, None, (1, 2), fgc, bgc)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv_unusual_layouts_and_dimension_number_forms():
    x, w = rand(4, 5, 6, 2), rand(3, 6, 2, 4)        # CHWN input, HOWI kernel
    canon_x, canon_w = x.transpose(3, 0, 1, 2), w.transpose(1, 3, 0, 2)
    want = np_conv(canon_x, canon_w, (2, 1), ((1, 1), (0, 1))).transpose(3, 0, 2, 1)  # WNHC
    specs = ("CHWN", "HOWI", "WNHC")
    dn = L.conv_dimension_numbers(x.shape, w.shape, specs)
    assert dn == L.ConvDimensionNumbers((3, 0, 1, 2), (1, 3, 0, 2), (1, 3, 2, 0))
    hlo_dn = PN.conv_dn_from_specs(*dn)
    for form in (specs, dn, tuple(dn), hlo_dn, hlo_dn.to_text()):
        got = L.conv_general_dilated(x, w, (2, 1), ((1, 1), (0, 1)), dimension_numbers=form)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rank", [1, 3])
def test_conv_1d_and_3d(rank):
    sp = (7,) if rank == 1 else (4, 5, 3)
    ks = (3,) if rank == 1 else (2, 3, 2)
    x, w = rand(2, 3, *sp), rand(4, 3, *ks)
    strides = (2,) * rank
    got = both(lambda a, b: L.conv_general_dilated(a, b, strides, "SAME", rhs_dilation=(1,) * rank),
               x, w)
    pads = L.padtype_to_pads(sp, ks, strides, "SAME")
    np.testing.assert_allclose(got, np_conv(x, w, strides, pads), rtol=1e-5, atol=1e-5)


def test_conv_preferred_element_type_and_integers():
    import ml_dtypes
    x, w = rand(1, 2, 5), rand(3, 2, 2)
    xb, wb = x.astype(ml_dtypes.bfloat16), w.astype(ml_dtypes.bfloat16)
    out = L.conv_general_dilated(xb, wb, (1,), "VALID", preferred_element_type=np.float32)
    assert out.dtype == np.float32
    want = np_conv(xb.astype(np.float32), wb.astype(np.float32), (1,), [(0, 0)])
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)
    xi = RNG.integers(-100, 100, (1, 2, 5)).astype(np.int8)
    wi = RNG.integers(-100, 100, (3, 2, 2)).astype(np.int8)
    out = L.conv_general_dilated(xi, wi, (1,), "VALID", preferred_element_type=np.int32)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), np_conv(xi, wi, (1,), [(0, 0)]).astype(int))


def test_conv_errors_name_the_shapes():
    x, w = np.zeros((1, 5, 5, 3), np.float32), np.zeros((3, 3, 4, 8), np.float32)
    dn = ("NHWC", "HWIO", "NHWC")
    with pytest.raises(InvalidArgumentError, match=r"f32\[1,5,5,3\].*f32\[3,3,4,8\].*3 features"):
        L.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
    w = np.zeros((3, 3, 3, 8), np.float32)
    with pytest.raises(InvalidArgumentError, match="padding must be 'SAME'.*'FULL'"):
        L.conv_general_dilated(x, w, (1, 1), "FULL", dimension_numbers=dn)
    with pytest.raises(InvalidArgumentError, match="window_strides must have 2 entries"):
        L.conv_general_dilated(x, w, (1, 1, 1), "SAME", dimension_numbers=dn)
    with pytest.raises(InvalidArgumentError, match="same dtype"):
        L.conv_general_dilated(x, w.astype(np.int32), (1, 1), "SAME", dimension_numbers=dn)
    with pytest.raises(InvalidArgumentError, match="cannot both exceed 1"):
        L.conv_general_dilated(x, w, (1, 1), "SAME", None, None, dn, 3, 2)
    with pytest.raises(InvalidArgumentError, match="exactly once"):
        L.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWII", "NHWC"))
    with pytest.raises(InvalidArgumentError, match="lhs_dilation"):
        L.conv_general_dilated(x, w, (1, 1), "SAME", (2, 2), dimension_numbers=dn)


# ------------------------------------------------------------- convolution gradients
def _conv_rule(x, w, strides, pads, lhs_dil, rhs_dil, fgc=1, bgc=1, dn=None):
    """(primal, ct) -> the rule's (lhs_ct, rhs_ct), for canonical or given layouts."""
    hdn = PN.conv_dn_from_specs(*L.conv_dimension_numbers(x.shape, w.shape, dn))
    ans = L.conv_general_dilated(x, w, strides, pads, lhs_dil, rhs_dil, dn, fgc, bgc)
    ct = rand(*ans.shape)
    gx, gw = PN.conv_general_dilated_p.vjp(
        to_array(ct), ans, to_array(x), to_array(w), window_strides=strides, padding=pads,
        lhs_dilation=lhs_dil, rhs_dilation=rhs_dil, dimension_numbers=hdn,
        feature_group_count=fgc, batch_group_count=bgc, preferred_element_type=None)
    return ct, np.asarray(gx, np.float64), np.asarray(gw, np.float64)


GRAD_CASES = [
    ((1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, 1),
    ((2, 3), ((1, 2), (2, 0)), (1, 1), (1, 1), 1, 1),
    ((2, 1), ((-1, 1), (0, -1)), (1, 1), (1, 2), 1, 1),
    ((1, 2), ((1, 1), (0, 1)), (2, 1), (2, 1), 1, 1),
    ((2, 1), ((1, 1), (0, 1)), (1, 1), (1, 1), 2, 1),
    ((1, 2), ((0, 1), (1, 0)), (1, 1), (2, 1), 1, 2),
]


@pytest.mark.parametrize("strides,pads,lhs_dil,rhs_dil,fgc,bgc", GRAD_CASES)
def test_conv_vjp_is_the_adjoint(strides, pads, lhs_dil, rhs_dil, fgc, bgc):
    """conv is bilinear: <vjp_x(ct), x'> = <ct, conv(x', w)> and likewise for w."""
    x, w = rand(4, 4, 6, 7), rand(6, 4 // fgc, 3, 2)
    ct, gx, gw = _conv_rule(x, w, strides, pads, lhs_dil, rhs_dil, fgc, bgc)
    x2, w2 = rand(*x.shape), rand(*w.shape)
    want_x = np.sum(ct * np_conv(x2, w, strides, pads, lhs_dil, rhs_dil, fgc, bgc))
    want_w = np.sum(ct * np_conv(x, w2, strides, pads, lhs_dil, rhs_dil, fgc, bgc))
    np.testing.assert_allclose(np.sum(gx * x2), want_x, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.sum(gw * w2), want_w, rtol=1e-4, atol=1e-3)


def test_conv_grad_matches_float64_finite_differences():
    x, w = rand(2, 5, 6, 3), rand(3, 2, 3, 4)
    r = rand(2, 3, 5, 4)
    dn = ("NHWC", "HWIO", "NHWC")
    pads = ((1, 1), (1, 0))

    def loss(a, b):
        y = L.conv_general_dilated(a, b, (2, 1), pads, None, (1, 2), dn)
        return (y * y * r).sum()

    def ref(a, b):
        y = np_conv(a.transpose(0, 3, 1, 2), b.transpose(3, 2, 0, 1), (2, 1), pads, None,
                    (1, 2)).transpose(0, 2, 3, 1)
        return np.sum(y * y * r)

    gx, gw = xlapy.grad(loss, argnums=(0, 1))(x, w)
    jx, jw = xlapy.jit(xlapy.grad(loss, argnums=(0, 1)))(x, w)
    np.testing.assert_allclose(np.asarray(jx), np.asarray(gx), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(jw), np.asarray(gw), rtol=1e-5, atol=1e-4)
    dx, dw = rand(*x.shape), rand(*w.shape)
    np.testing.assert_allclose(np.sum(np.asarray(gx, np.float64) * dx),
                               fd_directional(lambda a: ref(a, w), x, dx), rtol=1e-3)
    np.testing.assert_allclose(np.sum(np.asarray(gw, np.float64) * dw),
                               fd_directional(lambda b: ref(x, b), w, dw), rtol=1e-3)


def test_conv_second_order_gradient():
    """d/dw of <grad_x loss, v> for loss = sum(conv(x, w)^2)/2 is linear in w's uses."""
    x, w, v = rand(1, 2, 6), rand(2, 2, 3), rand(1, 2, 6)

    def inner(a, b):
        return (L.conv_general_dilated(a, b, (1,), "SAME") ** 2).sum() / 2

    def outer(b):
        return (xlapy.grad(inner)(x, b) * v).sum()

    def ref(b):
        pads = L.padtype_to_pads((6,), (3,), (1,), "SAME")
        y = np_conv(x, b, (1,), pads)
        yv = np_conv(v, b, (1,), pads)
        return np.sum(y * yv)            # <J^T J x, v> = <conv(x), conv(v)>

    g = np.asarray(xlapy.grad(outer)(w), np.float64)
    d = rand(*w.shape)
    np.testing.assert_allclose(np.sum(g * d), fd_directional(ref, w, d), rtol=1e-3)


def test_conv_transpose_with_flipped_kernel_is_the_input_gradient():
    x, w = rand(1, 5, 6, 2), rand(3, 3, 2, 4)
    dn = ("NHWC", "HWIO", "NHWC")
    y = L.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=dn)
    ct = rand(*y.shape)
    _, vjp_fn = xlapy.vjp(lambda a: L.conv_general_dilated(a, w, (2, 2), "SAME",
                                                           dimension_numbers=dn), x)
    (gx,) = vjp_fn(ct)
    # Forward SAME, stride 2: 5x6 -> 3x3 with padding (1, 1) x (0, 1). The transpose pads
    # the dilated cotangent by (2, 1) in both dimensions, the true input gradient by (1, 1)
    # x (2, 1): the transpose has one extra leading row, and the same columns.
    t = L.conv_transpose(ct, w, (2, 2), "SAME", dimension_numbers=dn, transpose_kernel=True)
    assert t.shape == (1, 6, 6, 2)
    np.testing.assert_allclose(np.asarray(t)[:, 1:], np.asarray(gx), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ windowed reductions
WINDOW_CASES = [
    # window, strides, padding, base dilation, window dilation
    ((3, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ((3, 2), (2, 3), ((1, 2), (2, 0)), (1, 1), (1, 1)),
    ((2, 2), (1, 2), ((1, 1), (0, 1)), (2, 1), (1, 1)),
    ((3, 2), (2, 1), ((1, 2), (2, 0)), (1, 1), (2, 2)),
    ((2, 3), (1, 1), ((2, 0), (1, 1)), (2, 2), (1, 3)),
    ((1, 3), (1, 2), ((0, 0), (-1, 1)), (1, 1), (1, 1)),
]


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("wd,ws,pads,bd,wdil", WINDOW_CASES)
def test_reduce_window_matches_numpy(kind, wd, ws, pads, bd, wdil):
    x = rand(5, 6)
    got = both(lambda a: L.reduce_window(a, identity(kind), kind, wd, ws, pads, bd, wdil), x)
    np.testing.assert_allclose(got, np_reduce_window(x, kind, wd, ws, pads, bd, wdil),
                               rtol=1e-5, atol=1e-5)


def test_reduce_window_string_padding_and_init_values():
    x = rand(2, 5, 6, 3)
    win, st = (1, 3, 3, 1), (1, 2, 2, 1)
    pads = L.padtype_to_pads(x.shape, win, st, "SAME")
    got = L.reduce_window(x, -np.inf, "max", win, st, "SAME")
    np.testing.assert_allclose(np.asarray(got), np_reduce_window(x, "max", win, st, pads))
    # a non-identity init value is combined once into every window (XLA's evaluator)
    got = L.reduce_window(x, 1.5, "sum", win, st, "SAME")
    np.testing.assert_allclose(np.asarray(got), np_reduce_window(x, "sum", win, st, pads) + 1.5,
                               rtol=1e-5, atol=1e-5)
    got = L.reduce_window(x, 0.25, "max", win, st, "VALID")
    want = np.maximum(np_reduce_window(x, "max", win, st, [(0, 0)] * 4), 0.25)
    np.testing.assert_allclose(np.asarray(got), want)
    b = RNG.random((4, 5)) > 0.7
    got = L.reduce_window(b, False, "max", (2, 2), (1, 1), "VALID")
    want = np_reduce_window(b.astype(float), "max", (2, 2), (1, 1), [(0, 0)] * 2) > 0
    np.testing.assert_array_equal(np.asarray(got), want)
    xi = RNG.integers(-50, 50, (4, 5)).astype(np.int32)
    got = L.reduce_window(xi, 0, xlapy.lax.add, (2, 3), (2, 1), ((1, 0), (1, 1)))
    np.testing.assert_array_equal(np.asarray(got), np_reduce_window(
        xi, "sum", (2, 3), (2, 1), ((1, 0), (1, 1))).astype(np.int32))


def test_reduce_window_errors():
    x = np.zeros((4, 5), np.float32)
    with pytest.raises(InvalidArgumentError, match="'sum', 'max' or 'min'"):
        L.reduce_window(x, 0.0, "prod", (2, 2))
    with pytest.raises(InvalidArgumentError, match="window_dimensions must have 2 entries"):
        L.reduce_window(x, 0.0, "sum", (2,))
    with pytest.raises(InvalidArgumentError, match="padding must be"):
        L.reduce_window(x, 0.0, "sum", (2, 2), padding="FULL")
    with pytest.raises(InvalidArgumentError, match="init_value must be a scalar"):
        L.reduce_window(x, np.zeros(2), "sum", (2, 2))
    with pytest.raises(InvalidArgumentError, match="cannot sum booleans"):
        L.reduce_window(x > 0, False, "sum", (2, 2))


@pytest.mark.parametrize("wd,ws,pads,bd,wdil", WINDOW_CASES)
def test_reduce_window_sum_vjp_is_the_adjoint(wd, ws, pads, bd, wdil):
    x = rand(5, 6)
    ans = L.reduce_window_sum(x, wd, ws, pads, bd, wdil)
    ct = rand(*ans.shape)
    (g,) = PN.reduce_window_p["sum"].vjp(to_array(ct), ans, to_array(x), window_dimensions=wd,
                                         window_strides=ws, padding=pads, base_dilation=bd,
                                         window_dilation=wdil)
    assert g.shape == x.shape
    x2 = rand(5, 6)
    np.testing.assert_allclose(np.sum(np.asarray(g, np.float64) * x2),
                               np.sum(ct * np_reduce_window(x2, "sum", wd, ws, pads, bd, wdil)),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("wd,ws,pads,bd,wdil", WINDOW_CASES)
def test_reduce_window_max_min_vjp_picks_first_extreme(kind, wd, ws, pads, bd, wdil):
    x = RNG.integers(0, 3, (5, 6)).astype(np.float32)   # ties: the first in window order wins
    ans = L.reduce_window(x, identity(kind), kind, wd, ws, pads, bd, wdil)
    ct = rand(*ans.shape)
    (g,) = PN.reduce_window_p[kind].vjp(to_array(ct), ans, to_array(x), window_dimensions=wd,
                                        window_strides=ws, padding=pads, base_dilation=bd,
                                        window_dilation=wdil)
    np.testing.assert_allclose(np.asarray(g), np_chooser_grad(x, ct, kind, wd, ws, pads, bd,
                                                               wdil), rtol=1e-6, atol=1e-6)


def test_select_and_scatter_add_and_its_transpose():
    x = distinct(6, 5)
    wd, ws, pads = (3, 2), (2, 2), ((1, 1), (0, 1))
    src = rand(3, 3)
    got = both(lambda s, o: L.select_and_scatter_add(s, o, "ge", wd, ws, pads), src, x)
    np.testing.assert_allclose(got, np_chooser_grad(x, src, "max", wd, ws, pads), rtol=1e-6)
    got = L.select_and_scatter_add(src, x, xlapy.lax.le, wd, ws, pads)
    np.testing.assert_allclose(np.asarray(got), np_chooser_grad(x, src, "min", wd, ws, pads),
                               rtol=1e-6)
    # its transpose gathers the cotangent at each window's chosen element
    ct = rand(6, 5)
    g_src, g_op = PN.select_and_scatter_add_p.vjp(
        to_array(ct), None, to_array(src), to_array(x), select_kind="ge",
        window_dimensions=wd, window_strides=ws, padding=pads)
    assert g_op is None
    want = np.zeros((3, 3))
    for o, slots, _ in window_slots(x.shape, wd, ws, pads, (1, 1), (1, 1)):
        want[o] = ct[max(slots, key=lambda s: x[s])]
    np.testing.assert_allclose(np.asarray(g_src), want, rtol=1e-6)
    with pytest.raises(InvalidArgumentError, match="window output shape"):
        L.select_and_scatter_add(rand(2, 2), x, "ge", wd, ws, pads)


# ----------------------------------------------------------------------------- peers
@pytest.mark.peers
@pytest.mark.parametrize("strides,pads,lhs_dil,rhs_dil,fgc,bgc", GRAD_CASES[:2] + GRAD_CASES[3:])
def test_conv_vjp_matches_jax(strides, pads, lhs_dil, rhs_dil, fgc, bgc):
    # GRAD_CASES[2] has negative padding, where jax's CPU convolution reads out of bounds
    import jax
    dn = ("NHWC", "HWIO", "NHWC")
    x, w = rand(4, 6, 7, 4), rand(3, 2, 4 // fgc, 6)

    def f(a, b):
        return jax.lax.conv_general_dilated(a, b, strides, pads, lhs_dil, rhs_dil, dn, fgc, bgc)

    ans, vjp = jax.vjp(f, x, w)
    ct, gx, gw = _conv_rule(x, w, strides, pads, lhs_dil, rhs_dil, fgc, bgc, dn)
    jx, jw = vjp(ct)
    np.testing.assert_allclose(gx, jx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gw, jw, rtol=1e-4, atol=1e-4)


@pytest.mark.peers
@pytest.mark.parametrize("padding", ["SAME", "VALID", ((1, 2), (0, 1))])
@pytest.mark.parametrize("transpose_kernel", [False, True])
def test_conv_transpose_matches_jax(padding, transpose_kernel):
    import jax
    x, w = rand(2, 4, 5, 3), rand(3, 2, 3, 3)
    got = L.conv_transpose(x, w, (2, 3), padding, (1, 2), transpose_kernel=transpose_kernel)
    want = jax.lax.conv_transpose(x, w, (2, 3), padding, (1, 2),
                                  transpose_kernel=transpose_kernel)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


@pytest.mark.peers
@pytest.mark.parametrize("kind", ["sum", "max"])
def test_window_gradients_match_jax(kind):
    import jax
    x = rand(2, 7, 6, 3)
    win, st, pads, bd = (1, 3, 2, 1), (1, 2, 1, 1), ((0, 0), (1, 2), (0, 1), (0, 0)), (1, 2, 1, 1)
    comp = {"sum": jax.lax.add, "max": jax.lax.max}[kind]

    def loss_jax(a):
        return (jax.lax.reduce_window(a, identity(kind), comp, win, st, pads, bd) ** 2).sum()

    def loss(a):
        return (L.reduce_window(a, identity(kind), kind, win, st, pads, bd) ** 2).sum()

    np.testing.assert_allclose(np.asarray(xlapy.grad(loss)(x)), jax.grad(loss_jax)(x),
                               rtol=1e-5, atol=1e-5)
