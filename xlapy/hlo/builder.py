"""An XlaBuilder-like API for building HLO computations and modules in Python.

Every op method computes its result shape with :func:`~xlapy.hlo.shape_inference.infer_shape`,
so a bad combination raises :class:`~xlapy.errors.ShapeError` naming the op at build time.
Built array shapes carry row-major layouts (XLA's default) and instructions get unique
``opcode.N`` names::

    b = XlaBuilder("sum_xyz")
    x, y = b.parameter((F32, [4])), b.parameter((F32, [4]))
    s = b.reduce(b.add(x, y), b.constant(0.0), scalar_computation("add", F32), [0])
    module = build_module(b)

Methods use XLA's text names with underscores (``shift_right_logical``); Python keywords
get a trailing underscore (``and_``, ``or_``, ``not_``); short aliases such as ``exp``,
``sub`` and ``max`` exist too.
"""
from __future__ import annotations

import itertools
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from . import types as T
from .attrs import ConvDimensionNumbers, OpMetadata, Window
from .ir import HloComputation, HloInstruction, HloModule, computations_post_order
from .opcodes import BINARY, UNARY
from .shape import ProgramShape, Shape
from .shape_inference import infer_shape
from .types import ElementType

_counter = itertools.count(1)

Computation = Any  # HloComputation or XlaBuilder (built on use)
ShapeLike = Any    # Shape or (element type, dims)


def as_element_type(t: ElementType | str | Any) -> ElementType:
    """An ElementType from an ElementType, a text name (``"f32"``) or a NumPy dtype."""
    if isinstance(t, ElementType):
        return t
    if isinstance(t, str) and t in T.BY_NAME:
        return T.BY_NAME[t]
    return T.from_dtype(t)


def as_shape(s: ShapeLike) -> Shape:
    """A Shape from a Shape or an ``(element type, dims)`` pair."""
    if isinstance(s, Shape):
        return s
    et, dims = s
    return Shape.array(as_element_type(et), tuple(dims))


def _as_computation(c: Computation) -> HloComputation:
    if isinstance(c, XlaBuilder):
        return c.build()
    if not isinstance(c, HloComputation):
        raise InvalidArgumentError(f"expected a computation or XlaBuilder, got {c!r}")
    return c


def _list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


class XlaBuilder:
    """Builds one :class:`HloComputation`; see the module docstring."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._comp = HloComputation(name)
        self._metadata: OpMetadata | None = None
        self._built: HloComputation | None = None

    # ----- core
    def add_instruction(self, opcode: str, operands: Sequence[HloInstruction] = (),
                        attrs: dict[str, Any] | None = None, declared: Shape | None = None,
                        literal: Any = None, parameter_number: int | None = None,
                        name: str | None = None) -> HloInstruction:
        """Infer the shape, name and append one instruction (the primitive behind every op)."""
        if self._built is not None:
            raise InvalidArgumentError(f"builder {self.name} was already built")
        operands = list(operands)
        for op in operands:
            if op.parent is not self._comp:
                raise InvalidArgumentError(
                    f"{opcode}: operand {op.name} was not made by builder {self.name}")
        attrs = {k: v for k, v in (attrs or {}).items() if v is not None}
        infer_attrs = dict(attrs, __literal__=literal) if literal is not None else attrs
        shape = infer_shape(opcode, [o.shape for o in operands], infer_attrs, declared)
        instr = HloInstruction(opcode, shape.with_default_layout(), operands, attrs,
                               name=name or f"{opcode}.{next(_counter)}", literal=literal,
                               parameter_number=parameter_number)
        if self._metadata is not None:
            instr.metadata = self._metadata
        return self._comp.add_instruction(instr)

    def set_op_metadata(self, metadata: OpMetadata | None) -> None:
        """Attach ``metadata`` to every instruction built from now on (None stops)."""
        self._metadata = metadata

    @contextmanager
    def op_metadata(self, **fields: Any) -> Iterator[None]:
        """``with b.op_metadata(op_name="f/add"):`` tags the instructions built inside."""
        old = self._metadata
        self._metadata = OpMetadata.make(**fields)
        try:
            yield
        finally:
            self._metadata = old

    def build(self, root: HloInstruction | None = None) -> HloComputation:
        """Finish the computation; ``root`` defaults to the last instruction."""
        if self._built is not None:
            if root is not None and root is not self._built.root:
                raise InvalidArgumentError(f"builder {self.name} was already built")
            return self._built
        comp = self._comp
        if not comp.instructions:
            raise InvalidArgumentError(f"builder {self.name} has no instructions")
        if root is not None and root.parent is not comp:
            raise InvalidArgumentError(f"root {root.name} was not made by builder {self.name}")
        if any(p is None for p in comp.parameters):
            raise InvalidArgumentError(f"builder {self.name}: parameter numbers have a gap")
        comp.root = root if root is not None else comp.instructions[-1]
        self._built = comp
        return comp

    def build_module(self, name: str | None = None,
                     root: HloInstruction | None = None) -> HloModule:
        """This computation as the entry of a new module (see :func:`build_module`)."""
        self.build(root)
        return build_module(self, name)

    # ----- leaves
    def parameter(self, shape: ShapeLike, name: str | None = None,
                  number: int | None = None) -> HloInstruction:
        """The next parameter (or parameter ``number``) of ``shape``."""
        n = len(self._comp.parameters) if number is None else number
        return self.add_instruction("parameter", declared=as_shape(shape), parameter_number=n,
                                    name=name)

    def constant(self, value: Any, dtype: ElementType | str | Any = None) -> HloInstruction:
        """A constant from a NumPy array or Python scalar (float -> f32, int -> s32,
        bool -> pred, complex -> c64 unless ``dtype`` is given)."""
        if dtype is not None:
            arr = np.asarray(value, dtype=as_element_type(dtype).dtype)
        elif isinstance(value, np.ndarray) or isinstance(value, np.generic):
            arr = np.asarray(value)
        else:
            arr = np.asarray(value)
            default = {"b": np.bool_, "i": np.int32, "u": np.uint32, "f": np.float32,
                       "c": np.complex64}
            arr = arr.astype(default.get(arr.dtype.kind, arr.dtype))
        et = T.from_dtype(arr.dtype)
        return self.add_instruction("constant", declared=Shape.array(et, arr.shape), literal=arr)

    def iota(self, shape: ShapeLike, iota_dimension: int) -> HloInstruction:
        return self.add_instruction("iota", attrs={"iota_dimension": iota_dimension},
                                    declared=as_shape(shape))

    # ----- elementwise with attributes
    def compare(self, a, b, direction: str, type: str | None = None) -> HloInstruction:
        return self.add_instruction("compare", [a, b], {"direction": direction, "type": type})

    def select(self, pred, on_true, on_false) -> HloInstruction:
        return self.add_instruction("select", [pred, on_true, on_false])

    def clamp(self, lo, x, hi) -> HloInstruction:
        return self.add_instruction("clamp", [lo, x, hi])

    def convert(self, x, element_type) -> HloInstruction:
        et = as_element_type(element_type)
        return self.add_instruction("convert", [x], declared=Shape.array(et, x.shape.dims))

    def bitcast_convert(self, x, element_type) -> HloInstruction:
        et = as_element_type(element_type)
        return self.add_instruction("bitcast-convert", [x], declared=Shape.array(et, ()))

    def reduce_precision(self, x, exponent_bits: int, mantissa_bits: int) -> HloInstruction:
        return self.add_instruction("reduce-precision", [x], {"exponent_bits": exponent_bits,
                                                              "mantissa_bits": mantissa_bits})

    def copy(self, x) -> HloInstruction:
        return self.add_instruction("copy", [x])

    # ----- data movement
    def broadcast_in_dim(self, x, out_dims: Sequence[int],
                         broadcast_dimensions: Sequence[int]) -> HloInstruction:
        """Operand dim i -> result dim ``broadcast_dimensions[i]``; size-1 operand dims may
        stretch (they are reshaped away first, as XLA's builder does)."""
        out_dims, bdims = tuple(out_dims), tuple(broadcast_dimensions)
        if len(bdims) == x.shape.rank:
            stretch = [i for i, d in enumerate(bdims)
                       if 0 <= d < len(out_dims) and x.shape.dims[i] == 1 and out_dims[d] != 1]
            if stretch:
                keep = [i for i in range(x.shape.rank) if i not in stretch]
                x = self.reshape(x, [x.shape.dims[i] for i in keep])
                bdims = tuple(bdims[i] for i in keep)
        return self.add_instruction("broadcast", [x], {"dimensions": bdims},
                                    declared=Shape.array(x.shape.element_type, out_dims))

    def broadcast(self, x, sizes: Sequence[int]) -> HloInstruction:
        """Prepend dims ``sizes`` (XLA's Broadcast)."""
        n = len(sizes)
        return self.broadcast_in_dim(x, tuple(sizes) + x.shape.dims,
                                     tuple(range(n, n + x.shape.rank)))

    def reshape(self, x, dims: Sequence[int]) -> HloInstruction:
        return self.add_instruction("reshape", [x],
                                    declared=Shape.array(x.shape.element_type, tuple(dims)))

    def transpose(self, x, permutation: Sequence[int]) -> HloInstruction:
        return self.add_instruction("transpose", [x], {"dimensions": tuple(permutation)})

    def bitcast(self, x, shape: ShapeLike) -> HloInstruction:
        return self.add_instruction("bitcast", [x], declared=as_shape(shape))

    def slice(self, x, starts: Sequence[int], limits: Sequence[int],
              strides: Sequence[int] | None = None) -> HloInstruction:
        strides = strides or (1,) * len(starts)
        spec = tuple((int(a), int(b), int(c)) for a, b, c in zip(starts, limits, strides))
        return self.add_instruction("slice", [x], {"slice": spec})

    def dynamic_slice(self, x, starts: Sequence[HloInstruction],
                      sizes: Sequence[int]) -> HloInstruction:
        return self.add_instruction("dynamic-slice", [x, *starts],
                                    {"dynamic_slice_sizes": tuple(sizes)})

    def dynamic_update_slice(self, x, update, starts: Sequence[HloInstruction]) -> HloInstruction:
        return self.add_instruction("dynamic-update-slice", [x, update, *starts])

    def concatenate(self, operands: Sequence[HloInstruction], dimension: int) -> HloInstruction:
        return self.add_instruction("concatenate", list(operands), {"dimensions": (dimension,)})

    def pad(self, x, value, config: Sequence[Sequence[int]]) -> HloInstruction:
        """``config`` holds (lo, hi) or (lo, hi, interior) per dimension."""
        spec = tuple((int(c[0]), int(c[1]), int(c[2]) if len(c) > 2 else 0) for c in config)
        return self.add_instruction("pad", [x, value], {"padding": spec})

    def reverse(self, x, dimensions: Sequence[int]) -> HloInstruction:
        return self.add_instruction("reverse", [x], {"dimensions": tuple(dimensions)})

    def gather(self, operand, indices, offset_dims, collapsed_slice_dims, start_index_map,
               index_vector_dim: int, slice_sizes, operand_batching_dims=(),
               start_indices_batching_dims=(), indices_are_sorted: bool = False
               ) -> HloInstruction:
        attrs: dict[str, Any] = {"offset_dims": tuple(offset_dims), "collapsed_slice_dims":
                                 tuple(collapsed_slice_dims),
                                 "start_index_map": tuple(start_index_map)}
        if operand_batching_dims:
            attrs["operand_batching_dims"] = tuple(operand_batching_dims)
            attrs["start_indices_batching_dims"] = tuple(start_indices_batching_dims)
        attrs.update({"index_vector_dim": index_vector_dim, "slice_sizes": tuple(slice_sizes)})
        if indices_are_sorted:
            attrs["indices_are_sorted"] = True
        return self.add_instruction("gather", [operand, indices], attrs)

    def scatter(self, operands, indices, updates, computation: Computation, update_window_dims,
                inserted_window_dims, scatter_dims_to_operand_dims, index_vector_dim: int,
                input_batching_dims=(), scatter_indices_batching_dims=(),
                indices_are_sorted: bool = False, unique_indices: bool = False
                ) -> HloInstruction:
        attrs: dict[str, Any] = {
            "update_window_dims": tuple(update_window_dims),
            "inserted_window_dims": tuple(inserted_window_dims),
            "scatter_dims_to_operand_dims": tuple(scatter_dims_to_operand_dims)}
        if input_batching_dims:
            attrs["input_batching_dims"] = tuple(input_batching_dims)
            attrs["scatter_indices_batching_dims"] = tuple(scatter_indices_batching_dims)
        attrs["index_vector_dim"] = index_vector_dim
        if indices_are_sorted:
            attrs["indices_are_sorted"] = True
        if unique_indices:
            attrs["unique_indices"] = True
        attrs["to_apply"] = _as_computation(computation)
        return self.add_instruction("scatter", [*_list(operands), indices, *_list(updates)], attrs)

    def tuple(self, operands: Sequence[HloInstruction]) -> HloInstruction:
        return self.add_instruction("tuple", list(operands))

    def get_tuple_element(self, x, index: int) -> HloInstruction:
        return self.add_instruction("get-tuple-element", [x], {"index": index})

    def get_dimension_size(self, x, dimension: int) -> HloInstruction:
        return self.add_instruction("get-dimension-size", [x], {"dimensions": (dimension,)})

    def set_dimension_size(self, x, size, dimension: int) -> HloInstruction:
        return self.add_instruction("set-dimension-size", [x, size], {"dimensions": (dimension,)})

    # ----- reductions
    def reduce(self, operands, init_values, computation: Computation,
               dimensions: Sequence[int]) -> HloInstruction:
        return self.add_instruction("reduce", [*_list(operands), *_list(init_values)],
                                    {"dimensions": tuple(dimensions),
                                     "to_apply": _as_computation(computation)})

    def reduce_window(self, operands, init_values, computation: Computation,
                      window_dimensions, window_strides=None, padding=None,
                      base_dilations=None, window_dilations=None) -> HloInstruction:
        window = Window.make(window_dimensions, window_strides, padding, base_dilations,
                             window_dilations)
        return self.add_instruction("reduce-window", [*_list(operands), *_list(init_values)],
                                    {"window": window, "to_apply": _as_computation(computation)})

    def select_and_scatter(self, operand, select: Computation, window_dimensions,
                           window_strides, padding, source, init_value,
                           scatter: Computation) -> HloInstruction:
        window = Window.make(window_dimensions, window_strides, padding)
        return self.add_instruction("select-and-scatter", [operand, source, init_value],
                                    {"window": window, "select": _as_computation(select),
                                     "scatter": _as_computation(scatter)})

    def map(self, operands, computation: Computation) -> HloInstruction:
        ops = _list(operands)
        return self.add_instruction("map", ops, {"dimensions": tuple(range(ops[0].shape.rank)),
                                                 "to_apply": _as_computation(computation)})

    def sort(self, operands, comparator: Computation, dimension: int = -1,
             is_stable: bool = False) -> HloInstruction:
        ops = _list(operands)
        d = dimension % max(ops[0].shape.rank, 1)
        attrs = {"dimensions": (d,), "is_stable": True if is_stable else None,
                 "to_apply": _as_computation(comparator)}
        return self.add_instruction("sort", ops, attrs)

    def topk(self, x, k: int, largest: bool = True) -> HloInstruction:
        return self.add_instruction("topk", [x], {"k": k, "largest": largest})

    # ----- linear algebra
    def dot_general(self, lhs, rhs, contracting, batch=((), ()), preferred_element_type=None,
                    precision: Sequence[str] | None = None) -> HloInstruction:
        """``contracting=(lhs_dims, rhs_dims)``, ``batch=(lhs_dims, rhs_dims)``."""
        attrs: dict[str, Any] = {}
        if batch[0] or batch[1]:
            attrs["lhs_batch_dims"] = tuple(batch[0])
        attrs["lhs_contracting_dims"] = tuple(contracting[0])
        if batch[0] or batch[1]:
            attrs["rhs_batch_dims"] = tuple(batch[1])
        attrs["rhs_contracting_dims"] = tuple(contracting[1])
        if precision is not None:
            attrs["operand_precision"] = tuple(precision)
        declared = None
        if preferred_element_type is not None:
            declared = Shape.array(as_element_type(preferred_element_type), ())
        return self.add_instruction("dot", [lhs, rhs], attrs, declared=declared)

    def dot(self, lhs, rhs, preferred_element_type=None) -> HloInstruction:
        """Vector/matrix product: contracts lhs's last dim with rhs's first."""
        return self.dot_general(lhs, rhs, ((lhs.shape.rank - 1,), (0,)),
                                preferred_element_type=preferred_element_type)

    def conv_general_dilated(self, lhs, rhs, window_strides, padding, lhs_dilation=None,
                             rhs_dilation=None, dimension_numbers: str | ConvDimensionNumbers
                             = "b01f_01io->b01f", feature_group_count: int = 1,
                             batch_group_count: int = 1, preferred_element_type=None
                             ) -> HloInstruction:
        """Convolution; ``padding`` is (lo, hi) per spatial dim, ``dimension_numbers`` a
        ``dim_labels`` string or ConvDimensionNumbers."""
        dn = (ConvDimensionNumbers.from_string(dimension_numbers)
              if isinstance(dimension_numbers, str) else dimension_numbers)
        sizes = [rhs.shape.dims[d] for d in dn.kernel_spatial]
        window = Window.make(sizes, window_strides, padding, lhs_dilation, rhs_dilation)
        attrs = {"window": window, "dim_labels": dn,
                 "feature_group_count": feature_group_count if feature_group_count != 1 else None,
                 "batch_group_count": batch_group_count if batch_group_count != 1 else None}
        declared = None
        if preferred_element_type is not None:
            declared = Shape.array(as_element_type(preferred_element_type), ())
        return self.add_instruction("convolution", [lhs, rhs], attrs, declared=declared)

    def fft(self, x, fft_type: str, fft_length: Sequence[int]) -> HloInstruction:
        return self.add_instruction("fft", [x], {"fft_type": fft_type,
                                                 "fft_length": tuple(fft_length)})

    def cholesky(self, a, lower: bool = True) -> HloInstruction:
        return self.add_instruction("cholesky", [a], {"lower": lower})

    def triangular_solve(self, a, b, left_side: bool, lower: bool, unit_diagonal: bool = False,
                         transpose_a: str = "NO_TRANSPOSE") -> HloInstruction:
        return self.add_instruction("triangular-solve", [a, b], {
            "left_side": left_side, "lower": lower, "unit_diagonal": unit_diagonal,
            "transpose_a": transpose_a})

    def batch_norm_training(self, x, scale, offset, epsilon: float, feature_index: int):
        return self.add_instruction("batch-norm-training", [x, scale, offset],
                                    {"epsilon": epsilon, "feature_index": feature_index})

    def batch_norm_inference(self, x, scale, offset, mean, variance, epsilon: float,
                             feature_index: int):
        return self.add_instruction("batch-norm-inference", [x, scale, offset, mean, variance],
                                    {"epsilon": epsilon, "feature_index": feature_index})

    def batch_norm_grad(self, x, scale, mean, variance, grad_output, epsilon: float,
                        feature_index: int):
        return self.add_instruction("batch-norm-grad", [x, scale, mean, variance, grad_output],
                                    {"epsilon": epsilon, "feature_index": feature_index})

    # ----- control flow
    def while_loop(self, cond: Computation, body: Computation, init) -> HloInstruction:
        return self.add_instruction("while", [init], {"condition": _as_computation(cond),
                                                      "body": _as_computation(body)})

    def conditional(self, selector, branch_operands: Sequence[HloInstruction],
                    branches: Sequence[Computation]) -> HloInstruction:
        """A pred selector takes (true, false) branches; an s32 one any number of branches."""
        comps = [_as_computation(c) for c in branches]
        if selector.shape.element_type is T.PRED:
            if len(comps) != 2:
                raise InvalidArgumentError("conditional: a pred selector needs 2 branches "
                                           "(true, false)")
            attrs: dict[str, Any] = {"true_computation": comps[0],
                                     "false_computation": comps[1]}
        else:
            attrs = {"branch_computations": tuple(comps)}
        return self.add_instruction("conditional", [selector, *branch_operands], attrs)

    def call(self, computation: Computation, operands: Sequence[HloInstruction]):
        return self.add_instruction("call", list(operands),
                                    {"to_apply": _as_computation(computation)})

    def custom_call(self, target: str, operands: Sequence[HloInstruction], shape: ShapeLike,
                    **attrs: Any) -> HloInstruction:
        return self.add_instruction("custom-call", list(operands),
                                    {"custom_call_target": target, **attrs},
                                    declared=as_shape(shape))

    def opt_barrier(self, x) -> HloInstruction:
        return self.add_instruction("opt-barrier", [x])

    def after_all(self, tokens: Sequence[HloInstruction] = ()) -> HloInstruction:
        return self.add_instruction("after-all", list(tokens))

    def add_dependency(self, x, token) -> HloInstruction:
        return self.add_instruction("add-dependency", [x, token])

    # ----- random numbers and collectives
    def rng(self, a, b, shape: ShapeLike, distribution: str = "rng_uniform") -> HloInstruction:
        return self.add_instruction("rng", [a, b], {"distribution": distribution},
                                    declared=as_shape(shape))

    def rng_bit_generator(self, algorithm: str, state, shape: ShapeLike) -> HloInstruction:
        """``(new_state, bits)`` with bits of ``shape``."""
        declared = Shape.tuple([state.shape, as_shape(shape)])
        return self.add_instruction("rng-bit-generator", [state], {"algorithm": algorithm},
                                    declared=declared)

    def all_reduce(self, x, computation: Computation) -> HloInstruction:
        return self.add_instruction("all-reduce", [x], {"to_apply": _as_computation(computation)})

    def replica_id(self) -> HloInstruction:
        return self.add_instruction("replica-id")

    def partition_id(self) -> HloInstruction:
        return self.add_instruction("partition-id")


def _unary_method(opcode: str):
    def method(self: XlaBuilder, x: HloInstruction) -> HloInstruction:
        return self.add_instruction(opcode, [x])
    method.__doc__ = f"Elementwise ``{opcode}``."
    return method


def _binary_method(opcode: str):
    def method(self: XlaBuilder, a: HloInstruction, b: HloInstruction) -> HloInstruction:
        return self.add_instruction(opcode, [a, b])
    method.__doc__ = f"Elementwise ``{opcode}`` (operands of equal shape)."
    return method


def _method_name(opcode: str) -> str:
    name = opcode.replace("-", "_")
    return name + "_" if name in ("and", "or", "not") else name


# One method per unary/binary opcode, plus the short aliases XLA's builder uses.
for _op in UNARY:
    setattr(XlaBuilder, _method_name(_op), _unary_method(_op))
for _op in BINARY:
    setattr(XlaBuilder, _method_name(_op), _binary_method(_op))
ALIASES = {"exp": "exponential", "expm1": "exponential_minus_one", "log1p": "log_plus_one",
           "cos": "cosine", "sin": "sine", "neg": "negate", "clz": "count_leading_zeros",
           "sub": "subtract", "mul": "multiply", "div": "divide", "rem": "remainder",
           "max": "maximum", "min": "minimum", "pow": "power"}
for _alias, _target in ALIASES.items():
    setattr(XlaBuilder, _alias, getattr(XlaBuilder, _target))


def scalar_computation(op_name: str, element_type: ElementType | str) -> HloComputation:
    """The standard two-argument scalar reducer ``op_name`` (``add``, ``max``, ``min``,
    ``mul``, ``and``, ``or`` or any binary opcode) over ``element_type``."""
    opcode = {"max": "maximum", "min": "minimum", "mul": "multiply", "sub": "subtract"}.get(
        op_name, op_name)
    et = as_element_type(element_type)
    b = XlaBuilder(f"{op_name}_{et.name}.{next(_counter)}")
    x = b.parameter(Shape.scalar(et), name=f"x.{next(_counter)}")
    y = b.parameter(Shape.scalar(et), name=f"y.{next(_counter)}")
    return b.build(b.add_instruction(opcode, [x, y]))


def comparator_computation(element_types: Sequence[ElementType | str], direction: str = "LT",
                           key: int = 0) -> HloComputation:
    """A sort comparator over operands of ``element_types`` that compares operand ``key``."""
    ets = [as_element_type(t) for t in element_types]
    b = XlaBuilder(f"compare_{direction.lower()}.{next(_counter)}")
    params = [b.parameter(Shape.scalar(t)) for t in ets for _ in range(2)]
    return b.build(b.compare(params[2 * key], params[2 * key + 1], direction))


def build_module(entry: XlaBuilder | HloComputation, name: str | None = None) -> HloModule:
    """A module with ``entry`` as its entry computation plus every computation it calls
    (recursively, callees first); sets ``entry_computation_layout`` (row-major).

    Names are made unique across the module as XLA requires: a computation or instruction
    whose name was taken (e.g. two parameters given the same name) gets a numeric suffix."""
    comp = _as_computation(entry)
    module = HloModule(name or comp.name)
    ordered = computations_post_order([comp])
    names: set[str] = set()
    instruction_names: set[str] = set()
    for c in ordered:
        if c.name in names:
            c.name = f"{c.name}.{next(_counter)}"
        names.add(c.name)
        for instr in c.instructions:
            if instr.name in instruction_names:
                instr.name = f"{instr.name}.{next(_counter)}"
            instruction_names.add(instr.name)
        module.add_computation(c, is_entry=c is comp)
    module.attributes["entry_computation_layout"] = ProgramShape(
        [p.shape.with_default_layout() for p in comp.parameters],
        comp.root.shape.with_default_layout())
    return module


__all__ = ["XlaBuilder", "scalar_computation", "comparator_computation", "build_module",
           "as_shape", "as_element_type"]
