"""``tf.distribute``: data-parallel replicas over the CPU devices and over MPI processes.

- ``MirroredStrategy(devices=None)``: one replica per local CPU device
  (``XLA_FLAGS=--xla_force_host_platform_device_count=N``; one device by default), the
  replicas joined through shared memory;
- ``MultiWorkerMirroredStrategy()``: one replica per device of every process of an MPI
  launch (``mpiexec -n K python train.py``; it calls ``xlapy.distributed.initialize()`` when
  that was not done), collectives through MPI;
- ``OneDeviceStrategy(device)`` and the default strategy (``get_strategy()``): one replica.

The seed's step function::

    @tf.function(jit_compile=True)
    def step_fn():
      t = tf.ones(shape=[100], dtype=tf.float32)
      ctx = tf.distribute.get_replica_context()
      return ctx.all_reduce(tf.distribute.ReduceOp.SUM, t)

    strategy.run(step_fn)

is traced and compiled once, as an HLO module with ``replica_count=N`` whose all-reduce spans
``replica_groups={{0,...,N-1}}``, and the N replicas run it together, each on its own thread
and its own instance of the executable (``_replicas.py`` has the machinery).
``ReduceOp.MEAN`` is the SUM all-reduce divided by ``num_replicas_in_sync``. The seed's
``@tf.function def run_fn(): return strategy.run(step_fn)`` records ``strategy.run`` as one
host node of its graph, run again at every call.
``strategy.run`` returns the result itself with one local replica, else a
:class:`PerReplica` per leaf; ``strategy.reduce`` combines those across every replica;
``experimental_distribute_dataset`` splits each global batch into the replicas' shards
(process p takes the shards of its replicas), ``distribute_datasets_from_function`` calls
the function once per process and hands consecutive elements to the local replicas.
Variables created in ``strategy.scope()`` are mirrored (one copy per local replica);
Keras models compiled in the scope train data-parallel (``xlapy.keras.training``).

Not as in TF: replicas are threads and processes of this machine's CPUs (no GPUs); a
strategy chooses no cross-device algorithm (``cross_device_ops`` is refused); with several
processes every process must run the same sequence of collectives (as in TF, and checked:
a mismatch fails naming the collective), and ``merge_call`` gathers the local replicas'
values only (a ``merge_fn`` that needs the other processes' calls ``strategy.reduce``).
"""
from __future__ import annotations

import enum
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from .. import distributed as _distributed
from .. import numpy as xnp
from ..backends.communicator import CollectiveCall, InProcessCommunicator, signature_of
from ..client.devices import PROCESS, local_device_count
from ..errors import InvalidArgumentError
from ..frontend import dtypes as _dt
from ..frontend.core import bind, current_trace
from ..frontend.graph_capture import host_op
from ..frontend.pytree import tree_flatten, tree_map, tree_unflatten
from ..frontend.variables import variable_class_scope
from ..keras.backend import distribution_scope
from ._common import tensor
from ._replicas import (MirroredVariable, PerReplica, all_reduce_sum, current_context,
                        in_context, local_results, regroup, replica_id_p, run_replicas,
                        scope_strategy, strategy_scope)


class ReduceOp(enum.Enum):
    """How ``all_reduce`` combines the replicas' values."""

    SUM = "SUM"
    MEAN = "MEAN"


def _reduce_op(reduce_op: Any) -> ReduceOp:
    if isinstance(reduce_op, ReduceOp):
        return reduce_op
    try:
        return ReduceOp(str(reduce_op).upper())
    except ValueError:
        raise InvalidArgumentError(f"unknown reduce_op {reduce_op!r}; use "
                                   "tf.distribute.ReduceOp.SUM or MEAN") from None


def _all_reduce(reduce_op: Any, value: Any, num_replicas: int) -> Any:
    """``value``'s leaves combined over the replicas. Leaves of one dtype travel together
    as one flat buffer (one all-reduce per dtype, as TF packs and Horovod fuses tensors)."""
    op = _reduce_op(reduce_op)
    leaves, treedef = tree_flatten(value)
    xs = [tensor(v) for v in leaves]
    for x in xs:
        if x.dtype == np.bool_ or not (_dt.is_integer(x.dtype) or _dt.is_inexact(x.dtype)):
            raise InvalidArgumentError(f"all_reduce: cannot reduce a {x.type_text()} tensor")
    out: list[Any] = [None] * len(xs)
    for dtype in dict.fromkeys(x.dtype for x in xs):
        members = [i for i, x in enumerate(xs) if x.dtype == dtype]
        if len(members) == 1:
            totals = [all_reduce_sum(xs[members[0]], num_replicas)]
        else:
            flat = xnp.concatenate([xnp.reshape(xs[i], (-1,)) for i in members])
            packed = all_reduce_sum(flat, num_replicas)
            ends = np.cumsum([xs[i].size for i in members])
            totals = [xnp.reshape(packed[end - xs[i].size:end], xs[i].shape)
                      for i, end in zip(members, ends)]
        for i, total in zip(members, totals):
            if op is ReduceOp.MEAN:
                total = total // num_replicas if _dt.is_integer(dtype) else \
                    total / num_replicas
            out[i] = total
    return tree_unflatten(treedef, out)


class ReplicaContext:
    """One replica's context in ``strategy.run``: ``all_reduce``, ``merge_call``,
    ``num_replicas_in_sync`` and ``replica_id_in_sync_group`` (a scalar int32 tensor:
    traced, the HLO ``replica-id``, so one compiled program serves every replica)."""

    def __init__(self, strategy: "Strategy", replica_id: int = 0, local_index: int = 0,
                 run: Any = None) -> None:
        self.strategy = strategy
        self.num_replicas_in_sync = strategy.num_replicas_in_sync
        self.replica_id = replica_id
        self.local_index = local_index
        self._run = run

    @property
    def replica_id_in_sync_group(self) -> Any:
        if current_trace() is not None and self.num_replicas_in_sync > 1:
            return bind(replica_id_p)
        return tensor(np.int32(self.replica_id))

    @property
    def devices(self) -> tuple[str, ...]:
        return (self.strategy._device_names[self.local_index],)

    def all_reduce(self, reduce_op: Any, value: Any, options: Any = None) -> Any:
        """Combine ``value`` (a tensor or nested structure) across the replicas with
        ``reduce_op``: an HLO ``all-reduce`` (see the module docstring)."""
        if options is not None:
            raise InvalidArgumentError(f"all_reduce: argument options={options!r} is not "
                                       "supported by xlapy (there is one implementation)")
        return _all_reduce(reduce_op, value, self.num_replicas_in_sync)

    def merge_call(self, merge_fn: Callable[..., Any], args: tuple = (),
                   kwargs: dict | None = None) -> Any:
        """Call ``merge_fn(strategy, *args)`` once in the cross-replica context, with the
        local replicas' arguments as :class:`PerReplica` values; every replica gets its
        result."""
        if self._run is None:
            with in_context(None):
                return merge_fn(self.strategy, *args, **(kwargs or {}))
        return self._run.merge(self, merge_fn, tuple(args), dict(kwargs or {}))


def _cpu_index(name: Any) -> int:
    """The CPU index a TF device name names (``/cpu:1``, ``/device:CPU:1``,
    ``/job:localhost/replica:0/task:0/device:CPU:1``), -1 for anything else."""
    last = str(name).lower().rstrip("/").rsplit("/", 1)[-1]
    if last.startswith("device:"):
        last = last[len("device:"):]
    if last == "cpu":
        return 0
    if last.startswith("cpu:") and last[4:].isdigit():
        return int(last[4:])
    return -1


class Strategy:
    """A distribution strategy (see the module docstring); the base class has one replica
    on ``/cpu:0``."""

    def __init__(self, devices: Any = None, **kwargs: Any) -> None:
        for name, value in kwargs.items():
            if value is not None:
                raise InvalidArgumentError(f"{type(self).__name__}: argument {name}={value!r} "
                                           "is not supported by xlapy (CPU replicas, one "
                                           "all-reduce implementation)")
        self._init_devices(devices if devices is not None else ["/cpu:0"])
        self.processes = 1
        self.extended = self
        self._timeout: float | None = None

    def _init_devices(self, devices: Any) -> None:
        devs = [devices] if isinstance(devices, str) else list(devices)
        count = local_device_count()
        indices = []
        for d in devs:
            i = _cpu_index(d)
            if not 0 <= i < count:
                raise InvalidArgumentError(
                    f"{type(self).__name__}: device {d!r} does not exist; this process has "
                    f"{count} CPU device(s) (/cpu:0 .. /cpu:{count - 1}; more with "
                    f"XLA_FLAGS=--xla_force_host_platform_device_count=N)")
            indices.append(i)
        if not indices or len(set(indices)) != len(indices):
            raise InvalidArgumentError(f"{type(self).__name__}: devices must be distinct and "
                                       f"not empty, got {devs!r}")
        self._device_names = tuple(f"/job:localhost/replica:0/task:0/device:CPU:{i}"
                                   for i in indices)

    # ----- the replicas
    @property
    def local_replica_count(self) -> int:
        """Replicas this process runs."""
        return len(self._device_names)

    @property
    def num_replicas_in_sync(self) -> int:
        """Replicas of every process."""
        return self.local_replica_count * self.processes

    @property
    def first_replica(self) -> int:
        """The id of this process's first replica (ids are numbered process by process)."""
        return 0

    def communicator(self) -> Any:
        """What joins the replicas of one ``run``: shared memory between the local threads."""
        return InProcessCommunicator(self._timeout)

    @contextmanager
    def variable_scope(self) -> Iterator[None]:
        """Variables created in the block are mirrored over this strategy's replicas."""
        with strategy_scope(self), variable_class_scope(MirroredVariable):
            yield

    @contextmanager
    def scope(self) -> Iterator["Strategy"]:
        """The cross-replica context: Variables created here are mirrored, and Keras
        models compiled here train with this strategy."""
        with ExitStack() as stack:
            stack.enter_context(in_context(None))
            stack.enter_context(self.variable_scope())
            stack.enter_context(distribution_scope(self))
            yield self

    def run(self, fn: Callable[..., Any], args: tuple = (), kwargs: dict | None = None,
            options: Any = None) -> Any:
        """``fn(*args, **kwargs)`` once per replica (PerReplica arguments give each
        replica its own value); returns the result, or PerReplica values with several
        local replicas."""
        return _run_node(self, fn, tuple(args), dict(kwargs or {}))

    def _run(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        if isinstance(current_context(), ReplicaContext):
            raise InvalidArgumentError("strategy.run was called inside strategy.run; call it "
                                       "from the cross-replica context")
        if current_trace() is not None:
            if self.num_replicas_in_sync > 1:
                raise InvalidArgumentError(
                    f"strategy.run with {self.num_replicas_in_sync} replicas was called "
                    "inside a function being compiled; compile the step function "
                    "(tf.function(jit_compile=True)) and call strategy.run eagerly")
            with in_context(ReplicaContext(self)):
                return fn(*args, **kwargs)

        def context(i: int, run: Any) -> ReplicaContext:
            return ReplicaContext(self, self.first_replica + i, i, run)
        return run_replicas(self, context, fn, args, kwargs)

    def replica_all_reduce(self, reduce_op: Any, value: Any) -> Any:
        """``get_replica_context().all_reduce(reduce_op, value)`` (what Keras's
        data-parallel train step calls)."""
        ctx = current_context()
        if not isinstance(ctx, ReplicaContext) or ctx.strategy is not self:
            raise InvalidArgumentError("replica_all_reduce: not in a replica of this strategy")
        return ctx.all_reduce(reduce_op, value)

    # ----- cross-replica values
    def experimental_local_results(self, value: Any) -> tuple:
        """The local replicas' values: a PerReplica's values, a mirrored Variable's
        copies (and a structure of them: one structure per replica), else ``(value,)``."""
        return local_results(value, self)

    def reduce(self, reduce_op: Any, value: Any, axis: Any = None) -> Any:
        """Combine per-replica values across all replicas (and over ``axis`` within each
        first, as TF); a value that is not per-replica is taken as the same on every
        replica (SUM then needs one replica)."""
        from .math import reduce_sum
        op = _reduce_op(reduce_op)
        if not isinstance(value, PerReplica):
            if op is ReduceOp.SUM and self.num_replicas_in_sync > 1 and axis is None:
                raise InvalidArgumentError(
                    "strategy.reduce(SUM, ...) of a value that is not per-replica: the "
                    "replicas' copies would be summed; pass strategy.run's result")
            value = PerReplica([value] * self.local_replica_count)
        n = self.num_replicas_in_sync

        def step(v: Any) -> Any:
            x = tensor(v)
            count = np.float32(1.0)
            if axis is not None:
                count = np.float32(np.prod([x.shape[a] for a in np.atleast_1d(axis)]))
                x = reduce_sum(x, axis)
            if op is ReduceOp.SUM:
                return _all_reduce("SUM", x, n)
            total = _all_reduce("SUM", x.astype(np.float32) if _dt.is_integer(x.dtype)
                                else x, n)
            return total / _all_reduce("SUM", tensor(count), n)
        return self.experimental_local_results(self.run(step, (value,)))[0]

    def gather(self, value: Any, axis: int) -> Any:
        """Every replica's value concatenated along ``axis`` in replica order. With several
        processes the values must have one shape: each replica places its value in its slot
        of a zero buffer and the buffers are all-reduced."""
        from ._array_ops import concat
        if self.processes == 1:
            return concat(list(self.experimental_local_results(value)), axis)
        n = self.num_replicas_in_sync

        def place(v: Any) -> Any:
            x = np.asarray(tensor(v))
            slots = np.zeros((n,) + x.shape, x.dtype)
            slots[int(np.asarray(get_replica_context().replica_id_in_sync_group))] = x
            return _all_reduce("SUM", tensor(slots), n)
        slots = np.asarray(self.experimental_local_results(self.run(place, (value,)))[0])
        return concat([tensor(part) for part in slots], axis)

    # ----- input
    def experimental_distribute_dataset(self, dataset: Any, options: Any = None) -> Any:
        """Each element (a global batch) split along its first dimension into one shard
        per replica; this process's replicas get theirs."""
        return _DistributedDataset(self, dataset, split=True)

    def distribute_datasets_from_function(self, dataset_fn: Callable[..., Any],
                                          options: Any = None) -> Any:
        """``dataset_fn(InputContext)`` once per process; its elements (per-replica
        batches) go to the local replicas in turn."""
        ctx = InputContext(self.processes, PROCESS.index if self.processes > 1 else 0,
                           self.num_replicas_in_sync)
        return _DistributedDataset(self, dataset_fn(ctx), split=False)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def experimental_distribute_values_from_function(self, value_fn: Callable[..., Any]
                                                     ) -> Any:
        """``value_fn(ValueContext)`` for each local replica, as a PerReplica value."""
        values = [value_fn(ValueContext(self.first_replica + i, self.num_replicas_in_sync))
                  for i in range(self.local_replica_count)]
        return regroup(values)


@host_op("StrategyRun")
def _run_node(strategy: Strategy, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``strategy.run``: one node of a ``tf.function`` graph, run again (every replica's
    step) each time the graph runs."""
    return strategy._run(fn, args, kwargs)


class ValueContext:
    """What ``experimental_distribute_values_from_function`` passes to its function."""

    def __init__(self, replica_id_in_sync_group: int = 0, num_replicas_in_sync: int = 1
                 ) -> None:
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync


class InputContext:
    """What ``distribute_datasets_from_function`` passes: which input pipeline (process)
    this is, and how many replicas share the global batch."""

    def __init__(self, num_input_pipelines: int = 1, input_pipeline_id: int = 0,
                 num_replicas_in_sync: int = 1) -> None:
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        if int(global_batch_size) % self.num_replicas_in_sync:
            raise InvalidArgumentError(
                f"the global batch size {global_batch_size} is not divisible by "
                f"num_replicas_in_sync {self.num_replicas_in_sync}")
        return int(global_batch_size) // self.num_replicas_in_sync


class _DistributedDataset:
    """A dataset whose elements are per-replica values (see the strategy's methods)."""

    def __init__(self, strategy: Strategy, dataset: Any, split: bool) -> None:
        self._strategy = strategy
        self._dataset = dataset
        self._split = split

    def _shards(self, element: Any) -> list[Any]:
        s = self._strategy
        n, first = s.num_replicas_in_sync, s.first_replica

        def shard(i: int) -> Any:
            def part(leaf: Any) -> Any:
                a = np.asarray(leaf)
                if a.ndim == 0:
                    raise InvalidArgumentError("experimental_distribute_dataset: elements "
                                               "must be batches (a leading dimension)")
                return tensor(np.array_split(a, n)[first + i])
            return tree_map(part, element)
        return [shard(i) for i in range(s.local_replica_count)]

    def __iter__(self) -> Iterator[Any]:
        local = self._strategy.local_replica_count
        if self._split:
            for element in self._dataset:
                yield regroup(self._shards(element))
            return
        it = iter(self._dataset)
        while True:
            values = []
            for _ in range(local):
                try:
                    values.append(next(it))
                except StopIteration:
                    if values:
                        raise InvalidArgumentError(
                            f"distribute_datasets_from_function: the dataset ended after "
                            f"{len(values)} of the {local} local replicas' elements") from None
                    return
            yield regroup(values)


class MirroredStrategy(Strategy):
    """``tf.distribute.MirroredStrategy(devices=None)``: one replica per local CPU device
    (all of them by default)."""

    def __init__(self, devices: Any = None, cross_device_ops: Any = None) -> None:
        super().__init__(devices if devices is not None else
                         [f"/cpu:{i}" for i in range(local_device_count())],
                         cross_device_ops=cross_device_ops)


class CommunicationOptions:
    """``tf.distribute.experimental.CommunicationOptions``: ``timeout_seconds`` bounds each
    collective's wait for the other replicas; the other options choose an implementation
    and are accepted."""

    def __init__(self, bytes_per_pack: int = 0, timeout_seconds: float | None = None,
                 implementation: Any = None) -> None:
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


class MultiWorkerMirroredStrategy(Strategy):
    """``tf.distribute.MultiWorkerMirroredStrategy()``: one replica per device of every
    process of an MPI launch (``xlapy.distributed.initialize()`` is called when needed;
    without an MPI launch it is one process, like ``MirroredStrategy``)."""

    def __init__(self, cluster_resolver: Any = None,
                 communication_options: CommunicationOptions | None = None) -> None:
        super().__init__([f"/cpu:{i}" for i in range(local_device_count())],
                         cluster_resolver=cluster_resolver)
        if not _distributed.is_initialized() and _distributed.mpi_environment() is not None:
            _distributed.initialize()
        self.processes = PROCESS.count
        self._broadcasts = 0
        if communication_options is not None:
            self._timeout = communication_options.timeout_seconds

    @property
    def first_replica(self) -> int:
        return PROCESS.index * self.local_replica_count if self.processes > 1 else 0

    def broadcast_from_first_process(self, value: np.ndarray) -> np.ndarray:
        """Process 0's ``value`` (every process calls it, in the same order)."""
        comm = self.communicator()
        leaders = tuple(p * self.local_replica_count for p in range(self.processes))
        what = "broadcast of a mirrored variable's initial value"
        self._broadcasts += 1
        call = CollectiveCall(what, leaders, PROCESS.index, self._broadcasts,
                              signature_of(what, [value]), (leaders,))
        return comm.broadcast(call, [value])[0]

    def communicator(self) -> Any:
        if self.processes == 1:
            return super().communicator()
        comm = PROCESS.communicator
        if self._timeout is not None:
            comm.timeout = float(self._timeout)
        return comm


class OneDeviceStrategy(Strategy):
    """``tf.distribute.OneDeviceStrategy(device)`` on a CPU device."""

    def __init__(self, device: str) -> None:
        super().__init__([device])


_DEFAULT = Strategy()


def get_strategy() -> Strategy:
    """The strategy whose scope is open on this thread, or the default one."""
    ctx = current_context()
    if isinstance(ctx, ReplicaContext):
        return ctx.strategy
    return scope_strategy() or _DEFAULT


def has_strategy() -> bool:
    """Whether a strategy (not the default one) is in scope on this thread."""
    return get_strategy() is not _DEFAULT


def get_replica_context() -> ReplicaContext | None:
    """The current replica context: the default one outside any strategy, ``None`` in a
    strategy's cross-replica context (``scope()`` outside ``run``)."""
    ctx = current_context()
    if ctx == "default":
        return ReplicaContext(_DEFAULT)
    return ctx


def in_cross_replica_context() -> bool:
    return current_context() is None


class experimental:  # noqa: N801  (TF's namespace ``tf.distribute.experimental``)
    """``tf.distribute.experimental``: ``CommunicationOptions`` and the strategies under
    their old names."""

    CommunicationOptions = CommunicationOptions
    MultiWorkerMirroredStrategy = MultiWorkerMirroredStrategy


__all__ = ["ReduceOp", "ReplicaContext", "Strategy", "MirroredStrategy", "OneDeviceStrategy",
           "MultiWorkerMirroredStrategy", "InputContext", "ValueContext", "PerReplica",
           "MirroredVariable", "CommunicationOptions", "experimental", "get_strategy",
           "has_strategy", "get_replica_context", "in_cross_replica_context"]
