"""How the convolution thunk (``conv.py``) computes one convolution: its geometry and the
strategies, everything that depends on shapes and layouts only (planned once per
instruction).

Strategies work on ``xp`` (the dilated, padded input, C-contiguous), ``w[K..., C/G, O]``
(C-contiguous) and the output, each in the order the strategy declares (``x_order`` /
``y_order``, permutations of the canonical ``[N, Sp..., C]`` / ``[N/Bg, P..., O]``), and
write disjoint output rows per work item, so items may run in parallel.

- ``im2col``: output rows ``(image, P...)`` are cut into blocks whose patches fit
  ``PATCH_BYTES``; a block copies its patches into a ``[G, rows, K..., C/G]`` buffer and one
  ``?gemm`` (batched over the G feature groups) multiplies them with the kernel matrix
  ``[K... * C/G, O]`` straight into the output rows. Large windows (weight gradients) also
  split the kernel's first spatial dim, accumulating with ``beta = 1``.
- ``taps`` (in ``conv_taps.py``, like ``taps_t``): no copy at all, for ``G == 1`` and no
  ``rhs_dilate`` in the last spatial dim. In ``xp`` the last-dim taps of a window and the
  features are one contiguous run, so for each output position ``p`` (but the last dim's)
  and kernel tap ``k`` (but the last dim's),
  ``y[:, p, q, :] += xp[:, p*s + k*d, q*s : q*s + K, :] @ w[k]`` is one GEMM whose M is
  the batch (leading dim = the image stride) and K the run; the last output dim ``q`` is the
  batch of one ``gemm_batch_strided`` call (A moves by ``stride * C``, B stays). Many
  images are cut into blocks that run every position in turn; taps reading only padding
  are left out for finite kernels; long K runs are cut into chunks (``conv_taps.py``).
- ``taps_t``: ``taps`` on ``xp[Sp..., C, N]`` and ``y[P..., N, O]`` (also ``Bg == 1``), for
  inputs stored batch-innermost: a weight gradient ``f01b_i01o->01bf`` on NHWC activations is
  a convolution whose batch is the channels. Its GEMMs read A transposed (leading dim
  ``N``); building ``xp`` moves runs of ``N`` elements instead of transposing.
- ``elementwise``: for many groups with tiny per-group products (depthwise convolutions),
  ``y[.., g, j] += window[.., k, g, c] * w[k, c, g, j]`` with NumPy multiply-adds on window
  views, per block of output rows.

Weight gradients have few output positions and long reductions: when ``taps``/``im2col``
would have fewer than four work items per thread and the output is small
(``SHARD_OUTPUT_BYTES``), their taps / kernel chunks are split into shards (a multiple of
the thread count); shard 0 writes the output, the others private copies added in at the end.

On the CNN's convolutions (benchmarks/conv_bench.py; figures in docs/performance.md) thin
GEMMs (a 3-channel first layer: K = 9; a 3-image weight gradient: M = 3) were faster as
im2col, under load and even when idle, hence ``TAPS_MIN_DIM``; a 32x32-channel weight
gradient runs its taps as 32x32xK GEMMs, bounded by OpenBLAS's packing on such thin
products.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...errors import InvalidArgumentError, ShapeError
from ...hlo.attrs import ConvDimensionNumbers, Window, WindowDim
from ...hlo.ir import HloInstruction
from ...hlo.shape_inference import infer_shape
from ..interpreter.evaluator import describe
from .blas_lib import GemmCall, MatrixArg

#: Bytes of patches one im2col block copies before its GEMM (about a core's L2).
PATCH_BYTES = 1 << 20
#: Fewest patch rows per GEMM before im2col splits the kernel's first spatial dim.
MIN_ROWS = 128
#: Grouped convolutions with (input x output features) per group up to this use
#: elementwise multiply-adds instead of one GEMM per group.
ELEMENTWISE_GROUP_WORK = 8
#: ``taps`` is chosen when its number of BLAS calls times this is at most the bytes im2col
#: would copy (one call costs about as much as copying this many bytes).
TAPS_CALL_BYTES = 64 << 10
#: ``taps`` needs GEMMs with at least this many rows (images) and K (last kernel dim x
#: features): thinner ones run at a fraction of BLAS speed (a 3-channel first layer and a
#: 3-image weight gradient ran slower than im2col: docs/performance.md).
TAPS_MIN_DIM = 16
#: ``taps`` splits its taps into shards with private outputs only for outputs up to this.
SHARD_OUTPUT_BYTES = 4 << 20

Work = Callable[[Any, dict], None]


# --------------------------------------------------------------------------------------------
# geometry

@dataclass(frozen=True)
class ConvGeometry:
    """Sizes of a convolution in canonical order; 0-D convolutions get one unit spatial dim."""

    dn: ConvDimensionNumbers
    window: tuple[WindowDim, ...]
    groups: int             # feature_group_count (G)
    batch_groups: int       # batch_group_count (Bg)
    n: int                  # input batch
    c: int                  # input features
    o: int                  # output features
    spatial: tuple[int, ...]   # input spatial sizes (S)
    kernel: tuple[int, ...]    # kernel spatial sizes (K)
    out: tuple[int, ...]       # output spatial sizes (P)
    padded: tuple[int, ...]    # dilated + padded input sizes (Sp)
    batch_inner: bool = False  # the input is stored with its batch dim most minor

    @property
    def cg(self) -> int:
        return self.c // self.groups

    @property
    def nb(self) -> int:
        return self.n // self.batch_groups

    @property
    def opg(self) -> int:
        return self.o // (self.groups * self.batch_groups)

    @property
    def needs_padding(self) -> bool:
        return any(w.pad_lo or w.pad_hi or w.lhs_dilate != 1 for w in self.window)

    @property
    def flops(self) -> float:
        return 2.0 * self.nb * prod(self.out) * self.o * prod(self.kernel) * self.cg


def conv_geometry(instr: HloInstruction) -> ConvGeometry:
    """The geometry of ``instr``, validated (ShapeError/InvalidArgumentError name it)."""
    where = describe(instr)
    if instr.opcode != "convolution" or len(instr.operands) != 2:
        raise InvalidArgumentError(f"{where}: expected a convolution with 2 operands")
    dn = instr.attr("dim_labels")
    if dn is None:
        raise InvalidArgumentError(f"{where}: convolution needs dim_labels")
    if isinstance(dn, str):
        try:
            dn = ConvDimensionNumbers.from_string(dn)
        except ValueError as e:
            raise InvalidArgumentError(f"{where}: {e}") from None
    if dn.labels is not None:
        raise InvalidArgumentError(f"{where}: dim_labels {dn.labels!r} has unknown dims")
    nsp = len(dn.input_spatial)
    window = instr.attr("window") or Window(tuple(WindowDim() for _ in range(nsp)))
    attrs = dict(instr.attrs, dim_labels=dn, window=window)
    lhs, rhs = (o.shape for o in instr.operands)
    inferred = infer_shape("convolution", [lhs, rhs], attrs)
    if inferred.dims != instr.shape.dims:
        raise ShapeError(f"{where}: operands {lhs} and {rhs} give result dims {inferred.dims}, "
                         f"not {instr.shape.dims}")
    wd = tuple(window.dims)
    spatial = tuple(lhs.dims[d] for d in dn.input_spatial)
    padded = tuple(w.pad_lo + ((s - 1) * w.lhs_dilate + 1 if s else 0) + w.pad_hi
                   for s, w in zip(spatial, wd))
    out = tuple(instr.shape.dims[d] for d in dn.output_spatial)
    kernel = tuple(rhs.dims[d] for d in dn.kernel_spatial)
    if nsp == 0:                      # a dot over features: one unit spatial dim
        wd, spatial, padded, out, kernel = (WindowDim(),), (1,), (1,), (1,), (1,)
    minor = lhs.layout.minor_to_major[0] if lhs.layout is not None and lhs.rank else lhs.rank - 1
    return ConvGeometry(dn, wd, int(instr.attr("feature_group_count", 1) or 1),
                        int(instr.attr("batch_group_count", 1) or 1),
                        lhs.dims[dn.input_batch], lhs.dims[dn.input_feature],
                        rhs.dims[dn.kernel_output_feature], spatial, kernel, out, padded,
                        batch_inner=lhs.rank > 0 and minor == dn.input_batch)


def windows_view(g: ConvGeometry, xp: np.ndarray) -> np.ndarray:
    """The read-only strided view ``[N, P..., K..., C]`` of every window of ``xp``."""
    s_n, *s_sp, s_c = xp.strides
    shape = (g.n, *g.out, *g.kernel, g.c)
    strides = (s_n, *(s * wd.stride for s, wd in zip(s_sp, g.window)),
               *(s * wd.rhs_dilate for s, wd in zip(s_sp, g.window)), s_c)
    return as_strided(xp, shape, strides, writeable=False)


# --------------------------------------------------------------------------------------------
# choosing a strategy

def applicable_strategies(g: ConvGeometry) -> list[str]:
    """The strategies that can compute ``g`` (im2col and elementwise always can)."""
    taps = g.groups == 1 and g.window[-1].rhs_dilate == 1
    taps_t = taps and g.batch_groups == 1
    return ["im2col", "elementwise"] + (["taps"] if taps else []) + (["taps_t"] if taps_t else [])


def choose_strategy(g: ConvGeometry, itemsize: int) -> str:
    """``elementwise`` for many groups with tiny per-group products, ``taps`` when it applies,
    its GEMMs are not thin (``TAPS_MIN_DIM`` rows and K) and its BLAS calls are few next to
    the bytes im2col would copy (``taps_t`` for inputs stored batch-innermost), else
    ``im2col``."""
    if g.groups > 1 and g.cg * g.opg <= ELEMENTWISE_GROUP_WORK:
        return "elementwise"
    if "taps" in applicable_strategies(g) and g.nb >= TAPS_MIN_DIM \
            and g.kernel[-1] * g.c >= TAPS_MIN_DIM:
        calls = g.batch_groups * prod(g.out[:-1]) * prod(g.kernel[:-1])
        copy_bytes = g.n * prod(g.out) * prod(g.kernel) * g.c * itemsize
        if calls * TAPS_CALL_BYTES <= copy_bytes:
            return "taps_t" if g.batch_inner and "taps_t" in applicable_strategies(g) \
                else "taps"
    return "im2col"


def make_strategy(name: str, g: ConvGeometry, acc: np.dtype, threads: int = 1):
    """The strategy object: ``items``, ``x_order``/``y_order``, ``items_for``, ``bind`` and
    ``finish`` (the taps strategies live in ``conv_taps.py``, which builds on this module)."""
    from .conv_taps import Taps, TapsT
    if name == "elementwise":
        return Elementwise(g, acc)
    return {"im2col": Im2col, "taps": Taps, "taps_t": TapsT}[name](g, acc, threads)


def even_split(n: int, most: int) -> list[tuple[int, int]]:
    """``[0, n)`` cut into the fewest ranges of at most ``most`` (>= 1), sizes within one."""
    pieces = -(-n // max(1, most))
    return [(n * i // pieces, n * (i + 1) // pieces) for i in range(pieces)]


@dataclass(frozen=True)
class Block:
    """Output rows of one batch group: images ``[b0, b1)`` x first output spatial ``[q0, q1)``."""

    bg: int
    b0: int
    b1: int
    q0: int
    q1: int


def plan_blocks(g: ConvGeometry, itemsize: int) -> tuple[list[Block], list[tuple[int, int]]]:
    """Row blocks and kernel-dim-0 chunks so that one block's patches fit ``PATCH_BYTES``."""
    k_rest = prod(g.kernel[1:])
    row_bytes = prod(g.kernel) * g.c * itemsize
    kb = g.kernel[0]
    if row_bytes * MIN_ROWS > PATCH_BYTES:
        kb = max(1, min(kb, PATCH_BYTES // (MIN_ROWS * k_rest * g.c * itemsize)))
    k_chunks = [(k0, min(k0 + kb, g.kernel[0])) for k0 in range(0, g.kernel[0], kb)]
    rows_fit = max(1, PATCH_BYTES // max(1, kb * k_rest * g.c * itemsize))
    per_image, per_q = prod(g.out), prod(g.out[1:])
    blocks = []
    for bg in range(g.batch_groups):
        if per_image <= rows_fit:
            blocks += [Block(bg, b0, b1, 0, g.out[0])
                       for b0, b1 in even_split(g.nb, rows_fit // max(1, per_image))]
        else:
            blocks += [Block(bg, b, b + 1, q0, q1) for b in range(g.nb)
                       for q0, q1 in even_split(g.out[0], rows_fit // max(1, per_q))]
    return blocks, k_chunks


# --------------------------------------------------------------------------------------------
# strategies: ``items`` (independent work items) and ``bind(xp, w, target) -> work``

class _Canonical:
    """Strategies working on the canonical ``xp[N, Sp..., C]`` and ``y[N/Bg, P..., O]``."""

    g: ConvGeometry
    items: list

    def items_for(self, w: np.ndarray) -> list:
        """The work items (the same for every kernel)."""
        return self.items

    @property
    def x_order(self) -> list[int]:
        return list(range(len(self.g.padded) + 2))

    y_order = x_order

    def finish(self, target: np.ndarray) -> None:
        """Nothing to add up: every item wrote its output rows."""


class PartialOutputs:
    """Output shards: work items of shard ``s > 0`` write into a private copy of the output
    that :meth:`finish` adds into the target (for small outputs with few work items, whose
    reduction is split so that every thread gets work)."""

    shards = 1
    _partials: np.ndarray | None = None

    def _outputs(self, target: np.ndarray) -> list[int]:
        """The output base address of each shard (allocating the private copies)."""
        self._partials = (np.empty((self.shards - 1,) + target.shape, target.dtype)
                          if self.shards > 1 else None)
        return [target.ctypes.data] + ([p.ctypes.data for p in self._partials]
                                       if self._partials is not None else [])

    def finish(self, target: np.ndarray) -> None:
        """Add the shards' partial outputs into ``target``."""
        if self._partials is not None:
            for p in self._partials:
                target += p
            self._partials = None


class Im2col(PartialOutputs, _Canonical):
    """Patches copied block by block, one (group-batched) GEMM per block and kernel chunk."""

    def __init__(self, g: ConvGeometry, acc: np.dtype, threads: int = 1) -> None:
        self.g, self.acc = g, acc
        blocks, k_chunks = plan_blocks(g, acc.itemsize)
        item, nsp = acc.itemsize, len(g.out)
        k_rest = prod(g.kernel[1:]) * g.cg
        self.shards = shard_count(len(blocks), len(k_chunks), threads,
                              g.nb * prod(g.out) * g.o * item)
        # per block and shard: [(window index, grouped shape, group-major order, GEMM,
        #   w offset, output offset, beta, shard)] in bytes, one entry per kernel chunk
        self.items: list[list[tuple]] = []
        self.buffer_elems = 0
        for b in blocks:
            rows = (b.b1 - b.b0) * (b.q1 - b.q0) * prod(g.out[1:])
            row0 = b.b0 * prod(g.out) + b.q0 * prod(g.out[1:])
            img, o_lo = b.bg * g.nb, b.bg * g.groups * g.opg
            for shard in range(self.shards):
                lo = len(k_chunks) * shard // self.shards
                hi = len(k_chunks) * (shard + 1) // self.shards
                steps: list[tuple] = []
                for k0, k1 in k_chunks[lo:hi]:
                    index = ((slice(img + b.b0, img + b.b1), slice(b.q0, b.q1))
                             + (slice(None),) * (nsp - 1) + (slice(k0, k1),))
                    shape = ((b.b1 - b.b0, b.q1 - b.q0, *g.out[1:], k1 - k0, *g.kernel[1:],
                              g.groups, g.cg))
                    rank = len(shape)
                    order = (rank - 2, *range(rank - 2), rank - 1)    # groups first
                    k = (k1 - k0) * k_rest
                    call = GemmCall(acc, rows, g.opg, k, MatrixArg(False, k),
                                    MatrixArg(False, g.o), g.o, g.groups, rows * k, g.opg, g.opg)
                    steps.append((index, shape, order, call, (k0 * k_rest * g.o + o_lo) * item,
                                  (row0 * g.o + o_lo) * item, 1 if steps else 0, shard))
                    self.buffer_elems = max(self.buffer_elems, g.groups * rows * k)
                self.items.append(steps)

    def bind(self, xp: np.ndarray, w: np.ndarray, target: np.ndarray) -> Work:
        windows = windows_view(self.g, xp)
        wptr = w.ctypes.data
        outs = self._outputs(target)

        def work(steps: list[tuple], state: dict) -> None:
            buf = state.get("buf")
            if buf is None:
                buf = state["buf"] = np.empty(self.buffer_elems, self.acc)
            bptr = buf.ctypes.data
            for index, shape, order, call, w_off, t_off, beta, shard in steps:
                src = windows[index].reshape(shape).transpose(order)
                np.copyto(buf[:src.size].reshape(src.shape), src)
                call.run(bptr, wptr + w_off, outs[shard] + t_off, beta)
        return work


def shard_count(items: int, taps: int, threads: int, out_bytes: int) -> int:
    """Into how many output shards a strategy with ``items`` work items splits its ``taps``
    (taps or kernel chunks) for ``threads`` threads (1: no split)."""
    if threads <= 1 or taps < 2 or items >= 4 * threads or out_bytes > SHARD_OUTPUT_BYTES:
        return 1
    per_item = -(-4 * threads // items)
    return min(taps, -(-per_item // threads) * threads)


def buffer_orders(nsp: int, batch_inner: bool) -> tuple[list[int], list[int]]:
    """The order of ``xp``'s and the output's dims as permutations of the canonical
    ``[N, S..., C]`` / ``[N, P..., O]``: identities, or batch-inner
    ``[S..., C, N]`` / ``[P..., N, O]``."""
    if not batch_inner:
        ident = list(range(nsp + 2))
        return ident, ident
    return [*range(1, nsp + 1), nsp + 1, 0], [*range(1, nsp + 1), 0, nsp + 1]


class Elementwise(_Canonical):
    """Multiply-adds on window views per block of output rows (grouped convolutions)."""

    def __init__(self, g: ConvGeometry, acc: np.dtype) -> None:
        self.g, self.acc = g, acc
        self.items, _ = plan_blocks(g, acc.itemsize)

    def bind(self, xp: np.ndarray, w: np.ndarray, target: np.ndarray) -> Work:
        g = self.g
        windows = windows_view(g, xp)
        lead = (slice(None),) * (1 + len(g.out))
        taps = [tap + (slice(None), c) for tap in np.ndindex(*g.kernel) for c in range(g.cg)]
        wks = [w[..., bg * g.groups * g.opg:(bg + 1) * g.groups * g.opg].reshape(
            (*g.kernel, g.cg, g.groups, g.opg)) for bg in range(g.batch_groups)]

        def work(b: Block, state: dict) -> None:
            img, o_lo = b.bg * g.nb, b.bg * g.groups * g.opg
            v = windows[img + b.b0:img + b.b1, b.q0:b.q1]
            v = v.reshape(v.shape[:-1] + (g.groups, g.cg))             # [.., K.., G, Cg]
            yb = target[b.b0:b.b1, b.q0:b.q1, ..., o_lo:o_lo + g.groups * g.opg]
            yb = yb.reshape(yb.shape[:-1] + (g.groups, g.opg))          # [.., G, Opg]
            tmp = state.get("tmp")
            if tmp is None or tmp.size < yb.size:
                tmp = state["tmp"] = np.empty(yb.size, yb.dtype)
            tmp = tmp[:yb.size].reshape(yb.shape)
            wk = wks[b.bg]
            for i, tap in enumerate(taps):
                xv = v[lead + tap][..., None]                           # [.., G, 1]
                if i == 0:
                    np.multiply(xv, wk[tap[:-2] + (tap[-1],)], out=yb)
                else:
                    np.multiply(xv, wk[tap[:-2] + (tap[-1],)], out=tmp)
                    yb += tmp
        return work


__all__ = ["ConvGeometry", "conv_geometry", "windows_view", "applicable_strategies",
           "choose_strategy", "make_strategy", "plan_blocks", "Block", "Im2col", "Elementwise",
           "buffer_orders", "shard_count", "even_split", "PartialOutputs", "SHARD_OUTPUT_BYTES",
           "PATCH_BYTES", "MIN_ROWS", "ELEMENTWISE_GROUP_WORK", "TAPS_CALL_BYTES", "TAPS_MIN_DIM"]
