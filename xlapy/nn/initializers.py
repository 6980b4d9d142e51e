"""``xlapy.nn.initializers``: weight initializers with ``jax.nn.initializers``' API and
algorithms (so the same key gives JAX's values, up to the float-op differences of the
samplers described in :mod:`xlapy.random`).

A builder (``glorot_uniform()``, ``normal(0.1)``, ...) returns an initializer
``init(key, shape, dtype=None) -> Array``; ``zeros`` and ``ones`` are initializers
themselves. Fans follow JAX: ``in_axis=-2``, ``out_axis=-1``, the other axes (but
``batch_axis``) are the receptive field.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes
from ..frontend.core import Array
from .. import numpy as xnp
from .. import random


@runtime_checkable
class Initializer(Protocol):
    """``init(key, shape, dtype=None) -> Array``."""

    def __call__(self, key: Array, shape: Sequence[int], dtype: Any = None) -> Array: ...


def _dtype(dtype: Any) -> np.dtype:
    return np.dtype(np.float32) if dtype is None else dtypes.canonicalize(dtype)


def zeros(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None) -> Array:
    """An array of zeros (float32 by default)."""
    return xnp.zeros(tuple(shape), _dtype(dtype))


def ones(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None) -> Array:
    """An array of ones (float32 by default)."""
    return xnp.ones(tuple(shape), _dtype(dtype))


def constant(value: Any, dtype: Any = None) -> Callable[..., Array]:
    """An initializer filling arrays with ``value``."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Array:
        return xnp.full(tuple(shape), value, _dtype(dtype))
    return init


def uniform(scale: Any = 1e-2, dtype: Any = None) -> Callable[..., Array]:
    """Uniform values in ``[0, scale)``."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Array:
        dt = _dtype(dtype)
        return random.uniform(key, shape, dt) * xnp.array(scale, dt)
    return init


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Callable[..., Array]:
    """Normal values of standard deviation ``stddev``."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Array:
        dt = _dtype(dtype)
        return random.normal(key, shape, dt) * xnp.array(stddev, dt)
    return init


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0,
                     upper: Any = 2.0) -> Callable[..., Array]:
    """Normal values truncated to ``(lower, upper)`` then scaled by ``stddev`` (no
    variance correction)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Array:
        dt = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, shape, dt) * xnp.array(stddev, dt)
    return init


def _axes_size(shape: Sequence[int], axes: int | Sequence[int]) -> int:
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _compute_fans(shape: Sequence[int], in_axis: int | Sequence[int] = -2,
                  out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = ()) -> tuple[float, float]:
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise InvalidArgumentError(f"can't compute input and output sizes of a "
                                   f"{len(shape)}-dimensional weights tensor with the default "
                                   "in_axis; it must be at least 2-D or give in_axis")
    in_size, out_size = _axes_size(shape, in_axis), _axes_size(shape, out_axis)
    batch = _axes_size(shape, batch_axis)
    receptive = math.prod(shape) / in_size / out_size / batch
    return in_size * receptive, out_size * receptive


def _complex_uniform(key: Any, shape: Sequence[int], dtype: np.dtype) -> Array:
    keys = random.split(key)
    real = np.dtype(np.zeros((), dtype).real.dtype)
    r = xnp.sqrt(2 * random.uniform(keys[0], shape, real)).astype(dtype)
    theta = 2 * np.pi * random.uniform(keys[1], shape, real).astype(dtype)
    return r * xnp.exp(1j * theta)


def _complex_truncated_normal(key: Any, upper: float, shape: Sequence[int],
                              dtype: np.dtype) -> Array:
    keys = random.split(key)
    real = np.dtype(np.zeros((), dtype).real.dtype)
    tt = (1 - xnp.exp(xnp.array(-(upper ** 2), dtype))) * \
        random.uniform(keys[0], shape, real).astype(dtype)
    r = xnp.sqrt(-xnp.log(1 - tt))
    theta = 2 * np.pi * random.uniform(keys[1], shape, real).astype(dtype)
    return r * xnp.exp(1j * theta)


def variance_scaling(scale: Any, mode: str, distribution: str,
                     in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                     batch_axis: int | Sequence[int] = (),
                     dtype: Any = None) -> Callable[..., Array]:
    """Values of variance ``scale / n`` (``n`` from ``mode``: ``fan_in``, ``fan_out``,
    ``fan_avg``, ``fan_geo_avg``), drawn from a ``truncated_normal`` (at two standard
    deviations, variance-corrected), ``normal`` or ``uniform`` distribution."""
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise InvalidArgumentError(f"invalid mode for variance scaling initializer: {mode}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise InvalidArgumentError(f"invalid distribution for variance scaling initializer: "
                                   f"{distribution}")

    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Array:
        shape = tuple(int(s) for s in shape)
        dt = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denom = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                 "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = xnp.array(scale / denom, dt)
        complex_ = dtypes.is_complex(dt)
        if distribution == "truncated_normal":
            if not complex_:
                stddev = xnp.sqrt(variance) / xnp.array(.87962566103423978, dt)
                return random.truncated_normal(key, -2, 2, shape, dt) * stddev
            stddev = xnp.sqrt(variance) / xnp.array(.95311164380491208, dt)
            return _complex_truncated_normal(key, 2, shape, dt) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dt) * xnp.sqrt(variance)
        if not complex_:
            return random.uniform(key, shape, dt, -1) * xnp.sqrt(3 * variance)
        return _complex_uniform(key, shape, dt) * xnp.sqrt(variance)
    return init


def _named(scale: float, mode: str, distribution: str, name: str, doc: str):
    def builder(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Callable[..., Array]:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)
    builder.__name__ = name
    builder.__doc__ = doc
    return builder


glorot_uniform = _named(1.0, "fan_avg", "uniform", "glorot_uniform",
                        "Glorot (Xavier) uniform: ``variance_scaling(1, fan_avg, uniform)``.")
glorot_normal = _named(1.0, "fan_avg", "truncated_normal", "glorot_normal",
                       "Glorot (Xavier) normal: ``variance_scaling(1, fan_avg, "
                       "truncated_normal)``.")
lecun_uniform = _named(1.0, "fan_in", "uniform", "lecun_uniform",
                       "LeCun uniform: ``variance_scaling(1, fan_in, uniform)``.")
lecun_normal = _named(1.0, "fan_in", "truncated_normal", "lecun_normal",
                      "LeCun normal: ``variance_scaling(1, fan_in, truncated_normal)``.")
he_uniform = _named(2.0, "fan_in", "uniform", "he_uniform",
                    "He (Kaiming) uniform: ``variance_scaling(2, fan_in, uniform)``.")
he_normal = _named(2.0, "fan_in", "truncated_normal", "he_normal",
                   "He (Kaiming) normal: ``variance_scaling(2, fan_in, truncated_normal)``.")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Callable[..., Array]:
    """(Semi-)orthogonal matrices over ``column_axis`` and the flattened other axes."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Array:
        shape = tuple(int(s) for s in shape)
        dt = _dtype(dtype)
        if len(shape) < 2:
            raise InvalidArgumentError("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shape):
            return xnp.zeros(shape, dt)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = random.orthogonal(key, n_rows, (), dt, n_cols)
        rest = tuple(np.delete(np.array(shape), column_axis))
        q = xnp.reshape(q, rest + (n_cols,))
        return xnp.array(scale, dt) * xnp.moveaxis(q, -1, column_axis)
    return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1,
                     dtype: Any = None) -> Callable[..., Array]:
    """Convolution kernels that are zero except an orthogonal matrix at the centre tap
    (3-D, 4-D or 5-D shapes, ``fan_in <= fan_out``)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Array:
        shape = tuple(int(s) for s in shape)
        dt = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise InvalidArgumentError("delta orthogonal initializer requires a 3D, 4D or 5D "
                                       "shape")
        if shape[-1] < shape[-2]:
            raise InvalidArgumentError("delta orthogonal: fan_in must be <= fan_out")
        mat = orthogonal(scale, column_axis, dt)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return xnp.zeros(shape, dt).at[centre].set(mat)
    return init


__all__ = ["Initializer", "zeros", "ones", "constant", "uniform", "normal", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal"]
