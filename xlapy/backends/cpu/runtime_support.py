"""Compiler-runtime functions the generated code may call, defined by the backend itself.

LLVM lowers a few operations to calls into the compiler runtime (``libgcc`` /
``compiler-rt``) when the host has no instruction for them. The one the CPU backend
meets is ``__truncdfhf2``, ``double`` -> ``half`` rounding: x86 converts ``float`` ->
``half`` in hardware (F16C) but not ``double`` -> ``half``, and LLVM may narrow a float
chain ending in ``half`` into one such truncation (an f16 ``atan2``, computed in double).
HLO's own ``convert`` f64 -> f16 rounds through f32 as XLA:CPU does
(``elemental_convert.py``), so it does not call it. Only libgcc from GCC 12 on exports
the function; rather than depend on the process having it loaded, the backend compiles
its own definition once per process (integer operations on the bits, rounding to
nearest even once, as the runtime function is specified) and links it into every
library it loads (:meth:`~xlapy.backends.cpu.jit_engine.JitEngine.load`). Ahead-of-time
objects leave the symbol to the linker: libgcc (GCC 12 on) and compiler-rt define it.
"""
from __future__ import annotations

from llvmlite import ir

from .llvm_types import F16, F64

I16, I64 = ir.IntType(16), ir.IntType(64)

TRUNC_DF_HF = "__truncdfhf2"


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _round_shifted(b: ir.IRBuilder, m: ir.Value, shift: ir.Value) -> ir.Value:
    """``m >> shift`` rounded to nearest, ties to even (``1 <= shift <= 63``)."""
    q = b.lshr(m, shift)
    rem = b.and_(m, b.sub(b.shl(_c(1), shift), _c(1)))
    half = b.shl(_c(1), b.sub(shift, _c(1)))
    up = b.or_(b.icmp_unsigned(">", rem, half),
               b.and_(b.icmp_unsigned("==", rem, half), b.trunc(q, ir.IntType(1))))
    return b.add(q, b.zext(up, I64))


def emit_truncdfhf2(module: ir.Module) -> ir.Function:
    """Define ``half __truncdfhf2(double)`` in ``module``."""
    fn = ir.Function(module, ir.FunctionType(F16, [F64]), name=TRUNC_DF_HF)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x = b.bitcast(fn.args[0], I64)
    sign = b.and_(b.lshr(x, _c(48)), _c(0x8000))
    a = b.and_(x, _c(0x7FFF_FFFF_FFFF_FFFF))
    exp = b.lshr(a, _c(52))
    mant = b.and_(a, _c((1 << 52) - 1))
    # NaN: quiet, the top payload bits kept (as NumPy); too large (>= 65520): infinity.
    nan = b.or_(_c(0x7E00), b.and_(b.lshr(mant, _c(42)), _c(0x1FF)))
    # Normal halves (exp >= 1009, i.e. >= 2^-14): rebias and round the 42 dropped bits;
    # a carry out of the mantissa correctly steps the exponent.
    normal = _round_shifted(b, b.or_(b.shl(b.sub(exp, _c(1008)), _c(52)), mant), _c(42))
    # Subnormal halves (units of 2^-24): the full significand shifted by 1051 - exp.
    shift = b.select(b.icmp_unsigned(">", b.sub(_c(1051), exp), _c(63)), _c(63),
                     b.sub(_c(1051), exp))
    sub = _round_shifted(b, b.or_(mant, _c(1 << 52)), shift)
    sub = b.select(b.icmp_unsigned("==", exp, _c(0)), _c(0), sub)    # double subnormals
    bits = b.select(b.icmp_unsigned(">=", exp, _c(1009)), normal, sub)
    bits = b.select(b.icmp_unsigned(">=", a, _c(0x40EFFE0000000000)), _c(0x7C00), bits)
    bits = b.select(b.icmp_unsigned(">", a, _c(0x7FF0_0000_0000_0000)), nan, bits)
    b.ret(b.bitcast(b.trunc(b.or_(bits, sign), I16), F16))
    return fn


__all__ = ["emit_truncdfhf2", "TRUNC_DF_HF"]
