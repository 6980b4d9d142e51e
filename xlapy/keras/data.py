"""Batching NumPy data for ``fit`` / ``evaluate`` / ``predict``.

Every batch has exactly ``batch_size`` rows, so a compiled step is traced once: a
partial last batch is *padded* by repeating its own rows, and a per-row ``mask``
(1 for real rows, 0 for padding) goes with it. The trainer multiplies the sample
weights by the mask, divides the loss by the number of real rows and weights the
metrics by the mask, so padded rows change nothing; ``predict`` drops them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend.pytree import tree_flatten, tree_map


def _plain_numbers(x: Any) -> bool:
    """True for a (nested) Python list of numbers: one array, not a list of inputs."""
    if isinstance(x, (int, float, bool, np.number)):
        return True
    return isinstance(x, list) and len(x) > 0 and all(_plain_numbers(e) for e in x)


def to_numpy(tree: Any) -> Any:
    """Every leaf of ``tree`` as a NumPy array (``None`` stays ``None``); a nested list of
    numbers is one array."""
    if tree is None:
        return None
    if _plain_numbers(tree):
        return np.asarray(tree)
    return tree_map(np.asarray, tree)


def num_samples(*trees: Any) -> int:
    """The common leading size of every array leaf (an error names a mismatch)."""
    sizes = {}
    for name, tree in zip(("x", "y", "sample_weight"), trees):
        if tree is None:
            continue
        for leaf in tree_flatten(tree)[0]:
            if np.ndim(leaf) == 0:
                raise InvalidArgumentError(f"{name} must have a batch dimension, got a scalar")
            sizes.setdefault(int(np.shape(leaf)[0]), name)
    if not sizes:
        raise InvalidArgumentError("no input data was given")
    if len(sizes) > 1:
        detail = ", ".join(f"{n} ({src})" for n, src in sizes.items())
        raise InvalidArgumentError(f"data sizes differ along the batch dimension: {detail}")
    return next(iter(sizes))


def take(tree: Any, idx: np.ndarray) -> Any:
    return None if tree is None else tree_map(lambda a: a[idx], tree)


def split_validation(x: Any, y: Any, sw: Any, fraction: float) -> tuple:
    """The last ``fraction`` of the samples as validation data (before any shuffling)."""
    if not 0 < fraction < 1:
        raise InvalidArgumentError(f"validation_split must be in (0, 1), got {fraction}")
    n = num_samples(x, y, sw)
    cut = int(n * (1.0 - fraction))
    if cut == 0 or cut == n:
        raise InvalidArgumentError(f"validation_split={fraction} leaves an empty training or "
                                   f"validation set for {n} samples")
    first, last = np.arange(cut), np.arange(cut, n)
    return (take(x, first), take(y, first), take(sw, first)), \
        (take(x, last), take(y, last), take(sw, last))


@dataclass
class Batch:
    index: np.ndarray     # the rows of the data set, padded to the batch size
    mask: np.ndarray      # float32: 1 for real rows, 0 for padding
    size: int             # the number of real rows


class BatchPlan:
    """Fixed-size batches over ``n`` samples (see the module docstring)."""

    def __init__(self, n: int, batch_size: int | None, shuffle: bool = False,
                 steps: int | None = None) -> None:
        batch_size = 32 if batch_size is None else int(batch_size)
        if batch_size <= 0:
            raise InvalidArgumentError(f"batch_size must be positive, got {batch_size}")
        self.n = n
        self.batch_size = min(batch_size, n)
        self.shuffle = shuffle
        per_pass = -(-n // self.batch_size)
        self.steps = per_pass if steps is None else int(steps)
        if self.steps <= 0:
            raise InvalidArgumentError(f"steps must be positive, got {steps}")

    def _order(self) -> np.ndarray:
        return np.random.permutation(self.n) if self.shuffle else np.arange(self.n)

    def __iter__(self) -> Iterator[Batch]:
        order, pos = self._order(), 0
        for _ in range(self.steps):
            if pos >= self.n:
                order, pos = self._order(), 0
            rows = order[pos:pos + self.batch_size]
            pos += self.batch_size
            size = len(rows)
            mask = np.zeros(self.batch_size, np.float32)
            mask[:size] = 1.0
            if size < self.batch_size:
                rows = np.resize(rows, self.batch_size)
            yield Batch(rows, mask, size)

    def __len__(self) -> int:
        return self.steps


__all__ = ["BatchPlan", "Batch", "to_numpy", "num_samples", "take", "split_validation"]
