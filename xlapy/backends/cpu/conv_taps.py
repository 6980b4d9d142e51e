"""The ``taps`` and ``taps_t`` convolution strategies (see ``conv_plan.py`` for the
strategies and how one is chosen): GEMMs straight on the padded input, one per output
position and kernel tap but the last dim's, whose K run is the last dim's taps times the
features.

Planned per instruction: image blocks (many images: a block runs every output position in
turn while its window rows stay in cache), output shards (weight gradients: few positions,
many taps), K chunks (long runs), and ``trimmed`` items that leave out taps reading only
padding (input gradients), used when the kernel is finite.
"""
from __future__ import annotations

from dataclasses import replace
from math import prod

import numpy as np

from ...hlo.attrs import WindowDim
from .blas_lib import GemmCall, MatrixArg
from .conv_plan import (TAPS_MIN_DIM, ConvGeometry, Work, PartialOutputs, buffer_orders,
                        even_split, shard_count)

#: ``taps`` cuts many images into blocks whose window rows for one output position take
#: up to about this many bytes (and at least two blocks per thread), so that a block's rows
#: are still in cache for the next positions (the CNN's NHWC convolutions ran faster as 4
#: blocks of 64 images than as one GEMM of all 256 images per position, and slower with
#: smaller blocks: docs/performance.md).
TAPS_BLOCK_BYTES = 1 << 20
#: ``taps`` cuts K runs longer than fit this many bytes of A and B (weight gradients:
#: 7680 = 30 columns x 256 images) into chunks (faster for the CNN's 32x32-channel weight
#: gradient, neutral for its others: docs/performance.md).
TAPS_K_CHUNK_BYTES = 256 << 10
#: ``taps`` leaves out the products with padding only when that saves at least this share
#: of its flops, and only for kernels up to ``TRIM_MAX_KERNEL`` elements (each call checks
#: that they are finite).
TRIM_GAIN = 0.95
TRIM_MAX_KERNEL = 1 << 20
#: Padding columns at the ends of the K runs are left out (in GEMMs of their own) only
#: when that saves this many flops per extra GEMM call (each call has a fixed cost; an NHWC
#: 32-channel input gradient padded by 2 ran slower with its 4 border columns apart).
TRIM_CALL_FLOPS = 2e6


class Taps(PartialOutputs):
    """GEMMs straight on the padded input (see the module docstring).

    ``xp`` is ``[N, Sp..., C]`` and the output ``[N/Bg, P..., O]``: a GEMM's rows are the
    images (leading dim = the image stride).

    Taps that read only padding (input gradients are "full" convolutions padded by the
    window size - 1) are left out by ``trimmed``, the items used when the kernel is finite
    (a padding zero times an infinite or NaN weight is NaN, so the products must be done
    then): per output position the taps whose rows are padding or dilation holes, and the
    padding columns at either end of a GEMM's K run, which puts the border columns of the
    last output dim in GEMMs of their own."""

    #: The layout of ``xp`` and of the output as permutations of the canonical
    #: ``[N, Sp..., C]`` / ``[N, P..., O]`` dims (see :func:`buffer_orders`).
    batch_inner = False

    def __init__(self, g: ConvGeometry, acc: np.dtype, threads: int = 1) -> None:
        self.g, self.acc = g, acc
        self.x_order, self.y_order = buffer_orders(len(g.padded), self.batch_inner)
        item = acc.itemsize
        xs = self._x_strides()
        # (x offset, w offset) in bytes per tap but the last dim's
        kpres = list(np.ndindex(*g.kernel[:-1]))
        self.taps = []
        for t, kpre in enumerate(kpres):
            xo = sum(k * wd.rhs_dilate * xs[i] for i, (k, wd) in enumerate(zip(kpre, g.window)))
            self.taps.append((xo * item, t * g.kernel[-1] * g.c * g.o * item))
        positions = list(np.ndindex(*g.out[:-1]))
        ntaps = len(self.taps)
        # Many images: an item is a block of images over every output position in turn, so
        # the input rows a position reads are still in cache for the next positions. Few
        # output positions but many taps (weight gradients): the taps are split into
        # shards summed into private outputs, so every thread gets equal work. Otherwise
        # an item is one output position (the last output dim split when they are few).
        base = g.batch_groups * len(positions)
        self.shards = shard_count(base, ntaps, threads, g.nb * prod(g.out) * g.o * item)
        blocks = self._image_blocks(threads) if self.shards == 1 else None
        want = 1 if self.shards > 1 or blocks else 8
        pieces = max(1, min(g.out[-1], -(-want // max(1, base))))
        q_runs = column_runs(g, (blocks[0][1] - blocks[0][0]) if blocks else g.nb)
        # An item is a list of GEMMs: (GEMM, x offset, output offset, kernel column offset,
        # tap indices, shard, index of the output region to zero when there are no taps):
        # all the GEMMs of an image block, or a single one.
        self.items: list[list[tuple]] = []
        self.trimmed: list[list[tuple]] | None = [] if self.shards == 1 else None
        for bg in range(g.batch_groups):
            for b0, b1 in blocks or [(0, g.nb)]:
                full: list[tuple] = []
                trim: list[tuple] = []
                for pre in positions:
                    full += self._position_gemms(bg, b0, b1, pre, pieces)
                    if self.trimmed is not None:
                        trim += self._trimmed_gemms(bg, b0, b1, pre, kpres, q_runs)
                if blocks:
                    self.items.append(full)
                    if self.trimmed is not None:
                        self.trimmed.append(trim)
                else:
                    self.items += [[gemm] for gemm in full]
                    if self.trimmed is not None:
                        self.trimmed += [[gemm] for gemm in trim]
        if self.trimmed is not None and _flops(self.trimmed) >= TRIM_GAIN * _flops(self.items):
            self.trimmed = None          # nothing (or too little) to leave out
        self.chunks = self._k_chunks()

    def _position_xo(self, pre: tuple) -> int:
        """Element offset in ``xp`` of output position ``pre``'s first window row."""
        return sum(p * wd.stride * xs for p, wd, xs in zip(pre, self.g.window, self._x_strides()))

    def _position_gemms(self, bg: int, b0: int, b1: int, pre: tuple, pieces: int) -> list:
        """The GEMMs of output position ``pre`` (all but the last dim) over every tap: the
        last output dim in ``pieces``, the taps in ``shards``."""
        g, ntaps = self.g, len(self.taps)
        flat = int(np.ravel_multi_index(pre, g.out[:-1])) if pre else 0
        xo = self._position_xo(pre)
        out = []
        for q0, q1 in even_split(g.out[-1], -(-g.out[-1] // pieces)):
            gemm = self._gemm(bg, b0, b1, xo, flat, q0, q1, (0, g.kernel[-1]))
            for shard in range(self.shards):
                taps = range(ntaps * shard // self.shards, ntaps * (shard + 1) // self.shards)
                out.append((*gemm, tuple(taps), shard, None))
        return out

    def _trimmed_gemms(self, bg: int, b0: int, b1: int, pre: tuple, kpres: list,
                       q_runs: list) -> list:
        """The GEMMs of output position ``pre`` without the taps whose rows are padding or
        dilation holes, the last output dim cut into ``q_runs`` (see :func:`column_runs`);
        a GEMM without taps zeroes its output region."""
        g = self.g
        flat = int(np.ravel_multi_index(pre, g.out[:-1])) if pre else 0
        xo = self._position_xo(pre)
        real = tuple(t for t, kpre in enumerate(kpres)
                     if all(_real(wd, s, p * wd.stride + k * wd.rhs_dilate)
                            for wd, s, p, k in zip(g.window, g.spatial, pre, kpre)))
        out = []
        for q0, q1, run in q_runs:
            zero = self._zero_index(bg, b0, b1, pre, q0, q1)
            if not real or run[1] <= run[0]:
                out.append((None, 0, 0, 0, (), 0, zero))
            else:
                out.append((*self._gemm(bg, b0, b1, xo, flat, q0, q1, run), real, 0, zero))
        return out

    def _k_chunks(self) -> dict[GemmCall, list[tuple[GemmCall, int, int]]]:
        """Long K runs (weight gradients) cut into chunks whose A and B blocks fit
        ``TAPS_K_CHUNK_BYTES``: ``call -> [(chunk call, x byte offset, w byte offset)]`` for
        the calls that are cut (a batch over the last output dim then reuses its B chunk
        and the overlapping A rows from cache)."""
        item = self.acc.itemsize
        a_step = self.g.n if self.batch_inner else 1      # elements between K columns of A
        out: dict[GemmCall, list[tuple[GemmCall, int, int]]] = {}
        for gemms in self.items + (self.trimmed or []):
            for gemm in gemms:
                call = gemm[0]
                if call is None or call in out:
                    continue
                size = max(1, TAPS_K_CHUNK_BYTES // ((call.m + call.n) * item))
                if call.k <= size:
                    continue
                out[call] = [(replace(call, k=k1 - k0), k0 * a_step * item, k0 * self.g.o * item)
                             for k0, k1 in even_split(call.k, size)]
        return out

    def _image_blocks(self, threads: int) -> list[tuple[int, int]] | None:
        """Blocks of images whose window rows for one output position fit
        ``TAPS_BLOCK_BYTES`` (at least ``TAPS_MIN_DIM`` images, at least two blocks per
        thread when there are enough images), or None when blocking does not apply."""
        g = self.g
        if g.nb < 2 * TAPS_MIN_DIM:
            return None
        rows = prod(g.kernel[:-1]) * g.padded[-1] * g.c * self.acc.itemsize
        size = max(TAPS_MIN_DIM, min(g.nb, TAPS_BLOCK_BYTES // max(1, rows)))
        size = max(TAPS_MIN_DIM, min(size, -(-g.nb // (2 * max(1, threads)))))
        count = max(1, g.nb // size)
        return [(g.nb * i // count, g.nb * (i + 1) // count) for i in range(count)]

    def _x_strides(self) -> list[int]:
        """Element strides of ``xp``'s spatial dims."""
        g = self.g
        return [prod(g.padded[i + 1:]) * g.c for i in range(len(g.padded))]

    def _gemm(self, bg: int, b0: int, b1: int, xo: int, flat: int, q0: int, q1: int,
              run: tuple[int, int]) -> tuple:
        """The GEMM for images ``[b0, b1)`` of batch group ``bg`` at output positions
        ``flat`` x ``[q0, q1)``, over the last kernel dim's taps ``run``, and its x / output /
        kernel byte offsets."""
        g, item = self.g, self.acc.itemsize
        image = prod(g.padded) * g.c
        o_lo, stride = bg * g.opg, self.g.window[-1].stride
        call = GemmCall(self.acc, b1 - b0, g.opg, (run[1] - run[0]) * g.c,
                        MatrixArg(False, image), MatrixArg(False, g.o), prod(g.out) * g.o,
                        q1 - q0, stride * g.c, 0, g.o)
        return (call, ((bg * g.nb + b0) * image + xo + (q0 * stride + run[0]) * g.c) * item,
                (((b0 * prod(g.out[:-1]) + flat) * g.out[-1] + q0) * g.o + o_lo) * item,
                (o_lo + run[0] * g.c * g.o) * item)

    def _zero_index(self, bg: int, b0: int, b1: int, pre: tuple, q0: int, q1: int) -> tuple:
        """The output region of one GEMM, as an index into the output array."""
        o_lo = bg * self.g.opg
        return (slice(b0, b1), *pre, slice(q0, q1), slice(o_lo, o_lo + self.g.opg))

    def items_for(self, w: np.ndarray) -> list[list[tuple]]:
        """The work items for kernel ``w``: ``trimmed`` when there are any and every weight
        is finite (then leaving out products with padding zeros cannot lose a NaN)."""
        if self.trimmed is not None and w.size <= TRIM_MAX_KERNEL and np.isfinite(w).all():
            return self.trimmed
        return self.items

    def bind(self, xp: np.ndarray, w: np.ndarray, target: np.ndarray) -> Work:
        xptr, wptr = xp.ctypes.data, w.ctypes.data
        outs = self._outputs(target)
        taps, chunked = self.taps, self.chunks

        def work(gemms: list[tuple], state: dict) -> None:
            for call, x_off, t_off, w_lo, indices, shard, zero in gemms:
                if not indices:
                    target[zero] = 0
                    continue
                out = outs[shard] + t_off
                chunks = chunked.get(call)
                for n, j in enumerate(indices):
                    tx, tw = taps[j]
                    if chunks is None:
                        call.run(xptr + x_off + tx, wptr + w_lo + tw, out, 1 if n else 0)
                        continue
                    for c, (part, dx, dw) in enumerate(chunks):
                        part.run(xptr + x_off + tx + dx, wptr + w_lo + tw + dw, out,
                                 1 if n or c else 0)
        return work


class TapsT(Taps):
    """:class:`Taps` for inputs stored batch-innermost (a weight gradient's activations
    ``[N, H, W, C]`` seen as a convolution whose batch is ``C``): ``xp`` is
    ``[Sp..., C, N]`` and the output ``[P..., N, O]``, so a GEMM's rows are the batch
    with unit stride (A transposed, leading dim ``N``) and its K run ``(k, c)`` is strided
    by ``N``. Copying such an input to ``xp`` moves runs of ``N`` elements, where
    :class:`Taps` would need a full transposition."""

    batch_inner = True

    def _x_strides(self) -> list[int]:
        g = self.g
        return [prod(g.padded[i + 1:]) * g.c * g.n for i in range(len(g.padded))]

    def _image_blocks(self, threads: int) -> None:
        return None         # the batch is the unit-stride dim: no blocks of it

    def _gemm(self, bg: int, b0: int, b1: int, xo: int, flat: int, q0: int, q1: int,
              run: tuple[int, int]) -> tuple:
        g, item = self.g, self.acc.itemsize
        stride = g.window[-1].stride
        call = GemmCall(self.acc, g.n, g.o, (run[1] - run[0]) * g.c, MatrixArg(True, g.n),
                        MatrixArg(False, g.o), g.o, q1 - q0, stride * g.c * g.n, 0, g.n * g.o)
        return (call, (xo + (q0 * stride + run[0]) * g.c * g.n) * item,
                (flat * g.out[-1] + q0) * g.n * g.o * item, run[0] * g.c * g.o * item)

    def _zero_index(self, bg: int, b0: int, b1: int, pre: tuple, q0: int, q1: int) -> tuple:
        return (*pre, slice(q0, q1), slice(None), slice(None))


def _flops(items: list[list[tuple]]) -> int:
    """Multiply-adds of a list of :class:`Taps` items."""
    return sum(len(g[4]) * g[0].matrix_flops * g[0].batch
               for it in items for g in it if g[0] is not None)


def _real(wd: WindowDim, size: int, r: int) -> bool:
    """Whether padded position ``r`` of a spatial dim holds an input element (not padding
    or a dilation hole)."""
    i, rem = divmod(r - wd.pad_lo, wd.lhs_dilate)
    return rem == 0 and 0 <= i < size


def column_runs(g: ConvGeometry, rows: int) -> list[tuple[int, int, tuple[int, int]]]:
    """The last output dim cut into ranges ``[q0, q1)`` whose K runs hold the same real
    columns ``run`` (last-dim taps ``[k0, k1)``); one range when there are dilation holes,
    or when the padding columns left out would save less than ``TRIM_CALL_FLOPS`` per extra
    GEMM call (of ``rows`` rows)."""
    wd, k, size = g.window[-1], g.kernel[-1], g.spatial[-1]
    whole = [(0, g.out[-1], (0, k))]
    if wd.lhs_dilate != 1:
        return whole
    lo, hi = max(0, wd.pad_lo), min(g.padded[-1], wd.pad_lo + size)
    runs: list[tuple[int, int, tuple[int, int]]] = []
    for q in range(g.out[-1]):
        start = q * wd.stride
        run = (max(0, lo - start), min(k, hi - start))
        run = run if run[1] > run[0] else (0, 0)
        if runs and runs[-1][2] == run and runs[-1][1] == q:
            runs[-1] = (runs[-1][0], q + 1, run)
        else:
            runs.append((q, q + 1, run))
    saved = sum((q1 - q0) * (k - (r1 - r0)) for q0, q1, (r0, r1) in runs)
    if len(runs) == 1 or saved * 2 * rows * g.c * g.opg < TRIM_CALL_FLOPS * (len(runs) - 1):
        return whole
    return runs


__all__ = ["Taps", "TapsT", "column_runs", "TAPS_BLOCK_BYTES", "TAPS_K_CHUNK_BYTES",
           "TRIM_GAIN", "TRIM_MAX_KERNEL", "TRIM_CALL_FLOPS"]
