"""The gradient table, continued: gather/scatter, sort, dot_general, convolution and
windowed reductions (see ``test_autodiff_rules.py`` for the method and the coverage test).
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.frontend import lax_nn
from xlapy.frontend import primitives_nn as PN
from xlapy.frontend.core import bind, get_primitive, to_array
from xlapy.hlo.sharding import HloSharding
from autodiff_check import (case, check_case, check_shift_invariance, grads_of, grid, spaced,
                            uniform)

f32, i32 = np.float32, np.int32


def u(name: str, shape, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return uniform(name, shape, lo, hi)


def idx(values) -> np.ndarray:
    return np.asarray(values, i32)


# ------------------------------------------------------------------------ gather/scatter
def _gather_windows(x, i):
    """(2, 3) windows of a (4, 5) operand at 2-D start indices (some clamped)."""
    return lax.gather(lax.mul(x, x), i, offset_dims=(1, 2), collapsed_slice_dims=(),
                      start_index_map=(0, 1), index_vector_dim=1, slice_sizes=(2, 3))


def _gather_rows(x, i):
    """Rows of a (5, 3) operand at scalar indices (implicit index vector dimension)."""
    return lax.gather(x, i, offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,),
                      index_vector_dim=1, slice_sizes=(1, 3))


def _scatter(combiner: str, window: bool):
    """Scatter into a (4, 3) operand: rows (window) or single elements at (row, col)."""
    if window:
        dims = dict(update_window_dims=(1,), inserted_window_dims=(0,),
                    scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    else:
        dims = dict(update_window_dims=(), inserted_window_dims=(0, 1),
                    scatter_dims_to_operand_dims=(0, 1), index_vector_dim=1)

    def f(x, upd, i):
        return lax.scatter(x, i, upd, combiner=combiner, **dims)
    return f


def _scatter_blocks(x, upd, i):
    """(2, 3) blocks added into a (4, 5) operand at 2-D start indices (overlapping)."""
    return lax.scatter(x, i, lax.mul(upd, upd), update_window_dims=(1, 2),
                       inserted_window_dims=(), scatter_dims_to_operand_dims=(0, 1),
                       index_vector_dim=1, combiner="add")


_ROWS = idx([[2], [0]])
_ELEMS = idx([[0, 1], [3, 2], [1, 0]])

GATHER_SCATTER = [
    case("gather_windows_clamped_and_overlapping", "gather", _gather_windows, u("g1", (4, 5)),
         idx([[0, 1], [3, 4], [1, 0], [-2, 1]])),
    case("gather_rows_out_of_range_clamped", "gather", _gather_rows, u("g2", (5, 3)),
         idx([4, 7, 0, 4])),
    case("numpy_fancy_indexing", "gather",
         lambda x: x[idx([4, -1, 0]), 1:] * x[idx([0, 0, 2])][:, :2], u("g3", (5, 3))),
    case("gather_index_vector_first_permuted_map", "gather",
         lambda x, i: lax.gather(x, i, offset_dims=(0, 2), collapsed_slice_dims=(1,),
                                 start_index_map=(1, 0), index_vector_dim=0,
                                 slice_sizes=(2, 1, 2)),
         u("g4", (3, 4, 2)), idx([[1, 0, 3], [1, 1, 0]])),
    case("scatter_index_vector_first_permuted_map", "scatter",
         lambda x, upd, i: lax.scatter(x, i, upd, update_window_dims=(0, 2),
                                       inserted_window_dims=(1,),
                                       scatter_dims_to_operand_dims=(1, 0), index_vector_dim=0,
                                       combiner="add"),
         u("s16", (3, 4, 2)), u("s17", (2, 3, 2)), idx([[1, 0, 0], [1, 1, 0]])),
    case("scatter_add_blocks_overlapping", "scatter", _scatter_blocks, u("s1", (4, 5)),
         u("s2", (3, 2, 3)), idx([[0, 1], [2, 2], [1, 0]])),
    case("scatter_add_duplicates", "scatter", _scatter("add", False), u("s3", (4, 3)),
         u("s4", (3,)), idx([[1, 2], [1, 2], [0, 0]])),
    case("numpy_at_add", "scatter", lambda x, v: xnp.asarray(x).at[idx([0, 2, 0])].add(v * v),
         u("s5", (3, 2)), u("s6", (3, 2))),
    case("scatter_set_rows", "scatter", _scatter("set", True), u("s7", (4, 3)),
         u("s8", (2, 3)), _ROWS),
    case("scatter_mul_rows", "scatter", _scatter("mul", True), u("s9", (4, 3)),
         u("s10", (2, 3), 0.5, 1.5), _ROWS),
    case("scatter_mul_elements", "scatter", _scatter("mul", False), u("s11", (4, 3)),
         u("s12", (3,), -1.5, -0.5), _ELEMS),
    case("scatter_min_elements", "scatter", _scatter("min", False), spaced("s13", (4, 3)),
         grid([-2.0, 0.5625, 9.0]), _ELEMS),
    case("scatter_max_rows", "scatter", _scatter("max", True), spaced("s14", (4, 3)),
         spaced("s15", (2, 3)) + f32(0.0625), _ROWS),
]


# Scatter edge cases: dropped (out-of-bounds) updates get no gradient, repeated `set`
# indices give it to the update written last, a zero `mul` update is not a division.
SCATTER_EDGE_CASES = [
    case("scatter_add_out_of_bounds_update_is_dropped", "scatter", _scatter("add", True),
         u("x1", (4, 3)), u("x2", (2, 3)), idx([[1], [6]])),
    case("scatter_set_out_of_bounds_update_is_dropped", "scatter", _scatter("set", False),
         u("x3", (4, 3)), u("x4", (2,)), idx([[1, 1], [4, 0]])),
    case("scatter_mul_zero_update", "scatter", _scatter("mul", False),
         u("x5", (4, 3)), grid([0.0, 0.75, -0.5]), _ELEMS),
    case("scatter_set_duplicate_indices", "scatter", _scatter("set", False), u("x6", (4, 3)),
         u("x7", (3,)), idx([[1, 2], [0, 0], [1, 2]])),
]


# ------------------------------------------------------------------------ sort / products
def _sort3(k, v, n):
    sk, sv, sn = lax.sort([k, v, n], dimension=1)
    return sk, lax.mul(sv, lax.convert_element_type(sn, f32))


SORT_DOT = [
    case("sort_axis0", "sort", lambda x: lax.mul(lax.sort(x, 0), lax.broadcasted_iota(
        f32, (4, 3), 0)), spaced("sort1", (4, 3))),
    case("sort_three_operands", "sort", _sort3, spaced("sort2", (2, 4)), u("sort3", (2, 4)),
         idx([[3, 1, 2, 5], [7, 1, 4, 2]])),
    case("numpy_sort_flat", "sort", lambda x: xnp.sort(x, axis=None) * xnp.arange(6.0),
         spaced("sort4", (2, 3))),
    case("dot_general_batch_and_two_contracting_dims", "dot_general",
         lambda a, b: lax.dot_general(a, b, (((3, 1), (0, 3)), ((0,), (1,)))),
         u("dot1", (2, 3, 2, 2)), u("dot2", (2, 2, 3, 3)), second_order=True),
    case("dot_general_no_batch_outer", "dot_general",
         lambda a, b: lax.dot_general(a, b, (((), ()), ((), ()))), u("dot3", (2,)),
         u("dot4", (3,))),
    case("numpy_matmul_broadcast_batch", "dot_general", lambda a, b: a @ b,
         u("mm1", (2, 2, 3)), u("mm2", (3, 2))),
    case("numpy_einsum", "dot_general", lambda a, b: xnp.einsum("ijk,kj->ik", a, b),
         u("ein1", (2, 3, 2)), u("ein2", (2, 3))),
    case("sort_two_keys", "sort",
         lambda k, x: lax.mul(lax.sort([k, x], 0, num_keys=2)[1], lax.iota(f32, 6)),
         idx([1, 0, 1, 0, 1, 0]), spaced("sortk", (6,))),
    case("optimization_barrier", "optimization_barrier",
         lambda x, y: lax.mul(*lax.optimization_barrier((lax.sin(x), y))),
         u("ob1", (2, 3)), u("ob2", (2, 3)), second_order=True),
]


# ------------------------------------------------------- convolution / windowed reductions
def _conv(**kw):
    def f(x, k):
        return lax_nn.conv_general_dilated(x, k, **kw)
    return f


def _select_and_gather_add(t, x):
    return bind(PN.select_and_gather_add_p, to_array(t), to_array(x), select_kind="ge",
                window_dimensions=(2, 2), window_strides=(1, 2), padding=((0, 1), (1, 0)),
                base_dilation=(1, 1), window_dilation=(1, 1))


NN = [
    case("conv_1d_strided_padded_rhs_dilated", "conv_general_dilated",
         _conv(window_strides=(2,), padding=((1, 2),), rhs_dilation=(2,)),
         u("conv1", (2, 2, 6)), u("conv2", (3, 2, 2))),
    case("conv_2d_nhwc_feature_groups_lhs_dilated", "conv_general_dilated",
         _conv(window_strides=(1, 1), padding=((1, 0), (0, 1)), lhs_dilation=(2, 1),
               dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2),
         u("conv3", (1, 3, 2, 4)), u("conv4", (2, 2, 2, 2))),
    case("conv_1d_batch_groups", "conv_general_dilated",
         _conv(window_strides=(1,), padding="SAME", batch_group_count=2),
         u("conv5", (4, 2, 3)), u("conv6", (4, 2, 2))),
    case("reduce_window_sum_strided_dilated", "reduce_window_sum",
         lambda x: lax_nn.reduce_window_sum(lax.mul(x, x), (2, 2), (1, 2), ((1, 0), (0, 1)),
                                            base_dilation=(2, 1), window_dilation=(1, 2)),
         u("rws", (3, 4))),
    case("reduce_window_max_strided_padded", "reduce_window_max",
         lambda x: lax_nn.reduce_window_max(x, (2, 3), (1, 2), ((1, 0), (1, 1))),
         spaced("rwmax", (3, 4)), second_order=True),
    case("reduce_window_min_base_dilated", "reduce_window_min",
         lambda x: lax_nn.reduce_window_min(x, (2, 2), (1, 1), "VALID", base_dilation=(2, 1)),
         spaced("rwmin", (3, 3))),
    case("reduce_window_max_window_dilated", "reduce_window_max",
         lambda x: lax_nn.reduce_window_max(x, (2, 2), (1, 1), ((0, 1), (0, 0)),
                                            window_dilation=(2, 2)), spaced("rwmax2", (4, 4))),
    case("select_and_scatter_add", "select_and_scatter_add",
         lambda s, x: lax_nn.select_and_scatter_add(s, x, "ge", (2, 2), (1, 2), ((0, 1), (1, 0))),
         u("sas1", (3, 2)), spaced("sas2", (3, 3))),
    case("select_and_gather_add", "select_and_gather_add", _select_and_gather_add,
         u("sga1", (3, 3)), spaced("sga2", (3, 3))),
]

def _host_sin(x):
    s = xlapy.ShapeDtypeStruct(x.shape, x.dtype)
    return xlapy.pure_callback(np.sin, s, x,
                               vjp=lambda ct, a: (ct * xlapy.pure_callback(np.cos, s, a),))


# host callbacks (xlapy.frontend.callbacks); set_dimension_size exists in compiled code
# only: its gradient is checked in tests/test_shape_buckets.py
HOST_AND_DYNAMIC = [
    case("pure_callback_with_vjp", "pure_callback", _host_sin, u("pc", (2, 3))),
]

# xlapy.frontend.primitives_misc: rounding to f32's own format is the identity, so finite
# differences see the cotangent passed through; the barrier passes cotangents unchanged.
MISC = [
    case("reduce_precision_to_f32_format", "reduce_precision",
         lambda x: lax.reduce_precision(x * x, 8, 23), u("rp", (2, 3))),
    case("sharding_constraint_is_the_identity", "sharding_constraint",
         lambda x: bind(get_primitive("sharding_constraint"), to_array(x * x),
                        sharding=HloSharding.iota_tile((2, 1))), u("sc", (4, 3))),
    case("optimization_barrier_of_two", "optimization_barrier",
         lambda x, y: sum(v * w for v, w in zip(lax.optimization_barrier((x, y)), (y, x))),
         u("ob1", (3,)), u("ob2", (3,))),
]

STRUCTURAL_CASES = GATHER_SCATTER + SORT_DOT + NN + HOST_AND_DYNAMIC + MISC


@pytest.mark.parametrize("c", STRUCTURAL_CASES + SCATTER_EDGE_CASES, ids=repr)
def test_gradient_matches_finite_differences(c):
    check_case(c)


# ------------------------------------------------------------------------------- ties
def test_sort_ties_follow_the_stable_permutation():
    x = grid([2.0, 1.0, 2.0, 1.0])
    ct = grid([1.0, 2.0, 3.0, 4.0])
    fn = lambda a: lax.sort(a, 0)  # noqa: E731
    (g,) = grads_of(fn, (x,), ct)
    np.testing.assert_array_equal(np.asarray(g), [3, 1, 4, 2])
    check_shift_invariance(fn, (x,), ct)


def test_reduce_window_max_tie_goes_to_the_first_in_the_window():
    x = grid([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    fn = lambda a: lax_nn.reduce_window_max(a, (2, 2), (1, 1), "VALID")  # noqa: E731
    (g,) = grads_of(fn, (x,), grid([[1.0, 2.0]]))
    np.testing.assert_array_equal(np.asarray(g), [[1, 2, 0], [0, 0, 0]])
    check_shift_invariance(fn, (x,), grid([[1.0, 2.0]]))


def test_scatter_max_tie_is_not_counted_twice():
    x, upd = grid([1.0, 2.0, 3.0, 4.0]), grid([2.0, 0.5])
    fn = lambda a, b: lax.scatter(a, idx([[1], [2]]), b, update_window_dims=(),  # noqa: E731
                                  inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,),
                                  index_vector_dim=1, combiner="max")
    check_shift_invariance(fn, (x, upd), grid([1.0, 2.0, 3.0, 4.0]))
