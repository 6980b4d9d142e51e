"""The front end: tracing NumPy-style Python to HLO, ``jit`` / ``function``, eager mode.

- :mod:`.core`: ``Array``, ``Primitive``, ``bind`` (eager execution with an executable cache);
- :mod:`.primitives`: every op, defined once by its HLO lowering;
- :mod:`.tracing`: recording primitives into a builder, captures, must-be-constant signal;
- :mod:`.jit`: ``jit``, ``function``, the compile cache and its recompile reasons;
- :mod:`.lax` and :mod:`.control_flow`: strict XLA-level ops, ``cond``/``while_loop``/``scan``;
- :mod:`.autodiff` and :mod:`.autodiff_rules`: ``grad``/``vjp``/``jvp``, ``GradientTape``;
- :mod:`.variables`: ``Variable``, mutable state that compiled functions read and assign;
- :mod:`.pytree`, :mod:`.dtypes`, :mod:`.source_info`: containers, promotion, user frames.
"""
from __future__ import annotations

from . import lax
from .autodiff import GradientTape, grad, jvp, linearize, stop_gradient, value_and_grad, vjp
from .core import Array, default_backend, set_default_backend
from .jit import CacheInfo, JitFunction, jit, set_recompile_warning_threshold
from .tf_function import EagerFunction, auto_jit, function, set_auto_jit
from .pytree import register_pytree_node, tree_flatten, tree_map, tree_unflatten
from .variables import Variable

# xlapy.numpy installs Array's operators and methods; importing it here means any use of
# the front end has complete Arrays.
from .. import numpy as _numpy  # noqa: E402,F401

__all__ = ["Array", "jit", "function", "JitFunction", "EagerFunction", "CacheInfo", "lax",
           "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_map", "auto_jit", "set_auto_jit",
           "set_default_backend", "default_backend", "set_recompile_warning_threshold",
           "grad", "value_and_grad", "vjp", "jvp", "linearize", "stop_gradient", "GradientTape",
           "Variable"]
