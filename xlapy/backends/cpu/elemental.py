"""The elemental IR emitter: an LLVM IR generator for each element of an HLO instruction.

``ElementalEmitter(builder, module).generator(instr, operand_generators)`` returns a
:data:`~.kernel_api.Generator`: called with an ``IrIndex`` of ``instr``'s logical shape
(one ``i64`` per dimension, ``[]`` for a scalar) it emits, at the builder's insertion
point, the IR computing that element from the operands' generators, and returns it as
a register value (types: :mod:`.llvm_types`). A generator may add basic blocks
(``concatenate``, ``pad``, ``dynamic-update-slice``); it returns with the builder at the
end of the block where its value is available, and it expects the builder to append at
the end of its current block. Each generator computes an element once per
block and index, and evaluates a chain of elementwise ops without nesting Python calls
(``ElementalEmitter._chained``). :meth:`ElementalEmitter.supports` says whether an
instruction has a generator; the runtime runs anything else through the interpreter.

Semantics are XLA:CPU's, checked bit for bit against jaxlib's XLA:CPU in
``tests/test_cpu_elemental_xla.py`` (and against the interpreter elsewhere):

- floating point is plain IEEE arithmetic with no fast-math flags; ``maximum`` and
  ``minimum`` propagate NaN and order ``-0 < +0`` (``llvm.maximum``/``llvm.minimum``);
  f16 and bf16 are computed in f32 and rounded back to nearest even;
- integers wrap; ``x / 0`` is ``-1`` (all ones), ``INT_MIN / -1`` is ``INT_MIN``,
  ``x % 0`` is ``x``, ``INT_MIN % -1`` is ``0``; shift amounts are unsigned and amounts
  ``>=`` the bit width give 0 (or the sign fill for ``shift-right-arithmetic``);
  integer ``power`` squares over the exponent's low 6 bits as XLA:CPU does, and an
  exponent with its top bit set (read as signed, whatever the type) gives 1 for base 1,
  +-1 (by parity) for base -1 (all ones), else 0;
- transcendental functions of f32 are inline IR (:mod:`.math_ir`), of f64 libm calls;
- XLA:CPU lets LLVM contract ``a*b + c`` into an FMA; this emitter does not (so
  results can differ from XLA:CPU's in the last bit where XLA fused).

Conversions and the data-movement ops are in :mod:`.elemental_convert`,
:mod:`.elemental_data` and :mod:`.elemental_slicing`, which register their handlers here;
complex arithmetic is in :mod:`.elemental_complex`.

Which (op, element type) pairs have generators comes from the op table
(``OpInfo.kinds``) minus the backend's fallback list (:mod:`.fallbacks`: f8/f4
arithmetic and conversions (moving them is supported), the complex transcendentals,
complex ``power`` and ``atan2``, complex and f4 ``bitcast-convert``,
``stochastic-convert``). Also not supported (``supports()`` is False, the runtime falls
back to the interpreter): ``bitcast`` between element types of different widths or with
tiled layouts; tuple- or token-shaped values; ``map``, ``scatter``, ``reduce*``, ``dot``,
``convolution`` and the other non-elemental ops.
"""
from __future__ import annotations

from typing import Callable, Sequence

from llvmlite import ir

from ...errors import InvalidArgumentError, UnimplementedError
from ...hlo import types as T
from ...hlo.ir import HloInstruction
from ...hlo.opcodes import BINARY, OPCODES, UNARY
from ...hlo.shape_inference.elementwise import COMPARISON_KINDS, default_comparison_type
from ...hlo.types import ElementType
from . import math_ir
from .elemental_complex import complex_binary, complex_unary, complex_value
from .fallbacks import NATIVE_FLOATS, emits
from .kernel_api import Generator, IrIndex, memoize
from .llvm_types import (I1, call_intrinsic, compute_type, from_compute, int_constant,
                         llvm_type, to_compute)

EmitFn = Callable[["ElementalEmitter", HloInstruction, list], Generator]
SupportFn = Callable[[HloInstruction], bool]
_EMITTERS: dict[str, EmitFn] = {}
_SUPPORTS: dict[str, SupportFn] = {}


def elemental(*opcodes: str, supports: SupportFn) -> Callable[[EmitFn], EmitFn]:
    """Register ``fn(emitter, instr, operand_generators) -> Generator`` for ``opcodes``."""
    def register(fn: EmitFn) -> EmitFn:
        for op in opcodes:
            _EMITTERS[op] = fn
            _SUPPORTS[op] = supports
        return fn
    return register


def _is_same_index(instr: HloInstruction) -> bool:
    """Whether ``instr`` reads each operand of its own dims at the index it is asked for
    (the elementwise family: unary, binary, compare, select, clamp, convert, copy ...)."""
    info = OPCODES.get(instr.opcode)
    return info is not None and info.family == "elementwise"


def operand_type(instr: HloInstruction, i: int = 0) -> ElementType:
    return instr.operands[i].shape.element_type


def is_native_float(et: ElementType) -> bool:
    return et in NATIVE_FLOATS


def _emits(instr: HloInstruction, i: int = 0) -> bool:
    """Whether this backend emits ``instr``'s opcode on operand ``i``'s element type."""
    return emits(instr.opcode, operand_type(instr, i))


class ElementalEmitter:
    """Builds element generators for HLO instructions into ``module`` with ``builder``."""

    def __init__(self, builder: ir.IRBuilder, module: ir.Module) -> None:
        self.builder = builder
        self.module = module
        # id(chaining generator) -> (instr, operand generators, memoized generator, itself)
        self._chain_info: dict[int, tuple] = {}

    @staticmethod
    def supports(instr: HloInstruction) -> bool:
        """Whether :meth:`generator` handles ``instr`` (opcode, element types, attributes)."""
        rule = _SUPPORTS.get(instr.opcode)
        if rule is None or not instr.shape.is_array:
            return False
        if any(not op.shape.is_array for op in instr.operands):
            return False
        return bool(rule(instr))

    def generator(self, instr: HloInstruction, operand_generators: Sequence[Generator]
                  ) -> Generator:
        """The element generator of ``instr`` given one generator per operand."""
        if len(operand_generators) != len(instr.operands):
            raise InvalidArgumentError(
                f"{instr.opcode} {instr.name} has {len(instr.operands)} operands, got "
                f"{len(operand_generators)} operand generators")
        if not self.supports(instr):
            raise UnimplementedError(
                f"the CPU elemental emitter does not handle {instr.opcode} "
                f"({', '.join(str(o.shape) for o in instr.operands)}) -> {instr.shape} "
                f"in instruction {instr.name}")
        raw = _EMITTERS[instr.opcode](self, instr, list(operand_generators))
        return self._chained(instr, raw, list(operand_generators))

    def _chained(self, instr: HloInstruction, raw: Generator, operands: list[Generator]
                 ) -> Generator:
        """``raw`` memoized, and evaluated without recursing along elementwise chains.

        In a fused computation an instruction with several users is asked for the same
        element by each of them: computing it once per block keeps the IR linear. A
        generator calls its operands' generators, so a chain of N elementwise ops would
        nest N Python calls deep; instead, the first call of a generator whose element is
        not yet computed in this block first computes, in post order, every value of its
        *same-index closure* (operands an elementwise op reads at its own index, and
        theirs, ...), so each nested call finds its operands computed and returns at once.
        """
        cached = memoize(self.builder, raw)
        closure: list[Generator] | None = None

        def element(index: IrIndex) -> ir.Value:
            nonlocal closure
            value = cached.lookup(index)
            if value is not None:
                return value
            if closure is None:
                closure = self._same_index_closure(instr, operands)
            for dep in closure:
                dep(index)
            return cached(index)

        self._chain_info[id(element)] = (instr, operands, cached, element)
        return element

    def _same_index_closure(self, instr: HloInstruction, operands: list[Generator]
                            ) -> list[Generator]:
        """The memoized generators (not the chaining ones) of the values an elementwise
        ``instr`` reads at its own index, transitively, in post order (operands first)."""
        order: list[Generator] = []
        seen: set[int] = set()

        def same_index_operands(i: HloInstruction, gens: list[Generator]) -> list:
            if not _is_same_index(i):
                return []
            return [(self._chain_info[id(g)]) for o, g in zip(i.operands, gens)
                    if o.shape.dims == i.shape.dims and id(g) in self._chain_info]
        stack = [(info, False) for info in same_index_operands(instr, operands)]
        while stack:
            info, ready = stack.pop()
            key = id(info[3])
            if ready:
                order.append(info[2])
                continue
            if key in seen:
                continue
            seen.add(key)
            stack.append((info, True))
            stack.extend((dep, False) for dep in reversed(same_index_operands(info[0], info[1]))
                         if id(dep[3]) not in seen)
        return order

    # ----- helpers shared by the handler modules
    def i64(self, value: int) -> ir.Constant:
        return ir.Constant(ir.IntType(64), value)

    def scalar_or_indexed(self, instr: HloInstruction, i: int, gen: Generator,
                          index: IrIndex) -> ir.Value:
        """Operand ``i``'s element at ``index``, or its only element if it is a scalar."""
        if instr.operands[i].shape.rank == 0:
            return gen([])
        return gen(index)


# ----------------------------------------------------------------------------------------------
# unary

# The math-library function of each transcendental unary op (the op table's ``math``).
_FLOAT_MATH_UNARY = {op: OPCODES[op].math for op in UNARY if OPCODES[op].math}
_FLOAT_INTRINSIC_UNARY = {"floor": "llvm.floor", "ceil": "llvm.ceil", "sqrt": "llvm.sqrt",
                          "abs": "llvm.fabs", "round-nearest-afz": "llvm.round",
                          "round-nearest-even": "llvm.roundeven"}
UNARY_OPS = frozenset(UNARY)


def float_unary(b: ir.IRBuilder, op: str, x: ir.Value) -> ir.Value:
    """``op`` on a float/double value (the compute type)."""
    ty = x.type
    if op in _FLOAT_INTRINSIC_UNARY:
        return call_intrinsic(b, _FLOAT_INTRINSIC_UNARY[op], [x])
    if op in _FLOAT_MATH_UNARY:
        return math_ir.emit_unary(b, _FLOAT_MATH_UNARY[op], x)
    if op == "negate":
        return b.fneg(x)
    if op == "rsqrt":
        return b.fdiv(ir.Constant(ty, 1.0), call_intrinsic(b, "llvm.sqrt", [x]))
    if op == "sign":
        one = call_intrinsic(b, "llvm.copysign", [ir.Constant(ty, 1.0), x])
        keep = b.fcmp_unordered("ueq", x, ir.Constant(ty, 0.0))       # +-0 and NaN
        return b.select(keep, x, one)
    if op == "real":
        return x
    if op == "imag":
        return ir.Constant(ty, 0.0)
    raise UnimplementedError(f"float unary op {op}")


def int_unary(b: ir.IRBuilder, op: str, x: ir.Value, signed: bool) -> ir.Value:
    """``op`` on an integer (or ``i1`` pred) value."""
    ty = x.type
    zero = ir.Constant(ty, 0)
    if op == "negate":
        return b.sub(zero, x)
    if op == "abs":
        if not signed:
            return x
        return call_intrinsic(b, "llvm.abs", [x], extra=[ir.Constant(I1, 0)])
    if op == "sign":
        if not signed:
            return b.zext(b.icmp_unsigned("!=", x, zero), ty)
        pos = b.zext(b.icmp_signed(">", x, zero), ty)
        neg = b.zext(b.icmp_signed("<", x, zero), ty)
        return b.sub(pos, neg)
    if op == "not":
        return b.xor(x, int_constant(ty, -1))
    if op == "popcnt":
        return call_intrinsic(b, "llvm.ctpop", [x])
    if op == "count-leading-zeros":
        return call_intrinsic(b, "llvm.ctlz", [x], extra=[ir.Constant(I1, 0)])
    raise UnimplementedError(f"integer unary op {op}")


@elemental(*UNARY_OPS, supports=_emits)
def _unary(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    b, op, et = em.builder, instr.opcode, operand_type(instr)
    out = instr.shape.element_type
    (gen,) = gens

    def element(index: IrIndex) -> ir.Value:
        x = gen(index)
        if et.is_complex:
            return complex_unary(b, op, x, et)
        if et.is_pred or et.is_integral:
            return int_unary(b, op, x, et.is_signed_integral)
        if op == "is-finite":
            ax = call_intrinsic(b, "llvm.fabs", [to_compute(b, x, et)])
            return b.fcmp_ordered("<", ax, ir.Constant(compute_type(et), float("inf")))
        return from_compute(b, float_unary(b, op, to_compute(b, x, et)), out)
    return element


# ----------------------------------------------------------------------------------------------
# binary

_PRED_BINARY = {"add": "or", "maximum": "or", "or": "or", "multiply": "and",
                "minimum": "and", "and": "and", "xor": "xor"}
BINARY_OPS = frozenset(BINARY) - {"complex"}


def float_binary(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """``op`` on two float/double values (the compute type)."""
    if op == "add":
        return b.fadd(x, y)
    if op == "subtract":
        return b.fsub(x, y)
    if op == "multiply":
        return b.fmul(x, y)
    if op == "divide":
        return b.fdiv(x, y)
    if op == "remainder":
        return b.frem(x, y)
    if op == "maximum":
        return call_intrinsic(b, "llvm.maximum", [x, y])
    if op == "minimum":
        return call_intrinsic(b, "llvm.minimum", [x, y])
    if op == "power":
        return math_ir.emit_binary(b, "pow", x, y)
    if op == "atan2":
        return math_ir.emit_binary(b, "atan2", x, y)
    raise UnimplementedError(f"float binary op {op}")


def int_binary(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
    """``op`` on two integers of one type, with XLA's results for the undefined C cases."""
    ty = x.type
    if op in ("add", "subtract", "multiply", "and", "or", "xor"):
        name = {"add": "add", "subtract": "sub", "multiply": "mul", "and": "and_",
                "or": "or_", "xor": "xor"}[op]
        return getattr(b, name)(x, y)
    if op in ("maximum", "minimum"):
        name = ("llvm.smax" if op == "maximum" else "llvm.smin") if signed else (
            "llvm.umax" if op == "maximum" else "llvm.umin")
        return call_intrinsic(b, name, [x, y])
    if op in ("divide", "remainder"):
        return _int_divide(b, op, x, y, signed)
    if op.startswith("shift-"):
        return _int_shift(b, op, x, y)
    if op == "mulhi":
        wide = ir.IntType(2 * ty.width)
        ext = b.sext if signed else b.zext
        prod = b.mul(ext(x, wide), ext(y, wide))
        return b.trunc(b.lshr(prod, ir.Constant(wide, ty.width)), ty)
    if op == "power":
        return _int_power(b, x, y)
    raise UnimplementedError(f"integer binary op {op}")


def _int_divide(b: ir.IRBuilder, op: str, x, y, signed: bool) -> ir.Value:
    ty = x.type
    zero, one, minus_one = ir.Constant(ty, 0), ir.Constant(ty, 1), int_constant(ty, -1)
    by_zero = b.icmp_unsigned("==", y, zero)
    if signed:
        int_min = int_constant(ty, 1 << (ty.width - 1))
        overflow = b.and_(b.icmp_signed("==", x, int_min), b.icmp_signed("==", y, minus_one))
        safe = b.select(b.or_(by_zero, overflow), one, y)
        if op == "divide":
            q = b.select(overflow, int_min, b.sdiv(x, safe))
            return b.select(by_zero, minus_one, q)
        return b.select(by_zero, x, b.srem(x, safe))            # INT_MIN % 1 == 0
    safe = b.select(by_zero, one, y)
    if op == "divide":
        return b.select(by_zero, minus_one, b.udiv(x, safe))
    return b.select(by_zero, x, b.urem(x, safe))


def _int_shift(b: ir.IRBuilder, op: str, x, y) -> ir.Value:
    ty = x.type
    too_big = b.icmp_unsigned(">=", y, ir.Constant(ty, ty.width))
    if op == "shift-right-arithmetic":
        return b.ashr(x, b.select(too_big, ir.Constant(ty, ty.width - 1), y))
    safe = b.select(too_big, ir.Constant(ty, 0), y)
    shifted = b.shl(x, safe) if op == "shift-left" else b.lshr(x, safe)
    return b.select(too_big, ir.Constant(ty, 0), shifted)


def _int_power(b: ir.IRBuilder, x, y) -> ir.Value:
    """XLA:CPU's integer power: squaring over the exponent's low 6 bits (wrapping).

    Only bits 0..5 of the exponent are used (as XLA does; any larger exponent overflows
    for |base| > 1 anyway). An exponent whose top bit is set (negative, also for unsigned
    types, as in XLA) gives 1 for base 1, +-1 by parity for base -1 (all ones) and 0
    otherwise.
    """
    ty = x.type
    zero, one = ir.Constant(ty, 0), ir.Constant(ty, 1)
    acc, base, e = one, x, y
    for _ in range(min(6, ty.width)):
        odd = b.trunc(e, I1)
        acc = b.select(odd, b.mul(acc, base), acc)
        base = b.mul(base, base)
        e = b.lshr(e, one)
    minus_one = int_constant(ty, -1)
    y_odd = b.trunc(y, I1)
    for_minus_one = b.select(y_odd, minus_one, one)
    special = b.select(b.icmp_signed("==", x, one), one,
                       b.select(b.icmp_signed("==", x, minus_one), for_minus_one, zero))
    return b.select(b.icmp_signed("<", y, zero), special, acc)


@elemental(*BINARY_OPS, supports=_emits)
def _binary(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    b, op, et = em.builder, instr.opcode, operand_type(instr)
    lhs, rhs = gens

    def element(index: IrIndex) -> ir.Value:
        x, y = lhs(index), rhs(index)
        if et.is_pred:          # i1 logic: the op's or/and/xor
            return int_binary(b, _PRED_BINARY[op], x, y, False)
        if et.is_integral:
            return int_binary(b, op, x, y, et.is_signed_integral)
        if et.is_complex:
            return complex_binary(b, op, x, y)
        r = float_binary(b, op, to_compute(b, x, et), to_compute(b, y, et))
        return from_compute(b, r, et)
    return element


@elemental("complex", supports=lambda instr: operand_type(instr) in (T.F32, T.F64)
           and _emits(instr))
def _complex(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    ty = llvm_type(instr.shape.element_type)
    re, im = gens
    return lambda index: complex_value(em.builder, ty, re(index), im(index))


# ----------------------------------------------------------------------------------------------
# compare, select, clamp

_FCMP = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}


def comparison_type(instr: HloInstruction) -> str:
    """``type=`` of a compare, or its default for the operand element type."""
    ctype = instr.attrs.get("type")
    if ctype:
        return str(ctype).upper()
    return default_comparison_type(operand_type(instr))


def _supports_compare(instr: HloInstruction) -> bool:
    et = operand_type(instr)
    direction = str(instr.attrs.get("direction", "")).upper()
    if direction not in _FCMP:
        return False
    if et.kind not in COMPARISON_KINDS.get(comparison_type(instr), ()):
        return False
    return _emits(instr) and (not et.is_complex or direction in ("EQ", "NE"))


def total_order_key(b: ir.IRBuilder, x: ir.Value, et: ElementType) -> ir.Value:
    """A signed integer whose order is XLA's float total order (-NaN < -inf < -0 < +0 < NaN)."""
    ity = ir.IntType(et.bits)
    bits = b.bitcast(x, ity)
    sign_fill = b.ashr(bits, ir.Constant(ity, et.bits - 1))
    return b.xor(bits, b.lshr(sign_fill, ir.Constant(ity, 1)))


@elemental("compare", supports=_supports_compare)
def _compare(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    b, et = em.builder, operand_type(instr)
    direction = str(instr.attrs["direction"]).upper()
    ctype = comparison_type(instr)
    lhs, rhs = gens
    sym = _FCMP[direction]

    def element(index: IrIndex) -> ir.Value:
        x, y = lhs(index), rhs(index)
        if et.is_complex:
            eq = b.and_(b.fcmp_ordered("==", b.extract_value(x, 0), b.extract_value(y, 0)),
                        b.fcmp_ordered("==", b.extract_value(x, 1), b.extract_value(y, 1)))
            return eq if direction == "EQ" else b.not_(eq)
        if is_native_float(et):
            if ctype == "TOTALORDER":
                return b.icmp_signed(sym, total_order_key(b, x, et),
                                     total_order_key(b, y, et))
            x, y = to_compute(b, x, et), to_compute(b, y, et)
            if direction == "NE":
                return b.fcmp_unordered("!=", x, y)
            return b.fcmp_ordered(sym, x, y)
        signed = not et.is_pred and (
            ctype == "SIGNED" or (ctype == "TOTALORDER" and et.is_signed_integral))
        return b.icmp_signed(sym, x, y) if signed else b.icmp_unsigned(sym, x, y)
    return element


@elemental("select", supports=lambda instr: operand_type(instr).is_pred)
def _select(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    b = em.builder
    pred, on_true, on_false = gens

    def element(index: IrIndex) -> ir.Value:
        p = em.scalar_or_indexed(instr, 0, pred, index)
        return b.select(p, em.scalar_or_indexed(instr, 1, on_true, index),
                        em.scalar_or_indexed(instr, 2, on_false, index))
    return element


@elemental("clamp", supports=lambda instr: _emits(instr, 1))
def _clamp(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    b, et = em.builder, operand_type(instr, 1)
    lo_gen, x_gen, hi_gen = gens

    def element(index: IrIndex) -> ir.Value:
        lo = em.scalar_or_indexed(instr, 0, lo_gen, index)
        x = em.scalar_or_indexed(instr, 1, x_gen, index)
        hi = em.scalar_or_indexed(instr, 2, hi_gen, index)
        if et.is_pred:
            return b.and_(b.or_(x, lo), hi)
        if et.is_integral:
            return int_binary(b, "minimum", int_binary(b, "maximum", x, lo,
                                                       et.is_signed_integral),
                              hi, et.is_signed_integral)
        x, lo, hi = (to_compute(b, v, et) for v in (x, lo, hi))
        r = float_binary(b, "minimum", float_binary(b, "maximum", x, lo), hi)
        return from_compute(b, r, et)
    return element


@elemental("copy", supports=lambda instr: True)
def _copy(em: ElementalEmitter, instr: HloInstruction, gens: list) -> Generator:
    return gens[0]


from . import elemental_convert, elemental_data  # noqa: E402,F401  (register their handlers)

__all__ = ["ElementalEmitter", "elemental", "float_unary", "float_binary", "int_unary",
           "int_binary", "total_order_key", "comparison_type", "operand_type", "is_native_float"]
