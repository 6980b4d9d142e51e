"""Printer of XLA's HLO text format.

Long form (the default, like XLA's dumps): ``%``-prefixed names, operand shapes
with layouts, computation signatures ``(p: shape) -> shape``. Short form
(``long=False``): bare names, no operand shapes, no signatures. Both parse back
to an equal module. Attributes are written in ``instr.attrs`` order, except that
``control-predecessors``, ``statistics``, ``metadata`` and ``backend_config`` come
last, in that order, as XLA prints them.
"""
from __future__ import annotations

from typing import Any

from . import attrs as A
from .attrs import ConvDimensionNumbers, OpMetadata, RawAttr, Window
from .ir import AliasEntry, HloComputation, HloInstruction, HloModule, StackFrameIndex
from .attrs import quote_string
from .literal import ELIDED, format_literal
from .replica_groups import ReplicaGroups
from .sharding import HloSharding
from .shape import ProgramShape, Shape

_TRAILING = ("statistics", "metadata", "backend_config")
LARGE_CONSTANT_ELEMENTS = 10


# ----------------------------------------------------------------------------- values
def _int_tree(v: Any) -> str:
    if isinstance(v, (tuple, list)):
        return "{" + ",".join(_int_tree(x) for x in v) + "}"
    return str(int(v))


def _bool(v: Any) -> str:
    return "true" if v else "false"


def _float(v: float) -> str:
    text = repr(float(v))
    return text[:-2] if text.endswith(".0") else text


def _comp_name(c: Any, long: bool) -> str:
    name = c.name if isinstance(c, HloComputation) else str(c)
    return ("%" if long else "") + name


def _shape_index(index: Any) -> str:
    return "{" + ",".join(str(i) for i in index) + "}"


def _padding(pads: Any) -> str:
    if not pads:
        return "{}"
    interior = any(p[2] if len(p) > 2 else 0 for p in pads)
    return "x".join(f"{p[0]}_{p[1]}" + (f"_{p[2] if len(p) > 2 else 0}" if interior else "")
                    for p in pads)


def _slice(triples: Any) -> str:
    parts = []
    for t in triples:
        stride = t[2] if len(t) > 2 else 1
        parts.append(f"[{t[0]}:{t[1]}]" if stride == 1 else f"[{t[0]}:{t[1]}:{stride}]")
    return "{" + ", ".join(parts) + "}"


def _dict(d: dict) -> str:
    return "{" + ",".join(f"{k}={v.text if isinstance(v, RawAttr) else quote_string(str(v))}"
                          for k, v in d.items()) + "}"


def value_to_text(kind: str | None, value: Any, long: bool = True) -> str:
    """Text of an attribute value of ``kind`` (None: guess from the Python type)."""
    if isinstance(value, (RawAttr, ReplicaGroups, HloSharding)):     # all print as their text
        return str(value)
    if kind == A.BOOL:
        return _bool(value)
    if kind == A.INT:
        return str(int(value))
    if kind == A.FLOAT:
        return _float(value)
    if kind == A.STRING:
        return quote_string(value)
    if kind in (A.ENUM, A.DIM_LABELS) and isinstance(value, str):
        return value
    if kind == A.INT_TREE:
        return _int_tree(value)
    if kind == A.BOOL_LIST:
        return "{" + ",".join(_bool(b) for b in value) + "}"
    if kind == A.COMPUTATION:
        return _comp_name(value, long)
    if kind == A.COMPUTATION_LIST:
        return "{" + ", ".join(_comp_name(c, long) for c in value) + "}"
    if kind == A.SLICE:
        return _slice(value)
    if kind == A.PADDING:
        return _padding(value)
    if kind == A.ENUM_LIST:
        return "{" + ",".join(str(v) for v in value) + "}"
    if kind == A.DICT:
        return _dict(value)
    if kind == A.BACKEND_CONFIG:
        return quote_string(value) if isinstance(value, str) else str(value)
    if kind == A.SHAPE_LIST:
        return "{" + ", ".join(s.to_text() for s in value) + "}"
    if kind == A.ALIASING:
        return "{" + ", ".join(f"{_shape_index(o)}: ({n}, {_shape_index(i)})"
                               for o, n, i in value) + "}"
    return _guess(value, long)


def _guess(value: Any, long: bool) -> str:
    """Text for a value whose attribute kind is unknown, from its Python type."""
    if isinstance(value, (Window, ConvDimensionNumbers, OpMetadata, ProgramShape, Shape)):
        text = value.to_text()
        return "{" + text + "}" if isinstance(value, ProgramShape) else text
    if isinstance(value, bool):
        return _bool(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, HloComputation):
        return _comp_name(value, long)
    if isinstance(value, dict):
        return _dict(value)
    if isinstance(value, (tuple, list)):
        if value and all(isinstance(v, HloComputation) for v in value):
            return "{" + ", ".join(_comp_name(c, long) for c in value) + "}"
        if all(isinstance(v, bool) for v in value) and value:
            return "{" + ",".join(_bool(v) for v in value) + "}"
        return _int_tree(value)
    return str(value)


# ----------------------------------------------------------------------------- instructions
def _operand_list(items: list[str]) -> str:
    out = []
    for i, text in enumerate(items):
        if i and i % 5 == 0:
            text = f"/*index={i}*/" + text
        out.append(text)
    return ", ".join(out)


def _payload(instr: HloInstruction, long: bool, print_large_constants: bool) -> str:
    if instr.opcode == "constant":
        lit = instr.literal
        if (not print_large_constants and instr.shape.is_array
                and instr.shape.num_elements > LARGE_CONSTANT_ELEMENTS):
            return ELIDED
        return format_literal(lit, instr.shape)
    if instr.opcode == "parameter":
        return str(instr.parameter_number)
    if long:
        return _operand_list([f"{o.shape.to_text()} %{o.name}" for o in instr.operands])
    return _operand_list([o.name for o in instr.operands])


def instruction_to_text(instr: HloInstruction, long: bool = True,
                        print_large_constants: bool = True) -> str:
    """One instruction line (without indentation), e.g. ``%a = f32[] add(f32[] %x, f32[] %y)``."""
    pct = "%" if long else ""
    head = "ROOT " if instr.is_root else ""
    parts = [f"{head}{pct}{instr.name} = {instr.shape.to_text()} {instr.opcode}("
             f"{_payload(instr, long, print_large_constants)})"]
    for key, value in instr.attrs.items():
        if key not in _TRAILING:
            parts.append(f"{key}={value_to_text(A.ATTR_KINDS.get(key), value, long)}")
    if instr.control_predecessors:
        parts.append("control-predecessors={" + ", ".join(
            f"{pct}{c.name}" for c in instr.control_predecessors) + "}")
    for key in _TRAILING:
        if key in instr.attrs:
            parts.append(f"{key}={value_to_text(A.ATTR_KINDS.get(key), instr.attrs[key], long)}")
    return ", ".join(parts)


# ----------------------------------------------------------------------------- computations
def computation_to_text(comp: HloComputation, long: bool = True,
                        print_large_constants: bool = True) -> str:
    """A whole computation, ``[ENTRY] %name (params) -> result {`` ... ``}``."""
    head = "ENTRY " if comp.is_entry else ""
    if long:
        params = ", ".join(f"{p.name}: {p.shape.to_text(print_layout=False)}"
                           for p in comp.parameters if p is not None)
        result = comp.root.shape.to_text(print_layout=False) if comp.root is not None else "()"
        lines = [f"{head}%{comp.name} ({params}) -> {result} {{"]
    else:
        lines = [f"{head}{comp.name} {{"]
    for instr in comp.post_order():
        lines.append("  " + instruction_to_text(instr, long, print_large_constants))
    tail = "}"
    if comp.execution_thread is not None:
        tail += f", execution_thread={quote_string(comp.execution_thread)}"
    lines.append(tail)
    return "\n".join(lines)


# ----------------------------------------------------------------------------- module
def _header_value(key: str, value: Any) -> str:
    if isinstance(value, RawAttr):
        return value.text
    if key == "entry_computation_layout" and isinstance(value, ProgramShape):
        return "{" + value.to_text() + "}"
    if key == "input_output_alias":
        entries = [f"{_shape_index(e.output_index)}: ({e.param_number}, "
                   f"{_shape_index(e.param_index)}, {e.kind})" for e in value
                   if isinstance(e, AliasEntry)]
        return "{ " + ", ".join(entries) + " }" if entries else "{}"
    if key == "buffer_donor":
        entries = [f"({p}, {_shape_index(i)})" for p, i in value]
        return "{ " + ", ".join(entries) + " }" if entries else "{}"
    from .parser import HEADER_KINDS
    return value_to_text(HEADER_KINDS.get(key), value)


def stack_frames_to_text(sf: StackFrameIndex) -> str:
    """JAX's debug tables (``FileNames`` ... ``StackFrames``), each followed by a blank line."""
    out = []
    if sf.file_names:
        out.append("FileNames\n" + "".join(f"{i} {quote_string(s)}\n"
                                           for i, s in enumerate(sf.file_names, 1)))
    if sf.function_names:
        out.append("FunctionNames\n" + "".join(f"{i} {quote_string(s)}\n"
                                               for i, s in enumerate(sf.function_names, 1)))
    if sf.file_locations:
        out.append("FileLocations\n" + "".join(
            f"{i} {{" + " ".join(f"{k}={v}" for k, v in loc.items()) + "}\n"
            for i, loc in enumerate(sf.file_locations, 1)))
    if sf.stack_frames:
        out.append("StackFrames\n" + "".join(
            f"{i} {{file_location_id={loc} parent_frame_id={parent}}}\n"
            for i, (loc, parent) in enumerate(sf.stack_frames, 1)))
    return "\n".join(out) + "\n" if out else ""


def module_to_text(module: HloModule, long: bool = True, print_large_constants: bool = True) -> str:
    """The whole module: header line, debug tables, computations callees first."""
    header = f"HloModule {module.name}"
    for key, value in module.attributes.items():
        header += f", {key}={_header_value(key, value)}"
    text = header + "\n\n"
    if module.stack_frames:
        text += stack_frames_to_text(module.stack_frames) + "\n"
    for comp in module.computations_post_order():
        text += computation_to_text(comp, long, print_large_constants) + "\n\n"
    return text
