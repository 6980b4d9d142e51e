"""CIFAR-10 from the ``cifar-10-batches-py`` pickles (no download).

Looks for the extracted directory ``cifar-10-batches-py`` (``data_batch_1`` ..
``data_batch_5``, ``test_batch``) or, failing that, the archive
``cifar-10-python.tar.gz`` next to it, which is read without extracting. The batches are
Python pickles: load only files you obtained from the data set's authors.
"""
from __future__ import annotations

import os
import pickle
import tarfile
from typing import IO, Callable

import numpy as np

from ...errors import InvalidArgumentError
from ._files import datasets_dir, missing

URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
DIRNAME = "cifar-10-batches-py"
ARCHIVE = "cifar-10-python.tar.gz"
BATCHES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]


def _parse(f: IO[bytes], name: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        d = pickle.load(f, encoding="bytes")
        data = np.asarray(d[b"data"], np.uint8).reshape(-1, 3, 32, 32)
        labels = np.asarray(d[b"labels"], np.uint8).reshape(-1, 1)
    except (KeyError, ValueError, pickle.UnpicklingError, EOFError) as e:
        raise InvalidArgumentError(f"{name} is not a CIFAR-10 batch (a pickle with 'data' and "
                                   f"'labels'): {e}") from None
    return data.transpose(0, 2, 3, 1), labels


def _opener(path: str | os.PathLike | None) -> Callable[[str], IO[bytes]]:
    base = os.fspath(path) if path is not None else datasets_dir()
    candidates = [base, os.path.join(base, DIRNAME)]
    for d in candidates:
        if os.path.isfile(os.path.join(d, "data_batch_1")):
            return lambda name, d=d: open(os.path.join(d, name), "rb")
    archives = [base] if base.endswith(".tar.gz") else [os.path.join(base, ARCHIVE)]
    for a in archives:
        if os.path.isfile(a):
            tar = tarfile.open(a, "r:gz")

            def from_tar(name: str, tar: tarfile.TarFile = tar) -> IO[bytes]:
                member = tar.extractfile(f"{DIRNAME}/{name}")
                if member is None:
                    raise InvalidArgumentError(f"{a} has no member {DIRNAME}/{name}")
                return member
            return from_tar
    raise missing("the CIFAR-10 data set", f"the directory {os.path.join(base, DIRNAME)} "
                  f"(data_batch_1..5, test_batch) or the archive {os.path.join(base, ARCHIVE)}",
                  URL, " (extracting it is optional)")


def load_data(path: str | os.PathLike | None = None) -> tuple:
    """``(x_train, y_train), (x_test, y_test)``: uint8 images ``(50000, 32, 32, 3)`` and
    ``(10000, 32, 32, 3)`` (channels last), uint8 labels of shape ``(n, 1)``.

    ``path``: a directory holding ``cifar-10-batches-py`` or the archive, the batches'
    directory itself, or the archive file; default ``~/.keras/datasets``.
    """
    open_batch = _opener(path)
    parts = []
    for name in BATCHES:
        with open_batch(name) as f:
            parts.append(_parse(f, name))
    x_train = np.concatenate([p[0] for p in parts[:5]])
    y_train = np.concatenate([p[1] for p in parts[:5]])
    return (x_train, y_train), parts[5]


__all__ = ["load_data"]
