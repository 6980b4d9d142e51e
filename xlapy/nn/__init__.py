"""``xlapy.nn``: neural-network functions that run eagerly, trace under ``jit`` and
differentiate with ``xlapy.grad``.

- activations with ``jax.nn`` semantics: :func:`relu`, :func:`relu6`, :func:`leaky_relu`,
  :func:`elu`, :func:`celu`, :func:`selu`, :func:`gelu`, :func:`silu` / :func:`swish`,
  :func:`mish`, :func:`sigmoid`, :func:`log_sigmoid`, :func:`softplus`,
  :func:`soft_sign`, :func:`hard_tanh`, :func:`hard_sigmoid`, :func:`hard_silu`,
  :func:`glu`;
- :func:`softmax`, :func:`log_softmax` (stable, over any axes), :func:`logsumexp`,
  :func:`one_hot`, :func:`standardize` (alias :func:`normalize`);
- Keras-style layers as functions: :func:`conv` (N-D, strides, dilation, groups,
  ``'same'``/``'valid'``/``'causal'``/explicit padding, channels-last by default),
  :func:`max_pool` and :func:`avg_pool`;
- :func:`dot_product_attention` (JAX's layout, grouped-query heads, masks, causal and
  local windows), :func:`scaled_matmul`, and :mod:`xlapy.nn.initializers`.

The XLA-level building blocks (``conv_general_dilated``, ``reduce_window``, ...) are in
:mod:`xlapy.frontend.lax_nn`.
"""
from __future__ import annotations

from ._activations import (celu, elu, gelu, glu, hard_sigmoid, hard_silu, hard_swish,
                           hard_tanh, leaky_relu, log_sigmoid, log_softmax, logsumexp, mish,
                           normalize, one_hot, relu, relu6, selu, sigmoid, silu, soft_sign,
                           softmax, softplus, standardize, swish)
from ._conv_pool import avg_pool, conv, max_pool
from ._attention import (dot_product_attention, identity, log1mexp, logmeanexp,
                         scaled_matmul, sparse_plus, sparse_sigmoid, squareplus, tanh)
from . import initializers  # noqa: F401,E402  (xlapy.nn.initializers)

__all__ = ["relu", "relu6", "leaky_relu", "elu", "celu", "selu", "sigmoid", "softplus",
           "log_sigmoid", "silu", "swish", "mish", "gelu", "soft_sign", "hard_tanh",
           "hard_sigmoid", "hard_silu", "hard_swish", "glu", "softmax", "log_softmax",
           "logsumexp", "one_hot", "standardize", "normalize", "conv", "max_pool", "avg_pool",
           "dot_product_attention", "identity", "log1mexp", "logmeanexp", "scaled_matmul",
           "sparse_plus", "sparse_sigmoid", "squareplus", "tanh", "initializers"]
