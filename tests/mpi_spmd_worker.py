"""One process of the 2-process tensor-parallel MLP training step, launched by
``tests/test_spmd_mpi.py`` as ``mpiexec -n 2 python mpi_spmd_worker.py STEPS``.

The training step (loss and SGD update of ``w1`` split by columns, ``w2`` by rows: Megatron)
is traced once, sharded, propagated and partitioned for 2 partitions; each process keeps only
its shards of the weights between steps and runs partition ``rank`` of the program (its
collectives over MPI). Rank 0 also runs the unpartitioned step on one device and checks the
loss curves agree; each rank prints its loss curve and the bytes of weights it holds."""
from __future__ import annotations

import sys

import numpy as np

import xlapy
import xlapy.distributed
import xlapy.numpy as xnp
from xlapy.client.run import run_hlo
from xlapy.client.spmd import shard_array, spmd_partition
from xlapy.hlo.sharding import HloSharding, parse_sharding

LR = np.float32(0.05)


def loss_fn(w1, w2, x, y):
    return xnp.mean((xnp.tanh(x @ w1) @ w2 - y) ** 2)


def step(x, y, w1, w2):
    loss, (g1, g2) = xlapy.value_and_grad(loss_fn, argnums=(0, 1))(w1, w2, x, y)
    return loss, w1 - LR * g1, w2 - LR * g2


def say(line: str) -> None:
    """One line in one write, so the two processes' lines do not interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    steps = int(sys.argv[1])
    xlapy.distributed.initialize()
    rank = xlapy.process_index()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    y = rng.standard_normal((16, 8)).astype(np.float32)
    w1 = (0.3 * rng.standard_normal((8, 32))).astype(np.float32)
    w2 = (0.3 * rng.standard_normal((32, 8))).astype(np.float32)
    module = xlapy.jit(step).lower(x, y, w1, w2).hlo_module.clone()
    cols, rows = parse_sharding("{devices=[1,2]<=[2]}"), parse_sharding("{devices=[2,1]<=[2]}")
    rep = HloSharding.replicate()
    for p, s in zip(module.entry.parameters, (rep, rep, cols, rows)):
        p.attrs["sharding"] = s
    module.entry.root.attrs["sharding"] = HloSharding.tuple_of([rep, cols, rows])
    part = spmd_partition(module, 2)
    l1, l2 = shard_array(w1, cols, 2)[rank], shard_array(w2, rows, 2)[rank]
    losses = []
    for _ in range(steps):
        (out,) = run_hlo(part.module, [[x, y, l1, l2]], backend="cpu")
        loss, l1, l2 = out
        losses.append(float(loss))
    held = l1.nbytes + l2.nbytes
    say(f"RANK {rank} LOSSES {' '.join(f'{v:.7f}' for v in losses)}")
    say(f"RANK {rank} WEIGHT_BYTES {held} OF {w1.nbytes + w2.nbytes}")
    if rank == 0:
        ref, a, b = [], w1, w2
        for _ in range(steps):
            loss, a, b = run_hlo(module, [x, y, a, b], backend="interpreter")
            ref.append(float(loss))
        np.testing.assert_allclose(losses, ref, rtol=1e-5)
        say(f"REFERENCE {' '.join(f'{v:.7f}' for v in ref)}")
    say(f"OK {rank}")


if __name__ == "__main__":
    main()
