"""HLO text parser and printer: XLA's own examples, literals, shapes, attributes, round trips."""
from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from xlapy.hlo import types as T
from xlapy.hlo.attrs import ConvDimensionNumbers, OpMetadata, RawAttr, Window, quote_string
from xlapy.hlo.ir import AliasEntry, HloComputation, HloInstruction, HloModule, literal_equal
from xlapy.hlo.literal import format_literal, to_literal, unescape_string
from xlapy.hlo.parser import parse_module, parse_shape
from xlapy.hlo.replica_groups import ReplicaGroups
from xlapy.hlo.sharding import HloSharding
from xlapy.hlo.shape import UNBOUNDED, Layout, ProgramShape, Shape
from conformance import CASES_DIR

DATA = Path(__file__).parent / "data" / "hlo"

ADD_F32 = """%add_F32.v3 (lhs: f32[], rhs: f32[]) -> f32[] {
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %add = f32[] add(f32[] %lhs, f32[] %rhs)
}

"""
GE_F32 = """%ge_F32.v3 (lhs: f32[], rhs: f32[]) -> pred[] {
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %greater-than-or-equal-to = pred[] compare(f32[] %lhs, f32[] %rhs), direction=GE
}

"""


def round_trip(text: str) -> HloModule:
    """Parse; check that print -> parse -> print is stable in long and short form."""
    m = parse_module(text)
    printed = m.to_text()
    assert parse_module(printed).to_text() == printed
    assert parse_module(m.to_text(long=False)).to_text() == printed
    return m


def exact(text: str) -> HloModule:
    """Text already in XLA's printed form must print back byte for byte."""
    m = round_trip(text)
    assert m.to_text() == text
    return m


def entry_module(body: str, sig: str = "", callees: str = "", header: str = "") -> str:
    return f"HloModule m{header}\n\n{callees}ENTRY %e {sig}{{\n{body}\n}}\n\n"


# ---------------------------------------------------------------- XLA's examples (reference 2.4)
@pytest.mark.parametrize("name", ["axpy", "while", "fusion"])
def test_golden_files_print_back_exactly(name):
    m = exact((DATA / f"{name}.hlo").read_text())
    assert m.entry.root.opcode in ("add", "while", "fusion")


def test_axpy_header_and_params():
    m = parse_module((DATA / "axpy.hlo").read_text())
    layout = m.entry_computation_layout
    assert isinstance(layout, ProgramShape)
    assert [s.to_text() for s in layout.parameters] == ["f32[]", "f32[2,4]{1,0}", "f32[2,4]{1,0}"]
    assert [p.name for p in m.entry.parameters] == ["alpha", "x", "y"]
    b = m.entry.instruction("broadcast")
    assert b.attrs["dimensions"] == () and b.operands == [m.entry.parameters[0]]
    assert m.entry.root.name == "add" and m.entry.root.operands[1] is m.entry.parameters[2]
    assert m.entry.parameters[0].users == [b]


def test_while_attributes_are_computations():
    m = parse_module((DATA / "while.hlo").read_text())
    w = m.entry.root
    assert w.attrs["condition"] is m.computation("condition.v3")
    assert w.attrs["body"] is m.computation("body.v3")
    assert m.computation("condition.v3").root.attrs["direction"] == "GT"
    assert m.entry.program_shape.parameters == []


def test_metadata_and_string_backend_config_escapes():
    text = entry_module(
        '  ROOT %constant = pred[] constant(true), metadata={op_type="const" op_name="\\"it\\\'s '
        'not a problem\\n" source_file="path/to/test.cc" source_line=68}, '
        'backend_config="foo\\" bar"', "() -> pred[] ")
    m = exact(text)
    c = m.entry.root
    assert bool(c.literal) is True and c.literal.dtype == np.bool_
    assert c.metadata.op_name == "\"it's not a problem\n"
    assert c.metadata.source_line == 68 and c.metadata.source_file == "path/to/test.cc"
    assert c.attrs["backend_config"] == 'foo" bar'


def test_short_form_reduce_and_variadic_reduce():
    text = """HloModule R

add_F32.v3 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT add = f32[] add(lhs, rhs)
}

max_argmax {
  a = f32[] parameter(0)
  i = s32[] parameter(1)
  b = f32[] parameter(2)
  j = s32[] parameter(3)
  ROOT t = (f32[], s32[]) tuple(a, i)
}

ENTRY ReduceR3ToR2.v3 {
  input = f32[8,16,256]{2,1,0} parameter(0)
  constant = f32[] constant(0)
  r = f32[8,16]{1,0} reduce(input, constant), dimensions={2}, to_apply=add_F32.v3
  values = f32[4]{0} parameter(1)
  indices = s32[4]{0} parameter(2)
  init_value = f32[] constant(-inf)
  init_index = s32[] constant(0)
  ROOT result = (f32[], s32[]) reduce(values, indices, init_value, init_index), dimensions={0}, to_apply=max_argmax
}
"""
    m = round_trip(text)
    assert m.to_text(long=False) == text + "\n"
    root = m.entry.root
    assert root.attrs["to_apply"] is m.computation("max_argmax")
    assert len(root.operands) == 4 and root.shape.is_tuple
    assert m.entry.instruction("init_value").literal == -np.inf


def test_dot_conv_window_dim_labels():
    body = """  %a = f32[2,3]{1,0} parameter(0)
  %b = f32[3,2]{1,0} parameter(1)
  %dot = f32[2,2]{1,0} dot(f32[2,3]{1,0} %a, f32[3,2]{1,0} %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %input = f32[128,7,7,512]{0,3,2,1} parameter(2)
  %filter = f32[3,3,512,512]{3,2,1,0} parameter(3)
  %convolution-base-dilated = f32[128,14,14,512]{0,3,2,1} convolution(f32[128,7,7,512]{0,3,2,1} %input, f32[3,3,512,512]{3,2,1,0} %filter), window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2 rhs_reversal=1x1}, dim_labels=b01f_01oi->b01f
  ROOT %r = f32[100]{0} custom-call(), window={size=2x2}, dim_labels=b01f_01io->b01f, feature_group_count=2, custom_call_target=\"target\""""
    m = exact(entry_module(body, "(a: f32[2,3], b: f32[3,2], input: f32[128,7,7,512], "
                                 "filter: f32[3,3,512,512]) -> f32[100] "))
    conv = m.entry.instruction("convolution-base-dilated")
    w = conv.attrs["window"]
    assert isinstance(w, Window) and [d.size for d in w.dims] == [3, 3]
    assert [(d.pad_lo, d.pad_hi, d.lhs_dilate, d.rhs_reversal) for d in w.dims] == \
        [(1, 2, 2, True)] * 2
    dn = conv.attrs["dim_labels"]
    assert isinstance(dn, ConvDimensionNumbers)
    assert (dn.input_batch, dn.input_feature, dn.kernel_output_feature) == (0, 3, 2)
    assert m.entry.instruction("dot").attrs["lhs_contracting_dims"] == (1,)
    assert m.entry.root.attrs["custom_call_target"] == "target"


def test_reduce_window_select_and_scatter():
    body = """  %operand = f32[13,12,8,15]{0,3,2,1} parameter(0)
  %constant = f32[] constant(0)
  %reduce-window = f32[13,3,8,15]{0,3,2,1} reduce-window(f32[13,12,8,15]{0,3,2,1} %operand, f32[] %constant), window={size=1x1x7x1 stride=1x4x1x1 pad=0_0x0_0x3_3x0_0}, to_apply=%add_F32.v3
  %constant.1 = f32[4,5,1,1]{3,2,1,0} parameter(1)
  %constant.2 = f32[2,2,1,1]{3,2,1,0} parameter(2)
  ROOT %select-and-scatter = f32[4,5,1,1]{3,2,1,0} select-and-scatter(f32[4,5,1,1]{3,2,1,0} %constant.1, f32[2,2,1,1]{3,2,1,0} %constant.2, f32[] %constant), window={size=2x3x1x1 stride=2x2x1x1}, select=%ge_F32.v3, scatter=%add_F32.v3"""
    m = exact(entry_module(body, "(operand: f32[13,12,8,15], constant.1: f32[4,5,1,1], "
                                 "constant.2: f32[2,2,1,1]) -> f32[4,5,1,1] ",
                           ADD_F32 + GE_F32))
    rw = m.entry.instruction("reduce-window")
    assert [d.stride for d in rw.attrs["window"].dims] == [1, 4, 1, 1]
    assert m.entry.root.attrs["select"].name == "ge_F32.v3"
    assert [c.name for c in m.computations_post_order()] == ["add_F32.v3", "ge_F32.v3", "e"]


def test_gather_scatter():
    body = """  %input_tensor = f32[50,49,48,47,46]{4,3,2,1,0} parameter(0)
  %start_indices = s64[10,9,8,7,5]{4,3,2,1,0} parameter(1)
  %gather = f32[10,9,8,7,30,29,28,27,26]{8,7,6,5,4,3,2,1,0} gather(f32[50,49,48,47,46]{4,3,2,1,0} %input_tensor, s64[10,9,8,7,5]{4,3,2,1,0} %start_indices), offset_dims={4,5,6,7,8}, collapsed_slice_dims={}, start_index_map={0,1,2,3,4}, index_vector_dim=4, slice_sizes={30,29,28,27,26}
  %updates = f32[10,9,8,7,30,29,28,27,26]{8,7,6,5,4,3,2,1,0} parameter(2)
  ROOT %scatter = f32[50,49,48,47,46]{4,3,2,1,0} scatter(f32[50,49,48,47,46]{4,3,2,1,0} %input_tensor, s64[10,9,8,7,5]{4,3,2,1,0} %start_indices, f32[10,9,8,7,30,29,28,27,26]{8,7,6,5,4,3,2,1,0} %updates), update_window_dims={4,5,6,7,8}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1,2,3,4}, index_vector_dim=4, indices_are_sorted=true, to_apply=%add_F32.v3"""
    m = exact(entry_module(body, "(input_tensor: f32[50,49,48,47,46], start_indices: "
                                 "s64[10,9,8,7,5], updates: f32[10,9,8,7,30,29,28,27,26]) -> "
                                 "f32[50,49,48,47,46] ", ADD_F32))
    g = m.entry.instruction("gather")
    assert g.attrs["collapsed_slice_dims"] == () and g.attrs["slice_sizes"] == (30, 29, 28, 27, 26)
    assert m.entry.root.attrs["indices_are_sorted"] is True


def test_conditional_both_forms():
    comps = "".join(f"""%{n} (x: f32[]) -> f32[] {{
  %x = f32[] parameter(0)
  ROOT %r = f32[] {op}(f32[] %x)
}}

""" for n, op in (("Negate", "negate"), ("Identity", "copy"), ("Floor", "floor")))
    body = """  %constant = s32[] constant(1)
  %constant.1 = f32[] constant(56)
  %pred = pred[] constant(false)
  %c2 = f32[] conditional(pred[] %pred, f32[] %constant.1, f32[] %constant.1), true_computation=%Negate, false_computation=%Identity
  ROOT %conditional = f32[] conditional(s32[] %constant, f32[] %constant.1, f32[] %c2, f32[] %constant.1), branch_computations={%Negate, %Identity, %Floor}"""
    m = exact(entry_module(body, "() -> f32[] ", comps))
    assert [c.name for c in m.entry.root.attrs["branch_computations"]] == \
        ["Negate", "Identity", "Floor"]
    assert m.entry.instruction("c2").attrs["true_computation"] is m.computation("Negate")


def test_slice_pad_iota_compare_sharding_custom_call():
    body = """  %p0 = f32[3,3,4,4]{3,2,1,0} parameter(0)
  %slice = f32[3,3,2,4]{3,2,1,0} slice(f32[3,3,4,4]{3,2,1,0} %p0), slice={[0:3], [0:3], [0:4:2], [0:4]}
  %constant = f32[3]{0} constant({1, 2, 3})
  %constant.1 = f32[] constant(0.1)
  %pad = f32[7]{0} pad(f32[3]{0} %constant, f32[] %constant.1), padding=3_1
  %input = f32[1,25,7,7]{3,2,1,0} parameter(1)
  %pad.1 = f32[1,25,17,11]{3,2,1,0} pad(f32[1,25,7,7]{3,2,1,0} %input, f32[] %constant.1), padding=0_0_0x0_0_0x2_2_1x2_2_0
  %iota = f32[100]{0} iota(), iota_dimension=0
  %greater-than = pred[3]{0} compare(f32[3]{0} %constant, f32[3]{0} %constant), direction=GT, type=TOTALORDER, sharding={replicated}
  ROOT %custom-call = f32[1,2,3]{0,2,1} custom-call(f32[3]{0} %constant), custom_call_target="foo\\"bar", backend_config={key: "value"}"""
    m = exact(entry_module(body, "(p0: f32[3,3,4,4], input: f32[1,25,7,7]) -> f32[1,2,3] "))
    e = m.entry
    assert e.instruction("slice").attrs["slice"] == ((0, 3, 1), (0, 3, 1), (0, 4, 2), (0, 4, 1))
    assert e.instruction("pad").attrs["padding"] == ((3, 1, 0),)
    assert e.instruction("pad.1").attrs["padding"][2] == (2, 2, 1)
    assert e.instruction("greater-than").attrs["sharding"] == HloSharding.replicate()
    assert e.root.attrs["backend_config"] == RawAttr('{key: "value"}')
    assert e.root.attrs["custom_call_target"] == 'foo"bar'
    # XLA's older spelling with explicit stride 1 parses to the same slice
    old = parse_module(entry_module("  %p = f32[4]{0} parameter(0)\n  ROOT %s = f32[2]{0} "
                                    "slice(%p), slice={[0:2:1]}"))
    assert old.entry.root.attrs["slice"] == ((0, 2, 1),)


def test_input_output_alias_collectives_composite():
    text = """HloModule add_one_aliased, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, must-alias) }, buffer_donor={ (2, {}) }, replica_count=2, num_partitions=1, alias_passthrough_params=true, some_future_attr={a=[1,2]}

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main.5 (x: f32[], y: f32[128,32], z: f32[]) -> (f32[], f32[128,32]) {
  %x = f32[] parameter(0), sharding={replicated}
  %constant = f32[] constant(1)
  %add_result = f32[] add(f32[] %x, f32[] %constant)
  %y = f32[128,32]{0,1} parameter(1)
  %all-reduce = f32[128,32]{0,1} all-reduce(f32[128,32]{0,1} %y), replica_groups={{0,1},{2,3}}, to_apply=%add
  %all-reduce.1 = f32[128,32]{0,1} all-reduce(f32[128,32]{0,1} %all-reduce), channel_id=1, replica_groups=[2,10]<=[20], use_global_device_ids=true, to_apply=%add
  %z = f32[] parameter(2)
  %call = f32[] call(f32[] %z), to_apply=%add_one, is_composite=true, frontend_attributes={composite.name="foo.bar",composite.version="1"}
  ROOT %tuple_result = (f32[], f32[128,32]{0,1}) tuple(f32[] %add_result, f32[128,32]{0,1} %all-reduce.1)
}

%add_one (a: f32[]) -> f32[] {
  ROOT %a = f32[] parameter(0)
}

"""
    m = round_trip(text)
    assert m.input_output_alias == [AliasEntry((0,), 0, (), "may-alias"),
                                    AliasEntry((1,), 1, (), "must-alias")]
    assert m.attributes["buffer_donor"] == [(2, ())]
    assert m.attributes["replica_count"] == 2 and m.attributes["alias_passthrough_params"] is True
    assert m.attributes["some_future_attr"] == RawAttr("{a=[1,2]}")
    assert list(m.attributes) == ["input_output_alias", "buffer_donor", "replica_count",
                                  "num_partitions", "alias_passthrough_params",
                                  "some_future_attr"]
    e = m.entry
    assert e.instruction("all-reduce").attrs["replica_groups"] == \
        ReplicaGroups.of([[0, 1], [2, 3]])
    assert e.instruction("all-reduce.1").attrs["replica_groups"] == \
        ReplicaGroups.iota_form(2, 10, [20])
    call = e.instruction("call")
    assert call.attrs["to_apply"] is m.computation("add_one")    # defined after its use
    assert call.attrs["frontend_attributes"] == {"composite.name": "foo.bar",
                                                 "composite.version": "1"}
    assert m.to_text().splitlines()[0] == text.splitlines()[0]


# ---------------------------------------------------------------- literals
def _const(shape: str, payload: str) -> HloInstruction:
    m = round_trip(entry_module(f"  ROOT %c = {shape} constant({payload})"))
    return m.entry.root


@pytest.mark.parametrize("shape,payload,printed", [
    ("f32[]", "nan", "nan"), ("f32[]", "-nan", "-nan"), ("f32[]", "inf", "inf"),
    ("f32[]", "-inf", "-inf"), ("f32[]", "-0", "-0"), ("f32[]", "3.0", "3"),
    ("f32[]", "0.0078125", "0.0078125"), ("f32[]", "1e-07", "1e-07"),
    ("f32[]", "3.14159274", "3.14159274"), ("f64[]", "0.1", "0.1"),
    ("f64[]", "2.2250738585072014e-308", "2.2250738585072014e-308"),
    ("f32[]", "nan(0x1)", "nan(0x1)"), ("f32[]", "-nan(0x7)", "-nan(0x7)"),
    ("bf16[]", "0.1", "0.1001"), ("f16[]", "65504", "65504"), ("f16[]", "0.1", "0.099976"),
    ("f8e4m3fn[]", "448", "448"), ("f8e5m2[]", "-0.25", "-0.25"),
    ("s4[]", "-8", "-8"), ("u4[]", "15", "15"), ("u64[]", "18446744073709551615",
                                                 "18446744073709551615"),
    ("s64[]", "-9223372036854775808", "-9223372036854775808"),
    ("pred[]", "true", "true"), ("pred[]", "0", "false"),
    ("c64[]", "(1, -2.5)", "(1, -2.5)"), ("c128[]", "(nan, inf)", "(nan, inf)"),
    ("s32[2,2]{1,0}", "{ { 1, 2 }, { 3, 4 } }", "{ { 1, 2 }, { 3, 4 } }"),
    ("pred[4]{0}", "{true, false, 1, 0}", "{1, 0, 1, 0}"),
    ("f32[0,4]{1,0}", "{  }", "{  }"), ("f32[2,0]{1,0}", "{ { }, {} }", "{ {}, {} }"),
    ("f32[0]{0}", "{}", "{}"), ("f32[2,1]{1,0}", "{ {1}, {2} }", "{ {1}, {2} }"),
    ("c64[2]{0}", "{(1, 2), (3, 4)}", "{(1, 2), (3, 4)}"),
    ("(f32[2]{0}, s32[])", "( {1, 2}, 3 )", "( {1, 2}, 3 )"),
    ("((s32[], pred[]), f32[0]{0})", "( ( 1, true ), {} )", "( ( 1, true ), {} )"),
])
def test_literal_round_trip(shape, payload, printed):
    c = _const(shape, payload)
    assert format_literal(c.literal, c.shape) == printed
    again = parse_module(c.parent.parent.to_text()).entry.root
    assert literal_equal(c.literal, again.literal)


def test_literal_values_are_exact():
    assert _const("f32[]", "3.0").literal.dtype == np.float32
    assert np.asarray(_const("bf16[]", "0.1").literal).view(np.uint16) == \
        np.array(0.1, ml_dtypes.bfloat16).view(np.uint16)
    nan1 = _const("f32[]", "nan(0x1)").literal
    assert np.asarray(nan1).view(np.uint32) == 0x7F800001
    neg = _const("f32[]", "-nan").literal
    assert math.isnan(neg) and np.signbit(neg)
    assert np.signbit(_const("f32[]", "-0").literal)
    assert _const("u64[]", "18446744073709551615").literal == np.uint64(2**64 - 1)
    c = _const("c64[]", "(1, -2.5)").literal
    assert c == np.complex64(1 - 2.5j)
    t = _const("(f32[2]{0}, s32[])", "( {1, 2}, 3 )").literal
    assert isinstance(t, tuple) and t[0].tolist() == [1.0, 2.0] and t[1] == 3
    arr = _const("s32[2,3]{1,0}", "{ { /*i0=0*/ 1, 2, 3 },\n { 4,\t5, 6 } }").literal
    np.testing.assert_array_equal(arr, [[1, 2, 3], [4, 5, 6]])


def test_rank4_literal_prints_index_comments():
    value = np.arange(8, dtype=np.float32).reshape(2, 2, 1, 2)
    text = format_literal(value, Shape.array("f32", (2, 2, 1, 2)))
    assert text == ("{ { /*i0=0*/ { /*i1=0*/ { 0, 1 } }, { /*i1=1*/ { 2, 3 } } }, "
                    "{ /*i0=1*/ { /*i1=0*/ { 4, 5 } }, { /*i1=1*/ { 6, 7 } } } }")


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f16", "f8e4m3fn", "f8e5m2",
                                   "f8e4m3b11fnuz", "f8e5m2fnuz", "f8e3m4", "f4e2m1fn"])
def test_every_float_bit_pattern_round_trips(dtype):
    et = T.BY_NAME[dtype]
    rng = np.random.default_rng(0)
    if et.bits <= 16:
        n = 1 << et.bits
        raw = np.arange(n, dtype=np.uint16 if et.bits == 16 else np.uint8)
    else:
        raw = rng.integers(0, 2**et.bits, 4000, dtype=np.uint64).astype(
            np.uint32 if et.bits == 32 else np.uint64)
    values = raw.view(et.dtype) if raw.itemsize == et.dtype.itemsize else raw.astype(et.dtype)
    shape = Shape.array(et, values.shape, (0,))
    m = HloModule("m")
    comp = HloComputation("e")
    comp.add_instruction(HloInstruction("constant", shape, literal=values, name="c"))
    comp.root = comp.instructions[0]
    m.add_computation(comp, is_entry=True)
    back = parse_module(m.to_text()).entry.root.literal
    assert back.tobytes() == values.tobytes()


def test_elided_constant_prints_back():
    m = round_trip(entry_module("  ROOT %c = f32[100]{0} constant({...})"))
    assert m.entry.root.literal is None
    assert "constant({...})" in m.to_text()
    big = round_trip(entry_module("  ROOT %c = s32[11]{0} constant({0, 1, 2, 3, 4, 5, 6, 7, 8, "
                                  "9, 10})"))
    assert "constant({...})" in big.to_text(print_large_constants=False)
    assert "constant({0, 1," in big.to_text()


# ---------------------------------------------------------------- shapes
@pytest.mark.parametrize("text", [
    "f32[2,3]{1,0}", "f32[]", "pred[7]", "token[]", "()", "(f32[], (s32[4]{0}, ()))",
    "f32[<=4]", "f32[2,<=5]{1,0}", "f32[?,3]", "bf16[8,128]{1,0:T(8,128)(2,1)}",
    "f32[4]{0:S(1)}", "u32[]{:S(2)}", "s4[16]{0}", "f8e4m3fn[3]", "c128[1,1]{0,1}",
])
def test_shapes_round_trip(text):
    s = parse_shape(text)
    assert s.to_text() == text
    assert parse_shape(s.to_text()) == s


def test_shape_details():
    s = parse_shape("f32[?,<=3]")
    assert s.dims == (UNBOUNDED, 3) and s.dynamic == (True, True)
    assert parse_shape("f32[2,3]").layout is None
    assert parse_shape("u32[]{:S(2)}").layout == Layout((), "S(2)")
    t = parse_shape("(f32[], /*index=1*/s32[2]{0})")
    assert t.is_tuple and t.tuple_shapes[1] == Shape.array("s32", (2,), (0,))
    assert parse_shape("token[]").is_token


# ---------------------------------------------------------------- module structure
def test_stack_frame_tables_round_trip():
    text = (CASES_DIR / "seed" / "seed_mean_sq" / "module.optimized.hlo")
    source = text.read_text() if text.exists() else None
    body = """HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

FileNames
1 "make_corpus.py"
2 "dir/\\"odd\\".py"

FunctionNames
1 "<module>"

FileLocations
1 {file_name_id=1 function_name_id=1 line=365 end_line=365 column=13 end_column=19}
2 {file_name_id=2 function_name_id=1 line=1 end_line=2 column=3 end_column=4}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=1}


ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0), metadata={op_name="x"}
  ROOT %n = f32[8]{0} negate(%x), metadata={op_name="jit(f)/neg" stack_frame_id=2}
}

"""
    m = parse_module(body)
    sf = m.stack_frames
    assert sf.file_names == ["make_corpus.py", 'dir/"odd".py']
    assert sf.file_locations[1] == {"file_name_id": 2, "function_name_id": 1, "line": 1,
                                    "end_line": 2, "column": 3, "end_column": 4}
    assert sf.stack_frames == [(1, 1), (2, 1)]
    assert sf.frame(2) == {"file": 'dir/"odd".py', "function": "<module>", "line": 1}
    assert m.to_text() == body.replace("negate(%x)", "negate(f32[8]{0} %x)")
    if source is not None:
        printed = parse_module(source).to_text()
        assert printed.split("%region_0.1")[0] == source.split("%region_0.1")[0]


def test_control_predecessors_anonymous_operands_execution_thread():
    text = """HloModule m

%host (p: f32[]) -> f32[] {
  ROOT %p = f32[] parameter(0)
}, execution_thread="host"

ENTRY %e {
  %a = f32[10]{0} parameter(0)
  %b = f32[10]{0} copy(%a)
  %c = f32[10]{0} copy(%a), control-predecessors={%b}
  ROOT %r = f32[10]{0} add(f32[10]{0} parameter(1), f32[10]{0} multiply(f32[10] parameter(2), %c)), metadata={op_name="r"}
}
"""
    m = round_trip(text)
    e = m.entry
    c = e.instruction("c")
    assert c.control_predecessors == [e.instruction("b")] and "control-predecessors" not in c.attrs
    names = [i.name for i in e.instructions]
    assert names == ["a", "b", "c", "parameter.anon", "parameter.anon.1", "multiply.anon", "r"]
    assert e.parameters[2].name == "parameter.anon.1" and e.parameters[1].shape.layout == Layout((0,))
    assert e.root.operands[1].opcode == "multiply" and e.root.metadata.op_name == "r"
    assert m.computation("host").execution_thread == "host"
    assert '}, execution_thread="host"' in m.to_text()
    assert "control-predecessors={%b}" in m.to_text()
    assert "control-predecessors={b}" in m.to_text(long=False)


def test_forward_references_are_resolved_and_reordered():
    m = round_trip(entry_module("  ROOT %r = f32[] add(%x, %y)\n  %x = f32[] parameter(0)\n"
                                "  %y = f32[] negate(%x)"))
    e = m.entry
    assert e.root.name == "r"
    assert [i.name for i in e.instructions] == ["x", "y", "r"]
    assert m.to_text().index("%y = ") < m.to_text().index("ROOT %r")


def test_no_root_means_last_and_no_entry_means_last():
    m = round_trip("HloModule m\n\nfirst {\n  ROOT a = f32[] parameter(0)\n}\n\n"
                   "second {\n  a = f32[] parameter(0)\n  b = f32[] negate(a)\n}\n")
    assert m.entry.name == "second" and m.entry.root.name == "b"
    assert m.entry.is_entry and not m.computation("first").is_entry


def test_attribute_kinds():
    body = """  %p = f32[4,4]{1,0} parameter(0), parameter_replication={true}
  %t = f32[4,4]{1,0} transpose(%p), dimensions={1,0}, frontend_attributes={_xla="x y",k=bare}
  %g = (f32[4,4]{1,0}, s32[]) custom-call(%t), custom_call_target="lapack_spotrf_ffi", operand_layout_constraints={f32[4,4]{0,1}}, output_to_operand_aliasing={{0}: (0, {}), {1}: (0, {1,2})}, api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}
  %bn = f32[4,4]{1,0} reduce-precision(%t), exponent_bits=5, mantissa_bits=10, statistics={visualizing_index=1,stat-1=33}, mystery={a, {b}}, metadata={op_type="x" profile_type={1,2} deduplicated_name="d" preserve=true source_line=-3}
  %cp = f32[4,4]{1,0} collective-permute(%bn), channel_id=2, source_target_pairs={{0,1},{1,0}}, slice_sizes={{2,2}}
  %d = f32[4,4]{1,0} dot(%cp, %t), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,default}, algorithm=dot_bf16_bf16_f32
  %bt = (f32[4]{0}, f32[4]{0}, f32[4]{0}) batch-norm-training(%d, %s, %s), epsilon=0.001, feature_index=1
  %s = f32[4]{0} parameter(1)
  %cc = f32[4]{0} custom-call-start(%s), custom_call_target="async_thing"
  ROOT %w = f32[4,4]{1,0} convolution(%d, %d), window={}, dim_labels=bf_io->bf"""
    m = round_trip(entry_module(body))
    e = m.entry
    assert e.instruction("p").attrs["parameter_replication"] == (True,)
    assert e.instruction("t").attrs["frontend_attributes"] == {"_xla": "x y", "k": "bare"}
    g = e.instruction("g")
    assert g.attrs["operand_layout_constraints"] == (parse_shape("f32[4,4]{0,1}"),)
    assert g.attrs["output_to_operand_aliasing"] == (((0,), 0, ()), ((1,), 0, (1, 2)))
    assert g.attrs["api_version"] == "API_VERSION_TYPED_FFI"
    assert g.attrs["backend_config"] == RawAttr("{uplo = 76 : ui8}")
    bn = e.instruction("bn")
    assert bn.attrs["mystery"] == RawAttr("{a, {b}}")
    assert bn.attrs["statistics"] == RawAttr("{visualizing_index=1,stat-1=33}")
    md = bn.metadata
    assert isinstance(md, OpMetadata)
    assert md.fields == (("op_type", "x"), ("profile_type", RawAttr("{1,2}")),
                         ("deduplicated_name", "d"), ("preserve", RawAttr("true")),
                         ("source_line", -3))
    assert e.instruction("cp").attrs["slice_sizes"] == ((2, 2),)
    d = e.instruction("d")
    assert d.attrs["operand_precision"] == ("highest", "default")
    assert d.attrs["algorithm"] == "dot_bf16_bf16_f32"
    assert e.instruction("bt").attrs["epsilon"] == 0.001
    assert e.instruction("cc").opcode == "custom-call-start"
    assert e.root.attrs["window"] == Window(())
    text = m.to_text()
    assert "epsilon=0.001," in text and "window={}" in text and "mystery={a, {b}}" in text
    assert text.index("metadata=") > text.index("mystery=")


def test_quote_string_escapes():
    assert quote_string('a"b\\c\n\t\'') == '"a\\"b\\\\c\\n\\t\\\'"'
    assert quote_string("é") == '"\\303\\251"'
    for s in ["plain", 'q"uote', "back\\slash", "new\nline", "é ∑ \x01", "it's"]:
        assert unescape_string(quote_string(s)[1:-1]) == s
    assert unescape_string("\\x41\\101\\?") == "AA?"


def test_to_literal_and_builder_printing():
    shape = parse_shape("(f32[2]{0}, pred[])")
    lit = to_literal(([1, 2], True), shape)
    assert lit[0].dtype == np.float32 and lit[1].dtype == np.bool_
    assert format_literal(lit, shape) == "( {1, 2}, true )"
    m = HloModule("built")
    comp = HloComputation("main")
    p = comp.add_instruction(HloInstruction("parameter", parse_shape("f32[2]{0}"), name="p",
                                            parameter_number=0))
    ops = [comp.add_instruction(HloInstruction("negate", p.shape, [p], name=f"n{i}"))
           for i in range(6)]
    comp.root = comp.add_instruction(HloInstruction(
        "tuple", Shape.tuple([o.shape for o in ops]), ops, name="t"))
    m.add_computation(comp, is_entry=True)
    text = m.to_text()
    assert ", /*index=5*/f32[2]{0} %n5)" in text
    assert parse_module(text) == m
