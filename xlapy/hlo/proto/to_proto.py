"""An xlapy HloModule as XLA's ``HloModuleProto`` (what XLA's ``HloModule::ToProto`` makes).

Ids follow XLA: computation ``c`` (1-based, callees first) has id ``c``; its instruction
``i`` has id ``c << 32 | i``. Every instruction attribute goes to its HloInstructionProto
field (``dimensions`` to ``dimensions``, ``window`` to ``window``, a compare's
``direction`` to ``comparison_direction``, called computations to
``called_computation_ids`` in the order XLA keeps them, ...). Module header attributes
with no HloModuleProto field (XLA keeps them in the module config: ``replica_count``,
``num_partitions``, ``allow_spmd_sharding_propagation_to_*``, ...) are written, as their
header text, to the module frontend attribute ``xlapy.module_config``, so that xlapy reads
them back (``xlapy.module_attribute_order`` keeps the header's order); XLA sees plain
frontend attributes.
"""
from __future__ import annotations

from typing import Any, Callable

from ...errors import InvalidArgumentError
from ..attrs import ATTR_KINDS, ConvDimensionNumbers, RawAttr, Window
from ..ir import HloComputation, HloInstruction, HloModule
from ..replica_groups import ReplicaGroups
from . import xlapy_hlo_pb2 as pb
from .values import (literal_to_proto, metadata_to_proto, program_shape_to_proto, raw_text,
                     shape_to_proto, sharding_to_proto)

CONFIG_KEY = "xlapy.module_config"
ORDER_KEY = "xlapy.module_attribute_order"
Writer = Callable[[pb.HloInstructionProto, str, Any, HloInstruction], None]
WRITERS: dict[str, Writer] = {}


def writes(*names: str):
    def register(fn: Writer) -> Writer:
        for n in names:
            WRITERS[n] = fn
        return fn
    return register


def _ints(value: Any) -> list[int]:
    return [int(v) for v in value]


@writes("index")
def _index(p, key, v, instr):
    p.tuple_index = int(v)


@writes("dimensions")
def _dimensions(p, key, v, instr):
    p.dimensions.extend(_ints(v))


@writes("iota_dimension")
def _iota_dimension(p, key, v, instr):
    p.dimensions.append(int(v))


@writes("slice")
def _slice(p, key, v, instr):
    for start, limit, stride in v:
        p.slice_dimensions.add(start=start, limit=limit, stride=stride)


@writes("padding")
def _padding(p, key, v, instr):
    for lo, hi, interior in v:
        p.padding_config.dimensions.add(edge_padding_low=lo, edge_padding_high=hi,
                                        interior_padding=interior)


@writes("window")
def _window(p, key, v: Window, instr):
    for d in v.dims:
        p.window.dimensions.add(size=d.size, stride=d.stride, padding_low=d.pad_lo,
                                padding_high=d.pad_hi, window_dilation=d.rhs_dilate,
                                base_dilation=d.lhs_dilate, window_reversal=d.rhs_reversal)


@writes("dim_labels")
def _dim_labels(p, key, v: ConvDimensionNumbers, instr):
    c = p.convolution_dimension_numbers
    c.input_batch_dimension, c.input_feature_dimension = v.input_batch, v.input_feature
    c.input_spatial_dimensions.extend(v.input_spatial)
    c.kernel_input_feature_dimension = v.kernel_input_feature
    c.kernel_output_feature_dimension = v.kernel_output_feature
    c.kernel_spatial_dimensions.extend(v.kernel_spatial)
    c.output_batch_dimension, c.output_feature_dimension = v.output_batch, v.output_feature
    c.output_spatial_dimensions.extend(v.output_spatial)


_DOT = {"lhs_batch_dims": "lhs_batch_dimensions", "rhs_batch_dims": "rhs_batch_dimensions",
        "lhs_contracting_dims": "lhs_contracting_dimensions",
        "rhs_contracting_dims": "rhs_contracting_dimensions"}
_GATHER = ("offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
           "start_indices_batching_dims")
_SCATTER = ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
            "input_batching_dims", "scatter_indices_batching_dims")


@writes(*_DOT)
def _dot(p, key, v, instr):
    target = p.ragged_dot_dimension_numbers.dot_dimension_numbers \
        if instr.opcode == "ragged-dot" else p.dot_dimension_numbers
    getattr(target, _DOT[key]).extend(_ints(v))


@writes(*_GATHER, *_SCATTER)
def _gather_scatter(p, key, v, instr):
    target = p.gather_dimension_numbers if key in _GATHER else p.scatter_dimension_numbers
    getattr(target, key).extend(_ints(v))


@writes("index_vector_dim")
def _index_vector_dim(p, key, v, instr):
    target = p.gather_dimension_numbers if instr.opcode == "gather" else \
        p.scatter_dimension_numbers
    target.index_vector_dim = int(v)


@writes("slice_sizes")
def _slice_sizes(p, key, v, instr):
    p.gather_slice_sizes.extend(_ints(v))


@writes("lhs_ragged_dims", "rhs_group_dims")
def _ragged(p, key, v, instr):
    r = p.ragged_dot_dimension_numbers
    name = "lhs_ragged_dimensions" if key == "lhs_ragged_dims" else "rhs_group_dimensions"
    getattr(r, name).extend(_ints(v))


@writes("operand_precision")
def _precision(p, key, v, instr):
    p.precision_config.operand_precision.extend(pb.PrecisionConfig.Precision.Value(
        str(x).upper()) for x in v)


@writes("algorithm")
def _algorithm(p, key, v, instr):
    if instr.opcode == "rng-bit-generator":
        p.rng_algorithm = pb.RandomAlgorithm.Value(str(v).upper())
    else:
        p.precision_config.algorithm = pb.PrecisionConfig.Algorithm.Value(
            "ALG_" + str(v).upper())


@writes("direction")
def _direction(p, key, v, instr):
    p.comparison_direction = str(v)


@writes("type")
def _type(p, key, v, instr):
    p.comparison_type = str(v)


@writes("fft_type")
def _fft_type(p, key, v, instr):
    p.fft_type = pb.FftType.Value(str(v))


@writes("distribution")
def _distribution(p, key, v, instr):
    p.distribution = pb.RandomDistribution.Value(str(v).upper())


@writes("transpose_a")
def _transpose_a(p, key, v, instr):
    p.triangular_solve_options.transpose_a = pb.TriangularSolveOptions.Transpose.Value(str(v))


@writes("left_side", "unit_diagonal", "lower")
def _solve_flags(p, key, v, instr):
    if instr.opcode == "cholesky":
        p.cholesky_options.lower = bool(v)
        return
    setattr(p.triangular_solve_options, key, bool(v))


@writes("kind")
def _kind(p, key, v, instr):
    p.fusion_kind = str(v)


@writes("api_version")
def _api_version(p, key, v, instr):
    p.custom_call_api_version = pb.CustomCallApiVersion.Value(str(v))


@writes("custom_call_schedule", "schedule")
def _schedule(p, key, v, instr):
    p.custom_call_schedule = pb.CustomCallSchedule.Value(str(v))


@writes("padding_type")
def _padding_type(p, key, v, instr):
    p.padding_type = pb.PaddingType.Value(str(v))


@writes("backend_config")
def _backend_config(p, key, v, instr):
    p.backend_config = raw_text(v).encode("utf-8")


@writes("infeed_config", "outfeed_config")
def _feed_config(p, key, v, instr):
    setattr(p, key, str(v).encode("utf-8"))


@writes("operand_layout_constraints")
def _layout_constraints(p, key, v, instr):
    p.constrain_layout = True
    for s in v:
        shape_to_proto(s, p.operand_shapes_with_layout.add())


@writes("output_to_operand_aliasing")
def _aliasing(p, key, v, instr):
    for out_index, operand, operand_index in v:
        p.output_operand_aliasing.add(output_shape_index=_ints(out_index),
                                      operand_index=int(operand),
                                      operand_shape_index=_ints(operand_index))


@writes("frontend_attributes")
def _frontend(p, key, v, instr):
    for key, value in v.items():
        p.frontend_attributes.map[str(key)] = raw_text(value)


@writes("parameter_replication")
def _replication(p, key, v, instr):
    p.parameter_replication.replicated_at_leaf_buffers.extend(bool(x) for x in v)


@writes("replica_groups")
def _replica_groups(p, key, v: ReplicaGroups, instr):
    if v.iota is not None:
        it = p.collective_device_list.iota_replica_group_list
        it.num_replica_groups, it.num_devices_per_group = v.iota.num_groups, v.iota.group_size
        it.iota_reshape_dims.extend(v.iota.reshape_dims)
        it.iota_transpose_perm.extend(v.iota.transpose_perm or
                                      range(len(v.iota.reshape_dims)))
    else:
        for g in v.groups:
            p.replica_groups.add().replica_ids.extend(g)


@writes("source_target_pairs")
def _pairs(p, key, v, instr):
    for s, t in v:
        p.source_target_pairs.add(source=int(s), target=int(t))


@writes("sharding")
def _sharding(p, key, v, instr):
    sharding_to_proto(raw_text(v), p.sharding)


@writes("epsilon")
def _epsilon(p, key, v, instr):
    p.epsilon = float(v)


_PLAIN = {"feature_group_count", "batch_group_count", "exponent_bits", "mantissa_bits",
          "feature_index", "channel_id", "custom_call_target", "dynamic_slice_sizes",
          "fft_length", "is_stable", "delta", "indices_are_sorted", "unique_indices",
          "use_global_device_ids", "k", "largest", "constrain_layout", "is_host_transfer",
          "custom_call_has_side_effect", "async_execution_thread", "is_composite",
          "cross_program_prefetch_index"}
# the attributes naming called computations (their ids go to called_computation_ids)
COMPUTATION_ATTRS = ("condition", "body", "true_computation", "false_computation",
                     "branch_computations", "select", "scatter", "to_apply", "calls",
                     "called_computations")


def _plain(p: pb.HloInstructionProto, key: str, value: Any) -> None:
    field = p.DESCRIPTOR.fields_by_name[key]
    if field.is_repeated:
        getattr(p, key).extend(_ints(value))
    elif isinstance(value, RawAttr):
        raise InvalidArgumentError(f"attribute {key}={value.text} is not understood")
    else:
        setattr(p, key, value)


def instruction_to_proto(instr: HloInstruction, iid: int, ids: dict[int, int],
                         comp_ids: dict[int, int], p: pb.HloInstructionProto) -> None:
    p.name, p.opcode, p.id = instr.name, instr.opcode, iid
    shape_to_proto(instr.shape, p.shape)
    p.operand_ids.extend(ids[id(o)] for o in instr.operands)
    p.control_predecessor_ids.extend(ids[id(c)] for c in instr.control_predecessors)
    if instr.metadata is not None:
        metadata_to_proto(instr.metadata, p.metadata)
    if instr.opcode == "parameter":
        p.parameter_number = instr.parameter_number
    if instr.opcode == "custom-call":
        p.custom_call_api_version = pb.API_VERSION_ORIGINAL     # XLA's default
    if instr.opcode == "constant":
        if instr.literal is None:
            raise InvalidArgumentError(f"constant {instr.name} has an elided value "
                                       "({...}); it cannot be written")
        literal_to_proto(instr.literal, instr.shape, p.literal)
    attrs = instr.attrs
    if instr.opcode == "while":          # XLA keeps the body first, then the condition
        attrs = {k: v for k, v in attrs.items() if k != "condition"}
        attrs["condition"] = instr.attrs.get("condition")
    for key, value in attrs.items():
        if key == "metadata" or value is None:
            continue
        if key in COMPUTATION_ATTRS:
            comps = value if isinstance(value, tuple) else (value,)
            p.called_computation_ids.extend(comp_ids[id(c)] for c in comps)
        elif key in WRITERS:
            WRITERS[key](p, key, value, instr)
        elif key in _PLAIN:
            _plain(p, key, value)
        else:
            kind = ATTR_KINDS.get(key, "unknown")
            raise InvalidArgumentError(f"{instr.name}: attribute {key} ({kind}) has no "
                                       "HloModuleProto field")


def computation_to_proto(comp: HloComputation, cid: int, comp_ids: dict[int, int],
                         ids: dict[int, int], p: pb.HloComputationProto,
                         is_fusion: bool) -> list[int]:
    p.name, p.id = comp.name, cid
    order = comp.post_order()
    for n, instr in enumerate(order, 1):
        ids[id(instr)] = (cid << 32) | n
    for instr in order:
        try:
            instruction_to_proto(instr, ids[id(instr)], ids, comp_ids, p.instructions.add())
        except (KeyError, ValueError) as e:
            raise InvalidArgumentError(f"{comp.name}/{instr.name}: {e}") from None
    p.root_id = ids[id(comp.root)]
    params = [x for x in comp.parameters if x is not None]
    for x in params:
        shape_to_proto(x.shape, p.program_shape.parameters.add())
    p.program_shape.parameter_names.extend(x.name for x in params)
    shape_to_proto(comp.root.shape, p.program_shape.result)
    p.is_fusion_computation = is_fusion
    if comp.execution_thread is not None:
        p.execution_thread = comp.execution_thread
    return [ids[id(i)] for i in comp.instructions]


def _callees_first(module: HloModule) -> list[HloComputation]:
    """The module's computations in its own order when every callee comes before its
    callers (as in XLA's text), else in post order."""
    seen: set[int] = set()
    for comp in module.computations:
        for instr in comp.instructions:
            for callee in instr.called_computations:
                if id(callee) not in seen:
                    return module.computations_post_order()
        seen.add(id(comp))
    return list(module.computations)


def _header_text(key: str, value: Any) -> str:
    from ..printer import _header_value
    return _header_value(key, value)


def module_to_proto(module: HloModule) -> pb.HloModuleProto:
    """The HloModuleProto of ``module`` (raises InvalidArgumentError for what it cannot
    hold: an elided constant, an attribute without a field)."""
    p = pb.HloModuleProto(name=module.name, id=module.unique_id)
    comps = _callees_first(module)
    comp_ids = {id(c): n for n, c in enumerate(comps, 1)}
    fused = {id(i.attrs["calls"]) for c in comps for i in c.instructions
             if i.opcode == "fusion" and "calls" in i.attrs}
    ids: dict[int, int] = {}
    sequences = {}
    for c in comps:
        seq = computation_to_proto(c, comp_ids[id(c)], comp_ids, ids, p.computations.add(),
                                   id(c) in fused)
        if id(c) not in fused:
            sequences[comp_ids[id(c)]] = seq
    entry = module.entry
    p.entry_computation_name, p.entry_computation_id = entry.name, comp_ids[id(entry)]
    attrs = module.attributes
    layout = attrs.get("entry_computation_layout")
    if layout is not None:
        program_shape_to_proto(layout, p.host_program_shape,
                               [x.name for x in entry.parameters if x is not None])
    else:
        p.host_program_shape.CopyFrom(p.computations[-1].program_shape)
    for a in attrs.get("input_output_alias") or []:
        p.input_output_alias.entries.add(
            output_shape_index=a.output_index, parameter_number=a.param_number,
            parameter_shape_index=a.param_index,
            kind=pb.MUST_ALIAS if a.kind == "must-alias" else pb.MAY_ALIAS)
    for number, index in attrs.get("buffer_donor") or []:
        p.buffer_donor.entries.add(parameter_number=number, parameter_shape_index=index)
    if attrs.get("is_scheduled"):
        for cid, seq in sequences.items():
            p.schedule.sequences[cid].instruction_ids.extend(seq)
    config = []
    for key, value in attrs.items():
        if key == "frontend_attributes" and isinstance(value, dict):
            for k, v in value.items():
                p.frontend_attributes.map[str(k)] = raw_text(v)
        elif key not in ("entry_computation_layout", "input_output_alias", "buffer_donor",
                         "is_scheduled"):
            config.append(f"{key}={_header_text(key, value)}")
    if config:
        p.frontend_attributes.map[CONFIG_KEY] = ", ".join(config)
        p.frontend_attributes.map[ORDER_KEY] = ",".join(attrs)
    sf = module.stack_frames
    if sf:
        p.stack_frame_index.file_names.extend(sf.file_names)
        p.stack_frame_index.function_names.extend(sf.function_names)
        for loc in sf.file_locations:
            p.stack_frame_index.file_locations.add(**{k: int(v) for k, v in loc.items()})
        for loc_id, parent in sf.stack_frames:
            p.stack_frame_index.stack_frames.add(file_location_id=loc_id,
                                                 parent_frame_id=parent)
    return p


__all__ = ["module_to_proto", "CONFIG_KEY", "ORDER_KEY", "COMPUTATION_ATTRS"]
