"""Variables that hold only their shards, and the compiled step that trains them as one SPMD
program (what Keras 3's ``ModelParallel`` / ``DataParallel`` distributions do under JAX).

A :class:`ShardedVariable` is a :class:`~xlapy.frontend.variables.Variable` with a
``NamedSharding``: it keeps the padded pieces this process's devices hold
(``_pieces``); reading it outside a compiled step assembles the global value (each
time: nothing whole is kept), assigning it cuts the new value up again.

:class:`ShardedStep` compiles a function that reads and assigns Variables (a Keras train
step) as one SPMD program over a mesh: it is traced as ``jit`` traces it (the Variables
become trailing parameters, the assigned ones trailing outputs), the data arguments are
split along their first dimension over the batch axis (when it divides), each
ShardedVariable's parameter and its assigned output get its sharding and the other
Variables and the results are replicated; propagation and the partitioner do the rest. A
call passes each ShardedVariable's pieces to the partitions as they are and stores the
pieces the program returns, so weights and optimizer state never exist whole.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import numpy as np

from ..client.spmd import PartitionedModule, shard_array, spmd_partition
from ..errors import InvalidArgumentError, ShapeError
from ..hlo.sharding import HloSharding
from .core import Array
from .jit import JitFunction
from .sharding import (NamedSharding, PartitionSpec, ShardedArray, _this_process_partitions,
                       _where, spmd_backend)
from .variables import Variable, commit_values

log = logging.getLogger("xlapy.spmd")


class ShardedVariable(Variable):
    """A Variable split over a mesh by ``sharding`` (see the module docstring)."""

    def __init__(self, initial_value: Any, sharding: NamedSharding, trainable: bool = True,
                 name: str | None = None, dtype: Any = None) -> None:
        if not isinstance(sharding, NamedSharding):
            raise InvalidArgumentError(f"ShardedVariable takes a NamedSharding, got "
                                       f"{type(sharding).__name__}{_where()}")
        self.sharding = sharding
        self.hlo_sharding: HloSharding | None = None
        super().__init__(initial_value, trainable=trainable, name=name, dtype=dtype)
        hs = self.hlo_sharding
        for d, (n, t) in enumerate(zip(self.shape, hs.data_tiles if hs.is_tiled else ())):
            if n % t:
                raise ShapeError(f"Variable {self.name!r} of shape {self.shape}: "
                                 f"{sharding.spec!r} splits dimension {d} ({n}) {t} ways, "
                                 f"which does not divide it{_where()}")

    @property                                   # type: ignore[override]
    def _value(self) -> Array:
        return Array(self.sharded().numpy())

    @_value.setter
    def _value(self, value: Array) -> None:
        a = np.asarray(value._value)
        if self.hlo_sharding is None:
            self.hlo_sharding = self.sharding.to_hlo_sharding(a.ndim)
        n = self.sharding.mesh.size
        self._pieces = shard_array(a, self.hlo_sharding, n, _this_process_partitions(n))

    def sharded(self) -> ShardedArray:
        """The value as the pieces held (no copy)."""
        return ShardedArray(self._pieces, self.hlo_sharding, self.shape, self.sharding)

    @property
    def nbytes_held(self) -> int:
        """Bytes of the pieces this process holds."""
        return sum(p.nbytes for p in self._pieces if p is not None)


def variable_like(reference: Variable, value: Any, **kwargs: Any) -> Variable:
    """A new Variable for per-variable state of ``reference`` (an optimizer's slot): a
    :class:`ShardedVariable` with its sharding when it is one."""
    if isinstance(reference, ShardedVariable):
        return ShardedVariable(value, reference.sharding, **kwargs)
    return Variable(value, **kwargs)


class ShardedStep:
    """``fn`` compiled as one SPMD program over ``mesh`` (see the module docstring); call
    it like ``fn``. ``batch_axis``: the mesh axis the data arguments' first dimension is
    split over (None: data replicated)."""

    def __init__(self, fn: Callable[..., Any], mesh: Any, batch_axis: str | None,
                 backend: str | None = None) -> None:
        self._inner = JitFunction(fn, backend="interpreter")     # traces (binds, no codegen)
        self.mesh, self.batch_axis, self._backend = mesh, batch_axis, backend
        self.__name__ = getattr(fn, "__name__", "fn")
        self._parts: dict[int, tuple[Any, PartitionedModule]] = {}

    def data_sharding(self, dims: Sequence[int]) -> HloSharding:
        """Split along the first dimension over the batch axis when it divides."""
        k = self.mesh.shape[self.batch_axis] if self.batch_axis is not None else 1
        if not dims or k == 1 or dims[0] % k:
            return HloSharding.replicate()
        return NamedSharding(self.mesh, PartitionSpec(self.batch_axis)).to_hlo_sharding(
            len(dims))

    @staticmethod
    def _var_sharding(v: Variable) -> HloSharding:
        return v.hlo_sharding if isinstance(v, ShardedVariable) else HloSharding.replicate()

    def _partition(self, entry: Any) -> PartitionedModule:
        module = entry.module.clone()
        module.attributes.pop("input_output_alias", None)      # the pieces are new arrays
        params = module.entry.parameters
        n_leaf = len(entry.param_leaves)
        for k, p in enumerate(params):
            p.attrs["sharding"] = self.data_sharding(p.shape.dims) if k < n_leaf else \
                self._var_sharding(entry.variables[k - n_leaf])
        root = module.entry.root
        n_res = len(entry.out_weak)
        shapes = root.shape.tuple_shapes if root.shape.is_tuple else [root.shape]
        outs = [HloSharding.replicate() if k < n_res else
                self._var_sharding(entry.assigned[k - n_res]) for k in range(len(shapes))]
        root.attrs["sharding"] = HloSharding.tuple_of(outs) if root.shape.is_tuple else outs[0]
        part = spmd_partition(module, self.mesh.size)
        log.info("%s: one SPMD program over %r, collective bytes per device %s", self.__name__,
                 self.mesh, part.collective_bytes())
        return part

    def _backend_name(self) -> str:
        return spmd_backend(self.mesh.size, self._backend)

    def lower(self, *args: Any, **kwargs: Any) -> PartitionedModule:
        """The partitioned program for these arguments (traced and partitioned once)."""
        return self._partitioned(self._inner._lookup(args, kwargs, count=False)[0])

    def _partitioned(self, entry: Any) -> PartitionedModule:
        hit = self._parts.get(id(entry.module))
        if hit is None or hit[0] is not entry.module:
            hit = self._parts[id(entry.module)] = (entry.module, self._partition(entry))
        return hit[1]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from ..client.run import run_hlo
        entry, a = self._inner._lookup(args, kwargs, count=False)
        part = self._partitioned(entry)
        n = part.num_partitions
        ids = _this_process_partitions(n) or list(range(n))
        per_device: list[list[Any]] = [[] for _ in ids]
        values = [np.asarray(a.leaves[i].numpy() if isinstance(a.leaves[i], Array)
                             else a.leaves[i]) for i in entry.param_leaves]
        for value, s in zip(values, part.in_shardings):
            pieces = shard_array(value, s, n, ids)
            for slot, dev in enumerate(ids):
                per_device[slot].append(pieces[dev])
        for v in entry.variables:
            held = v._pieces if isinstance(v, ShardedVariable) else None
            whole = None if held is not None else np.asarray(v._value._value)
            for slot, dev in enumerate(ids):
                per_device[slot].append(held[dev] if held is not None else whole)
        outs = run_hlo(part.module, per_device, backend=self._backend_name())
        n_res = len(entry.out_weak)
        results = [Array(np.asarray(outs[0][k]), weak_type=w)
                   for k, w in enumerate(entry.out_weak)]
        plain, plain_values = [], []
        for k, v in enumerate(entry.assigned):
            if isinstance(v, ShardedVariable):
                pieces: list[Any] = [None] * n
                for slot, dev in enumerate(ids):
                    pieces[dev] = np.asarray(outs[slot][n_res + k])
                v._pieces = pieces
            else:
                plain.append(v)
                plain_values.append(Array(np.asarray(outs[0][n_res + k])))
        if plain:
            commit_values(plain, plain_values)
        return entry.unflatten(results)


__all__ = ["ShardedVariable", "ShardedStep", "variable_like"]
