"""The HLO verifier: checks a module's IR invariants and reports every problem at once.

``verify_module(module)`` raises :class:`~xlapy.errors.VerificationError` whose message
lists one problem per line (``computation/instruction: what is wrong``); the list is also
on the error's ``problems`` attribute. Checks: known opcodes, operand counts, required
attributes, shapes against shape inference (layouts ignored; dot and convolution may
produce another element type), called computations' signatures (via the shape rules),
operands in the same computation, one root, parameter numbering, unique names, no cycles
(of instructions, or of computations calling each other), ``entry_computation_layout``
and ``input_output_alias`` against the entry signature, collectives' replica groups and
permute pairs against ``replica_count``/``num_partitions``, shardings against their
shapes and ``num_partitions``.
"""
from __future__ import annotations

from ..errors import ShapeError, VerificationError
from .ir import HloComputation, HloInstruction, HloModule
from .literal import is_elided
from .opcodes import ASYNC_SUFFIXES, OPCODES
from .replica_groups import collective_problems, has_participants, participant_count
from .shape import Shape
from .sharding import HloSharding
from .shape_inference import has_rule, infer_instruction_shape, same_dims, same_type_and_dims

# Ops whose result element type may differ from what the operands imply.
_FLEXIBLE_ELEMENT_TYPE = frozenset({"dot", "convolution"})


def _known(opcode: str) -> bool:
    if opcode in OPCODES:
        return True
    for suffix in ASYNC_SUFFIXES:
        if opcode.endswith(suffix) and opcode[: -len(suffix)] in OPCODES:
            return True
    return False


def _where(comp: HloComputation, instr: HloInstruction | None = None) -> str:
    return f"{comp.name}/{instr.name}" if instr is not None else f"computation {comp.name}"


def _check_instruction(comp: HloComputation, instr: HloInstruction, problems: list[str]) -> None:
    at = _where(comp, instr)
    if not _known(instr.opcode):
        problems.append(f"{at}: unknown opcode {instr.opcode!r}")
        return
    info = OPCODES.get(instr.opcode)
    for op in instr.operands:
        if op.parent is not comp:
            owner = op.parent.name if op.parent is not None else "no computation"
            problems.append(f"{at}: operand {op.name} belongs to {owner}, not {comp.name}")
    if info is None:
        return
    if info.arity is not None and len(instr.operands) != info.arity:
        problems.append(f"{at}: {instr.opcode} takes {info.arity} operand(s), has "
                        f"{len(instr.operands)}")
        return
    missing = [a for a in info.required if a not in instr.attrs]
    if instr.opcode == "broadcast" and "dimensions" not in instr.attrs and instr.operands \
            and instr.operands[0].shape.is_scalar:
        missing = []
    if missing:
        problems.append(f"{at}: {instr.opcode} is missing required attribute(s) "
                        f"{', '.join(missing)}")
        return
    if instr.opcode == "parameter" and instr.parameter_number is None:
        problems.append(f"{at}: parameter has no parameter number")
    if instr.opcode == "constant" and is_elided(instr.literal):
        problems.append(f"{at}: the constant's value was elided ({{...}}, as XLA prints large "
                        "constants), so the module cannot run; dump it with its constants "
                        "(XLA: --xla_dump_large_constants), or parse with "
                        "fill_elided_constants=True (zeros) to inspect shapes only")
    for callee in instr.called_computations:
        if callee.root is None:
            problems.append(f"{at}: called computation {callee.name} has no root")
            return
    if not has_rule(instr.opcode):
        if info.executable:
            problems.append(f"{at}: no shape rule for {instr.opcode}")
        return
    try:
        inferred = infer_instruction_shape(instr)
    except ShapeError as e:
        problems.append(f"{at}: {e}")
        return
    ok = (same_dims(inferred, instr.shape) if instr.opcode in _FLEXIBLE_ELEMENT_TYPE
          else same_type_and_dims(inferred, instr.shape))
    if not ok:
        problems.append(f"{at}: shape {instr.shape.to_text(False)} does not match the inferred "
                        f"{inferred.to_text(False)} of {instr.opcode}")


def _find_cycle(comp: HloComputation) -> list[str] | None:
    """Names along a cycle through operands/control predecessors, or None."""
    white, grey, black = 0, 1, 2
    color: dict[int, int] = {}
    for start in comp.instructions:
        if color.get(id(start), white) != white:
            continue
        stack: list[tuple[HloInstruction, int]] = [(start, 0)]
        path: list[HloInstruction] = [start]
        color[id(start)] = grey
        while stack:
            node, i = stack[-1]
            deps = node.operands + node.control_predecessors
            if i < len(deps):
                stack[-1] = (node, i + 1)
                dep = deps[i]
                c = color.get(id(dep), white)
                if c == grey:
                    k = next(j for j, p in enumerate(path) if p is dep)
                    return [p.name for p in path[k:]] + [dep.name]
                if c == white:
                    color[id(dep)] = grey
                    stack.append((dep, 0))
                    path.append(dep)
            else:
                color[id(node)] = black
                stack.pop()
                path.pop()
    return None


def _check_call_graph(module: HloModule, problems: list[str]) -> None:
    """Computations may not call themselves, directly or through others (XLA's call graph
    is a DAG; a recursive one never terminates). Iterative depth-first search; each cycle
    is reported at the instruction that closes it."""
    known = {id(c) for c in module.computations}
    state: dict[int, int] = {}              # 1: on the current path, 2: done
    for root in module.computations:
        if state.get(id(root)):
            continue
        path: list[HloComputation] = [root]
        stack = [iter([(i, c) for i in root.instructions for c in i.called_computations])]
        state[id(root)] = 1
        while stack:
            step = next(stack[-1], None)
            if step is None:
                state[id(path.pop())] = 2
                stack.pop()
                continue
            instr, callee = step
            if id(callee) not in known:
                continue                   # reported as "not in the module"
            if state.get(id(callee)) == 1:
                cycle = path[next(k for k, c in enumerate(path) if c is callee):]
                names = " -> ".join(c.name for c in cycle + [callee])
                problems.append(f"{_where(path[-1], instr)}: calls computation {callee.name}, "
                                f"which is already being called: the call graph is recursive "
                                f"({names})")
                continue
            if state.get(id(callee)) == 2:
                continue
            state[id(callee)] = 1
            path.append(callee)
            stack.append(iter([(i, c) for i in callee.instructions
                               for c in i.called_computations]))


def _check_computation(comp: HloComputation, problems: list[str]) -> None:
    at = _where(comp)
    if comp.root is None:
        problems.append(f"{at}: has no root instruction")
    elif not any(i is comp.root for i in comp.instructions):
        problems.append(f"{at}: root {comp.root.name} is not an instruction of the computation")
    numbers: dict[int, str] = {}
    for instr in comp.instructions:
        if instr.opcode != "parameter" or instr.parameter_number is None:
            continue
        n = instr.parameter_number
        if n in numbers:
            problems.append(f"{_where(comp, instr)}: parameter number {n} is also used by "
                            f"{numbers[n]}")
        numbers[n] = instr.name
    if numbers and sorted(numbers) != list(range(len(numbers))):
        problems.append(f"{at}: parameter numbers {sorted(numbers)} are not 0..{len(numbers) - 1}")
    for i, p in enumerate(comp.parameters):
        if p is not None and not any(x is p for x in comp.instructions):
            problems.append(f"{at}: parameter {i} ({p.name}) is not an instruction of the "
                            "computation")
    cycle = _find_cycle(comp)
    if cycle:
        problems.append(f"{at}: has a cycle {' -> '.join(cycle)}")
        return
    for instr in comp.instructions:
        _check_instruction(comp, instr, problems)


def verify_computation(comp: HloComputation) -> None:
    """Verify one computation (its instructions' structure and shapes)."""
    problems: list[str] = []
    _check_computation(comp, problems)
    _raise(problems, f"computation {comp.name}")


def _raise(problems: list[str], what: str) -> None:
    if problems:
        raise VerificationError(f"{what} failed verification ({len(problems)} problem"
                                f"{'s' if len(problems) != 1 else ''}):\n  "
                                + "\n  ".join(problems), problems)


def _subshape(shape: Shape, index) -> Shape | None:
    s = shape
    for i in index:
        if not s.is_tuple or not (0 <= i < len(s.tuple_shapes)):
            return None
        s = s.tuple_shapes[i]
    return s


def _check_module_header(module: HloModule, problems: list[str]) -> None:
    entry = module.entry
    if entry is None:
        problems.append(f"module {module.name}: has no entry computation")
        return
    if entry.root is None or any(p is None for p in entry.parameters):
        return
    sig = entry.program_shape
    layout = module.entry_computation_layout
    if layout is not None:
        ok = (len(layout.parameters) == len(sig.parameters)
              and all(same_type_and_dims(a, b) for a, b in zip(layout.parameters, sig.parameters))
              and same_type_and_dims(layout.result, sig.result))
        if not ok:
            problems.append(f"module {module.name}: entry_computation_layout "
                            f"{layout.to_text(False)} does not match the entry signature "
                            f"{sig.to_text(False)}")
    for alias in module.input_output_alias:
        out = _subshape(sig.result, alias.output_index)
        text = f"input_output_alias {{{','.join(map(str, alias.output_index))}}}"
        if out is None:
            problems.append(f"module {module.name}: {text} is not an output index of "
                            f"{sig.result.to_text(False)}")
            continue
        if not (0 <= alias.param_number < len(sig.parameters)):
            problems.append(f"module {module.name}: {text} names parameter "
                            f"{alias.param_number}, but the entry has {len(sig.parameters)}")
            continue
        param = _subshape(sig.parameters[alias.param_number], alias.param_index)
        if param is None:
            problems.append(f"module {module.name}: {text} names index {alias.param_index} "
                            f"not in parameter {alias.param_number}")
        elif not same_type_and_dims(param, out):
            problems.append(f"module {module.name}: {text} aliases output "
                            f"{out.to_text(False)} with parameter {alias.param_number} of "
                            f"shape {param.to_text(False)}")


def _check_collectives(module: HloModule, comp: HloComputation, problems: list[str]) -> None:
    """Replica groups and permute pairs against the module's replica and partition counts."""
    replicas, partitions = participant_count(module)
    for instr in comp.instructions:
        if has_participants(instr.opcode):      # replica_groups may be left out: all ids
            problems.extend(f"{_where(comp, instr)}: {instr.opcode}: {p}" for p in
                            collective_problems(instr.opcode, instr.attrs, replicas, partitions,
                                                [o.shape for o in instr.operands], instr.shape))


def _check_shardings(module: HloModule, comp: HloComputation, problems: list[str]) -> None:
    """Each ``sharding`` against its instruction's shape and, when the header gives it,
    ``num_partitions``."""
    partitions = module.attributes.get("num_partitions")
    n = partitions if isinstance(partitions, int) else None
    for instr in comp.instructions:
        sharding = instr.attrs.get("sharding")
        if isinstance(sharding, HloSharding):
            problems.extend(f"{_where(comp, instr)}: {p}"
                            for p in sharding.problems(instr.shape, n))


def verify_module(module: HloModule, *, unique_names: str = "module") -> None:
    """Verify every computation and the module header; raise VerificationError listing all
    problems found.

    ``unique_names``: ``"module"`` (the default) requires instruction names unique in the
    whole module, as XLA's verifier does after XLA's parser has renamed duplicates;
    ``"computation"`` only within each computation (what xlapy's parser guarantees and the
    backends need: hand-written HLO often reuses ``x``/``y`` in a reducer and the entry).
    """
    if unique_names not in ("module", "computation"):
        raise ValueError(f"unique_names must be 'module' or 'computation', got {unique_names!r}")
    problems: list[str] = []
    comp_names: dict[str, HloComputation] = {}
    instr_names: dict[str, str] = {}
    for comp in module.computations:
        if comp.name in comp_names:
            problems.append(f"module {module.name}: two computations are named {comp.name}")
        comp_names[comp.name] = comp
        if unique_names == "computation":
            instr_names = {}
        for instr in comp.instructions:
            if instr.name in instr_names:
                problems.append(f"{_where(comp, instr)}: instruction name {instr.name} is also "
                                f"used in {instr_names[instr.name]}")
            else:
                instr_names[instr.name] = comp.name
            for callee in instr.called_computations:
                if not any(c is callee for c in module.computations):
                    problems.append(f"{_where(comp, instr)}: calls computation {callee.name}, "
                                    "which is not in the module")
        _check_computation(comp, problems)
        _check_collectives(module, comp, problems)
        _check_shardings(module, comp, problems)
    _check_call_graph(module, problems)
    _check_module_header(module, problems)
    _raise(problems, f"module {module.name}")


__all__ = ["verify_module", "verify_computation"]
