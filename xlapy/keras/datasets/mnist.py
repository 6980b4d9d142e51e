"""MNIST handwritten digits from Keras's ``mnist.npz`` (no download)."""
from __future__ import annotations

import os

import numpy as np

from ...errors import InvalidArgumentError
from ._files import missing, resolve

URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"


def load_data(path: str | os.PathLike | None = None) -> tuple:
    """``(x_train, y_train), (x_test, y_test)``: uint8 images ``(60000, 28, 28)`` and
    ``(10000, 28, 28)``, uint8 labels.

    ``path``: the ``mnist.npz`` file, a directory holding it, or a name under
    ``~/.keras/datasets`` (default ``mnist.npz``).
    """
    file = resolve(path, "mnist.npz")
    if not os.path.isfile(file):
        raise missing("the MNIST data set", file, URL)
    try:
        with np.load(file, allow_pickle=False) as f:
            return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
    except (KeyError, ValueError, OSError) as e:
        raise InvalidArgumentError(f"{file} is not Keras's mnist.npz (arrays x_train, y_train, "
                                   f"x_test, y_test): {e}") from None


__all__ = ["load_data"]
