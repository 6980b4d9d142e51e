"""How often fusion would re-emit a producer (XLA's ``FusionNodeIndexingEvaluation``), and
the cache of such walks over fused computations that the fusion passes share.

The elemental emitter generates a fused operand once per distinct index it is read at:
an op that changes the shape (other than ``transpose``) computes a fresh index, so each
path through such ops re-emits the operand. :func:`code_duplication_too_high` refuses a
fusion that would emit a producer more than :data:`ALLOWED_CODE_DUPLICATION` times (or
more than once for ops whose cost is not per element).
"""
from __future__ import annotations

from typing import Any, Callable

from ..hlo.ir import HloInstruction
from .fusion_utils import UseKind, fused_computation, fused_parameter_uses, reuses_operand_elements

ALLOWED_CODE_DUPLICATION = 15           # FusionNodeIndexingEvaluation::kAllowedCodeDuplication
_OPS_INVALIDATING_CACHE = frozenset({"concatenate", "dot", "dynamic-update-slice", "pad",
                                     "reduce", "reduce-window"})


def emitted_instruction_counts(fusion: HloInstruction) -> dict[int, int]:
    """How many times the elemental emitter would generate each of ``fusion``'s operands
    (keyed by ``id``) if it were fused into ``fusion`` (XLA's
    FusionNodeIndexingEvaluation): ops that change the shape (other than transpose)
    compute a fresh index, so each such path re-emits the operand."""
    comp = fused_computation(fusion)
    root = comp.root
    usage: dict[int, int] = {}
    indexing_users: dict[int, set[int]] = {id(root): {id(root)}}
    for instr in reversed(comp.post_order()):
        if instr.opcode == "parameter":
            continue
        if instr is root:
            usage[id(root)] = 1
        else:
            usage[id(instr)] = sum(usage.get(u, 0) for u in indexing_users.get(id(instr), ()))
        for operand in instr.operands:
            key = operand
            if operand.opcode == "parameter":
                key = fusion.operands[operand.parameter_number]
            users = indexing_users.setdefault(id(key), set())
            if instr.opcode == "transpose" or operand.shape.dims == instr.shape.dims:
                users |= indexing_users.get(id(instr), set())
            else:
                users.add(id(instr))
    return {id(o): sum(usage.get(u, 0) for u in indexing_users.get(id(o), ()))
            for o in fusion.operands}


def emitted_instruction_count(fusion: HloInstruction, producer: HloInstruction) -> int:
    """How many times the elemental emitter would generate ``producer`` (an operand of
    ``fusion``) if fused into ``fusion``; see :func:`emitted_instruction_counts`."""
    return emitted_instruction_counts(fusion).get(id(producer), 0)


def code_duplication_too_high(fusion: HloInstruction, producer: HloInstruction,
                              cache: FusionAnalysisCache | None = None) -> bool:
    """Whether fusing ``producer`` into ``fusion`` would emit it too many times (module
    docstring); a broadcast is always cheap to re-emit."""
    if producer.opcode == "broadcast":
        return False
    if cache is None:
        n = emitted_instruction_count(fusion, producer)
    else:
        n = cache.get("emitted", fusion, emitted_instruction_counts).get(id(producer), 0)
    return n > ALLOWED_CODE_DUPLICATION or (producer.opcode in _OPS_INVALIDATING_CACHE and n > 1)


# ----------------------------------------------------------------------------- analyses of fusions
class FusionAnalysisCache:
    """Results of walks over fused computations, kept per fusion instruction until the pass
    that owns the cache changes that fusion (:meth:`invalidate`).

    A fusion pass asks the same questions about a fusion for each of its operands and
    again after every producer it fuses in; walking the fused body for each question
    made instruction fusion quadratic in the size of its fusions. Entries are keyed by
    ``id``: the owner keeps every instruction it asks about alive while the cache lives.
    A cache made with ``enabled=False`` (as in the pass context's ``reference_mode``)
    keeps nothing.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._entries: dict[int, dict[str, Any]] = {}

    def get(self, what: str, fusion: HloInstruction,
            compute: Callable[[HloInstruction], Any]) -> Any:
        """``compute(fusion)``, cached under ``(fusion, what)``."""
        if not self.enabled:
            return compute(fusion)
        entry = self._entries.setdefault(id(fusion), {})
        if what not in entry:
            entry[what] = compute(fusion)
        return entry[what]

    def invalidate(self, fusion: HloInstruction) -> None:
        """Forget everything about ``fusion`` (its fused computation changed)."""
        self._entries.pop(id(fusion), None)

    def reuses_operand_elements(self, instr: HloInstruction, i: int) -> bool:
        """:func:`reuses_operand_elements`, one walk per fusion while it is unchanged."""
        if instr.opcode != "fusion" or not self.enabled:
            return reuses_operand_elements(instr, i)
        return self.get("uses", instr, fused_parameter_uses)[i] == UseKind.REUSE


__all__ = ["ALLOWED_CODE_DUPLICATION", "FusionAnalysisCache", "code_duplication_too_high",
           "emitted_instruction_count", "emitted_instruction_counts"]
