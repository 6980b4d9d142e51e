"""The 8x8 handwritten digits bundled with scikit-learn (1797 images, 10 classes).

Read from scikit-learn's ``sklearn/datasets/data/digits.csv.gz`` (64 pixel values 0..16
and the label per row) without importing scikit-learn: the installed package is only
located. ``pip install scikit-learn`` provides the file (it is in xlapy's ``test``
extra); ``load_data(path=...)`` accepts the CSV directly.
"""
from __future__ import annotations

import gzip
import importlib.util
import os

import numpy as np

from ...errors import InvalidArgumentError

_RELATIVE = os.path.join("datasets", "data", "digits.csv.gz")


def _locate() -> str | None:
    spec = importlib.util.find_spec("sklearn")
    for root in (spec.submodule_search_locations or []) if spec else []:
        file = os.path.join(root, _RELATIVE)
        if os.path.isfile(file):
            return file
    return None


def load_arrays(path: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """All 1797 images ``(n, 8, 8)`` (uint8, values 0..16) and labels ``(n,)`` (uint8)."""
    file = os.fspath(path) if path is not None else _locate()
    if file is None or not os.path.isfile(file):
        where = file or f"sklearn/{_RELATIVE.replace(os.sep, '/')} in an installed scikit-learn"
        raise InvalidArgumentError(
            f"the digits data set was not found: expected {where}. Install scikit-learn "
            "(pip install scikit-learn; it is not imported, only its data file is read) or "
            "pass load_data(path='.../digits.csv.gz').")
    opener = gzip.open if file.endswith(".gz") else open
    with opener(file, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float64)
    if table.ndim != 2 or table.shape[1] != 65:
        raise InvalidArgumentError(f"{file}: expected rows of 64 pixels and a label, got an "
                                   f"array of shape {table.shape}")
    return table[:, :64].reshape(-1, 8, 8).astype(np.uint8), table[:, 64].astype(np.uint8)


def load_data(test_split: float = 0.2, seed: int = 113,
              path: str | os.PathLike | None = None) -> tuple:
    """``(x_train, y_train), (x_test, y_test)`` after shuffling with ``seed``; the last
    ``test_split`` of the shuffled samples are the test set. Images are uint8 ``(n, 8, 8)``
    with values 0..16 (divide by 16 to scale to [0, 1]); labels are uint8 ``(n,)``."""
    if not 0 < test_split < 1:
        raise InvalidArgumentError(f"test_split must be in (0, 1), got {test_split}")
    x, y = load_arrays(path)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    cut = int(round(len(x) * (1 - test_split)))
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


__all__ = ["load_data", "load_arrays"]
