"""Batching rules of the control-flow primitives (``while``, ``cond``, ``switch``, ``scan``).

Under ``vmap`` the control-flow functions of ``control_flow`` trace their bodies as usual
(batched values the bodies close over become captured operands, see ``batching``) and
bind their primitive; the rules here then run the *Python* bodies again one level below,
with the batch trace pushed back on top inside each body, so the bodies are batched by
the same rules as straight-line code. Every loop-carried value is batched along axis 0
(a value unbatched on entry may become batched in the body). The JAX equivalents:

- ``while``: with a batched predicate the loop runs while any example's predicate holds,
  and the body keeps the state of finished examples (``select``);
- ``cond``/``switch``: an unbatched selector stays a conditional over batched branches;
  a batched one runs every branch and selects per example;
- ``scan``: a scan over batched carries and slices (the batch axis of ``xs`` goes second,
  after the scanned one; ``ys`` come out batched along axis 1).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import lax
from .batching import ALWAYS_RULE, BatchTrace, applying, move_to, moveaxis
from .control_flow import cond, cond_p, scan, scan_p, switch, switch_p, while_loop, while_p
from .core import Array, to_array
from .pytree import tree_flatten, tree_unflatten


def _lowered_outputs(trace: BatchTrace, out: Any) -> list[Array]:
    """The leaves of a body's result (at the batch level) batched along axis 0 below."""
    return [trace.lower_at(o, 0) for o in tree_flatten(out)[0]]


@while_p.def_batching
def _while_batch(vals: Sequence[Array], dims: Sequence[int | None], *, cond_fun: Callable,
                 body_fun: Callable, treedef: Any, n: int, **lowered: Any) -> tuple:
    trace = applying()
    size = trace.axis_size
    init = [move_to(v, d, 0, size) for v, d in zip(vals[:n], dims[:n])]

    def state_at_batch(state: Sequence[Array]) -> Any:
        return tree_unflatten(treedef, [trace.wrap(s, 0) for s in state])

    def predicate(state: Sequence[Array]) -> tuple[Array, int | None]:
        with trace.entered():
            return trace.unwrap(to_array(cond_fun(state_at_batch(state))))

    def batched_cond(state: list[Array]) -> Array:
        p, d = predicate(state)
        return p if d is None else lax.reduce_or(p, (0,))

    def batched_body(state: list[Array]) -> list[Array]:
        p, d = predicate(state)
        with trace.entered():
            new = _lowered_outputs(trace, body_fun(state_at_batch(state)))
        if d is None:
            return new
        return [lax.select(lax.broadcast_in_dim(p, v.shape, (0,)), v, s)
                for v, s in zip(new, state)]

    out = while_loop(batched_cond, batched_body, init)
    return list(out), [0] * n


def _conditional_batch(vals: Sequence[Array], dims: Sequence[int | None], *,
                       branches: tuple, treedef: Any, n: int, **lowered: Any) -> tuple:
    trace = applying()
    selector, d_sel = vals[0], dims[0]
    op_vals, op_dims = list(vals[1:1 + n]), list(dims[1:1 + n])
    if d_sel is None:
        def lowered_branch(fn: Callable) -> Callable:
            def run(*state: Array) -> list[Array]:
                with trace.entered():
                    ops = [trace.wrap(s, d) for s, d in zip(state, op_dims)]
                    return _lowered_outputs(trace, fn(*tree_unflatten(treedef, ops)))
            return run
        fns = [lowered_branch(f) for f in branches]
        if selector.dtype == np.bool_:
            res = cond(selector, fns[1], fns[0], *op_vals)
        else:
            res = switch(selector, fns, *op_vals)
        return list(res), [0] * len(res)
    # A batched selector: every branch runs, each example takes its own branch's result.
    with trace.entered():
        ops = tree_unflatten(treedef, [trace.wrap(v, d) for v, d in zip(op_vals, op_dims)])
        outs = [tree_flatten(f(*ops))[0] for f in branches]
        index = lax.convert_element_type(trace.wrap(selector, d_sel), np.int32)
        result = [to_array(o) for o in outs[0]]
        for k in range(1, len(branches)):
            take = lax.eq(index, to_array(np.int32(k)))
            result = [lax.select(take, to_array(o, r.dtype), r) for o, r in zip(outs[k], result)]
        lowered_results = [trace.lower_at(r, 0) for r in result]
    return lowered_results, [0] * len(lowered_results)


cond_p.def_batching(_conditional_batch)
switch_p.def_batching(_conditional_batch)


@scan_p.def_batching
def _scan_batch(vals: Sequence[Array], dims: Sequence[int | None], *, f: Callable,
                c_tree: Any, x_tree: Any, nc: int, nx: int, length: int, reverse: bool,
                **lowered: Any) -> tuple:
    trace = applying()
    size = trace.axis_size
    init = [move_to(v, d, 0, size) for v, d in zip(vals[:nc], dims[:nc])]
    xs, x_dims = [], []
    for v, d in zip(vals[nc:nc + nx], dims[nc:nc + nx]):
        xs.append(v if d is None else moveaxis(v, d, 1))
        x_dims.append(None if d is None else 0)

    def step(carry: list[Array], x: list[Array]) -> tuple:
        with trace.entered():
            c = tree_unflatten(c_tree, [trace.wrap(v, 0) for v in carry])
            xb = tree_unflatten(x_tree, [trace.wrap(v, d) for v, d in zip(x, x_dims)])
            new_c, y = f(c, xb)
            return _lowered_outputs(trace, new_c), _lowered_outputs(trace, y)

    carry, ys = scan(step, init, xs, length=length, reverse=reverse)
    return list(carry) + list(ys), [0] * nc + [1] * len(ys)


ALWAYS_RULE.update({"while", "cond", "switch", "scan"})

__all__: list[str] = []
