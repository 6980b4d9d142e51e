"""Attribute values of HLO instructions and the table of attribute kinds.

An instruction keeps its attributes in ``instr.attrs`` (name -> value, in text
order). The *kind* of each attribute name (``ATTR_KINDS``) decides how the text
parser reads it and how the printer writes it; values are plain Python data
(ints, bools, tuples, strings) or the small classes below. An attribute the
table does not know is kept as :class:`RawAttr` and printed back verbatim.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


_SIMPLE_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "'": "\\'", "\\": "\\\\"}


def quote_string(s: str) -> str:
    """``s`` in double quotes with C escapes (absl ``CEscape``): bytes outside ASCII as
    ``\\ooo``."""
    out = ['"']
    for ch in s:
        esc = _SIMPLE_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif " " <= ch < "\x7f":
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode("utf-8"))
    out.append('"')
    return "".join(out)


@dataclass(frozen=True)
class RawAttr:
    """Attribute text kept verbatim (statistics, unknown attributes, dict
    backend_config)."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class WindowDim:
    size: int = 1
    stride: int = 1
    pad_lo: int = 0
    pad_hi: int = 0
    lhs_dilate: int = 1
    rhs_dilate: int = 1
    rhs_reversal: bool = False


@dataclass(frozen=True)
class Window:
    """``window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}``."""

    dims: tuple[WindowDim, ...] = ()

    @staticmethod
    def make(size, stride=None, padding=None, lhs_dilate=None, rhs_dilate=None,
             rhs_reversal=None) -> "Window":
        n = len(size)
        stride = stride or (1,) * n
        padding = padding or ((0, 0),) * n
        lhs_dilate = lhs_dilate or (1,) * n
        rhs_dilate = rhs_dilate or (1,) * n
        rhs_reversal = rhs_reversal or (False,) * n
        return Window(tuple(WindowDim(int(size[i]), int(stride[i]), int(padding[i][0]),
                                      int(padding[i][1]), int(lhs_dilate[i]), int(rhs_dilate[i]),
                                      bool(rhs_reversal[i])) for i in range(n)))

    def to_text(self) -> str:
        if not self.dims:
            return "{}"
        parts = ["size=" + "x".join(str(d.size) for d in self.dims)]
        if any(d.stride != 1 for d in self.dims):
            parts.append("stride=" + "x".join(str(d.stride) for d in self.dims))
        if any(d.pad_lo or d.pad_hi for d in self.dims):
            parts.append("pad=" + "x".join(f"{d.pad_lo}_{d.pad_hi}" for d in self.dims))
        if any(d.lhs_dilate != 1 for d in self.dims):
            parts.append("lhs_dilate=" + "x".join(str(d.lhs_dilate) for d in self.dims))
        if any(d.rhs_dilate != 1 for d in self.dims):
            parts.append("rhs_dilate=" + "x".join(str(d.rhs_dilate) for d in self.dims))
        if any(d.rhs_reversal for d in self.dims):
            parts.append("rhs_reversal=" + "x".join(str(int(d.rhs_reversal)) for d in self.dims))
        return "{" + " ".join(parts) + "}"


@dataclass(frozen=True)
class ConvDimensionNumbers:
    """Convolution dimension numbers, written in text as ``dim_labels=b01f_01io->b01f``.

    ``*_spatial`` list dimension indices for spatial dims 0, 1, ... in order.
    ``labels`` keeps the original text when it has ``?`` (custom-call only).
    """

    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]
    labels: str | None = field(default=None, compare=False)

    @staticmethod
    def from_string(text: str) -> "ConvDimensionNumbers":
        """Parse ``b01f_01io->b01f``; raises ValueError with the reason."""
        try:
            lhs_rhs, out = text.split("->")
            lhs, rhs = lhs_rhs.split("_")
        except ValueError:
            raise ValueError(f"dim_labels must look like 'b01f_01io->b01f', got {text!r}") from None
        if not (len(lhs) == len(rhs) == len(out)):
            raise ValueError(f"dim_labels {text!r}: lhs, kernel and output must have the same rank")

        def spatial(s: str, part: str) -> tuple[int, ...]:
            nsp = len(s) - 2
            pos = []
            for i in range(nsp):
                if str(i) not in s or s.count(str(i)) != 1:
                    raise ValueError(f"dim_labels {text!r}: {part} lacks spatial dim {i}")
                pos.append(s.index(str(i)))
            return tuple(pos)

        def one(s: str, ch: str, part: str) -> int:
            if s.count(ch) != 1:
                raise ValueError(f"dim_labels {text!r}: {part} needs exactly one '{ch}'")
            return s.index(ch)

        if "?" in text:
            return ConvDimensionNumbers(0, 0, (), 0, 0, (), 0, 0, (), labels=text)
        for part, s, allowed in (("lhs", lhs, "bf"), ("kernel", rhs, "io"), ("output", out, "bf")):
            for ch in s:
                if not (ch.isdigit() or ch in allowed):
                    raise ValueError(f"dim_labels {text!r}: unexpected {ch!r} in {part}")
        return ConvDimensionNumbers(
            one(lhs, "b", "lhs"), one(lhs, "f", "lhs"), spatial(lhs, "lhs"),
            one(rhs, "i", "kernel"), one(rhs, "o", "kernel"), spatial(rhs, "kernel"),
            one(out, "b", "output"), one(out, "f", "output"), spatial(out, "output"))

    def to_text(self) -> str:
        if self.labels is not None:
            return self.labels

        def render(rank: int, a: tuple[int, str], b: tuple[int, str], sp: tuple[int, ...]) -> str:
            chars = ["?"] * rank
            chars[a[0]] = a[1]
            chars[b[0]] = b[1]
            for i, p in enumerate(sp):
                chars[p] = str(i)
            return "".join(chars)

        r = len(self.input_spatial) + 2
        return (render(r, (self.input_batch, "b"), (self.input_feature, "f"),
                       self.input_spatial) + "_"
                + render(r, (self.kernel_input_feature, "i"), (self.kernel_output_feature, "o"),
                         self.kernel_spatial) + "->"
                + render(r, (self.output_batch, "b"), (self.output_feature, "f"),
                         self.output_spatial))


@dataclass(frozen=True)
class OpMetadata:
    """``metadata={op_type="..." op_name="..." source_file="..." source_line=N ...}``.

    ``fields`` keeps every key in text order; values are str (quoted in text) or int.
    """

    fields: tuple[tuple[str, Any], ...] = ()

    @staticmethod
    def make(**kw) -> "OpMetadata":
        return OpMetadata(tuple((k, v) for k, v in kw.items() if v is not None))

    def get(self, key: str, default=None):
        for k, v in self.fields:
            if k == key:
                return v
        return default

    def with_fields(self, **kw) -> "OpMetadata":
        d = dict(self.fields)
        d.update({k: v for k, v in kw.items() if v is not None})
        return OpMetadata(tuple(d.items()))

    op_type = property(lambda self: self.get("op_type"))
    op_name = property(lambda self: self.get("op_name"))
    source_file = property(lambda self: self.get("source_file"))
    source_line = property(lambda self: self.get("source_line"))
    stack_frame_id = property(lambda self: self.get("stack_frame_id"))

    def to_text(self) -> str:
        parts = []
        for k, v in self.fields:
            if isinstance(v, str):
                parts.append(f"{k}={quote_string(v)}")
            elif isinstance(v, RawAttr):
                parts.append(f"{k}={v.text}")
            else:
                parts.append(f"{k}={v}")
        return "{" + " ".join(parts) + "}"


# --------------------------------------------------------------------------------------------
# Attribute kinds by name. The parser and printer dispatch on these.
INT = "int"
BOOL = "bool"
FLOAT = "float"
STRING = "string"            # quoted string
ENUM = "enum"                # bare identifier
INT_TREE = "int_tree"        # {1,2} or {{0,1},{2}} -> nested tuples of ints
BOOL_LIST = "bool_list"      # {true,false}
COMPUTATION = "computation"
COMPUTATION_LIST = "computation_list"
WINDOW = "window"
SLICE = "slice"              # {[0:3:1], [0:4]} -> tuple of (start, limit, stride)
PADDING = "padding"          # 0_0x1_2_1 -> tuple of (lo, hi, interior)
DIM_LABELS = "dim_labels"
ENUM_LIST = "enum_list"      # operand_precision={default,high}
METADATA = "metadata"
DICT = "dict"                # frontend_attributes={a="b",c="d"}
BACKEND_CONFIG = "backend_config"   # "string" or {raw}
SHAPE_LIST = "shape_list"    # operand_layout_constraints={f32[2]{0}, s32[]}
ALIASING = "aliasing"        # output_to_operand_aliasing={{0}: (1, {}), ...}
INSTR_LIST = "instr_list"    # control-predecessors={%a, %b}
SHARDING = "sharding"               # {devices=[2,2]<=[4]} ... -> HloSharding
REPLICA_GROUPS = "replica_groups"   # {{0,1},{2,3}} or [2,4]<=[8]T(1,0) -> ReplicaGroups
RAW = "raw"                  # balanced text kept verbatim

ATTR_KINDS: dict[str, str] = {
    # ints
    "index": INT, "iota_dimension": INT, "feature_index": INT, "k": INT, "exponent_bits": INT,
    "mantissa_bits": INT, "channel_id": INT, "feature_group_count": INT, "batch_group_count": INT,
    "index_vector_dim": INT, "delta": INT, "inferred_dimension": INT,
    "cross_program_prefetch_index": INT, "num_carries": INT, "split_count": INT,
    # bools
    "is_stable": BOOL, "largest": BOOL, "indices_are_sorted": BOOL, "unique_indices": BOOL,
    "constrain_layout": BOOL, "use_global_device_ids": BOOL, "is_host_transfer": BOOL,
    "custom_call_has_side_effect": BOOL, "lower": BOOL, "left_side": BOOL, "unit_diagonal": BOOL,
    "is_composite": BOOL, "is_reverse": BOOL, "is_associative": BOOL,
    "is_cross_program_prefetch": BOOL,
    # floats
    "epsilon": FLOAT,
    # strings
    "custom_call_target": STRING, "infeed_config": STRING, "outfeed_config": STRING,
    "async_execution_thread": STRING,
    # enums
    "direction": ENUM, "type": ENUM, "kind": ENUM, "algorithm": ENUM, "distribution": ENUM,
    "fft_type": ENUM, "transpose_a": ENUM, "schedule": ENUM, "api_version": ENUM,
    "padding_type": ENUM, "custom_call_schedule": ENUM,
    # int lists / trees
    "dimensions": INT_TREE, "offset_dims": INT_TREE, "collapsed_slice_dims": INT_TREE,
    "start_index_map": INT_TREE, "slice_sizes": INT_TREE, "operand_batching_dims": INT_TREE,
    "start_indices_batching_dims": INT_TREE, "update_window_dims": INT_TREE,
    "inserted_window_dims": INT_TREE, "scatter_dims_to_operand_dims": INT_TREE,
    "input_batching_dims": INT_TREE, "scatter_indices_batching_dims": INT_TREE,
    "lhs_batch_dims": INT_TREE, "lhs_contracting_dims": INT_TREE, "rhs_batch_dims": INT_TREE,
    "rhs_contracting_dims": INT_TREE, "dynamic_slice_sizes": INT_TREE, "fft_length": INT_TREE,
    "lhs_ragged_dims": INT_TREE, "rhs_group_dims": INT_TREE, "source_target_pairs": INT_TREE,
    "lhs_contracting_dims_sparse": INT_TREE,
    "parameter_replication": BOOL_LIST,
    # computations
    "to_apply": COMPUTATION, "calls": COMPUTATION, "condition": COMPUTATION, "body": COMPUTATION,
    "true_computation": COMPUTATION, "false_computation": COMPUTATION, "select": COMPUTATION,
    "scatter": COMPUTATION,
    "branch_computations": COMPUTATION_LIST, "called_computations": COMPUTATION_LIST,
    # structured
    "window": WINDOW, "slice": SLICE, "padding": PADDING, "dim_labels": DIM_LABELS,
    "operand_precision": ENUM_LIST, "metadata": METADATA, "frontend_attributes": DICT,
    "backend_config": BACKEND_CONFIG, "operand_layout_constraints": SHAPE_LIST,
    "output_to_operand_aliasing": ALIASING, "control-predecessors": INSTR_LIST,
    # kept verbatim
    "replica_groups": REPLICA_GROUPS,
    "sharding": SHARDING,
    "statistics": RAW, "origin": RAW, "sparsity": RAW,
    "result_accuracy": RAW, "literal": RAW, "domain": RAW, "profile_type": RAW,
    "outfeed_shape": RAW,
}


def attr_kind(name: str) -> str | None:
    """The kind of attribute ``name``, or None when the table does not know it."""
    return ATTR_KINDS.get(name)


__all__ = [
    "RawAttr", "WindowDim", "Window", "ConvDimensionNumbers", "OpMetadata", "ATTR_KINDS",
    "attr_kind", "replace",
]
