"""``xlapy.keras``: Keras-style models and training on xlapy.

::

    from xlapy import keras
    model = keras.Sequential([
        keras.layers.Dense(64, activation="relu", input_shape=(64,)),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=True)
    model.fit(x, y, batch_size=32, epochs=5, validation_data=(x_val, y_val))

With ``jit_compile=True`` each train step (forward, loss, gradients, optimizer and
metric updates) is one compiled XLA program; ``jit_compile=False`` runs it op by op.
Weights, optimizer state, metric state and dropout keys are :class:`xlapy.Variable`
objects. Modules: ``layers``, ``models``, ``optimizers`` (with ``schedules``),
``losses``, ``metrics``, ``initializers``, ``activations``, ``regularizers``,
``constraints``, ``callbacks``, ``datasets``, ``utils``, ``backend``, ``distribution``
(Keras 3's ``ModelParallel`` / ``DataParallel`` over SPMD partitioning),
``mixed_precision`` (dtype policies: ``set_global_policy("mixed_bfloat16")``); ``saving`` has
``load_model`` (``model.save`` writes ``.keras`` files).
"""
from __future__ import annotations

from . import (activations, backend, callbacks, constraints, datasets, distribution,
               initializers, layers, losses, metrics, mixed_precision, optimizers,
               regularizers, utils)
from . import models
from . import saving
from .layers import Input
from .models import Model, Sequential, load_model
from .progbar import Progbar

saving.load_model = load_model          # keras.saving.load_model, as in Keras 3

__all__ = ["Sequential", "Model", "Input", "Progbar", "load_model", "activations", "backend",
           "callbacks", "constraints", "datasets", "distribution", "initializers", "layers",
           "losses", "metrics", "mixed_precision", "models", "optimizers", "regularizers",
           "saving", "utils"]
