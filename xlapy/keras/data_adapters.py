"""The data given to ``fit`` / ``evaluate`` / ``predict``, as fixed-size step inputs.

Two kinds of data are accepted:

- **arrays**: NumPy arrays, nested lists of numbers, or pytrees (lists, tuples, dicts)
  of arrays, with ``y`` and ``sample_weight`` given separately. :class:`ArrayAdapter`
  batches them with :class:`~xlapy.keras.data.BatchPlan` (shuffled each epoch, the
  last batch padded and masked).
- **an iterable of batches** (:func:`is_batch_iterable`): a generator or any iterator,
  an object with ``__len__`` and ``__getitem__`` (``keras.utils.Sequence`` /
  ``PyDataset`` style), or another object with ``__iter__``. Each batch is
  ``(x, y)``, ``(x, y, sample_weight)`` or, for ``predict``, ``x`` alone (Keras's
  ``unpack_x_y_sample_weight``: a tuple is unpacked, anything else is ``x``).
  :class:`IterableAdapter` pads a batch smaller than the first one to the first one's
  size (with a mask, like the arrays' last batch), so a short last batch does not
  compile a second program; a larger batch compiles one.

An iterator is consumed as it goes: with ``steps_per_epoch`` every epoch takes that
many batches from where the previous one stopped; without it an epoch lasts until the
iterator is exhausted. Sequences and other re-iterable objects start again every epoch.

``class_weight`` (a dict ``{class index: weight}`` with keys ``0 .. n - 1``) multiplies
each row's sample weight by the weight of its class: the integer label, or the argmax of
a one-hot row, as in Keras.
"""
from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend.pytree import tree_flatten
from .data import BatchPlan, num_samples, take, to_numpy

logger = logging.getLogger("xlapy.keras")


@dataclass
class StepData:
    """One step's inputs: every array has the padded batch size as leading dimension."""

    x: Any
    y: Any
    sample_weight: np.ndarray   # float32: mask * sample weights * class weights
    mask: np.ndarray            # float32: 1 for real rows, 0 for padding
    size: int                   # the number of real rows


def is_batch_iterable(data: Any) -> bool:
    """True when ``data`` is an iterable of batches rather than array data."""
    if data is None or isinstance(data, (np.ndarray, np.generic, list, tuple, dict, str,
                                         bytes, int, float, complex, bool)):
        return False
    if hasattr(data, "__array__") or hasattr(data, "__xlapy_array__"):
        return False
    if inspect.isgenerator(data) or hasattr(data, "__next__"):
        return True
    return hasattr(data, "__iter__") or (hasattr(data, "__len__") and
                                         hasattr(data, "__getitem__"))


def unpack_batch(batch: Any) -> tuple[Any, Any, Any]:
    """``(x, y, sample_weight)`` from a batch (Keras's ``unpack_x_y_sample_weight``)."""
    if isinstance(batch, tuple):
        if len(batch) == 1:
            return batch[0], None, None
        if len(batch) == 2:
            return batch[0], batch[1], None
        if len(batch) == 3:
            return batch
        raise InvalidArgumentError(f"a batch must be x, (x,), (x, y) or (x, y, sample_weight); "
                                   f"got a tuple of {len(batch)} elements")
    return batch, None, None


def class_weights(y: Any, class_weight: Mapping[int, float]) -> np.ndarray:
    """Each row's weight from ``class_weight`` (see the module docstring)."""
    if not isinstance(class_weight, Mapping) or not class_weight:
        raise InvalidArgumentError(f"class_weight must be a non-empty dict {{class index: "
                                   f"weight}}, got {class_weight!r}")
    keys = sorted(int(k) for k in class_weight)
    if keys != list(range(len(keys))):
        raise InvalidArgumentError(f"class_weight must have the keys 0 .. n - 1 (one per "
                                   f"class), got keys {keys}")
    leaves = tree_flatten(y)[0] if y is not None else []
    if len(leaves) != 1:
        raise InvalidArgumentError("class_weight needs the targets y as one array (a "
                                   "single-output model)")
    labels = np.asarray(leaves[0])
    if labels.ndim > 1 and labels.shape[-1] > 1:
        labels = np.argmax(labels, axis=-1)
    elif labels.ndim > 1:
        labels = labels[..., 0]
    labels = np.rint(labels).astype(np.int64).reshape(len(labels), -1)[:, 0]
    table = np.array([float(class_weight[k]) for k in keys], np.float32)
    bad = labels[(labels < 0) | (labels >= len(table))]
    if bad.size:
        raise InvalidArgumentError(f"class_weight has weights for classes 0 .. "
                                   f"{len(table) - 1}, but the targets contain class "
                                   f"{int(bad[0])}")
    return table[labels]


def _row_weights(mask: np.ndarray, y: Any, sw: Any, class_weight: Any) -> np.ndarray:
    weights = mask
    if sw is not None:
        sw = np.asarray(sw, np.float32)
        if sw.ndim != 1:
            raise InvalidArgumentError(f"sample_weight must have shape (samples,), got "
                                       f"{sw.shape}")
        weights = weights * sw
    if class_weight is not None:
        weights = weights * class_weights(y, class_weight)
    return weights.astype(np.float32)


class ArrayAdapter:
    """Array data in fixed-size batches (:class:`~xlapy.keras.data.BatchPlan`)."""

    def __init__(self, x: Any, y: Any = None, sample_weight: Any = None,
                 batch_size: int | None = None, shuffle: bool = False,
                 steps: int | None = None, class_weight: Any = None) -> None:
        self.x, self.y, self.sample_weight = to_numpy(x), to_numpy(y), to_numpy(sample_weight)
        if self.sample_weight is not None and np.ndim(self.sample_weight) != 1:
            raise InvalidArgumentError(f"sample_weight must have shape (samples,), got "
                                       f"{np.shape(self.sample_weight)}")
        self.class_weight = class_weight
        self.plan = BatchPlan(num_samples(self.x, self.y, self.sample_weight), batch_size,
                              shuffle, steps)

    @property
    def steps(self) -> int:
        return len(self.plan)

    @property
    def sample_x(self) -> Any:
        """Input data to build the model from."""
        return self.x

    def epoch(self) -> Iterator[StepData]:
        for batch in self.plan:
            y = take(self.y, batch.index)
            sw = None if self.sample_weight is None else self.sample_weight[batch.index]
            weights = _row_weights(batch.mask, y, sw, self.class_weight)
            yield StepData(take(self.x, batch.index), y, weights, batch.mask, batch.size)


class IterableAdapter:
    """An iterable of batches (see the module docstring)."""

    def __init__(self, data: Any, steps: int | None = None, class_weight: Any = None,
                 what: str = "fit") -> None:
        self.data, self.class_weight, self.what = data, class_weight, what
        if steps is not None and int(steps) <= 0:
            raise InvalidArgumentError(f"steps must be positive, got {steps}")
        self._indexable = hasattr(data, "__len__") and hasattr(data, "__getitem__")
        self._one_pass = inspect.isgenerator(data) or hasattr(data, "__next__")
        if steps is not None:
            self._steps: int | None = int(steps)
        elif self._indexable:
            self._steps = len(data)
        else:
            self._steps = None
        self._iterator: Iterator[Any] | None = iter(data) if self._one_pass else None
        self._peeked: list[Any] = []
        self._pending_source: Iterator[Any] | None = None
        self._batch_size: int | None = None
        self.exhausted = False

    @property
    def steps(self) -> int | None:
        """Batches per epoch, or ``None`` when unknown (an iterator without ``steps``)."""
        return self._steps

    def _source(self) -> Iterator[Any]:
        if self._one_pass:
            return self._iterator
        if self._indexable and not hasattr(self.data, "__iter__"):
            return (self.data[i] for i in range(len(self.data)))
        return iter(self.data)

    def _next_raw(self, source: Iterator[Any]) -> Any:
        if self._peeked:
            return self._peeked.pop(0)
        return next(source)

    @property
    def sample_x(self) -> Any:
        """The first batch's inputs (read ahead and kept for the first step)."""
        if not self._peeked:
            source = self._source()
            try:
                self._peeked.append(next(source))
            except StopIteration:
                raise InvalidArgumentError(f"{self.what}: the data iterable produced no "
                                           "batches") from None
            if not self._one_pass:
                self._pending_source = source
        return to_numpy(unpack_batch(self._peeked[0])[0])

    def _convert(self, raw: Any) -> StepData:
        x, y, sw = (to_numpy(v) for v in unpack_batch(raw))
        size = num_samples(x, y, sw)
        if self._batch_size is None:
            self._batch_size = size
        target = max(size, self._batch_size)
        mask = np.zeros(target, np.float32)
        mask[:size] = 1.0
        if size < target:
            rows = np.resize(np.arange(size), target)
            x, y = take(x, rows), take(y, rows)
            sw = None if sw is None else np.asarray(sw)[rows]
        return StepData(x, y, _row_weights(mask, y, sw, self.class_weight), mask, size)

    def epoch(self) -> Iterator[StepData]:
        source = self._pending_source if self._pending_source is not None else \
            self._source()
        self._pending_source = None
        count = 0
        while self._steps is None or count < self._steps:
            try:
                raw = self._next_raw(source)
            except StopIteration:
                if self._steps is not None:
                    logger.warning("%s: the data ran out after %d of %d steps; give an "
                                   "iterable with enough batches for steps_per_epoch * "
                                   "epochs steps", self.what, count, self._steps)
                    self.exhausted = True
                elif count == 0:
                    self.exhausted = True
                return
            count += 1
            yield self._convert(raw)


def adapter_for(x: Any, y: Any = None, sample_weight: Any = None,
                batch_size: int | None = None, shuffle: bool = False,
                steps: int | None = None, class_weight: Any = None,
                what: str = "fit") -> ArrayAdapter | IterableAdapter:
    """The adapter for ``x`` (and ``y``, ``sample_weight`` when ``x`` is array data)."""
    if is_batch_iterable(x):
        if y is not None or sample_weight is not None:
            raise InvalidArgumentError(
                f"{what}: when x is a generator or another iterable of batches, y and "
                "sample_weight come from its batches ((x, y) or (x, y, sample_weight)); do "
                "not pass them separately")
        return IterableAdapter(x, steps, class_weight, what)
    if x is None:
        raise InvalidArgumentError(f"{what}: no input data was given")
    leaves = tree_flatten(to_numpy(x))[0]
    if leaves and all(np.ndim(a) == 0 for a in leaves) and not isinstance(x, np.ndarray):
        raise InvalidArgumentError(
            f"{what}: cannot use x of type {type(x).__name__} as data. Supported: NumPy "
            "arrays (or lists/tuples/dicts of arrays) with y given separately, or an "
            "iterable of batches (a generator, an iterator, or a keras.utils.Sequence-like "
            "object) yielding (x, y) or (x, y, sample_weight)")
    return ArrayAdapter(x, y, sample_weight, batch_size, shuffle, steps, class_weight)


__all__ = ["StepData", "ArrayAdapter", "IterableAdapter", "adapter_for", "is_batch_iterable",
           "unpack_batch", "class_weights"]
