"""CpuLayoutAssignment ("layout-assignment"): give every array shape a layout and make
operand layouts agree with what their users need, inserting layout-changing ``copy``s.

Needs: a module with an entry computation. Guarantees, for every computation that is
not a fusion body (fusion bodies only get missing layouts filled in):

- every array shape (tuple leaves included) has a layout; a missing one becomes row-major;
- the entry parameters and result have the layouts of ``entry_computation_layout`` when
  the module has one (a parameter whose layout changes is copied back to its old layout
  for its users; the root is copied into the requested layout), and the module's
  ``entry_computation_layout`` is set to the entry's final signature;
- an elementwise op's array operands have the op's result layout (``copy`` itself is the
  layout-changing op and is exempt);
- ``bitcast`` operands keep the layout they had before the pass (a bitcast reinterprets
  its operand's physical order, so this keeps its meaning);
- ``tuple`` and ``get-tuple-element`` shapes follow their operands;
- ``call``/``while``/``conditional``/``fusion`` operands have the called computation's
  parameter layouts, and the called computation's root has the caller's result layout;
  a while's body parameter, body root, condition parameter and result agree;
- a custom-call with ``operand_layout_constraints`` gets its operands in those layouts
  (LAPACK calls ask for column-major matrices);
- dot operands are row-major, except the CPU dot policy below and the layouts the backend
  asks for (``dot_layouts``, a :class:`~xlapy.passes.backend_rules.DotOperandLayoutRules`:
  the CPU's small-product kernels read the right operand of ``A @ B^T`` with a short K
  with its columns minor); with ``dot_follows_user``
  (the CPU pipeline) a dot whose only user is an elementwise op is given that op's layout
  (the CPU's GEMMs write either order);

Transposes and reshapes that only relabel memory become ``bitcast`` (XLA's
"transpose is a bitcast" and ``ReshapeIsBitcast``): a reshape between layouts that are
both row-major once size-1 dimensions are ignored, and a transpose whose operand layout,
permuted, is the result layout.

**Dot policy.** A dot without batch dimensions calls a BLAS-style GEMM, which reads a
rank-2 operand either row-major or column-major (a column-major matrix is the row-major
transposed matrix, passed with the "transpose" flag). So a rank-2 operand of such a dot
may be ``{1,0}`` or ``{0,1}``; any other dot operand is made row-major. A ``transpose``
whose users are all such dots is given the column-major result layout, which makes it a
bitcast of its row-major operand: the transpose around the dot disappears.

All rewrites keep the program's values: copies and layout changes do not change logical
values, and every bitcast still sees its original operand layout.
"""
from __future__ import annotations

from ..errors import InvalidArgumentError
from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.opcodes import ELEMENTWISE
from ..hlo.shape import Layout, ProgramShape, Shape
from .backend_rules import DotOperandLayoutRules
from .base import HloPass
from .context import PassContext
from .computation_edits import DeferredEdits
from .hlo_utils import add_instruction, fusion_computations, sort_instructions


# --------------------------------------------------------------------------------------------
# layout helpers


def with_layout(shape: Shape, layout: Layout) -> Shape:
    """``shape`` (an array) with ``layout``."""
    return Shape(shape.element_type, shape.dims, shape.dynamic, layout)


def layouts_equal(a: Shape, b: Shape) -> bool:
    """Same layout on every leaf (missing layouts count as row-major)."""
    la, lb = a.with_default_layout().leaves(), b.with_default_layout().leaves()
    return len(la) == len(lb) and all(x.layout == y.layout for x, y in zip(la, lb))


def _nondegenerate_order(shape: Shape) -> list[int]:
    """The dims of size > 1, minor to major."""
    m2m = shape.with_default_layout().layout.minor_to_major
    return [d for d in m2m if shape.dims[d] != 1]


def is_row_major_ignoring_degenerate(shape: Shape) -> bool:
    """Physical order equals logical row-major order (size-1 dims do not matter)."""
    order = _nondegenerate_order(shape)
    return order == sorted(order, reverse=True)


def reshape_is_bitcast(operand: Shape, result: Shape) -> bool:
    """A reshape between these shapes only relabels memory (both effectively row-major)."""
    return (operand.element_type == result.element_type
            and operand.num_elements == result.num_elements
            and is_row_major_ignoring_degenerate(operand)
            and is_row_major_ignoring_degenerate(result))


def transpose_bitcast_layout(operand: Shape, permutation: tuple[int, ...]) -> Layout:
    """The result layout that makes ``transpose(operand, permutation)`` a bitcast.

    Result dim ``i`` is operand dim ``permutation[i]``, so the result is laid out in the
    operand's physical order when its minor-to-major lists the matching result dims.
    """
    inverse = {p: i for i, p in enumerate(permutation)}
    m2m = operand.with_default_layout().layout.minor_to_major
    return Layout(tuple(inverse[d] for d in m2m))


def transpose_is_bitcast(operand: Shape, result: Shape, permutation: tuple[int, ...]) -> bool:
    """The transpose keeps the physical element order (size-1 dims ignored)."""
    want = [permutation[r] for r in _nondegenerate_order(result)]
    return want == _nondegenerate_order(operand)


def relayout(comp: HloComputation, value: HloInstruction, target: Shape,
             cache: dict | None = None) -> HloInstruction:
    """An instruction with ``value``'s logical value and ``target``'s layouts.

    Arrays are ``copy``'d into the target layout; tuples are rebuilt from their elements.
    ``cache`` (keyed by value and target) lets several users share one copy.
    """
    if layouts_equal(value.shape, target) or value.shape.is_token:
        return value
    key = (id(value), target.to_text())
    if cache is not None and key in cache:
        return cache[key]
    if value.shape.is_tuple:
        parts = []
        for i, sub in enumerate(target.tuple_shapes):
            gte = add_instruction(comp, "get-tuple-element", value.shape.tuple_shapes[i],
                                  [value], {"index": i}, like=value)
            parts.append(relayout(comp, gte, sub, cache))
        out = add_instruction(comp, "tuple", Shape.tuple(p.shape for p in parts), parts,
                              like=value)
    else:
        out = add_instruction(comp, "copy", with_layout(value.shape, target.layout), [value],
                              like=value)
    if cache is not None:
        cache[key] = out
    return out


def _set_operand_layout(comp: HloComputation, user: HloInstruction, index: int, target: Shape,
                        cache: dict) -> bool:
    op = user.operands[index]
    new = relayout(comp, op, target, cache)
    if new is op:
        return False
    user.replace_operand(index, new)
    return True


def _set_root_layout(comp: HloComputation, target: Shape, cache: dict) -> bool:
    new = relayout(comp, comp.root, target, cache)
    if new is comp.root:
        return False
    comp.root = new
    return True


# --------------------------------------------------------------------------------------------
# the dot policy


def _dot_has_batch(dot: HloInstruction) -> bool:
    return bool(dot.attrs.get("lhs_batch_dims") or dot.attrs.get("rhs_batch_dims"))


def dot_accepts(dot: HloInstruction, layout: Layout, rank: int) -> bool:
    """Whether a dot operand of ``rank`` may have ``layout`` (see the module docstring)."""
    if layout == Layout.row_major(rank):
        return True
    return rank == 2 and not _dot_has_batch(dot) and layout == Layout((0, 1))


# --------------------------------------------------------------------------------------------
# the pass


class CpuLayoutAssignment(HloPass):
    """Assign layouts for the CPU backend (XLA's ``CpuLayoutAssignment``)."""

    name = "layout-assignment"

    def __init__(self, dot_follows_user: bool = False,
                 dot_layouts: DotOperandLayoutRules | None = None) -> None:
        """``dot_follows_user``: a dot whose only user is elementwise takes that user's
        layout (for a backend whose dots write either order: the CPU's); ``dot_layouts``:
        the backend's wishes for dot operand layouts."""
        self.dot_follows_user = dot_follows_user
        self.dot_layouts = dot_layouts

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        if module.entry is None:
            raise InvalidArgumentError(f"layout-assignment: module {module.name} has no entry")
        changed = _fill_default_layouts(module)
        fused = fusion_computations(module)
        comps = [c for c in module.computations_post_order() if id(c) not in fused]
        bitcast_sources = {id(i): i.operands[0].shape for c in comps for i in c.instructions
                           if i.opcode == "bitcast"}
        if self.dot_follows_user:
            for comp in comps:
                changed |= _swap_transposed_dots(comp)
        for comp in comps:
            changed |= _rewrite_as_bitcasts(comp, bitcast_sources,
                                           ctx is not None and ctx.reference_mode)
        changed |= _apply_entry_parameter_layouts(module)
        fixer = _LayoutFixer(bitcast_sources, self.dot_follows_user, self.dot_layouts)
        for comp in comps:
            changed |= fixer.fix(comp)
        ecl = module.entry_computation_layout
        if ecl is not None:
            changed |= _set_root_layout(module.entry, ecl.result, {})
        for comp in comps:
            sort_instructions(comp)
        entry = module.entry
        module.attributes["entry_computation_layout"] = ProgramShape(
            [p.shape for p in entry.parameters], entry.root.shape,
            ecl.parameter_names if ecl is not None else None)
        return changed


def _swap_transposed_dots(comp: HloComputation) -> bool:
    """``transpose(dot(a, b))`` swapping the dot's free dims -> ``dot(b, a)`` (its layout
    then follows its user like any dot's): algsimp leaves the transposes that have a
    layout other than row-major, which only a backend whose dots write any layout takes."""
    from .algsimp_reduce import swapped_dot
    changed = False
    for instr in list(comp.instructions):
        if instr.opcode == "transpose" and instr.parent is comp and instr is not comp.root:
            new = swapped_dot(comp, instr, instr.shape.without_layout().with_default_layout())
            if new is not None:
                dot = instr.operands[0]
                comp.replace_instruction(instr, new)
                comp.remove_instruction(dot)
                changed = True
    return changed


def _fill_default_layouts(module: HloModule) -> bool:
    changed = False
    for instr in module.instructions():
        filled = instr.shape.with_default_layout()
        if filled != instr.shape:
            instr.shape = filled
            changed = True
        constraints = instr.attrs.get("operand_layout_constraints")
        if constraints:
            instr.attrs["operand_layout_constraints"] = tuple(
                s.with_default_layout() if isinstance(s, Shape) else s for s in constraints)
    return changed


def _rewrite_as_bitcasts(comp: HloComputation, bitcast_sources: dict[int, Shape],
                         eager: bool) -> bool:
    """Reshapes and transposes that only relabel memory (or can be made to) become bitcasts."""
    changed = False
    with DeferredEdits(comp, eager) as edits:
        for instr in list(comp.instructions):
            if instr.opcode in ("reshape", "transpose") and instr.parent is comp:
                changed |= _rewrite_as_bitcast(comp, instr, bitcast_sources, edits)
    return changed


def _rewrite_as_bitcast(comp: HloComputation, instr: HloInstruction,
                        bitcast_sources: dict[int, Shape], edits: DeferredEdits) -> bool:
    """``instr`` (a reshape or transpose) becomes a bitcast if it only relabels memory."""
    x = instr.operands[0]
    shape = instr.shape
    if x.shape.is_dynamic or shape.is_dynamic:
        return False              # the physical size of a dynamic array varies
    if instr.opcode == "reshape":
        ok = reshape_is_bitcast(x.shape, shape)
    else:
        perm = instr.dimensions
        ok = transpose_is_bitcast(x.shape, shape, perm)
        if not ok and _only_dot_users(instr):
            layout = transpose_bitcast_layout(x.shape, perm)
            if all(dot_accepts(u, layout, shape.rank) for u in instr.users):
                shape, ok = with_layout(shape, layout), True
    if not ok:
        return False
    bitcast = add_instruction(comp, "bitcast", shape, [x], like=instr)
    bitcast.name, instr.name = instr.name, bitcast.name
    bitcast_sources[id(bitcast)] = x.shape
    edits.replace(instr, bitcast)
    return True


def _only_dot_users(instr: HloInstruction) -> bool:
    return bool(instr.users) and not instr.is_root and all(u.opcode == "dot"
                                                           for u in instr.users)


def _apply_entry_parameter_layouts(module: HloModule) -> bool:
    """Entry parameters take ``entry_computation_layout``'s layouts; users keep the old ones."""
    ecl = module.entry_computation_layout
    if ecl is None:
        return False
    entry = module.entry
    if len(ecl.parameters) != len(entry.parameters):
        raise InvalidArgumentError(
            f"layout-assignment: entry_computation_layout has {len(ecl.parameters)} parameters, "
            f"the entry computation {entry.name} has {len(entry.parameters)}")
    changed = False
    for param, want in zip(entry.parameters, ecl.parameters):
        want = want.with_default_layout()
        if not param.shape.compatible(want):
            raise InvalidArgumentError(
                f"layout-assignment: entry_computation_layout parameter {want} does not match "
                f"{param.name} of shape {param.shape}")
        if layouts_equal(param.shape, want):
            continue
        old_shape, users = param.shape, list(param.users)
        param.shape = want
        old = relayout(entry, param, old_shape)
        for user in users:
            user.replace_operands(param, old)
        if entry.root is param:
            entry.root = old
        changed = True
    return changed


class _LayoutFixer:
    """Makes operand layouts agree with what their users need, one computation at a time."""

    def __init__(self, bitcast_sources: dict[int, Shape], dot_follows_user: bool = False,
                 dot_layouts: DotOperandLayoutRules | None = None) -> None:
        self.bitcast_sources = bitcast_sources
        self.dot_follows_user = dot_follows_user
        self.dot_layouts = dot_layouts

    def fix(self, comp: HloComputation) -> bool:
        cache: dict = {}
        changed = False
        for instr in comp.post_order():
            if instr.parent is comp:
                changed |= self._fix_instruction(comp, instr, cache)
        return changed

    def _fix_instruction(self, comp: HloComputation, instr: HloInstruction, cache: dict) -> bool:
        op = instr.opcode
        if op == "tuple":
            return _set_shape(instr, Shape.tuple(o.shape for o in instr.operands))
        if op == "get-tuple-element":
            return _set_shape(instr, instr.operands[0].shape.tuple_shapes[instr.attrs["index"]])
        if op == "bitcast":
            want = self.bitcast_sources.get(id(instr))
            return want is not None and _set_operand_layout(comp, instr, 0, want, cache)
        if op in ELEMENTWISE and op != "copy" and instr.shape.is_array:
            return self._fix_elementwise(comp, instr, cache)
        if op == "dot":
            changed = False
            for i, x in enumerate(instr.operands):
                wish = self.dot_layouts.operand_layout(instr, i) if self.dot_layouts else None
                if wish is not None:
                    changed |= _set_operand_layout(comp, instr, i, with_layout(x.shape, wish),
                                                   cache)
                elif not dot_accepts(instr, x.shape.layout, x.shape.rank):
                    changed |= _set_operand_layout(
                        comp, instr, i, with_layout(x.shape, Layout.row_major(x.shape.rank)),
                        cache)
            return changed
        if op == "custom-call" and instr.attrs.get("operand_layout_constraints"):
            return self._fix_custom_call(comp, instr, cache)
        if op == "while":
            return self._fix_while(comp, instr, cache)
        if op in ("call", "fusion"):
            return self._fix_call(comp, instr, instr.called_computations[0], 0, cache)
        if op == "conditional":
            changed = False
            for b, branch in enumerate(instr.called_computations):
                changed |= self._fix_call(comp, instr, branch, b + 1, cache)
            return changed
        return False

    def _fix_elementwise(self, comp: HloComputation, instr: HloInstruction, cache: dict) -> bool:
        layout = instr.shape.layout
        changed = False
        for i, x in enumerate(instr.operands):
            if x.shape.is_array and x.shape.rank == instr.shape.rank and x.shape.rank > 0:
                if self.dot_follows_user and x.opcode == "dot" and len(x.users) == 1 \
                        and x is not comp.root:
                    # a dot writes any layout (the GEMM computes C^T = B^T A^T for a
                    # column-major C): it takes its only user's, instead of a copy
                    changed |= _set_shape(x, with_layout(x.shape, layout))
                    continue
                changed |= _set_operand_layout(comp, instr, i, with_layout(x.shape, layout),
                                               cache)
        return changed

    def _fix_custom_call(self, comp: HloComputation, instr: HloInstruction, cache: dict) -> bool:
        constraints = instr.attrs["operand_layout_constraints"]
        if len(constraints) != len(instr.operands):
            raise InvalidArgumentError(
                f"layout-assignment: {instr.name} has {len(instr.operands)} operands but "
                f"{len(constraints)} operand_layout_constraints")
        changed = False
        for i, want in enumerate(constraints):
            if not instr.operands[i].shape.compatible(want):
                raise InvalidArgumentError(
                    f"layout-assignment: {instr.name} operand {i} has shape "
                    f"{instr.operands[i].shape}, its layout constraint is {want}")
            changed |= _set_operand_layout(comp, instr, i, want, cache)
        return changed

    def _fix_call(self, comp: HloComputation, instr: HloInstruction, callee: HloComputation,
                  first_operand: int, cache: dict) -> bool:
        """Operands take the callee's parameter layouts; the callee's root the result's."""
        changed = False
        for p, param in enumerate(callee.parameters):
            changed |= _set_operand_layout(comp, instr, first_operand + p, param.shape, cache)
        if instr.opcode != "fusion":
            changed |= _set_root_layout(callee, instr.shape, {})
        return changed

    def _fix_while(self, comp: HloComputation, instr: HloInstruction, cache: dict) -> bool:
        """The body parameter's layout is the loop state's layout everywhere."""
        body, cond = instr.attrs["body"], instr.attrs["condition"]
        state = body.parameters[0].shape
        changed = False
        if not layouts_equal(cond.parameters[0].shape, state):
            cond.parameters[0].shape = state
            self.fix(cond)
            changed = True
        changed |= _set_root_layout(body, state, {})
        changed |= _set_operand_layout(comp, instr, 0, state, cache)
        if not layouts_equal(instr.shape, state):
            old_shape, users = instr.shape, list(instr.users)
            was_root = instr.is_root
            instr.shape = state
            old = relayout(comp, instr, old_shape, cache)
            for user in users:
                user.replace_operands(instr, old)
            if was_root:
                comp.root = old
            changed = True
        sort_instructions(body)
        sort_instructions(cond)
        return changed


def _set_shape(instr: HloInstruction, shape: Shape) -> bool:
    if instr.shape == shape:
        return False
    instr.shape = shape
    return True


__all__ = ["CpuLayoutAssignment", "dot_accepts", "is_row_major_ignoring_degenerate",
           "layouts_equal", "relayout", "reshape_is_bitcast", "transpose_bitcast_layout",
           "transpose_is_bitcast", "with_layout"]
