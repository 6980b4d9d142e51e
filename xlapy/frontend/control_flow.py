"""Structured control flow: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``.

Inside a trace the branch / body functions are traced into nested computations and
lowered to HLO ``conditional`` and ``while``; values they close over are captured as
extra tuple elements (see :mod:`xlapy.frontend.tracing`). Eagerly they run as Python
control flow on Arrays with the semantics of the compiled form: operands become Arrays,
the branches / body are first traced (throwaway traces, nothing is compiled) and checked
exactly as under ``jit`` (a body that changes the carry's dtype is an error in both
modes), and results get the types and weak types ``jit`` gives them.

Autodiff: while tracing a nested body no tape records; instead ``cond`` and ``scan``
record one node whose rule differentiates the branch or body (``scan`` recomputes each
step's carry in a forward pass, then runs the body's reverse pass in a reverse scan).
``fori_loop`` with static bounds is a ``scan`` and differentiable; a ``while_loop``
on tracked values records a node whose rule explains that it cannot be reversed.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.builder import as_element_type
from ..hlo.shape import Shape
from .core import Array, current_trace, new_ref, to_array
from .pytree import tree_flatten, tree_unflatten
from .tracing import Trace, finalize_tuple_computation, trace_context


def _leaves(tree: Any) -> tuple[list[Array], Any]:
    leaves, treedef = tree_flatten(tree)
    return [to_array(x) for x in leaves], treedef


def _trace_sub(parent: Trace, name: str, fn: Callable[..., Any], leaves: Sequence[Array],
               rebuild: Callable[[list[Array]], tuple]) -> tuple[Trace, list[Array], Any]:
    """Trace ``fn(*rebuild(params))`` into a nested trace; returns (trace, out leaves, tree)."""
    from .autodiff import paused_recording
    sub = Trace(name, f"{parent.name_stack}/{name}", parent)
    with trace_context(sub), paused_recording():
        params = [sub.new_param(Shape.array(as_element_type(x.dtype), x.shape),
                                weak_type=x.weak_type) for x in leaves]
        out = fn(*rebuild(params))
        outs, out_tree = _leaves(out)
        for o in outs:
            sub.instr_for(o)
    return sub, outs, out_tree


def _avals_text(xs: Sequence[Array]) -> str:
    return "(" + ", ".join(x.type_text() for x in xs) + ")"


def _union(*lists: Sequence[Array]) -> list[Array]:
    seen: dict[int, Array] = {}
    for lst in lists:
        for x in lst:
            seen.setdefault(id(x), x)
    return list(seen.values())


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
               init_val: Any) -> Any:
    """``while cond_fun(val): val = body_fun(val)``; ``val`` keeps its structure and types."""
    return _while(cond_fun, body_fun, init_val, record=True)


def _trace_while(parent: Trace, cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
                 leaves: list[Array], treedef: Any
                 ) -> tuple[Trace, list[Array], Trace, list[Array]]:
    """Trace and check ``cond_fun`` and ``body_fun`` on the loop state's types."""
    rebuild = lambda ps: (tree_unflatten(treedef, ps),)  # noqa: E731
    ctrace, couts, _ = _trace_sub(parent, "cond", cond_fun, leaves, rebuild)
    if len(couts) != 1 or couts[0].shape != () or couts[0].dtype != np.bool_:
        raise InvalidArgumentError(f"while_loop: cond_fun must return a bool scalar, got "
                                   f"{_avals_text(couts)}")
    btrace, bouts, btree = _trace_sub(parent, "body", body_fun, leaves, rebuild)
    if btree != treedef or [(o.shape, o.dtype) for o in bouts] != \
            [(x.shape, x.dtype) for x in leaves]:
        raise InvalidArgumentError(
            f"while_loop: body_fun must return the structure and types of its input; got "
            f"{btree!r} {_avals_text(bouts)} for input {treedef!r} {_avals_text(leaves)}")
    return ctrace, couts, btrace, bouts


def _retype(x: Array, weak: bool) -> Array:
    """``x`` with weak type ``weak`` (a new reference that keeps gradients)."""
    return x if x.weak_type == weak else new_ref(x, weak_type=weak)


def _eager_while(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
                 leaves: list[Array], treedef: Any) -> Any:
    """A while loop run op by op, with the checks and result types of the compiled one."""
    _trace_while(Trace("eager_while", "while"), cond_fun, body_fun, leaves, treedef)
    val = tree_unflatten(treedef, leaves)
    while bool(cond_fun(val)):
        outs, _ = _leaves(body_fun(val))
        val = tree_unflatten(treedef, [_retype(o, x.weak_type) for o, x in zip(outs, leaves)])
    return val


def _while(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any,
           record: bool) -> Any:
    trace = current_trace()
    leaves, treedef = _leaves(init_val)
    if trace is None:
        return _eager_while(cond_fun, body_fun, leaves, treedef)
    ctrace, couts, btrace, bouts = _trace_while(trace, cond_fun, body_fun, leaves, treedef)
    captures = _union(ctrace.captures, btrace.captures)
    n = len(leaves)
    cond_comp = finalize_tuple_computation(ctrace, n, captures, None,
                                           root=ctrace.instr_for(couts[0]))
    body_comp = finalize_tuple_computation(btrace, n, captures,
                                           [btrace.instr_for(o) for o in bouts], passthrough=True)
    b = trace.builder
    with trace.tag("while"):
        init = b.tuple([trace.instr_for(x) for x in list(leaves) + captures])
        w = b.while_loop(cond_comp, body_comp, init)
        outs = [b.get_tuple_element(w, i) for i in range(n)]
    results = [Array(instr=o, trace=trace, weak_type=x.weak_type) for o, x in zip(outs, leaves)]
    if record:
        from .autodiff import record_control_flow
        from .autodiff_forward import while_jvp_rule
        record_control_flow("while", _while_not_reversible, list(leaves) + captures, results,
                            jvp=while_jvp_rule(cond_fun, body_fun, treedef, n, captures))
    return tree_unflatten(treedef, results)


def _while_not_reversible(*args: Any) -> Any:
    from .source_info import located
    raise InvalidArgumentError(located(
        "reverse-mode differentiation of while_loop is not supported: its trip count is "
        "only known at run time",
        "use fori_loop with Python-int bounds or scan, which are differentiable"))


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)`` (``i`` an s32 scalar).

    With concrete bounds inside a trace it is a ``scan`` (so it can be differentiated);
    with traced bounds a ``while_loop``.
    """
    _check_fori_body(body_fun, init_val)
    if current_trace() is not None and _is_concrete(lower) and _is_concrete(upper):
        from . import lax
        lo, hi = int(np.asarray(_concrete(lower))), int(np.asarray(_concrete(upper)))

        def step(state: Any, _: Any) -> tuple:
            i, val = state
            return (lax.add(i, to_array(np.int32(1))), body_fun(i, val)), None

        (_, val), _ = scan(step, (to_array(np.int32(lo)), init_val), None,
                           length=max(hi - lo, 0))
        return val
    return _fori_while(lower, upper, body_fun, init_val)


def _check_fori_body(body_fun: Callable[[Any, Any], Any], init_val: Any) -> None:
    """``body_fun(i, val)`` must return ``val``'s structure and types (both modes)."""
    leaves, treedef = _leaves(init_val)
    parent = current_trace() or Trace("eager_fori_loop", "fori_loop")
    index = Array(np.zeros((), np.int32))
    _, outs, tree = _trace_sub(parent, "fori_body",
                               lambda i, *ls: body_fun(i, tree_unflatten(treedef, list(ls))),
                               [index] + leaves, lambda ps: ps)
    if tree != treedef or [(o.shape, o.dtype) for o in outs] != \
            [(x.shape, x.dtype) for x in leaves]:
        raise InvalidArgumentError(
            f"fori_loop: body_fun must return the structure and types of init_val; got "
            f"{tree!r} {_avals_text(outs)} for {treedef!r} {_avals_text(leaves)}")


def _is_concrete(x: Any) -> bool:
    return not (isinstance(x, Array) and x.is_traced)


def _concrete(x: Any) -> Any:
    return x._value if isinstance(x, Array) else x


def _fori_while(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any],
                init_val: Any, record: bool = True) -> Any:
    from . import lax
    lo = lax.convert_element_type(to_array(lower), np.int32)
    hi = lax.convert_element_type(to_array(upper), np.int32)
    one = to_array(np.int32(1))

    def cond(state: Any) -> Array:
        return lax.lt(state[0], hi)

    def body(state: Any) -> Any:
        i, val = state
        return (lax.add(i, one), body_fun(i, val))

    return _while(cond, body, (lo, init_val), record)[1]


def _branch_outputs(name: str, results: Sequence[tuple[Trace, list[Array], Any]]) -> None:
    _, first, tree0 = results[0]
    for k, (_, outs, tree) in enumerate(results[1:], 1):
        if tree != tree0 or [(o.shape, o.dtype) for o in outs] != \
                [(o.shape, o.dtype) for o in first]:
            raise InvalidArgumentError(
                f"{name}: branches must return the same structure and types; branch 0 returns "
                f"{tree0!r} {_avals_text(first)}, branch {k} returns {tree!r} "
                f"{_avals_text(outs)}")


def _trace_branches(parent: Trace, branches: Sequence[Callable[..., Any]], leaves: list[Array],
                    treedef: Any, name: str) -> list[tuple[Trace, list[Array], Any]]:
    """Trace every branch on the operands' types and check that their outputs agree."""
    rebuild = lambda ps: tree_unflatten(treedef, ps)  # noqa: E731
    results = [_trace_sub(parent, f"branch_{k}", fn, leaves, rebuild)
               for k, fn in enumerate(branches)]
    _branch_outputs(name, results)
    return results


def _eager_conditional(index: int, branches: Sequence[Callable[..., Any]],
                       operands: Sequence[Any], name: str) -> Any:
    """``branches[index]`` run op by op, with the checks and result types of the compiled
    conditional (an output is weakly typed only when it is in every branch)."""
    leaves, treedef = _leaves(tuple(operands))
    results = _trace_branches(Trace(f"eager_{name}", name), branches, leaves, treedef, name)
    weak = [all(r[1][i].weak_type for r in results) for i in range(len(results[0][1]))]
    outs, out_tree = _leaves(branches[index](*tree_unflatten(treedef, leaves)))
    return tree_unflatten(out_tree, [_retype(o, w) for o, w in zip(outs, weak)])


def _conditional(selector: Array, branches: Sequence[Callable[..., Any]],
                 operands: Sequence[Any], name: str) -> Any:
    trace = current_trace()
    leaves, treedef = _leaves(tuple(operands))
    results = _trace_branches(trace, branches, leaves, treedef, name)
    comps, branch_operands = [], []
    b = trace.builder
    for sub, outs, _ in results:
        comps.append(finalize_tuple_computation(sub, len(leaves), sub.captures,
                                                [sub.instr_for(o) for o in outs]))
    with trace.tag(name):
        for sub, _, _ in results:
            branch_operands.append(b.tuple([trace.instr_for(x)
                                            for x in list(leaves) + sub.captures]))
        sel = trace.instr_for(selector)
        if selector.dtype == np.bool_:      # XLA's pred form takes (true, false)
            comps, branch_operands = comps[::-1], branch_operands[::-1]
        c = b.conditional(sel, branch_operands, comps)
        _, outs0, out_tree = results[0]
        outs = [b.get_tuple_element(c, i) for i in range(len(outs0))]
    weak = [all(r[1][i].weak_type for r in results) for i in range(len(outs0))]
    arrays = [Array(instr=o, trace=trace, weak_type=w) for o, w in zip(outs, weak)]
    captures = _union(*[sub.captures for sub, _, _ in results])
    from .autodiff import record_control_flow
    record_control_flow(name, _cond_rule(selector, branches, leaves, treedef, captures, name),
                        list(leaves) + captures, arrays)
    return tree_unflatten(out_tree, arrays)


def _cond_rule(selector: Array, branches: Sequence[Callable[..., Any]], leaves: list[Array],
               treedef: Any, captures: list[Array], name: str) -> Callable[..., Any]:
    """The vjp of a conditional: a conditional over the branches' vjps."""
    from .autodiff import vjp_with_captures
    n = len(leaves)

    def rule(cts: list[Array], outs: list[Array], *args: Array) -> tuple:
        def backward(fn: Callable[..., Any]) -> Callable[..., Any]:
            def run(ops: list[Array], out_cts: list[Array]) -> list[Array]:
                flat = lambda *xs: _leaves(fn(*tree_unflatten(treedef, list(xs))))[0]  # noqa: E731
                return vjp_with_captures(flat, ops, captures, out_cts)
            return run
        fns = [backward(f) for f in branches]
        if selector.dtype == np.bool_:
            res = cond(selector, fns[1], fns[0], list(args[:n]), list(cts))
        else:
            res = switch(selector, fns, list(args[:n]), list(cts))
        return tuple(res)
    return rule


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any],
         *operands: Any) -> Any:
    """``true_fun(*operands) if pred else false_fun(*operands)`` (lowered to ``conditional``)."""
    from . import lax
    pred = to_array(pred)
    if pred.shape != ():
        raise InvalidArgumentError(f"cond: pred must be a scalar, got {pred.type_text()}")
    if pred.dtype != np.bool_:
        pred = lax.ne(pred, lax.convert_element_type(0, pred.dtype))
    if current_trace() is None:
        return _eager_conditional(int(bool(pred)), [false_fun, true_fun], operands, "cond")
    return _conditional(pred, [false_fun, true_fun], operands, "cond")


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """``branches[clamp(index, 0, len(branches) - 1)](*operands)``."""
    from . import lax
    if not branches:
        raise InvalidArgumentError("switch: needs at least one branch")
    index = lax.convert_element_type(to_array(index), np.int32)
    if index.shape != ():
        raise InvalidArgumentError(f"switch: index must be a scalar, got {index.type_text()}")
    index = lax.clamp(np.int32(0), index, np.int32(len(branches) - 1))
    if current_trace() is None:
        return _eager_conditional(int(index), list(branches), operands, "switch")
    if len(branches) == 1:
        leaves, treedef = _leaves(tuple(operands))
        outs, out_tree = _leaves(branches[0](*tree_unflatten(treedef, leaves)))
        return tree_unflatten(out_tree, outs)
    return _conditional(index, list(branches), operands, "switch")


def scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None,
         length: int | None = None, reverse: bool = False) -> tuple[Any, Any]:
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns (carry, stacked ys)."""
    from . import lax
    x_leaves, x_tree = _leaves(xs)
    lengths = {x.shape[0] for x in x_leaves if x.ndim}
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1 or any(x.ndim == 0 for x in x_leaves):
        raise InvalidArgumentError(f"scan: xs leaves need one common leading length, got "
                                   f"{sorted(lengths)} (length={length})")
    n = lengths.pop()

    def x_at(i: Any) -> Any:
        return tree_unflatten(x_tree, [
            lax.reshape(lax.dynamic_slice(x, [i] + [0] * (x.ndim - 1), (1,) + x.shape[1:]),
                        x.shape[1:]) for x in x_leaves])

    # Trace f once on the carry and x-slice types: checks, and the ys' types.
    c_leaves, c_tree = _leaves(init)
    probe_rebuild = lambda ps: (tree_unflatten(c_tree, ps[:len(c_leaves)]),  # noqa: E731
                                tree_unflatten(x_tree, ps[len(c_leaves):]))
    slice_avals = [Array(np.zeros(x.shape[1:], x.dtype), weak_type=x.weak_type) for x in x_leaves]
    trace = current_trace()
    probe, probe_outs, probe_tree = _trace_sub(trace or Trace("eager_scan", "scan"),
                                               "scan_probe", lambda c, x: f(c, x),
                                               c_leaves + slice_avals, probe_rebuild)
    carry_out_tree, y_tree = probe_tree.children if probe_tree.kind == "tuple" and \
        len(probe_tree.children) == 2 else (None, None)
    if carry_out_tree is None:
        raise InvalidArgumentError("scan: f must return a pair (carry, y)")
    carry_outs, y_avals = probe_outs[:carry_out_tree.num_leaves], \
        probe_outs[carry_out_tree.num_leaves:]
    if carry_out_tree != c_tree or [(o.shape, o.dtype) for o in carry_outs] != \
            [(c.shape, c.dtype) for c in c_leaves]:
        raise InvalidArgumentError(
            f"scan: f must return a carry with the structure and types of init; got "
            f"{carry_out_tree!r} {_avals_text(carry_outs)} for init {c_tree!r} "
            f"{_avals_text(c_leaves)}")
    if trace is None:
        return _eager_scan(f, c_leaves, c_tree, x_at, n, reverse, y_avals, y_tree)
    bufs = [lax.full_like(y, 0, shape=(n,) + y.shape) for y in y_avals]

    def body(i: Array, state: Any) -> Any:
        carry, ys = state
        idx = lax.sub(to_array(np.int32(n - 1)), i) if reverse else i
        new_carry, y = f(carry, x_at(idx))
        y_l, _ = _leaves(y)
        ys = [lax.dynamic_update_slice(buf, lax.reshape(v, (1,) + v.shape),
                                       [idx] + [0] * v.ndim) for buf, v in zip(ys, y_l)]
        return new_carry, ys

    if n:
        carry, ys = _fori_while(0, n, body, (init, bufs), record=False)
    else:                                   # no step: f (checked above) never runs
        carry, ys = tree_unflatten(c_tree, c_leaves), bufs
    carry_leaves = _leaves(carry)[0]
    from .autodiff import record_control_flow
    rule = _scan_rule(f, c_tree, x_tree, len(c_leaves), len(x_leaves), n, probe.captures,
                      reverse)
    record_control_flow("scan", rule, c_leaves + x_leaves + list(probe.captures),
                        carry_leaves + list(ys))
    return tree_unflatten(carry_out_tree, carry_leaves), tree_unflatten(y_tree, ys)


def _eager_scan(f: Callable[[Any, Any], tuple[Any, Any]], c_leaves: list[Array], c_tree: Any,
                x_at: Callable[[Any], Any], n: int, reverse: bool, y_avals: list[Array],
                y_tree: Any) -> tuple[Any, Any]:
    """``scan`` run op by op, with the compiled scan's result types: the carry keeps
    init's weak types, the stacked ys are strongly typed (also when ``n`` is 0)."""
    from . import lax
    carry, ys = tree_unflatten(c_tree, c_leaves), []
    for k in range(n):
        i = n - 1 - k if reverse else k
        carry, y = f(carry, x_at(np.int32(i)))
        outs, _ = _leaves(carry)
        carry = tree_unflatten(c_tree, [_retype(o, c.weak_type) for o, c in zip(outs, c_leaves)])
        ys.append(_leaves(y)[0])
    if reverse:
        ys.reverse()
    stacked = []
    for j, aval in enumerate(y_avals):
        if n == 0:
            stacked.append(lax.full_like(aval, 0, shape=(0,) + aval.shape))
            continue
        parts = [lax.convert_element_type(y[j], aval.dtype) for y in ys]
        stacked.append(lax.concatenate([lax.reshape(p, (1,) + p.shape) for p in parts], 0))
    return tree_unflatten(c_tree, _leaves(carry)[0]), tree_unflatten(y_tree, stacked)


def _scan_rule(f: Callable[..., Any], c_tree: Any, x_tree: Any, nc: int, nx: int, n: int,
               captures: list[Array], reverse: bool) -> Callable[..., Any]:
    """The vjp of ``scan``: recompute the carries, then a reverse scan of the body's vjp."""
    from . import lax
    from .autodiff import vjp_with_captures

    def flat_f(*leaves: Array) -> list[Array]:
        carry, y = f(tree_unflatten(c_tree, list(leaves[:nc])),
                     tree_unflatten(x_tree, list(leaves[nc:])))
        return _leaves(carry)[0] + _leaves(y)[0]

    def rule(cts: list[Array], outs: list[Array], *args: Array) -> tuple:
        c0, xs = list(args[:nc]), list(args[nc:nc + nx])
        ct_c, ct_ys = list(cts[:nc]), list(cts[nc:])

        def forward(c: list[Array], x: list[Array]) -> tuple:
            return flat_f(*c, *x)[:nc], list(c)
        _, carries = scan(forward, c0, xs, length=n, reverse=reverse)

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
        return tuple(list(g_c0) + list(g_xs or []) + list(g_caps))
    return rule


__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan"]
