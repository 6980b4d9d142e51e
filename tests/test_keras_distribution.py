"""``xlapy.keras.distribution`` (Keras 3's API): ``ModelParallel`` with a ``LayoutMap`` shards
Dense and Embedding weights (and their optimizer slots) without changing the model, and
``fit(jit_compile=True)`` trains with one SPMD program per step to the same weights and loss
as one device; ``DataParallel``; the errors."""
from __future__ import annotations

import numpy as np
import pytest

from xlapy import keras
from xlapy.config import debug_options
from xlapy.errors import InvalidArgumentError, ShapeError
from xlapy.frontend.sharded_step import ShardedVariable
from xlapy.keras import distribution as dist


@pytest.fixture(autouse=True)
def _no_distribution_left():
    yield
    dist.set_distribution(None)


def _data(n=32):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 8)).astype(np.float32), \
        rng.standard_normal((n, 4)).astype(np.float32)


def _train(distribution, build, x, y, epochs=2):
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    dist.set_distribution(distribution)
    model = build()
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="mse",
                  jit_compile=True)
    hist = model.fit(x, y, batch_size=8, epochs=epochs, verbose=0, shuffle=False)
    dist.set_distribution(None)
    return model, hist.history["loss"]


def _mlp():
    return keras.Sequential([keras.layers.Dense(16, activation="tanh", input_shape=(8,)),
                             keras.layers.Dense(4)])


def _model_parallel(shape, names, batch):
    mesh = dist.DeviceMesh(shape, names)
    layout = dist.LayoutMap(mesh)
    layout["dense.*kernel"] = (None, "model")
    layout["dense.*bias"] = ("model",)
    return dist.ModelParallel(layout_map=layout, batch_dim_name=batch)


def _same_as_one_device(model, loss, x, y, build=_mlp):
    one, one_loss = _train(None, build, x, y)
    np.testing.assert_allclose(loss, one_loss, rtol=1e-5)
    for a, b in zip(model.get_weights(), one.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,names,batch", [((2,), ("model",), None),
                                               ((2, 2), ("batch", "model"), "batch"),
                                               ((1, 4), ("batch", "model"), "batch")],
                         ids=["2-model", "2x2-batch-model", "4-model"])
def test_model_parallel_mlp_trains_like_one_device(shape, names, batch):
    x, y = _data()
    model, loss = _train(_model_parallel(shape, names, batch), _mlp, x, y)
    _same_as_one_device(model, loss, x, y)
    kernel = model.layers[0].kernel
    split = shape[names.index("model")]
    assert isinstance(kernel, ShardedVariable)
    assert [p.shape for p in kernel._pieces] == [(8, 16 // split)] * int(np.prod(shape))
    assert kernel.nbytes_held == int(np.prod(shape)) * 8 * (16 // split) * 4   # a piece each
    slots = [v for v in model.optimizer.variables if isinstance(v, ShardedVariable)]
    assert len(slots) == 4                           # the momenta are split like the weights
    part = model.train_function.lower(x[:8], y[:8], None, np.ones(8, np.float32))
    shapes = {p.shape.to_text(False) for p in part.module.entry.parameters}
    assert f"f32[8,{16 // split}]" in shapes and "f32[8,16]" not in shapes


def test_data_parallel_splits_the_batch_and_replicates_the_weights():
    x, y = _data()
    model, loss = _train(dist.DataParallel(dist.DeviceMesh((4,), ("batch",))), _mlp, x, y)
    assert not any(isinstance(v, ShardedVariable) for v in model.weights)
    _same_as_one_device(model, loss, x, y)
    part = model.train_function.lower(x[:8], y[:8], None, np.ones(8, np.float32))
    assert "f32[2,8]" in {p.shape.to_text(False) for p in part.module.entry.parameters}


def _embedding_model():
    return keras.Sequential([keras.layers.Embedding(12, 8, input_length=3),
                             keras.layers.Flatten(), keras.layers.Dense(4)])


def test_embedding_table_split_by_vocabulary():
    mesh = dist.DeviceMesh((2,), ("model",))
    layout = dist.LayoutMap(mesh)
    layout["embedding.*embeddings"] = ("model", None)
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 12, (16, 3)).astype(np.int32)
    y = rng.standard_normal((16, 4)).astype(np.float32)
    model, loss = _train(dist.ModelParallel(layout_map=layout), _embedding_model, ids, y)
    table = model.layers[0].embeddings
    assert isinstance(table, ShardedVariable) and table._pieces[0].shape == (6, 8)
    _same_as_one_device(model, loss, ids, y, _embedding_model)


def test_cpu_backend_on_four_devices():
    x, y = _data(16)
    with debug_options(xla_force_host_platform_device_count=4):
        model, loss = _train(_model_parallel((2, 2), ("batch", "model"), "batch"), _mlp, x, y)
        assert model.train_function._backend_name() == "cpu"
    _same_as_one_device(model, loss, x, y)


def test_layout_map_lookup_and_errors():
    mesh = dist.DeviceMesh((2, 2), ("batch", "model"))
    layout = dist.LayoutMap(mesh)
    layout["dense/kernel"] = (None, "model")
    layout["dense.*"] = ("model",)
    assert layout["dense/kernel"].axes == (None, "model")          # the exact key first
    assert layout["dense/bias"].axes == ("model",)
    assert layout["conv/kernel"] is None
    layout["kernel"] = (None, None)
    with pytest.raises(InvalidArgumentError, match="matches several keys"):
        layout["dense_1/kernel"]
    with pytest.raises(InvalidArgumentError, match=r"axis 'heads' is not an axis of .*"
                                                   r"test_keras_distribution"):
        layout["x"] = ("heads",)
    with pytest.raises(InvalidArgumentError, match="needs 4 devices, got 3"):
        dist.DeviceMesh((2, 2), ("a", "b"), devices=[0, 1, 2])
    with pytest.raises(InvalidArgumentError, match="batch_dim_name 'data' is not an axis"):
        dist.ModelParallel(layout_map=layout, batch_dim_name="data")


def test_undivisible_or_misshapen_layouts_name_the_variable():
    mesh = dist.DeviceMesh((4,), ("model",))
    layout = dist.LayoutMap(mesh)
    layout["dense.*kernel"] = (None, "model")
    layout["dense.*bias"] = ("model", None)
    dist.set_distribution(dist.ModelParallel(layout_map=layout))
    keras.backend.clear_session()
    with pytest.raises(ShapeError, match=r"Variable 'dense/kernel' of shape \(8, 6\): .*splits "
                                         r"dimension 1 \(6\) 4 ways.*test_keras_distribution"):
        keras.Sequential([keras.layers.Dense(6, input_shape=(8,))])
    keras.backend.clear_session()
    with pytest.raises(InvalidArgumentError, match=r"layout \('model', None\) of variable "
                                                   r"'dense/bias' has 2 entries"):
        keras.Sequential([keras.layers.Dense(8, input_shape=(8,))])


def test_evaluate_and_predict_run_sharded_too():
    x, y = _data(16)
    model, _ = _train(_model_parallel((2, 2), ("batch", "model"), "batch"), _mlp, x, y,
                      epochs=1)
    one, _ = _train(None, _mlp, x, y, epochs=1)
    np.testing.assert_allclose(model.predict(x, batch_size=8, verbose=0),
                               one.predict(x, batch_size=8, verbose=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=8, verbose=0),
                               one.evaluate(x, y, batch_size=8, verbose=0), rtol=1e-5)
    assert model.predict_function.lower(x[:8]).num_partitions == 4
