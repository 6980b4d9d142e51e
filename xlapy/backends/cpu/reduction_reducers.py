"""Reducer computations of ``reduce`` as LLVM IR: fast-path binary ops and general bodies.

A :class:`Reducer` combines accumulators with new values. Two kinds:

- **fast path**: a single-input reduce whose computation is exactly ``op(p0, p1)`` (either
  order) with ``op`` one of ``add``, ``multiply``, ``maximum``, ``minimum``, ``and``,
  ``or``, ``xor`` on a native float, integer or ``pred`` type. Accumulators live in the
  *compute type* (``f16``/``bf16`` accumulate in ``float`` and are rounded once at the end,
  as XLA:CPU's float normalization and the interpreter do). Float ``add``/``multiply`` are
  *order sensitive*: when the kernel allows it they carry the ``reassoc`` fast-math flag, so
  LLVM's loop vectorizer may keep several vector partial results and combine them at the
  end. ``maximum``/``minimum`` are ``llvm.maximum``/``llvm.minimum`` (NaN-propagating,
  ``-0 < +0``) and integer/boolean ops are exact, so their order never matters.
  A fast-path reducer has an identity value, which lets a reduction be split into chunks
  whose partial results are combined afterwards.
- **general**: any other computation (variadic argmax-style reducers, reducers with
  converts or selects, complex types). Its body is emitted at every use with the elemental
  emitter on scalar parameters (generators that return the given values); values are
  combined strictly in order (no reassociation, no splitting).

**Combination order** (:func:`reduction_order`) matters only for order-sensitive reducers
(float ``add``/``multiply``). It follows what XLA:CPU (JAX 0.10) computes, so results
agree with XLA's bit for bit where XLA's order is known:

- ``"sequential"``: every reduced dimension has at most :data:`TREE_WINDOW` elements (and
  the input fewer than :data:`VECTOR_MIN_ELEMENTS`): XLA leaves the reduce alone and folds
  the elements one after the other in index order from the init value; so do we;
- ``"tree"``: some reduced dimension is longer but the input is still small: XLA's
  ``TreeReductionRewriter`` first reduces windows of :data:`TREE_WINDOW` elements per
  reduced dimension (a ``reduce-window`` with ``SAME`` padding, repeated while a dimension
  is longer than the window), then folds the window results in order; the kernel walks
  exactly that tree (:class:`ReduceOrder` ``levels``), one window after the other;
- ``"vector"``: inputs of :data:`VECTOR_MIN_ELEMENTS` elements or more, which XLA hands to
  YNNPACK's vectorized, reassociating reduction (its exact order is not reproduced): the
  kernel lets LLVM reassociate and vectorize each row with a fixed vector width and
  interleave count (``reduction_loops``' pinned loops: per row, lane ``j`` of part ``p``
  sums the elements ``k * 4W + p * W + j`` of the largest multiple of ``4W``, the parts
  and lanes are combined by LLVM's horizontal reduction, then single vectors and a scalar
  tail fold the rest), so a row's order depends only on its length and the accumulator
  type. Order-insensitive reducers also use it (unpinned: their order never matters).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Iterable, Sequence

from llvmlite import ir

from ...hlo.ir import HloComputation
from ...hlo.shape import Shape
from ...hlo.types import ElementType
from .elemental import is_native_float
from .kernel_support import (emit_scalar_computation, has_register_type,
                             scalar_computation_supported)
from .llvm_types import (call_intrinsic, compute_type, from_compute, int_constant,
                         llvm_type, to_compute)

FAST_OPS = ("add", "multiply", "maximum", "minimum", "and", "or", "xor")
# pred reducers are boolean: add/maximum are or, multiply/minimum are and (XLA's pred rules).
_PRED_OPS = {"add": "or", "maximum": "or", "or": "or", "multiply": "and", "minimum": "and",
             "and": "and", "xor": "xor"}
_REASSOC = ("reassoc",)
TREE_WINDOW = 32             # XLA:CPU's TreeReductionRewriter window
VECTOR_MIN_ELEMENTS = 4096   # XLA:CPU reduces inputs this large with YNNPACK (reassociated)


def fast_op(comp: HloComputation, et: ElementType) -> str | None:
    """The fast-path operation of reducer ``comp`` on element type ``et``, or None."""
    if comp.num_parameters != 2:
        return None
    root = comp.root
    if root.opcode not in FAST_OPS or len(root.operands) != 2:
        return None
    if any(o.opcode != "parameter" for o in root.operands):
        return None
    if {o.parameter_number for o in root.operands} != {0, 1}:
        return None
    if any(p.shape.element_type != et or p.shape.rank != 0 for p in comp.parameters) or \
            root.shape.element_type != et:
        return None
    op = root.opcode
    if et.is_pred:
        return _PRED_OPS[op]
    if is_native_float(et):
        return op if op in ("add", "multiply", "maximum", "minimum") else None
    if et.is_integral and et.bits >= 8:
        return op
    return None


class Reducer:
    """The reducer of one ``reduce`` with ``n`` inputs of ``element_types``."""

    def __init__(self, comp: HloComputation, element_types: Sequence[ElementType]) -> None:
        self.comp = comp
        self.element_types = list(element_types)
        self.n = len(self.element_types)
        self.op = fast_op(comp, self.element_types[0]) if self.n == 1 else None

    @property
    def is_fast(self) -> bool:
        return self.op is not None

    @staticmethod
    def supported(comp: HloComputation, element_types: Sequence[ElementType]) -> bool:
        """Whether a reducer over ``element_types`` with body ``comp`` can be emitted."""
        if len(element_types) == 1 and fast_op(comp, element_types[0]) is not None:
            return True
        return all(has_register_type(Shape.scalar(et)) for et in element_types) and \
            scalar_computation_supported(comp)

    # ----- accumulator types and conversions
    def acc_types(self) -> list[ir.Type]:
        """The LLVM type of each accumulator."""
        if self.is_fast and is_native_float(self.element_types[0]):
            return [compute_type(self.element_types[0])]
        return [llvm_type(et) for et in self.element_types]

    def to_acc(self, b: ir.IRBuilder, values: Sequence[ir.Value]) -> list[ir.Value]:
        """Register values of the element types -> accumulator values."""
        if self.is_fast and is_native_float(self.element_types[0]):
            return [to_compute(b, values[0], self.element_types[0])]
        return list(values)

    def from_acc(self, b: ir.IRBuilder, accs: Sequence[ir.Value]) -> list[ir.Value]:
        """Accumulator values -> register values of the element types (rounding once)."""
        if self.is_fast and is_native_float(self.element_types[0]):
            return [from_compute(b, accs[0], self.element_types[0])]
        return list(accs)

    def identity(self) -> list[ir.Constant]:
        """The identity of a fast-path reducer, in the accumulator type."""
        op, et = self.op, self.element_types[0]
        ty = self.acc_types()[0]
        if op is None:
            raise ValueError("a general reducer has no known identity")
        if et.is_pred:
            return [ir.Constant(ty, 1 if op == "and" else 0)]
        if is_native_float(et):
            value = {"add": -0.0, "multiply": 1.0, "maximum": float("-inf"),
                     "minimum": float("inf")}[op]
            return [ir.Constant(ty, value)]
        bits = et.bits
        if op in ("add", "or", "xor"):
            v = 0
        elif op == "multiply":
            v = 1
        elif op == "and":
            v = -1
        elif op == "maximum":
            v = -(1 << (bits - 1)) if et.is_signed_integral else 0
        else:                                  # minimum
            v = (1 << (bits - 1)) - 1 if et.is_signed_integral else -1
        return [int_constant(ty, v)]

    # ----- combining
    @property
    def order_sensitive(self) -> bool:
        """Whether the result depends on the combination order (float add/multiply)."""
        return self.op in ("add", "multiply") and is_native_float(self.element_types[0])

    def combine(self, b: ir.IRBuilder, accs: Sequence[ir.Value], values: Sequence[ir.Value],
                reassociate: bool = False) -> list[ir.Value]:
        """``reducer(accs..., values...)``; ``values`` are in the accumulator types.
        ``reassociate`` lets LLVM reorder a float add/multiply reduction (vectorize it)."""
        if self.is_fast:
            return [self._fast(b, accs[0], values[0], reassociate)]
        return self._general(b, list(accs) + list(values))

    def _fast(self, b: ir.IRBuilder, acc: ir.Value, v: ir.Value, reassociate: bool) -> ir.Value:
        op, et = self.op, self.element_types[0]
        if et.is_pred or (et.is_integral and op in ("and", "or", "xor")):
            return {"and": b.and_, "or": b.or_, "xor": b.xor}[op](acc, v)
        if is_native_float(et):
            flags = _REASSOC if reassociate else ()
            if op == "add":
                return b.fadd(acc, v, flags=flags)
            if op == "multiply":
                return b.fmul(acc, v, flags=flags)
            return call_intrinsic(b, "llvm.maximum" if op == "maximum" else "llvm.minimum",
                                  [acc, v])
        if op == "add":
            return b.add(acc, v)
        if op == "multiply":
            return b.mul(acc, v)
        signed = et.is_signed_integral
        name = {("maximum", True): "llvm.smax", ("maximum", False): "llvm.umax",
                ("minimum", True): "llvm.smin", ("minimum", False): "llvm.umin"}[(op, signed)]
        return call_intrinsic(b, name, [acc, v])

    def _general(self, b: ir.IRBuilder, args: list[ir.Value]) -> list[ir.Value]:
        """Emit the reducer body on scalar ``args`` (accumulators then values)."""
        return emit_scalar_computation(b, self.comp, args)


@dataclass
class ReduceOrder:
    """How one reduce combines its elements (see the module docstring).

    For ``"tree"``: ``levels[k]`` is ``(sizes, windows, low_paddings)`` of the k-th window
    reduction (each a dict over the reduced dimensions; level 0 reduces the input), and
    ``top`` the sizes of the last level's result, folded in row-major order."""

    kind: str
    reduced: list[int]
    levels: list[tuple[dict, dict, dict]] = field(default_factory=list)
    top: dict = field(default_factory=dict)

    @property
    def reassociate(self) -> bool:
        return self.kind == "vector"


def reduction_order(reducers: Sequence[Reducer], in_dims: Sequence[int],
                    reduced: Iterable[int]) -> ReduceOrder:
    """The combination order of a reduce over ``reduced`` of an input of ``in_dims``."""
    rdims = sorted(reduced)
    if not any(r.order_sensitive for r in reducers) or prod(in_dims) >= VECTOR_MIN_ELEMENTS:
        return ReduceOrder("vector", rdims)
    sizes = {d: in_dims[d] for d in rdims}
    if all(n <= TREE_WINDOW for n in sizes.values()) or not all(r.is_fast for r in reducers):
        return ReduceOrder("sequential", rdims)
    order = ReduceOrder("tree", rdims)
    while any(n > TREE_WINDOW for n in sizes.values()):
        wins = {d: min(n, TREE_WINDOW) for d, n in sizes.items()}
        outs = {d: -(-n // wins[d]) for d, n in sizes.items()}
        lows = {d: (outs[d] * wins[d] - n) // 2 for d, n in sizes.items()}
        order.levels.append((sizes, wins, lows))
        sizes = outs
    order.top = sizes
    return order


__all__ = ["Reducer", "ReduceOrder", "reduction_order", "fast_op",
           "FAST_OPS", "TREE_WINDOW", "VECTOR_MIN_ELEMENTS"]
