"""Reverse-mode rules (``prim.vjp``) for the primitives of ``primitives.py``.

A rule is ``vjp(ct, ans, *args, **params) -> tuple`` with one cotangent per operand
(``None`` for operands that take no gradient: integer indices, predicates). Rules use
``lax`` ops only, so the backward pass traces under ``jit`` and is differentiable again.
The formulas follow JAX's (``jax/_src/lax/lax.py``, ``slicing.py``); choices where JAX
has several:

- ``max``/``min`` (elementwise and reductions) split the gradient evenly among ties.
- ``cummax``/``cummin`` give it to the first position that reached the running extreme.
- ``gather``'s cotangent is a scatter-add at the *clamped* start indices (gather clamps,
  so every gathered element's gradient lands where it was read from).
- ``scatter`` with ``mul``/``min``/``max`` combiners assumes the scattered positions are
  distinct for the updates' gradient (as JAX does).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import dtypes, lax
from . import primitives as P
from .core import Array, to_array


# ----------------------------------------------------------------------------- helpers
def _zeros(like: Array) -> Array:
    return lax.full_like(like, 0)


_f = lax.full_like      # ``_f(x, v)``: the scalar ``v`` with ``x``'s shape and dtype


def _where(pred: Array, a: Array, b: Array) -> Array:
    return lax.select(pred, a, b)


def _bool_to(x: Array, like: Array) -> Array:
    return lax.convert_element_type(x, like.dtype)


def defvjp(prim: Any, rule: Any) -> None:
    prim.vjp = rule


# ------------------------------------------------------------------------- elementwise
_UNARY: dict[str, Any] = {
    "neg": lambda g, ans, x: lax.neg(g),
    "exp": lambda g, ans, x: lax.mul(g, ans),
    "expm1": lambda g, ans, x: lax.mul(g, lax.add(ans, _f(ans, 1))),
    "log": lambda g, ans, x: lax.div(g, x),
    "log1p": lambda g, ans, x: lax.div(g, lax.add(x, _f(x, 1))),
    "sqrt": lambda g, ans, x: lax.div(g, lax.mul(_f(ans, 2), ans)),
    "rsqrt": lambda g, ans, x: lax.mul(g, lax.mul(_f(x, -0.5), lax.div(ans, x))),
    "cbrt": lambda g, ans, x: lax.div(g, lax.mul(_f(ans, 3), lax.mul(ans, ans))),
    "tanh": lambda g, ans, x: lax.mul(g, lax.sub(_f(ans, 1), lax.mul(ans, ans))),
    "sin": lambda g, ans, x: lax.mul(g, lax.cos(x)),
    "cos": lambda g, ans, x: lax.neg(lax.mul(g, lax.sin(x))),
    "tan": lambda g, ans, x: lax.mul(g, lax.add(_f(ans, 1), lax.mul(ans, ans))),
    "logistic": lambda g, ans, x: lax.mul(g, lax.mul(ans, lax.sub(_f(ans, 1), ans))),
    "erf": lambda g, ans, x: lax.mul(g, lax.mul(_f(x, 2 / np.sqrt(np.pi)),
                                                lax.exp(lax.neg(lax.mul(x, x))))),
    "real": lambda g, ans, x: lax.complex(g, _zeros(g)),
    "imag": lambda g, ans, x: lax.complex(_zeros(g), lax.neg(g)),
}
_ZERO_GRAD = ("sign", "floor", "ceil", "round", "round_even")


def _abs_vjp(g: Array, ans: Array, x: Array) -> tuple:
    if np.dtype(x.dtype).kind == "c":
        safe = _where(lax.eq(ans, _zeros(ans)), _f(ans, 1), ans)
        conj = lax.complex(lax.real(x), lax.neg(lax.imag(x)))
        unit = lax.div(conj, lax.complex(safe, _zeros(safe)))
        return (lax.mul(lax.complex(g, _zeros(g)), unit),)
    return (lax.mul(g, lax.sign(x)),)


def _unary(fn: Any) -> Any:
    return lambda g, ans, x: (fn(g, ans, x),)


for _name, _fn in _UNARY.items():
    defvjp(P.unary_p[_name], _unary(_fn))
for _name in _ZERO_GRAD:
    defvjp(P.unary_p[_name], lambda g, ans, x: (_zeros(x),))
defvjp(P.unary_p["abs"], _abs_vjp)
for _name in ("not", "is_finite", "population_count", "clz"):
    defvjp(P.unary_p[_name], lambda g, ans, x: (None,))


def _div_vjp(g: Array, ans: Array, x: Array, y: Array) -> tuple:
    return lax.div(g, y), lax.neg(lax.mul(g, lax.div(x, lax.mul(y, y))))


def _rem_vjp(g: Array, ans: Array, x: Array, y: Array) -> tuple:
    q = lax.div(x, y)
    return g, lax.mul(lax.neg(g), lax.mul(lax.sign(q), lax.floor(lax.abs(q))))


def _pow_vjp(g: Array, ans: Array, x: Array, y: Array) -> tuple:
    zero_y = lax.eq(y, _zeros(y))
    # d/dx x^y = y * x^(y-1), defined as 0 where y == 0 (also at x == 0).
    dx = _where(zero_y, _zeros(x), lax.mul(y, lax.pow(x, lax.sub(y, _f(y, 1)))))
    # d/dy x^y = log(x) * x^y, defined as 0 where x == 0.
    zero_x = lax.eq(x, _zeros(x))
    safe_x = _where(zero_x, _f(x, 1), x)
    dy = _where(zero_x, _zeros(y), lax.mul(lax.log(safe_x), ans))
    return lax.mul(g, dx), lax.mul(g, dy)


def _minmax_vjp(pick_x: str) -> Any:
    def rule(g: Array, ans: Array, x: Array, y: Array) -> tuple:
        cmp = lax.gt if pick_x == "gt" else lax.lt
        wx = lax.add(_bool_to(cmp(x, y), g), lax.mul(_f(g, 0.5), _bool_to(lax.eq(x, y), g)))
        return lax.mul(g, wx), lax.mul(g, lax.sub(_f(g, 1), wx))
    return rule


def _atan2_vjp(g: Array, ans: Array, x: Array, y: Array) -> tuple:
    denom = lax.add(lax.mul(x, x), lax.mul(y, y))
    return lax.mul(g, lax.div(y, denom)), lax.neg(lax.mul(g, lax.div(x, denom)))


_BINARY: dict[str, Any] = {
    "add": lambda g, ans, x, y: (g, g),
    "sub": lambda g, ans, x, y: (g, lax.neg(g)),
    "mul": lambda g, ans, x, y: (lax.mul(g, y), lax.mul(g, x)),
    "div": _div_vjp, "rem": _rem_vjp, "pow": _pow_vjp, "atan2": _atan2_vjp,
    "max": _minmax_vjp("gt"), "min": _minmax_vjp("lt"),
    "complex": lambda g, ans, x, y: (lax.real(g), lax.imag(lax.neg(g))),
}
for _name, _fn in _BINARY.items():
    defvjp(P.binary_p[_name], _fn)
for _name in ("and", "or", "xor", "shift_left", "shift_right_arithmetic",
              "shift_right_logical"):
    defvjp(P.binary_p[_name], lambda g, ans, x, y: (None, None))

defvjp(P.compare_p, lambda g, ans, x, y, **kw: (None, None))
defvjp(P.select_p, lambda g, ans, p, t, f: (None, _where(p, g, _zeros(g)),
                                            _where(p, _zeros(g), g)))


def _clamp_vjp(g: Array, ans: Array, lo: Array, x: Array, hi: Array) -> tuple:
    lo_b = lax.broadcast_in_dim(lo, x.shape, ()) if lo.shape != x.shape else lo
    hi_b = lax.broadcast_in_dim(hi, x.shape, ()) if hi.shape != x.shape else hi
    # Exactly one operand is the result: x inside [lo, hi], else lo below, else hi.
    z = _zeros(g)
    x_wins = lax.bitwise_and(lax.le(lo_b, x), lax.le(x, hi_b))
    hi_wins = lax.lt(hi_b, lax.max(x, lo_b))
    lo_wins = lax.bitwise_and(lax.bitwise_not(x_wins), lax.bitwise_not(hi_wins))
    g_x = _where(x_wins, g, z)
    g_lo = _where(lo_wins, g, z)
    g_hi = _where(hi_wins, g, z)

    def fit(c: Array, like: Array) -> Array:
        return lax.reduce_sum(c, tuple(range(c.ndim))) if like.shape != c.shape else c
    return fit(g_lo, lo), g_x, fit(g_hi, hi)


defvjp(P.clamp_p, _clamp_vjp)


def _convert_vjp(g: Array, ans: Array, x: Array, *, new_dtype: Any, weak_type: bool) -> tuple:
    if not (dtypes.is_float(x.dtype) or np.dtype(x.dtype).kind == "c"):
        return (None,)
    if np.dtype(g.dtype).kind == "c" and np.dtype(x.dtype).kind != "c":
        g = lax.real(g)
    return (lax.convert_element_type(g, x.dtype, x.weak_type),)


defvjp(P.convert_element_type_p, _convert_vjp)
defvjp(P.bitcast_convert_type_p, lambda g, ans, x, *, new_dtype: (None,))
# d/dx erfinv(x) = sqrt(pi)/2 * exp(erfinv(x)**2)
defvjp(P.erf_inv_p, lambda g, ans, x: (lax.mul(g, lax.mul(_f(ans, np.sqrt(np.pi) / 2),
                                                          lax.exp(lax.mul(ans, ans)))),))


# ------------------------------------------------------------------------ data movement
def _broadcast_vjp(g: Array, ans: Array, x: Array, *, shape: Sequence[int],
                   broadcast_dimensions: Sequence[int]) -> tuple:
    bdims = list(broadcast_dimensions)
    summed = [d for d in range(len(shape)) if d not in bdims]
    summed += [bdims[i] for i in range(x.ndim) if x.shape[i] == 1 and shape[bdims[i]] != 1]
    r = lax.reduce_sum(g, tuple(summed)) if summed else g
    return (lax.reshape(r, x.shape),)


defvjp(P.broadcast_in_dim_p, _broadcast_vjp)
defvjp(P.reshape_p, lambda g, ans, x, *, new_sizes: (lax.reshape(g, x.shape),))
defvjp(P.transpose_p, lambda g, ans, x, *, permutation:
       (lax.transpose(g, tuple(int(i) for i in np.argsort(permutation))),))
defvjp(P.rev_p, lambda g, ans, x, *, dimensions: (lax.rev(g, dimensions),))


def _slice_vjp(g: Array, ans: Array, x: Array, *, start_indices, limit_indices,
               strides) -> tuple:
    strides = strides or (1,) * x.ndim
    if g.size == 0:
        return (_zeros(x),)
    config = []
    for d in range(x.ndim):
        last = start_indices[d] + (g.shape[d] - 1) * strides[d]
        config.append((start_indices[d], x.shape[d] - last - 1, strides[d] - 1))
    return (lax.pad(g, to_array(np.zeros((), g.dtype)), config),)


defvjp(P.slice_p, _slice_vjp)


def _dynamic_slice_vjp(g: Array, ans: Array, x: Array, *idx: Array, slice_sizes) -> tuple:
    return (lax.dynamic_update_slice(_zeros(x), g, list(idx)),) + (None,) * len(idx)


def _dynamic_update_slice_vjp(g: Array, ans: Array, x: Array, u: Array, *idx: Array) -> tuple:
    g_x = lax.dynamic_update_slice(g, _zeros(u), list(idx))
    g_u = lax.dynamic_slice(g, list(idx), u.shape)
    return (g_x, g_u) + (None,) * len(idx)


defvjp(P.dynamic_slice_p, _dynamic_slice_vjp)
defvjp(P.dynamic_update_slice_p, _dynamic_update_slice_vjp)


def _concatenate_vjp(g: Array, ans: Array, *xs: Array, dimension: int) -> tuple:
    out, start = [], 0
    for x in xs:
        lo = [0] * g.ndim
        hi = list(g.shape)
        lo[dimension], hi[dimension] = start, start + x.shape[dimension]
        out.append(lax.slice(g, lo, hi))
        start += x.shape[dimension]
    return tuple(out)


defvjp(P.concatenate_p, _concatenate_vjp)


def _pad_vjp(g: Array, ans: Array, x: Array, v: Array, *, padding_config) -> tuple:
    lo, hi, interior = zip(*padding_config)
    zero = to_array(np.zeros((), g.dtype))
    unpadded = lax.pad(g, zero, [(-a, -b, 0) for a, b in zip(lo, hi)])
    g_x = lax.slice(unpadded, [0] * g.ndim, unpadded.shape, [i + 1 for i in interior])
    total = lambda t: lax.reduce_sum(t, tuple(range(t.ndim)))  # noqa: E731
    g_v = lax.sub(total(g), total(g_x)) if g.ndim else _zeros(v)
    return g_x, g_v


defvjp(P.pad_p, _pad_vjp)
defvjp(P.iota_p, lambda g, ans, **kw: ())


# ------------------------------------------------------------------------ gather/scatter
def _clamped_gather_indices(x: Array, idx: Array, start_index_map: Sequence[int],
                            index_vector_dim: int, slice_sizes: Sequence[int]) -> Array:
    """``idx`` clamped the way gather clamps its start indices."""
    hi = np.array([x.shape[d] - slice_sizes[d] for d in start_index_map], idx.dtype)
    if index_vector_dim == idx.ndim:
        bound = lax.broadcast_in_dim(to_array(hi[0]), idx.shape, ())
    else:
        bound = lax.broadcast_in_dim(to_array(hi), idx.shape, (index_vector_dim,))
    return lax.clamp(_zeros(idx), idx, bound)


def _gather_vjp(g: Array, ans: Array, x: Array, idx: Array, *, offset_dims,
                collapsed_slice_dims, start_index_map, index_vector_dim,
                slice_sizes) -> tuple:
    safe = _clamped_gather_indices(x, idx, start_index_map, index_vector_dim, slice_sizes)
    g_x = lax.scatter(_zeros(x), safe, g, update_window_dims=offset_dims,
                      inserted_window_dims=collapsed_slice_dims,
                      scatter_dims_to_operand_dims=start_index_map,
                      index_vector_dim=index_vector_dim, combiner="add")
    return g_x, None


defvjp(P.gather_p, _gather_vjp)


def _scatter_gather(t: Array, x: Array, idx: Array, upd: Array, update_window_dims,
                    inserted_window_dims, scatter_dims_to_operand_dims,
                    index_vector_dim) -> Array:
    """``t`` read at the places scatter wrote ``upd`` (the updates' shape)."""
    sizes, pos = [], 0
    for d in range(x.ndim):
        if d in inserted_window_dims:
            sizes.append(1)
        else:
            sizes.append(upd.shape[update_window_dims[pos]])
            pos += 1
    return lax.gather(t, idx, offset_dims=update_window_dims,
                      collapsed_slice_dims=inserted_window_dims,
                      start_index_map=scatter_dims_to_operand_dims,
                      index_vector_dim=index_vector_dim, slice_sizes=sizes)


def _update_ids(upd: Array, dims: dict) -> Array:
    """1-based ids of the update elements' scatter positions (windows share one id)."""
    window = set(dims["update_window_dims"])
    scatter_dims = [d for d in range(upd.ndim) if d not in window]
    shape = tuple(upd.shape[d] for d in scatter_dims)
    n = int(np.prod(shape, dtype=np.int64))
    one = lax.broadcast_in_dim(to_array(np.int32(1)), (n,), ())
    ids = lax.reshape(lax.add(lax.iota(np.int32, n), one), shape) if shape else \
        to_array(np.int32(1))
    return lax.broadcast_in_dim(ids, upd.shape, tuple(scatter_dims))


def _scatter_vjp(g: Array, ans: Array, x: Array, idx: Array, upd: Array, *,
                 update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
                 index_vector_dim, combiner: str) -> tuple:
    dims = dict(update_window_dims=update_window_dims, inserted_window_dims=inserted_window_dims,
                scatter_dims_to_operand_dims=scatter_dims_to_operand_dims,
                index_vector_dim=index_vector_dim)

    def read(t: Array) -> Array:
        return _scatter_gather(t, x, idx, upd, **dims)

    # Which updates took effect: scatter each update's id (out-of-bounds updates are
    # dropped) and read the ids back; for ``set`` only the one written last survives.
    ids = _update_ids(upd, dims)
    zero_ids = lax.broadcast_in_dim(to_array(np.int32(0)), x.shape, ())
    landed = lax.eq(read(lax.scatter(zero_ids, idx, ids, combiner="set", **dims)), ids) \
        if combiner == "set" else _in_bounds(idx, x, upd, dims)
    z_u = _zeros(upd)
    if combiner == "add":
        return g, None, _where(landed, read(g), z_u)
    if combiner == "set":
        return lax.scatter(g, idx, z_u, combiner="set", **dims), None, \
            _where(landed, read(g), z_u)
    if combiner == "mul":
        g_x = lax.scatter(g, idx, upd, combiner="mul", **dims)
        return g_x, None, _where(landed, read(lax.mul(g, x)), z_u)
    # min / max: the gradient is shared among the operand and updates equal to the result.
    hit_x = _bool_to(lax.eq(x, ans), x)
    hit_u = _where(landed, _bool_to(lax.eq(upd, read(ans)), upd), z_u)
    count = lax.add(hit_x, lax.scatter(_zeros(x), idx, hit_u, combiner="add", **dims))
    share = lax.div(g, _where(lax.eq(count, _zeros(count)), _f(count, 1), count))
    return lax.mul(share, hit_x), None, lax.mul(read(share), hit_u)


def _in_bounds(idx: Array, x: Array, upd: Array, dims: dict) -> Array:
    """Per update element: whether its window lies inside the operand (else dropped)."""
    window_sizes, pos = [], 0
    for d in range(x.ndim):
        if d in dims["inserted_window_dims"]:
            window_sizes.append(1)
        else:
            window_sizes.append(upd.shape[dims["update_window_dims"][pos]])
            pos += 1
    ivd = dims["index_vector_dim"]
    vec = idx if ivd < idx.ndim else lax.reshape(idx, idx.shape + (1,))
    hi = np.array([x.shape[d] - window_sizes[d] for d in dims["scatter_dims_to_operand_dims"]],
                  idx.dtype)
    axis = ivd if ivd < idx.ndim else idx.ndim
    bound = lax.broadcast_in_dim(to_array(hi), vec.shape, (axis,))
    ok = lax.bitwise_and(lax.ge(vec, _zeros(vec)), lax.le(vec, bound))
    ok = lax.reduce_and(ok, (axis,))                     # the batch shape of the updates
    window = set(dims["update_window_dims"])
    scatter_dims = tuple(d for d in range(upd.ndim) if d not in window)
    return lax.broadcast_in_dim(ok, upd.shape, scatter_dims)


defvjp(P.scatter_p, _scatter_vjp)


# --------------------------------------------------------------------------- reductions
def _kept_dims(ndim: int, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(d for d in range(ndim) if d not in axes)


def _expand(t: Array, x: Array, axes: Sequence[int]) -> Array:
    return lax.broadcast_in_dim(t, x.shape, _kept_dims(x.ndim, axes))


defvjp(P.reduce_p["sum"], lambda g, ans, x, *, axes: (_expand(g, x, axes),))


def _reduce_extreme_vjp(g: Array, ans: Array, x: Array, *, axes) -> tuple:
    hits = _bool_to(lax.eq(x, _expand(ans, x, axes)), x)
    counts = lax.reduce_sum(hits, axes)
    return (lax.mul(_expand(lax.div(g, counts), x, axes), hits),)


defvjp(P.reduce_p["max"], _reduce_extreme_vjp)
defvjp(P.reduce_p["min"], _reduce_extreme_vjp)
defvjp(P.reduce_p["and"], lambda g, ans, x, *, axes: (None,))
defvjp(P.reduce_p["or"], lambda g, ans, x, *, axes: (None,))


def _exclusive_cumprod(x: Array, axis: int, reverse: bool) -> Array:
    """Products of the elements strictly before (after, when ``reverse``) each one."""
    inclusive = lax.cumulative("prod", x, axis, reverse)
    n = x.shape[axis]
    cfg = [(0, 0, 0)] * x.ndim
    cfg[axis] = (0, 1, 0) if reverse else (1, 0, 0)
    shifted = lax.pad(inclusive, to_array(np.ones((), x.dtype)), cfg)
    lo = [0] * x.ndim
    lo[axis] = 1 if reverse else 0
    hi = list(x.shape)
    hi[axis] = n + 1 if reverse else n
    return lax.slice(shifted, lo, hi)


def _reduce_prod_vjp(g: Array, ans: Array, x: Array, *, axes) -> tuple:
    # Move the reduced axes last, flatten them, and multiply the exclusive products from
    # both sides: exact where x has zeros (no division by x).
    kept = _kept_dims(x.ndim, axes)
    perm = kept + tuple(axes)
    xt = lax.transpose(x, perm)
    kept_shape = tuple(x.shape[d] for d in kept)
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    flat = lax.reshape(xt, kept_shape + (n,))
    others = lax.mul(_exclusive_cumprod(flat, len(kept), False),
                     _exclusive_cumprod(flat, len(kept), True))
    gb = lax.broadcast_in_dim(g, kept_shape + (n,), tuple(range(len(kept))))
    back = lax.reshape(lax.mul(gb, others), xt.shape)
    return (lax.transpose(back, tuple(int(i) for i in np.argsort(perm))),)


defvjp(P.reduce_p["prod"], _reduce_prod_vjp)
defvjp(P.argmax_p, lambda g, ans, x, **kw: (None,))
defvjp(P.argmin_p, lambda g, ans, x, **kw: (None,))


def _cumsum_vjp(g: Array, ans: Array, x: Array, *, axis: int, reverse: bool) -> tuple:
    return (lax.cumulative("sum", g, axis, not reverse),)


def _along_axis_scan(step: Any, xs: Sequence[Array], axis: int, init: Array,
                     reverse: bool) -> Array:
    """``scan`` of ``step(carry, slices) -> (carry, out)`` over ``axis`` of ``xs``."""
    moved = [lax.transpose(x, (axis,) + _kept_dims(x.ndim, (axis,))) for x in xs]
    _, out = lax.scan(step, init, tuple(moved), reverse=reverse)
    inv = tuple(int(i) for i in np.argsort((axis,) + _kept_dims(xs[0].ndim, (axis,))))
    return lax.transpose(out, inv)


def _rest_zeros(x: Array, axis: int) -> Array:
    return lax.full_like(x, 0, shape=tuple(s for d, s in enumerate(x.shape) if d != axis))


def _cumprod_vjp(g: Array, ans: Array, x: Array, *, axis: int, reverse: bool) -> tuple:
    # out_j = prod_{k<=j} x_k, so dL/dx_i = L_i * S_i with L_i = prod_{k<i} x_k and
    # S_i = g_i + x_{i+1} * S_{i+1}: a reverse linear recurrence, exact with zeros.
    if reverse:
        flipped = _cumprod_vjp(lax.rev(g, (axis,)), lax.rev(ans, (axis,)),
                               lax.rev(x, (axis,)), axis=axis, reverse=False)[0]
        return (lax.rev(flipped, (axis,)),)
    n = x.shape[axis]
    cfg = [(0, 0, 0)] * x.ndim
    cfg[axis] = (0, 1, 0)
    lo = [0] * x.ndim
    lo[axis] = 1
    hi = list(x.shape)
    hi[axis] = n + 1
    x_next = lax.slice(lax.pad(x, to_array(np.zeros((), x.dtype)), cfg), lo, hi)

    def step(s: Array, sl: tuple) -> tuple:
        g_i, xn_i = sl
        s = lax.add(g_i, lax.mul(xn_i, s))
        return s, s

    s = _along_axis_scan(step, [g, x_next], axis, _rest_zeros(x, axis), reverse=True)
    return (lax.mul(_exclusive_cumprod(x, axis, False), s),)


def _cum_extreme_vjp(kind: str) -> Any:
    def rule(g: Array, ans: Array, x: Array, *, axis: int, reverse: bool) -> tuple:
        if reverse:
            flipped = rule(lax.rev(g, (axis,)), lax.rev(ans, (axis,)), lax.rev(x, (axis,)),
                           axis=axis, reverse=False)[0]
            return (lax.rev(flipped, (axis,)),)
        # Position i is a "record" when x_i beats the running extreme before it; the
        # gradient of every output up to the next record goes to it.
        before = _exclusive_running(ans, axis)
        beats = lax.gt(x, before) if kind == "max" else lax.lt(x, before)
        first = lax.broadcasted_iota(np.int32, x.shape, axis)
        record = lax.bitwise_or(beats, lax.eq(first, lax.broadcast_in_dim(
            to_array(np.int32(0)), x.shape, ())))

        def step(acc: Array, sl: tuple) -> tuple:
            g_i, r_i = sl
            acc = lax.add(acc, g_i)
            out = _where(r_i, acc, _zeros(acc))
            return _where(r_i, _zeros(acc), acc), out

        return (_along_axis_scan(step, [g, record], axis, _rest_zeros(x, axis), reverse=True),)
    return rule


def _exclusive_running(ans: Array, axis: int) -> Array:
    """``ans`` shifted one step along ``axis`` (the first slot repeats ``ans[0]``)."""
    n = ans.shape[axis]
    lo = [0] * ans.ndim
    hi = list(ans.shape)
    hi[axis] = 1
    head = lax.slice(ans, lo, hi)
    hi[axis] = n - 1
    body = lax.slice(ans, lo, hi) if n > 1 else None
    return head if body is None else lax.concatenate([head, body], axis)


defvjp(P.cumulative_p["sum"], _cumsum_vjp)
defvjp(P.cumulative_p["prod"], _cumprod_vjp)
defvjp(P.cumulative_p["max"], _cum_extreme_vjp("max"))
defvjp(P.cumulative_p["min"], _cum_extreme_vjp("min"))


# -------------------------------------------------------------------------- sort / dot
def _sort_vjp(gs: list[Array], outs: list[Array], *xs: Array, dimension: int,
              is_stable: bool) -> tuple:
    iota = lax.broadcasted_iota(np.int32, xs[0].shape, dimension)
    perm = lax.sort([xs[0], iota], dimension, is_stable=True)[1]
    inverse = lax.sort([perm, lax.broadcasted_iota(np.int32, xs[0].shape, dimension)],
                       dimension, is_stable=True)[1]
    out = []
    for x, g in zip(xs, gs):
        differentiable = dtypes.is_float(x.dtype) or np.dtype(x.dtype).kind == "c"
        out.append(lax.take_along_axis(g, inverse, dimension) if differentiable else None)
    return tuple(out)


defvjp(P.sort_p, _sort_vjp)


def _ranges_like(*lists: Sequence[int]) -> list[list[int]]:
    out, start = [], 0
    for lst in lists:
        out.append(list(range(start, start + len(lst))))
        start += len(lst)
    return out


def _dot_transpose_lhs(g: Array, x: Array, y: Array, contracting, batch,
                       swap_ans: bool = False) -> Array:
    (x_contract, y_contract), (x_batch, y_batch) = contracting, batch
    x_kept = [i for i in range(x.ndim) if i not in x_contract and i not in x_batch]
    y_kept = [i for i in range(y.ndim) if i not in y_contract and i not in y_batch]
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    if g.dtype != y.dtype:
        g = lax.convert_element_type(g, y.dtype)
    dims = ((ans_y, y_kept), (ans_batch, list(y_batch)))
    x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_by_y)
    return lax.transpose(lax.dot_general(g, y, dims), tuple(int(i) for i in out_axes))


def _dot_general_vjp(g: Array, ans: Array, x: Array, y: Array, *, contracting, batch,
                     preferred_element_type) -> tuple:
    (xc, yc), (xb, yb) = contracting, batch
    g_x = _dot_transpose_lhs(g, x, y, (xc, yc), (xb, yb))
    g_y = _dot_transpose_lhs(g, y, x, (yc, xc), (yb, xb), swap_ans=True)
    return g_x, g_y


defvjp(P.dot_general_p, _dot_general_vjp)

__all__ = ["defvjp"]
