"""HloCSE ("cse"): merge identical instructions.

Two instructions of one computation are merged when they have the same opcode,
the same shape (a missing layout counts as row-major; different layouts are
never merged), the same operands (after earlier merges), and equal attributes
(``metadata`` ignored). Called computations are equal when they are the same
object or structurally identical (same instructions, shapes, attributes and
wiring, names ignored). Constants are equal when their literals are bitwise
equal (so ``0.0`` and ``-0.0`` stay apart, and equal NaN payloads merge).

Never merged: parameters, instructions with a side effect, ``rng`` and
``rng-bit-generator`` (each call must draw its own numbers), token producers,
and instructions with control dependencies. The merged-away instruction's users
use the first one (in text order). Needs: instructions in definitions-before-uses
order. Results never change.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from .base import HloPass
from .context import PassContext
from .computation_edits import DeferredEdits
from .hlo_utils import fusion_computations, has_side_effect, non_fusion_computations

_NEVER_MERGE = frozenset({"parameter", "rng", "rng-bit-generator", "rng-get-and-update-state",
                          "after-all", "add-dependency", "infeed", "recv", "replica-id",
                          "partition-id"})
_IGNORED_ATTRS = frozenset({"metadata", "statistics"})


class HloCSE(HloPass):
    """Common subexpression elimination (XLA's ``HloCSE``, layout-insensitive flavour)."""

    name = "cse"

    def __init__(self, only_fusion_computations: bool = False) -> None:
        self.only_fusion_computations = only_fusion_computations

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        eager = ctx is not None and ctx.reference_mode
        signatures = _Signatures()
        changed = False
        if self.only_fusion_computations:
            fused = fusion_computations(module)
            comps = [c for c in module.computations_post_order() if id(c) in fused]
        else:
            comps = non_fusion_computations(module)
        for comp in comps:
            changed |= _cse_computation(comp, signatures, eager)
        return changed


def _cse_computation(comp: HloComputation, signatures: "_Signatures", eager: bool) -> bool:
    seen: dict[Any, HloInstruction] = {}
    effect_memo: dict[int, bool] = {}
    changed = False
    with DeferredEdits(comp, eager) as edits:
        for instr in comp.post_order():
            if not _mergeable(instr, effect_memo):
                continue
            key = signatures.instruction_key(instr, id)
            first = seen.get(key)
            if first is None:
                seen[key] = instr
                continue
            edits.replace(instr, first)
            changed = True
    return changed


def _mergeable(instr: HloInstruction, memo: dict[int, bool]) -> bool:
    if instr.opcode in _NEVER_MERGE or instr.control_predecessors:
        return False
    if instr.shape.is_token or any(s.is_token for s in instr.shape.leaves()):
        return False
    if instr.parent is not None and any(instr in i.control_predecessors
                                        for i in instr.users):
        return False
    return not has_side_effect(instr, memo)


class _Signatures:
    """Hashable keys for instructions and (structurally) for computations."""

    def __init__(self) -> None:
        self._computation_keys: dict[int, Any] = {}

    def instruction_key(self, instr: HloInstruction, operand_key) -> tuple:
        shape = instr.shape.with_default_layout()
        attrs = tuple((k, self._attr_key(v)) for k, v in instr.attrs.items()
                      if k not in _IGNORED_ATTRS)
        literal = _literal_key(instr.literal) if instr.opcode == "constant" else None
        return (instr.opcode, shape, tuple(operand_key(o) for o in instr.operands), attrs,
                literal, instr.parameter_number)

    def computation_key(self, comp: HloComputation) -> Any:
        key = self._computation_keys.get(id(comp))
        if key is None:
            self._computation_keys[id(comp)] = ("computation", id(comp))   # recursion guard
            order = comp.post_order()
            index = {id(i): n for n, i in enumerate(order)}
            body = tuple(self.instruction_key(i, lambda op: index[id(op)]) for i in order)
            key = ("computation", body, index[id(comp.root)])
            self._computation_keys[id(comp)] = key
        return key

    def _attr_key(self, value: Any) -> Any:
        if isinstance(value, HloComputation):
            return self.computation_key(value)
        if isinstance(value, dict):
            return ("dict", tuple(sorted((str(k), self._attr_key(v)) for k, v in value.items())))
        if isinstance(value, (list, tuple)):
            return tuple(self._attr_key(v) for v in value)
        if isinstance(value, np.ndarray):
            return _literal_key(value)
        try:
            hash(value)
        except TypeError:
            return ("unhashable", repr(value))
        return value


def _literal_key(literal: Any) -> Any:
    if isinstance(literal, tuple):
        return tuple(_literal_key(x) for x in literal)
    if literal is None:
        return None
    a = np.ascontiguousarray(literal)
    return (str(a.dtype), a.shape, a.tobytes())


__all__ = ["HloCSE"]
