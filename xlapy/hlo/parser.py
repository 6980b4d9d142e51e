"""Parser of XLA's HLO text format (module, computations, instructions).

Grammar (as XLA prints and parses it)::

    module      ::= 'HloModule' name (',' attr)* table* computation+
    table       ::= ('FileNames'|'FunctionNames'|'FileLocations'|'StackFrames') row*
    computation ::= ['ENTRY'] name [ '(' (name ':' shape),* ')' '->' shape ] '{' instr+ '}'
                    [',' 'execution_thread' '=' string]
    instr       ::= ['ROOT'] name '=' shape opcode '(' operands ')' (',' attr '=' value)*
    operand     ::= [shape] name | shape opcode '(' operands ')' ...   (nested, anonymous)

Instruction shapes in the text are authoritative (no shape inference here).
Operands and control predecessors may refer to instructions defined later in the
same computation, and called computations may be defined after their callers:
names are resolved when the computation (or the module) is complete. Errors are
:class:`~xlapy.errors.HloParseError` with the position of the offending token.
"""
from __future__ import annotations

import logging
import re
from typing import Any

from ..errors import HloParseError
from . import attrs as A
from .attrs import RawAttr
from .ir import AliasEntry, HloComputation, HloInstruction, HloModule
from .lexer import (ARRAY_SHAPE, ATTR_NAME_BODY, NAME_BODY, SHAPE_LOOSE, Scanner,
                    braced_items, cached_shape, read_attr_name, read_shape, read_shape_index,
                    read_typed_value)
from .literal import fill_elided, read_literal
from .opcodes import ASYNC_SUFFIXES, OPCODES
from .shape import ProgramShape, Shape
from .sharding import HloSharding

log = logging.getLogger(__name__)

_OPCODE = re.compile(r"[A-Za-z][\w\-]*")
_ATTR_START = re.compile(rf"\s*({ATTR_NAME_BODY})\s*=")
_ROOT = re.compile(r"ROOT(?=[\s%])")
_ENTRY = re.compile(r"ENTRY(?=[\s%])")
_TABLE = re.compile(r"(FileNames|FunctionNames|FileLocations|StackFrames)\b")
_SPACES = re.compile(r"\s*")
_ALIAS_KIND = re.compile(r"may-alias|must-alias")
_SHAPE_START = re.compile(r"[A-Za-z][A-Za-z0-9]{0,22}\[")   # '[' within 24 characters
# Fast path (see xlapy.hlo.lexer) of an instruction up to its attributes: ``[ROOT ]%name =
# shape opcode(`` and, when they are that simple, ``0)`` or ``%a, f32[2]{0} %b)`` ...
_OPERAND = rf"(?:{ARRAY_SHAPE} )?%?{NAME_BODY}"
_INSTRUCTION_FAST = re.compile(
    rf"(?P<root>ROOT )?(?!(?:ROOT|ENTRY)[\s%])(?P<pname>%?(?P<name>{NAME_BODY})) = "
    rf"(?P<shape>{SHAPE_LOOSE}) (?P<opcode>[A-Za-z][\w\-]*)"
    rf"(?P<call>\((?:(?P<number>\d+)|(?P<operands>{_OPERAND}(?:, {_OPERAND})*))?\))?")
_ATTR_FAST = re.compile(rf", ({ATTR_NAME_BODY})=")                 # ... ``, attribute=`` ...
_NEXT_LINE_FAST = re.compile(r"\n[ \t]*[^\s,/]")                    # ... no more attributes.

HEADER_KINDS: dict[str, str] = {
    "is_scheduled": A.BOOL, "replica_count": A.INT, "num_partitions": A.INT,
    "alias_passthrough_params": A.BOOL, "entry_computation_layout": "program_shape",
    "input_output_alias": "io_alias", "buffer_donor": "buffer_donor",
    "frontend_attributes": A.DICT, "allow_spmd_sharding_propagation_to_parameters": A.BOOL_LIST,
    "allow_spmd_sharding_propagation_to_output": A.BOOL_LIST,
}


class _Pending:
    """An instruction as read from the text, before names are resolved."""

    __slots__ = ("name", "pos", "opcode", "op_pos", "shape", "operands", "attrs", "literal",
                 "parameter_number", "ctrl", "is_root", "instr", "index", "sharding_pos")

    def __init__(self, name: str, pos: int) -> None:
        self.name, self.pos = name, pos
        self.opcode, self.op_pos = "", pos
        self.shape: Shape | None = None
        self.operands: list = []          # (name, pos, declared shape) or _Pending
        self.attrs: dict[str, Any] = {}
        self.literal: Any = None
        self.parameter_number: int | None = None
        self.ctrl: list[tuple[str, int]] = []
        self.is_root = False
        self.instr: HloInstruction | None = None
        self.index = 0                    # in the computation's text order
        self.sharding_pos = -1            # where the sharding value starts


class _CompState:
    """Names and pending instructions of the computation being parsed."""

    def __init__(self, name: str, pos: int) -> None:
        self.name, self.pos = name, pos
        self.by_name: dict[str, _Pending] = {}
        self.order: list[_Pending] = []
        self.root: _Pending | None = None


class HloParser:
    """Recursive-descent parser; use :func:`parse_module`."""

    def __init__(self, text: str, fast: bool = True, fill_elided_constants: bool = False) -> None:
        self.sc = Scanner(text, fast)
        self.fill_elided_constants = fill_elided_constants
        self.names_in_module: dict[str, str] = {}     # instruction name -> computation name
        self.comp_refs: list[tuple[_Pending, str, Any]] = []
        self.num_partitions: int | None = None      # from the header, when given

    # ------------------------------------------------------------------ module
    def parse_module(self) -> HloModule:
        sc = self.sc
        p = sc.skip()
        if not sc.text.startswith("HloModule", p):
            sc.fail(f"expected 'HloModule' at the start of the module, found {sc.describe()}",
                    expected="HloModule")
        sc.pos = p + len("HloModule")
        name, _ = sc.name("the module name")
        module = HloModule(name)
        while sc.accept(","):
            key, kp = read_attr_name(sc)
            if key in module.attributes:
                sc.fail(f"duplicate module attribute '{key}'", kp)
            module.attributes[key] = self._header_value(key)
        if isinstance(module.attributes.get("num_partitions"), int):
            self.num_partitions = module.attributes["num_partitions"]
        self._tables(module)
        comps: list[tuple[HloComputation, int, bool]] = []
        seen: dict[str, int] = {}
        while not sc.at_end():
            comp, cpos, is_entry = self._computation()
            if comp.name in seen:
                sc.fail(f"duplicate computation name '{comp.name}'", cpos)
            seen[comp.name] = cpos
            comps.append((comp, cpos, is_entry))
        if not comps:
            sc.fail("the module has no computations", expected="computation")
        entries = [c for c in comps if c[2]]
        if len(entries) > 1:
            sc.fail(f"more than one ENTRY computation ('{entries[0][0].name}' and "
                    f"'{entries[1][0].name}')", entries[1][1])
        entry = entries[0][0] if entries else comps[-1][0]
        by_name = {c.name: c for c, _, _ in comps}
        for pd, key, value in self.comp_refs:
            pd.instr.attrs[key] = self._resolve_comp(value, by_name)
        for comp, _, _ in comps:
            module.add_computation(comp, is_entry=comp is entry)
        return module

    def _resolve_comp(self, value: Any, by_name: dict[str, HloComputation]) -> Any:
        if isinstance(value, tuple):
            return tuple(self._resolve_comp(v, by_name) for v in value)
        comp = by_name.get(value.name)
        if comp is None:
            self.sc.fail(f"undefined computation '{value.name}'", value.pos)
        return comp

    def _header_value(self, key: str) -> Any:
        sc = self.sc
        kind = HEADER_KINDS.get(key)
        if kind == "program_shape":
            sc.expect("{", "to open entry_computation_layout")
            p = sc.skip()
            params = read_shape(sc)
            if not params.is_tuple:
                sc.fail("expected '(' parameter shapes ')' in entry_computation_layout", p)
            sc.expect("->", "in entry_computation_layout")
            result = read_shape(sc)
            sc.expect("}", "to close entry_computation_layout")
            return ProgramShape(params.tuple_shapes, result)
        if kind == "io_alias":
            sc.expect("{")
            out: list = []
            while not sc.accept("}"):
                if out:
                    sc.expect(",", "between input_output_alias entries")
                out_index = read_shape_index(sc)
                sc.expect(":")
                sc.expect("(")
                param = sc.integer("a parameter number")
                sc.expect(",")
                param_index = read_shape_index(sc)
                alias_kind = "may-alias"
                if sc.accept(","):
                    m = sc.match(_ALIAS_KIND)
                    if not m:
                        sc.fail(f"expected may-alias or must-alias, found {sc.describe()}")
                    alias_kind = m.group(0)
                sc.expect(")")
                out.append(AliasEntry(out_index, param, param_index, alias_kind))
            return out
        if kind == "buffer_donor":
            sc.expect("{")
            donors: list = []
            while not sc.accept("}"):
                if donors:
                    sc.expect(",", "between buffer_donor entries")
                sc.expect("(")
                param = sc.integer("a parameter number")
                sc.expect(",")
                donors.append((param, read_shape_index(sc)))
                sc.expect(")")
            return donors
        if kind is None:
            log.debug("keeping unknown module attribute %s verbatim", key)
            return RawAttr(sc.balanced(f"module attribute {key}"))
        return read_typed_value(sc, kind, key)

    def _tables(self, module: HloModule) -> None:
        sc, sf = self.sc, module.stack_frames
        targets: dict[str, list] = {"FileNames": sf.file_names, "FunctionNames": sf.function_names,
                                    "FileLocations": sf.file_locations,
                                    "StackFrames": sf.stack_frames}
        while True:
            p = sc.skip()
            m = _TABLE.match(sc.text, p)
            if not m:
                return
            after = _SPACES.match(sc.text, m.end()).end()
            if sc.text[after:after + 1] in ("(", "{"):
                return                      # a computation with that name
            sc.pos = m.end()
            table = targets[m.group(1)]
            while sc.peek().isdigit():
                ip = sc.skip()
                row_id = sc.integer()
                if row_id != len(table) + 1:
                    sc.fail(f"{m.group(1)} row id {row_id} out of order, expected "
                            f"{len(table) + 1}", ip)
                if m.group(1) in ("FileNames", "FunctionNames"):
                    table.append(sc.string())
                    continue
                sc.expect("{")
                fields: dict[str, int] = {}
                while not sc.accept("}"):
                    key, _ = read_attr_name(sc)
                    fields[key] = sc.integer()
                if m.group(1) == "FileLocations":
                    table.append(fields)
                else:
                    if "file_location_id" not in fields:
                        sc.fail("stack frame needs file_location_id", ip)
                    table.append((fields["file_location_id"], fields.get("parent_frame_id", 0)))

    # ------------------------------------------------------------------ computations
    def _computation(self) -> tuple[HloComputation, int, bool]:
        sc = self.sc
        p = sc.skip()
        if sc.text.startswith("}", p):
            sc.fail("unbalanced '}': no computation is open here", p)
        is_entry = sc.match(_ENTRY) is not None
        name, npos = sc.name("a computation name")
        if sc.at("("):
            sc.pos += 1
            first = True
            while not sc.accept(")"):
                if not first:
                    sc.expect(",", "between computation parameters")
                first = False
                sc.name("a parameter name")
                sc.expect(":", "after the parameter name")
                read_shape(sc)
            sc.expect("->", "before the computation's result shape")
            read_shape(sc)
        sc.expect("{", f"to open computation '{name}'")
        state = _CompState(name, npos)
        while True:
            p = sc.skip()
            if sc.text.startswith("}", p):
                sc.pos = p + 1
                break
            if p >= len(sc.text):
                sc.fail(f"missing '}}' to close computation '{name}' (opened at line "
                        f"{sc.line_col(npos)[0]})", expected="}")
            self._instruction(state)
        comp = self._build(state)
        if sc.at(","):
            save = sc.pos
            sc.accept(",")
            key, kp = read_attr_name(sc)
            if key != "execution_thread":
                sc.pos = save
                sc.fail(f"unexpected attribute '{key}' after computation '{name}' "
                        f"(only execution_thread is allowed)", kp)
            comp.execution_thread = sc.string()
        return comp, npos, is_entry

    def _build(self, st: _CompState) -> HloComputation:
        """Create the instruction objects of a parsed computation and link names."""
        sc = self.sc
        if not st.order:
            sc.fail(f"computation '{st.name}' has no instructions", st.pos)
        comp = HloComputation(st.name)
        for i, pd in enumerate(st.order):
            pd.index = i
            pd.instr = HloInstruction(pd.opcode, pd.shape, (), pd.attrs, name=pd.name,
                                      literal=pd.literal, parameter_number=pd.parameter_number)
        forward = False                 # does an instruction use one defined after it?
        for i, pd in enumerate(st.order):
            operands = []
            for ref in pd.operands:
                if isinstance(ref, _Pending):
                    target = ref
                else:
                    name, pos, declared = ref
                    target = st.by_name.get(name) or self._lookup(st, name, pos)
                    if declared is not None and declared is not target.shape \
                            and not declared.compatible(target.shape):
                        sc.fail(f"operand '{name}' of '{pd.name}' has shape "
                                f"{target.shape.to_text()}, but the operand is written as "
                                f"{declared.to_text()}", pos)
                forward = forward or target.index > i
                operands.append(target.instr)
            pd.instr.operands = operands
            for op in operands:
                op._add_user(pd.instr)
            for cname, cpos in pd.ctrl:
                target = self._lookup(st, cname, cpos)
                forward = forward or target.index > i
                pd.instr.control_predecessors.append(target.instr)
        params: dict[int, _Pending] = {}
        for pd in st.order:
            if pd.opcode == "parameter":
                if pd.parameter_number in params:
                    sc.fail(f"duplicate parameter({pd.parameter_number}) in computation "
                            f"'{st.name}' (also '{params[pd.parameter_number].name}')", pd.op_pos)
                params[pd.parameter_number] = pd
        for n in range(len(params)):
            if n not in params:
                bad = max(params.values(), key=lambda q: q.parameter_number)
                sc.fail(f"computation '{st.name}' has parameter({bad.parameter_number}) but no "
                        f"parameter({n})", bad.op_pos)
        for pd in st.order:
            comp.add_instruction(pd.instr)
        comp.root = (st.root or st.order[-1]).instr
        if forward:
            comp.instructions = comp.post_order()
        for pd in st.order:
            self.names_in_module.setdefault(pd.name, st.name)
        return comp

    def _lookup(self, st: _CompState, name: str, pos: int) -> _Pending:
        pd = st.by_name.get(name)
        if pd is None:
            other = self.names_in_module.get(name)
            where = (f"; it is defined in computation '{other}' (operands must be in the same "
                     f"computation)" if other else "")
            self.sc.fail(f"unknown operand '{name}' in computation '{st.name}'{where}", pos)
        return pd

    # ------------------------------------------------------------------ instructions
    def _instruction(self, st: _CompState) -> None:
        sc = self.sc
        p = sc.skip()
        m = _INSTRUCTION_FAST.match(sc.text, p) if sc.fast else None
        if m:
            is_root, name, npos = m.group("root") is not None, m.group("name"), m.start("pname")
            sc.pos = m.start("shape")
        else:
            is_root, name, npos = self._head(st, p)
        pd = _Pending(name, npos)
        pd.is_root = is_root
        self._define(st, pd)
        self._rhs(st, pd, nested=False, fast=m)
        if is_root:
            if st.root is not None:
                sc.fail(f"computation '{st.name}' has more than one ROOT ('{st.root.name}' and "
                        f"'{name}')", p)
            st.root = pd
        if sc.text.startswith("\n", sc.pos):
            return
        end = sc.skip_in_line()
        if end < len(sc.text) and sc.text[end] not in "\n}":
            sc.fail(f"unexpected {sc.describe(end)} after instruction '{name}' (expected ',' "
                    f"or the end of the line)", end)

    def _head(self, st: _CompState, p: int) -> tuple[bool, str, int]:
        """``[ROOT] name =`` at ``p``: (is root, name, position of the name)."""
        sc = self.sc
        is_root = sc.match(_ROOT) is not None
        if sc.match(_ENTRY):
            sc.fail(f"missing '}}' to close computation '{st.name}' before the next computation",
                    p, expected="}")
        name, npos = sc.name("an instruction name")
        if not sc.at("="):
            if sc.peek() in ("(", "{"):
                sc.fail(f"missing '}}' to close computation '{st.name}' before computation "
                        f"'{name}'", npos, expected="}")
            sc.fail(f"expected '=' after instruction name '{name}', found {sc.describe()}",
                    expected="=")
        sc.pos += 1
        return is_root, name, npos

    def _define(self, st: _CompState, pd: _Pending) -> None:
        if pd.name in st.by_name:
            self.sc.fail(f"duplicate instruction name '{pd.name}' in computation '{st.name}'",
                         pd.pos)
        st.by_name[pd.name] = pd

    def _rhs(self, st: _CompState, pd: _Pending, nested: bool,
             shape: Shape | None = None, fast: re.Match | None = None) -> None:
        """``shape opcode(operands), attrs`` into ``pd``; appends ``pd`` to the computation.

        ``fast`` is the instruction's ``_INSTRUCTION_FAST`` match, which has the shape, the
        opcode and perhaps the operands (the cursor is at the shape).
        """
        sc = self.sc
        if fast is not None:
            pd.shape = cached_shape(sc, fast.group("shape"), fast.start("shape"))
            if sc.pos != fast.end("shape"):
                fast = None             # a token shape with braces after it: read on generally
        else:
            pd.shape = shape if shape is not None else read_shape(sc)
        if fast is not None:
            pd.op_pos, opcode = fast.start("opcode"), fast.group("opcode")
            sc.pos = fast.end("opcode")
        else:
            pd.op_pos = sc.skip()
            m = _OPCODE.match(sc.text, pd.op_pos)
            if not m:
                sc.fail(f"expected an opcode, found {sc.describe()}", expected="opcode")
            opcode = m.group(0)
            sc.pos = m.end()
        if opcode not in OPCODES and not any(
                opcode.endswith(s) and opcode[:-len(s)] in OPCODES for s in ASYNC_SUFFIXES):
            sc.fail(f"unknown opcode '{opcode}'", pd.op_pos, expected="opcode")
        pd.opcode = opcode
        if not sc.accept("("):
            sc.expect("(", f"after opcode '{opcode}'")
        if opcode == "constant":
            pd.literal = read_literal(sc, pd.shape)
            if self.fill_elided_constants:
                pd.literal = fill_elided(pd.literal, pd.shape)
            sc.expect(")", "to close the constant's literal")
        elif opcode == "parameter":
            if fast is not None and fast.group("number") is not None:
                pd.parameter_number = int(fast.group("number"))
                sc.pos = fast.end()
            else:
                pd.parameter_number = sc.integer("a parameter number")
                if pd.parameter_number < 0:
                    sc.fail("parameter number must be non-negative", pd.op_pos)
                sc.expect(")", "after the parameter number")
        elif fast is None or not self._fast_operands(pd, fast):
            self._operands(st, pd)
        self._attributes(st, pd, nested)
        self._check(pd)
        st.order.append(pd)

    def _fast_operands(self, pd: _Pending, fast: re.Match) -> bool:
        """Take the operands ``fast`` matched; False if it matched none or one has a shape
        not read before (:meth:`_operands` reads them then)."""
        sc = self.sc
        if fast.group("call") is None or fast.group("number") is not None:
            return False
        text = fast.group("operands")
        if text is not None:
            operands, pos = [], fast.start("operands")
            for item in text.split(", "):           # ``[shape ]%name``; no blank in a shape
                shape_text, _, name = item.rpartition(" ")
                declared = None
                if shape_text:
                    declared = sc.shapes.get(shape_text)
                    if declared is None:
                        return False
                operands.append((name.lstrip("%"), pos + len(item) - len(name), declared))
                pos += len(item) + 2
            pd.operands.extend(operands)
        sc.pos = fast.end()
        return True

    def _operands(self, st: _CompState, pd: _Pending) -> None:
        sc = self.sc
        if sc.accept(")"):
            return
        while True:
            p = sc.skip()
            declared = None
            if sc.text.startswith("(", p) or _SHAPE_START.match(sc.text, p):
                declared = read_shape(sc)
            name, npos = sc.name("an operand name")
            if sc.at("("):
                if declared is None:
                    sc.fail(f"nested instruction '{name}(...)' needs a result shape before it",
                            npos)
                sc.pos = npos
                anon = _Pending(self._anon_name(st, name), npos)
                self._define(st, anon)
                self._rhs(st, anon, nested=True, shape=declared)
                pd.operands.append(anon)
            else:
                pd.operands.append((name, npos, declared))
            if sc.accept(")"):
                return
            sc.expect(",", "or ')' in the operand list")

    def _anon_name(self, st: _CompState, opcode: str) -> str:
        base = f"{opcode}.anon"
        name, n = base, 0
        while name in st.by_name:
            n += 1
            name = f"{base}.{n}"
        return name

    def _attributes(self, st: _CompState, pd: _Pending, nested: bool) -> None:
        sc = self.sc
        while True:
            m = _ATTR_FAST.match(sc.text, sc.pos) if sc.fast else None
            if m:
                key, kp = m.group(1), m.start(1)
                sc.pos = m.end()
            elif sc.fast and _NEXT_LINE_FAST.match(sc.text, sc.pos):
                return                      # the next line starts with something but ','
            else:
                save = sc.pos
                if not sc.accept(","):
                    sc.pos = save
                    return
                if nested and not _ATTR_START.match(sc.text, sc.pos):
                    sc.pos = save           # the ',' separates the outer operands
                    return
                key, kp = read_attr_name(sc)
            if key in pd.attrs or (key == "control-predecessors" and pd.ctrl):
                sc.fail(f"duplicate attribute '{key}' on '{pd.name}'", kp)
            kind = A.ATTR_KINDS.get(key)
            if kind == A.INSTR_LIST:
                for _ in braced_items(sc, key):
                    pd.ctrl.append(sc.name("an instruction name"))
                continue
            if kind is None:
                log.debug("keeping unknown attribute %s of %s verbatim", key, pd.name)
                pd.attrs[key] = RawAttr(sc.balanced(f"attribute '{key}'"))
                continue
            if kind == A.SHARDING:
                pd.sharding_pos = sc.skip()
            value = read_typed_value(sc, kind, key)
            if kind in (A.COMPUTATION, A.COMPUTATION_LIST):
                self.comp_refs.append((pd, key, value))
            pd.attrs[key] = value

    def _check(self, pd: _Pending) -> None:
        info = OPCODES.get(pd.opcode)
        if info is None:
            return
        if info.arity is not None and len(pd.operands) != info.arity:
            self.sc.fail(f"'{pd.opcode}' takes {info.arity} operand"
                         f"{'' if info.arity == 1 else 's'}, but '{pd.name}' has "
                         f"{len(pd.operands)}", pd.op_pos)
        sharding = pd.attrs.get("sharding")
        if isinstance(sharding, HloSharding):
            problems = sharding.problems(pd.shape, self.num_partitions)
            if problems:
                self.sc.fail(f"'{pd.name}': {problems[0]}", pd.sharding_pos)
        if pd.opcode == "broadcast" and "dimensions" not in pd.attrs:
            pd.attrs["dimensions"] = ()
        for req in info.required:
            if req not in pd.attrs:
                self.sc.fail(f"'{pd.opcode}' instruction '{pd.name}' is missing required "
                             f"attribute '{req}'", pd.op_pos, expected=req)


def parse_module(text: str, fast: bool = True, *,
                 fill_elided_constants: bool = False) -> HloModule:
    """Parse HLO text into an :class:`HloModule`; raises ``HloParseError``.

    ``fast=False`` reads everything with the general readers only (the fast paths give the
    same result; ``tests/test_hlo_parse_fast.py`` compares the two). A constant whose value
    XLA's printer elided (``constant({...})``) parses with no value, which the verifier
    rejects before anything runs; ``fill_elided_constants=True`` fills such constants with
    zeros instead (for inspecting shapes and passes only: the values are not the
    original's), as XLA's tools fill them with made-up values.
    """
    parser = HloParser(text, fast, fill_elided_constants)
    try:
        return parser.parse_module()
    except HloParseError:
        raise
    except RecursionError:
        raise parser.sc.error("HLO text is nested too deeply") from None
    except Exception as e:  # a parser bug must still surface as a parse error
        raise parser.sc.error(f"internal parser error ({type(e).__name__}: {e})") from e


def parse_shape(text: str, fast: bool = True) -> Shape:
    """Parse one shape such as ``f32[2,3]{1,0}`` or ``(f32[], s32[4])``."""
    sc = Scanner(text, fast)
    try:
        shape = read_shape(sc)
    except HloParseError:
        raise
    except Exception as e:
        raise sc.error(f"internal parser error ({type(e).__name__}: {e})") from e
    if not sc.at_end():
        sc.fail(f"unexpected {sc.describe()} after the shape")
    return shape
