"""The CPU-feature check at the top of an x86-64 ahead-of-time object's ``NAME_run``.

An object compiled for ``x86-64-v3`` or ``native`` may contain AVX2/FMA/AVX-512
instructions; on a CPU without them it would die of an illegal instruction. The entry
function ``NAME_run`` is therefore a small wrapper: it asks ``cpuid`` (and ``xgetbv``: the
operating system must save the AVX / AVX-512 registers) for every feature the object
was compiled with that appears in :data:`CPUID_BITS`, returns the code of the first one
missing -- ``NAME_error_message`` names it -- and otherwise calls the real entry (kept
out of line, so none of its instructions run before the check). The answer is cached in
a global after the first call (``cpuid`` traps to the hypervisor in virtual machines).

Feature names are LLVM's. A named CPU's implied features come from
:data:`LEVEL_FEATURES` for the x86-64 micro-architecture levels; for ``native`` the
host's feature string lists them all. Other architectures are not checked.
"""
from __future__ import annotations

from llvmlite import ir

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)

# LLVM feature -> (cpuid leaf, register index in (eax, ebx, ecx, edx), bit)
CPUID_BITS = {
    "sse3": (1, 2, 0), "ssse3": (1, 2, 9), "fma": (1, 2, 12), "sse4.1": (1, 2, 19),
    "sse4.2": (1, 2, 20), "movbe": (1, 2, 22), "popcnt": (1, 2, 23), "avx": (1, 2, 28),
    "f16c": (1, 2, 29), "bmi": (7, 1, 3), "avx2": (7, 1, 5), "bmi2": (7, 1, 8),
    "avx512f": (7, 1, 16), "avx512dq": (7, 1, 17), "avx512cd": (7, 1, 28),
    "avx512bw": (7, 1, 30), "avx512vl": (7, 1, 31), "sha": (7, 1, 29),
    "avx512vp2intersect": (7, 3, 8), "avx512fp16": (7, 3, 23), "amx-tile": (7, 3, 24),
    "lzcnt": (0x80000001, 2, 5),
}
_V2 = ["sse3", "ssse3", "sse4.1", "sse4.2", "popcnt"]
_V3 = _V2 + ["avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe"]
LEVEL_FEATURES = {"x86-64": [], "x86-64-v2": _V2, "x86-64-v3": _V3,
                  "x86-64-v4": _V3 + ["avx512f", "avx512bw", "avx512cd", "avx512dq",
                                      "avx512vl"]}


def required_features(cpu: str, features: str) -> list[str]:
    """The checkable features an object for ``cpu`` + ``features`` may use."""
    wanted = list(LEVEL_FEATURES.get(cpu, []))
    for f in features.split(","):
        f = f.strip()
        if f.startswith("+") and f[1:] in CPUID_BITS and f[1:] not in wanted:
            wanted.append(f[1:])
        elif f.startswith("-") and f[1:] in wanted:
            wanted.remove(f[1:])
    return wanted


def _cpuid(b: ir.IRBuilder, leaf: int) -> list[ir.Value]:
    ty = ir.FunctionType(ir.LiteralStructType([I32] * 4), [I32, I32])
    asm = ir.InlineAsm(ty, "cpuid", "={ax},={bx},={cx},={dx},{ax},{cx}", side_effect=True)
    regs = b.call(asm, [ir.Constant(I32, leaf), ir.Constant(I32, 0)])
    return [b.extract_value(regs, k) for k in range(4)]


def _xgetbv(b: ir.IRBuilder) -> ir.Value:
    ty = ir.FunctionType(ir.LiteralStructType([I32, I32]), [I32])
    asm = ir.InlineAsm(ty, "xgetbv", "={ax},={dx},{cx}", side_effect=True)
    return b.extract_value(b.call(asm, [ir.Constant(I32, 0)]), 0)


def emit_feature_check(fn: ir.Function, b: ir.IRBuilder, features: list[str],
                       code_of: dict[str, int], os_avx_code: int) -> ir.Value:
    """At ``b``: the i32 code of the first missing feature (0 when all are present)."""
    leaves: dict[int, list[ir.Value]] = {}
    max_basic = _cpuid(b, 0)[0]
    max_ext = _cpuid(b, 0x80000000)[0]
    code: ir.Value = ir.Constant(I32, 0)
    checks: list[tuple[ir.Value, int]] = []
    for feat in features:
        leaf, reg, bit = CPUID_BITS[feat]
        if leaf not in leaves:
            leaves[leaf] = _cpuid(b, leaf)
        limit = max_ext if leaf >= 0x80000000 else max_basic
        listed = b.icmp_unsigned(">=", limit, ir.Constant(I32, leaf))
        has = b.icmp_unsigned("!=", b.and_(leaves[leaf][reg], ir.Constant(I32, 1 << bit)),
                              ir.Constant(I32, 0))
        checks.append((b.and_(listed, has), code_of[feat]))
    if any(f.startswith("avx") or f in ("fma", "f16c") for f in features):
        osxsave = b.icmp_unsigned("!=", b.and_(_cpuid(b, 1)[2], ir.Constant(I32, 1 << 27)),
                                  ir.Constant(I32, 0))
        mask = 0xE6 if any(f.startswith("avx512") for f in features) else 0x6
        # xgetbv only runs when OSXSAVE says it exists
        pre = b.block
        ask = fn.append_basic_block("xgetbv")
        join = fn.append_basic_block("xgetbv.done")
        b.cbranch(osxsave, ask, join)
        b.position_at_end(ask)
        xcr0 = _xgetbv(b)
        saved = b.icmp_unsigned("==", b.and_(xcr0, ir.Constant(I32, mask)),
                                ir.Constant(I32, mask))
        b.branch(join)
        b.position_at_end(join)
        ok = b.phi(I1)
        ok.add_incoming(ir.Constant(I1, 0), pre)
        ok.add_incoming(saved, ask)
        checks.insert(0, (ok, os_avx_code))
    for good, c in reversed(checks):
        code = b.select(good, code, ir.Constant(I32, c))
    return code


__all__ = ["CPUID_BITS", "LEVEL_FEATURES", "required_features", "emit_feature_check"]
