"""HloConstantFolding ("constant_folding"): evaluate instructions whose operands are all constants.

Passes sit below the backends (layer 2 < 3), so this pass cannot import the
interpreter. It evaluates through an ``evaluate(instr, operand_values) -> value``
callable given to the constructor, or else the pass context's ``constant_evaluator``
(the backends layer gives the reference interpreter's ``Evaluator.evaluate``). Without
an evaluator the pass changes nothing and says so once in the log.

Folded: any instruction whose operands are all ``constant`` instructions, except

- instructions with no operands (``iota``, ``replica-id`` ...) and ``broadcast``: folding
  them only turns a cheap op into a large literal;
- ``parameter``, ``constant``, ``tuple``, ``while`` (possibly long-running), side-effecting
  instructions, ``rng``/``rng-bit-generator``, ``custom-call``, token-producing ops;
- results with more than ``max_elements`` elements (XLA's 45 million limit), or that
  are more than ``max_growth`` times larger than the largest operand once bigger than
  ``small_result`` elements (so ``pad``/``reshape`` chains of small constants still fold);
- instructions the evaluator cannot run (its ``XlapyError`` is logged and skipped).

Needs: an evaluator with exact HLO semantics. Guarantees: same results (the folded
value is what the evaluator computes for the instruction).
"""
from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..errors import XlapyError
from ..hlo.ir import HloInstruction, HloModule
from .base import HloPass
from .context import ConstantEvaluator, PassContext, context_or_default
from .computation_edits import DeferredEdits
from .hlo_utils import add_instruction, has_side_effect, non_fusion_computations

log = logging.getLogger("xlapy.passes")

_warned_missing = False

MAX_FOLDED_ELEMENTS = 45_000_000
_NEVER_FOLD = frozenset({"parameter", "constant", "tuple", "broadcast", "while", "custom-call",
                         "rng", "rng-bit-generator", "rng-get-and-update-state", "after-all",
                         "add-dependency", "infeed", "outfeed", "send", "send-done", "recv",
                         "recv-done", "opt-barrier", "domain"})


class HloConstantFolding(HloPass):
    """XLA's ``HloConstantFolding``."""

    name = "constant_folding"

    def __init__(self, evaluate: ConstantEvaluator | None = None,
                 max_elements: int = MAX_FOLDED_ELEMENTS, small_result: int = 1024,
                 max_growth: int = 4) -> None:
        self.evaluate = evaluate
        self.max_elements = max_elements
        self.small_result = small_result
        self.max_growth = max_growth

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        ctx = context_or_default(ctx)
        evaluate = self.evaluate or ctx.constant_evaluator
        if evaluate is None:
            _warn_missing_evaluator()
            return False
        changed = False
        memo: dict[int, bool] = {}
        for comp in non_fusion_computations(module):
            with DeferredEdits(comp, ctx.reference_mode) as edits:
                for instr in comp.post_order():
                    if instr.parent is not comp or not self._foldable(instr, memo):
                        continue
                    try:
                        value = evaluate(instr, [o.literal for o in instr.operands])
                    except XlapyError as e:
                        log.debug("constant_folding: not folding %s: %s", instr.name, e)
                        continue
                    constant = add_instruction(comp, "constant", instr.shape,
                                               literal=_as_literal(value, instr), like=instr)
                    edits.insert_before(constant, instr, added=True)   # where instr was
                    edits.replace(instr, constant)
                    changed = True
        return changed

    def _foldable(self, instr: HloInstruction, memo: dict[int, bool]) -> bool:
        if instr.opcode in _NEVER_FOLD or not instr.operands:
            return False
        if any(o.opcode != "constant" for o in instr.operands):
            return False
        if instr.control_predecessors or any(s.is_token for s in instr.shape.leaves()):
            return False
        if has_side_effect(instr, memo):
            return False
        size = sum(s.num_elements for s in instr.shape.leaves())
        if size > self.max_elements:
            return False
        largest = max(sum(s.num_elements for s in o.shape.leaves()) for o in instr.operands)
        return size <= self.small_result or size <= self.max_growth * max(largest, 1)


def _as_literal(value: Any, instr: HloInstruction) -> Any:
    """The evaluator's value as a literal of ``instr``'s shape (tuples recursively)."""
    def convert(v: Any, shape) -> Any:
        if shape.is_tuple:
            return tuple(convert(x, s) for x, s in zip(v, shape.tuple_shapes))
        return np.asarray(v, dtype=shape.dtype).reshape(shape.dims)
    return convert(value, instr.shape)


def _warn_missing_evaluator() -> None:
    global _warned_missing
    if not _warned_missing:
        _warned_missing = True
        log.info("constant_folding: no constant evaluator (PassContext.constant_evaluator); "
                 "pass skipped")


__all__ = ["ConstantEvaluator", "HloConstantFolding", "MAX_FOLDED_ELEMENTS"]
