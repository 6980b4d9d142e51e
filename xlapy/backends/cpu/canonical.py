"""Canonical HLO text: what the disk-cache key hashes (XLA's fingerprint printing).

The plain text of a traced module holds things that say nothing about what it computes:
process-wide instruction numbering (``%dot.1`` in one process, ``%dot.9`` in another
that traced something first), ``metadata`` (op names, source file and line: editing an
unrelated line of the user's file moves them) and JAX's stack-frame tables. Keyed on that
text, the same program misses the cache across processes. :func:`canonical_text` prints
a module the way XLA's ``HloPrintOptions::Canonical`` / fingerprint printing does:

- computations are renamed ``c0, c1, ...`` in a deterministic order (those reachable from
  the entry, callees first, in the order the entry's instructions call them; then any
  other computation in stored order), instructions ``i0, i1, ...`` per computation in a
  post order from the root (operands in operand order, then control predecessors;
  instructions the root does not reach follow, in stored order);
- ``metadata`` and the module's stack-frame tables are left out;
- everything else is kept: the module name and every header attribute
  (``input_output_alias``, ``entry_computation_layout``, ...), which computation is the
  entry, per instruction the shape *with its layout*, the opcode, operands in order,
  parameter numbers, constants (their bytes), every attribute in stored order (called
  computations by their canonical names; ``frontend_attributes``, ``backend_config``,
  ``sharding``, ... verbatim), control predecessors, the root, execution threads.

Two modules with the same canonical text therefore compute the same thing in the same
layouts; two that differ in anything semantic print differently. Malformed modules print
differently from every well-formed one too (an operand outside its computation or a
cycle shows up in the references), which lets the backend verify only modules it has not
compiled before (see ``compiler.py``).
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ...hlo import attrs as A
from ...hlo.ir import HloComputation, HloInstruction, HloModule, post_order_from
from ...hlo.printer import _header_value, value_to_text

# Constants with at most this many bytes are written out in hex; larger ones as a digest.
_INLINE_LITERAL_BYTES = 64
_SKIPPED_ATTRS = frozenset({"metadata"})


def _computation_order(module: HloModule) -> list[HloComputation]:
    """Computations reachable from the entry (callees first), then the others."""
    order: list[HloComputation] = []
    seen: set[int] = set()
    members = {id(c) for c in module.computations}

    def visit(comp: HloComputation) -> None:
        stack: list[tuple[HloComputation, bool]] = [(comp, False)]
        while stack:
            c, expanded = stack.pop()
            if expanded:
                order.append(c)
                continue
            if id(c) in seen:
                continue
            seen.add(id(c))
            stack.append((c, True))
            callees = [callee for instr in _instruction_order(c)
                       for callee in instr.called_computations]
            for callee in reversed(callees):
                if id(callee) not in seen and id(callee) in members:
                    stack.append((callee, False))
    if module.entry is not None:
        visit(module.entry)
    for comp in module.computations:
        if id(comp) not in seen:
            visit(comp)
    return order


def _instruction_order(comp: HloComputation) -> list[HloInstruction]:
    """Post order from the root, then from every other instruction in stored order
    (operands from other computations are left out: they print as foreign)."""
    members = {id(i) for i in comp.instructions}
    starts = ([comp.root] if comp.root is not None and id(comp.root) in members else []) \
        + list(comp.instructions)
    return post_order_from(starts, members)


def _literal_text(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, tuple):
        return "(" + ",".join(_literal_text(v) for v in value) + ")"
    data = np.ascontiguousarray(value).tobytes()
    kind = np.asarray(value).dtype.str
    if len(data) <= _INLINE_LITERAL_BYTES:
        return f"{kind}:{data.hex()}"
    return f"{kind}:{len(data)}:sha256:{hashlib.sha256(data).hexdigest()}"


def canonical_text(module: HloModule) -> str:
    """The canonical text of ``module`` (see the module docstring)."""
    comps = _computation_order(module)
    cnames = {id(c): f"c{k}" for k, c in enumerate(comps)}

    def comp_ref(c: Any) -> str:
        return cnames.get(id(c), f"?external:{getattr(c, 'name', c)}")

    lines = [f"HloModule {module.name}"]
    for key, value in module.attributes.items():
        lines.append(f"  {key}={_header_value(key, value)}")
    for comp in comps:
        order = _instruction_order(comp)
        names = {id(i): f"i{k}" for k, i in enumerate(order)}

        def ref(i: HloInstruction) -> str:
            return names.get(id(i), f"?foreign:{i.name}")
        entry = "ENTRY " if comp is module.entry else ""
        params = ",".join(ref(p) if p is not None else "?" for p in comp.parameters)
        lines.append(f"{entry}{comp_ref(comp)} ({params}) thread={comp.execution_thread!r} {{")
        for instr in order:
            if instr.opcode == "constant":
                payload = _literal_text(instr.literal)
            elif instr.opcode == "parameter":
                payload = str(instr.parameter_number)
            else:
                payload = ",".join(ref(o) for o in instr.operands)
            parts = [f"{'ROOT ' if instr is comp.root else ''}{ref(instr)} = "
                     f"{instr.shape.to_text()} {instr.opcode}({payload})"]
            for key, value in instr.attrs.items():
                if key in _SKIPPED_ATTRS:
                    continue
                kind = A.ATTR_KINDS.get(key)
                if isinstance(value, HloComputation):
                    text = comp_ref(value)
                elif kind == A.COMPUTATION_LIST or (
                        isinstance(value, (list, tuple)) and value
                        and all(isinstance(v, HloComputation) for v in value)):
                    text = "{" + ",".join(comp_ref(v) for v in value) + "}"
                else:
                    text = value_to_text(kind, value, True)
                parts.append(f"{key}={text}")
            if instr.control_predecessors:
                parts.append("control-predecessors={" + ",".join(
                    ref(c) for c in instr.control_predecessors) + "}")
            lines.append("  " + ", ".join(parts))
        if comp.root is not None and id(comp.root) not in names:
            lines.append(f"  ?root-outside:{comp.root.name}")
        lines.append("}")
    return "\n".join(lines) + "\n"


__all__ = ["canonical_text"]
