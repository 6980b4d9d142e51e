"""The HLO opcode table: every opcode's text name, arity, attributes and family.

``OPCODES[name]`` is an :class:`OpInfo`. ``arity`` is the operand count, or None
for variadic ops. ``required``/``optional`` list attribute names (their kinds are
in :mod:`xlapy.hlo.attrs`); attributes allowed on every instruction
(``COMMON_ATTRS``) are not repeated. ``family`` groups ops the same way the
shape rules, the interpreter and the emitters are split into files.
``executable`` is False for ops that parse and print but that no backend runs
(the newest opcodes).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpInfo:
    name: str
    arity: int | None
    family: str
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    executable: bool = True

    @property
    def allowed(self) -> frozenset[str]:
        return frozenset(self.required) | frozenset(self.optional) | COMMON_ATTRS


COMMON_ATTRS = frozenset({
    "sharding", "frontend_attributes", "statistics", "parameter_replication",
    "control-predecessors", "origin", "metadata", "backend_config", "result_accuracy"})

OPCODES: dict[str, OpInfo] = {}


def _op(name, arity, family, required=(), optional=(), executable=True):
    OPCODES[name] = OpInfo(name, arity, family, tuple(required), tuple(optional), executable)


# 1.1 elementwise unary
UNARY = ("abs", "ceil", "cbrt", "count-leading-zeros", "cosine", "erf", "exponential",
         "exponential-minus-one", "floor", "imag", "real", "is-finite", "log", "log-plus-one",
         "logistic", "negate", "not", "popcnt", "round-nearest-afz", "round-nearest-even", "rsqrt",
         "sign", "sine", "sqrt", "tan", "tanh", "acos", "acosh", "asin", "asinh", "atan", "atanh",
         "cosh", "sinh")
for _n in UNARY:
    _op(_n, 1, "elementwise")
_op("convert", 1, "elementwise")
_op("bitcast-convert", 1, "elementwise")
_op("reduce-precision", 1, "elementwise", ("exponent_bits", "mantissa_bits"))
_op("copy", 1, "elementwise")

# 1.2 elementwise binary and ternary
BINARY = ("add", "subtract", "multiply", "divide", "remainder", "power", "atan2", "maximum",
          "minimum", "mulhi", "complex", "and", "or", "xor", "shift-left",
          "shift-right-arithmetic", "shift-right-logical")
for _n in BINARY:
    _op(_n, 2, "elementwise")
_op("stochastic-convert", 2, "elementwise")
_op("select", 3, "elementwise")
_op("clamp", 3, "elementwise")
_op("compare", 2, "elementwise", ("direction",), ("type",))

# 1.4 data movement
_op("broadcast", 1, "data_movement", (), ("dimensions",))
_op("reshape", 1, "data_movement", (), ("inferred_dimension",))
_op("dynamic-reshape", None, "data_movement")
_op("transpose", 1, "data_movement", ("dimensions",))
_op("bitcast", 1, "data_movement")
_op("slice", 1, "data_movement", ("slice",))
_op("dynamic-slice", None, "data_movement", ("dynamic_slice_sizes",))
_op("dynamic-update-slice", None, "data_movement")
_op("concatenate", None, "data_movement", ("dimensions",))
_op("pad", 2, "data_movement", ("padding",))
_op("reverse", 1, "data_movement", ("dimensions",))
_op("iota", 0, "data_movement", ("iota_dimension",))
_op("gather", 2, "data_movement",
    ("offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim", "slice_sizes"),
    ("indices_are_sorted", "operand_batching_dims", "start_indices_batching_dims"))
_op("scatter", None, "data_movement",
    ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
     "index_vector_dim", "to_apply"),
    ("indices_are_sorted", "unique_indices", "input_batching_dims",
     "scatter_indices_batching_dims"))
_op("tuple", None, "data_movement")
_op("get-tuple-element", 1, "data_movement", ("index",))
_op("copy-start", 1, "data_movement", (), ("cross_program_prefetch_index",
                                            "is_cross_program_prefetch"))
_op("copy-done", 1, "data_movement")
_op("get-dimension-size", 1, "data_movement", ("dimensions",))
_op("set-dimension-size", 2, "data_movement", ("dimensions",))
_op("shuffle", 1, "data_movement", executable=False)

# 1.5 reductions, windows, sort
_op("reduce", None, "reduction", ("dimensions", "to_apply"))
_op("reduce-window", None, "reduction", ("to_apply",), ("window",))
_op("select-and-scatter", 3, "reduction", ("select", "scatter"), ("window",))
_op("map", None, "reduction", ("to_apply",), ("dimensions",))
_op("sort", None, "reduction", ("dimensions", "to_apply"), ("is_stable",))
_op("topk", 1, "reduction", ("k",), ("largest",))
_op("scan", None, "reduction", ("dimensions", "to_apply"),
    ("num_carries", "is_reverse", "is_associative"), executable=False)

# 1.6 linear algebra
_op("dot", None, "linalg", (), ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims",
                               "rhs_batch_dims", "operand_precision", "algorithm", "sparsity"))
_op("ragged-dot", 3, "linalg", (), ("lhs_contracting_dims", "rhs_contracting_dims",
                                    "lhs_batch_dims", "rhs_batch_dims", "lhs_ragged_dims",
                                    "rhs_group_dims", "operand_precision"), executable=False)
_op("scaled-dot", 4, "linalg", (), ("lhs_contracting_dims", "rhs_contracting_dims",
                                    "lhs_batch_dims", "rhs_batch_dims", "operand_precision"),
    executable=False)
_op("convolution", 2, "linalg", ("dim_labels",),
    ("window", "feature_group_count", "batch_group_count", "operand_precision"))
_op("fft", 1, "linalg", ("fft_type", "fft_length"))
_op("cholesky", 1, "linalg", (), ("lower",))
_op("triangular-solve", 2, "linalg", (), ("left_side", "lower", "unit_diagonal", "transpose_a"))
_op("batch-norm-training", 3, "linalg", ("epsilon", "feature_index"))
_op("batch-norm-inference", 5, "linalg", ("epsilon", "feature_index"))
_op("batch-norm-grad", 5, "linalg", ("epsilon", "feature_index"))

# 1.7 control flow and calls
_op("call", None, "control_flow", ("to_apply",), ("is_composite",))
_op("while", 1, "control_flow", ("condition", "body"))
_op("conditional", None, "control_flow", (),
    ("true_computation", "false_computation", "branch_computations"))
_op("fusion", None, "control_flow", ("kind", "calls"), ("output_to_operand_aliasing",))
_op("custom-call", None, "control_flow", ("custom_call_target",),
    ("window", "dim_labels", "feature_group_count", "batch_group_count",
     "operand_layout_constraints", "custom_call_has_side_effect", "to_apply",
     "called_computations", "output_to_operand_aliasing", "padding_type", "literal",
     "operand_precision", "schedule", "custom_call_schedule", "api_version"))
_op("async-start", None, "control_flow", ("calls",), ("async_execution_thread",))
_op("async-update", 1, "control_flow", (), ("async_execution_thread",))
_op("async-done", 1, "control_flow", (), ("async_execution_thread",))
_op("opt-barrier", 1, "control_flow")
_op("add-dependency", 2, "control_flow")
_op("after-all", None, "control_flow")
_op("domain", 1, "control_flow", ("domain",))

# 1.8 collectives, I/O, RNG, misc
_COLL = ("replica_groups", "channel_id", "constrain_layout", "use_global_device_ids")
_op("all-reduce", None, "collective", ("to_apply",), _COLL)
_op("all-reduce-start", None, "collective", ("to_apply",), _COLL)
_op("all-reduce-done", 1, "collective")
_op("reduce-scatter", None, "collective", ("to_apply", "dimensions"), _COLL)
_op("all-gather", None, "collective", ("dimensions",), _COLL)
_op("all-gather-start", None, "collective", ("dimensions",), _COLL)
_op("all-gather-done", 1, "collective")
_op("all-to-all", None, "collective", (), _COLL + ("dimensions",))
_op("ragged-all-to-all", 6, "collective", (), _COLL, executable=False)
_op("collective-broadcast", None, "collective", ("replica_groups",), ("channel_id",))
_op("collective-permute", None, "collective", ("source_target_pairs",),
    ("channel_id", "slice_sizes"))
_op("collective-permute-start", None, "collective", ("source_target_pairs",),
    ("channel_id", "slice_sizes"))
_op("collective-permute-done", 1, "collective")
_op("collective-reduce", None, "collective", (), _COLL + ("to_apply",), executable=False)
_op("replica-id", 0, "collective")
_op("partition-id", 0, "collective")
_op("send", 2, "io", (), ("channel_id", "is_host_transfer"), executable=False)
_op("send-done", 1, "io", (), ("channel_id", "is_host_transfer"), executable=False)
_op("recv", 1, "io", (), ("channel_id", "is_host_transfer"), executable=False)
_op("recv-done", 1, "io", (), ("channel_id", "is_host_transfer"), executable=False)
_op("infeed", 1, "io", (), ("infeed_config",), executable=False)
_op("outfeed", 2, "io", (), ("outfeed_config", "outfeed_shape"), executable=False)
_op("rng", None, "rng", ("distribution",))
_op("rng-bit-generator", 1, "rng", ("algorithm",))
_op("rng-get-and-update-state", 0, "rng", ("delta",))
_op("constant", 0, "leaf")
_op("parameter", 0, "leaf")

# Operation names that the async "sugar" forms wrap (e.g. custom-call-start).
ASYNC_SUFFIXES = ("-start", "-update", "-done")

COMMUTATIVE_BINARY = frozenset({"add", "multiply", "mulhi", "maximum", "minimum", "and", "or",
                                "xor"})
ELEMENTWISE = frozenset(UNARY) | frozenset(BINARY) | frozenset(
    {"convert", "bitcast-convert", "reduce-precision", "copy", "select", "clamp", "compare",
     "stochastic-convert"})


def op_info(name: str) -> OpInfo | None:
    """The table entry for opcode ``name`` or None."""
    return OPCODES.get(name)
