"""``xlapy.tf``: a TensorFlow-flavoured namespace over xlapy, so TF 2 code runs with
``import xlapy.tf as tf`` in place of ``import tensorflow as tf``::

    import xlapy.tf as tf

    @tf.function(jit_compile=True)
    def model_fn(x, y, z):
        return tf.reduce_sum(x + y * z)

    model_fn(tf.ones([8]), tf.ones([8]), tf.ones([8]))

It is a mapping onto xlapy's own pieces, not a second implementation:

- ``tf.function`` is ``xlapy.function`` (``jit_compile=True/False/None``; None follows
  ``tf.config.optimizer.set_jit``, see ``_function``);
- ``tf.Tensor`` is ``xlapy.Array`` (for ``isinstance``); ``tf.Variable`` and
  ``tf.GradientTape`` are ``xlapy.Variable`` and ``xlapy.GradientTape``;
- the ops (``tf.reduce_sum``, ``tf.gather`` ..., ``tf.math``, ``tf.linalg``) are written
  with ``xlapy.numpy`` / ``xlapy.lax`` with TF's signatures and semantics (modules
  ``_array_ops``, ``math``, ``linalg``); ``tf.nn`` uses ``xlapy.nn`` (``nn``);
- ``tf.random``: stateful generators over ``xlapy.random`` keys (``random``);
- ``tf.keras`` *is* ``xlapy.keras``;
- ``tf.data.Dataset``: a small pipeline of Python stages (``data``);
- ``tf.config``, ``tf.test``: the JIT switch and a CPU-only device list;
- ``tf.distribute``: ``MirroredStrategy`` (local CPU devices), ``MultiWorkerMirroredStrategy``
  (MPI processes); ``all_reduce`` lowers to HLO ``all-reduce``.

What is not TensorFlow: 64-bit types compute as 32-bit (x64 off, like JAX); mixed dtypes
promote (TF would raise); ``tf.shape`` returns static NumPy values; dtypes are NumPy
dtypes; random numbers are threefry's, not Philox's; ``tf.print``, ``tf.py_function`` and
``tf.numpy_function`` also run inside ``jit_compile=True`` functions (host callbacks,
``_host_functions``); there are no graphs, strings,
ragged or sparse tensors; ``name=`` arguments are accepted and unused. TF arguments
whose values xlapy cannot honour raise ``InvalidArgumentError`` naming the argument.
"""
from __future__ import annotations

import builtins
import enum

from .. import keras
from ..frontend.autodiff import GradientTape
from ..frontend import core as _core
from ..frontend.core import Array, current_trace
from ..frontend.variables import Variable
from . import (compat, config, data, debugging, distribute, dtypes, errors, linalg, math, nn,
               random, test)
from ._array_ops import (Unique, argsort, boolean_mask, broadcast_to, cast, clip_by_global_norm,
                         clip_by_norm, clip_by_value, concat, constant, convert_to_tensor,
                         expand_dims, eye, fill, gather, gather_nd, global_norm, identity,
                         linspace, one_hot, ones, ones_like, pad, range, rank, reshape,
                         reverse, scatter_nd, shape, size, slice, sort, split, squeeze, stack,
                         stop_gradient, tensor_scatter_nd_add, tensor_scatter_nd_update, tile,
                         transpose, unique, unstack, where, zeros, zeros_like)
from ._function import TensorSpec, cond, function, switch_case, while_loop
from ._replicas import VariableAggregation
from ._host_functions import numpy_function, py_function
from .debugging import print_ as print  # noqa: A001  (TF's name)
from .dtypes import (DType, as_dtype, bfloat16, bool, complex64, complex128, double,  # noqa: A004
                     float16, float32, float64, half, int8, int16, int32, int64, uint8,
                     uint16, uint32, uint64)
from .linalg import einsum, matmul, tensordot
from .math import (abs, acos, add, add_n, argmax, argmin, asin, atan, atan2, cos, cosh, cumsum,
                   divide, equal, exp, floor, greater, greater_equal, less, less_equal, log,
                   logical_and, logical_not, logical_or, maximum, minimum, multiply, negative,
                   not_equal, pow, reduce_all, reduce_any, reduce_logsumexp, reduce_max,
                   reduce_mean, reduce_min, reduce_prod, reduce_std, reduce_sum,
                   reduce_variance, round, sigmoid, sign, sin, sinh, sqrt, square, subtract,
                   tan, tanh, truediv)

Tensor = Array
newaxis = None


class UnconnectedGradients(str, enum.Enum):
    """``GradientTape.gradient(..., unconnected_gradients=...)``: ``NONE`` or ``ZERO``."""

    NONE = "none"
    ZERO = "zero"


def executing_eagerly() -> builtins.bool:
    """False while a compiled function is traced or a ``tf.function`` is recorded as a
    graph, True otherwise (op by op)."""
    return current_trace() is None and not _core._RECORDERS.items


def is_tensor(x: object) -> builtins.bool:
    """True for xlapy arrays (``tf.Tensor``) and Variables."""
    return isinstance(x, (Array, Variable))


__all__ = [
    # modules
    "keras", "math", "nn", "random", "data", "config", "distribute", "debugging", "errors",
    "compat", "test", "dtypes", "linalg",
    # core
    "function", "TensorSpec", "GradientTape", "Variable", "Tensor", "UnconnectedGradients",
    "VariableAggregation",
    "executing_eagerly", "is_tensor", "cond", "switch_case", "while_loop", "print",
    "newaxis", "numpy_function", "py_function",
    # dtypes
    "DType", "as_dtype", "bfloat16", "bool", "complex64", "complex128", "double", "float16",
    "float32", "float64", "half", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64",
    # array ops
    "Unique", "argsort", "boolean_mask", "broadcast_to", "cast", "clip_by_global_norm",
    "clip_by_norm", "clip_by_value", "concat", "constant", "convert_to_tensor",
    "expand_dims", "eye", "fill", "gather", "gather_nd", "global_norm", "identity",
    "linspace", "one_hot", "ones", "ones_like", "pad", "range", "rank", "reshape", "reverse",
    "scatter_nd", "shape", "size", "slice", "sort", "split", "squeeze", "stack",
    "stop_gradient", "tensor_scatter_nd_add", "tensor_scatter_nd_update", "tile",
    "transpose", "unique", "unstack", "where", "zeros", "zeros_like",
    # math and linalg
    "abs", "acos", "add", "add_n", "argmax", "argmin", "asin", "atan", "atan2", "cos", "cosh",
    "cumsum", "divide", "equal", "exp", "floor", "greater", "greater_equal", "less",
    "less_equal", "log", "logical_and", "logical_not", "logical_or", "maximum", "minimum",
    "multiply", "negative", "not_equal", "pow", "reduce_all", "reduce_any",
    "reduce_logsumexp", "reduce_max", "reduce_mean", "reduce_min", "reduce_prod",
    "reduce_std", "reduce_sum", "reduce_variance", "round", "sigmoid", "sign", "sin", "sinh",
    "sqrt", "square", "subtract", "tan", "tanh", "truediv", "einsum", "matmul", "tensordot",
]
