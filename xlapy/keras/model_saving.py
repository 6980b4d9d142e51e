"""``model.save(path)`` and ``keras.models.load_model(path)``: xlapy's ``.keras`` files.

A ``.keras`` file is a zip archive, like Keras 3's, holding:

- ``config.json``: ``{"class_name", "module", "config"}`` of the model (see
  :mod:`.serialization`: Sequential and functional models of built-in layers; custom
  layers, subclassed models and named functions are found again through ``load_model``'s
  ``custom_objects``), its ``build_config`` (the input shape)
  and its ``compile_config`` (optimizer class and arguments, loss, metrics,
  weighted metrics, loss weights, jit_compile) when it was compiled and those can be
  saved (a custom function needs a name found in ``custom_objects`` at load time);
- ``metadata.json``: the format and the xlapy version;
- ``model.weights.npz``: the weights in :attr:`Model.weights` order (xlapy's npz layout);
- ``optimizer.weights.npz``: the optimizer's Variables (``iterations``, the learning
  rate, the slots), so training resumes where it stopped.

``load_model`` rebuilds the model, loads the weights and, with ``compile=True``,
compiles it with the saved settings and restores the optimizer state. The archive's
``config.json`` is not Keras's own format, so Keras cannot read these files (the
weights of a Keras 3 ``.keras`` or ``.weights.h5`` file can be read with
``load_weights``).
"""
from __future__ import annotations

import datetime
import io
import json
import logging
import os
import zipfile
from typing import Any, Mapping

from .. import __version__ as xlapy_version
from ..errors import InvalidArgumentError
from . import serialization
from .saving import read_npz, write_npz

logger = logging.getLogger("xlapy.keras")

FORMAT = "xlapy.keras/1"


def _compile_config(model: Any) -> dict | None:
    if not getattr(model, "compiled", False):
        return None
    saved = dict(model._compile_config)
    saved["optimizer"] = model.optimizer
    saved["jit_compile"] = model.jit_compile
    try:
        return serialization.serialize(saved)
    except InvalidArgumentError as e:
        logger.warning("model.save: the compile settings cannot be saved (%s); the loaded "
                       "model will need model.compile(...)", e)
        return None


def save_model(model: Any, filepath: str | os.PathLike, overwrite: bool = True,
               include_optimizer: bool = True) -> None:
    """Write ``model`` to a ``.keras`` file (see the module docstring)."""
    path = os.fspath(filepath)
    if not path.endswith(".keras"):
        raise InvalidArgumentError(
            f"model.save: expected a file name ending in .keras, got {path!r} (use "
            "save_weights for .weights.h5 / .npz weights files)")
    if not model.built:
        raise InvalidArgumentError(f"model.save: model {model.name!r} is not built yet; "
                                   "build it (or call it on data) first")
    if not overwrite and os.path.exists(path):
        raise InvalidArgumentError(f"model.save: {path} exists and overwrite=False")
    config = serialization.serialize(model)
    config["build_config"] = {"input_shape": serialization.serialize(model.input_shape)}
    config["compile_config"] = _compile_config(model)
    metadata = {"format": FORMAT, "xlapy_version": xlapy_version,
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("metadata.json", json.dumps(metadata))
        archive.writestr("config.json", json.dumps(config))
        buf = io.BytesIO()
        write_npz(buf, model.weights)
        archive.writestr("model.weights.npz", buf.getvalue())
        if include_optimizer and config["compile_config"] is not None:
            model.optimizer.build(model.trainable_variables)
            buf = io.BytesIO()
            write_npz(buf, model.optimizer.variables)
            archive.writestr("optimizer.weights.npz", buf.getvalue())


def _build(model: Any, build_config: dict | None) -> None:
    if model.built or not build_config or build_config.get("input_shape") is None:
        return
    shape = build_config["input_shape"]
    if hasattr(model, "_build_chain"):
        model.build(tuple(shape))
        return
    import numpy as np
    model(np.zeros((1, *[1 if d is None else d for d in shape[1:]]), model.dtype))


def load_model(filepath: str | os.PathLike, custom_objects: Mapping[str, Any] | None = None,
               compile: bool = True, safe_mode: bool = True) -> Any:
    """The model saved by :func:`save_model` at ``filepath`` (``safe_mode`` is accepted
    for Keras compatibility: xlapy never loads code, so loading is always safe)."""
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise InvalidArgumentError(f"load_model: no such file {path!r}")
    if path.endswith((".h5", ".hdf5")):
        raise InvalidArgumentError("load_model reads .keras files written by model.save; "
                                   "for an .h5 weights file build the model and call "
                                   "model.load_weights(path)")
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise InvalidArgumentError(f"load_model: {path!r} is not a .keras archive") from None
    with archive:
        files = archive.namelist()
        metadata = json.loads(archive.read("metadata.json")) if "metadata.json" in files \
            else {}
        if metadata.get("format") != FORMAT or "model.weights.npz" not in files:
            raise InvalidArgumentError(
                f"load_model: {path!r} was not written by xlapy's model.save (a Keras-made "
                ".keras file needs its architecture rebuilt in xlapy; its weights can then "
                "be read with model.load_weights)")
        config = json.loads(archive.read("config.json"))
        model = serialization.deserialize(config, custom_objects)
        _build(model, config.get("build_config"))
        names, values = read_npz(io.BytesIO(archive.read("model.weights.npz")), path)
        model_weights = model.weights
        if len(values) != len(model_weights):
            raise InvalidArgumentError(f"load_model: {path!r} holds {len(values)} weights but "
                                       f"the rebuilt model has {len(model_weights)}")
        model.set_weights(values)
        compile_config = config.get("compile_config")
        if compile and compile_config is not None:
            settings = serialization.deserialize(compile_config, custom_objects)
            model.compile(**settings)
            if "optimizer.weights.npz" in files:
                _restore_optimizer(model, archive.read("optimizer.weights.npz"), path)
    return model


def _restore_optimizer(model: Any, data: bytes, path: str) -> None:
    model.optimizer.build(model.trainable_variables)
    names, values = read_npz(io.BytesIO(data), path)
    variables = model.optimizer.variables
    if len(values) != len(variables) or any(tuple(v.shape) != tuple(a.shape)
                                            for v, a in zip(variables, values)):
        logger.warning("load_model: the saved optimizer state (%d variables) does not match "
                       "the optimizer (%d variables); starting it afresh", len(values),
                       len(variables))
        return
    for var, value in zip(variables, values):
        var.assign(value.astype(var.dtype))


__all__ = ["save_model", "load_model"]
