"""The generated code of the packed GEMMs (``packed_gemm.py``): the bf16 ``vdpbf16ps``
microkernel driver and the pair packer, and the same two for f32 operands (FMA), each
variant compiled on first use.

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

f32 operands use the same layout and loops with one element per word (``Kp = K``): the
packer copies (or transposes) 32-bit elements, and the microkernel's step is a
broadcast ``A`` element times a ``B`` panel row, added with ``vfmadd231ps``. bf16
operands can take that path too (*widened*): the packer reads bf16 elements and writes
each as the f32 of the same value (the bits shifted up by 16), and the f32 kernel runs on
them (``packed_gemm``'s ``"bf16w"`` operands; on CPUs whose ``vdpbf16ps`` is no faster
than two FMAs, ``bf16_dot.py``).

Result kinds (the routines' ``out``): ``"f32"`` / ``"bf16"`` bf16 pairs into that result,
``"f32xf32"`` f32 operands, ``"w16f32"`` / ``"w16bf16"`` widened bf16 operands into that
result.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable

from llvmlite import ir

from . import kernel_cache
from .kernel_support import c64, carried_loop, for_loop

#: ``NV -> MR``: zmm columns per register block and the rows that fill the registers.
SHAPES = {4: 6, 2: 12, 1: 14}
#: Pairs per packing tile when the columns are contiguous: ``2 * PACK_TILE`` source rows
#: pass through every panel before the next tile.
PACK_TILE = 64
#: Arguments: GEMM (pointers a, bp, out; 14 sizes), packer (pointers src, dst; 9 sizes).
GEMM_ARGS: list[type] = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 14
PACK_ARGS: list[type] = [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 9

#: The disk cache keeps the routines' object code in this subdirectory of its directory.
CACHE_SUBDIR = "packed-kernels"
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


#: Result kinds whose operands are f32 words (one element a word; the FMA kernel).
F32_WORDS = ("f32xf32", "w16f32", "w16bf16")
#: Result kinds with a bf16 result.
BF16_RESULT = ("bf16", "w16bf16")


def gemm_name(nv: int, out: str) -> str:
    """The symbol of a GEMM: ``out`` a result kind (module docstring)."""
    return f"xlapy_packed_gemm_{SHAPES[nv]}x{nv}_{out}"


def _emit_gemm(module: ir.Module, nv: int, kind: str) -> ir.Function:
    """``void name(a, bp, out, sa, sb, kpairs, groups, b0, b1, m0, m1, so, ldo, m, n,
    mblocks, unused)``: ``out[b] = a[b] @ b[b]`` for batches ``[b0, b1)`` and row blocks
    ``[m0, m1)``; ``a``/``bp`` packed (module docstring; batch strides ``sa``/``sb`` in
    words), ``out`` f32 or bf16 with batch stride ``so`` and row stride ``ldo`` elements,
    its columns contiguous. ``kind``: the result kind (module docstring; f32 words and
    FMA for :data:`F32_WORDS`, else bf16 pairs and ``vdpbf16ps``)."""
    f32, out_bf16 = kind in F32_WORDS, kind in BF16_RESULT
    mr = SHAPES[nv]
    v16f, v16i = ir.VectorType(_F32, 16), ir.VectorType(_I32, 16)
    v32b = ir.VectorType(_BFloat(), 32)
    dp_name = "llvm.x86.avx512bf16.dpbf16ps.512"
    dp = module.globals.get(dp_name) or ir.Function(
        module, ir.FunctionType(v16f, [v16f, v32b, v32b]), name=dp_name)
    if f32:
        dp_name = "llvm.fma.v16f32"
        dp = module.globals.get(dp_name) or ir.Function(
            module, ir.FunctionType(v16f, [v16f, v16f, v16f]), name=dp_name)
    elem = _I16 if out_bf16 else _F32
    word, vword = (_F32, v16f) if f32 else (_I32, v16i)
    fnty = ir.FunctionType(ir.VoidType(), [word.as_pointer(), vword.as_pointer(),
                                           elem.as_pointer()] + [_I64] * 14)
    fn = ir.Function(module, fnty, name=gemm_name(nv, kind))
    (a, bp, out, sa, sb, kpairs, groups, b0, b1, m0, m1, so, ldo, m, n, mblocks,
     _unused) = fn.args
    for arg in (a, bp, out):
        arg.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    zero = ir.Constant(v16f, [0.0] * 16)
    undef_i = ir.Constant(vword, None)
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
                    bv = [b.load(b.gep(brow, [c64(v)]), align=64) for v in range(nv)]
                    if not f32:
                        bv = [b.bitcast(x, v32b) for x in bv]
                    arow = b.gep(apanel, [b.mul(p, c64(mr))])
                    new = list(acc)
                    for r in range(mr):
                        av = b.shuffle_vector(b.insert_element(
                            undef_i, b.load(b.gep(arow, [c64(r)]), align=4), c64(0)),
                            undef_i, splat)
                        for v in range(nv):
                            i = r * nv + v
                            new[i] = (b.call(dp, [av, bv[v], acc[i]]) if f32 else
                                      b.call(dp, [acc[i], b.bitcast(av, v32b), bv[v]]))
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
    return fn


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


#: ``packed_gemm``'s operand kinds -> their packers' routine keys (``(key, width)``): bf16
#: pairs, f32 elements, bf16 elements widened to f32.
PACK_KEYS = {"bf16": "pack", "f32": "pack_f32", "bf16w": "pack_w16"}
_PACK_NAMES = {"bf16": "bf16_pairs", "f32": "f32", "bf16w": "bf16_to_f32"}


def pack_name(width: int, operand: str = "bf16") -> str:
    return f"xlapy_pack_{_PACK_NAMES[operand]}_{width}"


def _widened(b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
    """bf16 bits (``i16`` or a vector of them) as the f32 of the same value."""
    if isinstance(bits.type, ir.VectorType):
        n = bits.type.count
        wide = b.zext(bits, ir.VectorType(_I32, n))
        return b.bitcast(b.shl(wide, ir.Constant(ir.VectorType(_I32, n), [16] * n)),
                         ir.VectorType(_F32, n))
    return b.bitcast(b.shl(b.zext(bits, _I32), ir.Constant(_I32, 16)), _F32)


def _scalar_loop(b: ir.IRBuilder, lo: ir.Value, hi: ir.Value, body, name: str) -> None:
    """``for_loop`` that LLVM does not vectorize (fallback and zero-filling loops: not
    worth the compile time of vectorized versions, and strided stores become scatters)."""
    def step(i: ir.Value, _: list) -> list:
        body(i)
        return []
    carried_loop(b, lo, hi, [], step, name, hints=(("llvm.loop.vectorize.width", 1),))


def _emit_pack(module: ir.Module, width: int, operand: str = "bf16") -> ir.Function:
    """``void name(src, dst, sbs, sk, sn, k, n, kpairs, u0, u1, unused)``: panels ``u`` in
    ``[u0, u1)`` of ``src`` (bf16 bits, element strides ``sbs`` per batch, ``sk`` along K,
    ``sn`` along the columns; ``ceil(n / width)`` panels per batch) into ``dst`` (module
    docstring: panel ``u`` at ``u * kpairs * width`` words). Three loop nests, chosen by
    the strides: K contiguous (a pair is one 32-bit load: tiles of :data:`PACK_TILE`
    pairs, read along K), columns contiguous (two rows interleaved, ``width`` words at a
    time), and any other strides. ``operand`` (:data:`PACK_KEYS`): ``"f32"`` f32 source
    and words (a word is one element, ``kpairs == k``), ``"bf16w"`` bf16 source and f32
    words (:func:`_widened`)."""
    f32, widen = operand != "bf16", operand == "bf16w"
    word = _F32 if f32 else _I32
    source = _I16 if widen or not f32 else _F32
    fnty = ir.FunctionType(ir.VoidType(), [source.as_pointer(), word.as_pointer()]
                           + [_I64] * 9)
    fn = ir.Function(module, fnty, name=pack_name(width, operand))
    src, dst, sbs, sk, sn, k, n, kpairs, u0, u1, _unused = fn.args
    src.add_attribute("noalias")
    dst.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    w = c64(width)
    groups = b.sdiv(b.add(n, c64(width - 1)), w)
    kfull = k if f32 else b.sdiv(k, c64(2))
    last = b.sub(k, c64(1))
    wordp = word.as_pointer()
    nothing = ir.Constant(word, 0)

    def element(ptr: ir.Value) -> ir.Value:
        """One source element as a word (f32 sources)."""
        return _widened(b, b.load(ptr)) if widen else b.load(ptr)

    def word_at(scol: ir.Value, p: ir.Value) -> ir.Value:
        """The pair ``p`` of one source column, any strides (zero past K)."""
        if f32:
            return element(b.gep(scol, [b.mul(p, sk)]))
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
            b, p0, p1, lambda p: put(dbase, p, j, nothing), "pz"), "jz")

    def k_contiguous() -> None:
        """A pair is one 32-bit word: each column read along K from start to end (the
        prefetchers follow it; the panel written, ``width`` words a row, stays in L2)."""
        def panel(u: ir.Value) -> None:
            sbase, dbase, cols = where(u)

            def column(j: ir.Value) -> None:
                words = b.bitcast(b.gep(sbase, [b.mul(j, sn)]), wordp)

                _scalar_loop(b, c64(0), kfull, lambda p: put(
                    dbase, p, j, b.load(b.gep(words, [p]), align=4 if f32 else 2)), "pk")
            for_loop(b, c64(0), cols, column, "jk")
            _scalar_loop(b, cols, w, lambda j: _scalar_loop(
                b, c64(0), kfull, lambda p: put(dbase, p, j, nothing), "pz"),
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
                    row0 = b.gep(sbase, [b.mul(b.mul(p, c64(1 if f32 else 2)), sk)])
                    row1 = b.gep(row0, [sk])

                    def column(j: ir.Value) -> None:
                        if f32:
                            put(dbase, p, j, element(b.gep(row0, [j])))
                            return
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

    if f32:         # vector forms of the two common layouts (_F32Rows)
        rows = _F32Rows(module, b, width, widen)

        def k_contiguous() -> None:
            def panel(u: ir.Value) -> None:
                sbase, dbase, cols = where(u)
                rows.transposed(sbase, dbase, cols, sn, k)
            for_loop(b, u0, u1, panel, "ut")

        if width < 16:
            def n_contiguous() -> None:
                def panel(u: ir.Value) -> None:
                    sbase, dbase, cols = where(u)
                    rows.narrow(sbase, dbase, cols, sk, k)
                for_loop(b, u0, u1, panel, "un")

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
    return fn


class _F32Rows:
    """Vector code for the f32 packer (16-lane masked loads and stores, AVX-512): a
    K-contiguous source is transposed 16 x 16 elements at a time in registers, and a
    narrow panel (``width < 16``: ``A``'s ``MR`` rows) of a column-contiguous source is
    copied a whole panel row per masked load and store."""

    def __init__(self, module: ir.Module, b: ir.IRBuilder, width: int,
                 widen: bool = False) -> None:
        self.b, self.width, self.widen = b, width, widen
        self.v16 = ir.VectorType(_F32, 16)
        mask = ir.VectorType(ir.IntType(1), 16)
        vp = self.v16.as_pointer()
        self.load = _intrinsic(module, "llvm.masked.load.v16f32.p0v16f32",
                               ir.FunctionType(self.v16, [vp, _I32, mask, self.v16]))
        self.v16h = ir.VectorType(_I16, 16)
        self.load16 = _intrinsic(module, "llvm.masked.load.v16i16.p0v16i16",
                                 ir.FunctionType(self.v16h, [self.v16h.as_pointer(), _I32,
                                                             mask, self.v16h]))
        self.store = _intrinsic(module, "llvm.masked.store.v16f32.p0v16f32",
                                ir.FunctionType(ir.VoidType(), [self.v16, vp, _I32, mask]))
        self.lanes = ir.Constant(ir.VectorType(_I64, 16), list(range(16)))
        self.zero = ir.Constant(self.v16, [0.0] * 16)

    def mask(self, count: ir.Value) -> ir.Value:
        """Lanes ``[0, count)``."""
        b = self.b
        splat = b.shuffle_vector(b.insert_element(ir.Constant(ir.VectorType(_I64, 16), None),
                                                  count, c64(0)),
                                 ir.Constant(ir.VectorType(_I64, 16), None),
                                 ir.Constant(ir.VectorType(_I32, 16), [0] * 16))
        return b.icmp_signed("<", self.lanes, splat)

    def _io(self, fn: ir.Function, ptr: ir.Value, mask: ir.Value, value=None) -> ir.Value:
        b = self.b
        if value is None and self.widen:        # 16 bf16 source elements as f32
            hptr = b.bitcast(ptr, self.v16h.as_pointer())
            bits = b.call(self.load16, [hptr, ir.Constant(_I32, 2), mask,
                                        ir.Constant(self.v16h, [0] * 16)])
            return _widened(b, bits)
        vptr = b.bitcast(ptr, self.v16.as_pointer())
        if value is None:
            return b.call(fn, [vptr, ir.Constant(_I32, 4), mask, self.zero])
        return b.call(fn, [value, vptr, ir.Constant(_I32, 4), mask])

    def transposed(self, sbase: ir.Value, dbase: ir.Value, cols: ir.Value, sn: ir.Value,
                   k: ir.Value) -> None:
        """One panel from a K-contiguous source: per tile of 16 rows of K and 16 panel
        columns, 16 masked column loads, a 16 x 16 transpose (four rounds of pairwise
        interleaves) and 16 masked row stores; columns past ``cols`` are zero."""
        b, w = self.b, self.width

        def tile(t: ir.Value) -> None:
            k0 = b.mul(t, c64(16))
            left = b.sub(k, k0)
            left = b.select(b.icmp_signed("<", left, c64(16)), left, c64(16))
            kmask = self.mask(left)
            for c in range(0, w, 16):
                vecs = []
                for r in range(16):
                    j = c + r
                    if j >= w:
                        vecs.append(self.zero)
                        continue
                    has = b.icmp_signed("<", c64(j), cols)
                    mask = b.select(has, kmask, ir.Constant(kmask.type, [0] * 16))
                    vecs.append(self._io(self.load, b.gep(sbase, [b.add(b.mul(c64(j), sn),
                                                                         k0)]), mask))
                out = _transpose16(b, vecs)
                wmask = self.mask(c64(min(16, w - c)))
                for i in range(16):
                    with b.if_then(b.icmp_signed("<", c64(i), left)):
                        row = b.gep(dbase, [b.add(b.mul(b.add(k0, c64(i)), c64(w)), c64(c))])
                        self._io(self.store, row, wmask, out[i])
        for_loop(self.b, c64(0), b.sdiv(b.add(k, c64(15)), c64(16)), tile, "kt")

    def narrow(self, sbase: ir.Value, dbase: ir.Value, cols: ir.Value, sk: ir.Value,
               k: ir.Value) -> None:
        """One panel narrower than a vector from a column-contiguous source: each of its
        ``k`` rows one masked load (``cols`` lanes, zero past) and one masked store."""
        b, w = self.b, self.width
        rmask, wmask = self.mask(cols), self.mask(c64(w))

        def row(p: ir.Value) -> None:
            v = self._io(self.load, b.gep(sbase, [b.mul(p, sk)]), rmask)
            self._io(self.store, b.gep(dbase, [b.mul(p, c64(w))]), wmask, v)
        for_loop(b, c64(0), k, row, "kr")


def _intrinsic(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    return module.globals.get(name) or ir.Function(module, fnty, name=name)


def _transpose16(b: ir.IRBuilder, rows: list) -> list:
    """The 16 columns of 16 rows of 16 lanes: four rounds of interleaving row ``i`` with
    row ``i + 8`` (low halves into ``2i``, high halves into ``2i + 1``)."""
    lo = ir.Constant(ir.VectorType(_I32, 16), [x for i in range(8) for x in (i, 16 + i)])
    hi = ir.Constant(ir.VectorType(_I32, 16), [x for i in range(8, 16) for x in (i, 16 + i)])
    for _ in range(4):
        new = [None] * 16
        for i in range(8):
            new[2 * i] = b.shuffle_vector(rows[i], rows[i + 8], lo)
            new[2 * i + 1] = b.shuffle_vector(rows[i], rows[i + 8], hi)
        rows = new
    return rows


#: The dynamic driver's parameter block: one i64 word per name, in this order.
DRIVER_SLOTS = ("a_src", "a_sbs", "a_sk", "a_sn", "b_src", "b_sbs", "b_sk", "b_sn", "ap",
                "bp", "out", "k", "m", "n", "kw", "groups", "mblocks", "batch", "chunk",
                "counter", "flags", "so", "ldo")
#: The driver's arguments: the parameter block, then two that it ignores, so that it has a
#: kernel's signature and a pool job can run it (each call takes units until none are left).
DRIVER_ARGS: list[type] = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
#: Polls of a ``B`` panel's flag (each one ``pause``) before a row unit packs the panel
#: itself: a few times the time a thread takes to pack one.
SPIN_LIMIT = 4096


def driver_name(nv: int, out: str) -> str:
    """The symbol of a whole packed product (:func:`_emit_driver`); ``out`` as for
    :func:`gemm_name`."""
    return f"xlapy_packed_run_{SHAPES[nv]}x{nv}_{out}"


def _emit_driver(module: ir.Module, nv: int, out: str) -> None:
    """``void name(i64 *params)`` (:data:`DRIVER_SLOTS`): a whole product ``out[b] = A[b]
    @ B[b]``, packing included, as work units taken from a shared counter, so any number
    of threads may call it at once with the same ``params`` and each takes units until
    none are left. Units ``[0, batch*groups)`` pack one ``B`` panel each and then set its
    flag (``flags[u] = 1``, release); the others each pack one chunk of ``chunk`` row
    blocks of ``A`` (into its own place in ``ap``) and multiply its rows by each ``B``
    panel of its matrix in turn, once that panel is flagged (acquire). The packing units
    come first, so a unit only waits for panels that threads are already packing; after
    :data:`SPIN_LIMIT` polls it packs the panel itself (the host may have taken the
    packing thread's core: the same values are written twice rather than waited for).
    The caller zeroes ``counter`` and ``flags`` before the threads start."""
    operand = "f32" if out == "f32xf32" else "bf16w" if out in F32_WORDS else "bf16"
    mr = SHAPES[nv]
    pack_a = _emit_pack(module, mr, operand)
    pack_b = _emit_pack(module, 16 * nv, operand)
    gemm = _emit_gemm(module, nv, out)
    for callee in (pack_a, pack_b, gemm):       # copies private to this module
        callee.linkage = "internal"
    i64p = _I64.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i64p, _I64, _I64]),
                     name=driver_name(nv, out))
    pause = ir.Function(module, ir.FunctionType(ir.VoidType(), []), name="llvm.x86.sse2.pause")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    spins = b.alloca(_I64)
    params = fn.args[0]
    p = {name: b.load(b.gep(params, [c64(i)])) for i, name in enumerate(DRIVER_SLOTS)}

    def cast(name: str, callee: ir.Function, arg: int) -> ir.Value:
        return b.inttoptr(p[name], callee.args[arg].type)
    counter, flags = b.inttoptr(p["counter"], i64p), b.inttoptr(p["flags"], i64p)
    packs = b.mul(p["batch"], p["groups"])
    chunks = b.sdiv(b.add(p["mblocks"], b.sub(p["chunk"], c64(1))), p["chunk"])
    total = b.add(packs, b.mul(p["batch"], chunks))
    one, zero = c64(1), c64(0)
    head, body, done = (fn.append_basic_block(n) for n in ("unit", "unit.body", "exit"))
    b.branch(head)
    b.position_at_end(head)
    t = b.atomic_rmw("add", counter, one, "monotonic")
    b.cbranch(b.icmp_signed("<", t, total), body, done)
    b.position_at_end(body)
    def pack_panel(unit: ir.Value) -> None:
        b.call(pack_b, [cast("b_src", pack_b, 0), cast("bp", pack_b, 1), p["b_sbs"],
                        p["b_sk"], p["b_sn"], p["k"], p["n"], p["kw"], unit, b.add(unit, one),
                        zero])

    with b.if_else(b.icmp_signed("<", t, packs)) as (pack, rows):
        with pack:
            pack_panel(t)
            b.store_atomic(one, b.gep(flags, [t]), "release", 8)
        with rows:
            u = b.sub(t, packs)
            bi, c = b.sdiv(u, chunks), b.srem(u, chunks)
            m0 = b.mul(c, p["chunk"])
            m1 = b.add(m0, p["chunk"])
            m1 = b.select(b.icmp_signed("<", m1, p["mblocks"]), m1, p["mblocks"])
            base = b.mul(bi, p["mblocks"])
            b.call(pack_a, [cast("a_src", pack_a, 0), cast("ap", pack_a, 1), p["a_sbs"],
                            p["a_sk"], p["a_sn"], p["k"], p["m"], p["kw"], b.add(base, m0),
                            b.add(base, m1), zero])

            def wait(g: ir.Value) -> None:
                unit = b.add(b.mul(bi, p["groups"]), g)
                flag = b.gep(flags, [unit])
                b.store(zero, spins)
                spin, ready = fn.append_basic_block("spin"), fn.append_basic_block("ready")
                b.branch(spin)
                b.position_at_end(spin)
                seen = b.load_atomic(flag, "acquire", 8)
                with b.if_then(b.icmp_signed("==", seen, zero)):
                    count = b.add(b.load(spins), one)
                    b.store(count, spins)
                    with b.if_else(b.icmp_signed("<", count, c64(SPIN_LIMIT))) as (poll, own):
                        with poll:
                            b.call(pause, [])
                        with own:       # its packer is not running: pack the panel here
                            pack_panel(unit)
                            b.store_atomic(one, flag, "release", 8)
                b.cbranch(b.icmp_signed("!=", b.load_atomic(flag, "acquire", 8), zero),
                          ready, spin)
                b.position_at_end(ready)
            def panel(g: ir.Value) -> None:
                """The rows times ``B``'s panel ``g``, as soon as that one is packed."""
                wait(g)
                col0 = b.mul(g, c64(16 * nv))
                b.call(gemm, [cast("ap", gemm, 0),
                              b.gep(cast("bp", gemm, 1), [b.mul(b.mul(g, p["kw"]), c64(nv))]),
                              b.gep(cast("out", gemm, 2), [col0]),
                              b.mul(b.mul(p["mblocks"], p["kw"]), c64(mr)),
                              b.mul(b.mul(p["groups"], p["kw"]), c64(nv)), p["kw"], one,
                              bi, b.add(bi, one), m0, m1, p["so"], p["ldo"], p["m"],
                              b.sub(p["n"], col0), p["mblocks"], zero])
            for_loop(b, zero, p["groups"], panel, "panel")
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()


def kernel(key: tuple) -> Callable:
    """The ctypes function of one generated routine, compiled on first use (once per
    process): ``(nv, out)`` a GEMM (:data:`GEMM_ARGS`; ``gemm_name``; ``out`` a result
    kind), ``("pack" | "pack_f32" | "pack_w16", width)`` a packer (:data:`PACK_ARGS`; bf16
    pairs, f32, bf16 widened to f32), ``("run", nv, out)`` a
    whole product's driver (:data:`DRIVER_ARGS`, :func:`_emit_driver`)."""
    fn = _loaded.get(key)
    if fn is not None:
        return fn
    with _lock:
        if key not in _loaded:
            from .jit_engine import engine
            eng = engine()
            name, args, emit = _routine(key)
            disk, disk_key = kernel_cache.entry(CACHE_SUBDIR, f"{name} {key!r}")
            obj = kernel_cache.load(disk, disk_key, name)
            if obj is None:
                module = eng.new_module("xlapy_packed_" + "_".join(map(str, key)))
                emit(module)
                obj = eng.compile([str(module)], [name], count=False).objects[0]
                kernel_cache.store(disk, disk_key, name, obj, "packed", repr(key))
            code = eng.load([obj], [name])
            _code.append(code)
            _loaded[key] = ctypes.CFUNCTYPE(None, *args)(code.address(name))
        return _loaded[key]


def _routine(key: tuple) -> tuple[str, list[type], Callable[[ir.Module], Any]]:
    """The symbol, ctypes arguments and emitter of the routine ``key`` names
    (:func:`kernel`)."""
    if key[0] == "run":
        return (driver_name(key[1], key[2]), DRIVER_ARGS,
                lambda m: _emit_driver(m, key[1], key[2]))
    if key[0] in PACK_KEYS.values():
        operand = next(op for op, k in PACK_KEYS.items() if k == key[0])
        return (pack_name(key[1], operand), PACK_ARGS,
                lambda m: _emit_pack(m, key[1], operand))
    return (gemm_name(*key), GEMM_ARGS,
            lambda m: _emit_gemm(m, key[0], key[1]))


__all__ = ["SHAPES", "PACK_TILE", "F32_WORDS", "BF16_RESULT", "PACK_KEYS", "kernel",
           "gemm_name",
           "pack_name", "driver_name",
           "DRIVER_SLOTS"]
