"""The HLO opcode table: every opcode's text name, arity, attributes, family and traits.

``OPCODES[name]`` is an :class:`OpInfo`. ``arity`` is the operand count, or None
for variadic ops. ``required``/``optional`` list attribute names (their kinds are
in :mod:`xlapy.hlo.attrs`); attributes allowed on every instruction
(``COMMON_ATTRS``) are not repeated. ``family`` groups ops the same way the
shape rules, the interpreter and the emitters are split into files.
``executable`` is False for ops that parse and print but that no backend runs
(the newest opcodes).

The traits are the one place each layer reads an op's facts from:

- ``kinds``: the element kinds (``ElementType.kind``: ``pred``, ``s``, ``u``,
  ``f``, ``c``) the op accepts for operand ``kind_operand`` (the operand whose
  type decides the op's semantics: the ``on_true`` of ``select``, the operand of
  ``clamp``). The shape rules reject other kinds (:func:`accepts`), the
  interpreter dispatches on them, and each backend supports them or names the
  pair in its fallback list (``tests/test_op_table.py`` checks all three agree).
- ``elementwise``: the elementwise class (``unary``, ``binary``, ``compare``,
  ``select``, ``clamp``, ``convert``); empty for other ops.
- ``math``: the math-library function (C ``libm`` name, or ``logistic``) that
  computes the op on floats: an op with one is *transcendental* (backends emit a
  polynomial or a library call for it).
- ``cost``: fusion's cost class, XLA:CPU's ``IsExpensive``: ``cheap``,
  ``expensive``, or a conditional class (``expensive-if-complex``,
  ``cheap-if-integer-by-constant``, ``expensive-if-f32-to-bf16``) that
  :func:`xlapy.passes.fusion_utils.is_expensive` evaluates on the instruction.
- ``effect``: side effects: ``always`` (XLA's ``HasSideEffectNoRecurse``),
  ``async`` (copy-start/copy-done: kept by DCE and CSE, yet fusible),
  ``channel`` (collectives: an effect when they carry a ``channel_id``),
  ``attribute`` (custom-call: ``custom_call_has_side_effect``), ``ordering``
  (token and barrier ops: no effect of their own, never fused).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

# Element kinds, as ElementType.kind spells them.
PRED_KIND, SIGNED, UNSIGNED, FLOAT, COMPLEX = "pred", "s", "u", "f", "c"
ANY_KIND = frozenset({PRED_KIND, SIGNED, UNSIGNED, FLOAT, COMPLEX})
NUMERIC = frozenset({SIGNED, UNSIGNED, FLOAT, COMPLEX})
INTEGRAL = frozenset({SIGNED, UNSIGNED})
FLOATING = frozenset({FLOAT})
FLOAT_OR_COMPLEX = frozenset({FLOAT, COMPLEX})

# Cost classes (fusion's IsExpensive).
CHEAP = "cheap"
EXPENSIVE = "expensive"
EXPENSIVE_IF_COMPLEX = "expensive-if-complex"
CHEAP_IF_INTEGER_BY_CONSTANT = "cheap-if-integer-by-constant"
EXPENSIVE_IF_F32_TO_BF16 = "expensive-if-f32-to-bf16"


@dataclass(frozen=True)
class OpInfo:
    """One opcode's row of the table (see the module docstring for each field)."""

    name: str
    arity: int | None
    family: str
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    executable: bool = True
    kinds: frozenset[str] = ANY_KIND
    kind_operand: int = 0
    elementwise: str = ""
    math: str = ""
    cost: str = EXPENSIVE
    effect: str = ""

    @property
    def allowed(self) -> frozenset[str]:
        return frozenset(self.required) | frozenset(self.optional) | COMMON_ATTRS

    @property
    def transcendental(self) -> bool:
        """Computed by a math function (a polynomial or a library call), not by instructions."""
        return bool(self.math)


COMMON_ATTRS = frozenset({
    "sharding", "frontend_attributes", "statistics", "parameter_replication",
    "control-predecessors", "origin", "metadata", "backend_config", "result_accuracy"})

OPCODES: dict[str, OpInfo] = {}


def _op(name, arity, family, required=(), optional=(), executable=True, **traits):
    OPCODES[name] = OpInfo(name, arity, family, tuple(required), tuple(optional), executable,
                           **traits)


def _elementwise(names, arity, cls, kinds, cost=EXPENSIVE, required=(), optional=(),
                 math=None, kind_operand=0):
    """Table rows for elementwise ops; ``math`` maps some of ``names`` to their function."""
    for n in names:
        _op(n, arity, "elementwise", required, optional, kinds=frozenset(kinds),
            kind_operand=kind_operand, elementwise=cls, math=(math or {}).get(n, ""), cost=cost)


# 1.1 elementwise unary, by accepted kinds and cost
_MATH = {"exponential": "exp", "exponential-minus-one": "expm1", "log": "log",
         "log-plus-one": "log1p", "tanh": "tanh", "logistic": "logistic", "sine": "sin",
         "cosine": "cos", "tan": "tan", "erf": "erf", "cbrt": "cbrt", "acos": "acos",
         "acosh": "acosh", "asin": "asin", "asinh": "asinh", "atan": "atan", "atanh": "atanh",
         "cosh": "cosh", "sinh": "sinh", "power": "pow", "atan2": "atan2"}
_elementwise(("ceil", "floor", "round-nearest-afz", "round-nearest-even", "is-finite"), 1,
             "unary", FLOATING, CHEAP)
_elementwise(("erf",), 1, "unary", FLOATING, math=_MATH)
_elementwise(("exponential", "exponential-minus-one", "log", "log-plus-one", "logistic",
              "rsqrt", "sqrt", "tanh", "cbrt", "acos", "acosh", "asin", "asinh", "atan",
              "atanh", "cosh", "sinh"), 1, "unary", FLOAT_OR_COMPLEX, math=_MATH)
_elementwise(("cosine", "sine", "tan"), 1, "unary", FLOAT_OR_COMPLEX, EXPENSIVE_IF_COMPLEX,
             math=_MATH)
_elementwise(("real", "imag"), 1, "unary", FLOAT_OR_COMPLEX, CHEAP)
_elementwise(("negate",), 1, "unary", NUMERIC, CHEAP)
_elementwise(("abs", "sign"), 1, "unary", NUMERIC, EXPENSIVE_IF_COMPLEX)
_elementwise(("popcnt", "count-leading-zeros"), 1, "unary", INTEGRAL, CHEAP)
_elementwise(("not",), 1, "unary", INTEGRAL | {PRED_KIND}, CHEAP)
_elementwise(("convert",), 1, "convert", ANY_KIND, EXPENSIVE_IF_F32_TO_BF16)
_elementwise(("bitcast-convert", "copy"), 1, "convert", ANY_KIND, CHEAP)
_elementwise(("reduce-precision",), 1, "unary", FLOATING, CHEAP,
             required=("exponent_bits", "mantissa_bits"))

# 1.2 elementwise binary and ternary. XLA rejects pred subtract/divide/remainder/power
# (shape inference) and no XLA backend computes complex remainder/maximum/minimum/clamp.
_elementwise(("add", "multiply"), 2, "binary", ANY_KIND, CHEAP)
_elementwise(("subtract",), 2, "binary", NUMERIC, CHEAP)
_elementwise(("divide",), 2, "binary", NUMERIC, CHEAP_IF_INTEGER_BY_CONSTANT)
_elementwise(("remainder",), 2, "binary", INTEGRAL | FLOATING, CHEAP_IF_INTEGER_BY_CONSTANT)
_elementwise(("power",), 2, "binary", NUMERIC, math=_MATH)
_elementwise(("atan2",), 2, "binary", FLOAT_OR_COMPLEX, math=_MATH)
_elementwise(("maximum", "minimum"), 2, "binary", INTEGRAL | FLOATING | {PRED_KIND}, CHEAP)
_elementwise(("mulhi", "shift-left", "shift-right-arithmetic", "shift-right-logical"), 2,
             "binary", INTEGRAL, CHEAP)
_elementwise(("complex",), 2, "binary", FLOATING, CHEAP)
_elementwise(("and", "or", "xor"), 2, "binary", INTEGRAL | {PRED_KIND}, CHEAP)
_elementwise(("stochastic-convert",), 2, "convert", FLOATING, CHEAP)
_elementwise(("select",), 3, "select", ANY_KIND, CHEAP, kind_operand=1)
_elementwise(("clamp",), 3, "clamp", INTEGRAL | FLOATING | {PRED_KIND}, CHEAP, kind_operand=1)
_elementwise(("compare",), 2, "compare", ANY_KIND, CHEAP, required=("direction",),
             optional=("type",))
# The plain unary and binary ops (no attributes; complex builds c64/c128 from two parts).
UNARY = tuple(n for n, i in OPCODES.items() if i.elementwise == "unary" and not i.required)
BINARY = tuple(n for n, i in OPCODES.items() if i.elementwise == "binary")

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

# Traits of the ops outside the elementwise family: XLA's cheap data movement (the rest
# of IsExpensive's cheap list) and the side-effect classes (module docstring).
_TRAITS = {
    CHEAP: ("bitcast", "broadcast", "concatenate", "constant", "copy-done", "copy-start",
            "dynamic-reshape", "dynamic-slice", "dynamic-update-slice", "get-tuple-element",
            "infeed", "iota", "opt-barrier", "outfeed", "pad", "partition-id", "replica-id",
            "reshape", "reverse", "shuffle", "slice", "transpose", "tuple"),
}
_EFFECTS = {
    "always": ("send", "send-done", "recv", "recv-done", "infeed", "outfeed", "rng",
               "rng-get-and-update-state", "all-reduce-start", "all-reduce-done",
               "all-gather-start", "all-gather-done", "collective-permute-start",
               "collective-permute-done", "async-start", "async-update", "async-done"),
    "async": ("copy-start", "copy-done"),
    "channel": ("all-reduce", "all-gather", "all-to-all", "reduce-scatter", "collective-permute",
                "collective-broadcast"),
    "attribute": ("custom-call",),
    "ordering": ("after-all", "add-dependency", "opt-barrier"),
}
for _cost, _names in _TRAITS.items():
    for _n in _names:
        OPCODES[_n] = replace(OPCODES[_n], cost=_cost)
for _effect, _ops in _EFFECTS.items():
    for _n in _ops:
        OPCODES[_n] = replace(OPCODES[_n], effect=_effect)

# Operation names that the async "sugar" forms wrap (e.g. custom-call-start).
ASYNC_SUFFIXES = ("-start", "-update", "-done")

COMMUTATIVE_BINARY = frozenset({"add", "multiply", "mulhi", "maximum", "minimum", "and", "or",
                                "xor"})
ELEMENTWISE = frozenset(n for n, info in OPCODES.items() if info.elementwise)


def op_info(name: str) -> OpInfo | None:
    """The table entry for opcode ``name`` or None."""
    return OPCODES.get(name)


def ops_with(**traits) -> frozenset[str]:
    """The opcodes whose table rows have every given trait value
    (``ops_with(effect="channel")``)."""
    return frozenset(n for n, info in OPCODES.items()
                     if all(getattr(info, k) == v for k, v in traits.items()))


def accepts(name: str, kind: str) -> bool:
    """Whether opcode ``name`` accepts element kind ``kind`` (``ElementType.kind``) for its
    deciding operand; True for opcodes the table does not constrain."""
    info = OPCODES.get(name)
    return info is None or kind in info.kinds
