"""Convolutions as im2col + the cuBLAS GEMM, when cuBLAS is found (on the device only).

Where it runs: a large single-group f32/f64 convolution that the tiled implicit-GEMM kernel
(``conv_gemm.py``) does not take, i.e. one that would otherwise run on the direct kernel
(one thread per output). The patch matrix costs memory traffic (9x the activations for a
3x3 window) on top of the GEMM, and on an H200 the tiled kernel beat im2col + cuBLAS on
every CNN layer the GPU check times (:data:`OVER_TILED` turns the comparison back on).
Without cuBLAS, on the simulator, for groups, f16/bf16, reversed windows, other layouts,
or when the patch matrix would pass :data:`MAX_PATCH_BYTES`, the backend's kernels run.

:func:`im2col_plan` accepts a convolution with one group (``G = Bg = 1``), one float type
(f32/f64) for operands and result, the kernel stored as a row-major ``B[R, N]`` (its output
feature dim most minor; ``R`` the other dims in their physical order: ``(k..., c)`` for
HWIO, ``(c, k...)`` for a weight gradient's ``i01o``), no window reversal, and the output
stored as ``C[M, N]`` (its feature dim most minor; ``M`` the other dims in physical order).
The im2col kernel (one thread per element, consecutive threads on consecutive columns:
coalesced writes) fills ``P[M, R]`` (zeros in padding and dilation holes) in a scratch
buffer of the thunk, then one ``cublas<t>gemm`` computes ``C = P B`` (column-major:
``C^T = B^T P^T``).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from llvmlite import ir

from ...hlo import types as T
from ...hlo.attrs import ConvDimensionNumbers
from ...hlo.ir import HloInstruction
from ..cpu.kernel_support import c64
from .convolution import ConvSpec, Ix, physical_order, zero
from .kernels import MAX_GRID, launch_dims
from .runtime import LaunchThunk, Thunk
from .simt import KernelFrame, Target

#: The largest patch matrix im2col writes (bytes); larger convolutions use the implicit GEMM.
MAX_PATCH_BYTES = 1 << 30
#: Fewer multiply-adds than this: the own kernel (one launch) beats a launch and a gemm call.
MIN_MACS = 1 << 24
#: Whether im2col + cuBLAS also replaces the tiled implicit-GEMM kernel. Off: on an H200
#: the tiled kernel measured faster on every CNN layer of ``benchmarks/gpu_check_conv.py``
#: (``docs/performance.md``), so im2col + cuBLAS runs where only the direct kernel applies.
OVER_TILED = False


@dataclass(frozen=True)
class Im2col:
    """An im2col kernel of a convolution: its symbol, launch and GEMM sizes."""

    name: str
    grid: int
    block: int
    m: int
    n: int
    r: int
    dtype: str              # "f32" or "f64"

    @property
    def patch_bytes(self) -> int:
        return self.m * self.r * (4 if self.dtype == "f32" else 8)


def _r_dims(spec: ConvSpec) -> list[tuple[str, int]] | None:
    """The kernel's non-output-feature dims in physical order as ``(role, size)`` (role
    ``"c"`` or ``"k<i>"``), if the kernel is a dense row-major ``B[R, N]``."""
    rhs = spec.instr.operands[1].shape
    dn = spec.instr.attr("dim_labels")
    dn = ConvDimensionNumbers.from_string(dn) if isinstance(dn, str) else dn
    if spec.ws[0] != 1:
        return None
    roles = {dn.kernel_input_feature: "c", **{d: f"k{i}" for i, d in
                                              enumerate(dn.kernel_spatial)}}
    return [(roles[d], rhs.dims[d]) for d in physical_order(rhs)
            if d != dn.kernel_output_feature]


def im2col_plan(spec: ConvSpec) -> tuple[list[tuple[str, int]], int, int, int] | None:
    """``(r dims, M, N, R)`` when :func:`emit_im2col` applies (module docstring)."""
    et = spec.y_et
    if et not in (T.F32, T.F64) or spec.x_et != et or spec.w_et != et:
        return None
    if spec.groups != 1 or spec.batch_groups != 1 or spec.ys[1] != 1:
        return None
    if any(wd.rhs_reversal for wd in spec.window) or min(spec.m, spec.opg, spec.k) == 0:
        return None
    r_dims = _r_dims(spec)
    if r_dims is None:
        return None
    m, n, r = spec.m, spec.opg, spec.k
    if m * r * et.byte_size > MAX_PATCH_BYTES or max(m, n, r) >= 2 ** 31 or \
            m * n * r < MIN_MACS:
        return None
    return r_dims, m, n, r


def emit_im2col(target: Target, module: ir.Module, name: str, spec: ConvSpec
                ) -> Im2col | None:
    """The im2col kernel of ``spec`` in ``module`` (buffers: input, kernel, output, then the
    patch matrix), or None when :func:`im2col_plan` declines."""
    plan = im2col_plan(spec)
    if plan is None:
        return None
    r_dims, M, N, R = plan
    total = M * R
    grid, block = launch_dims(total)
    if grid > MAX_GRID:
        return None
    m_dims = spec.m_dims()
    wide = total >= 2 ** 31 or spec.wide

    def body(f: KernelFrame) -> None:
        b = f.b
        ix = Ix(b, wide)
        ty = spec.acc
        x = b.bitcast(f.buffers[0], ty.as_pointer())
        p = b.bitcast(f.buffers[3], ty.as_pointer())

        def thread(tid: ir.Value) -> None:
            u64 = b.add(b.mul(f.block, c64(block)), tid)
            with b.if_then(b.icmp_signed("<", u64, c64(total))):
                u = ix.of(u64)
                m, r = b.udiv(u, ix.c(R)), b.urem(u, ix.c(R))
                mp = dict(zip((d for d, _ in m_dims), ix.split(m, [s for _, s in m_dims])))
                rp = dict(zip((d for d, _ in r_dims), ix.split(r, [s for _, s in r_dims])))
                ok = ir.Constant(ir.IntType(1), 1)
                off = ix.add(ix.mul(mp["b"], spec.xs[0]), ix.mul(rp["c"], spec.xs[1]))
                for i in range(spec.nsp):
                    inside, d = ix.tap(spec.window[i], spec.in_sizes[i], mp[f"s{i}"],
                                       rp[f"k{i}"])
                    ok = b.and_(ok, inside)
                    off = ix.add(off, ix.mul(d, spec.xs[2 + i]))
                slot = b.gep(p, [u])
                b.store(zero(ty), slot)
                with b.if_then(ok):
                    b.store(b.load(b.gep(x, [off])), slot)
        f.threads(thread)
    target.kernel(module, name, 4, block, body)
    return Im2col(name, grid, block, M, N, R, spec.y_et.name)


def blas_handle(device: Any) -> Any:
    """The cuBLAS handle convolutions use: None on the simulator or without cuBLAS."""
    if device.simulated:
        return None
    from .cublas import cublas
    return cublas(device)


class Im2colGemmThunk(Thunk):
    """A convolution as the im2col kernel then one cuBLAS gemm (module docstring)."""

    kind = "im2col-gemm"

    def __init__(self, instr: HloInstruction, device: Any, fn: Any, plan: Im2col,
                 handle: Any, x: int, w: int, y: int) -> None:
        self.instruction, self.handle, self.plan = instr, handle, plan
        self.patches = device.alloc(plan.patch_bytes)
        weakref.finalize(self, device.free, self.patches)
        self.launch = LaunchThunk(instr, device, fn, plan.name, plan.grid, plan.block,
                                  [x, w, y, self.patches])
        # row-major C[M, N] = P[M, R] B[R, N]  <=>  column-major C^T = B^T P^T
        self.args: list[Any] = [plan.dtype, 0, 0, plan.n, plan.m, plan.r, w, plan.n,
                                self.patches, plan.r, y, plan.n]

    def relocate(self, buffers: Any, x: Any, w: Any, y: Any) -> None:
        """Register the places holding the addresses of ``x``, ``w`` and ``y`` (buffer
        refs) with ``buffers``, so a call that rebinds them (parameters, outputs) moves
        them (``runtime.Buffers.track``)."""
        for i, ref in enumerate((x, w, y)):
            buffers.track(ref, self.launch.packed.slots, i)
        buffers.track(w, self.args, 6)
        buffers.track(y, self.args, 10)

    def run(self) -> None:
        self.launch.run()
        self.handle.gemm(*self.args)


__all__ = ["Im2col", "Im2colGemmThunk", "blas_handle", "emit_im2col", "im2col_plan",
           "MAX_PATCH_BYTES", "MIN_MACS", "OVER_TILED"]
