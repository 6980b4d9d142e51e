"""CopyInsertion ("copy-insertion"): add the copies that let every value live in one buffer.

A backend writes a while loop's state in place, hands the entry's outputs to the caller
and writes a donated parameter's output into the parameter's memory. That is only
correct when no value is read after its buffer is overwritten and no buffer is owned
twice. This pass adds ``copy`` instructions where that is not so (as XLA's
``CopyInsertion`` does, with a simple conservative interference test: a read is safe
only if it is an ancestor of the instruction that overwrites the buffer, so it must run
before it).

Needs: a module whose shapes have layouts (run after layout assignment; copies keep the
copied value's layout). Guarantees, for every computation that is not a fusion body:

- **while init**: an array leaf of a while's initial state that is a parameter or a
  constant, appears twice in the state, or is read by something that may run after the
  while, is copied first (the loop overwrites its state), unless the body passes that
  leaf through unchanged (as XLA, which gives such a leaf the init's buffer);
- **while body root**: leaf ``i`` of the body's result is copied when it is a constant,
  another element of the parameter (``(a, b) -> (b, a)``), appears twice, or is a new
  value while the old element ``i`` is still read by an instruction that may run after
  the new value is written (live-range interference);
- **conditional branches** returning (part of) their parameter or a constant copy it;
- **entry outputs**: an output leaf that is a constant, a parameter (unless
  ``input_output_alias`` makes exactly that parameter leaf that output), or the same
  buffer as an earlier output leaf is copied;
- **donated parameters**: when ``input_output_alias`` gives output ``o`` the memory of
  a parameter and the parameter is read by an instruction that may run after output
  ``o`` is computed, the parameter is copied first (readers use the copy; the copy is a
  control predecessor of the instruction computing the output).

Copies never change values. Pass-through elements (body root element ``i`` is parameter
element ``i``) and fresh values nobody reads later get no copy.
"""
from __future__ import annotations

from typing import Callable

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.shape import Shape
from .base import HloPass
from .context import PassContext
from .hlo_utils import add_instruction, fusion_computations, sort_instructions
from .reachability import BITSET_LIMIT

ShapeIndex = tuple[int, ...]
Source = tuple[HloInstruction, ShapeIndex]


def buffer_source(instr: HloInstruction, index: ShapeIndex = ()) -> Source:
    """The instruction (and index in its result) that defines the buffer at ``index`` of
    ``instr``, looking through get-tuple-element, tuple and bitcast."""
    while True:
        if instr.opcode == "get-tuple-element":
            index = (instr.attrs["index"],) + index
            instr = instr.operands[0]
        elif instr.opcode == "tuple" and index:
            instr, index = instr.operands[index[0]], index[1:]
        elif instr.opcode == "bitcast":
            instr = instr.operands[0]
        else:
            return instr, index


def array_leaf_indices(shape: Shape, prefix: ShapeIndex = ()) -> list[ShapeIndex]:
    """Indices of the array leaves of ``shape`` (tokens excluded), depth first."""
    if shape.is_tuple:
        out: list[ShapeIndex] = []
        for i, sub in enumerate(shape.tuple_shapes):
            out.extend(array_leaf_indices(sub, prefix + (i,)))
        return out
    return [] if shape.is_token else [prefix]


def _same(a: Source, b: Source) -> bool:
    return a[0] is b[0] and a[1] == b[1]


def ancestors(instr: HloInstruction) -> set[int]:
    """ids of ``instr`` and everything it (transitively) depends on, control edges included."""
    seen: set[int] = set()
    stack = [instr]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(node.operands)
        stack.extend(node.control_predecessors)
    return seen


def readers(comp: HloComputation, source: Source) -> list[HloInstruction]:
    """Instructions of ``comp`` that read the buffer ``source`` (not mere aliases of it)."""
    out = []
    for instr in comp.instructions:
        if instr.opcode in ("tuple", "get-tuple-element", "bitcast"):
            continue
        if any(_same(buffer_source(op, j), source)
               for op in instr.operands for j in array_leaf_indices(op.shape)):
            out.append(instr)
    return out


def _key(source: Source) -> tuple[int, ShapeIndex]:
    return id(source[0]), source[1]


class _BufferReads:
    """``readers(comp, source)`` and ``instr in ancestors(x)`` for one computation that does
    not change while this is used, from one sweep each: readers of every buffer source,
    and one bit set of ancestors (control edges included) per instruction. Without it,
    each question walks the computation: a pass over n instructions asking about k
    donated parameters (or loop state elements) took O(k * n). Above
    ``reachability.BITSET_LIMIT`` instructions, and in reference mode, the questions
    are answered by those walks."""

    def __init__(self, comp: HloComputation, reference: bool = False) -> None:
        self.comp = comp
        self.indexed = not reference and len(comp.instructions) <= BITSET_LIMIT
        self._readers: dict[tuple[int, ShapeIndex], list[HloInstruction]] = {}
        self._position: dict[int, int] = {}
        self._ancestors: list[int] = []
        if not self.indexed:
            return
        for instr in comp.instructions:
            if instr.opcode in ("tuple", "get-tuple-element", "bitcast"):
                continue
            keys = {_key(buffer_source(op, j)): None
                    for op in instr.operands for j in array_leaf_indices(op.shape)}
            for key in keys:
                self._readers.setdefault(key, []).append(instr)
        order = comp.post_order()
        self._position = {id(n): k for k, n in enumerate(order)}
        self._ancestors = [0] * len(order)
        for k, n in enumerate(order):
            bits = 1 << k
            for d in n.operands + n.control_predecessors:
                bits |= self._ancestors[self._position[id(d)]]
            self._ancestors[k] = bits

    def readers(self, source: Source) -> list[HloInstruction]:
        """:func:`readers` of ``source`` in the computation."""
        if not self.indexed:
            return readers(self.comp, source)
        return self._readers.get(_key(source), [])

    def runs_before(self, definer: HloInstruction) -> "Callable[[HloInstruction], bool]":
        """``test(r)``: is ``r`` in ``ancestors(definer)`` (so it runs before it)?"""
        if not self.indexed:
            before = ancestors(definer)
            return lambda r: id(r) in before
        bits = self._ancestors[self._position[id(definer)]]
        return lambda r: bool((bits >> self._position[id(r)]) & 1)


def rebuild_with_copies(comp: HloComputation, value: HloInstruction,
                        needs_copy: Callable[[ShapeIndex], bool],
                        index: ShapeIndex = ()) -> HloInstruction:
    """``value`` with the array leaves selected by ``needs_copy`` replaced by copies.

    Tuple structure is rebuilt only where some leaf below is copied.
    """
    shape = value.shape
    leaves = array_leaf_indices(shape, index)
    if not any(needs_copy(i) for i in leaves):
        return value
    if not shape.is_tuple:
        return add_instruction(comp, "copy", shape, [value], like=value)
    parts = []
    for i, sub in enumerate(shape.tuple_shapes):
        if value.opcode == "tuple":
            elem = value.operands[i]
        else:
            elem = add_instruction(comp, "get-tuple-element", sub, [value], {"index": i},
                                   like=value)
        parts.append(rebuild_with_copies(comp, elem, needs_copy, index + (i,)))
    return add_instruction(comp, "tuple", Shape.tuple(p.shape for p in parts), parts,
                           like=value)


class CopyInsertion(HloPass):
    """Insert copies required by in-place loops, outputs and donation (XLA's ``CopyInsertion``)."""

    name = "copy-insertion"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        if module.entry is None:
            return False
        reference = ctx is not None and ctx.reference_mode
        fused = fusion_computations(module)
        comps = [c for c in module.computations_post_order() if id(c) not in fused]
        changed = False
        for comp in comps:
            for instr in list(comp.instructions):
                if instr.opcode == "while":
                    changed |= _copy_while_init(comp, instr)
                    changed |= _copy_body_root(instr.attrs["body"], reference)
                elif instr.opcode == "conditional":
                    for branch in instr.called_computations:
                        changed |= _copy_branch_root(branch)
        changed |= _copy_entry_outputs(module)
        changed |= _protect_donated_parameters(module, reference)
        if changed:
            for comp in comps:
                sort_instructions(comp)
        return changed


def passed_through(body: HloComputation) -> set[ShapeIndex]:
    """Leaves of the loop state that ``body`` returns unchanged (its root's leaf ``i`` is
    its parameter's leaf ``i``)."""
    param = body.parameters[0]
    return {idx for idx in array_leaf_indices(body.root.shape)
            if _same(buffer_source(body.root, idx), (param, idx))}


def _copy_while_init(comp: HloComputation, loop: HloInstruction) -> bool:
    init = loop.operands[0]
    before_loop = ancestors(loop)
    outputs = {_key(buffer_source(comp.root, j)) for j in array_leaf_indices(comp.root.shape)}
    through = passed_through(loop.attrs["body"])
    seen: set[tuple[int, ShapeIndex]] = set()
    copies: set[ShapeIndex] = set()
    for idx in array_leaf_indices(init.shape):
        src = buffer_source(init, idx)
        shared = _key(src) in seen
        seen.add(_key(src))
        if idx in through and not shared:
            continue                    # never written: the loop may read it where it is
        later_reads = [r for r in readers(comp, src)
                       if r is not loop and id(r) not in before_loop]
        if (src[0].opcode in ("parameter", "constant") or shared or later_reads
                or _key(src) in outputs):
            copies.add(idx)
    if not copies:
        return False
    loop.replace_operand(0, rebuild_with_copies(comp, init, lambda i: i in copies))
    return True


def _copy_body_root(body: HloComputation, reference: bool) -> bool:
    """Copy body-root leaves that cannot be written into the loop state in place.

    A copy ``C`` of leaf ``i`` writes state buffer ``i``; every reader of the old element
    ``i`` becomes a control predecessor of ``C`` so it runs first. A leaf that is another
    state element ``j`` is copied twice (to a temporary, then into buffer ``i``), so
    swapped elements do not need each other's old value at the same time.
    """
    param = body.parameters[0]
    root = body.root
    leaves = array_leaf_indices(root.shape)
    sources = {idx: buffer_source(root, idx) for idx in leaves}
    swapped = {src[1] for k, src in sources.items() if src[0] is param and src[1] != k}
    reads = _BufferReads(body, reference)
    modes: dict[ShapeIndex, str] = {}
    seen: set[tuple[int, ShapeIndex]] = set()
    for idx in leaves:
        src = sources[idx]
        shared = _key(src) in seen
        seen.add(_key(src))
        definer = src[0]
        if definer is param:
            if src[1] != idx:
                modes[idx] = "via-temp"             # another element of the old state
            elif shared:
                modes[idx] = "copy"
            continue                                # element passes through unchanged
        if shared or definer.opcode in ("parameter", "constant"):
            modes[idx] = "copy"
            continue
        before = reads.runs_before(definer)
        if idx in swapped or any(not before(r) for r in reads.readers((param, idx))):
            modes[idx] = "copy"                     # the old value is read after the write
    if not modes:
        return False
    new_root = rebuild_with_copies(body, root, lambda i: i in modes)
    outer: dict[ShapeIndex, HloInstruction] = {}
    for idx, mode in modes.items():
        copy = _leaf(new_root, idx)
        if mode == "via-temp":
            value = copy.operands[0]
            copy.replace_operand(0, add_instruction(body, "copy", value.shape, [value],
                                                    like=value))
        outer[idx] = copy
    body.root = new_root
    for idx, copy in outer.items():
        earlier = ancestors(copy)
        for r in readers(body, (param, idx)):
            if id(r) not in earlier and r not in copy.control_predecessors:
                copy.control_predecessors.append(r)
    return True


def _leaf(value: HloInstruction, index: ShapeIndex) -> HloInstruction:
    """The instruction at ``index`` of a (nested) tuple instruction."""
    for i in index:
        value = value.operands[i]
    return value


def _copy_branch_root(branch: HloComputation) -> bool:
    root = branch.root
    seen: set[tuple[int, ShapeIndex]] = set()
    copies: set[ShapeIndex] = set()
    for idx in array_leaf_indices(root.shape):
        src = buffer_source(root, idx)
        if src[0].opcode in ("parameter", "constant") or _key(src) in seen:
            copies.add(idx)
        seen.add(_key(src))
    if not copies:
        return False
    branch.root = rebuild_with_copies(branch, root, lambda i: i in copies)
    return True


def _copy_entry_outputs(module: HloModule) -> bool:
    entry = module.entry
    aliases = {(tuple(a.output_index), a.param_number, tuple(a.param_index))
               for a in module.input_output_alias}
    root = entry.root
    seen: set[tuple[int, ShapeIndex]] = set()
    copies: set[ShapeIndex] = set()
    for idx in array_leaf_indices(root.shape):
        src = buffer_source(root, idx)
        definer = src[0]
        shared = _key(src) in seen
        seen.add(_key(src))
        if definer.opcode == "parameter":
            if shared or (idx, definer.parameter_number, src[1]) not in aliases:
                copies.add(idx)
        elif definer.opcode == "constant" or shared:
            copies.add(idx)
    if not copies:
        return False
    entry.root = rebuild_with_copies(entry, root, lambda i: i in copies)
    return True


def _protect_donated_parameters(module: HloModule, reference: bool) -> bool:
    entry = module.entry
    changed = False
    # Protecting parameter A adds copies of A (that read only A) and control edges from
    # them: readers of any other parameter and what runs before them do not change, so
    # the index is rebuilt only for a parameter protected before (another tuple leaf).
    reads: _BufferReads | None = None
    protected: set[int] = set()
    for alias in module.input_output_alias:
        out_idx, p_idx = tuple(alias.output_index), tuple(alias.param_index)
        if alias.param_number >= len(entry.parameters):
            continue
        param = entry.parameters[alias.param_number]
        if out_idx not in array_leaf_indices(entry.root.shape):
            continue
        definer, _ = buffer_source(entry.root, out_idx)
        if definer is param:
            continue                                # output is the parameter itself
        if reads is None or alias.param_number in protected:
            reads, protected = _BufferReads(entry, reference), set()
        before = reads.runs_before(definer)
        if all(before(r) for r in reads.readers((param, p_idx))):
            continue
        protected.add(alias.param_number)
        users = list(param.users)
        saved = rebuild_with_copies(entry, param, lambda i: True)
        for user in users:
            user.replace_operands(param, saved)
        if entry.root is param:
            entry.root = saved
        copies = [saved] if saved.opcode == "copy" else [o for o in _walk_tuple(saved)
                                                          if o.opcode == "copy"]
        for c in copies:
            if c not in definer.control_predecessors:
                definer.control_predecessors.append(c)
        changed = True
    return changed


def _walk_tuple(value: HloInstruction) -> list[HloInstruction]:
    out = []
    stack = [value]
    while stack:
        node = stack.pop()
        out.append(node)
        if node.opcode == "tuple":
            stack.extend(node.operands)
    return out


__all__ = ["CopyInsertion", "ancestors", "array_leaf_indices", "buffer_source",
           "passed_through", "readers", "rebuild_with_copies"]
