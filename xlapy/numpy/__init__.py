"""``xlapy.numpy``: a NumPy-compatible API that runs eagerly or traces under ``jit``.

``import xlapy.numpy as xnp``. Every function is written in terms of ``xlapy.lax``
primitives, so it runs op by op eagerly and compiles to HLO inside ``xlapy.jit``.
Type promotion follows JAX (x64 off, weak Python scalars), see ``xlapy.frontend.dtypes``.
"""
from __future__ import annotations

import numpy as _np

from ..frontend.core import Array
from ..frontend.dtypes import promote_types as _promote_types
from . import _array_methods  # noqa: F401  (installs Array operators)
from . import fft, linalg  # noqa: F401  (xnp.fft, xnp.linalg)
from ._elementwise import (
    abs, absolute, add, arccos, arcsin, arctan, arctan2, around, asarray, astype, bitwise_and,
    bitwise_not, bitwise_or, bitwise_xor, broadcast_shapes, cbrt, ceil, clip,
    conj, conjugate, cos, cosh, divide, divmod, equal, exp, exp2, expm1, floor, floor_divide,
    fmod, greater, greater_equal, imag, invert, isfinite, isinf, isnan, left_shift, less,
    less_equal, log, log1p, log2, log10, logical_and, logical_not, logical_or, logical_xor,
    maximum, minimum, mod, multiply, negative, not_equal, power, real, reciprocal, remainder,
    right_shift, rint, round, sign, sin, sinh, sqrt, square, subtract, tan, tanh, true_divide,
    trunc, where)
from ._indexing import take, take_along_axis
from ._pad import pad
from ._linalg import dot, einsum, inner, matmul, outer, tensordot, vdot
from ._array_extra import (
    atleast_1d, atleast_2d, atleast_3d, bincount, cross, diag, diagonal, diff, digitize,
    ediff1d, histogram, interp, kron, meshgrid, put_along_axis, roll, searchsorted, trace, tri,
    tril, triu, vander)
from ._stats import (
    average, corrcoef, cov, median, nanmax, nanmean, nanmedian, nanmin, nanpercentile, nanprod,
    nanquantile, nanstd, nansum, nanvar, percentile, quantile)
from ._ufuncs_extra import (
    allclose, arccosh, arcsinh, arctanh, copysign, count_nonzero, deg2rad, degrees, fabs,
    float_power, fmax, fmin, heaviside, hypot, isclose, logaddexp, logaddexp2, nan_to_num,
    nextafter, rad2deg, radians, signbit)
from ._reductions import (
    all, amax, amin, any, argmax, argmin, cummax, cummin, cumprod, cumsum, logsumexp, max,
    mean, min, prod, std, sum, var)
from ._shape_ops import (
    arange, array, broadcast_to, concatenate, empty, empty_like, expand_dims, eye,
    flip, full, full_like, hstack, identity, linspace, moveaxis, ndim, ones, ones_like,
    ravel, repeat, reshape, shape, size, split, squeeze, stack, swapaxes, tile, transpose,
    vstack, zeros, zeros_like)
from ._sorting import (argsort, argwhere, flatnonzero, load, loadtxt, nonzero, save, savez,
                       sort, unique)

ndarray = Array
bool_ = _np.dtype(_np.bool_)
int8, int16, int32, int64 = (_np.dtype(t) for t in (_np.int8, _np.int16, _np.int32, _np.int64))
uint8, uint16, uint32, uint64 = (_np.dtype(t) for t in (_np.uint8, _np.uint16, _np.uint32,
                                                           _np.uint64))
float16, float32, float64 = (_np.dtype(t) for t in (_np.float16, _np.float32, _np.float64))
complex64 = _np.dtype(_np.complex64)
from ..frontend.dtypes import bfloat16  # noqa: E402
pi, e, inf, nan = _np.pi, _np.e, _np.inf, _np.nan
newaxis = None


def result_type(*args: object) -> _np.dtype:
    """The dtype ``xnp`` ops give for these operands (see ``xlapy.frontend.dtypes``)."""
    return _promote_types(*[(a.dtype, a.weak_type) for a in (asarray(x) for x in args)])[0]

from ._dtypes_api import (  # noqa: E402
    ComplexWarning, array_repr, array_str, bool, can_cast, cdouble, character, complex128,
    complex_, complexfloating, csingle, double, dtype, euler_gamma, finfo, flexible, float_,
    float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e3m4, float8_e4m3, float8_e4m3b11fnuz,
    float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, floating,
    from_dlpack, frombuffer, fromfile, fromfunction, fromiter, frompyfunc, fromstring, generic,
    get_printoptions, iinfo, index_exp, inexact, int1, int2, int4, int_, integer, iscomplexobj,
    isdtype, isrealobj, isscalar, issubdtype, iterable, number, object_, printoptions,
    promote_types, s_, set_printoptions, signedinteger, single, uint, uint1, uint2, uint4,
    unsignedinteger)
from ._manipulation import (  # noqa: E402
    append, apply_along_axis, apply_over_axes, array_equal, array_equiv, array_split, block,
    broadcast_arrays, choose, column_stack, compress, concat, copy, delete, diagflat, dsplit,
    dstack, extract, fill_diagonal, fliplr, flipud, hsplit, insert, matrix_transpose,
    permute_dims, piecewise, place, put, resize, rollaxis, rot90, select, trim_zeros, unstack,
    vsplit)
from ._index_tricks import (  # noqa: E402
    c_, diag_indices, diag_indices_from, indices, ix_, mask_indices, mgrid, ogrid, r_,
    ravel_multi_index, tril_indices, tril_indices_from, triu_indices, triu_indices_from,
    unravel_index, vectorize)
from ._math_extra import (  # noqa: E402
    angle, bitwise_count, cumulative_prod, cumulative_sum, frexp, gcd, iscomplex, isneginf,
    isposinf, isreal, lcm, ldexp, modf, nanargmax, nanargmin, nancumprod, nancumsum, positive,
    ptp, sinc, spacing, unwrap)

# NumPy 2 / array API names of existing functions
acos, acosh, asin, asinh, atan, atanh, atan2 = (  # noqa: E402
    arccos, arccosh, arcsin, arcsinh, arctan, arctanh, arctan2)
bitwise_invert, bitwise_left_shift, bitwise_right_shift, pow = (  # noqa: E402
    invert, left_shift, right_shift, power)
from ._sets import (  # noqa: E402
    argpartition, intersect1d, isin, lexsort, packbits, partition, setdiff1d, setxor1d,
    sort_complex, union1d, unique_all, unique_counts, unique_inverse, unique_values,
    unpackbits)
from ._math_special import i0  # noqa: E402
from ._numeric import (  # noqa: E402
    bartlett, blackman, convolve, correlate, einsum_path, geomspace, gradient, hamming, hanning,
    histogram2d, histogram_bin_edges, histogramdd, kaiser, logspace, matvec, poly, polyadd,
    polyder, polydiv, polyfit, polyint, polymul, polysub, polyval, roots, trapezoid, vecdot,
    vecmat)
from ._ufunc import ufunc  # noqa: E402
