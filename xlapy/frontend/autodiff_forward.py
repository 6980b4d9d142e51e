"""Forward-mode differentiation: :func:`jvp` and :func:`linearize`.

The function is run once under a :class:`~xlapy.frontend.autodiff.Tape` (the same
recording reverse mode uses), then tangents are pushed through the recorded nodes in
order (:func:`propagate`). A node's output tangents are

- its primitive's forward rule when it has one (``prim.def_jvp``: the identity of
  ``alias``, and ``while``, whose reverse mode does not exist because its trip count is
  only known at run time);
- otherwise the transpose of its vjp rule. The rule is linear in the cotangent, so
  running it on watched zero cotangents and differentiating the result once more in
  reverse gives ``J t`` (the "reverse of the reverse" trick, applied per node).

All of it is written with ``lax`` ops, so it traces under ``jit``, and enclosing tapes
record it (``grad`` of a ``jvp``, ``jvp`` of a ``jvp``).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from . import lax
from .autodiff import (Tape, _differentiable, _prepare, _zeros_like, active, stop_gradient)
from .core import Array, to_array
from .pytree import tree_flatten, tree_unflatten
from .source_info import located


def _node_tangents(node: Any, tangents: list[Array | None]) -> list[Array | None]:
    """Tangents of ``node``'s outputs for ``tangents`` of its operands (None: zero)."""
    prim = node.prim
    if prim.jvp is not None:
        return list(prim.jvp(tangents, list(node.outs), *node.args, **node.params))
    if prim.vjp is None:
        raise InvalidArgumentError(located(
            f"differentiation of {prim.name!r} is not supported: it has no gradient rule",
            "wrap the value in xlapy.lax.stop_gradient if no gradient is needed"))
    seeds = [_zeros_like(o) for o in node.outs]
    tape = Tape()
    for s, o in zip(seeds, node.outs):
        if _differentiable(o.dtype):
            tape.watch(s)
    with active(tape):
        if prim.multiple_results:
            in_cts = prim.vjp(seeds, list(node.outs), *node.args, **node.params)
        else:
            in_cts = prim.vjp(seeds[0], node.outs[0], *node.args, **node.params)
    outs, cts = [], []
    for c, t in zip(in_cts, tangents):
        if c is not None and t is not None:
            c = to_array(c)
            outs.append(c)
            cts.append(to_array(t, c.dtype))
    acc = tape.backward(outs, cts)
    return [acc.get(id(s)) for s in seeds]


def propagate(tape: Tape, tangents: dict[int, Array]) -> dict[int, Array]:
    """Push ``tangents`` (by ``id`` of the Arrays they belong to) through ``tape``'s
    nodes in recording order; adds the tangent of every value reached and returns the dict."""
    for node in tape.nodes:
        ins = [tangents.get(id(a)) for a in node.args]
        if all(t is None for t in ins):
            continue
        for o, t in zip(node.outs, _node_tangents(node, ins)):
            if t is not None and _differentiable(o.dtype):
                t = to_array(t)
                tangents[id(o)] = t if t.dtype == o.dtype else lax.convert_element_type(t, o.dtype)
    return tangents


def _check_tangents(primals: Any, tangents: Any) -> tuple[list[Any], list[Any]]:
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise InvalidArgumentError("jvp: primals and tangents must be tuples or lists")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise InvalidArgumentError(f"jvp: tangents structure {t_tree!r} differs from the "
                                   f"primals' {p_tree!r}")
    for p, t in zip(p_leaves, t_leaves):
        if np.shape(p) != np.shape(t):
            raise InvalidArgumentError(f"jvp: tangent of shape {np.shape(t)} for a primal of "
                                       f"shape {np.shape(p)}")
    return p_leaves, t_leaves


class _Recording:
    """``fun`` run once on fresh primals under a tape (what jvp and linearize share)."""

    def __init__(self, fun: Callable[..., Any], primals: Sequence[Any], has_aux: bool,
                 what: str) -> None:
        self.fresh, tree, self.tape = _prepare(primals)
        with active(self.tape):
            out = fun(*tree_unflatten(tree, self.fresh))
        self.aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise InvalidArgumentError(f"{what}: has_aux=True needs the function to "
                                           "return a pair (output, aux)")
            out, self.aux = out
            self.aux = stop_gradient(self.aux)
        leaves, self.out_tree = tree_flatten(out)
        self.out_leaves = [to_array(o) for o in leaves]
        self.out = tree_unflatten(self.out_tree, self.out_leaves)

    def tangents_out(self, t_leaves: Sequence[Any]) -> Any:
        """The output tangents (a pytree like the output) for input tangent leaves."""
        tangents = {id(f): to_array(t, f.dtype) for f, t in zip(self.fresh, t_leaves)
                    if _differentiable(f.dtype)}
        propagate(self.tape, tangents)
        return tree_unflatten(self.out_tree, [
            tangents[id(o)] if id(o) in tangents else _zeros_like(o) for o in self.out_leaves])


def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> tuple:
    """``(fun(*primals), J @ tangents)``, forward mode (like ``jax.jvp``); with
    ``has_aux`` ``fun`` returns ``(output, aux)`` and the result is
    ``(output, output tangent, aux)``."""
    _, t_leaves = _check_tangents(primals, tangents)
    rec = _Recording(fun, primals, has_aux, "jvp")
    t_out = rec.tangents_out(t_leaves)
    return (rec.out, t_out, rec.aux) if has_aux else (rec.out, t_out)


def linearize(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple:
    """``(fun(*primals), f_jvp)`` (plus ``aux`` with ``has_aux``), where
    ``f_jvp(*tangents)`` is the jvp at ``primals`` (like ``jax.linearize``); ``fun`` runs
    once, each ``f_jvp`` call pushes its tangents through the recording."""
    rec = _Recording(fun, primals, has_aux, "linearize")

    def f_jvp(*tangents: Any) -> Any:
        _, t_leaves = _check_tangents(primals, tangents)
        return rec.tangents_out(t_leaves)
    return (rec.out, f_jvp, rec.aux) if has_aux else (rec.out, f_jvp)


__all__ = ["jvp", "linearize", "propagate"]
