"""BatchNormExpander ("batchnorm_expander"): rewrite the batch-norm ops into elementwise
ops, reduces and broadcasts, exactly as XLA's ``BatchNormExpander`` does.

With ``x`` the operand, ``f`` its feature dimension, ``N`` the number of elements per
feature, sums taken over every dimension but ``f`` (``reduce`` with a scalar ``add``),
``B(v)`` the broadcast of a feature vector along ``f`` and ``eps`` the ``epsilon``
attribute converted to the element type:

- ``batch-norm-training(x, scale, offset)`` ->
  ``mean = sum(x) / N``, ``var = sum(x * x) / N - mean * mean``,
  ``y = (x - B(mean)) * rsqrt(B(var) + eps) * B(scale) + B(offset)``; the tuple
  ``(y, mean, var)``.
- ``batch-norm-inference(x, scale, offset, mean, var)`` ->
  ``s = scale * rsqrt(var + eps)``, ``t = offset - mean * s``, ``x * B(s) + B(t)``.
- ``batch-norm-grad(x, scale, mean, var, dy)`` ->
  ``c = x - B(mean)``, ``grad_offset = sum(dy)``, ``grad_scale = sum(dy * c) *
  rsqrt(var + eps)``, ``grad_x = (B(scale) * rsqrt(B(var) + eps) / N) * (dy * N -
  B(sum(dy)) - B(sum(dy * c)) * c / (B(var) + eps))``; the tuple
  ``(grad_x, grad_scale, grad_offset)``.

``N`` is a constant for static shapes; for dynamic ones it is computed at run time from
``get-dimension-size`` (as in XLA). Each kind of op can be switched off with the
constructor flags; the CPU pipeline expands all three.

Needs: floating-point operands, ``feature_index`` within the operand's rank. Guarantees: no
expanded batch-norm op is left in non-fusion computations; results match the batch-norm
semantics up to floating-point rounding (the arithmetic runs in the operand's type).
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.shape import Shape
from ..hlo.types import S32
from .base import HloPass
from .context import PassContext
from .hlo_utils import (add_constant, add_instruction, array_shape, non_fusion_computations,
                        scalar_shape, sort_instructions)


class BatchNormExpander(HloPass):
    """XLA's ``BatchNormExpander``."""

    name = "batchnorm_expander"

    def __init__(self, rewrite_training_op: bool = True, rewrite_inference_op: bool = True,
                 rewrite_grad_op: bool = True) -> None:
        self.enabled = {"batch-norm-training": rewrite_training_op,
                        "batch-norm-inference": rewrite_inference_op,
                        "batch-norm-grad": rewrite_grad_op}

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        changed = False
        for comp in non_fusion_computations(module):
            ops = [i for i in comp.instructions if self.enabled.get(i.opcode, False)]
            for op in ops:
                _Expansion(comp, op).expand()
            if ops:
                sort_instructions(comp)
                changed = True
        return changed


class _Expansion:
    """Builds the replacement of one batch-norm instruction in its computation."""

    def __init__(self, comp: HloComputation, op: HloInstruction) -> None:
        self.comp, self.op = comp, op
        self._reducer: HloComputation | None = None
        x = op.operands[0]
        self.shape = array_shape(x.shape)
        self.feature_shape = array_shape(op.operands[1].shape)
        self.feature = int(op.attrs.get("feature_index", 0))
        if not 0 <= self.feature < x.shape.rank:
            raise InvalidArgumentError(f"{op.name}: feature_index {self.feature} out of range "
                                       f"for operand shape {x.shape}")
        if not x.shape.element_type.is_floating:
            raise InvalidArgumentError(f"{op.name}: batch-norm operand must be floating point, "
                                       f"got {x.shape}")
        self.reduce_dims = tuple(d for d in range(x.shape.rank) if d != self.feature)

    # ----- building blocks
    def emit(self, opcode: str, shape: Shape, operands, attrs=None) -> HloInstruction:
        return add_instruction(self.comp, opcode, shape, operands, attrs, like=self.op)

    def binary(self, opcode: str, a: HloInstruction, b: HloInstruction) -> HloInstruction:
        return self.emit(opcode, a.shape, [a, b])

    def scalar(self, value) -> HloInstruction:
        return add_constant(self.comp, value, scalar_shape(self.shape))

    def splat(self, scalar: HloInstruction, shape: Shape) -> HloInstruction:
        return self.emit("broadcast", shape, [scalar], {"dimensions": ()})

    def feature_broadcast(self, v: HloInstruction) -> HloInstruction:
        return self.emit("broadcast", self.shape, [v], {"dimensions": (self.feature,)})

    def sum(self, v: HloInstruction) -> HloInstruction:
        return self.emit("reduce", self.feature_shape, [v, self.scalar(0)],
                        {"dimensions": self.reduce_dims, "to_apply": self.add_computation()})

    def add_computation(self) -> HloComputation:
        """The scalar ``add`` reducer (built once per expansion)."""
        if self._reducer is not None:
            return self._reducer
        module = self.comp.parent
        et = scalar_shape(self.shape)
        comp = HloComputation(module.unique_name("scalar_add_computation"))
        lhs = comp.add_instruction(HloInstruction("parameter", et, name=module.unique_name(
            "scalar_lhs"), parameter_number=0))
        rhs = comp.add_instruction(HloInstruction("parameter", et, name=module.unique_name(
            "scalar_rhs"), parameter_number=1))
        comp.root = comp.add_instruction(HloInstruction("add", et, [lhs, rhs],
                                                        name=module.unique_name("add")))
        module.add_computation(comp)
        self._reducer = comp
        return comp

    def elements_per_feature(self) -> HloInstruction:
        """N as a scalar of the element type (XLA's ``DynamicElementCountPerFeature``)."""
        x = self.op.operands[0]
        if not x.shape.is_dynamic:
            n = int(np.prod([x.shape.dims[d] for d in self.reduce_dims], dtype=np.int64))
            return self.scalar(np.asarray(np.int32(n)).astype(self.shape.dtype))
        s32 = Shape.scalar(S32)
        count = add_constant(self.comp, 1, s32)
        for d in self.reduce_dims:
            size = self.emit("get-dimension-size", s32, [x], {"dimensions": (d,)})
            count = self.emit("multiply", s32, [size, count])
        return self.emit("convert", scalar_shape(self.shape), [count])

    def epsilon(self, shape: Shape) -> HloInstruction:
        eps = np.asarray(float(self.op.attrs.get("epsilon", 0.0))).astype(self.shape.dtype)
        return self.splat(self.scalar(eps), shape)

    def mean(self, total: HloInstruction, count: HloInstruction) -> HloInstruction:
        return self.binary("divide", total, self.splat(count, total.shape))

    # ----- the three expansions
    def expand(self) -> None:
        build = {"batch-norm-training": self.training, "batch-norm-inference": self.inference,
                 "batch-norm-grad": self.grad}[self.op.opcode]
        self.comp.replace_instruction(self.op, build())

    def training(self) -> HloInstruction:
        x, scale, offset = self.op.operands
        count = self.elements_per_feature()
        mean = self.mean(self.sum(x), count)
        square_mean = self.mean(self.sum(self.binary("multiply", x, x)), count)
        var = self.binary("subtract", square_mean, self.binary("multiply", mean, mean))
        var_eps = self.binary("add", self.feature_broadcast(var), self.epsilon(self.shape))
        rsqrt = self.emit("rsqrt", self.shape, [var_eps])
        centered = self.binary("subtract", x, self.feature_broadcast(mean))
        normalized = self.binary("multiply", centered, rsqrt)
        scaled = self.binary("multiply", normalized, self.feature_broadcast(scale))
        y = self.binary("add", scaled, self.feature_broadcast(offset))
        return self.emit("tuple", self.op.shape, [y, mean, var])

    def inference(self) -> HloInstruction:
        x, scale, offset, mean, var = self.op.operands
        var_eps = self.binary("add", var, self.epsilon(self.feature_shape))
        true_scale = self.binary("multiply", scale,
                                 self.emit("rsqrt", self.feature_shape, [var_eps]))
        true_shift = self.binary("subtract", offset, self.binary("multiply", mean, true_scale))
        scaled = self.binary("multiply", x, self.feature_broadcast(true_scale))
        return self.emit("add", self.op.shape, [scaled, self.feature_broadcast(true_shift)])

    def grad(self) -> HloInstruction:
        x, scale, mean, var, dy = self.op.operands
        count = self.elements_per_feature()
        var_b = self.feature_broadcast(var)
        var_eps_b = self.binary("add", var_b, self.epsilon(self.shape))
        rsqrt_b = self.emit("rsqrt", self.shape, [var_eps_b])
        rsqrt = self.emit("rsqrt", self.feature_shape,
                         [self.binary("add", var, self.epsilon(self.feature_shape))])
        centered = self.binary("subtract", x, self.feature_broadcast(mean))
        sum_dy_centered = self.sum(self.binary("multiply", dy, centered))
        grad_offset = self.sum(dy)
        grad_scale = self.binary("multiply", sum_dy_centered, rsqrt)
        i2 = self.feature_broadcast(grad_offset)
        i3 = self.feature_broadcast(sum_dy_centered)
        i4 = self.binary("multiply", i3, centered)
        i5 = self.binary("divide", i4, self.binary("add", var_b, self.epsilon(self.shape)))
        scale_rsqrt = self.mean(self.binary("multiply", self.feature_broadcast(scale), rsqrt_b),
                                count)
        i1 = self.binary("multiply", dy, self.splat(count, self.shape))
        i6 = self.binary("subtract", self.binary("subtract", i1, i2), i5)
        grad_x = self.binary("multiply", scale_rsqrt, i6)
        return self.emit("tuple", self.op.shape, [grad_x, grad_scale, grad_offset])


__all__ = ["BatchNormExpander"]
