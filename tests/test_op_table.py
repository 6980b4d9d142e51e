"""The op table (``xlapy.hlo.opcodes``) against every layer that reads it.

For every elementwise (op, element type) pair: the shape rule accepts it <=> the
interpreter computes it (a tiny module is run) <=> the CPU backend emits a kernel for it
(the IR is generated) or names it in its one fallback list (``backends/cpu/fallbacks.py``).
Then the traits the passes and emitters derive from the table, and the op/type
combination added last (complex ``cbrt``) end to end.
"""
from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir

import xlapy
from cpu_harness import run_native
from xlapy.backends.cpu import math_ir
from xlapy.backends.cpu.elemental import ElementalEmitter
from xlapy.backends.cpu.fallbacks import CPU_FALLBACK, falls_back
from xlapy.backends.cpu.llvm_types import llvm_type
from xlapy.backends.interpreter.evaluator import Evaluator
from xlapy.errors import InvalidArgumentError, ShapeError, VerificationError
from xlapy.hlo import parse_module
from xlapy.hlo import types as T
from xlapy.hlo.opcodes import OPCODES, accepts, ops_with
from xlapy.hlo.shape import Shape
from xlapy.hlo.shape_inference import infer_shape
from xlapy.hlo.shape_inference.elementwise import COMPARISON_TYPES
from xlapy.passes import fusion_utils, hlo_utils

TYPES = [t for t in T.ALL_TYPES if t.is_array_type]


def _cases() -> list[tuple[str, int, dict]]:
    """(opcode, arity, attributes) for every elementwise op that computes on one type."""
    cases = []
    for name, info in OPCODES.items():
        if info.elementwise in ("unary", "binary", "clamp", "select") and name not in (
                "complex", "reduce-precision"):
            cases.append((name, info.arity, {}))
    cases.append(("complex", 2, {}))
    cases.append(("reduce-precision", 1, {"exponent_bits": 5, "mantissa_bits": 10}))
    cases.append(("copy", 1, {}))
    for direction in ("EQ", "LT"):
        cases.append(("compare", 2, {"direction": direction}))
        for ctype in COMPARISON_TYPES:
            cases.append(("compare", 2, {"direction": direction, "type": ctype}))
    return cases


CASES = _cases()


def _attr_text(attrs: dict) -> str:
    return "".join(f", {k}={v}" for k, v in attrs.items())


def _operand_shapes(op: str, arity: int, et: T.ElementType) -> list[Shape]:
    if op == "select":
        return [Shape.array(T.PRED, (3,)), Shape.array(et, (3,)), Shape.array(et, (3,))]
    return [Shape.array(et, (3,))] * arity


def _module(op: str, attrs: dict, shapes: list[Shape], result: Shape):
    params = "\n".join(f"  p{i} = {s.to_text(print_layout=False)} parameter({i})"
                       for i, s in enumerate(shapes))
    operands = ", ".join(f"p{i}" for i in range(len(shapes)))
    return parse_module(f"HloModule m\n\nENTRY e {{\n{params}\n  ROOT r = "
                        f"{result.to_text(print_layout=False)} {op}({operands})"
                        f"{_attr_text(attrs)}\n}}\n")


def _args(shapes: list[Shape]) -> list[np.ndarray]:
    out = []
    for s in shapes:
        et = s.element_type
        if et.is_pred:
            out.append(np.array([True, False, True]))
        elif et.is_complex:
            out.append(np.array([1 + 2j, -0.5 + 1j, 3 - 1j], et.dtype))
        else:
            out.append(np.array([1, 2, 3]).astype(et.dtype))
    return out


def _emit_ir(root) -> str:
    """The CPU elemental IR of ``root`` on scalar operands (function arguments)."""
    module = ir.Module(name="m")
    fty = ir.FunctionType(llvm_type(root.shape.element_type),
                          [llvm_type(o.shape.element_type) for o in root.operands])
    fn = ir.Function(module, fty, name="f")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    gens = [(lambda index, a=a: a) for a in fn.args]
    builder.ret(ElementalEmitter(builder, module).generator(root, gens)([]))
    return str(module)


def _deciding_type(op: str, shapes: list[Shape]) -> T.ElementType:
    return shapes[OPCODES[op].kind_operand].element_type


@pytest.mark.parametrize("op,arity,attrs", CASES,
                         ids=[f"{c[0]}{_attr_text(c[2])}" for c in CASES])
def test_shape_rule_interpreter_and_cpu_agree(op, arity, attrs):
    disagreements = []
    for et in TYPES:
        shapes = _operand_shapes(op, arity, et)
        try:
            result = infer_shape(op, shapes, dict(attrs))
        except ShapeError:
            result = None
        if result is None:
            # rejected: an unverified module must not run either, nor have a kernel
            declared = Shape.array(T.PRED if op == "compare" else et, (3,))
            m = _module(op, attrs, shapes, declared)
            with pytest.raises(InvalidArgumentError):
                Evaluator(m).run(_args(shapes))
            if ElementalEmitter.supports(m.entry.root):
                disagreements.append(f"{et}: rejected by the shape rule but the CPU emits it")
            continue
        m = _module(op, attrs, shapes, result)
        try:
            value = Evaluator(m).run(_args(shapes))
        except InvalidArgumentError as e:
            disagreements.append(f"{et}: accepted by the shape rule, interpreter fails: {e}")
            continue
        assert np.asarray(value).dtype == result.element_type.dtype, (op, et)
        root = m.entry.root
        fallback = falls_back(op, _deciding_type(op, shapes))
        if ElementalEmitter.supports(root):
            if fallback:
                disagreements.append(f"{et}: in CPU_FALLBACK but the CPU emits it")
            assert "define" in _emit_ir(root)
        elif not fallback:
            disagreements.append(f"{et}: accepted, interpreted, but neither emitted by the CPU "
                                 "nor in CPU_FALLBACK")
    assert not disagreements, f"{op}{_attr_text(attrs)}:\n" + "\n".join(disagreements)


def _conversion_operands(op: str, frm: T.ElementType, to: T.ElementType) -> list[Shape] | None:
    dims = (3,)
    if op == "bitcast-convert" and 0 < frm.bits < to.bits:
        dims = (3, to.bits // frm.bits)
    shapes = [Shape.array(frm, dims)]
    if op == "stochastic-convert":
        bits = {8: T.U8, 16: T.U16, 32: T.U32, 64: T.U64}.get(frm.bits)
        if bits is None:
            return None
        shapes.append(Shape.array(bits, dims))
    return shapes


@pytest.mark.parametrize("op", ["convert", "bitcast-convert", "stochastic-convert"])
def test_conversions_agree(op):
    """Every (operand type, result type) the shape rule accepts is computed by the
    interpreter and emitted by the CPU backend unless either type is in its fallback list."""
    disagreements = []
    for frm in TYPES:
        for to in TYPES:
            shapes = _conversion_operands(op, frm, to)
            if shapes is None:
                continue
            try:
                result = infer_shape(op, shapes, {}, declared=Shape.array(to, (3,)))
            except ShapeError:
                continue
            m = _module(op, {}, shapes, result)
            args = [np.zeros(s.dims, s.element_type.dtype) for s in shapes]
            try:
                Evaluator(m).run(args)
            except InvalidArgumentError as e:
                disagreements.append(f"{frm}->{to}: interpreter fails: {e}")
                continue
            fallback = falls_back(op, frm) or falls_back(op, to)
            if ElementalEmitter.supports(m.entry.root) == fallback:
                disagreements.append(f"{frm}->{to}: CPU emits it: {not fallback}, "
                                     f"in CPU_FALLBACK: {fallback}")
    assert not disagreements, f"{op}:\n" + "\n".join(disagreements[:20])


def test_conversions_xla_rejects_are_rejected():
    with pytest.raises(ShapeError, match="complex and real"):
        infer_shape("bitcast-convert", [Shape.array(T.C64, (2,))], {},
                    declared=Shape.array(T.U64, (2,)))
    with pytest.raises(ShapeError, match="signed integers only"):
        infer_shape("stochastic-convert", [Shape.array(T.F32, (2,)), Shape.array(T.U32, (2,))],
                    {}, declared=Shape.array(T.U8, (2,)))


def test_every_fallback_entry_names_accepted_pairs_and_a_reason():
    for entry in CPU_FALLBACK:
        assert entry.why and entry.ops and entry.types
        assert all(op in OPCODES for op in entry.ops)
        assert any(accepts(op, t.kind) for op in entry.ops for t in entry.types), entry.why


def test_the_table_classifies_every_opcode_it_lists():
    for name, info in OPCODES.items():
        assert info.name == name
        assert info.kinds and info.kinds <= {"pred", "s", "u", "f", "c"}
        assert info.cost in {"cheap", "expensive", "expensive-if-complex",
                             "cheap-if-integer-by-constant", "expensive-if-f32-to-bf16"}
        assert info.effect in {"", "always", "async", "channel", "attribute", "ordering"}
        assert not info.math or info.family == "elementwise"
    assert ops_with(elementwise="unary") >= {"cbrt", "exponential", "not"}
    assert OPCODES["exponential"].transcendental and not OPCODES["sqrt"].transcendental


def test_passes_and_emitters_derive_their_sets_from_the_table():
    assert math_ir.LIBM_BINARY == {"atan2", "pow"}
    assert {"exp", "cbrt", "acosh"} <= math_ir.LIBM_UNARY and "logistic" not in math_ir.LIBM_UNARY
    assert hlo_utils.SIDE_EFFECT_OPCODES == ops_with(effect="always") | ops_with(effect="async")
    assert "copy-start" not in fusion_utils._SIDE_EFFECT_OPS
    assert {"after-all", "all-reduce", "rng"} <= fusion_utils._SIDE_EFFECT_OPS
    m = parse_module("HloModule m\n\nENTRY e {\n  a = f32[4] parameter(0)\n"
                     "  z = c64[4] parameter(1)\n  e = f32[4] exponential(a)\n"
                     "  s = f32[4] sine(a)\n  sz = c64[4] sine(z)\n  n = f32[4] negate(a)\n"
                     "  ROOT t = (f32[4], f32[4], c64[4], f32[4]) tuple(e, s, sz, n)\n}\n")
    expensive = {i.name: fusion_utils.is_expensive(i) for i in m.entry.instructions}
    assert expensive["e"] and not expensive["s"] and expensive["sz"] and not expensive["n"]


CBRT = "HloModule m\n\nENTRY e {\n  p0 = %s[8] parameter(0)\n  ROOT r = %s[8] cbrt(p0)\n}\n"


@pytest.mark.parametrize("t,dtype,rtol", [("c64", np.complex64, 2e-6),
                                          ("c128", np.complex128, 1e-14)])
def test_complex_cbrt_end_to_end(t, dtype, rtol):
    z = np.array([8, -8j, 1 + 1j, -27, 0, -1e-3 + 2e3j, 0.5 - 0.25j, -3 - 4j], dtype)
    text = CBRT % (t, t)
    interp = xlapy.run_hlo(text, [z], backend="interpreter")[0]
    want = np.power(z.astype(np.complex128), 1 / 3)      # the principal root, as XLA's formula
    np.testing.assert_allclose(interp, want.astype(dtype), rtol=rtol, atol=0)
    assert interp[4] == 0
    native = run_native(parse_module(text), [z])
    np.testing.assert_allclose(native, interp, rtol=4 * rtol, atol=0)
    cpu = xlapy.run_hlo(text, [z], backend="cpu")[0]
    np.testing.assert_allclose(cpu, interp, rtol=4 * rtol, atol=0)


def test_rejected_pairs_are_reported_at_their_line_and_column():
    text = ("HloModule m\n\nENTRY e {\n  p0 = c64[2] parameter(0)\n"
            "  ROOT r = c64[2] maximum(p0, p0)\n}\n")
    with pytest.raises(VerificationError, match=r"5:\d+: e/r: maximum: operand c64\[2\]"):
        xlapy.run_hlo(text, [np.ones(2, np.complex64)], backend="interpreter")
