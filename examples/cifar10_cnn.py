"""The TensorFlow XLA CIFAR-10 tutorial on xlapy: the same Keras CNN trained with
``jit_compile=False`` (op by op) and ``jit_compile=True`` (one compiled program per train
step), each timed after a warm-up epoch, then the speed-up.

The model is the tutorial's (adapted from Keras's ``cifar10_cnn`` example): Conv2D 32
(same) + ReLU, Conv2D 32 + ReLU, MaxPool 2, Dropout 0.25, Conv2D 64 (same) + ReLU,
Conv2D 64 + ReLU, MaxPool 2, Dropout 0.25, Flatten, Dense 512 + ReLU, Dropout 0.5,
Dense 10 + softmax; RMSprop(lr=1e-4, decay=1e-6), categorical cross-entropy, batch 256.

Data: CIFAR-10 from ``~/.keras/datasets`` (``cifar-10-batches-py`` or the tar.gz);
``--random-data`` uses random images of CIFAR's shape instead (this machine cannot
download), ``--steps N`` limits every epoch to N batches. On the reference interpreter
a batch of 256 takes tens of seconds; try ``--random-data --steps 2 --batch-size 32
--epochs 1``.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from xlapy import keras
from xlapy.errors import InvalidArgumentError
from xlapy.keras import layers


def load_data(random_data: bool, n_train: int, n_test: int) -> tuple:
    if random_data:
        rng = np.random.default_rng(0)
        x_train = rng.integers(0, 256, (n_train, 32, 32, 3), dtype=np.uint8)
        y_train = rng.integers(0, 10, (n_train, 1), dtype=np.uint8)
        x_test = rng.integers(0, 256, (n_test, 32, 32, 3), dtype=np.uint8)
        y_test = rng.integers(0, 10, (n_test, 1), dtype=np.uint8)
    else:
        (x_train, y_train), (x_test, y_test) = keras.datasets.cifar10.load_data()
    x_train = x_train.astype("float32") / 256
    x_test = x_test.astype("float32") / 256
    # Convert class vectors to binary class matrices.
    y_train = keras.utils.to_categorical(y_train, num_classes=10)
    y_test = keras.utils.to_categorical(y_test, num_classes=10)
    return (x_train, y_train), (x_test, y_test)


def generate_model(input_shape: tuple) -> keras.Sequential:
    return keras.models.Sequential([
        layers.Conv2D(32, (3, 3), padding="same", input_shape=input_shape),
        layers.Activation("relu"),
        layers.Conv2D(32, (3, 3)),
        layers.Activation("relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Dropout(0.25),

        layers.Conv2D(64, (3, 3), padding="same"),
        layers.Activation("relu"),
        layers.Conv2D(64, (3, 3)),
        layers.Activation("relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Dropout(0.25),

        layers.Flatten(),
        layers.Dense(512),
        layers.Activation("relu"),
        layers.Dropout(0.5),
        layers.Dense(10),
        layers.Activation("softmax"),
    ])


def compile_model(model: keras.Sequential, jit_compile: bool) -> keras.Sequential:
    opt = keras.optimizers.RMSprop(lr=0.0001, decay=1e-6)
    model.compile(loss="categorical_crossentropy", optimizer=opt, metrics=["accuracy"],
                  jit_compile=jit_compile)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random-data", action="store_true",
                        help="random images of CIFAR-10's shape instead of the data set")
    parser.add_argument("--steps", type=int, default=None, help="batches per epoch")
    parser.add_argument("--epochs", type=int, default=25)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--mode", choices=["both", "jit", "eager"], default="both")
    args = parser.parse_args()

    steps = args.steps
    n_train = (steps or 4) * args.batch_size
    try:
        data = load_data(args.random_data, n_train, 2 * args.batch_size)
    except InvalidArgumentError as e:              # the data set is not on this machine
        sys.exit(f"{e}\n\nOr run with --random-data to train on random images of "
                 "CIFAR-10's shape instead.")
    (x_train, y_train), (x_test, y_test) = data

    def train_model(model: keras.Sequential, epochs: int) -> None:
        model.fit(x_train, y_train, batch_size=args.batch_size, epochs=epochs,
                  validation_data=(x_test, y_test), shuffle=True, steps_per_epoch=steps)

    def warmup(model: keras.Sequential) -> None:
        # Warm up the JIT, we do not wish to measure the compilation time.
        initial_weights = model.get_weights()
        train_model(model, epochs=1)
        model.set_weights(initial_weights)

    times = {}
    modes = {"both": [False, True], "jit": [True], "eager": [False]}[args.mode]
    for jit in modes:
        label = "jit_compile=True" if jit else "jit_compile=False"
        print(f"\n=== {label} ===")
        keras.backend.clear_session()
        keras.utils.set_random_seed(0)
        model = compile_model(generate_model(x_train.shape[1:]), jit)
        if jit:
            model.summary()
        warmup(model)
        start = time.perf_counter()
        train_model(model, args.epochs)
        times[jit] = time.perf_counter() - start
        print(f"{label}: {args.epochs} epochs in {times[jit]:.1f}s (wall time, after warm-up)")
        scores = model.evaluate(x_test, y_test, verbose=1)
        print("Test loss:", scores[0])
        print("Test accuracy:", scores[1])
        if jit:
            info = model.train_function.cache_info()
            print(f"train step compiles: {info.misses}, cache hits: {info.hits}")
    if len(times) == 2:
        print(f"\nspeed-up of jit_compile=True over jit_compile=False: "
              f"{times[False] / times[True]:.2f}x")


if __name__ == "__main__":
    main()
