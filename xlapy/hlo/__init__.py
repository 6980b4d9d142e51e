"""HLO: element types, shapes, the IR, its text format, shape inference and the verifier."""
from __future__ import annotations

from . import attrs, types
from .attrs import ConvDimensionNumbers, OpMetadata, RawAttr, Window, WindowDim
from .ir import AliasEntry, HloComputation, HloInstruction, HloModule, StackFrameIndex
from .opcodes import OPCODES, OpInfo
from .shape import Layout, ProgramShape, Shape
from .sharding import HloSharding, parse_sharding
from .types import ElementType


def parse_module(text: str | bytes, *, fill_elided_constants: bool = False) -> HloModule:
    """Parse XLA's HLO text, StableHLO MLIR text (as ``jax.jit(f).lower(...).as_text()``
    prints it; detected) or a serialized ``HloModuleProto`` / ``HloProto`` (bytes) into an
    :class:`HloModule` (raises ``HloParseError``). ``fill_elided_constants`` fills HLO text's
    ``constant({...})`` with zeros (see :func:`xlapy.hlo.parser.parse_module`)."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        from .proto import module_from_proto_bytes
        return module_from_proto_bytes(bytes(text))
    from .stablehlo import is_stablehlo, to_hlo_module
    if is_stablehlo(text):
        return to_hlo_module(text)
    from .parser import parse_module as _parse
    return _parse(text, fill_elided_constants=fill_elided_constants)


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
