"""Analyses and rewrite helpers shared by the while-loop passes.

- :func:`compute_while_loop_trip_count`: the static trip count of a loop written in the
  canonical counter form (XLA's ``ComputeWhileLoopTripCount`` pattern match): an integer
  induction variable ``i`` in the loop tuple, initialised to a constant, updated in the body
  by ``add(i, c)`` / ``subtract(i, c)`` and compared in the condition against a constant
  with ``LT/LE/GT/GE/NE``. Loops that would reach their bound only by integer overflow are
  reported as unknown.
- :func:`condition_on_init`: the condition's value on the loop's initial state, computed
  by partial constant evaluation when the parts of the state it reads are constants.
- :func:`make_private`: give a while loop its own copies of its condition and body when
  other instructions call them too, so a pass can rewrite them in place.
- :func:`remove_dead_instructions`: a computation-local dead code removal.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import XlapyError
from ..hlo.ir import HloComputation, HloInstruction, HloModule, clone_computation
from .hlo_utils import has_side_effect

_FLIP = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE", "NE": "NE", "EQ": "EQ"}


@dataclass(frozen=True)
class InductionVariable:
    """The canonical loop counter: state element ``index`` goes ``init, init + step, ...``
    while ``compare(value, bound, direction)`` holds."""

    index: int
    init: int
    step: int
    bound: int
    direction: str
    lo: int          # representable range of the counter's element type
    hi: int


def _scalar_int(instr: HloInstruction) -> int | None:
    """The value of an integer scalar constant, else None."""
    if instr.opcode != "constant" or isinstance(instr.literal, tuple) or instr.literal is None:
        return None
    lit = np.asarray(instr.literal)
    if lit.shape != () or lit.dtype.kind not in "iu":
        return None
    return int(lit)


def _param_gte_index(instr: HloInstruction, param: HloInstruction) -> int | None:
    """``i`` when ``instr`` is ``get-tuple-element(param), index=i``."""
    if instr.opcode == "get-tuple-element" and instr.operands[0] is param:
        return int(instr.attrs["index"])
    return None


def init_element(init: HloInstruction, index: int) -> HloInstruction | None:
    """The instruction giving element ``index`` of a loop's init when the init is a ``tuple``."""
    if init.opcode == "tuple":
        return init.operands[index]
    return None


def _init_value(init: HloInstruction, index: int) -> int | None:
    elem = init_element(init, index)
    if elem is not None:
        return _scalar_int(elem)
    if init.opcode == "constant" and isinstance(init.literal, tuple):
        lit = np.asarray(init.literal[index])
        if lit.shape == () and lit.dtype.kind in "iu":
            return int(lit)
    return None


def find_induction_variable(loop: HloInstruction) -> InductionVariable | None:
    """The canonical counter of a ``while`` (see the module docstring), or None."""
    if loop.opcode != "while" or not loop.shape.is_tuple:
        return None
    cond: HloComputation = loop.attrs["condition"]
    body: HloComputation = loop.attrs["body"]
    croot = cond.root
    if croot.opcode != "compare" or any(has_side_effect(i) for i in cond.instructions):
        return None
    cparam = cond.parameters[0]
    direction = str(croot.attrs.get("direction", ""))
    lhs, rhs = croot.operands
    index, bound = _param_gte_index(lhs, cparam), _scalar_int(rhs)
    if index is None or bound is None:
        index, bound = _param_gte_index(rhs, cparam), _scalar_int(lhs)
        direction = _FLIP.get(direction, "")
    if index is None or bound is None or direction not in ("LT", "LE", "GT", "GE", "NE"):
        return None
    shape = loop.shape.tuple_shapes[index]
    if not shape.is_array or shape.dims or not shape.element_type.is_integral:
        return None
    broot, bparam = body.root, body.parameters[0]
    if broot.opcode != "tuple":
        return None
    update = broot.operands[index]
    if update.opcode not in ("add", "subtract"):
        return None
    a, b = update.operands
    step = None
    if _param_gte_index(a, bparam) == index:
        step = _scalar_int(b)
    elif update.opcode == "add" and _param_gte_index(b, bparam) == index:
        step = _scalar_int(a)
    if step is None:
        return None
    if update.opcode == "subtract":
        step = -step
    init = _init_value(loop.operands[0], index)
    if init is None:
        return None
    info = np.iinfo(shape.dtype)
    return InductionVariable(index, init, step, bound, direction, int(info.min), int(info.max))


def _holds(direction: str, value: int, bound: int) -> bool:
    return {"LT": value < bound, "LE": value <= bound, "GT": value > bound,
            "GE": value >= bound, "NE": value != bound}[direction]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def compute_while_loop_trip_count(loop: HloInstruction) -> int | None:
    """How many times the body of ``loop`` runs, when its counter is canonical; else None."""
    iv = find_induction_variable(loop)
    if iv is None:
        return None
    v0, s, b, d = iv.init, iv.step, iv.bound, iv.direction
    if not _holds(d, v0, b):
        return 0
    if d == "LT" and s > 0:
        trips = _ceil_div(b - v0, s)
    elif d == "LE" and s > 0:
        trips = (b - v0) // s + 1
    elif d == "GT" and s < 0:
        trips = _ceil_div(v0 - b, -s)
    elif d == "GE" and s < 0:
        trips = (v0 - b) // (-s) + 1
    elif d == "NE" and s != 0 and (b - v0) % s == 0 and (b - v0) // s > 0:
        trips = (b - v0) // s
    else:
        return None          # never terminates, or only through wrap-around
    last = v0 + trips * s    # the value the final body run computes
    if not iv.lo <= last <= iv.hi:
        return None
    return trips


Evaluate = Callable[[HloInstruction, list], Any]


def condition_on_init(loop: HloInstruction, evaluate: Evaluate | None) -> bool | None:
    """The loop condition on the initial state, if it depends only on constant init elements.

    Walks the condition in post order, evaluating (with ``evaluate``, the constant-folding
    hook) every side-effect-free instruction that calls no computation and whose operands
    are known; the elements of the
    parameter are known where the init is a tuple whose element is a constant (or the init
    is a tuple constant).
    """
    if evaluate is None or not loop.shape.is_tuple:
        return None
    cond: HloComputation = loop.attrs["condition"]
    param, init = cond.parameters[0], loop.operands[0]
    known: dict[int, Any] = {}
    for instr in cond.post_order():
        if instr is param:
            continue
        index = _param_gte_index(instr, param)
        if index is not None:
            if init.opcode == "constant" and isinstance(init.literal, tuple):
                known[id(instr)] = init.literal[index]
            else:
                elem = init_element(init, index)
                if elem is not None and elem.opcode == "constant":
                    known[id(instr)] = elem.literal
            continue
        if instr.opcode == "constant":
            known[id(instr)] = instr.literal
            continue
        if (instr.opcode == "parameter" or instr.called_computations or has_side_effect(instr)
                or not all(id(o) in known for o in instr.operands)):
            continue
        try:
            known[id(instr)] = evaluate(instr, [known[id(o)] for o in instr.operands])
        except XlapyError:       # an instruction the evaluator cannot handle stays unknown
            continue
    value = known.get(id(cond.root))
    if value is None:
        return None
    return bool(np.asarray(value))


def count_callers(module: HloModule, comp: HloComputation) -> int:
    """How many times instructions of ``module`` name ``comp`` as a called computation."""
    return sum(1 for instr in module.instructions() for c in instr.called_computations
               if c is comp)


def _clone_fresh(module: HloModule, comp: HloComputation) -> HloComputation:
    """A copy of ``comp`` added to ``module`` with module-unique computation/instruction names."""
    new = clone_computation(comp, name=module.unique_name(comp.name))
    for instr in new.instructions:
        instr.name = module.unique_name(instr.name)
    module.add_computation(new)
    return new


def make_private(loop: HloInstruction) -> None:
    """Make ``loop`` the only caller of its condition and body (cloning them if shared)."""
    module = loop.parent.parent
    for key in ("condition", "body"):
        comp = loop.attrs[key]
        if count_callers(module, comp) > 1:
            loop.attrs[key] = _clone_fresh(module, comp)


def has_control_dependencies(instr: HloInstruction) -> bool:
    """``instr`` has control predecessors or is one for another instruction."""
    if instr.control_predecessors:
        return True
    comp = instr.parent
    return comp is not None and any(instr in i.control_predecessors for i in comp.instructions)


def remove_dead_instructions(comp: HloComputation) -> None:
    """Remove instructions that neither the root nor a side-effecting instruction needs
    (parameters stay)."""
    live: set[int] = set()
    stack = [i for i in comp.instructions
             if i is comp.root or i.opcode == "parameter" or has_side_effect(i)]
    while stack:
        instr = stack.pop()
        if id(instr) in live:
            continue
        live.add(id(instr))
        stack.extend(instr.operands)
        stack.extend(instr.control_predecessors)
    for instr in reversed(comp.post_order()):
        if id(instr) not in live:
            instr.users = [u for u in instr.users if id(u) in live]
            comp.remove_instruction(instr)


__all__ = ["InductionVariable", "compute_while_loop_trip_count", "condition_on_init",
           "count_callers", "find_induction_variable", "has_control_dependencies",
           "init_element", "make_private", "remove_dead_instructions"]
