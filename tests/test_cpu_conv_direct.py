"""The generated convolution kernels (xlapy/backends/cpu/conv_kernels.py, chosen by
conv_direct.py) against the interpreter: forward / input-gradient convolutions and NHWC
weight gradients over odd sizes, strides, dilations, padding (negative too), window
reversal, 1-D, batch 1, output channels that do not fill the vector lanes, the pool's
threads, operands in other layouts, and non-finite values next to padding (the products
the kernels leave out must still give XLA's NaN)."""
from __future__ import annotations

import numpy as np
import pytest

from test_cpu_conv import check, make_conv, operands_for
from xlapy.backends.cpu import conv, conv_direct, conv_kernels
from xlapy.backends.interpreter import Evaluator
from xlapy.hlo.attrs import Window
from xlapy.hlo.shape import Layout, Shape

W = Window.make

# (lhs dims, kernel dims, dim_labels, window): NHWC convolutions the direct kernel takes
FORWARD = [
    ((2, 8, 8, 3), (3, 3, 3, 16), "b01f_01io->b01f", W((3, 3), padding=((1, 1), (1, 1)))),
    ((1, 7, 9, 5), (3, 3, 5, 19), "b01f_01io->b01f", W((3, 3))),
    ((2, 9, 11, 4), (3, 2, 4, 10), "b01f_01io->b01f",
     W((3, 2), stride=(2, 1), padding=((1, 1), (0, 1)), rhs_dilate=(2, 2))),
    ((2, 5, 30, 6), (3, 3, 6, 64), "b01f_01io->b01f", W((3, 3), padding=((2, 2), (2, 2)))),
    ((2, 9, 40, 3), (5, 5, 3, 33), "b01f_01io->b01f",
     W((5, 5), stride=(2, 3), padding=((3, 1), (1, 2)))),
    ((2, 8, 12, 7), (3, 3, 7, 24), "b01f_01io->b01f",
     W((3, 3), padding=((-1, 2), (2, -1)), rhs_reversal=(True, False))),
    ((2, 6, 13, 1), (2, 3, 1, 9), "b01f_01io->b01f", W((2, 3), stride=(1, 2))),
    ((3, 17, 4), (5, 4, 12), "b0f_0io->b0f", W((5,), padding=((2, 2),))),
    ((2, 23, 5), (3, 5, 16), "b0f_0io->b0f", W((3,), stride=(3,), rhs_dilate=(2,))),
    ((2, 7, 7, 8), (3, 3, 16, 8), "b01f_01oi->b01f", W((3, 3), padding=((1, 1), (1, 1)))),
    # borders wider than the static tiles: column by column
    ((1, 9, 5), (3, 5, 64), "b0f_0io->b0f", W((3,), padding=((14, 13),))),
    # 64 output channels (six-column tiles): 15 columns as three tiles of five, the outer two
    # holding a border column each; 13 interior columns as 5 + 4 + 4
    ((2, 15, 15, 8), (3, 3, 8, 64), "b01f_01io->b01f", W((3, 3), padding=((1, 1), (1, 1)))),
    ((2, 15, 15, 8), (3, 3, 8, 64), "b01f_01io->b01f", W((3, 3))),
]

# weight gradients in autodiff's labels on NHWC activations (images are the contracted
# "feature", channels the "batch")
WEIGHT_GRADS = [
    ((3, 9, 9, 5), (3, 7, 7, 16), "f01b_i01o->01bf", W((7, 7))),
    ((2, 8, 8, 3), (2, 8, 8, 32), "f01b_i01o->01bf", W((8, 8), padding=((1, 1), (1, 1)))),
    ((1, 7, 6, 4), (1, 5, 4, 19), "f01b_i01o->01bf", W((5, 4), padding=((0, 1), (1, 0)))),
    ((2, 9, 9, 3), (2, 4, 4, 10), "f01b_i01o->01bf", W((4, 4), rhs_dilate=(2, 2))),
    ((2, 11, 10, 6), (2, 5, 5, 12), "f01b_i01o->01bf",
     W((5, 5), stride=(2, 1), padding=((1, 1), (0, 1)), rhs_dilate=(2, 2))),
    ((4, 6, 3), (4, 4, 24), "f0b_i0o->0bf", W((4,), padding=((1, 2),))),
    ((2, 12, 12, 7), (2, 10, 10, 40), "f01b_i01o->01bf", W((10, 10), padding=((0, 0), (0, 0)))),
]


def _ids(c) -> str:
    return f"{c[0]}-{c[1]}-{c[2]}-{c[3].to_text()}"


@pytest.mark.parametrize("case", FORWARD, ids=_ids)
def test_forward(case):
    instr = make_conv(*case)
    assert conv.make_convolution_thunk(instr).strategy == "direct"
    check(instr, *operands_for(instr, np.random.default_rng(len(case[0]))))


@pytest.mark.parametrize("case", WEIGHT_GRADS, ids=_ids)
def test_weight_gradient(case):
    instr = make_conv(*case)
    assert conv.make_convolution_thunk(instr).strategy == "direct_wgrad"
    check(instr, *operands_for(instr, np.random.default_rng(len(case[0]))))


@pytest.mark.parametrize("case", [
    ((8, 16, 16, 16), (3, 3, 16, 32), "b01f_01io->b01f", W((3, 3), padding=((1, 1), (1, 1)))),
    ((16, 16, 16, 8), (16, 14, 14, 32), "f01b_i01o->01bf", W((14, 14))),
], ids=_ids)
def test_split_over_the_pool(case, monkeypatch):
    monkeypatch.setattr(conv_direct, "cores", lambda: 2)
    instr = make_conv(*case)
    thunk = conv.make_convolution_thunk(instr)
    assert thunk.direct.parallel and len(thunk.direct.items) > 2
    check(instr, *operands_for(instr, np.random.default_rng(3)))


def test_declined_shapes_take_the_library_path():
    few_lanes = make_conv((2, 8, 8, 3), (3, 3, 3, 4), "b01f_01io->b01f", W((3, 3)))
    assert conv.make_convolution_thunk(few_lanes).direct is None     # 4 of 8+ lanes
    grouped = make_conv((2, 8, 8, 6), (3, 3, 3, 16), "b01f_01io->b01f", W((3, 3)), fgc=2)
    assert conv.make_convolution_thunk(grouped).direct is None
    dilated = make_conv((2, 8, 8, 3), (3, 3, 3, 16), "b01f_01io->b01f",
                        W((3, 3), lhs_dilate=(2, 2)))
    assert conv.make_convolution_thunk(dilated).direct is None
    nchw = make_conv((2, 3, 8, 8), (16, 3, 3, 3), "bf01_oi01->bf01", W((3, 3)))
    assert conv.make_convolution_thunk(nchw).direct is None          # not image-major NHWC
    f64 = make_conv((2, 8, 8, 3), (3, 3, 3, 16), "b01f_01io->b01f", W((3, 3)), et="f64")
    assert conv.make_convolution_thunk(f64).direct is None
    # a weight gradient whose gradient rows read only padding
    lost = make_conv((2, 4, 4, 3), (2, 6, 6, 16), "f01b_i01o->01bf",
                     W((6, 6), padding=((3, 3), (0, 0))))
    assert conv.make_convolution_thunk(lost).direct is None


def test_kernel_in_another_layout_is_copied():
    instr = make_conv(*FORWARD[0])
    rhs = instr.operands[1]
    rhs.shape = Shape.array("f32", rhs.shape.dims, layout=Layout((2, 3, 1, 0)))
    assert conv.make_convolution_thunk(instr).strategy == "direct"
    lhs, w = operands_for(instr, np.random.default_rng(5))
    check(instr, lhs, np.asfortranarray(w))


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_kernel_next_to_padding(bad):
    """A padding zero times an infinite weight is NaN in XLA: the kernel, which leaves
    those products out, hands such calls to the library path."""
    instr = make_conv(*FORWARD[0])
    x, w = operands_for(instr, np.random.default_rng(6))
    w[0, 0, 1, 3] = bad
    out = check(instr, x, w)
    assert np.isnan(out[:, 0, :, 3]).all()


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_gradient_next_to_padding(bad):
    instr = make_conv(*WEIGHT_GRADS[1])
    x, dy = operands_for(instr, np.random.default_rng(7))
    dy[1, 0, 0, 5] = bad
    out = check(instr, x, dy)
    assert np.isnan(out[..., 5]).any()


def test_kernel_is_compiled_once():
    spec = conv_kernels.DirectSpec(5, 5, 3, 3, 3, 16, 3, 3, (1, 1), (1, 1), (0, 0),
                                   conv_kernels.lanes())
    first = conv_kernels.compiled(spec, conv_kernels.direct_kernel)
    assert conv_kernels.compiled(spec, conv_kernels.direct_kernel) is first


@pytest.mark.parametrize("q,o,pad,kw", [(15, 64, 1, 3), (13, 64, 0, 3), (15, 32, 1, 3),
                                         (32, 32, 2, 3), (7, 16, 0, 1), (30, 64, 14, 5)])
def test_column_tiles_are_even(q, o, pad, kw):
    """The forward kernel's output columns are cut into tiles of even widths (none of
    one column next to wide ones), each at most the register tile, that cover every column
    once; only borders wider than BORDER_TILES tiles go column by column."""
    w = q + kw - 1 - 2 * pad
    spec = conv_kernels.DirectSpec(1, w, 4, 1, q, o, 1, kw, (1, 1), (1, 1), (0, pad), 16)
    most, _ = spec.tile()
    tiles, singles, qlo, qhi = spec.column_tiles()
    covered = [c for q0, nq in tiles for c in range(q0, q0 + nq)] + \
        [c for a, z in singles for c in range(a, z)]
    assert sorted(covered) == list(range(q))
    widths = [nq for _, nq in tiles]
    assert max(widths) <= most and max(widths) - min(widths) <= 1
    assert len(tiles) == -(-sum(widths) // most)
    assert all(z - a > conv_kernels.BORDER_TILES * most for a, z in singles)
    assert (qlo, qhi) == (pad, q - pad)


def test_misaligned_kernel_is_copied_to_a_cache_line():
    """Weights the kernel reads as vectors start on a cache line: a kernel array that does
    not (NumPy allocates on 16 bytes) is copied, and the result is unchanged."""
    instr = make_conv(*FORWARD[-1])
    lhs, rhs = operands_for(instr, np.random.default_rng(5))
    raw = np.empty(rhs.nbytes + 128, np.uint8)
    start = (-raw.ctypes.data % 64) + 16
    off = raw[start:start + rhs.nbytes].view(np.float32).reshape(rhs.shape)
    off[...] = rhs
    assert off.ctypes.data % 64 == 16
    thunk = conv.make_convolution_thunk(instr)
    kernel, weights = thunk.direct.kernel, []

    def recording(x, w, y, r0, r1):
        weights.append(w)
        kernel(x, w, y, r0, r1)
    thunk.direct.kernel = recording
    out = np.empty(instr.shape.dims, np.float32)
    thunk([lhs, off], out)
    assert weights and all(w % 64 == 0 for w in weights)
    np.testing.assert_array_equal(out, check(instr, lhs, rhs))


def test_vector_chunks_and_runs():
    assert conv_kernels.vector_chunks(40, 16, 2) == [(0, [16, 16]), (32, [8])]
    assert conv_kernels.vector_chunks(8, 16, 4) == [(0, [8])]
    assert conv_kernels.runs(5, lambda i: (i > 0, i < 4)) == [
        (0, 1, (False, True)), (1, 4, (True, True)), (4, 5, (True, False))]


def test_first_layer_weight_gradient_stays_nhwc():
    """A 3-channel first layer's weight gradient keeps autodiff's minor-batch form (no
    transposes of the activations and gradients) and runs the generated kernel."""
    import xlapy
    import xlapy.numpy as xnp
    from xlapy import lax
    from xlapy.client import get_backend

    def loss(w, x):
        y = lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return xnp.sum(y * y)
    rng = np.random.default_rng(8)
    w = rng.standard_normal((3, 3, 3, 16)).astype(np.float32)
    x = rng.standard_normal((4, 8, 8, 3)).astype(np.float32)
    got = np.asarray(xlapy.jit(xlapy.grad(loss))(w, x))
    want = np.asarray(xlapy.jit(xlapy.grad(loss), backend="interpreter")(w, x))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    module = xlapy.jit(xlapy.grad(loss)).lower(w, x).hlo_module
    exe = get_backend("cpu").compile(module)
    convs = [i for c in exe.module.computations for i in c.instructions
             if i.opcode == "convolution"]
    strategies = {conv.make_convolution_thunk(i).strategy for i in convs}
    assert "direct_wgrad" in strategies


def _random_case(rng) -> tuple:
    """A random NHWC forward convolution or weight gradient of the kernels' families."""
    nsp = int(rng.integers(1, 3))
    n, c, o = int(rng.integers(1, 4)), int(rng.integers(1, 10)), int(rng.integers(8, 41))
    ks = [int(rng.integers(1, 4)) for _ in range(nsp)]
    stride = [int(rng.integers(1, 3)) for _ in range(nsp)]
    dil = [int(rng.integers(1, 3)) for _ in range(nsp)]
    pad = [(int(rng.integers(-1, 3)), int(rng.integers(-1, 3))) for _ in range(nsp)]
    sp = [int(rng.integers(k * d + 3, k * d + 12)) for k, d in zip(ks, dil)]
    digits = "01"[:nsp]
    if rng.random() < 0.5:
        window = W(ks, stride=stride, padding=pad, rhs_dilate=dil,
                   rhs_reversal=[bool(rng.integers(0, 2)) for _ in range(nsp)])
        return ((n, *sp, c), (*ks, c, o), f"b{digits}f_{digits}io->b{digits}f", window)
    # weight gradient of a forward convolution with these strides/dilations: the window is
    # the output gradient's size, its stride the forward dilation, its dilation the stride
    out = [(s + lo + hi - (k - 1) * d - 1) // st + 1
           for s, (lo, hi), k, d, st in zip(sp, pad, ks, dil, stride)]
    if min(out) < 1:
        return _random_case(rng)
    window = W(out, stride=dil, padding=pad, rhs_dilate=stride)
    return ((n, *sp, c), (n, *out, o), f"f{digits}b_i{digits}o->{digits}bf", window)


def test_random_direct_convolutions():
    rng = np.random.default_rng(21)
    direct = 0
    for _ in range(24):
        case = _random_case(rng)
        instr = make_conv(*case)
        if conv.make_convolution_thunk(instr).direct is not None:
            direct += 1
        check(instr, *operands_for(instr, rng))
    assert direct >= 12


def test_a_kernel_that_fails_to_build_leaves_the_library_path(monkeypatch, caplog):
    from xlapy.errors import ExecutionError

    def broken(spec, emit):
        raise ExecutionError("generated convolution kernel is invalid: test")
    monkeypatch.setattr(conv_direct, "compiled", broken)
    instr = make_conv(*FORWARD[0])
    with caplog.at_level("WARNING", logger="xlapy.cpu"):
        thunk = conv.make_convolution_thunk(instr)
    assert thunk.direct is None and thunk.strategy == "im2col"
    assert "failed to build" in caplog.text
    check(instr, *operands_for(instr, np.random.default_rng(2)))


@pytest.mark.parametrize("case", [FORWARD[1], FORWARD[4], WEIGHT_GRADS[2], WEIGHT_GRADS[4]],
                         ids=_ids)
def test_avx2_width_kernels(case, monkeypatch):
    """The kernels for 8-lane vectors (AVX2 hosts; this host runs them too)."""
    monkeypatch.setattr(conv_direct, "lanes", lambda: 8)
    instr = make_conv(*case)
    thunk = conv.make_convolution_thunk(instr)
    assert thunk.direct is not None and thunk.direct.spec.lanes == 8
    check(instr, *operands_for(instr, np.random.default_rng(4)))


def test_no_vector_fma_no_kernels(monkeypatch):
    monkeypatch.setattr(conv_direct, "lanes", lambda: 0)
    assert conv.make_convolution_thunk(make_conv(*FORWARD[0])).direct is None
