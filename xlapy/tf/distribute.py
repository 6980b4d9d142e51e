"""``tf.distribute`` with one replica: the host CPU.

The seed's step function::

    @tf.function(jit_compile=True)
    def step_fn():
      t = tf.ones(shape=[100], dtype=tf.float32)
      ctx = tf.distribute.get_replica_context()
      return ctx.all_reduce(tf.distribute.ReduceOp.SUM, t)

compiles to an HLO ``all-reduce`` over one replica (``to_apply`` an add computation; the
real XLA accepts the module). With a single participant an all-reduce returns its operand,
which is what the interpreter computes; the CPU backend runs the instruction through its
interpreter fallback. Eagerly, ``all_reduce`` runs the same one-instruction program.
``ReduceOp.MEAN`` is the SUM all-reduce divided by ``num_replicas_in_sync`` (1).

Strategies: the default strategy (``get_strategy()``), ``MirroredStrategy`` and
``OneDeviceStrategy`` all have one replica on ``/cpu:0`` — TF's ``MirroredStrategy`` on a
machine without GPUs does the same. ``strategy.run(fn, args)`` calls ``fn`` in a replica
context; inside ``strategy.scope()`` but outside ``run`` the replica context is ``None``
(TF's cross-replica context).
"""
from __future__ import annotations

import enum
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from ..errors import InvalidArgumentError
from ..threadlocal import PerThreadList
from ..frontend import dtypes as _dt
from ..frontend.core import Array, Primitive, bind
from ..frontend.pytree import tree_map
from ._common import tensor


class ReduceOp(enum.Enum):
    """How ``all_reduce`` combines the replicas' values."""

    SUM = "SUM"
    MEAN = "MEAN"


def _lower_all_reduce(ctx: Any, x: Any) -> Any:
    return ctx.b.all_reduce(x, ctx.scalar_computation("add", x.shape.dtype))


def _all_reduce_vjp(ct: Array, ans: Array, x: Array) -> tuple:
    # d(sum over replicas)/dx: the all-reduced cotangent (itself, with one replica).
    return (bind(all_reduce_sum_p, ct),)


# Private to this namespace, so not in the front end's primitive table (like core.alias_p):
# a collective primitive of the front end would have a family file of its own.
all_reduce_sum_p = Primitive("tf_all_reduce_sum",
                             doc="HLO all-reduce (add) over the replicas (one replica).")
all_reduce_sum_p.def_lowering(_lower_all_reduce)
all_reduce_sum_p.def_vjp(_all_reduce_vjp)


def _reduce_op(reduce_op: Any) -> ReduceOp:
    if isinstance(reduce_op, ReduceOp):
        return reduce_op
    try:
        return ReduceOp(str(reduce_op).upper())
    except ValueError:
        raise InvalidArgumentError(f"unknown reduce_op {reduce_op!r}; use "
                                   "tf.distribute.ReduceOp.SUM or MEAN") from None


def _all_reduce(reduce_op: Any, value: Any, num_replicas: int) -> Any:
    op = _reduce_op(reduce_op)

    def one(v: Any) -> Array:
        x = tensor(v)
        if x.dtype == np.bool_ or not (_dt.is_integer(x.dtype) or _dt.is_inexact(x.dtype)):
            raise InvalidArgumentError(f"all_reduce: cannot reduce a {x.type_text()} tensor")
        total = bind(all_reduce_sum_p, x)
        if op is ReduceOp.SUM:
            return total
        return total // num_replicas if _dt.is_integer(x.dtype) else total / num_replicas
    return tree_map(one, value)


class ReplicaContext:
    """The context of the one replica: ``all_reduce``, ``num_replicas_in_sync``."""

    def __init__(self, strategy: "Strategy") -> None:
        self.strategy = strategy
        self.num_replicas_in_sync = 1
        self.replica_id_in_sync_group = 0

    def all_reduce(self, reduce_op: Any, value: Any, options: Any = None) -> Any:
        """Combine ``value`` (a tensor or nested structure) across replicas with
        ``reduce_op``; lowers to HLO ``all-reduce`` (see the module docstring)."""
        if options is not None:
            raise InvalidArgumentError(f"all_reduce: argument options={options!r} is not "
                                       "supported by xlapy (one replica: nothing to tune)")
        return _all_reduce(reduce_op, value, self.num_replicas_in_sync)

    def merge_call(self, merge_fn: Callable[..., Any], args: tuple = (),
                   kwargs: dict | None = None) -> Any:
        """Run ``merge_fn(strategy, *args)`` in the cross-replica context."""
        with _in_context(None):
            return merge_fn(self.strategy, *args, **(kwargs or {}))


_CONTEXT = PerThreadList()         # per thread: innermost context, ReplicaContext or None


@contextmanager
def _in_context(ctx: Any) -> Iterator[None]:
    _CONTEXT.append(ctx)
    try:
        yield
    finally:
        _CONTEXT.pop()


class Strategy:
    """A distribution strategy with one replica on the host CPU."""

    def __init__(self, devices: Any = None, **kwargs: Any) -> None:
        for name, value in kwargs.items():
            if value is not None:
                raise InvalidArgumentError(f"{type(self).__name__}: argument {name}={value!r} "
                                           "is not supported by xlapy (one CPU replica)")
        devs = [devices] if isinstance(devices, str) else list(devices or ["/cpu:0"])
        for d in devs:
            if d.lower().replace("device:", "") not in ("/cpu:0", "cpu:0", "/cpu", "cpu"):
                raise InvalidArgumentError(f"{type(self).__name__}: device {d!r} does not "
                                           "exist; xlapy has one CPU device")
        self.extended = self
        self.num_replicas_in_sync = 1

    @contextmanager
    def scope(self) -> Iterator["Strategy"]:
        """Variables created in the scope belong to the strategy (there is one copy)."""
        with _in_context(None):
            yield self

    def run(self, fn: Callable[..., Any], args: tuple = (), kwargs: dict | None = None,
            options: Any = None) -> Any:
        """``fn(*args, **kwargs)`` on the one replica."""
        with _in_context(ReplicaContext(self)):
            return fn(*args, **(kwargs or {}))

    def reduce(self, reduce_op: Any, value: Any, axis: Any = None) -> Any:
        """Combine per-replica values (with one replica: ``value``, reduced over ``axis``
        if given, as TF does)."""
        from .math import reduce_mean, reduce_sum
        op = _reduce_op(reduce_op)
        if axis is None:
            return tree_map(tensor, value)
        fn = reduce_sum if op is ReduceOp.SUM else reduce_mean
        return tree_map(lambda v: fn(v, axis), value)

    def experimental_distribute_dataset(self, dataset: Any, options: Any = None) -> Any:
        return dataset

    def distribute_datasets_from_function(self, dataset_fn: Callable[..., Any],
                                          options: Any = None) -> Any:
        return dataset_fn(InputContext())

    def experimental_local_results(self, value: Any) -> tuple:
        return (value,)


class InputContext:
    """What ``distribute_datasets_from_function`` passes: one input pipeline."""

    num_input_pipelines = 1
    input_pipeline_id = 0
    num_replicas_in_sync = 1

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        return int(global_batch_size)


class MirroredStrategy(Strategy):
    """``tf.distribute.MirroredStrategy``: with no GPUs, one replica on the CPU (as TF)."""

    def __init__(self, devices: Any = None, cross_device_ops: Any = None) -> None:
        super().__init__(devices, cross_device_ops=cross_device_ops)


class OneDeviceStrategy(Strategy):
    """``tf.distribute.OneDeviceStrategy(device)`` on the CPU."""

    def __init__(self, device: str) -> None:
        super().__init__([device])


_DEFAULT = Strategy()


def get_strategy() -> Strategy:
    """The default strategy (one replica)."""
    return _DEFAULT


def has_strategy() -> bool:
    return False


def get_replica_context() -> ReplicaContext | None:
    """The current replica context: the default one outside any strategy, ``None`` in a
    strategy's cross-replica context (``scope()`` outside ``run``)."""
    if _CONTEXT:
        return _CONTEXT[-1]
    return ReplicaContext(_DEFAULT)


def in_cross_replica_context() -> bool:
    return bool(_CONTEXT) and _CONTEXT[-1] is None


__all__ = ["ReduceOp", "ReplicaContext", "Strategy", "MirroredStrategy", "OneDeviceStrategy",
           "InputContext", "get_strategy", "has_strategy", "get_replica_context",
           "in_cross_replica_context"]
