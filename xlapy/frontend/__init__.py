"""The front end: tracing NumPy-style Python to HLO, ``jit`` / ``function``, eager mode.

- :mod:`.core`: ``Array``, ``Primitive`` (an op and its rules), ``bind`` (eager execution
  with an executable cache);
- the family files, each primitive's whole story (lowering, vjp/jvp, batching rule):
  :mod:`.primitives_elementwise`, :mod:`.primitives_data_movement`,
  :mod:`.primitives_reduction`, :mod:`.primitives_linalg`, :mod:`.primitives_nn` and
  :mod:`.control_flow` (``cond``/``switch``/``while_loop``/``fori_loop``/``scan``);
- :mod:`.lax`: strict ``bind`` wrappers; :mod:`.lax_composite` and :mod:`.lax_nn`: ops
  built from several primitives, convolutions and windowed reductions (all public as
  ``xlapy.lax``);
- :mod:`.tracing`: recording primitives into a builder, captures, must-be-constant signal;
- :mod:`.jit`: ``jit``, ``function``, the compile cache and its recompile reasons;
- :mod:`.autodiff` and :mod:`.autodiff_forward`: ``grad``/``vjp``/``jvp``, ``GradientTape``;
  :mod:`.jacobians` (``jacfwd``/``jacrev``/``hessian``), :mod:`.custom_derivatives`
  (``custom_jvp``/``custom_vjp``), :mod:`.checkpoint` (``checkpoint``/``remat``, policies);
- :mod:`.program`: recorded programs (the primitives a function applied), which
  :mod:`.abstract` prints (``make_jaxpr``; also ``eval_shape``, ``ShapeDtypeStruct``) and
  ``checkpoint`` replays;
- :mod:`.batching`: ``vmap`` (the batch trace; rules beside their primitives, control
  flow's in :mod:`.control_flow_batching`); :mod:`.pmap`: ``pmap`` over devices, with the
  named-axis collectives of :mod:`.primitives_collective`;
- :mod:`.sharding`: ``Mesh``/``NamedSharding``, ``jit(in_shardings=...)``, ``ShardedArray``;
  :mod:`.shard_map`: per-device code over a mesh; :mod:`.sharded_step`: Variables holding
  their shards and the SPMD step that trains them (Keras distributions);
- :mod:`.variables`: ``Variable``, mutable state that compiled functions read and assign;
- :mod:`.callbacks`: ``pure_callback``, ``io_callback``, host printing (Python called from
  compiled code);
- :mod:`.pytree`, :mod:`.dtypes`, :mod:`.source_info`: containers, promotion, user frames.
"""
from __future__ import annotations

# The family files register their primitives (and rules) when imported.
from . import (control_flow, control_flow_batching,  # noqa: F401
               primitives_collective, primitives_data_movement, primitives_eig,
               primitives_elementwise, primitives_fft, primitives_linalg, primitives_misc,
               primitives_nn, primitives_reduction)
from .abstract import ShapeDtypeStruct, block_until_ready, eval_shape, make_jaxpr
from .callbacks import io_callback, pure_callback
from .autodiff import GradientTape, grad, stop_gradient, value_and_grad, vjp
from .autodiff_forward import jvp, linearize
from .batching import vmap
from .checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat
from .pmap import pmap
from .core import Array, default_backend, set_default_backend
from .device_array import DeviceArray  # noqa: F401  (installs core.DEVICE_ARRAY)
from .custom_derivatives import custom_jvp, custom_vjp
from .jacobians import hessian, jacfwd, jacrev
from .jit import CacheInfo, JitFunction, disable_jit, jit, set_recompile_warning_threshold
from . import sharding as _sharding  # noqa: F401  (installs jit's in_shardings support)
from .sharding import device_put, make_array_from_callback
from .shard_map import shard_map
from .tf_function import EagerFunction, auto_jit, function, set_auto_jit
from .pytree import (register_pytree_node, tree_flatten, tree_leaves, tree_map,  # noqa: F401
                     tree_structure, tree_unflatten)
from .variables import Variable

# xlapy.lax and xlapy.numpy install the public op namespace and Array's operators and
# methods; importing them here means any use of the front end has complete Arrays.
from .. import lax as _lax_namespace  # noqa: E402,F401
from .. import numpy as _numpy  # noqa: E402,F401

__all__ = ["Array", "jit", "function", "JitFunction", "EagerFunction", "CacheInfo", "lax",
           "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_map", "auto_jit", "set_auto_jit",
           "set_default_backend", "default_backend", "set_recompile_warning_threshold",
           "grad", "value_and_grad", "vjp", "jvp", "linearize", "stop_gradient", "GradientTape",
           "Variable", "vmap", "pmap", "pure_callback", "io_callback", "ShapeDtypeStruct",
           "jacfwd", "jacrev", "hessian", "custom_jvp", "custom_vjp", "checkpoint", "remat",
           "checkpoint_policies", "checkpoint_name", "eval_shape", "make_jaxpr", "disable_jit",
           "block_until_ready", "device_put"]
