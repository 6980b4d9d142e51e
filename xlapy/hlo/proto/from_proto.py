"""XLA's ``HloModuleProto`` (or ``HloProto``) as an xlapy HloModule.

The reverse of ``to_proto.py``: each set HloInstructionProto field becomes the attribute
XLA's HLO printer would show for that opcode, in the order XLA prints them (``ORDER``),
so a module printed after a trip through the proto reads exactly as before. Attributes
that XLA prints only when they differ from their default (a compare's ``type``, a
convolution's group counts, ...) are left out when they have it. A malformed proto (an
operand id that names nothing, an unknown opcode) raises HloParseError naming the
computation and instruction.
"""
from __future__ import annotations

from typing import Any

from ...errors import HloParseError, XlapyError
from .. import types as T
from ..attrs import ConvDimensionNumbers, RawAttr, Window, WindowDim
from ..ir import AliasEntry, HloComputation, HloInstruction, HloModule, StackFrameIndex
from ..opcodes import OPCODES
from ..replica_groups import ReplicaGroups
from . import xlapy_hlo_pb2 as pb
from .to_proto import CONFIG_KEY, ORDER_KEY
from .values import (literal_from_proto, metadata_from_proto, program_shape_from_proto,
                     shape_from_proto, sharding_from_proto)

# XLA's printing order of instruction attributes (metadata and backend_config are always
# printed last by xlapy's printer).
ORDER = (
    "index", "kind", "custom_call_target", "called_computations", "dimensions",
    "iota_dimension", "slice", "dynamic_slice_sizes", "padding", "window", "dim_labels",
    "feature_group_count", "batch_group_count", "lhs_batch_dims", "lhs_contracting_dims",
    "rhs_batch_dims", "rhs_contracting_dims", "lhs_ragged_dims", "rhs_group_dims",
    "operand_precision", "offset_dims", "collapsed_slice_dims", "start_index_map",
    "operand_batching_dims", "start_indices_batching_dims", "update_window_dims",
    "inserted_window_dims", "scatter_dims_to_operand_dims", "input_batching_dims",
    "scatter_indices_batching_dims", "index_vector_dim", "slice_sizes", "indices_are_sorted",
    "unique_indices", "direction", "type", "fft_type", "fft_length", "distribution",
    "algorithm", "exponent_bits", "mantissa_bits", "epsilon", "feature_index", "left_side",
    "lower", "unit_diagonal", "transpose_a", "k", "largest", "is_stable", "delta",
    "replica_groups", "channel_id", "use_global_device_ids", "source_target_pairs",
    "constrain_layout", "operand_layout_constraints", "custom_call_has_side_effect",
    "output_to_operand_aliasing", "custom_call_schedule", "api_version", "infeed_config",
    "outfeed_config", "is_host_transfer", "parameter_replication", "condition", "body",
    "true_computation", "false_computation", "branch_computations", "select", "scatter",
    "to_apply", "calls", "is_composite", "async_execution_thread",
    "cross_program_prefetch_index", "padding_type", "sharding", "frontend_attributes",
    "backend_config")
_RANK = {k: i for i, k in enumerate(ORDER)}
_TO_APPLY = {"call", "reduce", "map", "sort", "scatter", "reduce-window", "all-reduce",
             "all-reduce-start", "reduce-scatter", "scan"}


def _dims(values) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _default_compare_type(et: T.ElementType) -> str:
    if et.is_floating or et.is_complex:
        return "FLOAT"
    return "SIGNED" if et.is_signed_integral else "UNSIGNED"


def instruction_attrs(p: pb.HloInstructionProto, operands: list[HloInstruction],
                      called: list[HloComputation]) -> dict[str, Any]:
    """The attributes of one instruction, in XLA's printing order."""
    op = p.opcode
    a: dict[str, Any] = {}
    has = p.HasField
    if op == "get-tuple-element":
        a["index"] = p.tuple_index
    if op == "fusion":
        a["kind"] = p.fusion_kind
    if p.custom_call_target or op == "custom-call":
        a["custom_call_target"] = p.custom_call_target
    if op == "iota":
        a["iota_dimension"] = p.dimensions[0] if p.dimensions else 0
    elif p.dimensions or op in ("broadcast", "reduce", "transpose", "reverse", "concatenate",
                                "sort", "map", "get-dimension-size", "set-dimension-size"):
        if op not in ("custom-call", "parameter", "constant"):
            a["dimensions"] = _dims(p.dimensions)
    if p.slice_dimensions:
        a["slice"] = tuple((s.start, s.limit, s.stride) for s in p.slice_dimensions)
    if p.dynamic_slice_sizes:
        a["dynamic_slice_sizes"] = _dims(p.dynamic_slice_sizes)
    if has("padding_config"):
        a["padding"] = tuple((d.edge_padding_low, d.edge_padding_high, d.interior_padding)
                             for d in p.padding_config.dimensions)
    if has("window"):
        a["window"] = Window(tuple(WindowDim(d.size, d.stride or 1, d.padding_low,
                                             d.padding_high, d.base_dilation or 1,
                                             d.window_dilation or 1, d.window_reversal)
                                   for d in p.window.dimensions))
    if has("convolution_dimension_numbers"):
        c = p.convolution_dimension_numbers
        a["dim_labels"] = ConvDimensionNumbers(
            c.input_batch_dimension, c.input_feature_dimension, _dims(c.input_spatial_dimensions),
            c.kernel_input_feature_dimension, c.kernel_output_feature_dimension,
            _dims(c.kernel_spatial_dimensions), c.output_batch_dimension,
            c.output_feature_dimension, _dims(c.output_spatial_dimensions))
    if p.feature_group_count > 1:
        a["feature_group_count"] = p.feature_group_count
    if p.batch_group_count > 1:
        a["batch_group_count"] = p.batch_group_count
    dot = p.ragged_dot_dimension_numbers.dot_dimension_numbers if op == "ragged-dot" \
        else p.dot_dimension_numbers
    if op in ("dot", "ragged-dot", "scaled-dot") or has("dot_dimension_numbers"):
        if dot.lhs_batch_dimensions or dot.rhs_batch_dimensions:
            a["lhs_batch_dims"] = _dims(dot.lhs_batch_dimensions)
        a["lhs_contracting_dims"] = _dims(dot.lhs_contracting_dimensions)
        if dot.lhs_batch_dimensions or dot.rhs_batch_dimensions:
            a["rhs_batch_dims"] = _dims(dot.rhs_batch_dimensions)
        a["rhs_contracting_dims"] = _dims(dot.rhs_contracting_dimensions)
    if op == "ragged-dot":
        r = p.ragged_dot_dimension_numbers
        a["lhs_ragged_dims"] = _dims(r.lhs_ragged_dimensions)
        if r.rhs_group_dimensions:
            a["rhs_group_dims"] = _dims(r.rhs_group_dimensions)
    prec = [pb.PrecisionConfig.Precision.Name(x).lower()
            for x in p.precision_config.operand_precision]
    if any(x != "default" for x in prec):
        a["operand_precision"] = tuple(prec)
    if p.precision_config.algorithm:
        a["algorithm"] = pb.PrecisionConfig.Algorithm.Name(
            p.precision_config.algorithm)[4:].lower()
    if op == "gather":
        g = p.gather_dimension_numbers
        for name in ("offset_dims", "collapsed_slice_dims", "start_index_map"):
            a[name] = _dims(getattr(g, name))
        if g.operand_batching_dims:
            a["operand_batching_dims"] = _dims(g.operand_batching_dims)
            a["start_indices_batching_dims"] = _dims(g.start_indices_batching_dims)
        a["index_vector_dim"] = g.index_vector_dim
        a["slice_sizes"] = _dims(p.gather_slice_sizes)
    if op == "scatter":
        s = p.scatter_dimension_numbers
        for name in ("update_window_dims", "inserted_window_dims",
                     "scatter_dims_to_operand_dims"):
            a[name] = _dims(getattr(s, name))
        if s.input_batching_dims:
            a["input_batching_dims"] = _dims(s.input_batching_dims)
            a["scatter_indices_batching_dims"] = _dims(s.scatter_indices_batching_dims)
        a["index_vector_dim"] = s.index_vector_dim
    if p.indices_are_sorted:
        a["indices_are_sorted"] = True
    if p.unique_indices:
        a["unique_indices"] = True
    if op == "compare":
        a["direction"] = p.comparison_direction
        if p.comparison_type and operands and p.comparison_type != _default_compare_type(
                operands[0].shape.element_type):
            a["type"] = p.comparison_type
    if op == "fft":
        a["fft_type"] = pb.FftType.Name(p.fft_type)
        a["fft_length"] = _dims(p.fft_length)
    if op == "rng":
        a["distribution"] = pb.RandomDistribution.Name(p.distribution).lower()
    if op == "rng-bit-generator":
        a["algorithm"] = pb.RandomAlgorithm.Name(p.rng_algorithm).lower()
    if op == "reduce-precision":
        a["exponent_bits"], a["mantissa_bits"] = p.exponent_bits, p.mantissa_bits
    if op.startswith("batch-norm"):
        a["epsilon"], a["feature_index"] = p.epsilon, p.feature_index
    if op == "triangular-solve":
        t = p.triangular_solve_options
        a["left_side"], a["lower"] = t.left_side, t.lower
        a["unit_diagonal"] = t.unit_diagonal
        a["transpose_a"] = pb.TriangularSolveOptions.Transpose.Name(t.transpose_a)
    if op == "cholesky":
        a["lower"] = p.cholesky_options.lower
    if op == "topk":
        a["k"], a["largest"] = p.k, p.largest
    if p.is_stable:
        a["is_stable"] = True
    if p.delta:
        a["delta"] = p.delta
    groups = p.collective_device_list
    if groups.HasField("iota_replica_group_list"):
        it = groups.iota_replica_group_list
        perm = list(it.iota_transpose_perm)
        a["replica_groups"] = ReplicaGroups.iota_form(
            it.num_replica_groups, it.num_devices_per_group, list(it.iota_reshape_dims),
            perm if perm and perm != list(range(len(perm))) else None)
    elif p.replica_groups or groups.replica_groups:
        a["replica_groups"] = ReplicaGroups.of(
            [g.replica_ids for g in (p.replica_groups or groups.replica_groups)])
    if p.channel_id > 0:
        a["channel_id"] = p.channel_id
    if p.use_global_device_ids:
        a["use_global_device_ids"] = True
    if p.source_target_pairs:
        a["source_target_pairs"] = tuple((s.source, s.target) for s in p.source_target_pairs)
    if p.constrain_layout and op != "custom-call":
        a["constrain_layout"] = True
    if op == "custom-call" and p.constrain_layout:
        a["operand_layout_constraints"] = tuple(shape_from_proto(s)
                                                for s in p.operand_shapes_with_layout)
    if p.custom_call_has_side_effect:
        a["custom_call_has_side_effect"] = True
    if p.output_operand_aliasing:
        a["output_to_operand_aliasing"] = tuple(
            (_dims(x.output_shape_index), x.operand_index, _dims(x.operand_shape_index))
            for x in p.output_operand_aliasing)
    if p.custom_call_schedule:
        a["custom_call_schedule"] = pb.CustomCallSchedule.Name(p.custom_call_schedule)
    if op == "custom-call" and p.custom_call_api_version not in (0, 1):
        a["api_version"] = pb.CustomCallApiVersion.Name(p.custom_call_api_version)
    if p.infeed_config:
        a["infeed_config"] = p.infeed_config.decode("utf-8")
    if p.outfeed_config:
        a["outfeed_config"] = p.outfeed_config.decode("utf-8")
    if p.is_host_transfer:
        a["is_host_transfer"] = True
    if p.parameter_replication.replicated_at_leaf_buffers:
        a["parameter_replication"] = tuple(p.parameter_replication.replicated_at_leaf_buffers)
    _called(a, op, operands, called)
    if p.is_composite:
        a["is_composite"] = True
    if p.async_execution_thread and p.async_execution_thread != "main":
        a["async_execution_thread"] = p.async_execution_thread
    if p.WhichOneof("optional_cross_program_prefetch_index"):
        a["cross_program_prefetch_index"] = p.cross_program_prefetch_index
    if p.padding_type:
        a["padding_type"] = pb.PaddingType.Name(p.padding_type)
    if has("sharding"):
        a["sharding"] = RawAttr(sharding_from_proto(p.sharding))
    if p.frontend_attributes.map:
        a["frontend_attributes"] = {k: p.frontend_attributes.map[k]
                                    for k in sorted(p.frontend_attributes.map)}
    if p.backend_config:
        text = p.backend_config.decode("utf-8")
        a["backend_config"] = RawAttr(text) if text.startswith("{") else text
    return dict(sorted(a.items(), key=lambda kv: _RANK.get(kv[0], len(_RANK))))


def _called(a: dict[str, Any], op: str, operands: list[HloInstruction],
            called: list[HloComputation]) -> None:
    if not called:
        return
    if op == "while":                    # XLA's order: body, condition
        a["condition"], a["body"] = called[1], called[0]
    elif op == "conditional":
        if operands and operands[0].shape.element_type is T.PRED and len(called) == 2:
            a["true_computation"], a["false_computation"] = called
        else:
            a["branch_computations"] = tuple(called)
    elif op == "select-and-scatter":
        a["select"], a["scatter"] = called
    elif op in ("fusion", "async-start", "async-update", "async-done"):
        a["calls"] = called[0]
    elif op == "custom-call":
        a["called_computations"] = tuple(called)
    elif op in _TO_APPLY or len(called) == 1:
        a["to_apply"] = called[0]
    else:
        a["called_computations"] = tuple(called)


def _fail(where: str, message: str) -> HloParseError:
    return HloParseError(f"HloModuleProto: {where}: {message}")


def module_from_proto(p: pb.HloModuleProto) -> HloModule:
    """The HloModule of an HloModuleProto (raises HloParseError when it is malformed)."""
    try:
        return _module_from_proto(p)
    except HloParseError:
        raise
    except (XlapyError, ValueError, IndexError, KeyError, TypeError, OverflowError) as e:
        raise HloParseError(f"malformed HloModuleProto: {e}") from None


def _check_conv(a: dict[str, Any], shape: Any, operands: list[HloInstruction]) -> None:
    dn = a.get("dim_labels")
    if dn is None or len(operands) < 2:
        return
    for rank, dims in ((operands[0].shape.rank, (dn.input_batch, dn.input_feature,
                                                 *dn.input_spatial)),
                       (operands[1].shape.rank, (dn.kernel_input_feature,
                                                 dn.kernel_output_feature, *dn.kernel_spatial)),
                       (shape.rank if shape.is_array else 0,
                        (dn.output_batch, dn.output_feature, *dn.output_spatial))):
        if sorted(dims) != list(range(rank)):
            raise ValueError(f"convolution dimension numbers {dims} do not name the "
                             f"{rank} dimensions once each")


def _module_from_proto(p: pb.HloModuleProto) -> HloModule:
    module = HloModule(p.name or "module")
    comps: dict[int, HloComputation] = {}
    for cp in p.computations:
        comp = HloComputation(cp.name)
        if cp.execution_thread and cp.execution_thread != "main":
            comp.execution_thread = cp.execution_thread
        instrs: dict[int, HloInstruction] = {}
        order = list(cp.instructions)
        if p.HasField("schedule") and cp.id in p.schedule.sequences:
            rank = {iid: n for n, iid in enumerate(p.schedule.sequences[cp.id].instruction_ids)}
            order.sort(key=lambda ip: rank.get(ip.id, len(rank)))
        for ip in order:
            where = f"{cp.name}/{ip.name}"
            if ip.opcode not in OPCODES:
                raise _fail(where, f"unknown opcode '{ip.opcode}'")
            try:
                operands = [instrs[i] for i in ip.operand_ids]
                called = [comps[i] for i in ip.called_computation_ids]
            except KeyError as e:
                raise _fail(where, f"id {e.args[0]} names no earlier instruction or "
                                   "computation") from None
            shape = shape_from_proto(ip.shape)
            literal = literal_from_proto(ip.literal, shape) if ip.opcode == "constant" \
                else None
            attrs = instruction_attrs(ip, operands, called)
            _check_conv(attrs, shape, operands)
            instr = HloInstruction(ip.opcode, shape, operands, attrs, name=ip.name,
                                   literal=literal,
                                   parameter_number=ip.parameter_number
                                   if ip.opcode == "parameter" else None)
            instr.metadata = metadata_from_proto(ip.metadata)
            instr.control_predecessors = [instrs[i] for i in ip.control_predecessor_ids]
            comp.add_instruction(instr)
            instrs[ip.id] = instr
        if cp.root_id not in instrs:
            raise _fail(cp.name, f"root id {cp.root_id} names no instruction")
        comp.root = instrs[cp.root_id]
        comps[cp.id] = comp
    entry = comps.get(p.entry_computation_id) or next(
        (c for c in comps.values() if c.name == p.entry_computation_name), None)
    if entry is None:
        raise _fail(p.name, f"no entry computation '{p.entry_computation_name}'")
    for comp in comps.values():
        module.add_computation(comp, is_entry=comp is entry)
    _module_attributes(p, module)
    return module


def _module_attributes(p: pb.HloModuleProto, module: HloModule) -> None:
    from ..parser import parse_module
    attrs = module.attributes
    if p.HasField("schedule") and p.schedule.sequences:
        attrs["is_scheduled"] = True
    if p.input_output_alias.entries:
        attrs["input_output_alias"] = [
            AliasEntry(_dims(e.output_shape_index), e.parameter_number,
                       _dims(e.parameter_shape_index),
                       "must-alias" if e.kind == pb.MUST_ALIAS else "may-alias")
            for e in p.input_output_alias.entries]
    if p.buffer_donor.entries:
        attrs["buffer_donor"] = [(e.parameter_number, _dims(e.parameter_shape_index))
                                 for e in p.buffer_donor.entries]
    if p.HasField("host_program_shape"):
        attrs["entry_computation_layout"] = program_shape_from_proto(p.host_program_shape)
    fe = p.frontend_attributes.map
    config = fe.get(CONFIG_KEY)
    if config:                # header attributes: read by the HLO parser's own rules
        header = f"HloModule m, {config}\nENTRY e {{\n  ROOT p = f32[] parameter(0)\n}}\n"
        attrs.update(parse_module(header).attributes)
    others = {k: fe[k] for k in sorted(fe) if k not in (CONFIG_KEY, ORDER_KEY)}
    if others:
        attrs["frontend_attributes"] = others
    order = fe.get(ORDER_KEY)
    if order:
        rank = {k: i for i, k in enumerate(order.split(","))}
        module.attributes = dict(sorted(attrs.items(), key=lambda kv: rank.get(kv[0],
                                                                                len(rank))))
    sf = p.stack_frame_index
    if sf.file_names or sf.stack_frames:
        module.stack_frames = StackFrameIndex(
            list(sf.file_names), list(sf.function_names),
            [{k: getattr(loc, k) for k in ("file_name_id", "function_name_id", "line",
                                            "end_line", "column", "end_column")}
             for loc in sf.file_locations],
            [(f.file_location_id, f.parent_frame_id) for f in sf.stack_frames])


__all__ = ["module_from_proto", "instruction_attrs", "ORDER"]
