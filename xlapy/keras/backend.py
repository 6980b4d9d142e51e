"""Keras state: layer names and the global seed (process-wide), the batch mask and the
distribution strategy (per thread).

- :func:`unique_name` gives ``dense``, ``dense_1``, ... per base name (reset by
  :func:`clear_session`, as in Keras);
- :func:`set_random_seed` seeds the generator that initializers and layers without an
  explicit ``seed`` draw their seeds from, so a whole model is reproducible;
- :func:`batch_mask` is the per-row weight of the batch being trained on. ``fit`` pads a
  partial last batch to the full batch size (so that it does not compile a second
  program) and marks the padded rows with weight 0; layers that compute statistics
  over the batch (``BatchNormalization``) read the mask so that padded rows do not
  count;
- :func:`distribution_scope` is the strategy a model compiled in it trains with
  (data-parallel, see ``training.py``); :func:`replica_step` marks one replica's part of
  such a step.
"""
from __future__ import annotations

import collections
import re
import threading
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ..threadlocal import PerThreadList

_NAME_COUNTS: collections.Counter = collections.Counter()     # shared by all threads
_NAME_LOCK = threading.Lock()
_RNG: list[np.random.Generator] = [np.random.default_rng()]
_BATCH_MASK = PerThreadList()          # per thread: each thread's fit has its own batch
_DISTRIBUTIONS = PerThreadList()       # per thread: strategies whose scope is open
_REPLICA_STEPS = PerThreadList()       # per thread: the strategy of the replica step run

FLOATX = np.dtype(np.float32)


def floatx() -> str:
    """The default float type of weights and activations (``'float32'``)."""
    return FLOATX.name


def epsilon() -> float:
    """The fuzz factor Keras uses in losses and metrics (``1e-7``)."""
    return 1e-7


def snake_case(name: str) -> str:
    """``Conv2D`` -> ``conv2d``, ``BatchNormalization`` -> ``batch_normalization``."""
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def unique_name(base: str) -> str:
    """``base`` the first time, then ``base_1``, ``base_2``, ..."""
    with _NAME_LOCK:
        n = _NAME_COUNTS[base]
        _NAME_COUNTS[base] += 1
    return base if n == 0 else f"{base}_{n}"


def clear_session() -> None:
    """Reset layer-name counters (Keras's ``clear_session``)."""
    with _NAME_LOCK:
        _NAME_COUNTS.clear()


def set_random_seed(seed: int) -> None:
    """Seed the generator of initializers and dropout layers created without a seed.

    Also seeds NumPy's global generator, which ``fit(shuffle=True)`` uses, as Keras does.
    """
    _RNG[0] = np.random.default_rng(seed)
    np.random.seed(seed)


def draw_seed() -> int:
    """A fresh seed from the global generator (for objects created without one)."""
    return int(_RNG[0].integers(0, 2**31 - 1))


@contextmanager
def batch_mask(mask: Any) -> Iterator[None]:
    """Within the block, :func:`current_batch_mask` is ``mask`` (a ``float32[batch]``)."""
    _BATCH_MASK.append(mask)
    try:
        yield
    finally:
        _BATCH_MASK.pop()


def current_batch_mask() -> Any:
    """The row weights of the batch being trained on, or ``None`` outside ``fit``."""
    return _BATCH_MASK[-1] if _BATCH_MASK else None


@contextmanager
def distribution_scope(strategy: Any) -> Iterator[None]:
    """Within the block (on this thread), models compiled take ``strategy`` as their
    ``distribute_strategy``: ``tf.distribute``'s ``strategy.scope()`` opens it. A strategy
    provides ``num_replicas_in_sync``, ``scope()``, ``run(fn, args)``,
    ``experimental_local_results(value)``,
    ``experimental_distribute_values_from_function(fn)`` and, inside ``run``,
    ``replica_all_reduce(op, value)`` (``op`` ``"SUM"`` or ``"MEAN"``)."""
    with _DISTRIBUTIONS.pushed(strategy):
        yield


def current_distribution() -> Any:
    """The strategy whose scope is innermost on this thread, or ``None``."""
    return _DISTRIBUTIONS[-1] if _DISTRIBUTIONS else None


class _ReplicaStep:
    def __init__(self, strategy: Any) -> None:
        self.strategy = strategy
        self.memo: dict = {}


@contextmanager
def replica_step(strategy: Any) -> Iterator[None]:
    """The block is one replica's part of a data-parallel step of ``strategy``."""
    with _REPLICA_STEPS.pushed(_ReplicaStep(strategy)):
        yield


def current_replica_step() -> Any:
    """The strategy of the data-parallel step this thread runs a replica of, or ``None``."""
    return _REPLICA_STEPS[-1].strategy if _REPLICA_STEPS else None


def replica_step_memo() -> dict:
    """A dict that lives as long as the innermost :func:`replica_step` block of this thread
    (values computed once per step, e.g. the global row count)."""
    return _REPLICA_STEPS[-1].memo


__all__ = ["floatx", "epsilon", "unique_name", "clear_session", "set_random_seed",
           "draw_seed", "batch_mask", "current_batch_mask", "snake_case",
           "distribution_scope", "current_distribution", "replica_step",
           "current_replica_step", "replica_step_memo"]
