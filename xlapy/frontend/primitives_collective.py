"""Collective primitives over named axes (JAX's ``lax.psum`` family), with their lowering,
gradient and batching rules side by side.

A collective names an axis bound by an enclosing ``pmap``, ``shard_map`` or ``vmap``
(``batching.AXIS_ENV``):

- under ``pmap`` it lowers to the HLO collective over all the devices of the axis
  (``replica_groups={{0,...,N-1}}`` in a module with ``replica_count=N``): ``psum``/``pmax``/
  ``pmin`` to ``all-reduce``, ``all_gather`` to ``all-gather``, ``psum_scatter`` to
  ``reduce-scatter``, ``ppermute`` to ``collective-permute``, ``all_to_all`` to ``all-to-all``
  and ``axis_index`` to ``replica-id``;
- inside ``shard_map`` (mesh axes) it lowers as JAX does for a ``{manual}`` region: groups of
  partition ids (the devices that differ only along the named axes), a ``channel_id``,
  ``use_global_device_ids`` for the all-reduce family, ``ppermute``'s pairs repeated in every
  group, and ``axis_index`` as ``(partition-id / stride) % size``;
- under ``vmap(..., axis_name=...)`` the batching rules compute the same thing over the
  batch axis (``psum`` is a sum over it, ``all_gather`` moves it into the result, ...).

Gradients follow JAX: the transpose of ``psum`` is ``psum`` of the cotangent; ``pmax``/
``pmin`` send the summed cotangent to the devices holding the extreme (split evenly among
ties); ``all_gather`` and ``psum_scatter`` are each other's transposes; ``ppermute``'s is
the inverse permutation; ``all_to_all``'s swaps the split and concat axes.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..hlo.ir import HloInstruction
from ..hlo.replica_groups import ReplicaGroups
from ..hlo.shape import Shape
from . import lax
from .batching import ALWAYS_RULE, applying, axis_frame, merge_axis_into, move_to, moveaxis
from .batching import split_axis as split_dim
from .core import Array, LoweringContext, bind, current_trace, primitive, to_array
from .pytree import tree_flatten, tree_unflatten

I = HloInstruction


def _names(axis_name: Any) -> tuple:
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    if not names or len(set(names)) != len(names):
        raise InvalidArgumentError(f"axis_name must name distinct axes, got {axis_name!r}")
    return names


def _gather_names(axis_name: Any, what: str) -> tuple:
    """The axes of a collective that orders its participants: one name, or several mesh
    axes of a ``shard_map`` (participants ordered with the first axis major)."""
    names = _names(axis_name)
    if len(names) != 1 and _mesh_of(names, what) is None:
        raise InvalidArgumentError(f"{what}: takes one axis name (several only for mesh "
                                   f"axes inside shard_map), got {axis_name!r}")
    return names


def _device_groups(names: Sequence[Any], what: str) -> tuple[int, ReplicaGroups | None]:
    """The participant count and replica groups of a collective over ``names`` in a
    ``pmap``-traced module, or over mesh axes inside ``shard_map`` (groups of partition
    ids: the devices that differ only along ``names``, see :func:`_spmd_attrs`).

    Groups are None for an axis of an enclosing ``vmap``: the collective is then being
    lowered into the body of a control-flow op traced under that vmap, only to find the
    body's types and captured values (``batching``); such bodies never run (the
    control-flow batching rules run the Python body again, and the collective's own
    rule handles the axis), so the lowering gives a value of the result's type."""
    mesh = _mesh_of(names, what)
    if mesh is not None:
        groups = mesh.axis_groups(names)
        return len(groups[0]), ReplicaGroups.of(groups)
    if len(names) != 1:
        raise InvalidArgumentError(f"{what}: {len(names)} pmap axes {list(names)}; pmap binds "
                                   "one axis (nested pmap is not supported)")
    frame = axis_frame(names[0], what)
    if frame.kind == "vmap":
        if not getattr(current_trace(), "capture_constants", False):
            raise InvalidArgumentError(f"{what}: the vmapped axis {frame.name!r} reached a "
                                       "lowering outside the vmap's control-flow bodies")
        return frame.size, None
    return frame.size, ReplicaGroups.of([list(range(frame.size))])


def _mesh_of(names: Sequence[Any], what: str) -> Any:
    """The ``Mesh`` when every axis in ``names`` is bound by ``shard_map`` (None when none
    is); mixing them with ``pmap``/``vmap`` axes is an error."""
    frames = [axis_frame(n, what) for n in names]
    meshes = {id(f.mesh): f.mesh for f in frames if f.kind == "shard_map"}
    if not meshes:
        return None
    if len(meshes) != 1 or len(frames) != sum(f.kind == "shard_map" for f in frames):
        raise InvalidArgumentError(f"{what}: axes {list(names)} mix shard_map mesh axes with "
                                   "other named axes")
    return next(iter(meshes.values()))


def _spmd_attrs(names: Sequence[Any], global_ids: bool = True) -> dict:
    """The attributes that make a collective inside ``shard_map`` address partitions, as
    JAX emits them: a ``channel_id`` (numbered per traced program) and, for the all-reduce
    family, ``use_global_device_ids`` (groups of flattened ids)."""
    if _mesh_of(names, "collective") is None:
        return {}
    root = current_trace()
    while getattr(root, "parent", None) is not None:
        root = root.parent
    channel = getattr(root, "channels", 0) + 1
    root.channels = channel
    return {"channel_id": channel, **({"use_global_device_ids": True} if global_ids else {})}


# ----------------------------------------------------------------- all-reduce family
_REDUCE = {"psum": ("add", "or"), "pmax": ("maximum", "or"), "pmin": ("minimum", "and")}


def _all_reduce_lower(kind: str) -> Any:
    def lower(ctx: LoweringContext, x: I, *, axis_name: tuple) -> I:
        _, groups = _device_groups(axis_name, f"lax.{kind}")
        if groups is None:
            return x
        opcode = _REDUCE[kind][1] if x.shape.element_type.is_pred else _REDUCE[kind][0]
        return ctx.b.add_instruction(
            "all-reduce", [x], {**_spmd_attrs(axis_name), "replica_groups": groups,
                                "to_apply": ctx.scalar_computation(opcode, x.shape.dtype)})
    return lower


psum_p = primitive("psum")
pmax_p = primitive("pmax")
pmin_p = primitive("pmin")
for _kind, _p in (("psum", psum_p), ("pmax", pmax_p), ("pmin", pmin_p)):
    _p.def_lowering(_all_reduce_lower(_kind))

psum_p.def_vjp(lambda ct, ans, x, *, axis_name: (bind(psum_p, ct, axis_name=axis_name),))


def _extreme_vjp(ct: Array, ans: Array, x: Array, *, axis_name: tuple) -> tuple:
    hit = lax.convert_element_type(lax.eq(x, ans), x.dtype)
    count = bind(psum_p, hit, axis_name=axis_name)
    return (lax.mul(lax.div(bind(psum_p, ct, axis_name=axis_name), count), hit),)


pmax_p.def_vjp(_extreme_vjp)
pmin_p.def_vjp(_extreme_vjp)


def _all_reduce_batch(kind: str) -> Any:
    def rule(vals: Sequence[Array], dims: Sequence[int | None], *, axis_name: tuple) -> tuple:
        trace = applying()
        (x,), (d,) = vals, dims
        if trace.axis_name not in axis_name:       # another axis: elementwise over ours
            return bind(_PRIMS[kind], x, axis_name=axis_name), d
        if d is None:
            y = lax.mul(x, lax.full_like(x, trace.axis_size)) if kind == "psum" else x
        else:
            y = getattr(lax, {"psum": "reduce_sum", "pmax": "reduce_max",
                              "pmin": "reduce_min"}[kind])(x, (d,))
        rest = tuple(n for n in axis_name if n != trace.axis_name)
        return (bind(_PRIMS[kind], y, axis_name=rest) if rest else y), None
    return rule


_PRIMS = {"psum": psum_p, "pmax": pmax_p, "pmin": pmin_p}
for _kind, _p in _PRIMS.items():
    _p.def_batching(_all_reduce_batch(_kind))


# ---------------------------------------------------------------- all-gather / scatter
all_gather_p = primitive("all_gather")
psum_scatter_p = primitive("psum_scatter")


@all_gather_p.def_lowering
def _all_gather_lower(ctx: LoweringContext, x: I, *, axis_name: tuple, axis: int,
                      tiled: bool) -> I:
    n, groups = _device_groups(axis_name, "lax.all_gather")
    dims = list(x.shape.dims)
    if not tiled:
        dims.insert(axis, 1)
        x = ctx.b.reshape(x, dims)
    out = list(dims)
    out[axis] *= n
    if groups is None:
        return ctx.b.concatenate([x] * n, axis)
    return ctx.b.add_instruction("all-gather", [x], {**_spmd_attrs(axis_name),
                                                     "replica_groups": groups,
                                                     "dimensions": (axis,)},
                                 declared=Shape.array(x.shape.element_type, out))


@psum_scatter_p.def_lowering
def _psum_scatter_lower(ctx: LoweringContext, x: I, *, axis_name: tuple,
                        scatter_dimension: int, tiled: bool) -> I:
    n, groups = _device_groups(axis_name, "lax.psum_scatter")
    d = scatter_dimension
    out = list(x.shape.dims)
    out[d] //= n
    et = x.shape.element_type
    if groups is None:
        r = ctx.b.slice(x, [0] * len(out), out, [1] * len(out))
    else:
        r = ctx.b.add_instruction(
            "reduce-scatter", [x], {**_spmd_attrs(axis_name), "replica_groups": groups,
                                    "dimensions": (d,),
                                    "to_apply": ctx.scalar_computation("add", x.shape.dtype)},
            declared=Shape.array(et, out))
    return r if tiled else ctx.b.reshape(r, out[:d] + out[d + 1:])


all_gather_p.def_vjp(lambda ct, ans, x, *, axis_name, axis, tiled: (
    bind(psum_scatter_p, ct, axis_name=axis_name, scatter_dimension=axis, tiled=tiled),))
psum_scatter_p.def_vjp(lambda ct, ans, x, *, axis_name, scatter_dimension, tiled: (
    bind(all_gather_p, ct, axis_name=axis_name, axis=scatter_dimension, tiled=tiled),))


@all_gather_p.def_batching
def _all_gather_batch(vals, dims, *, axis_name: tuple, axis: int, tiled: bool) -> tuple:
    trace = applying()
    x = move_to(vals[0], dims[0], 0, trace.axis_size)
    if axis_name != (trace.axis_name,):
        return bind(all_gather_p, x, axis_name=axis_name, axis=axis + 1, tiled=tiled), 0
    # Every example gets the whole batch, stacked (or concatenated) along ``axis``.
    y = moveaxis(x, 0, axis)
    return (merge_axis_into(y, axis, axis) if tiled else y), None


@psum_scatter_p.def_batching
def _psum_scatter_batch(vals, dims, *, axis_name: tuple, scatter_dimension: int,
                        tiled: bool) -> tuple:
    trace = applying()
    n, d = trace.axis_size, scatter_dimension
    if axis_name != (trace.axis_name,):
        x = move_to(vals[0], dims[0], 0, n)
        return bind(psum_scatter_p, x, axis_name=axis_name, scatter_dimension=d + 1,
                    tiled=tiled), 0
    x, bd = vals[0], dims[0]
    total = lax.reduce_sum(x, (bd,)) if bd is not None else lax.mul(x, lax.full_like(x, n))
    if total.shape[d] % n:
        raise ShapeError(f"lax.psum_scatter: dimension {d} of size {total.shape[d]} does not "
                         f"split over {n} examples")
    # Example k gets the k-th block of the sum along ``scatter_dimension``.
    return (split_dim(total, d, n) if tiled else total), d


# --------------------------------------------------------------------------- ppermute
ppermute_p = primitive("ppermute")


@ppermute_p.def_lowering
def _ppermute_lower(ctx: LoweringContext, x: I, *, axis_name: tuple, perm: tuple) -> I:
    n, groups = _device_groups(axis_name, "lax.ppermute")
    if groups is None:
        return x
    mesh = _mesh_of(axis_name, "lax.ppermute")
    if mesh is not None:        # the permutation within every group, in partition ids
        perm = tuple((g[s], g[t]) for g in mesh.axis_groups(axis_name) for s, t in perm)
    return ctx.b.add_instruction("collective-permute", [x], {
        **_spmd_attrs(axis_name, global_ids=False), "source_target_pairs": perm})


ppermute_p.def_vjp(lambda ct, ans, x, *, axis_name, perm: (
    bind(ppermute_p, ct, axis_name=axis_name, perm=tuple((t, s) for s, t in perm)),))


@ppermute_p.def_batching
def _ppermute_batch(vals, dims, *, axis_name: tuple, perm: tuple) -> tuple:
    trace = applying()
    if axis_name != (trace.axis_name,):
        return bind(ppermute_p, vals[0], axis_name=axis_name, perm=perm), dims[0]
    x = move_to(vals[0], dims[0], 0, trace.axis_size)
    source = {t: s for s, t in perm}
    zero = lax.full_like(x, 0, shape=(1,) + x.shape[1:])
    rows = [lax.slice(x, (source[k],) + (0,) * (x.ndim - 1), (source[k] + 1,) + x.shape[1:])
            if k in source else zero for k in range(trace.axis_size)]
    return lax.concatenate(rows, 0), 0


# -------------------------------------------------------------------------- all_to_all
all_to_all_p = primitive("all_to_all")


@all_to_all_p.def_lowering
def _all_to_all_lower(ctx: LoweringContext, x: I, *, axis_name: tuple, split_axis: int,
                      concat_axis: int, tiled: bool) -> I:
    n, groups = _device_groups(axis_name, "lax.all_to_all")
    b = ctx.b
    dims = list(x.shape.dims)
    s, c = split_axis, concat_axis
    if tiled:                           # split ``s`` into (n, block): the n chunks
        dims[s:s + 1] = [n, dims[s] // n]
        x = b.reshape(x, dims)
    y = x if groups is None else \
        b.add_instruction("all-to-all", [x], {**_spmd_attrs(axis_name, global_ids=False),
                                              "replica_groups": groups, "dimensions": (s,)})
    # ``y``'s axis ``s`` now runs over the source devices: move it to the concat axis.
    order = [i for i in range(len(dims)) if i != s]
    if tiled:
        order.insert(c, s)              # fold it into the concat axis as its major part
        moved = b.transpose(y, order)
        out = [dims[i] for i in order]
        out[c:c + 2] = [out[c] * out[c + 1]]
        return b.reshape(moved, out)
    order.insert(c, s)
    return b.transpose(y, order)


all_to_all_p.def_vjp(lambda ct, ans, x, *, axis_name, split_axis, concat_axis, tiled: (
    bind(all_to_all_p, ct, axis_name=axis_name, split_axis=concat_axis,
         concat_axis=split_axis, tiled=tiled),))


@all_to_all_p.def_batching
def _all_to_all_batch(vals, dims, *, axis_name: tuple, split_axis: int, concat_axis: int,
                      tiled: bool) -> tuple:
    trace = applying()
    n = trace.axis_size
    x = move_to(vals[0], dims[0], 0, n)       # [source example, per-example dims...]
    if axis_name != (trace.axis_name,):
        return bind(all_to_all_p, x, axis_name=axis_name, split_axis=split_axis + 1,
                    concat_axis=concat_axis + 1, tiled=tiled), 0
    if tiled:
        x = split_dim(x, split_axis + 1, n)
    y = moveaxis(x, split_axis + 1, 0)        # [target, source, per-example dims...]
    if tiled:
        return merge_axis_into(y, 1, 1 + concat_axis), 0
    return moveaxis(y, 1, 1 + concat_axis), 0


# -------------------------------------------------------------------------- axis_index
axis_index_p = primitive("axis_index", weak=lambda args, params: False)


@axis_index_p.def_lowering
def _axis_index_lower(ctx: LoweringContext, *, axis_name: tuple) -> I:
    if _device_groups(axis_name, "lax.axis_index")[1] is None:
        return ctx.b.constant(np.int32(0))
    mesh = _mesh_of(axis_name, "lax.axis_index")
    if mesh is None:
        return ctx.b.convert(ctx.b.replica_id(), np.int32)
    # JAX's form: (partition-id / stride) % size along each axis, as s32 (several axes:
    # combined with the first major)
    b = ctx.b
    pid = b.add_instruction("partition-id", [])
    total = None
    for name in axis_name:
        stride, size = mesh.axis_stride(name), mesh.shape[name]
        idx = b.add_instruction("divide", [pid, b.constant(np.uint32(stride))])
        idx = b.add_instruction("remainder", [idx, b.constant(np.uint32(size))])
        total = idx if total is None else b.add_instruction(
            "add", [b.add_instruction("multiply", [total, b.constant(np.uint32(size))]), idx])
    return b.convert(total, np.int32)


axis_index_p.def_vjp(lambda ct, ans, **params: ())


@axis_index_p.def_batching
def _axis_index_batch(vals, dims, *, axis_name: tuple) -> tuple:
    trace = applying()
    if axis_name != (trace.axis_name,):
        return bind(axis_index_p, axis_name=axis_name), None
    return lax.iota(np.int32, trace.axis_size), 0


ALWAYS_RULE.update({"psum", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
                    "all_to_all", "axis_index"})


# ------------------------------------------------------------------------ the lax API
def _leafwise(x: Any, fn: Any) -> Any:
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [fn(to_array(v)) for v in leaves])


def psum(x: Any, axis_name: Any) -> Any:
    """The sum of ``x`` (a pytree of arrays) over the named axis (or tuple of axes)."""
    names = _names(axis_name)
    return _leafwise(x, lambda v: bind(psum_p, v, axis_name=names))


def pmax(x: Any, axis_name: Any) -> Any:
    """The maximum of ``x`` over the named axis (or axes)."""
    names = _names(axis_name)
    return _leafwise(x, lambda v: bind(pmax_p, v, axis_name=names))


def pmin(x: Any, axis_name: Any) -> Any:
    """The minimum of ``x`` over the named axis (or axes)."""
    names = _names(axis_name)
    return _leafwise(x, lambda v: bind(pmin_p, v, axis_name=names))


def axis_size(axis_name: Any) -> int:
    """The size of the named axis (the product over a tuple of names)."""
    size = 1
    for name in _names(axis_name):
        size *= axis_frame(name, "lax.axis_size").size
    return size


def pmean(x: Any, axis_name: Any) -> Any:
    """The mean of ``x`` over the named axis (or axes): ``psum(x) / axis size``."""
    n = axis_size(axis_name)
    return _leafwise(psum(x, axis_name), lambda s: lax.div(s, lax.full_like(s, n)))


def all_gather(x: Any, axis_name: Any, *, axis: int = 0, tiled: bool = False) -> Any:
    """Every participant's ``x`` stacked along a new axis ``axis`` (concatenated along
    ``axis`` when ``tiled``)."""
    names = _gather_names(axis_name, "lax.all_gather")

    def one(v: Array) -> Array:
        a = _axis(axis, v.ndim + (0 if tiled else 1), "lax.all_gather axis")
        return bind(all_gather_p, v, axis_name=names, axis=a, tiled=bool(tiled))
    return _leafwise(x, one)


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0,
                 tiled: bool = False) -> Any:
    """``psum(x)`` with participant k keeping the k-th block along ``scatter_dimension``
    (of size 1, removed, unless ``tiled``)."""
    names = _gather_names(axis_name, "lax.psum_scatter")
    n = axis_size(names)

    def one(v: Array) -> Array:
        d = _axis(scatter_dimension, v.ndim, "lax.psum_scatter scatter_dimension")
        if (v.shape[d] != n) if not tiled else (v.shape[d] % n):
            raise ShapeError(f"lax.psum_scatter: dimension {d} of {v.type_text()} must be "
                             f"{'a multiple of' if tiled else ''} the axis size {n}")
        return bind(psum_scatter_p, v, axis_name=names, scatter_dimension=d,
                    tiled=bool(tiled))
    return _leafwise(x, one)


def ppermute(x: Any, axis_name: Any, perm: Sequence[tuple[int, int]]) -> Any:
    """Send ``x`` from participant ``src`` to ``dst`` for each ``(src, dst)`` in ``perm``;
    participants no pair sends to get zeros."""
    names = _gather_names(axis_name, "lax.ppermute")
    n = axis_size(names)
    pairs = tuple((int(s), int(t)) for s, t in perm)
    srcs, dsts = [s for s, _ in pairs], [t for _, t in pairs]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts) or \
            any(not 0 <= i < n for i in srcs + dsts):
        raise InvalidArgumentError(f"lax.ppermute: perm {list(pairs)} must pair distinct "
                                   f"sources with distinct targets in 0..{n - 1}")
    return _leafwise(x, lambda v: bind(ppermute_p, v, axis_name=names, perm=pairs))


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *,
               tiled: bool = False) -> Any:
    """Split ``x`` along ``split_axis`` into one chunk per participant, send chunk k to
    participant k, and concatenate the received chunks along ``concat_axis`` (untiled:
    ``split_axis`` has the axis size and is replaced by a new axis at ``concat_axis``)."""
    names = _gather_names(axis_name, "lax.all_to_all")
    n = axis_size(names)

    def one(v: Array) -> Array:
        s = _axis(split_axis, v.ndim, "lax.all_to_all split_axis")
        c = _axis(concat_axis, v.ndim, "lax.all_to_all concat_axis")
        if (v.shape[s] % n) if tiled else (v.shape[s] != n):
            raise ShapeError(f"lax.all_to_all: split axis {s} of {v.type_text()} must be "
                             f"{'a multiple of' if tiled else ''} the axis size {n}")
        return bind(all_to_all_p, v, axis_name=names, split_axis=s, concat_axis=c,
                    tiled=bool(tiled))
    return _leafwise(x, one)


def axis_index(axis_name: Any) -> Array:
    """This participant's position along the named axis (an int32 scalar; over several mesh
    axes, the position in their product, the first axis major)."""
    return bind(axis_index_p, axis_name=_gather_names(axis_name, "lax.axis_index"))


def _axis(a: int, ndim: int, what: str) -> int:
    if not -ndim <= a < max(ndim, 1):
        raise InvalidArgumentError(f"{what} {a} is out of range for rank {ndim}")
    return a % max(ndim, 1)


__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
           "all_to_all", "axis_index", "axis_size", "psum_p", "pmax_p", "pmin_p",
           "all_gather_p", "psum_scatter_p", "ppermute_p", "all_to_all_p", "axis_index_p"]
