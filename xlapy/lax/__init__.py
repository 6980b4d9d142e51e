"""``xlapy.lax``: XLA-level operations and structured control flow (JAX's ``jax.lax``).

Strict operations with XLA's semantics: no implicit promotion or broadcasting (binary ops
need operands of one shape and dtype). This is the public namespace; the pieces live in
the front end: the one-primitive wrappers in ``xlapy.frontend.lax``, multi-op
operations in ``xlapy.frontend.lax_composite``, ``cond``/``switch``/``while_loop``/
``fori_loop``/``scan`` in ``xlapy.frontend.control_flow``, convolutions and windowed
reductions in ``xlapy.frontend.lax_nn`` and the named-axis collectives (``psum`` ...) in
``xlapy.frontend.primitives_collective``.
"""
from __future__ import annotations

from ..frontend.autodiff import stop_gradient
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
from ..frontend.primitives_collective import (all_gather, all_to_all, axis_index, axis_size,
                                              pmax, pmean, pmin, ppermute, psum, psum_scatter)
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
    # collectives over a named axis (pmap / vmap axis_name)
    "psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "all_to_all",
    "pshuffle", "pswapaxes", "pbroadcast", "with_sharding_constraint",
    "axis_index", "axis_size",
    # control flow
    "cond", "switch", "while_loop", "fori_loop", "scan",
    # convolutions and windowed reductions
    "ConvDimensionNumbers", "conv", "conv_dimension_numbers", "conv_general_dilated",
    "conv_transpose", "padtype_to_pads", "reduce_window", "reduce_window_max",
    "reduce_window_min", "reduce_window_sum", "select_and_scatter_add",
]

# ``jax.lax``'s composite functions, special functions and helpers (xlapy/lax/_*.py)
from ..frontend.primitives_misc import (  # noqa: E402
    optimization_barrier, reduce_precision, rng_bit_generator)
from ._elementwise import (  # noqa: E402
    acos, acosh, asin, asinh, atan, atanh, bessel_i0e, bessel_i1e, betainc, conj, cosh,
    digamma, erfc, exp2, igamma, igamma_grad_a, igammac, lgamma, mulhi, polygamma,
    random_gamma_grad, reciprocal, sinh, square, zeta)
from ._structured import (  # noqa: E402
    GatherDimensionNumbers, GatherScatterMode, Precision, ScatterDimensionNumbers,
    associative_scan, batch_matmul, broadcast_like, broadcast_shapes, broadcast_to_rank,
    collapse, cumlogsumexp, cummax, cummin, cumprod, cumsum, dot, dtype, dynamic_index_in_dim,
    dynamic_slice_in_dim, dynamic_update_index_in_dim, dynamic_update_slice_in_dim, empty,
    expand_dims, full, index_in_dim, index_take, map, ragged_dot, reduce, reduce_xor,
    scatter_add, scatter_apply, scatter_max, scatter_min, scatter_mul, scatter_sub,
    select_n, slice_in_dim, sort_key_val, split, squeeze, stack, tile, unstack)
from ._misc import (  # noqa: E402
    AccuracyMode, ConvGeneralDilatedDimensionNumbers, DotAlgorithm, DotAlgorithmPreset,
    DotDimensionNumbers, FftType, PrecisionLike, RaggedDotDimensionNumbers, RandomAlgorithm,
    RoundingMethod, Tolerance, approx_max_k, approx_min_k, composite,
    conv_general_dilated_local, conv_general_dilated_patches, conv_general_permutations, conv_general_shape_tuple,
    conv_shape_tuple, conv_transpose_shape_tuple, conv_with_general_padding, fft,
    platform_dependent, ragged_dot_general, reduce_window_shape_tuple)
from ..frontend.sharding import with_sharding_constraint  # noqa: E402,F401
from ._collective import pbroadcast, pshuffle, pswapaxes  # noqa: E402,F401
from . import linalg  # noqa: E402,F401
