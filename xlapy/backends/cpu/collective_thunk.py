"""Collective thunks: the executable's own buffers handed to the communicator.

A collective whose operands and results are row-major arrays runs as a thunk over flat
NumPy views of its operand and result buffers; the running participant's communicator
moves the data between them (``Communicator.bind_*``), so across MPI processes MPI reads
the operand buffers and writes the result buffers itself -- no staging array, no copy
after it:

- ``all-reduce`` / ``all-reduce-start`` (:class:`AllReduceThunk`): ``Iallreduce`` from each
  operand into its result, ``MPI_IN_PLACE`` when buffer assignment put the result in the
  operand's buffer;
- ``all-gather`` (:class:`AllGatherThunk`) and ``reduce-scatter``
  (:class:`ReduceScatterThunk`) when the members' blocks follow each other in memory
  (row-major, every dimension before the gathered or scattered one of size 1):
  ``Iallgather`` into the result, ``Ireduce_scatter_block`` from the operand;
- array-form ``all-to-all`` (:class:`AllToAllThunk`) under the same condition on its split
  dimension: ``Ialltoall`` from the operand into the result; tuple-form ``all-to-all``
  (:class:`TupleAllToAllThunk`, one operand per group member, all of one size): operand j
  sent to position j, result j received from it (``Isend``/``Irecv``);
- ``collective-permute`` of one array (:class:`PermuteThunk`): ``Isend`` of the operand,
  ``Irecv`` into the result (zeroed on a device no pair targets).

Everything that does not change between calls -- the device's group, every group of the
op, the call's signature, the communicator's prepared call (its sub-communicators, MPI
op, agreement buffers) -- is made on a participant's first call and kept, keyed by the
participant's (replicas, partitions, device) and its communicator; per call only the
sequence number and the buffers' views are new. Except for all-reduce, a result must not
overlap an operand (MPI reads one while writing the other).

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
from ..communicator import Bound, CollectiveCall, Communicator, Participant, current_participant
from ..interpreter import Evaluator
from ..interpreter.collective import (check_tuple_form, collective_group, collective_signature,
                                      collective_what, combiner, permute_peers)
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


def _leading_ones(ref: BufferRef, dim: int) -> bool:
    """Every dimension of ``ref`` before ``dim`` has size 1 (so blocks along ``dim`` follow
    each other in memory)."""
    return int(np.prod(ref.shape.dims[:dim], dtype=np.int64)) == 1


def _overlap(a: BufferRef, b: BufferRef) -> bool:
    return a.alloc == b.alloc and a.offset < b.offset + b.size and b.offset < a.offset + a.size


def collective_thunk(instr: HloInstruction, evaluator: Evaluator, operands: Sequence[ValueRef],
                     output: ValueRef) -> Thunk | None:
    """The thunk of collective ``instr`` over its buffers, None where the fallback runs it
    (the module docstring lists the forms taken)."""
    if not _row_major_pairs(operands, output):
        return None
    pairs = list(zip(operands, leaves(output)))
    op = instr.opcode
    if op in ALL_REDUCE_OPCODES:
        if all(s.shape.num_elements == d.shape.num_elements for s, d in pairs):
            return AllReduceThunk(instr, evaluator, operands, output)
        return None
    if any(_overlap(s, d) for s in operands for d in leaves(output)):
        return None
    if op == "collective-permute":
        if len(pairs) == 1 and pairs[0][0].shape.num_elements == pairs[0][1].shape.num_elements:
            return PermuteThunk(instr, evaluator, operands, output)
        return None
    dims = instr.attrs.get("dimensions")
    if dims is None:                        # tuple-form all-to-all: operand j to position j
        sizes = {r.shape.num_elements for pair in pairs for r in pair}
        if op == "all-to-all" and len(sizes) == 1:
            return TupleAllToAllThunk(instr, evaluator, operands, output)
        return None
    d = int(dims[0])
    if op == "all-gather" and all(_leading_ones(o, d) for _, o in pairs):
        return AllGatherThunk(instr, evaluator, operands, output)
    if op == "reduce-scatter" and all(_leading_ones(s, d) for s, _ in pairs):
        return ReduceScatterThunk(instr, evaluator, operands, output)
    if op == "all-to-all" and len(pairs) == 1 and _leading_ones(operands[0], d):
        return AllToAllThunk(instr, evaluator, operands, output)
    return None


class _Flat:
    """A row-major array's buffer as a flat array of its dtype, from the call's memory
    (a fixed allocation's view is made once)."""

    __slots__ = ("alloc", "begin", "end", "dtype", "fixed", "view")

    def __init__(self, ref: BufferRef) -> None:
        shape = ref.shape
        self.alloc, self.begin, self.dtype, self.fixed = ref.alloc, ref.offset, shape.dtype, \
            ref.fixed
        self.end = ref.offset + shape.num_elements * shape.element_type.byte_size
        self.view: np.ndarray | None = None

    def __call__(self, bases: list) -> np.ndarray:
        if self.view is not None:
            return self.view
        base = bases[self.alloc]
        dtype = base.dtype
        if self.begin == 0 and base.nbytes == self.end and (dtype is self.dtype
                                                            or dtype == self.dtype):
            view = base if base.ndim == 1 else base.reshape(-1)       # the whole base
        else:
            view = as_bytes(base)[self.begin:self.end].view(self.dtype)
        if self.fixed:
            self.view = view
        return view


class _CollectiveThunk(Thunk):
    """A collective over the executable's buffers: the communicator's prepared call kept
    per participant layout, flat views of the buffers handed to it on every call."""

    kind = "collective"

    def __init__(self, instr: HloInstruction, evaluator: Evaluator,
                 operands: Sequence[BufferRef], output: ValueRef) -> None:
        self.instruction = instr
        self.sources = list(operands)
        self._sources = [_Flat(r) for r in operands]
        self._destinations = [_Flat(r) for r in leaves(output)]
        # a result in its operand's buffer: the same array goes as both (reduced in place)
        self._in_place = [s.same_bytes(d) for s, d in zip(self.sources, leaves(output))]
        self._single = len(self.sources) == 1
        self.fallback = FallbackThunk(instr, evaluator, operands, output)
        self.what = collective_what(instr)
        # participant key -> (communicator, sorted group, prepared call)
        self._plans: dict[tuple[int, int, int], tuple[Communicator, tuple, Bound]] = {}

    def run(self, mem: Memory) -> None:
        p = current_participant()
        if p is None:
            self.fallback.run(mem)
            return
        plan = self._plans.get(p.key)
        if plan is None or plan[0] is not p.communicator:
            plan = self._plan(p, mem)
        communicator, group, bound = plan
        bases = mem.bases
        if self._single:
            source = self._sources[0](bases)
            sources = [source]
            destinations = [source if self._in_place[0] else self._destinations[0](bases)]
        else:
            sources = [f(bases) for f in self._sources]
            destinations = [s if same else f(bases)
                            for s, f, same in zip(sources, self._destinations, self._in_place)]
        # Participant.next_sequence, inline (this runs on every call of the collective)
        sequences = p.sequences
        sequence = sequences.get(group, 0)
        sequences[group] = sequence + 1
        bound(sequence, sources, destinations)

    def _plan(self, p: Participant, mem: Memory) -> tuple[Communicator, tuple, Bound]:
        group, groups = self._group(p)
        call = CollectiveCall(self.what, group, group.index(p.device), 0,
                              collective_signature(self.instruction,
                                                   [r.view(mem) for r in self.sources]),
                              groups)
        bases = mem.bases
        sources = [f(bases) for f in self._sources]
        destinations = [f(bases) for f in self._destinations]
        plan = (p.communicator, tuple(sorted(group)),
                self._bind(p, call, sources, destinations))
        self._plans[p.key] = plan
        return plan

    def _group(self, p: Participant) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
        """The device's group and every group of the op."""
        return collective_group(self.instruction, p)

    @abc.abstractmethod
    def _bind(self, p: Participant, call: CollectiveCall, sources: list, destinations: list
              ) -> Bound:
        """The communicator's prepared call of this op (``sources``/``destinations``: this
        call's flat buffers, the template of every call's)."""


class _ReducingThunk(_CollectiveThunk):
    """A collective with a reduction computation (``to_apply``): its kind for native MPI
    ops (``match_reduction``) and its elementwise function for the portable path."""

    def __init__(self, instr: HloInstruction, evaluator: Evaluator,
                 operands: Sequence[BufferRef], output: ValueRef) -> None:
        super().__init__(instr, evaluator, operands, output)
        self.reduction = match_reduction(instr.attrs["to_apply"])
        self.combine = combiner(evaluator, instr)


class AllReduceThunk(_ReducingThunk):
    """One all-reduce over the executable's buffers (module docstring)."""

    def _bind(self, p: Participant, call: CollectiveCall, sources: list, destinations: list
              ) -> Bound:
        return p.communicator.bind_all_reduce(call, sources, destinations, self.combine,
                                              self.reduction, self._in_place)


class AllGatherThunk(_CollectiveThunk):
    """One all-gather whose result is its members' operands one after the other in memory
    (row-major, every dimension before the gathered one of size 1)."""

    def _bind(self, p: Participant, call: CollectiveCall, sources: list, destinations: list
              ) -> Bound:
        return p.communicator.bind_all_gather(call, sources, destinations)


class ReduceScatterThunk(_ReducingThunk):
    """One reduce-scatter whose operands hold the members' blocks one after the other in
    memory (row-major, every dimension before the scattered one of size 1)."""

    def _bind(self, p: Participant, call: CollectiveCall, sources: list, destinations: list
              ) -> Bound:
        return p.communicator.bind_reduce_scatter(call, sources, destinations, self.combine,
                                                  self.reduction)


class AllToAllThunk(_CollectiveThunk):
    """One array-form all-to-all whose blocks follow each other in memory (row-major,
    every dimension before the split one of size 1)."""

    def _bind(self, p: Participant, call: CollectiveCall, sources: list, destinations: list
              ) -> Bound:
        return p.communicator.bind_all_to_all(call, sources, destinations)


class TupleAllToAllThunk(_CollectiveThunk):
    """One tuple-form all-to-all: operand j goes to group position j, result j comes from
    it (every operand and result of one size)."""

    def _bind(self, p: Participant, call: CollectiveCall, sources: list, destinations: list
              ) -> Bound:
        check_tuple_form(self.instruction, len(sources), call.group)
        return p.communicator.bind_all_to_all_arrays(call, sources, destinations)


class PermuteThunk(_CollectiveThunk):
    """One collective-permute: the operands go to the device the pairs name as this one's
    target, the results come from its source (zeros when no pair targets it)."""

    def _group(self, p: Participant) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
        everyone = tuple(range(p.replicas * p.partitions))
        return everyone, (everyone,)

    def _bind(self, p: Participant, call: CollectiveCall, sources: list, destinations: list
              ) -> Bound:
        source, target = permute_peers(self.instruction, p)
        return p.communicator.bind_permute(call, sources, destinations, source, target)


__all__ = ["AllReduceThunk", "AllGatherThunk", "ReduceScatterThunk", "AllToAllThunk",
           "TupleAllToAllThunk", "PermuteThunk", "ALL_REDUCE_OPCODES", "collective_thunk"]
