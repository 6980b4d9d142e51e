"""``tf.data``: a small, honest ``Dataset`` — a re-iterable pipeline of Python stages.

Elements are nested structures (tuples, dicts, namedtuples) of arrays. Inside the
pipeline they are NumPy arrays; iterating a Dataset yields xlapy arrays (64-bit types
become 32-bit, as everywhere in xlapy), ``as_numpy_iterator`` yields NumPy values.

Semantics follow TF's where it matters for results:

- ``from_tensor_slices`` slices every component along its first dimension (all must
  agree); a list is one tensor, a tuple or dict is a structure;
- ``batch(n, drop_remainder=False)`` stacks ``n`` consecutive elements; the last batch is
  smaller unless ``drop_remainder`` (a compiled step then compiles once more for it, as
  with TF's ``jit_compile``);
- ``shuffle(buffer_size, seed, reshuffle_each_iteration=True)`` is TF's buffer shuffle:
  fill a buffer, emit a random element of it, refill; a buffer at least the dataset's size
  is a uniform permutation. With a seed, the sequence of epoch orders is reproducible;
- ``repeat(count=None)`` repeats forever; ``take``/``skip``/``enumerate``/``filter``
  behave as in TF;
- ``map(fn)`` calls ``fn`` once per element with xlapy arrays (a tuple element is passed
  as separate arguments, as TF does). Like TF, which traces ``fn`` into a graph, ``fn``
  is compiled (once per element signature) when it can be and runs op by op otherwise
  (``xlapy.function`` soft mode); ``num_parallel_calls`` and ``deterministic`` are
  accepted, the pipeline runs sequentially and in order;
- ``prefetch`` and ``cache`` change no results: ``prefetch`` is a no-op, ``cache``
  keeps the elements of the first complete pass in memory.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterator

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend.core import Array, to_array
from ..frontend.tf_function import EagerFunction

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


# ------------------------------------------------------------------ element structures
def _map_structure(fn: Callable[[Any], Any], s: Any) -> Any:
    if isinstance(s, tuple) and hasattr(s, "_fields"):
        return type(s)(*[_map_structure(fn, e) for e in s])
    if isinstance(s, tuple):
        return tuple(_map_structure(fn, e) for e in s)
    if isinstance(s, dict):
        return {k: _map_structure(fn, v) for k, v in s.items()}
    return fn(s)


def _leaves(s: Any) -> list[Any]:
    out: list[Any] = []
    _map_structure(out.append, s)
    return out


def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, Array) and x.is_traced:
        raise InvalidArgumentError("tf.data: a dataset element cannot be a traced value")
    return np.asarray(x)


def _to_xlapy(s: Any) -> Any:
    return _map_structure(lambda v: to_array(v), s)


def _stack(elements: list[Any]) -> Any:
    first = elements[0]
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*[_stack([e[i] for e in elements]) for i in range(len(first))])
    if isinstance(first, tuple):
        return tuple(_stack([e[i] for e in elements]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _stack([e[k] for e in elements]) for k in first}
    try:
        return np.stack(elements)
    except ValueError as e:
        raise InvalidArgumentError(f"Dataset.batch: elements of different shapes cannot be "
                                   f"batched: {e}") from None


class Dataset:
    """A re-iterable input pipeline (see the module docstring)."""

    def __init__(self, make_iter: Callable[[], Iterator[Any]], cardinality: int) -> None:
        self._make_iter = make_iter
        self._cardinality = cardinality

    # ----- sources
    @staticmethod
    def from_tensor_slices(tensors: Any, name: str | None = None) -> "Dataset":
        """One element per row of ``tensors`` (an array, or a tuple/dict of arrays)."""
        data = _map_structure(_to_numpy, tensors)
        leaves = _leaves(data)
        if not leaves or any(v.ndim == 0 for v in leaves):
            raise InvalidArgumentError("Dataset.from_tensor_slices needs arrays with a first "
                                       "dimension")
        n = leaves[0].shape[0]
        if any(v.shape[0] != n for v in leaves):
            raise InvalidArgumentError(f"Dataset.from_tensor_slices: components have different "
                                       f"first dimensions {[v.shape[0] for v in leaves]}")
        return Dataset(lambda: (_map_structure(lambda v: v[i], data) for i in range(n)), n)

    @staticmethod
    def from_tensors(tensors: Any, name: str | None = None) -> "Dataset":
        """A dataset of one element: ``tensors``."""
        data = _map_structure(_to_numpy, tensors)
        return Dataset(lambda: iter([data]), 1)

    @staticmethod
    def range(*args: int, output_type: Any = np.int64, name: str | None = None) -> "Dataset":
        """``Dataset.range(stop)`` / ``(start, stop[, step])``: scalar integers."""
        r = range(*[int(a) for a in args])
        dt = np.dtype(output_type)
        return Dataset(lambda: (dt.type(i) for i in r), len(r))

    @staticmethod
    def zip(datasets: Any, name: str | None = None) -> "Dataset":
        """Elements of several datasets side by side (stops at the shortest)."""
        parts = tuple(datasets) if not isinstance(datasets, dict) else datasets
        sources = list(parts.values()) if isinstance(parts, dict) else list(parts)
        if not all(isinstance(d, Dataset) for d in sources):
            raise InvalidArgumentError("Dataset.zip takes a tuple or dict of Datasets")
        finite = [d._cardinality for d in sources if d._cardinality >= 0]
        card = min(finite) if finite else (UNKNOWN_CARDINALITY if any(
            d._cardinality == UNKNOWN_CARDINALITY for d in sources) else INFINITE_CARDINALITY)

        def it() -> Iterator[Any]:
            for items in zip(*[d._make_iter() for d in sources]):
                yield dict(zip(parts, items)) if isinstance(parts, dict) else tuple(items)
        return Dataset(it, card)

    # ----- transformations
    def batch(self, batch_size: int, drop_remainder: bool = False,
              num_parallel_calls: Any = None, deterministic: Any = None,
              name: str | None = None) -> "Dataset":
        """Stack ``batch_size`` consecutive elements into one."""
        n = int(batch_size)
        if n <= 0:
            raise InvalidArgumentError(f"Dataset.batch: batch_size must be positive, got {n}")

        def it() -> Iterator[Any]:
            source = self._make_iter()
            while True:
                chunk = list(itertools.islice(source, n))
                if not chunk or (drop_remainder and len(chunk) < n):
                    return
                yield _stack(chunk)
        c = self._cardinality
        card = c if c < 0 else (c // n if drop_remainder else -(-c // n))
        return Dataset(it, card)

    def unbatch(self, name: str | None = None) -> "Dataset":
        """Split each element along its first dimension."""
        def it() -> Iterator[Any]:
            for e in self._make_iter():
                k = _leaves(e)[0].shape[0]
                for i in range(k):
                    yield _map_structure(lambda v: v[i], e)
        return Dataset(it, UNKNOWN_CARDINALITY if self._cardinality >= 0 else self._cardinality)

    def repeat(self, count: int | None = None, name: str | None = None) -> "Dataset":
        """Repeat ``count`` times (forever when None or -1)."""
        times = None if count is None or int(count) < 0 else int(count)

        def it() -> Iterator[Any]:
            for _ in (itertools.count() if times is None else range(times)):
                yield from self._make_iter()
        c = self._cardinality
        if times is None:
            card = INFINITE_CARDINALITY if c != 0 else 0
        else:
            card = c * times if c >= 0 else (c if times else 0)
        return Dataset(it, card)

    def shuffle(self, buffer_size: int, seed: int | None = None,
                reshuffle_each_iteration: bool = True, name: str | None = None) -> "Dataset":
        """TF's buffer shuffle (see the module docstring)."""
        size = int(buffer_size)
        if size <= 0:
            raise InvalidArgumentError(f"Dataset.shuffle: buffer_size must be positive, "
                                       f"got {size}")
        if seed is None:            # TF: the global seed decides when set, else random
            from .random import _STATE
            g = _STATE["seed"]
            base = [int(g), 0x5EED] if g is not None else [np.random.SeedSequence().entropy]
        else:
            base = [int(seed) % 2 ** 64]
        epochs = itertools.count()

        def it() -> Iterator[Any]:
            epoch = next(epochs) if reshuffle_each_iteration else 0
            rng = np.random.default_rng(base + [epoch])
            buf: list[Any] = []
            for e in self._make_iter():
                if len(buf) < size:
                    buf.append(e)
                    continue
                j = int(rng.integers(size))
                yield buf[j]
                buf[j] = e
            while buf:
                yield buf.pop(int(rng.integers(len(buf))))
        return Dataset(it, self._cardinality)

    def map(self, map_func: Callable[..., Any], num_parallel_calls: Any = None,
            deterministic: Any = None, name: str | None = None) -> "Dataset":
        """Apply ``map_func`` to every element (see the module docstring)."""
        fn = EagerFunction(map_func, soft=True)

        def it() -> Iterator[Any]:
            for e in self._make_iter():
                args = _to_xlapy(e)
                out = fn(*args) if isinstance(args, tuple) and not hasattr(args, "_fields") \
                    else fn(args)
                yield _map_structure(_to_numpy, out)
        return Dataset(it, self._cardinality)

    def filter(self, predicate: Callable[..., Any], name: str | None = None) -> "Dataset":
        """Keep the elements for which ``predicate`` is true (run op by op)."""
        def it() -> Iterator[Any]:
            for e in self._make_iter():
                args = _to_xlapy(e)
                keep = predicate(*args) if isinstance(args, tuple) and not hasattr(
                    args, "_fields") else predicate(args)
                if bool(np.asarray(keep)):
                    yield e
        return Dataset(it, UNKNOWN_CARDINALITY if self._cardinality >= 0 else self._cardinality)

    def take(self, count: int, name: str | None = None) -> "Dataset":
        """The first ``count`` elements (all when -1)."""
        n = int(count)
        if n < 0:
            return self
        c = self._cardinality
        return Dataset(lambda: itertools.islice(self._make_iter(), n),
                       min(c, n) if c >= 0 else (n if c == INFINITE_CARDINALITY else c))

    def skip(self, count: int, name: str | None = None) -> "Dataset":
        """All but the first ``count`` elements (-1 skips everything)."""
        n = int(count)
        c = self._cardinality
        if n < 0:
            return Dataset(lambda: iter(()), 0)
        return Dataset(lambda: itertools.islice(self._make_iter(), n, None),
                       max(c - n, 0) if c >= 0 else c)

    def enumerate(self, start: int = 0, name: str | None = None) -> "Dataset":
        """``(index, element)`` pairs; indices are int64 scalars (int32 once in xlapy)."""
        def it() -> Iterator[Any]:
            for i, e in enumerate(self._make_iter(), int(start)):
                yield (np.int64(i), e)
        return Dataset(it, self._cardinality)

    def concatenate(self, dataset: "Dataset", name: str | None = None) -> "Dataset":
        c1, c2 = self._cardinality, dataset._cardinality
        card = c1 + c2 if c1 >= 0 and c2 >= 0 else (
            INFINITE_CARDINALITY if INFINITE_CARDINALITY in (c1, c2) else UNKNOWN_CARDINALITY)
        return Dataset(lambda: itertools.chain(self._make_iter(), dataset._make_iter()), card)

    def prefetch(self, buffer_size: Any = None, name: str | None = None) -> "Dataset":
        """A no-op: elements are produced when asked for."""
        return self

    def cache(self, filename: str = "", name: str | None = None) -> "Dataset":
        """Keep the elements of the first complete pass in memory (``filename`` must be
        empty: no file cache)."""
        if filename:
            raise InvalidArgumentError(f"Dataset.cache: argument filename={filename!r} is not "
                                       "supported by xlapy: only the in-memory cache")
        store: list[Any] = []
        done: list[bool] = [False]

        def it() -> Iterator[Any]:
            if done[0]:
                yield from store
                return
            store.clear()
            for e in self._make_iter():
                store.append(e)
                yield e
            done[0] = True
        return Dataset(it, self._cardinality)

    # ----- consuming
    def __iter__(self) -> Iterator[Any]:
        """Elements as xlapy arrays."""
        return (_to_xlapy(e) for e in self._make_iter())

    def as_numpy_iterator(self) -> Iterator[Any]:
        """Elements as NumPy values (NumPy scalars for 0-d elements, as TF)."""
        return iter(self._make_iter())

    def cardinality(self) -> Array:
        """The number of elements, ``INFINITE_CARDINALITY`` (-1) or
        ``UNKNOWN_CARDINALITY`` (-2)."""
        return to_array(np.int32(self._cardinality))

    def __len__(self) -> int:
        if self._cardinality == INFINITE_CARDINALITY:
            raise TypeError("the dataset is infinite")
        if self._cardinality == UNKNOWN_CARDINALITY:
            raise TypeError("the dataset's length is unknown")
        return self._cardinality

    def reduce(self, initial_state: Any, reduce_func: Callable[[Any, Any], Any]) -> Any:
        """Fold the elements into ``initial_state`` with ``reduce_func(state, element)``."""
        state = _to_xlapy(_map_structure(_to_numpy, initial_state))
        for e in self:
            state = reduce_func(state, e)
        return state


class experimental:  # noqa: N801  (TF's namespace ``tf.data.experimental``)
    """``tf.data.experimental``: the constants TF code reaches through it."""

    AUTOTUNE = AUTOTUNE
    INFINITE_CARDINALITY = INFINITE_CARDINALITY
    UNKNOWN_CARDINALITY = UNKNOWN_CARDINALITY

    @staticmethod
    def cardinality(dataset: Dataset) -> Array:
        return dataset.cardinality()


__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY",
           "experimental"]
