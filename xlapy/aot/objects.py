"""The target of an ahead-of-time object and LLVM IR -> relocatable object code."""
from __future__ import annotations

from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from ..backends.cpu.jit_engine import HostTarget, host_target
from ..backends.cpu.llvm_worker import optimize
from ..errors import InvalidArgumentError

OPT_LEVEL = 3


@dataclass(frozen=True)
class AotTarget(HostTarget):
    """Triple, CPU and features the object is compiled for (recorded in the metadata)."""

    def machine(self) -> "llvm.TargetMachine":
        try:
            target = llvm.Target.from_triple(self.triple)
        except RuntimeError as e:
            raise InvalidArgumentError(f"unknown target triple {self.triple!r}: {e}") from e
        return target.create_target_machine(cpu=self.cpu, features=self.features,
                                            opt=OPT_LEVEL, reloc="pic", codemodel="default")


def resolve_target(cpu: str = "native", features: str | None = None) -> AotTarget:
    """``native``: the host CPU name and features; another name: that CPU, ``features``
    (default none beyond the CPU's own)."""
    host = host_target()
    llvm.initialize_native_asmparser()      # the cpuid/xgetbv inline assembly
    if cpu == "native":
        cpu = host.cpu
        if features is None:
            features = host.features
    return AotTarget(host.triple, cpu, features or "", host.llvm_version,
                     host.llvmlite_version)


def new_llvm_module(name: str, target: AotTarget) -> ir.Module:
    """An empty module with the target's triple and data layout."""
    module = ir.Module(name=name)
    module.triple = target.triple
    module.data_layout = str(target.machine().target_data)
    return module


def emit_object(module: ir.Module, target: AotTarget, extra_ir: str | None = None) -> bytes:
    """Verify, optimize (O3) and compile ``module`` to an ELF/Mach-O object; ``extra_ir``
    (LLVM IR text whose definitions are all internal) is linked in first."""
    tm = target.machine()
    mod = llvm.parse_assembly(str(module))
    if extra_ir:
        extra = llvm.parse_assembly(extra_ir)
        extra.triple, extra.data_layout = mod.triple, mod.data_layout
        internal = [f.name for f in extra.functions if not f.is_declaration]
        for f in extra.functions:          # visible while linking, internal afterwards
            if not f.is_declaration:
                f.linkage = llvm.Linkage.external
        mod.link_in(extra)
        for name in internal:
            mod.get_function(name).linkage = llvm.Linkage.internal
    mod.verify()
    optimize(mod, tm, OPT_LEVEL)
    return bytes(tm.emit_object(mod))


__all__ = ["AotTarget", "resolve_target", "new_llvm_module", "emit_object"]
