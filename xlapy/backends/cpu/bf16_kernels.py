"""The generated code of the bf16 GEMM (``bf16_dot.py``): the ``vdpbf16ps`` microkernel
driver and the pair packer, each variant compiled on first use.

Packed layout (both operands): a matrix ``X[K, W*G]`` (``K`` the contracted dim) becomes
``G`` panels, each ``Kp x W`` 32-bit words with ``Kp = ceil(K/2)`` and word ``[p, j]`` the
pair ``(X[2p, g*W+j], X[2p+1, g*W+j])`` (low half first), zero past ``K`` and past the
last column. ``B[K, N]`` is packed with ``W = 16*NV`` (a panel row is ``NV`` zmm words);
``A[M, K]`` is packed as ``A^T`` with ``W = MR``, so one register block's pairs are
``MR`` consecutive words per ``p``. The packer reads any strides (row-major, K-major,
strided views), with its own loop nest for each of the two common layouts (K contiguous,
columns contiguous; ``_emit_pack``), so a transposed operand packs as fast as a plain one.

The GEMM keeps an ``MR x NV`` block of f32 accumulators in registers over the whole of
``K`` (one ``A`` panel against one ``B`` panel, both read in order), then rounds and
stores the block straight into the result (f32 or bf16: ``vcvtneps2bf16``, round to
nearest even), the rows and columns past ``M`` and ``N`` left out.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Callable

from llvmlite import ir

from .kernel_support import c64, carried_loop, for_loop

#: ``NV -> MR``: zmm columns per register block and the rows that fill the registers.
SHAPES = {4: 6, 2: 12, 1: 14}
#: Pairs per packing tile when the columns are contiguous: ``2 * PACK_TILE`` source rows
#: pass through every panel before the next tile.
PACK_TILE = 64
#: Arguments: GEMM (pointers a, bp, out; 14 sizes), packer (pointers src, dst; 9 sizes).
GEMM_ARGS = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 14
PACK_ARGS = [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 9

_lock = threading.Lock()
_loaded: dict[tuple, Callable] = {}
_code: list = []                       # the loaded objects, kept alive
_F32, _I32, _I16, _I64 = ir.FloatType(), ir.IntType(32), ir.IntType(16), ir.IntType(64)


class _BFloat(ir.Type):
    """LLVM's ``bfloat`` (llvmlite has no class for it); only used in vector types."""

    def _to_string(self) -> str:
        return "bfloat"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _BFloat)

    def __hash__(self) -> int:
        return hash("bfloat")


def gemm_name(nv: int, out: str) -> str:
    return f"xlapy_bf16_gemm_{SHAPES[nv]}x{nv}_{out}"


def _emit_gemm(module: ir.Module, nv: int, out_bf16: bool) -> None:
    """``void name(a, bp, out, sa, sb, kpairs, groups, b0, b1, m0, m1, so, ldo, m, n,
    mblocks, unused)``: ``out[b] = a[b] @ b[b]`` for batches ``[b0, b1)`` and row blocks
    ``[m0, m1)``; ``a``/``bp`` packed (module docstring; batch strides ``sa``/``sb`` in
    words), ``out`` f32 or bf16 with batch stride ``so`` and row stride ``ldo`` elements,
    its columns contiguous."""
    mr = SHAPES[nv]
    v16f, v16i = ir.VectorType(_F32, 16), ir.VectorType(_I32, 16)
    v32b = ir.VectorType(_BFloat(), 32)
    dp_name = "llvm.x86.avx512bf16.dpbf16ps.512"
    dp = module.globals.get(dp_name) or ir.Function(
        module, ir.FunctionType(v16f, [v16f, v32b, v32b]), name=dp_name)
    elem = _I16 if out_bf16 else _F32
    fnty = ir.FunctionType(ir.VoidType(), [_I32.as_pointer(), v16i.as_pointer(),
                                           elem.as_pointer()] + [_I64] * 14)
    fn = ir.Function(module, fnty, name=gemm_name(nv, "bf16" if out_bf16 else "f32"))
    (a, bp, out, sa, sb, kpairs, groups, b0, b1, m0, m1, so, ldo, m, n, mblocks,
     _unused) = fn.args
    for arg in (a, bp, out):
        arg.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    zero = ir.Constant(v16f, [0.0] * 16)
    undef_i = ir.Constant(v16i, None)
    splat = ir.Constant(v16i, [0] * 16)
    vout = ir.VectorType(elem, 16)

    def batch(bi: ir.Value) -> None:
        ab = b.gep(a, [b.mul(bi, sa)])
        bb = b.gep(bp, [b.mul(bi, sb)])
        ob = b.gep(out, [b.mul(bi, so)])

        def group(g: ir.Value) -> None:
            panel = b.gep(bb, [b.mul(b.mul(g, kpairs), c64(nv))])
            col0 = b.mul(g, c64(16 * nv))

            def rows(mb: ir.Value) -> None:
                apanel = b.gep(ab, [b.mul(b.mul(mb, kpairs), c64(mr))])

                def step(p: ir.Value, acc: list) -> list:
                    brow = b.gep(panel, [b.mul(p, c64(nv))])
                    bv = [b.bitcast(b.load(b.gep(brow, [c64(v)]), align=64), v32b)
                          for v in range(nv)]
                    arow = b.gep(apanel, [b.mul(p, c64(mr))])
                    new = list(acc)
                    for r in range(mr):
                        word = b.load(b.gep(arow, [c64(r)]), align=4)
                        av = b.bitcast(b.shuffle_vector(
                            b.insert_element(undef_i, word, c64(0)), undef_i, splat), v32b)
                        for v in range(nv):
                            new[r * nv + v] = b.call(dp, [acc[r * nv + v], av, bv[v]])
                    return new
                final = carried_loop(b, c64(0), kpairs, [zero] * (mr * nv), step, "p")
                row0 = b.mul(mb, c64(mr))
                for r in range(mr):
                    row = b.add(row0, c64(r))
                    with b.if_then(b.icmp_signed("<", row, m)):
                        orow = b.gep(ob, [b.mul(row, ldo)])
                        for v in range(nv):
                            _store(b, final[r * nv + v], orow, b.add(col0, c64(16 * v)), n,
                                   vout, out_bf16)
            for_loop(b, m0, m1, rows, "mb")
        for_loop(b, c64(0), groups, group, "g")
    for_loop(b, b0, b1, batch, "b")
    b.ret_void()


def _store(b: ir.IRBuilder, acc: ir.Value, orow: ir.Value, col: ir.Value, n: ir.Value,
           vout: ir.VectorType, out_bf16: bool) -> None:
    """16 accumulator lanes to ``orow[col:col+16]`` (rounded to bf16 bits when
    ``out_bf16``), the lanes at or past ``n`` left out."""
    if out_bf16:
        vb = b.fptrunc(acc, ir.VectorType(_BFloat(), 16))
        value = b.bitcast(vb, vout)
    else:
        value = acc
    full = b.icmp_signed("<=", b.add(col, c64(16)), n)
    with b.if_else(full) as (then, otherwise):
        with then:
            b.store(value, b.bitcast(b.gep(orow, [col]), vout.as_pointer()), align=2)
        with otherwise:
            left = b.sub(n, col)
            left = b.select(b.icmp_signed(">", left, c64(0)), left, c64(0))

            def lane(i: ir.Value) -> None:
                b.store(b.extract_element(value, b.trunc(i, _I32)),
                        b.gep(orow, [b.add(col, i)]))
            for_loop(b, c64(0), left, lane, "lane")


def pack_name(width: int) -> str:
    return f"xlapy_bf16_pack_pairs_{width}"


def _scalar_loop(b: ir.IRBuilder, lo: ir.Value, hi: ir.Value, body, name: str) -> None:
    """``for_loop`` that LLVM does not vectorize (fallback and zero-filling loops: not
    worth the compile time of vectorized versions, and strided stores become scatters)."""
    def step(i: ir.Value, _: list) -> list:
        body(i)
        return []
    carried_loop(b, lo, hi, [], step, name, hints=(("llvm.loop.vectorize.width", 1),))


def _emit_pack(module: ir.Module, width: int) -> None:
    """``void name(src, dst, sbs, sk, sn, k, n, kpairs, u0, u1, unused)``: panels ``u`` in
    ``[u0, u1)`` of ``src`` (bf16 bits, element strides ``sbs`` per batch, ``sk`` along K,
    ``sn`` along the columns; ``ceil(n / width)`` panels per batch) into ``dst`` (module
    docstring: panel ``u`` at ``u * kpairs * width`` words). Three loop nests, chosen by
    the strides: K contiguous (a pair is one 32-bit load: tiles of :data:`PACK_TILE`
    pairs, read along K), columns contiguous (two rows interleaved, ``width`` words at a
    time), and any other strides."""
    fnty = ir.FunctionType(ir.VoidType(), [_I16.as_pointer(), _I32.as_pointer()] + [_I64] * 9)
    fn = ir.Function(module, fnty, name=pack_name(width))
    src, dst, sbs, sk, sn, k, n, kpairs, u0, u1, _unused = fn.args
    src.add_attribute("noalias")
    dst.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    w = c64(width)
    groups = b.sdiv(b.add(n, c64(width - 1)), w)
    kfull = b.sdiv(k, c64(2))
    last = b.sub(k, c64(1))
    i32p = _I32.as_pointer()

    def word_at(scol: ir.Value, p: ir.Value) -> ir.Value:
        """The pair ``p`` of one source column, any strides (zero past K)."""
        k0 = b.mul(p, c64(2))
        lo = b.zext(b.load(b.gep(scol, [b.mul(k0, sk)])), _I32)
        k1 = b.add(k0, c64(1))
        has = b.icmp_signed("<", k1, k)
        hi = b.zext(b.load(b.gep(scol, [b.mul(b.select(has, k1, last), sk)])), _I32)
        hi = b.select(has, hi, ir.Constant(_I32, 0))
        return b.or_(lo, b.shl(hi, ir.Constant(_I32, 16)))

    def where(u: ir.Value) -> tuple:
        """Panel ``u``'s source, destination and column count."""
        bi, g = b.sdiv(u, groups), b.srem(u, groups)
        n0 = b.mul(g, w)
        sbase = b.gep(src, [b.add(b.mul(bi, sbs), b.mul(n0, sn))])
        dbase = b.gep(dst, [b.mul(b.mul(u, kpairs), w)])
        cols = b.sub(n, n0)
        return sbase, dbase, b.select(b.icmp_signed("<", cols, w), cols, w)

    def put(dbase: ir.Value, p: ir.Value, j: ir.Value, word: ir.Value) -> None:
        b.store(word, b.gep(dbase, [b.add(b.mul(p, w), j)]), align=4)

    def generic_pairs(u: ir.Value, p0: ir.Value, p1: ir.Value) -> None:
        """Pairs ``[p0, p1)`` of panel ``u``, any strides; zero past its columns."""
        sbase, dbase, cols = where(u)

        def column(j: ir.Value) -> None:
            scol = b.gep(sbase, [b.mul(j, sn)])
            _scalar_loop(b, p0, p1, lambda p: put(dbase, p, j, word_at(scol, p)), "pg")
        _scalar_loop(b, c64(0), cols, column, "jg")
        _scalar_loop(b, cols, w, lambda j: _scalar_loop(
            b, p0, p1, lambda p: put(dbase, p, j, ir.Constant(_I32, 0)), "pz"), "jz")

    def k_contiguous() -> None:
        """A pair is one 32-bit word: each column read along K from start to end (the
        prefetchers follow it; the panel written, ``width`` words a row, stays in L2)."""
        def panel(u: ir.Value) -> None:
            sbase, dbase, cols = where(u)

            def column(j: ir.Value) -> None:
                words = b.bitcast(b.gep(sbase, [b.mul(j, sn)]), i32p)

                _scalar_loop(b, c64(0), kfull, lambda p: put(
                    dbase, p, j, b.load(b.gep(words, [p]), align=2)), "pk")
            for_loop(b, c64(0), cols, column, "jk")
            _scalar_loop(b, cols, w, lambda j: _scalar_loop(
                b, c64(0), kfull, lambda p: put(dbase, p, j, ir.Constant(_I32, 0)), "pz"),
                "jz")
            generic_pairs(u, kfull, kpairs)                # the odd last row, if any
        for_loop(b, u0, u1, panel, "u")

    def n_contiguous() -> None:
        """Two rows interleaved ``width`` columns at a time; a tile of pairs goes through
        every panel of a matrix before the next, so the rows' lines are read once."""
        tiles = b.sdiv(b.add(kfull, c64(PACK_TILE - 1)), c64(PACK_TILE))

        def matrix(bi: ir.Value) -> None:
            lo = b.mul(bi, groups)
            lo = b.select(b.icmp_signed(">", u0, lo), u0, lo)
            hi = b.add(b.mul(bi, groups), groups)
            hi = b.select(b.icmp_signed("<", u1, hi), u1, hi)
            for_loop(b, c64(0), tiles, lambda t: tile(t, lo, hi), "tn")

        def tile(t: ir.Value, lo: ir.Value, hi: ir.Value) -> None:
            p0 = b.mul(t, c64(PACK_TILE))
            p1 = b.add(p0, c64(PACK_TILE))
            p1 = b.select(b.icmp_signed("<", p1, kfull), p1, kfull)

            def panel(u: ir.Value) -> None:
                sbase, dbase, cols = where(u)

                def pair(p: ir.Value) -> None:
                    row0 = b.gep(sbase, [b.mul(b.mul(p, c64(2)), sk)])
                    row1 = b.gep(row0, [sk])

                    def column(j: ir.Value) -> None:
                        lo = b.zext(b.load(b.gep(row0, [j])), _I32)
                        hi = b.zext(b.load(b.gep(row1, [j])), _I32)
                        put(dbase, p, j, b.or_(lo, b.shl(hi, ir.Constant(_I32, 16))))
                    for_loop(b, c64(0), w, column, "jw")
                with b.if_else(b.icmp_signed("==", cols, w)) as (whole, part):
                    with whole:
                        for_loop(b, p0, p1, pair, "pw")
                    with part:                     # the last panel's columns: any strides
                        generic_pairs(u, p0, p1)
            for_loop(b, lo, hi, panel, "u")
        with b.if_then(b.icmp_signed("<", u0, u1)):
            for_loop(b, b.sdiv(u0, groups), b.add(b.sdiv(b.sub(u1, c64(1)), groups), c64(1)),
                     matrix, "bn")
        for_loop(b, u0, u1, lambda u: generic_pairs(u, kfull, kpairs), "uo")

    with b.if_else(b.icmp_signed("==", sk, c64(1))) as (k_contig, other):
        with k_contig:
            k_contiguous()
        with other:
            with b.if_else(b.icmp_signed("==", sn, c64(1))) as (n_contig, strided):
                with n_contig:
                    n_contiguous()
                with strided:
                    for_loop(b, u0, u1, lambda u: generic_pairs(u, c64(0), kpairs), "ug")
    b.ret_void()


def kernel(key: tuple) -> Callable:
    """The ctypes function of one generated routine, compiled on first use (once per
    process): ``(nv, "f32" | "bf16")`` a GEMM (:data:`GEMM_ARGS`), ``("pack", width)`` a
    packer (:data:`PACK_ARGS`)."""
    fn = _loaded.get(key)
    if fn is not None:
        return fn
    with _lock:
        if key not in _loaded:
            from .jit_engine import engine
            eng = engine()
            module = eng.new_module(f"xlapy_bf16_{key[0]}_{key[1]}")
            if key[0] == "pack":
                _emit_pack(module, key[1])
                name, args = pack_name(key[1]), PACK_ARGS
            else:
                _emit_gemm(module, key[0], key[1] == "bf16")
                name, args = gemm_name(*key), GEMM_ARGS
            code = eng.load(eng.compile([str(module)], [name]).objects, [name])
            _code.append(code)
            _loaded[key] = ctypes.CFUNCTYPE(None, *args)(code.address(name))
        return _loaded[key]


__all__ = ["SHAPES", "PACK_TILE", "kernel", "gemm_name", "pack_name"]
