"""``tf.linalg``: matrix products on ``xlapy.numpy`` (``tf.matmul``, ``tf.tensordot`` and
``tf.einsum`` are the same functions)."""
from __future__ import annotations

from typing import Any

from .. import numpy as xnp
from ..errors import InvalidArgumentError
from ..frontend.core import Array
from ._array_ops import eye
from ._common import tensor, tf_dtype, unsupported


def _prepare(x: Array, transpose: bool, adjoint: bool, which: str) -> Array:
    if transpose and adjoint:
        raise InvalidArgumentError(f"tf.linalg.matmul: transpose_{which} and adjoint_{which} "
                                   "cannot both be True")
    if x.ndim < 2 and (transpose or adjoint):
        raise InvalidArgumentError(f"tf.linalg.matmul: {which} must be a matrix to transpose")
    if transpose or adjoint:
        x = xnp.swapaxes(x, -1, -2)
    return xnp.conj(x) if adjoint else x


def matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
           adjoint_a: bool = False, adjoint_b: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, output_type: Any = None, grad_a: bool = False,
           grad_b: bool = False, name: str | None = None) -> Array:
    """Matrix product of the last two dimensions (leading dimensions are batch dimensions
    and broadcast); ``transpose_*``/``adjoint_*`` swap (and conjugate) an operand's last
    two dimensions first. The ``*_is_sparse`` hints are accepted (dense either way)."""
    x = _prepare(tensor(a), transpose_a, adjoint_a, "a")
    y = _prepare(tensor(b), transpose_b, adjoint_b, "b")
    if x.ndim < 2 or y.ndim < 2:
        raise InvalidArgumentError(f"tf.linalg.matmul needs matrices (rank >= 2), got "
                                   f"{x.type_text()} and {y.type_text()}")
    out = xnp.matmul(x, y)
    if output_type is not None and tf_dtype(output_type) != out.dtype:
        raise unsupported("tf.linalg.matmul", "output_type", output_type,
                          "the product has the operands' dtype; cast it")
    return out


def matvec(a: Any, b: Any, transpose_a: bool = False, adjoint_a: bool = False,
           name: str | None = None) -> Array:
    """Matrix-vector product over the last dimensions."""
    x = _prepare(tensor(a), transpose_a, adjoint_a, "a")
    return xnp.squeeze(xnp.matmul(x, xnp.expand_dims(tensor(b), -1)), -1)


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Array:
    """Sum over ``axes`` (an int: the last/first ``axes`` dims; or two lists of axes)."""
    return xnp.tensordot(tensor(a), tensor(b), axes)


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Array:
    """Einstein summation (``'ij,jk->ik'``; ``...`` for broadcast dimensions)."""
    extra = {k: v for k, v in kwargs.items() if k != "name" and v is not None}
    if extra:
        k = next(iter(extra))
        raise unsupported("tf.einsum", k, extra[k], "only the equation and the operands")
    return xnp.einsum(equation, *[tensor(x) for x in inputs])


def matrix_transpose(a: Any, conjugate: bool = False, name: str | None = None) -> Array:
    x = xnp.swapaxes(tensor(a), -1, -2)
    return xnp.conj(x) if conjugate else x


def trace(x: Any, name: str | None = None) -> Array:
    """The sum of the main diagonal of the last two dimensions."""
    return xnp.trace(tensor(x), axis1=-2, axis2=-1)


__all__ = ["matmul", "matvec", "tensordot", "einsum", "matrix_transpose", "trace", "eye"]
