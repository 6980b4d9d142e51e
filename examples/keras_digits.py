"""xlapy.keras on scikit-learn's 8x8 digits: a dense model and a small CNN, trained with
``jit_compile=True``; prints test accuracy and how much faster a compiled train step is
than the same step run op by op (``jit_compile=False``).

Run: ``.venv/bin/python examples/keras_digits.py [--quick]`` (needs scikit-learn's data
file: ``pip install scikit-learn``; it is read, not imported). ``--quick`` trains for
fewer epochs (a smoke test; the accuracies are then lower).
"""
from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np

from xlapy import keras
from xlapy.keras import layers

BATCH = 32


def dense_model() -> keras.Sequential:
    return keras.Sequential([layers.Flatten(input_shape=(8, 8, 1)),
                             layers.Dense(64, activation="relu"),
                             layers.Dense(10)], name="dense")


def cnn_model() -> keras.Sequential:
    return keras.Sequential([
        layers.Conv2D(8, 3, padding="same", activation="relu", input_shape=(8, 8, 1)),
        layers.BatchNormalization(),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dropout(0.3),
        layers.Dense(10),
    ], name="cnn")


def compiled(make: Callable[[], keras.Sequential], jit: bool, lr: float) -> keras.Sequential:
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    model = make()
    model.compile(optimizer=keras.optimizers.Adam(lr),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=jit)
    return model


def step_time(model: keras.Sequential, x: np.ndarray, y: np.ndarray, steps: int) -> float:
    """Seconds per train step, measured after one warm-up step (which compiles)."""
    model.train_on_batch(x[:BATCH], y[:BATCH])
    start = time.perf_counter()
    for i in range(steps):
        lo = (i * BATCH) % (len(x) - BATCH)
        model.train_on_batch(x[lo:lo + BATCH], y[lo:lo + BATCH])
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few epochs (smoke test)")
    quick = parser.parse_args().quick
    (x, y), (xt, yt) = keras.datasets.digits.load_data(test_split=0.2, seed=113)
    x = (x.astype(np.float32) / 16)[..., None]
    xt = (xt.astype(np.float32) / 16)[..., None]
    print(f"digits: {len(x)} training and {len(xt)} test images of 8x8\n")
    runs = [(dense_model, 10, 0.005, 40), (cnn_model, 12, 0.005, 10)]
    if quick:
        runs = [(dense_model, 2, 0.005, 5), (cnn_model, 1, 0.005, 3)]
    for make, epochs, lr, timed_steps in runs:
        model = compiled(make, True, lr)
        model.summary()
        start = time.perf_counter()
        model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=2)
        train_time = time.perf_counter() - start
        loss, acc = model.evaluate(xt, yt, verbose=0)
        info = model.train_function.cache_info()
        print(f"{model.name}: test accuracy {acc:.4f} (loss {loss:.4f}); {epochs} epochs in "
              f"{train_time:.1f}s, train step compiled {info.misses} time(s)")
        t_jit = step_time(compiled(make, True, lr), x, y, timed_steps)
        t_eager = step_time(compiled(make, False, lr), x, y, timed_steps)
        print(f"{model.name}: train step {t_jit * 1e3:.1f} ms compiled vs {t_eager * 1e3:.1f} ms "
              f"op by op: {t_eager / t_jit:.1f}x speed-up with jit_compile=True\n")


if __name__ == "__main__":
    main()
