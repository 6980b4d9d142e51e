"""``xlapy.shard_map``: the programs of ``shard_map_cases.py`` against JAX's answers
(``data/shard_map``, made by ``make_shard_map_cases.py``) and against the same computation
written for one device; the HLO it lowers to; gradients; composition with ``jit`` and
automatically sharded code; the replication check and the errors."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.config import debug_options
from xlapy.errors import InvalidArgumentError, ShapeError
from xlapy.sharding import Mesh, NamedSharding, PartitionSpec as P

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import shard_map_cases as cases  # noqa: E402

DATA = pathlib.Path(__file__).parent / "data" / "shard_map"
MESH = Mesh(np.arange(4).reshape(2, 2), ("x", "y"))


def _leaves(x):
    return [np.asarray(v) for v in xlapy.tree_util.tree_leaves(x)]


def _check(name, out):
    want = np.load(DATA / f"{name}.npz")
    got = _leaves(out)
    assert len(got) == len([k for k in want.files if k.startswith("out")])
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, want[f"out{i}"], rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("case", cases.FORWARD, ids=lambda c: c.__name__)
def test_forward_matches_jax(case):
    fn, args = case(lax, xnp, xlapy.shard_map, P, MESH)
    _check(case.__name__, xlapy.jit(fn)(*args))


@pytest.mark.parametrize("case", cases.GRADIENTS, ids=lambda c: c.__name__)
def test_gradient_matches_jax(case):
    fn, args = case(lax, xnp, xlapy.shard_map, P, MESH, xlapy.grad)
    _check(case.__name__, xlapy.jit(fn)(*args))


def test_gradient_eagerly_matches_jax():
    fn, args = cases.grad_tensor_parallel_mlp(lax, xnp, xlapy.shard_map, P, MESH, xlapy.grad)
    _check("grad_tensor_parallel_mlp", fn(*args))


def test_against_the_one_device_program():
    """The tensor-parallel MLP in shard_map equals the plain MLP, values and gradients."""
    rng = np.random.default_rng(5)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in ((4, 6), (6, 8), (8, 6)))
    sm = xlapy.shard_map(lambda x, w1, w2: lax.psum(xnp.tanh(x @ w1) @ w2, "y"), mesh=MESH,
                         in_specs=(P("x"), P(None, "y"), P("y")), out_specs=P("x"))

    def plain(x, w1, w2):
        return xnp.tanh(x @ w1) @ w2
    np.testing.assert_allclose(np.asarray(sm(x, w1, w2)), np.asarray(plain(x, w1, w2)),
                               rtol=1e-5, atol=1e-5)
    g_sm = xlapy.jit(xlapy.grad(lambda *a: xnp.sum(sm(*a) ** 3), argnums=(0, 1, 2)))(x, w1, w2)
    g_one = xlapy.grad(lambda *a: xnp.sum(plain(*a) ** 3), argnums=(0, 1, 2))(x, w1, w2)
    for a, b in zip(g_sm, g_one):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4)


def test_lowering_is_xlas_manual_region():
    f = xlapy.shard_map(lambda a: lax.psum(a, "y"), mesh=MESH, in_specs=P("x", "y"),
                        out_specs=P("x"))
    text = xlapy.jit(f).lower(np.zeros((4, 8), np.float32)).as_text()
    assert "num_partitions=4" in text.splitlines()[0]
    assert 'custom_call_target="Sharding", sharding={devices=[2,2]<=[4]}' in text
    assert 'f32[2,4]{1,0} custom-call(' in text and 'custom_call_target="SPMDFullToShardShape",' \
        ' sharding={manual}' in text
    assert 'custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1,2]<=[4] ' \
        'last_tile_dim_replicate}' in text
    assert "channel_id=1, use_global_device_ids=true, replica_groups={{0,1},{2,3}}" in text
    optimized = xlapy.jit(f).lower(np.zeros((4, 8), np.float32)).compiler_ir("optimized_hlo")
    assert "entry_computation_layout={(f32[2,4]{1,0})->f32[2,4]{1,0}}" in optimized
    assert "SPMD" not in optimized and "all-reduce(" in optimized


def test_eager_call_returns_sharded_arrays():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    f = xlapy.shard_map(lambda a: a * 2, mesh=MESH, in_specs=P("x", "y"),
                        out_specs=P("x", "y"))
    y = f(x)
    assert y.sharding.spec == P("x", "y")
    assert [s.data.shape for s in y.addressable_shards] == [(2, 4)] * 4
    np.testing.assert_array_equal(y.addressable_shards[3].data, 2 * x[2:, 4:])
    np.testing.assert_array_equal(np.asarray(y), 2 * x)


def test_composes_with_automatically_sharded_code():
    """jit(in_shardings=...) around a shard_map: the code around it is partitioned by
    propagation, the region is copied as it is."""
    rows = NamedSharding(MESH, P("x", None))
    inner = xlapy.shard_map(lambda a: lax.psum(a, "y"), mesh=MESH, in_specs=P("x", "y"),
                            out_specs=P("x", None))

    def f(a, b):
        return xnp.tanh(inner(a * 2.0) @ b)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 8)).astype(np.float32), \
        rng.standard_normal((4, 3)).astype(np.float32)
    g = xlapy.jit(f, in_shardings=(rows, NamedSharding(MESH, P())), out_shardings=rows)
    s = (2 * a)[:, :4] + (2 * a)[:, 4:]
    np.testing.assert_allclose(np.asarray(g(a, b)), np.tanh(s @ b), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(xlapy.jit(f)(a, b)), np.tanh(s @ b), rtol=1e-5,
                               atol=1e-5)


def test_cpu_backend_on_four_devices():
    fn, args = cases.tensor_parallel_matmul(lax, xnp, xlapy.shard_map, P, MESH)
    with debug_options(xla_force_host_platform_device_count=4):
        _check("tensor_parallel_matmul", xlapy.jit(fn, backend="cpu")(*args))


def test_one_dimensional_mesh_of_two():
    mesh = Mesh(np.arange(2), ("i",))
    f = xlapy.shard_map(lambda a: lax.psum(a, "i") + lax.axis_index("i"), mesh=mesh,
                        in_specs=P("i"), out_specs=P("i"), check_rep=False)
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(f(x)), np.concatenate([x[:3] + x[3:],
                                                                    x[:3] + x[3:] + 1]))


# ----------------------------------------------------------------------------- errors
def test_replication_check_names_the_result_and_the_line():
    f = xlapy.shard_map(lambda a: a * 2, mesh=MESH, in_specs=P("x", "y"), out_specs=P("x"))
    with pytest.raises(InvalidArgumentError, match=r"result 0 has out_specs .*leaves out mesh "
                                                   r"axis 'y'.*test_shard_map.py"):
        f(np.zeros((4, 4), np.float32))
    g = xlapy.shard_map(lambda a: a * 2, mesh=MESH, in_specs=P("x", "y"), out_specs=P("x"),
                        check_rep=False)
    assert np.asarray(g(np.ones((4, 4), np.float32))).shape == (4, 2)


def test_bad_specs_are_typed_errors_naming_the_argument():
    with pytest.raises(InvalidArgumentError, match=r"argument 0 of shape \(4,\): "
                                                   r"PartitionSpec\('z',\) names axis 'z'.*"
                                                   r"test_shard_map.py"):
        xlapy.shard_map(lambda a: a, mesh=MESH, in_specs=P("z"), out_specs=P())(
            np.zeros(4, np.float32))
    with pytest.raises(ShapeError, match=r"argument 0 of shape \(6, 4\).*splits dimension 0 "
                                         r"\(6\) 4 ways.*test_shard_map.py"):
        xlapy.shard_map(lambda a: a, mesh=MESH, in_specs=P(("x", "y")),
                        out_specs=P(("x", "y")))(np.zeros((6, 4), np.float32))
    with pytest.raises(InvalidArgumentError, match=r"in_specs has 1 entries for 2 values"):
        xlapy.shard_map(lambda a, b: a, mesh=MESH, in_specs=(P(),), out_specs=P())(
            np.zeros(4, np.float32), np.zeros(4, np.float32))
    with pytest.raises(InvalidArgumentError, match="rank 1, but its spec"):
        xlapy.shard_map(lambda a: a, mesh=MESH, in_specs=P("x", "y"), out_specs=P())(
            np.zeros(4, np.float32))
    with pytest.raises(InvalidArgumentError, match="unbound axis name 'q'"):
        xlapy.shard_map(lambda a: lax.psum(a, "q"), mesh=MESH, in_specs=P(), out_specs=P())(
            np.zeros(4, np.float32))


def test_mesh_larger_than_the_devices_is_a_typed_error():
    mesh = Mesh(np.arange(8).reshape(2, 4), ("x", "y"))
    f = xlapy.jit(xlapy.shard_map(lambda a: a, mesh=mesh, in_specs=P("x"), out_specs=P("x")),
                  backend="cpu")
    with debug_options(xla_force_host_platform_device_count=4):
        with pytest.raises(InvalidArgumentError, match=r"mesh of 8 devices, but this process "
                                                       r"has 4 cpu device.*test_shard_map.py"):
            f(np.zeros((4, 4), np.float32))


def test_committed_argument_in_another_sharding_is_a_typed_error():
    x = xlapy.device_put(np.zeros((4, 4), np.float32), NamedSharding(MESH, P(None, "x")))
    f = xlapy.shard_map(lambda a: a, mesh=MESH, in_specs=P("x", "y"), out_specs=P("x", "y"))
    with pytest.raises(InvalidArgumentError, match=r"argument 0 is a ShardedArray sharded "
                                                   r".*asks for.*test_shard_map.py"):
        f(x)


def test_two_meshes_in_one_program_are_a_typed_error():
    m4, m2 = Mesh(np.arange(4), ("i",)), Mesh(np.arange(2), ("j",))
    inner = xlapy.shard_map(lambda a: lax.psum(a, "j"), mesh=m2, in_specs=P("j"), out_specs=P())
    f = xlapy.jit(lambda a: inner(a) * 2, in_shardings=NamedSharding(m4, P("i")))
    with pytest.raises(InvalidArgumentError, match=r"over a mesh of 4 devices, but the "
                                                   r"function's shard_map runs on 2.*test_shard"):
        f(np.arange(8, dtype=np.float32))
    other = xlapy.shard_map(lambda b: b, mesh=m4, in_specs=P("i"), out_specs=P("i"))
    g = xlapy.jit(lambda a: inner(a) + other(a)[:4])
    with pytest.raises(InvalidArgumentError, match=r"other shard_map runs on 2 devices.*"
                                                   r"test_shard_map"):
        g(np.arange(8, dtype=np.float32))


def test_loops_and_conditionals_inside_the_body():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    loop = xlapy.shard_map(lambda a: lax.fori_loop(0, 3, lambda i, c: lax.psum(c, "y") * 0.5, a),
                           mesh=MESH, in_specs=P("x", "y"), out_specs=P("x", "y"))
    half = (x[:, :2] + x[:, 2:]) / 2
    np.testing.assert_allclose(np.asarray(xlapy.jit(loop)(x)), np.concatenate([half, half], 1))
    branch = xlapy.shard_map(lambda a: lax.cond(lax.axis_index("x") == 0, lambda v: v * 2,
                                                lambda v: v - 1, a),
                             mesh=MESH, in_specs=P("x", "y"), out_specs=P("x", "y"))
    np.testing.assert_allclose(np.asarray(xlapy.jit(branch)(x)),
                               np.concatenate([x[:2] * 2, x[2:] - 1]))


def test_sharding_constraint_inside_the_body_is_a_typed_error():
    from xlapy.sharding import with_sharding_constraint
    f = xlapy.shard_map(lambda a: with_sharding_constraint(a, NamedSharding(MESH, P("x"))),
                        mesh=MESH, in_specs=P("x", "y"), out_specs=P("x", "y"))
    with pytest.raises(InvalidArgumentError, match=r"with_sharding_constraint of a f32\[2,2\] "
                                                   r"inside shard_map.*test_shard_map.py"):
        xlapy.jit(f)(np.zeros((4, 4), np.float32))


@pytest.mark.parametrize("axis", [0, 1])
def test_vmap_of_shard_map_under_jit(axis):
    sm = xlapy.shard_map(lambda a: lax.psum(xnp.sin(a), "y")
                         + lax.all_gather(a, "x", axis=0, tiled=True)[:2],
                         mesh=MESH, in_specs=P("x", "y"), out_specs=P("x", None),
                         check_rep=False)
    xs = np.linspace(0, 1, 3 * 16, dtype=np.float32).reshape(3, 4, 4)
    want = np.stack([np.asarray(xlapy.jit(sm)(x)) for x in xs])
    got = xlapy.jit(xlapy.vmap(sm, in_axes=axis, out_axes=axis))(np.moveaxis(xs, 0, axis))
    np.testing.assert_allclose(np.moveaxis(np.asarray(got), axis, 0), want, rtol=1e-6)
    with pytest.raises(InvalidArgumentError, match=r"under an eager vmap.*wrap the vmap in "
                                                   r"xlapy.jit.*test_shard_map"):
        xlapy.vmap(sm)(xs)


def test_several_axes_outside_shard_map_is_a_typed_error():
    f = xlapy.vmap(xlapy.vmap(lambda v: lax.all_gather(v, ("i", "j")), axis_name="j"),
                   axis_name="i")
    with pytest.raises(InvalidArgumentError, match=r"takes one axis name \(several only for "
                                                   r"mesh axes inside shard_map\)"):
        f(np.zeros((2, 2, 3), np.float32))


def test_gradients_reach_closed_over_values_and_variables():
    """A value the body closes over (a weight) is a replicated operand of the recorded call,
    so its gradient flows: psum-ed over every device, as JAX's implicit P() input."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    w = rng.standard_normal((6, 3)).astype(np.float32)

    def loss(w, x):
        f = xlapy.shard_map(lambda a: xnp.tanh(a @ w), mesh=MESH, in_specs=P(("x", "y")),
                            out_specs=P(("x", "y")))
        return xnp.sum(f(x) ** 2)
    want = xlapy.grad(lambda w, x: xnp.sum(xnp.tanh(x @ w) ** 2))(w, x)
    np.testing.assert_allclose(np.asarray(xlapy.jit(xlapy.grad(loss))(w, x)),
                               np.asarray(want), rtol=1e-5, atol=1e-6)
    v = xlapy.Variable(w)
    body = xlapy.shard_map(lambda a: xnp.tanh(a @ v), mesh=MESH, in_specs=P(("x", "y")),
                           out_specs=P(("x", "y")))

    @xlapy.function(jit_compile=True)
    def step(x):
        with xlapy.GradientTape() as tape:
            out = xnp.sum(body(x) ** 2)
        return tape.gradient(out, [v])[0]
    np.testing.assert_allclose(np.asarray(step(x)), np.asarray(want), rtol=1e-5, atol=1e-6)
