"""Harness for the tests of the CPU backend's kernel emitters (``test_cpu_reduction*``,
``test_cpu_window``, ``test_cpu_scatter_sort``, ``test_cpu_runtime_loops``).

- ``run_both(backend, text, args, native)`` compiles a module with the whole CPU backend,
  checks that the ``native`` instructions run as kernels and returns its results and the
  interpreter's; ``assert_same`` compares them bit for bit.
- ``Kernel(text)`` emits one reduction kernel for the entry root of a hand-written module
  (a ``reduce`` or a ``fusion`` whose operands are entry parameters or constants),
  compiles it with the JIT engine and calls it on NumPy buffers laid out in each buffer's
  layout, so layouts and unit ranges are exactly what a test says; ``check_direct``
  compares it with the interpreter.
"""
from __future__ import annotations

import ctypes
import itertools

import numpy as np

import xlapy
from xlapy.backends.cpu.jit_engine import engine
from xlapy.backends.cpu.reduction_emitter import ReductionEmitter
from xlapy.backends.cpu.thunks import KERNEL_CFUNC, logical_view, physical_bytes
from xlapy.hlo import parse_module

_names = itertools.count()

ADD_F32 = """%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
"""

MAX_F32 = """%max_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] maximum(%a, %b)
}
"""


def rand(*dims, dtype=np.float32, seed=0, scale=1.0) -> np.ndarray:
    """Standard normal values (times ``scale``) of ``dims``, as ``dtype``."""
    return (np.random.default_rng(seed).standard_normal(dims) * scale).astype(dtype)


def interpret(text: str, args: list) -> list:
    return [np.asarray(v) for v in xlapy.run_hlo(text, args, backend="interpreter")]


def run_both(backend, text: str, args: list, native: tuple[str, ...] = ()) -> tuple[list, list]:
    """(CPU results, interpreter results) as lists; ``native`` instructions must be kernels."""
    exe = backend.compile(parse_module(text))
    kinds = exe.thunk_kinds()
    for name in native:
        assert kinds.get(name) == "kernel", kinds
    got = exe.execute(args)
    got = [np.asarray(g) for g in (got if isinstance(got, tuple) else [got])]
    return got, interpret(text, args)


def assert_same(got: list, want: list) -> None:
    """Same dtypes, shapes and bytes (NaN equal to NaN, the sign of zero significant)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        assert g.tobytes() == w.tobytes(), (g, w)


class Kernel:
    """One compiled reduction kernel for the entry root of ``text``."""

    def __init__(self, text: str, shared: int | None = None) -> None:
        """``shared``: an operand that buffer assignment put in the output's buffer."""
        self.module = parse_module(text)
        root = self.module.entry.root
        emitter = ReductionEmitter(SharedBuffer(root, shared) if shared is not None else None)
        assert emitter.can_emit(root), f"the reduction emitter declined {root.name}"
        self.aliases = emitter.plan(root).aliases
        self.name = f"red_test_{next(_names)}"
        llvm_module = engine().new_module(self.name)
        self.spec = emitter.emit(llvm_module, self.name, root)
        compiled = engine().compile([llvm_module], [self.name], keep_text=True)
        self.ir = compiled.ir_with_opt
        self.loaded = engine().load(compiled.objects, [self.name])
        self.fn = KERNEL_CFUNC(self.loaded.address(self.name))

    def run(self, args: list[np.ndarray], ranges: list[tuple[int, int]] | None = None) -> list:
        """Call the kernel over ``ranges`` of units (default: all at once), in that order."""
        keep, addresses, outputs = [], [], []
        shared = {k: j for j, k in self.aliases.items()}   # output slot -> operand slot
        for slot, kb in enumerate(self.spec.buffers):
            if kb.role == "operand":
                value = (kb.instruction.literal if kb.instruction.opcode == "constant"
                         else args[kb.instruction.parameter_number])
                raw = physical_bytes(np.asarray(value, kb.shape.dtype), kb.shape).copy()
            else:
                raw = keep[shared[slot]] if slot in shared else \
                    np.full(max(kb.shape.byte_size, 1), 0xA5, np.uint8)   # poison
                outputs.append((raw, kb.shape))
            keep.append(raw)
            addresses.append(raw.ctypes.data)
        table = (ctypes.c_void_p * len(addresses))(*addresses)
        for begin, end in ranges or [(0, self.spec.units)]:
            self.fn(ctypes.addressof(table), begin, end)
        return [logical_view(raw, 0, shape).copy() for raw, shape in outputs]


class SharedBuffer:
    """A stand-in for a ``BufferAssignment`` that puts operand ``operand`` of ``root`` in
    the root's (output) buffer, as in-place buffer reuse does, and everything else apart."""

    def __init__(self, root, operand: int) -> None:
        self.members = (root, root.operands[operand])
        self.allocation = object()

    def slice(self, instr, index=()):
        from types import SimpleNamespace
        together = any(instr is m for m in self.members)
        return SimpleNamespace(allocation=self.allocation if together else object(), offset=0,
                               size=4)


def check_direct(text: str, args: list, rtol: float = 1e-5, atol: float = 1e-6) -> Kernel:
    kernel = Kernel(text)
    got = kernel.run(args)
    want = interpret(text, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)
    return kernel


def reduce_module(et: str, dims: tuple, layout: tuple | None, rdims: tuple, op: str,
                  init: str, out_layout: tuple | None = None) -> str:
    """``ROOT reduce(p0, init)`` of ``et[dims]{layout}`` over ``rdims`` with ``op``."""
    kept = [d for i, d in enumerate(dims) if i not in rdims]
    lay = "{" + ",".join(map(str, layout)) + "}" if layout is not None else ""
    olay = "{" + ",".join(map(str, out_layout)) + "}" if out_layout is not None else ""
    shape = f"{et}[{','.join(map(str, kept))}]{olay}"
    reduced = ",".join(map(str, rdims))
    return f"""HloModule red_{op}_{et}
red {{
  a = {et}[] parameter(0)
  b = {et}[] parameter(1)
  ROOT r = {et}[] {op}(a, b)
}}
ENTRY main {{
  x = {et}[{",".join(map(str, dims))}]{lay} parameter(0)
  init = {et}[] constant({init})
  ROOT out = {shape} reduce(x, init), dimensions={{{reduced}}}, to_apply=red
}}
"""
