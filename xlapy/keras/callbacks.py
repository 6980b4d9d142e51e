"""Callbacks: ``History`` (returned by ``fit``), ``ProgbarLogger``, ``EarlyStopping``,
``LearningRateScheduler``, ``LambdaCallback``.

Hooks get ``logs``, a dict of Python floats (``loss``, metric names, ``val_*`` at the
end of an epoch). Set ``model.stop_training = True`` in a hook to end ``fit`` after
the current epoch.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Iterable

import numpy as np

from ..errors import InvalidArgumentError
from .progbar import Progbar


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
        if self._bar is not None and batch + 1 < (self.params.get("steps") or 0):
            self._bar.update(batch + 1, list((logs or {}).items()))

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
           "LearningRateScheduler", "LambdaCallback"]
