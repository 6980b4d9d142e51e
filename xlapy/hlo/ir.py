"""The HLO IR: :class:`HloModule` ⊃ :class:`HloComputation` ⊃ :class:`HloInstruction`.

An instruction has an ``opcode`` (its text name, e.g. ``"add"``), a ``shape``,
``operands`` (other instructions of the same computation) and ``attrs`` (name ->
value, see :mod:`xlapy.hlo.attrs`). Constants carry ``literal`` (a NumPy array,
or a tuple of them for tuple constants); parameters carry ``parameter_number``.
Called computations (``to_apply=``, ``calls=``, ``body=`` ...) are attribute
values holding :class:`HloComputation` objects.

Use-def links (``users``) are kept up to date by the mutation methods here;
passes should mutate only through them.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from . import attrs as A
from .shape import ProgramShape, Shape

_ids = itertools.count(1)


class HloInstruction:
    """One HLO instruction (a node of a computation's dataflow graph)."""

    __slots__ = ("name", "opcode", "shape", "operands", "attrs", "literal", "parameter_number",
                 "control_predecessors", "users", "parent", "unique_id")

    def __init__(self, opcode: str, shape: Shape, operands: Sequence["HloInstruction"] = (),
                 attrs: dict[str, Any] | None = None, name: str | None = None,
                 literal: Any = None, parameter_number: int | None = None) -> None:
        self.opcode = opcode
        self.shape = shape
        self.operands: list[HloInstruction] = list(operands)
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.literal = literal
        self.parameter_number = parameter_number
        self.control_predecessors: list[HloInstruction] = []
        self.users: list[HloInstruction] = []
        self.parent: HloComputation | None = None
        self.unique_id = next(_ids)
        self.name = name or opcode
        for op in self.operands:
            op._add_user(self)

    # ----- attributes
    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    @property
    def metadata(self) -> A.OpMetadata | None:
        return self.attrs.get("metadata")

    @metadata.setter
    def metadata(self, value: A.OpMetadata | None) -> None:
        if value is None:
            self.attrs.pop("metadata", None)
        else:
            self.attrs["metadata"] = value

    @property
    def called_computations(self) -> list["HloComputation"]:
        """Computations this instruction calls, in attribute order."""
        out: list[HloComputation] = []
        for k, v in self.attrs.items():
            kind = A.ATTR_KINDS.get(k)
            if kind == A.COMPUTATION and isinstance(v, HloComputation):
                out.append(v)
            elif kind == A.COMPUTATION_LIST:
                out.extend(c for c in v if isinstance(c, HloComputation))
        return out

    @property
    def to_apply(self) -> "HloComputation":
        return self.attrs["to_apply"]

    @property
    def dimensions(self) -> tuple[int, ...]:
        return tuple(self.attrs.get("dimensions", ()))

    def operand(self, i: int) -> "HloInstruction":
        return self.operands[i]

    @property
    def is_root(self) -> bool:
        return self.parent is not None and self.parent.root is self

    # ----- use-def maintenance
    def _add_user(self, user: "HloInstruction") -> None:
        if not any(u is user for u in self.users):
            self.users.append(user)

    def _remove_user(self, user: "HloInstruction") -> None:
        if not any(o is self for o in user.operands):
            self.users = [u for u in self.users if u is not user]

    def replace_operand(self, index: int, new: "HloInstruction") -> None:
        """Make operand ``index`` be ``new``."""
        old = self.operands[index]
        self.operands[index] = new
        new._add_user(self)
        old._remove_user(self)

    def replace_operands(self, old: "HloInstruction", new: "HloInstruction") -> None:
        """Replace every use of ``old`` among this instruction's operands by ``new``."""
        for i, op in enumerate(self.operands):
            if op is old:
                self.operands[i] = new
        new._add_user(self)
        old._remove_user(self)

    def replace_all_uses_with(self, new: "HloInstruction") -> None:
        """Every user of this instruction uses ``new`` instead (root too)."""
        for user in list(self.users):
            if user is not new:
                user.replace_operands(self, new)
        if self.parent is not None and self.parent.root is self:
            self.parent.root = new

    def detach(self) -> None:
        """Drop this instruction's operand links (before removing it)."""
        for op in self.operands:
            op.users = [u for u in op.users if u is not self]
        self.operands = []

    # ----- printing
    def to_text(self, long: bool = True) -> str:
        from .printer import instruction_to_text
        return instruction_to_text(self, long=long)

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"<HloInstruction {self.name} = {self.shape} {self.opcode}>"


def post_order_from(starts: Iterable[HloInstruction],
                    members: set[int] | None = None,
                    expand: Callable[[HloInstruction], bool] | None = None,
                    ) -> list[HloInstruction]:
    """The instructions reachable from ``starts`` through operands and control
    predecessors (only those whose ``id`` is in ``members``, when given, and only through
    instructions for which ``expand`` is true, when given), each after its operands and
    control predecessors; ``starts`` are visited in order."""
    seen: set[int] = set()
    out: list[HloInstruction] = []
    for start in starts:
        if id(start) in seen:
            continue
        stack: list[tuple[HloInstruction, bool]] = [(start, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                out.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            if expand is not None and not expand(node):
                continue
            for dep in reversed(node.operands + node.control_predecessors):
                if id(dep) not in seen and (members is None or id(dep) in members):
                    stack.append((dep, False))
    return out


class HloComputation:
    """A computation: an ordered list of instructions with one root.

    ``instructions`` is kept in text order (definitions before uses once parsed
    or built); ``parameters[i]`` is the ``parameter(i)`` instruction.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.instructions: list[HloInstruction] = []
        self.parameters: list[HloInstruction] = []
        self.root: HloInstruction | None = None
        self.parent: HloModule | None = None
        self.execution_thread: str | None = None
        self.is_entry = False

    def add_instruction(self, instr: HloInstruction) -> HloInstruction:
        """Append ``instr`` (a parameter is also registered under its number)."""
        instr.parent = self
        self.instructions.append(instr)
        if self.parent is not None:
            self.parent.note_name(instr.name)
        if instr.opcode == "parameter":
            n = instr.parameter_number
            while len(self.parameters) <= n:
                self.parameters.append(None)  # type: ignore[arg-type]
            self.parameters[n] = instr
        return instr

    def remove_instruction(self, instr: HloInstruction) -> None:
        """Remove a dead instruction (no users, not the root)."""
        if instr.users:
            raise ValueError(f"cannot remove {instr.name}: still used by "
                             f"{', '.join(u.name for u in instr.users)}")
        if instr is self.root:
            raise ValueError(f"cannot remove the root {instr.name}")
        instr.detach()
        self.instructions = [i for i in self.instructions if i is not instr]
        for other in self.instructions:
            if instr in other.control_predecessors:
                other.control_predecessors = [c for c in other.control_predecessors
                                              if c is not instr]
        instr.parent = None

    def replace_instruction(self, old: HloInstruction, new: HloInstruction) -> None:
        """Redirect all uses of ``old`` to ``new`` and remove ``old``."""
        old.replace_all_uses_with(new)
        if not old.users:
            self.remove_instruction(old)

    @property
    def num_parameters(self) -> int:
        return len(self.parameters)

    @property
    def program_shape(self) -> ProgramShape:
        return ProgramShape([p.shape for p in self.parameters], self.root.shape,
                            [p.name for p in self.parameters])

    def post_order(self) -> list[HloInstruction]:
        """All instructions, each after its operands and control predecessors."""
        return post_order_from(self.instructions)

    def __iter__(self) -> Iterator[HloInstruction]:
        return iter(self.instructions)

    def instruction(self, name: str) -> HloInstruction:
        for i in self.instructions:
            if i.name == name:
                return i
        raise KeyError(name)

    def to_text(self, long: bool = True) -> str:
        from .printer import computation_to_text
        return computation_to_text(self, long=long)

    def __repr__(self) -> str:
        return f"<HloComputation {self.name} ({len(self.instructions)} instructions)>"


@dataclass
class StackFrameIndex:
    """JAX's ``FileNames``/``FunctionNames``/``FileLocations``/``StackFrames`` tables
    (1-based ids)."""

    file_names: list[str] = field(default_factory=list)
    function_names: list[str] = field(default_factory=list)
    # each location: dict with file_name_id, function_name_id, line, end_line, column, end_column
    file_locations: list[dict[str, int]] = field(default_factory=list)
    # each frame: (file_location_id, parent_frame_id)
    stack_frames: list[tuple[int, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.file_names or self.function_names or self.file_locations
                    or self.stack_frames)

    def frame(self, frame_id: int) -> dict[str, Any] | None:
        """file, function, line of a stack frame id (None if out of range)."""
        if not (1 <= frame_id <= len(self.stack_frames)):
            return None
        loc_id, _parent = self.stack_frames[frame_id - 1]
        if not (1 <= loc_id <= len(self.file_locations)):
            return None
        loc = self.file_locations[loc_id - 1]
        fn = loc.get("file_name_id", 0)
        fun = loc.get("function_name_id", 0)
        return {"file": self.file_names[fn - 1] if 1 <= fn <= len(self.file_names) else None,
                "function": (self.function_names[fun - 1]
                             if 1 <= fun <= len(self.function_names) else None),
                "line": loc.get("line")}


@dataclass(frozen=True)
class AliasEntry:
    """One ``input_output_alias`` entry: output ``{out_index}`` aliases parameter
    ``param_number``."""

    output_index: tuple[int, ...]
    param_number: int
    param_index: tuple[int, ...] = ()
    kind: str = "may-alias"


class HloModule:
    """An HLO module: named computations, one of them the entry, plus module attributes.

    ``attributes`` keeps header attributes in text order. Typed ones:
    ``is_scheduled`` (bool), ``entry_computation_layout`` (ProgramShape),
    ``input_output_alias`` (list[AliasEntry]), ``buffer_donor`` (list of
    (param_number, index) tuples), ``replica_count``/``num_partitions`` (int);
    anything else stays :class:`~xlapy.hlo.attrs.RawAttr` or plain data.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.computations: list[HloComputation] = []
        self.entry: HloComputation | None = None
        self.attributes: dict[str, Any] = {}
        self.stack_frames = StackFrameIndex()
        self._taken: set[str] | None = None
        self._next_suffix: dict[str, int] = {}
        self.unique_id = next(_ids)

    # ----- computations
    def add_computation(self, comp: HloComputation, is_entry: bool = False) -> HloComputation:
        comp.parent = self
        self.note_name(comp.name)
        for instr in comp.instructions:
            self.note_name(instr.name)
        self.computations.append(comp)
        if is_entry:
            if self.entry is not None:
                self.entry.is_entry = False
            self.entry = comp
            comp.is_entry = True
        return comp

    def remove_computation(self, comp: HloComputation) -> None:
        self.computations = [c for c in self.computations if c is not comp]
        comp.parent = None

    def computation(self, name: str) -> HloComputation:
        for c in self.computations:
            if c.name == name:
                return c
        raise KeyError(name)

    def computations_post_order(self) -> list[HloComputation]:
        """Every computation after all computations it calls (stable w.r.t. stored order)."""
        others = [c for c in self.computations if c is not self.entry]
        return computations_post_order(others + ([self.entry] if self.entry else []))

    def instructions(self) -> Iterator[HloInstruction]:
        for c in self.computations:
            yield from c.instructions

    # ----- names
    def unique_name(self, base: str) -> str:
        """A name not yet used in this module, derived from ``base`` (``add`` -> ``add.3``)."""
        if self._taken is None:
            self._taken = {i.name for i in self.instructions()} | \
                {c.name for c in self.computations}
        if base not in self._taken:
            self._taken.add(base)
            return base
        root = re.sub(r"\.\d+$", "", base) or "x"
        n = self._next_suffix.get(root, 1)
        while f"{root}.{n}" in self._taken:
            n += 1
        self._next_suffix[root] = n + 1
        name = f"{root}.{n}"
        self._taken.add(name)
        return name

    def note_name(self, name: str) -> None:
        """Record a name as used (called when instructions or computations are added)."""
        if self._taken is not None:
            self._taken.add(name)

    # ----- typed header attributes
    @property
    def is_scheduled(self) -> bool:
        return bool(self.attributes.get("is_scheduled", False))

    @property
    def entry_computation_layout(self) -> ProgramShape | None:
        return self.attributes.get("entry_computation_layout")

    @property
    def input_output_alias(self) -> list[AliasEntry]:
        return list(self.attributes.get("input_output_alias", ()))

    # ----- text and comparison
    def to_text(self, long: bool = True, print_large_constants: bool = True) -> str:
        """HLO text of the module; ``long`` adds ``%`` names, operand shapes and signatures."""
        from .printer import module_to_text
        return module_to_text(self, long=long, print_large_constants=print_large_constants)

    def __str__(self) -> str:
        return self.to_text()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HloModule) and self.to_text() == other.to_text()

    __hash__ = None  # type: ignore[assignment]

    def clone(self, name: str | None = None) -> "HloModule":
        """A deep copy (new instruction and computation objects, same names)."""
        new = HloModule(name or self.name)
        new.attributes = dict(self.attributes)
        new.stack_frames = self.stack_frames
        cmap: dict[int, HloComputation] = {}
        for comp in self.computations_post_order():
            cmap[id(comp)] = clone_computation(comp, cmap)
        for comp in self.computations:
            if id(comp) in cmap:
                new.add_computation(cmap[id(comp)], is_entry=comp is self.entry)
        return new

    def __repr__(self) -> str:
        return f"<HloModule {self.name} ({len(self.computations)} computations)>"


def computations_post_order(roots: Iterable[HloComputation]) -> list[HloComputation]:
    """``roots`` and every computation they call, each after all of its callees."""
    seen: set[int] = set()
    out: list[HloComputation] = []

    def visit(c: HloComputation) -> None:
        if id(c) in seen:
            return
        seen.add(id(c))
        for instr in c.instructions:
            for callee in instr.called_computations:
                visit(callee)
        out.append(c)

    for root in roots:
        visit(root)
    return out


def _remap_attr(value: Any, cmap: dict[int, HloComputation]) -> Any:
    if isinstance(value, HloComputation):
        return cmap.get(id(value), value)
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], HloComputation):
        return type(value)(cmap.get(id(c), c) for c in value)
    return value


def clone_computation(comp: HloComputation, cmap: dict[int, HloComputation] | None = None,
                      name: str | None = None) -> HloComputation:
    """Copy a computation; called computations are remapped through ``cmap`` (id -> clone)."""
    cmap = cmap or {}
    new = HloComputation(name or comp.name)
    new.execution_thread = comp.execution_thread
    imap: dict[int, HloInstruction] = {}
    for instr in comp.post_order():
        c = HloInstruction(instr.opcode, instr.shape, [imap[id(o)] for o in instr.operands],
                           {k: _remap_attr(v, cmap) for k, v in instr.attrs.items()},
                           name=instr.name, literal=instr.literal,
                           parameter_number=instr.parameter_number)
        imap[id(instr)] = c
    for instr in comp.instructions:          # keep text order
        new.add_instruction(imap[id(instr)])
    for instr in comp.instructions:
        imap[id(instr)].control_predecessors = [imap[id(p)] for p in instr.control_predecessors]
    new.root = imap[id(comp.root)] if comp.root is not None else None
    return new


def literal_equal(a: Any, b: Any) -> bool:
    """Bitwise-equal literals (NaNs with equal bits compare equal); tuples elementwise."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(literal_equal(x, y) for x, y in zip(a, b)))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def walk(instrs: Iterable[HloInstruction]) -> Iterator[HloInstruction]:
    """Yield instructions and, recursively, those of every computation they call."""
    for i in instrs:
        yield i
        for c in i.called_computations:
            yield from walk(c.instructions)
