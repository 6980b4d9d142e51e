"""``sharding-remover`` (XLA's ``ShardingRemover``): on a single device the sharding
annotations mean nothing, so ``custom-call`` targets ``Sharding``, ``SPMDFullToShardShape`` and
``SPMDShardToFullShape`` are replaced by their operand. Lets a module JAX lowered for several
devices run on one."""
from __future__ import annotations

from ..hlo.ir import HloModule
from .base import HloPass
from .context import PassContext

_TARGETS = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"})


class ShardingRemover(HloPass):
    """Replace sharding custom-calls by their operand (see the module docstring)."""

    name = "sharding-remover"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        for comp in module.computations:
            for instr in list(comp.instructions):
                if instr.opcode == "custom-call" and len(instr.operands) == 1 \
                        and instr.attrs.get("custom_call_target") in _TARGETS \
                        and instr.operands[0].shape == instr.shape:
                    op = instr.operands[0]
                    if instr is comp.root:
                        comp.root = op
                    instr.replace_all_uses_with(op)
                    comp.remove_instruction(instr)
                    changed = True
        return changed


__all__ = ["ShardingRemover"]
