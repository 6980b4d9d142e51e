"""The CPU backend runs a module with N participants as N executions of one compiled program
on N in-process devices (``--xla_force_host_platform_device_count``), its collectives through
the shared-memory communicator: the same answers as the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import collective_model as cm
import xlapy
from xlapy.config import debug_options
from xlapy.errors import CollectiveError, InvalidArgumentError

ALL = """  ar = f32[8] all-reduce(p), replica_groups={{3,1},{0,2}}, to_apply=add
  ag = f32[16] all-gather(p), replica_groups=[2,2]<=[2,2]T(1,0), dimensions={0}
  rs = f32[4] reduce-scatter(p), replica_groups={{1,0},{3,2}}, dimensions={0}, to_apply=add
  aa = f32[8] all-to-all(p), replica_groups=[1,4]<=[4], dimensions={0}
  cp = f32[8] collective-permute(p), source_target_pairs={{0,1},{1,2},{2,0}}
  cb = f32[8] collective-broadcast(p), replica_groups={{2,0},{3,1}}
  two = f32[] constant(2)
  b = f32[8] broadcast(two), dimensions={}
  m = f32[8] multiply(ar, b)
  ar2 = f32[8] all-reduce(m), replica_groups={}, to_apply=add
  id = u32[] replica-id()
  ROOT t = (f32[8], f32[16], f32[4], f32[8], f32[8], f32[8], f32[8], u32[]) tuple(ar, ag, rs, aa, cp, cb, ar2, id)"""


def _args(n):
    return [[cm.device_input(d)] for d in range(n)]


def _assert_same_outputs(got, expected, n):
    """Every device's outputs equal, with nothing missing on either side."""
    assert len(got) == len(expected) == n
    for g, e in zip(got, expected):
        assert len(g) == len(e)
        for a, b in zip(g, e):
            np.testing.assert_array_equal(a, b)


def test_cpu_devices_match_the_interpreter():
    text = cm.module(", replica_count=4", ALL)
    expected = xlapy.run_hlo(text, _args(4), backend="interpreter")
    with debug_options(xla_force_host_platform_device_count=4):
        assert xlapy.local_device_count() == 4 and len(xlapy.devices()) == 4
        for _ in range(2):                  # the second run reuses the device instances
            got = xlapy.run_hlo(text, _args(4), backend="cpu")
            _assert_same_outputs(got, expected, 4)


def test_cpu_partitions_with_channel_ids_match_the_interpreter():
    body = """  a = f32[8] all-reduce(p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=add
  q = u32[] partition-id()
  c = f32[8] collective-permute(a), channel_id=2, source_target_pairs={{0,1},{1,0}}
  ROOT t = (f32[8], f32[8], u32[]) tuple(a, c, q)"""
    text = cm.module(", num_partitions=2", body)
    expected = xlapy.run_hlo(text, _args(2), backend="interpreter")
    with debug_options(xla_force_host_platform_device_count=2):
        got = xlapy.run_hlo(text, _args(2), backend="cpu")
    _assert_same_outputs(got, expected, 2)
    assert [int(g[2]) for g in got] == [0, 1]


def test_cpu_needs_a_device_per_participant():
    text = cm.module(", replica_count=2", "  ROOT a = f32[8] all-reduce(p), replica_groups={}, "
                                          "to_apply=add")
    with pytest.raises(InvalidArgumentError, match="device_count=2"):
        xlapy.run_hlo(text, _args(2), backend="cpu")


def test_cpu_disagreement_ends_every_device():
    text = """HloModule m, replica_count=2
""" + cm.ADD + """
b0 {
  x = f32[8] parameter(0)
  ROOT y = f32[8] all-gather(x), replica_groups={{0},{1}}, dimensions={0}
}

b1 {
  x = f32[8] parameter(0)
  ROOT y = f32[8] all-reduce(x), replica_groups={{0},{1}}, to_apply=add
}

ENTRY e {
  p = f32[8] parameter(0)
  r = u32[] replica-id()
  i = s32[] convert(r)
  c = f32[8] conditional(i, p, p), branch_computations={b0, b1}
  ROOT a = f32[4] reduce-scatter(c), replica_groups={{1,0}}, dimensions={0}, to_apply=add
}
"""
    expected = xlapy.run_hlo(text, _args(2), backend="interpreter")
    with debug_options(xla_force_host_platform_device_count=2):
        got = xlapy.run_hlo(text, _args(2), backend="cpu")
    _assert_same_outputs(got, expected, 2)
    bad = text.replace("ROOT y = f32[8] all-gather(x), replica_groups={{0},{1}}, dimensions={0}",
                       "ROOT y = f32[8] all-reduce(x), replica_groups={}, to_apply=add")
    with debug_options(xla_force_host_platform_device_count=2):
        with pytest.raises(CollectiveError, match="disagree at"):
            xlapy.run_hlo(bad, _args(2), backend="cpu", timeout=10)


def test_an_all_reduce_of_a_constant_is_not_folded_to_one_device():
    text = cm.module(", replica_count=2", """  c = f32[8] constant({1, 2, 3, 4, 5, 6, 7, 8})
  a = f32[8] all-reduce(c), replica_groups={}, to_apply=add
  ROOT s = f32[8] add(a, p)""")
    with debug_options(xla_force_host_platform_device_count=2):
        got = xlapy.run_hlo(text, _args(2), backend="cpu")
    for d in range(2):
        np.testing.assert_array_equal(got[d][0], 2 * np.arange(1, 9) + cm.device_input(d))
