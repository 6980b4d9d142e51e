"""Lowerings of core-ATen ops (after PyTorch's core-ATen decompositions) to xlapy.

``LOWERINGS`` maps an ATen overload name (``"aten.add.Tensor"``) to a function that takes
the op's arguments with tensors replaced by xlapy arrays (traced under ``xlapy.jit``) and
returns the result the ATen op would (an array, or a tuple of them). A lowering that meets
arguments it cannot honour raises :class:`Unsupported`; the backend then runs the whole
graph with PyTorch instead. Results are checked against the shapes and dtypes PyTorch's
tracer recorded, so a lowering that disagrees with PyTorch is caught, not returned.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np

from .. import lax
from .. import numpy as xnp
from ..errors import UnimplementedError

_INT_MAX = 2 ** 63 - 1


class Unsupported(UnimplementedError):
    """An ATen op, or arguments of one, that xlapy has no lowering for."""


LOWERINGS: dict[str, Callable[..., Any]] = {}


def _reg(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return deco


def _dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """ATen's dim argument (an int, a list, or None/[] for all) as non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = [dim]
    if len(dim) == 0:
        return tuple(range(ndim))
    return tuple(d % ndim if ndim else 0 for d in dim)


def _np_dtype(dtype: Any) -> Any:
    from .torch_dtypes import to_numpy_dtype
    return None if dtype is None else to_numpy_dtype(dtype)


# ------------------------------------------------------------------ elementwise
def _binary(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def lower(a: Any, b: Any, *, alpha: Any = 1) -> Any:
        if alpha != 1:
            b = b * alpha
        return fn(a, b)
    return lower


for _name, _fn in [("add", xnp.add), ("sub", xnp.subtract), ("mul", xnp.multiply),
                   ("div", xnp.true_divide), ("maximum", xnp.maximum),
                   ("minimum", xnp.minimum), ("pow", xnp.power), ("atan2", xnp.arctan2),
                   ("eq", xnp.equal), ("ne", xnp.not_equal), ("lt", xnp.less),
                   ("le", xnp.less_equal), ("gt", xnp.greater), ("ge", xnp.greater_equal),
                   ("logical_and", xnp.logical_and), ("logical_or", xnp.logical_or),
                   ("logical_xor", xnp.logical_xor), ("bitwise_and", xnp.bitwise_and),
                   ("bitwise_or", xnp.bitwise_or), ("remainder", xnp.remainder),
                   ("fmod", xnp.fmod)]:
    for _ov in ("Tensor", "Scalar", "default", "Tensor_Tensor", "Tensor_Scalar",
                "Scalar_Tensor"):
        LOWERINGS[f"aten.{_name}.{_ov}"] = _binary(_fn)


@_reg("aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div_mode(a: Any, b: Any, *, rounding_mode: str | None = None) -> Any:
    q = xnp.true_divide(a, b)
    if rounding_mode is None:
        return q
    if rounding_mode == "floor":
        return xnp.floor_divide(a, b)
    return xnp.trunc(q)


_UNARY = {"neg": xnp.negative, "exp": xnp.exp, "log": xnp.log, "sqrt": xnp.sqrt,
          "rsqrt": lax.rsqrt, "tanh": xnp.tanh, "sigmoid": lax.logistic, "abs": xnp.abs,
          "sin": xnp.sin, "cos": xnp.cos, "erf": lax.erf, "log1p": xnp.log1p,
          "expm1": xnp.expm1, "sign": xnp.sign, "floor": xnp.floor, "ceil": xnp.ceil,
          "reciprocal": xnp.reciprocal, "logical_not": xnp.logical_not,
          "bitwise_not": xnp.bitwise_not, "isnan": xnp.isnan, "exp2": xnp.exp2,
          "log2": xnp.log2, "trunc": xnp.trunc, "tan": xnp.tan}
for _name, _fn in _UNARY.items():
    LOWERINGS[f"aten.{_name}.default"] = _fn


@_reg("aten.relu.default")
def _relu(x: Any) -> Any:
    return xnp.maximum(x, xnp.zeros((), x.dtype))


@_reg("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther")
def _where(c: Any, a: Any, b: Any) -> Any:
    return xnp.where(c, a, b)


@_reg("aten.clamp.default", "aten.clamp.Tensor")
def _clamp(x: Any, min: Any = None, max: Any = None) -> Any:
    if min is not None:
        x = xnp.maximum(x, min)
    if max is not None:
        x = xnp.minimum(x, max)
    return x


@_reg("aten.pow.Scalar")
def _pow_scalar(a: Any, b: Any) -> Any:
    return xnp.power(a, b)


@_reg("aten._to_copy.default", "prims.convert_element_type.default")
def _to_copy(x: Any, dtype: Any = None, **kwargs: Any) -> Any:
    for k in ("device", "layout"):
        if kwargs.get(k) not in (None,) and str(kwargs[k]) not in ("cpu", "torch.strided"):
            raise Unsupported(f"_to_copy with {k}={kwargs[k]}")
    return x if dtype is None else x.astype(_np_dtype(dtype))


for _name in ("clone", "alias", "lift_fresh_copy", "detach", "contiguous"):
    LOWERINGS[f"aten.{_name}.default"] = lambda x, **kw: x


# ------------------------------------------------------------------ creation
def _creation_dtype(dtype: Any, value: Any) -> Any:
    if dtype is not None:
        return _np_dtype(dtype)
    if isinstance(value, bool):
        return np.bool_
    return np.int32 if isinstance(value, int) else np.float32


def _int32_exact(value: Any) -> Any:
    """A static integer that an int64 tensor holds, checked to fit the 32 bits xlapy
    computes int64 in."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2 ** 31:
        raise Unsupported(f"the int64 constant {value} is beyond the 32-bit range")
    return value


@_reg("aten.full.default")
def _full(size: Sequence[int], value: Any, *, dtype: Any = None, **kw: Any) -> Any:
    return xnp.full(tuple(size), _int32_exact(value), dtype=_creation_dtype(dtype, value))


@_reg("aten.full_like.default")
def _full_like(x: Any, value: Any, *, dtype: Any = None, **kw: Any) -> Any:
    return xnp.full(x.shape, _int32_exact(value), dtype=_np_dtype(dtype) or x.dtype)


@_reg("aten.zeros_like.default")
def _zeros_like(x: Any, *, dtype: Any = None, **kw: Any) -> Any:
    return xnp.zeros(x.shape, dtype=_np_dtype(dtype) or x.dtype)


@_reg("aten.ones_like.default")
def _ones_like(x: Any, *, dtype: Any = None, **kw: Any) -> Any:
    return xnp.ones(x.shape, dtype=_np_dtype(dtype) or x.dtype)


@_reg("aten.scalar_tensor.default")
def _scalar_tensor(s: Any, *, dtype: Any = None, **kw: Any) -> Any:
    return xnp.asarray(_int32_exact(s), dtype=_creation_dtype(dtype, s))


@_reg("aten.empty.memory_format")
def _empty(size: Sequence[int], *, dtype: Any = None, **kw: Any) -> Any:
    return xnp.zeros(tuple(size), dtype=_creation_dtype(dtype, 0.0))


@_reg("aten.arange.start_step", "aten.arange.start", "aten.arange.default")
def _arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, **kw: Any) -> Any:
    if end is None:
        start, end = 0, start
    ints = all(isinstance(v, int) for v in (start, end, step))
    return xnp.arange(start, end, step, dtype=_creation_dtype(dtype, 0 if ints else 0.0))


# ------------------------------------------------------------------ shapes
@_reg("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
def _view(x: Any, size: Sequence[int]) -> Any:
    return xnp.reshape(x, tuple(size))


@_reg("aten.permute.default")
def _permute(x: Any, dims: Sequence[int]) -> Any:
    return xnp.transpose(x, tuple(d % x.ndim for d in dims))


@_reg("aten.expand.default")
def _expand(x: Any, size: Sequence[int], *, implicit: bool = False) -> Any:
    lead = len(size) - x.ndim
    shape = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(size))
    return xnp.broadcast_to(x, shape)


@_reg("aten.squeeze.dims", "aten.squeeze.dim", "aten.squeeze.default")
def _squeeze(x: Any, dims: Any = None) -> Any:
    axes = tuple(d for d in _dims(dims, x.ndim) if x.shape[d] == 1)
    return xnp.squeeze(x, axes) if axes else x


@_reg("aten.unsqueeze.default")
def _unsqueeze(x: Any, dim: int) -> Any:
    return xnp.expand_dims(x, dim % (x.ndim + 1))


def _slice_index(ndim: int, dim: int, sl: Any) -> tuple:
    return (slice(None),) * (dim % ndim) + (sl,)


def _clip_slice(size: int, start: Any, end: Any, step: int) -> slice:
    start = 0 if start is None else start
    end = size if end is None or end >= _INT_MAX else end
    return slice(start, end, step)


@_reg("aten.slice.Tensor")
def _slice(x: Any, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Any:
    return x[_slice_index(x.ndim, dim, _clip_slice(x.shape[dim], start, end, step))]


@_reg("aten.slice_scatter.default")
def _slice_scatter(x: Any, src: Any, dim: int = 0, start: Any = None, end: Any = None,
                   step: int = 1) -> Any:
    idx = _slice_index(x.ndim, dim, _clip_slice(x.shape[dim], start, end, step))
    return x.at[idx].set(src)


@_reg("aten.select.int")
def _select(x: Any, dim: int, index: int) -> Any:
    return x[_slice_index(x.ndim, dim, index % x.shape[dim])]


@_reg("aten.select_scatter.default")
def _select_scatter(x: Any, src: Any, dim: int, index: int) -> Any:
    return x.at[_slice_index(x.ndim, dim, index % x.shape[dim])].set(src)


@_reg("aten.cat.default")
def _cat(tensors: Sequence[Any], dim: int = 0) -> Any:
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    return xnp.concatenate(kept, axis=dim % kept[0].ndim)


@_reg("aten.split_with_sizes.default")
def _split_with_sizes(x: Any, sizes: Sequence[int], dim: int = 0) -> Any:
    out, start = [], 0
    for s in sizes:
        out.append(_slice(x, dim, start, start + s))
        start += s
    return tuple(out)


@_reg("aten.constant_pad_nd.default")
def _constant_pad(x: Any, pad: Sequence[int], value: Any = 0) -> Any:
    cfg = [(0, 0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        cfg[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1], 0)
    return lax.pad(x, xnp.asarray(value, x.dtype), cfg)


@_reg("aten.repeat.default")
def _repeat(x: Any, repeats: Sequence[int]) -> Any:
    return xnp.tile(x, tuple(repeats))


@_reg("aten.flip.default")
def _flip(x: Any, dims: Sequence[int]) -> Any:
    return xnp.flip(x, _dims(list(dims), x.ndim))


# ------------------------------------------------------------------ indexing
@_reg("aten.index_select.default")
def _index_select(x: Any, dim: int, index: Any) -> Any:
    return xnp.take(x, index, axis=dim % x.ndim)


@_reg("aten.gather.default")
def _gather(x: Any, dim: int, index: Any, *, sparse_grad: bool = False) -> Any:
    dim %= max(x.ndim, 1)
    if x.ndim == 0:
        return x
    x = x[tuple(slice(None) if d == dim else slice(0, index.shape[d]) for d in range(x.ndim))]
    return xnp.take_along_axis(x, index, axis=dim)


def _scatter_index(index: Any, dim: int) -> tuple:
    return tuple(index if d == dim else lax.broadcasted_iota(np.int32, index.shape, d)
                 for d in range(index.ndim))


@_reg("aten.scatter.src", "aten.scatter.value")
def _scatter(x: Any, dim: int, index: Any, src: Any) -> Any:
    dim %= x.ndim
    if hasattr(src, "shape") and src.ndim:
        src = src[tuple(slice(0, s) for s in index.shape)]
    return x.at[_scatter_index(index, dim)].set(src)


@_reg("aten.scatter_add.default")
def _scatter_add(x: Any, dim: int, index: Any, src: Any) -> Any:
    dim %= x.ndim
    src = src[tuple(slice(0, s) for s in index.shape)]
    return x.at[_scatter_index(index, dim)].add(src)


def _adv_index(indices: Sequence[Any]) -> tuple:
    return tuple(slice(None) if i is None else i for i in indices)


@_reg("aten.index.Tensor")
def _index(x: Any, indices: Sequence[Any]) -> Any:
    if any(getattr(i, "dtype", None) == np.bool_ for i in indices):
        raise Unsupported("index with a boolean mask (data-dependent shape)")
    return x[_adv_index(indices)]


@_reg("aten.index_put.default")
def _index_put(x: Any, indices: Sequence[Any], values: Any, accumulate: bool = False) -> Any:
    if any(getattr(i, "dtype", None) == np.bool_ for i in indices):
        raise Unsupported("index_put with a boolean mask")
    ref = x.at[_adv_index(indices)]
    return ref.add(values) if accumulate else ref.set(values)


# ------------------------------------------------------------------ reductions
@_reg("aten.sum.dim_IntList", "aten.sum.default")
def _sum(x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    if x.dtype == np.bool_ and dtype is None:
        x = x.astype(np.int32)
    return xnp.sum(x, axis=_dims(dim, x.ndim), keepdims=keepdim, dtype=_np_dtype(dtype))


@_reg("aten.mean.dim", "aten.mean.default")
def _mean(x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    return xnp.mean(x, axis=_dims(dim, x.ndim), keepdims=keepdim, dtype=_np_dtype(dtype))


@_reg("aten.prod.dim_int", "aten.prod.default")
def _prod(x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    return xnp.prod(x, axis=_dims(dim, x.ndim), keepdims=keepdim, dtype=_np_dtype(dtype))


@_reg("aten.amax.default")
def _amax(x: Any, dim: Any = (), keepdim: bool = False) -> Any:
    return xnp.max(x, axis=_dims(dim, x.ndim), keepdims=keepdim)


@_reg("aten.amin.default")
def _amin(x: Any, dim: Any = (), keepdim: bool = False) -> Any:
    return xnp.min(x, axis=_dims(dim, x.ndim), keepdims=keepdim)


@_reg("aten.any.dim", "aten.any.dims", "aten.any.default")
def _any(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    return xnp.any(x, axis=_dims(dim, x.ndim), keepdims=keepdim)


@_reg("aten.all.dim", "aten.all.dims", "aten.all.default")
def _all(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    return xnp.all(x, axis=_dims(dim, x.ndim), keepdims=keepdim)


@_reg("aten.argmax.default")
def _argmax(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    if dim is None:
        return xnp.argmax(xnp.reshape(x, (-1,)))
    return xnp.argmax(x, axis=dim % x.ndim, keepdims=keepdim)


@_reg("aten.max.dim")
def _max_dim(x: Any, dim: int, keepdim: bool = False) -> Any:
    return (xnp.max(x, axis=dim % x.ndim, keepdims=keepdim),
            xnp.argmax(x, axis=dim % x.ndim, keepdims=keepdim))


@_reg("aten.cumsum.default")
def _cumsum(x: Any, dim: int, *, dtype: Any = None) -> Any:
    if x.dtype == np.bool_ and dtype is None:
        x = x.astype(np.int32)
    return xnp.cumsum(x, axis=dim % max(x.ndim, 1), dtype=_np_dtype(dtype))


@_reg("aten.sort.default", "aten.sort.stable")
def _sort(x: Any, dim: int = -1, descending: bool = False, *, stable: Any = None) -> tuple:
    dim %= max(x.ndim, 1)
    idx = xnp.argsort(-x if descending else x, axis=dim, stable=True)
    return xnp.take_along_axis(x, idx, axis=dim), idx


@_reg("aten.topk.default")
def _topk(x: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:
    dim %= max(x.ndim, 1)
    moved = xnp.moveaxis(x, dim, -1)
    vals, idx = lax.top_k(moved if largest else -moved, k)
    vals = vals if largest else -vals
    return xnp.moveaxis(vals, -1, dim), xnp.moveaxis(idx, -1, dim)


# ------------------------------------------------------------------ linear algebra
def same_dtypes(what: str, *xs: Any) -> None:
    """ATen's matrix products and convolutions take one dtype; PyTorch itself raises on a
    mix, so such a graph is left to PyTorch (which raises its own error)."""
    if len({x.dtype for x in xs if x is not None}) > 1:
        raise Unsupported(f"{what} of mixed dtypes")


@_reg("aten.mm.default", "aten.bmm.default")
def _mm(a: Any, b: Any) -> Any:
    same_dtypes("mm", a, b)
    return xnp.matmul(a, b)


@_reg("aten.addmm.default")
def _addmm(bias: Any, a: Any, b: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    same_dtypes("addmm", bias, a, b)
    prod = xnp.matmul(a, b)
    if alpha != 1:
        prod = prod * alpha
    return prod + (bias if beta == 1 else bias * beta)


# ------------------------------------------------------------------ symbolic sizes
LOWERINGS["aten.sym_size.int"] = lambda x, dim: x.shape[dim]
LOWERINGS["aten.sym_numel.default"] = lambda x: int(np.prod(x.shape))
for _op in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.truediv,
            operator.mod, operator.neg, operator.getitem, operator.eq, operator.ne,
            operator.lt, operator.le, operator.gt, operator.ge):
    LOWERINGS[f"<built-in function {_op.__name__}>"] = _op

from . import torch_ops_nn  # noqa: E402,F401  (registers the NN lowerings)

__all__ = ["LOWERINGS", "Unsupported"]
