"""Plans of thunks: how the CPU compiler turns scheduled, buffer-assigned computations into
the runtime's thunks (``executable.py`` describes the kinds), and which instructions run as
library calls (``blas.py``/``conv.py``) rather than emitted kernels.

:class:`PlanBuilder` gives every instruction of a computation's schedule a thunk: a kernel
thunk when the compiler emitted a kernel for it (``kernels``: ``id(instr)`` -> (kernel
record, address)), ``while``/``conditional``/``call`` thunks with sub-plans of the
called computations, a library thunk for dots and convolutions the libraries support, a
host-callback thunk for ``custom-call``s into Python (``callback_thunk.py``), collective
thunks (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute) that hand
their buffers to the running participant's communicator (``collective_thunk.py``), and a
fallback thunk (the reference interpreter) for the rest.
Its base, :class:`PlanBuilderBase`, is what the GPU's builder (``backends/gpu/compiler.py``)
shares with it: plans, leaf pairs and the copies and sub-plans of the control-flow thunks.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from ...hlo.ir import HloComputation, HloInstruction, HloModule
from ...passes.buffer_assignment import BufferAssignment
from ...passes.conv_output_fusion import conv_output_fusion_parts
from ...passes.liveness import FORWARDING_OPS
from ..interpreter.host_callbacks import is_host_callback
from . import blas, conv
from .callback_thunk import HostCallbackThunk
from .executable import buffer_ref, value_ref
from .kernel_api import indexed_leaves, kernel_buffers
from .thunks import (BufferRef, CallThunk, ConditionalThunk, KernelThunk,
                     LibraryThunk, Memory, Plan, ThreadPool, Thunk, WhileThunk, leaves,
                     write_value)

# Instructions whose value is already in place (aliases, among them the ops forwarding
# operand 0's value, or buffers filled elsewhere).
NO_OP = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                   "after-all"}) | FORWARDING_OPS


def library_target(instr: HloInstruction) -> tuple[HloInstruction, list[int]] | None:
    """The dot/convolution a library routine computes for ``instr`` and, per operand of
    that op, which of ``instr``'s operands feeds it (a ``kCustom`` fusion wrapping one op
    on its parameters counts as that op; a convolution output fusion's third feed is its
    bias)."""
    if instr.opcode in ("dot", "convolution"):
        return instr, list(range(len(instr.operands)))
    fused = conv_output_fusion_parts(instr)     # convolution + bias (+ relu)
    if fused is not None:
        return fused[0], fused[1]
    if instr.opcode == "fusion" and instr.attrs.get("kind") == "kCustom":
        root = instr.attrs["calls"].root
        if root.opcode in ("dot", "convolution") and \
                all(o.opcode == "parameter" for o in root.operands):
            return root, [o.parameter_number for o in root.operands]
    return None


# opcode -> (supports(instr), make(instr) -> routine)
_LIBRARY: dict[str, tuple[Callable[[HloInstruction], bool], Callable[[HloInstruction], Any]]] = {
    "dot": (blas.supports_dot, blas.make_dot_thunk),
    "convolution": (conv.supports_convolution, conv.make_convolution_thunk)}


def library_supports(instr: HloInstruction) -> bool:
    """Whether ``blas.py``/``conv.py`` have a routine for ``instr``."""
    target = library_target(instr)
    return target is not None and _LIBRARY[target[0].opcode][0](target[0])


def library_routine(instr: HloInstruction) -> Callable[[list, Any], None] | None:
    """A routine ``fn(operand_views, output_view)`` from ``blas.py``/``conv.py`` for a
    ``dot``/``convolution`` (or a kCustom fusion wrapping one); None if none fits."""
    if not library_supports(instr):
        return None
    op, feeds = library_target(instr)
    fused = conv_output_fusion_parts(instr)
    fn = conv.make_convolution_thunk(op, True, fused[2]) if fused is not None else \
        _LIBRARY[op.opcode][1](op)
    if feeds == list(range(len(instr.operands))):
        return fn
    return lambda operands, out: fn([operands[k] for k in feeds], out)


def scheduled_constants(assignment: BufferAssignment,
                        module: HloModule) -> Iterator[HloInstruction]:
    """The constants of every computation that has a schedule (and so buffers)."""
    for comp_name in assignment.schedules:
        for instr in module.computation(comp_name).instructions:
            if instr.opcode == "constant":
                yield instr


def materialize_constants(memory: Memory, assignment: BufferAssignment,
                          module: HloModule) -> None:
    """Write every constant's literal into its buffer in ``memory``, in the constant's
    layout."""
    for instr in scheduled_constants(assignment, module):
        write_value(value_ref(assignment, instr), instr.literal, memory, instr)


def _read_leaf_prefixes(comp: HloComputation, param: HloInstruction) -> list[tuple[int, ...]]:
    """Shape-index prefixes of ``param`` that ``comp`` reads (through get-tuple-element)."""
    used: list[tuple[int, ...]] = []

    def visit(instr: HloInstruction, prefix: tuple[int, ...]) -> None:
        if instr is comp.root:
            used.append(prefix)
        for u in instr.users:
            if u.opcode == "get-tuple-element":
                visit(u, prefix + (u.attrs["index"],))
            else:
                used.append(prefix)
    visit(param, ())
    return used


def _passed_through(body: HloComputation) -> set[tuple[int, ...]]:
    """Shape indices of the loop state that ``body`` returns unchanged: its root's leaf is
    ``get-tuple-element`` of its parameter at the same index. (Such a parameter buffer is
    live out of the body, so buffer assignment never lets an op overwrite it.)"""
    param = body.parameters[0]
    out: set[tuple[int, ...]] = set()
    for ix, _ in indexed_leaves(param.shape):
        value = body.root
        for k in ix:
            if value.opcode != "tuple":
                break
            value = value.operands[k]
        else:
            path: list[int] = []
            while value.opcode == "get-tuple-element":
                path.insert(0, value.attrs["index"])
                value = value.operands[0]
            if value is param and tuple(path) == ix:
                out.add(ix)
    return out


class PlanBuilderBase:
    """What the CPU's and the GPU's plan builders share: a plan per computation (made once),
    value trees and leaf pairs of instructions, the copies and sub-plans of the
    control-flow thunks, and the reference interpreter for fallbacks. A backend's
    :meth:`thunk` makes the thunks; :meth:`copies` turns (source, destination) leaf pairs
    into what its thunks take (on the CPU the pairs themselves)."""

    plan_type: Callable[[str, list], Any] = Plan

    def __init__(self, module: HloModule, assignment: BufferAssignment) -> None:
        self.module, self.assignment = module, assignment
        # The reference interpreter runs instructions no kernel or library routine
        # handles; it is imported and made only for the first such instruction.
        self.evaluator: Any = None
        self.plans: dict[str, Any] = {}

    def thunk(self, instr: HloInstruction) -> Any:
        """The thunk of one scheduled instruction, None for no work."""
        raise NotImplementedError

    def plan(self, comp: HloComputation) -> Any:
        if comp.name not in self.plans:
            thunks = [t for instr in self.assignment.schedules[comp.name]
                      if (t := self.thunk(instr)) is not None]
            self.plans[comp.name] = self.plan_type(comp.name, thunks)
        return self.plans[comp.name]

    def ref(self, instr: HloInstruction):
        return value_ref(self.assignment, instr)

    def pairs(self, src: HloInstruction, dst: HloInstruction, only=None, exclude=()):
        """(source leaf, destination leaf) for the array leaves of two equal-shaped values;
        ``only``: just the leaves under these shape-index prefixes; ``exclude``: leaves
        (shape indices) to leave out."""
        s, d = leaves(self.ref(src)), leaves(self.ref(dst))
        out = list(zip(s, d))
        idx = [ix for ix, _ in indexed_leaves(dst.shape)]
        return [p for p, ix in zip(out, idx)
                if (only is None or any(ix[:len(u)] == u for u in only)) and ix not in exclude]

    def copies(self, pairs: list) -> Any:
        return pairs

    def fallback_evaluator(self) -> Any:
        if self.evaluator is None:
            from ..interpreter import Evaluator
            self.evaluator = Evaluator(self.module)
        return self.evaluator

    def call_parts(self, instr: HloInstruction) -> tuple[Any, Any, Any]:
        """A ``call``'s (callee plan, copies to its parameters, copies from its root)."""
        callee = instr.to_apply
        to_params = [p for o, prm in zip(instr.operands, callee.parameters)
                     for p in self.pairs(o, prm)]
        return self.plan(callee), self.copies(to_params), \
            self.copies(self.pairs(callee.root, instr))

    def while_parts(self, instr: HloInstruction) -> tuple:
        """A ``while``'s (init copies, condition plan, copies to the condition, predicate,
        body plan, copies to the body on the first trip and on later trips, copies from
        the body), as both backends' ``WhileThunk`` take them after their own arguments."""
        cond, body = instr.attrs["condition"], instr.attrs["body"]
        cparam, bparam = cond.parameters[0], body.parameters[0]
        through = _passed_through(body)
        paths = [ix for ix, _ in indexed_leaves(bparam.shape)]
        read = _read_leaf_prefixes(body, bparam)
        to_body_first = self.pairs(instr, bparam, read)
        to_body = self.pairs(instr, bparam, [ix for ix in read if ix not in through],
                             exclude=through)
        from_body = [pair for ix, pair in zip(paths, self.pairs(body.root, instr))
                     if ix not in through]
        c = self.copies
        return (c(self.pairs(instr.operands[0], instr)), self.plan(cond),
                c(self.pairs(instr, cparam, _read_leaf_prefixes(cond, cparam))),
                buffer_ref(self.assignment, cond.root), self.plan(body),
                c(to_body_first), c(to_body), c(from_body))

    def conditional_parts(self, instr: HloInstruction) -> tuple[BufferRef, list]:
        """A ``conditional``'s selector and, per branch, (plan, copies to its parameter,
        copies from its root)."""
        branches = instr.attrs.get("branch_computations")
        if branches is None:
            branches = [instr.attrs["true_computation"], instr.attrs["false_computation"]]
        out = []
        for k, comp in enumerate(branches):
            param = comp.parameters[0]
            out.append((self.plan(comp),
                        self.copies(self.pairs(instr.operands[k + 1], param,
                                               _read_leaf_prefixes(comp, param))),
                        self.copies(self.pairs(comp.root, instr))))
        return buffer_ref(self.assignment, instr.operands[0]), out


class PlanBuilder(PlanBuilderBase):
    """Turns computations with assigned buffers into plans of thunks."""

    def __init__(self, module: HloModule, assignment: BufferAssignment,
                 kernels: dict[int, tuple[Any, int]],
                 pool: ThreadPool | None, parallel_cost: float) -> None:
        super().__init__(module, assignment)
        self.kernels = kernels
        self.pool, self.parallel_cost = pool, parallel_cost

    def thunk(self, instr: HloInstruction) -> Thunk | None:
        op = instr.opcode
        if op in NO_OP:
            return None
        if id(instr) in self.kernels:
            record, address = self.kernels[id(instr)]
            refs = [buffer_ref(self.assignment, kb_instr, kb_index)
                    for kb_instr, kb_index in _kernel_buffer_keys(instr)]
            return KernelThunk(instr, record.name, address, refs, record.units, record.cost,
                               self.pool, self.parallel_cost)
        if op == "while":
            return WhileThunk(instr, *self.while_parts(instr))
        if op == "conditional":
            return ConditionalThunk(instr, *self.conditional_parts(instr))
        if op == "call":
            return CallThunk(instr, *self.call_parts(instr))
        if is_host_callback(instr):
            return HostCallbackThunk(instr, [self.ref(o) for o in instr.operands],
                                     self.ref(instr))
        fn = library_routine(instr)
        if fn is not None:
            return LibraryThunk(instr, fn, [self.ref(o) for o in instr.operands], self.ref(instr))
        operands, output = [self.ref(o) for o in instr.operands], self.ref(instr)
        if op in ("all-reduce", "all-reduce-start", "all-gather", "reduce-scatter", "all-to-all",
                  "collective-permute"):
            from .collective_thunk import collective_thunk
            thunk = collective_thunk(instr, self.fallback_evaluator(), operands, output)
            if thunk is not None:
                return thunk
        from .fallback import FallbackThunk
        return FallbackThunk(instr, self.fallback_evaluator(), operands, output)


def _kernel_buffer_keys(instr: HloInstruction) -> list[tuple[HloInstruction, tuple[int, ...]]]:
    """(instruction, shape index) of each entry of the kernel buffer table (kernel_api order)."""
    return [(kb.instruction, kb.index) for kb in kernel_buffers(instr)]


__all__ = ["NO_OP", "PlanBuilder", "PlanBuilderBase", "library_target",
           "library_supports", "library_routine", "materialize_constants",
           "scheduled_constants"]
