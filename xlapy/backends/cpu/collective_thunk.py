"""All-reduce thunks: the executable's own buffers handed to the communicator.

An ``all-reduce`` (or ``all-reduce-start``) whose operands and results are row-major arrays
runs as an :class:`AllReduceThunk`: flat NumPy views of its operand buffers and of its result
buffers go to the running participant's communicator
(:meth:`~xlapy.backends.communicator.Communicator.all_reduce_into`), so across MPI processes
the reduction is written by MPI straight into the result buffer -- no intermediate array and
no copy after it (``MPI_IN_PLACE`` when buffer assignment put the result in the operand's
buffer). What does not change between calls -- the device's group, every group of the op,
the call's signature -- is worked out on a participant's first call and kept, keyed by the
participant's (replicas, partitions, device); only the sequence number is per call.

The semantics are the interpreter's handler's (``interpreter/collective.py``): same groups,
same sequence numbering, same signature, so a process running the interpreter meets one
running the CPU backend. Outside a multi-device run (a module with one participant) the
instruction runs as the fallback thunk (the interpreter's handler) it was before.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...hlo.ir import HloInstruction
from ...hlo.replica_groups import match_reduction
from ..communicator import CollectiveCall, current_participant
from ..interpreter import Evaluator
from ..interpreter.collective import (collective_group, collective_signature, collective_what,
                                      combiner)
from .fallback import FallbackThunk
from .thunks import BufferRef, Memory, Thunk, ValueRef, as_bytes, leaves

#: The opcodes an :class:`AllReduceThunk` runs.
ALL_REDUCE_OPCODES = ("all-reduce", "all-reduce-start")


def all_reduce_thunk_applies(instr: HloInstruction, operands: Sequence[ValueRef],
                             output: ValueRef) -> bool:
    """Whether ``instr`` can run as an :class:`AllReduceThunk`: an all-reduce whose operands
    and results are row-major arrays of equal dtypes and element counts, pairwise."""
    if instr.opcode not in ALL_REDUCE_OPCODES:
        return False
    outs = leaves(output)
    if len(outs) != len(operands) or not all(isinstance(r, BufferRef) for r in operands):
        return False
    return all(s.perm is None and d.perm is None and s.shape.dtype == d.shape.dtype
               and s.shape.num_elements == d.shape.num_elements
               for s, d in zip(operands, outs))


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


class AllReduceThunk(Thunk):
    """One all-reduce over the executable's buffers (module docstring)."""

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
        self.reduction = match_reduction(instr.attrs["to_apply"])
        self.combine = combiner(evaluator, instr)
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
        p.communicator.all_reduce_into(call, sources, destinations, self.combine,
                                       self.reduction)


__all__ = ["AllReduceThunk", "ALL_REDUCE_OPCODES", "all_reduce_thunk_applies"]
