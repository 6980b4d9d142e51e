"""Element types in LLVM IR: register and storage types, loads, stores and constants.

In registers (what generators return) ``pred`` is ``i1``; ``s2``/``s4``/``u2``/``u4``
are ``i2``/``i4``; integers are ``iN``; ``f16`` is ``half``, ``f32``/``f64`` are
``float``/``double``; ``bf16`` is its ``i16`` bits and the f8/f4 types their ``i8`` bits;
``c64``/``c128`` are ``{float, float}``/``{double, double}`` (real, imaginary).

``bf16`` is not LLVM's ``bfloat``: x86 moves ``bfloat`` values through ``float`` registers
and back with ``vcvtneps2bf16`` (AVX512-BF16), which flushes denormals to zero, so a plain
copy or a sort changed bf16 denormals; and some ``bfloat`` operations do not legalize
(LLVM aborted compiling a small bf16 convolution). As bits, data movement is exact and
arithmetic goes through :func:`to_compute` / :func:`from_compute` like the f8 types'.

In memory every element is stored densely in its NumPy representation: ``pred`` is
one byte (0 or 1; any non-zero byte loads as true) and the sub-byte integer types
take one byte holding their low bits (what ``ml_dtypes`` stores).

``bf16`` and ``f16`` values are computed in ``float``: :func:`to_compute` widens
them exactly, :func:`from_compute` rounds to nearest even (NaN stays NaN).
"""
from __future__ import annotations

import struct
from typing import Sequence

import numpy as np
from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import types as T
from ...hlo.types import ElementType


I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()

_SMALL_FLOATS = frozenset({"f8e5m2", "f8e4m3", "f8e4m3fn", "f8e4m3b11fnuz", "f8e5m2fnuz",
                           "f8e4m3fnuz", "f8e3m4", "f4e2m1fn", "f8e8m0fnu"})


def llvm_type(et: ElementType) -> ir.Type:
    """The register type of one element of ``et`` (see the module docstring)."""
    if et.is_pred:
        return I1
    if et.is_integral:
        return ir.IntType(et.bits)
    if et is T.F16:
        return F16
    if et is T.BF16:
        return I16
    if et is T.F32:
        return F32
    if et is T.F64:
        return F64
    if et.name in _SMALL_FLOATS:
        return I8
    if et is T.C64:
        return ir.LiteralStructType([F32, F32])
    if et is T.C128:
        return ir.LiteralStructType([F64, F64])
    raise UnimplementedError(f"no LLVM register type for element type {et}")


def storage_type(et: ElementType) -> ir.Type:
    """The in-memory type of one element of ``et`` (``pred`` and sub-byte ints: ``i8``)."""
    if et.is_pred or (et.is_integral and et.bits < 8):
        return I8
    return llvm_type(et)


def from_storage(builder: ir.IRBuilder, raw: ir.Value, et: ElementType) -> ir.Value:
    """A value loaded from ``et``'s storage type as its register value (pred: i1; narrow
    integers: their own width)."""
    if et.is_pred:
        return builder.icmp_unsigned("!=", raw, ir.Constant(I8, 0))
    if et.is_integral and et.bits < 8:
        return builder.trunc(raw, ir.IntType(et.bits))
    return raw


def to_storage(builder: ir.IRBuilder, value: ir.Value, et: ElementType) -> ir.Value:
    """A register value of ``et`` as its storage value (:func:`from_storage` undone)."""
    if et.is_pred or (et.is_integral and et.bits < 8):
        return builder.zext(value, I8)
    return value


def load_element(builder: ir.IRBuilder, ptr: ir.Value, et: ElementType) -> ir.Value:
    """Load one element of ``et`` from ``ptr`` (a pointer to its storage type)."""
    return from_storage(builder, builder.load(ptr), et)


def store_element(builder: ir.IRBuilder, value: ir.Value, ptr: ir.Value,
                  et: ElementType) -> None:
    """Store a register value of ``et`` at ``ptr`` (a pointer to its storage type)."""
    builder.store(to_storage(builder, value, et), ptr)


# ----------------------------------------------------------------------------------------------
# constants

def _bits_of(value, et: ElementType) -> int:
    """The raw bit pattern of ``value`` converted to ``et``."""
    a = np.asarray(value).astype(et.dtype)
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return int(a.reshape(1).view(width)[0])


def _float_constant(ty: ir.Type, et: ElementType, value) -> ir.Constant:
    """A float constant that keeps the exact bits (NaN payloads, signed zeros)."""
    bits = _bits_of(value, et)
    if et is T.F64:
        return ir.Constant(F64, struct.unpack("<d", struct.pack("<Q", bits))[0])
    # float/half constants are written as the double with the same value; NaNs need
    # their payload carried to the double's top mantissa bits.
    x = float(np.asarray(value).astype(et.dtype).astype(np.float64))
    if np.isnan(x):
        mant_bits = {T.F32: 23, T.F16: 10}[et]
        sign = bits >> (et.bits - 1)
        payload = bits & ((1 << mant_bits) - 1)
        d = (sign << 63) | (0x7FF << 52) | (payload << (52 - mant_bits))
        x = struct.unpack("<d", struct.pack("<Q", d))[0]
    return ir.Constant(ty, x)


def constant(et: ElementType, value) -> ir.Constant:
    """An ``ir.Constant`` of ``et``'s register type from a Python or NumPy scalar."""
    ty = llvm_type(et)
    if et.is_pred:
        return ir.Constant(I1, int(bool(np.asarray(value))))
    if et.is_integral:
        v = int(np.asarray(value).astype(et.dtype).astype(np.int64 if et.is_signed_integral
                                                          else np.uint64))
        return ir.Constant(ty, v)
    if et is T.BF16:
        return ir.Constant(I16, _bits_of(value, et))
    if et in (T.F16, T.F32, T.F64):
        return _float_constant(ty, et, value)
    if et.name in _SMALL_FLOATS:
        return ir.Constant(I8, _bits_of(value, et))
    if et.is_complex:
        part = T.F32 if et is T.C64 else T.F64
        z = complex(np.asarray(value).astype(et.dtype))
        return ir.Constant(ty, [constant(part, z.real), constant(part, z.imag)])
    raise UnimplementedError(f"no LLVM constant for element type {et}")


def int_constant(ty: ir.Type, value: int) -> ir.Constant:
    """An integer constant of integer type ``ty`` (``value`` is wrapped to its width)."""
    return ir.Constant(ty, value & ((1 << ty.width) - 1))


def array_bytes_global(module: ir.Module, name: str, data: np.ndarray,
                       et: ElementType) -> ir.GlobalVariable:
    """A private constant global holding ``data`` (row-major) in ``et``'s storage format.

    The global is a byte array aligned to 64; callers bitcast it to ``storage_type*``.
    """
    a = np.ascontiguousarray(np.asarray(data).astype(et.dtype))
    raw = bytearray(a.tobytes())
    if et.is_pred:
        raw = bytearray(1 if b else 0 for b in raw)
    ty = ir.ArrayType(I8, len(raw))
    g = ir.GlobalVariable(module, ty, name=module.get_unique_name(name))
    g.global_constant = True
    g.linkage = "private"
    g.unnamed_addr = True
    g.align = 64
    g.initializer = ir.Constant(ty, raw)
    return g


# ----------------------------------------------------------------------------------------------
# compute types for narrow floats

def compute_type(et: ElementType) -> ir.Type:
    """The type arithmetic on ``et`` is done in: ``float`` for f16/bf16, else the register type."""
    if et in (T.F16, T.BF16):
        return F32
    return llvm_type(et)


def to_compute(builder: ir.IRBuilder, value: ir.Value, et: ElementType) -> ir.Value:
    """Widen a register value of ``et`` to its compute type (exact)."""
    if et is T.F16:
        return builder.fpext(value, F32)
    if et is T.BF16:
        return bf16_to_f32(builder, value)
    return value


def from_compute(builder: ir.IRBuilder, value: ir.Value, et: ElementType) -> ir.Value:
    """Round a compute-type value back to ``et`` (round to nearest even)."""
    if et is T.F16:
        return builder.fptrunc(value, F16)
    if et is T.BF16:
        return f32_to_bf16(builder, value)
    return value


def bf16_to_f32(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """bf16 bits (``i16``) -> ``float``: the 16 bits become the top half of the float."""
    bits = builder.zext(value, I32)
    return builder.bitcast(builder.shl(bits, ir.Constant(I32, 16)), F32)


def f32_to_bf16(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """``float`` -> bf16 bits (``i16``) rounding to nearest even; NaNs stay (quiet) NaNs."""
    bits = builder.bitcast(value, I32)
    lsb = builder.and_(builder.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = builder.add(bits, builder.add(lsb, ir.Constant(I32, 0x7FFF)))
    nan = builder.fcmp_unordered("uno", value, value)
    quiet = builder.or_(bits, ir.Constant(I32, 0x00400000))
    out = builder.select(nan, quiet, rounded)
    return builder.trunc(builder.lshr(out, ir.Constant(I32, 16)), I16)


# ----------------------------------------------------------------------------------------------
# intrinsics

def _mangle(ty: ir.Type) -> str:
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    return {"float": "f32", "double": "f64", "half": "f16"}[str(ty)]


def declare_function(module: ir.Module, name: str, ret: ir.Type,
                     args: Sequence[ir.Type]) -> ir.Function:
    """``module``'s function ``name`` (declared with the given type if not there yet)."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(ret, list(args)), name=name)


def call_intrinsic(builder: ir.IRBuilder, name: str, args: Sequence[ir.Value],
                   ret: ir.Type | None = None, overload: Sequence[ir.Type] | None = None,
                   extra: Sequence[ir.Value] = ()) -> ir.Value:
    """Call the LLVM intrinsic ``name`` overloaded on ``overload`` (default: the first
    argument's type), e.g. ``llvm.fabs.f32``; ``extra`` are trailing non-overloaded args."""
    module = builder.module
    types = list(overload) if overload is not None else [args[0].type]
    full = name + "".join("." + _mangle(t) for t in types)
    ret = ret if ret is not None else args[0].type
    fn = declare_function(module, full, ret, [a.type for a in list(args) + list(extra)])
    return builder.call(fn, list(args) + list(extra))


__all__ = ["llvm_type", "storage_type", "load_element", "store_element", "from_storage",
           "to_storage", "constant", "int_constant", "array_bytes_global", "compute_type",
           "to_compute", "from_compute", "bf16_to_f32", "f32_to_bf16",
           "declare_function", "call_intrinsic"]
