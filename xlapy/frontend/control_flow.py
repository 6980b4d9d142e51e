"""Structured control flow: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``.

Inside a trace the branch / body functions are traced into nested computations and
lowered to HLO ``conditional`` and ``while``; values they close over are captured as
extra tuple elements (see :mod:`xlapy.frontend.tracing`). Eagerly they run as Python
control flow on Arrays with the semantics of the compiled form: operands become Arrays,
the branches / body are first traced (throwaway traces, nothing is compiled) and checked
exactly as under ``jit`` (a body that changes the carry's dtype is an error in both
modes), and results get the types and weak types ``jit`` gives them.

Under a trace each construct is one primitive (``while``, ``cond``, ``switch``, ``scan``)
defined here like any other: its lowering (the traced branches or body are its
parameters, the values they capture extra operands), its vjp and, for ``while``, its
jvp rule. Tapes record it through ``bind`` and look its rules up on the primitive.
While a nested body is traced no tape records; the rules differentiate the branch or
body instead: ``cond``/``switch`` run a conditional over the branches' vjps, ``scan``
differentiated under a tape stacks the residuals its body's reverse pass needs as extra
outputs and its vjp is one reverse scan reading them (``scan_autodiff``); ``while``
cannot be reversed (its trip count is only known at run time)
and says so, but has a forward rule (a second loop carries the state and its tangents).
``fori_loop`` with static bounds is a ``scan`` and so reversible.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.builder import as_element_type
from ..hlo.ir import HloInstruction
from ..hlo.shape import Shape
from . import lax
from .autodiff import Tape, active, paused_recording, tracked_by_any, vjp_with_captures
from .autodiff_forward import propagate
from .core import Array, LoweringContext, bind, current_trace, new_ref, primitive, to_array
from .dtypes import is_inexact
from .pytree import tree_flatten, tree_unflatten
from .scan_autodiff import forward_with_residuals, plan_residuals, scan_vjp_recompute, \
    scan_vjp_with_residuals
from .source_info import located
from .tracing import Trace, finalize_tuple_computation, trace_context

I = HloInstruction


def _leaves(tree: Any) -> tuple[list[Array], Any]:
    leaves, treedef = tree_flatten(tree)
    return [to_array(x) for x in leaves], treedef


def _trace_sub(parent: Trace, name: str, fn: Callable[..., Any], leaves: Sequence[Array],
               rebuild: Callable[[list[Array]], tuple]) -> tuple[Trace, list[Array], Any]:
    """Trace ``fn(*rebuild(params))`` into a nested trace; returns (trace, out leaves, tree)."""
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
    return _while(cond_fun, body_fun, init_val)


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


def _loop_computations(parent: Trace, cond_fun: Callable[[Any], Any],
                       body_fun: Callable[[Any], Any], leaves: list[Array], treedef: Any
                       ) -> tuple[Any, Any, list[Array]]:
    """The cond and body computations of a loop over the state ``leaves`` (traced under
    ``parent``), and the values they capture, which follow the leaves in the loop's
    state tuple."""
    ctrace, couts, btrace, bouts = _trace_while(parent, cond_fun, body_fun, leaves, treedef)
    captures = _union(ctrace.captures, btrace.captures)
    n = len(leaves)
    cond_comp = finalize_tuple_computation(ctrace, n, captures, None,
                                           root=ctrace.instr_for(couts[0]))
    body_comp = finalize_tuple_computation(btrace, n, captures,
                                           [btrace.instr_for(o) for o in bouts], passthrough=True)
    return cond_comp, body_comp, captures


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


def _while(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any) -> Any:
    trace = current_trace()
    leaves, treedef = _leaves(init_val)
    if trace is None:
        return _eager_while(cond_fun, body_fun, leaves, treedef)
    cond_comp, body_comp, captures = _loop_computations(trace, cond_fun, body_fun, leaves,
                                                        treedef)
    n = len(leaves)
    results = bind(while_p, *leaves, *captures, cond_comp=cond_comp, body_comp=body_comp, n=n,
                   cond_fun=cond_fun, body_fun=body_fun, treedef=treedef)
    return tree_unflatten(treedef, results)


while_p = primitive("while", multiple_results=True,
                    weak=lambda args, params: [a.weak_type for a in args[:params["n"]]])


@while_p.def_lowering
def _while_lower(ctx: LoweringContext, *operands: I, cond_comp: Any, body_comp: Any, n: int,
                 **closure: Any) -> list[I]:
    w = ctx.b.while_loop(cond_comp, body_comp, ctx.b.tuple(list(operands)))
    return [ctx.b.get_tuple_element(w, i) for i in range(n)]


@while_p.def_vjp
def _while_not_reversible(*args: Any, **params: Any) -> Any:
    raise InvalidArgumentError(located(
        "reverse-mode differentiation of while_loop is not supported: its trip count is "
        "only known at run time",
        "use fori_loop with Python-int bounds or scan, which are differentiable"))


def _differentiable(x: Array) -> bool:
    return is_inexact(x.dtype)


@while_p.def_jvp
def _while_jvp(tangents: list[Array | None], outs: list[Array], *args: Array,
               cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], treedef: Any,
               n: int, **lowered: Any) -> list:
    """A second loop carries the state and its tangents: its body runs ``body_fun`` under a
    tape and pushes the state's and the captures' (operands after the ``n`` state
    leaves) tangents through it. The trip count is the original loop's (same
    ``cond_fun`` on the same states)."""
    leaves, captures = list(args[:n]), list(args[n:])
    diff = [i for i in range(n) if _differentiable(leaves[i])]
    t0 = [lax.full_like(leaves[i], 0) if tangents[i] is None else
          to_array(tangents[i], leaves[i].dtype) for i in diff]
    cap_t = {id(c): t for c, t in zip(captures, tangents[n:]) if t is not None}

    def cond(state: Any) -> Any:
        return cond_fun(tree_unflatten(treedef, list(state[0])))

    def body(state: Any) -> Any:
        vals, tvals = list(state[0]), list(state[1])
        tape = Tape()
        for i in diff:
            tape.watch(vals[i])
        for c in captures:
            if id(c) in cap_t:
                tape.watch(c)
        with active(tape):
            outs_ = [to_array(o) for o in tree_flatten(body_fun(
                tree_unflatten(treedef, vals)))[0]]
        tans = {id(vals[i]): t for i, t in zip(diff, tvals)}
        tans.update(cap_t)
        propagate(tape, tans)
        new_t = [tans[id(outs_[i])] if id(outs_[i]) in tans else lax.full_like(outs_[i], 0)
                 for i in diff]
        return outs_, new_t

    _, t_final = _while(cond, body, (leaves, t0))
    result: list[Array | None] = [None] * n
    for i, t in zip(diff, t_final):
        result[i] = t
    return result


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)`` (``i`` an s32 scalar).

    With concrete bounds inside a trace it is a ``scan`` (so it can be differentiated);
    with traced bounds a ``while_loop``.
    """
    _check_fori_body(body_fun, init_val)
    if current_trace() is not None and _is_concrete(lower) and _is_concrete(upper):
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
                init_val: Any) -> Any:
    lo = lax.convert_element_type(to_array(lower), np.int32)
    hi = lax.convert_element_type(to_array(upper), np.int32)
    one = to_array(np.int32(1))

    def cond(state: Any) -> Array:
        return lax.lt(state[0], hi)

    def body(state: Any) -> Any:
        i, val = state
        return (lax.add(i, one), body_fun(i, val))

    return _while(cond, body, (lo, init_val))[1]


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
    n = len(leaves)
    captures = _union(*[sub.captures for sub, _, _ in results])
    position = {id(c): 1 + n + k for k, c in enumerate(captures)}
    comps, branch_captures = [], []
    for sub, outs, _ in results:
        comps.append(finalize_tuple_computation(sub, n, sub.captures,
                                                [sub.instr_for(o) for o in outs]))
        branch_captures.append(tuple(position[id(c)] for c in sub.captures))
    _, outs0, out_tree = results[0]
    weak = [all(r[1][i].weak_type for r in results) for i in range(len(outs0))]
    prim = cond_p if name == "cond" else switch_p
    arrays = bind(prim, selector, *leaves, *captures, comps=tuple(comps),
                  branch_captures=tuple(branch_captures), n=n, out_weak=tuple(weak),
                  branches=tuple(branches), treedef=treedef)
    return tree_unflatten(out_tree, arrays)


def _conditional_lower(ctx: LoweringContext, selector: I, *operands: I, comps: tuple,
                       branch_captures: tuple, n: int, out_weak: tuple, **closure: Any
                       ) -> list[I]:
    b = ctx.b
    comps = list(comps)
    branch_operands = [b.tuple(list(operands[:n]) + [operands[j - 1] for j in caps])
                       for caps in branch_captures]
    if selector.shape.element_type.is_pred:      # XLA's pred form takes (true, false)
        comps, branch_operands = comps[::-1], branch_operands[::-1]
    c = b.conditional(selector, branch_operands, comps)
    return [b.get_tuple_element(c, i) for i in range(len(out_weak))]


def _conditional_vjp(cts: list[Array], outs: list[Array], selector: Array, *args: Array,
                     branches: tuple, treedef: Any, n: int, **lowered: Any) -> tuple:
    """A conditional over the branches' vjps (operands after the ``n`` explicit ones are
    the values the branches capture)."""
    captures = list(args[n:])

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
    return (None, *res)


cond_p = primitive("cond", multiple_results=True,
                   weak=lambda args, params: list(params["out_weak"]))
switch_p = primitive("switch", multiple_results=True,
                     weak=lambda args, params: list(params["out_weak"]))
for _p in (cond_p, switch_p):
    _p.def_lowering(_conditional_lower)
    _p.def_vjp(_conditional_vjp)


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any],
         *operands: Any) -> Any:
    """``true_fun(*operands) if pred else false_fun(*operands)`` (lowered to ``conditional``)."""
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
    if n == 0:                              # no step: f (checked above) never runs
        bufs = [lax.full_like(y, 0, shape=(0,) + y.shape) for y in y_avals]
        return tree_unflatten(c_tree, c_leaves), tree_unflatten(y_tree, bufs)

    plan = None
    # Under vmap (a batch trace on top) the batching rule re-scans: no residual outputs.
    if isinstance(trace, Trace) and tracked_by_any(c_leaves + x_leaves + list(probe.captures)):
        plan = plan_residuals(trace, f, c_leaves, c_tree, x_tree, slice_avals,
                              probe.captures, x_leaves)
    res_avals = plan.avals if plan is not None else []

    def body(state: Any) -> Any:
        i, (carry, ys) = state
        idx = lax.sub(to_array(np.int32(n - 1)), i) if reverse else i
        if plan is None:
            new_carry, y = f(carry, x_at(idx))
            y_l, _ = _leaves(y)
        else:
            c_l, y_l, res = forward_with_residuals(plan, f, c_tree, x_tree, _leaves(carry)[0],
                                                   _leaves(x_at(idx))[0])
            new_carry, y_l = tree_unflatten(c_tree, c_l), y_l + res
        ys = [lax.dynamic_update_slice(buf, lax.reshape(v, (1,) + v.shape),
                                       [idx] + [0] * v.ndim) for buf, v in zip(ys, y_l)]
        return lax.add(i, to_array(np.int32(1))), (new_carry, ys)

    # The loop state (i, (carry, ys)); only its types matter for tracing the loop.
    y_types = [(y.dtype, y.shape) for y in y_avals] + res_avals
    buf_avals = [Array(np.broadcast_to(np.zeros((), dt), (n,) + shape)) for dt, shape in y_types]
    state = (Array(np.zeros((), np.int32)), (tree_unflatten(c_tree, c_leaves), buf_avals))
    s_leaves, s_tree = _leaves(state)
    cond_comp, body_comp, loop_captures = _loop_computations(
        trace, lambda st: lax.lt(st[0], to_array(np.int32(n))), body, s_leaves, s_tree)
    operands = c_leaves + x_leaves + list(probe.captures)
    operands += [c for c in loop_captures if all(c is not o for o in operands)]
    capture_index = tuple(next(k for k, o in enumerate(operands) if o is c) for c in loop_captures)
    outs = bind(scan_p, *operands, cond_comp=cond_comp, body_comp=body_comp,
                capture_index=capture_index, nc=len(c_leaves), nx=len(x_leaves),
                n_captures=len(probe.captures),
                ys=tuple((dt, (n,) + shape) for dt, shape in y_types),
                f=f, c_tree=c_tree, x_tree=x_tree, length=n, reverse=bool(reverse),
                plan=plan, n_res=len(res_avals))
    carry_leaves = outs[:len(c_leaves)]
    ys = outs[len(c_leaves):len(c_leaves) + len(y_avals)]
    return tree_unflatten(carry_out_tree, carry_leaves), tree_unflatten(y_tree, ys)


scan_p = primitive("scan", multiple_results=True,
                   weak=lambda args, params: [a.weak_type for a in args[:params["nc"]]]
                   + [False] * len(params["ys"]))


@scan_p.def_lowering
def _scan_lower(ctx: LoweringContext, *operands: I, cond_comp: Any, body_comp: Any,
                capture_index: tuple, nc: int, ys: tuple, **closure: Any) -> list[I]:
    """The loop ``while i < length: i, carry, ys = i + 1, body(i, carry, ys)`` over the
    state (i, carry, ys buffers, captures); the buffers start as zeros."""
    b = ctx.b
    bufs = [b.broadcast_in_dim(b.constant(np.zeros((), dtype)), shape, ())
            for dtype, shape in ys]
    init = b.tuple([b.constant(np.int32(0)), *operands[:nc], *bufs,
                    *[operands[k] for k in capture_index]])
    w = b.while_loop(cond_comp, body_comp, init)
    return [b.get_tuple_element(w, 1 + k) for k in range(nc + len(ys))]


def _eager_scan(f: Callable[[Any, Any], tuple[Any, Any]], c_leaves: list[Array], c_tree: Any,
                x_at: Callable[[Any], Any], n: int, reverse: bool, y_avals: list[Array],
                y_tree: Any) -> tuple[Any, Any]:
    """``scan`` run op by op, with the compiled scan's result types: the carry keeps
    init's weak types, the stacked ys are strongly typed (also when ``n`` is 0)."""
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


@scan_p.def_vjp
def _scan_vjp(cts: list[Array], outs: list[Array], *args: Array, f: Callable[..., Any],
              c_tree: Any, x_tree: Any, nc: int, nx: int, n_captures: int, length: int,
              reverse: bool, plan: Any, n_res: int, **lowered: Any) -> tuple:
    """A reverse scan over the residuals the forward loop saved (``scan_autodiff``), or,
    without a residual plan, over the carries a second forward loop recomputes."""
    if plan is not None:
        return scan_vjp_with_residuals(scan, cts, outs, args, plan, nc, nx, n_res, length,
                                       reverse)
    return scan_vjp_recompute(scan, cts, args, f, c_tree, x_tree, nc, nx, n_captures,
                              length, reverse)


__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "while_p", "cond_p",
           "switch_p", "scan_p"]
