"""Tracing: recording primitives into an HLO builder.

A :class:`Trace` owns one :class:`~xlapy.hlo.builder.XlaBuilder`. While it is on the
trace stack, :func:`~xlapy.frontend.core.bind` lowers every primitive into it (all ops
are staged, even those on constants, as in JAX's omnistaging). Concrete Arrays used
inside become ``constant`` instructions; traced Arrays of an enclosing trace (values a
loop body or a cond branch closes over) are *captured*: they become extra parameters
of the nested computation and extra operands of the ``while``/``conditional``.

Every instruction gets ``OpMetadata(op_type, op_name="jit(f)/<path>/<op>",
source_file, source_line)`` from the innermost user frame.

:class:`NeedsConstant` is the internal signal of TF's *must-be-constant* inputs: an op
that needs a compile-time value (a shape, an axis) got a jit argument; jit catches it,
specializes on that argument's value and traces again. Ops never convert such values
themselves (``int(axis)``, ``np.atleast_1d(shape)`` would fail on a traced value): they
ask :func:`concrete_int` (one integer), :func:`concrete_ints` (axes, a shape, window
sizes) or :func:`concrete_value` (anything else), which raise it.
"""
from __future__ import annotations

from contextlib import contextmanager
from math import prod
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.attrs import OpMetadata
from ..hlo.builder import XlaBuilder, as_element_type
from ..hlo.ir import HloComputation, HloInstruction
from ..hlo.shape import Shape
from ..passes.hlo_utils import has_side_effect
from . import core
from .core import Array, LoweringContext, Primitive, result_weak_types
from .source_info import located, user_location


class NeedsConstant(Exception):
    """Raised while tracing when ``what`` needs a value computed from jit argument leaves
    ``leaves`` (their values, known, make it known: jit specializes on them)."""

    def __init__(self, leaves: tuple[int, ...], what: str) -> None:
        super().__init__(f"{what} needs the value of argument leaves {list(leaves)}")
        self.leaves = leaves
        self.what = what


#: A compile-time value may be computed from jit arguments (TensorFlow propagates
#: must-be-constant inputs back through the graph) when it has at most this many elements
#: and each argument it comes from at most ``CONSTANT_SOURCE_ELEMENTS``: the function is
#: then compiled per value of those arguments, which pays only for small ones.
CONSTANT_VALUE_ELEMENTS = 64
CONSTANT_SOURCE_ELEMENTS = 1024
# Instructions whose value is not a function of their operands.
# Set once a host callback with a side effect has been traced in this process: from then
# on traces order side-effecting instructions (``Trace._order_effects``).
EFFECTS_USED = [False]
_NOT_FOLDABLE = frozenset({"rng", "rng-bit-generator", "rng-get-and-update-state", "infeed",
                           "recv", "recv-done", "custom-call", "after-all"})


def _argument_sources(x: "Array") -> tuple[int, ...] | None:
    """The jit argument leaves a traced value is computed from, when knowing their values
    makes it known (a pure function of them, all small); ``()`` when it is computed from
    constants only (once jit specialized on those arguments); None otherwise."""
    trace = x._trace
    if trace is None or x._instr is None or prod(x.shape) > CONSTANT_VALUE_ELEMENTS:
        return None
    leaves: set[int] = set()
    seen: set[int] = set()
    stack = [x._instr]
    while stack:
        instr = stack.pop()
        if id(instr) in seen:
            continue
        seen.add(id(instr))
        if instr.opcode == "parameter":
            leaf = trace.param_leaf.get(id(instr))
            if leaf is None or prod(instr.shape.dims) > CONSTANT_SOURCE_ELEMENTS:
                return None        # a captured value, a Variable, or a large argument
            leaves.add(leaf)
        elif instr.opcode in _NOT_FOLDABLE or not all(
                _pure(c) for c in instr.called_computations):
            return None
        else:
            stack.extend(instr.operands)
    return tuple(sorted(leaves))


def _pure(comp: HloComputation) -> bool:
    """Whether ``comp`` (a reducer, a comparator, a loop body ...) computes a function of
    its parameters only."""
    return all(i.opcode not in _NOT_FOLDABLE and all(_pure(c) for c in i.called_computations)
               for i in comp.instructions)


def _fold(x: "Array") -> np.ndarray | None:
    """The value of a traced value computed from constants only, by the constant folder's
    evaluator (the reference interpreter)."""
    from ..backends.compile import evaluate_constant as evaluate
    memo: dict[int, Any] = {}

    def value(instr: HloInstruction) -> Any:
        if id(instr) not in memo:
            memo[id(instr)] = instr.literal if instr.opcode == "constant" else \
                evaluate(instr, [value(o) for o in instr.operands])
        return memo[id(instr)]
    return np.asarray(value(x._instr))


class Trace:
    """Records primitives into ``self.builder`` (see the module docstring)."""

    def __init__(self, name: str, name_stack: str, parent: "Trace | None" = None) -> None:
        self.builder = XlaBuilder(name)
        self.name_stack = name_stack
        self.parent = parent
        self.alive = True
        self.params: list[HloInstruction] = []
        self.captures: list[Array] = []            # outer values, in capture order
        self._captured: dict[int, HloInstruction] = {}
        self._consts: dict[int, tuple[Array, HloInstruction]] = {}
        self.param_leaf: dict[int, int] = {}        # id(parameter instr) -> jit leaf index
        # Side effects (host callbacks, frontend/callbacks.py): the last side-effecting
        # instruction, the ordered callbacks' token, and a memo for has_side_effect.
        self.last_effect: HloInstruction | None = None
        self.effect_token: HloInstruction | None = None
        self._effect_memo: dict[int, bool] = {}
        # Under vmap (a batch trace among the ancestors) concrete values are captured too,
        # not folded into constants: a tape inside the vmap may track them, and the
        # primitive's gradient rule reaches only its operands.
        self.capture_constants = bool(getattr(parent, "capture_constants", False))

    # ----- values
    def new_param(self, shape: Shape, name: str | None = None, op_name: str | None = None,
                  weak_type: bool = False, leaf: int | None = None) -> Array:
        """A new flat parameter of this computation, as a traced Array."""
        meta = self.metadata("parameter", op_name=op_name) if op_name else None
        self.builder.set_op_metadata(meta)
        instr = self.builder.parameter(shape, name=name)
        self.builder.set_op_metadata(None)
        self.params.append(instr)
        if leaf is not None:
            self.param_leaf[id(instr)] = leaf
        return Array(instr=instr, trace=self, weak_type=weak_type)

    def instr_for(self, x: Array) -> HloInstruction:
        """The instruction holding ``x`` in this computation (constant / capture if needed)."""
        if x._value is not None and not self.capture_constants:
            hit = self._consts.get(id(x))
            if hit is None:
                hit = (x, self.builder.constant(x._value))
                self._consts[id(x)] = hit
            return hit[1]
        if x._trace is self:
            return x._instr
        hit_instr = self._captured.get(id(x))
        if hit_instr is not None:
            return hit_instr
        if x._value is None and not (x._trace.alive and self._has_ancestor(x._trace)):
            raise InvalidArgumentError(located(
                f"a traced value ({x.type_text()}) escaped from the function that was being "
                "compiled and is used outside it",
                "return values from the traced function instead of storing them"))
        old = self.builder._metadata
        self.builder.set_op_metadata(None)
        instr = self.builder.parameter(Shape.array(as_element_type(x.dtype), x.shape))
        self.builder.set_op_metadata(old)
        self.params.append(instr)
        self.captures.append(x)
        self._captured[id(x)] = instr
        return instr

    def _has_ancestor(self, other: "Trace") -> bool:
        t = self.parent
        while t is not None:
            if t is other:
                return True
            t = t.parent
        return False

    # ----- recording
    def metadata(self, op_type: str, op_name: str | None = None) -> OpMetadata:
        loc = user_location(2)
        return OpMetadata.make(op_type=op_type,
                               op_name=op_name or f"{self.name_stack}/{op_type}",
                               source_file=loc.file if loc else None,
                               source_line=loc.line if loc else None)

    def apply(self, prim: Primitive, args: Sequence[Array], params: dict) -> list[Array]:
        meta = self.metadata(prim.name)
        self.builder.set_op_metadata(meta)
        try:
            operands = [self.instr_for(a) for a in args]
            first = len(self.builder._comp.instructions)
            out = prim.lower(LoweringContext(self.builder, meta), *operands, **params)
            if EFFECTS_USED[0]:
                self._order_effects(first)
        finally:
            self.builder.set_op_metadata(None)
        outs = list(out) if prim.multiple_results else [out]
        weak = result_weak_types(prim, args, params, len(outs))
        return [Array(instr=o, trace=self, weak_type=w) for o, w in zip(outs, weak)]

    def _order_effects(self, first: int) -> None:
        """Chain the side-effecting instructions made since index ``first`` (host
        callbacks, and loops or branches containing them) to the previous one by a
        control edge, so they run in program order whatever the schedule."""
        for instr in self.builder._comp.instructions[first:]:
            if not has_side_effect(instr, self._effect_memo):
                continue
            last = self.last_effect
            if last is not None and last not in instr.control_predecessors:
                instr.control_predecessors.append(last)
            self.last_effect = instr

    def tag(self, op_type: str) -> Any:
        """``with trace.tag("while"):`` sets the metadata for instructions built directly."""
        return _Tag(self, op_type)


class _Tag:
    def __init__(self, trace: Trace, op_type: str) -> None:
        self.trace, self.op_type = trace, op_type

    def __enter__(self) -> OpMetadata:
        meta = self.trace.metadata(self.op_type)
        self.trace.builder.set_op_metadata(meta)
        return meta

    def __exit__(self, *exc: Any) -> None:
        self.trace.builder.set_op_metadata(None)


@contextmanager
def trace_context(trace: Trace) -> Iterator[Trace]:
    """Make ``trace`` the current trace for the ``with`` block."""
    core._TRACE_STACK.append(trace)
    try:
        yield trace
    finally:
        core._TRACE_STACK.pop()
        trace.alive = False


def concrete_value(x: Any, what: str) -> np.ndarray:
    """The compile-time value of ``x`` for ``what`` (an axis, a shape, a bound).

    ``x`` is an Array, anything NumPy converts, or (nested) lists and tuples of those. A
    traced jit argument raises :class:`NeedsConstant` (jit then specializes on it); any
    other traced value raises InvalidArgumentError naming the user's line.
    """
    if isinstance(x, (list, tuple)):
        if any(isinstance(e, (Array, list, tuple)) for e in x):
            return np.asarray([concrete_value(e, what) for e in x])
        return np.asarray(x)
    if not isinstance(x, Array):
        return np.asarray(x)
    if x._value is not None:
        if core._RECORDERS.items:        # a graph being recorded must not freeze it
            core._RECORDERS.items[-1].check_python_use(x, what)
        return x._value
    leaves = _argument_sources(x)
    if leaves:
        raise NeedsConstant(leaves, what)
    folded = _fold(x) if leaves == () else None
    if folded is not None:
        return folded
    raise InvalidArgumentError(located(
        f"{what} must be a compile-time constant, but it is computed from traced values "
        f"({x.type_text()}) other than small jit arguments",
        "pass a Python value, or mark the argument static with static_argnums / "
        "static_argnames"))


def concrete_int(x: Any, what: str) -> int:
    """``x`` (a Python or NumPy integer, or an integer scalar Array) as a Python int.

    This is how every op gets a static integer (an axis, a size, ``k``): a traced jit
    argument makes jit specialize on its value (:func:`concrete_value`).
    """
    if type(x) is int:
        return x
    v = concrete_value(x, what)
    if v.ndim != 0 or v.dtype.kind not in "iub":
        raise InvalidArgumentError(f"{what} must be an integer scalar, got {_show(x, v)}")
    return int(v)


def concrete_ints(x: Any, what: str) -> tuple[int, ...]:
    """``x`` (one integer, or a sequence / 1-D array of them: axes, a shape, strides) as
    a tuple of Python ints, each obtained as :func:`concrete_int` obtains one."""
    if type(x) is tuple and all(type(d) is int for d in x):
        return x
    if isinstance(x, (list, tuple, range)):
        return tuple(concrete_int(d, what) for d in x)
    v = concrete_value(x, what)
    if v.ndim > 1 or v.dtype.kind not in "iub":
        raise InvalidArgumentError(f"{what} must be an integer or a sequence of integers, "
                                   f"got {_show(x, v)}")
    return tuple(int(d) for d in v.reshape(-1))


def _show(x: Any, v: np.ndarray) -> str:
    return repr(v.tolist()) if isinstance(x, Array) else repr(x)


def finalize_tuple_computation(trace: Trace, n_explicit: int, captures: Sequence[Array],
                               outs: Sequence[HloInstruction] | None,
                               root: HloInstruction | None = None,
                               passthrough: bool = False) -> HloComputation:
    """Turn a traced sub-computation with flat parameters into XLA's one-tuple-parameter form.

    The tuple holds the ``n_explicit`` explicit inputs then every value in ``captures``
    (a superset of this trace's own captures). The root is ``tuple(outs)`` (plus the
    captures themselves when ``passthrough``, as a while body needs) or ``root``.
    """
    b = trace.builder
    explicit = trace.params[:n_explicit]
    own = {id(a): trace._captured[id(a)] for a in trace.captures}
    shapes = [p.shape for p in explicit] + [
        Shape.array(as_element_type(c.dtype), c.shape).with_default_layout() for c in captures]
    b.set_op_metadata(trace.metadata("parameter"))
    tuple_param = b.add_instruction("parameter", declared=Shape.tuple(shapes),
                                    parameter_number=0)
    gtes = [b.get_tuple_element(tuple_param, i) for i in range(len(shapes))]
    old_params = list(explicit) + [own[id(c)] for c in captures if id(c) in own]
    mapping: dict[int, HloInstruction] = {id(p): gtes[i] for i, p in enumerate(explicit)}
    for j, c in enumerate(captures):
        if id(c) in own:
            mapping[id(own[id(c)])] = gtes[n_explicit + j]
    for p in old_params:
        p.replace_all_uses_with(mapping[id(p)])
    if root is None:
        values = [mapping.get(id(o), o) for o in (outs or [])]
        if passthrough:
            values += gtes[n_explicit:]
        root = b.tuple(values)
    else:
        root = mapping.get(id(root), root)
    b.set_op_metadata(None)
    comp = b.build(root)
    for p in old_params:
        comp.remove_instruction(p)
    comp.parameters = [tuple_param]
    comp.instructions = comp.post_order()
    return comp


__all__ = ["Trace", "NeedsConstant", "trace_context", "concrete_value", "concrete_int",
           "concrete_ints", "finalize_tuple_computation"]
