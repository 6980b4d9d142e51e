"""``compile`` / ``fit`` / ``evaluate`` / ``predict`` (mixed into ``Model``).

With ``compile(..., jit_compile=True)`` (the default) the whole train step -- forward
pass, loss, gradients through a :class:`~xlapy.GradientTape`, the optimizer update and
the metric updates -- is **one** ``xlapy.function(jit_compile=True)`` call per batch;
weights, optimizer slots, metric state and dropout keys are Variables that the
compiled program reads and writes back through input/output aliasing.
``model.train_function.cache_info()`` shows its compiles. With ``jit_compile=False``
the same step runs eagerly, op by op.

**Partial last batch: pad with a mask.** Every batch has ``batch_size`` rows (see
:mod:`xlapy.keras.data`): the last one is padded by repeating its rows and a 0/1 mask
marks the padding. The step multiplies the sample weights by the mask, divides the loss
by the number of real rows, weights the metrics by the mask, and
``BatchNormalization`` leaves padded rows out of its batch statistics, so the result
equals training on the short batch -- and the step compiles once for every epoch.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import numpy as xnp
from ..errors import InvalidArgumentError, UnimplementedError
from ..frontend.autodiff import GradientTape
from ..frontend.jit import function
from . import backend, losses as losses_mod, metrics as metrics_mod, optimizers
from .callbacks import Callback, CallbackList, History, ProgbarLogger
from .data import BatchPlan, num_samples, split_validation, take, to_numpy


def _unpack(data: Any) -> tuple[Any, Any, Any]:
    if isinstance(data, tuple) and len(data) in (2, 3):
        return (data + (None,))[:3] if len(data) == 2 else data
    return data, None, None


def _logs_to_floats(logs: dict, order: Sequence[str] = ()) -> dict:
    """Python floats, in ``order`` first (compiled steps return dicts with sorted keys)."""
    keys = [k for k in order if k in logs] + [k for k in logs if k not in order]
    return {k: float(np.asarray(logs[k])) for k in keys}


class Trainer:
    """The training API of ``Model`` (see the module docstring)."""

    # ----- compile
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None,
                metrics: Sequence[Any] | None = None, jit_compile: bool = True,
                loss_weights: Any = None, weighted_metrics: Any = None,
                run_eagerly: bool | None = None) -> None:
        """Configure training: optimizer, loss, metrics, and whether each step is compiled
        (``jit_compile=True``) or run op by op (``jit_compile=False`` or
        ``run_eagerly=True``)."""
        if loss_weights is not None or weighted_metrics is not None or \
                len(getattr(self, "outputs", ())) > 1:
            raise UnimplementedError(
                "compile/fit train models with one output: several outputs, loss_weights and "
                "weighted_metrics are not supported")
        self.optimizer = optimizers.get(optimizer)
        self.loss = loss
        self.loss_fn = losses_mod.get(loss) if loss is not None else None
        self.compiled_metrics = [metrics_mod.get(m) for m in (metrics or [])]
        self.loss_tracker = metrics_mod.Mean(name="loss")
        self.jit_compile = bool(jit_compile) and not run_eagerly
        self.compiled = True
        self.stop_training = False
        self._make_functions()

    def _make_functions(self) -> None:
        def train_function(x: Any, y: Any, sample_weight: Any, mask: Any) -> dict:
            return self._train_entry(x, y, sample_weight, mask)

        def test_function(x: Any, y: Any, sample_weight: Any, mask: Any) -> dict:
            return self._test_entry(x, y, sample_weight, mask)

        def predict_function(x: Any) -> Any:
            return self.predict_step(x)
        if self.jit_compile:         # HLO modules jit_train_function, jit_test_function, ...
            train_function = function(train_function, jit_compile=True)
            test_function = function(test_function, jit_compile=True)
            predict_function = function(predict_function, jit_compile=True)
        self.train_function = train_function
        self.test_function = test_function
        self.predict_function = predict_function

    def _check_compiled(self, what: str) -> None:
        if not getattr(self, "compiled", False):
            raise InvalidArgumentError(f"you must call model.compile(...) before {what}")
        if self.loss_fn is None and what != "predict":
            raise InvalidArgumentError(f"{what} needs a loss: pass loss= to model.compile")

    @property
    def metrics(self) -> list[metrics_mod.Metric]:
        """The loss tracker followed by the compiled metrics."""
        if not getattr(self, "compiled", False):
            return []
        return [self.loss_tracker] + list(self.compiled_metrics)

    @property
    def metrics_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        for m in self.metrics:
            m.reset_state()

    # ----- the steps (traced once when jit_compile=True)
    def compute_loss(self, x: Any = None, y: Any = None, y_pred: Any = None,
                     sample_weight: Any = None) -> Any:
        """The batch loss: weighted per-sample losses summed and divided by the number of
        real rows (the batch mask), plus the layers' regularization penalties."""
        per_sample = xnp.asarray(self.loss_fn.call(y, y_pred))
        if per_sample.ndim > 1:
            per_sample = xnp.mean(per_sample, axis=tuple(range(1, per_sample.ndim)))
        if sample_weight is not None:
            per_sample = per_sample * xnp.asarray(sample_weight, per_sample.dtype)
        total = xnp.sum(per_sample)
        if self.loss_fn.reduction != "sum":
            total = total / self._batch_count(per_sample)
        for penalty in self.losses:
            total = total + penalty
        return total

    def _batch_count(self, batch: Any) -> Any:
        """The number of real rows: the mask's sum in ``fit``, else ``batch``'s length."""
        mask = backend.current_batch_mask()
        return xnp.sum(mask) if mask is not None else float(xnp.shape(batch)[0])

    def _update_metrics(self, loss: Any, y: Any, y_pred: Any, sample_weight: Any) -> dict:
        self.loss_tracker.update_state(loss, sample_weight=self._batch_count(y_pred))
        for m in self.compiled_metrics:
            m.update_state(y, y_pred, sample_weight=sample_weight)
        return {m.name: m.result() for m in self.metrics}

    def train_step(self, data: Any) -> dict:
        """One optimization step on ``data = (x, y, sample_weight)``; returns the metric
        results (override for custom training, as in Keras)."""
        x, y, sample_weight = _unpack(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
        variables = self.trainable_variables
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        return self._update_metrics(loss, y, y_pred, sample_weight)

    def test_step(self, data: Any) -> dict:
        x, y, sample_weight = _unpack(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        return self._update_metrics(loss, y, y_pred, sample_weight)

    def predict_step(self, x: Any) -> Any:
        return self(x, training=False)

    def _train_entry(self, x: Any, y: Any, sample_weight: Any, mask: Any) -> dict:
        with backend.batch_mask(mask):
            return self.train_step((x, y, sample_weight))

    def _test_entry(self, x: Any, y: Any, sample_weight: Any, mask: Any) -> dict:
        with backend.batch_mask(mask):
            return self.test_step((x, y, sample_weight))

    # ----- loops
    def _prepare(self, x: Any, y: Any, sample_weight: Any) -> tuple[Any, Any, Any]:
        x, y, sw = to_numpy(x), to_numpy(y), to_numpy(sample_weight)
        if sw is not None and np.ndim(sw) != 1:
            raise InvalidArgumentError(f"sample_weight must have shape (samples,), got "
                                       f"{np.shape(sw)}")
        return x, y, sw

    def _ensure_built(self, x: Any) -> None:
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

    def _step_args(self, x: Any, y: Any, sw: Any, batch: Any) -> tuple:
        weights = batch.mask if sw is None else batch.mask * sw[batch.index].astype(np.float32)
        return take(x, batch.index), take(y, batch.index), weights, batch.mask

    def fit(self, x: Any = None, y: Any = None, batch_size: int | None = None, epochs: int = 1,
            verbose: Any = "auto", callbacks: Sequence[Callback] | None = None,
            validation_split: float = 0.0, validation_data: Any = None, shuffle: bool = True,
            sample_weight: Any = None, initial_epoch: int = 0,
            steps_per_epoch: int | None = None) -> History:
        """Train for ``epochs`` epochs; returns a :class:`History`. See the module
        docstring for the compiled step and the padded last batch."""
        self._check_compiled("fit")
        x, y, sw = self._prepare(x, y, sample_weight)
        if validation_data is None and validation_split:
            (x, y, sw), validation_data = split_validation(x, y, sw, validation_split)
        n = num_samples(x, y, sw)
        plan = BatchPlan(n, batch_size, shuffle, steps_per_epoch)
        self._ensure_built(x)
        verbose = self._verbosity(verbose)
        history = History()
        names = self.metrics_names
        cbs = self._callbacks(callbacks, verbose, {"epochs": epochs, "steps": len(plan),
                                                   "verbose": verbose, "metrics": names +
                                                   [f"val_{m}" for m in names]}, history)
        self.stop_training = False
        cbs.on_train_begin()
        logs: dict = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            for step, batch in enumerate(plan):
                cbs.on_train_batch_begin(step)
                logs = _logs_to_floats(self.train_function(*self._step_args(x, y, sw, batch)),
                                       names)
                cbs.on_train_batch_end(step, logs)
            epoch_logs = dict(logs)
            if validation_data is not None:
                vx, vy, vsw = _validation_tuple(validation_data)
                val = self.evaluate(vx, vy, batch_size=batch_size, verbose=0, sample_weight=vsw,
                                    return_dict=True, _internal=True)
                epoch_logs.update({f"val_{k}": v for k, v in val.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        cbs.on_train_end(logs)
        return history

    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None,
                 verbose: Any = "auto", sample_weight: Any = None, steps: int | None = None,
                 callbacks: Sequence[Callback] | None = None, return_dict: bool = False,
                 _internal: bool = False) -> Any:
        """The loss and metrics over ``(x, y)``: a float (loss only), a list
        ``[loss, metric...]`` or, with ``return_dict``, a dict."""
        self._check_compiled("evaluate")
        x, y, sw = self._prepare(x, y, sample_weight)
        plan = BatchPlan(num_samples(x, y, sw), batch_size, False, steps)
        self._ensure_built(x)
        verbose = self._verbosity(verbose)
        names = self.metrics_names
        cbs = self._callbacks(None if _internal else callbacks, verbose,
                              {"steps": len(plan), "mode": "test", "metrics": names})
        self.reset_metrics()
        cbs.on_test_begin()
        logs: dict = {}
        for step, batch in enumerate(plan):
            cbs.on_test_batch_begin(step)
            logs = _logs_to_floats(self.test_function(*self._step_args(x, y, sw, batch)),
                                   names)
            cbs.on_test_batch_end(step, logs)
        cbs.on_test_end(logs)
        if return_dict:
            return logs
        values = [logs[name] for name in names]
        return values[0] if len(values) == 1 else values

    def predict(self, x: Any, batch_size: int | None = None, verbose: Any = "auto",
                steps: int | None = None, callbacks: Sequence[Callback] | None = None) -> Any:
        """The model's outputs for ``x`` as NumPy arrays (padded rows dropped)."""
        if getattr(self, "predict_function", None) is None:       # not compiled yet
            self.jit_compile = True
            self._make_functions()
        x = to_numpy(x)
        n = num_samples(x)
        plan = BatchPlan(n, batch_size, False, steps)
        self._ensure_built(x)
        verbose = self._verbosity(verbose)
        cbs = self._callbacks(callbacks, verbose, {"steps": len(plan)})
        cbs.on_predict_begin()
        outputs: list[Any] = []
        for step, batch in enumerate(plan):
            cbs.on_predict_batch_begin(step)
            out = self.predict_function(take(x, batch.index))
            outputs.append(to_numpy(out))
            cbs.on_predict_batch_end(step)
        cbs.on_predict_end()
        sizes = [b.size for b in plan]
        leaves = [_leaves(o) for o in outputs]
        merged = [np.concatenate([ls[i][:s] for ls, s in zip(leaves, sizes)])
                  for i in range(len(leaves[0]))]
        return merged[0] if len(merged) == 1 else merged

    def train_on_batch(self, x: Any, y: Any, sample_weight: Any = None,
                       return_dict: bool = False) -> Any:
        """One step on one batch (no padding); returns the metric results."""
        self._check_compiled("train_on_batch")
        x, y, sw = self._prepare(x, y, sample_weight)
        n = num_samples(x, y, sw)
        self._ensure_built(x)
        mask = np.ones(n, np.float32)
        logs = _logs_to_floats(self.train_function(x, y, mask if sw is None else mask * sw, mask),
                               self.metrics_names)
        return logs if return_dict else [logs[k] for k in self.metrics_names]


def _leaves(tree: Any) -> list[np.ndarray]:
    if isinstance(tree, np.ndarray):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [np.asarray(t) for t in tree]
    return [np.asarray(tree)]


def _validation_tuple(data: Any) -> tuple:
    if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
        raise InvalidArgumentError("validation_data must be a tuple (x_val, y_val) or "
                                   "(x_val, y_val, sample_weight)")
    x, y = data[0], data[1]
    sw = data[2] if len(data) == 3 else None
    return x, y, sw
