"""The gradient table: every registered primitive is differentiated or classified.

Each differentiable primitive has cases in ``CASES`` (here), ``STRUCTURAL_CASES``
(``test_autodiff_rules_structural.py``: gather/scatter, sort, dot_general, convolution
and windowed reductions) or ``LINALG_CASES`` (``test_autodiff_rules_linalg.py``: the
LAPACK-backed factorizations and solves). A case is checked by
:func:`autodiff_check.check_case`: reverse mode (``grad``), forward mode (``jvp``, computed
by xlapy as the transpose of the reverse mode), ``jit(grad)`` and ``jit(jvp)`` against
fourth-order finite differences, and some also check Hessian-vector products. Primitives
without gradients (integer and boolean ops, comparisons, ``argmax``, ``iota`` ...) are
listed in ``NOT_DIFFERENTIABLE``.

``test_every_primitive_is_classified`` fails when a primitive is added without a case or
a classification, so the table stays complete.
"""
from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.frontend import dtypes
from xlapy.frontend.buckets import get_dimension_size
from xlapy.frontend.core import PRIMITIVES
from autodiff_check import (BindRecorder, case, check_case, check_shift_invariance, grads_of,
                            grid, prims_on_path, spaced, uniform)

f32 = np.float32


def u(name: str, shape, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return uniform(name, shape, lo, hi)


def _registered(name: str):
    """The primitive ``name``, importing the modules that define primitives if needed."""
    if name not in PRIMITIVES:
        _import_primitive_modules()
    return PRIMITIVES[name]


# ------------------------------------------------------------------------- elementwise
def _unary(name: str, op, lo: float, hi: float, **kw):
    return case(name, name, op, u(name, (2, 3), lo, hi), second_order=True, **kw)


# 0.125 away from the integers (the jumps of floor and ceil); shifted by 0.5, from the
# half-integers (the jumps of round).
_STEPPY = grid(np.array([[-1.875, -0.875, -0.125], [0.125, 0.875, 1.625]]))

ELEMENTWISE = [
    _unary("neg", lax.neg, -2, 2),
    _unary("exp", lax.exp, -1.5, 1.5),
    _unary("expm1", lax.expm1, -1.5, 1.5),
    _unary("log", lax.log, 0.3, 3),
    _unary("log1p", lax.log1p, -0.6, 2),
    _unary("sqrt", lax.sqrt, 0.3, 3),
    _unary("rsqrt", lax.rsqrt, 0.3, 3),
    _unary("cbrt", lax.cbrt, 0.3, 3),
    case("cbrt_negative", "cbrt", lax.cbrt, u("cbrt_negative", (4,), -3, -0.3)),
    _unary("tanh", lax.tanh, -2, 2),
    _unary("sin", lax.sin, -3, 3),
    _unary("cos", lax.cos, -3, 3),
    _unary("tan", lax.tan, -1.2, 1.2),
    _unary("logistic", lax.logistic, -3, 3),
    _unary("erf", lax.erf, -2, 2),
    case("erf_inv", "erf_inv",
         lambda x: lax.erf_inv(xnp.asarray(x)),
         u("erf_inv", (2, 3), -0.9, 0.9), second_order=True),
    case("abs", "abs", lax.abs, spaced("abs", (2, 3), 0.25, -0.625)),
    case("sign", "sign", lambda x: lax.mul(lax.sign(x), x), spaced("sign", (2, 3), 0.25, -0.625)),
    case("floor", "floor", lambda x: lax.add(lax.floor(x), x), _STEPPY),
    case("ceil", "ceil", lambda x: lax.add(lax.ceil(x), x), _STEPPY),
    case("round", "round", lambda x: lax.add(lax.round(x), x), _STEPPY + f32(0.5)),
    case("round_even", "round_even", lambda x: lax.add(lax.round_even(x), x),
         _STEPPY + f32(0.5)),
    case("add_sub", ("add", "sub"), lambda x, y: lax.sub(lax.add(x, y), lax.mul(y, y)),
         u("add1", (2, 3)), u("add2", (2, 3))),
    case("mul", "mul", lax.mul, u("mul1", (2, 3)), u("mul2", (2, 3)), second_order=True),
    case("div", "div", lax.div, u("div1", (2, 3)), u("div2", (2, 3), 0.5, 2),
         second_order=True),
    case("div_negative_divisor", "div", lax.div, u("div3", (4,)), u("div4", (4,), -2, -0.5)),
    case("rem", "rem", lax.rem,
         grid([[3.2, -3.2, 5.1], [-0.7, 2.6, -4.4]]), grid([[1.5, 1.5, -2.0], [1.0, -0.8, 1.9]])),
    case("pow", "pow", lax.pow, u("pow1", (2, 3), 0.3, 2.5), u("pow2", (2, 3), -1.5, 2.5),
         second_order=True),
    case("pow_zero_exponent", "pow", lax.pow, u("pow3", (3,), 0.3, 2),
         grid([0.0, 0.0, 2.0])),
    case("pow_zero_base", "pow", lambda x: lax.pow(x, grid([2.0, 3.0, 0.0])),
         grid([0.0, 0.0, 0.5])),
    case("pow_negative_base_integer_exponent", "pow",
         lambda x: lax.pow(x, grid([2.0, 3.0, -1.0])), grid([-1.5, -0.75, -2.0])),
    case("max_min", ("max", "min"),
         lambda x, y: lax.add(lax.max(x, y), lax.mul(lax.min(x, y), x)),
         spaced("mm", (2, 3)), spaced("mm", (2, 3))[::-1, ::-1] + f32(0.0625)),
    case("atan2_all_quadrants", "atan2", lax.atan2,
         grid([[0.5, 0.5, -0.5, -0.5], [1.5, -0.25, 0.75, -2.0]]),
         grid([[0.75, -0.75, 0.75, -0.75], [0.5, 1.25, -1.5, -0.5]]), second_order=True),
    case("select_array_pred", "select",
         lambda x, y: lax.select(np.array([[True, False, True], [False, False, True]]), x, y),
         u("sel1", (2, 3)), u("sel2", (2, 3))),
    case("select_scalar_pred", "select",
         lambda x, y: lax.select(np.bool_(False), x, lax.mul(y, y)), u("sel3", (3,)),
         u("sel4", (3,))),
    case("where_broadcast", "select",
         lambda x, y: xnp.where(np.array([True, False, True]), x, y),
         u("where1", (2, 3)), u("where2", (3,))),
    case("clamp_array_bounds", "clamp", lambda lo, x, hi: lax.clamp(lo, x, hi),
         grid([-0.5, -0.5, -0.5, 0.25]), grid([-1.0, 0.0, 1.0, 0.5]),
         grid([0.5, 0.5, 0.5, 0.75])),
    case("clamp_scalar_bounds", "clamp", lambda lo, x, hi: lax.clamp(lo, x, hi),
         grid(-0.3), spaced("clamp", (2, 3), 0.25, -1.0), grid(0.4)),
    case("clamp_constant_bounds", "clamp", lambda x: lax.clamp(f32(-0.5), x, f32(0.5)),
         spaced("clamp2", (5,), 0.25, -0.875)),
    case("complex_real_imag", ("complex", "real", "imag", "mul"),
         lambda x, y: (lax.real(lax.mul(lax.complex(x, y), lax.complex(y, x))),
                       lax.imag(lax.mul(lax.complex(x, y), lax.complex(x, x)))),
         u("cplx1", (3,)), u("cplx2", (3,)), second_order=True),
    case("convert_to_complex_and_back", ("convert_element_type", "exp", "real"),
         lambda x: lax.real(lax.exp(lax.mul(lax.convert_element_type(x, np.complex64),
                                            np.full(4, 0.5 + 1.0j, np.complex64)))),
         u("conv_c", (4,))),
    case("numpy_broadcasting_ops", ("broadcast_in_dim", "mul", "add", "div"),
         lambda x, y: (x * y + 2.0) / (1.5 + y * y), u("npb1", (2, 3)), u("npb2", (3,))),
]

# |z| of a complex z (cotangent g*conj(z)/|z|) and clamp with lo > hi (the result is hi).
EDGE_CASES = [
    case("abs_of_complex", ("abs", "complex"), lambda x, y: lax.abs(lax.complex(x, y)),
         grid([3.0, -1.0, 0.5]), grid([4.0, 2.0, -1.5])),
    case("clamp_low_above_high", "clamp", lambda lo, x, hi: lax.clamp(lo, x, hi),
         grid([0.5, 0.5]), grid([-1.0, 0.0]), grid([0.25, -0.25])),
]


# ---------------------------------------------------------------------- data movement
def _dynamic_slice(x, i, j):
    return lax.dynamic_slice(x, [i, j], (3, 2))


def _dynamic_update_slice(x, upd, i, j):
    return lax.dynamic_update_slice(x, lax.mul(upd, upd), [i, j])


DATA_MOVEMENT = [
    case("broadcast_in_dim_expand_size_one", "broadcast_in_dim",
         lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)), u("bid1", (3, 1))),
    case("broadcast_in_dim_new_dims", "broadcast_in_dim",
         lambda x: lax.mul(lax.broadcast_in_dim(x, (3, 2, 4), (1,)),
                           lax.broadcasted_iota(f32, (3, 2, 4), 2)), u("bid2", (2,))),
    case("reshape", "reshape", lambda x: lax.mul(lax.reshape(x, (3, 4)), x.reshape(4, 3).T),
         u("reshape", (2, 3, 2))),
    case("transpose", "transpose", lambda x: lax.transpose(lax.mul(x, x), (2, 0, 1)),
         u("transpose", (2, 3, 2))),
    case("rev_several_dims", "rev", lambda x: lax.mul(lax.rev(x, (0, 2)), x),
         u("rev", (2, 3, 2))),
    case("slice_strides", "slice", lambda x: lax.slice(lax.mul(x, x), (1, 2), (5, 7), (2, 3)),
         u("slice", (5, 7))),
    case("getitem_negative_steps", ("slice", "rev"), lambda x: x[::-2, 1::2] * x[1::2, ::-2],
         u("getitem", (4, 4))),
    case("dynamic_slice_in_bounds", "dynamic_slice", _dynamic_slice, u("ds1", (5, 4)),
         np.int32(1), np.int32(2)),
    case("dynamic_slice_clamped", "dynamic_slice", _dynamic_slice, u("ds2", (5, 4)),
         np.int32(4), np.int32(-3)),
    # Eagerly x[i] is a static slice; under jit the index is traced: a dynamic_slice.
    case("getitem_index_traced_under_jit", "reshape", lambda x, i: x[i] * x[1],
         u("ds3", (4, 3)), np.int32(2)),
    case("dynamic_update_slice_in_bounds", "dynamic_update_slice", _dynamic_update_slice,
         u("dus1", (4, 5)), u("dus2", (2, 3)), np.int32(1), np.int32(1)),
    case("dynamic_update_slice_clamped", "dynamic_update_slice", _dynamic_update_slice,
         u("dus3", (4, 5)), u("dus4", (2, 3)), np.int32(3), np.int32(-2)),
    case("concatenate_three", "concatenate",
         lambda a, b, c: lax.concatenate([a, lax.mul(b, b), c], 1),
         u("cat1", (2, 1)), u("cat2", (2, 3)), u("cat3", (2, 2))),
    case("pad_negative_and_interior", "pad",
         lambda x, v: lax.mul(lax.pad(x, v, [(-1, 2, 1), (2, -2, 2)]),
                              lax.broadcasted_iota(f32, (6, 10), 1)),
         u("pad", (3, 4)), grid(0.75)),
    case("pad_trims_everything_of_a_dim", "pad",
         lambda x, v: lax.pad(x, v, [(1, 1, 0), (-2, 0, 1)]), u("pad2", (2, 2)), grid(-0.5)),
]


# ------------------------------------------------------------------------- reductions
def _with_zeros(name: str) -> np.ndarray:
    """(2, 3, 2) values whose [:, 1, :] slice holds one zero and [:, 2, :] two zeros."""
    x = u(name, (2, 3, 2), 0.5, 1.5) * np.array([1, -1], f32)[:, None, None]
    x[1, 1, 0] = 0
    x[0, 2, 1] = x[1, 2, 0] = 0
    return x


REDUCTIONS = [
    case("reduce_sum_two_axes", "reduce_sum", lambda x: lax.reduce_sum(lax.mul(x, x), (0, 2)),
         u("rsum", (2, 3, 4))),
    case("numpy_mean_var", ("reduce_sum", "div"),
         lambda x: (xnp.mean(x, axis=1), xnp.var(x, axis=(0, 2))), u("mean", (2, 3, 2)),
         second_order=True),
    case("reduce_max_one_axis", "reduce_max", lambda x: lax.reduce_max(x, (1,)),
         spaced("rmax", (2, 4, 3))),
    case("reduce_min_two_axes", "reduce_min", lambda x: lax.reduce_min(x, (0, 2)),
         spaced("rmin", (2, 3, 2))),
    case("reduce_prod_with_zeros", "reduce_prod", lambda x: lax.reduce_prod(x, (0, 2)),
         _with_zeros("rprod"), second_order=True),
    case("reduce_prod_middle_axis", "reduce_prod", lambda x: lax.reduce_prod(x, (1,)),
         _with_zeros("rprod2")),
    case("numpy_prod_all", "reduce_prod", lambda x: xnp.prod(x), _with_zeros("rprod3")),
    case("cumsum", "cumsum", lambda x: lax.cumulative("sum", lax.mul(x, x), 1),
         u("cumsum", (2, 4))),
    case("cumsum_reverse", "cumsum", lambda x: lax.cumulative("sum", x, 0, reverse=True),
         u("cumsum_r", (3, 2))),
    case("numpy_cumsum_flat", "cumsum", lambda x: xnp.cumsum(x * x), u("cumsum_f", (2, 2))),
    case("cumprod_with_zeros", "cumprod", lambda x: lax.cumulative("prod", x, 1),
         _with_zeros("cumprod").reshape(3, 4), second_order=True),
    case("cumprod_reverse_with_zeros", "cumprod",
         lambda x: lax.cumulative("prod", x, 0, reverse=True),
         _with_zeros("cumprod_r").reshape(4, 3)),
    case("cummax", "cummax", lambda x: lax.cumulative("max", x, 1), spaced("cummax", (2, 5))),
    case("cummax_reverse", "cummax", lambda x: lax.cumulative("max", x, 0, reverse=True),
         spaced("cummax_r", (5, 2))),
    case("cummin", "cummin", lambda x: lax.cumulative("min", x, 0), spaced("cummin", (5, 2))),
    case("cummin_reverse", "cummin", lambda x: lax.cumulative("min", x, 1, reverse=True),
         spaced("cummin_r", (2, 5))),
]

CASES = ELEMENTWISE + DATA_MOVEMENT + REDUCTIONS


@pytest.mark.parametrize("c", CASES + EDGE_CASES, ids=repr)
def test_gradient_matches_finite_differences(c):
    check_case(c)


# ------------------------------------------------------------------------------- ties
def test_max_min_split_ties_evenly():
    x, y = grid([1.0, 2.0, 3.0]), grid([1.0, 0.5, 3.0])
    ct = np.ones(6, f32)
    fn = lambda a, b: (lax.max(a, b), lax.min(a, b))  # noqa: E731
    gx, gy = grads_of(fn, (x, y), ct)
    np.testing.assert_array_equal(np.asarray(gx), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(gy), [1.0, 1.0, 1.0])
    gx, gy = grads_of(lambda a, b: lax.max(a, b), (x, y), np.ones(3, f32))
    np.testing.assert_array_equal(np.asarray(gx), [0.5, 1.0, 0.5])
    np.testing.assert_array_equal(np.asarray(gy), [0.5, 0.0, 0.5])
    check_shift_invariance(lambda a, b: lax.max(a, b), (x, y), grid([1.0, -2.0, 0.5]))


def test_reduce_max_min_split_ties_evenly():
    x = grid([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    (g,) = grads_of(lambda a: lax.reduce_max(a, (1,)), (x,), grid([1.0, 3.0]))
    np.testing.assert_allclose(np.asarray(g), [[0, 0.5, 0.5], [1, 1, 1]], rtol=1e-6)
    (g,) = grads_of(lambda a: lax.reduce_min(a, (0, 1)), (x,), grid([6.0]))
    np.testing.assert_allclose(np.asarray(g), [[6, 0, 0], [0, 0, 0]], rtol=1e-6)
    check_shift_invariance(lambda a: lax.reduce_max(a, (1,)), (x,), grid([1.0, -0.5]))


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_extreme_ties_go_to_the_first_record(kind, reverse):
    """A tie with the running extreme is not a new record: the cotangent of every output
    goes to the position (in scan order) that first reached its value."""
    x = grid([1.0, 1.0, 0.0, 1.0, 2.0])
    if reverse:
        x = x[::-1].copy()
    if kind == "min":
        x = -x
    ct = grid([1.0, 2.0, 3.0, 4.0, 5.0])
    fn = lambda a: lax.cumulative(kind, a, 0, reverse=reverse)  # noqa: E731
    (g,) = grads_of(fn, (x,), ct)
    want = [1, 0, 0, 0, 14] if reverse else [10, 0, 0, 0, 5]
    np.testing.assert_array_equal(np.asarray(g), want)
    check_shift_invariance(fn, (x,), ct)


def test_prod_and_cumprod_with_zeros_are_finite():
    x = grid([0.0, 2.0, 0.0, 3.0])
    (g,) = grads_of(lambda a: lax.reduce_prod(a, (0,)), (x,), grid([1.0]))
    np.testing.assert_array_equal(np.asarray(g), [0, 0, 0, 0])
    (g,) = grads_of(lambda a: lax.reduce_prod(a, (0,)), (grid([0.0, 2.0, 5.0, 3.0]),), grid([1.0]))
    np.testing.assert_array_equal(np.asarray(g), [30, 0, 0, 0])
    (g,) = grads_of(lambda a: lax.cumulative("prod", a, 0), (grid([2.0, 0.0, 3.0]),),
                  grid([1.0, 1.0, 1.0]))
    np.testing.assert_array_equal(np.asarray(g), [1, 2 + 6, 0])


def test_clamp_ties_are_shift_invariant():
    lo, x, hi = grid([0.0, -1.0, 0.5]), grid([0.0, 1.0, 0.5]), grid([1.0, 1.0, 0.5])
    check_shift_invariance(lambda a, b, c: lax.clamp(a, b, c), (lo, x, hi), grid([1.0, 2.0, 3.0]))


def test_convert_element_type_gradients():
    x = grid([1.5, -0.25, 3.0])
    ct = grid([2.0, -1.0, 0.5])
    (g,) = grads_of(lambda a: lax.convert_element_type(lax.convert_element_type(
        a, xnp.bfloat16), f32), (x,), ct)
    assert g.dtype == f32
    np.testing.assert_array_equal(np.asarray(g), ct)
    (g,) = grads_of(lambda a: lax.convert_element_type(a, np.float16), (x,), ct)
    np.testing.assert_array_equal(np.asarray(g), ct)
    # Through an integer conversion nothing flows: floor-like, zero almost everywhere.
    (g,) = grads_of(lambda a: lax.mul(lax.convert_element_type(lax.convert_element_type(
        a, np.int32), f32), a), (x,), ct)
    np.testing.assert_array_equal(np.asarray(g), ct * np.array([1, 0, 3], f32))


# ------------------------------------------------------------------ not differentiable
def _ints(x):
    return lax.convert_element_type(lax.mul(x, np.full(x.shape, 8, f32)), np.int32)


def _bitcast(x):
    return lax.bitcast_convert_type(x, np.uint32)


# name -> a function of a float (2, 3) array applying the primitive. The result has no
# gradient path: boolean/integer results, or (iota) no operands at all.
# Differentiated through their branches and bodies in test_autodiff_control_flow.py.
CONTROL_FLOW = {"cond", "switch", "scan", "while"}
# Primitives that exist in compiled code only, with their gradients checked there:
# set_dimension_size in tests/test_shape_buckets.py (jit of grad against the unpadded grad).
COMPILED_ONLY = {"set_dimension_size"}
# No gradient rule: differentiating raises, checked in test_autodiff_rules_linalg.py
# (test_unsupported_gradients_say_so).
NO_GRADIENT_RULE = {"eig"}
# The named-axis collectives need a pmap or vmap axis: their gradients are checked against
# finite differences in tests/test_pmap.py (axis_index has no operand to differentiate).
COLLECTIVES = {"psum", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "all_to_all",
               "axis_index"}

NOT_DIFFERENTIABLE = {
    "not": lambda x: lax.bitwise_not(lax.gt(x, xnp.zeros_like(x))),
    "is_finite": lax.is_finite,
    "population_count": lambda x: lax.population_count(_ints(x)),
    "clz": lambda x: lax.clz(_ints(x)),
    "and": lambda x: lax.bitwise_and(_ints(x), _ints(lax.neg(x))),
    "or": lambda x: lax.bitwise_or(_ints(x), _ints(lax.neg(x))),
    "xor": lambda x: lax.bitwise_xor(_ints(x), _ints(lax.neg(x))),
    "shift_left": lambda x: lax.shift_left(_ints(x), np.full(x.shape, 2, np.int32)),
    "shift_right_arithmetic": lambda x: lax.shift_right_arithmetic(
        _ints(x), np.full(x.shape, 1, np.int32)),
    "shift_right_logical": lambda x: lax.shift_right_logical(
        _ints(x), np.full(x.shape, 1, np.int32)),
    "compare": lambda x: lax.lt(x, lax.neg(x)),
    "argmax": lambda x: lax.argmax(x, 1),
    "argmin": lambda x: lax.argmin(x, 0),
    "reduce_and": lambda x: lax.reduce_and(lax.gt(x, lax.neg(x)), (0,)),
    "reduce_or": lambda x: lax.reduce_or(lax.gt(x, lax.neg(x)), (0, 1)),
    "iota": lambda x: lax.broadcasted_iota(f32, x.shape, 1),
    "bitcast_convert_type": _bitcast,
    # shape buckets and host callbacks (xlapy.frontend.buckets, .callbacks)
    "get_dimension_size": lambda x: get_dimension_size(x, 1),
    "io_callback": lambda x: xlapy.io_callback(lambda a: np.zeros(a.shape, np.int32),
                                               xlapy.ShapeDtypeStruct(x.shape, np.int32), x),
    "debug_callback": lambda x: (xlapy.debug.callback(lambda a: None, x), lax.lt(x, x))[1],
    "debug_print": lambda x: (xlapy.debug.print("", x), lax.lt(x, x))[1],
    "rng_bit_generator": lambda x: lax.rng_bit_generator(np.arange(4, dtype=np.uint32),
                                                         x.shape)[1],
}


def _import_primitive_modules() -> None:
    """Import every module of the packages that may define primitives."""
    for pkg in ("xlapy.frontend", "xlapy.numpy", "xlapy.lax", "xlapy.nn", "xlapy.random",
                "xlapy.keras"):
        module = importlib.import_module(pkg)
        for info in pkgutil.walk_packages(module.__path__, pkg + "."):
            importlib.import_module(info.name)


@pytest.mark.parametrize("name", sorted(NOT_DIFFERENTIABLE))
def test_not_differentiable(name):
    _import_primitive_modules()
    probe = NOT_DIFFERENTIABLE[name]
    x = spaced("nd", (2, 3))
    c = grid([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])

    def f(a):
        out = lax.convert_element_type(probe(a), f32)
        return xnp.sum(out) + xnp.sum(a * c)

    for g in (xlapy.grad(f)(x), xlapy.jit(xlapy.grad(f))(x)):
        np.testing.assert_array_equal(np.asarray(g), c)
    assert name not in prims_on_path(probe, (x,), (0,))
    with BindRecorder() as rec:
        probe(xnp.asarray(x))
    calls = [call for call in rec.calls if call[0].name == name]
    assert calls, f"the probe of {name} does not bind it"
    prim, args, params, outs = calls[0]
    assert not args or not any(dtypes.is_float(o.dtype) for o in outs)
    if prim.vjp is not None:
        cts = prim.vjp(xnp.zeros_like(outs[0]), outs[0], *args, **params)
        assert all(ct is None for ct in cts), f"{name}'s rule returns cotangents {cts}"


def test_every_primitive_is_classified():
    """A new primitive needs a case in the gradient table or a NOT_DIFFERENTIABLE entry."""
    from test_autodiff_rules_linalg import LINALG_CASES
    from test_autodiff_rules_structural import STRUCTURAL_CASES
    _import_primitive_modules()
    covered = {p for c in CASES + STRUCTURAL_CASES + LINALG_CASES for p in c.prims}
    covered |= CONTROL_FLOW | COLLECTIVES | COMPILED_ONLY | NO_GRADIENT_RULE
    unknown = (covered | set(NOT_DIFFERENTIABLE)) - set(PRIMITIVES)
    assert not unknown, f"the table names primitives that do not exist: {sorted(unknown)}"
    both = covered & set(NOT_DIFFERENTIABLE)
    assert not both, f"classified both ways: {sorted(both)}"
    missing = set(PRIMITIVES) - covered - set(NOT_DIFFERENTIABLE)
    assert not missing, (f"primitives without a gradient case or a NOT_DIFFERENTIABLE entry: "
                         f"{sorted(missing)}")
    for name in covered - NO_GRADIENT_RULE:
        assert PRIMITIVES[name].vjp is not None, f"{name} is in the table but has no vjp rule"
