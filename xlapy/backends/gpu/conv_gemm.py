"""The tiled implicit-GEMM convolution kernel (``convolution.py`` says when it is used).

Per group ``q`` of the ``G * Bg`` groups the convolution is ``C[M, N] = A[M, K] B[K, N]``:
row ``m`` of ``C`` is an output position (the output's non-feature dims in its physical
order), column ``n`` an output feature of the group, and ``k = (taps..., c)`` runs over the
window taps and the group's input features, ``A[m, k]`` being the input element the tap
reads (zero in padding and dilation holes) and ``B[k, n]`` the kernel element. Neither is
materialized: block ``(split, q, tile row, tile column)`` of 256 threads computes a
``64 x 64`` tile of ``C``, thread ``(ty, tx)`` the 4 x 4 elements ``(4 ty + i, 4 tx + j)``.
For each 16-wide slice of ``k`` every thread stores four elements of the ``A`` tile and
four of the ``B`` tile into shared memory (converted to the accumulator type; ``k``-major
rows padded to ``64 + 4`` elements against bank conflicts), a barrier, then gathers its
eight elements of the next slice from global memory into registers (their latency
overlapping what follows) and makes 16 rank-one updates of its 16 accumulators (``fma``),
each reading its 4 ``A`` and 4 ``B`` values with one 16-byte vector load apiece, a barrier
-- the slice loop and its prefetch condition are uniform over the block, so every thread
reaches every barrier.

Which tile element a thread gathers follows the operand's layout: consecutive threads take
consecutive ``k`` when the input features (kernel: its input features) are the operand's
contiguous dim (NHWC activations, an input gradient's ``01oi`` kernel), else consecutive
rows (``m``) or columns (``n``) -- the weight gradient ``f01b_i01o->01bf`` reads its
activations along the output's minor dim and its output gradient along its features -- so
the loads of a warp are coalesced in the forms CNNs emit.

Weight gradients have few outputs and long sums: when the tiles alone would give fewer
than :data:`FILL_BLOCKS` blocks, ``K`` is split into ``S`` ranges of whole slices; block
``(s, ...)`` writes its partial tile to a scratch ``[S, output]`` array (every element, so
nothing needs zeroing) and a second kernel adds the ``S`` partials in order and rounds
them into the output (deterministic, no atomics).
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from ..cpu.kernel_support import c64, for_loop
from ..cpu.llvm_types import F64
from .convolution import I32, ConvSpec, Ix, load_acc, multiply_add, store_acc, zero
from .kernels import MAX_GRID, GpuKernel, launch_dims
from .simt import KernelFrame, Target

BM = BN = 64          # tile of C
BK = 16               # slice of K
PAD = 4               # shared rows are BM + PAD long: fewer bank conflicts, 16-byte rows
THREADS = 256
MICRO = 4             # each thread: MICRO x MICRO elements of the tile
LOADS = BM * BK // THREADS
#: Blocks that keep a large GPU busy (about four per SM of an H100/H200, the most that fit
#: one SM's registers at 256 threads each).
FILL_BLOCKS = 512
#: Fewest slices of K per split range.
MIN_SLICES = 8


def split_count(blocks: int, slices: int) -> int:
    """Ranges ``K`` is split into (module docstring), each of at least MIN_SLICES slices."""
    if blocks >= FILL_BLOCKS or slices < 2 * MIN_SLICES:
        return 1
    s = min(-(-FILL_BLOCKS // blocks), slices // MIN_SLICES)
    per = -(-slices // s)
    return -(-slices // per)


def emit_tiled(target: Target, name: str, spec: ConvSpec) -> GpuKernel | None:
    """The tiled kernel for ``spec`` (module docstring), None if the grid is too large."""
    M, N, K = spec.m, spec.opg, spec.k
    ng = spec.groups * spec.batch_groups
    tm, tn = -(-M // BM), -(-N // BN)
    base = ng * tm * tn
    slices = -(-K // BK)
    total = spec.out_elems
    # the partials' indices (split x output) stay in the kernel's index type
    splits = min(split_count(base, slices), max(1, (2 ** 31 - 1) // max(total, 1)))
    per = -(-slices // splits)
    splits = -(-slices // per)
    if base * splits > MAX_GRID or (splits > 1 and spec.wide):
        return None
    acc_bytes = 8 if spec.acc is F64 else 4
    scratch = splits * total * acc_bytes if splits > 1 else 0
    module = target.new_module(name)
    buffers = list(spec.buffers)
    nbuf = len(buffers) + (1 if scratch else 0)
    m_dims = spec.m_dims()
    y_stride = {"b": spec.ys[0], **{f"s{i}": spec.ys[2 + i] for i in range(spec.nsp)}}
    # gathering order (module docstring): along k when the features are contiguous
    a_along_k = spec.xs[1] == 1
    b_along_n = spec.ws[0] == 1 or spec.ws[1] != 1
    r_sizes = [*spec.kernel, spec.cg]

    def body(f: KernelFrame) -> None:
        b = f.b
        ix = Ix(b, spec.wide)
        xb, wb, yb = f.buffers[:3]
        a_tile = f.shared(spec.acc, BK * (BM + PAD))      # [k][m]
        b_tile = f.shared(spec.acc, BK * (BN + PAD))      # [k][n]
        accs = [f.per_thread(spec.acc) for _ in range(MICRO * MICRO)]
        val = f.entry_alloca(spec.acc)
        blk = ix.of(f.block)
        s, q, bm, bn = ix.split(blk, [splits, ng, tm, tn])
        bgi, g = (b.udiv(q, ix.c(spec.groups)), b.urem(q, ix.c(spec.groups))) \
            if spec.groups != 1 else (q, ix.c(0))
        m0, n0 = ix.mul(bm, BM), ix.mul(bn, BN)
        f0 = ix.add(ix.mul(q, spec.opg), n0)          # first output feature of the tile
        xbase = ix.add(ix.mul(bgi, spec.nb * spec.xs[0]), ix.mul(g, spec.cg * spec.xs[1]))

        def clear(t: ir.Value) -> None:
            for a in accs:
                a.store(t, zero(spec.acc))
        f.threads(clear)

        def m_parts(m: ir.Value) -> dict[str, ir.Value]:
            return dict(zip((r for r, _ in m_dims), ix.split(m, [sz for _, sz in m_dims])))

        def gather(cond: ir.Value, offset, base: ir.Value, et) -> ir.Value:
            """The element at ``offset()`` where ``cond``, else zero (no load)."""
            b.store(zero(spec.acc), val)
            with b.if_then(cond):
                b.store(load_acc(b, base, et, offset(), spec.acc), val)
            return b.load(val)

        def a_element(m: ir.Value, r: ir.Value) -> ir.Value:
            parts = m_parts(m)
            *ks, ci = ix.split(r, r_sizes)
            ok = b.and_(b.icmp_unsigned("<", m, ix.c(M)), b.icmp_unsigned("<", r, ix.c(K)))
            off = ix.add(xbase, ix.mul(parts["b"], spec.xs[0]), ix.mul(ci, spec.xs[1]))
            for i, k in enumerate(ks):
                inside, d = ix.tap(spec.window[i], spec.in_sizes[i], parts[f"s{i}"], k)
                ok = b.and_(ok, inside)
                off = ix.add(off, ix.mul(d, spec.xs[2 + i]))
            return gather(ok, lambda: off, xb, spec.x_et)

        def b_element(r: ir.Value, n: ir.Value) -> ir.Value:
            *ks, ci = ix.split(r, r_sizes)
            ok = b.and_(b.icmp_unsigned("<", r, ix.c(K)), b.icmp_unsigned("<", n, ix.c(N)))
            off = ix.add(ix.mul(ix.add(f0, n), spec.ws[0]), ix.mul(ci, spec.ws[1]))
            for i, k in enumerate(ks):
                wd = spec.window[i]
                kk = b.sub(ix.c(spec.kernel[i] - 1), k) if wd.rhs_reversal else k
                off = ix.add(off, ix.mul(kk, spec.ws[2 + i]))
            return gather(ok, lambda: off, wb, spec.w_et)

        def coords(e: ir.Value, rows: int, cols: int, rows_fastest: bool):
            """(row, column) of element ``e`` of a rows x cols tile, consecutive ``e``
            down a column when ``rows_fastest`` else along a row."""
            if rows_fastest:
                return b.urem(e, ix.c(rows)), b.udiv(e, ix.c(rows))
            return b.udiv(e, ix.c(cols)), b.urem(e, ix.c(cols))

        vec = ir.VectorType(spec.acc, MICRO)
        # 16-byte aligned vector loads on the GPU (the shared rows are); the simulator's
        # per-block arrays are only element-aligned
        align = 16 if not f.target.simulated else (8 if spec.acc is F64 else 4)

        def micro(tile: ir.Value, first: ir.Value) -> list[ir.Value]:
            """The MICRO consecutive elements of a shared tile from ``first``: one vector
            load (``ld.shared.v4``)."""
            v = b.load(b.bitcast(b.gep(tile, [first]), vec.as_pointer()), align=align)
            return [b.extract_element(v, ir.Constant(I32, i)) for i in range(MICRO)]

        staged = [(f.per_thread(spec.acc), f.per_thread(spec.acc)) for _ in range(LOADS)]

        def slots(t: ir.Value, j: int):
            """Tile coordinates of thread ``t``'s ``j``-th A and B elements."""
            e = ix.add(t, j * THREADS)
            return coords(e, BM, BK, not a_along_k), coords(e, BK, BN, not b_along_n)

        def gather_slice(kt64: ir.Value) -> Callable[[ir.Value], None]:
            """Read the thread's elements of slice ``kt`` from global memory into registers
            (issued before the previous slice's multiply-adds, so their latency overlaps)."""
            k0 = ix.mul(ix.of(kt64), BK)

            def body(t64: ir.Value) -> None:
                for j, ((row, col), (kr, cb)) in enumerate(
                        slots(ix.of(t64), j) for j in range(LOADS)):
                    staged[j][0].store(t64, a_element(ix.add(m0, row), ix.add(k0, col)))
                    staged[j][1].store(t64, b_element(ix.add(k0, kr), ix.add(n0, cb)))
            return body

        def slice_k(kt64: ir.Value) -> None:
            def fill(t64: ir.Value) -> None:
                for j, ((row, col), (kr, cb)) in enumerate(
                        slots(ix.of(t64), j) for j in range(LOADS)):
                    b.store(staged[j][0].load(t64),
                            b.gep(a_tile, [ix.add(ix.mul(col, BM + PAD), row)]))
                    b.store(staged[j][1].load(t64),
                            b.gep(b_tile, [ix.add(ix.mul(kr, BN + PAD), cb)]))
            f.threads(fill)
            f.barrier()
            nxt = b.add(kt64, c64(1))
            prefetch = gather_slice(nxt)

            def accumulate(t64: ir.Value) -> None:
                with b.if_then(b.icmp_signed("<", nxt, last)):      # uniform over the block
                    prefetch(t64)
                t = ix.of(t64)
                ty, tx = b.udiv(t, ix.c(16)), b.urem(t, ix.c(16))
                sums = [a.load(t64) for a in accs]
                for kk in range(BK):
                    xs = micro(a_tile, ix.add(ix.mul(ty, MICRO), kk * (BM + PAD)))
                    ys = micro(b_tile, ix.add(ix.mul(tx, MICRO), kk * (BN + PAD)))
                    sums = [multiply_add(b, sums[i * MICRO + j], xs[i], ys[j])
                            for i in range(MICRO) for j in range(MICRO)]
                for a, v in zip(accs, sums):
                    a.store(t64, v)
            f.threads(accumulate)
            f.barrier()
        first = b.mul(b.zext(s, ir.IntType(64)) if not spec.wide else s, c64(per))
        last = b.select(b.icmp_signed("<", b.add(first, c64(per)), c64(slices)),
                        b.add(first, c64(per)), c64(slices))
        with b.if_then(b.icmp_signed("<", first, last)):
            f.threads(gather_slice(first))
        for_loop(b, first, last, slice_k, "kslice")

        def store(t64: ir.Value) -> None:
            t = ix.of(t64)
            ty, tx = b.udiv(t, ix.c(16)), b.urem(t, ix.c(16))
            for i in range(MICRO):
                m = ix.add(m0, ix.mul(ty, MICRO), i)
                parts = m_parts(m)
                ym = ix.add(*(ix.mul(parts[r], y_stride[r]) for r, _ in m_dims))
                for j in range(MICRO):
                    n = ix.add(n0, ix.mul(tx, MICRO), j)
                    ok = b.and_(b.icmp_unsigned("<", m, ix.c(M)),
                                b.icmp_unsigned("<", n, ix.c(N)))
                    with b.if_then(ok):
                        off = ix.add(ym, ix.mul(ix.add(f0, n), spec.ys[1]))
                        v = accs[i * MICRO + j].load(t64)
                        if scratch:
                            part = b.bitcast(f.buffers[nbuf - 1], spec.acc.as_pointer())
                            b.store(v, b.gep(part, [ix.add(ix.mul(s, total), off)]))
                        else:
                            store_acc(b, yb, spec.y_et, off, v)
        f.threads(store)
    target.kernel(module, name, nbuf, THREADS, body)
    after = []
    if scratch:
        after.append(_emit_combine(target, module, f"{name}_combine", spec, nbuf, splits))
    return GpuKernel(name, spec.owner, buffers, base * splits, THREADS, "conv-gemm-tiled", module,
                     scratch=scratch, after=after,
                     notes=[f"implicit gemm {ng}x[{M}x{K}]x[{K}x{N}], {splits} split(s) of K"])


def _emit_combine(target: Target, module: ir.Module, name: str, spec: ConvSpec, nbuf: int,
                  splits: int) -> tuple[str, int, int]:
    """The kernel adding the split partials into the output: (symbol, grid, block)."""
    total = spec.out_elems
    grid, block = launch_dims(total)

    def body(f: KernelFrame) -> None:
        b = f.b
        ix = Ix(b, spec.wide)
        part = b.bitcast(f.buffers[nbuf - 1], spec.acc.as_pointer())

        def thread(tid: ir.Value) -> None:
            u64 = b.add(b.mul(f.block, c64(block)), tid)
            with b.if_then(b.icmp_signed("<", u64, c64(total))):
                u = ix.of(u64)
                v = b.load(b.gep(part, [u]))
                for s in range(1, splits):
                    v = b.fadd(v, b.load(b.gep(part, [ix.add(u, s * total)])))
                store_acc(b, f.buffers[2], spec.y_et, u, v)
        f.threads(thread)
    target.kernel(module, name, nbuf, block, body)
    return name, grid, block


__all__ = ["emit_tiled", "split_count", "BM", "BN", "BK", "THREADS"]
