"""HLO→HLO passes, one file each, and the named pipelines (layer 2).

Passes carry XLA's names (``algsimp``, ``dce``, ``cse`` ...) so ``XLA_FLAGS``
pass control (``--xla_disable_hlo_passes=...``) and dump names match XLA's.
"""
from __future__ import annotations

from .algebraic_simplifier import AlgebraicSimplifier
from .base import HloPass
from .call_inliner import CallInliner
from .comparison_expander import ComparisonExpander
from .constant_folding import HloConstantFolding, set_constant_evaluator
from .cse import HloCSE
from .dce import HloDCE
from .pipeline import (HloPassFix, HloPassPipeline, PassRecord, PipelineResult, cpu_pipeline,
                       cpu_simplification_pipeline, format_pass_timings,
                       target_independent_passes)
from .tuple_simplifier import TupleSimplifier
from .zero_sized_simplifier import ZeroSizedHloElimination

__all__ = [
    "AlgebraicSimplifier", "CallInliner", "ComparisonExpander", "HloCSE", "HloConstantFolding",
    "HloDCE", "HloPass", "HloPassFix", "HloPassPipeline", "PassRecord", "PipelineResult",
    "TupleSimplifier", "ZeroSizedHloElimination", "cpu_pipeline", "cpu_simplification_pipeline",
    "format_pass_timings", "set_constant_evaluator", "target_independent_passes",
]

from .copy_insertion import CopyInsertion  # noqa: E402
from .layout_assignment import CpuLayoutAssignment  # noqa: E402
from .reshape_mover import ReshapeMover  # noqa: E402

__all__ += ["CopyInsertion", "CpuLayoutAssignment", "ReshapeMover"]

from .batchnorm_expander import BatchNormExpander  # noqa: E402
from .convolution_canonicalization import ConvolutionCanonicalization  # noqa: E402
from .dot_decomposer import DotDecomposer  # noqa: E402
from .transpose_folding import TransposeFolding  # noqa: E402
from .while_loop_invariant_code_motion import WhileLoopInvariantCodeMotion  # noqa: E402
from .while_loop_simplifier import WhileLoopSimplifier  # noqa: E402

__all__ += ["BatchNormExpander", "ConvolutionCanonicalization", "DotDecomposer",
            "TransposeFolding", "WhileLoopInvariantCodeMotion", "WhileLoopSimplifier"]
