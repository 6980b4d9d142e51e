"""``tf.function`` graph mode (record once, replay) and auto-clustering of its graph."""
from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

import xlapy.tf as tf
from xlapy.frontend.tf_function import _AUTO_JIT, set_auto_jit

X = np.linspace(-1.0, 1.0, 8).astype(np.float32)


@pytest.fixture(autouse=True)
def _no_auto_jit(monkeypatch):
    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    saved = _AUTO_JIT[0]                    # the process-wide setting, restored after
    tf.config.optimizer.set_jit(False)
    yield
    set_auto_jit(saved)


def _two_groups(calls):
    def f(x):
        calls.append(1)
        a = tf.sin(x) * 2.0 + 1.0
        b = a / (tf.reduce_sum(a * a) + 1.0)
        ids = tf.unique(tf.cast(b > tf.reduce_mean(b), tf.int32)).idx   # between the groups
        c = tf.tanh(b + tf.cast(ids, tf.float32)) * 3.0
        return tf.reduce_sum(c * c) - tf.reduce_max(c)
    return f


def _expected(x):
    a = np.sin(x) * 2 + 1
    b = a / (np.sum(a * a) + 1)
    _, first, inv = np.unique((b > b.mean()).astype(np.int32), return_index=True,
                              return_inverse=True)
    rank = np.argsort(np.argsort(first))[inv]
    c = np.tanh(b + rank) * 3
    return np.sum(c * c) - np.max(c)


def test_the_body_runs_once_per_signature_and_the_graph_replays():
    calls = []
    f = tf.function(_two_groups(calls))
    for x in (X, -X, X * 0.5):
        np.testing.assert_allclose(float(f(x)), _expected(x), rtol=1e-5)
    assert len(calls) == 1
    f(np.ones(3, np.float32))                          # a new signature: recorded again
    assert len(calls) == 2


def test_variables_and_prints_run_on_every_replay(capsys):
    counter = tf.Variable(0.0)

    @tf.function
    def step(x):
        counter.assign_add(tf.reduce_sum(x))
        tf.print("total", counter, output_stream=sys.stdout)
        return counter * 2

    outs = [float(step(np.ones(2, np.float32))) for _ in range(3)]
    assert outs == [4.0, 8.0, 12.0] and float(counter.numpy()) == 6.0
    assert capsys.readouterr().out == "total 2.\ntotal 4.\ntotal 6.\n"


def test_python_control_flow_on_a_tensor_runs_op_by_op(caplog):
    @tf.function
    def branchy(x):
        return x * 2 if tf.reduce_sum(x) > 0 else -x

    with caplog.at_level(logging.INFO, logger="xlapy.tf"):
        np.testing.assert_allclose(np.asarray(branchy(X + 1)), (X + 1) * 2)
        np.testing.assert_allclose(np.asarray(branchy(X - 1)), -(X - 1))
    assert "converting to a Python bool" in next(iter(branchy.fallbacks.values()))
    assert any("cannot be recorded as a graph" in r.getMessage() for r in caplog.records)


def test_autoclustering_makes_two_clusters_around_unique(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=2 --tf_xla_clustering_debug")
    monkeypatch.setenv("TF_DUMP_GRAPH_PREFIX", str(tmp_path))
    calls = []
    f = tf.function(_two_groups(calls))
    with caplog.at_level(logging.INFO, logger="xlapy.tf"):
        for x in (X, -X, X * 0.5):
            np.testing.assert_allclose(float(f(x)), _expected(x), rtol=1e-5)
    c = f.clustering(X)
    assert list(c.members) == ["cluster_0", "cluster_1"]
    left_out = {c.graph.nodes[n].op for n in c.reasons}
    assert left_out == {"_Arg", "_Retval", "Unique"}
    assert any("auto-clustering: 2 cluster(s)" in r.getMessage() for r in caplog.records)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["mark_for_compilation.f.after.txt", "mark_for_compilation.f.before.txt",
                     "mark_for_compilation.f.summary.txt"]
    assert '_XlaCluster="cluster_1"' in (tmp_path / names[0]).read_text()
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=-1")    # off, even with set_jit
    tf.config.optimizer.set_jit(True)
    assert tf.config.optimizer.get_jit() == ""


def test_a_cluster_assigns_a_variable_and_later_ops_see_it():
    v = tf.Variable(np.zeros(8, np.float32))
    tf.config.optimizer.set_jit(True)

    @tf.function
    def update(x):
        new = tf.exp(x) * 2.0 - 1.0
        v.assign(tf.tanh(new) + v)
        ids = tf.unique(tf.cast(v > 0.5, tf.int32)).idx
        return tf.reduce_sum(tf.cast(ids, tf.float32) * v * 2.0 + 1.0)

    want_v = np.zeros(8, np.float32)
    for _ in range(3):
        got = float(update(X))
        want_v = np.tanh(np.exp(X) * 2 - 1) + want_v
        _, first, inv = np.unique((want_v > 0.5).astype(np.int32), return_index=True,
                                  return_inverse=True)
        rank = np.argsort(np.argsort(first))[inv]
        np.testing.assert_allclose(got, np.sum(rank * want_v * 2 + 1), rtol=1e-5)
    np.testing.assert_allclose(v.numpy(), want_v, rtol=1e-6)
    assert update.clustering(X) is not None


def test_tf_cond_on_a_tensor_runs_op_by_op_in_graph_mode_and_compiles_whole_when_clustering():
    @tf.function
    def f(x):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: -x)

    for x in (X + 1, X - 1):
        want = x * 2 if x.sum() > 0 else -x
        np.testing.assert_allclose(np.asarray(f(x)), want)
    assert f.fallbacks                        # not recorded: the predicate is a tensor
    tf.config.optimizer.set_jit(True)
    np.testing.assert_allclose(np.asarray(f(X - 1)), -(X - 1))
    assert f.cache_info().misses == 1         # compiles whole: one cluster
