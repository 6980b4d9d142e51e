"""How the convolution thunk (``conv.py``) computes one convolution: its geometry and the
three strategies, everything that depends on shapes only (planned once per instruction).

All strategies work in the canonical order ``xp[N, Sp..., C]`` (the dilated, padded input,
C-contiguous), ``w[K..., C/G, O]`` (C-contiguous) and ``y[N/Bg, P..., O]``
(C-contiguous), and write disjoint output rows per work item, so items may run in parallel.

- ``im2col``: output rows ``(image, P...)`` are cut into blocks whose patches fit
  ``PATCH_BYTES``; a block copies its patches into a ``[G, rows, K..., C/G]`` buffer and one
  ``?gemm`` (batched over the G feature groups) multiplies them with the kernel matrix
  ``[K... * C/G, O]`` straight into the output rows. Large windows (weight gradients) also
  split the kernel's first spatial dim, accumulating with ``beta = 1``.
- ``taps``: no copy at all, for ``G == 1`` and no ``rhs_dilate`` in the last spatial dim. In
  ``xp`` the last-dim taps of a window and the features are one contiguous run, so for each
  output position ``p`` (but the last dim's) and kernel tap ``k`` (but the last dim's),
  ``y[:, p, q, :] += xp[:, p*s + k*d, q*s : q*s + K, :] @ w[k]`` is one GEMM whose M is the
  batch (leading dim = the image stride) and K the run; the last output dim ``q`` is the
  batch of one ``gemm_batch_strided`` call (A moves by ``stride * C``, B stays).
- ``elementwise``: for many groups with tiny per-group products (depthwise convolutions),
  ``y[.., g, j] += window[.., k, g, c] * w[k, c, g, j]`` with NumPy multiply-adds on window
  views, per block of output rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Callable

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

Work = Callable[[object, dict], None]


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
    return ConvGeometry(dn, wd, int(instr.attr("feature_group_count", 1) or 1),
                        int(instr.attr("batch_group_count", 1) or 1),
                        lhs.dims[dn.input_batch], lhs.dims[dn.input_feature],
                        rhs.dims[dn.kernel_output_feature], spatial, kernel, out, padded)


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
    return ["im2col", "elementwise"] + (["taps"] if taps else [])


def choose_strategy(g: ConvGeometry, itemsize: int) -> str:
    """``elementwise`` for many groups with tiny per-group products, ``taps`` when it applies
    and its BLAS calls are few next to the bytes im2col would copy, else ``im2col``."""
    if g.groups > 1 and g.cg * g.opg <= ELEMENTWISE_GROUP_WORK:
        return "elementwise"
    if "taps" in applicable_strategies(g):
        calls = g.batch_groups * prod(g.out[:-1]) * prod(g.kernel[:-1])
        copy_bytes = g.n * prod(g.out) * prod(g.kernel) * g.c * itemsize
        if calls * TAPS_CALL_BYTES <= copy_bytes:
            return "taps"
    return "im2col"


def make_strategy(name: str, g: ConvGeometry, acc: np.dtype):
    return {"im2col": Im2col, "taps": Taps, "elementwise": Elementwise}[name](g, acc)


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

class Im2col:
    """Patches copied block by block, one (group-batched) GEMM per block and kernel chunk."""

    def __init__(self, g: ConvGeometry, acc: np.dtype) -> None:
        self.g, self.acc = g, acc
        blocks, k_chunks = plan_blocks(g, acc.itemsize)
        item, nsp = acc.itemsize, len(g.out)
        k_rest = prod(g.kernel[1:]) * g.cg
        # per block: [(window index, grouped shape, group-major order, GEMM, w offset,
        #              output offset, beta)] in bytes, one entry per kernel chunk
        self.items: list[list[tuple]] = []
        self.buffer_elems = 0
        for b in blocks:
            rows = (b.b1 - b.b0) * (b.q1 - b.q0) * prod(g.out[1:])
            row0 = b.b0 * prod(g.out) + b.q0 * prod(g.out[1:])
            img, o_lo = b.bg * g.nb, b.bg * g.groups * g.opg
            steps = []
            for i, (k0, k1) in enumerate(k_chunks):
                index = ((slice(img + b.b0, img + b.b1), slice(b.q0, b.q1))
                         + (slice(None),) * (nsp - 1) + (slice(k0, k1),))
                shape = ((b.b1 - b.b0, b.q1 - b.q0, *g.out[1:], k1 - k0, *g.kernel[1:],
                          g.groups, g.cg))
                rank = len(shape)
                order = (rank - 2, *range(rank - 2), rank - 1)    # groups first
                k = (k1 - k0) * k_rest
                call = GemmCall(acc, rows, g.opg, k, MatrixArg(False, k), MatrixArg(False, g.o),
                                g.o, g.groups, rows * k, g.opg, g.opg)
                steps.append((index, shape, order, call, (k0 * k_rest * g.o + o_lo) * item,
                              (row0 * g.o + o_lo) * item, 1 if i else 0))
                self.buffer_elems = max(self.buffer_elems, g.groups * rows * k)
            self.items.append(steps)

    def bind(self, xp: np.ndarray, w: np.ndarray, target: np.ndarray) -> Work:
        windows = windows_view(self.g, xp)
        wptr, tptr = w.ctypes.data, target.ctypes.data

        def work(steps: list[tuple], state: dict) -> None:
            buf = state.get("buf")
            if buf is None:
                buf = state["buf"] = np.empty(self.buffer_elems, self.acc)
            bptr = buf.ctypes.data
            for index, shape, order, call, w_off, t_off, beta in steps:
                src = windows[index].reshape(shape).transpose(order)
                np.copyto(buf[:src.size].reshape(src.shape), src)
                call.run(bptr, wptr + w_off, tptr + t_off, beta)
        return work


class Taps:
    """GEMMs straight on the padded input (see the module docstring)."""

    def __init__(self, g: ConvGeometry, acc: np.dtype) -> None:
        self.g, self.acc = g, acc
        item = acc.itemsize
        # element strides of the C-contiguous xp[N, Sp..., C]
        nsp = len(g.padded)
        xs = [prod(g.padded) * g.c] + [prod(g.padded[i + 1:]) * g.c for i in range(nsp)] + [1]
        k_run = g.kernel[-1] * g.c
        last = g.window[-1]
        self.taps = []            # (x offset, w offset) in bytes per tap but the last dim's
        for t, kpre in enumerate(np.ndindex(*g.kernel[:-1])):
            xo = sum(k * wd.rhs_dilate * xs[1 + i] for i, (k, wd) in enumerate(zip(kpre, g.window)))
            self.taps.append((xo * item, t * k_run * g.o * item))
        positions = list(np.ndindex(*g.out[:-1]))
        want = 8      # split the last output dim when there are few positions
        pieces = max(1, min(g.out[-1], -(-want // max(1, len(positions) * g.batch_groups))))
        self.items = []           # (GEMM, x offset, output offset, kernel column offset), bytes
        for bg in range(g.batch_groups):
            o_lo = bg * g.opg
            for pre in positions:
                flat = int(np.ravel_multi_index(pre, g.out[:-1])) if pre else 0
                xo = bg * g.nb * xs[0] + sum(p * wd.stride * xs[1 + i]
                                             for i, (p, wd) in enumerate(zip(pre, g.window)))
                for q0, q1 in even_split(g.out[-1], -(-g.out[-1] // pieces)):
                    call = GemmCall(acc, g.nb, g.opg, k_run, MatrixArg(False, xs[0]),
                                    MatrixArg(False, g.o), prod(g.out) * g.o, q1 - q0,
                                    last.stride * g.c, 0, g.o)
                    self.items.append((call, (xo + q0 * last.stride * g.c) * item,
                                       ((flat * g.out[-1] + q0) * g.o + o_lo) * item,
                                       o_lo * item))

    def bind(self, xp: np.ndarray, w: np.ndarray, target: np.ndarray) -> Work:
        xptr, wptr, tptr = xp.ctypes.data, w.ctypes.data, target.ctypes.data
        taps = self.taps

        def work(it: tuple, state: dict) -> None:
            call, x_off, t_off, w_lo = it
            for j, (tx, tw) in enumerate(taps):
                call.run(xptr + x_off + tx, wptr + w_lo + tw, tptr + t_off, 1 if j else 0)
        return work


class Elementwise:
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
           "choose_strategy", "make_strategy", "plan_blocks", "Block", "Im2col", "Taps",
           "Elementwise", "PATCH_BYTES", "MIN_ROWS", "ELEMENTWISE_GROUP_WORK", "TAPS_CALL_BYTES"]
