"""Interpreter handlers: data_movement (broadcast, reshape, slicing, padding, tuples, bitcast ...).

Values are logical NumPy arrays in row-major order whatever the HLO layout; the
layout matters only to ``bitcast``, which reinterprets the operand's *physical*
element order (see :func:`physical_flat`). Gather and scatter live in
:mod:`.gather_scatter`, imported at the bottom so their handlers register too.

Dynamic dimensions are not tracked: an array whose shape has a bounded dynamic
dimension ``<=N`` is held at its bound ``N``. ``get-dimension-size`` therefore
returns the static (bound) size and ``set-dimension-size`` returns its operand
unchanged.
"""
from __future__ import annotations

from math import prod
from typing import Any, Sequence

import numpy as np

from ...errors import InvalidArgumentError, UnimplementedError
from ...hlo.ir import HloInstruction
from ...hlo.shape import Shape, shape_of_array
from ...hlo.types import from_dtype
from .evaluator import Evaluator, describe, handler


# ----------------------------------------------------------------------------------------------
# helpers shared with gather_scatter.py

def check_result(instr: HloInstruction, value: np.ndarray) -> np.ndarray:
    """Return ``value`` after checking that its dims are the instruction's result dims."""
    if tuple(value.shape) != instr.shape.dims:
        raise InvalidArgumentError(
            f"{describe(instr)}: computed a result of dims {list(value.shape)}, but the "
            f"instruction's shape is {instr.shape}")
    return value


def index_scalar(value: Any) -> int:
    """An index operand's value as a Python int (signed or unsigned integer element types)."""
    a = np.asarray(value)
    require_integral(a)
    return int(indices_as_int64(a).reshape(()))


def indices_as_int64(a: np.ndarray) -> np.ndarray:
    """Integer indices as int64; u64 values of 2**63 and above saturate to the int64 maximum
    instead of wrapping negative, so they clamp (or fall out of bounds) at the top as XLA's
    unsigned comparison does."""
    if a.dtype == np.uint64:
        return np.minimum(a, np.uint64(np.iinfo(np.int64).max)).astype(np.int64)
    return a.astype(np.int64)


def require_integral(a: np.ndarray) -> None:
    """Raise unless ``a`` holds an integral element type (s2..s64, u2..u64)."""
    if a.dtype.kind in "iu":
        return
    if a.dtype.kind == "V" and from_dtype(a.dtype).is_integral:    # ml_dtypes int2/int4/...
        return
    raise InvalidArgumentError(f"index operand must be integral, got dtype {a.dtype}")


def dynamic_starts(instr: HloInstruction, starts: Sequence[Any], rank: int) -> list[int]:
    """The start indices of a dynamic-(update-)slice: ``rank`` scalars, or one rank-1 array."""
    if len(starts) == 1 and np.ndim(starts[0]) == 1:           # legacy single start vector
        vec = np.asarray(starts[0])
        require_integral(vec)
        values = [int(v) for v in indices_as_int64(vec)]
    else:
        if any(np.ndim(s) != 0 for s in starts):
            raise InvalidArgumentError(f"{describe(instr)}: start indices must be scalars "
                                       f"(or a single rank-1 array)")
        values = [index_scalar(s) for s in starts]
    if len(values) != rank:
        raise InvalidArgumentError(f"{describe(instr)}: got {len(values)} start indices for an "
                                   f"operand of rank {rank}")
    return values


def clamp_starts(starts: Sequence[int], dims: Sequence[int], sizes: Sequence[int]) -> list[int]:
    """Clamp each start to ``[0, dim - size]`` so the slice stays in bounds (XLA semantics)."""
    return [min(max(s, 0), d - n) for s, d, n in zip(starts, dims, sizes)]


# ----------------------------------------------------------------------------------------------
# shape-only ops

@handler("broadcast")
def _broadcast(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """Operand dim ``i`` becomes output dim ``dimensions[i]``; other output dims replicate."""
    x = operands[0]
    dims = tuple(instr.attrs.get("dimensions", ()))
    out_dims = instr.shape.dims
    if len(dims) != x.ndim:
        raise InvalidArgumentError(f"{describe(instr)}: dimensions={list(dims)} has {len(dims)} "
                                   f"entries for an operand of rank {x.ndim}")
    expanded = [1] * len(out_dims)
    for i, d in enumerate(dims):
        expanded[d] = x.shape[i]
    # Operand dims may appear in any order in the output: sort them first.
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    y = np.transpose(x, order).reshape(expanded)
    return np.array(np.broadcast_to(y, out_dims), dtype=instr.shape.dtype)


@handler("reshape")
def _reshape(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """Row-major (logical) element order is preserved."""
    x = operands[0]
    if x.size != instr.shape.num_elements:
        raise InvalidArgumentError(f"{describe(instr)}: cannot reshape {x.size} elements "
                                   f"of dims {list(x.shape)}")
    return np.reshape(x, instr.shape.dims)


@handler("dynamic-reshape")
def _dynamic_reshape(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """Reshape to the runtime sizes given by the scalar operands, held at the result's bounds.

    The result is the operand's elements in row-major order laid into the requested
    sizes; positions beyond a requested size (up to the static bound) are zero.
    """
    x, sizes = operands[0], [index_scalar(s) for s in operands[1:]]
    bounds = instr.shape.dims
    if len(sizes) != len(bounds):
        raise InvalidArgumentError(f"{describe(instr)}: {len(sizes)} size operands for a result "
                                   f"of rank {len(bounds)}")
    if any(s < 0 or s > b for s, b in zip(sizes, bounds)) or prod(sizes) != x.size:
        raise InvalidArgumentError(f"{describe(instr)}: requested sizes {sizes} do not hold the "
                                   f"{x.size} elements of the operand within bounds {list(bounds)}")
    out = np.zeros(bounds, dtype=instr.shape.dtype)
    out[tuple(slice(0, s) for s in sizes)] = x.reshape(sizes)
    return out


@handler("transpose")
def _transpose(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """Output dim ``i`` is operand dim ``dimensions[i]``."""
    perm = tuple(instr.attrs["dimensions"])
    return np.asarray(np.transpose(operands[0], perm), order="C")


@handler("reverse")
def _reverse(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    return np.asarray(np.flip(operands[0], axis=tuple(instr.attrs["dimensions"])), order="C")


@handler("concatenate")
def _concatenate(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    (axis,) = instr.attrs["dimensions"]
    return check_result(instr, np.concatenate(operands, axis=axis))


# ----------------------------------------------------------------------------------------------
# slicing and padding

@handler("slice")
def _slice(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """``slice={[start:limit:stride], ...}`` per dimension."""
    x = operands[0]
    spec = instr.attrs["slice"]
    if len(spec) != x.ndim:
        raise InvalidArgumentError(f"{describe(instr)}: slice has {len(spec)} entries for an "
                                   f"operand of rank {x.ndim}")
    index = tuple(slice(start, limit, stride or 1) for start, limit, stride in spec)
    return check_result(instr, np.asarray(x[index], order="C"))


@handler("dynamic-slice")
def _dynamic_slice(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """Slice of ``dynamic_slice_sizes`` at runtime starts clamped to ``[0, dim - size]``."""
    x = operands[0]
    sizes = tuple(instr.attrs.get("dynamic_slice_sizes", instr.shape.dims))
    if len(sizes) != x.ndim or any(n > d for n, d in zip(sizes, x.shape)):
        raise InvalidArgumentError(f"{describe(instr)}: dynamic_slice_sizes {list(sizes)} do not "
                                   f"fit in operand dims {list(x.shape)}")
    starts = clamp_starts(dynamic_starts(instr, operands[1:], x.ndim), x.shape, sizes)
    index = tuple(slice(s, s + n) for s, n in zip(starts, sizes))
    return check_result(instr, np.array(x[index]))


@handler("dynamic-update-slice")
def _dynamic_update_slice(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """The operand with ``update`` written at starts clamped to ``[0, dim - update_dim]``."""
    x, update = operands[0], operands[1]
    if update.ndim != x.ndim or any(u > d for u, d in zip(update.shape, x.shape)):
        raise InvalidArgumentError(f"{describe(instr)}: update dims {list(update.shape)} do not "
                                   f"fit in operand dims {list(x.shape)}")
    starts = clamp_starts(dynamic_starts(instr, operands[2:], x.ndim), x.shape, update.shape)
    out = np.array(x)
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return out


@handler("pad")
def _pad(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """Edge padding (negative = cropping) and interior padding with the pad-value operand.

    Built as: a canvas with the positive edge padding and interior gaps, filled with the
    pad value; the operand scattered in with stride ``interior + 1``; then negative
    edge padding cropped off.
    """
    x, value = operands[0], operands[1]
    config = instr.attrs["padding"]
    if len(config) != x.ndim:
        raise InvalidArgumentError(f"{describe(instr)}: padding has {len(config)} entries for "
                                   f"an operand of rank {x.ndim}")
    canvas_dims, place, crop = [], [], []
    for n, (lo, hi, interior) in zip(x.shape, config):
        if interior < 0:
            raise InvalidArgumentError(f"{describe(instr)}: negative interior padding {interior}")
        core = (n - 1) * (interior + 1) + 1 if n > 0 else 0
        size = max(lo, 0) + core + max(hi, 0)
        canvas_dims.append(size)
        place.append(slice(max(lo, 0), max(lo, 0) + core, interior + 1))
        crop.append(slice(max(-lo, 0), size - max(-hi, 0)))
    canvas = np.full(canvas_dims, value, dtype=instr.shape.dtype)
    canvas[tuple(place)] = x
    return check_result(instr, np.asarray(canvas[tuple(crop)], order="C"))


# ----------------------------------------------------------------------------------------------
# iota, tuples, dimension sizes

@handler("iota")
def _iota(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """Values ``0, 1, ...`` along ``iota_dimension``, converted to the element type."""
    shape = instr.shape
    axis = instr.attrs["iota_dimension"]
    if not 0 <= axis < shape.rank:
        raise InvalidArgumentError(f"{describe(instr)}: iota_dimension={axis} out of range")
    ramp = np.arange(shape.dims[axis], dtype=np.int64)
    if shape.element_type.is_floating or shape.element_type.is_complex:
        ramp = ramp.astype(np.float64)
    ramp = ramp.astype(shape.dtype).reshape([-1 if d == axis else 1 for d in range(shape.rank)])
    return np.array(np.broadcast_to(ramp, shape.dims))


@handler("tuple")
def _tuple(ev: Evaluator, instr: HloInstruction, operands: list) -> tuple:
    return tuple(operands)


@handler("get-tuple-element")
def _get_tuple_element(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    value, index = operands[0], instr.attrs["index"]
    if not isinstance(value, tuple) or not 0 <= index < len(value):
        raise InvalidArgumentError(f"{describe(instr)}: index={index} is not an element of the "
                                   f"operand")
    return value[index]


@handler("get-dimension-size")
def _get_dimension_size(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """The (static) size of dimension ``dimensions={d}`` as an s32 scalar."""
    (dim,) = instr.attrs["dimensions"]
    return np.array(operands[0].shape[dim], dtype=instr.shape.dtype)


@handler("set-dimension-size")
def _set_dimension_size(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """Values unchanged: the dynamic size is shape metadata this interpreter does not track."""
    (dim,) = instr.attrs["dimensions"]
    size = index_scalar(operands[1])
    if not 0 <= size <= operands[0].shape[dim]:
        raise InvalidArgumentError(f"{describe(instr)}: size {size} outside [0, "
                                   f"{operands[0].shape[dim]}] for dimension {dim}")
    return operands[0]


@handler("copy-start")
def _copy_start(ev: Evaluator, instr: HloInstruction, operands: list) -> tuple:
    """``(destination, source, u32 context)``; the copy itself happens at once."""
    x = operands[0]
    return (np.array(x), x, np.array(0, dtype=np.uint32))


@handler("copy-done")
def _copy_done(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    return operands[0][0]


# ----------------------------------------------------------------------------------------------
# bitcast

def _major_to_minor(shape: Shape, what: str, instr: HloInstruction) -> tuple[int, ...]:
    """The shape's dimensions from most major to most minor (row-major when no layout)."""
    layout = shape.layout
    if layout is None or shape.rank == 0:
        return tuple(range(shape.rank))
    if "T(" in layout.extra:
        raise UnimplementedError(f"{describe(instr)}: bitcast of tiled layout {layout} ({what})")
    m2m = layout.minor_to_major
    if sorted(m2m) != list(range(shape.rank)):
        raise InvalidArgumentError(f"{describe(instr)}: layout {layout} of the {what} is not a "
                                   f"permutation of its {shape.rank} dimensions")
    return tuple(reversed(m2m))


def physical_flat(x: np.ndarray, major_to_minor: Sequence[int]) -> np.ndarray:
    """The elements of a logical array in the physical order of a layout (1-D)."""
    return np.transpose(x, major_to_minor).reshape(-1)


def from_physical_flat(flat: np.ndarray, dims: Sequence[int],
                       major_to_minor: Sequence[int]) -> np.ndarray:
    """The logical array whose physical order under a layout is ``flat``."""
    physical = flat.reshape(tuple(dims[d] for d in major_to_minor))
    return np.asarray(np.transpose(physical, np.argsort(major_to_minor)), order="C")


@handler("bitcast")
def _bitcast(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """Reinterpret the operand's buffer as the result shape.

    The operand's elements in its physical order (per its layout) become the result's
    elements in the result's physical order; if the element type changes (same total
    byte size) the bytes are reinterpreted, like ``bitcast-convert``.
    """
    x = operands[0]
    # Without an operand instruction (a bare handler call) the operand is taken as row-major.
    src_shape = instr.operands[0].shape if instr.operands else shape_of_array(x)
    dst_shape = instr.shape
    flat = physical_flat(x, _major_to_minor(src_shape, "operand", instr))
    if flat.dtype != dst_shape.dtype:
        if flat.nbytes != dst_shape.num_elements * dst_shape.dtype.itemsize:
            raise InvalidArgumentError(f"{describe(instr)}: operand of {flat.nbytes} bytes cannot "
                                       f"be bitcast to {dst_shape}")
        flat = np.asarray(flat, order="C").view(dst_shape.dtype)
    elif flat.size != dst_shape.num_elements:
        raise InvalidArgumentError(f"{describe(instr)}: operand has {flat.size} elements, the "
                                   f"result shape {dst_shape} has {dst_shape.num_elements}")
    return from_physical_flat(flat, dst_shape.dims, _major_to_minor(dst_shape, "result", instr))


from . import gather_scatter  # noqa: E402,F401  (registers gather and scatter)
