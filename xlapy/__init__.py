"""xlapy: an XLA-compatible machine-learning compiler written in Python.

HLO text is the interchange format: ``xlapy.hlo.parse_module`` reads what the
real XLA dumps, ``xlapy.run_hlo`` runs it.
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import errors  # noqa: E402
from .client import optimize, run_hlo  # noqa: E402
from .client.devices import (device_count, devices, local_device_count,  # noqa: E402
                             local_devices, process_count, process_index)

__all__ = ["__version__", "errors", "optimize", "run_hlo", "jit", "function", "numpy", "lax",
           "grad", "value_and_grad", "vjp", "jvp", "linearize", "stop_gradient", "GradientTape",
           "Variable", "vmap", "pmap", "devices", "local_devices", "device_count",
           "local_device_count", "process_index", "process_count", "distributed", "debug",
           "pure_callback", "io_callback", "ShapeDtypeStruct", "jacfwd", "jacrev", "hessian",
           "custom_jvp", "custom_vjp", "checkpoint", "remat", "checkpoint_policies",
           "checkpoint_name", "eval_shape", "make_jaxpr", "disable_jit", "block_until_ready",
           "tree_util", "tree", "sharding", "device_put", "shard_map", "experimental",
           "make_array_from_callback", "profiler"]

# The front end is imported on first use so that ``import xlapy`` stays cheap.
_FRONTEND_EXPORTS = {"jit", "function", "Array", "register_pytree_node", "tree_flatten",
                     "tree_unflatten", "tree_map", "set_default_backend", "default_backend",
                     "grad", "value_and_grad", "vjp", "jvp", "linearize", "stop_gradient",
                     "GradientTape", "Variable", "vmap", "pmap", "pure_callback",
                     "io_callback", "ShapeDtypeStruct", "jacfwd", "jacrev", "hessian",
                     "custom_jvp", "custom_vjp", "checkpoint", "remat", "checkpoint_policies",
                     "checkpoint_name", "eval_shape", "make_jaxpr", "disable_jit",
                     "block_until_ready", "tree_leaves", "tree_structure", "device_put",
                     "shard_map", "make_array_from_callback"}


def __getattr__(name: str):
    import importlib
    if name in _FRONTEND_EXPORTS:
        return getattr(importlib.import_module(".frontend", __name__), name)
    if name in ("numpy", "lax", "frontend", "nn", "random", "scipy", "ops", "keras", "tf",
                "distributed", "debug", "tree_util", "tree", "sharding", "experimental",
                "profiler"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'xlapy' has no attribute {name!r}")
