"""Collectives in the IR: replica_groups parsed and printed structurally, XLA's group modes,
participant groups, shape rules of the start/done forms, and the verifier's group checks."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.errors import HloParseError, ShapeError, VerificationError
from xlapy.hlo import parse_module
from xlapy.hlo.replica_groups import (GroupMode, ReplicaGroups, group_mode, match_reduction,
                                      parse_replica_groups, participant_groups, permute_pairs)
from xlapy.hlo.shape import Shape
from xlapy.hlo.shape_inference import infer_shape
from xlapy.hlo import types as T

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""


def _module(header: str, body: str) -> str:
    return f"HloModule m{header}\n{ADD}\nENTRY e {{\n{body}\n}}\n"


@pytest.mark.parametrize("text, groups", [
    ("{{0,2},{1,3}}", ((0, 2), (1, 3))),
    ("{}", ()),
    ("{{3,2,1,0}}", ((3, 2, 1, 0),)),
    ("[2,4]<=[8]", ((0, 1, 2, 3), (4, 5, 6, 7))),
    ("[4,2]<=[2,4]T(1,0)", ((0, 4), (1, 5), (2, 6), (3, 7))),
    ("[2,4]<=[4,2]T(1,0)", ((0, 2, 4, 6), (1, 3, 5, 7))),
])
def test_replica_groups_expand_and_print_back(text, groups):
    rg = parse_replica_groups(text)
    assert rg.groups == groups
    assert rg.to_text() == text
    # the iota rule itself: arange(prod(d)).reshape(d).transpose(perm).reshape(G, S)
    if "<=" in text:
        ids = np.arange(8).reshape(rg.iota.reshape_dims)
        if rg.iota.transpose_perm:
            ids = ids.transpose(rg.iota.transpose_perm)
        assert ids.reshape(rg.iota.num_groups, -1).tolist() == [list(g) for g in groups]


def test_replica_groups_round_trip_through_the_module_text():
    text = _module(", replica_count=8", """  p = f32[8] parameter(0)
  a = f32[8] all-reduce(p), replica_groups=[4,2]<=[2,4]T(1,0), to_apply=add
  ROOT b = f32[8] all-reduce(a), replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=add""")
    m = parse_module(text)
    e = m.entry
    assert isinstance(e.instruction("a").attrs["replica_groups"], ReplicaGroups)
    out = m.to_text()
    assert "replica_groups=[4,2]<=[2,4]T(1,0)" in out
    assert "replica_groups={{0,1,2,3},{4,5,6,7}}" in out
    assert parse_module(out).to_text() == out


def test_malformed_replica_groups_are_parse_errors_with_a_position():
    text = _module(", replica_count=8", """  p = f32[8] parameter(0)
  ROOT a = f32[8] all-reduce(p), replica_groups=[3,2]<=[8], to_apply=add""")
    with pytest.raises(HloParseError, match=r"8 ids.*3 groups of 2") as e:
        parse_module(text)
    assert ":" in str(e.value).split("\n")[0]


@pytest.mark.parametrize("opcode, attrs, mode", [
    ("all-reduce", {}, GroupMode.CROSS_REPLICA),
    ("all-reduce", {"channel_id": 1}, GroupMode.CROSS_REPLICA_AND_PARTITION),
    ("all-reduce", {"channel_id": 1, "use_global_device_ids": True}, GroupMode.FLATTENED_ID),
    ("all-gather", {"channel_id": 1, "use_global_device_ids": False},
     GroupMode.CROSS_REPLICA_AND_PARTITION),
    ("all-to-all", {"channel_id": 1}, GroupMode.CROSS_PARTITION),
    ("collective-permute", {}, GroupMode.CROSS_REPLICA),
    ("collective-broadcast", {"channel_id": 2}, GroupMode.CROSS_PARTITION),
])
def test_group_mode_follows_xla(opcode, attrs, mode):
    assert group_mode(opcode, attrs) is mode


def test_global_ids_without_channel_is_rejected():
    with pytest.raises(ValueError, match="without channel_id"):
        group_mode("all-reduce", {"use_global_device_ids": True})


def test_participant_groups_on_two_replicas_by_two_partitions():
    rg = ReplicaGroups.of
    # the reference's observations on 2 replicas x 2 partitions, device d = r*2 + p
    assert participant_groups(GroupMode.CROSS_REPLICA_AND_PARTITION, rg([[0, 1]]), 2, 2) == \
        [[0, 1, 2, 3]]
    assert participant_groups(GroupMode.CROSS_REPLICA_AND_PARTITION, rg([[0], [1]]), 2, 2) == \
        [[0, 1], [2, 3]]
    assert participant_groups(GroupMode.CROSS_PARTITION, rg([[0, 1]]), 2, 2) == [[0, 1], [2, 3]]
    assert participant_groups(GroupMode.CROSS_REPLICA, rg([[0, 1]]), 2, 2) == [[0, 2], [1, 3]]
    assert participant_groups(GroupMode.CROSS_REPLICA, None, 2, 2) == [[0, 2], [1, 3]]
    assert participant_groups(GroupMode.FLATTENED_ID, rg([[3, 0], [1, 2]]), 2, 2) == \
        [[3, 0], [1, 2]]
    # permute pairs: channel -> partitions of each replica; none -> replicas of each partition
    assert permute_pairs(GroupMode.CROSS_PARTITION, [(0, 1), (1, 0)], 2, 2) == \
        [(0, 1), (1, 0), (2, 3), (3, 2)]
    assert permute_pairs(GroupMode.CROSS_REPLICA, [(0, 1), (1, 0)], 2, 2) == \
        [(0, 2), (2, 0), (1, 3), (3, 1)]


def test_match_reduction():
    m = parse_module(_module("", "  ROOT p = f32[] parameter(0)"))
    assert match_reduction(m.computation("add")) == "sum"


def test_start_done_shapes():
    f8, f32 = Shape.array(T.F32, (8,)), Shape.array(T.F32, (32,))
    start = infer_shape("all-gather-start", [f8], {"dimensions": (0,),
                                                   "replica_groups": "{{0,1,2,3}}"})
    assert start == Shape.tuple([f8, f32])
    assert infer_shape("all-gather-done", [start]) == f32
    cp = infer_shape("collective-permute-start", [f8], {"source_target_pairs": ((0, 1),)})
    assert cp == Shape.tuple([f8, f8, Shape.scalar(T.U32), Shape.scalar(T.U32)])
    assert infer_shape("collective-permute-done", [cp]) == f8


@pytest.mark.parametrize("header, line, message", [
    (", replica_count=4", "all-reduce(p), replica_groups={{0,1},{1,2,3}}, to_apply=add",
     "id 1 appears twice"),
    (", replica_count=4", "all-reduce(p), replica_groups={{0,1},{2,4}}, to_apply=add",
     "id 4 .* out of range"),
    (", replica_count=4", "all-reduce(p), replica_groups={{0,1},{2}}, to_apply=add",
     "id 3 does not appear"),
    (", replica_count=2, num_partitions=2",
     "all-reduce(p), channel_id=1, replica_groups={}, use_global_device_ids=true, to_apply=add",
     "cannot be empty"),
    (", replica_count=2", "collective-permute(p), source_target_pairs={{0,1},{1,1}}",
     "target 1 appears twice"),
])
def test_verifier_rejects_malformed_groups_with_line_and_column(header, line, message):
    text = _module(header, f"  p = f32[8] parameter(0)\n  ROOT a = f32[8] {line}")
    n = 4 if "4" in header or "num_partitions" in header else 2
    with pytest.raises(VerificationError, match=message) as e:
        xlapy.run_hlo(text, [[np.zeros(8, np.float32)]] * n)
    assert str(e.value).split("\n")[1].strip().startswith("10:8: e/a: ")


def test_verifier_rejects_uneven_groups_where_xla_requires_equal_sizes():
    text = _module(", replica_count=3", """  p = f32[2] parameter(0)
  ROOT a = f32[4] all-gather(p), replica_groups={{0,1},{2}}, dimensions={0}""")
    with pytest.raises(VerificationError, match="equal size"):
        xlapy.run_hlo(text, [[np.zeros(2, np.float32)]] * 3)
    # an all-reduce may have groups of different sizes
    ok = _module(", replica_count=3", """  p = f32[2] parameter(0)
  ROOT a = f32[2] all-reduce(p), replica_groups={{0,1},{2}}, to_apply=add""")
    outs = xlapy.run_hlo(ok, [[np.full(2, d, np.float32)] for d in range(3)])
    assert [o[0].tolist() for o in outs] == [[1, 1], [1, 1], [2, 2]]


def test_verifier_checks_shapes_against_the_participants_per_group():
    """XLA: an all-gather with channel_id and replica groups {{0,1}} on 2 replicas x 2
    partitions gathers over 4 devices (each replica with all its partitions), so doubling the
    dimension fails verification (shard_count 2, subgroup_size 4)."""
    text = _module(", replica_count=2, num_partitions=2", """  p = f32[2] parameter(0)
  ROOT a = f32[4] all-gather(p), channel_id=1, replica_groups={{0,1}}, dimensions={0}""")
    with pytest.raises(VerificationError, match="subgroup_size = 4"):
        xlapy.run_hlo(text, [[np.zeros(2, np.float32)]] * 4)
    ok = text.replace("f32[4] all-gather", "f32[8] all-gather")
    outs = xlapy.run_hlo(ok, [[np.full(2, d, np.float32)] for d in range(4)])
    assert outs[3][0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    a2a = _module(", replica_count=3", """  p = f32[4] parameter(0)
  ROOT a = f32[4] all-to-all(p), replica_groups={}, dimensions={0}""")
    with pytest.raises(VerificationError, match="not divisible by the 3 participants"):
        xlapy.run_hlo(a2a, [[np.zeros(4, np.float32)]] * 3)


def test_verifier_checks_shapes_when_replica_groups_is_left_out():
    """No replica_groups attribute means one group of every replica, as ``{}`` does."""
    text = _module(", replica_count=2", """  p = f32[8] parameter(0)
  ROOT a = f32[8] all-gather(p), dimensions={0}""")
    with pytest.raises(VerificationError, match="subgroup_size = 2"):
        xlapy.run_hlo(text, [[np.zeros(8, np.float32)]] * 2)


def test_shape_inference_rejects_malformed_groups_without_a_module():
    f4 = Shape.array(T.F32, (4,))
    with pytest.raises(ShapeError, match="id 1 appears twice"):
        infer_shape("all-gather", [f4], {"dimensions": (0,), "replica_groups": "{{0,1},{1,2}}"})
    with pytest.raises(ShapeError, match="equal size"):
        infer_shape("all-to-all", [f4], {"dimensions": (0,), "replica_groups": "{{0,1},{2}}"})
    assert infer_shape("all-gather", [f4], {"dimensions": (0,),
                                            "replica_groups": "[2,2]<=[4]"}) == \
        Shape.array(T.F32, (8,))


def test_devices_of_one_process(monkeypatch):
    import xlapy.distributed
    from xlapy.config import debug_options
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK"):
        monkeypatch.delenv(var, raising=False)
    xlapy.distributed.initialize()          # no MPI launch: stays a single process
    assert not xlapy.distributed.is_initialized()
    assert xlapy.process_index() == 0 and xlapy.process_count() == 1
    with debug_options(xla_force_host_platform_device_count=3):
        assert xlapy.device_count() == xlapy.local_device_count() == 3
        assert [d.id for d in xlapy.devices()] == [0, 1, 2]
        assert [d.process_index for d in xlapy.local_devices()] == [0, 0, 0]
    assert xlapy.device_count() == 1
