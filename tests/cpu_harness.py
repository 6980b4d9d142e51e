"""A small test harness for the CPU elemental emitter (no runtime needed).

``compile_computation(comp)`` turns a whole HLO computation into one fused loop kernel:
parameters are generators loading from row-major NumPy buffers, every other instruction
gets its generator from :class:`ElementalEmitter`, and the loop stores the root's
elements (flat index delinearized to a row-major ``IrIndex``). The module is optimized
at O3 for the host (new pass manager, vectorizers on) and run through MCJIT + ctypes.
``check_against_interpreter`` compares the result with the reference interpreter.
"""
from __future__ import annotations

import ctypes
from typing import Sequence

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from xlapy.backends.cpu.elemental import ElementalEmitter
from xlapy.backends.cpu.elemental_data import delinearize, linearize
from xlapy.backends.cpu.kernel_api import I64, buffer_pointer, declare_kernel
from xlapy.backends.cpu.llvm_types import load_element, storage_type, store_element
from xlapy.backends.interpreter.evaluator import Evaluator
from xlapy.hlo.ir import HloComputation, HloModule

_initialized = False


def _init() -> None:
    global _initialized
    if not _initialized:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _initialized = True


def host_target_machine(opt: int = 3):
    _init()
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=opt)


def optimize(ir_module: ir.Module, level: int = 3):
    """Parse, verify and optimize ``ir_module``; returns the binding module."""
    tm = host_target_machine()
    mod = llvm.parse_assembly(str(ir_module))
    mod.verify()
    pto = llvm.PipelineTuningOptions(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def build_kernel(ir_module: ir.Module, name: str, comp: HloComputation) -> None:
    """Add ``void name(i8** buffers, i64 begin, i64 end)`` computing ``comp``'s root at flat
    positions ``[begin, end)``; buffers: the parameters then the result (row-major)."""
    fn, b = declare_kernel(ir_module, name)
    emitter = ElementalEmitter(b, ir_module)
    root = comp.root
    params = comp.parameters
    pointers = [buffer_pointer(b, fn, i, storage_type(p.shape.element_type))
                for i, p in enumerate(params)]
    out_ptr = buffer_pointer(b, fn, len(params), storage_type(root.shape.element_type))

    def param_generator(p):
        ptr, shape = pointers[p.parameter_number], p.shape

        def gen(index):
            addr = b.gep(ptr, [linearize(b, index, shape.dims)], inbounds=True)
            return load_element(b, addr, shape.element_type)
        return gen

    gens = {}
    for instr in comp.post_order():
        if instr.opcode == "parameter":
            gens[instr] = param_generator(instr)
        else:
            gens[instr] = emitter.generator(instr, [gens[o] for o in instr.operands])

    begin, end = fn.args[1], fn.args[2]
    entry = b.block
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    b.cbranch(b.icmp_signed("<", begin, end), loop, done)
    b.position_at_end(loop)
    i = b.phi(I64)
    i.add_incoming(begin, entry)
    value = gens[root](delinearize(b, i, root.shape.dims))
    store_element(b, value, b.gep(out_ptr, [i], inbounds=True), root.shape.element_type)
    nxt = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, end), loop, done)
    b.position_at_end(done)
    b.ret_void()


class CompiledKernels:
    """An MCJIT engine holding one compiled module and callable kernels."""

    def __init__(self, ir_module: ir.Module, level: int = 3) -> None:
        self.module = optimize(ir_module, level)
        self.engine = llvm.create_mcjit_compiler(self.module, host_target_machine())
        self.engine.finalize_object()

    def run(self, name: str, args: Sequence[np.ndarray], out_shape) -> np.ndarray:
        addr = self.engine.get_function_address(name)
        fn = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64,
                              ctypes.c_int64)(addr)
        arrays = [np.ascontiguousarray(a) for a in args]
        out = np.zeros(out_shape.dims, dtype=out_shape.dtype)
        table = (ctypes.c_void_p * (len(arrays) + 1))(
            *[a.ctypes.data for a in arrays], out.ctypes.data)
        fn(table, 0, out.size)
        return out


def compile_computation(comp: HloComputation, level: int = 3) -> CompiledKernels:
    _init()
    m = ir.Module(name="test")
    m.triple = llvm.get_default_triple()
    build_kernel(m, "kernel", comp)
    return CompiledKernels(m, level)


def run_native(module: HloModule, args: Sequence[np.ndarray]) -> np.ndarray:
    """Run the module's entry computation as one fused native kernel."""
    comp = module.entry
    kernels = compile_computation(comp)
    return kernels.run("kernel", [np.asarray(a, dtype=p.shape.dtype)
                                  for a, p in zip(args, comp.parameters)], comp.root.shape)


def same_values(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal element by element, NaN equal to NaN, the sign of zero significant."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if got.dtype.kind in "fc" or got.dtype.name in ("bfloat16", "float16"):
        g, w = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64), \
            want.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
        if g.dtype.kind == "c":
            return same_values(g.real, w.real) and same_values(g.imag, w.imag)
        both_nan = np.isnan(g) & np.isnan(w)
        equal = (g == w) & (np.signbit(g) == np.signbit(w))
        return bool(np.all(both_nan | equal))
    return bool(np.array_equal(got, want))


def check_against_interpreter(module: HloModule, args: Sequence[np.ndarray]) -> np.ndarray:
    """Run natively and with the interpreter; assert identical results; return them."""
    args = [np.asarray(a, dtype=p.shape.dtype) for a, p in zip(args, module.entry.parameters)]
    want = np.asarray(Evaluator(module).run(args))
    got = run_native(module, args)
    if not same_values(got, want):
        bad = np.argwhere(~_elementwise_same(got, want))[:5]
        detail = "; ".join(f"at {tuple(i)}: got {got[tuple(i)]!r} want {want[tuple(i)]!r}"
                           + "".join(f" arg{k}={a[tuple(i)]!r}" for k, a in enumerate(args)
                                     if a.shape == got.shape)
                           for i in bad)
        raise AssertionError(f"native result differs from the interpreter: {detail}")
    return got


def _elementwise_same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    if got.dtype.kind == "c":
        return _elementwise_same(got.real, want.real) & _elementwise_same(got.imag, want.imag)
    if got.dtype.kind == "f" or got.dtype.name == "bfloat16":
        g, w = got.astype(np.float64), want.astype(np.float64)
        return (np.isnan(g) & np.isnan(w)) | ((g == w) & (np.signbit(g) == np.signbit(w)))
    return got == want
