"""Shared machinery of the fusion passes: op classification and fusion-node surgery.

Classification follows XLA: :func:`is_expensive` is the CPU cost table of
``CpuInstructionFusion::IsExpensive``, :func:`can_be_loop_fused` the CPU list of
ops the elemental emitter can generate inside a loop, :func:`operand_element_use`
XLA's ``HloInstruction::OperandElementUse`` (does an op read each operand element
once, permuted, or several times?).

Surgery mirrors ``HloFusionInstruction``: :func:`create_fusion` wraps a consumer in a
``fusion`` whose ``calls=`` computation (``fused_computation``) holds a clone of it
with one ``param_N`` per distinct operand; :func:`fuse_instruction` clones a
producer into an existing fusion (an operand's parameter is replaced by the clone,
the producer's operands become parameters, deduplicated); :func:`fuse_into_multi_output`
adds a producer (or a sibling) as an extra output, making the fused root a ``tuple``
read through ``get-tuple-element``.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

from ..hlo import types as T
from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.opcodes import (CHEAP, CHEAP_IF_INTEGER_BY_CONSTANT, ELEMENTWISE, EXPENSIVE,
                           EXPENSIVE_IF_COMPLEX, EXPENSIVE_IF_F32_TO_BF16, OPCODES, ops_with)
from ..hlo.shape import Shape
from .computation_edits import DeferredEdits


# ----------------------------------------------------------------------------- decisions
@dataclass(frozen=True)
class FusionDecision:
    """Whether a fusion is allowed; ``reason`` explains a refusal (XLA's ``FusionDecision``)."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok

    @staticmethod
    def allow() -> "FusionDecision":
        return FusionDecision(True)

    @staticmethod
    def forbid(reason: str) -> "FusionDecision":
        return FusionDecision(False, reason)


@dataclass(frozen=True)
class FusionRefusal:
    """One refused (producer, consumer) pair with XLA's explanation, for dumps and tests."""

    pass_name: str
    producer: str
    consumer: str
    reason: str

    def __str__(self) -> str:
        return f"[{self.pass_name}] not fusing {self.producer} into {self.consumer}: {self.reason}"


# ----------------------------------------------------------------------------- classification
def fused_computation(fusion: HloInstruction) -> HloComputation:
    """The ``calls=`` computation of a fusion instruction."""
    return fusion.attrs["calls"]


def fusion_kind(fusion: HloInstruction) -> str:
    return str(fusion.attrs.get("kind", "kLoop"))


def is_multi_output_fusion(instr: HloInstruction) -> bool:
    """A fusion whose fused root is a ``tuple`` (outputs read with get-tuple-element)."""
    return instr.opcode == "fusion" and fused_computation(instr).root.opcode == "tuple"


def is_custom_fusion(instr: HloInstruction) -> bool:
    return instr.opcode == "fusion" and fusion_kind(instr) == "kCustom"


def is_elementwise(instr: HloInstruction) -> bool:
    """XLA's ``IsElementwise`` for a plain instruction (a loop fusion is not, by itself)."""
    return instr.opcode in ELEMENTWISE


_LOOP_FUSIBLE = frozenset({
    "bitcast", "broadcast", "concatenate", "constant", "dynamic-slice", "dynamic-update-slice",
    "gather", "iota", "pad", "reduce", "reshape", "reverse", "slice", "transpose"})


def can_be_loop_fused(instr: HloInstruction) -> bool:
    """Ops XLA:CPU generates elementally inside a loop fusion (``CanBeLoopFused``; XLA's
    ``IsElementwise`` is true for constants, so they count too)."""
    return is_elementwise(instr) or instr.opcode in _LOOP_FUSIBLE


# Never fused: ops with an effect of their own, collectives, and token/barrier ops.
_SIDE_EFFECT_OPS = (ops_with(effect="always") | ops_with(effect="channel")
                    | ops_with(effect="ordering"))


def has_side_effect(instr: HloInstruction) -> bool:
    if instr.opcode in _SIDE_EFFECT_OPS:
        return True
    return instr.opcode == "custom-call" and bool(instr.attrs.get("custom_call_has_side_effect"))


def is_fusible(instr: HloInstruction) -> bool:
    """XLA's ``HloInstruction::IsFusible``: may this op be fused at all (by any policy)?"""
    if instr.opcode in ("domain", "parameter", "while", "conditional", "call"):
        return False
    if instr.opcode in ("fusion", "map", "reduce", "reduce-window"):
        return True
    if instr.opcode == "rng":
        return len(instr.users) <= 1
    return not has_side_effect(instr)


def _is_effective_scalar(shape: Shape) -> bool:
    return shape.is_array and all(d == 1 for d in shape.dims)


def _is_constant_scalar_or_broadcast(instr: HloInstruction) -> bool:
    if instr.opcode == "broadcast":
        instr = instr.operands[0]
    return instr.opcode == "constant" and _is_effective_scalar(instr.shape)


def is_expensive(instr: HloInstruction) -> bool:
    """XLA:CPU's cost table (``CpuInstructionFusion::IsExpensive``).

    The cost class is the op table's (``OpInfo.cost``): transcendentals, dots,
    reductions, calls and everything else not cheap are expensive;
    ``abs``/``sign``/``sine``/``cosine``/``tan`` only for complex; ``convert`` only
    f32→bf16; integer ``divide``/``remainder`` is cheap when the *first* operand is a
    (broadcast) scalar constant (XLA:CPU checks operand 0).
    """
    info = OPCODES.get(instr.opcode)
    cost = info.cost if info is not None else EXPENSIVE
    if cost == CHEAP:
        return False
    if cost == EXPENSIVE_IF_COMPLEX:
        return instr.shape.element_type.is_complex
    if cost == EXPENSIVE_IF_F32_TO_BF16:
        return (instr.shape.element_type is T.BF16
                and instr.operands[0].shape.element_type is T.F32)
    if cost == CHEAP_IF_INTEGER_BY_CONSTANT:
        return (not instr.shape.element_type.is_integral
                or not _is_constant_scalar_or_broadcast(instr.operands[0]))
    return True


def is_always_duplicable(instr: HloInstruction) -> bool:
    """Broadcasts and widening converts may always be duplicated (XLA's ``IsAlwaysDuplicable``)."""
    if instr.opcode == "broadcast":
        return True
    if instr.opcode == "convert" and instr.shape.is_array:
        return instr.shape.byte_size > instr.operands[0].shape.byte_size
    return False


class UseKind(enum.IntEnum):
    """How an op reads an operand's elements (XLA's ``HloInstruction::UseKind``, same order)."""

    NO_USE = 0
    REUSE = 1
    USE_PERMUTING = 2
    USE = 3


def _plus(a: UseKind, b: UseKind) -> UseKind:
    if a == UseKind.NO_USE:
        return b
    if b == UseKind.NO_USE:
        return a
    if UseKind.REUSE in (a, b) or UseKind.USE_PERMUTING in (a, b):
        return UseKind.REUSE
    return UseKind.USE


def operand_element_use(instr: HloInstruction, i: int) -> UseKind:
    """Does ``instr`` read each element of operand ``i`` once (USE), once but permuted,
    or several times (REUSE)?"""
    op = instr.opcode
    if op in ("bitcast", "concatenate", "reshape", "reverse", "slice", "transpose"):
        return UseKind.USE_PERMUTING
    if op == "pad":
        return UseKind.REUSE if i > 0 else UseKind.USE_PERMUTING
    if op == "reduce":
        return UseKind.REUSE if i >= len(instr.operands) // 2 else UseKind.USE_PERMUTING
    if op == "fusion":
        return _fused_param_use(instr, i)
    if op == "dot" and instr.shape.rank <= 1:
        other = instr.operands[1 - i] if len(instr.operands) == 2 else None
        if other is not None and other.shape.rank <= 1:
            return UseKind.USE
        return UseKind.REUSE
    if op == "dynamic-update-slice":
        return UseKind.USE if i in (0, 1) else UseKind.REUSE
    return UseKind.USE if is_elementwise(instr) else UseKind.REUSE


def _fused_param_use(fusion: HloInstruction, i: int) -> UseKind:
    comp = fused_computation(fusion)
    cache: dict[int, UseKind] = {}
    for instr in comp.post_order():
        if instr.opcode == "parameter":
            cache[id(instr)] = UseKind.USE if instr.parameter_number == i else UseKind.NO_USE
            continue
        acc = UseKind.NO_USE
        for j, o in enumerate(instr.operands):
            acc = _plus(acc, min(operand_element_use(instr, j), cache[id(o)]))
        cache[id(instr)] = acc
    return cache[id(comp.root)]


def fused_parameter_uses(fusion: HloInstruction) -> list[UseKind]:
    """``operand_element_use(fusion, i)`` for every operand ``i``, in one walk of the fused
    computation (each value carries the uses of the parameters it depends on)."""
    comp = fused_computation(fusion)
    uses: dict[int, dict[int, UseKind]] = {}
    for instr in comp.post_order():
        if instr.opcode == "parameter":
            uses[id(instr)] = {instr.parameter_number: UseKind.USE}
            continue
        acc: dict[int, UseKind] = {}
        for j, o in enumerate(instr.operands):
            through = uses[id(o)]
            if not through:
                continue
            kind = operand_element_use(instr, j)
            for p, k in through.items():
                acc[p] = _plus(acc.get(p, UseKind.NO_USE), min(kind, k))
        uses[id(instr)] = acc
    root = uses[id(comp.root)]
    return [root.get(i, UseKind.NO_USE) for i in range(len(fusion.operands))]


def reuses_operand_elements(instr: HloInstruction, i: int) -> bool:
    return operand_element_use(instr, i) == UseKind.REUSE


def is_elementwise_on_operand(instr: HloInstruction, i: int) -> bool:
    """True if output element k depends only on element k of operand ``i`` (same shape),
    through elementwise ops only (for a loop fusion: every path from the parameter to
    the root is elementwise; XLA's ``IsElementwiseOnOperand``)."""
    if instr.opcode != "fusion":
        return is_elementwise(instr)
    if fusion_kind(instr) != "kLoop":
        return False
    comp = fused_computation(instr)
    work = [comp.parameters[i]]
    seen = {id(work[0])}
    while work:
        node = work.pop()
        for user in node.users:
            if id(user) in seen:
                continue
            if not (is_elementwise(user) or user.opcode == "tuple"):
                return False
            seen.add(id(user))
            work.append(user)
    return True


# ----------------------------------------------------------------------------- surgery helpers
def _module_of(instr: HloInstruction) -> HloModule:
    comp = instr.parent
    if comp is None or comp.parent is None:
        raise ValueError(f"instruction {instr.name} is not in a module computation")
    return comp.parent


def insert_before(comp: HloComputation, new: HloInstruction, anchor: HloInstruction) -> None:
    """Add ``new`` to ``comp`` placed just before ``anchor`` in text order."""
    comp.add_instruction(new)
    comp.instructions.pop()
    idx = next(k for k, i in enumerate(comp.instructions) if i is anchor)
    comp.instructions.insert(idx, new)


def insert_after(comp: HloComputation, new: HloInstruction, anchor: HloInstruction) -> None:
    comp.add_instruction(new)
    comp.instructions.pop()
    idx = next(k for k, i in enumerate(comp.instructions) if i is anchor)
    comp.instructions.insert(idx + 1, new)


def sort_topologically(comp: HloComputation) -> None:
    """Reorder ``comp.instructions`` so every definition precedes its uses."""
    comp.instructions = comp.post_order()


def _new_parameter(module: HloModule, comp: HloComputation, shape: Shape) -> HloInstruction:
    n = len(comp.parameters)
    p = HloInstruction("parameter", shape, name=module.unique_name(f"param_{n}"),
                       parameter_number=n)
    comp.add_instruction(p)
    return p


def _remove_parameter(module: HloModule, fusion: HloInstruction, index: int) -> None:
    """Drop fused parameter ``index`` (already unused) and operand ``index``; renumber."""
    comp = fused_computation(fusion)
    param = comp.parameters[index]
    comp.remove_instruction(param)
    comp.parameters = [p for p in comp.parameters if p is not param]
    for n, p in enumerate(comp.parameters):
        if p.parameter_number != n:
            p.parameter_number = n
            p.name = module.unique_name(f"param_{n}")
    old = fusion.operands.pop(index)
    old._remove_user(fusion)


def _clone_name(module: HloModule, original: HloInstruction, keep: bool) -> str:
    return original.name if keep else module.unique_name(original.name)


def create_fusion(consumer: HloInstruction, kind: str, name_prefix: str = "",
                  edits: DeferredEdits | None = None) -> HloInstruction:
    """Replace ``consumer`` by ``fusion(kind, calls=fused_computation)`` computing the same value.

    The fused computation has one ``param_N`` per distinct operand (in operand
    order) and a clone of the consumer as root. The fusion takes the consumer's
    place in text order, its metadata and its control dependencies. With ``edits``
    the list work on the consumer's computation is deferred to ``edits.flush()``.
    """
    comp = consumer.parent
    module = _module_of(consumer)
    fcomp = HloComputation(module.unique_name("fused_computation"))
    module.add_computation(fcomp)
    operands: list[HloInstruction] = []
    pmap: dict[int, HloInstruction] = {}
    for o in consumer.operands:
        if id(o) not in pmap:
            pmap[id(o)] = _new_parameter(module, fcomp, o.shape)
            operands.append(o)
    clone = HloInstruction(consumer.opcode, consumer.shape,
                           [pmap[id(o)] for o in consumer.operands], dict(consumer.attrs),
                           name=consumer.name, literal=consumer.literal,
                           parameter_number=consumer.parameter_number)
    fcomp.add_instruction(clone)
    fcomp.root = clone
    attrs: dict = {"kind": kind, "calls": fcomp}
    if consumer.metadata is not None:
        attrs["metadata"] = consumer.metadata
    fusion = HloInstruction("fusion", consumer.shape, operands, attrs,
                            name=module.unique_name(f"{name_prefix}fusion"))
    if edits is not None:
        edits.insert_before(fusion, consumer)
        edits.move_control_edges(consumer, fusion)
        edits.replace(consumer, fusion)
        return fusion
    insert_before(comp, fusion, consumer)
    fusion.control_predecessors = list(consumer.control_predecessors)
    for other in comp.instructions:
        if any(c is consumer for c in other.control_predecessors):
            other.control_predecessors = [fusion if c is consumer else c
                                          for c in other.control_predecessors]
    comp.replace_instruction(consumer, fusion)
    return fusion


def _operand_parameter(module: HloModule, fusion: HloInstruction,
                       operand: HloInstruction) -> HloInstruction:
    """The fused parameter reading ``operand``, added (as a new fusion operand) if missing."""
    fcomp = fused_computation(fusion)
    for k, o in enumerate(fusion.operands):
        if o is operand:
            return fcomp.parameters[k]
    p = _new_parameter(module, fcomp, operand.shape)
    fusion.operands.append(operand)
    operand._add_user(fusion)
    return p


def _clone_into(fusion: HloInstruction, producer: HloInstruction,
                keep_names: bool) -> HloInstruction:
    """Clone ``producer`` (an instruction, or a fusion's body) into ``fusion``'s computation;
    the producer's operands are read through (possibly new) fused parameters."""
    module = _module_of(fusion)
    fcomp = fused_computation(fusion)
    if producer.opcode != "fusion":
        ops = [_operand_parameter(module, fusion, o) for o in producer.operands]
        clone = HloInstruction(producer.opcode, producer.shape, ops, dict(producer.attrs),
                               name=_clone_name(module, producer, keep_names),
                               literal=producer.literal)
        fcomp.add_instruction(clone)
        return clone
    inner = fused_computation(producer)
    imap: dict[int, HloInstruction] = {}
    for instr in inner.post_order():
        if instr.opcode == "parameter":
            imap[id(instr)] = _operand_parameter(module, fusion,
                                                 producer.operands[instr.parameter_number])
            continue
        c = HloInstruction(instr.opcode, instr.shape, [imap[id(o)] for o in instr.operands],
                           dict(instr.attrs), name=_clone_name(module, instr, keep_names),
                           literal=instr.literal)
        fcomp.add_instruction(c)
        imap[id(instr)] = c
    return imap[id(inner.root)]


def _drop_dead_producer(producer: HloInstruction, edits: DeferredEdits | None = None) -> None:
    if producer.users or producer.is_root or producer.parent is None:
        return
    module = producer.parent.parent
    if edits is not None:
        edits.remove(producer)
    else:
        producer.parent.remove_instruction(producer)
    if producer.opcode == "fusion" and module is not None:
        module.remove_computation(fused_computation(producer))


def fuse_instruction(fusion: HloInstruction, producer: HloInstruction,
                     edits: DeferredEdits | None = None) -> HloInstruction:
    """Fuse ``producer`` (an operand of ``fusion``) into it; returns the fused clone.

    Every use of the producer's parameter inside the fusion reads the clone; the
    producer itself is removed from its computation when nothing else uses it
    (with ``edits``, taken out of the computation's list at ``edits.flush()``).
    A fusion producer is merged (its body is inlined).
    """
    module = _module_of(fusion)
    fcomp = fused_computation(fusion)
    index = next(k for k, o in enumerate(fusion.operands) if o is producer)
    will_die = len(producer.users) == 1 and not producer.is_root
    clone = _clone_into(fusion, producer, keep_names=will_die)
    param = fcomp.parameters[index]
    param.replace_all_uses_with(clone)
    _remove_parameter(module, fusion, index)
    sort_topologically(fcomp)
    _drop_dead_producer(producer, edits)
    return clone


def _make_tuple_root(fusion: HloInstruction) -> None:
    """Turn a single-output fusion into a 1-tuple multi-output one (users read gte 0)."""
    module = _module_of(fusion)
    fcomp = fused_computation(fusion)
    old_root = fcomp.root
    tup = HloInstruction("tuple", Shape.tuple([old_root.shape]), [old_root],
                         name=module.unique_name("tuple"))
    fcomp.add_instruction(tup)
    fcomp.root = tup
    users = list(fusion.users)
    was_root = fusion.is_root
    old_shape = fusion.shape
    fusion.shape = tup.shape
    gte = HloInstruction("get-tuple-element", old_shape, [fusion], {"index": 0},
                         name=module.unique_name("get-tuple-element"))
    insert_after(fusion.parent, gte, fusion)
    for u in users:
        u.replace_operands(fusion, gte)
    if was_root:
        fusion.parent.root = gte


def fuse_into_multi_output(fusion: HloInstruction, producer: HloInstruction,
                           sort_parent: bool = True) -> HloInstruction:
    """Fuse ``producer`` into ``fusion`` and export its value as an extra tuple output.

    ``producer`` is either an operand of ``fusion`` (producer-consumer MOF: its other
    users now read ``get-tuple-element`` of the fusion) or a sibling sharing operands
    (sibling MOF). A fusion producer's outputs are all appended (one per tuple
    element when it is itself multi-output). Returns the fusion. ``sort_parent=False``
    leaves the parent computation's order to the caller (one sort after many fusions).
    """
    module = _module_of(fusion)
    fcomp = fused_computation(fusion)
    comp = fusion.parent
    if fcomp.root.opcode != "tuple":
        _make_tuple_root(fusion)
    is_operand = any(o is producer for o in fusion.operands)
    clone = _clone_into(fusion, producer, keep_names=False)
    if is_operand:
        index = next(k for k, o in enumerate(fusion.operands) if o is producer)
        fcomp.parameters[index].replace_all_uses_with(clone)
        _remove_parameter(module, fusion, index)
    root = fcomp.root
    if is_multi_output_fusion(producer):
        new_outputs = list(clone.operands)
        producer_outputs = [(k, s) for k, s in enumerate(producer.shape.tuple_shapes)]
    else:
        new_outputs = [clone]
        producer_outputs = [(None, producer.shape)]
    first = len(root.operands)
    for out in new_outputs:
        root.operands.append(out)
        out._add_user(root)
    root.shape = Shape.tuple([o.shape for o in root.operands])
    fusion.shape = root.shape
    sort_topologically(fcomp)
    # redirect the producer's remaining users to get-tuple-elements of the fusion
    anchor = fusion
    replacements: dict[int | None, HloInstruction] = {}
    for k, (pidx, shape) in enumerate(producer_outputs):
        gte = HloInstruction("get-tuple-element", shape, [fusion], {"index": first + k},
                             name=module.unique_name("get-tuple-element"))
        insert_after(comp, gte, anchor)
        anchor = gte
        replacements[pidx] = gte
    for user in list(producer.users):
        if user is fusion:
            continue
        if is_multi_output_fusion(producer):
            # users of a multi-output fusion are get-tuple-elements: forward them
            user.replace_all_uses_with(replacements[user.attrs["index"]])
            user.parent.remove_instruction(user)
        else:
            user.replace_operands(producer, replacements[None])
    if producer.is_root and None in replacements:
        comp.root = replacements[None]
    if sort_parent:
        sort_topologically(comp)
    _drop_dead_producer(producer)
    return fusion


def fused_instruction_count(fusion: HloInstruction, opcode: str) -> int:
    return sum(1 for i in fused_computation(fusion).instructions if i.opcode == opcode)


def unique_operands(instr: HloInstruction) -> list[HloInstruction]:
    out: list[HloInstruction] = []
    for o in instr.operands:
        if not any(o is x for x in out):
            out.append(o)
    return out


def control_successors(comp: HloComputation) -> dict[int, list[HloInstruction]]:
    """``id(instr) -> instructions that name it as a control predecessor`` in ``comp``."""
    out: dict[int, list[HloInstruction]] = {}
    for u in comp.instructions:
        for c in u.control_predecessors:
            out.setdefault(id(c), []).append(u)
    return out


def reachable_from(starts: Sequence[HloInstruction]) -> set[int]:
    """ids of every instruction reachable by following users and control edges from
    ``starts`` (inclusive). Linear: each computation's control successors are collected
    once, and only when it has control edges."""
    seen: set[int] = set()
    successors: dict[int, dict[int, list[HloInstruction]]] = {}
    work = list(starts)
    while work:
        node = work.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        work.extend(node.users)
        comp = node.parent
        if comp is None:
            continue
        if id(comp) not in successors:
            successors[id(comp)] = control_successors(comp)
        work.extend(successors[id(comp)].get(id(node), ()))
    return seen
