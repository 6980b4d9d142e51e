"""Callbacks: ``History`` (returned by ``fit``), ``ProgbarLogger``, ``EarlyStopping``,
``ModelCheckpoint``, ``LearningRateScheduler``, ``LambdaCallback``.

Hooks get ``logs``, a dict of Python floats (``loss``, metric names, ``val_*`` at the
end of an epoch). Set ``model.stop_training = True`` in a hook to end ``fit`` after
the current epoch.
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Any, Callable, Iterable

import numpy as np

from ..errors import InvalidArgumentError
from .progbar import Progbar

logger = logging.getLogger("xlapy.keras")


class Callback:
    """Base class; every hook does nothing by default."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    def on_train_begin(self, logs: dict | None = None) -> None: ...
    def on_train_end(self, logs: dict | None = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_begin(self, logs: dict | None = None) -> None: ...
    def on_test_end(self, logs: dict | None = None) -> None: ...
    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_begin(self, logs: dict | None = None) -> None: ...
    def on_predict_end(self, logs: dict | None = None) -> None: ...
    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None: ...


class CallbackList(Callback):
    """Dispatches every hook to a list of callbacks, in order."""

    def __init__(self, callbacks: Iterable[Callback] = (), model: Any = None,
                 params: dict | None = None) -> None:
        super().__init__()
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise InvalidArgumentError(f"callbacks must be Callback instances, got "
                                           f"{type(cb).__name__}")
            if model is not None:
                cb.set_model(model)
            if params is not None:
                cb.set_params(params)



def _dispatch(hook: str) -> Callable[..., None]:
    def call(self: CallbackList, *args: Any) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(*args)
    call.__name__ = hook
    return call


for _hook in [n for n in vars(Callback) if n.startswith("on_")]:
    setattr(CallbackList, _hook, _dispatch(_hook))


class History(Callback):
    """Records every epoch's logs: ``history.history['loss']`` is a list per epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[float]] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


class ProgbarLogger(Callback):
    """Prints ``Epoch i/n`` (when ``epochs > 1``) and a :class:`Progbar` per epoch, per
    evaluation or per prediction (``verbose`` 1 or 2)."""

    def __init__(self, verbose: int = 1, file: Any = None) -> None:
        super().__init__()
        self.verbose = verbose
        self.file = file
        self._bar: Progbar | None = None

    def _new_bar(self, steps: int | None, stateful: Iterable[str]) -> None:
        self._bar = Progbar(steps, verbose=self.verbose, stateful_metrics=stateful,
                            file=self.file if self.file is not None else sys.stdout)

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        epochs = self.params.get("epochs", 1)
        if self.verbose and epochs > 1:
            out = self.file if self.file is not None else sys.stdout
            out.write(f"Epoch {epoch + 1}/{epochs}\n")
            out.flush()
        self._new_bar(self.params.get("steps"), self.params.get("metrics", ()))

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        steps = self.params.get("steps")
        if self._bar is not None and (steps is None or batch + 1 < steps):
            self._bar.update(batch + 1, list((logs or {}).items()), finalize=False)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self._bar is not None:
            self._bar.update(self.params.get("steps") or self._bar._seen,
                             list((logs or {}).items()), finalize=True)
            self._bar = None

    def on_test_begin(self, logs: dict | None = None) -> None:
        if self.params.get("mode") == "test":
            self._new_bar(self.params.get("steps"), self.params.get("metrics", ()))

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self._bar is not None and self.params.get("mode") == "test":
            self._bar.update(batch + 1, list((logs or {}).items()), finalize=False)

    def on_test_end(self, logs: dict | None = None) -> None:
        if self._bar is not None and self.params.get("mode") == "test":
            self._bar.update(self.params.get("steps") or self._bar._seen,
                             list((logs or {}).items()), finalize=True)
            self._bar = None

    def on_predict_begin(self, logs: dict | None = None) -> None:
        self._new_bar(self.params.get("steps"), ())

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self._bar is not None:
            self._bar.update(batch + 1, finalize=False)

    def on_predict_end(self, logs: dict | None = None) -> None:
        if self._bar is not None:
            self._bar.update(self.params.get("steps") or self._bar._seen, finalize=True)
            self._bar = None


def _mode_better(mode: str, monitor: str) -> Callable[[float, float], bool]:
    if mode == "auto":
        mode = "max" if ("acc" in monitor or monitor.startswith("auc")) else "min"
    if mode not in ("min", "max"):
        raise InvalidArgumentError(f"mode must be 'auto', 'min' or 'max', got {mode!r}")
    return (lambda a, b: a < b) if mode == "min" else (lambda a, b: a > b)


class EarlyStopping(Callback):
    """Stops training when ``monitor`` has not improved by ``min_delta`` for ``patience``
    epochs; optionally restores the weights of the best epoch."""

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False) -> None:
        super().__init__()
        self.monitor, self.patience, self.verbose = monitor, int(patience), verbose
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self._better = _mode_better(mode, monitor)
        sign = -1.0 if self._better(0.0, 1.0) else 1.0
        self.min_delta = abs(min_delta) * sign
        self.stopped_epoch = 0

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.wait, self.stopped_epoch, self.best_weights = 0, 0, None
        self.best = self.baseline if self.baseline is not None else None
        self.best_epoch = 0

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        value = (logs or {}).get(self.monitor)
        if value is None:
            raise InvalidArgumentError(f"EarlyStopping: metric {self.monitor!r} is not in the "
                                       f"logs (available: {sorted(logs or {})})")
        if self.best is None or self._better(value - self.min_delta, self.best):
            self.best, self.best_epoch, self.wait = value, epoch, 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)
            if self.verbose:
                print(f"Epoch {epoch + 1}: early stopping")


class ModelCheckpoint(Callback):
    """Saves the model (``model.save``, a ``.keras`` file) or only its weights
    (``save_weights_only=True``: ``model.save_weights``, ``.weights.h5`` or ``.npz``) at
    the end of every epoch, or every ``save_freq`` batches when that is an integer.

    ``filepath`` may hold ``str.format`` fields filled from the epoch (1-based) and the
    logs: ``"ckpt-{epoch:02d}-{val_loss:.2f}.keras"``. With ``save_best_only`` a file is
    written only when ``monitor`` improved (``mode`` ``'min'``, ``'max'`` or ``'auto'``:
    max for accuracies) on the best value so far, which starts at
    ``initial_value_threshold`` when given.
    """

    def __init__(self, filepath: Any, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq: Any = "epoch",
                 initial_value_threshold: float | None = None) -> None:
        super().__init__()
        self.filepath = os.fspath(filepath)
        self.monitor, self.verbose = monitor, verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self._better = _mode_better(mode, monitor)
        if save_freq != "epoch" and (not isinstance(save_freq, int) or save_freq < 1):
            raise InvalidArgumentError(f"ModelCheckpoint: save_freq must be 'epoch' or a "
                                       f"positive number of batches, got {save_freq!r}")
        self.save_freq = save_freq
        if not save_weights_only and not self.filepath.endswith(".keras"):
            raise InvalidArgumentError(
                f"ModelCheckpoint: filepath must end in .keras when saving the whole model, "
                f"got {self.filepath!r} (or pass save_weights_only=True for .weights.h5 / "
                ".npz files)")
        self.best = initial_value_threshold
        self._epoch = 0
        self._batches = 0

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            return
        self._batches += 1
        if self._batches % self.save_freq == 0:
            self._save(self._epoch, batch, logs or {})

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            self._save(epoch, None, logs or {})

    def _path(self, epoch: int, batch: int | None, logs: dict) -> str:
        fields = dict(logs)
        fields["epoch"] = epoch + 1
        if batch is not None:
            fields["batch"] = batch + 1
        try:
            return self.filepath.format(**fields)
        except KeyError as e:
            raise InvalidArgumentError(f"ModelCheckpoint: filepath {self.filepath!r} refers "
                                       f"to {e}, which is not in the logs (available: "
                                       f"{sorted(fields)})") from None

    def _save(self, epoch: int, batch: int | None, logs: dict) -> None:
        path = self._path(epoch, batch, logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                logger.warning("ModelCheckpoint: can save the best model only with %r in the "
                               "logs (available: %s); skipping", self.monitor, sorted(logs))
                return
            if self.best is not None and not self._better(current, self.best):
                if self.verbose:
                    print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from "
                          f"{self.best:.5f}")
                return
            if self.verbose:
                previous = "inf" if self.best is None else f"{self.best:.5f}"
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {previous} to "
                      f"{current:.5f}, saving model to {path}")
            self.best = current
        elif self.verbose:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)


class LearningRateScheduler(Callback):
    """Sets ``optimizer.learning_rate = schedule(epoch, current_lr)`` before each epoch
    (a Variable assignment: nothing recompiles)."""

    def __init__(self, schedule: Callable[[int, float], float], verbose: int = 0) -> None:
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        opt = self.model.optimizer
        current = float(np.asarray(opt.learning_rate.numpy()))
        new = float(self.schedule(epoch, current))
        opt.learning_rate = new
        if self.verbose:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["learning_rate"] = float(np.asarray(self.model.optimizer.learning_rate.numpy()))


class LambdaCallback(Callback):
    """Callbacks from functions: ``LambdaCallback(on_epoch_end=lambda epoch, logs: ...)``."""

    def __init__(self, **hooks: Callable[..., Any]) -> None:
        super().__init__()
        for name, fn in hooks.items():
            if not name.startswith("on_") or not hasattr(Callback, name):
                raise InvalidArgumentError(f"LambdaCallback: unknown hook {name!r}")
            setattr(self, name, fn)


__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "EarlyStopping",
           "ModelCheckpoint", "LearningRateScheduler", "LambdaCallback"]
