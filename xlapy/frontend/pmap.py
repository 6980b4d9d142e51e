"""``pmap``: one program on N devices, SPMD (JAX's ``pmap``).

``pmap(fn, axis_name="i")(xs)`` maps ``fn`` over the leading axis of ``xs`` (``in_axes``), one
slice per device. ``fn`` is traced once, on one device's shapes, with ``axis_name`` bound to
the N devices, so ``lax.psum(x, "i")`` and the other collectives of
``primitives_collective`` lower to HLO collectives over ``replica_groups={{0..N-1}}``.
The module is compiled once with ``replica_count=N`` (cached per argument signature) and
run by the client's multi-device runner (``client/multi_device.py``): each device its own
instance on its own thread, the collectives through the in-process communicator, or MPI
between processes after ``xlapy.distributed.initialize()`` (each process then maps over its
local devices, and the axis spans every device of the run, as in JAX). Results come back
stacked along ``out_axes``.

Called inside a trace -- ``jit(f)`` where ``f`` calls a ``pmap``, or one ``pmap`` inside
another (both allowed in JAX) -- the mapped function runs as ``vmap`` with the same
``axis_name`` over the same axis, in the enclosing program: the same values (the named-axis
collectives have batching rules), on the enclosing program's device rather than on devices
of its own (``devices`` is then not used). A nested pmap's collectives over the outer axis
name stay the outer program's HLO collectives. Across processes this is refused: the axis
would cover only this process's slices.

CPU devices come from ``XLA_FLAGS=--xla_force_host_platform_device_count=N``; the
interpreter runs any number of participants. Under a tape (``grad`` of ``pmap``) the call is
one recorded node whose gradient is another ``pmap``: the vjp of ``fn`` on every device,
cotangents of unmapped inputs summed over the devices.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import numpy as np

from ..client import get_backend
from ..client.devices import PROCESS, local_device_count, local_devices
from ..client.multi_device import run_devices
from ..client.run import prepare_argument
from ..errors import InvalidArgumentError, ShapeError
from ..hlo.builder import as_element_type, build_module
from ..hlo.shape import Shape
from . import core, lax
from .batching import leaf_axes, normalize_axis, bound_axis, moveaxis
from .core import Array, default_backend, to_array
from .pytree import tree_flatten, tree_unflatten
from .tracing import Trace, trace_context

log = logging.getLogger("xlapy.pmap")


class _Compiled:
    __slots__ = ("module", "executable", "out_tree", "out_weak", "backward")

    def __init__(self, module: Any, executable: Any, out_tree: Any, out_weak: list[bool]):
        self.module, self.executable = module, executable
        self.out_tree, self.out_weak = out_tree, out_weak
        self.backward: Any = None


class PmapFunction:
    """A function mapped over devices (see the module docstring); call it like ``fn``."""

    def __init__(self, fun: Callable[..., Any], axis_name: Any, in_axes: Any, out_axes: Any,
                 devices: Sequence[Any] | None, backend: str | None) -> None:
        self.fun = fun
        self.axis_name = axis_name
        self.in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        self.out_axes = out_axes
        self.devices = None if devices is None else list(devices)
        self.backend = backend
        self.__name__ = getattr(fun, "__name__", "fn")
        self.__doc__ = getattr(fun, "__doc__", None)
        self._cache: dict[Any, _Compiled] = {}

    def __call__(self, *args: Any) -> Any:
        if core._TRACE_STACK.items:
            return self._call_traced(args)
        if isinstance(self.in_axes, tuple) and len(self.in_axes) != len(args):
            raise InvalidArgumentError(f"pmap: in_axes has {len(self.in_axes)} entries for "
                                       f"{len(args)} arguments")
        axes = leaf_axes(self.in_axes, args, "in_axes")
        leaves, tree = tree_flatten(args)
        arrays = [to_array(x) for x in leaves]
        sizes = set()
        for k, (x, a) in enumerate(zip(arrays, axes)):
            if a is not None:
                axes[k] = normalize_axis(a, x.ndim, "in_axes")
                sizes.add(x.shape[axes[k]])
        if len(sizes) != 1:
            raise ShapeError(f"pmap: the mapped axes must have one size, got {sorted(sizes)}"
                             if sizes else "pmap: at least one argument must be mapped")
        n_local = sizes.pop()
        self._check_devices(n_local)
        n = n_local * PROCESS.count
        key = (tree, tuple((x.shape, x.dtype, x.weak_type, a) for x, a in zip(arrays, axes)))
        entry = self._cache.get(key)
        if entry is None:
            entry = self._cache[key] = self._compile(arrays, axes, tree, n)
        outs = self._run(entry, arrays, axes, n_local)
        if core._TAPES.items:
            from .autodiff import ClosureNode, tracked_by_any
            if tracked_by_any(arrays):
                core.record(ClosureNode(f"pmap({self.__name__})",
                                        self._vjp_rule(entry, tree, axes, n_local)),
                            arrays, {}, outs)
        return tree_unflatten(entry.out_tree, outs)

    def _call_traced(self, args: tuple) -> Any:
        """Inside ``jit``, ``vmap`` or another ``pmap`` (module docstring): ``vmap`` with this
        axis name over the same axis, in the enclosing program; results as the top-level
        call gives them (``out_axes`` None: device 0's)."""
        if PROCESS.count > 1:
            raise InvalidArgumentError(
                f"pmap({self.__name__}) inside jit, vmap or pmap in a run of {PROCESS.count} "
                "processes: its axis would cover this process's slices only; call it at the "
                "top level")
        if isinstance(self.in_axes, tuple) and len(self.in_axes) != len(args):
            raise InvalidArgumentError(f"pmap: in_axes has {len(self.in_axes)} entries for "
                                       f"{len(args)} arguments")
        from .batching import vmap
        out = vmap(self.fun, in_axes=self.in_axes, out_axes=0, axis_name=self.axis_name)(*args)
        leaves, tree = tree_flatten(out)
        axes = leaf_axes(self.out_axes, out, "out_axes")
        moved = [to_array(x)[0] if a is None else
                 moveaxis(to_array(x), 0, normalize_axis(a, to_array(x).ndim, "out_axes"))
                 for x, a in zip(leaves, axes)]
        return tree_unflatten(tree, moved)

    # ----- devices, tracing, running
    def _check_devices(self, n: int) -> None:
        if self.devices is not None:
            wanted = local_devices()[:n]
            if len(self.devices) != n or [getattr(d, "id", d) for d in self.devices] != \
                    [d.id for d in wanted]:
                raise InvalidArgumentError(
                    f"pmap: devices must be this process's first {n} devices in order "
                    f"({wanted}), got {self.devices}")
        if PROCESS.count > 1 and n != local_device_count():
            raise ShapeError(f"pmap: in a run of {PROCESS.count} processes each maps over its "
                             f"{local_device_count()} local devices, got a mapped axis of {n}")

    def _backend(self) -> str:
        return self.backend or default_backend()

    def _compile(self, arrays: list[Array], axes: list[int | None], tree: Any,
                 n: int) -> _Compiled:
        trace = Trace("main", f"pmap({self.__name__})")
        with bound_axis(self.axis_name, n, "pmap"), trace_context(trace):
            params = []
            for k, (x, a) in enumerate(zip(arrays, axes)):
                shape = x.shape if a is None else x.shape[:a] + x.shape[a + 1:]
                params.append(trace.new_param(Shape.array(as_element_type(x.dtype), shape),
                                              name=f"Arg_{k}", weak_type=x.weak_type))
            out = self.fun(*tree_unflatten(tree, params))
            out_leaves, out_tree = tree_flatten(out)
            outs = [to_array(o) for o in out_leaves]
            b = trace.builder
            with trace.tag("tuple"):
                instrs = [trace.instr_for(o) for o in outs]
                root = b.tuple(instrs)
        module = build_module(b.build(root), "pmap_" + "".join(
            c if c.isalnum() or c in "_.-" else "_" for c in self.__name__))
        module.attributes["replica_count"] = n
        executable = get_backend(self._backend()).compile(module)
        log.debug("pmap(%s): compiled for %d devices", self.__name__, n)
        return _Compiled(module, executable, out_tree, [o.weak_type for o in outs])

    def _run(self, entry: _Compiled, arrays: list[Array], axes: list[int | None],
             n_local: int) -> list[Array]:
        params = entry.module.entry.parameters
        values = [np.asarray(x._value) for x in arrays]
        per_device = [[v if a is None else np.take(v, d, axis=a) for v, a in zip(values, axes)]
                      for d in range(n_local)]

        def prepare(device_args: Sequence[Any], device: int) -> list:
            return [prepare_argument(v, p.shape, f"pmap({self.__name__}): device {device}: "
                                     f"argument {i}") for i, (v, p) in
                    enumerate(zip(device_args, params))]
        results = run_devices(entry.module, entry.executable, per_device, prepare,
                              backend=get_backend(self._backend()).name)
        per_out = list(zip(*[r if isinstance(r, tuple) else (r,) for r in results]))
        out_axes = self._out_axes(entry)
        outs = []
        for vals, weak, a in zip(per_out, entry.out_weak, out_axes):
            if a is None:               # the same on every device (e.g. a psum): device 0's
                outs.append(Array(np.asarray(vals[0]), weak_type=weak))
                continue
            stacked = np.stack([np.asarray(v) for v in vals])
            stacked = np.moveaxis(stacked, 0, normalize_axis(a, stacked.ndim, "out_axes"))
            outs.append(Array(stacked, weak_type=weak))
        return outs

    def _out_axes(self, entry: _Compiled) -> list[Any]:
        return leaf_axes(self.out_axes, tree_unflatten(
            entry.out_tree, [0] * entry.out_tree.num_leaves), "out_axes")

    # ----- gradients
    def _vjp_rule(self, entry: _Compiled, tree: Any, axes: list[int | None],
                  n_local: int) -> Callable[..., Any]:
        out_axes = self._out_axes(entry)

        def rule(cts: list[Array], ans: list[Array], *xs: Array) -> tuple:
            if entry.backward is None:
                entry.backward = self._backward_pmap(entry, tree, axes, len(xs))
            # A result returned once (out_axes None) is device 0's: its cotangent goes
            # there, the other devices' copies get zeros.
            cts = [c if a is not None else lax.concatenate(
                [lax.reshape(c, (1,) + c.shape), lax.full_like(c, 0, shape=(n_local - 1,) +
                                                               c.shape)], 0)
                   for c, a in zip(cts, out_axes)]
            grads = entry.backward(*xs, *cts)
            out = []
            for g, a in zip(grads, axes):
                out.append(lax.reduce_sum(g, (0,)) if a is None else moveaxis(g, 0, a))
            return tuple(out)
        return rule

    def _backward_pmap(self, entry: _Compiled, tree: Any, axes: list[int | None],
                       n_in: int) -> "PmapFunction":
        from .autodiff import vjp
        fun = self.fun
        out_axes = [0 if a is None else a for a in self._out_axes(entry)]

        def backward(*flat: Array) -> list[Array]:
            xs, cts = list(flat[:n_in]), list(flat[n_in:])

            def flat_fun(*leaves: Array) -> list[Array]:
                return [to_array(o) for o in tree_flatten(fun(*tree_unflatten(tree, leaves)))[0]]
            _, vjp_fn = vjp(flat_fun, *xs)
            return list(vjp_fn(cts))
        backward.__name__ = f"vjp_{self.__name__}"
        return PmapFunction(backward, self.axis_name, tuple(axes) + tuple(out_axes), 0,
                            self.devices, self.backend)


def pmap(fun: Callable[..., Any], axis_name: Any = None, *, in_axes: Any = 0,
         out_axes: Any = 0, devices: Sequence[Any] | None = None,
         backend: str | None = None) -> PmapFunction:
    """Map ``fun`` over devices (``jax.pmap``): the mapped axis of the arguments (``in_axes``,
    as in ``vmap``; None broadcasts an argument to every device) has one entry per device;
    ``out_axes`` stacks each result along its axis (None: a result the devices agree on,
    such as a ``psum``, returned once);
    ``axis_name`` names the device axis for ``lax.psum`` and the other collectives. The
    function is traced once and compiled as one SPMD module with ``replica_count`` = the
    number of devices (``devices``: this process's first N devices, the default)."""
    if not callable(fun):
        raise InvalidArgumentError(f"pmap: expected a function, got {type(fun).__name__}")
    return PmapFunction(fun, axis_name, in_axes, out_axes, devices, backend)


__all__ = ["pmap", "PmapFunction"]
