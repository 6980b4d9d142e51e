"""Harness for the CPU reduction emitter tests (``test_cpu_reduction*.py``).

``Kernel(text)`` emits one kernel for the entry root of a hand-written module (a
``reduce`` or a ``fusion`` whose operands are entry parameters or constants), compiles it
with the JIT engine and calls it on NumPy buffers laid out in each buffer's layout, so
layouts and unit ranges are exactly what a test says. ``with_reduction_emitter()`` puts
the reduction emitter first in the CPU backend's emitter list for a block.
"""
from __future__ import annotations

import contextlib
import ctypes
import itertools

import numpy as np

import xlapy
from xlapy.backends.cpu import compiler
from xlapy.backends.cpu.jit_engine import engine
from xlapy.backends.cpu.loop_emitter import LoopEmitter
from xlapy.backends.cpu.reduction_emitter import ReductionEmitter
from xlapy.backends.cpu.thunks import KERNEL_CFUNC, logical_view, physical_bytes
from xlapy.hlo import parse_module

_names = itertools.count()


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


def interpret(text: str, args: list) -> list:
    return [np.asarray(v) for v in xlapy.run_hlo(text, args, backend="interpreter")]


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


def rand(*dims, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(dims).astype(dtype)


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


@contextlib.contextmanager
def with_reduction_emitter():
    """The CPU backend's emitters are [ReductionEmitter, LoopEmitter] inside the block."""
    saved = compiler.kernel_emitters
    compiler.kernel_emitters = lambda assignment: [ReductionEmitter(assignment),
                                                   LoopEmitter(assignment)]
    try:
        yield
    finally:
        compiler.kernel_emitters = saved
