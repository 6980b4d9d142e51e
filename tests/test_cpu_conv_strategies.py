"""Convolution strategies added for training steps (xlapy/backends/cpu/conv_plan.py) against
the interpreter: ``taps_t`` (inputs stored batch-innermost, as a weight gradient's NHWC
activations are), taps and im2col split into output shards (few work items, many taps), the
strategy choice for thin GEMMs, and the parallel copies of the padded input and kernel."""
from __future__ import annotations

import numpy as np
import pytest

from test_cpu_conv import check, force_strategy, make_conv, operands_for
from xlapy.backends.cpu import conv, conv_direct, conv_plan, conv_taps
from xlapy.backends.interpreter import Evaluator
from xlapy.hlo.attrs import Window
from test_cpu_blas import in_layout
from xlapy.hlo.shape import Layout, Shape

W = Window.make

# weight gradients in JAX's labels (activations NHWC, output HWIO): odd sizes, padding,
# strides, dilation, batch 1
WEIGHT_GRADS = [
    ((3, 9, 9, 5), (3, 7, 7, 4), "f01b_i01o->01bf", W((7, 7))),
    ((2, 8, 8, 3), (2, 8, 8, 6), "f01b_i01o->01bf", W((8, 8), padding=((1, 1), (1, 1)))),
    ((1, 7, 6, 4), (1, 5, 4, 3), "f01b_i01o->01bf", W((5, 4), padding=((0, 1), (1, 0)))),
    ((2, 9, 9, 3), (2, 4, 4, 5), "f01b_i01o->01bf", W((4, 4), rhs_dilate=(2, 2))),
    ((2, 11, 10, 3), (2, 5, 5, 2), "f01b_i01o->01bf",
     W((5, 5), padding=((1, 1), (0, 1)), lhs_dilate=(1, 1), rhs_dilate=(2, 2))),
    ((4, 6, 3), (4, 4, 5), "f0b_i0o->0bf", W((4,), padding=((1, 2),))),
    ((2, 5, 6, 4, 3), (2, 3, 4, 2, 2), "f012b_i012o->012bf", W((3, 4, 2))),
]


def _ids(c) -> str:
    return f"{c[2]}-{c[3].to_text()}"


def with_layout(instr, minor_to_major):
    """``instr`` with its lhs operand (a parameter) given a layout."""
    lhs = instr.operands[0]
    lhs.shape = Shape.array(lhs.shape.element_type, lhs.shape.dims,
                            layout=Layout(tuple(minor_to_major)))
    return instr


def test_batch_inner_comes_from_the_layout():
    instr = make_conv(*WEIGHT_GRADS[0])
    assert conv.conv_geometry(instr).batch_inner          # f01b on a row-major array
    fwd = make_conv((2, 8, 8, 3), (3, 3, 3, 4), "b01f_01io->b01f", W((3, 3)))
    assert not conv.conv_geometry(fwd).batch_inner
    # the same forward convolution with the batch dim stored most minor
    assert conv.conv_geometry(with_layout(fwd, (0, 3, 2, 1))).batch_inner


@pytest.mark.parametrize("case", WEIGHT_GRADS, ids=_ids)
@pytest.mark.parametrize("strategy", ["auto", "taps_t", "taps", "im2col"])
def test_weight_gradients(case, strategy, monkeypatch):
    instr = make_conv(*case)
    if strategy != "auto":
        g = conv.conv_geometry(instr)
        if strategy not in conv_plan.applicable_strategies(g):
            pytest.skip(f"{strategy} does not apply")
        force_strategy(monkeypatch, lambda g, item: strategy)
    lhs, rhs = operands_for(instr, np.random.default_rng(len(case[0])))
    check(instr, lhs, rhs)


def test_taps_t_is_chosen_for_weight_gradients(monkeypatch):
    monkeypatch.setattr(conv_direct, "ENABLED", False)
    instr = make_conv((64, 12, 12, 16), (64, 10, 10, 16), "f01b_i01o->01bf", W((10, 10)))
    thunk = conv.make_convolution_thunk(instr)
    assert thunk.strategy == "taps_t"
    assert thunk.plan.x_order == [1, 2, 3, 0] and thunk.plan.y_order == [1, 2, 0, 3]


@pytest.mark.parametrize("labels,layout", [("b01f_01io->b01f", (0, 3, 2, 1)),
                                           ("b01f_01io->b01f", (0, 2, 1, 3)),
                                           ("bf01_01io->bf01", (1, 0, 3, 2))])
def test_taps_t_on_strided_layouts(labels, layout, monkeypatch):
    """A forward convolution whose input is stored batch-innermost (or stranger)."""
    force_strategy(monkeypatch, lambda g, item: "taps_t")
    dims = (3, 7, 6, 4) if labels.startswith("b01f") else (3, 4, 7, 6)
    instr = with_layout(make_conv(dims, (3, 2, 4, 5), labels,
                                  W((3, 2), stride=(2, 1), padding=((1, 1), (0, 1)))), layout)
    lhs, rhs = operands_for(instr, np.random.default_rng(7))
    strided = in_layout(lhs, layout)
    assert not strided.flags.c_contiguous
    check(instr, strided, rhs)


@pytest.mark.parametrize("strategy", ["taps", "taps_t", "im2col"])
def test_shards_add_up(strategy, monkeypatch):
    """Few output positions, many taps: the reduction is split into output shards."""
    monkeypatch.setattr(conv, "PARALLEL_FLOPS", 0)
    force_strategy(monkeypatch, lambda g, item: strategy)
    monkeypatch.setattr(conv_plan, "PATCH_BYTES", 4096)
    instr = make_conv((3, 12, 11, 5), (3, 10, 9, 4), "f01b_i01o->01bf",
                      W((10, 9), padding=((1, 0), (0, 1))))
    thunk = conv.make_convolution_thunk(instr)
    if conv.cores() > 1:
        assert thunk.plan.shards > 1 and thunk.parallel
    lhs, rhs = operands_for(instr, np.random.default_rng(8))
    check(instr, lhs, rhs)
    assert thunk.plan._partials is None          # released after each call


def test_shard_counts():
    assert conv_plan.shard_count(items=3, taps=30, threads=2, out_bytes=1 << 12) == 4
    assert conv_plan.shard_count(items=1, taps=3, threads=2, out_bytes=1 << 12) == 3
    assert conv_plan.shard_count(items=64, taps=30, threads=2, out_bytes=1 << 12) == 1
    assert conv_plan.shard_count(items=3, taps=30, threads=1, out_bytes=1 << 12) == 1
    assert conv_plan.shard_count(items=3, taps=30, threads=2, out_bytes=1 << 30) == 1


def test_thin_gemms_use_im2col(monkeypatch):
    monkeypatch.setattr(conv_direct, "ENABLED", False)     # the library strategies' choice
    first = make_conv((16, 12, 12, 3), (3, 3, 3, 32), "b01f_01io->b01f",
                      W((3, 3), padding=((1, 1), (1, 1))))
    assert conv.make_convolution_thunk(first).strategy == "im2col"       # K = 3 x 3 channels
    few = make_conv((3, 20, 20, 64), (18, 18, 64, 8), "b01f_01io->b01f", W((18, 18)))
    assert conv.make_convolution_thunk(few).strategy == "im2col"         # 3 images
    wide = make_conv((32, 20, 20, 32), (3, 3, 32, 32), "b01f_01io->b01f", W((3, 3)))
    assert conv.make_convolution_thunk(wide).strategy == "taps"
    for instr in (first, few):
        lhs, rhs = operands_for(instr, np.random.default_rng(9))
        check(instr, lhs, rhs)


def test_parallel_copies(monkeypatch):
    monkeypatch.setattr(conv, "COPY_PIECE_BYTES", 8)
    rng = np.random.default_rng(10)
    src = rng.standard_normal((5, 7, 3, 4)).astype(np.float32).transpose(2, 0, 3, 1)
    dst = np.full((3, 5, 4, 7), np.nan, np.float64)
    conv.parallel_copyto(dst, src)
    np.testing.assert_array_equal(dst, src)
    out = conv.copy_contiguous(src[:, ::2], np.dtype(np.float32))
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, src[:, ::2])
    conv.parallel_copyto(dst[0, 0, 0], src[0, 0, 0])          # 1-D and 0-D pieces
    conv.parallel_copyto(dst[1, 1, 1, 1, ...], src[1, 1, 1, 1, ...])
    np.testing.assert_array_equal(dst, src)


def test_padded_batch_inner_buffer_is_reused(monkeypatch):
    force_strategy(monkeypatch, lambda g, item: "taps_t")
    instr = make_conv(*WEIGHT_GRADS[1])
    thunk = conv.make_convolution_thunk(instr)
    rng = np.random.default_rng(11)
    out = np.empty(instr.shape.dims, np.float32)
    for _ in range(3):                            # kept buffer: zero borders stay zero
        lhs, rhs = operands_for(instr, rng)
        thunk([lhs, rhs], out)
        np.testing.assert_allclose(out, Evaluator().evaluate(instr, [lhs, rhs]),
                                   rtol=1e-5, atol=1e-4)
    assert len(thunk._free_padded) == 1
    assert thunk._free_padded[0].shape == (10, 10, 2, 3)      # [Sp..., C, N]


# input gradients and transposed convolutions: products with padding only are left out
PADDED = [
    ((3, 6, 5, 4), (3, 3, 4, 5), "b01f_01io->b01f", W((3, 3), padding=((2, 2), (2, 2)))),
    ((2, 5, 7, 3), (3, 2, 3, 4), "b01f_01io->b01f",
     W((3, 2), padding=((4, 4), (3, 1)))),                    # outputs of padding only
    ((2, 4, 4, 3), (3, 3, 3, 2), "b01f_01io->b01f",
     W((3, 3), padding=((2, 1), (2, 2)), lhs_dilate=(2, 2))),  # rows of holes
    ((2, 7, 6, 3), (3, 3, 3, 2), "b01f_01io->b01f",
     W((3, 3), stride=(2, 2), padding=((2, 2), (2, 1)))),
    ((1, 9, 3), (4, 3, 2), "b0f_0io->b0f", W((4,), padding=((3, 3),))),
    ((2, 6, 5, 4), (2, 3, 3, 5), "f01b_i01o->01bf",           # batch-inner (taps_t)
     W((3, 3), padding=((2, 2), (2, 2)))),
]


@pytest.mark.parametrize("case", PADDED, ids=_ids)
@pytest.mark.parametrize("strategy", ["taps", "taps_t"])
def test_padding_products_left_out(case, strategy, monkeypatch):
    force_strategy(monkeypatch, lambda g, item: strategy)
    monkeypatch.setattr(conv_taps, "TRIM_CALL_FLOPS", 0)         # border columns too
    instr = make_conv(*case)
    if strategy not in conv_plan.applicable_strategies(conv.conv_geometry(instr)):
        pytest.skip(f"{strategy} does not apply")
    thunk = conv.make_convolution_thunk(instr)
    lhs, rhs = operands_for(instr, np.random.default_rng(12))
    if thunk.plan.shards == 1:
        assert thunk.plan.trimmed is not None
        assert thunk.plan.items_for(rhs) is thunk.plan.trimmed
    check(instr, lhs, rhs)


def test_outputs_of_padding_only_are_zeroed(monkeypatch):
    force_strategy(monkeypatch, lambda g, item: "taps")
    monkeypatch.setattr(conv_taps, "TRIM_CALL_FLOPS", 0)
    instr = make_conv(*PADDED[1])
    thunk = conv.make_convolution_thunk(instr)
    assert any(not gemm[4] for item in thunk.plan.trimmed for gemm in item)
    lhs, rhs = operands_for(instr, np.random.default_rng(13))
    out = check(instr, lhs, rhs)                  # check() fills out with NaN first
    assert (out[:, 0] == 0).all()


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_kernels_keep_every_product(bad, monkeypatch):
    """0 * inf is NaN: with a non-finite weight the padding products are computed."""
    force_strategy(monkeypatch, lambda g, item: "taps")
    instr = make_conv(*PADDED[0])
    thunk = conv.make_convolution_thunk(instr)
    lhs, rhs = operands_for(instr, np.random.default_rng(14))
    rhs[0, 0, 1, 2] = bad
    assert thunk.plan.items_for(rhs) is thunk.plan.items
    out = np.empty(instr.shape.dims, np.float32)
    with np.errstate(invalid="ignore"):
        thunk([lhs, rhs], out)
        ref = Evaluator().evaluate(instr, [lhs, rhs])
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    assert np.isnan(out).any()
    finite = np.isfinite(ref)
    np.testing.assert_allclose(out[finite], ref[finite], rtol=1e-5, atol=1e-4)


def test_column_runs():
    g = conv.conv_geometry(make_conv(*PADDED[0]))
    assert conv_taps.column_runs(g, 3) == [(0, 7, (0, 3))]      # too little to save
    # padded width 9 (2 + 5 + 2), 7 outputs: columns 2..6 are real
    assert conv_taps.column_runs(g, 10**6) == [(0, 1, (2, 3)), (1, 2, (1, 3)), (2, 5, (0, 3)),
                                               (5, 6, (0, 2)), (6, 7, (0, 1))]


BLOCKED = [
    ((40, 6, 5, 3), (3, 3, 3, 4), "b01f_01io->b01f", W((3, 3), padding=((2, 2), (2, 2)))),
    ((37, 19, 7, 4), (3, 2, 4, 5), "b01f_01io->b01f", W((3, 2), stride=(2, 1))),
    ((33, 9, 4), (3, 4, 6), "b0f_0io->b0f", W((3,), padding=((4, 1),))),
    ((34, 5, 5, 4, 3), (2, 3, 3, 3, 4), "b012f_012io->b012f",
     W((2, 3, 3), padding=((0, 1), (1, 1), (2, 0)))),
]


@pytest.mark.parametrize("case", BLOCKED, ids=_ids)
@pytest.mark.parametrize("block_bytes", [512 << 10, 64])
def test_image_blocks(case, block_bytes, monkeypatch):
    """Many images: items are blocks of images running every output position in turn."""
    force_strategy(monkeypatch, lambda g, item: "taps")
    monkeypatch.setattr(conv_taps, "TAPS_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(conv, "PARALLEL_FLOPS", 0)
    instr = make_conv(*case)
    thunk = conv.make_convolution_thunk(instr)
    blocks = thunk.plan._image_blocks(conv.cores())
    assert blocks and blocks[0][0] == 0 and blocks[-1][1] == thunk.geo.nb
    assert all(b1 - b0 >= conv_plan.TAPS_MIN_DIM for b0, b1 in blocks)
    assert thunk.plan.shards == 1 and len(thunk.plan.items) == len(blocks)
    lhs, rhs = operands_for(instr, np.random.default_rng(15))
    check(instr, lhs, rhs)


def test_image_blocks_with_a_non_finite_kernel(monkeypatch):
    force_strategy(monkeypatch, lambda g, item: "taps")
    instr = make_conv(*BLOCKED[0])
    thunk = conv.make_convolution_thunk(instr)
    assert thunk.plan.trimmed is not None and len(thunk.plan.items) > 1
    lhs, rhs = operands_for(instr, np.random.default_rng(16))
    rhs[2, 1, 0, 3] = np.inf
    out = np.empty(instr.shape.dims, np.float32)
    with np.errstate(invalid="ignore"):
        thunk([lhs, rhs], out)
        ref = Evaluator().evaluate(instr, [lhs, rhs])
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(out[finite], ref[finite], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("strategy", ["taps", "taps_t"])
def test_long_k_runs_in_chunks(strategy, monkeypatch):
    """Weight gradients' long K runs are cut into chunks accumulating into the output."""
    force_strategy(monkeypatch, lambda g, item: strategy)
    monkeypatch.setattr(conv_taps, "TAPS_K_CHUNK_BYTES", 600)
    instr = make_conv((6, 9, 8, 5), (6, 7, 6, 4), "f01b_i01o->01bf",
                      W((7, 6), padding=((1, 0), (0, 1))))
    thunk = conv.make_convolution_thunk(instr)
    chunks = thunk.plan.chunks
    assert chunks and all(len(c) > 1 for c in chunks.values())
    for call, parts in chunks.items():
        assert sum(p.k for p, _, _ in parts) == call.k
    lhs, rhs = operands_for(instr, np.random.default_rng(17))
    check(instr, lhs, rhs)


def test_image_blocks_with_batch_groups(monkeypatch):
    force_strategy(monkeypatch, lambda g, item: "taps")
    monkeypatch.setattr(conv_taps, "TAPS_BLOCK_BYTES", 64)
    instr = make_conv((68, 7, 6, 4), (3, 3, 4, 6), "b01f_01io->b01f",
                      W((3, 3), padding=((2, 1), (1, 1))), bgc=2)
    thunk = conv.make_convolution_thunk(instr)
    assert thunk.geo.nb == 34 and len(thunk.plan.items) == 2 * 2      # 2 groups x 2 blocks
    lhs, rhs = operands_for(instr, np.random.default_rng(18))
    check(instr, lhs, rhs)
