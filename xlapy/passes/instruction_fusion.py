"""``fusion``: XLA's InstructionFusion driver with the CPU policy (``CpuInstructionFusion``).

Precondition: a verified module (layouts optional). Guarantees: every value is
computed as before; loop-fusible producers are cloned into ``fusion`` instructions
(``kind=kLoop``; ``kOutput`` for a matrix-vector ``dot`` feeding an ``add``, and for the
matrix products the backend's ``DotOutputFusionRules`` accept), named
``<producer-opcode>_<consumer-opcode>_fusion`` like XLA.

Driver (``InstructionFusion::Run``): for each non-embedded computation, visit
instructions in reverse post order (root first). For a consumer, try its operands
latest-in-post-order first; on the first successful fusion re-enqueue the fusion
so its new operands are considered next. When duplication is allowed,
``ComputeGloballyUnfusible`` first marks producers whose duplication would
increase memory traffic (plus XLA:CPU's stable-softmax guard).

Every refusal is a :class:`FusionDecision` with XLA's reason, logged at debug
level and appended to :attr:`CpuInstructionFusion.refusals`.

Time is linear in the module (fusions are at most :data:`MAX_FUSION_SIZE` in size,
:func:`fusion_size`, an xlapy limit): answers that need a walk of
a fused body (which operands it reads more than once, how often the emitter would
re-emit a producer, how many reduces it holds) are kept per fusion until the pass
changes that fusion (:class:`FusionAnalysisCache`);
reachability for ``ComputeGloballyUnfusible`` comes from bit sets
(:mod:`xlapy.passes.reachability`); insertions into and removals from the
computation's instruction list are done in one sweep
(:class:`~xlapy.passes.computation_edits.DeferredEdits`).
The pass context's ``reference_mode`` turns all three off (tests compare).
"""
from __future__ import annotations

import logging
from typing import Callable

from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.opcodes import OPCODES
from .backend_rules import DotOutputFusionRules
from .base import HloPass
from .context import PassContext
from .computation_edits import DeferredEdits
from .fusion_indexing import FusionAnalysisCache, code_duplication_too_high
from .fusion_utils import (
    FusionDecision, FusionRefusal, can_be_loop_fused, create_fusion, fuse_instruction,
    fused_computation, fused_instruction_count, fusion_kind, is_always_duplicable,
    is_custom_fusion, is_elementwise, is_expensive, is_fusible, unique_operands)
from .reachability import reachability

log = logging.getLogger(__name__)

FUSION_THRESHOLD_BYTES = 16 * 1024      # matrix-vector dot fusion: vector operand bound
MAX_CONCATENATE_ARGUMENTS = 8
MAX_REDUCTIONS_IN_FUSION = 5
# xlapy's own bound on a fusion's size (:func:`fusion_size`: instructions in the fused
# computation, a transcendental counting TRANSCENDENTAL_SIZE): LLVM's optimizer takes
# superlinear time in the size of one kernel, and the analyses here walk a fusion per
# decision, so a chain of N elementwise ops becomes about N / MAX_FUSION_SIZE kernels and
# compiles in time linear in N (docs/performance.md has the measurements). A math
# function expands to a polynomial of tens of IR instructions where an integer add or
# xor is one, so a chain of sines is cut about as short as it was under a plain count of
# 96, while a chain of cheap ops (the ~190 integer ops of a dropout mask's threefry
# bits and the select that applies them) stays one kernel instead of materializing its
# intermediate bits.
MAX_FUSION_SIZE = 256
TRANSCENDENTAL_SIZE = 4
# A reduction of at least this many elements is not fused into a consumer with fewer than
# NESTED_REDUCE_MIN_OUTPUTS elements (xlapy's own rule; XLA:CPU fuses it): a loop fusion
# is shared out by its output elements, so a scalar loss summed over a large row
# reduction would run on one thread, where the row reduction alone is shared out by rows
# and leaves a small sum for the consumer.
NESTED_REDUCE_ELEMENTS = 1 << 16
NESTED_REDUCE_MIN_OUTPUTS = 64

# Computations called with these opcodes are "embedded" (scalar bodies): never fused into.
_CONTROL_FLOW_CALLERS = frozenset({"while", "conditional", "call"})


def fusible_computations(module: HloModule) -> list[HloComputation]:
    """Entry plus computations called only as control flow (while/conditional/call bodies)."""
    callers: dict[int, list[str]] = {}
    for comp in module.computations:
        for instr in comp.instructions:
            for callee in instr.called_computations:
                callers.setdefault(id(callee), []).append(instr.opcode)
    out = []
    for comp in module.computations_post_order():
        ops = callers.get(id(comp), [])
        if comp is module.entry or (ops and all(o in _CONTROL_FLOW_CALLERS for o in ops)):
            out.append(comp)
    return out


def _is_matrix_vector_dot(instr: HloInstruction) -> bool:
    return (instr.opcode == "dot" and not instr.shape.element_type.is_complex
            and instr.shape.rank <= 1 and not instr.attrs.get("lhs_batch_dims"))


def _has_exactly_one_use(instr: HloInstruction) -> bool:
    return len(instr.users) == 1 and sum(o is instr for o in instr.users[0].operands) == 1


def can_be_output_fused(producer: HloInstruction, consumer: HloInstruction,
                        rules: DotOutputFusionRules | None = None) -> bool:
    """XLA:CPU's output fusion: a matrix-vector dot used once by an ``add``; with the
    backend's ``rules``, also the matrix products they accept."""
    if consumer.opcode != "add" or producer.opcode != "dot" or \
            not _has_exactly_one_use(producer):
        return False
    return _is_matrix_vector_dot(producer) or (
        rules is not None and producer.shape == consumer.shape
        and rules.output_fusible(producer))


def _can_be_output_fused_into_some_operand(instr: HloInstruction,
                                           rules: DotOutputFusionRules | None = None) -> bool:
    return instr.opcode == "add" and any(can_be_output_fused(o, instr, rules)
                                         for o in instr.operands)


def _bias_into_output_fusion(producer: HloInstruction, consumer: HloInstruction) -> bool:
    """A broadcast of a parameter-like value into the addend of a matrix product's
    ``kOutput`` fusion (a bias): the kernel reads it through the broadcast."""
    if consumer.opcode != "fusion" or consumer.attrs.get("kind") != "kOutput" \
            or producer.opcode != "broadcast" or not _has_exactly_one_use(producer):
        return False
    root = consumer.attrs["calls"].root
    return root.opcode == "add" and any(o.opcode == "dot" and o.shape.rank == 2
                                        for o in root.operands)


def _is_minor_dim_concatenate(instr: HloInstruction) -> bool:
    """Minor-dim concatenates with ≥64 contiguous and ≥2048 total bytes are left to memcpy."""
    shape = instr.shape
    if shape.rank <= 1:
        return False
    dim = instr.dimensions[0]
    minor = shape.layout.minor_to_major[0] if shape.layout and shape.layout.minor_to_major \
        else shape.rank - 1
    return (dim == minor and shape.dims[dim] * shape.element_type.byte_size >= 64
            and shape.byte_size >= 2048)


def _bad_concatenate(instr: HloInstruction) -> bool:
    return instr.opcode == "concatenate" and (
        len(instr.operands) > MAX_CONCATENATE_ARGUMENTS or _is_minor_dim_concatenate(instr))


def _reduces_over_major_dims(instr: HloInstruction) -> bool:
    """A reduce, or a fusion holding one, that keeps its operand's minor dimension (a
    column reduction)."""
    if instr.opcode == "reduce":
        reduces = [instr]
    elif instr.opcode == "fusion":
        reduces = [i for i in fused_computation(instr).instructions if i.opcode == "reduce"]
    else:
        return False
    for r in reduces:
        shape = r.operands[0].shape
        if shape.rank == 0:
            continue
        layout = shape.layout.minor_to_major if shape.layout and \
            shape.layout.minor_to_major else None
        minor = layout[0] if layout else shape.rank - 1
        if minor not in r.dimensions:
            return True
    return False


def _feeds_column_reduction(producer: HloInstruction, consumer: HloInstruction) -> bool:
    """Whether another user of ``producer`` than ``consumer`` is a column reduction, maybe
    through a chain of bitcasts/reshapes (``producer`` is materialised for it, so fusing
    it into ``consumer`` as well would compute it twice)."""
    for user in producer.users:
        if user is consumer:
            continue
        while user.opcode in ("bitcast", "reshape") and len(user.users) == 1:
            user = user.users[0]
        if _reduces_over_major_dims(user):
            return True
    return False


# ----------------------------------------------------------------------------- in-place safety
def in_place_operands(instr: HloInstruction) -> list[int]:
    """Operand numbers the op updates in place (XLA's GetInPlaceInputOutputPairs, top level)."""
    if instr.opcode == "dynamic-update-slice":
        return [0]
    if instr.opcode == "scatter":
        return list(range(len(instr.operands) // 2))
    if instr.opcode == "fusion":
        out = []
        root = fused_computation(instr).root
        roots = root.operands if root.opcode == "tuple" else [root]
        for r in roots:
            if r.opcode in ("dynamic-update-slice", "scatter"):
                base = r.operands[0]
                while base.opcode == "bitcast":
                    base = base.operands[0]
                if base.opcode == "parameter":
                    out.append(base.parameter_number)
        return out
    return []


def _non_elementwise_ops(instr: HloInstruction) -> list[HloInstruction]:
    def bad(i: HloInstruction) -> bool:
        return (i.opcode not in ("fusion", "bitcast", "parameter") and not is_elementwise(i))
    if instr.opcode != "fusion":
        return [instr] if bad(instr) else []
    return [i for i in fused_computation(instr).instructions if bad(i)]


def _constant_int(instr: HloInstruction) -> int | None:
    if instr.opcode == "constant" and instr.shape.is_scalar:
        return int(instr.literal)
    return None


def should_fuse_in_place_op(producer: HloInstruction, consumer: HloInstruction) -> FusionDecision:
    """Refuse fusions that would read a buffer the consumer overwrites (XLA's
    ShouldFuseInPlaceOp)."""
    for k in in_place_operands(consumer):
        target = consumer.operands[k]
        if any(j != k and o is target for j, o in enumerate(consumer.operands)):
            return FusionDecision.forbid(
                "The consumer is an in-place operation that has an additional operand that "
                "has the same value as the in-place buffer")
        if not (target is producer or any(o is target for o in producer.operands)):
            continue
        producer_ops = _non_elementwise_ops(producer)
        if len(producer_ops) > 1:
            return FusionDecision.forbid(
                "Producer fusion has multiple non-elementwise ops, bailing.")
        if not producer_ops:
            return FusionDecision.allow()
        dus_ops = ([consumer] if consumer.opcode == "dynamic-update-slice" else
                   [i for i in fused_computation(consumer).instructions
                    if i.opcode == "dynamic-update-slice"] if consumer.opcode == "fusion" else [])
        if not dus_ops:
            return FusionDecision.allow()
        if len(dus_ops) > 1:
            return FusionDecision.forbid("multiple dus ops, bailing.")
        dus, slc = dus_ops[0], producer_ops[0]

        def real(op_owner: HloInstruction, operand: HloInstruction) -> HloInstruction:
            if op_owner.opcode == "fusion" and operand.opcode == "parameter":
                return op_owner.operands[operand.parameter_number]
            return operand
        if slc.opcode == "slice":
            if not slc.shape.compatible(dus.operands[1].shape):
                return FusionDecision.forbid("Slice op has a different shape than the update "
                                             "shape of the dus op, bailing.")
            for d, (start, _limit, stride) in enumerate(slc.attrs["slice"]):
                c = _constant_int(real(consumer, dus.operands[2 + d]))
                if c is None or c != start or stride != 1:
                    return FusionDecision.forbid("DUS and slice index mismatch")
            return FusionDecision.allow()
        if slc.opcode == "dynamic-slice":
            if not slc.shape.compatible(dus.operands[1].shape):
                return FusionDecision.forbid("Dynamic slice op has a different shape than the "
                                             "update shape of the dus op, bailing.")
            for d in range(dus.shape.rank):
                a = real(producer, slc.operands[1 + d])
                b = real(consumer, dus.operands[2 + d])
                ca, cb = _constant_int(a), _constant_int(b)
                if ca != cb or (ca is None and a is not b):
                    return FusionDecision.forbid("DUS and DS index mismatch")
            return FusionDecision.allow()
        return FusionDecision.forbid("unrecognized inplace update non-elementwise output pair")
    return FusionDecision.allow()


# ----------------------------------------------------------------------------- stable softmax guard
def _is_max_reduction(instr: HloInstruction) -> bool:
    return instr.opcode == "reduce" and instr.to_apply.root.opcode == "maximum"


def _is_exp_shift_subtract(sub: HloInstruction, shift: HloInstruction,
                           reduce: HloInstruction) -> bool:
    if sub.opcode != "subtract":
        return False
    a, b = sub.operands

    def bcast_of(x: HloInstruction, y: HloInstruction) -> bool:
        return x.opcode == "broadcast" and x.operands[0] is y
    uses_shift = a is shift or b is shift or bcast_of(a, shift) or bcast_of(b, shift)
    uses_reduce = bcast_of(a, reduce) or bcast_of(b, reduce)
    return uses_shift and uses_reduce and any(u.opcode == "exponential" for u in sub.users)


def is_coupled_softmax_producer(instr: HloInstruction) -> bool:
    """An elementwise op feeding both a max-reduce and the ``exp(x - max)`` subtract.

    Duplicating it is unsound: FMA contraction could make the two copies differ
    by one ulp, which ``exp`` turns into inf/NaN, so XLA:CPU never duplicates it.
    """
    if instr.opcode == "fusion" or not is_elementwise(instr):
        return False
    reduce = next((u for u in instr.users if u.opcode == "reduce" and u.operands[0] is instr
                   and _is_max_reduction(u)), None)
    return reduce is not None and any(_is_exp_shift_subtract(u, instr, reduce)
                                      for u in instr.users)


# ----------------------------------------------------------------------------- the pass
class CpuInstructionFusion(HloPass):
    """XLA's ``InstructionFusion`` driver with ``CpuInstructionFusion``'s policy."""

    name = "fusion"

    def __init__(self, may_duplicate: bool = True,
                 dot_rules: DotOutputFusionRules | None = None) -> None:
        """``dot_rules``: the backend's answer to which matrix products are output-fused
        into an ``add`` (None: only matrix-vector dots, as XLA:CPU)."""
        self.may_duplicate = may_duplicate
        self.dot_rules = dot_rules
        self.refusals: list[FusionRefusal] = []
        self._seen_refusals: set[tuple[str, str, str]] = set()
        self._skip: set[int] = set()
        # Cached analyses of fusions, only while run() owns every change (see run).
        self._analysis = FusionAnalysisCache(enabled=False)
        self._reference = False        # the run's PassContext.reference_mode

    # ----- policy
    def should_fuse(self, consumer: HloInstruction, index: int) -> FusionDecision:
        """May operand ``index`` (the producer) be fused into ``consumer``? (pure)"""
        producer = consumer.operands[index]
        if id(consumer) in self._skip:
            return FusionDecision.forbid("Don't fuse instructions from custom fusions/calls")
        if producer.opcode == "constant" and not all(d == 1 for d in producer.shape.dims):
            return FusionDecision.forbid("Don't fuse non-scalar constants.")
        if can_be_output_fused(producer, consumer, self.dot_rules):
            return FusionDecision.allow()
        if self.dot_rules is not None and _bias_into_output_fusion(producer, consumer):
            return FusionDecision.allow()
        if self.dot_rules is not None and any(
                can_be_output_fused(o, consumer, self.dot_rules)
                for o in consumer.operands if o is not producer):
            return FusionDecision.forbid("The add's dot is output-fused first.")
        if _can_be_output_fused_into_some_operand(producer, self.dot_rules):
            return FusionDecision.forbid(
                "Bailing because producer can be output-fused into some operand.")
        if not can_be_loop_fused(producer):
            return FusionDecision.forbid("Producer is not loop-fusible.")
        if _bad_concatenate(producer) or _bad_concatenate(consumer):
            return FusionDecision.forbid("Concatenate fusion is inefficient.")
        if (producer.opcode != "fusion" and is_expensive(producer)
                and self._analysis.reuses_operand_elements(consumer, index)):
            return FusionDecision.forbid("Fusion is not profitable.")
        if producer.opcode == "transpose" and (
                _reduces_over_major_dims(consumer)
                or _feeds_column_reduction(producer, consumer)):
            # XLA:CPU fuses nothing into a column reduction; xlapy's kernel vectorises it
            # along the kept minor dimension, which elementwise producers read in order but
            # a transpose reads strided: materialised first (once, for its other users
            # too), the reduction reads it densely
            return FusionDecision.forbid("Not fusing a transpose into a reduction over major "
                                         "dimensions")
        if consumer.opcode == "bitcast" and len(producer.users) > 1:
            # the producer is materialised for its other users anyway, and the bitcast
            # reads that buffer for free: fused, the producer would be computed twice
            return FusionDecision.forbid("Not duplicating a producer into a bitcast")
        base = self._base_should_fuse(producer, consumer)
        if not base:
            return base
        if (consumer.opcode == "fusion" and producer.opcode == "reduce"
                and self._analysis.get("reduces", consumer, _fused_reduce_count)
                > MAX_REDUCTIONS_IN_FUSION):
            return FusionDecision.forbid("Too many reductions inside single fusion.")
        if (producer.opcode == "reduce"
                and producer.operands[0].shape.num_elements >= NESTED_REDUCE_ELEMENTS
                and _elements(consumer) < NESTED_REDUCE_MIN_OUTPUTS):
            return FusionDecision.forbid("Not fusing a large reduction into a consumer with "
                                         "too few outputs to share out")
        if producer.opcode == "constant" and consumer.opcode != "fusion":
            return FusionDecision.forbid("Not fusing: insufficient non-constant nodes.")
        if producer.opcode == "fusion":
            return FusionDecision.forbid("Not fusing: producer is itself a fusion node.")
        if (consumer.opcode == "fusion"
                and self._analysis.get("size", consumer, fusion_size) >= MAX_FUSION_SIZE):
            return FusionDecision.forbid(f"Fusion too large: size {MAX_FUSION_SIZE}")
        if (self.may_duplicate and consumer.opcode == "fusion"
                and code_duplication_too_high(consumer, producer, self._analysis)):
            return FusionDecision.forbid("Code duplication too high")
        if consumer.opcode == "dot" and consumer.shape.rank <= 1:
            lhs, rhs = consumer.operands[0], consumer.operands[1]
            if (lhs.shape.rank == 1 and index == 1
                    and lhs.shape.byte_size < FUSION_THRESHOLD_BYTES):
                return FusionDecision.allow()
            if (rhs.shape.rank == 1 and index == 0
                    and rhs.shape.byte_size < FUSION_THRESHOLD_BYTES):
                return FusionDecision.allow()
        if consumer.opcode == "fusion" and fusion_kind(consumer) == "kLoop":
            return FusionDecision.allow()
        if can_be_loop_fused(consumer):
            return FusionDecision.allow()
        return FusionDecision.forbid("Not fusing: not found a fusible case")

    def _base_should_fuse(self, producer: HloInstruction,
                          consumer: HloInstruction) -> FusionDecision:
        if producer.is_root:
            return FusionDecision.forbid("not fusing into the output of the root instruction")
        would_duplicate = not (len(producer.users) == 1 and producer.users[0] is consumer)
        if (would_duplicate and (not self.may_duplicate or is_expensive(producer))
                and not is_always_duplicable(producer)):
            return FusionDecision.forbid("expensive producer would be duplicated"
                                         if self.may_duplicate else "fusion pass cannot duplicate")
        return should_fuse_in_place_op(producer, consumer)

    def choose_kind(self, producer: HloInstruction, consumer: HloInstruction) -> str:
        if can_be_output_fused(producer, consumer, self.dot_rules) or \
                _bias_into_output_fusion(producer, consumer):
            return "kOutput"
        return "kLoop"

    # ----- global analysis
    def globally_unfusible(self, post_order: list[HloInstruction]) -> set[int]:
        """ids of producers that must not be duplicated (``ComputeGloballyUnfusible``)."""
        do_not_duplicate: set[int] = set()
        cache: dict[tuple[int, int], bool] = {}
        reaches: Callable[[HloInstruction, HloInstruction], bool] | None = None

        def on_all_paths(producer: HloInstruction, consumer: HloInstruction) -> bool:
            if consumer is producer:
                return True
            if not is_fusible(consumer):
                return False
            key = (id(producer), id(consumer))
            if key in cache:
                return cache[key]
            nonlocal reaches
            if reaches is None:
                reaches = reachability(post_order, self._reference)
            result = True
            for i, operand in enumerate(consumer.operands):
                if not reaches(producer, operand):
                    continue
                if id(operand) in do_not_duplicate or not self.should_fuse(consumer, i):
                    result = False
                    break
                if not on_all_paths(producer, operand):
                    result = False
                    break
            cache[key] = result
            return result

        for producer in reversed(post_order):
            if _effectively_at_most_unary(producer):
                continue
            operand_elems = sum(_elements(o) for o in unique_operands(producer))
            if operand_elems <= _elements(producer):
                continue
            if is_fusible(producer) and all(on_all_paths(producer, u) for u in producer.users):
                continue
            do_not_duplicate.add(id(producer))
        for producer in post_order:
            if is_coupled_softmax_producer(producer):
                do_not_duplicate.add(id(producer))
        return do_not_duplicate

    # ----- driver
    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        self._reference = ctx is not None and ctx.reference_mode
        self._compute_skip(module)
        self._analysis = FusionAnalysisCache(enabled=not self._reference)
        try:
            changed = False
            for comp in fusible_computations(module):
                changed |= self._run_on(comp)
            return changed
        finally:
            self._analysis = FusionAnalysisCache(enabled=False)

    def _compute_skip(self, module: HloModule) -> None:
        self._skip = set()
        for instr in module.instructions():
            if is_custom_fusion(instr) or instr.opcode in ("custom-call", "scatter"):
                for c in instr.called_computations:
                    self._skip.update(id(i) for i in c.instructions)

    def _refuse(self, producer: HloInstruction, consumer: HloInstruction, reason: str) -> None:
        key = (producer.name, consumer.name, reason)
        if key in self._seen_refusals:
            return
        self._seen_refusals.add(key)
        refusal = FusionRefusal(self.name, producer.name, consumer.name, reason)
        log.debug("%s", refusal)
        self.refusals.append(refusal)

    def _run_on(self, comp: HloComputation) -> bool:
        post = comp.post_order()
        do_not_duplicate = self.globally_unfusible(post) if self.may_duplicate else set()
        queue: list[HloInstruction | None] = list(post)
        index = {id(i): k for k, i in enumerate(post)}
        keepalive: list[HloInstruction] = list(post)   # ids stay unique during the run
        changed = False
        with DeferredEdits(comp, self._reference) as edits:
            changed = self._drain(comp, queue, index, keepalive, do_not_duplicate, edits)
        return changed

    def _drain(self, comp: HloComputation, queue: list[HloInstruction | None],
               index: dict[int, int], keepalive: list[HloInstruction],
               do_not_duplicate: set[int], edits: DeferredEdits) -> bool:
        """The driver loop over ``queue`` (consumers, popped from the end)."""
        changed = False
        while queue:
            instr = queue.pop()
            if instr is None:
                continue
            index.pop(id(instr), None)
            if instr.parent is not comp:
                continue
            if not is_fusible(instr) and instr.opcode != "fusion":
                continue
            order = [i for i, o in enumerate(instr.operands) if id(o) in index]
            order.sort(key=lambda i: -index[id(instr.operands[i])])
            for i in order:
                producer = instr.operands[i]
                if not is_fusible(producer):
                    continue
                decision = FusionDecision(id(producer) not in do_not_duplicate,
                                          "operand can not be duplicated")
                if decision:
                    decision = self.should_fuse(instr, i)
                if not decision:
                    self._refuse(producer, instr, decision.reason)
                    continue
                fusion = self._fuse(producer, instr, edits)
                keepalive.append(fusion)
                changed = True
                index[id(fusion)] = len(queue)
                queue.append(fusion)
                if producer.parent is None:
                    k = index.pop(id(producer), None)
                    if k is not None:
                        queue[k] = None
                    do_not_duplicate.discard(id(producer))
                if fusion is not instr:
                    do_not_duplicate.discard(id(instr))
                break
        return changed

    def _fuse(self, producer: HloInstruction, consumer: HloInstruction,
              edits: DeferredEdits | None = None) -> HloInstruction:
        kind = self.choose_kind(producer, consumer)
        if consumer.opcode == "fusion":
            fusion = consumer
            fusion.attrs["kind"] = kind
        else:
            fusion = create_fusion(consumer, kind, f"{producer.opcode}_{consumer.opcode}_",
                                   edits)
        log.debug("fusing %s into %s", producer.name, fusion.name)
        fuse_instruction(fusion, producer, edits)
        self._analysis.invalidate(fusion)
        return fusion


def fusion_size(fusion: HloInstruction) -> int:
    """The size :data:`MAX_FUSION_SIZE` bounds: the fused computation's instructions, each
    transcendental (a math function: ``OpInfo.transcendental``) counting
    :data:`TRANSCENDENTAL_SIZE`."""
    size = 0
    for i in fused_computation(fusion).instructions:
        info = OPCODES.get(i.opcode)
        size += TRANSCENDENTAL_SIZE if info is not None and info.transcendental else 1
    return size


def _fused_reduce_count(fusion: HloInstruction) -> int:
    return fused_instruction_count(fusion, "reduce")


def _true_rank(shape) -> int:
    return sum(1 for d in shape.dims if d != 1) if shape.is_array else 0


def _elements(instr: HloInstruction) -> int:
    return sum(s.num_elements for s in instr.shape.leaves() if s.is_array)


def _effectively_at_most_unary(instr: HloInstruction) -> bool:
    out_rank = max((_true_rank(s) for s in instr.shape.leaves() if s.is_array), default=0)

    def large(o: HloInstruction) -> bool:
        if o.opcode in ("broadcast", "iota"):
            return False
        if o.opcode == "constant" and all(d == 1 for d in o.shape.dims):
            return False
        return _true_rank(o.shape) >= out_rank
    return sum(1 for o in instr.operands if large(o)) <= 1


