"""The rest of ``jax.lax``'s public helpers: enums and dimension-number types, the
convolution shape helpers, ``conv_with_general_padding``, ``conv_general_dilated_patches``,
``approx_max_k``/``approx_min_k`` (exact), ``composite``, ``platform_dependent``,
``fft`` and ``FftType``."""
from __future__ import annotations

import enum
import functools
from typing import Any, Callable, Sequence, Union

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import lax
from ..frontend.core import Array, default_backend, to_array
from ..frontend.lax_composite import top_k
from ..frontend.lax_nn import (ConvDimensionNumbers, conv_dimension_numbers,
                               conv_general_dilated, padtype_to_pads)
from ..frontend.primitives_fft import fft as _fft

ConvGeneralDilatedDimensionNumbers = ConvDimensionNumbers
DotDimensionNumbers = tuple   # ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))
PrecisionLike = Union[None, str, Any]


class FftType(enum.IntEnum):
    """The kind of :func:`fft`."""
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


def fft(x: Any, fft_type: Any, fft_lengths: Sequence[int]) -> Array:
    """XLA's FFT of the trailing ``len(fft_lengths)`` dimensions (``fft_type`` an
    :class:`FftType` or its name)."""
    kind = fft_type.name if isinstance(fft_type, FftType) else str(fft_type)
    return _fft(to_array(x), kind, fft_lengths)


class RoundingMethod(enum.IntEnum):
    """Rounding of ``round``: away from zero, or to nearest even."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


class RandomAlgorithm(enum.IntEnum):
    """The algorithm of ``rng_bit_generator``."""
    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2


class DotAlgorithmPreset(enum.Enum):
    """Accepted for JAX compatibility: xlapy computes dots in the operands' precision."""
    DEFAULT = 0
    ANY_F8_ANY_F8_F32 = 1
    BF16_BF16_F32 = 2
    F16_F16_F32 = 3
    F32_F32_F32 = 4
    F64_F64_F64 = 5


class AccuracyMode(enum.Enum):
    """Accepted for JAX compatibility (transcendental accuracy requests)."""
    DEFAULT = 0
    HIGHEST = 1


class DotAlgorithm:
    """A dot algorithm request (accepted, not used: xlapy computes dots in the operands'
    precision)."""

    def __init__(self, lhs_precision_type: Any, rhs_precision_type: Any,
                 accumulation_type: Any, lhs_component_count: int = 1,
                 rhs_component_count: int = 1, num_primitive_operations: int = 1,
                 allow_imprecise_accumulation: bool = False) -> None:
        self.lhs_precision_type = lhs_precision_type
        self.rhs_precision_type = rhs_precision_type
        self.accumulation_type = accumulation_type
        self.lhs_component_count = lhs_component_count
        self.rhs_component_count = rhs_component_count
        self.num_primitive_operations = num_primitive_operations
        self.allow_imprecise_accumulation = allow_imprecise_accumulation


class Tolerance:
    """Tolerances of a transcendental approximation (accepted for compatibility)."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0) -> None:
        self.atol, self.rtol, self.ulps = atol, rtol, ulps


class RaggedDotDimensionNumbers:
    """Dimension numbers of ``ragged_dot_general`` (only the ``ragged_dot`` layout —
    lhs ``[m, k]``, rhs ``[g, k, n]`` — is supported)."""

    def __init__(self, dot_dimension_numbers: Any, lhs_ragged_dimensions: Sequence[int],
                 rhs_group_dimensions: Sequence[int]) -> None:
        self.dot_dimension_numbers = dot_dimension_numbers
        self.lhs_ragged_dimensions = tuple(lhs_ragged_dimensions)
        self.rhs_group_dimensions = tuple(rhs_group_dimensions)


def ragged_dot_general(lhs: Any, rhs: Any, group_sizes: Any,
                       ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                       precision: Any = None, preferred_element_type: Any = None,
                       group_offset: Any = None) -> Array:
    """``ragged_dot`` with explicit dimension numbers (the ``ragged_dot`` layout only)."""
    from ._structured import ragged_dot
    dn = ragged_dot_dimension_numbers
    if tuple(map(tuple, dn.dot_dimension_numbers[0])) != ((1,), (1,)) or \
            tuple(map(tuple, dn.dot_dimension_numbers[1])) != ((), ()) or \
            dn.lhs_ragged_dimensions != (0,) or dn.rhs_group_dimensions != (0,):
        raise InvalidArgumentError("lax.ragged_dot_general: only the ragged_dot layout "
                                   "(lhs [m,k], rhs [g,k,n], ragged m) is supported")
    return ragged_dot(lhs, rhs, group_sizes, precision, preferred_element_type, group_offset)


# ------------------------------------------------------------------ convolution shapes
def conv_general_permutations(dimension_numbers: Any) -> tuple[tuple[int, ...], ...]:
    """``(lhs_perm, rhs_perm, out_perm)`` of string dimension numbers
    ``("NCHW", "OIHW", "NCHW")``."""
    lhs, rhs, out = dimension_numbers
    n = len(lhs)
    dn = conv_dimension_numbers((1,) * n, (1,) * n, (lhs, rhs, out))
    return dn.lhs_spec, dn.rhs_spec, dn.out_spec


def _dilate(d: int, k: int) -> int:
    return 0 if d == 0 else 1 + k * (d - 1)


def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                     strides: Sequence[int], pads: Any,
                     batch_group_count: int = 1) -> tuple[int, ...]:
    """The output shape of an ``NC...``/``OI...`` convolution."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    spatial = [(lhs_shape[i + 2] + lo + hi - rhs_shape[i + 2]) // s + 1
               for i, ((lo, hi), s) in enumerate(zip(pads, strides))]
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + tuple(max(v, 0) for v in spatial)


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                             window_strides: Sequence[int], padding: Any,
                             dimension_numbers: Any) -> tuple[int, ...]:
    """The output shape of ``conv_general_dilated`` (no dilation)."""
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs = tuple(lhs_shape[i] for i in dn.lhs_spec)
    rhs = tuple(rhs_shape[i] for i in dn.rhs_spec)
    out = conv_shape_tuple(lhs, rhs, window_strides, padding)
    res = [0] * len(out)
    for i, d in enumerate(dn.out_spec):
        res[d] = out[i]
    return tuple(res)


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               window_strides: Sequence[int], padding: Any,
                               dimension_numbers: Any) -> tuple[int, ...]:
    """The output shape of ``conv_transpose`` with these arguments."""
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs = tuple(lhs_shape[i] for i in dn.lhs_spec)
    rhs = tuple(rhs_shape[i] for i in dn.rhs_spec)
    if isinstance(padding, str):
        k = [_dilate(r, 1) for r in rhs[2:]]
        if padding.upper() == "SAME":
            spatial = [d * s for d, s in zip(lhs[2:], window_strides)]
        else:
            spatial = [d * s + max(kk - s, 0) for d, s, kk in zip(lhs[2:], window_strides, k)]
    else:
        spatial = [(d - 1) * s + lo + hi - r + 2 for d, s, (lo, hi), r in
                   zip(lhs[2:], window_strides, padding, rhs[2:])]
    out = (lhs[0], rhs[0]) + tuple(spatial)
    res = [0] * len(out)
    for i, d in enumerate(dn.out_spec):
        res[d] = out[i]
    return tuple(res)


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int], padding: Sequence[Any],
                              base_dilation: Sequence[int] | None = None,
                              window_dilation: Sequence[int] | None = None) -> tuple[int, ...]:
    """The output shape of ``reduce_window``."""
    n = len(operand_shape)
    bd = base_dilation or (1,) * n
    wd = window_dilation or (1,) * n
    out = []
    for d, w, s, (lo, hi), b, k in zip(operand_shape, window_dimensions, window_strides,
                                       padding, bd, wd):
        size = _dilate(d, b) + lo + hi - _dilate(w, k)
        out.append(max(size // s + 1, 0) if size >= 0 else 0)
    return tuple(out)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                              lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision: Any = None,
                              preferred_element_type: Any = None) -> Array:
    """``conv_general_dilated`` in ``NC...``/``OI...`` layout."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs: Any, filter_shape: Sequence[int],
                                 window_strides: Sequence[int], padding: Any,
                                 lhs_dilation: Sequence[int] | None = None,
                                 rhs_dilation: Sequence[int] | None = None,
                                 dimension_numbers: Any = None, precision: Any = None,
                                 preferred_element_type: Any = None) -> Array:
    """The patches a convolution with a ``filter_shape`` window reads, as channels
    (``C * prod(filter_shape)`` of them, channel-major), via a one-hot filter."""
    x = to_array(lhs)
    n = len(filter_shape)
    dn = conv_dimension_numbers(x.shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    c = x.shape[dn.lhs_spec[1]]
    k = int(np.prod(filter_shape))
    eye = np.eye(k, dtype=x.dtype).reshape((k, 1) + tuple(filter_shape))
    rhs = np.tile(eye, (c, 1) + (1,) * n)           # [C*k, 1, *filter], grouped by channel
    rhs_spec = dn.rhs_spec
    rhs_t = np.transpose(rhs, np.argsort(rhs_spec))  # to the rhs layout asked for
    return conv_general_dilated(x, to_array(rhs_t), window_strides, padding, lhs_dilation,
                                rhs_dilation, dimension_numbers, feature_group_count=c,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs: Any, rhs: Any, window_strides: Sequence[int],
                               padding: Any, filter_shape: Sequence[int],
                               lhs_dilation: Sequence[int] | None = None,
                               rhs_dilation: Sequence[int] | None = None,
                               dimension_numbers: Any = None,
                               precision: Any = None) -> Array:
    """A locally connected (unshared) convolution: every output position has its own
    filter. ``rhs`` holds, per output position (its spatial dims, in ``rhs``'s layout),
    an ``(in_features * prod(filter_shape), out_features)`` matrix; the input patches
    are taken as :func:`conv_general_dilated_patches` takes them."""
    x = to_array(lhs)
    w = to_array(rhs)
    patches = conv_general_dilated_patches(x, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers)
    dn = conv_dimension_numbers(x.shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    lhs_b = list(dn.out_spec[2:])
    rhs_b = list(dn.rhs_spec[2:])
    rhs_b = [rhs_b[i] for i in sorted(range(len(rhs_b)), key=lambda k: lhs_b[k])]
    lhs_b = sorted(lhs_b)
    out = lax.dot_general(patches, w, (([dn.out_spec[1]], [dn.rhs_spec[1]]), (lhs_b, rhs_b)))
    # result dims: spatial (sorted), then the patches' batch dim, then out features
    nd = out.ndim
    src = [nd - 2, nd - 1]
    dst = [dn.out_spec[0], dn.out_spec[1]]
    perm = [None] * nd
    rest = [i for i in range(nd) if i not in src]
    free = [i for i in range(nd) if i not in dst]
    for s_, d_ in zip(src, dst):
        perm[d_] = s_
    for r_, f_ in zip(rest, free):
        perm[f_] = r_
    return lax.transpose(out, tuple(perm))


# ------------------------------------------------------------------------------ others
def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, is_max_k: bool = True,
                 reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> tuple[Array, Array]:
    """The ``k`` largest values and their indices along ``reduction_dimension`` (computed
    exactly: recall 1)."""
    x = to_array(operand)
    d = reduction_dimension % x.ndim
    if d != x.ndim - 1:
        perm = tuple(i for i in range(x.ndim) if i != d) + (d,)
        v, i = approx_max_k(lax.transpose(x, perm), k, -1, recall_target, is_max_k)
        inv = tuple(int(j) for j in np.argsort(perm))
        return lax.transpose(v, inv), lax.transpose(i, inv)
    if not is_max_k:
        v, i = top_k(lax.neg(x) if x.dtype.kind != "u" else lax.bitwise_not(x), k)
        return (lax.neg(v) if x.dtype.kind != "u" else lax.bitwise_not(v)), i
    return top_k(x, k)


def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> tuple[Array, Array]:
    """The ``k`` smallest values and their indices (computed exactly)."""
    return approx_max_k(operand, k, reduction_dimension, recall_target, False)


def composite(decomposition: Callable[..., Any], name: str,
              version: int = 0) -> Callable[..., Any]:
    """Mark ``decomposition`` as a named composite op; xlapy inlines the decomposition
    (XLA's default for composites it has no special kernel for)."""
    @functools.wraps(decomposition)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return decomposition(*args, **kwargs)
    wrapped.composite_name = name      # type: ignore[attr-defined]
    wrapped.composite_version = version  # type: ignore[attr-defined]
    return wrapped


def platform_dependent(*args: Any, default: Callable[..., Any] | None = None,
                       **per_platform: Callable[..., Any]) -> Any:
    """Call the branch for the current default backend (``cpu``, ``gpu``/``cuda``, ...),
    else ``default``."""
    backend = default_backend()
    names = {"gpu": ("gpu", "cuda"), "gpu_sim": ("gpu", "cuda"), "cpu": ("cpu",),
             "interpreter": ("cpu",)}.get(backend, (backend,))
    for n in names:
        if n in per_platform:
            return per_platform[n](*args)
    if default is None:
        raise InvalidArgumentError(f"lax.platform_dependent: no branch for platform "
                                   f"{backend!r} and no default")
    return default(*args)
