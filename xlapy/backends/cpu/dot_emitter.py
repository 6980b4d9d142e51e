"""Small matrix products as generated kernels: register-blocked GEMM without packing.

OpenBLAS packs both operands into panels before multiplying; for the batch-1 and
batch-32 products of recurrent cells and small MLPs (``f32[32,64] x [64,512]`` and the
like) the packing and the library call (through the thunk, several microseconds) cost as
much as the arithmetic, and a batch of small products (attention's per-head ones) costs a
call or its bookkeeping per matrix. Such a dot is emitted as a kernel (``kernel_api``
signature) that reads the operands where they are, in their layouts, and keeps a block of
the result in vector registers. As a kernel it also runs inside the native loop driver
(``native_loop.py``) and in runs of consecutive kernels, without Python dispatch.

The dot is a batch of products ``C[b] = A[b] @ B[b]`` (``A``: lhs as ``[M, K]``, ``B``: rhs
as ``[K, N]``; groups of dims that collapse into one strided dim, as ``blas_lib`` does).
Two kernel shapes, chosen from the element strides:

- **outer** (``B`` unit-stride along N): a tile of ``rows`` rows of ``C`` by ``vectors``
  vectors of columns is accumulated in registers; each step of K loads one row piece of
  ``B`` and broadcasts one element of ``A`` per row (any stride of ``A``). A tile is
  stored as vectors where ``C`` is unit-stride along N; a ``C`` that is unit-stride along
  M is computed as ``C^T = B^T A^T`` (operands swapped) when that makes ``B^T``
  unit-stride, and so is a product whose N is shorter than a vector while ``A^T`` is
  unit-stride along M (a few-way layer's weight gradient ``X^T @ G``), its tiles then
  stored an element at a time.
- **inner** (``A`` and ``B`` both unit-stride along K): ``rows x cols`` dot products, each a
  vector accumulated along K and summed across lanes at the end (any stride of ``C``).

Work units are blocks of ``rows`` rows of one matrix of the batch. The last row block,
the last column tile and the K remainder are emitted with their exact sizes (vectors of
the remaining width), so no bounds checks run in the inner loops. The vector width is
the host's (512-bit with AVX-512, else 256-bit).

Which dots take this path (``dot_kernel_plan.kernel_wanted``): ``f32``/``f64`` dots whose
operands and result have one element type, that fit one of the two shapes and have at
most ``MAX_KERNEL_MACS`` multiply-adds per matrix (batches of any length: attention's
per-head products); larger ones go to OpenBLAS (``blas.py``).
A ``kOutput`` fusion ``add(dot(a, b), d)`` (formed by the fusion pass for the dots this
path takes, and XLA's matrix-vector output fusion) adds ``d`` as the tile is stored.
The figures behind the limit are in docs/performance.md ("Measurements behind the CPU
backend's constants").
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir

from ...hlo import types as T
from ...hlo.ir import HloInstruction
from .dot_kernel_plan import (DotKernelPlan, INNER_COLS, OUTER_VECTORS, kernel_wanted)
from .kernel_api import KernelSpec, buffer_pointer, declare_kernel, kernel_buffers
from .kernel_support import PlannedEmitter, c64, carried_loop, for_loop
from .llvm_types import declare_function, llvm_type


# ----------------------------------------------------------------------------- emission
class _Emit:
    """The IR of one kernel from a :class:`DotKernelPlan`."""

    def __init__(self, module: ir.Module, name: str, plan: DotKernelPlan) -> None:
        self.p = plan
        self.fn, self.b = declare_kernel(module, name)
        self.t = llvm_type(plan.et)
        self.zero = ir.Constant(self.t, 0.0)
        b, fn = self.b, self.fn
        self.a = buffer_pointer(b, fn, plan.slot_a, self.t)
        self.bp = buffer_pointer(b, fn, plan.slot_b, self.t)
        self.c = buffer_pointer(b, fn, len(plan.instr.operands), self.t)
        self.d = buffer_pointer(b, fn, plan.slot_d, self.t) if plan.slot_d is not None \
            else None

    # ----- helpers
    def vtype(self, w: int) -> ir.VectorType:
        return ir.VectorType(self.t, w)

    def at(self, base: ir.Value, offset: Any) -> ir.Value:
        off = c64(offset) if isinstance(offset, int) else offset
        return self.b.gep(base, [off], inbounds=True)

    def add(self, *terms: Any) -> ir.Value:
        """The sum of ``i64`` values and ints (constants folded)."""
        const = sum(t for t in terms if isinstance(t, int))
        vals = [t for t in terms if not isinstance(t, int)]
        if not vals:
            return c64(const)
        out = vals[0]
        for v in vals[1:]:
            out = self.b.add(out, v)
        return self.b.add(out, c64(const)) if const else out

    def mul(self, v: ir.Value, s: int) -> Any:
        if s == 0:
            return 0
        return v if s == 1 else self.b.mul(v, c64(s))

    def vload(self, base: ir.Value, offset: Any, w: int) -> ir.Value:
        ptr = self.b.bitcast(self.at(base, offset), self.vtype(w).as_pointer())
        return self.b.load(ptr, align=self.p.et.byte_size)

    def vstore(self, value: ir.Value, base: ir.Value, offset: Any) -> None:
        ptr = self.b.bitcast(self.at(base, offset), value.type.as_pointer())
        self.b.store(value, ptr, align=self.p.et.byte_size)

    def addend(self, offset: ir.Value, w: int) -> ir.Value:
        """``w`` elements of the addend along N from ``offset`` (a vector load when they
        are adjacent, else one load per element)."""
        if w == 1 or self.p.sd[2] == 1:
            return self.vload(self.d, offset, w)
        v = ir.Constant(self.vtype(w), ir.Undefined)
        for i in range(w):
            x = self.b.load(self.at(self.d, self.add(offset, i * self.p.sd[2])))
            v = self.b.insert_element(v, x, c64(i))
        return v

    def splat(self, x: ir.Value, w: int) -> ir.Value:
        v = self.b.insert_element(ir.Constant(self.vtype(w), ir.Undefined), x, c64(0))
        return self.b.shuffle_vector(v, ir.Constant(self.vtype(w), ir.Undefined),
                                     ir.Constant(ir.VectorType(ir.IntType(32), w), [0] * w))

    def fma(self, x: ir.Value, y: ir.Value, z: ir.Value) -> ir.Value:
        """``x * y + z`` rounded once (``llvm.fma`` on vectors)."""
        ty = x.type
        suffix = f"v{ty.count}{'f32' if self.p.et == T.F32 else 'f64'}"
        fn = declare_function(self.b.module, f"llvm.fma.{suffix}", ty, [ty, ty, ty])
        return self.b.call(fn, [x, y, z])

    def vzero(self, w: int) -> ir.Value:
        return ir.Constant(self.vtype(w), [0.0] * w)

    def hsum(self, v: ir.Value, w: int) -> ir.Value:
        """The sum of a vector's lanes (halving while the width is even)."""
        b = self.b
        while w > 1 and w % 2 == 0:
            h = w // 2
            lo = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(ir.IntType(32), h),
                                                    list(range(h))))
            hi = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(ir.IntType(32), h),
                                                    list(range(h, w))))
            v, w = b.fadd(lo, hi), h
        total = b.extract_element(v, c64(0))
        for i in range(1, w):
            total = b.fadd(total, b.extract_element(v, c64(i)))
        return total

    def hsums(self, vectors: list[ir.Value], w: int) -> list[ir.Value]:
        """The lane sums of several vectors of width ``w``, sharing the shuffles: pairs of
        vectors are folded into one whose segments hold the halved segments of both, until
        every segment is one lane; then each sum is one lane of one vector."""
        b = self.b
        if w == 1 or w % 2:
            return [self.hsum(v, w) for v in vectors]
        i32 = ir.IntType(32)
        # each entry: (vector, owners of its segments, segment size)
        live = [(v, [j], w) for j, v in enumerate(vectors)]
        while len(live) > 1 and live[0][2] % 2 == 0:
            nxt = []
            if len(live) % 2:
                live.append((self.vzero(w), [None] * len(live[0][1]), live[0][2]))
            for (va, oa, seg), (vb, ob, _) in zip(live[::2], live[1::2]):
                h = seg // 2
                lo: list[int] = []
                hi: list[int] = []
                owners: list[int | None] = []
                for i in range(len(oa)):
                    for base, own in ((i * seg, oa[i]), (w + i * seg, ob[i])):
                        lo.extend(range(base, base + h))
                        hi.extend(range(base + h, base + seg))
                        owners.append(own)
                mask_lo = ir.Constant(ir.VectorType(i32, w), lo)
                mask_hi = ir.Constant(ir.VectorType(i32, w), hi)
                folded = b.fadd(b.shuffle_vector(va, vb, mask_lo),
                                b.shuffle_vector(va, vb, mask_hi))
                nxt.append((folded, owners, h))
            live = nxt
        sums: list[ir.Value | None] = [None] * len(vectors)
        for v, owners, seg in live:
            for i, own in enumerate(owners):
                if own is None:
                    continue
                total = b.extract_element(v, c64(i * seg))
                for lane in range(i * seg + 1, (i + 1) * seg):
                    total = b.fadd(total, b.extract_element(v, c64(lane)))
                sums[own] = total
        return sums

    # ----- the kernel
    def build(self) -> None:
        p, b = self.p, self.b
        blocks = p.row_blocks

        def unit(u: ir.Value) -> None:
            bi = b.udiv(u, c64(blocks)) if p.batch > 1 else None
            mb = b.urem(u, c64(blocks)) if p.batch > 1 else u
            m0 = b.mul(mb, c64(p.rows))
            base = [self.add(*([self.mul(bi, s[0])] if bi is not None else []),
                             self.mul(m0, s[1])) for s in (p.sa, p.sc, p.sd)]
            bb = self.mul(bi, p.sb[0]) if bi is not None else 0
            bb = c64(bb) if isinstance(bb, int) else bb
            tail = p.m % p.rows
            self.d0 = base[2]
            if not tail:
                self.row_block(p.rows, base[0], bb, base[1])
                return
            full = b.append_basic_block("full")
            last = b.append_basic_block("last")
            join = b.append_basic_block("join")
            b.cbranch(b.icmp_unsigned("==", mb, c64(blocks - 1)), last, full)
            for blk, rows in ((full, p.rows), (last, tail)):
                b.position_at_end(blk)
                self.row_block(rows, base[0], bb, base[1])
                b.branch(join)
            b.position_at_end(join)
        for_loop(b, self.fn.args[1], self.fn.args[2], unit, "unit")
        b.ret_void()

    def row_block(self, rows: int, a0: Any, b0: ir.Value, c0: Any) -> None:
        if self.p.kind == "outer":
            self.outer_block(rows, a0, b0, c0)
        else:
            self.inner_block(rows, a0, b0, c0)

    def outer_block(self, rows: int, a0: Any, b0: ir.Value, c0: Any) -> None:
        p, w = self.p, self.p.width
        vectors = min(OUTER_VECTORS, -(-p.n // w))
        span = vectors * w
        full = p.n // span
        if full:
            for_loop(self.b, 0, full, lambda j: self.outer_tile(
                rows, [w] * vectors, self.b.mul(j, c64(span)), a0, b0, c0), "ntile")
        rem = p.n - full * span
        if rem:
            widths = [w] * (rem // w) + ([rem % w] if rem % w else [])
            self.outer_tile(rows, widths, c64(full * span), a0, b0, c0)

    def outer_tile(self, rows: int, widths: list[int], n0: ir.Value, a0: Any, b0: ir.Value,
                   c0: Any) -> None:
        p, b = self.p, self.b
        offs = [sum(widths[:i]) for i in range(len(widths))]
        init = [self.vzero(w) for _ in range(rows) for w in widths]
        bcol = self.add(b0, n0)

        def step(kk: ir.Value, acc: list) -> list:
            brow = self.add(bcol, self.mul(kk, p.sb[1]))
            bv = [self.vload(self.bp, self.add(brow, o), w) for o, w in zip(offs, widths)]
            arow = self.add(a0, self.mul(kk, p.sa[2]))
            out = []
            for r in range(rows):
                x = b.load(self.at(self.a, self.add(arow, r * p.sa[1])))
                splats: dict[int, ir.Value] = {}
                for j, w in enumerate(widths):
                    if w not in splats:
                        splats[w] = self.splat(x, w)
                    out.append(self.fma(splats[w], bv[j], acc[r * len(widths) + j]))
            return out
        acc = carried_loop(b, 0, p.k, init, step, "k")
        crow = self.add(c0, self.mul(n0, p.sc[2]))
        drow = self.add(self.d0, self.mul(n0, p.sd[2])) if self.d is not None else None
        for r in range(rows):
            for j, (o, w) in enumerate(zip(offs, widths)):
                value = acc[r * len(widths) + j]
                if drow is not None:
                    value = b.fadd(value, self.addend(self.add(drow, r * p.sd[1] + o * p.sd[2]), w))
                if p.sc[2] == 1:
                    self.vstore(value, self.c, self.add(crow, r * p.sc[1] + o))
                    continue
                for i in range(w):      # C stored transposed: an element at a time
                    where = self.add(crow, r * p.sc[1] + (o + i) * p.sc[2])
                    b.store(b.extract_element(value, c64(i)), self.at(self.c, where))

    def inner_block(self, rows: int, a0: Any, b0: ir.Value, c0: Any) -> None:
        p = self.p
        full = p.n // INNER_COLS
        if full:
            for_loop(self.b, 0, full, lambda j: self.inner_tile(
                rows, INNER_COLS, self.b.mul(j, c64(INNER_COLS)), a0, b0, c0), "ntile")
        rem = p.n - full * INNER_COLS
        if rem:
            self.inner_tile(rows, rem, c64(full * INNER_COLS), a0, b0, c0)

    def inner_tile(self, rows: int, cols: int, n0: ir.Value, a0: Any, b0: ir.Value,
                   c0: Any) -> None:
        p, b, w = self.p, self.b, self.p.width
        arows = [self.add(a0, r * p.sa[1]) for r in range(rows)]
        bcols = [self.add(b0, self.mul(self.add(n0, c), p.sb[2])) for c in range(cols)]

        def products(koff: Any, width: int, acc: list) -> list:
            av = [self.vload(self.a, self.add(ar, koff), width) for ar in arows]
            bv = [self.vload(self.bp, self.add(bc, koff), width) for bc in bcols]
            return [self.fma(av[r], bv[c], acc[r * cols + c])
                    for r in range(rows) for c in range(cols)]
        init = [self.vzero(w) for _ in range(rows * cols)]
        steps = p.k // w
        acc = carried_loop(b, 0, steps, init,
                           lambda kk, acc: products(b.mul(kk, c64(w)), w, acc), "k")
        sums = self.hsums(acc, w)
        rem = p.k - steps * w
        if rem:
            tail = products(steps * w, rem, [self.vzero(rem)] * (rows * cols))
            sums = [b.fadd(s, t) for s, t in zip(sums, self.hsums(tail, rem))]
        for r in range(rows):
            for c in range(cols):
                value = sums[r * cols + c]
                if self.d is not None:
                    doff = self.add(self.d0, r * p.sd[1], self.mul(self.add(n0, c), p.sd[2]))
                    value = b.fadd(value, b.load(self.at(self.d, doff)))
                off = self.add(c0, r * p.sc[1], self.mul(self.add(n0, c), p.sc[2]))
                b.store(value, self.at(self.c, off))


class DotEmitter(PlannedEmitter):
    """A ``KernelEmitter`` for the dots :func:`kernel_wanted` accepts. The compiler asks it
    before handing a dot to OpenBLAS (``replaces_library``)."""

    kind = "dot"
    replaces_library = True

    def __init__(self, assignment: Any = None, width_bytes: int | None = None) -> None:
        """``width_bytes``: the vector size to emit for (default: the host's)."""
        super().__init__(assignment)
        self.width_bytes = width_bytes

    def analyze(self, instr: HloInstruction) -> DotKernelPlan | None:
        return kernel_wanted(instr, self.width_bytes)

    def build(self, module: ir.Module, name: str, plan: DotKernelPlan) -> KernelSpec:
        _Emit(module, name, plan).build()
        macs = plan.batch * plan.m * plan.n * plan.k
        return KernelSpec(name, plan.instr, kernel_buffers(plan.instr), units=plan.units,
                          cost=float(macs), notes=[plan.summary()])


__all__ = ["DotEmitter"]
