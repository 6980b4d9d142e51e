"""Pytrees: nested Python containers whose leaves are arrays.

Containers are tuples, lists, dicts (flattened in sorted key order, as JAX does),
``None`` (a container with no children), namedtuples, dataclasses and any type
registered with :func:`register_pytree_node`. Everything else is a leaf.

:func:`tree_flatten` returns the leaves and a hashable :class:`TreeDef`;
:func:`tree_unflatten` rebuilds the structure. :func:`tree_flatten_with_path`
also returns each leaf's path as text (``['w']``, ``[0]``, ``.bias``), which
jit uses to name HLO parameters and to explain recompilations.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Hashable, Iterable

from ..errors import InvalidArgumentError

Flatten = Callable[[Any], tuple[Iterable[Any], Hashable]]
Unflatten = Callable[[Hashable, Iterable[Any]], Any]

_REGISTRY: dict[type, tuple[Flatten, Unflatten]] = {}
# The children's field names of types registered with register_dataclass (key paths).
FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def register_pytree_node(cls: type, flatten: Flatten, unflatten: Unflatten) -> None:
    """Treat instances of ``cls`` as containers.

    ``flatten(obj) -> (children, aux_data)`` with hashable ``aux_data``;
    ``unflatten(aux_data, children) -> obj``.
    """
    if cls in _REGISTRY:
        raise InvalidArgumentError(f"{cls.__name__} is already registered as a pytree node")
    _REGISTRY[cls] = (flatten, unflatten)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: ``cls.tree_flatten(self) -> (children, aux)`` and the classmethod
    ``cls.tree_unflatten(aux, children)`` make its instances containers (JAX's API)."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype: type, data_fields: Iterable[str] | None = None,
                       meta_fields: Iterable[str] | None = None,
                       drop_fields: Iterable[str] = ()) -> type:
    """Register a dataclass whose ``data_fields`` are children and ``meta_fields`` static
    (hashable, part of the structure), as ``jax.tree_util.register_dataclass``.

    Without field lists, ``nodetype`` must be a dataclass: fields declared with
    ``field(metadata={"static": True})`` are meta fields, the other init fields data
    fields. Returns ``nodetype``, so it works as a decorator.
    """
    if data_fields is None or meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise InvalidArgumentError(
                f"register_dataclass: {nodetype.__name__} is not a dataclass; pass "
                "data_fields and meta_fields")
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in
                  set(drop_fields)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    data, meta = tuple(data_fields), tuple(meta_fields)
    overlap = set(data) & set(meta)
    if overlap:
        raise InvalidArgumentError(f"register_dataclass: fields {sorted(overlap)} are both "
                                   "data and meta fields")

    def flatten(x: Any) -> tuple[list[Any], Hashable]:
        return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

    def unflatten(aux: Hashable, kids: Iterable[Any]) -> Any:
        kw = dict(zip(data, kids))
        kw.update(zip(meta, aux))            # type: ignore[call-overload]
        return nodetype(**kw)
    register_pytree_node(nodetype, flatten, unflatten)
    FIELD_NAMES[nodetype] = data
    return nodetype


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


class TreeDef:
    """The structure of a pytree: a node type, its aux data and its children's TreeDefs.

    A leaf is ``TreeDef(None, None, ())``. TreeDefs are hashable and compare by structure.
    """

    __slots__ = ("kind", "aux", "children", "_hash")

    def __init__(self, kind: Any, aux: Hashable, children: tuple["TreeDef", ...]) -> None:
        self.kind = kind
        self.aux = aux
        self.children = children
        self._hash = hash((kind, aux, children))

    @property
    def is_leaf(self) -> bool:
        return self.kind is None

    @property
    def num_leaves(self) -> int:
        return 1 if self.is_leaf else sum(c.num_leaves for c in self.children)

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """The pytree of this structure holding ``leaves`` (``tree_unflatten``)."""
        return tree_unflatten(self, leaves)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeDef) and self._hash == other._hash
                and self.kind == other.kind and self.aux == other.aux
                and self.children == other.children)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        if self.is_leaf:
            return "*"
        name = self.kind if isinstance(self.kind, str) else self.kind.__name__
        return f"{name}({', '.join(map(repr, self.children))})"


LEAF = TreeDef(None, None, ())


def _children(x: Any) -> tuple[Any, Hashable, list[Any], list[str]] | None:
    """(kind, aux, children, child path suffixes) of a container, None for a leaf."""
    if x is None:
        return "None", None, [], []
    t = type(x)
    if t in _REGISTRY:
        kids, aux = _REGISTRY[t][0](x)
        kids = list(kids)
        return t, aux, kids, [f"[{i}]" for i in range(len(kids))]
    if _is_namedtuple(x):
        return t, None, list(x), [f".{f}" for f in t._fields]
    if t is tuple or t is list:
        return t.__name__, len(x), list(x), [f"[{i}]" for i in range(len(x))]
    if t is dict:
        keys = sorted(x, key=_sort_key)
        return "dict", tuple(keys), [x[k] for k in keys], [f"[{k!r}]" for k in keys]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        names = tuple(f.name for f in dataclasses.fields(x))
        return t, names, [getattr(x, n) for n in names], [f".{n}" for n in names]
    return None


def _sort_key(k: Any) -> tuple[str, Any]:
    return (type(k).__name__, k)


def tree_flatten_with_path(tree: Any, prefix: str = "",
                           is_leaf: Callable[[Any], bool] | None = None
                           ) -> tuple[list[Any], list[str], TreeDef]:
    """Leaves, their paths (``prefix`` + suffixes) and the TreeDef of ``tree``."""
    leaves: list[Any] = []
    paths: list[str] = []

    def visit(x: Any, path: str) -> TreeDef:
        node = None if is_leaf is not None and is_leaf(x) else _children(x)
        if node is None:
            leaves.append(x)
            paths.append(path)
            return LEAF
        kind, aux, kids, suffixes = node
        return TreeDef(kind, aux, tuple(visit(k, path + s) for k, s in zip(kids, suffixes)))

    treedef = visit(tree, prefix)
    return leaves, paths, treedef


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], TreeDef]:
    """The leaves of ``tree`` (depth first) and its TreeDef."""
    leaves, _, treedef = tree_flatten_with_path(tree, "", is_leaf)
    return leaves, treedef


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree``, depth first."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> TreeDef:
    """The TreeDef of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_unflatten(treedef: TreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a pytree of structure ``treedef`` from ``leaves``."""
    it = iter(leaves)

    def build(td: TreeDef) -> Any:
        if td.is_leaf:
            return next(it)
        kids = [build(c) for c in td.children]
        kind = td.kind
        if kind == "None":
            return None
        if kind == "tuple":
            return tuple(kids)
        if kind == "list":
            return kids
        if kind == "dict":
            return dict(zip(td.aux, kids))
        if kind in _REGISTRY:
            return _REGISTRY[kind][1](td.aux, kids)
        if issubclass(kind, tuple):       # namedtuple
            return kind(*kids)
        return kind(**dict(zip(td.aux, kids)))   # dataclass

    out = build(treedef)
    if next(it, _SENTINEL) is not _SENTINEL:
        raise InvalidArgumentError(f"too many leaves for tree structure {treedef!r}")
    return out


_SENTINEL = object()


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply ``fn`` to corresponding leaves of ``tree`` and ``rest`` (same structure)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        lv, td = tree_flatten(r, is_leaf)
        if td != treedef:
            raise InvalidArgumentError(f"tree_map: structures differ: {treedef!r} vs {td!r}")
        others.append(lv)
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others)])


_NO_INITIALIZER = object()


def tree_reduce(fn: Callable[[Any, Any], Any], tree: Any, initializer: Any = _NO_INITIALIZER,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``functools.reduce(fn, tree_leaves(tree)[, initializer])``."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        if not leaves:
            raise InvalidArgumentError("tree_reduce of a tree with no leaves and no initializer")
        return functools.reduce(fn, leaves)
    return functools.reduce(fn, leaves, initializer)


def tree_all(tree: Any) -> bool:
    """Whether every leaf of ``tree`` is true."""
    return all(bool(x) for x in tree_leaves(tree))


__all__ = ["TreeDef", "register_pytree_node", "register_pytree_node_class",
           "register_dataclass", "tree_flatten", "tree_flatten_with_path", "tree_leaves",
           "tree_structure", "tree_unflatten", "tree_map", "tree_reduce", "tree_all"]
