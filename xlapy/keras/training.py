"""``compile`` and the train / test / predict steps (mixed into ``Model``).

With ``compile(..., jit_compile=True)`` the whole train step -- forward pass, loss,
gradients through a :class:`~xlapy.GradientTape`, the optimizer update (and the weight
constraints) and the metric updates -- is **one** ``xlapy.function(jit_compile=True)``
call per batch; weights, optimizer slots, metric state and dropout keys are Variables
that the compiled program reads and writes back through input/output aliasing.
``model.train_function.cache_info()`` shows its compiles. With ``jit_compile=False``
(or ``run_eagerly=True``) the same step runs eagerly, op by op. ``jit_compile=None``
(the default, also spelled ``'auto'``) follows :func:`xlapy.frontend.tf_function.auto_jit`
(``set_auto_jit(True/False)``, TensorFlow's ``tf.config.optimizer.set_jit``) and
compiles when that is not set.

**Interrupts.** A train step interrupted (KeyboardInterrupt) or failing leaves weights,
optimizer state and metrics all as they were before it: compiled, the call sets its
Variables only when it completes; op by op, the step is a Variable ``transaction``.

**Partial last batch: pad with a mask.** Every batch has ``batch_size`` rows (see
:mod:`xlapy.keras.data`): the last one is padded by repeating its rows and a 0/1 mask
marks the padding. The step multiplies the sample weights by the mask, divides the loss
by the number of real rows, weights the metrics by the mask, and
``BatchNormalization`` leaves padded rows out of its batch statistics, so the result
equals training on the short batch -- and the step compiles once for every epoch.

**Sample weights** (``sample_weight``, ``class_weight``) weight the loss and the
``weighted_metrics``; the ``metrics`` are unweighted (only the padding mask applies), as
in Keras. A weighted metric whose name is already used by a metric is reported as
``weighted_<name>``.

The loops (``fit``, ``evaluate``, ``predict``) are in :mod:`.training_loops`.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import numpy as xnp
from ..errors import InvalidArgumentError, UnimplementedError
from ..frontend.autodiff import GradientTape
from ..frontend.jit import jit
from ..frontend.sharded_step import ShardedStep
from ..frontend.tf_function import auto_jit, function
from ..frontend.variables import transaction
from . import backend, distribution, losses as losses_mod, metrics as metrics_mod, optimizers
from .data import num_samples, to_numpy
from .distributed_training import (active_strategy, global_count, known_global_count,
                                   penalty_scale, replica_sync, run_replicated)
from .data_adapters import class_weights
from .training_loops import TrainingLoops, logs_to_floats


def _unpack(data: Any) -> tuple[Any, Any, Any]:
    if isinstance(data, tuple) and len(data) in (2, 3):
        return (data + (None,))[:3] if len(data) == 2 else data
    return data, None, None


def resolve_jit_compile(jit_compile: Any, run_eagerly: bool | None = None) -> bool:
    """Whether steps compile: ``run_eagerly`` wins; ``None``/``'auto'`` follows
    :func:`~xlapy.frontend.tf_function.auto_jit` when it is set, else compiles."""
    if run_eagerly:
        return False
    if jit_compile is None or (isinstance(jit_compile, str) and jit_compile == "auto"):
        setting = auto_jit()
        return setting if isinstance(setting, bool) else True
    if isinstance(jit_compile, str):
        raise InvalidArgumentError(f"jit_compile must be True, False, None or 'auto', got "
                                   f"{jit_compile!r}")
    return bool(jit_compile)


def _single_loss_weight(loss_weights: Any) -> float:
    """The weight of the one output's loss from ``loss_weights`` (float, [w] or {name: w})."""
    if loss_weights is None:
        return 1.0
    if isinstance(loss_weights, dict):
        values = list(loss_weights.values())
    elif isinstance(loss_weights, (list, tuple)):
        values = list(loss_weights)
    else:
        values = [loss_weights]
    if len(values) != 1:
        raise UnimplementedError(f"loss_weights {loss_weights!r}: compile/fit train models "
                                 "with one output, so loss_weights must hold one weight")
    return float(values[0])


def _metric_list(metrics: Any, argument: str) -> list[metrics_mod.Metric]:
    if metrics is None:
        return []
    if isinstance(metrics, dict):
        raise UnimplementedError(f"{argument} given per output (a dict): compile/fit train "
                                 "models with one output; pass a list")
    if isinstance(metrics, (str, metrics_mod.Metric)) or callable(metrics):
        metrics = [metrics]
    out = []
    for m in metrics:
        if isinstance(m, (list, tuple, dict)):
            raise UnimplementedError(f"{argument}: nested lists (one per output) are not "
                                     "supported; compile/fit train models with one output")
        out.append(metrics_mod.get(m))
    return out


class Trainer(TrainingLoops):
    """The training API of ``Model`` (see the module docstring)."""

    # ----- compile
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None,
                metrics: Sequence[Any] | None = None, loss_weights: Any = None,
                weighted_metrics: Sequence[Any] | None = None, run_eagerly: bool | None = None,
                steps_per_execution: int = 1, jit_compile: Any = None,
                auto_scale_loss: bool = True, shape_buckets: Any = None) -> None:
        """Configure training: optimizer, loss, ``metrics`` (unweighted),
        ``weighted_metrics`` (weighted by ``sample_weight`` / ``class_weight``) and whether
        each step is compiled (``jit_compile``, see the module docstring).

        ``loss_weights`` scales the loss (one output: a float, ``[w]`` or ``{name: w}``).
        ``steps_per_execution`` is accepted and behaves as 1: one call of the compiled
        step per batch, whose per-call overhead is a few microseconds (the jit fast
        path), while running ``n`` steps per call would mean an ``n`` times longer
        program to compile. ``auto_scale_loss``: a model whose dtype policy is
        ``mixed_float16`` trains with its optimizer wrapped in a ``LossScaleOptimizer``
        (dynamic loss scaling), as in Keras 3.

        ``shape_buckets`` (xlapy's own; compiled steps only): axes of the input ``x`` whose
        size changes from batch to batch (``1`` or ``{1: "pow2"}``, ``{1: [64, 128,
        512]}`` for sequences), padded to the next bucket so that ``fit`` on ragged
        sequence batches compiles once per bucket, with the padding masked out
        (``xlapy.frontend.buckets``; ``train_function.bucket_info()`` counts them).
        """
        if len(getattr(self, "outputs", ())) > 1:
            raise UnimplementedError("compile/fit train models with one output; this model "
                                     f"has {len(self.outputs)}")
        if int(steps_per_execution) < 1:
            raise InvalidArgumentError(f"steps_per_execution must be a positive integer, got "
                                       f"{steps_per_execution!r}")
        self.steps_per_execution = int(steps_per_execution)
        self.optimizer = optimizers.get(optimizer)
        policy = getattr(getattr(self, "dtype_policy", None), "name", None)
        if auto_scale_loss and policy == "mixed_float16" and \
                not isinstance(self.optimizer, optimizers.LossScaleOptimizer):
            self.optimizer = optimizers.LossScaleOptimizer(self.optimizer)
        self.loss = loss
        self.loss_fn = losses_mod.get(loss) if loss is not None else None
        self.loss_weight = _single_loss_weight(loss_weights)
        self.compiled_metrics = _metric_list(metrics, "metrics")
        self.compiled_weighted_metrics = _metric_list(weighted_metrics, "weighted_metrics")
        self._name_metrics()
        self.loss_tracker = metrics_mod.Mean(name="loss")
        self.run_eagerly = bool(run_eagerly)
        self.jit_compile = resolve_jit_compile(jit_compile, run_eagerly)
        self.shape_buckets = shape_buckets
        # the strategy whose scope is open: fit trains data-parallel (distributed_training)
        self.distribute_strategy = backend.current_distribution()
        self._compile_config = {"optimizer": optimizer, "loss": loss, "metrics": metrics,
                                "loss_weights": loss_weights,
                                "weighted_metrics": weighted_metrics}
        self.compiled = True
        self.stop_training = False
        self._make_functions()

    def _name_metrics(self) -> None:
        """Unique names: a weighted metric that collides becomes ``weighted_<name>``."""
        seen = {"loss"}
        ids: set[int] = set()
        for m in self.compiled_metrics + self.compiled_weighted_metrics:
            if id(m) in ids:
                raise InvalidArgumentError(f"metric object {m!r} is passed twice; use separate "
                                           "instances for metrics and weighted_metrics")
            ids.add(id(m))
        for m in self.compiled_metrics:
            if m.name in seen:
                raise InvalidArgumentError(f"found two metrics with the same name: {m.name!r}")
            seen.add(m.name)
        for m in self.compiled_weighted_metrics:
            if m.name in seen:
                m.rename(f"weighted_{m.name}")
            if m.name in seen:
                raise InvalidArgumentError(f"found two metrics with the same name: {m.name!r}")
            seen.add(m.name)

    def _make_functions(self) -> None:
        def train_function(x: Any, y: Any, sample_weight: Any, mask: Any,
                           global_rows: Any = None) -> dict:
            # op by op, an interrupted step puts back the Variables it assigned (compiled,
            # the call sets them all at once when it completes)
            with transaction():
                return self._train_entry(x, y, sample_weight, mask, global_rows)

        def test_function(x: Any, y: Any, sample_weight: Any, mask: Any) -> dict:
            return self._test_entry(x, y, sample_weight, mask)

        def predict_function(x: Any) -> Any:
            return self.predict_step(x)
        buckets = getattr(self, "shape_buckets", None)
        if self.jit_compile and buckets is not None:      # one compile per bucket of x
            spec = {"x": buckets}
            train_function = jit(train_function, shape_buckets=spec)
            test_function = jit(test_function, shape_buckets=spec)
            predict_function = jit(predict_function, shape_buckets=spec)
        elif self.jit_compile and distribution.distribution() is not None:
            d = distribution.distribution()         # one SPMD program per step (Keras 3)
            train_function, test_function, predict_function = (
                ShardedStep(f, d.device_mesh.mesh, d.batch_dim_name)
                for f in (train_function, test_function, predict_function))
        elif self.jit_compile:       # HLO modules jit_train_function, jit_test_function, ...
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

    def _ensure_predict_function(self) -> None:
        if getattr(self, "predict_function", None) is None:       # not compiled yet
            self.jit_compile = resolve_jit_compile(None)
            self._make_functions()

    @property
    def metrics(self) -> list[metrics_mod.Metric]:
        """The loss tracker, the compiled metrics, then the weighted metrics."""
        if not getattr(self, "compiled", False):
            return []
        return [self.loss_tracker] + list(self.compiled_metrics) + \
            list(self.compiled_weighted_metrics)

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
        real rows (the batch mask), times the loss weight, plus the layers' penalties
        (weight and activity regularizers). A loss function that already returns a scalar
        is used as it is (sample weights cannot apply to it)."""
        per_sample = xnp.asarray(self.loss_fn.call(y, y_pred))
        if per_sample.ndim == 0:
            total = per_sample
        else:
            batch = tuple(xnp.shape(y_pred))[:1]
            if batch and per_sample.shape[0] != batch[0]:
                raise InvalidArgumentError(
                    f"loss {self.loss_fn.name!r} returned values of shape {per_sample.shape} "
                    f"for predictions of shape {tuple(xnp.shape(y_pred))} and targets of "
                    f"shape {tuple(xnp.shape(y))}; expected one value per sample")
            if per_sample.ndim > 1:
                per_sample = xnp.mean(per_sample, axis=tuple(range(1, per_sample.ndim)))
            if sample_weight is not None:
                per_sample = per_sample * xnp.asarray(sample_weight, per_sample.dtype)
            total = xnp.sum(per_sample)
            if self.loss_fn.reduction != "sum":
                total = total / self._batch_count(per_sample)
        if getattr(self, "loss_weight", 1.0) != 1.0:
            total = total * self.loss_weight
        scale = penalty_scale()         # 1/N in a replica of a data-parallel step
        for penalty in self.losses:
            total = total + (penalty if scale == 1.0 else penalty * scale)
        return total

    def _batch_count(self, batch: Any) -> Any:
        """The number of real rows: the mask's sum in ``fit``, else ``batch``'s length."""
        mask = backend.current_batch_mask()
        count = xnp.sum(mask) if mask is not None else float(xnp.shape(batch)[0])
        return global_count(count, mask)     # all the replicas' rows in a data-parallel step

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        """Update the metrics (unweighted: only the padding mask) and the weighted metrics
        (``sample_weight``); returns every metric's result, the loss first."""
        mask = backend.current_batch_mask()
        for m in self.compiled_metrics:
            m.update_state(y, y_pred, sample_weight=mask)
        for m in self.compiled_weighted_metrics:
            m.update_state(y, y_pred, sample_weight=sample_weight if sample_weight is not None
                           else mask)
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict:
        """``{name: result}`` for every metric (traced values inside a compiled step)."""
        return {m.name: m.result() for m in self.metrics}

    def train_step(self, data: Any) -> dict:
        """One optimization step on ``data = (x, y, sample_weight)``; returns the metric
        results (override for custom training, as in Keras)."""
        x, y, sample_weight = _unpack(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
            scaled = self.optimizer.scale_loss(loss)
        variables = self.trainable_variables
        grads = tape.gradient(scaled, variables)
        sync = replica_sync(self, self.compiled_metrics + self.compiled_weighted_metrics)
        if sync is None:
            self.optimizer.apply_gradients(zip(grads, variables))
            self.loss_tracker.update_state(loss, sample_weight=self._batch_count(y_pred))
            return self.compute_metrics(x, y, y_pred, sample_weight)
        # data-parallel: the global batch's gradients, loss and metrics, in one all-reduce
        self.compute_metrics(x, y, y_pred, sample_weight)
        grads, loss = sync.all_reduce(grads, loss)
        self.optimizer.apply_gradients(zip(grads, variables))
        self.loss_tracker.update_state(loss, sample_weight=self._batch_count(y_pred))
        return self.get_metrics_result()

    def test_step(self, data: Any) -> dict:
        x, y, sample_weight = _unpack(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        self.loss_tracker.update_state(loss, sample_weight=self._batch_count(y_pred))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, x: Any) -> Any:
        return self(x, training=False)

    def _train_entry(self, x: Any, y: Any, sample_weight: Any, mask: Any,
                     global_rows: Any = None) -> dict:
        with backend.batch_mask(mask):
            if global_rows is not None:     # data-parallel: the real rows of all replicas
                known_global_count(mask, global_rows)
            return self.train_step((x, y, sample_weight))

    def _test_entry(self, x: Any, y: Any, sample_weight: Any, mask: Any) -> dict:
        with backend.batch_mask(mask):
            return self.test_step((x, y, sample_weight))

    # ----- single batches
    def _batch_inputs(self, what: str, x: Any, y: Any, sample_weight: Any,
                      class_weight: Any = None) -> tuple:
        self._check_compiled(what)
        x, y, sw = to_numpy(x), to_numpy(y), to_numpy(sample_weight)
        n = num_samples(x, y, sw)
        self._ensure_built(x)
        mask = np.ones(n, np.float32)
        weights = mask if sw is None else mask * np.asarray(sw, np.float32)
        if class_weight is not None:
            weights = weights * class_weights(y, class_weight)
        return x, y, weights.astype(np.float32), mask

    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                       class_weight: Any = None, reset_metrics: bool = True,
                       return_dict: bool = False) -> Any:
        """One training step on one batch (no padding); returns the metric results
        (``[loss, metrics...]``, the loss alone, or a dict)."""
        args = self._batch_inputs("train_on_batch", x, y, sample_weight, class_weight)
        if reset_metrics:
            self.reset_metrics()
        return self._batch_result(self.run_train_step(args), return_dict)

    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                      reset_metrics: bool = True, return_dict: bool = False) -> Any:
        """The loss and metrics of one batch (no update); returns like
        :meth:`train_on_batch`."""
        args = self._batch_inputs("test_on_batch", x, y, sample_weight)
        if reset_metrics:
            self.reset_metrics()
        return self._batch_result(self.test_function(*args), return_dict)

    def predict_on_batch(self, x: Any) -> Any:
        """The model's outputs for one batch, as NumPy arrays."""
        self._ensure_predict_function()
        x = to_numpy(x)
        num_samples(x)
        self._ensure_built(x)
        return to_numpy(self.predict_function(x))

    def run_train_step(self, args: tuple, what: str = "train_on_batch") -> dict:
        """One call of the train function on ``(x, y, sample_weight, mask)``; with a
        strategy of several replicas, once per replica on its shard."""
        strategy = active_strategy(self)
        if strategy is None:
            return self.train_function(*args)
        # the real rows of the global batch, counted here once instead of by a collective
        rows = np.float32(np.sum(args[3]))
        return run_replicated(strategy, self.train_function, args, what, (rows,))

    def _batch_result(self, logs: dict, return_dict: bool) -> Any:
        logs = logs_to_floats(logs, self.metrics_names)
        if return_dict:
            return logs
        values = [logs[k] for k in self.metrics_names]
        return values[0] if len(values) == 1 else values


__all__ = ["Trainer", "resolve_jit_compile"]
