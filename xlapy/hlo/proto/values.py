"""Shapes, literals, metadata and shardings between xlapy values and XLA's proto messages.

Each ``*_to_proto`` fills a message of ``xlapy_hlo_pb2`` (XLA's field numbers) and each
``*_from_proto`` reads one back, so that a value survives the trip unchanged.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...errors import InvalidArgumentError
from .. import types as T
from ..attrs import OpMetadata, RawAttr
from ..shape import UNBOUNDED, Layout, ProgramShape, Shape
from . import xlapy_hlo_pb2 as pb

INT64_MIN = -(2 ** 63)
TO_PROTO_TYPE = {t: pb.PrimitiveType.Value(t.name.upper()) for t in T.ALL_TYPES}
TO_PROTO_TYPE[T.TUPLE] = pb.TUPLE
FROM_PROTO_TYPE = {v: k for k, v in TO_PROTO_TYPE.items()}


# ----------------------------------------------------------------------------- shapes
def _layout_extra_to_proto(extra: str, out: pb.LayoutProto) -> None:
    """Tiles ``T(8,128)(2,1)``, element size ``E(4)``, memory space ``S(1)``."""
    for kind, body in re.findall(r"([TES])((?:\([\d,]*\))+)", extra):
        groups = [g for g in re.findall(r"\(([\d,]*)\)", body)]
        if kind == "T":
            for g in groups:
                out.tiles.add().dimensions.extend(int(v) for v in g.split(",") if v)
        elif kind == "E":
            out.element_size_in_bits = int(groups[0])
        else:
            out.memory_space = int(groups[0])
    rest = re.sub(r"[TES](?:\([\d,]*\))+", "", extra).strip()
    if rest:
        raise InvalidArgumentError(f"layout detail ':{extra}' has no HloModuleProto form")


def _layout_extra_from_proto(p: pb.LayoutProto) -> str:
    parts = []
    if p.tiles:
        parts.append("T" + "".join("(" + ",".join(str(d) for d in t.dimensions) + ")"
                                   for t in p.tiles))
    if p.element_size_in_bits:
        parts.append(f"E({p.element_size_in_bits})")
    if p.memory_space:
        parts.append(f"S({p.memory_space})")
    return "".join(parts)


def shape_to_proto(shape: Shape, out: pb.ShapeProto) -> pb.ShapeProto:
    out.element_type = TO_PROTO_TYPE[shape.element_type]
    if shape.is_tuple:
        for s in shape.tuple_shapes:
            shape_to_proto(s, out.tuple_shapes.add())
        return out
    if shape.is_token:
        return out
    out.dimensions.extend(INT64_MIN if d == UNBOUNDED else d for d in shape.dims)
    out.is_dynamic_dimension.extend(shape.dynamic)
    layout = shape.layout or Layout.row_major(shape.rank)     # XLA's proto always has one
    out.layout.minor_to_major.extend(layout.minor_to_major)
    out.layout.tail_padding_alignment_in_elements = 1
    if layout.extra:
        _layout_extra_to_proto(layout.extra, out.layout)
    return out


def shape_from_proto(p: pb.ShapeProto) -> Shape:
    et = FROM_PROTO_TYPE.get(p.element_type)
    if et is None:
        name = {v: k for k, v in pb.PrimitiveType.items()}.get(p.element_type, p.element_type)
        raise InvalidArgumentError(f"element type {name} is not supported")
    if et is T.TUPLE:
        return Shape.tuple([shape_from_proto(s) for s in p.tuple_shapes])
    if et is T.TOKEN:
        return Shape.token()
    dims = [UNBOUNDED if d == INT64_MIN else d for d in p.dimensions]
    dynamic = list(p.is_dynamic_dimension) or [False] * len(dims)
    layout = None
    if p.HasField("layout"):
        layout = Layout(tuple(p.layout.minor_to_major), _layout_extra_from_proto(p.layout))
    return Shape.array(et, dims, layout, dynamic)


def program_shape_to_proto(ps: ProgramShape, out: pb.ProgramShapeProto,
                           names: list[str] | None = None) -> None:
    for s in ps.parameters:
        shape_to_proto(s, out.parameters.add())
    shape_to_proto(ps.result, out.result)
    out.parameter_names.extend(names or [])


def program_shape_from_proto(p: pb.ProgramShapeProto) -> ProgramShape:
    return ProgramShape([shape_from_proto(s) for s in p.parameters], shape_from_proto(p.result))


# ---------------------------------------------------------------------------- literals
_BYTES_FIELD = {T.S8: "s8s", T.U8: "u8s", T.F16: "f16s", T.BF16: "bf16s", T.U16: "u16s",
                T.S16: "s16s", T.S4: "s4s", T.U4: "u4s", T.S2: "s2s", T.U2: "u2s",
                T.F8E5M2: "f8e5m2s", T.F8E4M3FN: "f8e4m3fns", T.F8E4M3B11FNUZ: "f8e4m3b11fnuzs",
                T.F8E5M2FNUZ: "f8e5m2fnuzs", T.F8E4M3FNUZ: "f8e4m3fnuzs", T.F8E4M3: "f8e4m3s",
                T.F8E3M4: "f8e3m4s", T.F4E2M1FN: "f4e2m1fns", T.F8E8M0FNU: "f8e8m0fnus"}
_REPEATED_FIELD = {T.PRED: "preds", T.S32: "s32s", T.S64: "s64s", T.U32: "u32s", T.U64: "u64s",
                   T.F32: "f32s", T.F64: "f64s", T.C64: "c64s", T.C128: "c128s"}
_SUB_BYTE = (T.S4, T.U4, T.S2, T.U2, T.F4E2M1FN)


def literal_to_proto(value: Any, shape: Shape, out: pb.LiteralProto) -> None:
    shape_to_proto(shape, out.shape)
    if shape.is_tuple:
        for v, s in zip(value, shape.tuple_shapes):
            literal_to_proto(v, s, out.tuple_literals.add())
        return
    if shape.is_token:
        return
    et = shape.element_type
    flat = np.asarray(value, dtype=shape.dtype).reshape(-1)
    if et in _BYTES_FIELD:
        if et in _SUB_BYTE:              # one value per byte, as XLA writes them
            data = flat.astype(np.int8 if et.is_signed_integral else np.uint8).tobytes() \
                if et.is_integral else flat.view(np.uint8).tobytes()
        else:
            data = flat.astype(flat.dtype.newbyteorder("<")).tobytes()
        setattr(out, _BYTES_FIELD[et], data)
    elif et.is_complex:
        getattr(out, _REPEATED_FIELD[et]).extend(
            np.stack([flat.real, flat.imag], axis=-1).reshape(-1).tolist())
    else:
        getattr(out, _REPEATED_FIELD[et]).extend(flat.tolist())


def literal_from_proto(p: pb.LiteralProto, shape: Shape | None = None) -> Any:
    shape = shape or shape_from_proto(p.shape)
    if shape.is_tuple:
        return tuple(literal_from_proto(lp, s) for lp, s in zip(p.tuple_literals,
                                                                shape.tuple_shapes))
    et = shape.element_type
    dims = shape.dims
    if et in _BYTES_FIELD:
        data = getattr(p, _BYTES_FIELD[et])
        if et in _SUB_BYTE:
            raw = np.frombuffer(data, np.int8 if et.is_signed_integral else np.uint8)
            flat = raw.astype(shape.dtype) if et.is_integral else raw.view(shape.dtype)
        else:
            flat = np.frombuffer(data, np.dtype(shape.dtype).newbyteorder("<")).astype(
                shape.dtype)
    elif et.is_complex:
        parts = np.asarray(getattr(p, _REPEATED_FIELD[et]),
                           np.float32 if et is T.C64 else np.float64)
        flat = (parts[0::2] + 1j * parts[1::2]).astype(shape.dtype)
    else:
        flat = np.asarray(getattr(p, _REPEATED_FIELD[et]), dtype=shape.dtype)
    n = int(np.prod(dims)) if dims else 1
    if flat.size != n:
        raise InvalidArgumentError(f"literal of {shape.to_text(False)} holds {flat.size} "
                                   f"values, expected {n}")
    return flat.reshape(dims).copy()


# ---------------------------------------------------------------------------- metadata
_META_INT = ("source_line", "stack_frame_id", "source_end_line", "source_column",
             "source_end_column", "size_of_generated_code_in_bytes",
             "size_of_memory_working_set_in_bytes")
_META_STR = ("op_type", "op_name", "source_file", "deduplicated_name", "scheduling_name")
_META_ORDER = ("op_type", "op_name", "source_file", "source_line", "source_end_line",
               "source_column", "source_end_column", "size_of_generated_code_in_bytes",
               "size_of_memory_working_set_in_bytes", "deduplicated_name", "stack_frame_id",
               "scheduling_name")


def metadata_to_proto(md: OpMetadata, out: pb.OpMetadata) -> None:
    for key, value in md.fields:
        if key in _META_STR:
            setattr(out, key, str(value))
        elif key in _META_INT:
            setattr(out, key, int(value))
        else:
            raise InvalidArgumentError(f"metadata field {key!r} has no HloModuleProto form")


def metadata_from_proto(p: pb.OpMetadata) -> OpMetadata | None:
    fields = [(k, getattr(p, k)) for k in _META_ORDER if k in _META_STR + _META_INT
              and getattr(p, k)]
    return OpMetadata(tuple(fields)) if fields else None


# ---------------------------------------------------------------------------- sharding
_SIMPLE_SHARDING = {"replicated": pb.OpSharding.REPLICATED, "manual": pb.OpSharding.MANUAL,
                    "unknown": pb.OpSharding.UNKNOWN}
_DEVICES = re.compile(r"devices=\[([\d,]+)\](?:<=\[([\d,]+)\](?:T\(([\d,]+)\))?|([\d,]+))"
                      r"((?:\s+last_tile_dim_replicate)?)(?:\s+last_tile_dims=\{([\w,\s]+)\})?$")


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def sharding_to_proto(text: str, out: pb.OpSharding) -> None:
    """XLA's sharding text (``{replicated}``, ``{maximal device=1}``, ``{devices=[2,1]0,1}``,
    ``{devices=[4]<=[4]}``, tuples ``{{...}, {...}}``) as an OpSharding."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise InvalidArgumentError(f"sharding {text!r} is not braced")
    inner = body[1:-1].strip()
    if inner.startswith("{") or inner == "":
        out.type = pb.OpSharding.TUPLE
        for part in _split_top(inner):
            sharding_to_proto(part, out.tuple_shardings.add())
        return
    if inner in _SIMPLE_SHARDING:
        out.type = _SIMPLE_SHARDING[inner]
        return
    m = re.fullmatch(r"maximal device=(\d+)", inner)
    if m:
        out.type = pb.OpSharding.MAXIMAL
        out.tile_assignment_dimensions.append(1)
        out.tile_assignment_devices.append(int(m.group(1)))
        return
    m = _DEVICES.fullmatch(inner)
    if not m:
        raise InvalidArgumentError(f"sharding {text!r} has no HloModuleProto form here")
    out.type = pb.OpSharding.OTHER
    out.tile_assignment_dimensions.extend(int(v) for v in m.group(1).split(","))
    if m.group(2):
        out.iota_reshape_dims.extend(int(v) for v in m.group(2).split(","))
        perm = m.group(3).split(",") if m.group(3) else range(len(out.iota_reshape_dims))
        out.iota_transpose_perm.extend(int(v) for v in perm)
    else:
        out.tile_assignment_devices.extend(int(v) for v in m.group(4).split(","))
    out.replicate_on_last_tile_dim = bool(m.group(5).strip())
    if m.group(6):
        out.last_tile_dims.extend(pb.OpSharding.Type.Value(v.strip().upper())
                                  for v in m.group(6).split(","))


def sharding_from_proto(p: pb.OpSharding) -> str:
    if p.type == pb.OpSharding.TUPLE:
        return "{" + ", ".join(sharding_from_proto(s) for s in p.tuple_shardings) + "}"
    for name, kind in _SIMPLE_SHARDING.items():
        if p.type == kind:
            return "{" + name + "}"
    if p.type == pb.OpSharding.MAXIMAL:
        return "{maximal device=" + str(p.tile_assignment_devices[0]) + "}"
    dims = ",".join(str(d) for d in p.tile_assignment_dimensions)
    if p.iota_reshape_dims:
        text = f"devices=[{dims}]<=[" + ",".join(str(d) for d in p.iota_reshape_dims) + "]"
        perm = list(p.iota_transpose_perm)
        if perm and perm != list(range(len(perm))):
            text += "T(" + ",".join(str(d) for d in perm) + ")"
    else:
        text = f"devices=[{dims}]" + ",".join(str(d) for d in p.tile_assignment_devices)
    if p.replicate_on_last_tile_dim:
        text += " last_tile_dim_replicate"
    if p.last_tile_dims:
        text += " last_tile_dims={" + ", ".join(pb.OpSharding.Type.Name(t).lower()
                                                 for t in p.last_tile_dims) + "}"
    return "{" + text + "}"


def raw_text(value: Any) -> str:
    return value.text if isinstance(value, RawAttr) else str(value)


__all__ = ["shape_to_proto", "shape_from_proto", "literal_to_proto", "literal_from_proto",
           "metadata_to_proto", "metadata_from_proto", "sharding_to_proto",
           "sharding_from_proto", "program_shape_to_proto", "program_shape_from_proto"]
