"""Regenerate ``tests/data/spmd/``: sharded programs compiled by the real XLA through JAX.

Run with the test extra installed: ``python tests/make_spmd_cases.py``. JAX is told to use 8
host devices (``--xla_force_host_platform_device_count=8``) and GSPMD (Shardy off), except for
the ``SHARDY`` cases, lowered with Shardy on (the module text carries the same ``sharding=``
and ``custom_call_target="Sharding"`` attributes, plus ``xla.sdy`` frontend attributes). For each case it
writes ``<name>.hlo`` (the module before partitioning, as ``jit(...).lower(...)`` prints it),
``<name>.propagated.hlo`` (XLA's module after ``sharding-propagation``),
``<name>.partitioned.hlo`` (XLA:CPU's compiled, partitioned module) and ``<name>.npz``
(inputs ``arg0..`` and JAX's output ``out0``). ``tests/test_spmd_jax.py`` runs the first with
xlapy, compares with ``out0`` and compares collective bytes with the second.
"""
from __future__ import annotations

import os
import pathlib
import tempfile
from typing import NamedTuple

DUMP = tempfile.mkdtemp(prefix="spmd-dump-")
os.environ["XLA_FLAGS"] = ("--xla_force_host_platform_device_count=8 "
                           f"--xla_dump_to={DUMP} --xla_dump_hlo_pass_re=sharding-propagation")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

jax.config.update("jax_use_shardy_partitioner", False)
OUT = pathlib.Path(__file__).parent / "data" / "spmd"


def mesh(shape, names):
    n = int(np.prod(shape))
    return Mesh(np.array(jax.devices()[:n]).reshape(shape), names)


M24 = mesh((2, 4), ("x", "y"))
M22 = mesh((2, 2), ("data", "model"))
M4 = mesh((4,), ("y",))


def ns(m, *spec):
    return NamedSharding(m, P(*spec))


def matmul(a, b):
    return a @ b


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def attention(x, wq, wk, wv, wo):
    # x: [b, s, d]; w*: [d, h, k]; heads sharded
    q = jnp.einsum("bsd,dhk->bhsk", x, wq)
    k = jnp.einsum("bsd,dhk->bhsk", x, wk)
    v = jnp.einsum("bsd,dhk->bhsk", x, wv)
    s = jnp.einsum("bhsk,bhtk->bhst", q, k) / np.float32(np.sqrt(q.shape[-1]))
    s = s - jnp.max(s, axis=-1, keepdims=True)
    p = jnp.exp(s)
    p = p / jnp.sum(p, axis=-1, keepdims=True)
    o = jnp.einsum("bhst,bhtk->bhsk", p, v)
    return x + jnp.einsum("bhsk,hkd->bsd", o, wo)


def train_step(w, x, y):
    def loss(w):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)
    return w - np.float32(0.1) * jax.grad(loss)(w)


def constrained_sum(x, w):
    y = jnp.tanh(x @ w)
    y = jax.lax.with_sharding_constraint(y, ns(M24, "x", None))
    return y.sum(0)


def _shmap_body(a):
    return jax.lax.psum(jnp.sin(a), "y") * jax.lax.axis_index("x").astype(jnp.float32)


shard_map_psum = jax.shard_map(_shmap_body, mesh=M24, in_specs=P("x", "y"),
                               out_specs=P("x", None))


def sharded_sum(x):
    return jnp.sum(x, axis=1)


def transpose_reshard(x):
    return jnp.transpose(x) * np.float32(2)


def conv_same(x, k):
    return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def conv_stride2(x, k):
    return jax.lax.conv_general_dilated(x, k, (2, 2), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def conv_kernel_grad(x, k):
    return jax.grad(lambda k: jnp.sum(jnp.tanh(conv_same(x, k)) ** 2))(k)


def conv_input_grad(x, k):
    return jax.grad(lambda x: jnp.sum(jnp.tanh(conv_stride2(x, k)) ** 2))(x)


def max_pool(x):
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")


def max_pool_grad(x):
    return jax.grad(lambda x: jnp.sum(max_pool(x) ** 2))(x)


def cnn_step(x, k1, k2):
    """One SGD step of conv-relu-maxpool-conv on images whose rows are split (the updated
    kernels, flattened into one array)."""
    def loss(k1, k2):
        h = jax.nn.relu(conv_same(x, k1))
        return jnp.mean(conv_same(max_pool(h), k2) ** 2)
    g1, g2 = jax.grad(loss, argnums=(0, 1))(k1, k2)
    return jnp.concatenate([(k1 - np.float32(0.1) * g1).ravel(),
                            (k2 - np.float32(0.1) * g2).ravel()])


def sum_pool(x):
    return jax.lax.reduce_window(x, np.float32(0), jax.lax.add, (1, 3, 3, 1), (1, 1, 1, 1),
                                 "SAME")


def take_2d(t, i, j):
    return t[i, j]


def scatter_add(t, i, u):
    return t.at[i].add(u)


def scatter_add_2d(t, i, j, u):
    return t.at[i, j].add(u)


batched_take = jax.vmap(lambda t, i: t[i])
batched_scatter_add = jax.vmap(lambda t, i, u: t.at[i].add(u))


class Ids(NamedTuple):
    """An int32 argument of ``shape`` with values in ``[0, high)``."""
    shape: tuple
    high: int


CASES = {
    "matmul_m": (matmul, [(16, 32), (32, 8)], [ns(M24, "x", None), ns(M24)], None),
    "matmul_n": (matmul, [(16, 32), (32, 8)], [ns(M24), ns(M24, None, "y")], None),
    "matmul_k": (matmul, [(16, 32), (32, 8)], [ns(M24, None, "y"), ns(M24, "y", None)], None),
    "matmul_mn": (matmul, [(16, 32), (32, 8)], [ns(M24, "x", None), ns(M24, None, "y")],
                  None),
    "mlp_tp": (mlp, [(16, 32), (32, 64), (64, 32)],
               [ns(M24, "x", None), ns(M24, None, "y"), ns(M24, "y", None)], None),
    "attention_heads": (attention, [(2, 8, 16), (16, 4, 8), (16, 4, 8), (16, 4, 8), (4, 8, 16)],
                        [ns(M24), ns(M24, None, "y", None), ns(M24, None, "y", None),
                         ns(M24, None, "y", None), ns(M24, "y", None, None)], None),
    "train_step_2x2": (train_step, [(16, 8), (32, 16), (32, 8)],
                       [ns(M22, None, "model"), ns(M22, "data", None), ns(M22, "data", None)],
                       ns(M22, None, "model")),
    "sharded_sum": (sharded_sum, [(16, 32)], [ns(M24, "x", "y")], None),
    "transpose_reshard": (transpose_reshard, [(16, 32)], [ns(M24, "x", "y")],
                          ns(M24, "x", "y")),
    "shard_map_psum": (shard_map_psum, [(8, 16)], [ns(M24, "x", "y")], None),
    "constrained_sum": (constrained_sum, [(16, 8), (8, 32)],
                        [ns(M24, "x", None), ns(M24, None, "y")], None),
}
#: Windowed ops split on a spatial dim (halo exchange); after ``SHARDY`` so the random inputs
#: of the cases above stay the same.
WINDOWED = {
    "conv_spatial": (conv_same, [(2, 16, 16, 4), (3, 3, 4, 8)],
                     [ns(M24, None, "y", None, None), ns(M24)], None),
    "conv_spatial_stride2": (conv_stride2, [(2, 16, 16, 4), (3, 3, 4, 8)],
                             [ns(M24, None, "y", None, None), ns(M24)], None),
    "conv_spatial_2d": (conv_same, [(2, 16, 16, 4), (3, 3, 4, 8)],
                        [ns(M24, None, "x", "y", None), ns(M24)], None),
    # on a 1-D mesh: with the rows split over "y" of x=2,y=4 XLA (jax 0.10.2) all-reduces the
    # partial kernel gradients over all 8 devices and returns twice the gradient
    "conv_kernel_grad_spatial": (conv_kernel_grad, [(2, 16, 16, 4), (3, 3, 4, 8)],
                                 [ns(M4, None, "y", None, None), ns(M4)], None),
    "conv_input_grad_stride2": (conv_input_grad, [(2, 16, 16, 4), (3, 3, 4, 8)],
                                [ns(M24, None, "y", None, None), ns(M24)], None),
    "max_pool_spatial": (max_pool, [(2, 16, 16, 4)], [ns(M24, None, "y", None, None)], None),
    "max_pool_grad_spatial": (max_pool_grad, [(2, 16, 16, 4)],
                              [ns(M24, None, "y", None, None)], None),
    "cnn_step_spatial": (cnn_step, [(2, 16, 16, 3), (3, 3, 3, 8), (3, 3, 8, 4)],
                         [ns(M4, None, "y", None, None), ns(M4), ns(M4)], None),
    "sum_pool_spatial": (sum_pool, [(2, 16, 16, 4)], [ns(M24, None, "x", "y", None)], None),
}
#: Gathers and scatters on a sharded operand (after ``WINDOWED``, for the same reason).
GATHER_SCATTER = {
    "gather_2d_index": (take_2d, [(16, 16, 8), Ids((6,), 16), Ids((6,), 16)],
                        [ns(M24, "x", "y", None), ns(M24), ns(M24)], None),
    "scatter_rows": (scatter_add, [(16, 8), Ids((6,), 16), (6, 8)],
                     [ns(M24, "y", None), ns(M24), ns(M24)], None),
    "scatter_2d_index": (scatter_add_2d, [(16, 16, 8), Ids((6,), 16), Ids((6,), 16), (6, 8)],
                         [ns(M24, "x", "y", None), ns(M24), ns(M24), ns(M24)], None),
    "scatter_index_parallel": (scatter_add, [(16, 8), Ids((32,), 16), (32, 8)],
                               [ns(M24), ns(M24, "y"), ns(M24, "y", None)], None),
    "embedding_2x2": (lambda t, i: t[i], [(32, 8), Ids((16, 4), 32)],
                      [ns(M22, "model", None), ns(M22, "data", None)], None),
    "gather_batched": (batched_take, [(8, 16, 4), Ids((8, 5), 16)],
                       [ns(M24, "y", None, None), ns(M24, "y", None)], None),
    "scatter_batched": (batched_scatter_add, [(8, 16, 4), Ids((8, 5), 16), (8, 5, 4)],
                        [ns(M24, "y", None, None), ns(M24, "y", None),
                         ns(M24, "y", None, None)], None),
}
#: Cases lowered with Shardy (JAX's default): the module text carries the same GSPMD
#: attributes; XLA runs Shardy instead of sharding-propagation, so there is no
#: ``.propagated.hlo`` for them.
SHARDY = {"constrained_sum_shardy": "constrained_sum", "mlp_tp_shardy": "mlp_tp"}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, (fn, shapes, ins, out) in list(CASES.items()) + [
            (k, CASES[v]) for k, v in SHARDY.items()] + list(WINDOWED.items()) + list(
            GATHER_SCATTER.items()):
        jax.config.update("jax_use_shardy_partitioner", name in SHARDY)
        args = [rng.integers(0, s.high, s.shape).astype(np.int32) if isinstance(s, Ids)
                else rng.standard_normal(s).astype(np.float32) for s in shapes]
        kw = {"in_shardings": tuple(ins)}
        if out is not None:
            kw["out_shardings"] = out
        f = jax.jit(fn, **kw)
        lowered = f.lower(*args)
        (OUT / f"{name}.hlo").write_text(lowered.as_text(dialect="hlo"))
        before = set(os.listdir(DUMP))
        (OUT / f"{name}.partitioned.hlo").write_text(lowered.compile().as_text())
        new = sorted(f for f in set(os.listdir(DUMP)) - before
                     if ".after_sharding-propagation." in f and f.endswith(".txt"))
        if new:
            (OUT / f"{name}.propagated.hlo").write_text(
                pathlib.Path(DUMP, new[0]).read_text())
        result = np.asarray(f(*args))
        np.savez(OUT / f"{name}.npz", **{f"arg{i}": a for i, a in enumerate(args)},
                 out0=result)
        print(name, "ok")


if __name__ == "__main__":
    main()
