"""One process of Keras ``ModelParallel`` training across 2 processes, launched by
``tests/test_keras_distribution_mpi.py`` as ``mpiexec -n 2 python
mpi_keras_distribution_worker.py``: the Dense kernels are split by columns over a mesh of
the two processes' devices, ``fit(jit_compile=True)`` runs one SPMD program per step, and
each process holds only its shards of the weights and optimizer slots. Each process then
trains the same model on one device and checks its loss curve and that its shards equal
the matching slices of the one-device weights."""
from __future__ import annotations

import sys

import numpy as np

import xlapy.distributed
from xlapy import keras
from xlapy.frontend.sharded_step import ShardedVariable
from xlapy.keras import distribution as dist


def train(distribution):
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    dist.set_distribution(distribution)
    model = keras.Sequential([keras.layers.Dense(32, activation="tanh", input_shape=(8,)),
                              keras.layers.Dense(4)])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", jit_compile=True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 8)).astype(np.float32)
    y = rng.standard_normal((32, 4)).astype(np.float32)
    hist = model.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=False)
    dist.set_distribution(None)
    return model, hist.history["loss"]


def main() -> None:
    xlapy.distributed.initialize()
    rank = xlapy.process_index()
    layout = dist.LayoutMap(dist.DeviceMesh((2,), ("model",)))
    layout["dense.*kernel"] = (None, "model")
    layout["dense.*bias"] = ("model",)
    model, losses = train(dist.ModelParallel(layout_map=layout))
    sharded = [v for v in model.weights + model.optimizer.variables
               if isinstance(v, ShardedVariable)]
    held = sum(v.nbytes_held for v in sharded)
    whole = sum(int(np.prod(v.shape)) * 4 for v in sharded)
    assert all(sum(p is not None for p in v._pieces) == 1 for v in sharded)
    one, one_losses = train(None)
    np.testing.assert_allclose(losses, one_losses, rtol=1e-5)
    for v, w in zip(model.weights, one.get_weights()):
        if isinstance(v, ShardedVariable):
            (shard,) = v.sharded().addressable_shards
            np.testing.assert_allclose(shard.data, w[shard.index], rtol=1e-5, atol=1e-6)
    sys.stdout.write(f"RANK {rank} LOSSES {' '.join(f'{v:.6f}' for v in losses)} "
                     f"HELD {held} OF {whole}\nOK {rank}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
