"""User-defined derivatives: :class:`custom_jvp` and :class:`custom_vjp` (JAX's API).

Called while no tape differentiates its arguments, a custom function is just its Python
function (under ``jit`` it traces inline). Called with arguments an active tape tracks
(``grad``, ``vjp``, ``jvp``, ``GradientTape``, a ``checkpoint`` being recorded), it runs
the function with recording paused and records one node on the tapes, whose rules are the
user's:

- ``custom_jvp``: the node's forward rule calls the user's ``jvp(primals, tangents)``;
  its reverse rule transposes that rule, which is linear in the tangents: it runs it on
  zero tangents under a fresh tape and takes the cotangents of those tangents (how JAX
  derives reverse mode from a custom JVP);
- ``custom_vjp``: ``fwd(*args) -> (out, residuals)`` runs with the tapes active (so an
  enclosing tape can differentiate the residuals: ``grad`` of ``grad`` works), the outputs
  are fresh values, and the node's reverse rule is ``bwd(residuals, cotangent)``.

Rules are written with ``xlapy`` ops, so they trace under ``jit`` and are themselves
differentiable. ``nondiff_argnums`` arguments are passed as in JAX: to ``jvp`` and ``bwd``
first, and never differentiated (they may be any Python value).

A custom function's rules cover its arguments only: closing over a value that a tape is
differentiating is an error naming the line (as in JAX; pass the value as an argument).
Inside ``vmap`` the arguments are batch tracers that the tapes below do not track, so
``grad`` of ``vmap`` of a custom function differentiates the function itself (its rule is
not used); ``vmap`` of ``grad`` uses the rule.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

from ..errors import InvalidArgumentError
from . import core, lax
from .autodiff import Tape, _differentiable, active, tracked_by_any
from .core import Array, Primitive, new_ref, to_array
from .program import Recorder
from .pytree import tree_flatten, tree_unflatten
from .source_info import located


def _positional(fun: Callable[..., Any], args: tuple, kwargs: dict, what: str) -> tuple:
    """Keyword arguments bound to positions by ``fun``'s signature (as JAX resolves them)."""
    if not kwargs:
        return args
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except TypeError as e:
        raise InvalidArgumentError(f"{what}: {e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise InvalidArgumentError(f"{what}: keyword-only arguments {sorted(bound.kwargs)} "
                                   "are not supported; pass them positionally")
    return tuple(bound.args)


class _Call:
    """One call's arguments: the ``nondiff_argnums`` values and the array leaves of the
    others (the node's operands)."""

    def __init__(self, args: tuple, nondiff_argnums: tuple[int, ...], what: str) -> None:
        n = len(args)
        for i in nondiff_argnums:
            if not -n <= i < n:
                raise InvalidArgumentError(f"{what}: nondiff_argnums {nondiff_argnums} out of "
                                           f"range for {n} arguments")
        self.nondiff = sorted({i % n for i in nondiff_argnums})
        self.n = n
        self.args = args
        diff = [a for i, a in enumerate(args) if i not in self.nondiff]
        leaves, self.tree = tree_flatten(tuple(diff))
        self.leaves = [to_array(x) for x in leaves]

    def nondiff_values(self) -> list[Any]:
        return [self.args[i] for i in self.nondiff]

    def watched(self, leaves: Sequence[Array]) -> list[Array]:
        """``leaves`` and the arrays among the nondiff arguments (not closures)."""
        extra = [x for x in tree_flatten(self.nondiff_values())[0] if isinstance(x, Array)]
        return list(leaves) + extra

    def diff_values(self, leaves: Sequence[Array]) -> tuple:
        return tree_unflatten(self.tree, list(leaves))

    def full(self, leaves: Sequence[Array]) -> tuple:
        it = iter(self.diff_values(leaves))
        return tuple(self.args[i] if i in self.nondiff else next(it) for i in range(self.n))


def _invoke(f: Any, ready: bool, missing: str, node: type, args: tuple, kwargs: dict) -> Any:
    """Call the custom function ``f``: plainly when no tape differentiates its arguments,
    else through a recorded ``node``."""
    what = f"{node.kind} function {getattr(f.fun, '__name__', 'fun')!r}"    # type: ignore
    if not ready:
        raise InvalidArgumentError(f"{what} has no {missing} before calling it")
    args = _positional(f.fun, args, kwargs, what)
    call = _Call(args, f.nondiff_argnums, what)
    if not tracked_by_any(call.leaves):
        return f.fun(*args)
    return node(f, call).run(call.leaves)


def _run_watching_closures(fn: Callable[[], Any], inputs: Sequence[Array], what: str,
                           pause: bool) -> Any:
    """``fn()`` (with the tapes paused when ``pause``) while a recorder watches which
    values it uses; a value it closes over that a tape differentiates is an error, as in
    JAX: the custom rule covers the arguments only, so that gradient would be lost."""
    probe = Recorder(inputs)
    saved = list(core._TAPES)
    core._TAPES[:] = [probe] if pause else saved + [probe]
    try:
        out = fn()
    finally:
        core._TAPES[:] = saved
    closed = [x for x in probe.constants() if tracked_by_any([x])]
    if closed:
        raise InvalidArgumentError(located(
            f"{what} closes over a value that is being differentiated "
            f"({closed[0].type_text()}); its rule covers the function's arguments only, "
            "so that value's gradient would be lost",
            "pass the value as an argument of the function"))
    return out


def _flat_outputs(out: Any) -> tuple[list[Array], Any]:
    leaves, tree = tree_flatten(out)
    return [to_array(o) for o in leaves], tree


def _match(tangents: Any, tree: Any, like: Sequence[Array], what: str) -> list[Array | None]:
    """Leaves of ``tangents`` (structured like ``tree``; ``None`` leaves are zeros) cast
    to the dtypes of ``like`` and checked against their shapes."""
    t_leaves, t_tree = tree_flatten(tangents, is_leaf=lambda x: x is None)
    if len(t_leaves) != len(like):
        raise InvalidArgumentError(f"{what}: expected a structure like {tree!r}, got "
                                   f"{t_tree!r}")
    out: list[Array | None] = []
    for t, o in zip(t_leaves, like):
        if t is None:
            out.append(None)
            continue
        t = to_array(t)
        if t.shape != o.shape:
            if t.shape == ():
                t = lax.broadcast(t, o.shape)
            else:
                raise InvalidArgumentError(f"{what}: a value of shape {t.shape} for one of "
                                           f"shape {o.shape}")
        out.append(t if t.dtype == o.dtype else lax.convert_element_type(t, o.dtype))
    return out


# ------------------------------------------------------------------------------ custom_jvp
class custom_jvp:
    """A function with a user-defined forward-mode derivative (``jax.custom_jvp``).

    ``f.defjvp(jvp)`` with ``jvp(*nondiff_args, primals, tangents) -> (primal_out,
    tangent_out)`` (``primals``, ``tangents``: tuples of the differentiable arguments), or
    ``f.defjvps(*jvps)`` with one ``jvp_i(g, ans, *primals)`` per argument (``None``: that
    argument does not affect the output). Reverse mode transposes the rule.
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable[..., Any] | None = None
        self.jvps: tuple | None = None          # per-argument rules (defjvps)

    def defjvp(self, jvp: Callable[..., Any], symbolic_zeros: bool = False) -> Callable[..., Any]:
        """Set the JVP rule (also usable as a decorator)."""
        if symbolic_zeros:
            raise InvalidArgumentError("custom_jvp.defjvp: symbolic_zeros=True is not "
                                       "supported; tangents of unperturbed inputs are zeros")
        self.jvp, self.jvps = jvp, None
        return jvp

    def defjvps(self, *jvps: Callable[..., Any] | None) -> None:
        """One rule per differentiable argument, ``jvp_i(g_i, ans, *primals)``, summed."""
        self.jvps = jvps

        def jvp(*a: Any) -> tuple:
            nondiff, (primals, tangents) = a[:-2], a[-2:]
            ans = self.fun(*self._merge(nondiff, primals))
            return ans, _sum_jvps(jvps, ans, primals, tangents)
        self.jvp = jvp

    def _merge(self, nondiff: Sequence[Any], primals: Sequence[Any]) -> tuple:
        n = len(nondiff) + len(primals)
        nd = sorted({i % n for i in self.nondiff_argnums})
        it_nd, it_p = iter(nondiff), iter(primals)
        return tuple(next(it_nd) if i in nd else next(it_p) for i in range(n))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _invoke(self, self.jvp is not None, "JVP rule: call defjvp or defjvps",
                       _CustomJVPNode, args, kwargs)


def _sum_jvps(jvps: Sequence[Any], ans: Any, primals: Sequence[Any],
              tangents: Sequence[Any]) -> Any:
    """The output tangent of ``defjvps`` rules: the sum of ``rule(t, ans, *primals)``."""
    if len(jvps) != len(primals):
        raise InvalidArgumentError(f"custom_jvp.defjvps: {len(jvps)} rules for "
                                   f"{len(primals)} differentiable arguments")
    total: Any = None
    for rule, t in zip(jvps, tangents):
        if rule is not None:
            term = rule(t, ans, *primals)
            total = term if total is None else _tree_add(total, term)
    if total is None:
        leaves, tree = tree_flatten(ans)
        total = tree_unflatten(tree, [lax.full_like(to_array(o), 0) for o in leaves])
    return total


def _tree_add(a: Any, b: Any) -> Any:
    la, ta = tree_flatten(a)
    lb, _ = tree_flatten(b)
    return tree_unflatten(ta, [lax.add(to_array(x), to_array(y)) for x, y in zip(la, lb)])


class _CustomNode(Primitive):
    """The recorded call of a custom function ``f`` (not in the primitive table): one
    node per call, made by ``run(leaves)``; ``rerun`` calls again on new operands (a
    checkpoint's recomputation)."""

    kind = ""

    def __init__(self, f: Any, call: _Call) -> None:
        super().__init__(f"{self.kind}_call[{getattr(f.fun, '__name__', 'fun')}]",
                         multiple_results=True)
        self.f, self.call = f, call
        self.out_tree: Any = None

    def rerun(self, *leaves: Array, **params: Any) -> list[Array]:
        node = type(self)(self.f, self.call)
        return tree_flatten(node.run(leaves))[0]        # type: ignore[attr-defined]


class _CustomJVPNode(_CustomNode):
    """The recorded call of a :class:`custom_jvp` function."""

    kind = "custom_jvp"

    def __init__(self, f: custom_jvp, call: _Call) -> None:
        super().__init__(f, call)
        self.def_jvp(self._jvp)
        self.def_vjp(self._vjp)

    def run(self, leaves: Sequence[Array]) -> Any:
        out = _run_watching_closures(lambda: self.f.fun(*self.call.full(leaves)),
                                     self.call.watched(leaves), self.name, pause=True)
        outs, self.out_tree = _flat_outputs(out)
        core.record(self, list(leaves), {}, outs)
        return tree_unflatten(self.out_tree, outs)

    def _rule(self, leaves: Sequence[Array], tangents: Sequence[Array],
              outs: Sequence[Array]) -> list[Array | None]:
        primals = self.call.diff_values(leaves)
        tans = self.call.diff_values(tangents)
        what = f"custom_jvp rule of {self.name}"
        if self.f.jvps is not None:          # per-argument rules take the known output
            ans = tree_unflatten(self.out_tree, list(outs))
            return _match(_sum_jvps(self.f.jvps, ans, primals, tans), self.out_tree, outs, what)
        res = self.f.jvp(*self.call.nondiff_values(), primals, tans)
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise InvalidArgumentError(f"custom_jvp rule of {self.name}: must return a pair "
                                       "(primal_out, tangent_out)")
        return _match(res[1], self.out_tree, _flat_outputs(res[0])[0], what)

    def _jvp(self, tangents: list[Array | None], outs: list[Array], *args: Array) -> list:
        ts = [lax.full_like(a, 0) if t is None else to_array(t, a.dtype)
              for a, t in zip(args, tangents)]
        return self._rule(args, ts, outs)

    def _vjp(self, cts: list[Array], ans: list[Array], *args: Array) -> tuple:
        seeds = [lax.full_like(a, 0) for a in args]
        tape = Tape()
        for s in seeds:
            tape.watch(s)
        with active(tape):
            t_out = self._rule(args, seeds, ans)
        pairs = [(t, c) for t, c in zip(t_out, cts) if t is not None]
        acc = tape.backward([t for t, _ in pairs], [c for _, c in pairs])
        return tuple(acc.get(id(s)) if _differentiable(a.dtype) else None
                     for s, a in zip(seeds, args))


# ------------------------------------------------------------------------------ custom_vjp
class custom_vjp:
    """A function with a user-defined reverse-mode derivative (``jax.custom_vjp``).

    ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)`` and ``bwd(*nondiff_args,
    residuals, g) -> cotangents`` (a tuple with one entry per differentiable argument,
    structured like it; ``None`` for zero).
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any],
               symbolic_zeros: bool = False, optimize_remat: bool = False) -> None:
        """Set the forward and backward rules."""
        if symbolic_zeros:
            raise InvalidArgumentError("custom_vjp.defvjp: symbolic_zeros=True is not "
                                       "supported; cotangents of unused outputs are zeros")
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _invoke(self, self.fwd is not None and self.bwd is not None,
                       "VJP rule: call defvjp", _CustomVJPNode, args, kwargs)


class _CustomVJPNode(_CustomNode):
    """The recorded call of a :class:`custom_vjp` function, holding its residuals."""

    kind = "custom_vjp"

    def __init__(self, f: custom_vjp, call: _Call) -> None:
        super().__init__(f, call)
        self.residuals: Any = None
        self.def_vjp(self._vjp)

    def run(self, leaves: Sequence[Array]) -> Any:
        res = _run_watching_closures(lambda: self.f.fwd(*self.call.full(leaves)),  # type: ignore
                                     self.call.watched(leaves), self.name, pause=False)
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise InvalidArgumentError(f"custom_vjp fwd of {self.name}: must return a pair "
                                       "(output, residuals)")
        outs, self.out_tree = _flat_outputs(res[0])
        self.residuals = res[1]
        fresh = [new_ref(o, keep_gradient=False) for o in outs]
        core.record(self, list(leaves), {}, fresh)
        return tree_unflatten(self.out_tree, fresh)

    def _vjp(self, cts: list[Array], ans: list[Array], *args: Array) -> tuple:
        g = tree_unflatten(self.out_tree, list(cts))
        in_cts = self.f.bwd(*self.call.nondiff_values(), self.residuals, g)   # type: ignore[misc]
        n_diff = len(self.call.tree.children)
        if not isinstance(in_cts, (tuple, list)) or len(in_cts) != n_diff:
            raise InvalidArgumentError(
                f"custom_vjp bwd of {self.name}: must return a tuple of {n_diff} cotangents "
                f"(one per differentiable argument), got {type(in_cts).__name__}"
                + (f" of length {len(in_cts)}" if isinstance(in_cts, (tuple, list)) else ""))
        flat: list[Array | None] = []
        for ct, sub in zip(in_cts, self.call.tree.children):
            n = sub.num_leaves
            like = args[len(flat):len(flat) + n]
            if ct is None:
                flat += [None] * n
            else:
                flat += _match(ct, sub, like, f"custom_vjp bwd of {self.name}")
        return tuple(None if c is None or not _differentiable(a.dtype) else c
                     for c, a in zip(flat, args))


__all__ = ["custom_jvp", "custom_vjp"]
