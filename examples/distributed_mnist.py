"""Data-parallel MNIST: one Keras model trained by several replicas, TensorFlow style.

Two ways to run it::

    .venv/bin/python examples/distributed_mnist.py                    # 2 CPU devices, 1 process
    .venv/bin/python examples/distributed_mnist.py --devices 4        # 4 CPU devices
    .venv/bin/mpiexec -n 2 .venv/bin/python examples/distributed_mnist.py   # 2 processes

In one process the script uses ``tf.distribute.MirroredStrategy`` over ``--devices`` CPU
devices (``XLA_FLAGS=--xla_force_host_platform_device_count=N`` when that flag is set);
launched by ``mpiexec`` it uses ``MultiWorkerMirroredStrategy``, one replica per process
(times the devices per process). The model is created and compiled in ``strategy.scope()``,
so its weights are mirrored and ``model.fit`` trains data-parallel: each global batch is split
over the replicas, and the compiled train step -- one XLA program with ``replica_count=N`` --
all-reduces the gradients inside itself. Every replica applies the same update, so the
replicas' weights stay identical (checked at the end). Every process reads the same data
and shuffles it with the same seed.

``--loop custom`` trains with a custom loop instead: ``experimental_distribute_dataset`` and
``strategy.run`` of a ``tf.function(jit_compile=True)`` step that all-reduces the gradients
with ``get_replica_context().all_reduce`` and applies them, all in one program;
``--loop horovod`` compiles only the gradient step and all-reduces and applies outside it
(the talk's recipe for collectives that cannot be compiled).

Data: MNIST from ``~/.keras/datasets/mnist.npz`` when it is there, else scikit-learn's digits
upsampled to 28x28 (as ``examples/mnist_jit_compile.py``; nothing is downloaded).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import xlapy
import xlapy.distributed
from xlapy.config import debug_options
from mnist_jit_compile import IMAGE_SIZE, NUM_CLASSES, cast, load


def build_model(tf):
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(128, activation="relu", input_shape=(IMAGE_SIZE,)),
        tf.keras.layers.Dense(NUM_CLASSES)])
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), metrics=["accuracy"],
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    return model


def custom_loop(tf, strategy, model, x, y, global_batch, args, say) -> int:
    """``args.epochs`` epochs of ``strategy.run(step)``; returns the step's compiles."""
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                            reduction="sum")
    variables = model.trainable_variables

    @tf.function(jit_compile=True)
    def gradients(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True)) / global_batch
        return loss, tape.gradient(loss, variables)

    @tf.function(jit_compile=True)
    def compiled_step(images, labels):          # the whole step is one XLA program
        loss, grads = gradients(images, labels)
        ctx = tf.distribute.get_replica_context()
        loss, grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, (loss, grads))
        model.optimizer.apply_gradients(zip(grads, variables))
        return loss

    def horovod_step(images, labels):           # compiled gradients, the rest op by op
        loss, grads = gradients(images, labels)
        loss, grads = tf.distribute.get_replica_context().all_reduce("SUM", (loss, grads))
        model.optimizer.apply_gradients(zip(grads, variables))
        return loss

    step = compiled_step if args.loop == "custom" else horovod_step
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=0)
    # whole batches only: each step's loss is divided by the global batch size
    dataset = strategy.experimental_distribute_dataset(
        dataset.batch(global_batch, drop_remainder=True))
    for epoch in range(1, args.epochs + 1):
        losses = [strategy.experimental_local_results(strategy.run(step, args=batch))[0]
                  for batch in dataset]
        say(f"epoch {epoch}: loss {np.mean([float(v) for v in losses]):.4f}")
    return (compiled_step if args.loop == "custom" else gradients).cache_info().misses


def train(args: argparse.Namespace) -> None:
    import xlapy.tf as tf
    multi = xlapy.distributed.mpi_environment() is not None
    strategy = tf.distribute.MultiWorkerMirroredStrategy() if multi else \
        tf.distribute.MirroredStrategy()
    rank = xlapy.process_index()
    say = print if rank == 0 else (lambda *a, **k: None)
    say(f"{type(strategy).__name__}: {strategy.num_replicas_in_sync} replicas "
        f"({xlapy.process_count()} process(es) x {xlapy.local_device_count()} device(s))")

    (x_train, y_train), (x_test, y_test), name = load()
    x_train, y_train = cast(x_train, y_train)
    x_test, y_test = cast(x_test, y_test)
    x_train, x_test = x_train / 255.0, x_test / 255.0
    tf.keras.utils.set_random_seed(0)          # the same shuffles in every process
    with strategy.scope():
        model = build_model(tf)
    global_batch = args.batch_per_replica * strategy.num_replicas_in_sync
    say(f"{len(x_train)} {name} training images, global batch {global_batch} "
        f"({args.batch_per_replica} per replica)")
    start = time.perf_counter()
    if args.loop == "keras":
        history = model.fit(x_train, y_train, batch_size=global_batch, epochs=args.epochs,
                            verbose=0)
        for epoch, (loss, acc) in enumerate(zip(history.history["loss"],
                                                history.history["accuracy"]), 1):
            say(f"epoch {epoch}: loss {loss:.4f}  accuracy {acc:.4f}")
        compiles = model.train_function.cache_info().misses
    else:
        compiles = custom_loop(tf, strategy, model, x_train, y_train, global_batch, args, say)
    elapsed = time.perf_counter() - start
    per_epoch = -(-len(x_train) // global_batch) if args.loop == "keras" else \
        len(x_train) // global_batch
    steps = args.epochs * per_epoch
    say(f"{steps} steps in {elapsed:.2f}s ({steps * global_batch / elapsed:,.0f} images/s); "
        f"train step compiles: {compiles}")
    for v in model.trainable_variables:         # the mirrored copies never drifted apart
        copies = [np.asarray(c) for c in strategy.experimental_local_results(v)]
        assert all(np.array_equal(c, copies[0]) for c in copies), v.name
    loss, acc = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    say(f"test loss {loss:.4f}  test accuracy {acc:.4f}  (replicas' weights identical)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=2,
                        help="CPU devices of a single-process run (default 2; "
                             "XLA_FLAGS=--xla_force_host_platform_device_count wins)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-per-replica", type=int, default=64)
    parser.add_argument("--loop", choices=("keras", "custom", "horovod"), default="keras",
                        help="model.fit, or a custom loop with the whole step compiled, or "
                             "with only the gradients compiled")
    args = parser.parse_args()
    flag_given = "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
    if flag_given or xlapy.distributed.mpi_environment() is not None:
        train(args)
        return
    with debug_options(xla_force_host_platform_device_count=args.devices):
        train(args)


if __name__ == "__main__":
    main()
