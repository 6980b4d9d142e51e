"""The TensorFlow ``jit_compile`` MNIST tutorial on xlapy.

One ``Dense(10)`` layer on flattened 28x28 images, trained with Adam; the whole train
step (forward, loss, ``GradientTape`` gradients, optimizer update) is one
``xlapy.function(jit_compile=True)``, compiled once and reused for every batch.

Data: MNIST from ``~/.keras/datasets/mnist.npz`` when it is there. Otherwise (this
machine cannot download) scikit-learn's 8x8 digits, each image upsampled 3x (nearest
neighbour) to 24x24 and zero-padded to 28x28, so the model keeps the tutorial's
784 -> 10 shape; pixel values are scaled to MNIST's 0..255 range.

Run: ``.venv/bin/python examples/mnist_jit_compile.py [--steps 1000]``.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import xlapy
import xlapy.numpy as xnp
from xlapy import keras
from xlapy.errors import InvalidArgumentError

IMAGE_SIZE = 28 * 28
NUM_CLASSES = 10
TRAIN_BATCH_SIZE = 100


def load() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], str]:
    try:
        train, test = keras.datasets.mnist.load_data()
        return train, test, "MNIST"
    except InvalidArgumentError as e:
        print(f"MNIST not available ({str(e).split(':')[0]}); using scikit-learn's digits, "
              "upsampled 3x and padded to 28x28")
    (x, y), (xt, yt) = keras.datasets.digits.load_data(test_split=0.2, seed=0)

    def to_28(images: np.ndarray) -> np.ndarray:
        big = np.kron(images.astype(np.float32), np.ones((1, 3, 3), np.float32))   # 24x24
        big = np.pad(big, ((0, 0), (2, 2), (2, 2)))
        return (big * (255.0 / 16.0)).round().astype(np.uint8)
    return (to_28(x), y), (to_28(xt), yt), "digits"


def cast(images: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return images.reshape(-1, IMAGE_SIZE).astype(np.float32), labels.astype(np.int32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000, help="training steps (tutorial: 1000)")
    args = parser.parse_args()

    (x_train, y_train), (x_test, y_test), name = load()
    keras.utils.set_random_seed(0)
    layer = keras.layers.Dense(NUM_CLASSES)
    optimizer = keras.optimizers.Adam()

    @xlapy.function(jit_compile=True)
    def train_mnist(images, labels):
        with xlapy.GradientTape() as tape:
            predicted_labels = layer(images)
            loss = xnp.mean(keras.losses.sparse_categorical_crossentropy(
                labels, predicted_labels, from_logits=True))
        layer_variables = layer.trainable_variables
        grads = tape.gradient(loss, layer_variables)
        optimizer.apply_gradients(zip(grads, layer_variables))
        return loss

    images, labels = cast(x_train, y_train)
    n = len(images) // TRAIN_BATCH_SIZE * TRAIN_BATCH_SIZE       # whole batches, repeated
    print(f"training on {len(images)} {name} images, batch {TRAIN_BATCH_SIZE}, "
          f"{args.steps} steps")
    report = max(args.steps // 10, 1)
    start = time.perf_counter()
    step, window = 0, []
    while int(optimizer.iterations.numpy()) < args.steps:
        lo = (step * TRAIN_BATCH_SIZE) % n
        loss = train_mnist(images[lo:lo + TRAIN_BATCH_SIZE], labels[lo:lo + TRAIN_BATCH_SIZE])
        step += 1
        window.append(float(loss))
        if step == 1 or step % report == 0:
            print(f"step {step:5d}  mean loss of the last {len(window):4d} steps "
                  f"{np.mean(window):10.4f}")
            window = []
    elapsed = time.perf_counter() - start
    info = train_mnist.cache_info()
    print(f"{step} steps in {elapsed:.2f}s ({elapsed / step * 1e3:.2f} ms/step); compiles: "
          f"{info.misses}, cache hits: {info.hits}")

    test_images, test_labels = cast(x_test, y_test)
    predicted_labels = layer(test_images)
    correct_prediction = xnp.equal(xnp.argmax(predicted_labels, 1), test_labels)
    accuracy = xnp.mean(correct_prediction.astype(np.float32))
    print(f"Prediction accuracy after training: {float(accuracy):.4f}")


if __name__ == "__main__":
    main()
