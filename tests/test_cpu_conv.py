"""The CPU backend's convolution thunk (xlapy/backends/cpu/conv.py) against the interpreter.

Covers dim_labels (1-D/2-D/3-D/0-D, JAX's gradient labels), strides, padding (negative too),
lhs/rhs dilation, rhs reversal, feature and batch groups, element types, operand/output
layouts and strided views, the blocked/parallel paths, and every convolution of the
conformance programs (their shapes, windows and labels, on random data).
"""
from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from test_cpu_blas import every_other, in_layout
from xlapy.backends.cpu import conv, conv_direct, conv_plan
from xlapy.backends.interpreter import Evaluator
from xlapy.errors import InvalidArgumentError, ShapeError, UnimplementedError
from xlapy.hlo import parse_module
from xlapy.hlo.attrs import ConvDimensionNumbers, Window
from xlapy.hlo.ir import HloInstruction
from xlapy.hlo.shape import Shape
from xlapy.hlo.shape_inference import infer_shape

CONFORMANCE = Path("/work/shared/conformance/cases")


def make_conv(ls, rs, labels, window, et="f32", fgc=1, bgc=1, out_et=None) -> HloInstruction:
    p0 = HloInstruction("parameter", Shape.array(et, ls), parameter_number=0)
    p1 = HloInstruction("parameter", Shape.array(et, rs), parameter_number=1)
    attrs = dict(window=window, dim_labels=ConvDimensionNumbers.from_string(labels),
                 feature_group_count=fgc, batch_group_count=bgc)
    shape = infer_shape("convolution", [p0.shape, p1.shape], attrs)
    if out_et is not None:
        shape = shape.with_element_type(Shape.array(out_et, ()).element_type)
    return HloInstruction("convolution", shape, [p0, p1], attrs)


def operands_for(instr: HloInstruction, rng) -> list[np.ndarray]:
    out = []
    for op in instr.operands:
        dtype, dims = op.shape.dtype, op.shape.dims
        if dtype.kind == "c":
            v = rng.standard_normal(dims) + 1j * rng.standard_normal(dims)
        elif dtype.kind in "iu":
            v = rng.integers(-20 if dtype.kind == "i" else 0, 20, dims)
        elif dtype.kind == "b":
            v = rng.random(dims) < 0.5
        else:
            v = rng.standard_normal(dims)
        out.append(np.asarray(v).astype(dtype))
    return out


def check(instr: HloInstruction, lhs: np.ndarray, rhs: np.ndarray,
          out: np.ndarray | None = None) -> np.ndarray:
    """Run the thunk into ``out`` (NaN/garbage-filled) and compare with the interpreter."""
    ref = Evaluator().evaluate(instr, [np.array(lhs, order="C"), np.array(rhs, order="C")])
    if out is None:
        out = np.empty(instr.shape.dims, instr.shape.dtype)
    out[...] = np.nan if out.dtype.kind in "fc" else 3
    thunk = conv.make_convolution_thunk(instr)
    for _ in range(2):                 # the second call reuses the kept padded buffer
        thunk([lhs, rhs], out)
        assert out.shape == ref.shape and out.dtype == ref.dtype
        if out.dtype.kind in "iub":
            np.testing.assert_array_equal(out, ref)
            continue
        g = conv.conv_geometry(instr)
        k = max(1, int(np.prod(g.kernel)) * g.cg)
        eps = float(np.finfo(out.real.dtype).eps) if out.dtype.kind == "c" else \
            float(ml_dtypes.finfo(out.dtype).eps)
        got, want = out.astype(np.complex128), ref.astype(np.complex128)
        np.testing.assert_allclose(got, want, rtol=4 * eps, atol=8 * eps * np.sqrt(k) * 4)
    return out


W = Window.make
# (lhs dims, kernel dims, dim_labels, window, feature_group_count, batch_group_count)
CASES = [
    ((2, 8, 8, 3), (3, 3, 3, 4), "b01f_01io->b01f", W((3, 3), padding=((1, 1), (1, 1))), 1, 1),
    ((2, 8, 8, 3), (3, 3, 3, 4), "b01f_01io->b01f", W((3, 3)), 1, 1),
    ((2, 8, 8, 3), (3, 3, 3, 8), "b01f_01io->b01f", W((3, 3), stride=(2, 2)), 1, 1),
    ((2, 8, 12, 3), (3, 3, 3, 8), "b01f_01io->b01f",
     W((3, 3), stride=(2, 1), padding=((0, 1), (1, 2))), 1, 1),
    ((2, 8, 8, 3), (3, 3, 3, 4), "b01f_01io->b01f",
     W((3, 3), padding=((2, 2), (2, 2)), rhs_dilate=(2, 2)), 1, 1),
    ((2, 8, 8, 3), (3, 3, 3, 4), "b01f_01io->b01f",
     W((3, 3), padding=((1, 1), (1, 1)), lhs_dilate=(2, 2)), 1, 1),
    ((2, 4, 4, 4), (3, 3, 5, 4), "b01f_01oi->b01f",                   # transposed conv (JAX)
     W((3, 3), padding=((2, 1), (2, 1)), lhs_dilate=(2, 2)), 1, 1),
    ((2, 8, 8, 6), (3, 3, 1, 6), "b01f_01io->b01f", W((3, 3), padding=((1, 1), (1, 1))), 6, 1),
    ((2, 8, 8, 6), (3, 3, 1, 12), "b01f_01io->b01f", W((3, 3)), 6, 1),   # depthwise x2
    ((2, 8, 8, 6), (3, 3, 2, 6), "b01f_01io->b01f", W((3, 3)), 3, 1),
    ((2, 8, 8, 6), (3, 3, 3, 8), "b01f_01io->b01f", W((3, 3)), 2, 1),
    ((2, 8, 8, 3), (2, 6, 6, 4), "f01b_i01o->01bf",                    # weight gradient (JAX)
     W((6, 6), padding=((1, 1), (1, 1))), 1, 1),
    ((2, 8, 8, 6), (2, 6, 6, 9), "f01b_i01o->01bf",                    # grouped weight grad
     W((6, 6), padding=((1, 1), (1, 1))), 1, 3),
    ((6, 5, 5, 4), (3, 3, 4, 6), "b01f_01io->b01f", W((3, 3)), 1, 2),
    ((2, 3, 9, 9), (4, 3, 3, 3), "bf01_oi01->bf01",
     W((3, 3), padding=((-1, 2), (1, -2)), rhs_dilate=(2, 1), rhs_reversal=(True, False)), 1, 1),
    ((2, 3, 9, 9), (3, 3, 4, 3), "bf01_01oi->fb10",                    # permuted output
     W((3, 3), stride=(1, 2), padding=((1, 1), (0, 0))), 1, 1),
    ((3, 17, 4), (5, 4, 6), "b0f_0io->b0f", W((5,), padding=((2, 2),)), 1, 1),
    ((3, 4, 17), (6, 4, 5), "bf0_oi0->bf0", W((5,), stride=(3,), rhs_dilate=(2,)), 1, 1),
    ((2, 5, 6, 7, 3), (2, 3, 2, 3, 4), "b012f_012io->b012f",
     W((2, 3, 2), stride=(1, 2, 1), padding=((1, 0), (1, 1), (0, 1))), 1, 1),
    ((4, 5), (5, 7), "bf_io->bf", Window(()), 1, 1),                    # no spatial dims
    ((2, 6, 6, 3), (3, 3, 3, 4), "b01f_01io->b01f",
     W((3, 3), padding=((-3, -3), (0, 0))), 1, 1),                      # cropped to nothing
    ((2, 6, 6, 3), (3, 3, 3, 4), "b01f_01io->b01f",
     W((3, 3), padding=((-1, -1), (4, -2)), lhs_dilate=(3, 2)), 1, 1),
]


def _case_id(c) -> str:
    return f"{c[2]}-{c[3].to_text()}-g{c[4]}b{c[5]}"


def force_strategy(monkeypatch, choose) -> None:
    """Make the thunk take the library strategy ``choose(g, itemsize)`` returns (the
    generated direct kernels off)."""
    monkeypatch.setattr(conv_direct, "ENABLED", False)
    monkeypatch.setattr(conv_plan, "choose_strategy", choose)


@pytest.fixture(params=["auto", "im2col", "elementwise", "taps"])
def strategy(request, monkeypatch):
    """Force each way of computing a convolution (``auto``: the thunk's own choice)."""
    if request.param != "auto":
        force_strategy(monkeypatch, lambda g, item: request.param)
    return request.param


def applicable(instr: HloInstruction, strategy: str) -> bool:
    geometry = conv.conv_geometry(instr)
    return strategy == "auto" or strategy in conv_plan.applicable_strategies(geometry)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_against_interpreter(case, strategy):
    ls, rs, labels, window, fgc, bgc = case
    instr = make_conv(ls, rs, labels, window, fgc=fgc, bgc=bgc)
    if not applicable(instr, strategy):
        pytest.skip(f"{strategy} does not apply")
    lhs, rhs = operands_for(instr, np.random.default_rng(0))
    check(instr, lhs, rhs)


@pytest.mark.parametrize("et,out_et", [("f64", None), ("bf16", None), ("f16", None),
                                       ("c64", None), ("c128", None), ("s32", None),
                                       ("s8", None), ("bf16", "f32"), ("f32", "bf16")])
@pytest.mark.parametrize("case", [CASES[0], CASES[7], CASES[12]], ids=_case_id)
def test_element_types(case, et, out_et):
    ls, rs, labels, window, fgc, bgc = case
    instr = make_conv(ls, rs, labels, window, et, fgc, bgc, out_et)
    lhs, rhs = operands_for(instr, np.random.default_rng(1))
    out = check(instr, lhs, rhs)
    assert out.dtype == instr.shape.dtype


def test_integer_convolution_wraps():
    instr = make_conv((1, 2, 1), (1, 1, 1), "b0f_0io->b0f", W((1,)), "s8")
    out = check(instr, np.array([[[100], [-100]]], np.int8), np.array([[[3]]], np.int8))
    np.testing.assert_array_equal(out.ravel(), np.array([300, -300]).astype(np.int8))


@pytest.mark.parametrize("layouts", [((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3)),
                                     ((1, 2, 0, 3), (3, 2, 1, 0), (0, 2, 1, 3)),
                                     ((3, 2, 1, 0), (1, 0, 2, 3), (2, 1, 3, 0))])
@pytest.mark.parametrize("case", [CASES[3], CASES[9], CASES[12]], ids=_case_id)
def test_operand_and_output_layouts(case, layouts, strategy):
    ls, rs, labels, window, fgc, bgc = case
    instr = make_conv(ls, rs, labels, window, fgc=fgc, bgc=bgc)
    if not applicable(instr, strategy):
        pytest.skip(f"{strategy} does not apply")
    lhs, rhs = operands_for(instr, np.random.default_rng(2))
    out = in_layout(np.empty(instr.shape.dims, np.float32), layouts[2])
    got = check(instr, in_layout(lhs, layouts[0]), in_layout(rhs, layouts[1]), out)
    assert got is out


def test_strided_views():
    ls, rs, labels, window, fgc, bgc = CASES[0]
    instr = make_conv(ls, rs, labels, window)
    lhs, rhs = operands_for(instr, np.random.default_rng(3))
    out = every_other(np.empty(instr.shape.dims, np.float32))
    got = check(instr, every_other(lhs), every_other(rhs), out)
    assert got is out


@pytest.mark.parametrize("case", [CASES[0], CASES[4], CASES[7], CASES[12], CASES[13],
                                  CASES[18]], ids=_case_id)
def test_blocked_and_parallel(case, strategy, monkeypatch):
    """Tiny patch budget: many row blocks, kernel chunks accumulating, run on the pool."""
    monkeypatch.setattr(conv_plan, "PATCH_BYTES", 512)
    monkeypatch.setattr(conv_plan, "MIN_ROWS", 8)
    monkeypatch.setattr(conv, "PARALLEL_FLOPS", 0)
    ls, rs, labels, window, fgc, bgc = case
    ls = (2 * ls[0],) + tuple(ls[1:]) if labels.startswith("b") else ls
    instr = make_conv(ls, rs, labels, window, fgc=fgc, bgc=bgc)
    if not applicable(instr, strategy):
        pytest.skip(f"{strategy} does not apply")
    thunk = conv.make_convolution_thunk(instr)
    assert thunk.parallel and len(thunk.plan.items) > 1
    if thunk.strategy == "im2col" and thunk.geo.kernel[0] > 1:
        assert max(len(steps) for steps in thunk.plan.items) > 1     # kernel chunks
    lhs, rhs = operands_for(instr, np.random.default_rng(4))
    check(instr, lhs, rhs)


def test_medium_nhwc_convolution():
    instr = make_conv((8, 16, 16, 16), (3, 3, 16, 24), "b01f_01io->b01f",
                      W((3, 3), padding=((1, 1), (1, 1))))
    thunk = conv.make_convolution_thunk(instr)
    assert thunk.parallel or conv.cores() == 1
    lhs, rhs = operands_for(instr, np.random.default_rng(5))
    check(instr, lhs, rhs)


def test_new_inputs_each_call_with_kept_padding():
    instr = make_conv(*CASES[5][:4])
    thunk = conv.make_convolution_thunk(instr)
    rng = np.random.default_rng(6)
    out = np.empty(instr.shape.dims, np.float32)
    for _ in range(3):
        lhs, rhs = operands_for(instr, rng)
        thunk([lhs, rhs], out)
        ref = Evaluator().evaluate(instr, [lhs, rhs])
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)


def test_zero_sized():
    instr = make_conv((0, 5, 5, 3), (3, 3, 3, 4), "b01f_01io->b01f", W((3, 3)))
    check(instr, np.ones((0, 5, 5, 3), np.float32), np.ones((3, 3, 3, 4), np.float32))
    instr = make_conv((2, 5, 5, 0), (3, 3, 0, 4), "b01f_01io->b01f", W((3, 3)))
    out = check(instr, np.ones((2, 5, 5, 0), np.float32), np.ones((3, 3, 0, 4), np.float32))
    assert out.shape == (2, 3, 3, 4) and not out.any()


def test_errors():
    p0 = HloInstruction("parameter", Shape.array("f32", (2, 8, 8, 3)), parameter_number=0)
    p1 = HloInstruction("parameter", Shape.array("f32", (3, 3, 4, 4)), parameter_number=1)
    bad = HloInstruction("convolution", Shape.array("f32", (2, 6, 6, 4)), [p0, p1], dict(
        window=W((3, 3)), dim_labels=ConvDimensionNumbers.from_string("b01f_01io->b01f")))
    assert not conv.supports_convolution(bad)
    with pytest.raises(ShapeError, match="kernel input features"):
        conv.make_convolution_thunk(bad)
    wrong_out = make_conv(*CASES[0][:4])
    wrong_out.shape = Shape.array("f32", (2, 8, 8, 5))
    with pytest.raises(ShapeError, match="result dims"):
        conv.make_convolution_thunk(wrong_out)
    dyn = make_conv(*CASES[0][:4])
    dyn.shape = Shape.array("f32", dyn.shape.dims, dynamic=(True, False, False, False))
    assert not conv.supports_convolution(dyn)
    with pytest.raises(UnimplementedError):
        conv.make_convolution_thunk(dyn)
    thunk = conv.make_convolution_thunk(make_conv(*CASES[0][:4]))
    with pytest.raises(Exception, match="dims"):
        thunk([np.ones((2, 8, 8, 3), np.float32), np.ones((3, 3, 3, 4), np.float32)],
              np.empty((2, 8, 8, 5), np.float32))
    with pytest.raises(InvalidArgumentError):
        conv.conv_geometry(HloInstruction("add", Shape.array("f32", ()), [p0, p1]))


def _conformance_convolutions() -> list[tuple[str, HloInstruction]]:
    found = []
    for path in sorted(CONFORMANCE.glob("*/*/module*.hlo")):
        if "convolution(" not in path.read_text():
            continue
        module = parse_module(path.read_text())
        for instr in module.instructions():
            if instr.opcode == "convolution":
                found.append((f"{path.parent.name}/{path.name}:{instr.name}", instr))
    return found


@pytest.mark.skipif(not CONFORMANCE.exists(), reason="conformance cases not available")
def test_conformance_convolutions():
    convs = _conformance_convolutions()
    assert convs
    rng = np.random.default_rng(7)
    for name, instr in convs:
        assert conv.supports_convolution(instr), name
        lhs, rhs = operands_for(instr, rng)
        check(instr, lhs, rhs)


def _random_convolution(rng) -> HloInstruction:
    """A small convolution with random labels, window, groups and sizes."""
    nsp = int(rng.integers(0, 4))
    digits = [str(i) for i in range(nsp)]

    def shuffled(chars):
        return "".join(rng.permutation(list(chars)))
    lhs_l, rhs_l, out_l = shuffled("bf" + "".join(digits)), shuffled("io" + "".join(digits)), \
        shuffled("bf" + "".join(digits))
    g = int(rng.choice([1, 1, 2, 3]))
    bg = 1 if g > 1 else int(rng.choice([1, 1, 2]))
    cg = int(rng.integers(1, 4))
    sizes = {"b": int(rng.integers(1, 3)) * bg, "f": cg * g}
    ksizes = {"i": cg, "o": g * bg * int(rng.integers(1, 3))}
    for d in digits:
        sizes[d], ksizes[d] = int(rng.integers(1, 7)), int(rng.integers(1, 4))
    window = W([ksizes[d] for d in digits],
               stride=[int(rng.integers(1, 3)) for _ in digits],
               padding=[(int(rng.integers(-1, 3)), int(rng.integers(-1, 3))) for _ in digits],
               lhs_dilate=[int(rng.integers(1, 3)) for _ in digits],
               rhs_dilate=[int(rng.integers(1, 3)) for _ in digits],
               rhs_reversal=[bool(rng.integers(0, 2)) for _ in digits]) if nsp else Window(())
    return make_conv(tuple(sizes[c] for c in lhs_l), tuple(ksizes[c] for c in rhs_l),
                     f"{lhs_l}_{rhs_l}->{out_l}", window, fgc=g, bgc=bg)


def test_random_convolutions_every_strategy(monkeypatch):
    rng = np.random.default_rng(12)
    for _ in range(60):
        instr = _random_convolution(rng)
        lhs, rhs = operands_for(instr, rng)
        for name in conv_plan.applicable_strategies(conv.conv_geometry(instr)):
            force_strategy(monkeypatch, lambda g, item, name=name: name)
            check(instr, lhs, rhs)
        monkeypatch.setattr(conv_direct, "ENABLED", True)     # and the thunk's own choice
        check(instr, lhs, rhs)
