"""Windowed ops split along a windowed dimension in the SPMD partitioner: the halo exchange
(used by :mod:`~xlapy.passes.spmd_conv` for convolutions split on spatial dims) and
``reduce-window``, ``select-and-scatter``, ``pad`` and ``slice`` split along the dims they work
along (XLA's
``PartitionedHlo::ReshardAsWindowedInput`` with ``ExchangeHaloAndGetValidData``, used by the
convolution handler's tiled-output case and by ``HandleReduceWindow``).

The result is computed in a sharding ``R`` that splits a windowed dim ``d`` ``t`` ways: partition
``i`` (its tile coordinate along ``d``) computes the ``co = ceil(O / t)`` outputs starting at
``i * co``, which read the input rows ``[lo_i, lo_i + W)`` with ``lo_i = i * co * stride -
pad_lo`` and ``W = (co - 1) * stride + (size - 1) * rhs_dilate + 1``. The operand is brought to
that window one split dim at a time:

- the operand split along ``d`` as ``R`` (halo exchange): partition ``i`` holds rows
  ``[i*c, (i+1)*c)`` (``c = ceil(N / t)``); it needs ``L_i = i*c - lo_i`` rows from its left
  neighbour and ``R_i = lo_i + W - (i+1)*c`` from its right one. Every partition sends its last
  ``max L_i`` rows right and its first ``max R_i`` rows left with two ``collective-permute``\\ s
  (partitions at the global edges get zeros), concatenates, takes its window with a
  ``dynamic-slice`` at an offset looked up by ``partition-id``, and masks the rows outside
  ``[0, N)`` (the global padding and the padding of an uneven last shard) with the pad value
  (zero for a convolution, the init value for a reduce-window);
- the operand whole along ``d`` (replicated there, or gathered): padded with ``pad_lo`` rows and
  whatever the last window needs, then the window is a ``dynamic-slice``.

The local op then runs with no padding along ``d`` (stride and window dilation as before) and
yields exactly the ``co`` outputs of the partition. As in XLA, a reduce-window's init value is
the pad value, so it must be the reducer's identity (``-inf`` for max, ``0`` for add: what JAX
and TensorFlow emit).

Where XLA also gives up on the halo exchange, so does this: a halo reaching past the
neighbouring partition (``max L_i > c`` or ``max R_i > c``, e.g. the window of a cumulative sum)
gathers the operand along ``d`` first (XLA: "halo is beyond the neighbor", then the
windowed-dims-replicated path). With base (lhs) dilation ``B`` (and a pad's interior padding) the
rows above are the real rows the window reads, and the local op keeps the dilation with a low
padding equal to the phase of the first window in the dilated input. When that phase differs
between partitions (``ceil(O / t) * stride`` not a multiple of ``B``) and the stride is 1, the
local op starts at the largest phase, computes the few extra outputs that costs, and each
partition keeps its own from a ``partition-id`` offset (as XLA); with another stride, and with
window reversal on a split dim, the op falls back to the partitioner's other plans.

``pad`` and ``slice`` along a split dim are windows of size 1 (a slice ``[a:b:k]``: stride
``k``, padding ``-a`` and ``b - n``; a pad: its padding, base dilation ``interior + 1``).
``select-and-scatter`` (a max pool's gradient) takes, on partition ``i``, the windows touching
its rows, their source rows and operand rows (a value the select never picks outside the
array), and keeps its own rows of the local result.

A convolution whose kernel operand is split on spatial dims (the kernel gradient of a spatially
split convolution, the output gradient being the window) is the other geometry: partition ``i``
holds window taps ``[i*ck, (i+1)*ck)``, reads input rows from ``i * ck * rhs_dilate - pad_lo``,
computes partial results of every output and an ``all-reduce`` adds them (XLA's
``PartitionConvolutionWithSpatialDimensionHaloExchangeOnLHS``).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, NamedTuple, Sequence

import numpy as np

from ..hlo import types as T
from ..hlo.attrs import Window, WindowDim
from ..hlo.ir import HloInstruction
from ..hlo.shape import Shape
from ..hlo.sharding import HloSharding
from ..hlo.sharding_util import coords, remap
from .spmd_reshard import SpmdBuilder, local_dims

if TYPE_CHECKING:
    from .spmd_partitioner import SpmdPartitioner

log = logging.getLogger("xlapy.passes")


def split_count(s: HloSharding, d: int) -> int:
    """How many ways ``s`` splits dim ``d``."""
    return s.data_tiles[d] if s.kind == "tiled" else 1


class Geometry(NamedTuple):
    """What each partition reads along one dim: rows ``[lo[i], lo[i] + width)`` of the
    operand on the partition with tile coordinate ``i`` (only the ``active`` partitions'
    windows matter; the others compute padding), and the window the local op then runs
    with along that dim; with ``need``, only rows ``[need[i][0], need[i][1])`` of that window
    must hold the operand's values (the others may hold anything)."""
    width: int
    lo: list[int]
    active: list[int]
    local: WindowDim
    need: list[tuple[int, int]] | None = None
    #: the local op computes ``extra`` more outputs; partition ``i`` keeps those from
    #: ``out_offset[i]`` on
    out_offset: list[int] | None = None
    extra: int = 0


def output_split(n: int, t: int, wd: WindowDim) -> Geometry | None:
    """The windows of a dim of ``n`` elements whose ``O`` outputs are split ``t`` ways
    (``ceil(O / t)`` each) under window ``wd``; None when the window does not fit, or with
    base dilation when the partitions' first windows fall at different phases of the dilated
    input and the stride is not 1 (at stride 1 the local op starts at the largest phase,
    computes the few more outputs that costs and each partition keeps its own, as XLA)."""
    ke = (wd.size - 1) * wd.rhs_dilate + 1
    base = wd.lhs_dilate
    full = (n - 1) * base + 1 + wd.pad_lo + wd.pad_hi
    if full < ke or wd.rhs_reversal:
        return None
    out = (full - ke) // wd.stride + 1
    co = -(-out // t)
    width = (co - 1) * wd.stride + ke
    starts = [i * co * wd.stride - wd.pad_lo for i in range(t)]   # on the dilated input
    active = [i for i in range(t) if i * co < out]
    if base == 1:
        return Geometry(width, starts, active,
                        WindowDim(wd.size, wd.stride, 0, 0, 1, wd.rhs_dilate))
    first = [-(-p // base) for p in starts]                        # first real row read
    phase = [first[i] * base - starts[i] for i in range(t)]
    top, low = max(phase[i] for i in active), min(phase[i] for i in active)
    if low > width - 1 or (top != low and wd.stride != 1):
        return None
    rows = (width - 1 - low) // base + 1
    extra = top - low
    local = WindowDim(wd.size, wd.stride, top, extra + width - top - ((rows - 1) * base + 1),
                      base, wd.rhs_dilate)
    if not extra:
        return Geometry(rows, first, active, local)
    return Geometry(rows, first, active, local,
                    out_offset=[top - phase[i] if i in active else 0 for i in range(t)],
                    extra=extra)


def kernel_split(out: int, nk: int, t: int, wd: WindowDim) -> Geometry:
    """The windows when the convolution's kernel operand (``nk`` spatial elements, the window)
    is split ``t`` ways and every partition computes all ``out`` outputs from its part of the
    window: partition ``i`` holds window taps ``[i*ck, (i+1)*ck)``."""
    ck = -(-nk // t)
    return Geometry((out - 1) * wd.stride + (ck - 1) * wd.rhs_dilate + 1,
                    [i * ck * wd.rhs_dilate - wd.pad_lo for i in range(t)],
                    [i for i in range(t) if i * ck < nk],
                    WindowDim(ck, wd.stride, 0, 0, 1, wd.rhs_dilate))


def _with_dims_replicated(s: HloSharding, dims: Sequence[int]) -> HloSharding:
    rank = s.tiled_data_rank
    return remap(s, [None if d in dims else d for d in range(rank)], rank)


class _Window:
    """Brings a local operand to the per-partition window of the result sharding ``r``."""

    def __init__(self, b: SpmdBuilder, r: HloSharding, global_dims: Sequence[int],
                 pad: HloInstruction | None) -> None:
        self.b, self.r, self.dims, self.pad = b, r, tuple(global_dims), pad
        self.coord = coords(r)

    def _lookup(self, d: int, fn) -> HloInstruction:
        return self.b.per_device([fn(self.coord[dev][d]) if dev in self.coord else 0
                                  for dev in range(self.b.n)])

    def _slice_window(self, x: HloInstruction, d: int, width: int, start) -> HloInstruction:
        """Rows ``[start(i), start(i) + width)`` of ``x`` along ``d`` on the partition with
        tile coordinate ``i``: a slice when every partition starts at the same row, else a
        ``dynamic-slice`` at a start looked up by ``partition-id``."""
        b = self.b
        firsts = {start(c[d]) for c in self.coord.values()}
        dims = list(x.shape.dims)
        if len(firsts) == 1:
            (a,) = firsts
            return x if (a, width) == (0, dims[d]) else self._rows(x, d, a, a + width)
        dims[d] = width
        zero = b.constant(np.int32(0), T.S32)
        starts = [self._lookup(d, start) if k == d else zero for k in range(len(dims))]
        return b.add("dynamic-slice", Shape.array(x.shape.element_type, dims), [x] + starts,
                     {"dynamic_slice_sizes": tuple(dims)})

    def _pad(self, x: HloInstruction, d: int, lo: int, hi: int) -> HloInstruction:
        if lo == 0 and hi == 0:
            return x
        dims = list(x.shape.dims)
        dims[d] += lo + hi
        cfg = tuple((lo, hi, 0) if k == d else (0, 0, 0) for k in range(len(dims)))
        return self.b.add("pad", Shape.array(x.shape.element_type, dims), [x, self.pad],
                          {"padding": cfg})

    def whole(self, x: HloInstruction, d: int, g: Geometry) -> HloInstruction:
        """``x`` holds all ``n`` rows along ``d``: pad, then each partition's window."""
        n, width, lo = self.dims[d], g.width, g.lo
        left = max(0, -min(lo))
        right = max(0, max(v + width for v in lo) - n)
        x = self._pad(x, d, left, right)
        return self._slice_window(x, d, width, lambda i: lo[i] + left)

    def halo(self, x: HloInstruction, d: int, g: Geometry) -> HloInstruction | None:
        """``x`` split along ``d`` as ``r``: exchange halos with the neighbours, take the
        window, mask rows outside the array; None when a halo reaches past a neighbour."""
        b = self.b
        n, t, c = self.dims[d], split_count(self.r, d), x.shape.dims[d]
        width, lo, active = g.width, g.lo, g.active
        lh = {i: i * c - lo[i] for i in active}
        rh = {i: lo[i] + width - (i + 1) * c for i in active}
        lmax, rmax = max(0, max(lh.values())), max(0, max(rh.values()))
        nl, nr = lh, rh
        if g.need is not None:
            nl = {i: i * c - g.need[i][0] for i in active}
            nr = {i: g.need[i][1] - (i + 1) * c for i in active}
        lx = max([0] + [nl[i] for i in active if i > 0])          # from a real neighbour
        rx = max([0] + [nr[i] for i in active if i < t - 1])
        if lx > c or rx > c:
            log.debug("spmd-partitioning: halo %d/%d beyond the %d-row shard on dim %d",
                      lx, rx, c, d)
            return None
        parts = []
        if lx:
            parts.append(self._permute(self._rows(x, d, c - lx, c), d, +1))
        parts.append(x)
        if rx:
            parts.append(self._permute(self._rows(x, d, 0, rx), d, -1))
        if len(parts) > 1:
            dims = list(x.shape.dims)
            dims[d] = lx + c + rx
            x = b.add("concatenate", Shape.array(x.shape.element_type, dims), parts,
                      {"dimensions": (d,)})
        x = self._pad(x, d, lmax - lx, rmax - rx)
        y = self._slice_window(x, d, width, lambda i: lmax - lh[i] if i in lh else 0)
        if t * c == n and all(0 <= lo[i] and lo[i] + width <= n for i in active):
            return y                                  # every row read is a real row
        return self._mask(y, d, self._lookup(d, lambda i: lo[i]), n)

    def _rows(self, x: HloInstruction, d: int, a: int, z: int) -> HloInstruction:
        dims = list(x.shape.dims)
        dims[d] = z - a
        return self.b.add("slice", Shape.array(x.shape.element_type, dims), [x], {
            "slice": tuple((a, z, 1) if k == d else (0, n, 1)
                           for k, n in enumerate(x.shape.dims))})

    def _permute(self, x: HloInstruction, d: int, step: int) -> HloInstruction:
        """Each partition's ``x`` to its neighbour ``step`` tiles along ``d`` (same other
        coordinates, replication subgroups included)."""
        arr = self.r.device_array()
        pairs = []
        for idx in np.ndindex(arr.shape):
            j = idx[d] + step
            if 0 <= j < arr.shape[d]:
                to = idx[:d] + (j,) + idx[d + 1:]
                pairs.append((int(arr[idx]), int(arr[to])))
        return self.b.add("collective-permute", x.shape, [x], {
            "channel_id": self.b._next_channel(), "source_target_pairs": tuple(sorted(pairs))})

    def _mask(self, y: HloInstruction, d: int, start: HloInstruction, n: int
              ) -> HloInstruction:
        """Rows of ``y`` whose global index ``start + k`` is outside ``[0, n)`` set to the
        pad value."""
        b, dims = self.b, y.shape.dims
        s32 = Shape.array("s32", dims)
        g = b.add("add", s32, [b.add("iota", s32, [], {"iota_dimension": d}),
                               b.add("broadcast", s32, [start], {"dimensions": ()})])
        pred = Shape.array("pred", dims)
        zero = b.add("broadcast", s32, [b.constant(np.int32(0), T.S32)], {"dimensions": ()})
        lim = b.add("broadcast", s32, [b.constant(np.int32(n), T.S32)], {"dimensions": ()})
        ok = b.add("and", pred, [b.add("compare", pred, [g, zero], {"direction": "GE"}),
                                 b.add("compare", pred, [g, lim], {"direction": "LT"})])
        pv = b.add("broadcast", y.shape, [self.pad], {"dimensions": ()})
        return b.add("select", y.shape, [ok, y, pv])


def windowed_input(part: "SpmdPartitioner", operand: HloInstruction, r: HloSharding,
                   geometry: dict[int, Geometry], pad: HloInstruction) -> HloInstruction:
    """The operand of a windowed op as each partition reads it (``geometry``: for each dim
    ``r`` splits, the windows), the operand first resharded to ``r`` (or to ``r`` with those
    dims whole when it is whole there already)."""
    b = part.b
    split = list(geometry)
    x, s = part.local[id(operand)]
    dims = operand.shape.dims
    rep = _with_dims_replicated(r, split)
    w = _Window(b, r, dims, pad)
    if s.kind == "replicated" or s == rep:
        # windowed dims already whole (XLA: pad and slice, no communication)
        x = b.reshard(x, s, rep, dims)
        for d in split:
            x = w.whole(x, d, geometry[d])
        return x
    x, cur = b.reshard(x, s, r, dims), r
    for d in split:
        got = w.halo(x, d, geometry[d])
        if got is None:                               # halo past the neighbour: gather d
            x, cur = b.gather_dim(x, cur, d, dims)
            got = w.whole(x, d, geometry[d])
        x = got
    return x


def output_windows(operand: HloInstruction, r: HloSharding, window: dict[int, WindowDim]
                   ) -> dict[int, Geometry] | None:
    """The windows of an op whose result is split like ``r`` (operand dims) on windowed dims
    (``window``: operand dim -> its window); None when a split dim's window does not fit, is
    reversed, or has base dilation at varying phases with a stride (see ``output_split``)."""
    out = {}
    for d, wd in window.items():
        if split_count(r, d) > 1:
            g = output_split(operand.shape.dims[d], split_count(r, d), wd)
            if g is None:
                return None
            out[d] = g
    return out or None


def local_op(part: "SpmdPartitioner", instr: HloInstruction, r: HloSharding,
             cut: dict[int, Geometry], operands: list[HloInstruction], attrs: dict
             ) -> HloInstruction:
    """``instr``'s op on the local ``operands``, its result split like ``r``; along the result
    dims in ``cut`` it computes the geometry's extra outputs and each partition then keeps its
    own from its offset."""
    b = part.b
    dims = list(local_dims(instr.shape.dims, r))
    for d, g in cut.items():
        dims[d] += g.extra
    y = b.add(instr.opcode, Shape.array(instr.shape.element_type, dims), operands, attrs,
              instr.name)
    w = _Window(b, r, instr.shape.dims, None)
    for d, g in cut.items():
        if g.out_offset is not None:
            y = w._slice_window(y, d, dims[d] - g.extra, lambda i, off=g.out_offset: off[i])
    return y


def local_window(window: Window, geometry: dict[int, Geometry]) -> Window:
    """``window`` with the dims in ``geometry`` (window dim -> its geometry) replaced by the
    local op's window."""
    return Window(tuple(geometry[k].local if k in geometry else w
                        for k, w in enumerate(window.dims)))


def pick(candidates: Sequence[HloSharding | None], windowed: Sequence[int]
         ) -> HloSharding | None:
    """The first tiled sharding that splits one of the ``windowed`` dims."""
    for c in candidates:
        if c is not None and c.kind == "tiled" and any(c.data_tiles[d] > 1 for d in windowed):
            return c
    return None


def reduce_window(part: "SpmdPartitioner", instr: HloInstruction, out: HloSharding
                  ) -> HloInstruction | None:
    """A single-operand ``reduce-window`` split on windowed dims: the operand brought to each
    partition's window (padding with the init value), a local reduce-window without padding
    on those dims, resharded to ``out``."""
    operand, init = instr.operands
    window: Window = instr.attrs["window"]
    windowed = [d for d, w in enumerate(window.dims)
                if (w.size, w.stride, w.pad_lo, w.pad_hi, w.lhs_dilate, w.rhs_dilate)
                != (1, 1, 0, 0, 1, 1)]
    r = pick([out, part.local[id(operand)][1]], windowed)
    if r is None:
        return None
    iv = part._get(init, HloSharding.replicate())
    split = [d for d in windowed if r.data_tiles[d] > 1]
    geometry = output_windows(operand, r, {d: window.dims[d] for d in split})
    if geometry is None:
        return None
    x = windowed_input(part, operand, r, geometry, iv)
    attrs = {k: v for k, v in instr.attrs.items() if k != "sharding"}
    attrs["window"] = local_window(window, geometry)
    y = local_op(part, instr, r, geometry, [x, iv], attrs)
    return part.b.reshard(y, r, out, instr.shape.dims)


def pad_or_slice(part: "SpmdPartitioner", instr: HloInstruction, out: HloSharding
                 ) -> HloInstruction | None:
    """A ``pad`` or ``slice`` split along a dim it pads or slices, as a window op of size 1
    (XLA partitions both with the windowed-input halo exchange): a slice ``[a:b:k]`` is stride
    ``k`` with padding ``-a`` and ``b - n``; a pad ``lo_hi_interior`` is padding ``lo``,
    ``hi`` and base dilation ``interior + 1``. Each partition gets the rows its outputs read,
    then a local pad (of the first window's phase, for interior padding) or strided slice."""
    operand = instr.operands[0]
    n_dims = operand.shape.dims
    if instr.opcode == "slice":
        window = {d: WindowDim(1, k, -a, b - n_dims[d])
                  for d, (a, b, k) in enumerate(instr.attrs["slice"])
                  if (a, b, k) != (0, n_dims[d], 1)}
    else:
        window = {d: WindowDim(1, 1, lo, hi, interior + 1)
                  for d, (lo, hi, interior) in enumerate(instr.attrs["padding"])
                  if (lo, hi, interior) != (0, 0, 0)}
    r = pick([out, part.local[id(operand)][1]], list(window))
    if r is None:
        return None
    geometry = output_windows(operand, r, {d: w for d, w in window.items()
                                          if r.data_tiles[d] > 1})
    if geometry is None:
        return None
    b, et = part.b, instr.shape.element_type
    value = part._get(instr.operands[1], HloSharding.replicate()) if instr.opcode == "pad" \
        else b.constant(np.zeros((), et.dtype), et)
    x = windowed_input(part, operand, r, geometry, value)
    shape = part._shape(instr, r)
    attrs = {k: v for k, v in instr.attrs.items() if k != "sharding"}
    if instr.opcode == "slice":
        attrs["slice"] = tuple((0, x.shape.dims[d], geometry[d].local.stride) if d in geometry
                               else (0, shape.dims[d], 1) if r.data_tiles[d] > 1 else t
                               for d, t in enumerate(instr.attrs["slice"]))
        return b.reshard(b.add("slice", shape, [x], attrs, instr.name), r, out,
                         instr.shape.dims)
    attrs["padding"] = tuple(
        (geometry[d].local.pad_lo, geometry[d].local.pad_hi, geometry[d].local.lhs_dilate - 1)
        if d in geometry else t for d, t in enumerate(instr.attrs["padding"]))
    return b.reshard(local_op(part, instr, r, geometry, [x, value], attrs), r, out,
                     instr.shape.dims)


def _select_pad(select, et) -> np.ndarray | None:
    """The operand pad value a select-and-scatter never selects: the lowest value when
    ``select`` is ``compare(a, b)`` with GE/GT (a max pool's gradient), the highest with LE/LT;
    None for other selects."""
    root = select.root
    if root.opcode != "compare" or len(select.parameters) != 2:
        return None
    direction = root.attrs.get("direction")
    if [o.parameter_number for o in root.operands if o.opcode == "parameter"] == [1, 0]:
        direction = {"GE": "LE", "GT": "LT", "LE": "GE", "LT": "GT"}.get(direction, direction)
    elif [o.parameter_number for o in root.operands if o.opcode == "parameter"] != [0, 1]:
        return None
    if direction not in ("GE", "GT", "LE", "LT") or et.name == "pred":
        return None
    info = np.finfo(et.dtype) if et.is_floating else np.iinfo(et.dtype)
    low = -np.inf if et.is_floating else info.min
    high = np.inf if et.is_floating else info.max
    return np.asarray(low if direction in ("GE", "GT") else high, et.dtype)


def select_and_scatter(part: "SpmdPartitioner", instr: HloInstruction, out: HloSharding
                       ) -> HloInstruction | None:
    """A select-and-scatter (a max pool's gradient) split on windowed dims, with a comparison
    select and an add scatter: partition ``i`` owns operand rows ``[i*c, (i+1)*c)``; the windows
    touching them are ``[o_lo, o_hi)`` (``o_lo = floor((i*c + pad_lo - size) / stride) + 1``,
    ``o_hi = ceil(((i+1)*c + pad_lo) / stride)``): their source rows and operand rows are
    brought over by halo exchanges (source rows outside the array as zeros, operand rows as a
    value the select never picks, so made-up windows add nothing), the local select-and-scatter
    runs on them, and the partition's own rows are cut out of its result."""
    operand, source, init = instr.operands
    a, b = instr.attrs, part.b
    window: Window = a["window"]
    et = instr.shape.element_type
    pad = _select_pad(a["select"], et)
    if pad is None or a["scatter"].root.opcode != "add":
        return None
    windowed = [d for d, w in enumerate(window.dims) if (w.size, w.stride, w.pad_lo, w.pad_hi)
                != (1, 1, 0, 0)]
    r = pick([out, part.local[id(operand)][1]], windowed)
    if r is None or any(w.lhs_dilate != 1 or w.rhs_dilate != 1 or w.rhs_reversal
                        for w in window.dims):
        return None
    split = [d for d in windowed if r.data_tiles[d] > 1]
    g_op, g_src, cut = {}, {}, {}
    for d in split:
        wd, n, t = window.dims[d], operand.shape.dims[d], r.data_tiles[d]
        c = -(-n // t)
        active = [i for i in range(t) if i * c < n]
        o_lo = [(i * c + wd.pad_lo - wd.size) // wd.stride + 1 for i in range(t)]
        o_hi = [-(-((i + 1) * c + wd.pad_lo) // wd.stride) for i in range(t)]
        count = max(1, max(o_hi[i] - o_lo[i] for i in active))
        starts = [o * wd.stride - wd.pad_lo for o in o_lo]
        width = (count - 1) * wd.stride + wd.size
        local = WindowDim(wd.size, wd.stride, 0, 0)
        # only the windows that exist and touch the partition's rows need real data: others
        # add only to rows the partition does not keep
        real = [(max(o_lo[i], 0), min(o_hi[i], source.shape.dims[d])) for i in range(t)]
        g_op[d] = Geometry(width, starts, active, local, [
            (a * wd.stride - wd.pad_lo, (z - 1) * wd.stride - wd.pad_lo + wd.size)
            if z > a else (starts[i], starts[i]) for i, (a, z) in enumerate(real)])
        g_src[d] = Geometry(count, o_lo, active, local, [
            (a, z) if z > a else (o_lo[i], o_lo[i]) for i, (a, z) in enumerate(real)])
        cut[d] = (c, [i * c - starts[i] for i in range(t)], width)
    iv = part._get(init, HloSharding.replicate())
    x = windowed_input(part, operand, r, g_op, b.constant(pad, et))
    src = windowed_input(part, source, r, g_src,
                         b.constant(np.zeros((), source.shape.element_type.dtype),
                                    source.shape.element_type))
    attrs = {k: v for k, v in a.items() if k != "sharding"}
    attrs["window"] = local_window(window, g_op)
    y = b.add("select-and-scatter", x.shape, [x, src, iv], attrs, instr.name)
    w = _Window(b, r, operand.shape.dims, iv)
    for d, (c, offset, width) in cut.items():
        left = max(0, -min(offset))
        right = max(0, max(o + c for o in offset) - width)
        y = w._slice_window(w._pad(y, d, left, right), d, c,
                            lambda i, off=offset, lft=left: off[i] + lft)
    return b.reshard(y, r, out, instr.shape.dims)


__all__ = ["Geometry", "output_split", "kernel_split", "windowed_input", "output_windows",
           "local_op", "local_window", "pick", "split_count", "reduce_window", "pad_or_slice",
           "select_and_scatter"]
