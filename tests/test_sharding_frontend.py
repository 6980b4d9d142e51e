"""Front end: Mesh / PartitionSpec / NamedSharding -> HloSharding (JAX's table),
jit(in_shardings=, out_shardings=), with_sharding_constraint, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.config import debug_options
from xlapy.errors import InvalidArgumentError
from xlapy.sharding import Mesh, NamedSharding, PartitionSpec as P, with_sharding_constraint

M24 = Mesh(np.arange(8).reshape(2, 4), ("x", "y"))
M222 = Mesh(np.arange(8).reshape(2, 2, 2), ("a", "b", "c"))


# xla_distribution.md §9.1, observed from JAX's NamedSharding._to_xla_hlo_sharding
@pytest.mark.parametrize("mesh,spec,ndim,text", [
    (M24, P("x", "y"), 2, "{devices=[2,4]<=[8]}"),
    (M24, P("y", "x"), 2, "{devices=[4,2]<=[2,4]T(1,0)}"),
    (M24, P("x", None), 2, "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"),
    (M24, P(None, "y"), 2, "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
    (M24, P("y"), 2, "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
    (M24, P(("x", "y")), 2, "{devices=[8,1]<=[8]}"),
    (M24, P(("y", "x")), 2, "{devices=[8,1]<=[2,4]T(1,0)}"),
    (M24, P(), 2, "{replicated}"),
    (M24, P("x", None), 3, "{devices=[2,1,1,4]<=[8] last_tile_dim_replicate}"),
    (M222, P("c", "a"), 2, "{devices=[2,2,2]<=[4,2]T(1,0) last_tile_dim_replicate}"),
    (M222, P(("a", "c")), 1, "{devices=[4,2]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}"),
])
def test_named_sharding_to_hlo(mesh, spec, ndim, text):
    assert NamedSharding(mesh, spec).to_hlo_sharding(ndim).to_text() == text


_JAX_SCRIPT = """
import json, numpy as np, jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
m = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("x", "y"))
specs = json.loads(SPECS)
print(json.dumps([str(NamedSharding(m, P(*[tuple(a) if isinstance(a, list) else a for a in s]))
                      ._to_xla_hlo_sharding(2)) for s in specs]))
"""


def test_against_jax():
    import json
    import os
    import subprocess
    import sys
    pytest.importorskip("jax")
    specs = [["x", "y"], ["y", None], [["y", "x"]], [None, ["x", "y"]], ["y"]]
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", _JAX_SCRIPT.replace("SPECS", repr(
        json.dumps(specs)))], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    want = json.loads(out.stdout.strip().splitlines()[-1])
    for spec, text in zip(specs, want):
        parts = [tuple(a) if isinstance(a, list) else a for a in spec]
        assert NamedSharding(M24, P(*parts)).to_hlo_sharding(2).to_text() == text, spec


def _mlp(x, w1, w2):
    return xnp.tanh(x @ w1) @ w2


def test_jit_with_shardings_matches_unsharded():
    mesh = Mesh(np.arange(4).reshape(2, 2), ("data", "model"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 12)).astype(np.float32)
    w1 = rng.standard_normal((12, 16)).astype(np.float32)
    w2 = rng.standard_normal((16, 12)).astype(np.float32)
    f = xlapy.jit(_mlp, in_shardings=(NamedSharding(mesh, P("data", None)),
                                      NamedSharding(mesh, P(None, "model")),
                                      NamedSharding(mesh, P("model", None))),
                  out_shardings=NamedSharding(mesh, P("data", None)))
    got = f(x, w1, w2)
    np.testing.assert_allclose(np.asarray(got), np.tanh(x @ w1) @ w2, rtol=1e-5, atol=1e-5)
    part = f.lower(x, w1, w2)
    assert part.num_partitions == 4
    assert set(part.collective_bytes()) == {"all-reduce"}      # Megatron: one all-reduce


def test_with_sharding_constraint_in_and_out_of_jit():
    mesh = Mesh(np.arange(2), ("i",))

    def f(x):
        y = with_sharding_constraint(x * 2, NamedSharding(mesh, P(None, "i")))
        return xnp.sum(y, axis=1)

    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_allclose(np.asarray(f(x)), (2 * x).sum(1))            # eager
    np.testing.assert_allclose(np.asarray(xlapy.jit(f)(x)), (2 * x).sum(1))  # one device
    g = xlapy.jit(f, in_shardings=NamedSharding(mesh, P("i", None)))
    np.testing.assert_allclose(np.asarray(g(x)), (2 * x).sum(1))
    text = g.lower(x).propagated.to_text()
    assert "sharding={devices=[1,2]<=[2]}" in text
    with debug_options(xla_force_host_platform_device_count=2):
        h = xlapy.jit(f, in_shardings=NamedSharding(mesh, P("i", None)), backend="cpu")
        np.testing.assert_allclose(np.asarray(h(x)), (2 * x).sum(1))


def test_errors_name_the_problem_and_the_line():
    with pytest.raises(InvalidArgumentError, match=r"names axis 'z'.*test_sharding_frontend"):
        NamedSharding(M24, P("z"))
    with pytest.raises(InvalidArgumentError, match="uses mesh axis 'x' twice"):
        NamedSharding(M24, P("x", "x"))
    with pytest.raises(InvalidArgumentError, match="2-dimensional devices array but 1 axis"):
        Mesh(np.arange(4).reshape(2, 2), ("a",))
    mesh = Mesh(np.arange(4), ("i",))
    f = xlapy.jit(lambda x: x + 1, in_shardings=NamedSharding(mesh, P("i")))
    with pytest.raises(InvalidArgumentError, match=r"argument 0 of shape f32\[6\].*does not "
                                                   r"divide"):
        f(np.zeros(6, np.float32))
    g = xlapy.jit(lambda x: x + 1, in_shardings=NamedSharding(Mesh(np.arange(8), ("i",)),
                                                               P("i")), backend="cpu")
    with debug_options(xla_force_host_platform_device_count=2):
        with pytest.raises(InvalidArgumentError, match="mesh has 8 devices, but this process"):
            g(np.zeros(8, np.float32))


def test_embedding_lookup_split_by_batch_needs_no_communication():
    mesh = Mesh(np.arange(2), ("b",))
    f = xlapy.jit(lambda t, i: xnp.take(t, i, axis=0).sum(-1),
                  in_shardings=(NamedSharding(mesh, P()), NamedSharding(mesh, P("b"))))
    t = np.arange(40, dtype=np.float32).reshape(10, 4)
    i = np.array([[1, 2, 3], [4, 5, 9], [0, 0, 1], [7, 8, 2]], np.int32)
    np.testing.assert_array_equal(np.asarray(f(t, i)), t[i].sum(-1))
    assert f.lower(t, i).collective_bytes() == {}


def test_device_put_and_sharded_results_hold_only_their_shards():
    mesh = Mesh(np.arange(4).reshape(2, 2), ("a", "b"))
    x = np.arange(5 * 6, dtype=np.float32).reshape(5, 6)
    s = NamedSharding(mesh, P("a", "b"))
    xs = xlapy.device_put(x, s)
    assert xs.sharding is s and xs.shape == (5, 6)
    shards = xs.addressable_shards
    assert [sh.device for sh in shards] == [0, 1, 2, 3]
    assert shards[3].index == (slice(3, 5), slice(3, 6))            # uneven: 3 + 2 rows
    np.testing.assert_array_equal(shards[3].data, x[3:5, 3:6])
    assert sum(sh.data.size for sh in shards) == x.size             # no copy is whole
    np.testing.assert_array_equal(np.asarray(xs), x)
    f = xlapy.jit(lambda v: v * 2, in_shardings=s, out_shardings=s)
    even = np.arange(24, dtype=np.float32).reshape(4, 6)
    ys = f(xlapy.device_put(even, s))                    # shards passed straight through
    assert ys.sharding is s and [p.shape for p in ys.pieces] == [(2, 3)] * 4
    np.testing.assert_array_equal(np.asarray(f(ys)), 4 * even)
    with pytest.raises(InvalidArgumentError, match="NamedSharding"):
        xlapy.device_put(x, "rows")


def test_conflicting_argument_sharding_names_the_argument_and_line():
    mesh = Mesh(np.arange(2), ("i",))
    rows, cols = NamedSharding(mesh, P("i", None)), NamedSharding(mesh, P(None, "i"))
    f = xlapy.jit(lambda v: v + 1, in_shardings=rows)
    x = xlapy.device_put(np.zeros((4, 4), np.float32), cols)
    with pytest.raises(InvalidArgumentError, match=r"argument 0 is a ShardedArray sharded "
                                                   r"\{devices=\[1,2\]<=\[2\]\}.*asks for "
                                                   r"\{devices=\[2,1\]<=\[2\]\}.*test_sharding_fr"):
        f(x)
    np.testing.assert_array_equal(np.asarray(f(np.asarray(x))), np.ones((4, 4)))


def test_make_array_from_callback_builds_only_the_shards():
    mesh = Mesh(np.arange(4).reshape(2, 2), ("a", "b"))
    s = NamedSharding(mesh, P("a", "b"))
    seen = []

    def cb(index):
        seen.append(index)
        i, j = np.ogrid[index[0], index[1]]
        return (10 * i + j).astype(np.float32)
    arr = xlapy.make_array_from_callback((5, 6), s, cb)
    assert len(seen) == 4 and seen[3] == (slice(3, 5), slice(3, 6))
    i, j = np.ogrid[0:5, 0:6]
    np.testing.assert_array_equal(np.asarray(arr), 10 * i + j)
    assert arr.nbytes_held == 4 * 3 * 3 * 4                       # padded 3x3 pieces
    with pytest.raises(xlapy.errors.ShapeError, match=r"gave shape \(1,\) for index"):
        xlapy.make_array_from_callback((4, 4), s, lambda index: np.zeros(1))


def test_mesh_of_devices_the_run_does_not_have():
    with debug_options(xla_force_host_platform_device_count=4):
        devs = xlapy.devices()
        assert Mesh(np.array(devs).reshape(2, 2), ("a", "b")).size == 4
    with pytest.raises(InvalidArgumentError, match=r"devices \[2, 3\] are not devices of this "
                                                   r"run, which has 2.*test_sharding_frontend"):
        with debug_options(xla_force_host_platform_device_count=2):
            Mesh(np.array(devs), ("i",))
