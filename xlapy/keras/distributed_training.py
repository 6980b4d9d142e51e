"""Data-parallel training: a model compiled in a distribution strategy's scope.

``with strategy.scope(): model = ...; model.compile(...)`` records the strategy as the
model's ``distribute_strategy`` (its Variables, created in the scope, are mirrored: one copy
per replica). ``fit`` and ``train_on_batch`` then split every global batch into
``num_replicas_in_sync`` equal shards (this process's replicas take theirs) and run the
train step once per replica with ``strategy.run``; compiled (``jit_compile=True``) the step
is one program with ``replica_count=N`` whose all-reduces run inside it. In each replica's
step (:func:`~xlapy.keras.backend.replica_step`):

- the loss is the replica's weighted per-sample sum divided by the **global** number of real
  rows (``fit`` counts them in the global batch's mask and passes the count to every
  replica; a step run otherwise all-reduces the masks' sums), and the layers' penalties
  are divided by N, so the replicas' losses sum to the loss of the whole global batch, and
  their gradients, summed, are its gradients: every replica applies the same update and
  the result matches training on one device with the global batch (up to the order of
  float additions);
- one all-reduce (one buffer) carries the gradients, the losses (the reported loss is
  their sum), the metrics' state changes (a metric's state is totals and counts, so every
  replica then reports the metrics of the global batch) and the model's other
  non-trainable float variables (``BatchNormalization``'s moving statistics, computed over
  each replica's shard) divided by N, i.e. their mean over the replicas (TF's
  ``VariableAggregation.MEAN``), so the mirrored copies stay identical. The metrics are
  updated before the optimizer step (from the same predictions).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend.pytree import tree_flatten, tree_map
from . import backend


def active_strategy(model: Any) -> Any:
    """The model's strategy when it has more than one replica, else None."""
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is None or strategy.num_replicas_in_sync == 1:
        return None
    return strategy


def check_mirrored(model: Any, strategy: Any) -> None:
    """Refuse a model whose weights were created outside ``strategy.scope()``: they would
    have one copy, read and written by every local replica at once."""
    local = len(strategy.experimental_local_results(
        strategy.experimental_distribute_values_from_function(lambda ctx: 0)))
    for v in model.weights:
        copies = strategy.experimental_local_results(v)
        if len(copies) != local or copies[0] is v:     # a plain Variable is its own result
            raise InvalidArgumentError(
                f"weight {v.name!r} of model {model.name!r} was not created in the scope of "
                f"the {type(strategy).__name__} it is compiled with; create the model inside "
                "strategy.scope()")


def run_replicated(strategy: Any, step: Callable[..., Any], args: tuple, what: str,
                   common: tuple = ()) -> Any:
    """``step(*shard, *common)`` on every replica, each with its shard of the global batch
    ``args`` (arrays whose first dimension is the batch) and the same ``common`` values;
    returns the first local replica's result."""
    n = strategy.num_replicas_in_sync
    leaves = [a for a in tree_flatten(args)[0] if a is not None]
    size = int(np.shape(leaves[0])[0]) if leaves else 0
    if size % n:
        raise InvalidArgumentError(
            f"{what}: the batch of {size} rows cannot be split evenly over the {n} replicas "
            f"of {type(strategy).__name__}; use a batch size divisible by {n}")
    rows = size // n

    def shard(ctx: Any) -> Any:
        i = int(np.asarray(ctx.replica_id_in_sync_group))
        return tree_map(lambda a: a if a is None else np.asarray(a)[i * rows:(i + 1) * rows],
                        args)

    def replica(*shard_args: Any) -> Any:
        with backend.replica_step(strategy):
            return step(*shard_args)
    per_replica = strategy.experimental_distribute_values_from_function(shard)
    out = strategy.run(replica, args=tuple(per_replica) + tuple(common))
    return strategy.experimental_local_results(out)[0]


def global_count(count: Any, mask: Any) -> Any:
    """``count`` (the real rows of ``mask``) summed over the replicas inside a replica step,
    once per step and mask; else ``count``."""
    strategy = backend.current_replica_step()
    if strategy is None:
        return count
    memo = backend.replica_step_memo()
    key = ("global_count", id(mask))
    if key not in memo:
        memo[key] = (mask, strategy.replica_all_reduce("SUM", count))   # keeps mask alive
    return memo[key][1]


def known_global_count(mask: Any, rows: Any) -> None:
    """In a replica step: the replicas' real rows of ``mask`` are ``rows`` (the caller
    counted the global batch), so :func:`global_count` needs no collective."""
    if backend.current_replica_step() is not None:
        backend.replica_step_memo()[("global_count", id(mask))] = (mask, rows)


def penalty_scale() -> float:
    """What a layer penalty is multiplied by in one replica's loss (1/N in a replica step,
    so the replicas' summed gradients count it once)."""
    strategy = backend.current_replica_step()
    return 1.0 if strategy is None else 1.0 / strategy.num_replicas_in_sync


class ReplicaSync:
    """One replica's step made global in one all-reduce (see the module docstring): it
    snapshots the metrics' state before their update, then sums the gradients, the loss,
    the metrics' state changes and the model's non-trainable float variables divided by N
    (their mean) in one buffer."""

    def __init__(self, strategy: Any, metric_variables: list, model_variables: list) -> None:
        self.strategy = strategy
        self.metric_variables = metric_variables
        self.model_variables = model_variables
        self.before = [v.read_value() for v in metric_variables]

    def all_reduce(self, grads: list, loss: Any) -> tuple[list, Any]:
        """The global gradients (``None`` ones stay ``None``) and loss; assigns the
        metrics' and the model variables' global values."""
        present = [i for i, g in enumerate(grads) if g is not None]
        n = self.strategy.num_replicas_in_sync
        deltas = [v.read_value() - b for v, b in zip(self.metric_variables, self.before)]
        shares = [v.read_value() / n for v in self.model_variables]
        summed = self.strategy.replica_all_reduce(
            "SUM", [grads[i] for i in present] + [loss] + deltas + shares)
        out = list(grads)
        for i, g in zip(present, summed):
            out[i] = g
        k = len(present) + 1
        for v, b, d in zip(self.metric_variables, self.before, summed[k:k + len(deltas)]):
            v.assign(b + d)
        for v, mean in zip(self.model_variables, summed[k + len(deltas):]):
            v.assign(mean)
        return out, summed[len(present)]


def replica_sync(model: Any, metrics: list) -> ReplicaSync | None:
    """A :class:`ReplicaSync` for ``model``'s step when it runs as a replica, else None."""
    strategy = backend.current_replica_step()
    if strategy is None:
        return None
    metric_variables = [v for m in metrics for v in m.variables]
    floats = [v for v in model.non_trainable_variables
              if np.issubdtype(np.dtype(v.dtype), np.floating)]
    return ReplicaSync(strategy, metric_variables, floats)


__all__ = ["active_strategy", "check_mirrored", "run_replicated", "global_count",
           "known_global_count", "penalty_scale", "ReplicaSync", "replica_sync"]
