"""convolution-canonicalization, transpose folding into convolutions, batchnorm_expander:
structure after each rewrite, and the interpreter computing the same before and after."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy.hlo as H
from pass_check import random_args, run_passes
from xlapy.backends.interpreter import evaluate_module
from xlapy.passes import BatchNormExpander, ConvolutionCanonicalization, TransposeFolding
from xlapy.passes.convolution_canonicalization import canonical_conv_dims
from xlapy.passes.transpose_folding import always_fold


def check_same(text: str, passes, exact: bool, rtol: float = 1e-6, atol: float = 1e-6):
    """Run ``passes`` on ``text``; results equal bitwise (``exact``) or within tolerance."""
    module = H.parse_module(text)
    args = random_args(module, seed=3)
    before = evaluate_module(module, args)
    m, changed = run_passes(text, passes, args=args, compare=False)
    after = evaluate_module(m, args)
    flat_b = before if isinstance(before, tuple) else (before,)
    flat_a = after if isinstance(after, tuple) else (after,)
    for b, a in zip(flat_b, flat_a):
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return m, changed


# --------------------------------------------------------------------------------------------
# convolution-canonicalization

CONV = """HloModule m
ENTRY main {{
  x = {et}{lhs} parameter(0)
  k = {et}{rhs} parameter(1)
  ROOT c = {et}{out} convolution(x, k), window={{{window}}}, dim_labels={labels}{extra}
}}"""

CONV_CASES = [
    # NCHW / OIHW
    ("[2,3,5,6]", "[4,3,3,3]", "[2,4,3,4]", "size=3x3", "bf01_oi01->bf01", ""),
    # the backprop-filter style layout XLA emits
    ("[3,5,6,2]", "[3,3,3,4]", "[3,4,2,4]", "size=3x3", "f01b_i01o->01bf", ""),
    # 1-D, strided, padded, grouped
    ("[2,4,7]", "[6,2,3]", "[2,6,4]", "size=3 stride=2 pad=1_1", "bf0_oi0->bf0",
     ", feature_group_count=2"),
]


@pytest.mark.parametrize("et", ["s32", "f32"])
@pytest.mark.parametrize("lhs,rhs,out,window,labels,extra", CONV_CASES)
def test_convolution_gets_canonical_labels(et, lhs, rhs, out, window, labels, extra):
    text = CONV.format(et=et, lhs=lhs, rhs=rhs, out=out, window=window, labels=labels,
                       extra=extra)
    m, changed = check_same(text, [ConvolutionCanonicalization()], exact=et == "s32")
    if et == "f32" and labels.startswith("f01b"):
        assert not changed          # the minor-batch form the CPU weight-gradient kernel reads
        return
    assert changed
    conv = [i for i in m.entry.instructions if i.opcode == "convolution"][0]
    nsp = len(conv.attrs["dim_labels"].input_spatial)
    assert conv.attrs["dim_labels"] == canonical_conv_dims(nsp)
    assert conv.attrs["dim_labels"].to_text() == ("b0f_0io->b0f" if nsp == 1
                                                  else "b01f_01io->b01f")
    assert m.entry.root.opcode == "transpose" and m.entry.root.operands[0] is conv
    if extra:
        assert conv.attrs["feature_group_count"] == 2


def test_canonical_convolution_is_left_alone():
    text = CONV.format(et="f32", lhs="[2,5,6,3]", rhs="[3,3,3,4]", out="[2,3,4,4]",
                       window="size=3x3", labels="b01f_01io->b01f", extra="")
    _, changed = run_passes(text, [ConvolutionCanonicalization()])
    assert not changed


def test_weight_gradient_with_many_minor_batch_elements_is_left_alone():
    """f01b_i01o->01bf with >= 16 'batch' elements minor-most (autodiff's NHWC weight
    gradient) is computed from the NHWC activations as it is; with 3 it is canonicalized,
    unless it is an f32 convolution the CPU's generated weight-gradient kernel takes."""
    wide = CONV.format(et="f32", lhs="[3,5,6,16]", rhs="[3,3,3,4]", out="[3,4,16,4]",
                       window="size=3x3", labels="f01b_i01o->01bf", extra="")
    _, changed = run_passes(wide, [ConvolutionCanonicalization()])
    assert not changed
    narrow = wide.replace("[3,5,6,16]", "[3,5,6,3]").replace("[3,4,16,4]", "[3,4,3,4]")
    _, changed = run_passes(narrow, [ConvolutionCanonicalization()])
    assert not changed
    for other in (narrow.replace("f32", "s32"),
                  narrow.replace("size=3x3", "size=3x3 lhs_dilate=1x2").replace(
                      "[3,4,3,4]", "[3,9,3,4]")):
        _, changed = run_passes(other, [ConvolutionCanonicalization()])
        assert changed


def test_only_needed_transposes_are_inserted():
    # input and output already canonical, only the kernel (01oi) needs a transpose
    text = CONV.format(et="s32", lhs="[2,5,6,3]", rhs="[3,3,4,3]", out="[2,3,4,4]",
                       window="size=3x3", labels="b01f_01oi->b01f", extra="")
    m, changed = check_same(text, [ConvolutionCanonicalization()], exact=True)
    assert changed
    ops = [i.opcode for i in m.entry.instructions]
    assert ops.count("transpose") == 1 and m.entry.root.opcode == "convolution"


# --------------------------------------------------------------------------------------------
# transpose-folding into convolutions

FOLD_CONV = """HloModule m
ENTRY main {
  x = s32[2,5,6,3] parameter(0)
  k = s32[3,3,4,3] parameter(1)
  kt = s32[3,3,3,4] transpose(k), dimensions={0,1,3,2}
  xt = s32[2,6,5,3] transpose(x), dimensions={0,2,1,3}
  ROOT c = s32[2,4,3,4] convolution(xt, kt), window={size=3x3}, dim_labels=b01f_01io->b01f
}"""


def test_conv_transposes_fold_when_allowed():
    _, changed = run_passes(FOLD_CONV, [TransposeFolding()])
    assert not changed                       # the CPU default never folds into convolutions
    m, changed = check_same(FOLD_CONV, [TransposeFolding(can_fold_conv_operand=always_fold)],
                            exact=True)
    assert changed
    conv = m.entry.root
    assert [o.opcode for o in conv.operands] == ["parameter", "parameter"]
    assert conv.attrs["dim_labels"].to_text() == "b10f_01oi->b01f"
    assert "transpose" not in [i.opcode for i in m.entry.instructions]


# --------------------------------------------------------------------------------------------
# batchnorm_expander

BN_TRAINING = """HloModule m
ENTRY main {{
  x = f32[2,3,4,5] parameter(0)
  s = f32[{c}] parameter(1)
  o = f32[{c}] parameter(2)
  ROOT bn = (f32[2,3,4,5], f32[{c}], f32[{c}]) batch-norm-training(x, s, o), epsilon=0.001, feature_index={f}
}}"""

BN_INFERENCE = """HloModule m
ENTRY main {{
  x = f32[2,3,4,5] parameter(0)
  s = f32[{c}] parameter(1)
  o = f32[{c}] parameter(2)
  mu = f32[{c}] parameter(3)
  v0 = f32[{c}] parameter(4)
  v = f32[{c}] abs(v0)
  ROOT bn = f32[2,3,4,5] batch-norm-inference(x, s, o, mu, v), epsilon=0.01, feature_index={f}
}}"""

BN_GRAD = """HloModule m
ENTRY main {{
  x = f32[2,3,4,5] parameter(0)
  s = f32[{c}] parameter(1)
  mu = f32[{c}] parameter(2)
  v0 = f32[{c}] parameter(3)
  v = f32[{c}] abs(v0)
  dy = f32[2,3,4,5] parameter(4)
  ROOT bn = (f32[2,3,4,5], f32[{c}], f32[{c}]) batch-norm-grad(x, s, mu, v, dy), epsilon=0.01, feature_index={f}
}}"""

SIZES = {0: 2, 1: 3, 3: 5}


@pytest.mark.parametrize("template", [BN_TRAINING, BN_INFERENCE, BN_GRAD],
                         ids=["training", "inference", "grad"])
@pytest.mark.parametrize("feature", [1, 3, 0])
def test_batch_norm_is_expanded(template, feature):
    text = template.format(c=SIZES[feature], f=feature)
    m, changed = check_same(text, [BatchNormExpander()], exact=False, rtol=2e-4, atol=2e-4)
    assert changed
    ops = [i.opcode for c in m.computations for i in c.instructions]
    assert not any(op.startswith("batch-norm") for op in ops)
    reduces = [i for i in m.entry.instructions if i.opcode == "reduce"]
    expected_reduces = {BN_TRAINING: 2, BN_INFERENCE: 0, BN_GRAD: 2}[template]
    assert len(reduces) == expected_reduces
    for r in reduces:
        assert r.dimensions == tuple(d for d in range(4) if d != feature)
        assert r.to_apply.root.opcode == "add"


def test_training_mean_and_variance_are_exact_formulas():
    text = BN_TRAINING.format(c=3, f=1)
    module = H.parse_module(text)
    BatchNormExpander().run(module)
    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5) / 7
    s, o = np.ones(3, np.float32), np.zeros(3, np.float32)
    y, mean, var = evaluate_module(module, [x, s, o])
    xm = x.transpose(1, 0, 2, 3).reshape(3, -1).astype(np.float64)
    np.testing.assert_allclose(mean, xm.mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(var, xm.var(axis=1), rtol=1e-4)
    np.testing.assert_allclose(y.transpose(1, 0, 2, 3).reshape(3, -1),
                               (xm - xm.mean(1, keepdims=True))
                               / np.sqrt(xm.var(1, keepdims=True) + 0.001), rtol=1e-3, atol=1e-4)


def test_disabled_kinds_are_left_alone():
    text = BN_TRAINING.format(c=3, f=1)
    _, changed = run_passes(text, [BatchNormExpander(rewrite_training_op=False)])
    assert not changed
    m, changed = run_passes(BN_INFERENCE.format(c=3, f=1),
                            [BatchNormExpander(rewrite_training_op=False)], compare=False)
    assert changed and m.entry.root.opcode == "add"
