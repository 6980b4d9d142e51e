"""``tf.test``: device queries. xlapy has no GPU, so the answers are the ones TensorFlow
gives on a CPU-only machine (``gpu_device_name()`` is ``''``)."""
from __future__ import annotations

from typing import Any


def gpu_device_name() -> str:
    """The name of a GPU device, ``''`` when there is none (always, in xlapy)."""
    return ""


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: Any = None) -> bool:
    """``False``: xlapy runs on the CPU."""
    return False


def is_built_with_cuda() -> bool:
    return False


def is_built_with_gpu_support() -> bool:
    return False


def is_built_with_xla() -> bool:
    """``True``: everything compiled by xlapy is compiled by an XLA-compatible compiler."""
    return True


__all__ = ["gpu_device_name", "is_gpu_available", "is_built_with_cuda",
           "is_built_with_gpu_support", "is_built_with_xla"]
