"""``fit`` / ``evaluate`` / ``predict``: the loops around the steps of :mod:`.training`.

Data are arrays or an iterable of batches (a generator, an iterator, a
``keras.utils.Sequence``-like object), see :mod:`.data_adapters`. Every step gets a
batch of fixed size with a 0/1 row mask, so a short last batch does not recompile.
"""
from __future__ import annotations

import logging
from typing import Any, Collection, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from .callbacks import Callback, CallbackList, History, ProgbarLogger
from .data import split_validation, take, to_numpy
from .data_adapters import StepData, adapter_for, is_batch_iterable
from .distributed_training import check_mirrored

logger = logging.getLogger("xlapy.keras")


def logs_to_floats(logs: dict, order: Sequence[str] = ()) -> dict:
    """Python floats, in ``order`` first (compiled steps return dicts with sorted keys)."""
    keys = [k for k in order if k in logs] + [k for k in logs if k not in order]
    return {k: float(np.asarray(logs[k])) for k in keys}


_EMPTY_HINT = (" (a generator or iterator is read only once: for data used again, e.g. "
               "validation_data, pass arrays or a Sequence-like object)")


def _leaves(tree: Any) -> list[np.ndarray]:
    if isinstance(tree, np.ndarray):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [np.asarray(t) for t in tree]
    return [np.asarray(tree)]


def _validation_parts(data: Any) -> tuple[Any, Any, Any]:
    if is_batch_iterable(data):
        return data, None, None
    if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
        raise InvalidArgumentError("validation_data must be a tuple (x_val, y_val) or "
                                   "(x_val, y_val, sample_weight), or an iterable of "
                                   "such batches")
    return data[0], data[1], (data[2] if len(data) == 3 else None)


def _validate_now(epoch: int, freq: int | Collection[int]) -> bool:
    """Keras's ``validation_freq``: every ``freq`` epochs, or at the listed epochs
    (1-based)."""
    if isinstance(freq, int):
        if freq < 1:
            raise InvalidArgumentError(f"validation_freq must be a positive integer, got "
                                       f"{freq}")
        return (epoch + 1) % freq == 0
    if isinstance(freq, Collection) and not isinstance(freq, str):
        return epoch + 1 in freq
    raise InvalidArgumentError(f"validation_freq must be an integer or a collection of "
                               f"epochs, got {freq!r}")


class TrainingLoops:
    """``fit``, ``evaluate`` and ``predict`` (mixed into :class:`~.training.Trainer`)."""

    def _ensure_built(self, x: Any) -> None:
        strategy = getattr(self, "distribute_strategy", None)
        if strategy is not None:     # weights and optimizer slots made here are mirrored
            with strategy.scope():
                self._build_for(x)
            check_mirrored(self, strategy)
        else:
            self._build_for(x)

    def _build_for(self, x: Any) -> None:
        if not self.built:
            if hasattr(self, "_build_chain"):            # Sequential: shapes suffice
                self.build((None, *np.shape(x)[1:]))
            else:
                self(take(x, np.arange(1)))
        if getattr(self, "compiled", False):
            self.optimizer.build(self.trainable_variables)

    def _callbacks(self, callbacks: Any, verbose: int, params: dict,
                   history: History | None = None) -> CallbackList:
        cbs: list[Callback] = list(callbacks or [])
        if verbose:
            cbs.append(ProgbarLogger(verbose))
        if history is not None:
            cbs.append(history)
        return CallbackList(cbs, model=self, params=params)

    @staticmethod
    def _verbosity(verbose: Any) -> int:
        return 1 if verbose == "auto" else int(verbose)

    @staticmethod
    def _step_args(step: StepData) -> tuple:
        return step.x, step.y, step.sample_weight, step.mask

    def fit(self, x: Any = None, y: Any = None, batch_size: int | None = None, epochs: int = 1,
            verbose: Any = "auto", callbacks: Sequence[Callback] | None = None,
            validation_split: float = 0.0, validation_data: Any = None, shuffle: bool = True,
            class_weight: dict | None = None, sample_weight: Any = None,
            initial_epoch: int = 0, steps_per_epoch: int | None = None,
            validation_steps: int | None = None, validation_batch_size: int | None = None,
            validation_freq: int | Collection[int] = 1, max_queue_size: int = 10,
            workers: int = 1, use_multiprocessing: bool = False) -> Any:
        """Train for ``epochs`` epochs; returns a :class:`History`.

        ``x`` is array data (with ``y``, ``sample_weight``) or an iterable of batches
        ``(x, y[, sample_weight])`` (see :mod:`.data_adapters`). ``class_weight`` maps
        class indices to weights that multiply the sample weights. Validation runs after
        the epochs selected by ``validation_freq`` on ``validation_data`` (or the last
        ``validation_split`` of the arrays), in batches of ``validation_batch_size``
        (default ``batch_size``), at most ``validation_steps`` of them.
        ``max_queue_size``, ``workers`` and ``use_multiprocessing`` (TensorFlow 2 Keras's
        options for generator input) are accepted and have no effect: batches are read
        in the calling thread.
        """
        self._check_compiled("fit")
        if validation_data is None and validation_split:
            if is_batch_iterable(x):
                raise InvalidArgumentError("validation_split needs array data; with a "
                                           "generator or iterable pass validation_data")
            (x, y, sample_weight), validation_data = split_validation(
                to_numpy(x), to_numpy(y), to_numpy(sample_weight), validation_split)
        data = adapter_for(x, y, sample_weight, batch_size, shuffle, steps_per_epoch,
                           class_weight, "fit")
        self._ensure_built(data.sample_x)
        verbose = self._verbosity(verbose)
        history = History()
        names = self.metrics_names
        val_names = [f"val_{m}" for m in names]
        cbs = self._callbacks(callbacks, verbose, {"epochs": epochs, "steps": data.steps,
                                                   "verbose": verbose,
                                                   "metrics": names + val_names}, history)
        self.stop_training = False
        cbs.on_train_begin()
        logs: dict = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            steps_run = 0
            for step, batch in enumerate(data.epoch()):
                cbs.on_train_batch_begin(step)
                logs = logs_to_floats(self.run_train_step(self._step_args(batch), "fit"),
                                      names)
                cbs.on_train_batch_end(step, logs)
                steps_run += 1
            if steps_run == 0:
                logger.warning("fit: the input ran out of data at epoch %d; interrupting "
                               "training (give steps_per_epoch, or an iterable that can "
                               "produce steps_per_epoch * epochs batches)", epoch + 1)
                break
            epoch_logs = dict(logs)
            if validation_data is not None and _validate_now(epoch, validation_freq):
                vx, vy, vsw = _validation_parts(validation_data)
                val = self.evaluate(vx, vy, batch_size=validation_batch_size or batch_size,
                                    verbose=0, sample_weight=vsw, steps=validation_steps,
                                    return_dict=True, _internal=True)
                epoch_logs.update({f"val_{k}": v for k, v in val.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
            if getattr(data, "exhausted", False):
                logger.warning("fit: the input ran out of data; interrupting training")
                break
        cbs.on_train_end(logs)
        return history

    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None,
                 verbose: Any = "auto", sample_weight: Any = None, steps: int | None = None,
                 callbacks: Sequence[Callback] | None = None, max_queue_size: int = 10,
                 workers: int = 1, use_multiprocessing: bool = False, return_dict: bool = False,
                 _internal: bool = False) -> Any:
        """The loss and metrics over the data (arrays or an iterable of batches): a float
        (loss only), a list ``[loss, metric...]`` or, with ``return_dict``, a dict.
        ``max_queue_size``, ``workers``, ``use_multiprocessing`` are accepted no-ops."""
        self._check_compiled("evaluate")
        data = adapter_for(x, y, sample_weight, batch_size, False, steps, None, "evaluate")
        self._ensure_built(data.sample_x)
        verbose = self._verbosity(verbose)
        names = self.metrics_names
        cbs = self._callbacks(None if _internal else callbacks, verbose,
                              {"steps": data.steps, "mode": "test", "metrics": names})
        self.reset_metrics()
        cbs.on_test_begin()
        logs: dict = {}
        for step, batch in enumerate(data.epoch()):
            cbs.on_test_batch_begin(step)
            logs = logs_to_floats(self.test_function(*self._step_args(batch)), names)
            cbs.on_test_batch_end(step, logs)
        cbs.on_test_end(logs)
        if not logs:
            raise InvalidArgumentError(f"evaluate: the data produced no batches{_EMPTY_HINT}")
        if return_dict:
            return logs
        values = [logs[name] for name in names]
        return values[0] if len(values) == 1 else values

    def predict(self, x: Any, batch_size: int | None = None, verbose: Any = "auto",
                steps: int | None = None, callbacks: Sequence[Callback] | None = None,
                max_queue_size: int = 10, workers: int = 1,
                use_multiprocessing: bool = False) -> Any:
        """The model's outputs for ``x`` (arrays, or an iterable of batches whose inputs
        are used) as NumPy arrays, padded rows dropped. ``max_queue_size``, ``workers``,
        ``use_multiprocessing`` are accepted no-ops."""
        self._ensure_predict_function()
        data = adapter_for(x, None, None, batch_size, False, steps, None, "predict")
        self._ensure_built(data.sample_x)
        verbose = self._verbosity(verbose)
        cbs = self._callbacks(callbacks, verbose, {"steps": data.steps})
        cbs.on_predict_begin()
        outputs: list[Any] = []
        sizes: list[int] = []
        for step, batch in enumerate(data.epoch()):
            cbs.on_predict_batch_begin(step)
            outputs.append(to_numpy(self.predict_function(batch.x)))
            sizes.append(batch.size)
            cbs.on_predict_batch_end(step)
        cbs.on_predict_end()
        if not outputs:
            raise InvalidArgumentError(f"predict: the data produced no batches{_EMPTY_HINT}")
        leaves = [_leaves(o) for o in outputs]
        merged = [np.concatenate([ls[i][:s] for ls, s in zip(leaves, sizes)])
                  for i in range(len(leaves[0]))]
        return merged[0] if len(merged) == 1 else merged


__all__ = ["TrainingLoops", "logs_to_floats"]
