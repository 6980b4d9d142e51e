"""Convolutions split on spatial dims in the SPMD partitioner (XLA's
``convolution_handler.cc``), with the halo exchange of :mod:`~xlapy.passes.spmd_windowed`:

- the result split on output spatial dims, the kernel whole on its spatial and input-feature
  dims (``PartitionConvolutionTiledOutput``): the input brought to each partition's window
  (padding with zero), the kernel split like the output features, a local convolution;
- the kernel operand split on spatial dims (the kernel gradient of a spatially split
  convolution: ``PartitionConvolutionWithSpatialDimensionHaloExchangeOnLHS``): partition ``i``
  holds window taps ``[i*ck, (i+1)*ck)``, gets the input rows they read, computes partial
  results of every output, and an ``all-reduce`` adds them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..hlo.ir import HloInstruction
from ..hlo.sharding import HloSharding
from ..hlo.sharding_util import groups_along, invert, remap
from .spmd_windowed import (kernel_split, local_op, local_window, output_windows, pick,
                            split_count, windowed_input)

if TYPE_CHECKING:
    from .spmd_partitioner import SpmdPartitioner


def convolution(part: "SpmdPartitioner", instr: HloInstruction, out: HloSharding
                ) -> HloInstruction | None:
    """A convolution (no feature or batch groups) whose result is split on output spatial
    dims, the kernel whole on its spatial and input-feature dims (XLA's
    ``PartitionConvolutionTiledOutput``): the input brought to each partition's window
    (padding with zero), the kernel split like the output features, a local convolution."""
    a = instr.attrs
    if a.get("feature_group_count", 1) != 1 or a.get("batch_group_count", 1) != 1:
        return None
    dn, window = a["dim_labels"], a["window"]
    rank = len(instr.shape.dims)
    lhs, rhs = instr.operands
    to_in: list[int | None] = [None] * rank
    to_in[dn.output_batch] = dn.input_batch
    for k, o in enumerate(dn.output_spatial):
        to_in[o] = dn.input_spatial[k]
    ls = part.local[id(lhs)][1]
    from_in = invert(to_in, len(lhs.shape.dims))
    r = pick([out, remap(ls, from_in, rank) if ls.kind == "tiled" else None],
             list(dn.output_spatial))
    if r is None:
        return None
    in_s = remap(r, to_in, len(lhs.shape.dims))
    to_k: list[int | None] = [None] * rank
    to_k[dn.output_feature] = dn.kernel_output_feature
    k_s = remap(r, to_k, len(rhs.shape.dims))
    win = {dn.input_spatial[k]: w for k, w in enumerate(window.dims)
           if split_count(in_s, dn.input_spatial[k]) > 1}
    et = lhs.shape.element_type
    zero = part.b.constant(np.zeros((), et.dtype), et)
    geometry = output_windows(lhs, in_s, win)
    if geometry is None:
        return None
    x = windowed_input(part, lhs, in_s, geometry, zero)
    kern = part._get(rhs, k_s)
    attrs = {key: v for key, v in a.items() if key != "sharding"}
    attrs["window"] = local_window(window, {j: geometry[sp] for j, sp in
                                             enumerate(dn.input_spatial) if sp in geometry})
    cut = {dn.output_spatial[j]: geometry[sp] for j, sp in enumerate(dn.input_spatial)
           if sp in geometry}
    y = local_op(part, instr, r, cut, [x, kern], attrs)
    return part.b.reshard(y, r, out, instr.shape.dims)


def convolution_split_kernel(part: "SpmdPartitioner", instr: HloInstruction,
                             out: HloSharding) -> HloInstruction | None:
    """A convolution whose kernel operand is split on spatial dims (a kernel gradient in
    spatially partitioned training: the output gradient is the window) and nothing else (XLA's
    ``PartitionConvolutionWithSpatialDimensionHaloExchangeOnLHS``): the input split alike and
    brought to the rows the partition's window taps read (halo exchange), the kernel's padding
    zeroed, a local convolution over those taps giving partial results of the whole output, and
    an ``all-reduce`` adding them."""
    a, b = instr.attrs, part.b
    if a.get("feature_group_count", 1) != 1 or a.get("batch_group_count", 1) != 1:
        return None
    dn, window = a["dim_labels"], a["window"]
    lhs, rhs = instr.operands
    sr = part.local[id(rhs)][1]
    split = [d for d in range(len(rhs.shape.dims)) if split_count(sr, d) > 1]
    if not split or sr.subgroups not in ((), ("replicated",)) \
            or any(d not in dn.kernel_spatial for d in split):
        return None
    ks = [dn.kernel_spatial.index(d) for d in split]
    if any(window.dims[k].lhs_dilate != 1 or window.dims[k].rhs_reversal for k in ks):
        return None
    to_in: list[int | None] = [None] * len(rhs.shape.dims)
    for k in ks:
        to_in[dn.kernel_spatial[k]] = dn.input_spatial[k]
    in_s = remap(sr, to_in, len(lhs.shape.dims))
    geometry = {dn.input_spatial[k]: kernel_split(
        instr.shape.dims[dn.output_spatial[k]], rhs.shape.dims[dn.kernel_spatial[k]],
        sr.data_tiles[dn.kernel_spatial[k]], window.dims[k]) for k in ks}
    et, kt = lhs.shape.element_type, rhs.shape.element_type
    x = windowed_input(part, lhs, in_s, geometry, b.constant(np.zeros((), et.dtype), et))
    kern = b.mask(part._get(rhs, sr), sr, split, rhs.shape.dims,
                  b.constant(np.zeros((), kt.dtype), kt))
    attrs = {key: v for key, v in a.items() if key != "sharding"}
    attrs["window"] = local_window(window, {k: geometry[dn.input_spatial[k]] for k in ks})
    y = b.add("convolution", instr.shape, [x, kern], attrs, instr.name)
    y = b.all_reduce(y, groups_along(sr, split), b.adder(instr.shape.element_type))
    return b.reshard(y, HloSharding.replicate(), out, instr.shape.dims)


__all__ = ["convolution", "convolution_split_kernel"]
