"""The CPU backend's fallback list: the (op, element type) pairs the op table accepts
that the CPU backend runs through the reference interpreter instead of a native kernel.

Every other pair the table accepts (``xlapy.hlo.opcodes.OpInfo.kinds``) has an
elemental emitter; ``tests/test_op_table.py`` checks both directions, so adding a
kernel means deleting its pair here, and a new op or type the table accepts needs a
kernel or an entry here with its reason.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...hlo import types as T
from ...hlo.opcodes import OPCODES, accepts
from ...hlo.types import ElementType

NATIVE_FLOATS = (T.F16, T.BF16, T.F32, T.F64)
NARROW_FLOATS = frozenset(t for t in T.ALL_TYPES if t.is_floating and t not in NATIVE_FLOATS)
COMPLEX_TYPES = frozenset({T.C64, T.C128})


@dataclass(frozen=True)
class Fallback:
    """``ops`` on ``types`` fall back to the interpreter, because of ``why``."""

    ops: frozenset[str]
    types: frozenset[ElementType]
    why: str


# Elementwise ops that compute on their operands' values (select and copy only move them;
# conversions have their own type rules in elemental_convert).
_COMPUTING = frozenset(n for n, info in OPCODES.items()
                       if info.elementwise in ("unary", "binary", "compare", "clamp"))

CPU_FALLBACK: tuple[Fallback, ...] = (
    Fallback(_COMPUTING, NARROW_FLOATS,
             "the f8 and f4 formats have no LLVM arithmetic and this emitter does not compute "
             "them through f16/f32 with XLA:CPU's double rounding (the interpreter does); "
             "kernels only move their bits"),
    Fallback(frozenset({"sign", "sqrt", "rsqrt", "exponential", "exponential-minus-one", "log",
                        "log-plus-one", "logistic", "sine", "cosine", "tan", "tanh", "acos",
                        "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh"}),
             COMPLEX_TYPES,
             "XLA's complex formulas with their inf/NaN/-0 rules (the interpreter's "
             "elementwise_complex) are not emitted yet"),
    Fallback(frozenset({"power", "atan2"}), COMPLEX_TYPES,
             "complex power and atan2 are built from complex log/exp/sqrt, which are not "
             "emitted yet"),
    # conversions: a pair falls back when its operand or its result type is listed
    Fallback(frozenset({"convert"}), NARROW_FLOATS,
             "converting to or from the f8/f4 formats needs their rounding and special "
             "values, which this emitter does not generate (the interpreter does)"),
    Fallback(frozenset({"bitcast-convert"}), COMPLEX_TYPES | {T.F4E2M1FN},
             "registers hold complex values as {re, im} structs and f4 values as "
             "floats, not as their bits"),
    Fallback(frozenset({"stochastic-convert"}),
             frozenset(t for t in T.ALL_TYPES if t.is_array_type),
             "XLA:CPU rewrites it into other ops first (StochasticConvertDecomposer); "
             "this backend has no such pass"),
)


def falls_back(op: str, et: ElementType) -> bool:
    """Whether ``op`` on ``et`` is in :data:`CPU_FALLBACK` (for a conversion: with ``et`` as
    its operand or its result type)."""
    return any(op in f.ops and et in f.types for f in CPU_FALLBACK)


def emits(op: str, et: ElementType) -> bool:
    """Whether the CPU backend emits a kernel for ``op`` on operands of ``et``: the op table
    accepts the pair and it is not a fallback."""
    return accepts(op, et.kind) and not falls_back(op, et)


__all__ = ["CPU_FALLBACK", "Fallback", "NATIVE_FLOATS", "NARROW_FLOATS", "emits", "falls_back"]
