"""The StableHLO op table: one converter per op (or family), each building HLO.

Attribute semantics follow the StableHLO specification (``docs/spec.md`` of
openxla/stablehlo): ``broadcast_in_dim``'s ``dims`` map operand dims to result dims,
``pad``'s ``low``/``high``/``interior`` are XLA's padding triples, a ``slice`` is
``[start:limit:stride]`` per dim, ``dot_general`` lists batching then contracting dims,
``convolution``'s ``dim_numbers`` are XLA's ``dim_labels`` written as lists, and so on.
Ops whose StableHLO form implies a broadcast that HLO spells out (scalar ``clamp`` bounds,
a scalar ``select`` predicate) get an explicit ``broadcast``.
"""
from __future__ import annotations

import re
from math import prod
from typing import Any

from ...errors import InvalidArgumentError
from ..attrs import ConvDimensionNumbers, Window
from ..shape import UNBOUNDED, Shape
from .constants import dense_array, int_list, pairs
from .dynamic import broadcast_to, fill_like, has_unbounded, specialize, static_values
from .registry import OpContext, handler
from .syntax import Dense, Enum, Op, Opaque, Struct

# ops whose HLO opcode is their name with '-' for '_'
ELEMENTWISE = ("abs add and atan2 cbrt ceil complex cosine count_leading_zeros divide "
               "exponential exponential_minus_one floor imag is_finite log log_plus_one "
               "logistic maximum minimum multiply negate not or popcnt power real remainder "
               "round_nearest_afz round_nearest_even rsqrt shift_left shift_right_arithmetic "
               "shift_right_logical sign sine sqrt subtract tan tanh xor").split()


def _bare(op: Op) -> list[Any]:
    return [v for k, v in op.positional if k == "bare"]


def _enum(value: Any) -> str:
    return value.value if isinstance(value, Enum) else str(value)


@handler(*(f"stablehlo.{n}" for n in ELEMENTWISE))
def elementwise(ctx: OpContext, op: Op) -> list:
    opcode = op.name.split(".", 1)[1].replace("_", "-")
    return [ctx.add(opcode, ctx.operands())]


def _broadcast_to(ctx: OpContext, x, dims: tuple[int, ...]):
    if x.shape.dims == dims:
        return x
    if x.shape.rank:
        raise ctx.fail(f"operand {x.shape.to_text(False)} does not match {list(dims)}")
    return ctx.add("broadcast", [x], {"dimensions": ()},
                   declared=Shape.array(x.shape.element_type, dims))


@handler("stablehlo.clamp")
def clamp(ctx: OpContext, op: Op) -> list:
    lo, x, hi = ctx.operands()
    return [ctx.add("clamp", [_broadcast_to(ctx, lo, x.shape.dims), x,
                              _broadcast_to(ctx, hi, x.shape.dims)])]


@handler("stablehlo.select")
def select(ctx: OpContext, op: Op) -> list:
    p, a, b = ctx.operands()
    return [ctx.add("select", [_broadcast_to(ctx, p, a.shape.dims), a, b])]


@handler("stablehlo.compare")
def compare(ctx: OpContext, op: Op) -> list:
    a, b = ctx.operands()
    words = [_enum(w) for w in _bare(op)]
    direction = _enum(op.attrs.get("comparison_direction", words[0] if words else ""))
    kind = _enum(op.attrs.get("compare_type", words[1] if len(words) > 1 else "NOTYPE"))
    if direction not in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        raise ctx.fail(f"unknown comparison direction {direction!r}")
    et = a.shape.element_type
    default = "FLOAT" if et.is_floating or et.is_complex else \
        "SIGNED" if et.is_signed_integral else "UNSIGNED"
    attrs: dict[str, Any] = {"direction": direction}
    if kind not in ("NOTYPE", default):
        attrs["type"] = kind
    return [ctx.add("compare", [a, b], attrs)]


@handler("stablehlo.constant")
def constant(ctx: OpContext, op: Op) -> list:
    value = op.attrs.get("value", _bare(op)[0] if _bare(op) else None)
    if not isinstance(value, Dense):
        raise ctx.fail("a constant needs a dense<...> value")
    arr = dense_array(value)
    return [ctx.add("constant", [], declared=value.shape.without_layout(), literal=arr)]


@handler("stablehlo.convert")
def convert(ctx: OpContext, op: Op) -> list:
    (x,) = ctx.operands()
    return [ctx.add("convert", [x], declared=fill_like(ctx.result_type(), x.shape))]


@handler("stablehlo.bitcast_convert")
def bitcast_convert(ctx: OpContext, op: Op) -> list:
    (x,) = ctx.operands()
    return [ctx.add("bitcast-convert", [x], declared=fill_like(ctx.result_type(), x.shape))]


@handler("stablehlo.reshape")
def reshape(ctx: OpContext, op: Op) -> list:
    (x,) = ctx.operands()
    out = ctx.result_type()
    if has_unbounded(out) and out.dims.count(UNBOUNDED) == 1 and \
            not has_unbounded(x.shape):     # one specialized dim: the element count tells
        known = prod(d for d in out.dims if d != UNBOUNDED)
        out = specialize(out, [x.shape.num_elements // max(known, 1) if d == UNBOUNDED else d
                               for d in out.dims])
    return [ctx.add("reshape", [x], declared=out)]


@handler("stablehlo.broadcast_in_dim")
def broadcast_in_dim(ctx: OpContext, op: Op) -> list:
    (x,) = ctx.operands()
    dims = int_list(op.attrs.get("dims", op.attrs.get("broadcast_dimensions", ())))
    out = list(ctx.result_type().dims)
    for i, d in enumerate(dims):        # a specialized dim the operand gives
        if out[d] == UNBOUNDED and x.shape.dims[i] != 1:
            out[d] = x.shape.dims[i]
    return [broadcast_to(ctx, x, dims, out)]


@handler("stablehlo.broadcast")
def broadcast(ctx: OpContext, op: Op) -> list:
    """Prepends the ``sizes`` dims (XLA's Broadcast)."""
    (x,) = ctx.operands()
    sizes = int_list(op.attrs.get("sizes", op.attrs.get("broadcast_sizes", ())))
    n = len(sizes)
    return [ctx.add("broadcast", [x], {"dimensions": tuple(range(n, n + x.shape.rank))},
                    declared=Shape.array(x.shape.element_type, sizes + x.shape.dims))]


@handler("stablehlo.set_dimension_size")
def set_dimension_size(ctx: OpContext, op: Op) -> list:
    dim = int(op.attrs.get("dim", op.attrs.get("dimension", 0)))
    return [ctx.add("set-dimension-size", ctx.operands(), {"dimensions": (dim,)})]


@handler("stablehlo.transpose")
def transpose(ctx: OpContext, op: Op) -> list:
    perm = int_list(op.attrs.get("dims", op.attrs.get("permutation", ())))
    return [ctx.add("transpose", ctx.operands(), {"dimensions": perm})]


@handler("stablehlo.reverse")
def reverse(ctx: OpContext, op: Op) -> list:
    dims = int_list(op.attrs.get("dims", op.attrs.get("dimensions", ())))
    return [ctx.add("reverse", ctx.operands(), {"dimensions": dims})]


@handler("stablehlo.slice")
def slice_(ctx: OpContext, op: Op) -> list:
    (x,) = ctx.operands()
    brackets = [v for k, v in op.positional if k == "brackets"]
    if brackets:
        spec = tuple((int(r[0]), int(r[1]), int(r[2]) if len(r) > 2 else 1)
                     for r in brackets[0])
    else:
        starts = int_list(op.attrs.get("start_indices", ()))
        limits = int_list(op.attrs.get("limit_indices", ()))
        strides = int_list(op.attrs.get("strides", (1,) * len(starts)))
        spec = tuple(zip(starts, limits, strides))
    return [ctx.add("slice", [x], {"slice": spec})]


@handler("stablehlo.dynamic_slice")
def dynamic_slice(ctx: OpContext, op: Op) -> list:
    sizes = int_list(op.attrs.get("sizes", op.attrs.get("slice_sizes", ())))
    return [ctx.add("dynamic-slice", ctx.operands(), {"dynamic_slice_sizes": sizes})]


@handler("stablehlo.dynamic_update_slice")
def dynamic_update_slice(ctx: OpContext, op: Op) -> list:
    return [ctx.add("dynamic-update-slice", ctx.operands())]


@handler("stablehlo.concatenate")
def concatenate(ctx: OpContext, op: Op) -> list:
    dim = int(op.attrs.get("dim", op.attrs.get("dimension", 0)))
    return [ctx.add("concatenate", ctx.operands(), {"dimensions": (dim,)})]


@handler("stablehlo.pad")
def pad(ctx: OpContext, op: Op) -> list:
    low = int_list(op.attrs.get("low", op.attrs.get("edge_padding_low", ())))
    high = int_list(op.attrs.get("high", op.attrs.get("edge_padding_high", ())))
    interior = int_list(op.attrs.get("interior", op.attrs.get("interior_padding", ())))
    return [ctx.add("pad", ctx.operands(), {"padding": tuple(zip(low, high, interior))})]


@handler("stablehlo.iota")
def iota(ctx: OpContext, op: Op) -> list:
    dim = int(op.attrs.get("dim", op.attrs.get("iota_dimension", 0)))
    return [ctx.add("iota", [], {"iota_dimension": dim}, declared=ctx.result_type())]


@handler("stablehlo.get_tuple_element")
def get_tuple_element(ctx: OpContext, op: Op) -> list:
    brackets = [v for k, v in op.positional if k == "brackets"]
    index = int(brackets[0][0]) if brackets else int(op.attrs.get("index", 0))
    return [ctx.add("get-tuple-element", ctx.operands(), {"index": index})]


@handler("stablehlo.tuple")
def tuple_(ctx: OpContext, op: Op) -> list:
    return [ctx.add("tuple", ctx.operands())]


@handler("stablehlo.optimization_barrier")
def optimization_barrier(ctx: OpContext, op: Op) -> list:
    t = ctx.add("tuple", ctx.operands())
    return ctx.results(ctx.add("opt-barrier", [t]))


@handler("stablehlo.after_all", "stablehlo.create_token")
def after_all(ctx: OpContext, op: Op) -> list:
    return [ctx.add("after-all", ctx.operands())]


@handler("stablehlo.replica_id", "stablehlo.partition_id")
def device_id(ctx: OpContext, op: Op) -> list:
    opcode = op.name.split(".", 1)[1].replace("_", "-")
    return [ctx.add(opcode, [])]


@handler("stablehlo.get_dimension_size")
def get_dimension_size(ctx: OpContext, op: Op) -> list:
    dim = int(op.attrs.get("dim", op.attrs.get("dimension", 0)))
    return [ctx.add("get-dimension-size", ctx.operands(), {"dimensions": (dim,)})]


@handler("stablehlo.reduce_precision")
def reduce_precision(ctx: OpContext, op: Op) -> list:
    fmt = str(op.attrs.get("format", ""))
    if fmt.startswith("e") and "m" in fmt:
        e, m = fmt[1:].split("m")
    else:
        e, m = op.attrs.get("exponent_bits"), op.attrs.get("mantissa_bits")
    return [ctx.add("reduce-precision", ctx.operands(),
                    {"exponent_bits": int(e), "mantissa_bits": int(m)})]


# ----------------------------------------------------------------------- linear algebra
def _dims_pair(value: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(value, tuple) and len(value) == 3 and value[0] == "x":
        return int_list(value[1]), int_list(value[2])
    return (), ()


def _precision(value: Any) -> tuple[str, ...] | None:
    if not value:
        return None
    names = tuple(_enum(v) for v in value)
    return None if all(n == "DEFAULT" for n in names) else names


@handler("stablehlo.dot_general", "stablehlo.dot")
def dot_general(ctx: OpContext, op: Op) -> list:
    lhs, rhs = ctx.operands()
    lb: tuple[int, ...]
    rb: tuple[int, ...]
    lc: tuple[int, ...]
    rc: tuple[int, ...]
    if op.name == "stablehlo.dot":
        lb = rb = ()
        lc, rc = (lhs.shape.rank - 1,), (0,)
    elif isinstance(op.attrs.get("dot_dimension_numbers"), Struct):
        f = op.attrs["dot_dimension_numbers"].fields
        lb, rb = int_list(f.get("lhs_batching_dimensions", ())), int_list(
            f.get("rhs_batching_dimensions", ()))
        lc, rc = int_list(f.get("lhs_contracting_dimensions", ())), int_list(
            f.get("rhs_contracting_dimensions", ()))
    else:
        lb, rb = _dims_pair(op.attrs.get("batching_dims"))
        lc, rc = _dims_pair(op.attrs.get("contracting_dims"))
    attrs: dict[str, Any] = {}
    if lb or rb:
        attrs["lhs_batch_dims"] = lb
    attrs["lhs_contracting_dims"] = lc
    if lb or rb:
        attrs["rhs_batch_dims"] = rb
    attrs["rhs_contracting_dims"] = rc
    precision = _precision(op.attrs.get("precision", op.attrs.get("precision_config")))
    if precision:
        attrs["operand_precision"] = precision
    algorithm = _dot_algorithm(op.attrs.get("algorithm"))
    if algorithm:
        attrs["algorithm"] = algorithm
    et = ctx.result_type().element_type
    return [ctx.add("dot", [lhs, rhs], attrs, declared=Shape.array(et, ()))]


_ALGORITHMS = {("f16", "f16", "f16", 1): "dot_f16_f16_f16", ("f16", "f16", "f32", 1):
               "dot_f16_f16_f32", ("bf16", "bf16", "bf16", 1): "dot_bf16_bf16_bf16",
               ("bf16", "bf16", "f32", 1): "dot_bf16_bf16_f32",
               ("bf16", "bf16", "f32", 3): "dot_bf16_bf16_f32_x3",
               ("bf16", "bf16", "f32", 6): "dot_bf16_bf16_f32_x6",
               ("bf16", "bf16", "f32", 9): "dot_bf16_bf16_f32_x9",
               ("tf32", "tf32", "f32", 1): "dot_tf32_tf32_f32",
               ("tf32", "tf32", "f32", 3): "dot_tf32_tf32_f32_x3",
               ("f32", "f32", "f32", 1): "dot_f32_f32_f32",
               ("f64", "f64", "f64", 1): "dot_f64_f64_f64"}


def _dot_algorithm(value: Any) -> str | None:
    """XLA's algorithm name of a ``#stablehlo.dot_algorithm<...>`` / ``<...>`` value."""
    text = value.text if isinstance(value, Opaque) else ""
    if isinstance(value, Struct):
        text = " ".join(f"{k} = {v}" for k, v in value.fields.items())
    if not text:
        return None
    fields = dict(re.findall(r"(\w+)\s*=\s*(\w+)", text))
    key = (fields.get("lhs_precision_type"), fields.get("rhs_precision_type"),
           fields.get("accumulation_type"), int(fields.get("num_primitive_operations", 1)))
    if key not in _ALGORITHMS:
        raise InvalidArgumentError(f"dot algorithm {text} has no XLA name")
    return _ALGORITHMS[key]


def _labels(items: list) -> str:
    return "".join(str(v) for v in items)


def _conv_labels(text: str) -> ConvDimensionNumbers:
    """``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`` as XLA's ``b01f_01io->b01f``."""
    parts = [p.strip(" []") for p in text.replace("->", "x").split("x")]
    lhs, rhs, out = ("".join(p.replace(" ", "").split(",")) for p in parts)
    return ConvDimensionNumbers.from_string(f"{lhs}_{rhs}->{out}")


@handler("stablehlo.convolution")
def convolution(ctx: OpContext, op: Op) -> list:
    lhs, rhs = ctx.operands()
    return [_convolution(ctx, op, lhs, rhs, op.attrs.get("padding"))]


@handler("stablehlo.dynamic_conv")
def dynamic_conv(ctx: OpContext, op: Op) -> list:
    """``convolution`` whose padding is an operand (``tensor<Nx2xi64>``): the padding
    must be known at conversion time (constants, specialized dimension sizes)."""
    operands = ctx.operands()
    if len(operands) != 3:
        raise ctx.fail(f"dynamic_conv takes lhs, rhs and padding, got {len(operands)} operands")
    lhs, rhs, padding = operands
    flat = static_values(ctx, padding, "padding")
    return [_convolution(ctx, op, lhs, rhs, [flat[i:i + 2] for i in range(0, len(flat), 2)])]


def _convolution(ctx: OpContext, op: Op, lhs: Any, rhs: Any, padding_attr: Any) -> Any:
    a = op.attrs
    dn_text = a.get("dim_numbers")
    if dn_text is None and isinstance(a.get("dimension_numbers"), Opaque):
        dn_text = a["dimension_numbers"].text.strip("<>")
    if not isinstance(dn_text, str):
        raise ctx.fail("a convolution needs dim_numbers")
    dn = _conv_labels(dn_text)
    n = len(dn.kernel_spatial)
    w = a.get("window") if isinstance(a.get("window"), dict) else {}
    stride = int_list(w.get("stride", a.get("window_strides", (1,) * n)))
    padding = pairs(w.get("pad", [[0, 0]] * n if padding_attr is None else padding_attr), n)
    if len(padding) != n:
        raise ctx.fail(f"padding for {len(padding)} spatial dims, the kernel has {n}")
    lhs_dil = int_list(w.get("lhs_dilate", a.get("lhs_dilation", (1,) * n)))
    rhs_dil = int_list(w.get("rhs_dilate", a.get("rhs_dilation", (1,) * n)))
    reverse = tuple(bool(v) for v in w.get("reverse", a.get("window_reversal", (False,) * n)))
    sizes = [rhs.shape.dims[d] for d in dn.kernel_spatial]
    window = Window.make(sizes, stride or None, padding, lhs_dil or None, rhs_dil or None,
                         reverse or None)
    attrs: dict[str, Any] = {"window": window, "dim_labels": dn}
    fgc, bgc = int(a.get("feature_group_count", 1)), int(a.get("batch_group_count", 1))
    if fgc != 1:
        attrs["feature_group_count"] = fgc
    if bgc != 1:
        attrs["batch_group_count"] = bgc
    precision = _precision(a.get("precision_config"))
    if precision:
        attrs["operand_precision"] = precision
    et = ctx.result_type().element_type
    return ctx.add("convolution", [lhs, rhs], attrs, declared=Shape.array(et, ()))


@handler("stablehlo.fft")
def fft(ctx: OpContext, op: Op) -> list:
    kind = _enum(op.attrs.get("type", op.attrs.get("fft_type", "FFT")))
    length = int_list(op.attrs.get("length", op.attrs.get("fft_length", ())))
    return [ctx.add("fft", ctx.operands(), {"fft_type": kind, "fft_length": length})]


@handler("stablehlo.cholesky")
def cholesky(ctx: OpContext, op: Op) -> list:
    return [ctx.add("cholesky", ctx.operands(), {"lower": bool(op.attrs.get("lower", False))})]


@handler("stablehlo.triangular_solve")
def triangular_solve(ctx: OpContext, op: Op) -> list:
    a = op.attrs
    return [ctx.add("triangular-solve", ctx.operands(), {
        "left_side": bool(a.get("left_side", False)), "lower": bool(a.get("lower", False)),
        "unit_diagonal": bool(a.get("unit_diagonal", False)),
        "transpose_a": _enum(a.get("transpose_a", "NO_TRANSPOSE"))})]


@handler("stablehlo.batch_norm_training", "stablehlo.batch_norm_inference",
         "stablehlo.batch_norm_grad")
def batch_norm(ctx: OpContext, op: Op) -> list:
    opcode = op.name.split(".", 1)[1].replace("_", "-")
    instr = ctx.add(opcode, ctx.operands(), {"epsilon": float(op.attrs.get("epsilon", 0.0)),
                                             "feature_index": int(op.attrs.get(
                                                 "feature_index", 0))})
    return ctx.results(instr)


# ------------------------------------------------------------------------ random numbers
@handler("stablehlo.rng_bit_generator")
def rng_bit_generator(ctx: OpContext, op: Op) -> list:
    algorithm = _enum(op.attrs.get("algorithm", op.attrs.get("rng_algorithm", "DEFAULT")))
    (state,) = ctx.operands()
    declared = Shape.tuple([state.shape, ctx.result_type(1)])
    instr = ctx.add("rng-bit-generator", [state], {"algorithm": "rng_" + algorithm.lower()},
                    declared=declared)
    return ctx.results(instr)


@handler("stablehlo.rng")
def rng(ctx: OpContext, op: Op) -> list:
    a, b, _shape = ctx.operands()
    dist = _enum(op.attrs.get("distribution", op.attrs.get("rng_distribution", "UNIFORM")))
    return [ctx.add("rng", [a, b], {"distribution": "rng_" + dist.lower()},
                    declared=ctx.result_type())]


__all__ = ["ELEMENTWISE"]
