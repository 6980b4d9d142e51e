"""Who takes part in a collective: replica groups, XLA's CollectiveOpGroupMode, participants.

``replica_groups`` is a structured attribute (:class:`ReplicaGroups`), parsed from either text
form XLA prints and printed back in the same form:

- explicit lists ``{{0,2},{1,3}}`` (``{}`` = one group with every id), order within a group
  significant;
- the iota form ``[G,S]<=[d0,d1,...]`` with an optional transpose ``T(p0,p1,...)``:
  ``arange(prod(d)).reshape(d).transpose(p).reshape(G, S)``, each row a group
  (``xla/hlo/ir/collective_device_list.h``, ``IotaReplicaGroupList``).

:func:`group_mode` is ``GetCollectiveOpGroupMode`` (``xla/service/collective_ops_utils.cc``):
whether ``channel_id`` is present and the ``use_global_device_ids`` value, which only
all-reduce, all-gather and reduce-scatter (and their start forms) have, decide what the ids in
the groups mean. :func:`participant_groups` expands the groups to *flattened device ids*
(``replica * num_partitions + partition``), in group order, for a module with ``R`` replicas and
``P`` partitions (``GetParticipatingDevicesGroups`` with the identity device assignment); a
device's position in its group is its rank in the collective. :func:`collective_problems` is
what the verifier checks for one instruction against the module's counts.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    from .ir import HloModule


@dataclass(frozen=True)
class IotaGroups:
    """``[num_groups,group_size]<=[reshape_dims]T(transpose_perm)``."""

    num_groups: int
    group_size: int
    reshape_dims: tuple[int, ...]
    transpose_perm: tuple[int, ...] | None = None

    def to_text(self) -> str:
        text = f"[{self.num_groups},{self.group_size}]<=[{','.join(map(str, self.reshape_dims))}]"
        if self.transpose_perm is not None:
            text += f"T({','.join(map(str, self.transpose_perm))})"
        return text

    def expand(self) -> tuple[tuple[int, ...], ...]:
        """The explicit groups (raises ValueError when the shapes do not agree)."""
        total = int(np.prod(self.reshape_dims, dtype=np.int64)) if self.reshape_dims else 1
        if total != self.num_groups * self.group_size:
            raise ValueError(f"iota replica groups {self.to_text()}: the reshape dims hold "
                             f"{total} ids, but {self.num_groups} groups of "
                             f"{self.group_size} need {self.num_groups * self.group_size}")
        ids = np.arange(total).reshape(self.reshape_dims)
        if self.transpose_perm is not None:
            if sorted(self.transpose_perm) != list(range(len(self.reshape_dims))):
                raise ValueError(f"iota replica groups {self.to_text()}: T(...) must be a "
                                 f"permutation of 0..{len(self.reshape_dims) - 1}")
            ids = ids.transpose(self.transpose_perm)
        rows = ids.reshape(self.num_groups, self.group_size)
        return tuple(tuple(int(v) for v in row) for row in rows)


@dataclass(frozen=True)
class ReplicaGroups:
    """The ``replica_groups`` attribute: explicit ``groups`` (empty tuple = all ids), or the
    iota form ``iota`` (then ``groups`` is its expansion)."""

    groups: tuple[tuple[int, ...], ...] = ()
    iota: IotaGroups | None = None

    @staticmethod
    def of(groups: Sequence[Sequence[int]]) -> "ReplicaGroups":
        """Explicit groups from lists of ids."""
        return ReplicaGroups(tuple(tuple(int(i) for i in g) for g in groups))

    @staticmethod
    def iota_form(num_groups: int, group_size: int, reshape_dims: Sequence[int],
                  transpose_perm: Sequence[int] | None = None) -> "ReplicaGroups":
        """The iota form (raises ValueError when its numbers do not agree)."""
        iota = IotaGroups(int(num_groups), int(group_size), tuple(int(d) for d in reshape_dims),
                          None if transpose_perm is None else tuple(int(p) for p in transpose_perm))
        return ReplicaGroups(iota.expand(), iota)

    @property
    def empty(self) -> bool:
        return not self.groups

    def group_size(self) -> int | None:
        """Ids per group when all groups have the same size; None for ``{}`` or uneven groups."""
        sizes = {len(g) for g in self.groups}
        return sizes.pop() if len(sizes) == 1 else None

    def to_text(self) -> str:
        if self.iota is not None:
            return self.iota.to_text()
        return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in self.groups) + "}"

    def __str__(self) -> str:
        return self.to_text()


_IOTA = re.compile(r"\[\s*(\d+)\s*,\s*(\d+)\s*\]\s*<=\s*\[([\d\s,]*)\]"
                   r"(?:\s*T\s*\(([\d\s,]*)\))?")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(t) for t in text.replace(" ", "").split(",") if t)


def parse_replica_groups(text: str) -> ReplicaGroups:
    """Parse either text form; raises ValueError saying what is wrong."""
    t = text.strip()
    m = _IOTA.fullmatch(t)
    if m:
        perm = _ints(m.group(4)) if m.group(4) is not None else None
        return ReplicaGroups.iota_form(int(m.group(1)), int(m.group(2)), _ints(m.group(3)), perm)
    compact = re.sub(r"\s+", "", t)
    if not compact.startswith("{") or not compact.endswith("}"):
        raise ValueError(f"replica_groups must be {{{{ids}},...}} or [G,S]<=[dims], got {text!r}")
    inner = compact[1:-1]
    if not inner:
        return ReplicaGroups()
    if not re.fullmatch(r"\{[\d,]*\}(,\{[\d,]*\})*", inner):
        raise ValueError(f"replica_groups {text!r}: expected groups of integer ids like "
                         "{{0,1},{2,3}}")
    return ReplicaGroups(tuple(_ints(g) for g in re.findall(r"\{([\d,]*)\}", inner)))


def as_replica_groups(value: Any) -> ReplicaGroups | None:
    """A :class:`ReplicaGroups` from the attribute value (structured, text, nested lists) or
    None when absent; raises ValueError for what is not replica groups."""
    if value is None or isinstance(value, ReplicaGroups):
        return value
    if isinstance(value, (tuple, list)):
        return ReplicaGroups.of(value)
    return parse_replica_groups(str(value))


class GroupMode(enum.Enum):
    """XLA's ``CollectiveOpGroupMode``: what the ids in ``replica_groups`` name."""

    CROSS_REPLICA = "kCrossReplica"
    CROSS_PARTITION = "kCrossPartition"
    CROSS_REPLICA_AND_PARTITION = "kCrossReplicaAndPartition"
    FLATTENED_ID = "kFlattenedID"


# Ops that carry ``use_global_device_ids`` (GetCollectiveOpGroupMode passes the bool for them
# and std::nullopt for all-to-all, collective-permute and collective-broadcast).
_GLOBAL_ID_OPS = frozenset({"all-reduce", "all-reduce-start", "all-gather", "all-gather-start",
                            "reduce-scatter", "reduce-scatter-start"})

# Collectives whose groups must all have the same size (XLA's verifier).
UNIFORM_GROUP_OPS = frozenset({"all-gather", "all-gather-start", "reduce-scatter",
                               "reduce-scatter-start", "all-to-all", "all-to-all-start",
                               "collective-broadcast"})

GROUPED_OPS = _GLOBAL_ID_OPS | UNIFORM_GROUP_OPS
PERMUTE_OPS = frozenset({"collective-permute", "collective-permute-start"})


def has_participants(opcode: str) -> bool:
    """Whether ``opcode`` is a collective with replica groups or permute pairs (the start forms
    included), which :func:`collective_problems` checks."""
    return opcode in GROUPED_OPS or opcode in PERMUTE_OPS \
        or opcode.removesuffix("-start") in GROUPED_OPS


def group_mode(opcode: str, attrs: Mapping[str, Any]) -> GroupMode:
    """The group mode of a collective with ``attrs`` (ValueError for
    ``use_global_device_ids=true`` without ``channel_id``)."""
    has_channel = attrs.get("channel_id") is not None
    if opcode in _GLOBAL_ID_OPS:
        use_global = bool(attrs.get("use_global_device_ids", False))
        if not has_channel:
            if use_global:
                raise ValueError("Cannot have use_global_device_ids=true without channel_id")
            return GroupMode.CROSS_REPLICA
        return GroupMode.FLATTENED_ID if use_global else GroupMode.CROSS_REPLICA_AND_PARTITION
    return GroupMode.CROSS_PARTITION if has_channel else GroupMode.CROSS_REPLICA


def id_count(mode: GroupMode, replicas: int, partitions: int) -> int:
    """How many distinct ids the groups of ``mode`` range over."""
    if mode is GroupMode.CROSS_PARTITION:
        return partitions
    if mode is GroupMode.FLATTENED_ID:
        return replicas * partitions
    return replicas


def participant_groups(mode: GroupMode, groups: ReplicaGroups | None, replicas: int,
                       partitions: int) -> list[list[int]]:
    """Every participant group as flattened device ids (``r * partitions + p``) in group
    order; together they cover each device once when the groups are valid."""
    R, P = replicas, partitions
    lists = [list(g) for g in groups.groups] if groups is not None else []
    if not lists:
        if mode is GroupMode.FLATTENED_ID:
            raise ValueError("replica groups cannot be empty for kFlattenedID mode")
        lists = [list(range(id_count(mode, R, P)))]
    if mode is GroupMode.CROSS_REPLICA:
        return [[r * P + p for r in g] for p in range(P) for g in lists]
    if mode is GroupMode.CROSS_PARTITION:
        return [[r * P + q for q in g] for r in range(R) for g in lists]
    if mode is GroupMode.CROSS_REPLICA_AND_PARTITION:
        return [[r * P + q for r in g for q in range(P)] for g in lists]
    return lists


def permute_pairs(mode: GroupMode, pairs: Sequence[Sequence[int]], replicas: int,
                  partitions: int) -> list[tuple[int, int]]:
    """collective-permute's ``source_target_pairs`` as flattened device id pairs: the pairs
    name replicas (one copy per partition) or partitions (one copy per replica)."""
    R, P = replicas, partitions
    if mode is GroupMode.CROSS_PARTITION:
        return [(r * P + s, r * P + t) for r in range(R) for s, t in pairs]
    return [(s * P + p, t * P + p) for p in range(P) for s, t in pairs]


def participant_count(module: HloModule) -> tuple[int, int]:
    """``(replica_count, num_partitions)`` of an HLO module (1 where absent)."""
    attrs = module.attributes
    return int(attrs.get("replica_count", 1) or 1), int(attrs.get("num_partitions", 1) or 1)


def group_problems(groups: ReplicaGroups | None, mode: GroupMode, count: int,
                   uniform: bool) -> list[str]:
    """What is wrong with ``groups`` for ``count`` ids (empty list if nothing)."""
    if groups is None or groups.empty:
        if mode is GroupMode.FLATTENED_ID:
            return ["replica groups cannot be empty when use_global_device_ids=true"]
        return []
    problems = []
    seen: set[int] = set()
    for g in groups.groups:
        if not g:
            problems.append("a replica group is empty")
        for i in g:
            if not 0 <= i < count:
                problems.append(f"id {i} in replica_groups={groups.to_text()} is out of range: "
                                f"{mode.value} ids are 0..{count - 1}")
            elif i in seen:
                problems.append(f"id {i} appears twice in replica_groups={groups.to_text()}")
            seen.add(i)
    missing = sorted(set(range(count)) - seen)
    if missing and not problems:
        problems.append(f"id {missing[0]} does not appear in replica_groups="
                        f"{groups.to_text()} ({mode.value} ids are 0..{count - 1})")
    if uniform and len({len(g) for g in groups.groups}) > 1:
        problems.append(f"replica groups must be of equal size: replica_groups="
                        f"{groups.to_text()}")
    return problems


def pair_problems(pairs: Sequence[Sequence[int]], count: int) -> list[str]:
    """collective-permute's rules: ids in range (checked, as XLA does, only when there is more
    than one id), no source or target named twice."""
    problems = []
    sources: set[int] = set()
    targets: set[int] = set()
    for pair in pairs:
        if len(pair) != 2:
            problems.append(f"source_target_pairs entry {list(pair)} is not a pair")
            continue
        s, t = pair
        for i in (s, t):
            if i < 0 or (count > 1 and i >= count):
                problems.append(f"id {i} in source_target_pairs is out of range 0..{count - 1}")
        if s in sources:
            problems.append(f"source {s} appears twice in source_target_pairs")
        if t in targets:
            problems.append(f"target {t} appears twice in source_target_pairs")
        sources.add(s)
        targets.add(t)
    return problems


_REDUCTION_KINDS = {"add": "sum", "multiply": "product", "minimum": "min", "maximum": "max",
                    "and": "min", "or": "max"}


def match_reduction(computation: Any) -> str | None:
    """``sum``/``product``/``min``/``max`` when ``computation`` is one binary op of its two
    scalar parameters (XLA's ``MatchReductionComputation``; ``and``/``or`` only for pred), else
    None: the runtime then applies the computation itself."""
    root = getattr(computation, "root", None)
    params = getattr(computation, "parameters", ())
    if root is None or len(params) != 2 or len(root.operands) != 2:
        return None
    kind = _REDUCTION_KINDS.get(root.opcode)
    if kind is None or not root.shape.is_array or root.shape.rank != 0:
        return None
    if root.opcode in ("and", "or") and not root.shape.element_type.is_pred:
        return None
    if {id(o) for o in root.operands} != {id(p) for p in params}:
        return None
    return kind


def _size_problems(opcode: str, attrs: Mapping[str, Any], size: int, operands: Sequence[Any],
                   shape: Any) -> list[str]:
    """The shapes against the number of participants per group (XLA's verifier:
    ``subgroup_size == 1 || shard_count == subgroup_size``)."""
    base = opcode.removesuffix("-start")
    if base in ("all-gather", "reduce-scatter") and operands and "dimensions" in attrs:
        out = shape.tuple_shapes[1] if opcode.endswith("-start") and shape.is_tuple else shape
        if out.is_tuple or not operands[0].is_array:
            return []
        d = int(attrs["dimensions"][0])
        if not (0 <= d < operands[0].rank and d < out.rank):
            return []
        big, small = (out.dims[d], operands[0].dims[d]) if base == "all-gather" else \
            (operands[0].dims[d], out.dims[d])
        shards = big // small if small else 0
        if size != 1 and shards * small != big or size != 1 and shards != size:
            return [f"shard_count = {big}/{small}, but each group has {size} participants "
                    f"(subgroup_size = {size})"]
    if base == "all-to-all" and operands:
        if "dimensions" in attrs and operands[0].is_array:
            d = int(attrs["dimensions"][0])
            if 0 <= d < operands[0].rank and operands[0].dims[d] % size:
                return [f"dimension {d} of the operand ({operands[0].dims[d]}) is not divisible "
                        f"by the {size} participants of each group"]
        elif "dimensions" not in attrs and len(operands) != size:
            return [f"the tuple form has {len(operands)} operands for groups of {size} "
                    "participants"]
    return []


def collective_problems(opcode: str, attrs: Mapping[str, Any], replicas: int,
                        partitions: int, operands: Sequence[Any] = (),
                        shape: Any = None) -> list[str]:
    """What the verifier reports for one collective in a module of ``replicas`` x
    ``partitions`` devices (``operands``/``shape``: its operand and result shapes, to check
    them against the participants per group)."""
    if not has_participants(opcode):
        return []
    try:
        mode = group_mode(opcode, attrs)
        groups = as_replica_groups(attrs.get("replica_groups"))
    except ValueError as e:
        return [str(e)]
    count = id_count(mode, replicas, partitions)
    if opcode in PERMUTE_OPS:
        return pair_problems(attrs.get("source_target_pairs") or (), count)
    problems = group_problems(groups, mode, count, uniform=opcode in UNIFORM_GROUP_OPS)
    if problems or shape is None:
        return problems
    sizes = {len(g) for g in participant_groups(mode, groups, replicas, partitions)}
    return _size_problems(opcode, attrs, sizes.pop(), operands, shape) if len(sizes) == 1 else []


__all__ = ["ReplicaGroups", "IotaGroups", "GroupMode", "parse_replica_groups",
           "as_replica_groups", "group_mode", "participant_groups", "participant_count",
           "permute_pairs", "collective_problems", "group_problems", "has_participants",
           "match_reduction",
           "pair_problems", "id_count", "UNIFORM_GROUP_OPS"]
