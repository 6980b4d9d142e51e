"""xlapy.tree_util / xlapy.tree: JAX's pytree API, registered classes and dataclasses
under jit and grad."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import tree_util
from xlapy.errors import InvalidArgumentError


@tree_util.register_dataclass
@dataclasses.dataclass
class Layer:
    w: object
    b: object
    act: str = dataclasses.field(default="tanh", metadata={"static": True})


@tree_util.register_pytree_node_class
class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def tree_flatten(self):
        return (self.a, self.b), "pair"

    @classmethod
    def tree_unflatten(cls, aux, children):
        assert aux == "pair"
        return cls(*children)


def test_flatten_unflatten_and_structure():
    tree = {"b": [1, (2, None)], "a": Pair(3, Layer(4, 5, "relu"))}
    leaves, td = tree_util.tree_flatten(tree)
    assert leaves == [3, 4, 5, 1, 2]                  # sorted keys; meta field not a leaf
    back = td.unflatten([x * 10 for x in leaves])
    assert back["a"].b.act == "relu" and back["a"].b.w == 40 and back["b"] == [10, (20, None)]
    assert tree_util.tree_structure(tree) == td and td.num_leaves == 5
    assert tree_util.tree_leaves(tree) == leaves
    assert xlapy.tree.leaves(tree) == leaves


def test_meta_fields_are_part_of_the_structure():
    a = tree_util.tree_structure(Layer(1, 2, "tanh"))
    b = tree_util.tree_structure(Layer(1, 2, "relu"))
    assert a != b


def test_map_with_is_leaf_reduce_and_all():
    tree = {"x": (1, 2), "y": [3]}
    assert tree_util.tree_map(lambda v: v + 1, tree) == {"x": (2, 3), "y": [4]}
    assert xlapy.tree.map(lambda a, b: a * b, tree, tree) == {"x": (1, 4), "y": [9]}
    counted = tree_util.tree_map(len, tree, is_leaf=lambda v: isinstance(v, (tuple, list)))
    assert counted == {"x": 2, "y": 1}
    assert tree_util.tree_reduce(lambda a, b: a + b, tree) == 6
    assert tree_util.tree_reduce(lambda a, b: a + b, tree, 10) == 16
    assert tree_util.tree_all({"a": True, "b": [1]}) and not xlapy.tree.all([True, 0])
    with pytest.raises(InvalidArgumentError, match="structures differ"):
        tree_util.tree_map(lambda a, b: a, tree, {"x": (1, 2)})


def test_register_dataclass_rejects_overlapping_fields():
    class C:
        pass
    with pytest.raises(InvalidArgumentError, match="both"):
        tree_util.register_dataclass(C, data_fields=["a"], meta_fields=["a"])
    with pytest.raises(InvalidArgumentError, match="not a dataclass"):
        tree_util.register_dataclass(C)


def test_registered_types_under_jit_and_grad():
    layer = Layer(np.full((2, 2), 0.5, np.float32), np.zeros(2, np.float32), "tanh")

    def loss(layer, x):
        h = x @ layer.w + layer.b
        return xnp.sum(xnp.tanh(h) if layer.act == "tanh" else h)
    x = np.ones((1, 2), np.float32)
    g = xlapy.jit(xlapy.grad(loss))(layer, x)
    assert isinstance(g, Layer) and g.act == "tanh"
    want = 1 - np.tanh(1.0) ** 2
    np.testing.assert_allclose(np.asarray(g.b), [want, want], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g.w), np.full((2, 2), want), rtol=1e-6)


def test_key_paths_like_jax():
    tree = {"b": [1, (2, None)], "a": Layer(3, 4), "c": Pair(5, 6)}
    pairs, td = tree_util.tree_flatten_with_path(tree)
    assert [(tree_util.keystr(p), v) for p, v in pairs] == [
        ("['a'].w", 3), ("['a'].b", 4), ("['b'][0]", 1), ("['b'][1][0]", 2),
        ("['c'][<flat index 0>]", 5), ("['c'][<flat index 1>]", 6)]
    assert td == tree_util.tree_structure(tree)
    named = tree_util.tree_map_with_path(lambda p, v: f"{tree_util.keystr(p)}={v}", {"x": [7]})
    assert named == {"x": ["['x'][0]=7"]}
    jax = pytest.importorskip("jax")
    plain = {"b": [1, (2, None)], "z": {"q": 3}}
    ours = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(plain)[0]]
    theirs = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(plain)[0]]
    assert ours == theirs
