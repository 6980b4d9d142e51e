"""Dot and convolution kernels for ahead-of-time objects that call the BLAS library.

In the default link mode an object's dots and convolutions call ``?gemm`` of the OpenBLAS
the CPU backend already uses (``scipy-openblas32``: 32-bit integers, symbols prefixed
``scipy_``), as tfcompile links Eigen/MKL; the program links ``libscipy_openblas``
(:func:`blas_link_flags`). With ``blas=False`` the self-contained kernels of
``dot_kernel.py`` / ``conv_kernel.py`` are used instead. Anything these emitters decline
(integer or half types, several contracting dims, grouped or input-dilated convolutions,
layouts BLAS cannot describe) falls through to the self-contained kernels.

- :class:`BlasDotEmitter`: one unit per block of output rows of one batch matrix; the
  kernel makes one ``?gemm`` call per batch matrix its unit range touches (the whole dot
  is one call on one thread).
- :class:`BlasConvEmitter`: im2col + ``?gemm``. One unit per output row (the batch and
  every output spatial index but the last); a unit range is cut into blocks whose patch
  matrix ``[positions, taps x input features]`` fits :data:`SCRATCH_BYTES`, written into
  the caller's scratch buffer (padding taps are zeros), then multiplied by the kernel
  viewed as a ``[taps x input features, output features]`` matrix straight into the
  output. Such kernels take a fourth argument, ``i8* scratch`` (``KernelSpec`` notes
  ``scratch=N``: the bytes each thread needs).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from math import prod

from llvmlite import ir

from ..backends.cpu.blas import dot_dims
from ..backends.cpu.conv_plan import conv_geometry
from ..backends.cpu.elemental_data import delinearize
from ..backends.cpu.kernel_api import KernelSpec, buffer_pointer, kernel_buffers
from ..backends.cpu.kernel_support import c64, element_strides, for_loop
from ..backends.cpu.llvm_types import storage_type
from ..backends.cpu.plan_builder import library_target
from ..hlo.ir import HloInstruction
from .dot_kernel import f32_or_f64, open_kernel, strided_offset

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
I8P = I8.as_pointer()
#: The kernel type of kernels that need scratch memory: ``void(i8**, i64, i64, i8*)``.
SCRATCH_KERNEL_TYPE = ir.FunctionType(ir.VoidType(), [I8P.as_pointer(), I64, I64, I8P])
#: Patch-matrix bytes per thread a convolution kernel may use (fits in L2).
SCRATCH_BYTES = 512 * 1024
#: Kernel dims with at most this many taps are unrolled in the patch gather.
UNROLL = 8
#: Output rows per unit of a dot kernel, at most (units are what threads share).
DOT_ROWS_PER_UNIT = 64
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_INT32_MAX = 2**31 - 1
BLAS_SYMBOL_PREFIX = "scipy_"


def blas_library() -> tuple[str, str]:
    """``(directory, library name)`` of the OpenBLAS the CPU backend links."""
    import scipy_openblas32
    return scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library()


def blas_link_flags() -> list[str]:
    """Linker arguments for an object that calls BLAS: the library, an rpath to it,
    libm and pthreads."""
    lib_dir, lib = blas_library()
    return [f"-L{lib_dir}", f"-l{lib}", f"-Wl,-rpath,{lib_dir}", "-lm", "-lpthread"]


def blas_library_path() -> str:
    """The shared library file :func:`blas_link_flags` links."""
    lib_dir, lib = blas_library()
    return os.path.join(lib_dir, f"lib{lib}.so")


@dataclass(frozen=True)
class Matrix:
    """A strided matrix view: ``rows x cols`` with element strides ``rs`` and ``cs``."""

    rows: int
    cols: int
    rs: int
    cs: int

    def form(self) -> tuple[int, int] | None:
        """``(transpose flag, leading dim)`` describing it to row-major BLAS, or None."""
        rs = self.rs if self.rows > 1 else max(self.cols, 1)
        cs = self.cs if self.cols > 1 else 1
        if cs == 1 and rs >= max(self.cols, 1):
            return _NO_TRANS, rs
        rs_t = self.rs if self.rows > 1 else 1
        cs_t = self.cs if self.cols > 1 else max(self.rows, 1)
        if rs_t == 1 and cs_t >= max(self.rows, 1):
            return _TRANS, cs_t
        return None

    def t(self) -> "Matrix":
        return Matrix(self.cols, self.rows, self.cs, self.rs)


def gemm_plan(a: Matrix, bm: Matrix, c: Matrix) -> tuple | None:
    """How ``C = A @ B`` maps onto one ``?gemm`` call: ``(swap, ta, lda, tb, ldb, ldc)``
    (``swap``: compute ``C^T = B^T A^T``), or None when BLAS cannot describe it."""
    for swap in (False, True):
        x, y, z = (bm.t(), a.t(), c.t()) if swap else (a, bm, c)
        fz = z.form()
        if fz is None or fz[0] != _NO_TRANS:
            continue
        fx, fy = x.form(), y.form()
        if fx is None or fy is None:
            continue
        dims_ok = all(v <= _INT32_MAX for v in (z.rows, z.cols, x.cols, fx[1], fy[1], fz[1]))
        if dims_ok:
            return swap, fx[0], fx[1], fy[0], fy[1], fz[1]
    return None


def declare_gemm(module: ir.Module, ty: ir.Type) -> ir.Function:
    """``cblas_?gemm`` of the linked OpenBLAS (row-major interface, 32-bit integers)."""
    name = f"{BLAS_SYMBOL_PREFIX}cblas_{'s' if ty == ir.FloatType() else 'd'}gemm"
    fn = module.globals.get(name)
    if fn is None:
        p = ty.as_pointer()
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [
            I32, I32, I32, I32, I32, I32, ty, p, I32, p, I32, ty, p, I32]), name=name)
    return fn


def call_gemm(b: ir.IRBuilder, module: ir.Module, plan: tuple, ty: ir.Type, m: ir.Value,
              n: int, k: int, a: ir.Value, bp: ir.Value, c: ir.Value) -> None:
    """``C[m x n] = A[m x k] @ B[k x n]`` per ``plan`` (:func:`gemm_plan`); ``m`` is an
    i64 value (the rows of this call), the pointers are typed element pointers."""
    swap, ta, lda, tb, ldb, ldc = plan
    i32 = lambda v: ir.Constant(I32, v)                          # noqa: E731
    m32 = b.trunc(m, I32)
    if swap:       # C^T[n x m] = B^T[n x k] @ A^T[k x m]
        args = [i32(_ROW_MAJOR), i32(ta), i32(tb), i32(n), m32, i32(k), ir.Constant(ty, 1.0),
                bp, i32(lda), a, i32(ldb), ir.Constant(ty, 0.0), c, i32(ldc)]
    else:
        args = [i32(_ROW_MAJOR), i32(ta), i32(tb), m32, i32(n), i32(k), ir.Constant(ty, 1.0),
                a, i32(lda), bp, i32(ldb), ir.Constant(ty, 0.0), c, i32(ldc)]
    b.call(declare_gemm(module, ty), args)


def _float_op(instr: HloInstruction, opcode: str) -> HloInstruction | None:
    """The f32/f64 ``opcode`` op ``instr`` computes (itself or a kCustom fusion's root)."""
    target = library_target(instr)
    ok = target is not None and target[0].opcode == opcode and f32_or_f64(target[0])
    return target[0] if ok else None


class BlasDotEmitter:
    """``dot`` -> ``?gemm`` calls (module docstring)."""

    def _plan(self, instr: HloInstruction):
        dot = _float_op(instr, "dot")
        if dot is None:
            return None
        dims = dot_dims(dot)
        if len(dims.lhs_contract) != 1 or len(dims.lhs_free) > 1 or len(dims.rhs_free) > 1:
            return None
        ls, rs, os_ = dot.operands[0].shape, dot.operands[1].shape, dot.shape
        k = ls.dims[dims.lhs_contract[0]]
        if os_.num_elements == 0 or k == 0:
            return None
        lstr, rstr, ostr = element_strides(ls), element_strides(rs), element_strides(os_)
        nb = len(dims.lhs_batch)
        m = ls.dims[dims.lhs_free[0]] if dims.lhs_free else 1
        n = rs.dims[dims.rhs_free[0]] if dims.rhs_free else 1
        a = Matrix(m, k, lstr[dims.lhs_free[0]] if dims.lhs_free else 0,
                   lstr[dims.lhs_contract[0]])
        bm = Matrix(k, n, rstr[dims.rhs_contract[0]], rstr[dims.rhs_free[0]] if dims.rhs_free
                    else 0)
        c = Matrix(m, n, ostr[nb] if dims.lhs_free else 0,
                   ostr[os_.rank - 1] if dims.rhs_free else 0)
        plan = gemm_plan(a, bm, c)
        if plan is None:
            return None
        return dot, dims, plan, (m, n, k), (a, bm, c), (lstr, rstr, ostr)

    def can_emit(self, instr: HloInstruction) -> bool:
        return self._plan(instr) is not None

    def emit(self, module: ir.Module, name: str, instr: HloInstruction) -> KernelSpec:
        dot, dims, plan, (m, n, k), (a, bm, c), (lstr, rstr, ostr) = self._plan(instr)
        _, feeds = library_target(instr)
        ty = storage_type(dot.shape.element_type)
        fn, b, buffers, (lp, rp, op) = open_kernel(module, name, instr, dot, feeds)
        nb = len(dims.lhs_batch)
        batch_dims = dot.shape.dims[:nb]
        rows = -(-m // -(-m // DOT_ROWS_PER_UNIT))      # m cut into even blocks
        blocks = -(-m // rows)                          # units per batch matrix
        begin, end = fn.args[1], fn.args[2]

        def per_batch(bi: ir.Value) -> None:
            # the units of batch matrix bi inside [begin, end): rows [lo, hi)
            first = b.mul(bi, c64(blocks))
            u0 = _max(b, begin, first)
            u1 = _min(b, end, b.add(first, c64(blocks)))
            lo = b.mul(b.sub(u0, first), c64(rows))
            hi = _min(b, b.mul(b.sub(u1, first), c64(rows)), c64(m))
            bidx = delinearize(b, bi, batch_dims)
            loff = b.add(strided_offset(b, bidx, [lstr[d] for d in dims.lhs_batch]),
                         b.mul(lo, c64(a.rs)))
            roff = strided_offset(b, bidx, [rstr[d] for d in dims.rhs_batch])
            ooff = b.add(strided_offset(b, bidx, ostr[:nb]), b.mul(lo, c64(c.rs)))
            call_gemm(b, module, plan, ty, b.sub(hi, lo), n, k,
                      b.gep(lp, [loff], inbounds=True), b.gep(rp, [roff], inbounds=True),
                      b.gep(op, [ooff], inbounds=True))
        for_loop(b, b.udiv(begin, c64(blocks)),
                 b.udiv(b.add(end, c64(blocks - 1)), c64(blocks)), per_batch, "batch")
        b.ret_void()
        units = prod(batch_dims) * blocks
        return KernelSpec(name, instr, buffers, units=units,
                          cost=float(prod(batch_dims) * m * n * k))


def _max(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


class BlasConvEmitter:
    """``convolution`` -> im2col into scratch + ``?gemm`` (module docstring)."""

    def _plan(self, instr: HloInstruction):
        conv = _float_op(instr, "convolution")
        if conv is None:
            return None
        try:
            g = conv_geometry(conv)
        except Exception:                # noqa: BLE001 - malformed: leave it to the verifier
            return None
        dn = g.dn
        if (g.groups != 1 or g.batch_groups != 1 or not dn.input_spatial or g.o == 0
                or conv.shape.num_elements == 0 or any(w.lhs_dilate != 1 for w in g.window)):
            return None
        xs, ws, ys = (s.shape for s in (*conv.operands, conv))
        xstr, wstr, ystr = element_strides(xs), element_strides(ws), element_strides(ys)
        # the kernel as a [taps x input features, output features] matrix: its K dims in
        # memory order must be dense
        kdims = sorted([*dn.kernel_spatial, dn.kernel_input_feature],
                       key=lambda d: (-wstr[d], d))
        wide = [d for d in kdims if ws.dims[d] != 1] or kdims[-1:]
        for hi, lo in zip(wide, wide[1:]):
            if wstr[hi] != wstr[lo] * ws.dims[lo]:
                return None
        ktot = g.c * prod(g.kernel)
        last = dn.output_spatial[-1]
        wout = ys.dims[last]
        row_bytes = wout * ktot * xs.element_type.byte_size
        if ktot == 0 or row_bytes > SCRATCH_BYTES:
            return None
        wmat = Matrix(ktot, g.o, wstr[wide[-1]], wstr[dn.kernel_output_feature])
        # output rows (batch, spatial but the last) blocked together when their positions
        # are evenly spaced; one row per block otherwise
        row_dims = [dn.output_batch, *dn.output_spatial[:-1]]
        spread = [d for d in row_dims + [last] if ys.dims[d] != 1]
        even = all(ystr[hi] == ystr[lo] * ys.dims[lo] for hi, lo in zip(spread, spread[1:]))
        # the distance between consecutive positions of a block (of a row when not even)
        pos_stride = ystr[spread[-1]] if even and spread else ystr[last]
        block_rows = max(1, SCRATCH_BYTES // row_bytes) if even else 1
        cm = Matrix(wout * block_rows, g.o, pos_stride, ystr[dn.output_feature])
        plan = gemm_plan(Matrix(wout * block_rows, ktot, ktot, 1), wmat, cm)
        if plan is None:
            return None
        return conv, g, kdims, ktot, row_dims, block_rows, plan, (xstr, wstr, ystr)

    def can_emit(self, instr: HloInstruction) -> bool:
        return self._plan(instr) is not None

    def emit(self, module: ir.Module, name: str, instr: HloInstruction) -> KernelSpec:
        conv, g, kdims, ktot, row_dims, block_rows, plan, strides = self._plan(instr)
        xstr, wstr, ystr = strides
        _, feeds = library_target(instr)
        dn = g.dn
        ys = conv.shape
        ty = storage_type(ys.element_type)
        buffers = kernel_buffers(instr)
        fn = ir.Function(module, SCRATCH_KERNEL_TYPE, name=name)
        fn.args[0].name, fn.args[1].name, fn.args[2].name, fn.args[3].name = (
            "buffers", "begin", "end", "scratch")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        slots = {(kb.operand, kb.index): i for i, kb in enumerate(buffers) if kb.role == "operand"}
        out_slot = next(i for i, kb in enumerate(buffers) if kb.role == "output")
        xp, wp = (buffer_pointer(b, fn, slots[(feeds[k], ())], ty) for k in range(2))
        yp = buffer_pointer(b, fn, out_slot, ty)
        scratch = b.bitcast(fn.args[3], ty.as_pointer())
        last = dn.output_spatial[-1]
        wout = ys.dims[last]
        row_sizes = [ys.dims[d] for d in row_dims]
        nrows = prod(row_sizes)
        begin, end = fn.args[1], fn.args[2]
        zero = ir.Constant(ty, 0.0)
        # spatial dim j of the kernel -> window/stride data, and whether it is the last
        spatial_of = {d: j for j, d in enumerate(dn.kernel_spatial)}

        def block(blk: ir.Value) -> None:
            r0 = _max(b, begin, b.mul(blk, c64(block_rows)))
            r1 = _min(b, end, b.mul(b.add(blk, c64(1)), c64(block_rows)))

            def row(r: ir.Value) -> None:
                idx = dict(zip(row_dims, delinearize(b, r, row_sizes)))
                prow = b.mul(b.sub(r, r0), c64(wout * ktot))

                def position(w: ir.Value) -> None:
                    idx[last] = w
                    dst = b.add(prow, b.mul(w, c64(ktot)))
                    base = b.mul(idx[dn.output_batch], c64(xstr[dn.input_batch]))
                    self._gather(b, g, kdims, spatial_of, idx, base, ty, xp, scratch, dst,
                                 xstr, zero)
                for_loop(b, 0, wout, position, "w")
            for_loop(b, r0, r1, row, "row")
            first = dict(zip(row_dims, delinearize(b, r0, row_sizes)))
            ooff = strided_offset(b, [first[d] for d in row_dims], [ystr[d] for d in row_dims])
            call_gemm(b, module, plan, ty, b.mul(b.sub(r1, r0), c64(wout)), g.o, ktot, scratch,
                      wp, b.gep(yp, [ooff], inbounds=True))
        for_loop(b, b.udiv(begin, c64(block_rows)),
                 b.udiv(b.add(end, c64(block_rows - 1)), c64(block_rows)), block, "block")
        b.ret_void()
        scratch_bytes = block_rows * wout * ktot * ys.element_type.byte_size
        return KernelSpec(name, instr, buffers, units=nrows,
                          cost=float(ys.num_elements * ktot),
                          notes=[f"scratch={scratch_bytes}"])

    @staticmethod
    def _gather(b, g, kdims, spatial_of, idx, base, ty, xp, scratch, dst, xstr, zero) -> None:
        """One patch-matrix row: for each K index (the kernel's K dims in memory order)
        the input element the tap reads, or zero in the padding. Kernel dims of at most
        :data:`UNROLL` taps are unrolled; when the input feature is the innermost K dim,
        a tap's features are one copy (or one zero fill) chosen by a branch."""
        dn = g.dn

        def loop(n: int, body, name: str) -> None:
            if n <= UNROLL:
                for t in range(n):
                    body(c64(t))
            else:
                for_loop(b, 0, n, body, name)

        def features(xoff: ir.Value, valid: ir.Value, col: ir.Value) -> None:
            xs = xstr[dn.input_feature]
            with b.if_else(valid) as (inside, padding):
                with inside:
                    loop(g.c, lambda t: b.store(
                        b.load(b.gep(xp, [b.add(xoff, b.mul(t, c64(xs)))], inbounds=True)),
                        b.gep(scratch, [b.add(dst, b.add(col, t))], inbounds=True)), "ci")
                with padding:
                    loop(g.c, lambda t: b.store(
                        zero, b.gep(scratch, [b.add(dst, b.add(col, t))], inbounds=True)), "cz")

        def level(i: int, xoff: ir.Value, valid: ir.Value, col: ir.Value) -> None:
            if i == len(kdims):
                x = b.load(b.gep(xp, [b.select(valid, xoff, c64(0))], inbounds=True))
                b.store(b.select(valid, x, zero), b.gep(scratch, [b.add(dst, col)],
                                                        inbounds=True))
                return
            d = kdims[i]
            if i == len(kdims) - 1 and d == dn.kernel_input_feature:
                features(xoff, valid, col)
                return
            inner = prod(len_of(g, kd) for kd in kdims[i + 1:])

            def body(t: ir.Value) -> None:
                ncol = b.add(col, b.mul(t, c64(inner)))
                if d == dn.kernel_input_feature:
                    level(i + 1, b.add(xoff, b.mul(t, c64(xstr[dn.input_feature]))), valid,
                          ncol)
                    return
                j = spatial_of[d]
                wd = g.window[j]
                tap = b.sub(c64(g.kernel[j] - 1), t) if wd.rhs_reversal else t
                pos = b.sub(b.add(b.mul(idx[dn.output_spatial[j]], c64(wd.stride)),
                                  b.mul(tap, c64(wd.rhs_dilate))), c64(wd.pad_lo))
                inside = b.and_(b.icmp_signed(">=", pos, c64(0)),
                                b.icmp_signed("<", pos, c64(g.spatial[j])))
                level(i + 1, b.add(xoff, b.mul(b.select(inside, pos, c64(0)),
                                               c64(xstr[dn.input_spatial[j]]))),
                      b.and_(valid, inside), ncol)
            loop(len_of(g, d), body, f"k{i}")
        level(0, base, ir.Constant(ir.IntType(1), 1), c64(0))


def len_of(g, d: int) -> int:
    """The size of kernel dim ``d`` (an input-feature or a spatial dim of the kernel)."""
    if d == g.dn.kernel_input_feature:
        return g.c
    return g.kernel[list(g.dn.kernel_spatial).index(d)]


def scratch_bytes(spec: KernelSpec) -> int:
    """The scratch bytes per thread a kernel needs (0: a plain 3-argument kernel)."""
    for note in spec.notes:
        if note.startswith("scratch="):
            return int(note.split("=", 1)[1])
    return 0


__all__ = ["BlasDotEmitter", "BlasConvEmitter", "SCRATCH_KERNEL_TYPE", "blas_link_flags",
           "blas_library_path", "gemm_plan", "Matrix", "scratch_bytes"]
