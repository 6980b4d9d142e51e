"""``shard_map`` programs written once for JAX and for xlapy: each case is a function of the
library's ``(lax, numpy, shard_map, P, mesh)`` returning the function to run and its
arguments. ``tests/make_shard_map_cases.py`` runs them with JAX (4 host devices) and records
the answers in ``tests/data/shard_map/<name>.npz``; ``tests/test_shard_map.py`` runs them with
xlapy and compares."""
from __future__ import annotations

import numpy as np


def _args(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def psum_axis_index(lax, xnp, shard_map, P, mesh):
    f = shard_map(lambda a: lax.psum(xnp.sin(a), "y") * lax.axis_index("x"),
                  mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", None))
    return f, _args((4, 8))


def all_gather_tiled(lax, xnp, shard_map, P, mesh):
    f = shard_map(lambda a: lax.all_gather(a * 2, "x", axis=0, tiled=True),
                  mesh=mesh, in_specs=P("x", "y"), out_specs=P(None, "y"), check_vma=False)
    return f, _args((4, 6))


def psum_scatter_tiled(lax, xnp, shard_map, P, mesh):
    f = shard_map(lambda a: lax.psum_scatter(a, "y", scatter_dimension=1, tiled=True),
                  mesh=mesh, in_specs=P("x", None), out_specs=P("x", "y"))
    return f, _args((4, 8))


def ppermute_ring(lax, xnp, shard_map, P, mesh):
    f = shard_map(lambda a: lax.ppermute(a + 1, "x", [(0, 1), (1, 0)]),
                  mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
    return f, _args((4, 4))


def all_to_all_tiled(lax, xnp, shard_map, P, mesh):
    f = shard_map(lambda a: lax.all_to_all(a, "y", 0, 1, tiled=True),
                  mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
    return f, _args((8, 4))


def pmean_two_axes(lax, xnp, shard_map, P, mesh):
    f = shard_map(lambda a: lax.pmean(xnp.sum(a, axis=0), ("x", "y")),
                  mesh=mesh, in_specs=P("x", "y"), out_specs=P())
    return f, _args((4, 6))


def tensor_parallel_matmul(lax, xnp, shard_map, P, mesh):
    """x split along its contracting dim, w along its rows: partial sums, psum."""
    f = shard_map(lambda x, w: lax.psum(x @ w, "y"), mesh=mesh,
                  in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))
    return f, _args((4, 8), (8, 3))


def two_outputs_dict(lax, xnp, shard_map, P, mesh):
    def body(d):
        return {"s": lax.psum(d["a"], "x"), "t": d["b"] * lax.axis_index("y")}
    f = shard_map(body, mesh=mesh, in_specs=({"a": P("x"), "b": P(None, "y")},),
                  out_specs={"s": P(), "t": P(None, "y")})
    a, b = _args((4, 2), (2, 4))
    return (lambda a, b: f({"a": a, "b": b})), [a, b]


def several_mesh_axes(lax, xnp, shard_map, P, mesh):
    """all_gather, ppermute and axis_index over the product of both mesh axes."""
    def body(a):
        ring = lax.ppermute(a, ("x", "y"), [(i, (i + 1) % 4) for i in range(4)])
        return lax.all_gather(ring, ("x", "y"), axis=1, tiled=True) * \
            (1 + lax.axis_index(("x", "y")))
    f = shard_map(body, mesh=mesh, in_specs=P(("x", "y")), out_specs=P(("x", "y")),
                  check_vma=False)
    return f, _args((8, 3))


FORWARD = [several_mesh_axes, psum_axis_index, all_gather_tiled, psum_scatter_tiled, ppermute_ring,
           all_to_all_tiled, pmean_two_axes, tensor_parallel_matmul, two_outputs_dict]


# ----------------------------------------------------------------------------- gradients
def grad_tensor_parallel_mlp(lax, xnp, shard_map, P, mesh, grad):
    """Megatron MLP in shard_map: w1 split by columns, w2 by rows, one psum; the loss
    outside. Gradients of x (replicated input: cotangents psum-ed), w1, w2."""
    def mlp(x, w1, w2):
        return lax.psum(xnp.tanh(x @ w1) @ w2, "y")
    f = shard_map(mlp, mesh=mesh, in_specs=(P("x", None), P(None, "y"), P("y", None)),
                  out_specs=P("x", None))

    def loss(x, w1, w2):
        return xnp.mean(f(x, w1, w2) ** 2)
    return grad(loss, argnums=(0, 1, 2)), _args((4, 6), (6, 8), (8, 6), seed=1)


def grad_replicated_output(lax, xnp, shard_map, P, mesh, grad):
    """A psum-ed scalar out with out_specs P(): the cotangent is divided over the devices,
    then psum transposes to psum."""
    f = shard_map(lambda a: lax.psum(xnp.sum(xnp.sin(a)), ("x", "y")), mesh=mesh,
                  in_specs=P("x", "y"), out_specs=P())
    return grad(lambda a: f(a) * 3.0), _args((4, 4), seed=2)


def grad_collectives(lax, xnp, shard_map, P, mesh, grad):
    """all_gather, ppermute and psum_scatter transposed."""
    def body(a):
        g = lax.all_gather(a, "x", axis=0, tiled=True)
        r = lax.ppermute(g * g, "y", [(0, 1), (1, 0)])
        return lax.psum_scatter(r, "x", scatter_dimension=0, tiled=True)
    f = shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
    return grad(lambda a: xnp.sum(f(a) * xnp.arange(16.0).reshape(4, 4))), \
        _args((4, 4), seed=3)


GRADIENTS = [grad_tensor_parallel_mlp, grad_replicated_output, grad_collectives]
