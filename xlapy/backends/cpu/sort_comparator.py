"""Sort comparators as LLVM functions, with a precomputed-key fast path.

A sort comparator ``less(lhs_0, rhs_0, lhs_1, rhs_1, ...)`` is emitted once per kernel
as an internal, always-inlined function (:meth:`SortComparator.less`).

**Key fast path.** Many comparators are ``compare(f(lhs...), f(rhs...))``: the same
expression ``f`` applied to the left and to the right element, e.g. JAX's float
comparator, which canonicalizes NaN and ``-0`` before a TOTALORDER ``LT``. Then
``less(a, b) == compare(key(a), key(b))`` with ``key = f``, so the kernel computes each
element's key once (when the row is loaded) and sorts it along with the operands; a
comparison is then the root ``compare`` alone. The root is still emitted by the
elemental emitter, so its semantics (direction, FLOAT/TOTALORDER/SIGNED/UNSIGNED) are
exactly the comparator's. A comparator whose sides are bare parameters has nothing to
precompute and is used as written.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from llvmlite import ir

from ...hlo.ir import HloComputation, HloInstruction
from .elemental import ElementalEmitter
from .kernel_api import constant_generator
from .kernel_support import emit_scalar_computation
from .llvm_types import I1, llvm_type


def _param_free(instr: HloInstruction, memo: dict[int, bool]) -> bool:
    if id(instr) not in memo:
        memo[id(instr)] = instr.opcode != "parameter" and \
            all(_param_free(o, memo) for o in instr.operands)
    return memo[id(instr)]


def _same_attrs(a: HloInstruction, b: HloInstruction) -> bool:
    if a.opcode == "constant":
        x, y = np.asarray(a.literal), np.asarray(b.literal)
        return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    try:
        return bool(a.attrs == b.attrs)
    except (TypeError, ValueError):          # attributes NumPy cannot compare as a whole
        return False


def _mirrors(a: HloInstruction, b: HloInstruction, memo: dict) -> bool:
    """Whether ``b`` is ``a`` with every parameter ``2k`` replaced by ``2k + 1``."""
    key = (id(a), id(b))
    if key in memo:
        return memo[key]
    if a.opcode == "parameter":
        ok = b.opcode == "parameter" and a.parameter_number % 2 == 0 and \
            b.parameter_number == a.parameter_number + 1
    elif a is b:
        ok = _param_free(a, {})
    else:
        ok = (a.opcode == b.opcode and a.shape == b.shape
              and len(a.operands) == len(b.operands) and _same_attrs(a, b)
              and all(_mirrors(x, y, memo) for x, y in zip(a.operands, b.operands)))
    memo[key] = ok
    return ok


def key_expression(comp: HloComputation) -> HloInstruction | None:
    """``f`` if ``comp`` is ``compare(f(lhs...), f(rhs...))`` with a non-trivial ``f``."""
    root = comp.root
    if root.opcode != "compare" or len(root.operands) != 2:
        return None
    lhs, rhs = root.operands
    if lhs.opcode == "parameter" or not lhs.shape.is_array or lhs.shape.rank != 0:
        return None
    return lhs if _mirrors(lhs, rhs, {}) else None


class SortComparator:
    """The comparator of one sort kernel over operands of LLVM ``types``."""

    def __init__(self, module: ir.Module, name: str, comp: HloComputation,
                 types: Sequence[ir.Type]) -> None:
        self.comp, self.n = comp, len(types)
        self.key = key_expression(comp)
        args = [t for t in types for _ in range(2)]
        self._full = self._function(module, f"{name}.less", args,
                                    lambda b, vals: emit_scalar_computation(b, comp, vals)[0])
        self.key_type: ir.Type | None = None
        self._by_key = None
        if self.key is not None:
            self.key_type = llvm_type(self.key.shape.element_type)
            root = comp.root
            self._by_key = self._function(
                module, f"{name}.less_key", [self.key_type, self.key_type],
                lambda b, vals: ElementalEmitter(b, b.module).generator(
                    root, [constant_generator(v) for v in vals])([]))

    @staticmethod
    def _function(module: ir.Module, name: str, args: list[ir.Type], body) -> ir.Function:
        fn = ir.Function(module, ir.FunctionType(I1, args), name=name)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(body(b, list(fn.args)))
        return fn

    def element_key(self, b: ir.IRBuilder, values: Sequence[ir.Value]) -> ir.Value:
        """The key of an element whose operand values are ``values``."""
        em = ElementalEmitter(b, b.module)
        done: dict[int, ir.Value] = {}

        def emit(i: HloInstruction) -> ir.Value:
            if id(i) not in done:
                if i.opcode == "parameter":
                    done[id(i)] = values[i.parameter_number // 2]
                else:
                    ops = [emit(o) for o in i.operands]
                    done[id(i)] = em.generator(i, [constant_generator(v) for v in ops])([])
            return done[id(i)]
        return emit(self.key)

    def less(self, b: ir.IRBuilder, lhs: Sequence[ir.Value], rhs: Sequence[ir.Value]) -> ir.Value:
        """``less(lhs, rhs)``: by the keys when the element lists carry one (``n + 1``
        values), else the comparator on the operand values."""
        if len(lhs) > self.n:
            return b.call(self._by_key, [lhs[self.n], rhs[self.n]])
        return b.call(self._full, [v for pair in zip(lhs, rhs) for v in pair])


__all__ = ["SortComparator", "key_expression"]
