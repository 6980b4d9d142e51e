"""Interpreter handlers: collectives with every participant real.

A module with ``replica_count x num_partitions`` = N > 1 runs once per device, each run inside
:func:`xlapy.backends.communicator.participating` (the client's multi-device ``run_hlo`` does
it); the handlers below read the running device from
:func:`~xlapy.backends.communicator.current_participant`, compute its group with XLA's rules
(:mod:`xlapy.hlo.replica_groups`: group mode from ``channel_id`` / ``use_global_device_ids``,
explicit or iota groups, flattened device ids) and let the communicator move the data. A module
with one participant runs the same code over a group of one.

Semantics (group of n, the caller at position k; XLA's ``operation_semantics.md``):

- ``all-reduce``: each operand reduced elementwise with ``to_apply`` over the group, folded in
  group order (every member gets the same bits); ``all-reduce-start`` is the same value,
  ``all-reduce-done`` passes it on;
- ``all-gather``: operands concatenated along ``dimensions={d}`` in group order; the start form
  gives ``(operand, result)`` and its done element 1;
- ``reduce-scatter``: block k along ``d`` of the reduction;
- ``all-to-all``: array form splits dim d into n blocks, block j goes to position j, received
  blocks are concatenated in group order; tuple form sends operand j to position j;
- ``collective-permute``: ``source_target_pairs`` name replicas (no channel) or partitions
  (channel), one copy per partition or replica; a device no pair targets gets zeros; the start
  form gives ``(operand, result, u32[], u32[])``;
- ``collective-broadcast``: every member gets the first member's value;
- ``replica-id`` / ``partition-id``: the device's replica / partition as ``u32[]``;
- the generic async forms (``reduce-scatter-start``, ``all-to-all-start``, ...,
  ``async-start(...), calls=``): the collective runs at the start, whose value is
  ``((operands), result, s32[])``; the done hands element 1 on. Every participant starts its
  collectives in the same order, so running them at the start is exact.

Run without a module (the constant folder's evaluator) a collective with operands refuses
(UnimplementedError), since who participates is not known there (so an all-reduce of a
constant is never folded to its single-device value).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...errors import InvalidArgumentError, UnimplementedError
from ...hlo.ir import HloInstruction
from ...hlo.replica_groups import (GroupMode, as_replica_groups, group_mode, id_count,
                                   match_reduction, participant_count, participant_groups,
                                   permute_pairs)
from ..communicator import (CollectiveCall, Communicator, Participant, current_participant,
                            signature_of)
from .evaluator import Evaluator, describe, handler, zeros_of


class _Alone(Communicator):
    """The communicator of a single-participant run: the group is the caller."""

    def exchange(self, call: CollectiveCall, arrays: list, compute: Callable[[list], Any]) -> Any:
        return compute([arrays])


def _participant(ev: Evaluator, instr: HloInstruction) -> Participant:
    p = current_participant()
    if p is not None:
        return p
    if ev.module is None and instr.operands:
        raise UnimplementedError(f"{instr.opcode} needs the module's participants; it cannot "
                                 f"be evaluated on its own: {describe(instr)}")
    replicas, partitions = participant_count(ev.module) if ev.module is not None else (1, 1)
    if replicas * partitions > 1:
        raise InvalidArgumentError(
            f"module {ev.module.name} has {replicas} replica(s) x {partitions} partition(s): "
            f"run it with one argument list per device (run_hlo(module, [args_device0, ...]))"
            f"; {describe(instr)}")
    return Participant(0, 0, 1, 1, _Alone())


def _op_key(instr: HloInstruction) -> str:
    """What the participants must agree on besides the operands: the opcode and the op's
    place among the module's ops of that opcode (computation order, then instruction
    order). Unlike the instruction's name this is the same in every process that runs the
    same program, whatever each traced or loaded from the disk cache before (names come
    from a per-process counter), and it still tells apart two ops of divergent branches."""
    comp = instr.parent
    module = comp.parent if comp is not None else None
    if module is None:
        return instr.opcode
    table: dict[int, tuple[HloInstruction, int]] = module.__dict__.get("_op_places", {})
    hit = table.get(id(instr))
    if hit is None or hit[0] is not instr:
        table = {}                          # a new table: device threads may be reading
        counts: dict[str, int] = {}
        for c in module.computations:
            for i in c.instructions:
                k = counts.get(i.opcode, 0)
                counts[i.opcode] = k + 1
                table[id(i)] = (i, k)
        module.__dict__["_op_places"] = table
        hit = table.get(id(instr))
    return instr.opcode if hit is None else f"{instr.opcode} #{hit[1]}"


def collective_group(instr: HloInstruction, p: Participant
                     ) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """The group of ``p``'s device for collective ``instr`` (flattened device ids in group
    order) and every group of the op, by XLA's rules; InvalidArgumentError naming the
    instruction when the groups are malformed or leave the device out."""
    try:
        mode = group_mode(instr.opcode, instr.attrs)
        groups = as_replica_groups(instr.attrs.get("replica_groups"))
        all_groups = participant_groups(mode, groups, p.replicas, p.partitions)
    except (ValueError, AttributeError) as e:
        raise InvalidArgumentError(f"{describe(instr)}: {e}") from None
    group = next((g for g in all_groups if p.device in g), None)
    if group is None:
        raise InvalidArgumentError(f"{describe(instr)}: device {p.device} (replica {p.replica}, "
                                   f"partition {p.partition}) is in no replica group")
    return tuple(group), tuple(tuple(g) for g in all_groups)


def collective_what(instr: HloInstruction) -> str:
    """How errors name collective ``instr`` (``all-reduce %ar.1``)."""
    return f"{instr.opcode} %{instr.name}"


def collective_signature(instr: HloInstruction, arrays: list) -> tuple:
    """What the participants of ``instr`` must agree on (:func:`signature_of` of its key
    in the module and its operands)."""
    return signature_of(_op_key(instr), arrays)


def _group_call(ev: Evaluator, instr: HloInstruction, arrays: list) -> tuple[Participant,
                                                                            CollectiveCall]:
    p = _participant(ev, instr)
    group, all_groups = collective_group(instr, p)
    call = CollectiveCall(collective_what(instr), group, group.index(p.device),
                          p.next_sequence(tuple(sorted(group))),
                          collective_signature(instr, arrays), all_groups)
    return p, call


def combiner(ev: Evaluator, instr: HloInstruction) -> Callable[[Any, Any], Any]:
    """``instr``'s reduction computation (``to_apply``) as an elementwise function."""
    comp = instr.attrs["to_apply"]
    return lambda a, b: ev.call_elementwise(comp, a, b)


def _result(instr: HloInstruction, values: list) -> Any:
    shape = instr.shape
    if instr.opcode.endswith("-start") and instr.opcode not in ("all-reduce-start",
                                                                 "all-gather-start"):
        shape = shape.tuple_shapes[1]           # ((operands), result, context)
    return tuple(values) if len(values) > 1 or shape.is_tuple else values[0]


def _async(instr: HloInstruction, operands: list, value: Any) -> Any:
    """The generic start form's ``((operands), result, s32[] context)``, or ``value``."""
    if instr.opcode.endswith("-start"):
        return (tuple(operands), value, np.zeros((), np.int32))
    return value


@handler("all-reduce", "all-reduce-start")
def _all_reduce(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    p, call = _group_call(ev, instr, operands)
    out = p.communicator.all_reduce(call, list(operands), combiner(ev, instr),
                                    match_reduction(instr.attrs["to_apply"]))
    return _result(instr, out)


@handler("all-reduce-done")
def _all_reduce_done(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return operands[0]


@handler("all-gather", "all-gather-start")
def _all_gather(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    p, call = _group_call(ev, instr, operands)
    out = p.communicator.all_gather(call, list(operands), int(instr.attrs["dimensions"][0]))
    if instr.opcode == "all-gather-start":
        if len(operands) == 1:
            return (operands[0], out[0])
        return (tuple(operands), tuple(out))
    return _result(instr, out)


@handler("all-gather-done", "collective-permute-done")
def _start_done(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return operands[0][1]


@handler("reduce-scatter", "reduce-scatter-start")
def _reduce_scatter(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    p, call = _group_call(ev, instr, operands)
    out = p.communicator.reduce_scatter(call, list(operands), int(instr.attrs["dimensions"][0]),
                                        combiner(ev, instr),
                                        match_reduction(instr.attrs["to_apply"]))
    return _async(instr, operands, _result(instr, out))


@handler("reduce-scatter-done", "all-to-all-done", "collective-broadcast-done", "async-done")
def _async_done(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return operands[0][1]


@handler("async-update")
def _async_update(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return operands[0]


@handler("async-start")
def _async_start(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    """``async-start(...), calls=%comp``: the wrapped computation runs here (every participant
    starts its asyncs in the same order), ``async-done`` hands its value on."""
    return (tuple(operands), ev.call(instr.attrs["calls"], list(operands)),
            np.zeros((), np.int32))


@handler("all-to-all", "all-to-all-start")
def _all_to_all(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    dims = instr.attrs.get("dimensions")
    p, call = _group_call(ev, instr, operands)
    if dims is None:                                    # tuple form: operand j -> position j
        check_tuple_form(instr, len(operands), call.group)
        return _async(instr, operands, tuple(p.communicator.all_to_all(call, list(operands))))
    d = int(dims[0])
    blocks = np.split(operands[0], len(call.group), axis=d)
    received = p.communicator.all_to_all(call, blocks)
    return _async(instr, operands, np.concatenate(received, axis=d))


def check_tuple_form(instr: HloInstruction, operands: int, group: tuple[int, ...]) -> None:
    """A tuple-form all-to-all takes one operand per member of its group."""
    if operands != len(group):
        raise InvalidArgumentError(f"{describe(instr)}: the tuple form needs one operand per "
                                   f"group member ({len(group)})")


@handler("collective-broadcast", "collective-broadcast-start")
def _collective_broadcast(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    p, call = _group_call(ev, instr, operands)
    return _async(instr, operands, _result(instr, p.communicator.broadcast(call,
                                                                           list(operands))))


def permute_peers(instr: HloInstruction, p: Participant) -> tuple[int | None, int | None]:
    """``(source, target)``: the devices collective-permute ``instr`` receives ``p``'s
    result from and sends ``p``'s operand to (None: none)."""
    mode = GroupMode.CROSS_PARTITION if instr.attrs.get("channel_id") is not None \
        else GroupMode.CROSS_REPLICA
    count = id_count(mode, p.replicas, p.partitions)
    # XLA checks the pairs' range only with more than one id: a pair naming a device that
    # does not exist moves nothing
    named = [(s, t) for s, t in instr.attrs.get("source_target_pairs") or ()
             if 0 <= s < count and 0 <= t < count]
    pairs = permute_pairs(mode, named, p.replicas, p.partitions)
    return (next((s for s, t in pairs if t == p.device), None),
            next((t for s, t in pairs if s == p.device), None))


@handler("collective-permute", "collective-permute-start")
def _collective_permute(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    if len(operands) == 4:
        raise UnimplementedError("the in-place form of collective-permute (input, output, "
                                 f"send/recv offsets) is not supported: {describe(instr)}")
    p = _participant(ev, instr)
    source, target = permute_peers(instr, p)
    everyone = tuple(range(p.replicas * p.partitions))
    call = CollectiveCall(collective_what(instr), everyone, p.device, p.next_sequence(everyone),
                          collective_signature(instr, operands), (everyone,))
    received = p.communicator.permute(call, list(operands), source, target)
    shape = instr.shape.tuple_shapes[1] if instr.opcode == "collective-permute-start" \
        else instr.shape
    value = zeros_of(shape) if received is None else received[0]
    if instr.opcode == "collective-permute-start":
        return (operands[0], value, np.zeros((), np.uint32), np.zeros((), np.uint32))
    return value


@handler("replica-id")
def _replica_id(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return np.asarray(_participant(ev, instr).replica, dtype=np.uint32)


@handler("partition-id")
def _partition_id(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return np.asarray(_participant(ev, instr).partition, dtype=np.uint32)
