"""``reduction_consumer_fusion``: one kernel for a row reduction and the work that reads it.

Precondition: run after ``fusion`` (instruction fusion) on a module with layouts.
Guarantees: every value is computed by the same operations as before; a group of
instructions (plain ones and ``kLoop`` fusions) around a row reduction becomes one
``fusion`` (``kind=kInput``, named ``row_reduction_fusion``) whose fused computation
satisfies :func:`row_fusion_decision`. Values used outside the group are the fusion's
outputs (a ``tuple`` root read with ``get-tuple-element`` when there are several).

Instruction fusion leaves a softmax ``exp(x - max(x)) / sum(exp(x - max(x)))`` as four
kernels (the max, the exp, the sum, the divide), because it never fuses a reduce into a
consumer that reads it through a broadcast. A kernel that walks the rows can compute all
of it in one pass per reduction over a row that stays in cache (XLA's softmax/layernorm
form; the CPU reduction emitter runs such fusions in *phases*). This pass builds those
fusions.

**Groups.** For each *seed* (a ``reduce``, or a loop fusion containing reduces), in post
order, the group grows by its users in post order (a user joins when none of its other
operands depends on the group through an instruction outside it, which would make a
cycle), then by producers whose every user is in the group. A candidate joins only if the
fused computation of the grown group passes :func:`row_fusion_decision`; groups of one
instruction are left alone. Nothing is duplicated: members are moved into the fusion.

**The acceptance rule** (:func:`row_fusion_decision`, self-contained and conservative;
the CPU reduction emitter accepts more):

- every reduce has one input and a scalar constant or parameter init, a reducer
  ``op(p0, p1)`` with ``op`` in add/multiply/maximum/minimum (and/or/xor for integers),
  and the same input dimensions and reduced dimensions: the *rows*. The reduced
  dimensions are the minor-most ones of the input's layout (rows are contiguous; column
  reductions are left to the reduction kernel), a row has at least two elements, and
  there are at least :data:`SPLIT_ROWS` rows when the input is large (fewer, longer rows
  are split across threads by the unfused kernel);
- every instruction is elementwise or a plain shape op, of a non-complex element type
  of at least 8 bits (ops the CPU elemental emitter generates);
- every instruction that depends on a reduce reads the reduced values only at its own
  row: elementwise ops and size-1 relabels (reshape/bitcast/broadcast/copy) on the
  reduced values, broadcasts of a row's value back along the reduced dimensions, and
  elementwise ops on the input space;
- every output has the reduced values' dimensions (up to size-1 dims) or the input's;
- an expensive elementwise value needed by several sweeps over a row (the emitter's
  phases) is kept in the emitter's row cache, so rows are at most the backend's
  ``row_cache_elements`` long and the value is read only at its own element.

**The backend's rules.** What the target's reduction emitter accepts (its row-cache
size, how it lays dimensions out in memory) comes from the
:class:`~xlapy.passes.backend_rules.RowReductionRules` given to the pass by the
backend's pipeline.

Order of evaluation: reductions keep the CPU reduction kernel's documented order (the
same reduce over the same input dimensions gets the same order, fused or not).

**Time.** The post order is kept up to date across fusions (``PostOrderIndex``, not
``comp.post_order()`` per fusion), and "does this operand depend on the group through
an outsider?" is a bit-set lookup (``ContractedReachability``), not a walk over the
seed's descendants up to the horizon (in a training step, into the backward pass).
The pass context's ``reference_mode`` selects the straightforward forms (same result).
"""
from __future__ import annotations

import heapq
import logging
from dataclasses import dataclass, field
from math import prod

from ..hlo import types as T
from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.opcodes import ELEMENTWISE
from ..hlo.shape import Shape
from .backend_rules import RowReductionRules
from .base import HloPass
from .context import PassContext
from .computation_edits import take_out
from .fusion_utils import (FusionDecision, FusionRefusal, fused_computation, fusion_kind,
                           is_expensive, reachable_from, sort_topologically)
from .instruction_fusion import fusible_computations
from .post_order_index import PostOrderIndex
from .reachability import ContractedReachability

log = logging.getLogger(__name__)

SPLIT_ROWS = 8              # fewer rows than this, ...
SPLIT_WORK = 1 << 16        # ... over this many input elements: leave the reduce splittable
MAX_REDUCES = 6             # reduces in one group
MAX_MEMBERS = 48            # instructions (plain or fusions) in one group
MAX_BUFFERS = 64            # operands plus outputs of one fusion

_PLAIN_TYPES = frozenset({T.PRED, T.S8, T.S16, T.S32, T.S64, T.U8, T.U16, T.U32, T.U64,
                          T.F16, T.BF16, T.F32, T.F64})
_FLOAT_REDUCERS = frozenset({"add", "multiply", "maximum", "minimum"})
_INT_REDUCERS = _FLOAT_REDUCERS | {"and", "or", "xor"}
_SHAPE_OPS = frozenset({"broadcast", "reshape", "bitcast", "transpose", "slice", "reverse",
                        "concatenate", "pad", "iota", "constant"})
_ELEMENTWISE = ELEMENTWISE - {"stochastic-convert", "complex", "real", "imag"}
_FUSED_OPS = _ELEMENTWISE | _SHAPE_OPS | {"reduce", "parameter"}
_RELABEL = frozenset({"reshape", "bitcast", "broadcast", "copy"})


# ----------------------------------------------------------------------------- geometry
def squeezed(dims) -> tuple[int, ...]:
    return tuple(n for n in dims if n != 1)


@dataclass(frozen=True)
class Rows:
    """The rows of a group: the reduces' input dimensions and reduced dimensions."""

    in_dims: tuple[int, ...]
    reduced: frozenset[int]

    @property
    def out_dims(self) -> tuple[int, ...]:
        return tuple(n for d, n in enumerate(self.in_dims) if d not in self.reduced)

    @property
    def row_size(self) -> int:
        return prod(self.in_dims[d] for d in self.reduced)

    @property
    def rows(self) -> int:
        return prod(self.out_dims)

    def is_out_space(self, dims) -> bool:
        return squeezed(dims) == squeezed(self.out_dims)

    def contiguous(self, shape: Shape, rules: RowReductionRules) -> bool:
        """The reduced dims (of size > 1) are minor to every kept dim of size > 1."""
        seen_reduced = False
        for d in rules.major_to_minor(shape):
            if shape.dims[d] == 1:
                continue
            if d in self.reduced:
                seen_reduced = True
            elif seen_reduced:
                return False
        return True


def _reducer_ok(reduce: HloInstruction) -> FusionDecision:
    if len(reduce.operands) != 2 or reduce.operands[1].shape.rank != 0:
        return FusionDecision.forbid(f"{reduce.name} is not a single-input reduce")
    et = reduce.operands[0].shape.element_type
    comp = reduce.attrs.get("to_apply")
    if not isinstance(comp, HloComputation) or comp.num_parameters != 2:
        return FusionDecision.forbid(f"{reduce.name} has no two-parameter reducer")
    root = comp.root
    ops = _FLOAT_REDUCERS if et.is_floating else _INT_REDUCERS
    if root.opcode not in ops or len(root.operands) != 2 or \
            any(o.opcode != "parameter" for o in root.operands) or \
            {o.parameter_number for o in root.operands} != {0, 1}:
        return FusionDecision.forbid(f"{reduce.name}'s reducer is not a plain binary op")
    if any(p.shape.rank != 0 or p.shape.element_type != et for p in comp.parameters) or \
            root.shape.element_type != et or reduce.shape.element_type != et:
        return FusionDecision.forbid(f"{reduce.name}'s reducer changes the element type")
    return FusionDecision.allow()


def _relabels(i: HloInstruction, rules: RowReductionRules) -> bool:
    """Only size-1 dims added or dropped, elements in the same row-major order."""
    op = i.operands[0]
    if squeezed(op.shape.dims) != squeezed(i.shape.dims):
        return False
    if i.opcode == "broadcast":
        return list(i.dimensions) == sorted(i.dimensions)
    if i.opcode == "bitcast":
        phys_in = [op.shape.dims[d] for d in rules.major_to_minor(op.shape)]
        phys_out = [i.shape.dims[d] for d in rules.major_to_minor(i.shape)]
        return squeezed(phys_in) == squeezed(phys_out) == squeezed(op.shape.dims)
    return True


def _reads_own_row(i: HloInstruction, dependent: set[int], rows: Rows,
                   rules: RowReductionRules) -> bool:
    """Evaluated at any element of row r, ``i`` needs the reduced values of row r only."""
    deps = [o for o in i.operands if id(o) in dependent]
    if rows.is_out_space(i.shape.dims):
        if i.opcode in _RELABEL:
            return _relabels(i, rules)
        return i.opcode in _ELEMENTWISE and all(o.shape.dims == i.shape.dims for o in deps)
    if i.shape.dims != rows.in_dims:
        return False
    if i.opcode == "broadcast":
        op = deps[0].shape.dims
        targets = [t for k, t in enumerate(i.dimensions) if op[k] != 1]
        return rows.is_out_space(op) and targets == sorted(targets) and \
            not any(t in rows.reduced for t in targets)
    return i.opcode in _ELEMENTWISE and all(o.shape.dims == rows.in_dims for o in deps)


def _stored(value: HloInstruction) -> HloInstruction:
    """The value a kernel stores for an output (root bitcasts keep the operand's bytes)."""
    while value.opcode == "bitcast" and \
            value.operands[0].shape.element_type == value.shape.element_type:
        value = value.operands[0]
    return value


def _root_bitcasts(root: HloInstruction, outputs: list[HloInstruction]) -> set[int]:
    """ids of the bitcasts :func:`_stored` looks through that nothing else reads."""
    out: set[int] = set()
    for o in outputs:
        v, readers = o, {id(root)}
        while v.opcode == "bitcast" and \
                v.operands[0].shape.element_type == v.shape.element_type and \
                (v is root or all(id(u) in readers for u in v.users)):
            out.add(id(v))
            readers = {id(v)}
            v = v.operands[0]
    return out


# ----------------------------------------------------------------------------- the rule
def row_fusion_decision(comp: HloComputation, rules: RowReductionRules) -> FusionDecision:
    """May ``comp`` (a fused computation) be a row reduction fusion for a backend with
    ``rules``? (module docstring)"""
    root = comp.root
    outputs = list(root.operands) if root.opcode == "tuple" else [root]
    reduces = [i for i in comp.instructions if i.opcode == "reduce"]
    if not reduces:
        return FusionDecision.forbid("no reduce")
    if len(reduces) > MAX_REDUCES:
        return FusionDecision.forbid(f"more than {MAX_REDUCES} reduces")
    for i in comp.instructions:
        if i is root and i.opcode == "tuple":
            continue
        if i.opcode not in _FUSED_OPS:
            return FusionDecision.forbid(f"{i.name} ({i.opcode}) is not fused by this pass")
        if not i.shape.is_array or i.shape.element_type not in _PLAIN_TYPES:
            return FusionDecision.forbid(f"{i.name} has shape {i.shape}")
        if i.opcode in ("bitcast", "bitcast-convert") and \
                i.operands[0].shape.element_type.bits != i.shape.element_type.bits:
            return FusionDecision.forbid(f"{i.name} changes the element width")
    for r in reduces:
        d = _reducer_ok(r)
        if not d:
            return d
    rows = Rows(reduces[0].operands[0].shape.dims, frozenset(reduces[0].dimensions))
    for r in reduces:
        if Rows(r.operands[0].shape.dims, frozenset(r.dimensions)) != rows:
            return FusionDecision.forbid(f"{r.name} reduces other rows than "
                                         f"{reduces[0].name}")
        if not rows.contiguous(r.operands[0].shape, rules):
            return FusionDecision.forbid(f"{r.name} reduces non-minor (column) dimensions")
    if rows.row_size < 2:
        return FusionDecision.forbid("rows of fewer than two elements")
    if rows.rows < SPLIT_ROWS and prod(rows.in_dims) >= SPLIT_WORK:
        return FusionDecision.forbid(f"only {rows.rows} long rows: the reduce alone is "
                                     f"split across threads")
    dependent = reachable_from(reduces)
    for r in reduces:
        init = r.operands[1]
        if id(init) in dependent or init.opcode not in ("constant", "parameter"):
            return FusionDecision.forbid(f"{r.name}'s init is not a constant or parameter")
    skip = {id(root)} | _root_bitcasts(root, outputs)      # never evaluated by the kernel
    for i in comp.instructions:
        if id(i) in dependent and i.opcode != "reduce" and id(i) not in skip and \
                not _reads_own_row(i, dependent, rows, rules):
            return FusionDecision.forbid(f"{i.name} ({i.opcode}) reads reduced values "
                                         f"of other rows")
    if len({id(o) for o in outputs}) != len(outputs):
        return FusionDecision.forbid("an output appears twice")
    for o in outputs:
        dims = _stored(o).shape.dims
        if not (rows.is_out_space(dims) or dims == rows.in_dims):
            return FusionDecision.forbid(f"output {o.name} {o.shape} is neither a row "
                                         f"value nor an input-space value")
    return _sweeps_decision(comp, reduces, outputs, dependent, rows, rules)


def _sweeps_decision(comp: HloComputation, reduces: list[HloInstruction],
                     outputs: list[HloInstruction], dependent: set[int],
                     rows: Rows, rules: RowReductionRules) -> FusionDecision:
    """Refuse an expensive value that each sweep over a row would compute again."""
    ids = {id(r) for r in reduces}
    depth: dict[int, int] = {}
    for i in comp.post_order():
        below = [depth[id(o)] for o in i.operands if id(o) in depth]
        if id(i) in ids:
            depth[id(i)] = 1 + max(below, default=-1)
        elif below:
            depth[id(i)] = max(below)
    phases = 1 + max(depth[id(r)] for r in reduces)
    sweeps: list[list[HloInstruction]] = [
        [r.operands[0] for r in reduces if depth[id(r)] == p] for p in range(phases)]
    late: list[HloInstruction] = []
    for o in outputs:
        s = _stored(o)
        if s.shape.dims == rows.in_dims and not (id(s) in dependent and
                                                  rows.is_out_space(s.shape.dims)):
            (late if id(s) in dependent else sweeps[0]).append(s)
    sweeps.append(late)
    used: dict[int, set[int]] = {}
    values: dict[int, HloInstruction] = {}
    for k, roots in enumerate(sweeps):
        stack, seen = list(roots), set()
        while stack:
            i = stack.pop()
            if id(i) in seen or id(i) in ids or i.shape.dims != rows.in_dims:
                continue
            seen.add(id(i))
            values[id(i)] = i
            used.setdefault(id(i), set()).add(k)
            if i.opcode in ELEMENTWISE:
                stack.extend(i.operands)
    for k, where in used.items():
        i = values[k]
        if len(where) < 2 or i.opcode not in ELEMENTWISE or not is_expensive(i):
            continue
        in_place = all(id(u) in ids or u.opcode == "tuple" or
                       (u.opcode in ELEMENTWISE and u.shape.dims == rows.in_dims)
                       for u in i.users)
        if rows.row_size > rules.row_cache_elements or not in_place:
            return FusionDecision.forbid(f"{i.name} ({i.opcode}) would be computed again "
                                         f"in each of {len(where)} sweeps over a row")
    return FusionDecision.allow()


# ----------------------------------------------------------------------------- building
@dataclass
class _Body:
    """A candidate fused computation for a group (not yet part of the module)."""

    comp: HloComputation
    operands: list[HloInstruction]      # the fusion's operands, one per parameter
    outputs: list[HloInstruction]       # members whose values leave the group
    constants: list[HloInstruction]     # clones of scalar constants from outside
    #: (member, output) for members that leave the group as a bitcast of another output:
    #: read outside through a bitcast of that output instead of stored twice
    views: list[tuple[HloInstruction, HloInstruction]] = field(default_factory=list)


def _clone(i: HloInstruction, operands: list[HloInstruction]) -> HloInstruction:
    return HloInstruction(i.opcode, i.shape, operands, dict(i.attrs), name=i.name,
                          literal=i.literal)


def build_body(members: list[HloInstruction]) -> _Body:
    """The fused computation of ``members`` (in post order): fusion members' bodies are
    inlined, operands from outside become parameters (one per distinct operand)."""
    ids = {id(m) for m in members}
    fcomp = HloComputation("fused_computation")
    operands: list[HloInstruction] = []
    params: dict[int, HloInstruction] = {}
    value: dict[int, HloInstruction] = {}
    constants: list[HloInstruction] = []

    def source(o: HloInstruction) -> HloInstruction:
        if id(o) in ids:
            return value[id(o)]
        if o.opcode == "constant" and o.shape.is_array and o.shape.num_elements == 1:
            if id(o) not in value:                 # scalar constants are cloned in
                value[id(o)] = fcomp.add_instruction(_clone(o, []))
                constants.append(value[id(o)])
            return value[id(o)]
        if id(o) not in params:
            n = len(operands)
            p = HloInstruction("parameter", o.shape, name=f"param_{n}", parameter_number=n)
            fcomp.add_instruction(p)
            params[id(o)] = p
            operands.append(o)
        return params[id(o)]

    for m in members:
        if m.opcode != "fusion":
            value[id(m)] = fcomp.add_instruction(_clone(m, [source(o) for o in m.operands]))
            continue
        inner, imap = fused_computation(m), {}
        for i in inner.post_order():
            if i.opcode == "parameter":
                imap[id(i)] = source(m.operands[i.parameter_number])
            else:
                imap[id(i)] = fcomp.add_instruction(_clone(i, [imap[id(o)]
                                                               for o in i.operands]))
        value[id(m)] = imap[id(inner.root)]
    outputs = [m for m in members if m.is_root or any(id(u) not in ids for u in m.users)]
    stored = {id(m) for m in outputs}
    views = [(m, s) for m in outputs if (s := _stored(m)) is not m and id(s) in stored]
    viewed = {id(m) for m, _ in views}
    outputs = [m for m in outputs if id(m) not in viewed]
    roots = [value[id(m)] for m in outputs]
    if len(roots) == 1:
        fcomp.root = roots[0]
    else:
        fcomp.root = fcomp.add_instruction(HloInstruction(
            "tuple", Shape.tuple([r.shape for r in roots]), roots, name="tuple"))
    return _Body(fcomp, operands, outputs, constants, views)


# ----------------------------------------------------------------------------- the pass
class ReductionConsumerFusion(HloPass):
    """Fuse row reductions with their row-local consumers (module docstring), for a
    backend whose row-reduction emitter follows ``rules``."""

    name = "reduction_consumer_fusion"

    def __init__(self, rules: RowReductionRules) -> None:
        self.rules = rules
        self.refusals: list[FusionRefusal] = []
        self.created: list[HloInstruction] = []
        self._reach: ContractedReachability | None = None
        self._reference = False        # the run's PassContext.reference_mode

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        self.created = []
        self._reference = ctx is not None and ctx.reference_mode
        changed = False
        for comp in fusible_computations(module):
            changed |= self._run_on(module, comp)
        return changed

    # ----- candidates
    def _mergeable(self, n: HloInstruction, comp: HloComputation,
                   control: set[int]) -> bool:
        """May ``n`` be moved into a group? (plain fusible ops and loop fusions)"""
        if n.parent is not comp or n.control_predecessors or id(n) in control:
            return False
        if not n.shape.is_array:
            return False
        if n.opcode == "fusion":
            root = fused_computation(n).root
            return fusion_kind(n) == "kLoop" and root.opcode not in ("tuple", "parameter")
        return n.opcode in _FUSED_OPS - {"parameter", "constant", "iota"}

    @staticmethod
    def _has_reduce(n: HloInstruction) -> bool:
        if n.opcode == "fusion":
            return any(i.opcode == "reduce" for i in fused_computation(n).instructions)
        return n.opcode == "reduce"

    def _try(self, members: list[HloInstruction], pos: dict[int, float],
             candidate: HloInstruction) -> _Body | None:
        body = build_body(sorted(members, key=lambda m: pos[id(m)]))
        decision = row_fusion_decision(body.comp, self.rules)
        if decision and len(body.operands) + len(body.outputs) > MAX_BUFFERS:
            decision = FusionDecision.forbid("too many operands and outputs")
        if not decision:
            refusal = FusionRefusal(self.name, candidate.name, members[0].name,
                                    decision.reason)
            log.debug("%s", refusal)
            self.refusals.append(refusal)
            return None
        return body

    # ----- growing a group
    def _grow(self, seed: HloInstruction, comp: HloComputation, pos: dict[int, float],
              control: set[int]) -> tuple[list[HloInstruction], _Body] | None:
        members = [seed]
        body = self._try(members, pos, seed)
        if body is None:
            return None
        ids = {id(seed)}
        # A user joins only if none of its other operands depends on the group through an
        # instruction outside it (a cycle): such an operand is "tainted", a descendant of
        # the seed that is not a member. With bit sets the test is one lookup and only
        # the members' users are visited; without, every descendant of the seed up to
        # the horizon is walked in post order and the refused ones are remembered.
        reach = self._reach.descendants(seed) if self._reach is not None else None
        walked: set[int] = set()                  # refused descendants (no bit sets)

        def tainted(o: HloInstruction) -> bool:
            if reach is None:
                return id(o) in walked
            return id(o) not in ids and self._reach.reaches(reach, o)
        heap: list[tuple[float, int, HloInstruction]] = []
        pushed: set[int] = set()

        def push_users(n: HloInstruction) -> None:
            for u in n.users:
                if u.parent is comp and id(u) not in pushed:
                    pushed.add(id(u))
                    heapq.heappush(heap, (pos[id(u)], u.unique_id, u))
        horizon = max((pos[id(u)] for u in seed.users if u.parent is comp), default=-1)
        push_users(seed)
        while heap and heap[0][0] <= horizon:
            _, _, c = heapq.heappop(heap)
            joins = (len(members) < MAX_MEMBERS and self._mergeable(c, comp, control)
                     and any(id(o) in ids for o in c.operands)
                     and not any(tainted(o) for o in c.operands))
            trial = self._try(members + [c], pos, c) if joins else None
            if trial is not None:
                members.append(c)
                ids.add(id(c))
                body = trial
                horizon = max([horizon] + [pos[id(u)] for u in c.users if u.parent is comp])
                push_users(c)
            elif reach is None:
                walked.add(id(c))
                push_users(c)
        grown = True
        while grown and len(members) < MAX_MEMBERS:       # producers used only by the group
            grown = False
            for p in sorted(body.operands, key=lambda o: -pos.get(id(o), -1)):
                if p.is_root or not self._mergeable(p, comp, control) or \
                        not all(id(u) in ids for u in p.users):
                    continue
                trial = self._try(members + [p], pos, p)
                if trial is not None:
                    members.append(p)
                    ids.add(id(p))
                    body = trial
                    grown = True
                    break
        if len(members) < 2:
            return None
        return sorted(members, key=lambda m: pos[id(m)]), body

    def _run_on(self, module: HloModule, comp: HloComputation) -> bool:
        """Try the seeds in post order; after each new fusion go on with the first untried
        seed of the new post order, kept by :class:`PostOrderIndex` (rebuilt by
        ``sort_topologically`` only when a fusion moves other instructions)."""
        reference = self._reference
        changed = False
        tried: set[int] = set()
        keepalive: list[HloInstruction] = []      # ids in ``tried`` stay unique
        dead_computations: list[HloComputation] = []
        post = comp.post_order()
        list_is_order = len(post) == len(comp.instructions) and \
            all(a is b for a, b in zip(post, comp.instructions))
        order = PostOrderIndex(post)
        self._reach = ContractedReachability(post, reference)
        control = {id(c) for i in comp.instructions for c in i.control_predecessors}
        seeds = order.after(float("-inf"))
        for seed in seeds:
            if id(seed) in tried or not self._has_reduce(seed) or \
                    not self._mergeable(seed, comp, control):
                continue
            tried.add(id(seed))
            keepalive.append(seed)
            grown = self._grow(seed, comp, order.label, control)
            if grown is None:
                continue
            changed = True
            seed_label = order.label[id(seed)]
            fusion, gtes, removed = self._commit(module, comp, *grown, control,
                                                 dead_computations)
            self._reach.contract(grown[0], [fusion, *gtes])
            if not reference and list_is_order and order.contract(removed, fusion, gtes):
                seeds = order.after(seed_label)
                continue
            if not reference:               # the list as the eager edits would leave it
                gone = {id(r) for r in removed}
                base = order.nodes + [fusion, *gtes] if list_is_order else comp.instructions
                comp.instructions = [i for i in base if id(i) not in gone]
            sort_topologically(comp)
            list_is_order = True
            order = PostOrderIndex(comp.instructions)
            control = {id(c) for i in comp.instructions for c in i.control_predecessors}
            seeds = order.after(float("-inf"))
        if changed:
            comp.instructions = order.nodes
            gone = {id(c) for c in dead_computations}
            module.computations = [c for c in module.computations if id(c) not in gone]
            for c in dead_computations:
                c.parent = None
        return changed

    # ----- rewriting
    def _commit(self, module: HloModule, comp: HloComputation,
                members: list[HloInstruction], body: _Body, control: set[int],
                dead_computations: list[HloComputation]
                ) -> tuple[HloInstruction, list[HloInstruction], list[HloInstruction]]:
        """Replace ``members`` by one fusion; returns it, its get-tuple-elements and the
        instructions that left ``comp``. The instructions are not reordered here: the
        caller updates the post order (the fusion and get-tuple-elements were appended)."""
        fcomp = body.comp
        for p in fcomp.parameters:
            p.name = module.unique_name(f"param_{p.parameter_number}")
        for c in body.constants:
            c.name = module.unique_name(c.name)
        if fcomp.root.opcode == "tuple":
            fcomp.root.name = module.unique_name("tuple")
        fcomp.name = module.unique_name("fused_computation")
        module.add_computation(fcomp)
        attrs: dict = {"kind": "kInput", "calls": fcomp}
        last = members[-1]
        if last.metadata is not None:
            attrs["metadata"] = last.metadata
        fusion = HloInstruction("fusion", fcomp.root.shape, body.operands, attrs,
                                name=module.unique_name("row_reduction_fusion"))
        comp.add_instruction(fusion)
        ids = {id(m) for m in members}
        gtes: list[HloInstruction] = []
        read_as: list[tuple[HloInstruction, HloInstruction]] = []   # (member, its value now)
        for k, m in enumerate(body.outputs):
            out = fusion
            if len(body.outputs) > 1:
                out = comp.add_instruction(HloInstruction(
                    "get-tuple-element", m.shape, [fusion], {"index": k},
                    name=module.unique_name("get-tuple-element")))
                gtes.append(out)
            read_as.append((m, out))
            for view in [v for v, source in body.views if source is m]:
                alias = comp.add_instruction(HloInstruction(
                    "bitcast", view.shape, [out], name=module.unique_name(view.name)))
                gtes.append(alias)
                read_as.append((view, alias))
        for m, value in read_as:
            for u in [u for u in m.users if id(u) not in ids]:
                u.replace_operands(m, value)
            if m.is_root:
                comp.root = value
        removed: list[HloInstruction] = []
        for m in reversed(members):
            operands = m.operands
            take_out(comp, m, self._reference)
            removed.append(m)
            if m.opcode == "fusion":
                dead_computations.append(fused_computation(m))
            for o in operands:                     # scalar constants now cloned in
                if o.opcode == "constant" and not o.users and not o.is_root and \
                        o.parent is comp and id(o) not in control:
                    take_out(comp, o, self._reference)
                    removed.append(o)
        self.created.append(fusion)
        log.debug("fused %s into %s", ", ".join(m.name for m in members), fusion.name)
        return fusion, gtes, removed


__all__ = ["ReductionConsumerFusion", "row_fusion_decision", "build_body", "Rows"]
