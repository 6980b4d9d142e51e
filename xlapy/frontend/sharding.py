"""JAX-style sharding API: ``Mesh``, ``PartitionSpec``, ``NamedSharding``,
``with_sharding_constraint``, ``device_put`` / ``ShardedArray`` and
``jit(fn, in_shardings=..., out_shardings=...)``.

A :class:`Mesh` names the axes of an array of devices; a :class:`PartitionSpec` says, per array
dimension, which mesh axes split it (``None``: not split; a tuple: several axes, major
first); :meth:`NamedSharding.to_hlo_sharding` gives XLA's ``HloSharding`` by JAX's rule: tile
dim ``i`` = the product of the sizes of the axes in ``spec[i]``, the device array is the
mesh's position array transposed to (axes of dim 0, axes of dim 1, ..., unused axes), the
unused axes form the replication dim. Device numbers in the sharding are positions in the
mesh (partition ids); partition ``p`` runs on device ``p``.

A function jitted with ``in_shardings``/``out_shardings`` is traced as usual, its module's
parameters and result annotated with those shardings, then propagated, partitioned
(``xlapy.client.spmd``) and run once per partition; arguments are cut into shards on the way
in (a ``ShardedArray`` already in the right sharding is passed as it is) and the result is a
``ShardedArray`` holding the output's shards. ``with_sharding_constraint`` inside it
becomes ``custom-call(x), custom_call_target="Sharding"``; outside a trace, and in programs
compiled for one device (``sharding-remover``), it changes nothing.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import numpy as np

from ..client.spmd import PartitionedModule, shard_array, spmd_partition, unshard
from ..errors import InvalidArgumentError, ShapeError
from ..hlo.sharding import HloSharding
from .core import Array, LoweringContext, bind, primitive, to_array
from .jit import SHARDED_JIT, SPMD_COMPILE, JitFunction
from .pytree import tree_unflatten
from .source_info import user_location

log = logging.getLogger("xlapy.spmd")


def _where() -> str:
    loc = user_location(3)
    return f" (at {loc.describe()})" if loc is not None else ""


class Mesh:
    """Named axes over an array of devices (``Device`` objects or device numbers)."""

    def __init__(self, devices: Any, axis_names: Sequence[str] | str) -> None:
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        arr = np.asarray(devices, dtype=object)
        if arr.ndim != len(names):
            raise InvalidArgumentError(f"Mesh: {arr.ndim}-dimensional devices array but "
                                       f"{len(names)} axis names {names}{_where()}")
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"Mesh: repeated axis name in {names}{_where()}")
        ids = [getattr(d, "id", d) for d in arr.reshape(-1)]
        if len(set(ids)) != len(ids):
            raise InvalidArgumentError(f"Mesh: a device appears twice in {ids}{_where()}")
        objects = [d for d in arr.reshape(-1) if hasattr(d, "id")]
        if objects:                 # Device objects must be devices of this run
            from ..client.devices import device_count
            missing = [d.id for d in objects if not 0 <= d.id < device_count()]
            if missing:
                raise InvalidArgumentError(
                    f"Mesh: devices {missing} are not devices of this run, which has "
                    f"{device_count()} (XLA_FLAGS=--xla_force_host_platform_device_count="
                    f"{len(ids)} for more CPU devices){_where()}")
        self.devices = arr
        self.device_ids = np.asarray(ids).reshape(arr.shape)
        self.axis_names = names
        self.shape = dict(zip(names, arr.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    def axis_stride(self, name: str) -> int:
        """How far apart (in partition ids, the mesh's row-major positions) neighbours
        along axis ``name`` are."""
        k = self.axis_names.index(name)
        return int(np.prod(self.devices.shape[k + 1:], dtype=np.int64))

    def axis_groups(self, names: Sequence[str]) -> list[list[int]]:
        """The partition ids that differ only along ``names``, one group per position on
        the other axes; within a group, ordered by the positions along ``names`` (the first
        name major)."""
        ks = [self.axis_names.index(n) for n in names]
        rest = [k for k in range(len(self.axis_names)) if k not in ks]
        pos = np.arange(self.size).reshape(self.devices.shape).transpose(rest + ks)
        width = int(np.prod([self.devices.shape[k] for k in ks], dtype=np.int64))
        return pos.reshape(-1, width).tolist()

    def __repr__(self) -> str:
        return f"Mesh({', '.join(f'{k}={v}' for k, v in self.shape.items())})"


class PartitionSpec(tuple):
    """Per dimension: a mesh axis name, a tuple of names, or None (missing trailing dims are
    None)."""

    def __new__(cls, *parts: Any) -> "PartitionSpec":
        return super().__new__(cls, parts)

    def __repr__(self) -> str:
        return f"PartitionSpec{tuple(self)!r}"


class NamedSharding:
    """``PartitionSpec`` ``spec`` over ``mesh``."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec | Sequence[Any] = ()) -> None:
        self.mesh = mesh
        self.spec = spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec)
        seen: list[str] = []
        for part in self.spec:
            for name in _axes(part):
                if name not in mesh.shape:
                    raise InvalidArgumentError(
                        f"{self.spec!r} names axis {name!r}, which {mesh!r} does not have"
                        f"{_where()}")
                if name in seen:
                    raise InvalidArgumentError(f"{self.spec!r} uses mesh axis {name!r} twice"
                                               f"{_where()}")
                seen.append(name)

    def to_hlo_sharding(self, ndim: int) -> HloSharding:
        """XLA's sharding of a rank-``ndim`` array (JAX's ``_to_xla_hlo_sharding``)."""
        if len(self.spec) > ndim:
            raise InvalidArgumentError(f"{self.spec!r} has {len(self.spec)} entries, but the "
                                       f"array has rank {ndim}")
        names = list(self.mesh.axis_names)
        order, tiles = [], []
        for i in range(ndim):
            axes = _axes(self.spec[i]) if i < len(self.spec) else ()
            order += [names.index(a) for a in axes]
            tiles.append(int(np.prod([self.mesh.shape[a] for a in axes])) if axes else 1)
        unused = [k for k in range(len(names)) if k not in order]
        positions = np.arange(self.mesh.size).reshape(self.mesh.devices.shape)
        arr = positions.transpose(order + unused)
        rest = int(np.prod([self.mesh.devices.shape[k] for k in unused])) if unused else 1
        if rest > 1:
            return HloSharding.tile(arr.reshape(tiles + [rest]), ["replicated"])
        if self.mesh.size == 1:
            return HloSharding.replicate()
        return HloSharding.tile(arr.reshape(tiles))

    def shard_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.to_hlo_sharding(len(shape)).shard_shape(shape)

    def __repr__(self) -> str:
        return f"NamedSharding({self.mesh!r}, {self.spec!r})"


def _axes(part: Any) -> tuple[str, ...]:
    if part is None:
        return ()
    return tuple(part) if isinstance(part, (tuple, list)) else (part,)


# ----------------------------------------------------------------------------- arrays
class Shard:
    """One device's piece of a :class:`ShardedArray`: ``device``, ``index`` (the slices of
    the global array it holds) and ``data`` (that piece, without padding)."""

    def __init__(self, device: Any, index: tuple[slice, ...], data: np.ndarray) -> None:
        self.device, self.index, self.data = device, index, data

    def __repr__(self) -> str:
        return f"Shard(device={self.device!r}, index={self.index!r})"


class ShardedArray:
    """A global array held as per-partition shards (padded to ``ceil(dim / tiles)`` as the
    partitioned program takes them); ``sharding`` says how, ``addressable_shards`` gives the
    pieces this process holds (in a multi-process run the others' pieces are None), and
    ``np.asarray`` puts it back together when they are all here."""

    def __init__(self, pieces: Sequence[np.ndarray], hlo_sharding: HloSharding,
                 shape: Sequence[int], sharding: NamedSharding | None = None) -> None:
        self.pieces = list(pieces)
        self.hlo_sharding = hlo_sharding
        self.shape = tuple(int(d) for d in shape)
        self.named_sharding = sharding
        #: the NamedSharding it was given, else the HloSharding the program produced
        self.sharding: NamedSharding | HloSharding = sharding if sharding is not None \
            else hlo_sharding
        self.dtype = next(np.asarray(p).dtype for p in self.pieces if p is not None)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _index(self, p: int) -> tuple[slice, ...]:
        s = self.hlo_sharding
        if s.kind != "tiled":
            return tuple(slice(0, d) for d in self.shape)
        local = s.shard_shape(self.shape)
        return tuple(slice(min(i * c, d), min((i + 1) * c, d))
                     for i, c, d in zip(s.tile_index(p), local, self.shape))

    @property
    def addressable_shards(self) -> list[Shard]:
        devices = (list(self.named_sharding.mesh.devices.reshape(-1))
                   if self.named_sharding is not None else list(range(len(self.pieces))))
        out = []
        for p, piece in enumerate(self.pieces):
            if piece is None:                       # held by another process
                continue
            index = self._index(p)
            data = piece[tuple(slice(0, sl.stop - sl.start) for sl in index)]
            out.append(Shard(devices[p], index, data))
        return out

    @property
    def nbytes_held(self) -> int:
        """Bytes of the (padded) pieces this process holds."""
        return sum(np.asarray(p).nbytes for p in self.pieces if p is not None)

    def numpy(self) -> np.ndarray:
        if self.hlo_sharding.kind == "tiled" and any(p is None for p in self.pieces):
            raise InvalidArgumentError(
                f"{self!r}: some shards are held by other processes; read the "
                "addressable_shards, or gather it inside the program")
        pieces = self.pieces
        if self.hlo_sharding.kind != "tiled":
            pieces = [next(p for p in self.pieces if p is not None)]
        return unshard(pieces, self.hlo_sharding, self.shape)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a.astype(dtype) if dtype is not None else a

    def __repr__(self) -> str:
        return f"ShardedArray(shape={self.shape}, dtype={self.dtype}, {self.hlo_sharding})"


def device_put(x: Any, sharding: Any = None) -> Any:
    """``x`` cut into the shards a :class:`NamedSharding` gives each device of its mesh;
    in a multi-process run only this process's devices' shards are kept (the mesh's
    partitions are numbered over the processes' devices in order, process 0's first).

    With a GPU device (``xlapy.devices("gpu")[0]``) the arrays of the pytree ``x`` are
    copied to it and stay there (device Arrays); with a CPU device (or None) they come
    back to the host."""
    from .resident import put_on_device, is_single_device
    if sharding is None or is_single_device(sharding):
        return put_on_device(x, sharding)
    if not isinstance(sharding, NamedSharding):
        raise InvalidArgumentError(f"device_put takes a NamedSharding, got "
                                   f"{type(sharding).__name__}{_where()}")
    a = np.asarray(x.numpy() if isinstance(x, Array) else x)
    hs = sharding.to_hlo_sharding(a.ndim)
    n = sharding.mesh.size
    return ShardedArray(shard_array(a, hs, n, _this_process_partitions(n)), hs, a.shape,
                        sharding)


def make_array_from_callback(shape: Sequence[int], sharding: NamedSharding,
                             data_callback: Callable[[tuple[slice, ...]], Any]) -> ShardedArray:
    """A :class:`ShardedArray` of global ``shape`` whose shards this process holds are
    ``data_callback(index)`` (``index``: the slices of the global array the shard covers),
    as ``jax.make_array_from_callback``: the global array is never built."""
    if not isinstance(sharding, NamedSharding):
        raise InvalidArgumentError(f"make_array_from_callback takes a NamedSharding, got "
                                   f"{type(sharding).__name__}{_where()}")
    shape = tuple(int(d) for d in shape)
    hs = sharding.to_hlo_sharding(len(shape))
    n = sharding.mesh.size
    mine = _this_process_partitions(n)
    local = hs.shard_shape(shape) if hs.kind == "tiled" else shape
    pieces: list[Any] = []
    for dev in range(n):
        if mine is not None and dev not in mine:
            pieces.append(None)
            continue
        idx = hs.tile_index(dev) if hs.kind == "tiled" else (0,) * len(shape)
        index = tuple(slice(min(i * c, d), min((i + 1) * c, d))
                      for i, c, d in zip(idx, local, shape))
        data = np.asarray(data_callback(index))
        want = tuple(sl.stop - sl.start for sl in index)
        if data.shape != want:
            raise ShapeError(f"make_array_from_callback: the callback gave shape {data.shape} "
                             f"for index {index}, which needs {want}{_where()}")
        piece = np.zeros(local, data.dtype)
        piece[tuple(slice(0, k) for k in want)] = data
        pieces.append(piece)
    return ShardedArray(pieces, hs, shape, sharding)


def _this_process_partitions(n: int) -> list[int] | None:
    """The partitions of an ``n``-device mesh this process runs (None: all of them)."""
    from ..client.devices import PROCESS, process_device_ids
    return process_device_ids(n, lambda local: (
        f"the mesh has {n} devices, but this run has {PROCESS.count} processes x {local} "
        f"device(s) = {PROCESS.count * local}: make the mesh of all the run's devices"
        f"{_where()}"))


# ----------------------------------------------------------------------------- constraint
sharding_constraint_p = primitive("sharding_constraint")


@sharding_constraint_p.def_lowering
def _sc_lower(ctx: LoweringContext, x: Any, *, sharding: HloSharding) -> Any:
    return ctx.b.custom_call("Sharding", [x], x.shape, sharding=sharding)


sharding_constraint_p.def_vjp(lambda g, ans, x, **p: (bind(sharding_constraint_p, g, **p),))


def insert_unsplit(sharding: HloSharding, d: int) -> HloSharding:
    """``sharding`` with a new unsplit dimension at ``d`` (a tile of 1: a vmapped axis)."""
    if not sharding.is_tiled:
        return sharding
    return HloSharding.tile(np.expand_dims(sharding.device_array(), d), sharding.subgroups)


@sharding_constraint_p.def_batching
def _sc_batching(vals: Any, dims: Any, *, sharding: HloSharding) -> tuple:
    """The batch axis is left unsplit, as JAX's rule does."""
    (x,), (d,) = vals, dims
    return bind(sharding_constraint_p, x, sharding=insert_unsplit(sharding, d)), d


def with_sharding_constraint(x: Any, sharding: NamedSharding) -> Array:
    """``x``, constrained to ``sharding`` inside a sharded ``jit`` (unchanged elsewhere)."""
    from .core import current_trace
    a = to_array(x)
    if not isinstance(sharding, NamedSharding):
        raise InvalidArgumentError(f"with_sharding_constraint takes a NamedSharding, got "
                                   f"{type(sharding).__name__}{_where()}")
    hs = sharding.to_hlo_sharding(len(a.shape))
    if current_trace() is None:
        return a
    from .batching import AXIS_ENV
    manual = [f.name for f in AXIS_ENV.items if f.kind == "shard_map"]
    if manual:
        raise InvalidArgumentError(
            f"with_sharding_constraint of a {a.type_text()} inside shard_map, where every "
            f"mesh axis ({', '.join(map(repr, manual))}) is manual: the value is already one "
            f"device's block; constrain it outside the shard_map{_where()}")
    return bind(sharding_constraint_p, a, sharding=hs)


# ----------------------------------------------------------------------------- sharded jit
def _local_ids(module: Any) -> list[int]:
    from ..client.multi_device import local_participants
    return local_participants(module)


def run_partitioned(part: PartitionedModule, args: Sequence[Any], backend: str,
                    given: Sequence[Any] | None = None) -> list[list[np.ndarray | None]]:
    """Run ``part`` on this process's partitions: each argument is a :class:`ShardedArray`
    already sharded as the program takes it (passed shard by shard) or a global value (cut
    up); returns, per output, each partition's padded piece (None for partitions another
    process runs). ``given``: the user's sharding of each argument (None: not given), for
    the error when a ShardedArray disagrees with it."""
    from ..client.run import run_hlo
    n = part.num_partitions
    ids = _local_ids(part.module)
    per_device: list[list[np.ndarray]] = [[] for _ in ids]
    for k, (a, s) in enumerate(zip(args, part.in_shardings)):
        fits = isinstance(a, ShardedArray) and a.hlo_sharding == s and len(a.pieces) == n
        if isinstance(a, ShardedArray) and not fits and given is not None \
                and given[k] is not None:
            raise InvalidArgumentError(
                f"jit: argument {k} is a ShardedArray sharded {a.hlo_sharding} on "
                f"{len(a.pieces)} devices, but in_shardings asks for {s} on {n}; "
                f"device_put it with that sharding first{_where()}")
        if fits:
            pieces = a.pieces
        else:
            g = np.asarray(a.numpy() if isinstance(a, (Array, ShardedArray)) else a)
            pieces = shard_array(g, s, n)
        for slot, dev in enumerate(ids):
            per_device[slot].append(pieces[dev])
    outs = run_hlo(part.module, per_device, backend=backend)
    result: list[list[np.ndarray | None]] = [[None] * n for _ in part.out_shardings]
    for slot, dev in enumerate(ids):
        for k, o in enumerate(outs[slot]):
            result[k][dev] = o
    return result


class SpmdExecutable:
    """What ``jit`` runs for a trace that contains a ``shard_map`` (or is otherwise an SPMD
    program of ``n`` partitions): global arguments in, global results out; partitioned
    on the first call."""

    def __init__(self, module: Any, n: int, backend: str) -> None:
        self.module, self.n, self.backend = module, n, backend
        self._part: PartitionedModule | None = None

    def execute(self, values: Sequence[Any], owned: Sequence[int] = ()) -> Any:
        if self._part is None:
            self._part = spmd_partition(self.module, self.n)
        part = self._part
        outs = run_partitioned(part, values, self.backend)
        dims = part.propagated.entry.root.shape
        shapes = dims.tuple_shapes if dims.is_tuple else [dims]
        res = [ShardedArray(pieces, s, shape.dims).numpy()
               for pieces, s, shape in zip(outs, part.out_shardings, shapes)]
        return tuple(res) if dims.is_tuple else res[0]


def spmd_backend(n: int, backend: str | None) -> str:
    """The backend an SPMD program of ``n`` partitions runs on. Named none: the default
    backend when this run has a device per partition, else the interpreter (any number of
    partitions), as ``jit(in_shardings=...)`` does; a named backend must have them."""
    from ..client.devices import local_device_count
    from .core import default_backend
    have = local_device_count() * _process_count()
    if backend is None:
        return default_backend() if n <= have else "interpreter"
    if backend != "interpreter" and n > have:
        raise InvalidArgumentError(
            f"jit: the program runs on a mesh of {n} devices, but this process has "
            f"{local_device_count()} {backend} device(s) (XLA_FLAGS="
            f"--xla_force_host_platform_device_count={n}){_where()}")
    return backend


def _spmd_compile(module: Any, n: int, backend: str | None) -> SpmdExecutable:
    """The executable of an SPMD trace (see :func:`spmd_backend` for the backend)."""
    return SpmdExecutable(module, n, spmd_backend(n, backend))


class ShardedFunction:
    """``jit(fn, in_shardings=..., out_shardings=...)``: see the module docstring."""

    def __init__(self, fn: Callable[..., Any], in_shardings: Any, out_shardings: Any,
                 backend: str | None, **jit_kw: Any) -> None:
        self._inner = JitFunction(fn, backend=backend, **jit_kw)
        self._in, self._out = in_shardings, out_shardings
        self._backend = backend or "interpreter"
        self._cache: dict[int, tuple[Any, PartitionedModule]] = {}

    def _mesh_size(self, args: Sequence[Any]) -> int:
        shardings = [s for s in _leaves(self._in) + _leaves(self._out)
                     if isinstance(s, NamedSharding)]
        shardings += [a.named_sharding for a in args if isinstance(a, ShardedArray)
                      and a.named_sharding is not None]
        sizes = {s.mesh.size for s in shardings}
        if len(sizes) != 1:
            raise InvalidArgumentError(f"jit: in_shardings/out_shardings must use one mesh, "
                                       f"got sizes {sorted(sizes)}{_where()}")
        return sizes.pop()

    def lower(self, *args: Any) -> PartitionedModule:
        """Trace, annotate and partition for these arguments (cached per traced module)."""
        lowered = self._inner.lower(*[_placeholder(a) for a in args])
        key = id(lowered.hlo_module)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is lowered.hlo_module:
            return hit[1]
        module = lowered.hlo_module.clone()
        entry = module.entry
        params = entry.parameters
        ins = _per_arg(self._in, len(params), "in_shardings")
        leaves = _leaves(args)
        for i, (p, s) in enumerate(zip(params, ins)):
            if s is None and i < len(leaves) and isinstance(leaves[i], ShardedArray):
                p.attrs["sharding"] = leaves[i].hlo_sharding     # a committed argument
                continue
            if s is None:
                continue
            hs = s.to_hlo_sharding(len(p.shape.dims))
            for d, (n, t) in enumerate(zip(p.shape.dims, hs.data_tiles if hs.is_tiled else ())):
                if n % t:
                    raise InvalidArgumentError(
                        f"jit: argument {i} of shape {p.shape.to_text(False)}: {s.spec!r} "
                        f"splits dimension {d} ({n}) {t} ways, which does not divide it"
                        f"{_where()}")
            p.attrs["sharding"] = hs
        if self._out is not None:
            root = entry.root
            shapes = root.shape.tuple_shapes if root.shape.is_tuple else [root.shape]
            outs = _per_arg(self._out, len(shapes), "out_shardings")
            hs = [HloSharding.replicate() if o is None else o.to_hlo_sharding(len(t.dims))
                  for o, t in zip(outs, shapes)]
            root.attrs["sharding"] = HloSharding.tuple_of(hs) if root.shape.is_tuple else hs[0]
        n = self._mesh_size(args)
        inner = module.attributes.get("num_partitions", 1)
        if inner > 1 and inner != n:
            raise InvalidArgumentError(
                f"jit: in_shardings/out_shardings are over a mesh of {n} devices, but the "
                f"function's shard_map runs on {inner}: one program runs on one mesh"
                f"{_where()}")
        from ..client.devices import local_device_count
        if self._backend != "interpreter" and n > local_device_count() * _process_count():
            raise InvalidArgumentError(
                f"jit: the mesh has {n} devices, but this process has {local_device_count()} "
                f"{self._backend} device(s) (XLA_FLAGS=--xla_force_host_platform_device_count="
                f"{n}){_where()}")
        part = spmd_partition(module, n)
        self._cache[key] = (lowered.hlo_module, part)
        return part

    def __call__(self, *args: Any) -> Any:
        """Run on the mesh; a :class:`ShardedArray` argument already sharded as the program
        takes it is passed shard by shard, anything else is cut up first. The results are
        :class:`ShardedArray`s in the outputs' shardings (in the function's result
        structure)."""
        leaves = _leaves(args)
        part = self.lower(*args)
        given = _per_arg(self._in, len(leaves), "in_shardings")
        outs = run_partitioned(part, leaves, self._backend, given)
        root = part.propagated.entry.root.shape
        shapes = root.tuple_shapes if root.is_tuple else [root]
        named = _per_arg(self._out, len(shapes), "out_shardings")
        arrays = [ShardedArray(pieces, s, shape.dims,
                               o if isinstance(o, NamedSharding) else None)
                  for pieces, s, shape, o in zip(outs, part.out_shardings, shapes, named)]
        entry, _ = self._inner._lookup(tuple(_placeholder(a) for a in args), {}, count=False)
        return tree_unflatten(entry.out_tree, arrays)


def _placeholder(a: Any) -> Any:
    """What tracing needs of a :class:`ShardedArray` (its shape and dtype), without
    assembling it (another process may hold some of its shards)."""
    if isinstance(a, ShardedArray):
        return np.broadcast_to(np.zeros((), a.dtype), a.shape)
    return a


def _process_count() -> int:
    from ..client.devices import process_count
    return process_count()


SHARDED_JIT[:] = [ShardedFunction]
SPMD_COMPILE[:] = [_spmd_compile]


def _leaves(x: Any) -> list[Any]:
    """Leaves of nested lists/tuples (None kept as a leaf)."""
    if isinstance(x, (list, tuple)) and not isinstance(x, PartitionSpec):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _per_arg(spec: Any, n: int, what: str) -> list[Any]:
    if spec is None or isinstance(spec, NamedSharding):
        return [spec] * n
    items = _leaves(spec)
    if len(items) != n:
        raise InvalidArgumentError(f"jit: {what} has {len(items)} entries for {n} "
                                   f"argument(s){_where()}")
    return items


__all__ = ["Mesh", "PartitionSpec", "NamedSharding", "with_sharding_constraint",
           "make_array_from_callback", "SpmdExecutable", "run_partitioned", "spmd_backend",
           "ShardedFunction", "ShardedArray", "Shard", "device_put", "sharding_constraint_p"]
