"""The model and data the data-parallel tests train (``test_tf_distribute*.py`` and the MPI
worker): a small MLP classifier, ``STEPS`` global batches of ``GLOBAL_BATCH`` rows."""
from __future__ import annotations

import numpy as np

from xlapy import keras

SEED = 7
STEPS = 20
GLOBAL_BATCH = 16
FEATURES, CLASSES = 20, 5


def data() -> tuple[np.ndarray, np.ndarray]:
    """``STEPS * GLOBAL_BATCH`` rows: inputs and integer labels."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(STEPS * GLOBAL_BATCH, FEATURES)).astype(np.float32)
    y = (x[:, :CLASSES].argmax(1) + rng.integers(0, 2, len(x))) % CLASSES
    return x, y.astype(np.int32)


def make_model(seed: int = SEED, jit_compile: bool = True) -> keras.Model:
    """The MLP, compiled with Adam; its initial weights depend only on ``seed``."""
    keras.backend.set_random_seed(seed)
    model = keras.Sequential([keras.layers.Dense(32, activation="relu",
                                                 input_shape=(FEATURES,)),
                              keras.layers.Dense(CLASSES)])
    model.compile(optimizer=keras.optimizers.Adam(0.01), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=jit_compile)
    return model


def reference_weights() -> list[np.ndarray]:
    """The weights after ``STEPS`` steps on one device with the global batch."""
    model = make_model()
    x, y = data()
    model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, shuffle=False, verbose=0)
    return model.get_weights()
