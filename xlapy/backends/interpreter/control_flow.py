"""Interpreter handlers: call, fusion, while, conditional, custom-call and the token/barrier ops.

Values are never mutated in place by the interpreter, so ``output_to_operand_aliasing``
of fusions and custom-calls has no observable effect here.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ExecutionError, InvalidArgumentError, UnimplementedError
from ...hlo.ir import HloInstruction
from .evaluator import CUSTOM_CALLS, TOKEN, Evaluator, describe, handler


@handler("call")
def _call(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return ev.call(instr.to_apply, operands)


@handler("fusion")
def _fusion(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    # The fusion kind (kLoop, kInput, kOutput, kCustom) only guides code generation.
    return ev.call(instr.attrs["calls"], operands)


def _as_bool(value: Any, instr: HloInstruction) -> bool:
    a = np.asarray(value)
    if a.shape != ():
        raise InvalidArgumentError(f"while condition must return pred[], got shape {a.shape}: "
                                   f"{describe(instr)}")
    return bool(a)


@handler("while")
def _while(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    condition, body = instr.attrs["condition"], instr.attrs["body"]
    state = operands[0]
    limit = ev.max_while_iterations
    iterations = 0
    while _as_bool(ev.call(condition, [state]), instr):
        if limit is not None and iterations >= limit:
            raise ExecutionError(f"while loop did not finish within {limit} iterations "
                                 f"(max_while_iterations): {describe(instr)}")
        state = ev.call(body, [state])
        iterations += 1
    return state


@handler("conditional")
def _conditional(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    selector = np.asarray(operands[0])
    branches = instr.attrs.get("branch_computations")
    if branches is None:
        true_comp = instr.attrs.get("true_computation")
        false_comp = instr.attrs.get("false_computation")
        if true_comp is None or false_comp is None or len(operands) != 3:
            raise InvalidArgumentError("conditional needs true_computation, false_computation and "
                                       f"three operands, or branch_computations: {describe(instr)}")
        if bool(selector):
            return ev.call(true_comp, [operands[1]])
        return ev.call(false_comp, [operands[2]])
    branches = list(branches)
    if len(operands) != len(branches) + 1:
        raise InvalidArgumentError(f"conditional with {len(branches)} branches needs "
                                   f"{len(branches) + 1} operands, got {len(operands)}: "
                                   f"{describe(instr)}")
    if selector.dtype == np.bool_:
        # A pred selector picks branch 0 for true and branch 1 for false.
        index = 0 if bool(selector) else 1
    else:
        index = int(selector)
        if not 0 <= index < len(branches):
            index = len(branches) - 1   # out-of-range indices run the last branch
    return ev.call(branches[index], [operands[index + 1]])


@handler("custom-call")
def _custom_call(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    target = instr.attrs.get("custom_call_target", "")
    fn = CUSTOM_CALLS.get(target)
    if fn is None:
        raise UnimplementedError(f"custom-call target '{target}' is not implemented by the "
                                 f"interpreter: {describe(instr)}")
    return fn(ev, instr, operands)


@handler("opt-barrier", "domain")
def _identity(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return operands[0]


@handler("add-dependency")
def _add_dependency(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return operands[0]


@handler("after-all")
def _after_all(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return TOKEN
