"""Batching: the ``vmap`` transformation (JAX's ``BatchTrace``).

``vmap(fn)`` runs ``fn`` once on *batch tracers*: a :class:`BatchTracer` stands for one
example of a batch and holds the whole batch, ``val`` (an Array of the level below:
concrete, traced in ``jit``, or a tracer of an enclosing ``vmap``), and which axis of
``val`` is the batch axis, ``bdim``. A value without a batch axis (*not mapped*) is a
plain Array of the level below. While ``vmap`` runs, its :class:`BatchTrace` is on the
trace stack, so :func:`~xlapy.frontend.core.bind` hands it every primitive; it unwraps
the operands and calls the primitive's batching rule *at the level below* (the batch
trace steps off the stack for the call):

    ``rule(vals, dims, **params) -> (outs, out_dims)``

where ``dims[i]`` is the batch axis of ``vals[i]`` or ``None``. A primitive whose operands
are all unmapped is bound unchanged at the level below (no rule), except the primitives
whose meaning depends on the batch (collectives over a named axis, control flow, whose
bodies may close over batched values): :data:`ALWAYS_RULE`. Rules live beside their
primitives in the family files; the helpers they share are here.

Levels and tapes. Nested ``vmap`` stacks batch traces; a tracer of an outer one is just
an unmapped value to an inner one. Autodiff tapes see each level once: tapes that were
active when ``vmap`` started (``grad`` of ``vmap``) record the primitives the rules bind
below; tapes made inside (``vmap`` of ``grad``) record the batched primitives, and are
paused while the rules run (``tapes_below``, read by ``bind``).

Control flow and captured values. Structured control flow traces its bodies into nested
traces whose parent may be a batch trace: a batch tracer used inside becomes a captured
operand (so gradients reach it), and the primitive's rule runs the Python bodies again
below with the batch trace pushed back on top (:meth:`BatchTrace.entered`).

Named axes: ``vmap(..., axis_name="i")`` makes ``lax.psum(x, "i")`` and the other
collectives reduce over the batch (their rules read :func:`applying`'s ``axis_name``).
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NamedTuple, Sequence

from ..errors import InvalidArgumentError, ShapeError
from ..threadlocal import PerThreadList
from . import core, lax
from .core import Array, Primitive, bind, to_array
from .pytree import _children, tree_flatten, tree_unflatten
from .source_info import located

log = logging.getLogger("xlapy.vmap")

not_mapped = None

#: Primitives whose rule runs even when no operand is batched.
ALWAYS_RULE: set[str] = set()

#: The primitives without a batching rule, and why none is needed.
NO_RULE: dict[str, str] = {
    "iota": "it has no operands, so it is never batched: vmap binds it unchanged below",
}

# The batch traces whose rules are running, innermost last (per thread).
_APPLYING = PerThreadList()


class AxisFrame(NamedTuple):
    """A named axis in scope: bound by ``vmap`` (``kind="vmap"``), ``pmap`` (``"pmap"``) or
    ``shard_map`` (``"shard_map"``, with the ``Mesh`` whose axis it is)."""
    name: Any
    size: int
    kind: str
    mesh: Any = None


# The named axes in scope, innermost last (per thread).
AXIS_ENV = PerThreadList()


@contextmanager
def bound_axis(name: Any, size: int, kind: str, mesh: Any = None) -> Iterator[None]:
    """Bind the axis ``name`` of ``size`` for the block (nothing when ``name`` is None)."""
    if name is None:
        yield
        return
    AXIS_ENV.append(AxisFrame(name, size, kind, mesh))
    try:
        yield
    finally:
        AXIS_ENV.pop()


def axis_frame(name: Any, what: str) -> AxisFrame:
    """The innermost binding of the axis ``name`` (an error naming ``what`` when unbound)."""
    for frame in reversed(AXIS_ENV.items):
        if frame.name == name:
            return frame
    bound = [f.name for f in AXIS_ENV.items]
    raise InvalidArgumentError(located(
        f"{what}: unbound axis name {name!r}" + (f" (axes in scope: {bound})" if bound else ""),
        "collectives need a named axis of an enclosing vmap(..., axis_name=...) or "
        "pmap(..., axis_name=...)"))


def applying() -> "BatchTrace":
    """The batch trace whose batching rule is running (rules of control flow and named-axis
    collectives need it)."""
    return _APPLYING.items[-1]


class BatchTracer(Array):
    """One example of a batch: ``val`` holds the batch along axis ``bdim``."""

    __slots__ = ("val", "bdim")

    def __init__(self, trace: "BatchTrace", val: Array, bdim: int) -> None:
        self._value = None
        self._instr = None
        self._trace = trace
        self.val = val
        self.bdim = bdim
        self.weak_type = val.weak_type
        self.shape = val.shape[:bdim] + val.shape[bdim + 1:]
        self.dtype = val.dtype

    def fresh_ref(self, weak_type: bool) -> "BatchTracer":
        """A new tracer object for the same batch (``core.new_ref``)."""
        t = BatchTracer(self._trace, self.val, self.bdim)
        t.weak_type = weak_type
        return t

    def _concrete(self, what: str) -> Any:
        raise InvalidArgumentError(located(
            f"{what} a value batched by vmap ({self.type_text()} per example): every example "
            "has its own value",
            "use xlapy.lax.cond / lax.select / xlapy.numpy.where for per-example choices"))

    def __repr__(self) -> str:
        return (f"BatchTracer<{self.type_text()}, batch axis {self.bdim} of "
                f"{self.val.type_text()}>")

    __str__ = __repr__


class BatchTrace:
    """The trace of one ``vmap`` (see the module docstring)."""

    capture_constants = True          # read by the nested traces of control flow

    def __init__(self, axis_size: int, axis_name: Any, parent: Any) -> None:
        self.axis_size = axis_size
        self.axis_name = axis_name
        self.parent = parent
        self.alive = True
        base = getattr(parent, "name_stack", None)
        self.name_stack = f"{base}/vmap" if base else "vmap"
        self.tapes_below = tuple(core._TAPES.items)

    # ----- values
    def wrap(self, val: Array, bdim: int | None) -> Array:
        return val if bdim is None else BatchTracer(self, val, bdim)

    def unwrap(self, x: Any) -> tuple[Any, int | None]:
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.bdim
        return x, None

    # ----- the stack
    @contextmanager
    def entered(self) -> Iterator["BatchTrace"]:
        """Run the block at this batch level (pushed on the trace stack). Batched bodies of
        control flow re-enter it, also after ``vmap`` returned (a gradient rule running a
        recorded body again): the trace is alive while it is entered. The tapes active
        on entry are the ones below this level for the block."""
        was_alive, self.alive = self.alive, True
        saved_tapes, self.tapes_below = self.tapes_below, tuple(core._TAPES.items)
        core._TRACE_STACK.append(self)
        try:
            yield self
        finally:
            popped = core._TRACE_STACK.pop()
            self.alive, self.tapes_below = was_alive, saved_tapes
            assert popped is self

    @contextmanager
    def below(self) -> Iterator[None]:
        """Run the block at the level below (this trace, on top, steps off; tapes made
        inside this vmap are paused)."""
        stack = core._TRACE_STACK.items
        if not stack or stack[-1] is not self:
            raise InvalidArgumentError(located(
                "a value batched by vmap is used outside the vmapped function",
                "return batched values from the function instead of storing them"))
        stack.pop()
        saved = list(core._TAPES.items)
        core._TAPES.items[:] = [t for t in saved if t in self.tapes_below]
        _APPLYING.append(self)
        try:
            yield
        finally:
            _APPLYING.pop()
            core._TAPES.items[:] = saved
            stack.append(self)

    def lower_at(self, x: Any, bdim: int = 0) -> Array:
        """``x`` (a value at this level; call with this trace on top) as a value of the
        level below with its batch along ``bdim`` (broadcast when ``x`` is unmapped)."""
        val, d = self.unwrap(to_array(x))
        with self.below():
            return move_to(val, d, bdim, self.axis_size)

    # ----- primitives
    def apply(self, prim: Primitive, args: Sequence[Array], params: dict) -> list[Array]:
        if not self.alive:
            raise InvalidArgumentError("vmap: the batch trace ended; a batched value escaped")
        vals, dims = [], []
        for a in args:
            v, d = self.unwrap(a)
            vals.append(v)
            dims.append(d)
        with self.below():
            if all(d is None for d in dims) and prim.name not in ALWAYS_RULE:
                out = bind(prim, *vals, **params)
                outs = list(out) if prim.multiple_results else [out]
                out_dims: list[int | None] = [None] * len(outs)
            else:
                out, od = prim.batching_rule(vals, dims, **params)
                outs = list(out) if prim.multiple_results else [out]
                out_dims = list(od) if prim.multiple_results else [od]
        result = []
        for o, d in zip(outs, out_dims):
            o = to_array(o)
            if d is not None and o.shape[d] != self.axis_size:
                raise ShapeError(f"batching rule of {prim.name!r} returned a batch axis {d} of "
                                 f"size {o.shape[d]} for a batch of {self.axis_size}")
            result.append(self.wrap(o, d))
        return result


# ------------------------------------------------------------------------ rule helpers
def axis_size(vals: Sequence[Array], dims: Sequence[int | None]) -> int:
    """The batch size: the length of any batched operand's batch axis."""
    return next(v.shape[d] for v, d in zip(vals, dims) if d is not None)


def moveaxis(x: Array, src: int, dst: int) -> Array:
    """``x`` with axis ``src`` moved to position ``dst``."""
    if src == dst:
        return x
    order = [i for i in range(x.ndim) if i != src]
    order.insert(dst, src)
    return lax.transpose(x, tuple(order))


def move_to(x: Array, d: int | None, dst: int, size: int) -> Array:
    """``x`` (batched along ``d``, or unmapped when ``d`` is None) batched along ``dst``."""
    if d is None:
        shape = list(x.shape)
        shape.insert(dst, size)
        return lax.broadcast_in_dim(x, tuple(shape),
                                    tuple(i if i < dst else i + 1 for i in range(x.ndim)))
    return moveaxis(x, d, dst)


def bdim_first(vals: Sequence[Array], dims: Sequence[int | None]) -> list[Array]:
    """Every operand batched along axis 0 (unmapped ones broadcast)."""
    n = axis_size(vals, dims)
    return [move_to(v, d, 0, n) for v, d in zip(vals, dims)]


def shift_axis(axis: int, bdim: int) -> int:
    """A per-example axis number as an axis of the batched value (batch along ``bdim``)."""
    return axis if axis < bdim else axis + 1


def split_axis(x: Array, axis: int, size: int) -> Array:
    """Split dimension ``axis`` into ``(size, n // size)``."""
    shape = list(x.shape)
    shape[axis:axis + 1] = [size, shape[axis] // size]
    return lax.reshape(x, shape)


def merge_axis_into(x: Array, src: int, dst: int) -> Array:
    """Fold dimension ``src`` into ``dst`` as its major part; ``dst`` counts dimensions
    after ``src`` is removed."""
    perm = [i for i in range(x.ndim) if i != src]
    perm.insert(dst, src)
    shape = [x.shape[i] for i in range(x.ndim) if i != src]
    shape[dst] *= x.shape[src]
    return lax.reshape(lax.transpose(x, perm), shape)


# ----------------------------------------------------------------------------- vmap
def leaf_axes(prefix: Any, obj: Any, what: str) -> list[Any]:
    """One axis spec per leaf of ``obj``, from ``prefix`` (an int or None for a whole
    subtree, or a container matching ``obj``'s)."""
    if prefix is None or isinstance(prefix, int):
        return [prefix] * len(tree_flatten(obj)[0])
    p_node, o_node = _children(prefix), _children(obj)
    if p_node is None or o_node is None or p_node[0] != o_node[0] or p_node[1] != o_node[1]:
        raise InvalidArgumentError(
            f"vmap: {what} {prefix!r} does not match the structure of the values "
            f"({tree_flatten(obj)[1]!r}); give an int, None, or a matching container")
    out: list[Any] = []
    for p, o in zip(p_node[2], o_node[2]):
        out += leaf_axes(p, o, what)
    return out


def normalize_axis(axis: int, ndim: int, what: str) -> int:
    if not -ndim <= axis < ndim:
        raise InvalidArgumentError(f"vmap: {what} {axis} is out of range for a value of rank "
                                   f"{ndim}")
    return axis % ndim


def vmap(fun: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0,
         axis_name: Any = None, axis_size: int | None = None) -> Callable[..., Any]:
    """Vectorize ``fun`` over an axis of its arguments (``jax.vmap``).

    ``in_axes``: the batch axis of each argument, an int (negative counts from the end),
    None (not batched), or a container matching the arguments' structure (a prefix: an
    int or None covers a whole subtree). ``out_axes`` likewise for the results (None:
    the result must not be batched). Keyword arguments are batched along axis 0.
    ``axis_name`` names the batch axis for ``lax.psum`` and the other collectives;
    ``axis_size`` gives the batch size when no argument is batched. Composes with
    ``grad``, ``jit`` and itself (nested vmap).
    """
    if not callable(fun):
        raise InvalidArgumentError(f"vmap: expected a function, got {type(fun).__name__}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    def batched(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise InvalidArgumentError(f"vmap: in_axes has {len(in_axes)} entries for "
                                       f"{len(args)} positional arguments")
        axes = leaf_axes(in_axes, args, "in_axes") + [0] * len(tree_flatten(kwargs)[0])
        leaves, tree = tree_flatten((args, kwargs))
        arrays = [to_array(x) if a is not None else x for x, a in zip(leaves, axes)]
        sizes: dict[int, int] = {}
        for k, (x, a) in enumerate(zip(arrays, axes)):
            if a is None:
                continue
            a = axes[k] = normalize_axis(a, x.ndim, "in_axes")
            sizes.setdefault(x.shape[a], k)
        if len(sizes) > 1:
            raise ShapeError("vmap: the batched axes have different sizes: " + ", ".join(
                f"argument leaf {k} has {n}" for n, k in sizes.items()))
        if axis_size is not None and sizes and axis_size not in sizes:
            raise ShapeError(f"vmap: axis_size={axis_size} but the batched axes have size "
                             f"{next(iter(sizes))}")
        if not sizes and axis_size is None:
            raise InvalidArgumentError("vmap: no argument is batched (all in_axes are None); "
                                       "pass axis_size")
        n = next(iter(sizes)) if sizes else int(axis_size)
        trace = BatchTrace(n, axis_name, core.current_trace())
        try:
            with bound_axis(axis_name, n, "vmap"), trace.entered():
                wrapped = [trace.wrap(x, a) for x, a in zip(arrays, axes)]
                a_args, a_kwargs = tree_unflatten(tree, wrapped)
                out = fun(*a_args, **a_kwargs)
                out_leaves, out_tree = tree_flatten(out)
                o_axes = leaf_axes(out_axes, out, "out_axes")
                results = [_out_value(trace, o, a) for o, a in zip(out_leaves, o_axes)]
        finally:
            trace.alive = False
        return tree_unflatten(out_tree, results)

    batched.__name__ = f"vmap({getattr(fun, '__name__', 'fun')})"
    batched.__doc__ = getattr(fun, "__doc__", None)
    return batched


def _out_value(trace: BatchTrace, o: Any, axis: int | None) -> Any:
    """A result of the vmapped function (at the batch level) as a value of the caller's."""
    if not isinstance(o, Array):
        if axis is None:
            return o
        o = to_array(o)
    val, d = trace.unwrap(o)
    if axis is None:
        if d is not None:
            raise InvalidArgumentError("vmap: out_axes is None for a result that is batched")
        return val
    axis = normalize_axis(axis, val.ndim + (d is None), "out_axes")
    with trace.below():
        return move_to(val, d, axis, trace.axis_size)


__all__ = ["vmap", "leaf_axes", "normalize_axis", "AxisFrame", "AXIS_ENV", "bound_axis",
           "axis_frame", "BatchTrace", "BatchTracer", "applying", "not_mapped", "ALWAYS_RULE",
           "NO_RULE", "axis_size", "moveaxis", "move_to", "bdim_first", "shift_axis",
           "split_axis", "merge_axis_into"]
