"""Interpreter semantics of the data-movement ops (gather/scatter: test_interp_gather_scatter.py).

Each case builds one instruction directly and calls its handler on NumPy values,
comparing with NumPy or with hand-computed XLA results.
"""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.backends.interpreter import HANDLERS, Evaluator
from xlapy.errors import InvalidArgumentError
from xlapy.hlo.ir import HloInstruction
from xlapy.hlo.shape import Shape
from xlapy.hlo.types import from_dtype

RNG = np.random.default_rng(0)


def shape_of(a: np.ndarray, layout=None) -> Shape:
    return Shape.array(from_dtype(a.dtype), a.shape, layout=layout)


def run(opcode: str, result: Shape, operands: list, layouts=None, **attrs):
    """Evaluate one ``opcode`` instruction with parameter operands holding ``operands``."""
    layouts = layouts or [None] * len(operands)
    params = [HloInstruction("parameter", shape_of(np.asarray(v), lay), parameter_number=i)
              for i, (v, lay) in enumerate(zip(operands, layouts))]
    instr = HloInstruction(opcode, result, params, attrs)
    return HANDLERS[opcode](Evaluator(), instr, [np.asarray(v) for v in operands])


def f32(*dims, layout=None) -> Shape:
    return Shape.array("f32", dims, layout=layout)


def arange(*dims, dtype=np.float32) -> np.ndarray:
    return np.arange(int(np.prod(dims))).astype(dtype).reshape(dims)


# ------------------------------------------------------------------------------ broadcast etc.

@pytest.mark.parametrize("x_dims,out_dims,dims", [
    ((), (2, 3), ()),
    ((3,), (2, 3), (1,)),
    ((2,), (2, 3), (0,)),
    ((2, 3), (4, 2, 5, 3), (1, 3)),
    ((3, 2), (2, 4, 3), (2, 0)),          # unsorted dimensions: operand dims are permuted
])
def test_broadcast(x_dims, out_dims, dims):
    x = arange(*x_dims)
    got = run("broadcast", f32(*out_dims), [x], dimensions=dims)
    # Reference: expected[idx] = x[idx at dims]
    expected = np.empty(out_dims, np.float32)
    for idx in np.ndindex(*out_dims):
        expected[idx] = x[tuple(idx[d] for d in dims)]
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.float32


def test_reshape_row_major_and_transpose():
    x = arange(2, 3, 4)
    np.testing.assert_array_equal(run("reshape", f32(4, 6), [x]), x.reshape(4, 6))
    got = run("transpose", f32(4, 2, 3), [x], dimensions=(2, 0, 1))
    np.testing.assert_array_equal(got, np.transpose(x, (2, 0, 1)))
    assert got[3, 1, 2] == x[1, 2, 3]   # output dim i is operand dim perm[i]


def test_reshape_rejects_wrong_element_count():
    with pytest.raises(InvalidArgumentError):
        run("reshape", f32(5), [arange(2, 3)])


def test_scalar_operands_keep_rank_zero():
    x = np.array(3.5, np.float32)
    for opcode, attrs in [("transpose", {"dimensions": ()}), ("reverse", {"dimensions": ()}),
                          ("slice", {"slice": ()}), ("reshape", {}),
                          ("pad", {"padding": ()})]:
        operands = [x, np.float32(0)] if opcode == "pad" else [x]
        got = run(opcode, f32(), operands, **attrs)
        assert got.shape == () and float(got) == 3.5, opcode


def test_reverse_and_concatenate():
    x = arange(3, 4)
    np.testing.assert_array_equal(run("reverse", f32(3, 4), [x], dimensions=(0, 1)), x[::-1, ::-1])
    np.testing.assert_array_equal(run("reverse", f32(3, 4), [x], dimensions=(1,)), x[:, ::-1])
    y = arange(3, 2) + 100
    np.testing.assert_array_equal(run("concatenate", f32(3, 6), [x, y], dimensions=(1,)),
                                  np.concatenate([x, y], axis=1))


# ------------------------------------------------------------------------------ slices

@pytest.mark.parametrize("spec", [
    ((0, 5, 1), (0, 7, 1)),
    ((1, 5, 2), (0, 7, 3)),
    ((4, 5, 1), (6, 7, 5)),
    ((0, 0, 1), (2, 5, 1)),
])
def test_strided_slice(spec):
    x = arange(5, 7)
    expected = x[tuple(slice(a, b, c) for a, b, c in spec)]
    got = run("slice", f32(*expected.shape), [x], slice=spec)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64, np.uint32, np.int8, np.uint8])
@pytest.mark.parametrize("starts,expected_starts", [
    ((1, 2), (1, 2)),
    ((-3, 2), (0, 2)),           # negative start clamps to 0
    ((9, 100), (3, 4)),          # too large clamps to dim - size
    ((2, -1), (2, 0)),
])
def test_dynamic_slice_clamps(idx_dtype, starts, expected_starts):
    if np.dtype(idx_dtype).kind == "u" and min(starts) < 0:
        # An unsigned index is never negative: the wrapped value is huge and clamps high.
        expected_starts = tuple(e if s >= 0 else big for s, e, big in zip(starts, expected_starts,
                                                                          (3, 4)))
    x = arange(5, 7)
    idx = [np.array(s).astype(idx_dtype) for s in starts]
    got = run("dynamic-slice", f32(2, 3), [x, *idx], dynamic_slice_sizes=(2, 3))
    a, b = expected_starts
    np.testing.assert_array_equal(got, x[a:a + 2, b:b + 3])


def test_dynamic_slice_legacy_vector_start():
    x = arange(5, 7)
    got = run("dynamic-slice", f32(2, 2), [x, np.array([4, -2], np.int32)],
              dynamic_slice_sizes=(2, 2))
    np.testing.assert_array_equal(got, x[3:5, 0:2])


@pytest.mark.parametrize("starts,expected_starts", [
    ((1, 1), (1, 1)),
    ((-5, 3), (0, 3)),
    ((7, 99), (3, 4)),
])
def test_dynamic_update_slice_clamps(starts, expected_starts):
    x = arange(5, 7)
    update = -arange(2, 3) - 1
    idx = [np.int32(s) for s in starts]
    got = run("dynamic-update-slice", f32(5, 7), [x, update, *idx])
    expected = x.copy()
    a, b = expected_starts
    expected[a:a + 2, b:b + 3] = update
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(x, arange(5, 7))       # operand value not mutated


def test_dynamic_update_slice_unsigned_index_is_large():
    x = arange(4)
    got = run("dynamic-update-slice", f32(4), [x, np.array([9, 9], np.float32),
                                               np.array(-1).astype(np.uint32)])
    np.testing.assert_array_equal(got, [0, 1, 9, 9])


# ------------------------------------------------------------------------------ pad

def pad_reference(x: np.ndarray, value, config) -> np.ndarray:
    """Pad by the definition: element i of dim d lands at lo + i * (interior + 1)."""
    out_dims = [lo + hi + (n - 1) * (it + 1) + 1 if n else lo + hi
                for n, (lo, hi, it) in zip(x.shape, config)]
    out = np.full(out_dims, value, x.dtype)
    for idx in np.ndindex(*x.shape):
        pos = tuple(lo + i * (it + 1) for i, (lo, hi, it) in zip(idx, config))
        if all(0 <= p < n for p, n in zip(pos, out_dims)):
            out[pos] = x[idx]
    return out


@pytest.mark.parametrize("config", [
    ((1, 2, 0), (0, 3, 0)),
    ((0, 0, 1), (2, 1, 2)),
    ((-1, 0, 0), (0, -2, 0)),       # negative edge padding crops
    ((-2, 1, 1), (3, -4, 2)),       # crop into the interior-padded region
    ((0, -3, 2), (-1, -1, 0)),
    ((2, 2, 0), (0, 0, 0)),
])
def test_pad(config):
    x = arange(3, 4) + 1
    expected = pad_reference(x, -7.0, config)
    got = run("pad", f32(*expected.shape), [x, np.float32(-7)], padding=config)
    np.testing.assert_array_equal(got, expected)


def test_pad_empty_operand_dim():
    x = np.zeros((0, 2), np.int32)
    got = run("pad", Shape.array("s32", (3, 2)), [x, np.int32(5)],
              padding=((1, 2, 4), (0, 0, 0)))
    np.testing.assert_array_equal(got, np.full((3, 2), 5))


# ------------------------------------------------------------------------------ iota, tuples

@pytest.mark.parametrize("etype", ["f32", "s32", "bf16", "c64", "u8"])
def test_iota_middle_dimension(etype):
    shape = Shape.array(etype, (2, 5, 3))
    got = run("iota", shape, [], iota_dimension=1)
    assert got.dtype == shape.dtype and got.shape == (2, 5, 3)
    expected = np.broadcast_to(np.arange(5).reshape(1, 5, 1), (2, 5, 3))
    if etype == "c64":
        np.testing.assert_array_equal(got.imag, 0)
        got = got.real
    np.testing.assert_array_equal(got.astype(np.float64), expected)


def test_tuple_and_get_tuple_element():
    a, b = arange(2), arange(3, dtype=np.int32)
    t = HANDLERS["tuple"](Evaluator(), HloInstruction("tuple", Shape.tuple([])), [a, b])
    assert isinstance(t, tuple) and t[1] is b
    gte = HloInstruction("get-tuple-element", shape_of(b), [], {"index": 1})
    assert HANDLERS["get-tuple-element"](Evaluator(), gte, [t]) is b


def test_dimension_size_ops():
    x = arange(4, 6)
    size = run("get-dimension-size", Shape.scalar("s32"), [x], dimensions=(1,))
    assert size.dtype == np.int32 and size.shape == () and int(size) == 6
    same = run("set-dimension-size", f32(4, 6), [x, np.int32(3)], dimensions=(1,))
    np.testing.assert_array_equal(same, x)
    with pytest.raises(InvalidArgumentError):
        run("set-dimension-size", f32(4, 6), [x, np.int32(7)], dimensions=(1,))


def test_dynamic_reshape_static_sizes():
    x = arange(2, 6)
    got = run("dynamic-reshape", f32(3, 4), [x, np.int32(3), np.int32(4)])
    np.testing.assert_array_equal(got, x.reshape(3, 4))


# ------------------------------------------------------------------------------ bitcast

def test_bitcast_row_major_is_reshape():
    x = arange(2, 6)
    got = run("bitcast", f32(3, 4, layout=(1, 0)), [x], layouts=[(1, 0)])
    np.testing.assert_array_equal(got, x.reshape(3, 4))


def test_bitcast_column_major_operand_to_row_major_result():
    # f32[3,2]{0,1} holds its columns contiguously; a bitcast to f32[2,3]{1,0} is a transpose.
    x = arange(3, 2)
    got = run("bitcast", f32(2, 3, layout=(1, 0)), [x], layouts=[(0, 1)])
    np.testing.assert_array_equal(got, x.T)


def test_bitcast_layout_permutation_is_transpose():
    # XLA's layout assignment turns transpose into bitcast: f32[8,6,4]{0,1,2} of f32[4,6,8]{2,1,0}.
    x = arange(4, 6, 8)
    got = run("bitcast", f32(8, 6, 4, layout=(0, 1, 2)), [x], layouts=[(2, 1, 0)])
    np.testing.assert_array_equal(got, np.transpose(x, (2, 1, 0)))
    x2 = arange(4, 6, 8)
    got2 = run("bitcast", f32(6, 4, 8, layout=(2, 0, 1)), [x2], layouts=[(2, 1, 0)])
    np.testing.assert_array_equal(got2, np.transpose(x2, (1, 0, 2)))


def test_bitcast_physical_order_both_sides():
    # Operand f32[2,3]{0,1}: physical order x[0,0], x[1,0], x[0,1], ...; result f32[3,2]{0,1}.
    x = arange(2, 3)
    physical = x.T.reshape(-1)
    got = run("bitcast", f32(3, 2, layout=(0, 1)), [x], layouts=[(0, 1)])
    np.testing.assert_array_equal(got.T.reshape(-1), physical)


def test_bitcast_changes_element_type():
    x = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    got = run("bitcast", Shape.array("u32", (2, 2), layout=(1, 0)), [x], layouts=[(1, 0)])
    np.testing.assert_array_equal(got, x.view(np.uint32))
    got_t = run("bitcast", Shape.array("s32", (2, 2), layout=(0, 1)), [x], layouts=[(1, 0)])
    np.testing.assert_array_equal(got_t, x.view(np.int32).T)


def test_bitcast_without_layouts_is_row_major():
    x = arange(6)
    np.testing.assert_array_equal(run("bitcast", f32(2, 3), [x]), x.reshape(2, 3))


def test_bitcast_to_and_from_scalar():
    x = np.array([[7]], np.int32)
    got = run("bitcast", Shape.scalar("s32"), [x], layouts=[(0, 1)])
    assert got.shape == () and int(got) == 7
    back = run("bitcast", Shape.array("s32", (1, 1), layout=(1, 0)), [got])
    np.testing.assert_array_equal(back, x)


def test_bitcast_result_is_writable_after_type_change():
    got = run("bitcast", Shape.array("u8", (2, 4), layout=(1, 0)),
              [np.array([1.0, 2.0], np.float32)], layouts=[(0,)])
    np.testing.assert_array_equal(got, np.array([1.0, 2.0], np.float32).view(np.uint8)
                                  .reshape(2, 4))
    got[0, 0] = 1                          # a read-only buffer would raise here


def test_bitcast_rejects_size_mismatch():
    with pytest.raises(InvalidArgumentError):
        run("bitcast", f32(5), [arange(6)])
