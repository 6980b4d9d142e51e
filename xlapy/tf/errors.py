"""``tf.errors``: TensorFlow's error names for xlapy's error types.

``InvalidArgumentError`` is raised for invalid arguments and for code that cannot be
compiled under ``jit_compile=True`` (must-compile semantics), as in TF.
"""
from __future__ import annotations

from ..errors import ExecutionError, InvalidArgumentError, UnimplementedError, XlapyError

OpError = XlapyError
InternalError = ExecutionError

__all__ = ["OpError", "InvalidArgumentError", "UnimplementedError", "InternalError"]
