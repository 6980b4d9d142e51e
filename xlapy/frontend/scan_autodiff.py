"""Reverse-mode differentiation of ``scan`` with saved residuals (JAX's partial evaluation
of the scan body, done on xlapy's tape).

When a tape tracks a scan's operands, ``scan`` first *plans* its residuals
(:func:`plan_residuals`): it traces the body once under a tape (the *template*), runs the
tape's reverse pass in a child trace, and the values of the template trace that the
reverse pass reads (it captures them from its parent) are the residuals: the operands and
results of the recorded primitives that the gradient rules need (a ``dot``'s operands, a
``tanh``'s result, ...). Each is located by its place in the tape (a body input, or
operand/result ``j`` of recorded node ``k``). The forward loop then runs the body under a
tape of its own, finds the same places and stacks those values per iteration as extra
scan outputs.

The vjp rule is one reverse scan over the stacked residuals and the output cotangents:
its body replays the template tape's reverse pass with the template values replaced by
the residual slices, so the forward body is not recomputed. A body wrapped in
``checkpoint`` records one node whose rule recomputes its inside, so its residuals are
that node's operands and the recomputation the user asked for stays. When a residual
cannot be located (a rule reads a value only its parameters reach) the rule falls back
to recomputing the carries in a forward scan and the body's vjp in the reverse one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.builder import as_element_type
from ..hlo.shape import Shape
from . import lax
from .autodiff import Tape, _Node, active, paused_recording, tracked_by_any, \
    vjp_with_captures
from .core import Array, to_array
from .pytree import tree_flatten, tree_unflatten
from .tracing import Trace, trace_context

Place = tuple[str, int, int]        # ("in", leaf, 0) | ("arg" | "out", node, position)


@dataclass
class ResidualPlan:
    """The template tape of a scan body and where its residuals live (see module doc)."""
    tape: Tape
    inputs: list[Array]          # the template's body inputs: carry leaves, then x leaves
    outs: list[Array]            # the template body's outputs: carry leaves, then y leaves
    captures: list[Array]        # outer values the body closes over that a tape tracks
    x_watched: list[bool]        # per x leaf: a tape tracks the stacked xs (gets a gradient)
    places: list[Place]
    values: list[Array]          # the template's residual values, one per place

    @property
    def avals(self) -> list[tuple[Any, tuple[int, ...]]]:
        return [(v.dtype, v.shape) for v in self.values]


def _flat_body(f: Callable[..., Any], c_tree: Any, x_tree: Any, nc: int
               ) -> Callable[..., tuple[list[Array], list[Array]]]:
    def run(*leaves: Array) -> tuple[list[Array], list[Array]]:
        carry, y = f(tree_unflatten(c_tree, list(leaves[:nc])),
                     tree_unflatten(x_tree, list(leaves[nc:])))
        return ([to_array(o) for o in tree_flatten(carry)[0]],
                [to_array(o) for o in tree_flatten(y)[0]])
    return run


def _record(body: Callable[..., Any], inputs: Sequence[Array], nc: int, x_watched: list[bool],
            captures: Sequence[Array]) -> tuple[Tape, list[Array]]:
    """Run ``body`` on ``inputs`` under a fresh tape watching the carry leaves, the
    watched x leaves and ``captures``."""
    tape = Tape()
    watched = list(inputs[:nc]) + [x for x, w in zip(inputs[nc:], x_watched) if w]
    for a in watched + list(captures):
        tape.watch(a)
    with active(tape):
        carry, ys = body(*inputs)
    return tape, carry + ys


def _places(tape: Tape, inputs: Sequence[Array], wanted: Sequence[Array]) -> list[Place] | None:
    """Where each of ``wanted`` first appears in ``inputs`` or the tape's nodes."""
    where: dict[int, Place] = {}
    for k, a in enumerate(inputs):
        where.setdefault(id(a), ("in", k, 0))
    for k, node in enumerate(tape.nodes):
        for j, a in enumerate(node.outs):
            where.setdefault(id(a), ("out", k, j))
        for j, a in enumerate(node.args):
            where.setdefault(id(a), ("arg", k, j))
    places = [where.get(id(v)) for v in wanted]
    return None if any(p is None for p in places) else places  # type: ignore[return-value]


def _at(place: Place, tape: Tape, inputs: Sequence[Array]) -> Array:
    kind, k, j = place
    if kind == "in":
        return inputs[k]
    node = tape.nodes[k]
    return node.outs[j] if kind == "out" else node.args[j]


def _replay(plan: ResidualPlan, residuals: Sequence[Array], out_cts: Sequence[Array | None]
            ) -> dict[int, Array]:
    """The template tape's reverse pass with its residual values replaced by
    ``residuals``; cotangents keyed by the template's input / capture ids."""
    sub = {id(v): r for v, r in zip(plan.values, residuals)}

    def s(a: Array) -> Array:
        return sub.get(id(a), a)
    tape = Tape()
    tape.nodes = [_Node(n.prim, tuple(s(a) for a in n.args), n.params,
                        tuple(s(o) for o in n.outs)) for n in plan.tape.nodes]
    tape.tracked = {id(s(v)): s(v) for v in plan.tape.tracked.values()}
    seeds = [(s(o), c) for o, c in zip(list(plan.outs) + list(plan.values), out_cts)
             if c is not None]
    acc = tape.backward([o for o, _ in seeds], [to_array(c, o.dtype) for o, c in seeds])
    return {id(a): acc[id(s(a))] for a in list(plan.inputs) + list(plan.captures)
            if id(s(a)) in acc}


def _child(parent: Trace, name: str, avals: Sequence[Array]) -> tuple[Trace, list[Array]]:
    sub = Trace(name, f"{parent.name_stack}/{name}", parent)
    params = [sub.new_param(Shape.array(as_element_type(a.dtype), a.shape),
                            weak_type=a.weak_type) for a in avals]
    return sub, params


def plan_residuals(parent: Trace, f: Callable[..., Any], c_leaves: Sequence[Array],
                   c_tree: Any, x_tree: Any, slice_avals: Sequence[Array],
                   captures: Sequence[Array], x_leaves: Sequence[Array]
                   ) -> ResidualPlan | None:
    """The residual plan of ``scan(f, ...)`` under ``parent`` (None: recompute instead)."""
    nc = len(c_leaves)
    body = _flat_body(f, c_tree, x_tree, nc)
    watched = [c for c in captures if tracked_by_any([c])]
    x_watched = [tracked_by_any([x]) for x in x_leaves]
    template, inputs = _child(parent, "scan_template", list(c_leaves) + list(slice_avals))
    with trace_context(template), paused_recording():
        tape, outs = _record(body, inputs, nc, x_watched, watched)
        values: list[Array] = []
        # A fixed point: seeding the residuals too (higher-order derivatives do) may
        # reach values the first reverse pass did not read.
        for _ in range(4):
            reverse, cts = _child(template, "scan_template_reverse", outs + values)
            plan = ResidualPlan(tape, inputs, outs, watched, x_watched, [], values)
            with trace_context(reverse):
                _replay(plan, [], cts)
            found = [v for v in reverse.captures if v._trace is template]
            if {id(v) for v in found} <= {id(v) for v in values}:
                break
            values = _union(values, found)
        else:
            return None
    places = _places(tape, inputs, values)
    if places is None:
        return None
    return ResidualPlan(tape, inputs, outs, watched, x_watched, places, values)


def _union(a: Sequence[Array], b: Sequence[Array]) -> list[Array]:
    seen = {id(x) for x in a}
    return list(a) + [x for x in b if id(x) not in seen and not seen.add(id(x))]  # type: ignore


def forward_with_residuals(plan: ResidualPlan, f: Callable[..., Any], c_tree: Any,
                           x_tree: Any, carry: Sequence[Array], x: Sequence[Array]
                           ) -> tuple[list[Array], list[Array], list[Array]]:
    """One step of the forward loop: (new carry leaves, y leaves, residual values)."""
    body = _flat_body(f, c_tree, x_tree, len(carry))
    inputs = list(carry) + list(x)
    tape, outs = _record(body, inputs, len(carry), plan.x_watched, plan.captures)
    if len(tape.nodes) != len(plan.tape.nodes) or any(
            a.prim.name != b.prim.name for a, b in zip(tape.nodes, plan.tape.nodes)):
        raise InvalidArgumentError("scan: f recorded different operations when traced "
                                   "twice on the same types; it must be deterministic")
    res = [_at(p, tape, inputs) for p in plan.places]
    for r, v in zip(res, plan.values):
        if r.shape != v.shape or r.dtype != v.dtype:
            raise InvalidArgumentError("scan: f produced a value of another type when "
                                       "traced twice on the same types")
    nc = len(carry)
    return outs[:nc], outs[nc:], res


def _is_inert_zero(c: Array) -> bool:
    """A cotangent that is a known zero no tape tracks (first-order residual outputs)."""
    if tracked_by_any([c]):
        return False
    v = getattr(c, "_value", None)
    return v is not None and not np.any(v)


def scan_vjp_with_residuals(scan: Callable[..., Any], cts: list[Array], outs: list[Array],
                            args: Sequence[Array], plan: ResidualPlan, nc: int, nx: int,
                            n_res: int, length: int, reverse: bool) -> tuple:
    """The scan's cotangents from one reverse ``scan`` over its stacked residuals."""
    n_out = len(outs)
    ny = n_out - nc - n_res
    res_stacks = list(outs[nc + ny:])
    ct_c, ct_ys, ct_res = list(cts[:nc]), list(cts[nc:nc + ny]), list(cts[nc + ny:])
    live_res = [k for k, c in enumerate(ct_res) if not _is_inert_zero(to_array(c))]
    ct_res_live = [ct_res[k] for k in live_res]
    caps0 = [lax.full_like(c, 0) for c in plan.captures]

    def backward(state: tuple, sl: tuple) -> tuple:
        ct_carry, ct_caps = state
        res_i, cty_i, ctr_i = sl
        ctr = [None] * n_res
        for k, c in zip(live_res, ctr_i):
            ctr[k] = c
        acc = _replay(plan, list(res_i), list(ct_carry) + list(cty_i) + ctr)
        grads = [acc.get(id(a)) for a in plan.inputs]
        grads = [g if g is not None else lax.full_like(a, 0) for g, a in zip(grads, plan.inputs)]
        g_caps = [lax.add(a, acc[id(c)]) if id(c) in acc else a
                  for a, c in zip(ct_caps, plan.captures)]
        return (grads[:nc], g_caps), [g for g, w in zip(grads[nc:], plan.x_watched) if w]

    (g_c0, g_caps), g_xs = scan(backward, (ct_c, caps0), (res_stacks, ct_ys, ct_res_live),
                                length=length, reverse=not reverse)
    cap_ct = {id(c): g for c, g in zip(plan.captures, g_caps)}
    g_xs_iter = iter(g_xs or [])
    g_x = [next(g_xs_iter) if w else None for w in plan.x_watched]
    rest = [cap_ct.get(id(a)) for a in args[nc + nx:]]
    return (*g_c0, *g_x, *rest)


def scan_vjp_recompute(scan: Callable[..., Any], cts: list[Array], args: Sequence[Array],
                       f: Callable[..., Any], c_tree: Any, x_tree: Any, nc: int, nx: int,
                       n_captures: int, length: int, reverse: bool) -> tuple:
    """Recompute the carries (a forward ``scan``), then a reverse scan of the body's
    vjp. Operands: the ``nc`` carry leaves, the ``nx`` xs leaves, the ``n_captures``
    values ``f`` closes over, then any other value the loop captured (no gradient: f
    does not read it)."""
    c0, xs = list(args[:nc]), list(args[nc:nc + nx])
    captures = list(args[nc + nx:nc + nx + n_captures])
    ct_c, ct_ys = list(cts[:nc]), list(cts[nc:])
    body = _flat_body(f, c_tree, x_tree, nc)

    def flat_f(*leaves: Array) -> list[Array]:
        carry, ys = body(*leaves)
        return carry + ys

    def forward(c: list[Array], x: list[Array]) -> tuple:
        return body(*c, *x)[0], list(c)
    _, carries = scan(forward, c0, xs, length=length, reverse=reverse)

    def backward(state: tuple, sl: tuple) -> tuple:
        ct_c, ct_caps = state
        c_i, x_i, cty_i = sl
        grads = vjp_with_captures(flat_f, list(c_i) + list(x_i), captures,
                                  list(ct_c) + list(cty_i))
        g_c, g_x, g_caps = grads[:nc], grads[nc:nc + nx], grads[nc + nx:]
        return (g_c, [lax.add(a, b) for a, b in zip(ct_caps, g_caps)]), g_x

    caps0 = [lax.full_like(c, 0) for c in captures]
    (g_c0, g_caps), g_xs = scan(backward, (ct_c, caps0), (carries, xs, ct_ys),
                                reverse=not reverse)
    others = (None,) * (len(args) - nc - nx - n_captures)
    return (*g_c0, *(g_xs or []), *g_caps, *others)


__all__ = ["ResidualPlan", "plan_residuals", "forward_with_residuals",
           "scan_vjp_with_residuals", "scan_vjp_recompute"]
