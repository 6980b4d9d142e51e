"""``shard_map``: per-device code over a mesh (JAX's ``jax.shard_map``).

``shard_map(fn, mesh, in_specs, out_specs)(*args)`` runs ``fn`` once per device of ``mesh`` on
that device's block of each argument (the block ``in_specs`` gives it: a ``PartitionSpec``
per argument, a pytree prefix of the arguments) and assembles the global results from the
per-device results by ``out_specs``. Inside ``fn`` the mesh axes are named axes, so
``lax.psum``/``pmean``/``all_gather``/``psum_scatter``/``ppermute``/``all_to_all``/
``axis_index`` over them are collectives among the devices of those axes.

Lowering is XLA's (what JAX emits without Shardy): each argument goes through a
``Sharding`` custom-call carrying its tiled sharding and a ``SPMDFullToShardShape``
custom-call (``sharding={manual}``) to the block shape; ``fn`` is traced inline on the
blocks; each result goes through a ``Sharding`` custom-call ``{manual}`` and a
``SPMDShardToFullShape`` custom-call carrying the output sharding. Propagation marks the
region ``{manual}`` and the partitioner copies it as it is, so the region composes with
automatically sharded code around it. A ``jit`` whose trace contains a ``shard_map`` runs as
an SPMD program on the mesh's devices (``sharding.SpmdExecutable``); called outside a trace,
``shard_map`` is such a ``jit`` and returns ``ShardedArray``s.

``check_rep`` (the default) checks, as JAX does, that an output whose spec leaves out a mesh
axis is the same on every device along it: the body's primitives are recorded and a value
varies along an axis when an input is split over it, ``axis_index`` reads it, or
``ppermute``/``psum_scatter``/``all_to_all`` over it produced it; ``psum``/``pmax``/``pmin``
over an axis make it invariant along it (``all_gather`` does not, as in JAX's
varying-axes check). Anything else varies where its
operands do (so a collective inside a ``cond``/``scan`` body counts as not reducing).

Under ``vmap`` (inside a ``jit``) the batch axis becomes a whole, unsplit dimension of
every block, as JAX's batching rule of ``shard_map`` does.

Gradients follow JAX's transpose of ``shard_map`` without the replication rewrite: the
backward pass is another ``shard_map`` running the body's vjp; a result's cotangent is
divided by the size of the mesh axes its spec leaves out, and an argument's cotangent is
``psum``-ed over the axes its spec leaves out (``psum`` transposes to ``psum``). The backward
body replays the recorded forward body; closed-over values a tape tracks (Variables the body
reads included) are operands of the recorded call with spec ``P()``, so their gradients flow.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..hlo.shape import Shape
from ..hlo.sharding import HloSharding
from . import core, lax
from .autodiff import ClosureNode, paused_recording, tracked_by_any, vjp
from .batching import AXIS_ENV, AxisFrame
from .variables import _root
from .core import Array, LoweringContext, Primitive, bind, to_array
from .primitives_collective import psum
from .program import Program, Recorder, replay
from .pytree import tree_flatten, tree_unflatten
from .sharding import Mesh, NamedSharding, PartitionSpec, _axes, _where, insert_unsplit
from .source_info import user_location

log = logging.getLogger("xlapy.spmd")

# The region's entry and exit (internal markers, never seen by tapes: the shard_map call
# is one recorded node).
enter_p = Primitive("shard_map_enter")
exit_p = Primitive("shard_map_exit")


@enter_p.def_lowering
def _enter_lower(ctx: LoweringContext, x: Any, *, sharding: HloSharding,
                 local: tuple[int, ...]) -> Any:
    full = ctx.b.custom_call("Sharding", [x], x.shape, sharding=sharding)
    return ctx.b.custom_call("SPMDFullToShardShape", [full],
                             Shape.array(x.shape.element_type, local),
                             sharding=HloSharding.manual())


@exit_p.def_lowering
def _exit_lower(ctx: LoweringContext, x: Any, *, sharding: HloSharding,
                full: tuple[int, ...]) -> Any:
    inner = ctx.b.custom_call("Sharding", [x], x.shape, sharding=HloSharding.manual())
    return ctx.b.custom_call("SPMDShardToFullShape", [inner],
                             Shape.array(x.shape.element_type, full), sharding=sharding)


def _batching(prim: Primitive, dims_param: str) -> Callable[..., tuple]:
    """Under ``vmap`` the batch axis is a whole (unsplit) dimension of every block: the
    sharding gets a tile of 1 there, the shape parameter ``dims_param`` the batch size."""
    def rule(vals: Any, dims: Any, *, sharding: HloSharding, **shape: tuple) -> tuple:
        (x,), (d,) = vals, dims
        old = shape[dims_param]
        return bind(prim, x, sharding=insert_unsplit(sharding, d),
                    **{dims_param: old[:d] + (x.shape[d],) + old[d:]}), d
    return rule


enter_p.def_batching(_batching(enter_p, "local"))
exit_p.def_batching(_batching(exit_p, "full"))


# ----------------------------------------------------------------------- specs
def _spec_leaves(specs: Any, tree_value: Any, what: str) -> list[PartitionSpec]:
    """One spec per leaf of ``tree_value``: ``specs`` is a pytree prefix of it whose leaves
    are ``PartitionSpec``s (``None`` means ``P()``)."""
    if specs is None or isinstance(specs, PartitionSpec):
        n = len(tree_flatten(tree_value)[0])
        return [specs if specs is not None else PartitionSpec()] * n
    if isinstance(specs, (tuple, list)) and isinstance(tree_value, (tuple, list)):
        if len(specs) != len(tree_value):
            raise InvalidArgumentError(f"shard_map: {what} has {len(specs)} entries for "
                                       f"{len(tree_value)} values{_where()}")
        return [s for sp, v in zip(specs, tree_value) for s in _spec_leaves(sp, v, what)]
    if isinstance(specs, dict) and isinstance(tree_value, dict):
        if set(specs) != set(tree_value):
            raise InvalidArgumentError(f"shard_map: {what} has keys {sorted(specs)} for "
                                       f"keys {sorted(tree_value)}{_where()}")
        return [s for k in sorted(tree_value) for s in _spec_leaves(specs[k], tree_value[k],
                                                                      what)]
    raise InvalidArgumentError(f"shard_map: {what} must be a PartitionSpec or a pytree prefix "
                               f"of the values made of PartitionSpecs, got {specs!r}{_where()}")


def _block_shape(mesh: Mesh, spec: PartitionSpec, shape: Sequence[int], what: str) -> tuple:
    """The per-device block of a global ``shape`` under ``spec`` (every split must divide)."""
    if len(spec) > len(shape):
        raise InvalidArgumentError(f"shard_map: {what} of shape {tuple(shape)} has rank "
                                   f"{len(shape)}, but its spec {spec!r} has {len(spec)} "
                                   f"entries{_where()}")
    for a in sorted(_mentioned(spec) - set(mesh.axis_names)):
        raise InvalidArgumentError(f"shard_map: {what} of shape {tuple(shape)}: {spec!r} names "
                                   f"axis {a!r}, which {mesh!r} does not have{_where()}")
    NamedSharding(mesh, spec)                  # an axis used twice
    out = []
    for d, n in enumerate(shape):
        k = int(np.prod([mesh.shape[a] for a in _axes(spec[d])])) if d < len(spec) else 1
        if n % k:
            raise ShapeError(f"shard_map: {what} of shape {tuple(shape)}: {spec!r} splits "
                             f"dimension {d} ({n}) {k} ways, which does not divide it"
                             f"{_where()}")
        out.append(n // k)
    return tuple(out)


def _mentioned(spec: PartitionSpec) -> set[str]:
    return {a for part in spec for a in _axes(part)}


# ----------------------------------------------------------------------- check_rep
_REDUCING = {"psum", "pmax", "pmin"}
_VARYING = {"ppermute", "psum_scatter", "all_to_all", "axis_index"}


def varying_axes(program: Program, inputs: Sequence[set[str]]) -> list[set[str]]:
    """The mesh axes along which each output of ``program`` may differ between devices,
    given those of its inputs (see the module docstring)."""
    env: dict[int, set[str]] = {id(v): set(s) for v, s in zip(program.invars, inputs)}

    def of(v: Any) -> set[str]:
        return env.get(id(v), set())
    for e in program.eqns:
        here = set().union(*[of(v) for v in e.ins]) if e.ins else set()
        names = set(e.params.get("axis_name", ())) if isinstance(e.params, dict) else set()
        if e.prim.name in _REDUCING:
            here -= names
        elif e.prim.name in _VARYING:
            here |= names
        for v in e.outs:
            env[id(v)] = set(here)
    return [of(v) for v in program.outvars]


def _record(body: Callable[..., list[Array]], ins: Sequence[Array]
            ) -> tuple[Program, list[Array], list[tuple[Any, Array]]]:
    """``record_program`` that also returns the Variable reads of the body (variable,
    value read), which the enclosing tapes must then see."""
    rec = Recorder(ins)
    reads: list[tuple[Any, Array]] = []
    rec.on_variable_read = lambda var, value: reads.append((var, value))  # type: ignore
    saved = list(core._TAPES)
    core._TAPES[:] = [rec]
    try:
        outs = [to_array(o) for o in body(*ins)]
    finally:
        core._TAPES[:] = saved
    return rec.finish(outs), outs, reads


# ----------------------------------------------------------------------- the call
class ShardMapFunction:
    """``shard_map(fn, mesh, in_specs, out_specs)``: see the module docstring."""

    def __init__(self, fn: Callable[..., Any], mesh: Mesh, in_specs: Any, out_specs: Any,
                 check_rep: bool, backend: str | None = None) -> None:
        if not callable(fn):
            raise InvalidArgumentError(f"shard_map: expected a function, got "
                                       f"{type(fn).__name__}{_where()}")
        if not isinstance(mesh, Mesh):
            raise InvalidArgumentError(f"shard_map: mesh must be an xlapy.sharding.Mesh, got "
                                       f"{type(mesh).__name__}{_where()}")
        self.fn, self.mesh = fn, mesh
        self.in_specs, self.out_specs, self.check_rep = in_specs, out_specs, check_rep
        self.backend = backend
        self.__name__ = getattr(fn, "__name__", "fn")
        self.__doc__ = getattr(fn, "__doc__", None)
        self._eager: dict[Any, Any] = {}

    def __call__(self, *args: Any) -> Any:
        trace = core.current_trace()
        if trace is None:
            return self._top_level(args)
        if _root(trace) is None:
            raise InvalidArgumentError(
                f"shard_map({self.__name__}) under an eager vmap: the mapped program must be "
                f"compiled; wrap the vmap in xlapy.jit{_where()}")
        return self._traced(args)

    # ----- inside a trace: the region
    def _traced(self, args: tuple) -> Any:
        if any(f.kind == "shard_map" for f in AXIS_ENV.items):
            raise InvalidArgumentError(f"shard_map({self.__name__}) inside another shard_map "
                                       f"is not supported{_where()}")
        leaves, tree = tree_flatten(args)
        xs = [to_array(x) for x in leaves]
        specs = _spec_leaves(self.in_specs, args, "in_specs")
        blocks = [_block_shape(self.mesh, s, x.shape, f"argument {k}")
                  for k, (s, x) in enumerate(zip(specs, xs))]
        out_tree: list[Any] = []

        def body(*locals_: Array) -> list[Array]:
            out = self.fn(*tree_unflatten(tree, list(locals_)))
            flat, t = tree_flatten(out)
            out_tree.append((t, out))
            return flat

        log.debug("shard_map(%s) over %r: blocks %s", self.__name__, self.mesh, blocks)
        with paused_recording():
            ins = [bind(enter_p, x, sharding=self._hlo(s, x.ndim), local=b)
                   for x, s, b in zip(xs, specs, blocks)]
            with self._axes_bound():
                program, outs, reads = _record(body, ins)
            t, out_value = out_tree[-1]
            out_specs = _spec_leaves(self.out_specs, out_value, "out_specs")
            if len(out_specs) != len(outs):
                raise InvalidArgumentError(f"shard_map: out_specs gives {len(out_specs)} specs "
                                           f"for {len(outs)} results{_where()}")
            if self.check_rep:
                self._check_rep(program, specs, out_specs)
            results = [bind(exit_p, o, sharding=self._hlo(s, o.ndim),
                            full=self._full_shape(s, o.shape))
                       for o, s in zip(outs, out_specs)]
        root = _root(core.current_trace())
        if getattr(root, "spmd_partitions", self.mesh.size) != self.mesh.size:
            raise InvalidArgumentError(
                f"shard_map({self.__name__}) over {self.mesh!r} ({self.mesh.size} devices) in "
                f"a program whose other shard_map runs on {root.spmd_partitions} devices: one "
                f"program runs on one mesh{_where()}")
        root.spmd_partitions = self.mesh.size
        for var, value in reads:                # the tapes see the body's Variable reads
            for tape in list(core._TAPES.items):
                tape.on_variable_read(var, value)
        # closed-over values a tape tracks (Variables read included) become operands of the
        # node, replicated (spec P()), so their gradients flow (as checkpoint does)
        captured = [v for v in program.constvars
                    if v.value is not None and tracked_by_any([v.value])]
        caps = [v.value for v in captured]
        if tracked_by_any(xs) or caps:
            for v in captured:
                v.const, v.value = False, None
            program.invars = program.invars + captured
            results = [core.new_ref(r, keep_gradient=False) for r in results]
            rule = self._vjp_rule(program, specs + [PartitionSpec()] * len(caps), out_specs)
            core.record(ClosureNode(f"shard_map({self.__name__})", rule), xs + caps, {},
                        results)
        return tree_unflatten(t, results)

    def _hlo(self, spec: PartitionSpec, ndim: int) -> HloSharding:
        return NamedSharding(self.mesh, spec).to_hlo_sharding(ndim)

    def _full_shape(self, spec: PartitionSpec, local: Sequence[int]) -> tuple[int, ...]:
        return tuple(n * (int(np.prod([self.mesh.shape[a] for a in _axes(spec[d])]))
                          if d < len(spec) else 1) for d, n in enumerate(local))

    @contextmanager
    def _axes_bound(self) -> Iterator[None]:
        """The mesh axes as named axes (kind ``shard_map``) for the block."""
        for name in self.mesh.axis_names:
            AXIS_ENV.append(AxisFrame(name, self.mesh.shape[name], "shard_map", self.mesh))
        try:
            yield
        finally:
            for _ in self.mesh.axis_names:
                AXIS_ENV.pop()

    def _check_rep(self, program: Program, in_specs: list[PartitionSpec],
                   out_specs: list[PartitionSpec]) -> None:
        vary = varying_axes(program, [_mentioned(s) for s in in_specs])
        for k, (v, s) in enumerate(zip(vary, out_specs)):
            bad = sorted(v - _mentioned(s))
            if bad:
                loc = user_location(2)
                raise InvalidArgumentError(
                    f"shard_map({self.__name__}): result {k} has out_specs {s!r}, which leaves "
                    f"out mesh axis {bad[0]!r}, but the result may differ along {bad[0]!r} "
                    f"(reduce it with lax.psum/all_gather over {bad[0]!r}, name the axis in "
                    f"out_specs, or pass check_rep=False)"
                    + (f" (at {loc.describe()})" if loc is not None else ""))

    # ----- gradients: the transpose is a shard_map of the body's vjp
    def _vjp_rule(self, program: Program, in_specs: list[PartitionSpec],
                  out_specs: list[PartitionSpec]) -> Callable[..., Any]:
        mesh, n_in = self.mesh, len(in_specs)

        def unmentioned(spec: PartitionSpec) -> tuple[str, ...]:
            return tuple(a for a in mesh.axis_names if a not in _mentioned(spec))

        def backward(*flat: Array) -> list[Array]:
            xs, cts = list(flat[:n_in]), list(flat[n_in:])
            scaled = []
            for c, s in zip(cts, out_specs):
                k = int(np.prod([mesh.shape[a] for a in unmentioned(s)]))
                scaled.append(lax.div(c, lax.full_like(c, k)) if k > 1 else c)

            def flat_fn(*leaves: Array) -> list[Array]:     # the body again, as recorded
                return replay(program, list(leaves))
            _, vjp_fn = vjp(flat_fn, *xs)
            grads = list(vjp_fn(scaled))
            out = []
            for g, x, s in zip(grads, xs, in_specs):
                g = lax.full_like(x, 0) if g is None else g
                axes = unmentioned(s)
                out.append(psum(g, axes) if axes else g)
            return out
        backward.__name__ = f"vjp_{self.__name__}"
        bwd = ShardMapFunction(backward, mesh, tuple(in_specs) + tuple(out_specs),
                               tuple(in_specs), check_rep=False, backend=self.backend)

        def rule(cts: list[Array], ans: list[Array], *xs: Array) -> tuple:
            return tuple(bwd(*xs, *cts))
        return rule

    # ----- outside a trace: a jit on the mesh
    def _top_level(self, args: tuple) -> Any:
        from .jit import JitFunction, jit
        leaves, tree = tree_flatten(args)
        if core._TAPES.items:           # differentiable: a jit (global Arrays out)
            fn = self._eager.get("jit")
            if fn is None:
                fn = self._eager["jit"] = JitFunction(self._traced_args, backend=self.backend)
            return fn(*args)
        specs = _spec_leaves(self.in_specs, args, "in_specs")
        for k, (s, x) in enumerate(zip(specs, leaves)):
            _block_shape(self.mesh, s, np.shape(x), f"argument {k}")
        key = (tree, tuple(specs))
        entry = self._eager.get(key)
        if entry is None:
            out_tree: list[Any] = []

            def flat_call(*xs: Any) -> list[Array]:
                out = self._traced(tree_unflatten(tree, list(xs)))
                flat, t = tree_flatten(out)
                out_tree.append((t, out))
                return flat
            flat_call.__name__ = self.__name__
            shardings = tuple(NamedSharding(self.mesh, s) for s in specs)
            entry = self._eager[key] = (jit(flat_call, in_shardings=shardings,
                                            backend=self.backend), out_tree)
        sharded, out_tree = entry
        outs = sharded(*[np.asarray(x) if isinstance(x, Array) else x for x in leaves])
        t, value = out_tree[-1]
        out_specs = _spec_leaves(self.out_specs, value, "out_specs")
        outs = outs if isinstance(outs, list) else [outs]
        for o, s in zip(outs, out_specs):
            o.named_sharding = o.sharding = NamedSharding(self.mesh, s)
        return tree_unflatten(t, outs)

    def _traced_args(self, *args: Any) -> Any:
        return self._traced(args)


def shard_map(f: Callable[..., Any] | None = None, mesh: Mesh | None = None,
              in_specs: Any = None, out_specs: Any = None, check_rep: bool = True,
              *, check_vma: bool | None = None, backend: str | None = None) -> Any:
    """Map ``f`` over the devices of ``mesh``, each device getting its block of the
    arguments (``jax.shard_map``; see :mod:`xlapy.frontend.shard_map`). ``in_specs`` and
    ``out_specs`` are ``PartitionSpec``s (pytree prefixes of the arguments and results); a
    mesh axis an out spec leaves out means the result is the same along it, checked when
    ``check_rep`` (``check_vma``, JAX's newer name). Usable as a decorator
    (``@partial(shard_map, mesh=..., in_specs=..., out_specs=...)``)."""
    if mesh is None or out_specs is None:
        raise InvalidArgumentError(f"shard_map: mesh and out_specs are required{_where()}")
    check = check_rep if check_vma is None else check_vma

    def wrap(fn: Callable[..., Any]) -> ShardMapFunction:
        return ShardMapFunction(fn, mesh, in_specs, out_specs, bool(check), backend)
    return wrap if f is None else wrap(f)


__all__ = ["shard_map", "ShardMapFunction", "varying_axes", "enter_p", "exit_p"]
