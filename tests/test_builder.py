"""XlaBuilder tests: built programs have the right shapes, names, layouts and verify."""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.errors import InvalidArgumentError, ShapeError
from xlapy.hlo import types as T
from xlapy.hlo.attrs import OpMetadata
from xlapy.hlo.builder import XlaBuilder, build_module, comparator_computation, scalar_computation
from xlapy.hlo.shape import Layout, Shape
from xlapy.hlo.verifier import verify_module


def test_sum_of_x_plus_y_times_z():
    b = XlaBuilder("sum_xyz")
    x, y, z = (b.parameter((T.F32, [2, 3])) for _ in range(3))
    s = b.add(x, b.multiply(y, z))
    total = b.reduce(s, b.constant(0.0), scalar_computation("add", T.F32), [0, 1])
    module = build_module(b)
    verify_module(module)
    assert total.shape.to_text() == "f32[]"
    assert s.shape.to_text() == "f32[2,3]{1,0}"          # row-major layout like XLA
    assert module.entry.root is total
    assert [p.parameter_number for p in module.entry.parameters] == [0, 1, 2]
    # the reducer comes first, then the entry
    assert module.computations[-1] is module.entry
    assert module.computations[0].root.opcode == "add"
    ecl = module.entry_computation_layout
    assert [str(p) for p in ecl.parameters] == ["f32[2,3]{1,0}"] * 3
    assert str(ecl.result) == "f32[]"


def test_unique_names_and_metadata():
    b = XlaBuilder("names")
    x = b.parameter((T.F32, [3]))
    a1 = b.add(x, x)
    with b.op_metadata(op_name="jit(f)/add", source_line=7):
        a2 = b.add(a1, x)
    a3 = b.add(a2, x)
    names = [a1.name, a2.name, a3.name]
    assert len(set(names)) == 3 and all(n.startswith("add.") for n in names)
    assert a2.metadata == OpMetadata.make(op_name="jit(f)/add", source_line=7)
    assert a1.metadata is None and a3.metadata is None


def test_shape_errors_at_build_time_name_the_op():
    b = XlaBuilder("bad")
    x = b.parameter((T.F32, [2, 3]))
    y = b.parameter((T.F32, [3, 2]))
    with pytest.raises(ShapeError, match=r"^add: operands f32\[2,3\] and f32\[3,2\]"):
        b.add(x, y)
    with pytest.raises(ShapeError, match="^dot:"):
        b.dot(x, x)
    with pytest.raises(ShapeError, match="^reshape:"):
        b.reshape(x, [5])


def test_constants_default_types():
    b = XlaBuilder("c")
    assert b.constant(1.5).shape.element_type is T.F32
    assert b.constant(3).shape.element_type is T.S32
    assert b.constant(True).shape.element_type is T.PRED
    assert b.constant(np.arange(6, dtype=np.int64).reshape(2, 3)).shape.to_text() == \
        "s64[2,3]{1,0}"
    c = b.constant([1, 2], dtype=T.BF16)
    assert c.shape.element_type is T.BF16 and c.literal.dtype == T.BF16.dtype


def test_while_loop_counts_to_ten():
    state = Shape.tuple([Shape.scalar(T.S32), Shape.array(T.F32, (4,))])
    cb = XlaBuilder("cond")
    p = cb.parameter(state)
    cb.compare(cb.get_tuple_element(p, 0), cb.constant(10), "LT")
    bb = XlaBuilder("body")
    p = bb.parameter(state)
    i, v = bb.get_tuple_element(p, 0), bb.get_tuple_element(p, 1)
    bb.tuple([bb.add(i, bb.constant(1)), bb.exp(v)])
    b = XlaBuilder("loop")
    init = b.tuple([b.constant(0), b.parameter((T.F32, [4]))])
    w = b.while_loop(cb, bb, init)
    out = b.get_tuple_element(w, 1)
    m = build_module(b)
    verify_module(m)
    assert w.shape.compatible(state)
    assert out.shape.dims == (4,)
    assert {c.name for c in m.computations} == {"cond", "body", "loop"}


def test_while_loop_with_bad_body_fails():
    state = Shape.tuple([Shape.scalar(T.S32)])
    cb = XlaBuilder("cond2")
    cb.compare(cb.get_tuple_element(cb.parameter(state), 0), cb.constant(3), "LT")
    bb = XlaBuilder("body2")
    bb.get_tuple_element(bb.parameter(state), 0)         # returns s32[], not the tuple
    b = XlaBuilder("loop2")
    with pytest.raises(ShapeError, match="^while: body=body2"):
        b.while_loop(cb, bb, b.tuple([b.constant(0)]))


def test_sort_with_comparator_and_topk():
    b = XlaBuilder("sorting")
    keys = b.parameter((T.F32, [3, 5]))
    vals = b.iota((T.S32, [3, 5]), 1)
    s = b.sort([keys, vals], comparator_computation([T.F32, T.S32], "GT"), dimension=-1,
               is_stable=True)
    t = b.topk(keys, 2)
    b.tuple([s, t])
    verify_module(build_module(b))
    assert s.shape.compatible(Shape.tuple([Shape.array(T.F32, (3, 5)),
                                           Shape.array(T.S32, (3, 5))]))
    assert s.attrs["dimensions"] == (1,)
    assert t.shape.compatible(Shape.tuple([Shape.array(T.F32, (3, 2)),
                                           Shape.array(T.S32, (3, 2))]))


def test_gather_rows_and_scatter_add():
    b = XlaBuilder("gs")
    table = b.parameter((T.F32, [10, 4]))
    idx = b.parameter((T.S32, [6, 1]))
    g = b.gather(table, idx, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0],
                 index_vector_dim=1, slice_sizes=[1, 4])
    sc = b.scatter(table, idx, g, scalar_computation("add", T.F32), update_window_dims=[1],
                   inserted_window_dims=[0], scatter_dims_to_operand_dims=[0],
                   index_vector_dim=1)
    verify_module(build_module(b))
    assert g.shape.dims == (6, 4)
    assert sc.shape.dims == (10, 4)


def test_conv_nhwc_same_padding_and_pooling():
    b = XlaBuilder("cnn")
    img = b.parameter((T.F32, [2, 8, 8, 3]))
    ker = b.parameter((T.F32, [3, 3, 3, 16]))
    conv = b.conv_general_dilated(img, ker, (1, 1), ((1, 1), (1, 1)))
    relu = b.max(conv, b.broadcast(b.constant(0.0), conv.shape.dims))
    pool = b.reduce_window(relu, b.constant(-np.inf), scalar_computation("max", T.F32),
                           (1, 2, 2, 1), (1, 2, 2, 1))
    strided = b.conv_general_dilated(img, ker, (2, 2), ((0, 0), (0, 0)))
    b.tuple([pool, strided])
    verify_module(build_module(b))
    assert conv.shape.dims == (2, 8, 8, 16)
    assert pool.shape.dims == (2, 4, 4, 16)
    assert strided.shape.dims == (2, 3, 3, 16)


def test_broadcast_in_dim_stretches_size_one_dims():
    b = XlaBuilder("bcast")
    x = b.parameter((T.F32, [1, 3]))
    y = b.broadcast_in_dim(x, [4, 3], [0, 1])
    verify_module(build_module(b))
    assert y.shape.dims == (4, 3)
    assert y.operands[0].opcode == "reshape" and y.attrs["dimensions"] == (1,)


def test_data_movement_ops():
    b = XlaBuilder("dm")
    x = b.parameter((T.F32, [4, 6]))
    i = b.constant(1)
    outs = {
        "transpose": b.transpose(x, [1, 0]),
        "slice": b.slice(x, [0, 1], [4, 6], [2, 2]),
        "dynamic_slice": b.dynamic_slice(x, [i, i], [2, 3]),
        "dus": b.dynamic_update_slice(x, b.slice(x, [0, 0], [1, 6]), [i, i]),
        "concat": b.concatenate([x, x], 1),
        "pad": b.pad(x, b.constant(0.0), [(1, 1, 0), (0, 0, 1)]),
        "reverse": b.reverse(x, [0]),
        "convert": b.convert(x, T.BF16),
        "bitcast_convert": b.bitcast_convert(x, T.U8),
        "clamp": b.clamp(b.constant(0.0), x, b.constant(1.0)),
        "select": b.select(b.compare(x, x, "EQ"), x, x),
    }
    b.tuple(list(outs.values()))
    verify_module(build_module(b))
    dims = {k: v.shape.dims for k, v in outs.items()}
    assert dims == {"transpose": (6, 4), "slice": (2, 3), "dynamic_slice": (2, 3),
                    "dus": (4, 6), "concat": (4, 12), "pad": (6, 11), "reverse": (4, 6),
                    "convert": (4, 6), "bitcast_convert": (4, 6, 4), "clamp": (4, 6),
                    "select": (4, 6)}
    assert outs["convert"].shape.element_type is T.BF16


def test_conditional_call_map_fft_rng():
    sq = XlaBuilder("square")
    p = sq.parameter((T.F32, [3]))
    sq.multiply(p, p)
    ng = XlaBuilder("negate_branch")
    ng.negate(ng.parameter((T.F32, [3])))
    b = XlaBuilder("misc")
    x = b.parameter((T.F32, [3]))
    c = b.conditional(b.constant(True), [x, x], [sq, ng])
    k = b.call(sq, [x])
    m = b.map([x, x], scalar_computation("max", T.F32))
    f = b.fft(b.parameter((T.F32, [8])), "RFFT", [8])
    state = b.constant(np.array([1, 2], np.uint64))
    r = b.rng_bit_generator("rng_default", state, (T.U32, [2, 2]))
    b.tuple([c, k, m, f, r])
    verify_module(build_module(b))
    assert c.shape.dims == (3,) and k.shape.dims == (3,) and m.shape.dims == (3,)
    assert f.shape.to_text() == "c64[5]{0}"
    assert r.shape.to_text() == "(u64[2]{0}, u32[2,2]{1,0})"


def test_unary_binary_method_names_and_aliases():
    b = XlaBuilder("ops")
    x = b.parameter((T.U32, [2]))
    assert b.shift_right_logical(x, x).opcode == "shift-right-logical"
    assert b.and_(x, x).opcode == "and"
    assert b.not_(x).opcode == "not"
    assert b.clz(x).opcode == "count-leading-zeros"
    f = b.parameter((T.F32, [2]))
    assert b.exp(f).opcode == "exponential"
    assert b.sub(f, f).opcode == "subtract"
    assert b.is_finite(f).shape.element_type is T.PRED


def test_operand_from_another_builder_rejected():
    a, b = XlaBuilder("a"), XlaBuilder("b")
    x = a.parameter((T.F32, [2]))
    with pytest.raises(InvalidArgumentError, match="not made by builder b"):
        b.negate(x)


def test_shared_subcomputation_added_once_and_name_clash_renamed():
    add = scalar_computation("add", T.F32)
    b = XlaBuilder("two_reduces")
    x = b.parameter((T.F32, [4]))
    zero = b.constant(0.0)
    r1 = b.reduce(x, zero, add, [0])
    other = XlaBuilder(add.name)              # same name, different computation
    other.maximum(other.parameter((T.F32, [])), other.parameter((T.F32, [])))
    r2 = b.reduce(x, zero, other, [0])
    b.tuple([r1, r2])
    m = build_module(b)
    verify_module(m)
    assert len(m.computations) == 3
    assert len({c.name for c in m.computations}) == 3


def test_parameter_layouts_are_row_major():
    b = XlaBuilder("lay")
    x = b.parameter((T.F32, [2, 3, 4]))
    assert x.shape.layout == Layout((2, 1, 0))


def test_build_module_makes_repeated_names_unique():
    """Two parameters given one name (e.g. two Variables both called ``w``) get distinct
    instruction names, so the module verifies and XLA can parse it."""
    from xlapy.hlo.verifier import verify_module
    b = XlaBuilder("main")
    p0 = b.parameter(Shape.array("f32", (3,)), name="w")
    p1 = b.parameter(Shape.array("f32", (3,)), name="w")
    m = b.build_module(root=b.add(p0, p1))
    names = [i.name for i in m.entry.instructions]
    assert len(set(names)) == len(names) and names[0] == "w"
    verify_module(m)
