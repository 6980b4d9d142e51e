"""The replicas of a ``tf.distribute`` strategy: threads, collectives, mirrored variables.

A strategy with N replicas in sync runs ``strategy.run(fn, args)`` once per replica of this
process: each local replica on its own thread (one replica per process runs on the calling
thread), inside

- its :class:`ReplicaContext` (``get_replica_context()``: ``all_reduce``,
  ``replica_id_in_sync_group``, ``merge_call``),
- :func:`xlapy.backends.communicator.participating` with its replica id, N, and the
  communicator joining the replicas (shared memory between the threads of one process; MPI,
  or MPI and shared memory, between processes after ``xlapy.distributed.initialize``),
- :func:`xlapy.frontend.replicas.replicated` (N), so a ``tf.function(jit_compile=True)``
  called by the replicas is traced and compiled once, as an HLO module with
  ``replica_count=N``, and every replica runs its own instance of it at the same time.

``ReplicaContext.all_reduce`` is :func:`all_reduce_sum`: traced, the primitive below lowers
to one HLO ``all-reduce`` over ``replica_groups={{0,...,N-1}}`` with a channel id of its
own (what TF's XLA bridge emits for ``CollectiveReduceV2``; f16/bf16 are summed in f32 as
TF's ``SumAccumulationType``), named and numbered by its place in the program so that
every process names it alike; eagerly (the Horovod pattern: a compiled gradient step, then
an uncompiled all-reduce and apply) it runs the same one-instruction program with
``replica_count=N`` as the calling replica. Its gradient is the all-reduce of the cotangent.

Variables created in ``strategy.scope()`` are :class:`MirroredVariable`: one copy per local
replica. A replica reads and writes its own copy (compiled calls read them as parameters and
write them back as outputs, per replica); the cross-replica context reads the first copy and
writes all of them. Copies stay identical as long as every replica applies the same update,
which all-reduced gradients guarantee; ``strategy.experimental_local_results(v)`` returns
them all. A variable created with ``aggregation=tf.VariableAggregation.SUM``, ``MEAN`` or
``ONLY_FIRST_REPLICA`` combines what the replicas assign in the replica context, as TF's
``MirroredVariable`` does: ``assign(x)`` stores the sum / mean / replica 0's value of ``x``
over all replicas in every copy, ``assign_add(d)`` / ``assign_sub(d)`` apply the combined
``d`` (an all-reduce inside the compiled step, or the eager one-instruction program); with
``NONE`` (the default) each replica writes its own copy.
"""
from __future__ import annotations

import collections
import enum
import threading
from typing import Any, Callable

import numpy as np

from .. import numpy as xnp
from ..backends.communicator import Participant, participating, run_participants
from ..errors import CollectiveError, InvalidArgumentError
from ..frontend import core
from ..frontend.core import Array, LoweringContext, Primitive, bind, default_backend
from ..frontend.pytree import register_pytree_node, tree_flatten, tree_unflatten
from ..frontend.replicas import executable_for, replicated
from ..frontend.variables import Variable
from ..hlo import types as T
from ..hlo.builder import XlaBuilder, build_module
from ..hlo.replica_groups import ReplicaGroups
from ..threadlocal import PerThreadList



# ----------------------------------------------------------------------------- all-reduce
def _collective_number(ctx: Any) -> int:
    """1, 2, ... for the collectives of one traced program (of one eager program), so that
    every process names and numbers them alike whatever else it compiled before: the
    participants of a collective must agree on its name."""
    holder = core.current_trace() or ctx.b
    while getattr(holder, "parent", None) is not None:
        holder = holder.parent
    n = getattr(holder, "tf_collectives", 0) + 1
    holder.tf_collectives = n
    return n


def _lower_all_reduce(ctx: Any, x: Any, replicas: int) -> Any:
    et = x.shape.element_type
    acc = T.F32 if et in (T.F16, T.BF16) else et
    operand = x if acc == et else ctx.b.convert(x, acc)
    n = _collective_number(ctx)
    out = ctx.b.add_instruction("all-reduce", [operand], {
        "channel_id": n,
        "replica_groups": ReplicaGroups.of([range(replicas)]),
        "to_apply": ctx.scalar_computation("add", acc.dtype)}, name=f"replica-all-reduce.{n}")
    return out if acc == et else ctx.b.convert(out, et)


def _all_reduce_vjp(ct: Array, ans: Array, x: Array, replicas: int) -> tuple:
    # d(sum over replicas)/dx: every replica's cotangent, summed
    return (all_reduce_sum(ct, replicas),)


# Private to this namespace, so not in the front end's primitive table (like core.alias_p).
all_reduce_sum_p = Primitive("tf_all_reduce_sum",
                             doc="HLO all-reduce (add) over the replicas {{0..N-1}}.")
all_reduce_sum_p.def_lowering(_lower_all_reduce)
all_reduce_sum_p.def_vjp(_all_reduce_vjp)

replica_id_p = Primitive("tf_replica_id", doc="The replica's id as s32 (HLO replica-id).")
replica_id_p.def_lowering(lambda ctx: ctx.b.convert(ctx.b.replica_id(), T.S32))

_EAGER_LIMIT = 64                   # one-instruction programs kept (by replicas, shape, dtype)
_EAGER: collections.OrderedDict = collections.OrderedDict()
_EAGER_LOCK = threading.Lock()


def _eager_program(x: Array, replicas: int) -> Any:
    backend = default_backend()
    key = (replicas, x.shape, str(x.dtype), backend)
    with _EAGER_LOCK:
        exe = _EAGER.get(key)
        if exe is not None:
            _EAGER.move_to_end(key)
            return exe
    from ..client import get_backend
    b = XlaBuilder("tf_all_reduce")
    root = _lower_all_reduce(LoweringContext(b), b.parameter((x.dtype, x.shape)), replicas)
    module = build_module(b.build(root), "tf_all_reduce")
    module.attributes["replica_count"] = replicas
    exe = get_backend(backend).compile(module)
    with _EAGER_LOCK:
        exe = _EAGER.setdefault(key, exe)
        while len(_EAGER) > _EAGER_LIMIT:
            _EAGER.popitem(last=False)
    return exe


def all_reduce_sum(x: Array, replicas: int) -> Array:
    """The sum of ``x`` over the ``replicas`` replicas (see the module docstring)."""
    if core.current_trace() is not None or replicas == 1:
        return bind(all_reduce_sum_p, x, replicas=replicas)
    value = executable_for(_eager_program(x, replicas)).execute([np.asarray(x._value)])
    out = Array(np.asarray(value), weak_type=x.weak_type)
    if core._TAPES.items:
        core.record(all_reduce_sum_p, [x], {"replicas": replicas}, [out])
    return out


# ------------------------------------------------------------------------ replica contexts
_CONTEXT = PerThreadList()      # per thread: innermost context, ReplicaContext or None
_SCOPES = PerThreadList()       # per thread: strategies whose scope() is open


def in_context(ctx: Any) -> Any:
    """A context manager: ``ctx`` (a ReplicaContext, or None for the cross-replica
    context) is current within it."""
    return _CONTEXT.pushed(ctx)


def current_context() -> Any:
    """The innermost context of this thread: a ReplicaContext, None (cross-replica), or
    the string ``"default"`` when no strategy is active."""
    return _CONTEXT.items[-1] if _CONTEXT.items else "default"


def strategy_scope(strategy: Any) -> Any:
    """A context manager: ``strategy``'s scope is open within it (on this thread)."""
    return _SCOPES.pushed(strategy)


def scope_strategy() -> Any:
    """The strategy whose ``scope()`` is innermost on this thread (None outside)."""
    return _SCOPES.items[-1] if _SCOPES.items else None


def _local_index(strategy: Any) -> int | None:
    """The local replica this thread runs for ``strategy`` (None: cross-replica)."""
    ctx = _CONTEXT.items[-1] if _CONTEXT.items else None
    if ctx is not None and getattr(ctx, "strategy", None) is strategy:
        return ctx.local_index
    return None


# ---------------------------------------------------------------------- mirrored variables
class VariableAggregation(enum.Enum):
    """How a mirrored variable combines the replicas' assignments (``tf.VariableAggregation``;
    the values are TF's)."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


def as_aggregation(value: Any) -> VariableAggregation:
    """``value`` (a VariableAggregation, its name, its number, or None) as the enum."""
    if value is None:
        return VariableAggregation.NONE
    if isinstance(value, VariableAggregation):
        return value
    try:
        if isinstance(value, str):
            return VariableAggregation[value.upper()]
        return VariableAggregation(int(value))
    except (KeyError, ValueError, TypeError):
        raise InvalidArgumentError(
            f"unknown variable aggregation {value!r}; use tf.VariableAggregation.NONE, SUM, "
            "MEAN or ONLY_FIRST_REPLICA") from None


class MirroredVariable(Variable):
    """A Variable with one copy per local replica of the strategy it was created under
    (see the module docstring)."""

    def __init__(self, initial_value: Any, trainable: bool = True, name: str | None = None,
                 dtype: Any = None, aggregation: Any = None) -> None:
        strategy = scope_strategy()
        if strategy is None:
            raise InvalidArgumentError("MirroredVariable: create it inside strategy.scope()")
        self._strategy = strategy
        self._copies: list[Any] = [None] * strategy.local_replica_count
        self._ready = False
        super().__init__(initial_value, trainable, name, dtype, as_aggregation(aggregation))
        self._ready = True
        if strategy.processes > 1 and _local_index(strategy) is None \
                and core.current_trace() is None:
            # every process starts from process 0's value, as TF's multi-worker strategy
            self._value = Array(strategy.broadcast_from_first_process(self.numpy()))

    @property                               # type: ignore[override]
    def _value(self) -> Any:
        i = _local_index(self._strategy)
        return self._copies[0 if i is None else i]

    @_value.setter
    def _value(self, value: Any) -> None:
        i = _local_index(self._strategy) if self._ready else None
        if i is None:                       # created, or assigned in cross-replica context
            self._copies[:] = [value] * len(self._copies)
        else:
            self._copies[i] = value

    def _combined(self, value: Any) -> Any:
        """``value`` as this variable's aggregation combines it over the replicas (in the
        replica context of a strategy with several replicas; else ``value`` itself)."""
        n = self._strategy.num_replicas_in_sync
        how = self.aggregation
        if how is VariableAggregation.NONE or n == 1 or _local_index(self._strategy) is None:
            return value
        x = core.to_array(value, self.dtype)
        if how is VariableAggregation.ONLY_FIRST_REPLICA:
            rid = bind(replica_id_p) if core.current_trace() is not None else \
                np.int32(current_context().replica_id)
            x = xnp.where(rid == 0, x, xnp.zeros_like(x))
        total = all_reduce_sum(x, n)
        if how is VariableAggregation.MEAN:
            total = total // n if np.issubdtype(self.dtype, np.integer) else total / n
        return total

    def assign(self, value: Any) -> "MirroredVariable":
        """Set every replica's copy (see the module docstring for aggregations)."""
        return super().assign(self._combined(value))

    def assign_add(self, delta: Any) -> "MirroredVariable":
        return Variable.assign(self, self.read_value() + self._combined(delta))

    def assign_sub(self, delta: Any) -> "MirroredVariable":
        return Variable.assign(self, self.read_value() - self._combined(delta))

    def replica_values(self) -> tuple[np.ndarray, ...]:
        """Every local replica's copy (NumPy arrays, in replica order)."""
        return tuple(np.array(c._value) for c in self._copies)


# --------------------------------------------------------------------------- per replica
class PerReplica:
    """Values that differ by replica: ``values[i]`` belongs to local replica ``i``
    (what ``strategy.run`` returns with several local replicas, and what distributed
    datasets yield)."""

    def __init__(self, values: Any) -> None:
        self.values = tuple(values)

    def __repr__(self) -> str:
        return f"PerReplica({list(self.values)!r})"


# a container of its values: graph capture sees (and replays) the arrays inside
register_pytree_node(PerReplica, lambda p: (list(p.values), None),
                     lambda aux, values: PerReplica(values))


def _distributed(v: Any) -> bool:
    return isinstance(v, (PerReplica, MirroredVariable))


def local_results(tree: Any, strategy: Any) -> tuple:
    """``tree`` as seen by each local replica of ``strategy``: PerReplica leaves replaced
    by their values, ``strategy``'s mirrored variables by their copies; ``(tree,)`` when it
    holds neither."""
    leaves, td = tree_flatten(tree, is_leaf=_distributed)
    if not any(_distributed(v) for v in leaves):
        return (tree,)

    def pick(v: Any, i: int) -> Any:
        if isinstance(v, PerReplica):
            return v.values[i]
        if isinstance(v, MirroredVariable) and v._strategy is strategy:
            return Array(v.replica_values()[i])
        return v
    return tuple(tree_unflatten(td, [pick(v, i) for v in leaves])
                 for i in range(strategy.local_replica_count))


def select_replica(tree: Any, i: int) -> Any:
    """``tree`` with each PerReplica leaf replaced by its ``i``-th value."""
    leaves, td = tree_flatten(tree, is_leaf=_distributed)
    return tree_unflatten(td, [v.values[i] if isinstance(v, PerReplica) else v
                               for v in leaves])


def regroup(results: list[Any]) -> Any:
    """One structure from the local replicas' results: each leaf a PerReplica (the result
    itself with one local replica)."""
    if len(results) == 1:
        return results[0]
    flat = [tree_flatten(r) for r in results]
    td = flat[0][1]
    if any(f[1] != td for f in flat[1:]):
        raise InvalidArgumentError("strategy.run: the replicas returned values of different "
                                   "structures")
    return tree_unflatten(td, [PerReplica(vals) for vals in zip(*(f[0] for f in flat))])


# --------------------------------------------------------------------------------- runs
class _Run:
    """What the local replica threads of one ``strategy.run`` share: ``merge_call``'s
    meeting point."""

    def __init__(self, count: int, timeout: float) -> None:
        self.count = count
        self.timeout = timeout
        self.barrier = threading.Barrier(count)
        self.slots: list[Any] = [None] * count
        self.result: Any = None

    def merge(self, ctx: Any, merge_fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """Every local replica arrives with its arguments; the first one calls ``merge_fn``
        once in the cross-replica context with PerReplica arguments; all get its result."""
        i = ctx.local_index
        self.slots[i] = (args, kwargs)
        self._wait("arrive")
        if i == 0:
            try:
                merged = regroup(self.slots)
                with in_context(None):
                    self.result = ("ok", merge_fn(ctx.strategy, *merged[0], **merged[1]))
            except BaseException as e:          # noqa: BLE001 - every replica raises it
                self.result = ("error", e)
        self._wait("leave")
        kind, value = self.result
        if kind == "error":
            raise value
        return value

    def _wait(self, stage: str) -> None:
        try:
            self.barrier.wait(self.timeout)
        except threading.BrokenBarrierError:
            raise CollectiveError(f"merge_call: the other replicas did not {stage} within "
                                  f"{self.timeout:g} s (a replica failed or took another "
                                  "path)") from None

    def abort(self) -> None:
        self.barrier.abort()


def run_replicas(strategy: Any, make_context: Callable[[int, Any], Any],
                 fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """Call ``fn`` once per local replica of ``strategy`` (see the module docstring) and
    regroup the results."""
    local, total = strategy.local_replica_count, strategy.num_replicas_in_sync
    comm = strategy.communicator() if total > 1 else None
    run = _Run(local, comm.timeout) if local > 1 else None

    def one(i: int) -> Any:
        ctx = make_context(i, run)
        a = select_replica(args, i)
        k = select_replica(kwargs, i)
        with in_context(ctx), strategy.variable_scope(), replicated(total):
            if comm is None:
                return fn(*a, **k)
            try:
                with participating(Participant(ctx.replica_id, 0, total, 1, comm)):
                    return fn(*a, **k)
            except BaseException:
                if run is not None:
                    run.abort()
                raise

    if local == 1:
        return one(0)
    return regroup(run_participants(one, local, comm))


__all__ = ["all_reduce_sum", "all_reduce_sum_p", "replica_id_p", "MirroredVariable",
           "VariableAggregation", "as_aggregation",
           "PerReplica", "local_results", "select_replica", "regroup", "run_replicas", "in_context",
           "current_context", "strategy_scope", "scope_strategy"]
