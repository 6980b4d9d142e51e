"""Every collective on the interpreter with N real participants, against a NumPy model of
XLA's rule; group modes on 2 replicas x 2 partitions; async pairs; failures that must end
every participant with an error naming the collective, never a hang."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import collective_model as cm
import xlapy
from xlapy.backends.communicator import (CollectiveCall, InProcessCommunicator,
                                         run_participants)
from xlapy.config import debug_options
from xlapy.errors import CollectiveError, InvalidArgumentError

# (replica count, replica_groups text, the groups as device lists)
GROUPINGS = [
    (1, "{}", [[0]]),
    (2, "{}", [[0, 1]]),
    (2, "{{1,0}}", [[1, 0]]),
    (4, "{{0,1},{2,3}}", [[0, 1], [2, 3]]),
    (4, "{{3,0},{2,1}}", [[3, 0], [2, 1]]),
    (4, "[2,2]<=[4]", [[0, 1], [2, 3]]),
    (4, "[2,2]<=[2,2]T(1,0)", [[0, 2], [1, 3]]),
    (4, "[1,4]<=[4]", [[0, 1, 2, 3]]),
]


def _run(text, n, backend="interpreter", **kw):
    if n == 1:
        return [xlapy.run_hlo(text, [cm.device_input(0)], backend=backend, **kw)]
    outs = xlapy.run_hlo(text, [[cm.device_input(d)] for d in range(n)], backend=backend, **kw)
    assert len(outs) == n               # the callers loop over the devices' outputs
    return outs


@pytest.mark.parametrize("n, groups_text, groups", GROUPINGS)
def test_every_collective_matches_the_numpy_model(n, groups_text, groups):
    size = len(groups[0])
    body = f"""  ar = f32[8] all-reduce(p), replica_groups={groups_text}, to_apply=add
  ag = f32[{8 * size}] all-gather(p), replica_groups={groups_text}, dimensions={{0}}
  rs = f32[{8 // size}] reduce-scatter(p), replica_groups={groups_text}, dimensions={{0}}, to_apply=add
  aa = f32[8] all-to-all(p), replica_groups={groups_text}, dimensions={{0}}
  cb = f32[8] collective-broadcast(p), replica_groups={groups_text}
  id = u32[] replica-id()
  ROOT t = (f32[8], f32[{8 * size}], f32[{8 // size}], f32[8], f32[8], u32[]) tuple(ar, ag, rs, aa, cb, id)"""
    header = f", replica_count={n}" if n > 1 else ""
    outs = _run(cm.module(header, body), n)
    xs = [cm.device_input(d) for d in range(n)]
    for d, (ar, ag, rs, aa, cb, rid) in enumerate(outs):
        np.testing.assert_array_equal(ar, cm.all_reduce(xs, groups, d))
        np.testing.assert_array_equal(ag, cm.all_gather(xs, groups, d))
        np.testing.assert_array_equal(rs, cm.reduce_scatter(xs, groups, d))
        np.testing.assert_array_equal(aa, cm.all_to_all(xs, groups, d))
        np.testing.assert_array_equal(cb, cm.broadcast(xs, groups, d))
        assert rid == d and rid.dtype == np.uint32


@pytest.mark.parametrize("pairs", [((0, 1), (1, 2)), ((0, 1), (1, 2), (2, 3), (3, 0)),
                                   ((0, 0), (1, 3), (3, 1))])
def test_collective_permute_gives_zeros_to_devices_no_pair_targets(pairs):
    text = "{" + ",".join(f"{{{s},{t}}}" for s, t in pairs) + "}"
    outs = _run(cm.module(", replica_count=4", f"  ROOT c = f32[8] collective-permute(p), "
                                                f"source_target_pairs={text}"), 4)
    xs = [cm.device_input(d) for d in range(4)]
    for d in range(4):
        np.testing.assert_array_equal(outs[d][0], cm.permute(xs, pairs, d))


def _two_by_two(body: str, params: str = "p = f32[4] parameter(0)"):
    text = cm.module(", replica_count=2, num_partitions=2", body, params)
    return [o[0] for o in xlapy.run_hlo(text, [[np.full(4, 100.0 * d, np.float32)]
                                               for d in range(4)])]


def test_group_modes_on_two_replicas_by_two_partitions():
    """The reference's observations of XLA:CPU with inputs 100*d on device d = 2r + p."""
    ar = _two_by_two("  ROOT a = f32[4] all-reduce(p), channel_id=1, replica_groups={{0,1}}, "
                     "to_apply=add")
    assert [a[0] for a in ar] == [600] * 4             # kCrossReplicaAndPartition: all four
    ar = _two_by_two("  ROOT a = f32[4] all-reduce(p), channel_id=1, replica_groups={{0},{1}}, "
                     "to_apply=add")
    assert [a[0] for a in ar] == [100, 100, 500, 500]   # each replica with all its partitions
    ar = _two_by_two("  ROOT a = f32[4] all-reduce(p), replica_groups={{0,1}}, to_apply=add")
    assert [a[0] for a in ar] == [200, 400, 200, 400]   # kCrossReplica: same partition
    ar = _two_by_two("  ROOT a = f32[4] all-reduce(p), channel_id=1, replica_groups={{0,3},{1,2}}, "
                     "use_global_device_ids=true, to_apply=add")
    assert [a[0] for a in ar] == [300, 300, 300, 300]
    cp = _two_by_two("  ROOT c = f32[4] collective-permute(p), channel_id=1, "
                     "source_target_pairs={{0,1},{1,0}}")
    assert [c[0] for c in cp] == [100, 0, 300, 200]     # partitions swapped in each replica
    cp = _two_by_two("  ROOT c = f32[4] collective-permute(p), source_target_pairs={{0,1},{1,0}}")
    assert [c[0] for c in cp] == [200, 300, 0, 100]     # replicas swapped in each partition
    aa = _two_by_two("  ROOT c = f32[4] all-to-all(p), channel_id=1, replica_groups={{0,1}}, "
                     "dimensions={0}")
    assert [a.tolist() for a in aa] == [[0, 0, 100, 100], [0, 0, 100, 100],
                                        [200, 200, 300, 300], [200, 200, 300, 300]]
    ids = xlapy.run_hlo(cm.module(", replica_count=2, num_partitions=2", """  r = u32[] replica-id()
  q = u32[] partition-id()
  ROOT t = (u32[], u32[]) tuple(r, q)""", "p = f32[] parameter(0)"), [[np.float32(0)]] * 4)
    assert [(int(r), int(q)) for r, q in ids] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_tuple_all_to_all_and_variadic_all_reduce():
    body = """  q = f32[2] parameter(1)
  aa = (f32[2], f32[2]) all-to-all(p, q), replica_groups={{0,1}}
  ar = (f32[2], f32[2]) all-reduce(p, q), replica_groups={}, to_apply=add
  ROOT t = ((f32[2], f32[2]), (f32[2], f32[2])) tuple(aa, ar)"""
    text = cm.module(", replica_count=2", body, "p = f32[2] parameter(0)")
    args = [[np.full(2, 10.0 * d, np.float32), np.full(2, 10.0 * d + 1, np.float32)]
            for d in range(2)]
    outs = xlapy.run_hlo(text, args)
    # operand j goes to position j: device k receives operand k of devices 0 and 1
    assert [o[0][0] for o in outs] == [0, 1]
    assert [o[1][0] for o in outs] == [10, 11]
    assert [o[2][0] for o in outs] == [10, 10] and [o[3][0] for o in outs] == [12, 12]


def test_async_pairs_give_the_synchronous_results():
    body = """  ars = f32[8] all-reduce-start(p), replica_groups={}, to_apply=add
  ar = f32[8] all-reduce-done(ars)
  ags = (f32[8], f32[16]) all-gather-start(p), replica_groups={}, dimensions={0}
  ag = f32[16] all-gather-done(ags)
  cps = (f32[8], f32[8], u32[], u32[]) collective-permute-start(p), source_target_pairs={{0,1},{1,0}}
  cp = f32[8] collective-permute-done(cps)
  ROOT t = (f32[8], f32[16], f32[8]) tuple(ar, ag, cp)"""
    outs = _run(cm.module(", replica_count=2", body), 2)
    xs = [cm.device_input(d) for d in range(2)]
    for d in range(2):
        np.testing.assert_array_equal(outs[d][0], xs[0] + xs[1])
        np.testing.assert_array_equal(outs[d][1], np.concatenate(xs))
        np.testing.assert_array_equal(outs[d][2], xs[1 - d])


def test_collectives_in_a_loop_meet_iteration_by_iteration():
    body = """  zero = s32[] constant(0)
  init = (s32[], f32[8]) tuple(zero, p)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(w), index=1"""
    loop = """cond {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}

body {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[8] all-reduce(x), replica_groups={}, to_apply=add
  ROOT t = (s32[], f32[8]) tuple(j, y)
}
"""
    text = cm.module(", replica_count=2", body).replace("ENTRY", loop + "\nENTRY")
    outs = _run(text, 2)
    expected = (cm.device_input(0) + cm.device_input(1)) * 4
    for o in outs:
        np.testing.assert_array_equal(o[0], expected)


def _branchy(extra: str, root: str = "a = f32[8] all-reduce(c), replica_groups={}, "
                                      "to_apply=add") -> str:
    """Device 0 takes branch 0 (``extra`` collectives), the others branch 1 (none)."""
    return f"""HloModule m, replica_count=2
{cm.ADD}
b0 {{
  x = f32[8] parameter(0)
{extra}
}}

b1 {{
  ROOT x = f32[8] parameter(0)
}}

ENTRY e {{
  p = f32[8] parameter(0)
  r = u32[] replica-id()
  i = s32[] convert(r)
  c = f32[8] conditional(i, p, p), branch_computations={{b0, b1}}
  ROOT {root}
}}
"""


def test_collectives_of_different_groups_do_not_meet():
    # device 0 runs an all-reduce alone (its own group), then both meet at the last one
    text = _branchy("  ROOT y = f32[8] all-reduce(x), replica_groups={{0},{1}}, to_apply=add")
    outs = _run(text, 2, timeout=20)
    np.testing.assert_array_equal(outs[0][0], cm.device_input(0) + cm.device_input(1))


def test_a_participant_that_never_arrives_times_out_naming_the_collective():
    text = _branchy("  ROOT y = f32[8] all-reduce(x), replica_groups={}, to_apply=add",
                    root="a = f32[8] negate(c)")
    start = time.monotonic()
    with pytest.raises(CollectiveError, match=r"all-reduce %y on device 0: timed out after 1 s "
                                              r"waiting for devices \[1\]"):
        _run(text, 2, timeout=1.0)
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("group", [(0, 1), (1, 0)])
def test_a_timeout_names_the_device_that_never_arrived_whatever_the_group_order(group):
    # device 0 arrives alone; the slots are kept by device id, the group may list 1 first
    comm = InProcessCommunicator(timeout=0.2)
    call = CollectiveCall("all-reduce %x", group, group.index(0), 0)
    with pytest.raises(CollectiveError, match=r"waiting for devices \[1\] to arrive"):
        comm.exchange(call, [np.zeros(2)], lambda m: m)

def test_participants_that_disagree_all_fail_with_both_sides_named():
    text = _branchy("  ROOT y = f32[8] all-reduce(x), replica_groups={}, to_apply=add")
    start = time.monotonic()
    with pytest.raises(CollectiveError, match=r"disagree at all-reduce %(a|y).*all-reduce %y "
                                              r"on \[\('float32', \(8,\)\)\]"):
        _run(text, 2, timeout=30.0)
    assert time.monotonic() - start < 10


def test_a_failing_participant_ends_the_others_without_waiting_for_the_timeout():
    comm = InProcessCommunicator(timeout=30)
    waited = []

    def run_one(d):
        if d == 1:
            time.sleep(0.2)
            raise ValueError("device 1 broke")
        start = time.monotonic()
        try:
            comm.exchange(CollectiveCall("all-reduce %x", (0, 1), 0, 0), [np.zeros(2)],
                          lambda m: m)
        finally:
            waited.append(time.monotonic() - start)
    with pytest.raises(ValueError, match="device 1 broke"):
        run_participants(run_one, 2, comm)
    assert waited and waited[0] < 5
    assert threading.active_count() < 50


def test_per_device_arguments_are_checked():
    text = cm.module(", replica_count=2", "  ROOT a = f32[8] all-reduce(p), replica_groups={}, "
                                          "to_apply=add")
    with pytest.raises(InvalidArgumentError, match="one argument list per participant, got 1"):
        xlapy.run_hlo(text, [[cm.device_input(0)]])
    with pytest.raises(InvalidArgumentError, match=r"device 1: argument 0 \(p\)"):
        xlapy.run_hlo(text, [[cm.device_input(0)], [np.zeros(3, np.float32)]])


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_generic_async_forms(backend):
    body = """  rss = ((f32[8]), f32[4], s32[]) reduce-scatter-start(p), replica_groups={}, dimensions={0}, to_apply=add
  rs = f32[4] reduce-scatter-done(rss)
  aas = ((f32[8]), f32[8], s32[]) all-to-all-start(p), replica_groups={{1,0}}, dimensions={0}
  aa = f32[8] all-to-all-done(aas)
  as = ((f32[8]), f32[8], s32[]) async-start(p), calls=wrapped
  ad = f32[8] async-done(as)
  ROOT t = (f32[4], f32[8], f32[8]) tuple(rs, aa, ad)"""
    wrapped = """wrapped {
  x = f32[8] parameter(0)
  ROOT y = f32[8] all-reduce(x), replica_groups={}, to_apply=add
}
"""
    text = cm.module(", replica_count=2", body).replace("ENTRY", wrapped + "\nENTRY")
    with debug_options(xla_force_host_platform_device_count=2):
        outs = _run(text, 2, backend=backend)
    xs = [cm.device_input(d) for d in range(2)]
    for d in range(2):
        np.testing.assert_array_equal(outs[d][0], cm.reduce_scatter(xs, [[0, 1]], d))
        np.testing.assert_array_equal(outs[d][1], cm.all_to_all(xs, [[1, 0]], d))
        np.testing.assert_array_equal(outs[d][2], xs[0] + xs[1])


def test_a_timeout_given_to_run_hlo_holds_for_that_run_only(monkeypatch):
    # process 0 of 2, one device each: the process's communicator is shared by every run
    from xlapy.client.devices import PROCESS
    comm = InProcessCommunicator(timeout=60)
    monkeypatch.setattr(PROCESS, "index", 0)
    monkeypatch.setattr(PROCESS, "count", 2)
    monkeypatch.setattr(PROCESS, "communicator", comm)
    text = cm.module(", replica_count=2", "  ROOT r = u32[] replica-id()")
    assert [int(o[0]) for o in xlapy.run_hlo(text, [[cm.device_input(0)]], timeout=5)] == [0]
    assert comm.timeout == 60


def test_participants_match_ops_by_place_not_by_instruction_name():
    # Names come from a per-process counter (or from whichever process filled the disk
    # cache), so two processes running one program may name its ops differently.
    from xlapy.backends.interpreter.collective import _op_key
    from xlapy.hlo import parse_module
    text = _branchy("  ROOT y = f32[8] all-reduce(x), replica_groups={}, to_apply=add")
    renamed = text.replace("ROOT y = ", "ROOT y7 = ").replace("ROOT a = ", "ROOT a9 = ")
    keys = []
    for t in (text, renamed):
        m = parse_module(t)
        keys.append([_op_key(i) for c in m.computations for i in c.instructions
                     if i.opcode == "all-reduce"])
    assert keys[0] == keys[1] == ["all-reduce #0", "all-reduce #1"]
