"""xlapy.keras persistence: HDF5 weights (Keras 3's layout, TF2 Keras's and xlapy's
older one), ``model.save`` / ``load_model``, configs and JSON, ``ModelCheckpoint``."""
from __future__ import annotations

import json

import numpy as np
import pytest

from xlapy import keras
from xlapy.errors import InvalidArgumentError
from xlapy.keras import layers

import h5py


@pytest.fixture(autouse=True)
def _seed():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)


def _cnn():
    return keras.Sequential([
        layers.Conv2D(3, 3, padding="same", activation="relu", input_shape=(6, 6, 1)),
        layers.BatchNormalization(),
        layers.MaxPooling2D(),
        layers.Conv2D(4, 2, kernel_constraint=keras.constraints.MaxNorm(2.0, axis=[0, 1, 2])),
        layers.Flatten(),
        layers.Dense(3, kernel_regularizer=keras.regularizers.L2(1e-3)),
    ])


def _data(n=12):
    rng = np.random.default_rng(5)
    return rng.random((n, 6, 6, 1), np.float32), rng.integers(0, 3, n)


def _compiled_cnn():
    model = _cnn()
    model.compile(optimizer=keras.optimizers.Adam(
        keras.optimizers.schedules.ExponentialDecay(1e-2, 4, 0.5)),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"], weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()])
    return model


def _perturb(model):
    rng = np.random.default_rng(9)
    model.set_weights([w + rng.standard_normal(w.shape).astype(w.dtype)
                       for w in model.get_weights()])


# ------------------------------------------------------------------------ HDF5
def test_h5_weights_round_trip_in_keras3_layout(tmp_path):
    model = _cnn()
    _perturb(model)
    x, _ = _data()
    path = tmp_path / "cnn.weights.h5"
    model.save_weights(path)
    with h5py.File(path, "r") as f:
        names = []
        f.visit(names.append)
    for key in ("vars", "layers/conv2d/vars/0", "layers/conv2d/vars/1",
                "layers/batch_normalization/vars/3", "layers/conv2d_1/vars/1",
                "layers/dense/vars/0", "layers/flatten/vars"):
        assert key in names, names
    keras.backend.clear_session()                        # other layer names: no matter
    fresh = _cnn()
    assert fresh.layers[0].name == "conv2d"
    assert not np.allclose(fresh.predict(x, verbose=0), model.predict(x, verbose=0))
    fresh.load_weights(path)
    for a, b in zip(fresh.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    other = keras.Sequential([layers.LayerNormalization(input_shape=(3,))])
    with pytest.raises(InvalidArgumentError, match="no weights for layer"):
        other.load_weights(path)
    other = keras.Sequential([layers.Dense(2, input_shape=(3,))])     # layers/dense exists
    with pytest.raises(InvalidArgumentError, match="shape"):
        other.load_weights(path)


def _reference_values(model):
    rng = np.random.default_rng(11)
    return [rng.standard_normal(w.shape).astype(np.float32) for w in model.get_weights()]


def test_loads_a_file_in_keras3_layout(tmp_path):
    """A file laid out as Keras 3's ``save_weights`` writes it (``_save_state``: a
    ``vars`` group per saveable, layers of a Sequential under ``layers/<snake_case
    class>[_n]``, own variables trainable-first as ``0``, ``1``, ...; the optimizer's
    under ``optimizer/vars``), built here by hand with h5py."""
    model = keras.Sequential([layers.Dense(4, input_shape=(3,), name="hidden"),
                              layers.BatchNormalization(name="bn"), layers.Dropout(0.1),
                              layers.Dense(2, name="out")])
    k1, b1, gamma, beta, mean, var, k2, b2 = _reference_values(model)
    path = tmp_path / "model.weights.h5"
    with h5py.File(path, "w") as f:
        f.create_group("vars")
        for group, values in (("layers/dense", [k1, b1]), ("layers/batch_normalization",
                                                           [gamma, beta, mean, var]),
                              ("layers/dropout", []), ("layers/dense_1", [k2, b2]),
                              ("optimizer", [np.array(3, np.int64)])):
            g = f.create_group(f"{group}/vars")
            for i, v in enumerate(values):
                g.create_dataset(str(i), data=v)
    model.load_weights(path)
    bn = model.get_layer("bn")
    np.testing.assert_array_equal(model.get_layer("hidden").kernel.numpy(), k1)
    np.testing.assert_array_equal(bn.moving_variance.numpy(), var)
    np.testing.assert_array_equal(bn.gamma.numpy(), gamma)
    np.testing.assert_array_equal(model.get_layer("out").bias.numpy(), b2)


def test_keras3_paths_of_nested_and_subclassed_models():
    from xlapy.keras.saving import keras_paths

    inner = keras.Sequential([layers.Dense(2, input_shape=(2,)), layers.Dense(2)])
    outer = keras.Sequential([inner, layers.Dense(1)])
    assert [p for p, _ in keras_paths(outer)] == [
        "", "layers/sequential", "layers/sequential/layers/dense",
        "layers/sequential/layers/dense_1", "layers/dense"]

    class Net(keras.Model):                # attributes in sorted order; "layers" (the
        def __init__(self):                # tracked list) comes before "zz", so zz is
            super().__init__()             # reached through it, as in Keras's saver
            self.zz = layers.Dense(1)
            self.blocks = [layers.Dense(2), layers.Dense(2)]
            self.head = layers.Dense(1)
    assert [p for p, _ in keras_paths(Net())] == [
        "", "blocks/dense", "blocks/dense_1", "head", "layers/dense"]


def test_loads_a_file_in_tf2_keras_layout(tmp_path):
    """TF2 Keras's ``save_weights('w.h5')``: ``layer_names`` on the root, a group per
    layer with ``weight_names`` (datasets at those paths), matched by layer order."""
    model = keras.Sequential([layers.Dense(3, input_shape=(2,)), layers.Flatten(),
                              layers.Dense(1)])
    k1, b1, k2, b2 = _reference_values(model)
    path = tmp_path / "tf2.h5"
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = [b"dense_7", b"flatten_2", b"dense_8"]
        f.attrs["keras_version"] = b"2.15.0"
        for name, weights in (("dense_7", {"kernel:0": k1, "bias:0": b1}), ("flatten_2", {}),
                              ("dense_8", {"kernel:0": k2, "bias:0": b2})):
            g = f.create_group(name)
            g.attrs["weight_names"] = [f"{name}/{w}".encode() for w in weights]
            for w, v in weights.items():
                g.create_dataset(f"{name}/{w}", data=v)
    model.load_weights(path)
    for got, want in zip(model.get_weights(), [k1, b1, k2, b2]):
        np.testing.assert_array_equal(got, want)


def test_loads_xlapy_earlier_h5_layout_and_skip_mismatch(tmp_path):
    model = keras.Sequential([layers.Dense(2, input_shape=(3,))])
    k, b = _reference_values(model)
    path = tmp_path / "old.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("weights")
        g.attrs["weight_names"] = np.array(["dense/kernel", "dense/bias"], dtype="S")
        g.create_dataset("w0000", data=k)
        g.create_dataset("w0001", data=b)
    model.load_weights(path)
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), k)
    wrong = keras.Sequential([layers.Dense(2, input_shape=(4,))])
    before = wrong.get_weights()
    with pytest.raises(InvalidArgumentError, match="shape"):
        wrong.load_weights(path)
    wrong.load_weights(path, skip_mismatch=True)            # warns, assigns what fits
    np.testing.assert_array_equal(wrong.layers[0].kernel.numpy(), before[0])
    np.testing.assert_array_equal(wrong.layers[0].bias.numpy(), b)


def test_load_weights_on_an_unbuilt_model_says_to_build_it(tmp_path):
    built = keras.Sequential([layers.Dense(2, input_shape=(3,))])
    built.save_weights(tmp_path / "w.npz")
    unbuilt = keras.Sequential([layers.Dense(2)])
    with pytest.raises(InvalidArgumentError, match=r"not built yet.*model\.build"):
        unbuilt.load_weights(tmp_path / "w.npz")
    unbuilt.build((None, 3))
    unbuilt.load_weights(tmp_path / "w.npz")


# ------------------------------------------------------------- model.save / load
def test_save_and_load_model_resumes_training_exactly(tmp_path):
    x, y = _data()
    model = _compiled_cnn()
    model.fit(x, y, batch_size=5, epochs=2, verbose=0)
    path = tmp_path / "cnn.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert loaded.metrics_names == model.metrics_names
    assert int(loaded.optimizer.iterations.numpy()) == 6
    assert isinstance(loaded.optimizer.learning_rate,
                      keras.optimizers.schedules.ExponentialDecay)
    assert [type(l).__name__ for l in loaded.layers] == [type(l).__name__ for l in model.layers]
    h1 = model.fit(x, y, batch_size=5, epochs=1, shuffle=False, verbose=0).history
    h2 = loaded.fit(x, y, batch_size=5, epochs=1, shuffle=False, verbose=0).history
    np.testing.assert_allclose(h1["loss"], h2["loss"], rtol=1e-6)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    uncompiled = keras.saving.load_model(path, compile=False)
    assert not uncompiled.compiled
    loaded.load_weights(path)                                 # weights from a .keras file


def test_functional_model_round_trips_through_config_json_and_file(tmp_path):
    a, b = keras.Input((4,), name="a"), keras.Input((5,), name="b")
    h = layers.Dense(5, activation="relu")(a)
    shared = layers.Dense(3)
    z = layers.Concatenate()([shared(h), shared(b)])
    out = layers.Dense(2, activation=keras.activations.tanh)(layers.Add()([z, z]))
    model = keras.Model([a, b], out)
    xa = np.random.default_rng(1).random((3, 4), np.float32)
    xb = np.random.default_rng(2).random((3, 5), np.float32)
    want = model.predict([xa, xb], verbose=0)
    model.save(tmp_path / "f.keras")
    loaded = keras.models.load_model(tmp_path / "f.keras")
    np.testing.assert_array_equal(loaded.predict([xa, xb], verbose=0), want)
    assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
    clone = keras.models.model_from_json(model.to_json())
    assert json.loads(clone.to_json()) == json.loads(model.to_json())
    assert clone.count_params() == model.count_params()
    config = model.get_config()
    again = keras.Model.from_config(config)
    again.set_weights(model.get_weights())
    np.testing.assert_allclose(again.predict([xa, xb], verbose=0), want, rtol=1e-6)


def test_layer_configs_round_trip():
    made = [layers.Dense(3, activation="relu", use_bias=False, name="d",
                         kernel_initializer=keras.initializers.HeNormal(seed=3),
                         kernel_constraint=keras.constraints.UnitNorm(axis=1),
                         activity_regularizer=keras.regularizers.L1(0.1)),
            layers.Conv2D(4, (2, 3), strides=2, padding="same"),
            layers.Embedding(10, 4, input_length=6),
            layers.BatchNormalization(momentum=0.9, fused=True),
            layers.Dropout(0.3, seed=2)]
    from xlapy.keras import serialization
    for layer in made:
        data = json.loads(json.dumps(serialization.serialize(layer)))
        copy = serialization.deserialize(data)
        assert type(copy) is type(layer)
        assert json.loads(json.dumps(serialization.serialize(copy))) == data
    assert made[2].get_config()["batch_input_shape"] == [None, 6]


def test_what_cannot_be_saved_is_reported(tmp_path):
    model = keras.Sequential([layers.Lambda(lambda t: t * 2, input_shape=(2,))])
    with pytest.raises(InvalidArgumentError, match="anonymous function"):
        model.save(tmp_path / "m.keras")

    class Net(keras.Model):
        def __init__(self, helper=None):
            super().__init__()
            self.helper = helper
            self.d = layers.Dense(1)

        def call(self, x):
            return self.d(x)
    net = Net(helper=object())
    net(np.ones((1, 2), np.float32))
    with pytest.raises(InvalidArgumentError, match="cannot save a value of type object"):
        net.save(tmp_path / "n.keras")
    with pytest.raises(InvalidArgumentError, match=r"\.keras"):
        keras.Sequential([layers.Dense(1, input_shape=(2,))]).save(tmp_path / "m.h5")


def test_subclassed_model_saves_its_constructor_arguments(tmp_path):
    class Net(keras.Model):
        def __init__(self, units=3):
            super().__init__()
            self.units = units
            self.hidden = layers.Dense(units, activation="relu")
            self.out = layers.Dense(1)

        def call(self, x):
            return self.out(self.hidden(x))
    x = np.random.default_rng(3).random((4, 2), np.float32)
    net = Net(units=5)
    net.compile(optimizer="adam", loss="mse")
    net.fit(x, np.ones((4, 1), np.float32), verbose=0)
    assert net.get_config() == {"units": 5, "name": net.name, "trainable": True,
                                "dtype": "float32"}
    net.save(tmp_path / "net.keras")
    loaded = keras.models.load_model(tmp_path / "net.keras", custom_objects={"Net": Net})
    assert type(loaded) is Net and loaded.units == 5 and loaded.name == net.name
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), net.predict(x, verbose=0))
    assert int(loaded.optimizer.iterations.numpy()) == 1


def test_custom_layers_and_functions_load_with_custom_objects(tmp_path):
    def scaled_tanh(t):
        return keras.activations.tanh(t) * 2.0

    class Scale(keras.layers.Layer):
        def __init__(self, factor=1.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, x):
            return x * self.factor
    model = keras.Sequential([layers.Dense(2, activation=scaled_tanh, input_shape=(3,)),
                              Scale(3.0)])
    model.save(tmp_path / "c.keras")
    with pytest.raises(InvalidArgumentError, match="custom_objects"):
        keras.models.load_model(tmp_path / "c.keras")
    loaded = keras.models.load_model(tmp_path / "c.keras", custom_objects={
        "Scale": Scale, "scaled_tanh": scaled_tanh})
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert loaded.layers[1].factor == 3.0


# ------------------------------------------------------------------ checkpoints
def test_model_checkpoint_save_best_only(tmp_path):
    model = keras.Sequential([layers.Dense(1, input_shape=(2,))])
    cb = keras.callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch:02d}-{val_loss:.1f}.npz"),
                                         save_best_only=True, save_weights_only=True)
    cb.set_model(model)
    for epoch, val_loss in enumerate([1.0, 0.5, 0.7, 0.4, 0.4]):
        cb.on_epoch_end(epoch, {"loss": 9.0, "val_loss": val_loss})
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "w-01-1.0.npz", "w-02-0.5.npz", "w-04-0.4.npz"]
    acc = keras.callbacks.ModelCheckpoint(str(tmp_path / "best.npz"), monitor="val_acc",
                                          save_best_only=True, save_weights_only=True,
                                          initial_value_threshold=0.8)
    acc.set_model(model)
    acc.on_epoch_end(0, {"val_acc": 0.7})            # 'auto' on an accuracy is max
    assert not (tmp_path / "best.npz").exists()
    acc.on_epoch_end(1, {"val_acc": 0.9})
    assert (tmp_path / "best.npz").exists()
    with pytest.raises(InvalidArgumentError, match=r"\.keras"):
        keras.callbacks.ModelCheckpoint(str(tmp_path / "m.h5"))


def test_model_checkpoint_during_fit_saves_models_and_batches(tmp_path):
    x, y = np.ones((8, 2), np.float32), np.zeros((8, 1), np.float32)
    model = keras.Sequential([layers.Dense(1, input_shape=(2,))])
    model.compile(optimizer="sgd", loss="mse")
    whole = keras.callbacks.ModelCheckpoint(str(tmp_path / "m{epoch}.keras"), monitor="loss",
                                            save_best_only=True)
    every = keras.callbacks.ModelCheckpoint(str(tmp_path / "b{epoch}-{batch}.weights.h5"),
                                            save_weights_only=True, save_freq=3)
    model.fit(x, y, batch_size=4, epochs=3, verbose=0, callbacks=[whole, every])
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["b2-1.weights.h5", "b3-2.weights.h5", "m1.keras", "m2.keras",
                     "m3.keras"], names
    last = keras.models.load_model(tmp_path / "m3.keras")
    np.testing.assert_array_equal(last.get_weights()[0], model.get_weights()[0])
