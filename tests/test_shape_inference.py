"""Table-driven tests of HLO shape inference (valid results and ShapeError messages)."""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.errors import ShapeError
from xlapy.hlo import types as T
from xlapy.hlo.attrs import ConvDimensionNumbers, Window
from xlapy.hlo.builder import comparator_computation, scalar_computation
from xlapy.hlo.shape import Shape
from xlapy.hlo.shape_inference import infer_shape, shape_text


def S(text: str) -> Shape:
    """``f32[2,3]`` -> Shape (arrays only; ``token[]``; ``(a, b)`` tuples of arrays)."""
    text = text.strip()
    if text == "token[]":
        return Shape.token()
    if text.startswith("("):
        inner = text[1:-1]
        parts, depth, cur = [], 0, ""
        for ch in inner:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch in "[("
            depth -= ch in "])"
            cur += ch
        if cur.strip():
            parts.append(cur)
        return Shape.tuple(S(p) for p in parts)
    et, dims = text[:-1].split("[")
    return Shape.array(et, [int(d) for d in dims.split(",") if d])


ADD_F32 = scalar_computation("add", T.F32)
MAX_F32 = scalar_computation("max", T.F32)
ADD_S32 = scalar_computation("add", T.S32)
LT_F32 = comparator_computation([T.F32])
LT_F32_S32 = comparator_computation([T.F32, T.S32])
GE_F32 = comparator_computation([T.F32], "GE")

VALID = [
    # elementwise
    ("add", ["f32[2,3]", "f32[2,3]"], {}, None, "f32[2,3]"),
    ("exponential", ["bf16[4]"], {}, None, "bf16[4]"),
    ("abs", ["c64[3]"], {}, None, "f32[3]"),
    ("abs", ["s32[3]"], {}, None, "s32[3]"),
    ("real", ["c128[2]"], {}, None, "f64[2]"),
    ("imag", ["f32[2]"], {}, None, "f32[2]"),
    ("is-finite", ["f16[5]"], {}, None, "pred[5]"),
    ("not", ["pred[5]"], {}, None, "pred[5]"),
    ("popcnt", ["u8[5]"], {}, None, "u8[5]"),
    ("count-leading-zeros", ["s64[]"], {}, None, "s64[]"),
    ("and", ["u32[2]", "u32[2]"], {}, None, "u32[2]"),
    ("shift-right-logical", ["u32[2]", "u32[2]"], {}, None, "u32[2]"),
    ("complex", ["f64[2]", "f64[2]"], {}, None, "c128[2]"),
    ("atan2", ["f32[2]", "f32[2]"], {}, None, "f32[2]"),
    ("compare", ["s32[2]", "s32[2]"], {"direction": "LT"}, None, "pred[2]"),
    ("select", ["pred[2]", "f32[2]", "f32[2]"], {}, None, "f32[2]"),
    ("select", ["pred[]", "f32[2]", "f32[2]"], {}, None, "f32[2]"),
    ("clamp", ["f32[]", "f32[3]", "f32[]"], {}, None, "f32[3]"),
    ("clamp", ["f32[3]", "f32[3]", "f32[3]"], {}, None, "f32[3]"),
    ("convert", ["f32[2,3]"], {}, "s8[]", "s8[2,3]"),
    ("bitcast-convert", ["f32[2]"], {}, "s32[]", "s32[2]"),
    ("bitcast-convert", ["f32[2]"], {}, "u8[]", "u8[2,4]"),
    ("bitcast-convert", ["u16[3,4]"], {}, "f64[]", "f64[3]"),
    ("reduce-precision", ["f32[2]"], {"exponent_bits": 5, "mantissa_bits": 10}, None, "f32[2]"),
    ("copy", ["(f32[2], s32[])"], {}, None, "(f32[2], s32[])"),
    # data movement
    ("broadcast", ["f32[3]"], {"dimensions": (1,)}, "f32[2,3]", "f32[2,3]"),
    ("broadcast", ["f32[]"], {}, "f32[4,5]", "f32[4,5]"),
    ("reshape", ["f32[2,3]"], {}, "f32[6]", "f32[6]"),
    ("transpose", ["f32[2,3,4]"], {"dimensions": (2, 0, 1)}, None, "f32[4,2,3]"),
    ("bitcast", ["f32[2,3]"], {}, "s32[6]", "s32[6]"),
    ("slice", ["f32[10,4]"], {"slice": ((1, 8, 3), (0, 4, 1))}, None, "f32[3,4]"),
    ("dynamic-slice", ["f32[10,4]", "s32[]", "s32[]"], {"dynamic_slice_sizes": (2, 4)}, None,
     "f32[2,4]"),
    ("dynamic-update-slice", ["f32[10,4]", "f32[2,4]", "s32[]", "s32[]"], {}, None, "f32[10,4]"),
    ("concatenate", ["f32[2,3]", "f32[5,3]"], {"dimensions": (0,)}, None, "f32[7,3]"),
    ("pad", ["f32[4]", "f32[]"], {"padding": ((1, 2, 1),)}, None, "f32[10]"),
    ("pad", ["f32[4,5]", "f32[]"], {"padding": ((-1, 0, 0), (0, -2, 0))}, None, "f32[3,3]"),
    ("reverse", ["f32[4,5]"], {"dimensions": (0, 1)}, None, "f32[4,5]"),
    ("iota", [], {"iota_dimension": 1}, "s32[3,4]", "s32[3,4]"),
    ("tuple", ["f32[2]", "s32[]"], {}, None, "(f32[2], s32[])"),
    ("get-tuple-element", ["(f32[2], s32[])"], {"index": 1}, None, "s32[]"),
    ("get-dimension-size", ["f32[4,5]"], {"dimensions": (1,)}, None, "s32[]"),
    # gather: x[idx] rows of a matrix, and a batched gather
    ("gather", ["f32[5,3]", "s32[4,1]"],
     {"offset_dims": (1,), "collapsed_slice_dims": (0,), "start_index_map": (0,),
      "index_vector_dim": 1, "slice_sizes": (1, 3)}, None, "f32[4,3]"),
    ("gather", ["f32[2,5,3]", "s32[2,4]"],
     {"offset_dims": (2,), "collapsed_slice_dims": (1,), "start_index_map": (1,),
      "operand_batching_dims": (0,), "start_indices_batching_dims": (0,),
      "index_vector_dim": 2, "slice_sizes": (1, 1, 3)}, None, "f32[2,4,3]"),
    ("scatter", ["f32[5,3]", "s32[4,1]", "f32[4,3]"],
     {"update_window_dims": (1,), "inserted_window_dims": (0,),
      "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 1, "to_apply": ADD_F32},
     None, "f32[5,3]"),
    ("scatter", ["f32[2,5]", "s32[2,4]", "f32[2,4]"],
     {"update_window_dims": (), "inserted_window_dims": (1,),
      "scatter_dims_to_operand_dims": (1,), "input_batching_dims": (0,),
      "scatter_indices_batching_dims": (0,), "index_vector_dim": 2, "to_apply": ADD_F32},
     None, "f32[2,5]"),
    # reductions
    ("reduce", ["f32[2,3,4]", "f32[]"], {"dimensions": (0, 2), "to_apply": ADD_F32}, None,
     "f32[3]"),
    ("reduce-window", ["f32[4,6]", "f32[]"],
     {"window": Window.make((2, 3), (2, 3)), "to_apply": MAX_F32}, None, "f32[2,2]"),
    ("reduce-window", ["f32[5]", "f32[]"],
     {"window": Window.make((3,), (1,), ((1, 1),), (2,)), "to_apply": ADD_F32}, None, "f32[9]"),
    ("select-and-scatter", ["f32[4,6]", "f32[2,2]", "f32[]"],
     {"window": Window.make((2, 3), (2, 3)), "select": GE_F32, "scatter": ADD_F32}, None,
     "f32[4,6]"),
    ("map", ["f32[3]", "f32[3]"], {"to_apply": ADD_F32}, None, "f32[3]"),
    ("sort", ["f32[3,4]"], {"dimensions": (1,), "to_apply": LT_F32}, None, "f32[3,4]"),
    ("sort", ["f32[4]", "s32[4]"], {"dimensions": (0,), "to_apply": LT_F32_S32}, None,
     "(f32[4], s32[4])"),
    ("topk", ["f32[3,10]"], {"k": 2}, None, "(f32[3,2], s32[3,2])"),
    # linalg
    ("dot", ["f32[2,3]", "f32[3,4]"],
     {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}, None, "f32[2,4]"),
    ("dot", ["f32[7,2,3]", "f32[7,4,3]"],
     {"lhs_batch_dims": (0,), "rhs_batch_dims": (0,), "lhs_contracting_dims": (2,),
      "rhs_contracting_dims": (2,)}, None, "f32[7,2,4]"),
    ("dot", ["s8[2,3]", "s8[3]"],
     {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}, "s32[2]", "s32[2]"),
    ("convolution", ["f32[1,5,5,2]", "f32[3,3,2,4]"],
     {"dim_labels": ConvDimensionNumbers.from_string("b01f_01io->b01f"),
      "window": Window.make((3, 3), (2, 2), ((1, 1), (1, 1)))}, None, "f32[1,3,3,4]"),
    ("convolution", ["f32[2,4,7]", "f32[6,2,3]"],
     {"dim_labels": ConvDimensionNumbers.from_string("bf0_oi0->bf0"),
      "window": Window.make((3,), rhs_dilate=(2,)), "feature_group_count": 2}, None,
     "f32[2,6,3]"),
    ("convolution", ["f32[3,4,5]", "f32[3,6,5]"],
     {"dim_labels": ConvDimensionNumbers.from_string("fb0_io0->bf0"),
      "window": Window.make((5,)), "batch_group_count": 2}, None, "f32[2,6,1]"),
    ("fft", ["c64[3,8]"], {"fft_type": "FFT", "fft_length": (8,)}, None, "c64[3,8]"),
    ("fft", ["f32[3,8]"], {"fft_type": "RFFT", "fft_length": (8,)}, None, "c64[3,5]"),
    ("fft", ["c128[4,5]"], {"fft_type": "IRFFT", "fft_length": (4, 8)}, None, "f64[4,8]"),
    ("cholesky", ["f32[2,3,3]"], {"lower": True}, None, "f32[2,3,3]"),
    ("triangular-solve", ["f32[3,3]", "f32[3,5]"], {"left_side": True}, None, "f32[3,5]"),
    ("triangular-solve", ["f32[3,3]", "f32[5,3]"], {"left_side": False}, None, "f32[5,3]"),
    ("batch-norm-training", ["f32[2,4,3]", "f32[4]", "f32[4]"],
     {"epsilon": 1e-3, "feature_index": 1}, None, "(f32[2,4,3], f32[4], f32[4])"),
    ("batch-norm-inference", ["f32[2,3]", "f32[3]", "f32[3]", "f32[3]", "f32[3]"],
     {"epsilon": 1e-3, "feature_index": 1}, None, "f32[2,3]"),
    ("batch-norm-grad", ["f32[2,3]", "f32[3]", "f32[3]", "f32[3]", "f32[2,3]"],
     {"epsilon": 1e-3, "feature_index": 1}, None, "(f32[2,3], f32[3], f32[3])"),
    # control flow, rng, collectives
    ("custom-call", ["f32[3]"], {"custom_call_target": "foo"}, "(f32[3], s32[])",
     "(f32[3], s32[])"),
    ("after-all", ["token[]", "token[]"], {}, None, "token[]"),
    ("add-dependency", ["f32[2]", "token[]"], {}, None, "f32[2]"),
    ("rng", ["f32[]", "f32[]"], {"distribution": "rng_uniform"}, "f32[3,4]", "f32[3,4]"),
    ("rng-bit-generator", ["u64[2]"], {"algorithm": "rng_three_fry"}, "(u64[2], u32[4,4])",
     "(u64[2], u32[4,4])"),
    ("rng-get-and-update-state", [], {"delta": 16}, None, "u64[2]"),
    ("all-reduce", ["f32[8]"], {"to_apply": ADD_F32}, None, "f32[8]"),
    ("all-gather", ["f32[2,3]"], {"dimensions": (0,), "replica_groups": "{{0,1,2,3}}"}, None,
     "f32[8,3]"),
    ("reduce-scatter", ["f32[8,3]"],
     {"dimensions": (0,), "replica_groups": "{{0,1}}", "to_apply": ADD_F32}, None, "f32[4,3]"),
    ("replica-id", [], {}, None, "u32[]"),
    ("send", ["f32[2]", "token[]"], {}, None, "(f32[2], u32[], token[])"),
]


@pytest.mark.parametrize("opcode,operands,attrs,declared,expected", VALID,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(VALID)])
def test_valid(opcode, operands, attrs, declared, expected):
    got = infer_shape(opcode, [S(o) for o in operands], attrs,
                      S(declared) if declared else None)
    assert shape_text(got) == shape_text(S(expected))
    assert got.compatible(S(expected))


INVALID = [
    ("add", ["f32[2,3]", "f32[3,2]"], {}, None, "same dimensions"),
    ("add", ["f32[2]", "s32[2]"], {}, None, "same element type"),
    ("and", ["f32[2]", "f32[2]"], {}, None, "integral or pred"),
    ("shift-left", ["pred[2]", "pred[2]"], {}, None, "integral"),
    ("popcnt", ["f32[2]"], {}, None, "integral"),
    ("exponential", ["s32[2]"], {}, None, "floating-point or complex"),
    ("floor", ["c64[2]"], {}, None, "floating-point"),
    ("negate", ["pred[2]"], {}, None, "numeric"),
    ("is-finite", ["s32[2]"], {}, None, "floating-point"),
    ("compare", ["f32[2]", "f32[2]"], {"direction": "XX"}, None, "direction=XX"),
    ("select", ["pred[3]", "f32[2]", "f32[2]"], {}, None, "predicate"),
    ("select", ["s32[]", "f32[2]", "f32[2]"], {}, None, "pred"),
    ("clamp", ["f32[2]", "f32[3]", "f32[]"], {}, None, "min"),
    ("convert", ["c64[2]"], {}, "f32[]", "complex"),
    ("bitcast-convert", ["u8[3]"], {}, "f32[]", "last dimension of size 4"),
    ("broadcast", ["f32[3]"], {"dimensions": (0,)}, "f32[2,3]", "does not match"),
    ("broadcast", ["f32[3]"], {"dimensions": (1, 0)}, "f32[2,3]", "dimensions"),
    ("reshape", ["f32[2,3]"], {}, "f32[5]", "cannot reshape"),
    ("transpose", ["f32[2,3]"], {"dimensions": (0, 0)}, None, "permutation"),
    ("bitcast", ["f32[2,3]"], {}, "f32[5]", "bytes"),
    ("slice", ["f32[4]"], {"slice": ((2, 5, 1),)}, None, "out of bounds"),
    ("slice", ["f32[4]"], {"slice": ((0, 4, 0),)}, None, "positive stride"),
    ("dynamic-slice", ["f32[4]", "s32[]"], {"dynamic_slice_sizes": (5,)}, None,
     "dynamic_slice_sizes"),
    ("dynamic-slice", ["f32[4,4]", "s32[]"], {"dynamic_slice_sizes": (1, 1)}, None,
     "start index"),
    ("dynamic-update-slice", ["f32[4]", "f32[5]", "s32[]"], {}, None, "fit"),
    ("concatenate", ["f32[2,3]", "f32[2,4]"], {"dimensions": (0,)}, None, "agree"),
    ("pad", ["f32[4]", "f32[]"], {"padding": ((-3, -3, 0),)}, None, "negative size"),
    ("pad", ["f32[4]", "s32[]"], {"padding": ((0, 0, 0),)}, None, "padding value"),
    ("reverse", ["f32[4]"], {"dimensions": (1,)}, None, "out of range"),
    ("iota", [], {"iota_dimension": 2}, "s32[3,4]", "iota_dimension"),
    ("get-tuple-element", ["(f32[2], s32[])"], {"index": 2}, None, "index=2"),
    ("gather", ["f32[5,3]", "s32[4,1]"],
     {"offset_dims": (1,), "collapsed_slice_dims": (0,), "start_index_map": (0,),
      "index_vector_dim": 1, "slice_sizes": (2, 3)}, None, "slice_sizes"),
    ("gather", ["f32[5,3]", "s32[4,2]"],
     {"offset_dims": (1,), "collapsed_slice_dims": (0,), "start_index_map": (0,),
      "index_vector_dim": 1, "slice_sizes": (1, 3)}, None, "start_index_map"),
    ("scatter", ["f32[5,3]", "s32[4,1]", "f32[3,3]"],
     {"update_window_dims": (1,), "inserted_window_dims": (0,),
      "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 1, "to_apply": ADD_F32},
     None, "scatter dimensions"),
    ("scatter", ["s32[5,3]", "s32[4,1]", "s32[4,3]"],
     {"update_window_dims": (1,), "inserted_window_dims": (0,),
      "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 1, "to_apply": ADD_F32},
     None, "to_apply"),
    ("reduce", ["f32[2,3]", "f32[]"], {"dimensions": (2,), "to_apply": ADD_F32}, None,
     "dimensions"),
    ("reduce", ["f32[2,3]", "f32[]"], {"dimensions": (0,), "to_apply": LT_F32}, None,
     "to_apply"),
    ("reduce", ["f32[2,3]", "f32[2]"], {"dimensions": (0,), "to_apply": ADD_F32}, None,
     "init value"),
    ("reduce-window", ["f32[4,6]", "f32[]"],
     {"window": Window.make((2,)), "to_apply": ADD_F32}, None, "window"),
    ("select-and-scatter", ["f32[4,6]", "f32[2,3]", "f32[]"],
     {"window": Window.make((2, 3), (2, 3)), "select": GE_F32, "scatter": ADD_F32}, None,
     "source"),
    ("sort", ["f32[4]"], {"dimensions": (0,), "to_apply": ADD_F32}, None, "pred"),
    ("sort", ["f32[4]", "f32[5]"], {"dimensions": (0,), "to_apply": LT_F32}, None,
     "same dimensions"),
    ("topk", ["f32[3,4]"], {"k": 5}, None, "k=5"),
    ("dot", ["f32[2,3]", "f32[4,5]"],
     {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}, None, "contracting"),
    ("dot", ["f32[2,3]", "f32[3,5]"],
     {"lhs_contracting_dims": (2,), "rhs_contracting_dims": (0,)}, None,
     "lhs_contracting_dims"),
    ("convolution", ["f32[1,5,5,3]", "f32[3,3,2,4]"],
     {"dim_labels": ConvDimensionNumbers.from_string("b01f_01io->b01f"),
      "window": Window.make((3, 3))}, None, "input features"),
    ("convolution", ["f32[1,5,5,2]", "f32[3,3,2,4]"],
     {"dim_labels": ConvDimensionNumbers.from_string("b01f_01io->b01f"),
      "window": Window.make((2, 3))}, None, "window"),
    ("fft", ["f32[8]"], {"fft_type": "FFT", "fft_length": (8,)}, None, "complex"),
    ("fft", ["c64[3,6]"], {"fft_type": "IRFFT", "fft_length": (8,)}, None, "IRFFT"),
    ("cholesky", ["f32[2,3]"], {}, None, "square"),
    ("triangular-solve", ["f32[3,3]", "f32[4,5]"], {"left_side": True}, None, "does not fit"),
    ("batch-norm-training", ["f32[2,4]", "f32[3]", "f32[4]"],
     {"epsilon": 1e-3, "feature_index": 1}, None, "scale"),
    ("rng-bit-generator", ["u32[2]"], {"algorithm": "rng_default"}, "(u32[2], u32[4])", "u64"),
    ("rng", ["f32[]", "s32[]"], {"distribution": "rng_uniform"}, "f32[3]", "operand 1"),
    ("after-all", ["f32[]"], {}, None, "token"),
    ("reduce-scatter", ["f32[7,3]"],
     {"dimensions": (0,), "replica_groups": "{{0,1}}", "to_apply": ADD_F32}, None, "divisible"),
]


@pytest.mark.parametrize("opcode,operands,attrs,declared,fragment", INVALID,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(INVALID)])
def test_invalid(opcode, operands, attrs, declared, fragment):
    with pytest.raises(ShapeError) as info:
        infer_shape(opcode, [S(o) for o in operands], attrs, S(declared) if declared else None)
    msg = str(info.value)
    assert msg.startswith(f"{opcode}:")
    assert fragment in msg
    for o in operands:
        assert shape_text(S(o)) in msg


def test_add_message_matches_xla_style():
    with pytest.raises(ShapeError) as info:
        infer_shape("add", [S("f32[2,3]"), S("f32[3,2]")], {})
    assert str(info.value) == ("add: operands f32[2,3] and f32[3,2] must have the same dimensions"
                               " (implicit broadcast is not allowed in HLO)")


def test_convolution_matches_numpy_reference_sizes():
    # Output spatial size of a strided, padded, dilated 1-D convolution, checked by brute force.
    for n, k, stride, lo, hi, ld, rd in [(7, 3, 2, 1, 0, 1, 2), (5, 2, 1, 0, 3, 2, 1),
                                         (4, 4, 3, 2, 2, 1, 1)]:
        base = (n - 1) * ld + 1 + lo + hi
        win = (k - 1) * rd + 1
        brute = len(range(0, base - win + 1, stride))
        got = infer_shape("convolution", [S(f"f32[1,1,{n}]"), S(f"f32[1,1,{k}]")],
                          {"dim_labels": ConvDimensionNumbers.from_string("bf0_oi0->bf0"),
                           "window": Window.make((k,), (stride,), ((lo, hi),), (ld,), (rd,))})
        assert got.dims == (1, 1, brute)


def test_constant_literal_shape_checked():
    lit = np.zeros((2, 3), np.float32)
    assert infer_shape("constant", [], {"__literal__": lit}).dims == (2, 3)
    with pytest.raises(ShapeError, match="literal"):
        infer_shape("constant", [], {"__literal__": lit}, S("f32[3,2]"))


def test_while_and_conditional_signatures():
    from xlapy.hlo.builder import XlaBuilder
    state = S("(s32[], f32[4])")
    cb = XlaBuilder("cond")
    p = cb.parameter(state)
    cb.compare(cb.get_tuple_element(p, 0), cb.constant(10), "LT")
    cond = cb.build()
    bb = XlaBuilder("body")
    p = bb.parameter(state)
    bb.tuple([bb.add(bb.get_tuple_element(p, 0), bb.constant(1)), bb.get_tuple_element(p, 1)])
    body = bb.build()
    assert infer_shape("while", [state], {"condition": cond, "body": body}).compatible(state)
    with pytest.raises(ShapeError, match="condition"):
        infer_shape("while", [state], {"condition": body, "body": body})
    bad = XlaBuilder("bad_body")
    p = bad.parameter(state)
    bad.tuple([bad.get_tuple_element(p, 0), bad.get_tuple_element(p, 0)])
    with pytest.raises(ShapeError, match="body=bad_body .* must return the loop state"):
        infer_shape("while", [state], {"condition": cond, "body": bad.build()})
    # conditional: index form with two branches of the same result
    got = infer_shape("conditional", [S("s32[]"), state, state],
                      {"branch_computations": (body, body)})
    assert got.compatible(state)
    with pytest.raises(ShapeError, match="branch_computations"):
        infer_shape("conditional", [S("s32[]"), state, state],
                    {"branch_computations": (body, cond)})
