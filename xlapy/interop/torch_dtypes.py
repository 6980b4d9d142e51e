"""PyTorch dtypes and the NumPy dtypes xlapy computes them in."""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import torch

from ..errors import UnimplementedError

_TO_NUMPY = {torch.float32: np.dtype(np.float32), torch.float16: np.dtype(np.float16),
             torch.bfloat16: np.dtype(ml_dtypes.bfloat16), torch.int32: np.dtype(np.int32),
             torch.int64: np.dtype(np.int64), torch.int16: np.dtype(np.int16),
             torch.int8: np.dtype(np.int8), torch.uint8: np.dtype(np.uint8),
             torch.bool: np.dtype(np.bool_)}

# Dtypes xlapy computes exactly as PyTorch does. 64-bit integers are computed in 32 bits
# (x64 off, as in JAX); that is exact for indices and counts below 2**31, which the
# backend checks on every integer input. 64-bit floats and complex numbers are not
# lowered: a graph with them runs in PyTorch.
SUPPORTED = frozenset(_TO_NUMPY)


def to_numpy_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype of a ``torch.dtype``; an error naming it when xlapy has none."""
    try:
        return _TO_NUMPY[dtype]
    except KeyError:
        raise UnimplementedError(f"torch dtype {dtype} has no xlapy lowering") from None
