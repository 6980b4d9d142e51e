"""HLO ``convolution`` on the GPU: the backend's own kernels (no cuDNN).

:func:`conv_spec` reads a convolution into a :class:`ConvSpec`: XLA's ConvGeneralDilated
semantics as the interpreter computes them (``interpreter/linalg.convolve``) -- any
``dim_labels``, window strides, padding (negative padding crops), ``lhs_dilate`` (base
dilation), ``rhs_dilate`` (window dilation), ``rhs_reversal``, ``feature_group_count`` and
``batch_group_count`` -- with every operand addressed through its layout's element strides,
so any physical layout is read where it is.

Output feature ``f`` belongs to group ``q = f // (F / (G * Bg))``, of batch group
``q // G`` and feature group ``q % G``; output element ``(b, f, p...)`` sums, over the
group's input features ``c`` and the kernel taps ``k...``,
``x[(q // G) * N/Bg + b, (q % G) * C/G + c, i...] * w[f, c, k'...]`` where the tap reads
input position ``(p*stride + k*rhs_dilate - pad_lo) / lhs_dilate`` when that is a whole
number inside the input (else the product is zero) and ``k'`` is ``k`` mirrored for a
reversed window dimension.

Two kernels (:class:`ConvolutionEmitter` picks one):

- :func:`emit_direct` (here): one thread per output element, threads in the output's
  physical order (coalesced writes); every form, integers included.
- ``conv_gemm.emit_tiled``: the implicit GEMM (``C[M, N] = A[M, K] B[K, N]`` per group,
  ``M`` the output positions, ``N`` the group's output features, ``K`` its taps times input
  features), tiles of ``A`` and ``B`` gathered into shared memory; for float convolutions
  with enough features on both sides (forward, input- and weight-gradient convolutions of
  CNNs).

Where cuBLAS is found (never on the simulator) a large single-group f32/f64 convolution
that the tiled kernel does not take runs as im2col + the cuBLAS GEMM instead of the direct
kernel (``conv_im2col.py`` says when and why); its im2col kernel is emitted beside the
direct kernel, which runs when cuBLAS is not there.

Accumulation as the CPU backend's: ``f32`` for f16/bf16/f32, ``f64`` when an operand or the
result is f64, ``i64`` for integers (wrapped to the result type); the interpreter sums
floats in f64, so float results agree with it to rounding.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from math import prod
from typing import Any

from llvmlite import ir

from ...errors import InvalidArgumentError, ShapeError
from ...hlo import types as T
from ...hlo.attrs import ConvDimensionNumbers, Window, WindowDim
from ...hlo.ir import HloInstruction
from ...hlo.shape import Shape
from ..cpu.kernel_api import KernelBuffer, kernel_buffers
from ..cpu.kernel_support import c64, for_loop
from ..cpu.llvm_types import (F32, F64, I64, declare_function, from_compute, llvm_type,
                              to_compute)
from .kernels import GpuKernel, launch_dims, MAX_GRID
from .simt import KernelFrame, Target

log = logging.getLogger("xlapy.gpu")

I32 = ir.IntType(32)
_FLOATS = (T.F16, T.BF16, T.F32, T.F64)
#: The tiled kernel is used when a group has at least this many output features and
#: this many taps x input features (fewer waste most of a 64-wide tile).
TILED_MIN_N = 8
TILED_MIN_K = 8
#: ``"direct"`` or ``"tiled"`` forces one kernel where it applies (tests); None chooses.
FORCE: str | None = None


def strides(shape: Shape) -> list[int]:
    """Element strides of each logical dim of a dense array stored in ``shape``'s layout."""
    order = list(shape.layout.minor_to_major) if shape.layout is not None else \
        list(range(shape.rank - 1, -1, -1))
    out, s = [0] * shape.rank, 1
    for d in order:
        out[d] = s
        s *= shape.dims[d]
    return out


def physical_order(shape: Shape) -> list[int]:
    """Logical dims of ``shape`` from the most major to the most minor."""
    if shape.layout is None:
        return list(range(shape.rank))
    return list(reversed(shape.layout.minor_to_major))


@dataclass(frozen=True)
class ConvSpec:
    """A convolution's sizes and element strides (module docstring), canonical order."""

    instr: HloInstruction
    groups: int                    # feature_group_count (G)
    batch_groups: int              # batch_group_count (Bg)
    nb: int                        # output batch (N / Bg)
    cg: int                        # input features per group (C / G)
    opg: int                       # output features per group (F / (G * Bg))
    o: int                         # output features (F)
    in_sizes: tuple[int, ...]      # input spatial sizes
    kernel: tuple[int, ...]        # window sizes
    out: tuple[int, ...]           # output spatial sizes
    window: tuple[WindowDim, ...]
    xs: tuple[int, ...]            # input strides: batch, feature, spatial...
    ws: tuple[int, ...]            # kernel strides: output feature, input feature, spatial...
    ys: tuple[int, ...]            # output strides: batch, feature, spatial...
    y_phys: tuple[tuple[str, int], ...]   # output dims major to minor: (role, size)
    x_et: T.ElementType
    w_et: T.ElementType
    y_et: T.ElementType
    acc: ir.Type                   # accumulator: float, double or i64
    wide: bool                     # int32 indices do not suffice
    owner: HloInstruction          # what the kernel computes: the convolution or its fusion
    buffers: tuple[KernelBuffer, ...]   # the kernel's buffers: input, kernel, output

    @property
    def nsp(self) -> int:
        return len(self.kernel)

    @property
    def out_elems(self) -> int:
        return prod(self.instr.shape.dims)

    @property
    def m(self) -> int:
        """Rows of the implicit GEMM: output positions (batch x spatial)."""
        return self.nb * prod(self.out)

    @property
    def k(self) -> int:
        """Reduction length of one output element: taps x input features of a group."""
        return self.cg * prod(self.kernel)

    def m_dims(self) -> list[tuple[str, int]]:
        """The output's non-feature dims major to minor (the order of ``m``)."""
        return [(r, s) for r, s in self.y_phys if r != "f"]


def _accumulator(ets: list[T.ElementType]) -> ir.Type | None:
    if all(e in _FLOATS for e in ets):
        return F64 if T.F64 in ets else F32
    if all(e.is_integral and e.bits in (8, 16, 32, 64) for e in ets):
        return I64
    return None


def conv_spec(owner: HloInstruction) -> ConvSpec | None:
    """The :class:`ConvSpec` of a convolution the GPU kernels compute -- ``owner`` itself or
    the convolution a ``kCustom`` fusion wraps (on its parameters, as XLA:CPU's optimized
    HLO has them) -- or None (dynamic shapes, complex/pred/f8 types, or a convolution the
    shape checks reject)."""
    from ..cpu.conv_plan import conv_geometry
    from ..cpu.plan_builder import library_target
    target = library_target(owner)
    # (a CPU convolution output fusion has a third feed, its bias: not computed here)
    if target is None or target[0].opcode != "convolution" or len(target[1]) != 2:
        return None
    instr, feeds = target
    table = kernel_buffers(owner)
    if len(instr.operands) != 2 or not instr.shape.is_array or \
            len(table) != len(owner.operands) + 1:
        return None
    buffers = (table[feeds[0]], table[feeds[1]], table[-1])
    lhs, rhs = (o.shape for o in instr.operands)
    if not (lhs.is_array and rhs.is_array) or any(
            s.is_dynamic for s in (lhs, rhs, instr.shape)):
        return None
    try:
        g = conv_geometry(instr)
    except (InvalidArgumentError, ShapeError, ValueError) as e:
        log.debug("no GPU convolution kernel for %s: %s", instr.name, e)
        return None
    acc = _accumulator([lhs.element_type, rhs.element_type, instr.shape.element_type])
    if acc is None:
        return None
    dn: ConvDimensionNumbers = g.dn
    nsp = len(dn.input_spatial)
    window = instr.attr("window") or Window(tuple(WindowDim() for _ in range(nsp)))
    xs, ws, ys = strides(lhs), strides(rhs), strides(instr.shape)
    roles = {dn.output_batch: "b", dn.output_feature: "f"}
    roles.update({d: f"s{i}" for i, d in enumerate(dn.output_spatial)})
    y = instr.shape
    elems = max(prod(lhs.dims), prod(rhs.dims), prod(y.dims))
    return ConvSpec(
        instr, g.groups, g.batch_groups, g.nb, g.cg, g.opg, g.o,
        tuple(lhs.dims[d] for d in dn.input_spatial),
        tuple(rhs.dims[d] for d in dn.kernel_spatial),
        tuple(y.dims[d] for d in dn.output_spatial), tuple(window.dims),
        (xs[dn.input_batch], xs[dn.input_feature], *(xs[d] for d in dn.input_spatial)),
        (ws[dn.kernel_output_feature], ws[dn.kernel_input_feature],
         *(ws[d] for d in dn.kernel_spatial)),
        (ys[dn.output_batch], ys[dn.output_feature], *(ys[d] for d in dn.output_spatial)),
        tuple((roles[d], y.dims[d]) for d in physical_order(y)),
        lhs.element_type, rhs.element_type, y.element_type, acc,
        wide=elems * 4 >= 2 ** 31, owner=owner, buffers=buffers)


# ----------------------------------------------------------------------------- IR helpers
class Ix:
    """Index arithmetic in the spec's index type (i32 when every offset fits, as the
    GPU's 64-bit divisions are emulated) at a builder's position."""

    def __init__(self, b: ir.IRBuilder, wide: bool) -> None:
        self.b, self.ty = b, (I64 if wide else I32)

    def c(self, v: int) -> ir.Constant:
        return ir.Constant(self.ty, v)

    def of(self, v: ir.Value) -> ir.Value:
        """An i64 (a thread, block or loop index) in this type."""
        return v if self.ty is I64 else self.b.trunc(v, I32)

    def add(self, *vs: ir.Value | int) -> ir.Value:
        out = None
        for v in vs:
            if isinstance(v, int):
                if v == 0:
                    continue
                v = self.c(v)
            out = v if out is None else self.b.add(out, v)
        return out if out is not None else self.c(0)

    def mul(self, v: ir.Value, k: int) -> ir.Value:
        if k == 0:
            return self.c(0)
        return v if k == 1 else self.b.mul(v, self.c(k))

    def split(self, v: ir.Value, sizes: list[int]) -> list[ir.Value]:
        """Digits of ``v`` (``< prod(sizes)``) in the mixed radix ``sizes`` (major to
        minor), returned major to minor."""
        out: list[ir.Value] = []
        for i, s in enumerate(reversed(sizes)):
            if i == len(sizes) - 1:
                out.append(v)
            elif s == 1:
                out.append(self.c(0))
            else:
                out.append(self.b.urem(v, self.c(s)))
                v = self.b.udiv(v, self.c(s))
        return list(reversed(out))

    def tap(self, wd: WindowDim, size: int, p: ir.Value, k: ir.Value
            ) -> tuple[ir.Value, ir.Value]:
        """(in-bounds flag, input index) of output position ``p``, window tap ``k``."""
        b = self.b
        d = b.sub(self.add(self.mul(p, wd.stride), self.mul(k, wd.rhs_dilate)),
                  self.c(wd.pad_lo))
        ok = b.icmp_signed(">=", d, self.c(0))
        if wd.lhs_dilate != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(d, self.c(wd.lhs_dilate)), self.c(0)))
            d = b.sdiv(d, self.c(wd.lhs_dilate))
        return b.and_(ok, b.icmp_signed("<", d, self.c(size))), d


def load_acc(b: ir.IRBuilder, base: ir.Value, et: T.ElementType, off: ir.Value,
             acc: ir.Type) -> ir.Value:
    """Element ``off`` of the ``et`` array at ``base`` (i8*), widened to ``acc``."""
    v = b.load(b.gep(b.bitcast(base, llvm_type(et).as_pointer()), [off]))
    if acc is I64:
        if et.bits == 64:
            return v
        return b.sext(v, I64) if et.is_signed_integral else b.zext(v, I64)
    v = to_compute(b, v, et)
    return b.fpext(v, F64) if acc is F64 and v.type is F32 else v


def store_acc(b: ir.IRBuilder, base: ir.Value, et: T.ElementType, off: ir.Value,
              v: ir.Value) -> None:
    """Round (or wrap) an accumulator to ``et`` and store it at element ``off``."""
    if v.type is I64:
        v = b.trunc(v, llvm_type(et)) if et.bits < 64 else v
    elif et is T.F64:
        v = b.fpext(v, F64) if v.type is F32 else v
    else:
        v = b.fptrunc(v, F32) if v.type is F64 else v
        v = from_compute(b, v, et)
    b.store(v, b.gep(b.bitcast(base, llvm_type(et).as_pointer()), [off]))


def multiply_add(b: ir.IRBuilder, acc: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
    """``acc + x * y``; floats through ``llvm.fmuladd`` (one ``fma`` on the GPU, a multiply
    and an add on a host without FMA: never a library call)."""
    if acc.type is I64:
        return b.add(acc, b.mul(x, y))
    name = "llvm.fmuladd.f64" if acc.type is F64 else "llvm.fmuladd.f32"
    fn = declare_function(b.module, name, acc.type, [acc.type] * 3)
    return b.call(fn, [x, y, acc])


def zero(ty: ir.Type) -> ir.Constant:
    return ir.Constant(ty, 0 if ty is I64 else 0.0)


# ----------------------------------------------------------------------------- direct kernel
def emit_direct(target: Target, name: str, spec: ConvSpec) -> GpuKernel | None:
    """One thread per output element (module docstring)."""
    total = spec.out_elems
    grid, block = launch_dims(total)
    if grid > MAX_GRID:
        return None
    module = target.new_module(name)
    buffers = list(spec.buffers)
    G, nsp = spec.groups, spec.nsp

    def body(f: KernelFrame) -> None:
        b = f.b
        acc_slot = f.entry_alloca(spec.acc)
        xb, wb, yb = f.buffers[:3]

        def thread(tid: ir.Value) -> None:
            u64 = b.add(b.mul(f.block, c64(block)), tid)
            with b.if_then(b.icmp_signed("<", u64, c64(total))):
                ix = Ix(b, spec.wide)
                u = ix.of(u64)
                digits = dict(zip((r for r, _ in spec.y_phys),
                                  ix.split(u, [s for _, s in spec.y_phys])))
                of = digits["f"]
                q = b.udiv(of, ix.c(spec.opg)) if spec.opg != 1 else of
                bgi, g = (b.udiv(q, ix.c(G)), b.urem(q, ix.c(G))) if G != 1 else (q, ix.c(0))
                n = ix.add(ix.mul(bgi, spec.nb), digits["b"])
                xbase = ix.add(ix.mul(n, spec.xs[0]), ix.mul(g, spec.cg * spec.xs[1]))
                wbase = ix.mul(of, spec.ws[0])
                b.store(zero(spec.acc), acc_slot)

                # a tap on padding or between dilated input elements multiplies a zero (as
                # the interpreter's padded input does: inf or nan weights there give nan),
                # so it is read at a clamped in-bounds index and the value replaced by 0
                def level(i: int, xo: ir.Value, wo: ir.Value, inside: ir.Value) -> None:
                    if i == nsp:
                        def feature(ci64: ir.Value) -> None:
                            ci = ix.of(ci64)
                            xv = load_acc(b, xb, spec.x_et,
                                          ix.add(xo, ix.mul(ci, spec.xs[1])), spec.acc)
                            xv = b.select(inside, xv, zero(spec.acc))
                            wv = load_acc(b, wb, spec.w_et,
                                          ix.add(wo, ix.mul(ci, spec.ws[1])), spec.acc)
                            b.store(multiply_add(b, b.load(acc_slot), xv, wv), acc_slot)
                        for_loop(b, 0, spec.cg, feature, "ci")
                        return
                    wd, size = spec.window[i], spec.in_sizes[i]

                    def taps(k64: ir.Value) -> None:
                        k = ix.of(k64)
                        ok, d = ix.tap(wd, size, digits[f"s{i}"], k)
                        d = b.select(ok, d, ix.c(0))
                        kk = b.sub(ix.c(spec.kernel[i] - 1), k) if wd.rhs_reversal else k
                        level(i + 1, ix.add(xo, ix.mul(d, spec.xs[2 + i])),
                              ix.add(wo, ix.mul(kk, spec.ws[2 + i])), b.and_(inside, ok))
                    for_loop(b, 0, spec.kernel[i], taps, f"k{i}")
                level(0, xbase, wbase, ir.Constant(ir.IntType(1), 1))
                store_acc(b, yb, spec.y_et, u, b.load(acc_slot))
        f.threads(thread)
    target.kernel(module, name, len(buffers), block, body)
    return GpuKernel(name, spec.owner, buffers, grid, block, "conv-direct", module,
                     notes=[f"direct convolution, {total} threads"])


def use_tiled(spec: ConvSpec) -> bool:
    """Whether the tiled implicit-GEMM kernel computes ``spec`` (module docstring)."""
    if spec.acc is I64 or min(spec.m, spec.opg, spec.k) == 0:
        return False
    if FORCE is not None:
        return FORCE == "tiled"
    return spec.opg >= TILED_MIN_N and spec.k >= TILED_MIN_K


class ConvolutionEmitter:
    """GPU kernels for ``convolution`` instructions (module docstring)."""

    def __init__(self, assignment: Any, target: Target) -> None:
        self.target = target

    def emit(self, name: str, instr: HloInstruction) -> GpuKernel | None:
        if instr.opcode not in ("convolution", "fusion"):
            return None
        spec = conv_spec(instr)
        if spec is None:
            return None
        k = None
        if use_tiled(spec):
            from .conv_gemm import emit_tiled
            k = emit_tiled(self.target, name, spec)
        k = k or emit_direct(self.target, name, spec)
        if k is not None and k.module is not None:
            from . import conv_im2col
            if k.kind != "conv-gemm-tiled" or conv_im2col.OVER_TILED:
                k.im2col = conv_im2col.emit_im2col(self.target, k.module, f"{name}_im2col",
                                                   spec)
        return k


__all__ = ["ConvSpec", "ConvolutionEmitter", "conv_spec", "emit_direct", "use_tiled", "Ix",
           "load_acc", "store_acc", "multiply_add", "zero", "strides", "physical_order"]
