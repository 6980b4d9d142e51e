"""ConvolutionCanonicalization ("convolution-canonicalization", XLA CPU's
``ConvCanonicalization``): give every convolution the dimension order the CPU convolution
emitter (Eigen's NHWC/HWIO) works in.

Canonical ``dim_labels`` for ``n`` spatial dimensions are ``b01..f_01..io->b01..f``: the
input is ``[batch, spatial 0..n-1, feature]``, the kernel ``[spatial 0..n-1, input feature,
output feature]`` and the output ``[batch, spatial 0..n-1, feature]``. A convolution with
any other labels is rewritten as

    transpose(convolution(transpose(input), transpose(kernel)), back to the old output order)

with the canonical labels; window, ``feature_group_count``, ``batch_group_count``,
precision and metadata are kept (the window is indexed by spatial dimension number, so it
does not change). Transposes that would be identities are not emitted. Convolutions that
already have canonical labels are not touched.

XLA runs this only on the entry computation; here every non-fusion computation is
canonicalized, so convolutions in loop bodies reach the emitter in the same form.

One form is left alone: a convolution whose input batch dimension is the minor-most one,
with at least :data:`MIN_MINOR_BATCH` elements -- the weight gradient autodiff emits for an
NHWC convolution (``f01b_i01o->01bf``: the activations' channels are the "batch", the
images the contracted "feature"). Canonicalizing it transposes the whole activation tensor
(for the CIFAR CNN 32 MB per layer), while the CPU convolution routine computes this
form straight from the NHWC activations. With fewer channels (a 3-channel first layer) the
transpose is cheap and the canonical form is faster.

Needs: static shapes (convolutions with dynamic dimensions are left alone). Guarantees:
every convolution in a non-fusion computation has canonical ``dim_labels`` (except the
minor-batch form above); results are
unchanged bit for bit (the same products are summed in the same order).
"""
from __future__ import annotations

from ..hlo.attrs import ConvDimensionNumbers
from ..hlo.ir import HloComputation, HloInstruction, HloModule
from .base import HloPass
from .context import PassContext
from .computation_edits import DeferredEdits
from .hlo_utils import add_instruction, array_shape, non_fusion_computations, sort_instructions


MIN_MINOR_BATCH = 16


def canonical_conv_dims(num_spatial: int) -> ConvDimensionNumbers:
    """``b01..f_01..io->b01..f`` for ``num_spatial`` spatial dimensions."""
    n = num_spatial
    spatial = tuple(range(1, n + 1))
    return ConvDimensionNumbers(0, n + 1, spatial, n, n + 1, tuple(range(n)), 0, n + 1, spatial)


def is_canonical_convolution(conv: HloInstruction) -> bool:
    dn: ConvDimensionNumbers = conv.attrs["dim_labels"]
    return dn == canonical_conv_dims(len(dn.input_spatial))


class ConvolutionCanonicalization(HloPass):
    """XLA CPU's ``ConvCanonicalization``."""

    name = "convolution-canonicalization"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        eager = ctx is not None and ctx.reference_mode
        changed = False
        for comp in non_fusion_computations(module):
            convs = [i for i in comp.instructions if _should_canonicalize(i)]
            with DeferredEdits(comp, eager) as edits:
                for conv in convs:
                    _canonicalize(comp, conv, edits)
            if convs:
                sort_instructions(comp)
                changed = True
        return changed


def _should_canonicalize(instr: HloInstruction) -> bool:
    if instr.opcode != "convolution" or len(instr.operands) != 2:
        return False
    dn = instr.attrs.get("dim_labels")
    if not isinstance(dn, ConvDimensionNumbers) or dn.labels is not None:
        return False
    if any(s.is_dynamic for s in [instr.shape] + [o.shape for o in instr.operands]):
        return False
    if is_canonical_convolution(instr):
        return False
    return not is_minor_batch_weight_gradient(instr)


def is_minor_batch_weight_gradient(conv: HloInstruction) -> bool:
    """The input batch dimension is the minor-most one (row-major layout) and has at least
    :data:`MIN_MINOR_BATCH` elements, or any size when the CPU backend's generated
    weight-gradient kernel takes the convolution (see the module docstring)."""
    dn: ConvDimensionNumbers = conv.attrs["dim_labels"]
    x = conv.operands[0].shape
    if dn.input_batch != x.rank - 1:
        return False
    if x.dims[dn.input_batch] < MIN_MINOR_BATCH and not _direct_kernel_form(conv):
        return False
    layout = x.layout
    return layout is None or tuple(layout.minor_to_major)[:1] in ((), (x.rank - 1,))


def _direct_kernel_form(conv: HloInstruction) -> bool:
    """An f32 convolution of 1 or 2 spatial dims without groups, ``lhs_dilate`` or window
    reversal: the shapes ``backends/cpu/conv_direct.py`` computes from the minor-batch
    form without any transpose (its finer conditions decide there)."""
    dn: ConvDimensionNumbers = conv.attrs["dim_labels"]
    window = conv.attrs.get("window")
    dims = window.dims if window is not None else ()
    return (len(dn.input_spatial) in (1, 2)
            and all(s.element_type.name == "f32"
                    for s in [conv.shape] + [o.shape for o in conv.operands])
            and int(conv.attrs.get("feature_group_count", 1) or 1) == 1
            and int(conv.attrs.get("batch_group_count", 1) or 1) == 1
            and all(w.lhs_dilate == 1 and not w.rhs_reversal for w in dims))


def _transposed(comp: HloComputation, operand: HloInstruction, perm: list[int]) -> HloInstruction:
    """``operand`` with its dimensions in the order ``perm`` (itself for the identity)."""
    if perm == list(range(len(perm))):
        return operand
    dims = operand.shape.dims
    shape = array_shape(operand.shape, dims=[dims[p] for p in perm])
    return add_instruction(comp, "transpose", shape, [operand], {"dimensions": tuple(perm)},
                           like=operand)


def _canonicalize(comp: HloComputation, conv: HloInstruction, edits: DeferredEdits) -> None:
    dn: ConvDimensionNumbers = conv.attrs["dim_labels"]
    lhs, rhs = conv.operands
    n = len(dn.input_spatial)
    new_lhs = _transposed(comp, lhs, [dn.input_batch, *dn.input_spatial, dn.input_feature])
    new_rhs = _transposed(comp, rhs, [*dn.kernel_spatial, dn.kernel_input_feature,
                                      dn.kernel_output_feature])
    out_order = [dn.output_batch, *dn.output_spatial, dn.output_feature]
    out_dims = [conv.shape.dims[d] for d in out_order]
    attrs = dict(conv.attrs)
    attrs["dim_labels"] = canonical_conv_dims(n)
    new_conv = add_instruction(comp, "convolution", array_shape(conv.shape, dims=out_dims),
                               [new_lhs, new_rhs], attrs, like=conv)
    # Output dim d of the original is dim out_order.index(d) of the canonical result.
    back = [out_order.index(d) for d in range(len(out_order))]
    if back == list(range(len(back))):
        result = new_conv
        result.shape = conv.shape
    else:
        result = add_instruction(comp, "transpose", conv.shape, [new_conv],
                                 {"dimensions": tuple(back)}, like=conv)
    edits.replace(conv, result)


__all__ = ["ConvolutionCanonicalization", "canonical_conv_dims", "is_canonical_convolution"]
