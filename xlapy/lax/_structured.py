"""``jax.lax``'s structured functions built from primitives: index helpers
(``slice_in_dim``, ``dynamic_slice_in_dim``, ...), shape helpers, cumulative reductions
and ``associative_scan``, generic ``reduce``, ``map``, ``sort_key_val``, ``select_n``,
the scatter variants, ``dot``/``batch_matmul`` and ``ragged_dot``."""
from __future__ import annotations

import enum
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import dtypes, lax
from ..frontend.control_flow import scan
from ..frontend.core import Array, to_array
from ..frontend.pytree import tree_flatten, tree_unflatten
from ..frontend.tracing import concrete_int, concrete_ints


def _axis(axis: int, ndim: int, what: str) -> int:
    a = concrete_int(axis, what)
    if not -ndim <= a < ndim:
        raise InvalidArgumentError(f"lax.{what}: axis {a} out of range for rank {ndim}")
    return a % ndim


# ---------------------------------------------------------------------------- indexing
def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Array:
    """``lax.slice`` along one axis (negative indices count from the end)."""
    x = to_array(operand)
    ax = _axis(axis, x.ndim, "slice_in_dim")
    n = x.shape[ax]
    start = 0 if start_index is None else concrete_int(start_index, "start")
    limit = n if limit_index is None else concrete_int(limit_index, "limit")
    start, limit = (start + n if start < 0 else start), (limit + n if limit < 0 else limit)
    starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    starts[ax], limits[ax], strides[ax] = start, limit, concrete_int(stride, "stride")
    return lax.slice(x, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Array:
    """The ``index``-th slice along ``axis`` (static ``index``)."""
    x = to_array(operand)
    ax = _axis(axis, x.ndim, "index_in_dim")
    i = concrete_int(index, "index")
    i = i + x.shape[ax] if i < 0 else i
    if not 0 <= i < x.shape[ax]:
        raise InvalidArgumentError(f"lax.index_in_dim: index {index} out of bounds for axis "
                                   f"of size {x.shape[ax]}")
    out = slice_in_dim(x, i, i + 1, 1, ax)
    return out if keepdims else lax.reshape(out, x.shape[:ax] + x.shape[ax + 1:])


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int,
                         axis: int = 0) -> Array:
    """``lax.dynamic_slice`` along one axis."""
    x = to_array(operand)
    ax = _axis(axis, x.ndim, "dynamic_slice_in_dim")
    starts: list[Any] = [0] * x.ndim
    sizes = list(x.shape)
    starts[ax], sizes[ax] = start_index, concrete_int(slice_size, "slice_size")
    return lax.dynamic_slice(x, starts, sizes)


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0,
                         keepdims: bool = True) -> Array:
    """The slice at a (traced) ``index`` along ``axis``."""
    x = to_array(operand)
    ax = _axis(axis, x.ndim, "dynamic_index_in_dim")
    out = dynamic_slice_in_dim(x, index, 1, ax)
    return out if keepdims else lax.reshape(out, x.shape[:ax] + x.shape[ax + 1:])


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any,
                                axis: int) -> Array:
    """``lax.dynamic_update_slice`` along one axis."""
    x = to_array(operand)
    ax = _axis(axis, x.ndim, "dynamic_update_slice_in_dim")
    starts: list[Any] = [0] * x.ndim
    starts[ax] = start_index
    return lax.dynamic_update_slice(x, update, starts)


def dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: int) -> Array:
    """Write ``update`` (with or without the ``axis`` dimension) at ``index``."""
    x, u = to_array(operand), to_array(update)
    ax = _axis(axis, x.ndim, "dynamic_update_index_in_dim")
    if u.ndim == x.ndim - 1:
        u = lax.reshape(u, u.shape[:ax] + (1,) + u.shape[ax:])
    return dynamic_update_slice_in_dim(x, u, index, ax)


def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Array:
    """``src[idxs[0], idxs[1], ...]`` along ``axes`` (integer index arrays of one shape)."""
    x = to_array(src)
    axes = concrete_ints(axes, "index_take axes")
    ids = [to_array(i) for i in idxs]
    if len(ids) != len(axes):
        raise InvalidArgumentError("lax.index_take: one index array per axis")
    from ..numpy import stack
    indices = stack([lax.convert_element_type(i, np.int32) for i in ids], axis=-1)
    offset = tuple(range(indices.ndim - 1, indices.ndim - 1 + x.ndim - len(axes)))
    sizes = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return lax.gather(x, indices, offset_dims=offset, collapsed_slice_dims=tuple(sorted(axes)),
                      start_index_map=tuple(axes), index_vector_dim=indices.ndim - 1,
                      slice_sizes=sizes)


# ------------------------------------------------------------------------------- shapes
def expand_dims(array: Any, dimensions: Sequence[int]) -> Array:
    """Insert size-1 dimensions at ``dimensions`` (of the result)."""
    x = to_array(array)
    nd = x.ndim + len(dimensions)
    dims = sorted(d % nd for d in concrete_ints(dimensions, "expand_dims dimensions"))
    shape = list(x.shape)
    for d in dims:
        shape.insert(d, 1)
    return lax.reshape(x, tuple(shape))


def squeeze(array: Any, dimensions: Sequence[int]) -> Array:
    """Remove the size-1 ``dimensions``."""
    x = to_array(array)
    dims = {d % max(x.ndim, 1) for d in concrete_ints(dimensions, "squeeze dimensions")}
    for d in dims:
        if x.shape[d] != 1:
            raise ShapeError(f"lax.squeeze: dimension {d} of {x.type_text()} is not 1")
    return lax.reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in dims))


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, *,
         sharding: Any = None) -> Array:
    """An array of ``shape`` filled with ``fill_value``."""
    v = to_array(fill_value)
    if dtype is not None:
        v = lax.convert_element_type(v, dtype)
    if v.ndim:
        raise InvalidArgumentError(f"lax.full: fill_value must be a scalar, got {v.type_text()}")
    return lax.broadcast_in_dim(v, concrete_ints(shape, "full shape"), ())


def empty(dtype: Any) -> Array:
    """A scalar of ``dtype`` whose value is unspecified (here: 0)."""
    return to_array(np.zeros((), dtypes.canonicalize(dtype)))


def tile(operand: Any, reps: Sequence[int]) -> Array:
    """``operand`` repeated ``reps[i]`` times along each dimension."""
    from ..numpy import tile as _tile
    x = to_array(operand)
    reps = concrete_ints(reps, "tile reps")
    if len(reps) != x.ndim:
        raise InvalidArgumentError(f"lax.tile: {len(reps)} reps for {x.type_text()}")
    return _tile(x, reps)


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Array:
    """Merge dimensions ``[start, stop)`` into one."""
    x = to_array(operand)
    stop = x.ndim if stop_dimension is None else concrete_int(stop_dimension, "stop") % (
        x.ndim + 1)
    start = concrete_int(start_dimension, "start") % max(x.ndim, 1)
    size = int(np.prod(x.shape[start:stop]))
    return lax.reshape(x, x.shape[:start] + (size,) + x.shape[stop:])


def broadcast_to_rank(x: Any, rank: int) -> Array:
    """``x`` with leading size-1 dimensions up to ``rank``."""
    a = to_array(x)
    r = concrete_int(rank, "rank")
    return a if a.ndim >= r else lax.reshape(a, (1,) * (r - a.ndim) + a.shape)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The NumPy broadcast of static shapes."""
    from ..numpy import broadcast_shapes as _bs
    return _bs(*[tuple(s) for s in shapes])


def broadcast_like(x: Any, like: Any) -> Array:
    """``x`` broadcast (NumPy rules) to ``like``'s shape."""
    from ..numpy import broadcast_to
    return broadcast_to(x, to_array(like).shape)


def stack(arrays: Sequence[Any], axis: int = 0) -> Array:
    """Join same-shaped arrays along a new ``axis``."""
    xs = [to_array(a) for a in arrays]
    if not xs:
        raise InvalidArgumentError("lax.stack: need at least one array")
    ax = axis % (xs[0].ndim + 1)
    return lax.concatenate([expand_dims(x, (ax,)) for x in xs], ax)


def unstack(x: Any, axis: int = 0) -> list[Array]:
    """The slices of ``x`` along ``axis``."""
    a = to_array(x)
    ax = _axis(axis, a.ndim, "unstack")
    return [index_in_dim(a, i, ax, keepdims=False) for i in range(a.shape[ax])]


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list[Array]:
    """Consecutive pieces of the given ``sizes`` along ``axis`` (they must add up)."""
    x = to_array(operand)
    ax = _axis(axis, x.ndim, "split")
    sizes = concrete_ints(sizes, "split sizes")
    if sum(sizes) != x.shape[ax]:
        raise InvalidArgumentError(f"lax.split: sizes {sizes} do not add up to "
                                   f"{x.shape[ax]}")
    out, start = [], 0
    for s in sizes:
        out.append(slice_in_dim(x, start, start + s, 1, ax))
        start += s
    return out


def dtype(x: Any, *, canonicalize: bool = False) -> np.dtype:
    """The dtype of ``x`` (Python scalars: their weak default dtype)."""
    return to_array(x).dtype


# -------------------------------------------------------------------- scans, reductions
def _cum(kind: str, doc: str):
    def f(operand: Any, axis: int = 0, reverse: bool = False) -> Array:
        x = to_array(operand)
        ax = _axis(axis, x.ndim, f"cum{kind}")
        if x.shape[ax] == 0:
            return x
        return lax.cumulative(kind, x, ax, reverse)
    f.__name__ = f"cum{kind}"
    f.__doc__ = doc
    return f


cumsum = _cum("sum", "Inclusive cumulative sum along ``axis`` (``reverse``: from the end).")
cumprod = _cum("prod", "Inclusive cumulative product along ``axis``.")
cummax = _cum("max", "Inclusive cumulative maximum along ``axis``.")
cummin = _cum("min", "Inclusive cumulative minimum along ``axis``.")


def associative_scan(fn: Callable[[Any, Any], Any], elems: Any, reverse: bool = False,
                     axis: int = 0) -> Any:
    """All prefix combinations ``fn(... fn(e0, e1) ..., ek)`` of an associative ``fn``
    along ``axis``, in ``O(log n)`` parallel steps (the Blelloch-style odd/even recursion
    JAX uses). ``elems`` may be a pytree of arrays with equal ``axis`` length."""
    leaves, tree = tree_flatten(elems)
    leaves = [to_array(e) for e in leaves]
    if not leaves:
        raise InvalidArgumentError("lax.associative_scan: elems is empty")
    ax = _axis(axis, leaves[0].ndim, "associative_scan")
    n = leaves[0].shape[ax]
    if any(e.shape[ax] != n for e in leaves):
        raise InvalidArgumentError("lax.associative_scan: elems have different lengths")
    if reverse:
        leaves = [lax.rev(e, (ax,)) for e in leaves]

    def combine(a: list[Array], b: list[Array]) -> list[Array]:
        out, _ = tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        return [to_array(o) for o in out]

    def sl(e: Array, start: int, stop: int | None, step: int) -> Array:
        return slice_in_dim(e, start, stop, step, ax)

    def scan_(xs: list[Array]) -> list[Array]:
        m = xs[0].shape[ax]
        if m < 2:
            return xs
        reduced = combine([sl(e, 0, m - 1, 2) for e in xs], [sl(e, 1, None, 2) for e in xs])
        odd = scan_(reduced)
        if m % 2 == 0:
            even = combine([sl(e, 0, -1, 1) for e in odd], [sl(e, 2, None, 2) for e in xs])
        else:
            even = combine(odd, [sl(e, 2, None, 2) for e in xs])
        even = [lax.concatenate([sl(x0, 0, 1, 1), e], ax) for x0, e in zip(xs, even)]
        return [_interleave(e, o, ax) for e, o in zip(even, odd)]

    out = scan_(leaves)
    if reverse:
        out = [lax.rev(e, (ax,)) for e in out]
    return tree_unflatten(tree, out)


def _interleave(a: Array, b: Array, axis: int) -> Array:
    """``a0 b0 a1 b1 ...`` along ``axis`` (``len(a) - len(b)`` is 0 or 1)."""
    pad_a = [(0, 0, 0)] * a.ndim
    pad_a[axis] = (0, 1 if a.shape[axis] == b.shape[axis] else 0, 1)
    pad_b = [(0, 0, 0)] * b.ndim
    pad_b[axis] = (1, 0 if a.shape[axis] == b.shape[axis] else 1, 1)
    zero_a = lax.full_like(a, 0, shape=())
    zero_b = lax.full_like(b, 0, shape=())
    if a.dtype == np.bool_:
        return lax.bitwise_or(lax.pad(a, zero_a, pad_a), lax.pad(b, zero_b, pad_b))
    return lax.add(lax.pad(a, zero_a, pad_a), lax.pad(b, zero_b, pad_b))


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Array:
    """Inclusive cumulative ``log(sum(exp))`` along ``axis`` (stable at each step)."""
    x = to_array(operand)
    if not dtypes.is_float(x.dtype):
        raise InvalidArgumentError(f"lax.cumlogsumexp takes a floating operand, got "
                                   f"{x.type_text()}")

    def logaddexp(a: Array, b: Array) -> Array:
        m = lax.max(a, b)
        finite = lax.is_finite(m)
        safe = lax.select(finite, m, lax.full_like(m, 0))
        s = lax.add(lax.exp(lax.sub(a, safe)), lax.exp(lax.sub(b, safe)))
        return lax.select(finite, lax.add(safe, lax.log(s)), m)
    if x.shape[_axis(axis, x.ndim, "cumlogsumexp")] == 0:
        return x
    return associative_scan(logaddexp, x, reverse, axis)


_MONOIDS = {"add": "sum", "mul": "prod", "max": "max", "min": "min"}


def reduce(operands: Any, init_values: Any, computation: Callable[..., Any],
           dimensions: Sequence[int]) -> Any:
    """Reduce ``operands`` over ``dimensions`` with ``computation`` from ``init_values``.
    The lax monoids (``lax.add``, ``mul``, ``max``, ``min``, ``bitwise_and/or/xor``)
    become XLA reductions; any other ``computation`` must be associative and commutative
    and is applied as a tree of elementwise steps (operands may be a pytree)."""
    dims = tuple(sorted(concrete_ints(dimensions, "reduce dimensions")))
    leaves, tree = tree_flatten(operands)
    inits, itree = tree_flatten(init_values)
    xs = [to_array(x) for x in leaves]
    inits = [to_array(i) for i in inits]
    if len(xs) != len(inits):
        raise InvalidArgumentError("lax.reduce: operands and init_values differ in structure")
    name = getattr(computation, "__name__", "")
    if len(xs) == 1 and computation in (lax.add, lax.mul, lax.max, lax.min):
        out = getattr(lax, f"reduce_{_MONOIDS[name]}")(xs[0], dims)
        op = computation
        return tree_unflatten(tree, [op(out, lax.broadcast_in_dim(inits[0], out.shape, ()))])
    for d in reversed(dims):
        xs = _tree_fold(computation, tree, xs, d)
    init_b = [lax.broadcast_in_dim(i, x.shape, ()) for i, x in zip(inits, xs)]
    res, _ = tree_flatten(computation(tree_unflatten(tree, xs), tree_unflatten(itree, init_b)))
    return tree_unflatten(tree, [to_array(r) for r in res])


def _tree_fold(fn: Callable[..., Any], tree: Any, xs: list[Array], axis: int) -> list[Array]:
    """Combine the slices along ``axis`` pairwise until one is left (dimension removed)."""
    while xs[0].shape[axis] > 1:
        m = xs[0].shape[axis]
        half = m // 2
        a = [slice_in_dim(x, 0, half, 1, axis) for x in xs]
        b = [slice_in_dim(x, half, 2 * half, 1, axis) for x in xs]
        res, _ = tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        res = [to_array(r) for r in res]
        if m % 2:
            res = [lax.concatenate([r, slice_in_dim(x, m - 1, m, 1, axis)], axis)
                   for r, x in zip(res, xs)]
        xs = res
    if xs[0].shape[axis] == 0:
        raise InvalidArgumentError("lax.reduce: reducing an empty dimension with a custom "
                                   "computation is not supported")
    return [lax.reshape(x, x.shape[:axis] + x.shape[axis + 1:]) for x in xs]


def reduce_xor(operand: Any, axes: Sequence[int]) -> Array:
    """Bitwise/logical exclusive or over ``axes``."""
    x = to_array(operand)
    dims = tuple(sorted(concrete_ints(axes, "reduce_xor axes")))
    zero = lax.full_like(x, 0, shape=())
    return reduce(x, zero, lax.bitwise_xor, dims)


def map(f: Callable[[Any], Any], xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001
    """``f`` applied to each leading slice of ``xs`` (a ``scan`` over them)."""
    if batch_size is not None:
        raise InvalidArgumentError("lax.map: batch_size is not supported (it needs vmap)")
    _, ys = scan(lambda c, x: (c, f(x)), None, xs)
    return ys


def sort_key_val(keys: Any, values: Any, dimension: int = -1,
                 is_stable: bool = True) -> tuple[Array, Array]:
    """Sort ``keys`` along ``dimension`` and permute ``values`` alike."""
    k, v = lax.sort([to_array(keys), to_array(values)], dimension, is_stable)
    return k, v


def select_n(which: Any, *cases: Any) -> Array:
    """``cases[which]`` elementwise (``which`` boolean for two cases, else int32)."""
    w = to_array(which)
    cs = [to_array(c) for c in cases]
    if not cs:
        raise InvalidArgumentError("lax.select_n: need at least one case")
    if any(c.shape != cs[0].shape or c.dtype != cs[0].dtype for c in cs):
        raise InvalidArgumentError("lax.select_n: cases must have one shape and dtype")
    if w.shape not in ((), cs[0].shape):
        raise InvalidArgumentError(f"lax.select_n: which {w.type_text()} must be a scalar or "
                                   f"have the cases' shape {cs[0].shape}")
    if w.shape == () and cs[0].shape != ():
        w = lax.broadcast_in_dim(w, cs[0].shape, ())
    if len(cs) == 1:
        return cs[0]
    if w.dtype == np.bool_:
        if len(cs) != 2:
            raise InvalidArgumentError("lax.select_n: a boolean which selects from 2 cases")
        return lax.select(w, cs[1], cs[0])
    if not dtypes.is_integer(w.dtype):
        raise InvalidArgumentError(f"lax.select_n: which must be bool or int, got {w.dtype}")
    w = lax.convert_element_type(w, np.int32)
    out = cs[-1]
    for i in range(len(cs) - 2, -1, -1):
        out = lax.select(lax.eq(w, lax.full_like(w, i)), cs[i], out)
    return out


# ------------------------------------------------------------------------------ scatter
class GatherScatterMode(enum.Enum):
    """How out-of-bounds indices behave: ``CLIP`` (clamped), ``FILL_OR_DROP`` (gathers
    read the fill value, scatters drop the update), ``PROMISE_IN_BOUNDS``, ``ONE_HOT``."""
    CLIP = 0
    FILL_OR_DROP = 1
    PROMISE_IN_BOUNDS = 2
    ONE_HOT = 3

    @staticmethod
    def from_any(s: Any) -> "GatherScatterMode":
        if isinstance(s, GatherScatterMode):
            return s
        if s is None:
            return GatherScatterMode.FILL_OR_DROP
        try:
            return GatherScatterMode[str(s).upper()]
        except KeyError:
            raise InvalidArgumentError(f"unknown gather/scatter mode {s!r}") from None


class GatherDimensionNumbers(NamedTuple):
    """XLA's gather dimension numbers (JAX's field names)."""
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """XLA's scatter dimension numbers (JAX's field names)."""
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


def _scatter(combiner: str, operand: Any, scatter_indices: Any, updates: Any,
             dimension_numbers: ScatterDimensionNumbers, mode: Any) -> Array:
    dn = dimension_numbers
    if dn.operand_batching_dims or dn.scatter_indices_batching_dims:
        raise InvalidArgumentError("lax.scatter: batching dims are not supported")
    x, idx = to_array(operand), to_array(scatter_indices)
    m = GatherScatterMode.from_any(mode)
    if m == GatherScatterMode.CLIP:
        window = [d for i, d in enumerate(x.shape)]
        upd = to_array(updates)
        sizes = [1 if i in dn.inserted_window_dims else None for i in range(x.ndim)]
        wins = iter(upd.shape[d] for d in dn.update_window_dims)
        for i in range(x.ndim):
            if sizes[i] is None:
                sizes[i] = next(wins)
        hi = np.array([window[o] - sizes[o] for o in dn.scatter_dims_to_operand_dims], np.int32)
        bound = lax.broadcast_in_dim(to_array(hi), idx.shape, (idx.ndim - 1,))
        idx = lax.clamp(lax.full_like(bound, 0), lax.convert_element_type(idx, np.int32), bound)
    return lax.scatter(x, idx, updates, update_window_dims=dn.update_window_dims,
                       inserted_window_dims=dn.inserted_window_dims,
                       scatter_dims_to_operand_dims=dn.scatter_dims_to_operand_dims,
                       index_vector_dim=idx.ndim - 1, combiner=combiner)


def _scatter_fn(combiner: str, doc: str):
    def f(operand: Any, scatter_indices: Any, updates: Any,
          dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
          unique_indices: bool = False, mode: Any = None) -> Array:
        u = to_array(updates)
        if combiner == "sub":
            return _scatter("add", operand, scatter_indices, lax.neg(u), dimension_numbers,
                            mode)
        return _scatter(combiner, operand, scatter_indices, u, dimension_numbers, mode)
    f.__name__ = f"scatter_{combiner}"
    f.__doc__ = doc
    return f


scatter_add = _scatter_fn("add", "Scatter that adds the updates (duplicates accumulate).")
scatter_sub = _scatter_fn("sub", "Scatter that subtracts the updates.")
scatter_mul = _scatter_fn("mul", "Scatter that multiplies by the updates.")
scatter_min = _scatter_fn("min", "Scatter that takes the minimum with the updates.")
scatter_max = _scatter_fn("max", "Scatter that takes the maximum with the updates.")


def scatter_apply(operand: Any, scatter_indices: Any, func: Callable[[Array], Array],
                  dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False,
                  unique_indices: bool = False, mode: Any = None) -> Array:
    """``operand`` with ``func`` applied to the elements the indices select (each selected
    element once, however often it is indexed)."""
    x = to_array(operand)
    ones = lax.broadcast_in_dim(to_array(np.ones((), np.int32)),
                                tuple(update_shape), ())
    hit = _scatter("max", lax.full_like(x, 0, dtype=np.int32), scatter_indices, ones,
                   dimension_numbers, mode)
    return lax.select(lax.ne(hit, lax.full_like(hit, 0)), to_array(func(x)), x)


# ---------------------------------------------------------------------------- products
class Precision(enum.Enum):
    """Accepted for JAX compatibility; xlapy computes dots in the operands' precision
    (``HIGHEST``) whatever is asked."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2


def dot(lhs: Any, rhs: Any, precision: Any = None,
        preferred_element_type: Any = None) -> Array:
    """Vector/matrix products of rank-1 and rank-2 operands of one dtype (XLA ``Dot``)."""
    a, b = to_array(lhs), to_array(rhs)
    if a.ndim not in (1, 2) or b.ndim not in (1, 2) or a.shape[-1] != b.shape[0]:
        raise ShapeError(f"lax.dot: incompatible shapes {a.type_text()} and {b.type_text()}")
    return lax.dot_general(a, b, (((a.ndim - 1,), (0,)), ((), ())),
                           preferred_element_type=preferred_element_type)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Array:
    """Matrix products over equal leading batch dimensions."""
    a, b = to_array(lhs), to_array(rhs)
    if a.ndim < 2 or a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2] \
            or a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"lax.batch_matmul: incompatible shapes {a.type_text()} and "
                         f"{b.type_text()}")
    batch = tuple(range(a.ndim - 2))
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), (batch, batch)))


def ragged_dot(lhs: Any, rhs: Any, group_sizes: Any, precision: Any = None,
               preferred_element_type: Any = None, group_offset: Any = None) -> Array:
    """``lhs[m, k] @ rhs[g, k, n]`` where consecutive row groups of ``lhs`` (sizes
    ``group_sizes[g]``) use their own ``rhs[g]``; rows past the groups give zeros."""
    a, b, gs = to_array(lhs), to_array(rhs), to_array(group_sizes)
    if a.ndim != 2 or b.ndim != 3 or gs.ndim != 1 or b.shape[0] != gs.shape[0] \
            or a.shape[1] != b.shape[1]:
        raise ShapeError(f"lax.ragged_dot: expected lhs[m,k], rhs[g,k,n], group_sizes[g], "
                         f"got {a.type_text()}, {b.type_text()}, {gs.type_text()}")
    if group_offset is not None:
        raise InvalidArgumentError("lax.ragged_dot: group_offset is not supported")
    ends = lax.cumulative("sum", lax.convert_element_type(gs, np.int32), 0)
    rows = lax.iota(np.int32, a.shape[0])
    out = None
    for g in range(b.shape[0]):
        hi = lax.broadcast_in_dim(lax.slice(ends, (g,), (g + 1,)), (a.shape[0],), (0,))
        lo = lax.sub(hi, lax.broadcast_in_dim(lax.slice(lax.convert_element_type(gs, np.int32),
                                                        (g,), (g + 1,)), (a.shape[0],), (0,)))
        mask = lax.bitwise_and(lax.ge(rows, lo), lax.lt(rows, hi))
        prod = lax.dot_general(a, lax.reshape(lax.slice(b, (g, 0, 0), (g + 1,) + b.shape[1:]),
                                              b.shape[1:]), (((1,), (0,)), ((), ())),
                               preferred_element_type=preferred_element_type)
        m2 = lax.broadcast_in_dim(mask, prod.shape, (0,))
        part = lax.select(m2, prod, lax.full_like(prod, 0))
        out = part if out is None else lax.add(out, part)
    return out
