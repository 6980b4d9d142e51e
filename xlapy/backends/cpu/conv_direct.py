"""Convolutions computed by the generated kernels of ``conv_kernels.py`` instead of BLAS,
chosen per shape by :func:`plan_direct` (the convolution thunk, ``conv.py``, asks it first
and keeps its library strategies for the shapes it declines).

- :class:`WeightGradDirect`: the weight gradient autodiff emits for an NHWC convolution,
  ``f01b_i01o->01bf`` on the activations ``x[N, H, W, C]`` and the output gradient
  ``dy[N, P, Q, O]`` (the convolution's "batch" is the channels ``C``, its "feature" the
  images), read in place: one reduction over images x space, the images split over the
  runtime's pool in groups, each thread adding into its own partial ``[KH, KW, C, O]``,
  the partials summed at the end. The library path for this form (``taps_t``) runs thin
  GEMMs per tap and copies both operands. Taken for a small output window (the kernel keeps
  every ``kw`` of a tile in registers; its inner loop runs over ``dy``'s last spatial dim)
  when every gradient element meets some real input and the window is not reversed.
- :class:`ConvDirect`: a forward or input-gradient convolution with NHWC input and output
  (the kernel, small, is copied to ``[KH, KW, C, O]`` when it is not so), output rows split
  over the pool. Taken for tiles of several output columns and kernels up to
  :data:`DIRECT_MAX_KERNEL_BYTES`; it replaces ``taps`` and, for a few input channels (a
  3-channel first layer), im2col's short products.

Both: f32 operands and result, 1 or 2 spatial dims, no feature or batch groups, no
``lhs_dilate``, operands laid out image-major as above (other layouts are left to the
library path), output channels using enough of the vector lanes. Products with padding are
left out, so a call whose non-finite values meet padding (XLA's ``0 * inf = NaN``) is handed
back to the library path: the forward checks its (small) kernel, the weight gradient its
result.
"""
from __future__ import annotations

import abc
import logging
from math import prod
from typing import Callable

import numpy as np

from ...errors import ExecutionError
from ...hlo.ir import HloInstruction
from ..interpreter.evaluator import describe
from .conv_kernels import (ConvSpec, DirectSpec, WeightGradSpec, compiled, direct_kernel,
                           lanes, tile_registers, weight_grad_kernel)
from .conv_plan import ConvGeometry, even_split
from .thunks import aligned, cores, shared_pool

log = logging.getLogger("xlapy.cpu")

#: False: every convolution takes the library strategies (tests compare them).
ENABLED = True
#: The weight-gradient kernel is used for output windows up to this many taps (``KH*KW``)...
WGRAD_MAX_TAPS = 64
#: ... whose inner loop (``dy``'s last spatial dim) has at least this many iterations...
WGRAD_MIN_INNER = 4
#: ... and that use at least this share of the vector lanes (``O`` over whole vectors).
WGRAD_MIN_LANE_USE = 0.5
#: The direct forward kernel needs at least this many output columns (its register tile is
#: a run of them)...
DIRECT_MIN_COLUMNS = 4
#: ... and a kernel of at most this many bytes (it streams the kernel once per tile; the
#: CNN's kernels, up to 147 KB, ran faster than ``taps`` and im2col, docs/performance.md;
#: larger ones were not measured and stay with BLAS).
DIRECT_MAX_KERNEL_BYTES = 1 << 20
#: A weight gradient's images are summed in groups of at most this many (then the groups'
#: sums are added), so rounding errors do not grow with the whole batch.
WGRAD_ITEM_IMAGES = 4
#: Below this many flops a direct kernel runs on the calling thread only.
PARALLEL_FLOPS = 8e6
#: Work items (image chunks) per pool thread: enough to even out a busy core.
ITEMS_PER_THREAD = 8


def _major_to_minor(instr: HloInstruction, k: int | None) -> list[int]:
    """The physical dim order of operand ``k`` (None: the result), major to minor."""
    shape = instr.shape if k is None else instr.operands[k].shape
    if shape.layout is None:
        return list(range(shape.rank))
    return list(reversed(shape.layout.minor_to_major))


def lane_use(o: int, width: int) -> float:
    """The share of vector lanes holding output channels when ``o`` channels are cut into
    vectors of ``width`` (0 without vectors)."""
    return o / (-(-o // width) * width) if width else 0.0


class _Direct(abc.ABC):
    """What the direct strategies share: spatial sizes as 2-D (a 1-D convolution gets a unit
    first dim), the work items and running them on the pool."""

    name = ""
    parallel = False
    items: list[tuple[int, int]] = []

    @abc.abstractmethod
    def __call__(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> bool:
        """Compute ``out`` from the operand views; False when the call is left to the
        library path (see the subclasses)."""

    @staticmethod
    def as_2d(g: ConvGeometry) -> dict:
        """The 2-D sizes of ``g`` (``h, w, p, q, kh, kw, stride, dilate, pad``)."""
        one, wd = len(g.spatial) == 1, g.window
        first = lambda v, d: d if one else v                   # noqa: E731
        return dict(h=first(g.spatial[0], 1), w=g.spatial[-1],
                    stride=(first(wd[0].stride, 1), wd[-1].stride),
                    dilate=(first(wd[0].rhs_dilate, 1), wd[-1].rhs_dilate),
                    pad=(first(wd[0].pad_lo, 0), wd[-1].pad_lo))

    def plan_items(self, g: ConvGeometry, units: int, threads: int) -> None:
        """Cut ``units`` (images or output rows) into items, several per pool thread."""
        self.parallel = g.flops >= PARALLEL_FLOPS and threads > 1 and units > 1
        most = max(1, units // (ITEMS_PER_THREAD * threads)) if self.parallel else units
        self.items = even_split(units, most)


def epilogue_fusible(g: ConvGeometry, instr: HloInstruction) -> bool:
    """Whether the forward kernel (:class:`ConvDirect`, which can add a bias and take the
    relu as it stores its tiles) computes ``instr``."""
    return _kind(g, instr) is ConvDirect


class WeightGradDirect(_Direct):
    """A weight gradient by :func:`~.conv_kernels.weight_grad_kernel` (module docstring)."""

    name = "direct_wgrad"
    emit = staticmethod(weight_grad_kernel)

    @classmethod
    def spec_for(cls, g: ConvGeometry) -> WeightGradSpec:
        """The kernel's sizes for ``g``."""
        one = len(g.spatial) == 1
        return WeightGradSpec(c=g.n, p=1 if one else g.kernel[0], q=g.kernel[-1], o=g.o,
                              kh=1 if one else g.out[0], kw=g.out[-1], lanes=lanes(),
                              **cls.as_2d(g))

    def __init__(self, g: ConvGeometry, threads: int) -> None:
        dn = g.dn
        self.g = g
        self.x_perm = [dn.input_feature, *dn.input_spatial, dn.input_batch]
        self.dy_perm = [dn.kernel_input_feature, *dn.kernel_spatial, dn.kernel_output_feature]
        self.y_perm = [*dn.output_spatial, dn.output_batch, dn.output_feature]
        self.spec = self.spec_for(g)
        self.shape4 = ((g.c, self.spec.h, self.spec.w, g.n), (g.c, self.spec.p, self.spec.q, g.o),
                       (self.spec.kh, self.spec.kw, g.n, g.o))
        self.plan_items(g, g.c, threads)
        # items of at most WGRAD_ITEM_IMAGES images, each summed apart and then added: a
        # two-level sum, so rounding does not grow with the whole batch
        self.items = even_split(g.c, min(WGRAD_ITEM_IMAGES, max(b - a for a, b in self.items)))
        self.kernel = compiled(self.spec, self.emit)

    def __call__(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> bool:
        """Compute ``out``; False (``out`` unspecified) when the result is not finite: then
        products with padding zeros that the kernel leaves out may matter (``0 * inf``), and
        the caller computes it the library way."""
        x = np.ascontiguousarray(lhs.transpose(self.x_perm), np.float32).reshape(self.shape4[0])
        dy = np.ascontiguousarray(rhs.transpose(self.dy_perm), np.float32).reshape(
            self.shape4[1])
        y = out.transpose(self.y_perm).reshape(self.shape4[2])
        xp, dyp, kernel = x.ctypes.data, dy.ctypes.data, self.kernel
        partials: list[np.ndarray] = []

        def work(item: tuple[int, int], state: dict) -> None:
            acc = state.get("acc")
            if acc is None:
                acc = state["acc"] = np.zeros(self.shape4[2], np.float32)
                state["part"] = aligned(self.shape4[2], np.float32)
                partials.append(acc)          # list.append is atomic
            part = state["part"]
            part.fill(0)
            kernel(xp, dyp, part.ctypes.data, item[0], item[1])
            acc += part
        if self.parallel:
            shared_pool().parallel_for(self.items, work)
        else:
            state: dict = {}
            for item in self.items:
                work(item, state)
        total = partials[0]
        for p in partials[1:]:
            total += p
        np.copyto(y, total)
        return bool(np.isfinite(total).all())


class ConvDirect(_Direct):
    """A forward or input-gradient convolution (NHWC input and output, kernel copied to
    ``[KH, KW, C, O]`` when it is not so already) by :func:`~.conv_kernels.direct_kernel`,
    output rows split over the pool."""

    name = "direct"
    emit = staticmethod(direct_kernel)

    @classmethod
    def spec_for(cls, g: ConvGeometry, bias: bool = False, relu: bool = False) -> DirectSpec:
        """The kernel's sizes for ``g`` (with the fused epilogue ``bias``/``relu``)."""
        one = len(g.spatial) == 1
        return DirectSpec(c=g.c, p=1 if one else g.out[0], q=g.out[-1], o=g.o,
                          kh=1 if one else g.kernel[0], kw=g.kernel[-1], lanes=lanes(),
                          bias=bias, relu=relu, **cls.as_2d(g))

    def __init__(self, g: ConvGeometry, threads: int, bias: bool = False,
                 relu: bool = False) -> None:
        dn = g.dn
        self.g = g
        self.x_perm = [dn.input_batch, *dn.input_spatial, dn.input_feature]
        self.w_perm = [*dn.kernel_spatial, dn.kernel_input_feature, dn.kernel_output_feature]
        self.y_perm = [dn.output_batch, *dn.output_spatial, dn.output_feature]
        self.spec = sp = self.spec_for(g, bias, relu)
        self.flips = tuple(i for i, w in enumerate(g.window) if w.rhs_reversal)
        self.shape4 = ((g.n, sp.h, sp.w, g.c), (sp.kh, sp.kw, g.c, g.o), (g.n, sp.p, sp.q, g.o))
        self.rows = g.n * sp.p
        # whether some product reads padding (left out: then a non-finite weight matters)
        self.pads = any(not 0 <= p * sp.stride[i] + k * sp.dilate[i] - sp.pad[i] < size
                        for i, (size, outs, ks) in enumerate(((sp.h, sp.p, sp.kh),
                                                              (sp.w, sp.q, sp.kw)))
                        for p in (0, outs - 1) for k in (0, ks - 1))
        self.plan_items(g, self.rows, threads)
        self.kernel = compiled(self.spec, self.emit)

    def __call__(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray,
                 bias: np.ndarray | None = None) -> bool:
        """Compute ``out`` (with the spec's epilogue: ``bias`` added, relu); False (nothing
        written) when the kernel has a non-finite weight and products with padding are left
        out: the caller computes it the library way."""
        w = rhs.transpose(self.w_perm)
        if self.flips:
            w = np.flip(w, axis=self.flips)
        if self.pads and not np.isfinite(w).all():
            return False
        if self.spec.bias:             # the kernel reads the bias right after the weights
            wb = aligned((w.size + self.g.o,), np.float32)
            wb[:w.size].reshape(w.shape)[...] = w
            wb[w.size:] = bias
            w = wb
        elif not w.flags.c_contiguous or w.ctypes.data % 64:
            wa = aligned(self.shape4[1], np.float32)
            wa[...] = w
            w = wa
        x = np.ascontiguousarray(lhs.transpose(self.x_perm), np.float32).reshape(self.shape4[0])
        y = out.transpose(self.y_perm).reshape(self.shape4[2])
        target = y if y.flags.c_contiguous else aligned(self.shape4[2], np.float32)
        xp, wp, yp, kernel = x.ctypes.data, w.ctypes.data, target.ctypes.data, self.kernel
        if self.parallel:
            shared_pool().parallel_for(self.items,
                                       lambda item, state: kernel(xp, wp, yp, *item))
        else:
            kernel(xp, wp, yp, 0, self.rows)
        if target is not y:
            np.copyto(y, target)
        return True


def weight_grad_applies(g: ConvGeometry, instr: HloInstruction) -> bool:
    """Whether :class:`WeightGradDirect` computes ``instr`` without copying its operands and
    at a good use of the vector lanes and registers (module docstring)."""
    dn = g.dn
    if len(g.spatial) not in (1, 2) or g.groups != 1 or g.batch_groups != 1:
        return False
    if any(w.lhs_dilate != 1 or w.rhs_reversal for w in g.window):
        return False
    if prod(g.out) > WGRAD_MAX_TAPS or g.kernel[-1] < WGRAD_MIN_INNER:
        return False
    # every output-gradient element must meet some real input (the result-is-finite check
    # of WeightGradDirect.__call__ stands in for the products with padding it leaves out)
    for size, taps, ks, wd in zip(g.spatial, g.out, g.kernel, g.window):
        if any(not any(0 <= t * wd.stride + k * wd.rhs_dilate - wd.pad_lo < size
                       for t in range(taps)) for k in range(ks)):
            return False
    if lane_use(g.o, lanes()) < WGRAD_MIN_LANE_USE:
        return False
    if _major_to_minor(instr, 0) != [dn.input_feature, *dn.input_spatial, dn.input_batch]:
        return False
    if _major_to_minor(instr, 1) != [dn.kernel_input_feature, *dn.kernel_spatial,
                                     dn.kernel_output_feature]:
        return False
    return g.out[-1] <= tile_registers(lanes())


def direct_applies(g: ConvGeometry, instr: HloInstruction) -> bool:
    """Whether :class:`ConvDirect` computes ``instr`` from its operands in place, at a good
    use of the vector lanes and with tiles of several output columns."""
    dn = g.dn
    if len(g.spatial) not in (1, 2) or g.groups != 1 or g.batch_groups != 1:
        return False
    if any(w.lhs_dilate != 1 for w in g.window):
        return False
    if lane_use(g.o, lanes()) < WGRAD_MIN_LANE_USE or g.out[-1] < DIRECT_MIN_COLUMNS:
        return False
    if prod(g.kernel) * g.c * g.o * 4 > DIRECT_MAX_KERNEL_BYTES:
        return False
    return (_major_to_minor(instr, 0) == [dn.input_batch, *dn.input_spatial, dn.input_feature]
            and _major_to_minor(instr, None) == [dn.output_batch, *dn.output_spatial,
                                                 dn.output_feature])


def _kind(g: ConvGeometry, instr: HloInstruction
          ) -> type[WeightGradDirect] | type[ConvDirect] | None:
    """The direct strategy for ``instr`` when one applies and beats the library path, else
    None. Only f32 convolutions (operands and result) are considered."""
    if not ENABLED or not lanes() or not (instr.shape.element_type.name == "f32"
            and all(o.shape.element_type.name == "f32" for o in instr.operands)):
        return None
    return WeightGradDirect if weight_grad_applies(g, instr) else \
        ConvDirect if direct_applies(g, instr) else None


def wanted_kernel(g: ConvGeometry, instr: HloInstruction, bias: bool = False,
                  relu: bool = False) -> tuple[ConvSpec, Callable[..., None]] | None:
    """``(spec, emit)`` of the generated kernel :func:`plan_direct` will build for
    ``instr`` (with a fused ``bias``/``relu``), or None (for
    :func:`~.conv_kernels.compile_kernels`, which compiles an executable's kernels together
    before its thunks are made)."""
    kind = _kind(g, instr)
    if kind is ConvDirect:
        return kind.spec_for(g, bias, relu), kind.emit
    return (kind.spec_for(g), kind.emit) if kind is not None else None


def plan_direct(g: ConvGeometry, instr: HloInstruction, bias: bool = False,
                relu: bool = False) -> _Direct | None:
    """The direct strategy for ``instr`` (:func:`_kind`), its kernel built (a forward
    kernel with the fused ``bias``/``relu``), or None."""
    kind = _kind(g, instr)
    if kind is None:
        return None
    try:
        return ConvDirect(g, cores(), bias, relu) if kind is ConvDirect else kind(g, cores())
    except ExecutionError as e:       # LLVM rejected the kernel: the library path computes it
        log.warning("%s: the generated %s kernel failed to build (%s); using the library "
                    "strategy", describe(instr), kind.name, e)
        return None


__all__ = ["ENABLED", "WeightGradDirect", "ConvDirect", "plan_direct", "wanted_kernel",
           "epilogue_fusible",
           "weight_grad_applies", "direct_applies", "lane_use", "DIRECT_MIN_COLUMNS",
           "DIRECT_MAX_KERNEL_BYTES", "WGRAD_MAX_TAPS", "WGRAD_MIN_INNER", "WGRAD_MIN_LANE_USE"]
