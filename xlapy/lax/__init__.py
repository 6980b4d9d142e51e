"""``xlapy.lax``: XLA-level operations and structured control flow (JAX's ``jax.lax``).

Strict operations with XLA's semantics: no implicit promotion or broadcasting (binary ops
need operands of one shape and dtype). This is the public namespace; the pieces live in
the front end: the one-primitive wrappers in ``xlapy.frontend.lax``, multi-op
operations in ``xlapy.frontend.lax_composite``, ``cond``/``switch``/``while_loop``/
``fori_loop``/``scan`` in ``xlapy.frontend.control_flow`` and convolutions and windowed
reductions in ``xlapy.frontend.lax_nn``.
"""
from __future__ import annotations

from ..frontend.autodiff import stop_gradient
from ..frontend.checkpoint import optimization_barrier
from ..frontend.control_flow import cond, fori_loop, scan, switch, while_loop
from ..frontend.lax import (
    neg, abs, sign, exp, expm1, log, log1p, sqrt, rsqrt, cbrt, floor,
    ceil, round, round_even, tanh, sin, cos, tan, logistic, bitwise_not,
    is_finite, real, imag, erf, population_count, clz, add, sub, mul, div,
    rem, pow, max, min, atan2, bitwise_and, bitwise_or, bitwise_xor, complex,
    shift_left, shift_right_arithmetic, shift_right_logical, eq, ne, lt, le,
    gt, ge, select, clamp, convert_element_type, bitcast_convert_type, erf_inv,
    broadcast_in_dim, full_like, broadcast, reshape, transpose, slice,
    dynamic_slice, dynamic_update_slice, concatenate, pad, rev, iota,
    broadcasted_iota, gather, scatter, reduce_sum, reduce_prod, reduce_max,
    reduce_min, reduce_and, reduce_or, argmax, argmin, cumulative, sort,
    dot_general,
)
from ..frontend.lax_composite import integer_pow, nextafter, take_along_axis, top_k
from ..frontend.lax_nn import (ConvDimensionNumbers, conv, conv_dimension_numbers,
                               conv_general_dilated, conv_transpose, padtype_to_pads,
                               reduce_window, reduce_window_max, reduce_window_min,
                               reduce_window_sum, select_and_scatter_add)

__all__ = [
    # one primitive each
    "neg", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "cbrt", "floor",
    "ceil", "round", "round_even", "tanh", "sin", "cos", "tan", "logistic", "bitwise_not",
    "is_finite", "real", "imag", "erf", "population_count", "clz", "add", "sub", "mul", "div",
    "rem", "pow", "max", "min", "atan2", "bitwise_and", "bitwise_or", "bitwise_xor", "complex",
    "shift_left", "shift_right_arithmetic", "shift_right_logical", "eq", "ne", "lt", "le",
    "gt", "ge", "select", "clamp", "convert_element_type", "bitcast_convert_type", "erf_inv",
    "broadcast_in_dim", "full_like", "broadcast", "reshape", "transpose", "slice",
    "dynamic_slice", "dynamic_update_slice", "concatenate", "pad", "rev", "iota",
    "broadcasted_iota", "gather", "scatter", "reduce_sum", "reduce_prod", "reduce_max",
    "reduce_min", "reduce_and", "reduce_or", "argmax", "argmin", "cumulative", "sort",
    "dot_general",
    # several primitives
    "integer_pow", "nextafter", "take_along_axis", "top_k", "stop_gradient",
    "optimization_barrier",
    # control flow
    "cond", "switch", "while_loop", "fori_loop", "scan",
    # convolutions and windowed reductions
    "ConvDimensionNumbers", "conv", "conv_dimension_numbers", "conv_general_dilated",
    "conv_transpose", "padtype_to_pads", "reduce_window", "reduce_window_max",
    "reduce_window_min", "reduce_window_sum", "select_and_scatter_add",
]
