"""Collective thunks: the executable's own buffers handed to the communicator.

An ``all-reduce`` (or ``all-reduce-start``) whose operands and results are row-major arrays
runs as an :class:`AllReduceThunk`: flat NumPy views of its operand buffers and of its result
buffers go to the running participant's communicator
(:meth:`~xlapy.backends.communicator.Communicator.all_reduce_into`), so across MPI processes
the reduction is written by MPI straight into the result buffer -- no intermediate array and
no copy after it (``MPI_IN_PLACE`` when buffer assignment put the result in the operand's
buffer). Likewise an ``all-gather`` whose result is the members' operands one after the other
in memory (row-major, every dimension before the gathered one of size 1) runs as an
:class:`AllGatherThunk` (``all_gather_into``: MPI's ``Iallgather`` into the result buffer).
What does not change between calls -- the device's group, every group of the op, the call's
signature -- is worked out on a participant's first call and kept, keyed by the
participant's (replicas, partitions, device); only the sequence number is per call.

The semantics are the interpreter's handler's (``interpreter/collective.py``): same groups,
same sequence numbering, same signature, so a process running the interpreter meets one
running the CPU backend. Outside a multi-device run (a module with one participant) the
instruction runs as the fallback thunk (the interpreter's handler) it was before.
"""
from __future__ import annotations

import abc
from typing import Sequence

import numpy as np

from ...hlo.ir import HloInstruction
from ...hlo.replica_groups import match_reduction
from ..communicator import CollectiveCall, Communicator, current_participant
from ..interpreter import Evaluator
from ..interpreter.collective import (collective_group, collective_signature, collective_what,
                                      combiner)
from .fallback import FallbackThunk
from .thunks import BufferRef, Memory, Thunk, ValueRef, as_bytes, leaves

#: The opcodes an :class:`AllReduceThunk` runs.
ALL_REDUCE_OPCODES = ("all-reduce", "all-reduce-start")


def _row_major_pairs(operands: Sequence[ValueRef], output: ValueRef) -> bool:
    """Operands and result leaves pair up as row-major arrays of one dtype."""
    outs = leaves(output)
    return len(outs) == len(operands) and all(
        isinstance(s, BufferRef) and s.perm is None and d.perm is None
        and s.shape.dtype == d.shape.dtype for s, d in zip(operands, outs))


def collective_thunk(instr: HloInstruction, evaluator: Evaluator, operands: Sequence[ValueRef],
                     output: ValueRef) -> Thunk | None:
    """The thunk of collective ``instr`` over its buffers, None where the fallback runs it:
    an all-reduce whose operands and results are row-major arrays of equal dtypes and sizes
    pairwise, or an all-gather whose result is its members' operands one after the other
    in memory."""
    if not _row_major_pairs(operands, output):
        return None
    pairs = list(zip(operands, leaves(output)))
    if instr.opcode in ALL_REDUCE_OPCODES:
        if all(s.shape.num_elements == d.shape.num_elements for s, d in pairs):
            return AllReduceThunk(instr, evaluator, operands, output)
        return None
    if instr.opcode == "all-gather":
        d = int(instr.attrs["dimensions"][0])
        if all(int(np.prod(o.shape.dims[:d], dtype=np.int64)) == 1 for _, o in pairs):
            return AllGatherThunk(instr, evaluator, operands, output)
    return None


def _flat_geometry(ref: BufferRef) -> tuple[int, int, int, np.dtype]:
    """``(allocation, first byte, end byte, dtype)`` of a row-major array's buffer."""
    shape = ref.shape
    return (ref.alloc, ref.offset,
            ref.offset + shape.num_elements * shape.element_type.byte_size, shape.dtype)


def _flat(geometry: tuple[int, int, int, np.dtype], mem: Memory) -> np.ndarray:
    """The buffer of :func:`_flat_geometry` as a flat array of its dtype."""
    alloc, begin, end, dtype = geometry
    base = mem.bases[alloc]
    if begin == 0 and base.nbytes == end and base.dtype == dtype:     # the whole base
        return base.reshape(-1)
    return as_bytes(base)[begin:end].view(dtype)


class _CollectiveThunk(Thunk):
    """A collective over the executable's buffers: the call's fixed parts kept per
    participant layout, flat views of the buffers handed to the communicator."""

    kind = "collective"

    def __init__(self, instr: HloInstruction, evaluator: Evaluator,
                 operands: Sequence[BufferRef], output: ValueRef) -> None:
        self.instruction = instr
        self.sources = list(operands)
        self._sources = [_flat_geometry(r) for r in operands]
        self._destinations = [_flat_geometry(r) for r in leaves(output)]
        # a result in its operand's buffer: the same array goes as both (reduced in place)
        self._in_place = [s.same_bytes(d) for s, d in zip(self.sources, leaves(output))]
        self.fallback = FallbackThunk(instr, evaluator, operands, output)
        self.what = collective_what(instr)
        # (replicas, partitions, device) -> (group, groups, position, sorted group, signature)
        self._calls: dict[tuple[int, int, int], tuple] = {}

    def run(self, mem: Memory) -> None:
        p = current_participant()
        if p is None:
            self.fallback.run(mem)
            return
        key = (p.replicas, p.partitions, p.device)
        plan = self._calls.get(key)
        if plan is None:
            group, groups = collective_group(self.instruction, p)
            signature = collective_signature(self.instruction,
                                             [r.view(mem) for r in self.sources])
            plan = self._calls[key] = (group, groups, group.index(p.device),
                                       tuple(sorted(group)), signature)
        group, groups, position, members, signature = plan
        call = CollectiveCall(self.what, group, position, p.next_sequence(members), signature,
                              groups)
        sources = [_flat(g, mem) for g in self._sources]
        destinations = [s if same else _flat(g, mem)
                        for s, g, same in zip(sources, self._destinations, self._in_place)]
        self._move(p.communicator, call, sources, destinations)

    @abc.abstractmethod
    def _move(self, communicator: Communicator, call: CollectiveCall, sources: list,
              destinations: list) -> None:
        """Run the collective from ``sources`` into ``destinations`` (flat arrays)."""


class AllReduceThunk(_CollectiveThunk):
    """One all-reduce over the executable's buffers (module docstring)."""

    def __init__(self, instr: HloInstruction, evaluator: Evaluator,
                 operands: Sequence[BufferRef], output: ValueRef) -> None:
        super().__init__(instr, evaluator, operands, output)
        self.reduction = match_reduction(instr.attrs["to_apply"])
        self.combine = combiner(evaluator, instr)

    def _move(self, communicator: Communicator, call: CollectiveCall, sources: list,
              destinations: list) -> None:
        communicator.all_reduce_into(call, sources, destinations, self.combine,
                                     self.reduction)


class AllGatherThunk(_CollectiveThunk):
    """One all-gather whose result is its members' operands one after the other in memory
    (row-major, every dimension before the gathered one of size 1)."""

    def _move(self, communicator: Communicator, call: CollectiveCall, sources: list,
              destinations: list) -> None:
        communicator.all_gather_into(call, sources, destinations)


__all__ = ["AllReduceThunk", "AllGatherThunk", "ALL_REDUCE_OPCODES", "collective_thunk"]
