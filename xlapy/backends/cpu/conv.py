"""HLO ``convolution`` for the CPU backend: a library thunk doing GEMMs through OpenBLAS.

Calling convention (the same as the dot thunk's, see ``blas.py``): ``thunk(operands, out)``
with ``operands = [input, kernel]`` as NumPy arrays in their *logical* dims (any strides, e.g.
views whose strides follow the HLO layout) and ``out`` in the result's logical dims; the
thunk writes every element of ``out`` in place. ``out`` must not overlap the operands.
``supports_convolution(instr)`` says whether ``make_convolution_thunk`` accepts ``instr``
(static shapes and dim_labels without ``?``).

Semantics are XLA's ConvGeneralDilated, as in the interpreter (``interpreter/linalg.py``):
any ``dim_labels`` (1-D, 2-D, 3-D, ... and 0-D spatial), window strides, padding (negative
padding crops), ``lhs_dilate`` (transposed convolutions), ``rhs_dilate``, ``rhs_reversal``,
``feature_group_count`` and ``batch_group_count``.

Shapes that a generated kernel computes better than the library strategies below
(``conv_direct.plan_direct``: NHWC convolutions and their weight gradients) go to that
kernel, which reads the operands where they are; it declines a call whose non-finite
values meet padding (then the library strategy below computes it). Otherwise a call:

1. views the operands in canonical order ``x[N, S..., C]``, ``w[K..., C/G, O]`` and
   ``y[N/Bg, P..., O]`` (transposes of the given views), then ``x`` and ``y`` in the order
   the strategy works in (``x_order``/``y_order``: canonical, or batch-innermost for
   ``taps_t``); ``w`` is copied when it is not C-contiguous, reversed or of another dtype,
   ``y`` is computed in a temporary when it is not C-contiguous in that order;
2. dilates and pads the input into ``xp`` (skipped without padding or dilation). The
   buffer is kept for the next call, so its zero borders and holes are written once and
   later calls only copy the interior. Copies of a megabyte or more are split over the
   pool's threads (``parallel_copyto``);
3. runs the strategy planned for the shapes and the input's layout (``conv_plan.py``:
   ``taps``/``taps_t`` GEMMs straight on ``xp``, ``im2col`` blocks, or ``elementwise``
   multiply-adds for depthwise convolutions) over its work items: on the calling thread
   plus the runtime's pool threads when the convolution has at least ``PARALLEL_FLOPS``,
   else on the calling thread (OpenBLAS itself runs one thread, see ``blas_lib``);
   then adds up the output shards of a split reduction (``plan.finish``).

Element types: f32/f64/c64/c128 compute in their own type; f16, bf16 and the f8 types are
converted to f32, computed in f32 and rounded once (XLA:CPU upcasts them the same way);
integer and pred convolutions, and sizes beyond 32-bit BLAS integers, use the interpreter's
exact ``convolve`` (integers in int64, wrapped to the result type).

benchmarks/conv_bench.py measures these routines against JAX, NumPy and the interpreter
(docs/performance.md, "Measurements behind the CPU backend's constants").
"""
from __future__ import annotations

from math import prod
from typing import Iterable, Sequence

import numpy as np

from ...errors import ExecutionError, InvalidArgumentError, UnimplementedError
from ...hlo.attrs import Window, WindowDim
from ...hlo.ir import HloInstruction
from ...passes.conv_output_fusion import conv_output_fusion_parts
from ..interpreter.evaluator import describe
from ..interpreter.linalg import convolve
from ..memory_stats import tracked
from . import conv_direct, conv_plan
from .blas import compute_dtype, static_arrays, to_result_type
from .conv_plan import ConvGeometry, conv_geometry
from .thunks import cores, shared_pool

#: Below this many flops a convolution runs on the calling thread only.
PARALLEL_FLOPS = 8e6
#: Padded-input buffers up to this size are kept between calls.
KEEP_PADDED_BYTES = 256 << 20

_INT32_MAX = 2**31 - 1


def supports_convolution(instr: HloInstruction) -> bool:
    """Whether :func:`make_convolution_thunk` handles ``instr`` (static shapes, known labels)."""
    if instr.opcode != "convolution" or len(instr.operands) != 2 or not static_arrays(instr):
        return False
    try:
        conv_geometry(instr)
    except (InvalidArgumentError, ValueError):
        return False
    return True


def _fits_blas(g: ConvGeometry) -> bool:
    """Every GEMM size, leading dim and offset fits OpenBLAS's 32-bit integers."""
    return max(g.n * prod(g.padded) * g.c, prod(g.kernel) * g.c * g.o,
               g.nb * prod(g.out) * g.o) <= _INT32_MAX


def _strategies_apply(instr: HloInstruction, g: ConvGeometry) -> bool:
    """Whether the thunk of ``instr`` chooses a strategy (library or direct): a BLAS type
    and sizes, a non-empty result and a non-empty sum."""
    if compute_dtype(instr.shape.element_type) is None or not _fits_blas(g):
        return False
    return prod(instr.shape.dims) != 0 and prod(g.kernel) != 0 and g.cg != 0


def direct_kernels(instrs: Iterable[HloInstruction]) -> list[tuple]:
    """``(spec, emit)`` of the generated kernels the thunks of the convolutions ``instrs``
    will use (``conv_direct.wanted_kernel``), for ``conv_kernels`` to compile them
    together before the thunks are made instead of one after another as they are."""
    wanted = []
    for instr in instrs:
        fused = conv_output_fusion_parts(instr)
        bias, relu = fused is not None, fused is not None and fused[2]
        instr = fused[0] if fused is not None else instr
        if supports_convolution(instr):
            g = conv_geometry(instr)
            kernel = conv_direct.wanted_kernel(g, instr, bias, relu) \
                if _strategies_apply(instr, g) else None
            if kernel is not None:
                wanted.append(kernel)
    return wanted


class CpuConvOutputFusionRules:
    """The question of ``passes/conv_output_fusion.py`` (a
    :class:`~xlapy.passes.conv_output_fusion.ConvOutputFusionRules`): a convolution is
    fused with its bias and relu when the generated forward kernel computes it (it applies
    them to each tile as it stores it; the library strategies would need a pass more)."""

    def output_fusible(self, conv: HloInstruction) -> bool:
        if not supports_convolution(conv):
            return False
        g = conv_geometry(conv)
        return _strategies_apply(conv, g) and conv_direct.epilogue_fusible(g, conv)


class ConvThunk:
    """``thunk(operands, out)`` for one convolution instruction (see the module docstring)."""

    def __init__(self, instr: HloInstruction, bias: bool = False, relu: bool = False) -> None:
        self.where = describe(instr)
        self.instr = instr
        self.geo = g = conv_geometry(instr)
        self.et = instr.shape.element_type
        self.acc = compute_dtype(self.et)
        dn = g.dn
        self.bias, self.relu = bias, relu
        self.expect = [o.shape.dims for o in instr.operands] + ([(g.o,)] if bias else []) + \
            [instr.shape.dims]
        bias_dims = [1] * instr.shape.rank
        bias_dims[dn.output_feature] = g.o
        self.bias_dims = tuple(bias_dims)
        self.lhs_perm = [dn.input_batch, *dn.input_spatial, dn.input_feature]
        self.rhs_perm = [*dn.kernel_spatial, dn.kernel_input_feature, dn.kernel_output_feature]
        self.out_perm = [dn.output_batch, *dn.output_spatial, dn.output_feature]
        self.empty = prod(instr.shape.dims) == 0
        self.zero = not self.empty and (prod(g.kernel) == 0 or g.cg == 0)
        self.flips = tuple(i for i, wd in enumerate(g.window) if wd.rhs_reversal)
        self.needs_padding = g.needs_padding
        self._free_padded: list[np.ndarray] = []
        self.strategy = "interpreter"
        self.direct = None
        if self.acc is None or not _fits_blas(g):
            self.acc = None
        elif _strategies_apply(instr, g):
            self.strategy = conv_plan.choose_strategy(g, self.acc.itemsize)
            self.plan = conv_plan.make_strategy(self.strategy, g, self.acc, cores())
            self.parallel = (g.flops >= PARALLEL_FLOPS and cores() > 1
                             and len(self.plan.items) > 1)
            self._pad_index = self._interior_index()
            self.direct = conv_direct.plan_direct(g, instr, bias, relu)
            if self.direct is not None:
                self.strategy = self.direct.name
        # the direct forward kernel, which applies the fused bias/relu itself (only planned
        # for a non-empty, non-zero convolution in a BLAS type)
        self.direct_fused = self.direct if isinstance(self.direct, conv_direct.ConvDirect) \
            else None

    @property
    def direct_epilogue(self) -> bool:
        """Whether the direct kernel applies the bias/relu epilogue itself."""
        return self.direct_fused is not None

    # ----- call
    def __call__(self, operands: Sequence[np.ndarray], out: np.ndarray) -> None:
        got = [o.shape for o in operands] + [out.shape]
        if got != self.expect or out.dtype != self.et.dtype:
            raise ExecutionError(f"{self.where}: convolution thunk got arrays of dims {got} and "
                                 f"output dtype {out.dtype}, expected {self.expect} and "
                                 f"{self.et.dtype}")
        if self.empty:
            return
        lhs, rhs = operands[0], operands[1]
        bias = operands[2] if self.bias else None
        if self.direct_fused is not None and self.direct_fused(lhs, rhs, out, bias):
            return
        self._convolve(lhs, rhs, out)
        if bias is not None:        # the fused epilogue, when no kernel applied it
            out += to_result_type(bias, self.et).reshape(self.bias_dims)
        if self.relu:
            np.maximum(out, 0, out=out)

    def _convolve(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> None:
        """The convolution alone into ``out``."""
        if self.zero:
            out.fill(0)
            return
        if self.acc is None:
            self._interpret(lhs, rhs, out)
            return
        if self.direct is not None and self.direct_fused is None and \
                self.direct(lhs, rhs, out):
            return
        g, acc, plan = self.geo, self.acc, self.plan
        x = to_result_type(lhs, self.et).transpose(self.lhs_perm).reshape(
            (g.n, *g.spatial, g.c)).transpose(plan.x_order)
        w = self._kernel(rhs)
        y = out.transpose(self.out_perm).reshape((g.nb, *g.out, g.o)).transpose(plan.y_order)
        direct = y.dtype == acc and y.flags.c_contiguous
        target = y if direct else np.empty(y.shape, acc)
        xp = self._padded_input(x)
        try:
            work, items = plan.bind(xp, w, target), plan.items_for(w)
            if self.parallel:
                shared_pool().parallel_for(items, work)
            else:
                state: dict = {}
                for item in items:
                    work(item, state)
            plan.finish(target)
        finally:
            if self.needs_padding and xp.nbytes <= KEEP_PADDED_BYTES:
                self._free_padded.append(xp)
        if not direct:
            np.copyto(y, target, casting="unsafe")

    def _interpret(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> None:
        """Integer/pred results (and sizes beyond 32-bit BLAS): the interpreter's convolve."""
        g = self.geo
        window = self.instr.attr("window") or Window(
            tuple(WindowDim() for _ in g.dn.input_spatial))
        res = convolve(lhs, rhs, g.dn, window, g.groups, g.batch_groups, self.et,
                       where=self.where)
        np.copyto(out, res, casting="unsafe")

    # ----- operands
    def _kernel(self, rhs: np.ndarray) -> np.ndarray:
        """The kernel as a C-contiguous ``[K..., C/G, O]`` array of the compute dtype."""
        g = self.geo
        w = to_result_type(rhs, self.et).transpose(self.rhs_perm).reshape(
            (*g.kernel, g.cg, g.o))
        if self.flips:
            w = np.flip(w, axis=self.flips)
        if w.dtype != self.acc or not w.flags.c_contiguous:
            w = copy_contiguous(w, self.acc, self.parallel)
        return w

    def _interior_index(self) -> tuple | None:
        """Where the input lands in ``xp`` and which part of it does: ``(dst, src)`` index
        tuples, or None when negative padding crops the whole input away."""
        g = self.geo
        dst, src = [slice(None)], [slice(None)]
        for s, sp, wd in zip(g.spatial, g.padded, g.window):
            d, lo = wd.lhs_dilate, wd.pad_lo
            first = max(0, (d - 1 - lo) // d)      # first input index at padded position >= 0
            last = min(s - 1, (sp - 1 - lo) // d)  # last input index at position <= sp - 1
            if last < first:
                return None
            p0 = first * d + lo
            dst.append(slice(p0, p0 + (last - first) * d + 1, d))
            src.append(slice(first, last + 1))
        dst.append(slice(None))
        src.append(slice(None))
        order = self.plan.x_order
        return tuple(dst[i] for i in order), tuple(src[i] for i in order)

    def _padded_input(self, x: np.ndarray) -> np.ndarray:
        """``x`` dilated and padded (negative padding crops) into a C-contiguous
        ``[N, Sp..., C]`` of the compute dtype (``x`` itself when it already is one)."""
        g = self.geo
        if not self.needs_padding:
            if x.dtype == self.acc and (x.flags.c_contiguous or
                                        self.strategy not in ("taps", "taps_t")):
                return x
            return copy_contiguous(x, self.acc, self.parallel)
        try:
            xp = self._free_padded.pop()       # its borders and holes are zero from before
        except IndexError:
            shape = (g.n, *g.padded, g.c)
            xp = tracked(np.zeros([shape[i] for i in self.plan.x_order], self.acc))
        if self._pad_index is not None:
            dst, src = self._pad_index
            parallel_copyto(xp[dst], x[src], self.parallel)
        return xp


#: Copies of at least this many bytes are cut into pieces of about this size.
COPY_PIECE_BYTES = 1 << 20


def parallel_copyto(dst: np.ndarray, src: np.ndarray, parallel: bool = True) -> None:
    """``np.copyto(dst, src, casting="unsafe")`` for large arrays: cut along the source's
    outermost dim (its largest stride) into pieces of about ``COPY_PIECE_BYTES``, copied on
    the pool's threads (NumPy copies release the GIL) when ``parallel``. A transposing copy
    then reads a few images at a time instead of touching every image's pages for each
    destination row (faster than one copy: docs/performance.md)."""
    if dst.ndim == 0 or dst.nbytes < 2 * COPY_PIECE_BYTES:
        np.copyto(dst, src, casting="unsafe")
        return
    src = np.broadcast_to(src, dst.shape)
    axis = max(range(dst.ndim), key=lambda a: (dst.shape[a] > 1, abs(src.strides[a])))
    n = dst.shape[axis]
    count = max(2 * cores() if parallel else 1, min(n, -(-dst.nbytes // COPY_PIECE_BYTES)))
    count = min(count, n)
    index = (slice(None),) * axis
    pieces = [index + (slice(n * i // count, n * (i + 1) // count),) for i in range(count)]

    def work(piece: tuple, state: dict) -> None:
        np.copyto(dst[piece], src[piece], casting="unsafe")
    if parallel and cores() > 1:
        shared_pool().parallel_for(pieces, work)
    else:
        for piece in pieces:
            work(piece, {})


def copy_contiguous(x: np.ndarray, dtype: np.dtype, parallel: bool = True) -> np.ndarray:
    """``np.ascontiguousarray(x, dtype)`` through :func:`parallel_copyto`."""
    out = np.empty(x.shape, dtype)
    parallel_copyto(out, x, parallel)
    return out


def make_convolution_thunk(instr: HloInstruction, bias: bool = False,
                           relu: bool = False) -> ConvThunk:
    """A thunk computing ``instr`` (an HLO convolution) from operand views into ``out``;
    with ``bias`` a third operand (a vector along the output feature dim) is added to the
    result, with ``relu`` then ``maximum(y, 0)`` is taken (a convolution output fusion)."""
    if not supports_convolution(instr):
        conv_geometry(instr)     # raises the precise error when the instruction is invalid
        raise UnimplementedError(f"{describe(instr)}: the convolution thunk does not handle "
                                 f"dynamic shapes")
    return ConvThunk(instr, bias, relu)


__all__ = ["supports_convolution", "make_convolution_thunk", "direct_kernels",
           "CpuConvOutputFusionRules",
           "ConvThunk", "conv_geometry", "PARALLEL_FLOPS", "parallel_copyto", "copy_contiguous"]
