"""Mirrored variables with ``aggregation=tf.VariableAggregation...``: what the replicas assign
inside ``strategy.run`` is combined over them (SUM, MEAN, ONLY_FIRST_REPLICA) and every copy
gets the result, compiled (an all-reduce in the step) and eagerly, as in TF; NONE keeps each
replica's own write."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy.tf as tf
from xlapy.config import debug_options
from xlapy.errors import InvalidArgumentError

AGG = tf.VariableAggregation


@pytest.fixture(params=[2, 3])
def devices(request):
    with debug_options(xla_force_host_platform_device_count=request.param):
        yield request.param


def _make(strategy):
    with strategy.scope():
        return {how: tf.Variable(np.full(3, 10.0, np.float32), aggregation=how)
                for how in (AGG.SUM, AGG.MEAN, AGG.ONLY_FIRST_REPLICA, AGG.NONE)}


def _copies(strategy, v):
    return [np.asarray(c) for c in strategy.experimental_local_results(v)]


@pytest.mark.parametrize("compiled", [True, False])
def test_assign_combines_the_replicas_values(devices, compiled):
    strategy = tf.distribute.MirroredStrategy()
    vs = _make(strategy)
    assert vs[AGG.SUM].aggregation is AGG.SUM

    def step(x):
        rid = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
        for v in vs.values():
            v.assign(x * (rid + 1.0))
        return rid

    fn = tf.function(step, jit_compile=True) if compiled else step
    x = np.array([1.0, 2.0, 3.0], np.float32)
    strategy.run(fn, args=(x,))
    mine = [x * (r + 1) for r in range(devices)]
    want = {AGG.SUM: sum(mine), AGG.MEAN: sum(mine) / devices, AGG.ONLY_FIRST_REPLICA: mine[0]}
    for how, total in want.items():
        for c in _copies(strategy, vs[how]):
            np.testing.assert_allclose(c, total, rtol=1e-6)
    for r, c in enumerate(_copies(strategy, vs[AGG.NONE])):      # each replica's own
        np.testing.assert_allclose(c, mine[r], rtol=1e-6)
    if compiled:
        assert fn.cache_info().misses == 1


@pytest.mark.parametrize("compiled", [True, False])
def test_assign_add_and_sub_combine_the_deltas(devices, compiled):
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        total = tf.Variable(np.zeros(2, np.float32), aggregation="sum")
        mean = tf.Variable(np.ones(2, np.float32), aggregation=AGG.MEAN)
        count = tf.Variable(np.int32(100), aggregation=AGG.MEAN)
        first = tf.Variable(np.zeros(2, np.float32), aggregation=3)

    def step():
        rid = tf.distribute.get_replica_context().replica_id_in_sync_group
        d = tf.cast(rid, tf.float32) + 1.0
        total.assign_add(tf.stack([d, 2.0 * d]))
        mean.assign_sub(tf.stack([d, d]))
        count.assign_add(rid)
        first.assign_add(tf.stack([d, -d]))
        return rid

    fn = tf.function(step, jit_compile=True) if compiled else step
    for _ in range(2):
        strategy.run(fn)
    s = sum(range(1, devices + 1))
    for c in _copies(strategy, total):
        np.testing.assert_allclose(c, [2 * s, 4 * s], rtol=1e-6)
    for c in _copies(strategy, mean):
        np.testing.assert_allclose(c, 1.0 - 2 * s / devices, rtol=1e-6)
    for c in _copies(strategy, count):                  # integer mean: floor division
        assert int(c) == 100 + 2 * (sum(range(devices)) // devices)
    for c in _copies(strategy, first):
        np.testing.assert_allclose(c, [2.0, -2.0])


def test_cross_replica_assign_and_one_replica_are_plain(devices):
    strategy = tf.distribute.MirroredStrategy()
    vs = _make(strategy)
    vs[AGG.SUM].assign(np.full(3, 5.0, np.float32))        # cross-replica: no combining
    assert all(np.array_equal(c, np.full(3, 5.0)) for c in _copies(strategy, vs[AGG.SUM]))
    with debug_options(xla_force_host_platform_device_count=1):
        one = tf.distribute.MirroredStrategy()
        with one.scope():
            v = tf.Variable(1.0, aggregation=AGG.SUM)
        one.run(lambda: v.assign(7.0))
        assert float(v.numpy()) == 7.0


def test_an_unknown_aggregation_is_refused():
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        with pytest.raises(InvalidArgumentError, match="unknown variable aggregation 'median'"):
            tf.Variable(1.0, aggregation="median")
    v = tf.Variable(1.0, aggregation=AGG.MEAN)              # outside a strategy: kept as is
    assert v.aggregation is AGG.MEAN
