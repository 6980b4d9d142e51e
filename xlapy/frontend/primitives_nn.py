"""Neural-network primitives: convolution and windowed reductions, with their gradients.

- ``conv_general_dilated_p`` lowers to HLO ``convolution``. Its parameters are already
  normalized by :mod:`xlapy.frontend.lax_nn`: explicit ``(low, high)`` padding per spatial
  dimension and the HLO :class:`~xlapy.hlo.attrs.ConvDimensionNumbers`.
- ``reduce_window_p[kind]`` (``sum``, ``max``, ``min``) lowers to HLO ``reduce-window``
  with the reduction's identity as init value (``lax_nn.reduce_window`` combines any
  other init value outside).
- ``select_and_scatter_add_p`` lowers to HLO ``select-and-scatter`` (select ``GE`` or
  ``LE``, scatter ``add``): each window's cotangent goes to the element a windowed
  max/min picked. ``select_and_gather_add_p`` is its transpose, a variadic
  ``reduce-window`` that carries each window's chosen element's tangent along.

Gradient rules (``vjp(ct, ans, *operands, **params)``) follow the formulas of JAX's
``lax/convolution.py`` and ``lax/windowed_reductions.py``: the input gradient of a
convolution is a convolution of the cotangent with the spatially reversed kernel (lhs
dilation = forward strides), the kernel gradient a convolution of the input with the
cotangent (feature and batch grouping swap roles). Rules are built from ``lax`` ops and
these primitives, so they are themselves differentiable.

Batching rules (``vmap``): the convolution folds the batch axis into the input batch,
the kernel's output features, or both with feature groups (JAX's rule, grouped cases
included); windowed ops get a window of 1 along the batch axis.
"""
from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

from ..hlo.attrs import ConvDimensionNumbers
from ..hlo.ir import HloInstruction
from ..hlo.shape import Shape
from . import lax
from .batching import bdim_first
from .batching import merge_axis_into as _merge_axis_into
from .batching import split_axis as _split_axis
from .core import Array, LoweringContext, bind, primitive, to_array
from .primitives_reduction import reduction_identity

I = HloInstruction
Pairs = Sequence[tuple[int, int]]


# ----------------------------------------------------------------------------- convolution
def _conv_lower(ctx: LoweringContext, lhs: I, rhs: I, *, window_strides, padding,
                lhs_dilation, rhs_dilation, dimension_numbers: ConvDimensionNumbers,
                feature_group_count: int, batch_group_count: int,
                preferred_element_type: Any) -> I:
    return ctx.b.conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation,
                                      rhs_dilation, dimension_numbers, feature_group_count,
                                      batch_group_count, preferred_element_type)


conv_general_dilated_p = primitive("conv_general_dilated")
conv_general_dilated_p.def_lowering(_conv_lower)


# ------------------------------------------------------------------------ windowed reductions
_WINDOW_OPCODES = {"sum": "add", "max": "maximum", "min": "minimum"}
_PRED_OPCODES = {"max": "or", "min": "and"}


def _reduce_window_lower(kind: str):
    def lower(ctx: LoweringContext, x: I, *, window_dimensions, window_strides, padding,
              base_dilation, window_dilation) -> I:
        dtype = x.shape.dtype
        opcode = _WINDOW_OPCODES[kind]
        if x.shape.element_type.is_pred:
            opcode = _PRED_OPCODES[kind]
        init = ctx.b.constant(reduction_identity(kind, dtype))
        comp = ctx.scalar_computation(opcode, dtype)
        return ctx.b.reduce_window(x, init, comp, window_dimensions, window_strides, padding,
                                   base_dilation, window_dilation)
    return lower


reduce_window_p = {kind: primitive(f"reduce_window_{kind}") for kind in _WINDOW_OPCODES}
for _kind, _p in reduce_window_p.items():
    _p.def_lowering(_reduce_window_lower(_kind))

_SELECT_DIRECTION = {"ge": "GE", "le": "LE"}
_CHOOSER_KIND = {"ge": "max", "le": "min"}


def _select_and_scatter_add_lower(ctx: LoweringContext, source: I, operand: I, *,
                                  select_kind: str, window_dimensions, window_strides,
                                  padding) -> I:
    et = operand.shape.element_type
    sb = ctx.sub_builder(f"select_{select_kind}")
    a, b = sb.parameter(Shape.scalar(et)), sb.parameter(Shape.scalar(et))
    select = sb.build(sb.compare(a, b, _SELECT_DIRECTION[select_kind]))
    scatter = ctx.scalar_computation("add", source.shape.dtype)
    init = ctx.b.constant(np.zeros((), source.shape.dtype))
    return ctx.b.select_and_scatter(operand, select, window_dimensions, window_strides, padding,
                                    source, init, scatter)


select_and_scatter_add_p = primitive("select_and_scatter_add",
                                     weak=lambda args, params: args[0].weak_type)
select_and_scatter_add_p.def_lowering(_select_and_scatter_add_lower)


def _select_and_gather_add_lower(ctx: LoweringContext, tangents: I, operand: I, *,
                                 select_kind: str, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation) -> I:
    b = ctx.b
    et, tt = operand.shape.element_type, tangents.shape.element_type
    sb = ctx.sub_builder(f"select_and_gather_{select_kind}")
    acc_k, acc_t = sb.parameter(Shape.scalar(et)), sb.parameter(Shape.scalar(tt))
    k, t = sb.parameter(Shape.scalar(et)), sb.parameter(Shape.scalar(tt))
    keep = sb.compare(acc_k, k, _SELECT_DIRECTION[select_kind])
    sb.tuple([sb.select(keep, acc_k, k), sb.select(keep, acc_t, t)])
    inits = [b.constant(reduction_identity(_CHOOSER_KIND[select_kind], operand.shape.dtype)),
             b.constant(np.zeros((), tangents.shape.dtype))]
    r = b.reduce_window([operand, tangents], inits, sb.build(), window_dimensions,
                        window_strides, padding, base_dilation, window_dilation)
    return b.get_tuple_element(r, 1)


select_and_gather_add_p = primitive("select_and_gather_add",
                                    weak=lambda args, params: args[0].weak_type)
select_and_gather_add_p.def_lowering(_select_and_gather_add_lower)


# ------------------------------------------------------------------------------- helpers
def _zeros(shape: Sequence[int], dtype: Any) -> Array:
    return lax.broadcast_in_dim(to_array(np.zeros((), dtype)), tuple(shape), ())


def _dilate_shape(shape: Sequence[int], dilation: Sequence[int]) -> list[int]:
    """Sizes after inserting ``d - 1`` holes between neighbours (0 stays 0)."""
    return [0 if n == 0 else (n - 1) * d + 1 for n, d in zip(shape, dilation)]


def conv_specs(dn: ConvDimensionNumbers) -> tuple[tuple[int, ...], ...]:
    """``(lhs_spec, rhs_spec, out_spec)``: (batch, feature, spatial...) dimension indices of
    the input and output, (output feature, input feature, spatial...) of the kernel."""
    return ((dn.input_batch, dn.input_feature, *dn.input_spatial),
            (dn.kernel_output_feature, dn.kernel_input_feature, *dn.kernel_spatial),
            (dn.output_batch, dn.output_feature, *dn.output_spatial))


def conv_dn_from_specs(lhs_spec: Sequence[int], rhs_spec: Sequence[int],
                       out_spec: Sequence[int]) -> ConvDimensionNumbers:
    """The inverse of :func:`conv_specs`."""
    return ConvDimensionNumbers(
        lhs_spec[0], lhs_spec[1], tuple(lhs_spec[2:]),
        rhs_spec[1], rhs_spec[0], tuple(rhs_spec[2:]),
        out_spec[0], out_spec[1], tuple(out_spec[2:]))


def _swap01(spec: Sequence[int]) -> tuple[int, ...]:
    return (spec[1], spec[0], *spec[2:])


def conv_vjp_lhs_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                         lhs_dilation, rhs_dilation) -> tuple[tuple[int, int], ...]:
    """Padding of the transposed convolution that maps an output cotangent to the input
    (and of the windowed-sum gradient): the window slides over the dilated cotangent."""
    lhs_d = _dilate_shape(in_shape, lhs_dilation)
    rhs_d = _dilate_shape(window_dimensions, rhs_dilation)
    out_d = _dilate_shape(out_shape, window_strides)
    pads = []
    for ld, rd, od, (lo, _) in zip(lhs_d, rhs_d, out_d, padding):
        before = rd - lo - 1
        pads.append((before, ld + rd - 1 - od - before))
    return tuple(pads)


def conv_vjp_rhs_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                         lhs_dilation, rhs_dilation) -> tuple[tuple[int, int], ...]:
    """Padding of the convolution of the input with the cotangent (the kernel gradient)."""
    lhs_d = _dilate_shape(in_shape, lhs_dilation)
    rhs_d = _dilate_shape(window_dimensions, rhs_dilation)
    out_d = _dilate_shape(out_shape, window_strides)
    return tuple((lo, (od - ld) + (rd - lo - 1))
                 for ld, rd, od, (lo, _) in zip(lhs_d, rhs_d, out_d, padding))


# ------------------------------------------------------------------- convolution gradients
def _conv_lhs_cotangent(ct: Array, lhs: Array, rhs: Array, *, window_strides, padding,
                        lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count) -> Array:
    lhs_spec, rhs_spec, out_spec = conv_specs(dimension_numbers)
    groups = feature_group_count
    kernel = rhs
    if feature_group_count > 1 or batch_group_count > 1:
        # The groups move from the kernel's output features into its input features.
        groups = max(feature_group_count, batch_group_count)
        kernel = _merge_axis_into(_split_axis(kernel, rhs_spec[0], groups),
                                  rhs_spec[0], rhs_spec[1])
    pads = conv_vjp_lhs_padding(
        [lhs.shape[d] for d in lhs_spec[2:]], [rhs.shape[d] for d in rhs_spec[2:]],
        window_strides, [ct.shape[d] for d in out_spec[2:]], padding, lhs_dilation,
        rhs_dilation)
    kernel = lax.convert_element_type(lax.rev(kernel, rhs_spec[2:]), ct.dtype)
    out = bind(conv_general_dilated_p, ct, kernel, window_strides=tuple(lhs_dilation),
               padding=pads, lhs_dilation=tuple(window_strides),
               rhs_dilation=tuple(rhs_dilation),
               dimension_numbers=conv_dn_from_specs(out_spec, _swap01(rhs_spec), lhs_spec),
               feature_group_count=groups, batch_group_count=1, preferred_element_type=None)
    if batch_group_count > 1:
        out = _merge_axis_into(_split_axis(out, lhs_spec[1], batch_group_count),
                               lhs_spec[1], lhs_spec[0])
    return lax.convert_element_type(out, lhs.dtype)


def _conv_rhs_cotangent(ct: Array, lhs: Array, rhs: Array, *, window_strides, padding,
                        lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count) -> Array:
    if ct.size == 0:
        return _zeros(rhs.shape, rhs.dtype)
    lhs_spec, rhs_spec, out_spec = conv_specs(dimension_numbers)
    # Feature groups of the forward convolution become batch groups here and vice versa.
    fgc, bgc = batch_group_count, feature_group_count
    pads = conv_vjp_rhs_padding(
        [lhs.shape[d] for d in lhs_spec[2:]], [rhs.shape[d] for d in rhs_spec[2:]],
        window_strides, [ct.shape[d] for d in out_spec[2:]], padding, lhs_dilation,
        rhs_dilation)
    out = bind(conv_general_dilated_p, lax.convert_element_type(lhs, ct.dtype), ct,
               window_strides=tuple(rhs_dilation), padding=pads,
               lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
               dimension_numbers=conv_dn_from_specs(_swap01(lhs_spec), _swap01(out_spec),
                                                    _swap01(rhs_spec)),
               feature_group_count=fgc, batch_group_count=bgc, preferred_element_type=None)
    return lax.convert_element_type(out, rhs.dtype)


def _conv_vjp(ct: Array, ans: Array, lhs: Array, rhs: Array, *, preferred_element_type,
              **params: Any) -> tuple[Array, Array]:
    return (_conv_lhs_cotangent(ct, lhs, rhs, **params),
            _conv_rhs_cotangent(ct, lhs, rhs, **params))


conv_general_dilated_p.def_vjp(_conv_vjp)


# -------------------------------------------------------------- windowed-reduction gradients
def _reduce_window_sum_vjp(ct: Array, ans: Array, x: Array, *, window_dimensions,
                           window_strides, padding, base_dilation,
                           window_dilation) -> tuple[Array]:
    """Every input element gets the sum of the cotangents of the windows that hold it: a
    windowed sum over the stride-dilated, padded cotangent."""
    if ct.size == 0 or x.size == 0:
        return (_zeros(x.shape, x.dtype),)
    pads = conv_vjp_lhs_padding(x.shape, window_dimensions, window_strides, ct.shape, padding,
                                base_dilation, window_dilation)
    cfg = [(lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides)]
    spread = lax.pad(ct, np.zeros((), ct.dtype), cfg)
    n = x.ndim
    out = bind(reduce_window_p["sum"], spread, window_dimensions=tuple(window_dimensions),
               window_strides=tuple(base_dilation), padding=((0, 0),) * n,
               base_dilation=(1,) * n, window_dilation=tuple(window_dilation))
    return (out,)


def _scatter_to_chosen(ct: Array, x: Array, kind: str, window_dimensions, window_strides,
                       padding, base_dilation, window_dilation) -> Array:
    """``ct`` of each window added to the element a windowed max/min chose there (the first
    one in window order that attains the result)."""
    if ct.size == 0 or x.size == 0:
        return _zeros(x.shape, ct.dtype)
    if any(d != 1 for d in window_dilation):
        return _scatter_to_chosen_by_taps(ct, x, kind, window_dimensions, window_strides,
                                          padding, base_dilation, window_dilation)
    operand = x
    dilated = any(d != 1 for d in base_dilation)
    if dilated:   # the holes of base dilation hold the identity, never chosen over data
        operand = lax.pad(x, reduction_identity(kind, x.dtype),
                          [(0, 0, d - 1) for d in base_dilation])
    select_kind = "ge" if kind == "max" else "le"
    out = bind(select_and_scatter_add_p, ct, operand, select_kind=select_kind,
               window_dimensions=tuple(window_dimensions),
               window_strides=tuple(window_strides), padding=tuple(padding))
    if dilated:
        out = lax.slice(out, (0,) * out.ndim, out.shape, tuple(base_dilation))
    return out


def _scatter_to_chosen_by_taps(ct: Array, x: Array, kind: str, window_dimensions,
                               window_strides, padding, base_dilation,
                               window_dilation) -> Array:
    """The same as select-and-scatter, for windows with holes (window dilation), which HLO
    select-and-scatter cannot express.

    Tap ``k`` of every window is one strided slice of the padded, dilated operand; each
    output's cotangent goes to its first tap equal to the window result, and a tap's
    contribution is spread back by the transpose of its slice (a pad).
    """
    n = x.ndim
    ident = reduction_identity(kind, x.dtype)
    padded = lax.pad(x, ident, [(lo, hi, d - 1) for (lo, hi), d in zip(padding, base_dilation)])
    result = bind(reduce_window_p[kind], x, window_dimensions=tuple(window_dimensions),
                  window_strides=tuple(window_strides), padding=tuple(padding),
                  base_dilation=tuple(base_dilation), window_dilation=tuple(window_dilation))
    zero_ct = _zeros(ct.shape, ct.dtype)
    total = _zeros(padded.shape, ct.dtype)
    taken = None
    for tap in itertools.product(*(range(w) for w in window_dimensions)):
        start = [k * d for k, d in zip(tap, window_dilation)]
        limit = [s0 + (o - 1) * s + 1 for s0, o, s in zip(start, ct.shape, window_strides)]
        hit = lax.eq(lax.slice(padded, start, limit, window_strides), result)
        if taken is None:
            taken = hit
        else:
            hit = lax.bitwise_and(hit, lax.bitwise_not(taken))
            taken = lax.bitwise_or(taken, hit)
        part = lax.select(hit, ct, zero_ct)
        cfg = [(s0, size - lim, s - 1)
               for s0, lim, size, s in zip(start, limit, padded.shape, window_strides)]
        total = lax.add(total, lax.pad(part, np.zeros((), ct.dtype), cfg))
    unpadded = lax.pad(total, np.zeros((), ct.dtype), [(-lo, -hi, 0) for lo, hi in padding])
    return lax.slice(unpadded, (0,) * n, unpadded.shape, tuple(base_dilation))


def _chooser_vjp(kind: str):
    def vjp(ct: Array, ans: Array, x: Array, **params: Any) -> tuple[Array]:
        return (_scatter_to_chosen(ct, x, kind, **params),)
    return vjp


reduce_window_p["sum"].def_vjp(_reduce_window_sum_vjp)
reduce_window_p["max"].def_vjp(_chooser_vjp("max"))
reduce_window_p["min"].def_vjp(_chooser_vjp("min"))


def _select_and_scatter_add_vjp(ct: Array, ans: Array, source: Array, operand: Array, *,
                                select_kind: str, window_dimensions, window_strides,
                                padding) -> tuple[Array, None]:
    n = operand.ndim
    gathered = bind(select_and_gather_add_p, ct, operand, select_kind=select_kind,
                    window_dimensions=tuple(window_dimensions),
                    window_strides=tuple(window_strides), padding=tuple(padding),
                    base_dilation=(1,) * n, window_dilation=(1,) * n)
    return (gathered, None)


def _select_and_gather_add_vjp(ct: Array, ans: Array, tangents: Array, operand: Array, *,
                               select_kind: str, **params: Any) -> tuple[Array, None]:
    return (_scatter_to_chosen(ct, operand, _CHOOSER_KIND[select_kind], **params), None)


select_and_scatter_add_p.def_vjp(_select_and_scatter_add_vjp)
select_and_gather_add_p.def_vjp(_select_and_gather_add_vjp)

# ----------------------------------------------------------------------------- batching rules
@conv_general_dilated_p.def_batching
def _conv_batch(vals, dims, *, dimension_numbers, feature_group_count, batch_group_count,
                **params):
    """JAX's ``_conv_general_dilated_batch_rule``."""
    (lhs, rhs), (dl, dr) = vals, dims
    lhs_spec, rhs_spec, out_spec = conv_specs(dimension_numbers)

    def conv(a: Array, b: Array, fgc: int, bgc: int) -> Array:
        return bind(conv_general_dilated_p, a, b, dimension_numbers=dimension_numbers,
                    feature_group_count=fgc, batch_group_count=bgc, **params)

    if dl is not None and dr is not None:
        n = lhs.shape[dl]
        if batch_group_count > 1:
            new_lhs = _merge_axis_into(lhs, dl, lhs_spec[0])
            fgc, bgc = feature_group_count, batch_group_count * n
        else:
            new_lhs = _merge_axis_into(lhs, dl, lhs_spec[1])
            fgc, bgc = feature_group_count * n, batch_group_count
        out = conv(new_lhs, _merge_axis_into(rhs, dr, rhs_spec[0]), fgc, bgc)
        return _split_axis(out, out_spec[1], n), out_spec[1]
    if dl is not None:
        n = lhs.shape[dl]
        if batch_group_count == 1:
            out = conv(_merge_axis_into(lhs, dl, lhs_spec[0]), rhs, feature_group_count, 1)
            return _split_axis(out, out_spec[0], n), out_spec[0]
        new_lhs = _split_axis(lhs, lhs_spec[0] + int(dl <= lhs_spec[0]), batch_group_count)
        new_lhs = _merge_axis_into(new_lhs, dl + int(lhs_spec[0] < dl), lhs_spec[0] + 1)
        new_lhs = _merge_axis_into(new_lhs, lhs_spec[0], lhs_spec[0])
        out = conv(new_lhs, rhs, feature_group_count, batch_group_count)
        return _split_axis(out, out_spec[0], n), out_spec[0]
    n = rhs.shape[dr]
    if feature_group_count == 1 and batch_group_count == 1:
        out = conv(lhs, _merge_axis_into(rhs, dr, rhs_spec[0]), 1, 1)
        return _split_axis(out, out_spec[1], n), out_spec[1]
    groups = feature_group_count if feature_group_count > 1 else batch_group_count
    new_rhs = _split_axis(rhs, rhs_spec[0] + int(dr <= rhs_spec[0]), groups)
    new_rhs = _merge_axis_into(new_rhs, dr + int(rhs_spec[0] < dr), rhs_spec[0] + 1)
    new_rhs = _merge_axis_into(new_rhs, rhs_spec[0], rhs_spec[0])
    out = conv(lhs, new_rhs, feature_group_count, batch_group_count)
    out = _split_axis(out, out_spec[1], groups)
    out = _split_axis(out, out_spec[1] + 1, n)
    return _merge_axis_into(out, out_spec[1], out_spec[1] + 1), out_spec[1]


def _window_params(params: dict, n: int) -> dict:
    """Window parameters with a window of 1 (stride 1, no padding) along a leading axis."""
    out = dict(params)
    for name, one in (("window_dimensions", 1), ("window_strides", 1), ("base_dilation", 1),
                      ("window_dilation", 1)):
        if out.get(name) is not None:
            out[name] = (one,) + tuple(out[name])
    out["padding"] = ((0, 0),) + tuple(tuple(p) for p in out["padding"])
    return out


def _windowed_batch(prim: Any) -> Any:
    def rule(vals, dims, **params):
        moved = bdim_first(vals, dims)
        return bind(prim, *moved, **_window_params(params, moved[0].shape[0])), 0
    return rule


for _p in (*reduce_window_p.values(), select_and_scatter_add_p, select_and_gather_add_p):
    _p.def_batching(_windowed_batch(_p))


__all__ = ["conv_general_dilated_p", "reduce_window_p", "select_and_scatter_add_p",
           "select_and_gather_add_p", "conv_specs", "conv_dn_from_specs",
           "conv_vjp_lhs_padding", "conv_vjp_rhs_padding"]
