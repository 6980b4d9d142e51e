"""Convolution kernels generated as LLVM IR (through llvmlite) for one shape each, compiled
once per process and called through ctypes (which releases the GIL, so the runtime's pool
runs them on several threads).

Every kernel is specialized to its sizes, strides and padding (all compile-time constants);
the inner loops keep a register tile of accumulators and do explicit ``llvm.fma`` on
vectors of ``lanes`` f32 (16 with AVX-512, 8 with AVX2), the output channels in the vector
lanes. Borders are handled by splitting the loops statically into runs over
which the same taps read real input, so no padded copy of the input is made and no
product with a padding zero is done.

- :func:`weight_grad_kernel` -- ``void f(float* x, float* dy, float* acc, i64 n0, i64 n1)``:
  for images ``[n0, n1)`` adds ``x[n, kh*s + p*d - pad, kw*s + q*d - pad, c] *
  dy[n, p, q, o]`` over ``n, p, q`` into ``acc[kh, kw, c, o]`` (a weight gradient from
  NHWC activations ``x[N, H, W, C]`` and output gradients ``dy[N, P, Q, O]``, one reduction
  over batch x space). The tile is every ``kw`` x a block of channels x a block of output
  channels; it is loaded from ``acc`` and stored back once per image and kernel row (it
  stays in registers over the image's gradient rows and columns).
- :func:`direct_kernel` -- ``void f(float* x, float* w, float* y, i64 r0, i64 r1)``: for
  output rows ``r = n * P + p`` in ``[r0, r1)`` writes ``y[n, p, q, o] = sum x[n, p*s +
  kh*d - pad, q*s + kw*d - pad, c] * w[kh, kw, c, o]`` (a forward / input-gradient
  convolution, NHWC x HWIO). The tile is a run of output columns x a block of output
  channels; for small ``C`` (a 3-channel first layer) it replaces im2col's short products.
  A fused bias (``DirectSpec.bias``, read after the weights in ``w``) and relu are applied
  to the register tile as it is stored, so the output is written once.

``conv_direct.py`` decides when these run and drives them. The CPU compiler emits the
kernels an executable will need (:func:`missing`) and compiles them with the executable's own
kernels, spread over the JIT engine's helper processes (:func:`install` caches and loads
them); :func:`compile_kernels` does the same on its own (an executable from the disk cache),
and :func:`compiled` builds one kernel when a thunk needs it.
"""
from __future__ import annotations

import ctypes
import hashlib
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from llvmlite import ir

from ...errors import ExecutionError
from . import kernel_cache
from .conv_emitter import Emitter, lanes, runs, tile_registers, vector_chunks

log = logging.getLogger("xlapy.cpu")

#: A border of the forward kernel's output columns up to this many tiles wide is emitted
#: as static tiles (each tap with the columns it reads); a wider one runs column by column.
BORDER_TILES = 2


# --------------------------------------------------------------------------------------------
# weight gradient

@dataclass(frozen=True)
class ConvSpec:
    """Sizes of a 2-D convolution between ``x[N, H, W, C]``, a kernel ``[KH, KW, C, O]``
    and ``y[N, P, Q, O]`` (a 1-D one has ``H = P = KH = 1``); per spatial dim ``stride`` (the
    window stride, between output positions), ``dilate`` (between kernel taps) and ``pad``
    (the low padding); ``lanes`` per vector."""

    h: int
    w: int
    c: int
    p: int
    q: int
    o: int
    kh: int
    kw: int
    stride: tuple[int, int]
    dilate: tuple[int, int]
    pad: tuple[int, int]
    lanes: int


@dataclass(frozen=True)
class WeightGradSpec(ConvSpec):
    """A weight gradient ``acc[KH, KW, C, O] += x[N, H, W, C] * dy[N, P, Q, O]``: here
    ``P, Q`` are the output gradient's sizes, ``KH, KW`` the weight gradient's, ``stride``
    is between ``kh`` taps and ``dilate`` between ``p`` rows."""

    def tile(self) -> tuple[int, list[tuple[int, list[int]]]]:
        """Channels per tile and the output-channel blocks: every ``kw`` x ``cb`` channels x
        one block of vectors in registers."""
        regs = tile_registers(self.lanes)
        most = max(1, regs // self.kw)
        blocks = vector_chunks(self.o, self.lanes, min(4, most))
        nv = max(len(v) for _, v in blocks)
        cb = max(1, min(self.c, regs // (self.kw * nv)))
        return cb, blocks


def weight_grad_kernel(module: ir.Module, name: str, s: WeightGradSpec) -> None:
    """Emit the weight-gradient kernel ``name`` for ``s`` into ``module`` (module docstring)."""
    e = Emitter(module, name, ["x", "dy", "acc", "n0", "n1"])
    x, dy, acc, n0, n1 = e.fn.args
    b = e.b
    cb, blocks = s.tile()
    (sh, sw), (dh, dw), (ph, pw) = s.stride, s.dilate, s.pad
    img_x, img_dy = s.h * s.w * s.c, s.p * s.q * s.o
    c_blocks = [(c0, min(cb, s.c - c0)) for c0 in range(0, s.c, cb)]
    full = [blk for blk in c_blocks if blk[1] == cb]
    tail = [blk for blk in c_blocks if blk[1] != cb]
    # q runs: the kw taps whose column is real
    qruns = runs(s.q, lambda q: tuple(kw for kw in range(s.kw)
                                      if 0 <= kw * sw + q * dw - pw < s.w))

    def tile(xi: ir.Value, dyi: ir.Value, kh: int, rows: tuple[int, int], c0, ncb: int) -> None:
        """One image, kernel row ``kh`` and channel block: every output-channel block's tile
        stays in registers over the image's gradient rows ``rows`` and columns."""
        for o0, widths in blocks:
            base = e.off((c0, s.o), kh * s.kw * s.c * s.o + o0)   # acc[kh, 0, c0, o0]
            regs = {}
            for kw in range(s.kw):
                for ci in range(ncb):
                    ov0 = 0
                    for vi, wd in enumerate(widths):
                        o_ = b.add(base, e.const((kw * s.c + ci) * s.o + ov0))
                        regs[kw, ci, vi] = e.vload(acc, o_, wd)
                        ov0 += wd

            def row(p: ir.Value, cur: dict, o0=o0, widths=widths) -> dict:
                h = e.off((p, dh), kh * sh - ph)
                xrow = e.ptr(xi, e.off((h, s.w * s.c)))
                dyrow = e.ptr(dyi, e.off((p, s.q * s.o)))
                for qa, qb, kws in qruns:
                    if not kws:
                        continue

                    def body(q: ir.Value, cur: dict, kws=kws) -> dict:
                        dyo = e.off((q, s.o), o0)
                        dys, ov0 = [], 0
                        for wd in widths:
                            dys.append(e.vload(dyrow, b.add(dyo, e.const(ov0)), wd))
                            ov0 += wd
                        xq = e.off((q, dw * s.c), (c0, 1))
                        for kw in kws:
                            for ci in range(ncb):
                                xv = b.load(e.ptr(xrow, b.add(xq, e.const(
                                    (kw * sw - pw) * s.c + ci))), align=4)
                                for vi, wd in enumerate(widths):
                                    cur[kw, ci, vi] = e.fma(e.splat(xv, wd), dys[vi],
                                                            cur[kw, ci, vi], wd)
                        return cur
                    cur = e.carried(qa, qb, cur, body)
                return cur
            regs = e.carried(rows[0], rows[1], regs, row)
            for kw in range(s.kw):
                for ci in range(ncb):
                    ov0 = 0
                    for vi, wd in enumerate(widths):
                        o_ = b.add(base, e.const((kw * s.c + ci) * s.o + ov0))
                        e.vstore(regs[kw, ci, vi], acc, o_, wd)
                        ov0 += wd

    def image(n: ir.Value) -> None:
        xi = e.ptr(x, e.off((n, img_x)))
        dyi = e.ptr(dy, e.off((n, img_dy)))
        for kh in range(s.kh):
            prow = [p for p in range(s.p) if 0 <= kh * sh + p * dh - ph < s.h]
            if not prow:
                continue
            rows = (prow[0], prow[-1] + 1)
            if full:
                def block(j: ir.Value, kh: int = kh, rows: tuple[int, int] = rows) -> None:
                    tile(xi, dyi, kh, rows, b.mul(j, e.const(cb)), cb)
                e.loop(0, len(full), block, "cb")
            for c0, ncb in tail:
                tile(xi, dyi, kh, rows, e.const(c0), ncb)

    e.loop(n0, n1, image, "n")
    b.ret_void()


# --------------------------------------------------------------------------------------------
# forward / input gradient

@dataclass(frozen=True)
class DirectSpec(ConvSpec):
    """A convolution ``y[N, P, Q, O] = x[N, H, W, C] * w[KH, KW, C, O]``; with ``bias``
    the kernel adds ``b[O]`` (stored right after the kernel's weights: ``w[KH*KW*C*O +
    o]``) to each output as it stores it, with ``relu`` then takes ``maximum(y, 0)`` (the
    fusion pass's convolution + bias + relu, ``passes/conv_output_fusion.py``)."""

    bias: bool = False
    relu: bool = False

    def tile(self) -> tuple[int, list[tuple[int, list[int]]]]:
        """Output columns per tile (at most) and the output-channel blocks (vectors in
        registers)."""
        blocks = vector_chunks(self.o, self.lanes, 4)
        nv = max(len(v) for _, v in blocks)
        return max(1, min(self.q, tile_registers(self.lanes) // nv)), blocks

    def column_tiles(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int, int]:
        """The output columns cut into tiles of even widths ``[(q0, nq)]``, the wide
        borders left to single columns ``[(a, z)]``, and the interior ``[qlo, qhi)`` (the
        columns whose every tap reads real input)."""
        qb, _ = self.tile()
        (_, sw), (_, dw), (_, pw) = self.stride, self.dilate, self.pad
        qlo = min(self.q, max(0, -(-pw // sw)))
        qhi = max(qlo, min(self.q, (self.w - 1 - (self.kw - 1) * dw + pw) // sw + 1))
        a, z, singles = 0, self.q, []
        if qlo > BORDER_TILES * qb:
            singles.append((0, qlo))
            a = qlo
        if self.q - qhi > BORDER_TILES * qb:
            singles.append((qhi, self.q))
            z = qhi
        n = -(-(z - a) // qb)
        tiles, q0 = [], a
        for i in range(n):
            nq = (z - a) // n + (i < (z - a) % n)
            tiles.append((q0, nq))
            q0 += nq
        return tiles, singles, qlo, qhi


def direct_kernel(module: ir.Module, name: str, s: DirectSpec) -> None:
    """Emit the direct convolution kernel ``name`` for ``s`` into ``module`` (module
    docstring): per output row ``r = n * P + p``, tile of output columns (the row cut into
    tiles of even widths) and block of output channels, a register tile summed over the
    taps and channels and stored once. Tiles whose columns are all interior (every tap
    real) run in loops; tiles with border columns leave out the taps outside the input (a
    wide border: one column at a time with a branch per tap, so the code does not grow
    with the padding)."""
    e = Emitter(module, name, ["x", "w", "y", "r0", "r1"])
    x, w, y, n0, n1 = e.fn.args
    b = e.b
    _, blocks = s.tile()
    tiles, singles, qlo, qhi = s.column_tiles()
    (sh, sw), (dh, dw), (ph, pw) = s.stride, s.dilate, s.pad
    img_x = s.h * s.w * s.c
    bias_at = s.kh * s.kw * s.c * s.o           # where the bias follows the weights

    def col_ok(q: int, kw: int) -> bool:
        return 0 <= q * sw + kw * dw - pw < s.w

    def taps(xrow: ir.Value, kh: int, qx: ir.Value, widths: list[int], o0: int,
             cols: dict[int, list[int]], acc: dict) -> dict:
        """Add kernel row ``kh``'s products into the tile ``acc`` for taps ``kw`` of
        ``cols`` at their columns ``cols[kw]`` (offsets in the tile from x offset ``qx``):
        one loop over the run ``(kw, c)`` when every tap has every column and there is no
        ``kw`` dilation, else one loop over ``c`` per tap."""
        nq = 1 + max((qi for v in cols.values() for qi in v), default=0)
        merged = dw == 1 and len(cols) == s.kw and all(v == list(range(nq))
                                                       for v in cols.values())
        groups = [(0, s.kw * s.c, list(range(nq)))] if merged else \
            [(kw, s.c, v) for kw, v in cols.items() if v]
        for kw, length, qis in groups:
            def body(j: ir.Value, cur: dict, kw=kw, qis=qis) -> dict:
                wo = e.off((j, s.o), (kh * s.kw + kw) * s.c * s.o + o0)
                wv, ov0 = [], 0
                for wd in widths:
                    wv.append(e.vload(w, b.add(wo, e.const(ov0)), wd))
                    ov0 += wd
                xo = b.add(qx, j)
                for qi in qis:
                    xv = b.load(e.ptr(xrow, b.add(xo, e.const((kw * dw + qi * sw - pw) * s.c))),
                                align=4)
                    splats: dict[int, ir.Value] = {}
                    for vi, wd in enumerate(widths):
                        if wd not in splats:
                            splats[wd] = e.splat(xv, wd)
                        cur[qi, vi] = e.fma(splats[wd], wv[vi], cur[qi, vi], wd)
                return cur
            acc = e.carried(0, length, acc, body)
        return acc

    def tile(xi: ir.Value, yrow: ir.Value, p: ir.Value, q: ir.Value, nq: int,
             cols: dict[int, list[int]] | None) -> None:
        """Columns ``[q, q + nq)`` x every output-channel block, the taps ``cols`` (see
        :func:`taps`; None: a single column whose taps outside the input are skipped by a
        branch each); kernel rows outside the input are skipped by a branch."""
        qx = e.off((q, sw * s.c))
        for o0, widths in blocks:
            acc = {(qi, vi): e.zero(wd) for qi in range(nq) for vi, wd in enumerate(widths)}
            for kh in range(s.kh):
                h = e.off((p, sh), kh * dh - ph)

                def row_taps(cur: dict, h=h, kh=kh) -> dict:
                    xrow = e.ptr(xi, e.off((h, s.w * s.c)))
                    if cols is not None:
                        return taps(xrow, kh, qx, widths, o0, cols, cur)
                    for kw in range(s.kw):
                        col = e.off((q, sw), kw * dw - pw)

                        def one_tap(c2: dict, kw: int = kw, xrow: ir.Value = xrow) -> dict:
                            return taps(xrow, kh, qx, widths, o0, {kw: [0]}, c2)
                        cur = e.guarded(b.icmp_unsigned("<", col, e.const(s.w)), cur, one_tap)
                    return cur
                acc = e.guarded(b.icmp_unsigned("<", h, e.const(s.h)), acc, row_taps)
            qo = e.off((q, s.o), o0)
            starts = [o0 + sum(widths[:vi]) for vi in range(len(widths))]
            bias = [e.vload(w, e.const(bias_at + o), wd) for o, wd in zip(starts, widths)] \
                if s.bias else [None] * len(widths)
            for qi in range(nq):
                for vi, wd in enumerate(widths):
                    value = e.epilogue(acc[qi, vi], bias[vi], s.relu, wd)
                    e.vstore(value, yrow, b.add(qo, e.const(qi * s.o + starts[vi] - o0)), wd)

    # runs of tiles: interior tiles of one width in a row make one run (a loop); a tile
    # with border columns is a run of one, emitted with the taps each column reads
    tile_runs: list[tuple[int, int, int, bool]] = []      # (first column, width, count, inner)
    for q0, nq in tiles:
        inner = qlo <= q0 and q0 + nq <= qhi
        if inner and tile_runs and tile_runs[-1][3] and tile_runs[-1][1] == nq:
            first, _, count, _ = tile_runs[-1]
            tile_runs[-1] = (first, nq, count + 1, True)
        else:
            tile_runs.append((q0, nq, 1, inner))

    def row(r: ir.Value) -> None:
        """Every tile of output row ``r``."""
        n = b.udiv(r, e.const(s.p))
        p = b.urem(r, e.const(s.p))
        xi = e.ptr(x, e.off((n, img_x)))
        yrow = e.ptr(y, e.off((r, s.q * s.o)))
        for q0, nq, count, inner in tile_runs:
            cols = {kw: [qi for qi in range(nq) if inner or col_ok(q0 + qi, kw)]
                    for kw in range(s.kw)}
            if count == 1:
                tile(xi, yrow, p, e.const(q0), nq, cols)
                continue

            def run(j: ir.Value, q0: int = q0, nq: int = nq, cols: dict = cols) -> None:
                tile(xi, yrow, p, e.off((j, nq), q0), nq, cols)
            e.loop(0, count, run, "qt")
        for a, z in singles:
            e.loop(a, z, lambda q: tile(xi, yrow, p, q, 1, None), "q1")

    e.loop(n0, n1, row, "r")
    b.ret_void()


# --------------------------------------------------------------------------------------------
# compiling and loading

#: The kernels are emitted vectorized, unrolled and in SSA form: no IR optimization is
#: needed (code generation still runs at the target machine's O3). The CNN's kernels ran as
#: fast as after O1 or O3 and compiled faster (docs/performance.md).
KERNEL_OPT_LEVEL = 0
#: The disk cache keeps the kernels' object code in this subdirectory of its directory.
CACHE_SUBDIR = "conv-kernels"
KernelFn = Callable[[int, int, int, int, int], None]
Emit = Callable[[ir.Module, str, Any], None]
_PROTO = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_int64, ctypes.c_int64)
_LOCK = threading.Lock()
_KERNELS: dict[object, tuple[object, KernelFn]] = {}


def _name(spec: ConvSpec, emit: Emit) -> tuple[str, str]:
    """The digest of ``spec`` emitted by ``emit`` and the kernel's symbol name."""
    digest = hashlib.sha256(f"{emit.__name__} {spec!r}".encode()).hexdigest()
    return digest, f"xlapy_conv_{digest[:24]}"


def _install(spec: ConvSpec, name: str, obj: bytes) -> KernelFn:
    """Load object code ``obj`` of kernel ``name`` and keep it for ``spec`` in this process."""
    from .jit_engine import engine
    loaded = engine().load([obj], [name])
    fn = _PROTO(loaded.address(name))
    fn.code = loaded  # type: ignore[attr-defined]  # the function keeps its code loaded
    with _LOCK:
        _KERNELS.setdefault(spec, (loaded, fn))
        return _KERNELS[spec][1]


def _loaded(spec: ConvSpec) -> KernelFn | None:
    with _LOCK:
        hit = _KERNELS.get(spec)
    return hit[1] if hit is not None else None


def compiled(spec: ConvSpec, emit: Emit) -> KernelFn:
    """The kernel for ``spec`` (a frozen dataclass) emitted by ``emit``, loaded once per
    process: from the disk cache (:func:`_disk_entry`) or compiled alone
    (:func:`compile_one`) and stored there."""
    fn = _loaded(spec)
    if fn is not None:
        return fn
    pending = missing([(spec, emit)])
    install(pending, [compile_one(p) for p in pending])
    return _KERNELS[spec][1]


def compile_one(p: Pending) -> bytes:
    """The object code of ``p``'s module, compiled in this process."""
    from .jit_engine import deferred_interrupt, engine
    from .llvm_worker import InvalidIRError, compile_ir
    try:
        with deferred_interrupt():
            return compile_ir(str(p.module), KERNEL_OPT_LEVEL, False, engine().target_spec)[0]
    except InvalidIRError as e:
        raise ExecutionError(f"generated convolution kernel {p.name} is invalid: {e}") from e


@dataclass
class Pending:
    """A kernel to compile: its module, to be compiled with others (:func:`missing`), and
    what :func:`install` needs to cache and load its object code (the disk cache and the
    kernel's key there, :func:`_disk_entry`)."""

    spec: ConvSpec
    emit: Emit
    name: str
    digest: str
    module: ir.Module
    disk: Any
    key: str


def missing(wanted: Iterable[tuple[ConvSpec, Emit]]) -> list[Pending]:
    """The kernels of ``wanted`` (``(spec, emit)`` pairs) neither loaded in this process
    nor in the disk cache, their modules emitted; those in the disk cache are loaded."""
    from .jit_engine import engine
    out: list[Pending] = []
    seen: set[ConvSpec] = set()
    for spec, emit in wanted:
        if spec in seen or _loaded(spec) is not None:
            continue
        seen.add(spec)
        digest, name = _name(spec, emit)
        disk, key = _disk_entry(spec, emit, name)
        obj = kernel_cache.load(disk, key, name)
        if obj is not None:
            _install(spec, name, obj)
            continue
        module = engine().new_module(name)
        emit(module, name, spec)
        out.append(Pending(spec, emit, name, digest, module, disk, key))
    return out


def install(pending: list[Pending], objects: list[bytes]) -> None:
    """Store the object code of the ``pending`` kernels in the disk cache and load it."""
    for p, obj in zip(pending, objects, strict=True):
        _store(p, obj)
        _install(p.spec, p.name, obj)


def compile_kernels(wanted: Iterable[tuple[ConvSpec, Emit]]) -> None:
    """Load the kernels of ``wanted`` that this process has not loaded yet: from the disk
    cache, the others compiled together in one :meth:`~.jit_engine.JitEngine.compile` (a
    module each, shared out between this process and the engine's helper processes) and
    stored there. :func:`compiled` then finds them loaded. When the joint compile fails
    (some kernel's IR is rejected), nothing more is loaded: :func:`compiled` builds each
    kernel on its own and reports the one that fails."""
    from .jit_engine import engine
    pending = missing(wanted)
    if not pending:
        return
    try:
        result = engine().compile([p.module for p in pending], [p.name for p in pending],
                                  levels=[KERNEL_OPT_LEVEL] * len(pending), count=False)
    except ExecutionError as e:
        log.info("compiling %d convolution kernels together failed (%s); each is compiled "
                 "when first used", len(pending), e)
        return
    install(pending, result.objects)


def _disk_entry(spec: ConvSpec, emit: Emit, name: str) -> tuple[Any, str]:
    """The disk cache of the kernels (``XLAPY_CACHE_DIR``'s :data:`CACHE_SUBDIR`) and the
    key of kernel ``name`` there (``kernel_cache.py``)."""
    return kernel_cache.entry(CACHE_SUBDIR, f"{name} {emit.__name__} {spec!r}")


def _store(p: Pending, obj: bytes) -> None:
    """Keep the object code ``obj`` of kernel ``p`` in the disk cache."""
    kernel_cache.store(p.disk, p.key, p.name, obj, type(p.spec).__name__, p.emit.__name__,
                       p.digest)


__all__ = ["ConvSpec", "WeightGradSpec", "weight_grad_kernel", "DirectSpec", "direct_kernel",
           "compiled", "compile_kernels", "missing", "install", "Pending", "compile_one",
           "lanes", "tile_registers", "vector_chunks", "runs", "KERNEL_OPT_LEVEL", "CACHE_SUBDIR"]
