"""Reverse-mode automatic differentiation: a tape of primitives, JAX's and TF's APIs.

While a :class:`Tape` is active, :func:`~xlapy.frontend.core.bind` reports every
primitive it applies. The tape keeps the ones that touch a value it *tracks* (a watched
input or anything computed from one), so recording works the same eagerly, op by op,
and inside ``jit``, where the values are traced HLO instructions. ``backward`` walks
the recorded nodes in reverse and applies each primitive's ``vjp`` rule (defined
beside the primitive in its family file, ``primitives_<family>.py``). Rules are written with ``lax`` ops, so the
backward pass is itself recorded by any enclosing tape: ``grad(grad(f))`` works.
Forward mode (:func:`jvp`, :func:`linearize`, in ``autodiff_forward``) pushes tangents
through the recorded nodes in order; a node's tangent map is the transpose of its
(linear) vjp rule, or the node's own forward rule where it has one.

Structured control flow is primitives too (``cond``, ``switch``, ``scan``, ``while``, in
``control_flow``): a traced loop or conditional is one node whose rules differentiate
the branch or body. ``while_loop`` with a traced trip count cannot be reversed, but has
a forward rule (the loop carries the tangents too); ``fori_loop`` with static bounds
lowers through ``scan`` and can be reversed.

Public API: :func:`grad`, :func:`value_and_grad`, :func:`vjp`, :func:`jvp`,
:func:`linearize`, :func:`stop_gradient` (JAX style) and :class:`GradientTape` (TensorFlow style).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from . import core, dtypes, lax
from .core import Array, Primitive, new_ref, to_array
from .pytree import tree_flatten, tree_unflatten
from .source_info import located


def _differentiable(dtype: np.dtype) -> bool:
    return dtypes.is_float(dtype) or np.dtype(dtype).kind == "c"


class _Node:
    __slots__ = ("prim", "args", "params", "outs")

    def __init__(self, prim: Any, args: tuple, params: dict, outs: tuple) -> None:
        self.prim, self.args, self.params, self.outs = prim, args, params, outs


class Tape:
    """Records the primitives applied to tracked values (see the module docstring)."""

    def __init__(self, watch_accessed_variables: bool = False) -> None:
        self.tracked: dict[int, Array] = {}
        self.nodes: list[_Node] = []
        self.watch_accessed_variables = watch_accessed_variables
        self.watched_variables: dict[int, Any] = {}
        self.variable_reads: dict[int, list[Array]] = {}
        self.keep_recording_backward = False

    # ----- what is tracked
    def watch(self, x: Array) -> None:
        if _differentiable(x.dtype):
            self.tracked[id(x)] = x

    def is_tracked(self, x: Any) -> bool:
        return isinstance(x, Array) and id(x) in self.tracked

    def watch_variable(self, var: Any) -> None:
        self.watched_variables[id(var)] = var

    def on_variable_read(self, var: Any, value: Array) -> None:
        """``var`` was read as ``value``; track it if the variable is watched."""
        if id(var) in self.watched_variables or (
                self.watch_accessed_variables and getattr(var, "trainable", False)):
            self.watched_variables.setdefault(id(var), var)
            self.watch(value)
            self.variable_reads.setdefault(id(var), []).append(value)

    def record(self, prim: Any, args: Sequence[Array], params: dict,
               outs: Sequence[Array]) -> None:
        if not any(id(a) in self.tracked for a in args):
            return
        diff = [o for o in outs if _differentiable(o.dtype)]
        if not diff:
            return
        self.nodes.append(_Node(prim, tuple(args), params, tuple(outs)))
        for o in diff:
            self.tracked[id(o)] = o

    # ----- the reverse pass
    def backward(self, outs: Sequence[Array], cts: Sequence[Array]) -> dict[int, Array]:
        """Cotangents of every tracked value reached from ``outs`` seeded with ``cts``."""
        acc: dict[int, Array] = {}
        for o, c in zip(outs, cts):
            if id(o) in self.tracked:
                _accumulate(acc, o, c)
        # A tape does not record its own reverse pass, unless it is persistent and still
        # recording (TF: then gradient() inside the block is itself differentiable).
        paused = self in core._TAPES and not self.keep_recording_backward
        if paused:
            core._TAPES.remove(self)
        try:
            for node in list(reversed(self.nodes)):
                out_cts = [acc.get(id(o)) for o in node.outs]
                if all(c is None for c in out_cts):
                    continue
                self._apply_rule(node, out_cts, acc)
        finally:
            if paused:
                core._TAPES.append(self)
        return acc

    def _apply_rule(self, node: _Node, out_cts: list[Array | None],
                    acc: dict[int, Array]) -> None:
        prim = node.prim
        rule = prim.vjp
        if rule is None:
            raise InvalidArgumentError(located(
                f"differentiation of {prim.name!r} is not supported: it has no gradient rule",
                "wrap the value in xlapy.lax.stop_gradient if no gradient is needed"))
        cts = [c if c is not None else _zeros_like(o) for c, o in zip(out_cts, node.outs)]
        if prim.multiple_results:
            in_cts = rule(cts, list(node.outs), *node.args, **node.params)
        else:
            in_cts = rule(cts[0], node.outs[0], *node.args, **node.params)
        if len(in_cts) != len(node.args):
            raise InvalidArgumentError(f"gradient rule of {prim.name!r} returned "
                                       f"{len(in_cts)} cotangents for {len(node.args)} operands")
        for a, c in zip(node.args, in_cts):
            if c is None or id(a) not in self.tracked:
                continue
            c = to_array(c)
            if c.shape != a.shape:
                raise InvalidArgumentError(
                    f"gradient rule of {prim.name!r} gave a cotangent of shape {c.shape} for "
                    f"an operand of shape {a.shape}")
            _accumulate(acc, a, c)


def _accumulate(acc: dict[int, Array], x: Array, ct: Array) -> None:
    if ct.dtype != x.dtype:
        ct = lax.convert_element_type(ct, x.dtype)
    prev = acc.get(id(x))
    acc[id(x)] = ct if prev is None else lax.add(prev, ct)


def _zeros_like(x: Array) -> Array:
    return lax.full_like(x, 0)


def _ones_like(x: Array) -> Array:
    return lax.full_like(x, 1)


@contextmanager
def active(tape: Tape) -> Iterator[Tape]:
    """Record on ``tape`` for the ``with`` block."""
    core._TAPES.append(tape)
    try:
        yield tape
    finally:
        if tape in core._TAPES:
            core._TAPES.remove(tape)


@contextmanager
def paused_recording() -> Iterator[None]:
    """No tape records in the ``with`` block (used while tracing nested bodies)."""
    saved = list(core._TAPES)
    core._TAPES.clear()
    try:
        yield
    finally:
        core._TAPES[:] = saved


def tracked_by_any(xs: Sequence[Any]) -> bool:
    """True when an active tape tracks one of ``xs``."""
    return any(t.is_tracked(x) for t in core._TAPES for x in xs)


def stop_gradient(x: Any) -> Any:
    """``x`` with no gradient flowing through it (a pytree of arrays is mapped)."""
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [new_ref(to_array(a), keep_gradient=False) for a in leaves])


# ----------------------------------------------------------------------------- JAX style
def _prepare(primals: Sequence[Any]) -> tuple[list[Array], Any, Tape]:
    leaves, tree = tree_flatten(tuple(primals))
    tape = Tape()
    fresh = []
    for leaf in leaves:
        a = new_ref(to_array(leaf))
        tape.watch(a)
        fresh.append(a)
    return fresh, tree, tape


def _cotangent_leaves(ct: Any, out_leaves: list[Array], out_tree: Any, what: str) -> list[Array]:
    ct_leaves, ct_tree = tree_flatten(ct)
    if ct_tree != out_tree:
        raise InvalidArgumentError(f"{what}: the cotangent's structure {ct_tree!r} differs "
                                   f"from the output's {out_tree!r}")
    out = []
    for c, o in zip(ct_leaves, out_leaves):
        c = to_array(c)
        if c.shape != o.shape:
            raise InvalidArgumentError(f"{what}: cotangent of shape {c.shape} for an output "
                                       f"of shape {o.shape}")
        out.append(c)
    return out


def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple:
    """``(fun(*primals), vjp_fn)`` (plus ``aux`` with ``has_aux``), where
    ``vjp_fn(ct)`` returns the tuple of cotangents of ``primals`` (like ``jax.vjp``)."""
    fresh, tree, tape = _prepare(primals)
    with active(tape):
        out = fun(*tree_unflatten(tree, fresh))
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise InvalidArgumentError("has_aux=True needs the function to return a pair "
                                       "(output, aux)")
        out, aux = out
        aux = stop_gradient(aux)
    out_leaves_raw, out_tree = tree_flatten(out)
    out_leaves = [to_array(o) for o in out_leaves_raw]

    def vjp_fn(ct: Any) -> tuple:
        cts = _cotangent_leaves(ct, out_leaves, out_tree, "vjp")
        acc = tape.backward(out_leaves, cts)
        grads = [acc.get(id(a)) if id(a) in acc else _zeros_like(a) for a in fresh]
        return tree_unflatten(tree, grads)

    out_value = tree_unflatten(out_tree, out_leaves)
    return (out_value, vjp_fn, aux) if has_aux else (out_value, vjp_fn)


def _argnums(argnums: int | Sequence[int], n: int) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for i in nums:
        if not -n <= i < n:
            raise InvalidArgumentError(f"argnums {argnums} out of range for {n} positional "
                                       "arguments")
    return tuple(i % n for i in nums), single


def value_and_grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """``f(*args) -> (value, gradient)`` for a real scalar-valued ``fun`` (like JAX)."""
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        nums, single = _argnums(argnums, len(args))
        for i in nums:
            for leaf in tree_flatten(args[i])[0]:
                dt = to_array(leaf).dtype
                if not _differentiable(dt):
                    raise InvalidArgumentError(
                        f"grad requires real- or complex-valued inputs, but argument {i} has "
                        f"dtype {dt}")

        def partial(*diff: Any) -> Any:
            full = list(args)
            for i, v in zip(nums, diff):
                full[i] = v
            return fun(*full, **kwargs)

        res = vjp(partial, *[args[i] for i in nums], has_aux=has_aux)
        out, fn = res[0], res[1]
        o = to_array(out) if not isinstance(out, Array) else out
        if o.shape != () or not dtypes.is_float(o.dtype):
            raise InvalidArgumentError(
                f"grad requires a real scalar output, got {o.type_text()}; use vjp for "
                "non-scalar outputs")
        g = fn(_ones_like(o))
        g = g[0] if single else tuple(g)
        return ((o, res[2]), g) if has_aux else (o, g)
    wrapped.__name__ = f"value_and_grad({getattr(fun, '__name__', 'fun')})"
    return wrapped


def grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0,
         has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of a real scalar-valued ``fun`` with respect to ``argnums`` (like JAX)."""
    vg = value_and_grad(fun, argnums, has_aux)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        (value, g) = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    wrapped.__name__ = f"grad({getattr(fun, '__name__', 'fun')})"
    return wrapped


# ------------------------------------------------------------------------------ TF style
class GradientTape:
    """TensorFlow's ``tf.GradientTape``: records operations in its ``with`` block.

    Trainable :class:`~xlapy.frontend.variables.Variable` reads are watched
    automatically (``watch_accessed_variables=True``); other arrays with
    :meth:`watch`. ``gradient(target, sources)`` returns gradients shaped like
    ``sources`` (``None`` for unconnected sources, or zeros with
    ``unconnected_gradients="zero"``). A non-persistent tape computes one gradient.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._tape = Tape(watch_accessed_variables)
        self._tape.keep_recording_backward = persistent
        self._persistent = persistent
        self._used = False
        self._recording = False

    def __enter__(self) -> "GradientTape":
        core._TAPES.append(self._tape)
        self._recording = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._tape in core._TAPES:
            core._TAPES.remove(self._tape)
        self._recording = False

    @contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Temporarily stop recording operations on this tape."""
        was = self._tape in core._TAPES
        if was:
            core._TAPES.remove(self._tape)
        try:
            yield
        finally:
            if was:
                core._TAPES.append(self._tape)

    def watch(self, tensor: Any) -> None:
        """Track ``tensor`` (an Array, a Variable or a pytree of them)."""
        for leaf in tree_flatten(tensor)[0]:
            if hasattr(leaf, "__xlapy_array__"):
                self._tape.watch_variable(leaf)
            elif isinstance(leaf, Array):
                self._tape.watch(leaf)
            else:
                raise InvalidArgumentError(f"GradientTape.watch: expected an Array or a "
                                           f"Variable, got {type(leaf).__name__}")

    def watched_variables(self) -> list[Any]:
        return list(self._tape.watched_variables.values())

    def reset(self) -> None:
        """Clear everything recorded so far."""
        self._tape.nodes.clear()
        self._tape.tracked.clear()
        self._tape.variable_reads.clear()

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: str = "none") -> Any:
        """Gradients of ``target`` (summed over its leaves) with respect to ``sources``."""
        if self._used and not self._persistent:
            raise InvalidArgumentError(
                "a non-persistent GradientTape can only compute one set of gradients; "
                "create it with GradientTape(persistent=True) to call gradient() again")
        if unconnected_gradients not in ("none", "zero"):
            raise InvalidArgumentError("unconnected_gradients must be 'none' or 'zero'")
        self._used = True
        t_leaves = [to_array(t) for t in tree_flatten(target)[0]]
        if output_gradients is None:
            cts = [_ones_like(t) for t in t_leaves]
        else:
            cts = [to_array(c) for c in tree_flatten(output_gradients)[0]]
            if len(cts) != len(t_leaves):
                raise InvalidArgumentError("output_gradients must match the target's "
                                           "structure")
        acc = self._tape.backward(t_leaves, cts)
        s_leaves, s_tree = tree_flatten(sources)
        grads = []
        for s in s_leaves:
            g = self._source_gradient(s, acc)
            if g is None and unconnected_gradients == "zero":
                g = _zeros_like(to_array(s))
            grads.append(g)
        return tree_unflatten(s_tree, grads)

    def _source_gradient(self, s: Any, acc: dict[int, Array]) -> Array | None:
        if hasattr(s, "__xlapy_array__"):
            total = None
            for r in self._tape.variable_reads.get(id(s), []):
                g = acc.get(id(r))
                if g is not None:
                    total = g if total is None else lax.add(total, g)
            return total
        if isinstance(s, Array):
            return acc.get(id(s))
        raise InvalidArgumentError(f"GradientTape.gradient: sources must be Arrays or "
                                   f"Variables, got {type(s).__name__}")


__all__ = ["grad", "value_and_grad", "vjp", "stop_gradient", "GradientTape", "Tape"]


def vjp_with_captures(fn: Callable[..., Any], primals: Sequence[Array],
                      captures: Sequence[Array], cts: Sequence[Array]) -> list[Array]:
    """Cotangents of ``primals`` then ``captures`` (outer values ``fn`` closes over) for
    ``fn(*primals)`` (a flat list of outputs) seeded with ``cts``.

    Control flow rules use this inside a branch or a loop body: ``captures`` are watched
    directly, so the operations ``fn`` applies to them are recorded.
    """
    tape = Tape()
    fresh = [new_ref(p) for p in primals]
    for a in fresh:
        tape.watch(a)
    for c in captures:
        tape.watch(c)
    with active(tape):
        outs = [to_array(o) for o in fn(*fresh)]
    acc = tape.backward(outs, [to_array(c, o.dtype) for c, o in zip(cts, outs)])
    result = []
    for a in list(fresh) + list(captures):
        g = acc.get(id(a))
        result.append(g if g is not None else _zeros_like(a))
    return result


class ClosureNode(Primitive):
    """A recorded call whose vjp rule is a closure over the function it ran (a compiled
    function called eagerly under a tape, see ``jit``); not in the primitive table."""

    def __init__(self, name: str, rule: Callable[..., Any]) -> None:
        super().__init__(name, multiple_results=True)
        self.def_vjp(rule)
