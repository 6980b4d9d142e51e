"""Keys (``key``, ``PRNGKey``, ``split``, ``fold_in``), ``bits`` and the argument checks
shared by every sampler.

Keys are raw ``uint32[2]`` arrays, JAX's legacy ``PRNGKey`` representation; JAX's typed
key arrays (``jax.random.key`` returning a scalar of a key dtype) are not modelled, so
``key(seed)`` returns the same ``uint32[2]`` array as ``PRNGKey(seed)``.
"""
from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes, lax
from ..frontend.core import Array, to_array
from ..frontend.tracing import concrete_value
from . import _threefry as tf


# ----------------------------------------------------------------------------- checks
def check_key(name: str, key: Any) -> Array:
    """``key`` as an Array, checked to be one ``uint32[2]`` key."""
    try:
        k = to_array(key)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"random.{name}: key must be a uint32[2] array: {e}") \
            from None
    if k.dtype != tf.UINT32 or k.shape != (2,):
        hint = (" (a batch of keys; map over it with a Python loop or lax.scan)"
                if k.dtype == tf.UINT32 and k.shape[-1:] == (2,) else "")
        raise InvalidArgumentError(
            f"random.{name}: key must be a uint32[2] array from random.key / PRNGKey / split, "
            f"got {k.type_text()}{hint}")
    return k


def check_shape(name: str, shape: Any) -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints, all static) as a tuple of ints >= 0.

    A jit argument in the shape makes jit specialize on its value (must-be-constant, see
    ``xlapy.frontend.tracing``); a shape computed from traced values is an error.
    """
    what = f"random.{name} shape"
    if isinstance(shape, (Array, np.ndarray)):
        shape = concrete_value(shape, what).tolist()
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    out = []
    for d in dims:
        if isinstance(d, Array):
            d = concrete_value(d, what)
            d = d.item() if d.ndim == 0 else d
        if isinstance(d, (bool, np.bool_)) or isinstance(d, float):
            raise InvalidArgumentError(f"random.{name}: shape {shape!r} must hold integers")
        try:
            v = operator.index(d)
        except TypeError:
            raise InvalidArgumentError(f"random.{name}: shape {shape!r} must hold integers, "
                                       f"got {type(d).__name__}") from None
        if v < 0:
            raise InvalidArgumentError(f"random.{name}: shape {shape!r} has a negative "
                                       "dimension")
        out.append(v)
    return tuple(out)


def check_dtype(name: str, dtype: Any, kind: str, default: Any) -> np.dtype:
    """``dtype`` (``default`` when None), canonicalized to 32 bits, of ``kind``:
    ``"float"``, ``"inexact"`` (float or complex), ``"int"`` or ``"uint"``."""
    if dtype is None:
        return np.dtype(default)
    try:
        dt = dtypes.canonicalize(dtype)
    except TypeError:
        raise InvalidArgumentError(f"random.{name}: {dtype!r} is not a dtype") from None
    ok = {"float": dtypes.is_float(dt), "inexact": dtypes.is_inexact(dt),
          "int": dtypes.is_integer(dt), "uint": dt.kind == "u"}[kind]
    if not ok:
        what = {"float": "a floating-point", "inexact": "a floating-point or complex",
                "int": "an integer", "uint": "an unsigned integer"}[kind]
        raise InvalidArgumentError(f"random.{name}: dtype must be {what} dtype, got {dt}")
    return dt


def check_broadcast(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
    """Parameters must broadcast to exactly ``shape`` (JAX's rule)."""
    from ..numpy import broadcast_shapes
    try:
        out = broadcast_shapes(shape, *param_shapes)
    except InvalidArgumentError:
        out = None
    if out != shape:
        raise InvalidArgumentError(
            f"random.{name}: parameter shapes {', '.join(map(str, param_shapes))} must "
            f"broadcast to the requested shape {shape}")


# ------------------------------------------------------------------------------- keys
def _seed_array(seed: Any) -> Array:
    if isinstance(seed, (bool, np.bool_)):
        return to_array(np.uint32(bool(seed)))
    if isinstance(seed, int):
        if not -2 ** 63 <= seed < 2 ** 63:
            raise InvalidArgumentError(f"random.key: seed {seed} does not fit in int64")
        return to_array(np.uint32(seed & 0xFFFFFFFF))
    return to_array(seed)       # 64-bit NumPy integers wrap to 32 bits here


def key(seed: Any) -> Array:
    """A ``uint32[2]`` key from an integer seed (a Python int in the int64 range, either
    sign, or an integer scalar array, possibly traced), like ``jax.random.PRNGKey`` with
    x64 off: ``(0, seed mod 2**32)``."""
    s = _seed_array(seed)
    if s.ndim != 0:
        raise InvalidArgumentError(f"random.key: seed must be a scalar, got {s.type_text()}")
    if not (dtypes.is_integer(s.dtype) or s.dtype == np.bool_):
        raise InvalidArgumentError(f"random.key: seed must be an integer, got {s.type_text()}")
    return tf.seed_to_key(s)


PRNGKey = key


def split(key: Any, num: int | Sequence[int] = 2) -> Array:
    """``num`` new keys (a ``uint32[num, 2]`` array; a tuple ``num`` gives
    ``uint32[*num, 2]``)."""
    k = check_key("split", key)
    return tf.split_key(k, check_shape("split", num))


def fold_in(key: Any, data: Any) -> Array:
    """A new key from ``key`` and a 32-bit integer ``data`` (a Python int in
    ``[0, 2**32)`` or an integer scalar array, wrapped to ``uint32``)."""
    k = check_key("fold_in", key)
    if isinstance(data, int) and not isinstance(data, bool):
        if not 0 <= data < 2 ** 32:
            raise InvalidArgumentError(f"random.fold_in: data {data} is out of bounds for "
                                       "uint32")
        d = to_array(np.uint32(data))
    else:
        d = to_array(data)      # 64-bit NumPy integers wrap to 32 bits here
        if d.ndim != 0 or not (dtypes.is_integer(d.dtype) or d.dtype == np.bool_):
            raise InvalidArgumentError(f"random.fold_in: data must be an integer scalar, got "
                                       f"{d.type_text()}")
        d = lax.convert_element_type(d, tf.UINT32)
    return tf.fold_in_key(k, d)


def key_data(keys: Any) -> Array:
    """The ``uint32`` words of a key array (keys are raw ``uint32[..., 2]`` arrays here)."""
    k = to_array(keys)
    if k.dtype != tf.UINT32 or k.shape[-1:] != (2,):
        raise InvalidArgumentError(f"random.key_data: expected uint32[..., 2] keys, got "
                                   f"{k.type_text()}")
    return k


wrap_key_data = key_data


def bits(key: Any, shape: Any = (), dtype: Any = None) -> Array:
    """Uniform random unsigned integers of ``shape`` and ``dtype`` (``uint8``, ``uint16``
    or ``uint32``, the default; ``uint64`` is canonicalized to ``uint32`` as x64 is off)."""
    k = check_key("bits", key)
    dt = check_dtype("bits", dtype, "uint", tf.UINT32)
    return tf.random_bits(k, dt.itemsize * 8, check_shape("bits", shape))


__all__ = ["key", "PRNGKey", "split", "fold_in", "bits", "key_data", "wrap_key_data",
           "check_key", "check_shape", "check_dtype", "check_broadcast"]
