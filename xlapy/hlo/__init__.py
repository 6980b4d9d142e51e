"""HLO: element types, shapes, the IR, its text format, shape inference and the verifier."""
from __future__ import annotations

from . import attrs, types
from .attrs import ConvDimensionNumbers, OpMetadata, RawAttr, Window, WindowDim
from .ir import AliasEntry, HloComputation, HloInstruction, HloModule, StackFrameIndex
from .opcodes import OPCODES, OpInfo
from .shape import Layout, ProgramShape, Shape
from .sharding import HloSharding, parse_sharding
from .types import ElementType


def parse_module(text: str) -> HloModule:
    """Parse XLA's HLO text into an :class:`HloModule` (raises ``HloParseError``)."""
    from .parser import parse_module as _parse
    return _parse(text)


def parse_shape(text: str) -> Shape:
    """Parse a shape such as ``f32[2,3]{1,0}`` or ``(f32[], s32[4])``."""
    from .parser import parse_shape as _parse
    return _parse(text)


__all__ = [
    "attrs", "types", "ConvDimensionNumbers", "OpMetadata", "RawAttr", "Window", "WindowDim",
    "AliasEntry", "HloComputation", "HloInstruction", "HloModule", "StackFrameIndex", "OPCODES",
    "OpInfo", "Layout", "ProgramShape", "Shape", "ElementType", "parse_module", "parse_shape",
    "HloSharding", "parse_sharding",
]
