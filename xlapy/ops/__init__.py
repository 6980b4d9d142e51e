"""``xlapy.ops``: segment reductions (``jax.ops``).

``segment_sum(data, segment_ids, num_segments)`` reduces the rows of ``data`` that share
a segment id, with a scatter of the matching combiner. As in JAX, ``num_segments``
fixes the output size (default: ``max(segment_ids) + 1``, which needs concrete ids),
ids outside ``[0, num_segments)`` are dropped, and empty segments hold the reduction's
identity (0 for sums, 1 for products, the dtype's lowest/highest value for max/min).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes
from ..frontend.core import Array
from ..frontend.tracing import concrete_int, concrete_value
from .. import numpy as xnp
from ..numpy._indexing import scatter_update


def _segment(kind: str, data: Any, segment_ids: Any, num_segments: int | None,
             indices_are_sorted: bool, unique_indices: bool, bucket_size: Any,
             mode: Any) -> Array:
    x = xnp.asarray(data)
    ids = xnp.asarray(segment_ids)
    if not dtypes.is_integer(ids.dtype):
        raise InvalidArgumentError(f"segment_{kind}: segment_ids must be integers, got "
                                   f"{ids.dtype}")
    if ids.ndim != 1 or x.ndim < 1 or ids.shape[0] != x.shape[0]:
        raise InvalidArgumentError(f"segment_{kind}: segment_ids {ids.type_text()} must be "
                                   f"1-D with one id per row of data {x.type_text()}")
    if num_segments is None:
        v = np.asarray(concrete_value(ids, f"segment_{kind} ids (or pass num_segments)"))
        num_segments = int(v.max()) + 1 if v.size else 0
    n = concrete_int(num_segments, f"segment_{kind} num_segments")
    if kind == "sum":
        init = 0
    elif kind == "prod":
        init = 1
    elif dtypes.is_float(x.dtype):
        init = -np.inf if kind == "max" else np.inf
    elif x.dtype == np.bool_:
        init = kind != "max"
    else:
        info = np.iinfo(x.dtype)
        init = info.min if kind == "max" else info.max
    out = xnp.full((n,) + x.shape[1:], init, x.dtype)
    ids = ids.astype(np.int32)
    # out-of-range ids are dropped (the scatter skips out-of-bounds rows; negative ids
    # would otherwise wrap)
    ids = xnp.where((ids < 0) | (ids >= n), n, ids)
    combiner = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}[kind]
    return scatter_update(out, ids, x, combiner, mode="drop")


def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: Any = None, mode: Any = None) -> Array:
    """Sums of the rows of ``data`` per segment id."""
    return _segment("sum", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode)


def segment_prod(data: Any, segment_ids: Any, num_segments: int | None = None,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 bucket_size: Any = None, mode: Any = None) -> Array:
    """Products of the rows of ``data`` per segment id."""
    return _segment("prod", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode)


def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: Any = None, mode: Any = None) -> Array:
    """Maxima of the rows of ``data`` per segment id."""
    return _segment("max", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode)


def segment_min(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: Any = None, mode: Any = None) -> Array:
    """Minima of the rows of ``data`` per segment id."""
    return _segment("min", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode)


__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]
