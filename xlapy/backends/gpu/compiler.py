"""``GpuBackend``: HloModule -> GPU pipeline -> buffers -> one kernel per fusion -> executable.

``compile(module)`` verifies the module, runs :func:`~xlapy.backends.gpu.pipeline.gpu_pipeline`
on a clone, assigns buffers, emits a kernel for every instruction a GPU emitter supports
(``kernels.py``, ``reduction.py``), compiles them -- to PTX for the device's ``sm``
(``ptx.py``) loaded by the driver, or for the host on the simulator -- and builds the
plan of thunks (``runtime.py``). Dots go to cuBLAS when it is found (``cublas.py``), else
to the backend's tiled kernel (``gemm_kernel.py``); convolutions to the backend's own
kernels (``convolution.py``, ``conv_gemm.py``), large ones the tiled kernel does not take
to im2col + cuBLAS when it is found (``conv_im2col.py``); everything else without a kernel
runs in the host fallback.

Platforms: ``"gpu"`` (:class:`GpuBackend` on :class:`~xlapy.backends.gpu.cuda.CudaDevice`;
its device is opened at the first compile, so :meth:`compiler_ir` works with no GPU) and
``"gpu_sim"`` (:class:`GpuSimBackend`: the same kernels with the grid emulated on the host).
With ``--xla_dump_to`` the HLO files, ``ir-no-opt.ll``, ``ir-with-opt.ll`` and ``.ptx``
are written with XLA's names.
"""
from __future__ import annotations

import dataclasses
import logging
import re
import time
from typing import Any

from ...config import DumpConfig, get_debug_options
from ...errors import DeviceUnavailableError, InvalidArgumentError, ResourceExhaustedError
from ...hlo.ir import HloInstruction, HloModule
from ...hlo.verifier import verify_module
from ...passes.buffer_assignment import BufferAssignment, assign_buffers
from ...passes.context import PassContext
from ...passes.dump import dump_hlo_module, dump_text, module_key, share_dump_key
from ..cpu.executable import buffer_ref, value_ref
from ..cpu.plan_builder import NO_OP, PlanBuilderBase, scheduled_constants
from .device import Device
from .kernels import GpuKernel, UnitKernelEmitter
from .pipeline import gpu_pipeline
from .ptx import DEFAULT_SM, compile_ptx
from .runtime import (Buffers, CallThunk, ConditionalThunk, Copies, FallbackThunk,
                      GpuExecutable, LaunchThunk, Plan, SequenceThunk, Thunk,
                      WhileThunk)
from .simt import NvptxTarget, SimTarget, Target

log = logging.getLogger("xlapy.gpu")

IR_STAGES = ("ptx", "llvm", "ir-with-opt", "llvm_with_opt", "llvm_no_opt", "llvm-no-opt",
             "ir-no-opt", "optimized_hlo", "asm")
_CONTROL = ("while", "conditional", "call")


@dataclasses.dataclass
class Emitted:
    """The result of the compiler's front half: optimized HLO, buffers, kernels, texts."""

    module: HloModule
    assignment: BufferAssignment
    kernels: dict[int, GpuKernel]
    texts: dict[str, str]
    objects: Any = None


class GpuBackend:
    """The ``"gpu"`` platform (module docstring)."""

    name = "gpu"

    def __init__(self, device: Device | None = None) -> None:
        self._device = device
        self.last_seconds: dict[str, float] = {}

    # ----- device and target
    @property
    def device(self) -> Device:
        if self._device is None:
            from .cuda import cuda_device
            self._device = cuda_device()
        return self._device

    def target(self) -> Target:
        return NvptxTarget()

    def sm(self, need_device: bool) -> str:
        if need_device or self._device is not None:
            return self.device.sm
        return DEFAULT_SM

    # ----- public
    def compile(self, module: HloModule) -> "GpuExecutable | UnavailableExecutable":
        """Compile ``module`` (not modified) for this backend's device.

        With no usable device the module is only verified and the returned executable
        raises the :class:`DeviceUnavailableError` (naming what is missing) when run, so
        tracing and ``lower(...).compiler_ir("ptx")`` work on a machine without a GPU."""
        try:
            device = self.device
        except DeviceUnavailableError as e:
            verify_module(module, unique_names="computation")
            return UnavailableExecutable(module, e)
        options = get_debug_options()
        dump = DumpConfig(options)
        verify_module(module, unique_names="computation")
        em = self._emit(module, options, dump, need_device=True)
        t = time.perf_counter()
        functions = self._load(device, em)
        self.last_seconds["load"] = time.perf_counter() - t
        return self._build(device, em, functions)

    def compiler_ir(self, module: HloModule, stage: str = "ptx") -> str:
        """Text of one stage of compiling ``module``: ``"ptx"``, ``"llvm"`` (after LLVM's
        optimization; also ``"ir-with-opt"``), ``"llvm_no_opt"`` or ``"optimized_hlo"``.
        Needs no GPU (PTX for ``sm_80`` when no device is open)."""
        if stage not in IR_STAGES:
            raise InvalidArgumentError(f"unknown compiler IR stage {stage!r} for the "
                                       f"{self.name} backend; expected one of {IR_STAGES}")
        verify_module(module, unique_names="computation")
        options = get_debug_options()
        no_dump = DumpConfig(dataclasses.replace(options, xla_enable_dumping=False))
        em = self._emit(module, options, no_dump, need_device=False)
        if stage == "optimized_hlo":
            return em.module.to_text()
        key = {"asm": "ptx", "llvm": "ir-with-opt", "llvm_with_opt": "ir-with-opt",
               "ir-with-opt": "ir-with-opt"}.get(stage, "ir-no-opt" if "no" in stage else stage)
        return em.texts.get(key, "")

    # ----- front half
    def _emit(self, source: HloModule, options, dump: DumpConfig, need_device: bool) -> Emitted:
        dkey = module_key(source)
        module = source.clone()
        share_dump_key(module, dkey)
        if dump.enabled:
            dump_hlo_module(module, "before_optimizations", dump, key=dkey)
        t = time.perf_counter()
        gpu_pipeline(PassContext(options)).run(module)
        self.last_seconds["passes"] = time.perf_counter() - t
        assignment = assign_buffers(module)
        if dump.enabled:
            dump_hlo_module(module, "after_optimizations", dump, key=dkey)
            dump_text(module, "after_optimizations-buffer-assignment.txt", assignment.to_text(),
                      dump, key=dkey)
        t = time.perf_counter()
        kernels = self._emit_kernels(assignment)
        self.last_seconds["emit"] = time.perf_counter() - t
        t = time.perf_counter()
        em = Emitted(module, assignment, kernels, {})
        self._compile_kernels(em, need_device)
        self.last_seconds["llvm"] = time.perf_counter() - t
        if dump.enabled:
            for ext, key in (("ir-no-opt.ll", "ir-no-opt"), ("ir-with-opt.ll", "ir-with-opt"),
                             (self._code_ext(), "ptx")):
                if key in em.texts:
                    dump_text(module, ext, em.texts[key], dump, key=dkey)
        return em

    def _code_ext(self) -> str:
        return "ptx"

    def _emit_kernels(self, assignment: BufferAssignment) -> dict[int, GpuKernel]:
        from .column_reduction import ColumnReductionEmitter
        from .convolution import ConvolutionEmitter
        from .gemm_kernel import GemmKernelEmitter
        from .reduction import RowReductionEmitter
        from .transpose import TransposeEmitter
        target = self.target()
        emitters: list[Any] = [GemmKernelEmitter(assignment, target),
                    ConvolutionEmitter(assignment, target),
                    RowReductionEmitter(assignment, target),
                    ColumnReductionEmitter(assignment, target),
                    TransposeEmitter(assignment, target),
                    UnitKernelEmitter(assignment, target)]
        names: set[str] = set()
        out: dict[int, GpuKernel] = {}
        for comp_name, schedule in assignment.schedules.items():
            for instr in schedule:
                if instr.opcode in NO_OP or instr.opcode in _CONTROL:
                    continue
                name = _kernel_name(comp_name, instr, names)
                for e in emitters:
                    k = e.emit(name, instr)
                    if k is not None:
                        out[id(instr)] = k
                        break
        return out

    def _compile_kernels(self, em: Emitted, need_device: bool) -> None:
        mods = [k.module for k in em.kernels.values()]
        if not mods:
            return
        p = compile_ptx([str(m) for m in mods], self.sm(need_device))
        em.texts = {"ir-no-opt": p.ir_no_opt, "ir-with-opt": p.ir_with_opt, "ptx": p.ptx}

    def _load(self, device: Any, em: Emitted) -> dict[str, Any]:
        # a CUDA device (``load_ptx``); the simulator's compiler overrides this
        if not em.kernels:
            return {}
        return device.load_ptx(em.texts["ptx"], _symbols(em))

    # ----- plan
    def _build(self, device: Device, em: Emitted, functions: dict[str, Any]) -> GpuExecutable:
        buffers = Buffers(device, em.assignment)
        builder = _PlanBuilder(em, device, buffers, functions)
        plan = builder.plan(em.module.entry)
        for instr in scheduled_constants(em.assignment, em.module):
            buffers.write(value_ref(em.assignment, instr), instr.literal, instr)
        return GpuExecutable(em.module, em.assignment, device, buffers, plan,
                             keep_alive=[functions, builder.evaluator], texts=em.texts)


class UnavailableExecutable:
    """What :meth:`GpuBackend.compile` returns with no device: running it raises why."""

    def __init__(self, module: HloModule, error: DeviceUnavailableError) -> None:
        self.module, self.error = module, error

    def execute(self, args, owned=()) -> Any:
        """Raise the :class:`DeviceUnavailableError` the device gave."""
        raise DeviceUnavailableError(str(self.error))


class GpuSimBackend(GpuBackend):
    """The ``"gpu_sim"`` platform: GPU kernels with the grid emulated on the host."""

    name = "gpu_sim"

    def __init__(self, device: Device | None = None) -> None:
        from .device import SimDevice
        super().__init__(device or SimDevice())

    def target(self) -> Target:
        return SimTarget()

    def _code_ext(self) -> str:
        return "s"

    def _compile_kernels(self, em: Emitted, need_device: bool) -> None:
        from ..cpu.jit_engine import engine
        kernels = list(em.kernels.values())
        if not kernels:
            return
        compiled = engine().compile([k.module for k in kernels], _symbols(em), keep_text=True)
        em.objects = compiled
        em.texts = {"ir-no-opt": compiled.ir_no_opt or "",
                    "ir-with-opt": compiled.ir_with_opt or "", "ptx": compiled.assembly or ""}

    def _load(self, device: Device, em: Emitted) -> dict[str, Any]:
        import ctypes

        from ..cpu.jit_engine import engine
        if not em.kernels:
            return {}
        names = _symbols(em)
        loaded = engine().load(em.objects.objects, names)
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
        out: dict[str, Any] = {n: proto(loaded.address(n)) for n in names}
        out["__loaded__"] = loaded
        return out


def _symbols(em: Emitted) -> list[str]:
    """Every kernel function of the emitted kernels (``GpuKernel.symbols``)."""
    return [s for k in em.kernels.values() for s in k.symbols]


def _is_gemm(instr: HloInstruction) -> bool:
    from .cublas import gemm_supported
    return gemm_supported(instr)


def _kernel_name(comp: str, instr: HloInstruction, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", f"{comp}__{instr.name}")
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    used.add(name)
    return name


class _PlanBuilder(PlanBuilderBase):
    """Thunks for every scheduled instruction (``runtime.py`` lists the kinds); plans,
    leaf pairs and control flow as the CPU's builder, the pairs as device copies."""

    plan_type = Plan

    def __init__(self, em: Emitted, device: Device, buffers: Buffers,
                 functions: dict[str, Any]) -> None:
        super().__init__(em.module, em.assignment)
        self.em, self.device, self.buffers, self.functions = em, device, buffers, functions

    def copies(self, pairs) -> Copies:
        return Copies(self.buffers, pairs)

    def _im2col_thunk(self, instr: HloInstruction, k: GpuKernel) -> Thunk | None:
        """A convolution as im2col + cuBLAS (``conv_im2col.py``), None without cuBLAS or
        device memory for the patches (then its own kernel runs)."""
        from . import conv_im2col
        handle = conv_im2col.blas_handle(self.device)
        if handle is None:
            return None
        refs = [buffer_ref(self.assignment, kb.instruction, kb.index) for kb in k.buffers[:3]]
        x, w, y = (self.buffers.address(r) for r in refs)
        try:
            thunk = conv_im2col.Im2colGemmThunk(instr, self.device,
                                                self.functions[k.im2col.name], k.im2col,
                                                handle, x, w, y)
            thunk.relocate(self.buffers, *refs)
            return thunk
        except ResourceExhaustedError as e:
            log.info("%s: no device memory for im2col patches (%s); the kernel runs", instr.name,
                     e)
            return None

    def thunk(self, instr: HloInstruction) -> Thunk | None:
        op = instr.opcode
        if op in NO_OP:
            return None
        if _is_gemm(instr) and not self.device.simulated:
            from .cublas import GemmThunk, cublas
            handle = cublas(self.device)
            if handle is not None:
                return GemmThunk(instr, handle, self.buffers,
                                 [self.ref(o) for o in instr.operands], self.ref(instr))
        k = self.em.kernels.get(id(instr))
        if k is not None and k.im2col is not None:
            thunk = self._im2col_thunk(instr, k)
            if thunk is not None:
                return thunk
        if k is not None:
            refs = [buffer_ref(self.assignment, kb.instruction, kb.index) for kb in k.buffers]
            args = [self.buffers.address(r) for r in refs]
            if k.scratch:
                addr = self.device.alloc(k.scratch)
                self.device.memset0(addr, k.scratch)
                args.append(addr)
            launches: list[Thunk] = []
            for name, grid, block in [(k.name, k.grid, k.block), *k.after]:
                launch = LaunchThunk(instr, self.device, self.functions[name], name, grid,
                                     block, args)
                for i, r in enumerate(refs):    # parameters and outputs are bound per call
                    self.buffers.track(r, launch.packed.slots, i)
                launches.append(launch)
            if len(launches) == 1:
                return launches[0]
            return SequenceThunk(instr, Plan(instr.name, launches))
        if op == "while":
            return WhileThunk(instr, self.buffers, *self.while_parts(instr))
        if op == "conditional":
            return ConditionalThunk(instr, self.buffers, *self.conditional_parts(instr))
        if op == "call":
            return CallThunk(instr, *self.call_parts(instr))
        return FallbackThunk(instr, self.fallback_evaluator(), self.buffers,
                             [self.ref(o) for o in instr.operands], self.ref(instr))


__all__ = ["GpuBackend", "GpuSimBackend"]
