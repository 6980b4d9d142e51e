"""``save_weights`` / ``load_weights``: the model's weights, in :attr:`Model.weights` order.

- ``.npz`` (any name not ending in ``.h5``/``.hdf5``): arrays ``w0000``, ``w0001``, ... and
  ``weight_names`` (the Variables' names, for error messages);
- ``.h5`` / ``.hdf5`` (including Keras 3's ``.weights.h5``): one dataset per weight under
  ``/weights``, with the names as an attribute; needs ``h5py``.

Loading checks the number of weights and each shape and names the first mismatch.
"""
from __future__ import annotations

import importlib.util
import os
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError


def _is_h5(path: str) -> bool:
    return path.endswith((".h5", ".hdf5", ".keras.h5"))


def _h5py() -> Any:
    if importlib.util.find_spec("h5py") is None:
        raise InvalidArgumentError("saving weights as HDF5 (.h5) needs the h5py package, "
                                   "which is not installed; use a .npz file name instead")
    import h5py
    return h5py


def save_weights(model: Any, filepath: str | os.PathLike, overwrite: bool = True) -> None:
    path = os.fspath(filepath)
    if not overwrite and os.path.exists(path):
        raise InvalidArgumentError(f"save_weights: {path} exists and overwrite=False")
    weights = model.weights
    names = [w.name for w in weights]
    values = [w.numpy() for w in weights]
    if _is_h5(path):
        h5py = _h5py()
        with h5py.File(path, "w") as f:
            group = f.create_group("weights")
            group.attrs["weight_names"] = np.array(names, dtype="S")
            for i, v in enumerate(values):
                group.create_dataset(f"w{i:04d}", data=v)
        return
    with open(path, "wb") as f:
        np.savez(f, weight_names=np.array(names), **{f"w{i:04d}": v for i, v in
                                                       enumerate(values)})


def _read(path: str) -> tuple[list[str], list[np.ndarray]]:
    if not os.path.exists(path):
        raise InvalidArgumentError(f"load_weights: no such file {path!r}")
    if _is_h5(path):
        h5py = _h5py()
        with h5py.File(path, "r") as f:
            group = f["weights"]
            names = [n.decode() for n in group.attrs["weight_names"]]
            values = [np.asarray(group[f"w{i:04d}"]) for i in range(len(names))]
        return names, values
    try:
        with np.load(path, allow_pickle=False) as data:
            names = [str(n) for n in data["weight_names"]]
            values = [data[f"w{i:04d}"] for i in range(len(names))]
    except (KeyError, ValueError, OSError) as e:
        raise InvalidArgumentError(f"load_weights: {path!r} is not a weights file written by "
                                   f"save_weights ({e})") from None
    return names, values


def load_weights(model: Any, filepath: str | os.PathLike) -> None:
    path = os.fspath(filepath)
    names, values = _read(path)
    weights = model.weights
    if len(values) != len(weights):
        raise InvalidArgumentError(
            f"load_weights: {path!r} holds {len(values)} weights but model {model.name!r} has "
            f"{len(weights)}; was it saved from a model with the same layers?")
    for var, name, value in zip(weights, names, values):
        if tuple(value.shape) != tuple(var.shape):
            raise InvalidArgumentError(
                f"load_weights: weight {name!r} in {path!r} has shape {tuple(value.shape)}, but "
                f"the model's weight {var.name!r} has shape {tuple(var.shape)}")
    for var, value in zip(weights, values):
        var.assign(np.asarray(value, var.dtype))


__all__ = ["save_weights", "load_weights"]
