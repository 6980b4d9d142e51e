"""One process of the multi-process ``tf.distribute`` tests, launched by
``tests/test_tf_distribute_mpi.py`` as ``mpiexec -n 2 python mpi_tf_distribute_worker.py MODE
OUT [TIMEOUT]``.

Every mode trains :func:`tf_distribute_model.make_model` with
``MultiWorkerMirroredStrategy`` for ``STEPS`` steps of ``GLOBAL_BATCH`` rows; process 0
writes the final weights to ``OUT`` (npz) for the test to compare with one process trained
on the global batch.

MODE ``keras``: ``model.fit``; ``custom``: ``strategy.run`` of a ``tf.function(jit_compile=
True)`` step whose gradients are all-reduced inside it, fed by ``experimental_distribute_
dataset``; ``horovod``: a compiled gradient step, then an uncompiled all-reduce and apply;
``fail``: process 1 raises inside its second step; ``hang``: process 1 stops before its
second step (the other's all-reduce must time out naming the collective); ``exit``: process 1
exits (status 0, no exception) before its second step."""
from __future__ import annotations

import logging
import sys
import time

import numpy as np

import tf_distribute_model as tdm
import xlapy
import xlapy.tf as tf


def custom_loop(strategy, model, mode: str, rank: int) -> None:
    optimizer = model.optimizer
    variables = model.trainable_variables
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="sum")

    @tf.function(jit_compile=True)
    def grads_of(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True)) / tdm.GLOBAL_BATCH
        return tape.gradient(loss, variables)

    @tf.function(jit_compile=True)
    def train_step(x, y):
        ctx = tf.distribute.get_replica_context()
        grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads_of(x, y))
        optimizer.apply_gradients(zip(grads, variables))

    def horovod_step(x, y):         # compiled gradients, uncompiled collective and apply
        grads = grads_of(x, y)
        grads = tf.distribute.get_replica_context().all_reduce("SUM", grads)
        optimizer.apply_gradients(zip(grads, variables))

    x, y = tdm.data()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(tdm.GLOBAL_BATCH)
    step_fn = train_step if mode == "custom" else horovod_step
    for step, (bx, by) in enumerate(strategy.experimental_distribute_dataset(dataset)):
        if step == 1 and rank == 1 and mode == "fail":
            raise RuntimeError("process 1 fails in its second step")
        if step == 1 and rank == 1 and mode == "hang":
            time.sleep(600)
        if step == 1 and rank == 1 and mode == "exit":
            sys.exit(0)         # no exception, no MPI_Abort, a clean exit status
        strategy.run(step_fn, args=(bx, by))
    if mode == "custom":
        assert train_step.cache_info().misses == 1, train_step.cache_info()


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    mode, out = sys.argv[1], sys.argv[2]
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else None
    options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=timeout)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    rank = xlapy.process_index()
    assert xlapy.process_count() == 2
    assert strategy.num_replicas_in_sync == 2 * xlapy.local_device_count()
    with strategy.scope():
        # a different seed per process: the initial weights come from process 0
        model = tdm.make_model(seed=tdm.SEED + rank)
    if mode == "keras":
        x, y = tdm.data()
        history = model.fit(x, y, batch_size=tdm.GLOBAL_BATCH, epochs=1, shuffle=False,
                            verbose=0)
        assert len(history.history["loss"]) == 1
    else:
        custom_loop(strategy, model, mode, rank)
    weights = model.get_weights()
    for v in model.trainable_variables:         # the mirrored copies stay identical
        for copy in strategy.experimental_local_results(v):
            np.testing.assert_array_equal(np.asarray(copy), np.asarray(v.numpy()))
    per_replica = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.fill([2], tf.cast(ctx.replica_id_in_sync_group, tf.float32)))
    gathered = np.asarray(strategy.gather(per_replica, axis=0))
    n = strategy.num_replicas_in_sync
    np.testing.assert_array_equal(gathered, np.repeat(np.arange(n, dtype=np.float32), 2))
    if rank == 0:
        np.savez(out, *weights)
    print(f"OK {rank}", flush=True)


if __name__ == "__main__":
    main()
