"""HLO→HLO passes, one file each, and the pipeline machinery (layer 2).

Passes carry XLA's names (``algsimp``, ``dce``, ``cse`` ...) so ``XLA_FLAGS``
pass control (``--xla_disable_hlo_passes=...``) and dump names match XLA's. Each pass's
``run(module, ctx)`` takes a :class:`PassContext`. The backends own their pipelines
(``xlapy/backends/<name>/pipeline.py``); the target-independent part is
:func:`target_independent_passes`.
"""
from __future__ import annotations

from .algebraic_simplifier import AlgebraicSimplifier
from .base import HloPass
from .batchnorm_expander import BatchNormExpander
from .call_inliner import CallInliner
from .comparison_expander import ComparisonExpander
from .constant_folding import HloConstantFolding
from .context import PassContext
from .convolution_canonicalization import ConvolutionCanonicalization
from .copy_insertion import CopyInsertion
from .cse import HloCSE
from .dce import HloDCE
from .dot_decomposer import DotDecomposer
from .layout_assignment import CpuLayoutAssignment
from .pipeline import (HloPassFix, HloPassPipeline, PassRecord, PipelineResult,
                       format_pass_timings, simplification_pipeline, target_independent_passes)
from .reshape_mover import ReshapeMover
from .transpose_folding import TransposeFolding
from .tuple_simplifier import TupleSimplifier
from .while_loop_invariant_code_motion import WhileLoopInvariantCodeMotion
from .while_loop_simplifier import WhileLoopSimplifier
from .zero_sized_simplifier import ZeroSizedHloElimination

__all__ = [
    "AlgebraicSimplifier", "BatchNormExpander", "CallInliner", "ComparisonExpander",
    "ConvolutionCanonicalization", "CopyInsertion", "CpuLayoutAssignment", "DotDecomposer",
    "HloCSE", "HloConstantFolding", "HloDCE", "HloPass", "HloPassFix", "HloPassPipeline",
    "PassContext", "PassRecord", "PipelineResult", "ReshapeMover", "TransposeFolding",
    "TupleSimplifier", "WhileLoopInvariantCodeMotion", "WhileLoopSimplifier",
    "ZeroSizedHloElimination", "format_pass_timings", "simplification_pipeline",
    "target_independent_passes",
]
