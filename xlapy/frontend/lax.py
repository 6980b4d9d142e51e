"""Thin, strict ``bind`` wrappers over the primitives (XLA's operation semantics).

Each function checks its arguments, reads static ones, and binds one primitive. Unlike
``xlapy.numpy`` these do no implicit promotion or broadcasting: binary ops need operands
of one shape and dtype. The primitives are defined (lowering, autodiff and batching
rules) in the family files ``primitives_<family>.py``, which write their rules with
these wrappers; so this module refers to primitives by their registered name
(:func:`~xlapy.frontend.core.get_primitive`) and imports none of the family files. The
public namespace ``xlapy.lax`` (these, the composites of ``lax_composite``, control
flow and the ``lax_nn`` convolutions) is assembled in ``xlapy/lax/__init__.py``.

Static arguments (shapes, axes, permutations, sizes, ``k``) are read with
:func:`~xlapy.frontend.tracing.concrete_int` / ``concrete_ints``: inside ``jit`` a traced
function argument in such a position makes jit specialize on its value (TensorFlow's
must-be-constant inputs); a value computed from traced values is an error.
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from . import dtypes
from .core import Array, bind, convert, get_primitive, to_array
from .tracing import concrete_int, concrete_ints


def _check_same(name: str, *xs: Array) -> None:
    first = xs[0]
    for x in xs[1:]:
        if x.shape != first.shape or x.dtype != first.dtype:
            raise ShapeError(f"lax.{name}: operands must have equal shapes and dtypes, got "
                             + ", ".join(a.type_text() for a in xs))


def unop(name: str):
    """The strict wrapper of the unary elementwise primitive ``name`` (a row of
    ``primitives_elementwise.UNARY``): what ``lax.exp`` is for ``"exp"``."""
    def op(x: Any) -> Array:
        return bind(get_primitive(name), to_array(x))
    op.__name__ = name
    op.__doc__ = f"Elementwise ``{name}`` (the primitive of that name)."
    return op


def binop(name: str):
    """The strict wrapper of the binary elementwise primitive ``name`` (operands of one
    shape and dtype): what ``lax.add`` is for ``"add"``."""
    def op(x: Any, y: Any) -> Array:
        x, y = to_array(x), to_array(y)
        _check_same(name, x, y)
        return bind(get_primitive(name), x, y)
    op.__name__ = name
    op.__doc__ = f"Elementwise ``{name}`` of equally shaped operands."
    return op


neg, abs, sign, exp, expm1, log, log1p, sqrt, rsqrt, cbrt = (
    unop(n) for n in ("neg", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt",
                       "cbrt"))
floor, ceil, round, round_even, tanh, sin, cos, tan, logistic = (
    unop(n) for n in ("floor", "ceil", "round", "round_even", "tanh", "sin", "cos", "tan",
                       "logistic"))
bitwise_not, is_finite, real, imag, erf, population_count, clz = (
    unop(n) for n in ("not", "is_finite", "real", "imag", "erf", "population_count", "clz"))
add, sub, mul, div, rem, _pow_same_types, max, min, atan2 = (
    binop(n) for n in ("add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2"))
bitwise_and, bitwise_or, bitwise_xor = (binop(n) for n in ("and", "or", "xor"))
complex = binop("complex")


def pow(x: Any, y: Any) -> Array:
    """``x ** y`` elementwise (``jax.lax.pow``): ``x`` floating or complex; ``y`` of ``x``'s
    dtype, or an integer exponent, which is converted to ``x``'s dtype first. A scalar
    operand is broadcast to the other's shape, as JAX does."""
    x, y = to_array(x), to_array(y)
    if dtypes.is_inexact(x.dtype) and y.dtype.kind in "iu":
        y = convert_element_type(y, x.dtype, y.weak_type)
    if y.shape == () and x.shape != ():
        y = broadcast(y, x.shape)
    elif x.shape == () and y.shape != ():
        x = broadcast(x, y.shape)
    return _pow_same_types(x, y)
shift_left, shift_right_arithmetic, shift_right_logical = (
    binop(n) for n in ("shift_left", "shift_right_arithmetic", "shift_right_logical"))


def _cmp(direction: str):
    def op(x: Any, y: Any) -> Array:
        x, y = to_array(x), to_array(y)
        _check_same(direction.lower(), x, y)
        return bind(get_primitive("compare"), x, y, direction=direction)
    op.__name__ = direction.lower()
    return op


eq, ne, lt, le, gt, ge = (_cmp(d) for d in ("EQ", "NE", "LT", "LE", "GT", "GE"))


def select(pred: Any, on_true: Any, on_false: Any) -> Array:
    pred, on_true, on_false = to_array(pred), to_array(on_true), to_array(on_false)
    _check_same("select", on_true, on_false)
    if pred.dtype != np.bool_ or pred.shape not in ((), on_true.shape):
        raise ShapeError(f"lax.select: predicate must be bool of shape {on_true.shape} or a "
                         f"scalar, got {pred.type_text()}")
    return bind(get_primitive("select"), pred, on_true, on_false)


def clamp(lo: Any, x: Any, hi: Any) -> Array:
    return bind(get_primitive("clamp"), to_array(lo), to_array(x), to_array(hi))


def convert_element_type(x: Any, dtype: Any, weak_type: bool = False) -> Array:
    """``x`` converted to ``dtype`` (canonicalized to 32 bits)."""
    return convert(to_array(x), dtype, weak_type)


def bitcast_convert_type(x: Any, new_dtype: Any) -> Array:
    """The bits of ``x`` reinterpreted as ``new_dtype`` (``jax.lax.bitcast_convert_type``):
    the same shape for the same width; a type ``k`` times narrower adds a last dimension
    of size ``k`` (``f32[3,4]`` -> ``u8[3,4,4]``), one ``k`` times wider removes a last
    dimension that must be ``k``."""
    x = to_array(x)
    dt = np.dtype(new_dtype)
    if dt == x.dtype:
        return x
    wide, narrow = x.dtype.itemsize, dt.itemsize
    if (dt.kind == "c") != (x.dtype.kind == "c"):
        raise InvalidArgumentError(f"bitcast_convert_type: cannot bitcast between complex "
                                   f"and real types ({x.type_text()} to {dt})")
    if wide < narrow and (narrow % wide or not x.shape or x.shape[-1] != narrow // wide):
        raise InvalidArgumentError(f"bitcast_convert_type: {x.type_text()} to the wider {dt} "
                                   f"needs a last dimension of size {narrow // wide}")
    if wide > narrow and wide % narrow:
        raise InvalidArgumentError(f"bitcast_convert_type: the widths of {x.type_text()} and "
                                   f"{dt} do not divide")
    return bind(get_primitive("bitcast_convert_type"), x, new_dtype=dt)


def erf_inv(x: Any) -> Array:
    """The inverse error function of ``f16``, ``bf16`` or ``f32`` values, expanded as XLA
    expands ``chlo.erf_inv`` (Giles' polynomials, computed in ``f32``)."""
    x = to_array(x)
    if x.dtype not in (np.float32, dtypes.float16, dtypes.bfloat16):
        raise InvalidArgumentError(f"erf_inv supports f16, bf16 and f32, got {x.type_text()}")
    return bind(get_primitive("erf_inv"), x)


def broadcast_in_dim(x: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int]) -> Array:
    x = to_array(x)
    shape = concrete_ints(shape, "broadcast shape")
    bdims = concrete_ints(broadcast_dimensions, "broadcast_dimensions")
    if x.shape == shape and bdims == tuple(range(len(shape))):
        return x
    return bind(get_primitive("broadcast_in_dim"), x, shape=shape, broadcast_dimensions=bdims)


def full_like(x: Any, fill_value: Any, dtype: Any = None,
              shape: Sequence[int] | None = None) -> Array:
    """``fill_value`` broadcast to ``x``'s shape (or ``shape``), strongly typed as ``x``'s
    dtype (or ``dtype``); a Python or NumPy scalar is converted exactly (``0xFFFFFFFF``
    fills a ``uint32`` array)."""
    x = to_array(x)
    dt = x.dtype if dtype is None else dtypes.canonicalize(dtype)
    fill = convert_element_type(fill_value, dt) if isinstance(fill_value, Array) else \
        Array(np.asarray(fill_value, dt))
    return broadcast_in_dim(fill, x.shape if shape is None else shape, ())


def broadcast(x: Any, sizes: Sequence[int]) -> Array:
    """Prepend dimensions ``sizes`` to ``x``."""
    x = to_array(x)
    sizes = concrete_ints(sizes, "broadcast sizes")
    n = len(sizes)
    return broadcast_in_dim(x, sizes + x.shape, tuple(range(n, n + x.ndim)))


def reshape(x: Any, new_sizes: Sequence[int]) -> Array:
    x = to_array(x)
    new_sizes = concrete_ints(new_sizes, "reshape new_sizes")
    if x.shape == new_sizes:
        return x
    return bind(get_primitive("reshape"), x, new_sizes=new_sizes)


def transpose(x: Any, permutation: Sequence[int]) -> Array:
    x = to_array(x)
    perm = concrete_ints(permutation, "transpose permutation")
    if perm == tuple(range(x.ndim)):
        return x
    return bind(get_primitive("transpose"), x, permutation=perm)


def slice(x: Any, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Sequence[int] | None = None) -> Array:
    x = to_array(x)
    start = concrete_ints(start_indices, "slice start")
    limit = concrete_ints(limit_indices, "slice limit")
    strides = concrete_ints(strides, "slice stride") if strides is not None else (1,) * x.ndim
    if start == (0,) * x.ndim and limit == x.shape and strides == (1,) * x.ndim:
        return x
    return bind(get_primitive("slice"), x, start_indices=start, limit_indices=limit,
                strides=strides)


def _index_scalars(indices: Sequence[Any]) -> list[Array]:
    out = []
    for i in indices:
        a = to_array(i)
        if a.ndim != 0 or a.dtype.kind not in "iu":
            raise InvalidArgumentError(f"dynamic indices must be integer scalars, got "
                                       f"{a.type_text()}")
        out.append(convert_element_type(a, np.int32))
    return out


def _wrap_negative(indices: list[Array], dims: Sequence[int]) -> list[Array]:
    """``i + dim`` for negative start indices (JAX's ``allow_negative_indices``)."""
    out = []
    for i, n in zip(indices, dims):
        if not i.is_traced:
            v = int(i._value)
            out.append(convert_element_type(v + n, np.int32) if v < 0 else i)
            continue
        zero = full_like(i, 0)
        out.append(select(lt(i, zero), add(i, full_like(i, n)), i))
    return out


def dynamic_slice(x: Any, start_indices: Sequence[Any], slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool = True) -> Array:
    """XLA DynamicSlice: start indices are clamped so the slice stays in bounds; as in JAX,
    a negative start first has the dimension's size added (``-3`` of 10 starts at 7)
    unless ``allow_negative_indices=False``."""
    x = to_array(x)
    idx = _index_scalars(start_indices)
    if allow_negative_indices:
        idx = _wrap_negative(idx, x.shape)
    return bind(get_primitive("dynamic_slice"), x, *idx,
                slice_sizes=concrete_ints(slice_sizes, "dynamic_slice sizes"))


def dynamic_update_slice(x: Any, update: Any, start_indices: Sequence[Any], *,
                         allow_negative_indices: bool = True) -> Array:
    """XLA DynamicUpdateSlice (clamped starts; negative ones wrap first, as in JAX)."""
    x = to_array(x)
    update = convert_element_type(to_array(update), x.dtype, x.weak_type)
    idx = _index_scalars(start_indices)
    if allow_negative_indices:
        idx = _wrap_negative(idx, x.shape)
    return bind(get_primitive("dynamic_update_slice"), x, update, *idx)


def concatenate(operands: Sequence[Any], dimension: int) -> Array:
    xs = [to_array(o) for o in operands]
    if len(xs) == 1:
        return xs[0]
    return bind(get_primitive("concatenate"), *xs,
                dimension=concrete_int(dimension, "concatenate dimension"))


def pad(x: Any, padding_value: Any, padding_config: Sequence[Sequence[int]]) -> Array:
    """``padding_config`` holds (low, high, interior) per dimension (negative trims)."""
    x = to_array(x)
    pv = convert_element_type(to_array(padding_value), x.dtype)
    cfg = tuple((t + (0,))[:3] for t in (concrete_ints(c, "pad config") for c in padding_config))
    return bind(get_primitive("pad"), x, pv, padding_config=cfg)


def rev(x: Any, dimensions: Sequence[int]) -> Array:
    if not dimensions:
        return to_array(x)
    return bind(get_primitive("rev"), to_array(x),
                dimensions=concrete_ints(dimensions, "rev dimensions"))


def iota(dtype: Any, size: int) -> Array:
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int) -> Array:
    return bind(get_primitive("iota"), dtype=dtypes.canonicalize(dtype),
                shape=concrete_ints(shape, "iota shape"),
                dimension=concrete_int(dimension, "iota dimension"))


def gather(x: Any, indices: Any, *, offset_dims, collapsed_slice_dims, start_index_map,
           index_vector_dim: int, slice_sizes) -> Array:
    return bind(get_primitive("gather"), to_array(x), to_array(indices),
                offset_dims=concrete_ints(offset_dims, "gather offset_dims"),
                collapsed_slice_dims=concrete_ints(collapsed_slice_dims, "gather dims"),
                start_index_map=concrete_ints(start_index_map, "gather start_index_map"),
                index_vector_dim=concrete_int(index_vector_dim, "gather index_vector_dim"),
                slice_sizes=concrete_ints(slice_sizes, "gather slice_sizes"))


def scatter(x: Any, indices: Any, updates: Any, *, update_window_dims, inserted_window_dims,
            scatter_dims_to_operand_dims, index_vector_dim: int, combiner: str = "set") -> Array:
    """XLA Scatter with a standard combiner (``set``, ``add``, ``mul``, ``min``, ``max``)."""
    x = to_array(x)
    updates = convert_element_type(to_array(updates), x.dtype, x.weak_type)
    return bind(get_primitive("scatter"), x, to_array(indices), updates,
                update_window_dims=concrete_ints(update_window_dims, "scatter dims"),
                inserted_window_dims=concrete_ints(inserted_window_dims, "scatter dims"),
                scatter_dims_to_operand_dims=concrete_ints(scatter_dims_to_operand_dims,
                                                           "scatter dims"),
                index_vector_dim=concrete_int(index_vector_dim, "scatter index_vector_dim"),
                combiner=combiner)


def _reduce(kind: str):
    def op(x: Any, axes: Sequence[int]) -> Array:
        x = to_array(x)
        axes = tuple(sorted(concrete_ints(axes, f"reduce_{kind} axes")))
        if not axes:
            return x
        return bind(get_primitive(f"reduce_{kind}"), x, axes=axes)
    op.__name__ = f"reduce_{kind}"
    return op


reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or = (
    _reduce(k) for k in ("sum", "prod", "max", "min", "and", "or"))


def argmax(x: Any, axis: int, index_dtype: Any = np.int32) -> Array:
    return bind(get_primitive("argmax"), to_array(x), axis=concrete_int(axis, "argmax axis"),
                index_dtype=np.dtype(index_dtype))


def argmin(x: Any, axis: int, index_dtype: Any = np.int32) -> Array:
    return bind(get_primitive("argmin"), to_array(x), axis=concrete_int(axis, "argmin axis"),
                index_dtype=np.dtype(index_dtype))


def cumulative(kind: str, x: Any, axis: int, reverse: bool = False) -> Array:
    """Inclusive cumulative ``sum``/``prod``/``max``/``min`` along ``axis``."""
    return bind(get_primitive(f"cum{kind}"), to_array(x),
                axis=concrete_int(axis, f"cum{kind} axis"), reverse=bool(reverse))


def sort(operands: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sort ``operands`` (an Array or a sequence) along ``dimension`` lexicographically by
    the first ``num_keys`` of them, as ``jax.lax.sort``: floats in the total order after
    ``-0.0`` becomes ``+0.0`` and every NaN the positive NaN (zeros tie, NaNs go last)."""
    single = isinstance(operands, Array) or not isinstance(operands, (list, tuple))
    xs = [to_array(operands)] if single else [to_array(o) for o in operands]
    d = concrete_int(dimension, "sort dimension") % builtins.max(xs[0].ndim, 1)
    k = concrete_int(num_keys, "sort num_keys")
    if not 1 <= k <= len(xs):
        raise InvalidArgumentError(f"lax.sort: num_keys={k} must be between 1 and the "
                                   f"number of operands ({len(xs)})")
    outs = bind(get_primitive("sort"), *xs, dimension=d, is_stable=bool(is_stable),
                num_keys=k)
    return outs[0] if single else tuple(outs)


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any,
                preferred_element_type: Any = None) -> Array:
    """``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``."""
    (lc, rc), (lb, rb) = dimension_numbers
    pet = None if preferred_element_type is None else dtypes.canonicalize(preferred_element_type)
    return bind(get_primitive("dot_general"), to_array(lhs), to_array(rhs),
                contracting=(concrete_ints(lc, "dot_general contracting dims"),
                             concrete_ints(rc, "dot_general contracting dims")),
                batch=(concrete_ints(lb, "dot_general batch dims"),
                       concrete_ints(rb, "dot_general batch dims")),
                preferred_element_type=pet)


__all__ = ["unop", "binop", "neg", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "cbrt",
           "floor", "ceil", "round", "round_even", "tanh", "sin", "cos", "tan", "logistic",
           "bitwise_not", "is_finite", "real", "imag", "erf", "population_count", "clz", "add",
           "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "bitwise_and",
           "bitwise_or", "bitwise_xor", "complex", "shift_left", "shift_right_arithmetic",
           "shift_right_logical", "eq", "ne", "lt", "le", "gt", "ge", "select", "clamp",
           "convert_element_type", "bitcast_convert_type", "erf_inv", "broadcast_in_dim",
           "full_like", "broadcast", "reshape", "transpose", "slice", "dynamic_slice",
           "dynamic_update_slice", "concatenate", "pad", "rev", "iota", "broadcasted_iota",
           "gather", "scatter", "reduce_sum", "reduce_prod", "reduce_max", "reduce_min",
           "reduce_and", "reduce_or", "argmax", "argmin", "cumulative", "sort", "dot_general"]
