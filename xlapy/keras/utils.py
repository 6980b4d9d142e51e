"""Utilities: ``to_categorical``, ``set_random_seed``."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .backend import set_random_seed


def to_categorical(y: Any, num_classes: int | None = None, dtype: Any = "float32") -> np.ndarray:
    """One-hot NumPy matrix for integer labels ``y`` (a trailing axis of size 1 is dropped)."""
    y = np.asarray(y)
    if y.ndim and y.shape[-1] == 1 and y.ndim > 1:
        y = y.reshape(y.shape[:-1])
    if y.dtype.kind not in "iu":
        if not np.all(np.equal(np.mod(y, 1), 0)):
            raise InvalidArgumentError("to_categorical expects integer class labels")
        y = y.astype(np.int64)
    if y.size and y.min() < 0:
        raise InvalidArgumentError(f"to_categorical: negative label {int(y.min())}")
    n = int(y.max()) + 1 if num_classes is None else int(num_classes)
    if y.size and y.max() >= n:
        raise InvalidArgumentError(f"to_categorical: label {int(y.max())} is out of range for "
                                   f"num_classes={n}")
    out = np.zeros(y.shape + (n,), dtype=dtype)
    np.put_along_axis(out, y[..., None], 1, axis=-1)
    return out


__all__ = ["to_categorical", "set_random_seed"]
