"""Output fusion of a convolution with its bias and relu (XLA:CPU's output fusion of a
convolution + bias + relu, as oneDNN's post-ops): run after the fusion pass, it merges a
convolution into the loop fusion that is its only user when that fusion computes exactly
``add(conv, broadcast(b))`` or ``maximum(add(conv, broadcast(b)), broadcast(0))`` (or the
same relu as ``select(add(...) <= 0, 0, add(...))``) with
``b`` a vector along the convolution's output feature dim. The result is a ``kOutput``
fusion (:func:`conv_output_fusion_parts` reads it) whose backend kernel adds the bias and
takes the relu while it stores each output tile: the convolution's own result is never
written, and there is no separate pass over it.

Only convolutions the backend's :class:`ConvOutputFusionRules` accept are fused (on the
CPU: those its generated direct kernels compute). The pass applies where nothing else reads
the pre-activation ``conv + b``: inference, and training steps whose relu gradient masks
with the relu's output (``xlapy.nn.relu``'s does; a gradient that reads ``conv + b`` keeps
the convolution and its epilogue apart).
"""
from __future__ import annotations

import logging
import math
from typing import Protocol

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from .base import HloPass
from .context import PassContext
from .fusion_utils import fuse_instruction, fused_computation, fusion_kind
from .instruction_fusion import fusible_computations

log = logging.getLogger("xlapy.passes")

NAME = "conv-output-fusion"


class ConvOutputFusionRules(Protocol):
    """Which convolutions a backend computes together with a bias and relu epilogue.

    ``output_fusible(conv)``: the backend's code for the ``kOutput`` fusion applies the
    epilogue as it stores the convolution's result (layouts are final when it is asked).
    """

    def output_fusible(self, conv: HloInstruction) -> bool: ...


def _is_zero_splat(instr: HloInstruction) -> bool:
    """``broadcast`` of a scalar constant +0 (or that constant itself; not -0, which the
    kernel's relu would store as +0)."""
    if instr.opcode == "broadcast":
        instr = instr.operands[0]
    if instr.opcode != "constant" or not instr.shape.is_scalar:
        return False
    value = float(instr.literal)
    return value == 0.0 and math.copysign(1.0, value) > 0


def _relu_operand(root: HloInstruction) -> HloInstruction | None:
    """``a`` when ``root`` computes HLO's ``maximum(a, 0)`` and nothing else reads ``a``:
    ``maximum`` with a zero splat (either order), or ``select(compare(a, 0, LE), 0, a)``
    (``compare(0, a, GE)`` alike; ``xlapy.nn.relu``'s form, which keeps a NaN as the
    maximum does)."""
    if root.opcode == "maximum":
        a, z = root.operands
        if not _is_zero_splat(z):
            a, z = z, a
        return a if _is_zero_splat(z) and len(a.users) == 1 else None
    if root.opcode != "select":
        return None
    pred, z, a = root.operands
    if not _is_zero_splat(z) or pred.opcode != "compare":
        return None
    direction = pred.attrs.get("direction")
    x, y = pred.operands
    if not ((direction == "LE" and x is a and _is_zero_splat(y))
            or (direction == "GE" and y is a and _is_zero_splat(x))):
        return None
    if len(pred.users) != 1 or {id(u) for u in a.users} != {id(pred), id(root)}:
        return None
    return a


def _epilogue(root: HloInstruction) -> tuple[HloInstruction, HloInstruction, bool] | None:
    """``(value, bias vector, relu)`` when ``root`` is ``add(value, broadcast(bias))`` or
    the relu of that (:func:`_relu_operand`), the bias broadcast along one dim of a rank-1
    operand."""
    relu = False
    a = _relu_operand(root)
    if a is not None:
        root, relu = a, True
    if root.opcode != "add":
        return None
    value, bc = root.operands
    if bc.opcode != "broadcast":
        value, bc = bc, value
    if bc.opcode != "broadcast" or bc.operands[0].shape.rank != 1 or len(bc.dimensions) != 1:
        return None
    return value, bc, relu


def _feature_bias(conv: HloInstruction, bc: HloInstruction) -> bool:
    """Whether ``bc`` broadcasts a vector along ``conv``'s output feature dim."""
    dn = conv.attrs.get("dim_labels")
    return dn is not None and tuple(bc.dimensions) == (dn.output_feature,) and \
        bc.shape.dims == conv.shape.dims and \
        bc.shape.element_type == conv.shape.element_type


def conv_output_fusion_parts(instr: HloInstruction
                             ) -> tuple[HloInstruction, list[int], bool] | None:
    """For a ``kOutput`` fusion made by this pass: ``(the convolution, the fusion's operand
    numbers of its input, kernel and bias, relu)``; else None."""
    if instr.opcode != "fusion" or fusion_kind(instr) != "kOutput":
        return None
    parts = _epilogue(fused_computation(instr).root)
    if parts is None:
        return None
    conv, bc, relu = parts
    if conv.opcode != "convolution" or not _feature_bias(conv, bc) or len(conv.users) != 1:
        return None
    feeds = [conv.operands[0], conv.operands[1], bc.operands[0]]
    if not all(f.opcode == "parameter" for f in feeds):
        return None
    return conv, [f.parameter_number for f in feeds], relu


def _loop_epilogue(user: HloInstruction, conv: HloInstruction) -> bool:
    """Whether ``user``, a loop fusion, computes just the bias (+ relu) epilogue of its
    operand ``conv`` (read once), in ``conv``'s layout."""
    if user.opcode != "fusion" or fusion_kind(user) != "kLoop" or \
            sum(o is conv for o in user.operands) != 1 or user.shape != conv.shape:
        return False
    body = fused_computation(user)
    parts = _epilogue(body.root)
    if parts is None:
        return False
    value, bc, relu = parts
    if value.opcode != "parameter" or user.operands[value.parameter_number] is not conv or \
            bc.operands[0].opcode != "parameter" or not _feature_bias(conv, bc):
        return False
    computed = [i for i in body.instructions if i.opcode != "parameter"]
    return len(computed) <= (6 if relu else 2) and len(value.users) == 1


class ConvOutputFusion(HloPass):
    """Merge each convolution into its bias (+ relu) loop fusion (module docstring)."""

    name = NAME

    def __init__(self, rules: ConvOutputFusionRules) -> None:
        self.rules = rules
        self.fused: list[str] = []

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        self.fused = []
        for comp in fusible_computations(module):
            self._run_on(comp)
        return bool(self.fused)

    def _run_on(self, comp: HloComputation) -> None:
        for conv in list(comp.instructions):
            if conv.opcode != "convolution" or conv.parent is not comp or conv.is_root or \
                    len(conv.users) != 1 or conv.control_predecessors:
                continue
            user = conv.users[0]
            if not _loop_epilogue(user, conv) or not self.rules.output_fusible(conv):
                continue
            fuse_instruction(user, conv)
            user.attrs["kind"] = "kOutput"
            self.fused.append(user.name)
            log.debug("%s: %s fused with its bias%s", user.name, conv.name,
                      " and relu" if _relu_operand(fused_computation(user).root) else "")


__all__ = ["ConvOutputFusion", "ConvOutputFusionRules", "conv_output_fusion_parts", "NAME"]
