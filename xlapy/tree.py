"""``xlapy.tree``: JAX's short names (``jax.tree.map``, ``jax.tree.flatten`` ...) for the
functions of :mod:`xlapy.tree_util`."""
from __future__ import annotations

from .frontend.pytree import tree_all as all  # noqa: A001
from .frontend.pytree import tree_flatten as flatten
from .frontend.pytree import tree_leaves as leaves
from .frontend.pytree import tree_map as map  # noqa: A001
from .frontend.pytree import tree_reduce as reduce  # noqa: A001
from .frontend.pytree import tree_structure as structure
from .frontend.pytree import tree_unflatten as unflatten

__all__ = ["all", "flatten", "leaves", "map", "reduce", "structure", "unflatten"]
