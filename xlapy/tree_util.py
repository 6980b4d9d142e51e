"""``xlapy.tree_util``: JAX's ``jax.tree_util`` names over :mod:`xlapy.frontend.pytree`.

Containers are tuples, lists, dicts (sorted keys), ``None``, namedtuples, dataclasses and
registered types (:func:`register_pytree_node`, :func:`register_pytree_node_class`,
:func:`register_dataclass`); everything else is a leaf. Key paths (``tree_flatten_with_path``,
``tree_map_with_path``, ``keystr``) are JAX's.
"""
from __future__ import annotations

from .frontend.pytree import (TreeDef, register_dataclass, register_pytree_node,
                              register_pytree_node_class, tree_all, tree_flatten, tree_leaves,
                              tree_map, tree_reduce, tree_structure, tree_unflatten)
from .frontend.pytree_keys import (DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey, keystr,
                                   tree_flatten_with_path, tree_leaves_with_path,
                                   tree_map_with_path)

PyTreeDef = TreeDef

__all__ = ["PyTreeDef", "TreeDef", "register_dataclass", "register_pytree_node",
           "register_pytree_node_class", "tree_all", "tree_flatten", "tree_flatten_with_path",
           "tree_leaves", "tree_leaves_with_path", "tree_map", "tree_map_with_path",
           "tree_reduce", "tree_structure", "tree_unflatten", "keystr", "SequenceKey",
           "DictKey", "GetAttrKey", "FlattenedIndexKey"]
