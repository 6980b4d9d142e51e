"""Shape rules of calls and control flow (call, while, conditional, fusion, custom-call,
opt-barrier, after-all, add-dependency, domain, async-start/update/done) and of the leaves
(constant, parameter)."""
from __future__ import annotations

import numpy as np

from .. import types as T
from ..shape import Shape
from . import Ctx, rule, same_type_and_dims, shape_text
from .computations import check_parameters, signature_text
from .custom_calls import check_custom_call


def _result_of(comp) -> Shape:
    return comp.program_shape.result.without_layout()


@rule("call")
def call(ctx: Ctx) -> Shape:
    """``to_apply`` takes the operands; result is its root's shape."""
    comp = ctx.computation("to_apply")
    check_parameters(ctx, "to_apply", comp, ctx.operands)
    return _result_of(comp)


@rule("fusion")
def fusion(ctx: Ctx) -> Shape:
    """The fused computation (``calls``) takes the operands; result is its root's shape."""
    comp = ctx.computation("calls")
    check_parameters(ctx, "calls", comp, ctx.operands)
    return _result_of(comp)


@rule("while")
def while_(ctx: Ctx) -> Shape:
    """``condition: (T) -> pred[]``, ``body: (T) -> T``; result T (the init's shape)."""
    ctx.arity(1)
    init = ctx.operands[0]
    cond, body = ctx.computation("condition"), ctx.computation("body")
    check_parameters(ctx, "condition", cond, [init])
    check_parameters(ctx, "body", body, [init])
    r = cond.program_shape.result
    ctx.check(r.is_scalar and r.element_type is T.PRED,
              f"condition={cond.name} has signature {signature_text(cond)} but must return pred[]")
    ctx.check(same_type_and_dims(body.program_shape.result, init),
              f"body={body.name} has signature {signature_text(body)} but must return the loop "
              f"state {shape_text(init)}")
    return init.without_layout()


@rule("conditional")
def conditional(ctx: Ctx) -> Shape:
    """``conditional(pred, t_arg, f_arg)`` with true/false computations, or
    ``conditional(s32 index, args...)`` with ``branch_computations``; branch i takes operand
    i+1 and all branches return the same shape."""
    ctx.check(len(ctx.operands) >= 1, "expects a branch selector operand")
    sel = ctx.array(0, "branch selector")
    ctx.check(sel.is_scalar and (sel.element_type is T.PRED or sel.element_type is T.S32),
              f"branch selector {shape_text(sel)} must be pred[] or s32[]")
    if sel.element_type is T.PRED:
        names = ["true_computation", "false_computation"]
        branches = [ctx.computation(n) for n in names]
    else:
        branches = list(ctx.required("branch_computations"))
        names = [f"branch_computations[{i}]" for i in range(len(branches))]
        ctx.check(len(branches) >= 1, "branch_computations must not be empty")
    ctx.check(len(ctx.operands) == len(branches) + 1,
              f"expects {len(branches) + 1} operands (selector and one per branch), got "
              f"{len(ctx.operands)}")
    result = branches[0].program_shape.result
    for i, (name, comp) in enumerate(zip(names, branches)):
        check_parameters(ctx, name, comp, [ctx.operands[i + 1]])
        ctx.check(same_type_and_dims(comp.program_shape.result, result),
                  f"{name}={comp.name} returns {shape_text(comp.program_shape.result)} but "
                  f"{names[0]}={branches[0].name} returns {shape_text(result)}")
    return result.without_layout()


@rule("custom-call")
def custom_call(ctx: Ctx) -> Shape:
    """The declared shape (a custom call's result is whatever its target produces), checked
    for the targets xlapy runs and against ``operand_layout_constraints``
    (``custom_calls.py``)."""
    ctx.required("custom_call_target")
    declared = ctx.need_declared("shape")
    check_custom_call(ctx, declared)
    return declared.without_layout()


@rule("opt-barrier")
def opt_barrier(ctx: Ctx) -> Shape:
    """The operand's shape."""
    ctx.arity(1)
    return ctx.operands[0].without_layout()


@rule("domain")
def domain(ctx: Ctx) -> Shape:
    """The operand's shape."""
    ctx.arity(1)
    return ctx.operands[0].without_layout()


@rule("add-dependency")
def add_dependency(ctx: Ctx) -> Shape:
    """``add-dependency(value, token)``: the value's shape."""
    ctx.arity(2)
    ctx.check(ctx.operands[1].is_token, f"second operand {shape_text(ctx.operands[1])} must be "
                                        "a token")
    return ctx.operands[0].without_layout()


@rule("after-all")
def after_all(ctx: Ctx) -> Shape:
    """A token from zero or more tokens."""
    for i, s in enumerate(ctx.operands):
        ctx.check(s.is_token, f"operand {i} {shape_text(s)} must be a token")
    return Shape.token()


@rule("parameter")
def parameter(ctx: Ctx) -> Shape:
    """The declared shape."""
    ctx.arity(0)
    return ctx.need_declared("shape").without_layout()


def _literal_shape(lit) -> Shape:
    if isinstance(lit, tuple):
        return Shape.tuple(_literal_shape(x) for x in lit)
    a = np.asarray(lit)
    return Shape.array(T.from_dtype(a.dtype), a.shape)


@rule("constant")
def constant(ctx: Ctx) -> Shape:
    """The literal's shape (the declared one, whose dims must match the literal)."""
    ctx.arity(0)
    lit = ctx.attrs.get("__literal__")
    if ctx.declared is None:
        if lit is None:
            raise ctx.fail("needs a literal or a declared shape")
        return _literal_shape(lit)
    out = ctx.declared
    if lit is not None and out.is_array and not isinstance(lit, tuple):
        ctx.check(tuple(np.shape(lit)) == out.dims,
                  f"literal of shape {tuple(np.shape(lit))} does not fit {shape_text(out)}")
    return out.without_layout()


@rule("async-start")
def async_start(ctx: Ctx) -> Shape:
    """``((operands), result of calls, context...)``: the declared context elements are kept."""
    comp = ctx.computation("calls")
    check_parameters(ctx, "calls", comp, ctx.operands)
    decl = ctx.need_declared("context shape")
    ctx.check(decl.is_tuple and len(decl.tuple_shapes) >= 2,
              f"result {shape_text(decl)} must be ((operands), result, context...)")
    return Shape.tuple([Shape.tuple([s.without_layout() for s in ctx.operands]),
                        _result_of(comp)]
                       + [s.without_layout() for s in decl.tuple_shapes[2:]])


@rule("async-update")
def async_update(ctx: Ctx) -> Shape:
    """The start's (or previous update's) tuple."""
    ctx.arity(1)
    return ctx.operands[0].without_layout()

