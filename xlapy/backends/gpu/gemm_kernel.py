"""The backend's own matrix product kernel, for dots when cuBLAS is not there (and always on
the simulator): shared-memory tiles, a block per 16x16 tile of the output.

The dots are those :func:`~xlapy.backends.gpu.cublas.gemm_supported` accepts (batch dims
leading, the contracting dim first or last of each operand, row-major ``f32``/``f64``). Block
``(batch, tile row, tile column)`` has 256 threads, thread ``(ty, tx)`` owning output
element ``(16*bm + ty, 16*bn + tx)``. For each 16-wide slice of ``k`` the threads load one
element each of the A and B tiles into shared memory (zeros outside the matrices), a
barrier, then each accumulates its 16 products in order, and a barrier again -- the loop
over the slices is uniform across the block, so its barriers are reached by every thread.
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir

from ...hlo.ir import HloInstruction
from ..cpu.kernel_api import kernel_buffers
from ..cpu.kernel_support import c64, for_loop
from ..cpu.llvm_types import llvm_type
from .cublas import _geometry
from .kernels import GpuKernel
from .simt import KernelFrame, Target

TILE = 16


class GemmKernelEmitter:
    """Tiled GPU kernels for the dots cuBLAS would compute (module docstring)."""

    def __init__(self, assignment: Any, target: Target) -> None:
        self.target = target

    def emit(self, name: str, instr: HloInstruction) -> GpuKernel | None:
        g = _geometry(instr)
        if g is None:
            return None
        tm, tn = -(-g.m // TILE), -(-g.n // TILE)
        grid = g.batch * tm * tn
        if grid >= 2 ** 31:
            return None
        ty = llvm_type(instr.shape.element_type)
        module = self.target.new_module(name)
        buffers = kernel_buffers(instr)

        def body(f: KernelFrame) -> None:
            b = f.b
            a_ptr = b.bitcast(f.buffers[0], ty.as_pointer())
            b_ptr = b.bitcast(f.buffers[1], ty.as_pointer())
            c_ptr = b.bitcast(f.buffers[2], ty.as_pointer())
            bz = b.udiv(f.block, c64(tm * tn))
            rest = b.urem(f.block, c64(tm * tn))
            m0 = b.mul(b.udiv(rest, c64(tn)), c64(TILE))
            n0 = b.mul(b.urem(rest, c64(tn)), c64(TILE))
            a_base = b.mul(bz, c64(g.m * g.k))
            b_base = b.mul(bz, c64(g.k * g.n))
            c_base = b.mul(bz, c64(g.m * g.n))
            a_tile, b_tile = f.shared(ty, TILE * TILE), f.shared(ty, TILE * TILE)
            acc = f.per_thread(ty)
            zero = ir.Constant(ty, 0.0)
            f.threads(lambda t: acc.store(t, zero))

            def lanes(t: ir.Value) -> tuple[ir.Value, ir.Value]:
                return b.udiv(t, c64(TILE)), b.urem(t, c64(TILE))

            def load(ptr, base, row, col, rows, cols, k_first_rows: bool) -> ir.Value:
                """Element (row, col) of a rows x cols matrix stored row-major, or its
                transpose when ``k_first_rows`` is False (0 outside)."""
                ok = b.and_(b.icmp_unsigned("<", row, c64(rows)),
                            b.icmp_unsigned("<", col, c64(cols)))
                off = b.add(b.mul(row, c64(cols)), col) if k_first_rows else \
                    b.add(b.mul(col, c64(rows)), row)
                safe = b.select(ok, b.add(base, off), base)
                return b.select(ok, b.load(b.gep(ptr, [safe])), zero)

            def slice_k(kt: ir.Value) -> None:
                k0 = b.mul(kt, c64(TILE))

                def fill(t: ir.Value) -> None:
                    r, c = lanes(t)
                    # A as m x k: [m, k] row-major, or [k, m] (lhs_k_first) read transposed
                    av = load(a_ptr, a_base, b.add(m0, r), b.add(k0, c), g.m, g.k,
                              not g.lhs_k_first)
                    bv = load(b_ptr, b_base, b.add(k0, r), b.add(n0, c), g.k, g.n,
                              g.rhs_k_first)
                    b.store(av, b.gep(a_tile, [t]))
                    b.store(bv, b.gep(b_tile, [t]))
                f.threads(fill)
                f.barrier()

                def accumulate(t: ir.Value) -> None:
                    r, c = lanes(t)
                    s = acc.load(t)
                    for kk in range(TILE):
                        x = b.load(b.gep(a_tile, [b.add(b.mul(r, c64(TILE)), c64(kk))]))
                        y = b.load(b.gep(b_tile, [b.add(c64(kk * TILE), c)]))
                        s = b.fadd(s, b.fmul(x, y))
                    acc.store(t, s)
                f.threads(accumulate)
                f.barrier()
            for_loop(b, c64(0), c64(-(-g.k // TILE)), slice_k, "kslice")

            def store(t: ir.Value) -> None:
                r, c = lanes(t)
                row, col = b.add(m0, r), b.add(n0, c)
                ok = b.and_(b.icmp_unsigned("<", row, c64(g.m)),
                            b.icmp_unsigned("<", col, c64(g.n)))
                with b.if_then(ok):
                    b.store(acc.load(t), b.gep(c_ptr, [b.add(c_base, b.add(
                        b.mul(row, c64(g.n)), col))]))
            f.threads(store)
        self.target.kernel(module, name, len(buffers), TILE * TILE, body)
        return GpuKernel(name, instr, buffers, grid, TILE * TILE, "gemm-tiled", module,
                         notes=[f"tiled gemm {g.batch}x[{g.m}x{g.k}]x[{g.k}x{g.n}]"])


__all__ = ["GemmKernelEmitter", "TILE"]
