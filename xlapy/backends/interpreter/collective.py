"""Interpreter handlers: collectives with one replica and one partition.

The interpreter runs a single device. Every collective then has exactly one
participant: all-reduce reduces one value (the value itself), all-gather,
reduce-scatter, all-to-all and collective-broadcast return their operands, and a
collective-permute delivers the operand only if the pair ``0 -> 0`` is listed
(otherwise the receiving buffer is zeros). Modules compiled for more replicas or
partitions are rejected with UnimplementedError.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UnimplementedError
from ...hlo.ir import HloInstruction
from .evaluator import Evaluator, describe, handler, zeros_of


def _check_single_device(ev: Evaluator, instr: HloInstruction) -> None:
    attrs = ev.module.attributes if ev.module is not None else {}
    for key in ("replica_count", "num_partitions"):
        count = int(attrs.get(key, 1) or 1)
        if count > 1:
            raise UnimplementedError(
                f"the interpreter runs one device, but the module has {key}={count}; "
                f"{instr.opcode} across devices is not supported: {describe(instr)}")


def _same_values(instr: HloInstruction, operands: list) -> Any:
    return tuple(operands) if instr.shape.is_tuple else operands[0]


@handler("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "collective-broadcast")
def _single_participant(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    _check_single_device(ev, instr)
    return _same_values(instr, operands)


@handler("collective-permute")
def _collective_permute(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    _check_single_device(ev, instr)
    if len(operands) == 4 and not instr.shape.is_tuple:
        raise UnimplementedError("the in-place form of collective-permute (input, output, "
                                 f"send/recv offsets) is not supported: {describe(instr)}")
    pairs = instr.attrs.get("source_target_pairs") or ()
    if any(tuple(p) == (0, 0) for p in pairs):
        return _same_values(instr, operands)
    return zeros_of(instr.shape)


@handler("replica-id", "partition-id")
def _device_id(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    _check_single_device(ev, instr)
    return np.zeros((), dtype=np.uint32)
