"""``tf.distribute.MirroredStrategy`` over 2-4 CPU devices of this process
(``--xla_force_host_platform_device_count``): compiled steps with all-reduces inside run as
one program with ``replica_count=N``, compiled once; data-parallel Keras training and the
Horovod pattern give the weights of one device trained on the global batch; datasets,
``reduce``, ``merge_call`` and mirrored variables behave as in TF; failures end every
replica with an error."""
from __future__ import annotations

import time

import numpy as np
import pytest

import tf_distribute_model as tdm
import xlapy.tf as tf
from xlapy.config import debug_options
from xlapy.errors import CollectiveError, InvalidArgumentError


@pytest.fixture(params=[2, 4])
def devices(request):
    with debug_options(xla_force_host_platform_device_count=request.param):
        yield request.param


@pytest.fixture(scope="module")
def reference():
    return tdm.reference_weights()


def _assert_weights(model, reference):
    for got, want in zip(model.get_weights(), reference):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    strategy = model.distribute_strategy
    for v in model.trainable_variables + model.optimizer.variables:
        copies = strategy.experimental_local_results(v)
        assert len(copies) == strategy.num_replicas_in_sync
        for c in copies:
            np.testing.assert_array_equal(np.asarray(c), v.numpy())


def test_compiled_step_all_reduces_inside_one_program(devices):
    strategy = tf.distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == devices

    @tf.function(jit_compile=True)
    def step(x):
        ctx = tf.distribute.get_replica_context()
        rid = tf.cast(ctx.replica_id_in_sync_group, tf.float32)
        return (ctx.all_reduce(tf.distribute.ReduceOp.SUM, x * (rid + 1.0)),
                ctx.all_reduce("MEAN", {"m": x}), rid)

    x = np.arange(devices * 6, dtype=np.float32).reshape(devices * 2, 3)
    dist = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensors(x))
    (shards,) = list(dist)
    total, mean, rid = strategy.run(step, args=(shards,))
    parts = np.split(x, devices)
    want_sum = sum(p * (i + 1) for i, p in enumerate(parts))
    for r, (t, m, i) in enumerate(zip(*(strategy.experimental_local_results(v)
                                        for v in (total, mean["m"], rid)))):
        np.testing.assert_allclose(np.asarray(t), want_sum, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(m), np.mean(parts, 0), rtol=1e-6)
        assert float(i) == r
    info = step.cache_info()
    assert info.misses == 1 and info.hits == devices - 1
    step(parts[0])                              # outside the strategy: another program
    assert step.cache_info().reasons[-1] == f"replica count changed {devices} -> 1"
    hlo = strategy.run(lambda s: step.experimental_get_compiler_ir(s)(stage="hlo"),
                       args=(shards,))
    text = strategy.experimental_local_results(hlo)[0]
    assert f"replica_count={devices}" in text
    groups = "{{" + ",".join(map(str, range(devices))) + "}}"
    assert text.count(f"replica_groups={groups}") == 2 and "replica-id()" in text
    np.testing.assert_allclose(np.asarray(strategy.reduce("SUM", total, axis=None)),
                               devices * want_sum, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(strategy.reduce("MEAN", rid, axis=None)),
                               (devices - 1) / 2)


def test_keras_fit_data_parallel_matches_one_device(devices, reference):
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        model = tdm.make_model()
    x, y = tdm.data()
    history = model.fit(x, y, batch_size=tdm.GLOBAL_BATCH, epochs=1, shuffle=False, verbose=0)
    _assert_weights(model, reference)
    assert model.train_function.cache_info().misses == 1
    one = tdm.make_model()
    one_history = one.fit(x, y, batch_size=tdm.GLOBAL_BATCH, epochs=1, shuffle=False,
                          verbose=0)
    for key in ("loss", "accuracy"):           # the metrics of the global batches
        np.testing.assert_allclose(history.history[key], one_history.history[key],
                                   rtol=1e-5)
    with pytest.raises(InvalidArgumentError, match="cannot be split evenly"):
        model.fit(x[:30], y[:30], batch_size=devices * 4 + 1, epochs=1, verbose=0)


def test_horovod_pattern_and_eager_steps(reference):
    with debug_options(xla_force_host_platform_device_count=4):
        strategy = tf.distribute.MirroredStrategy()
        with strategy.scope():
            model = tdm.make_model(jit_compile=False)
        variables = model.trainable_variables

        @tf.function(jit_compile=True)
        def grads_of(x, y):
            with tf.GradientTape() as tape:
                loss = model.compute_loss(x, y, model(x, training=True)) / 4.0
            return tape.gradient(loss, variables)

        def train_step(x, y):       # the collective and the apply are not compiled
            grads = tf.distribute.get_replica_context().all_reduce("SUM", grads_of(x, y))
            model.optimizer.apply_gradients(zip(grads, variables))

        x, y = tdm.data()
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(tdm.GLOBAL_BATCH)
        for bx, by in strategy.experimental_distribute_dataset(ds):
            strategy.run(train_step, args=(bx, by))
        _assert_weights(model, reference)
        assert grads_of.cache_info().misses == 1


def test_datasets_values_and_merge_call():
    with debug_options(xla_force_host_platform_device_count=2):
        strategy = tf.distribute.MirroredStrategy()

        def dataset_fn(ctx):
            assert ctx.num_replicas_in_sync == 2 and ctx.get_per_replica_batch_size(8) == 4
            return tf.data.Dataset.range(16).batch(ctx.get_per_replica_batch_size(8))
        batches = [strategy.experimental_local_results(b)
                   for b in strategy.distribute_datasets_from_function(dataset_fn)]
        assert [[list(np.asarray(v)) for v in b] for b in batches] == \
            [[[0, 1, 2, 3], [4, 5, 6, 7]], [[8, 9, 10, 11], [12, 13, 14, 15]]]
        calls = []

        def merge_fn(s, value):
            calls.append(s)
            return s.reduce("SUM", value, axis=0)

        def replica_fn(v):
            return tf.distribute.get_replica_context().merge_call(merge_fn, args=(v,))
        values = strategy.experimental_distribute_values_from_function(
            lambda ctx: tf.constant([1.0, 2.0]) * (ctx.replica_id_in_sync_group + 1))
        out = strategy.experimental_local_results(strategy.run(replica_fn, args=(values,)))
        assert calls == [strategy] and [float(o) for o in out] == [9.0, 9.0]
        with strategy.scope():
            v = tf.Variable(tf.zeros([2]))
            assert tf.distribute.in_cross_replica_context()
            assert tf.distribute.get_strategy() is strategy
        strategy.run(lambda: v.assign_add(tf.ones([2])))
        assert [list(np.asarray(c)) for c in strategy.experimental_local_results(v)] == \
            [[1.0, 1.0], [1.0, 1.0]]
        v.assign([5.0, 6.0])                        # cross-replica: every copy
        assert [list(np.asarray(c)) for c in strategy.experimental_local_results(v)] == \
            [[5.0, 6.0], [5.0, 6.0]]
        np.testing.assert_allclose(np.asarray(strategy.reduce("MEAN", values, axis=0)), 2.25)


def test_failures_end_every_replica_with_an_error():
    with debug_options(xla_force_host_platform_device_count=2):
        strategy = tf.distribute.MirroredStrategy()

        @tf.function(jit_compile=True)
        def reduce(x):
            return tf.distribute.get_replica_context().all_reduce("SUM", x)

        def step(x):
            if int(tf.distribute.get_replica_context().replica_id_in_sync_group) == 1:
                raise RuntimeError("replica 1 fails mid-step")
            return reduce(x)
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="replica 1 fails mid-step"):
            strategy.run(step, args=(tf.ones([3]),))
        assert time.monotonic() - start < 30
        # a global batch of 7 rows: shards of 4 and 3 rows, as TF splits it
        (batch,) = list(strategy.experimental_distribute_dataset(
            tf.data.Dataset.from_tensors(np.ones((7, 2), np.float32))))
        assert [np.shape(v) for v in strategy.experimental_local_results(batch)] == \
            [(4, 2), (3, 2)]
        column_sums = strategy.run(lambda v: tf.distribute.get_replica_context().all_reduce(
            "SUM", tf.reduce_sum(v, 0)), args=(batch,))
        assert [list(np.asarray(c)) for c in strategy.experimental_local_results(
            column_sums)] == [[7.0, 7.0], [7.0, 7.0]]
        with pytest.raises(CollectiveError, match="participants disagree at all-reduce "
                           "%replica-all-reduce.1"):
            strategy.run(reduce, args=(batch,))        # f32[4,2] against f32[3,2]
        with pytest.raises(InvalidArgumentError, match="inside a function being compiled"):
            tf.function(lambda: strategy.run(reduce, args=(tf.ones([2]),)),
                        jit_compile=True)()
        with pytest.raises(InvalidArgumentError, match="2 CPU device"):
            tf.distribute.MirroredStrategy(devices=["/cpu:0", "/cpu:2"])
        with pytest.raises(InvalidArgumentError, match="SUM.*not per-replica"):
            strategy.reduce("SUM", tf.ones([2]), axis=None)


def test_logical_devices_are_the_process_devices(devices):
    names = [d.name for d in tf.config.list_logical_devices("CPU")]
    assert names == [f"/device:CPU:{i}" for i in range(devices)]
    strategy = tf.distribute.MirroredStrategy(names[1:])
    assert strategy.num_replicas_in_sync == devices - 1
    assert tf.config.list_logical_devices("GPU") == []


def test_batch_norm_moving_statistics_are_averaged_over_replicas():
    from xlapy import keras

    def model():
        keras.backend.set_random_seed(3)
        m = keras.Sequential([keras.layers.Dense(6, input_shape=(tdm.FEATURES,)),
                              keras.layers.BatchNormalization(momentum=0.5),
                              keras.layers.Dense(tdm.CLASSES)])
        m.compile(optimizer="sgd", jit_compile=True,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m
    x, y = tdm.data()
    one = model()
    one.train_on_batch(x[:16], y[:16])
    with debug_options(xla_force_host_platform_device_count=2):
        strategy = tf.distribute.MirroredStrategy()
        with strategy.scope():
            two = model()
        two.train_on_batch(x[:16], y[:16])
        bn = two.layers[1]
        moving_mean = [v for v in bn.non_trainable_variables if "mean" in v.name][0]
        copies = strategy.experimental_local_results(moving_mean)
        np.testing.assert_array_equal(np.asarray(copies[0]), np.asarray(copies[1]))
    # the mean of the shards' means is the global batch's mean
    want = [v for v in one.layers[1].non_trainable_variables if "mean" in v.name][0]
    np.testing.assert_allclose(moving_mean.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_a_model_made_outside_the_scope_is_refused():
    with debug_options(xla_force_host_platform_device_count=2):
        strategy = tf.distribute.MirroredStrategy()
        model = tdm.make_model()
        with strategy.scope():
            model.compile(optimizer="adam", loss="mse", jit_compile=True)
        x, y = tdm.data()
        with pytest.raises(InvalidArgumentError, match="not created in the scope"):
            model.fit(x[:16], y[:16].astype(np.float32)[:, None] * np.ones(tdm.CLASSES),
                      batch_size=8, verbose=0)


def test_keras_fit_op_by_op_data_parallel(reference):
    with debug_options(xla_force_host_platform_device_count=2):
        strategy = tf.distribute.MirroredStrategy()
        with strategy.scope():
            model = tdm.make_model(jit_compile=False)     # eager all-reduces per replica
        x, y = tdm.data()
        model.fit(x, y, batch_size=tdm.GLOBAL_BATCH, epochs=1, shuffle=False, verbose=0)
        _assert_weights(model, reference)


_ON_XLA = """
import sys
import numpy as np
import jax
import jax.extend.backend as jeb
from jax._src.lib import xla_client as xc
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
text, data = open(sys.argv[1]).read(), np.load(sys.argv[2])
n = int(data["n"])
comp = xc.XlaComputation(xc.hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto())
backend = jeb.get_backend("cpu")
devs = backend.devices()[:n]
options = xc.CompileOptions()
options.num_replicas = n
options.device_assignment = xc.DeviceAssignment.create(np.arange(n).reshape(n, 1))
exe = backend.compile_and_load(xc._xla.mlir.xla_computation_to_mlir_module(comp), devs,
                               options)
mesh = NamedSharding(Mesh(np.array(devs), ("r",)), P("r"))
args = []
for k in range(int(data["params"])):
    parts = [data[f"a{k}_{r}"] for r in range(n)]
    shape = (n * parts[0].shape[0],) + parts[0].shape[1:] if parts[0].ndim else (n,)
    parts = parts if parts[0].ndim else [p.reshape(1) for p in parts]
    args.append(jax.make_array_from_single_device_arrays(
        shape, mesh, [jax.device_put(p, d) for p, d in zip(parts, devs)]))
outs = exe.execute_sharded(args).disassemble_into_single_device_arrays()
np.savez(sys.argv[3], **{f"o{i}_{r}": np.asarray(a) for i, o in enumerate(outs)
                         for r, a in enumerate(o)})
"""


@pytest.mark.peers
def test_the_replica_program_runs_on_xla_with_the_same_results(tmp_path):
    """The module a replicated step compiles to (replica_count=2, channel ids, replica-id)
    is accepted by XLA's own parser and gives XLA:CPU's results on 2 replicas."""
    import os
    import subprocess
    import sys
    pytest.importorskip("jax")
    n = 2
    with debug_options(xla_force_host_platform_device_count=n):
        strategy = tf.distribute.MirroredStrategy()

        @tf.function(jit_compile=True)
        def step(w, x, y):
            with tf.GradientTape() as tape:
                tape.watch(w)
                loss = tf.reduce_mean((tf.matmul(x, w) - y) ** 2)
            ctx = tf.distribute.get_replica_context()
            return (ctx.all_reduce("MEAN", tape.gradient(loss, w)),
                    ctx.all_reduce("SUM", loss), ctx.replica_id_in_sync_group)
        rng = np.random.default_rng(1)
        w = rng.normal(size=(5, 3)).astype(np.float32)
        xs = [rng.normal(size=(4, 5)).astype(np.float32) for _ in range(n)]
        ys = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(n)]
        per = strategy.experimental_distribute_values_from_function(
            lambda ctx: (xs[ctx.replica_id_in_sync_group], ys[ctx.replica_id_in_sync_group]))
        ours = strategy.run(lambda xy: step(w, *xy), args=(per,))
        text = strategy.experimental_local_results(strategy.run(
            lambda xy: step.experimental_get_compiler_ir(w, *xy)(stage="hlo"), args=(per,)))[0]
    assert "replica_count=2" in text and "channel_id=2" in text
    (tmp_path / "m.hlo").write_text(text)
    arrays = {"n": n, "params": 3}
    for r in range(n):
        arrays.update({f"a0_{r}": w, f"a1_{r}": xs[r], f"a2_{r}": ys[r]})
    np.savez(tmp_path / "in.npz", **arrays)
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n}")
    proc = subprocess.run([sys.executable, "-c", _ON_XLA, str(tmp_path / "m.hlo"),
                           str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = np.load(tmp_path / "out.npz")
    for i, value in enumerate(ours):
        for r, mine in enumerate(strategy.experimental_local_results(value)):
            xla = got[f"o{i}_{r}"]
            np.testing.assert_allclose(np.asarray(mine), xla.reshape(np.shape(mine)),
                                       rtol=1e-5, atol=1e-6)


def test_strategy_run_inside_a_graph_mode_tf_function_runs_every_call():
    """``@tf.function def run_fn(): return strategy.run(step_fn)`` (the seed): the graph
    holds strategy.run as one node, so every call runs every replica's step again; a
    distributed batch passed to a tf.function is its arrays."""
    with debug_options(xla_force_host_platform_device_count=2):
        strategy = tf.distribute.MirroredStrategy()
        with strategy.scope():
            v = tf.Variable(0.0)

        @tf.function(jit_compile=True)
        def step_fn(x):
            v.assign_add(tf.reduce_sum(x))
            return tf.distribute.get_replica_context().all_reduce("SUM", x * 2.0)

        @tf.function
        def run_fn(batch):
            return strategy.reduce("SUM", strategy.run(step_fn, args=(batch,)), axis=None)
        ds = tf.data.Dataset.from_tensor_slices(np.arange(12, dtype=np.float32)).batch(4)
        totals = [np.asarray(run_fn(b)).tolist()
                  for b in strategy.experimental_distribute_dataset(ds)]
        # replica r gets rows 2r, 2r+1 of each batch; all-reduced, then summed over 2 replicas
        assert totals == [[8.0, 16.0], [40.0, 48.0], [72.0, 80.0]]
        assert [float(c) for c in strategy.experimental_local_results(v)] == \
            [0 + 1 + 4 + 5 + 8 + 9, 2 + 3 + 6 + 7 + 10 + 11]
        assert step_fn.cache_info().misses == 1
