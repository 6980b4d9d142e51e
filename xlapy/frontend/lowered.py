"""``Lowered``: what ``jit(f).lower(*args)`` returns, a traced module and its compiler IR
at each stage (``get_compiler_ir``); ``Lowered.compile()`` gives ``Compiled``, with the
optimized module and its buffer assignment's sizes (``memory_analysis``), as JAX's AOT API."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..backends.memory_stats import MemoryAnalysis, memory_analysis
from ..client.optimize import optimize, optimize_with_report
from ..errors import InvalidArgumentError
from ..hlo.ir import HloModule
from .core import default_backend


class Lowered:
    """A traced, unoptimized module: ``as_text()``, ``compiler_ir(stage)``, ``compile()``."""

    def __init__(self, module: HloModule, backend: str | None = None,
                 variables: Sequence[Any] = (), assigned: Sequence[Any] = (),
                 call: Callable[..., Any] | None = None) -> None:
        self.hlo_module = module
        self.backend = backend          # None: the default backend when asked
        # Variables the module reads (its last parameters, in order) and assigns (its last
        # outputs): what a caller that runs the module itself (xlapy.aot) must supply
        self.variables = list(variables)
        self.assigned = list(assigned)
        self._call = call               # the jitted function, for Compiled.__call__

    def as_text(self) -> str:
        return self.hlo_module.to_text()

    def compile(self) -> "Compiled":
        """Optimize for the backend and assign buffers (the jitted function compiled
        the same module when it was lowered)."""
        return Compiled(self)

    _CODE_STAGES = ("llvm", "llvm_no_opt", "llvm-no-opt", "asm", "ptx")

    def compiler_ir(self, stage: str = "hlo") -> str | bytes:
        """``hlo`` (long text XLA parses), ``optimized_hlo``, ``optimized_hlo_dot``, TF's
        ``hlo_serialized`` / ``optimized_hlo_serialized`` (a serialized ``HloModuleProto``,
        bytes, that XLA loads), or the
        generated code of backends that have some (``cpu``): ``llvm`` (LLVM IR after
        LLVM's optimization, ``--xla_dump_to``'s ``.ir-with-opt.ll``), ``llvm_no_opt``
        (as emitted, ``.ir-no-opt.ll``), ``asm`` (host assembly, ``.s``) and, on the
        ``gpu`` backend, ``ptx`` (no GPU needed to produce it)."""
        if stage == "hlo":
            return self.hlo_module.to_text()
        if stage == "hlo_serialized":
            from ..hlo.proto import module_to_proto_bytes
            return module_to_proto_bytes(self.hlo_module)
        if stage in ("optimized_hlo", "optimized_hlo_dot", "optimized_hlo_serialized"):
            module = self.hlo_module
            n = module.attributes.get("num_partitions", 1)
            if n > 1:       # a shard_map program: what each partition runs, as XLA shows it
                from ..client.spmd import spmd_partition
                module = spmd_partition(module, n).module
            module = optimize(module)
            if stage == "optimized_hlo":
                return module.to_text()
            if stage == "optimized_hlo_serialized":
                from ..hlo.proto import module_to_proto_bytes
                return module_to_proto_bytes(module)
            from ..passes.dump import module_to_dot
            return module_to_dot(module)
        if stage in self._CODE_STAGES:
            from ..client import get_backend
            backend = get_backend(self.backend or default_backend())
            code_ir = getattr(backend, "compiler_ir", None)
            if code_ir is None:
                raise InvalidArgumentError(
                    f"compiler IR stage {stage!r} is not available on the "
                    f"{backend.name!r} backend: it generates no code (it interprets HLO); "
                    "use backend='cpu' for LLVM IR and assembly")
            return code_ir(self.hlo_module, stage)
        raise InvalidArgumentError(f"unknown compiler IR stage {stage!r}; expected 'hlo', "
                                   "'hlo_serialized', 'optimized_hlo', "
                                   "'optimized_hlo_serialized', 'optimized_hlo_dot', "
                                   + ", ".join(repr(s) for s in self._CODE_STAGES))


class Compiled:
    """``jit(f).lower(*args).compile()``: the optimized module (``as_text``), its buffer
    sizes (``memory_analysis``); calling it calls the jitted function."""

    def __init__(self, lowered: Lowered) -> None:
        self.lowered = lowered
        self._result = optimize_with_report(lowered.hlo_module,
                                            lowered.backend or default_backend())

    def as_text(self) -> str:
        return self._result.module.to_text()

    def memory_analysis(self) -> MemoryAnalysis:
        """Sizes of the buffer assignment (JAX's field names; the same record
        :func:`xlapy.profiler.last_step_memory` gives after a call)."""
        return memory_analysis(self._result.buffers)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.lowered._call is None:
            raise InvalidArgumentError("this Compiled object was made from a bare module; "
                                       "call the jitted function instead")
        return self.lowered._call(*args, **kwargs)


__all__ = ["Lowered", "Compiled", "MemoryAnalysis"]
