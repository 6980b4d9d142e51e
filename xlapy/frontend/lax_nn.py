"""``lax``-level convolution and windowed reductions (JAX's ``jax.lax`` signatures).

- :func:`conv_general_dilated` (XLA ConvGeneralDilated), :func:`conv`,
  :func:`conv_transpose`, :func:`conv_dimension_numbers`;
- :func:`reduce_window` with a ``sum``/``max``/``min`` reduction, plus
  :func:`reduce_window_sum` / ``_max`` / ``_min`` and :func:`select_and_scatter_add`;
- :func:`padtype_to_pads`: ``'SAME'`` / ``'SAME_LOWER'`` / ``'VALID'`` to explicit pairs.

Like the rest of ``lax`` these do no implicit promotion: convolution operands must share
a dtype. Arguments are checked here, so a bad call raises
:class:`~xlapy.errors.InvalidArgumentError` naming the operand types.
"""
from __future__ import annotations

import builtins
from typing import Any, NamedTuple, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo import attrs as hlo_attrs
from ..hlo.shape_inference.reduction import window_output_size
from . import dtypes
from . import lax
from . import primitives_nn as PN
from .core import Array, bind, to_array
from .tracing import concrete_int, concrete_ints


class ConvDimensionNumbers(NamedTuple):
    """Dimension indices of a convolution, as in JAX.

    ``lhs_spec`` and ``out_spec`` are (batch, feature, spatial...) dimensions of the input
    and output; ``rhs_spec`` is (output feature, input feature, spatial...) of the kernel.
    """

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def _spec_permutations(specs: Sequence[str]) -> ConvDimensionNumbers:
    """``('NHWC', 'HWIO', 'NHWC')`` -> dimension indices; spatial dims follow the kernel's order."""
    lhs_s, rhs_s, out_s = specs
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for s, (a, b) in zip(specs, pairs):
        if s.count(a) != 1 or s.count(b) != 1 or len(set(s)) != len(s):
            raise InvalidArgumentError(
                f"convolution dimension_numbers {tuple(specs)}: {s!r} must contain {a!r} and "
                f"{b!r} exactly once and no repeated characters")
    if not set(lhs_s) - {"N", "C"} == set(rhs_s) - {"O", "I"} == set(out_s) - {"N", "C"}:
        raise InvalidArgumentError(f"convolution dimension_numbers {tuple(specs)} must name the "
                                   "same spatial dimensions in the input, kernel and output")

    def perm(s: str, pair: tuple[str, str]) -> tuple[int, ...]:
        spatial = sorted((i for i, c in enumerate(s) if c not in pair),
                         key=lambda i: rhs_s.index(s[i]))
        return (s.index(pair[0]), s.index(pair[1]), *spatial)

    return ConvDimensionNumbers(*(perm(s, p) for s, p in zip(specs, pairs)))


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: Any) -> ConvDimensionNumbers:
    """Normalize ``dimension_numbers`` to :class:`ConvDimensionNumbers`.

    Accepts None (``NCHW``/``OIHW``/``NCHW`` order), a triple of spec strings such as
    ``('NHWC', 'HWIO', 'NHWC')``, a triple of index tuples (JAX's ConvDimensionNumbers),
    an HLO ``dim_labels`` string (``'b01f_01io->b01f'``) or an HLO ConvDimensionNumbers.
    """
    rank = len(lhs_shape)
    if len(rhs_shape) != rank:
        raise InvalidArgumentError(f"convolution operands must have the same rank, got input "
                                   f"shape {tuple(lhs_shape)} and kernel shape {tuple(rhs_shape)}")
    if dimension_numbers is None:
        iota = tuple(range(rank))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, str):
        try:
            dimension_numbers = hlo_attrs.ConvDimensionNumbers.from_string(dimension_numbers)
        except ValueError as e:
            raise InvalidArgumentError(f"convolution dimension_numbers: {e}") from None
    if isinstance(dimension_numbers, hlo_attrs.ConvDimensionNumbers):
        dn = ConvDimensionNumbers(*PN.conv_specs(dimension_numbers))
    elif isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3:
        if all(isinstance(s, str) for s in dimension_numbers):
            for s in dimension_numbers:
                if len(s) != rank:
                    raise InvalidArgumentError(
                        f"convolution dimension_numbers {tuple(dimension_numbers)}: {s!r} has "
                        f"{len(s)} dimensions but the operands have rank {rank}")
            dn = _spec_permutations(dimension_numbers)
        else:
            dn = ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
    else:
        raise InvalidArgumentError(f"convolution dimension_numbers must be None, three spec "
                                   f"strings or ConvDimensionNumbers, got {dimension_numbers!r}")
    for name, spec in zip(dn._fields, dn):
        if sorted(spec) != list(range(rank)):
            raise InvalidArgumentError(f"convolution dimension_numbers: {name} {spec} must be "
                                       f"a permutation of the {rank} operand dimensions")
    return dn


# ------------------------------------------------------------------------------- arguments
def int_tuple(name: str, values: Any, n: int, default: int | None = None) -> tuple[int, ...]:
    """``values`` (None, an int or a sequence) as ``n`` positive ints; None gives ``default``
    (an error when there is none). ``name`` starts the error message."""
    if values is None:
        if default is None:
            raise InvalidArgumentError(f"{name} is required")
        return (default,) * n
    if isinstance(values, (int, np.integer)) or (isinstance(values, Array) and not values.ndim):
        values = (concrete_int(values, name),) * n
    try:
        out = concrete_ints(values, name)
    except InvalidArgumentError:
        raise
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name} must be an int or a sequence of {n} integers, "
                                   f"got {values!r}") from None
    if len(out) != n:
        raise InvalidArgumentError(f"{name} must have {n} entries (one per spatial/window "
                                   f"dimension), got {out}")
    if builtins.any(v < 1 for v in out):
        raise InvalidArgumentError(f"{name} must be positive, got {out}")
    return out


_PADDING_STRINGS = ("SAME", "SAME_LOWER", "VALID")


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> list[tuple[int, int]]:
    """Explicit ``(low, high)`` pairs for ``'SAME'``, ``'SAME_LOWER'`` or ``'VALID'``.

    ``SAME`` pads so that the output has ``ceil(in / stride)`` elements, the odd element
    going to the high side (TensorFlow's rule); ``SAME_LOWER`` puts it on the low side.
    """
    mode = padding.upper() if isinstance(padding, str) else padding
    if mode not in _PADDING_STRINGS:
        raise InvalidArgumentError(f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or a "
                                   f"sequence of (low, high) pairs, got {padding!r}")
    if mode == "VALID":
        return [(0, 0)] * len(in_shape)
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        out = -(-n // s)
        total = builtins.max((out - 1) * s + w - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if mode == "SAME" else (big, small))
    return pads


def _explicit_padding(padding: Any, n: int, what: str) -> tuple[tuple[int, int], ...]:
    try:
        pairs = tuple((concrete_int(lo, what), concrete_int(hi, what)) for lo, hi in padding)
    except InvalidArgumentError:
        raise
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{what}: padding must be 'SAME', 'SAME_LOWER', 'VALID' or a "
                                   f"sequence of (low, high) pairs, got {padding!r}") from None
    if len(pairs) != n:
        raise InvalidArgumentError(f"{what}: padding {pairs} must have {n} (low, high) pairs")
    return pairs


def _resolve_padding(padding: Any, in_shape: Sequence[int], window_shape: Sequence[int],
                     strides: Sequence[int], what: str) -> tuple[tuple[int, int], ...]:
    if isinstance(padding, str):
        return tuple(padtype_to_pads(in_shape, window_shape, strides, padding))
    return _explicit_padding(padding, len(in_shape), what)


# ----------------------------------------------------------------------------- convolution
def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: Any = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision: Any = None,
                         preferred_element_type: Any = None) -> Array:
    """XLA ConvGeneralDilated, with JAX's arguments.

    ``window_strides``, ``lhs_dilation`` and ``rhs_dilation`` have one entry per spatial
    dimension, in the kernel spec's spatial order. ``padding`` is ``'SAME'``,
    ``'SAME_LOWER'``, ``'VALID'`` or ``(low, high)`` pairs (negative values trim).
    ``precision`` is accepted for JAX compatibility; xlapy computes convolutions at full
    precision of the result type.
    """
    lhs, rhs = to_array(lhs), to_array(rhs)
    what = f"conv_general_dilated(lhs {lhs.type_text()}, rhs {rhs.type_text()})"
    if lhs.ndim < 2:
        raise InvalidArgumentError(f"{what}: operands need a batch and a feature dimension")
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    if lhs.dtype != rhs.dtype:
        raise InvalidArgumentError(f"{what}: operands must have the same dtype")
    nsp = lhs.ndim - 2
    strides = int_tuple(f"{what}: window_strides", window_strides, nsp)
    lhs_dil = int_tuple(f"{what}: lhs_dilation", lhs_dilation, nsp, 1)
    rhs_dil = int_tuple(f"{what}: rhs_dilation", rhs_dilation, nsp, 1)
    fgc = concrete_int(feature_group_count, f"{what}: feature_group_count")
    bgc = concrete_int(batch_group_count, f"{what}: batch_group_count")
    _check_groups(what, lhs, rhs, dn, fgc, bgc)
    in_spatial = [lhs.shape[d] for d in dn.lhs_spec[2:]]
    k_spatial = [rhs.shape[d] for d in dn.rhs_spec[2:]]
    if isinstance(padding, str) and builtins.any(d != 1 for d in lhs_dil):
        raise InvalidArgumentError(f"{what}: string padding {padding!r} is not defined with "
                                   f"lhs_dilation {lhs_dil}; give explicit (low, high) pairs "
                                   "or use conv_transpose")
    pads = _resolve_padding(padding, in_spatial, [(k - 1) * d + 1 for k, d in
                                                  zip(k_spatial, rhs_dil)], strides, what)
    pet = None if preferred_element_type is None else dtypes.canonicalize(preferred_element_type)
    return bind(PN.conv_general_dilated_p, lhs, rhs, window_strides=strides, padding=pads,
                lhs_dilation=lhs_dil, rhs_dilation=rhs_dil,
                dimension_numbers=PN.conv_dn_from_specs(*dn), feature_group_count=fgc,
                batch_group_count=bgc, preferred_element_type=pet)


def _check_groups(what: str, lhs: Array, rhs: Array, dn: ConvDimensionNumbers, fgc: int,
                  bgc: int) -> None:
    if fgc < 1 or bgc < 1:
        raise InvalidArgumentError(f"{what}: feature_group_count={fgc} and batch_group_count="
                                   f"{bgc} must be positive")
    if fgc > 1 and bgc > 1:
        raise InvalidArgumentError(f"{what}: feature_group_count={fgc} and batch_group_count="
                                   f"{bgc} cannot both exceed 1")
    in_feat, batch = lhs.shape[dn.lhs_spec[1]], lhs.shape[dn.lhs_spec[0]]
    k_out, k_in = rhs.shape[dn.rhs_spec[0]], rhs.shape[dn.rhs_spec[1]]
    if in_feat % fgc or in_feat // fgc != k_in:
        groups = f" divided by feature_group_count={fgc}" if fgc > 1 else ""
        raise InvalidArgumentError(
            f"{what}: the input has {in_feat} features (dimension {dn.lhs_spec[1]}){groups}, "
            f"but the kernel expects {k_in} input features (dimension {dn.rhs_spec[1]})")
    if k_out % fgc:
        raise InvalidArgumentError(f"{what}: kernel output features {k_out} must be divisible "
                                   f"by feature_group_count={fgc}")
    if batch % bgc or k_out % bgc:
        raise InvalidArgumentError(f"{what}: input batch {batch} and kernel output features "
                                   f"{k_out} must be divisible by batch_group_count={bgc}")


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
         precision: Any = None, preferred_element_type: Any = None) -> Array:
    """Convolution in ``NC...`` / ``OI...`` layout without dilation (``jax.lax.conv``)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_DEFAULT_SPECS = {3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                            5: ("NHWDC", "HWDIO", "NHWDC"), 2: ("NC", "IO", "NC")}


def _conv_transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """Padding of the fractionally strided convolution for a forward ``padding``."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + builtins.max(k - s, 0)
        lo = k - 1
    else:
        raise InvalidArgumentError(f"conv_transpose: padding must be 'SAME', 'VALID' or "
                                   f"(low, high) pairs, got {padding!r}")
    return lo, total - lo


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: Any,
                   rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                   transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None) -> Array:
    """Transposed ("fractionally strided") convolution, as ``jax.lax.conv_transpose``.

    ``'SAME'``/``'VALID'`` describe the forward convolution being transposed (output size
    ``in * stride`` for ``SAME``); explicit pairs pad the stride-dilated input directly.
    ``transpose_kernel=True`` flips the kernel spatially and swaps its I/O dimensions, which
    makes this the gradient of a forward convolution with the same kernel (Keras'
    ``Conv2DTranspose``). Default layouts are channels-last (``NHWC``/``HWIO``).
    """
    lhs, rhs = to_array(lhs), to_array(rhs)
    if dimension_numbers is None:
        if lhs.ndim not in _TRANSPOSE_DEFAULT_SPECS:
            raise InvalidArgumentError(f"conv_transpose: no default dimension_numbers for "
                                       f"rank {lhs.ndim} operands; pass dimension_numbers")
        dimension_numbers = _TRANSPOSE_DEFAULT_SPECS[lhs.ndim]
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    nsp = lhs.ndim - 2
    strides = int_tuple("conv_transpose: strides", strides, nsp)
    rhs_dil = int_tuple("conv_transpose: rhs_dilation", rhs_dilation, nsp, 1)
    k_spatial = [rhs.shape[d] for d in dn.rhs_spec[2:]]
    if isinstance(padding, str):
        mode = padding.upper()
        pads: Any = tuple(_conv_transpose_padding((k - 1) * d + 1, s, mode)
                          for k, d, s in zip(k_spatial, rhs_dil, strides))
    else:
        pads = _explicit_padding(padding, nsp, "conv_transpose")
    if transpose_kernel:
        rhs = lax.rev(rhs, dn.rhs_spec[2:])
        perm = list(range(rhs.ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = lax.transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, strides, rhs_dil, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


# ---------------------------------------------------------------------- windowed reductions
_KIND_ALIASES = {"sum": "sum", "add": "sum", "max": "max", "maximum": "max", "min": "min",
                 "minimum": "min"}


def _window_kind(kind: Any) -> str:
    if isinstance(kind, str) and kind.lower() in _KIND_ALIASES:
        return _KIND_ALIASES[kind.lower()]
    for fn, name in ((lax.add, "sum"), (lax.max, "max"), (lax.min, "min")):
        if kind is fn:
            return name
    raise InvalidArgumentError(f"reduce_window: the reduction must be 'sum', 'max' or 'min' "
                               f"(or lax.add / lax.max / lax.min), got {kind!r}")


def _window_params(x: Array, window_dimensions: Any, window_strides: Any, padding: Any,
                   base_dilation: Any, window_dilation: Any, what: str) -> dict:
    n = x.ndim
    dims = int_tuple(f"{what}: window_dimensions", window_dimensions, n)
    strides = int_tuple(f"{what}: window_strides", window_strides, n, 1)
    base = int_tuple(f"{what}: base_dilation", base_dilation, n, 1)
    wdil = int_tuple(f"{what}: window_dilation", window_dilation, n, 1)
    pads = _resolve_padding(padding, x.shape, [(w - 1) * d + 1 for w, d in zip(dims, wdil)],
                            strides, what)
    return dict(window_dimensions=dims, window_strides=strides, padding=pads,
                base_dilation=base, window_dilation=wdil)


def _reduce_window_identity(kind: str, x: Any, window_dimensions: Any, window_strides: Any,
                            padding: Any, base_dilation: Any, window_dilation: Any) -> Array:
    x = to_array(x)
    what = f"reduce_window_{kind}({x.type_text()})"
    if kind == "sum" and x.dtype == np.bool_:
        raise InvalidArgumentError(f"{what}: cannot sum booleans; convert to a number type first")
    params = _window_params(x, window_dimensions, window_strides, padding, base_dilation,
                            window_dilation, what)
    return bind(PN.reduce_window_p[kind], x, **params)


def _reduce_window_of(kind: str, doc: str):
    def op(x: Any, window_dimensions: Sequence[int],
           window_strides: Sequence[int] | None = None, padding: Any = "VALID",
           base_dilation: Sequence[int] | None = None,
           window_dilation: Sequence[int] | None = None) -> Array:
        return _reduce_window_identity(kind, x, window_dimensions, window_strides, padding,
                                       base_dilation, window_dilation)
    op.__name__ = op.__qualname__ = f"reduce_window_{kind}"
    op.__doc__ = doc
    return op


reduce_window_sum = _reduce_window_of(
    "sum", "Sum over each window (padding and base-dilation holes contribute nothing).")
reduce_window_max = _reduce_window_of(
    "max", "Maximum over each window (an empty window gives the dtype's lowest value).")
reduce_window_min = _reduce_window_of(
    "min", "Minimum over each window (an empty window gives the dtype's highest value).")


def reduce_window(operand: Any, init_value: Any, computation: Any,
                  window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
                  padding: Any = "VALID", base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Array:
    """XLA ReduceWindow with a ``'sum'``, ``'max'`` or ``'min'`` reduction.

    ``computation`` is one of those names (or ``lax.add``/``lax.max``/``lax.min``).
    Positions in the padding or in base-dilation holes are skipped; ``init_value`` is
    combined once into every window, as XLA's evaluator and CPU backend do. String
    padding is computed from the operand's (undilated) shape, as in JAX.
    """
    kind = _window_kind(computation)
    x = to_array(operand)
    init = to_array(init_value)
    if init.ndim != 0:
        raise InvalidArgumentError(f"reduce_window: init_value must be a scalar, got "
                                   f"{init.type_text()}")
    out = _reduce_window_identity(kind, x, window_dimensions, window_strides, padding,
                                  base_dilation, window_dilation)
    init = lax.convert_element_type(init, x.dtype, x.weak_type)
    identity = PN.reduction_identity(kind, x.dtype)
    if not init.is_traced and np.array_equal(init._value, identity):
        return out
    combine = {"sum": lax.add, "max": lax.max, "min": lax.min}[kind]
    if x.dtype == np.bool_:
        combine = {"max": lax.bitwise_or, "min": lax.bitwise_and}[kind]
    return combine(out, lax.broadcast_in_dim(init, out.shape, ()))


def select_and_scatter_add(source: Any, operand: Any, select_prim: Any,
                           window_dimensions: Sequence[int], window_strides: Sequence[int],
                           padding: Any) -> Array:
    """XLA SelectAndScatter with an ``add`` scatter: each element of ``source`` is added at
    the position of its window's maximum (``select_prim='ge'`` or ``lax.ge``) or minimum
    (``'le'``/``lax.le``) of ``operand``; the first such element in window order wins."""
    source, operand = to_array(source), to_array(operand)
    what = f"select_and_scatter_add(source {source.type_text()}, operand {operand.type_text()})"
    if select_prim is lax.ge or select_prim == "ge":
        select_kind = "ge"
    elif select_prim is lax.le or select_prim == "le":
        select_kind = "le"
    else:
        raise InvalidArgumentError(f"{what}: select_prim must be 'ge' or 'le', got "
                                   f"{select_prim!r}")
    if source.dtype != operand.dtype:
        raise InvalidArgumentError(f"{what}: source and operand must have the same dtype")
    params = _window_params(operand, window_dimensions, window_strides, padding, None, None,
                            what)
    del params["base_dilation"], params["window_dilation"]
    out_shape = tuple(window_output_size(n, w, s, lo, hi) for n, w, s, (lo, hi) in zip(
        operand.shape, params["window_dimensions"], params["window_strides"],
        params["padding"]))
    if source.shape != out_shape:
        raise InvalidArgumentError(f"{what}: source must have the window output shape "
                                   f"{out_shape}")
    return bind(PN.select_and_scatter_add_p, source, operand, select_kind=select_kind, **params)


__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated", "conv",
           "conv_transpose", "padtype_to_pads", "reduce_window", "reduce_window_sum",
           "reduce_window_max", "reduce_window_min", "select_and_scatter_add", "int_tuple"]
