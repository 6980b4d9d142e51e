"""Key paths of pytree leaves, as ``jax.tree_util`` gives them.

A leaf's path is a tuple of keys from the root: :class:`SequenceKey` (tuple and list
positions), :class:`DictKey` (dict keys), :class:`GetAttrKey` (namedtuple and dataclass
fields) and :class:`FlattenedIndexKey` (children of registered types); :func:`keystr`
joins them (``['w'][0].bias``). The flattening order is :func:`~.pytree.tree_flatten`'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable

from .pytree import (_REGISTRY, FIELD_NAMES, LEAF, TreeDef, _children, _is_namedtuple,
                     tree_unflatten)


@dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclass(frozen=True)
class DictKey:
    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclass(frozen=True)
class FlattenedIndexKey:
    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyPath = tuple[Any, ...]


def _keys(x: Any, kind: Any, aux: Any, n: int) -> list[Any]:
    if n == 0:
        return []
    if kind in FIELD_NAMES:
        return [GetAttrKey(name) for name in FIELD_NAMES[kind]]
    if kind in ("tuple", "list"):
        return [SequenceKey(i) for i in range(n)]
    if kind == "dict":
        return [DictKey(k) for k in aux]
    if kind in _REGISTRY:
        return [FlattenedIndexKey(i) for i in range(n)]
    if _is_namedtuple(x):
        return [GetAttrKey(f) for f in type(x)._fields]
    return [GetAttrKey(name) for name in aux]          # dataclass: aux holds field names


def tree_flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                           ) -> tuple[list[tuple[KeyPath, Any]], TreeDef]:
    """``([(key path, leaf), ...], treedef)`` (``jax.tree_util.tree_flatten_with_path``)."""
    out: list[tuple[KeyPath, Any]] = []

    def visit(x: Any, path: KeyPath) -> TreeDef:
        node = None if is_leaf is not None and is_leaf(x) else _children(x)
        if node is None:
            out.append((path, x))
            return LEAF
        kind, aux, kids, _ = node
        keys = _keys(x, kind, aux, len(kids))
        return TreeDef(kind, aux, tuple(visit(k, path + (key,)) for k, key in zip(kids, keys)))

    treedef = visit(tree, ())
    return out, treedef


def tree_leaves_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                          ) -> list[tuple[KeyPath, Any]]:
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(fn: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``fn(path, leaf, *others)`` over the leaves of ``tree`` (and of ``rest``, which
    must have its structure)."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    others = []
    for r in rest:
        lv, td = tree_flatten_with_path(r, is_leaf)
        if td != treedef:
            from ..errors import InvalidArgumentError
            raise InvalidArgumentError(f"tree_map_with_path: structures differ: {treedef!r} "
                                       f"vs {td!r}")
        others.append([leaf for _, leaf in lv])
    return tree_unflatten(treedef, [fn(p, leaf, *xs) for (p, leaf), *xs in
                                    zip(pairs, *others)])


def keystr(path: KeyPath) -> str:
    """The key path as text: ``['w'][0].bias``."""
    return "".join(str(k) for k in path)


__all__ = ["SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey", "tree_flatten_with_path",
           "tree_leaves_with_path", "tree_map_with_path", "keystr"]
