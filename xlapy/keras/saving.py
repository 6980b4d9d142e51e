"""``save_weights`` / ``load_weights``.

- ``.npz`` (any name not ending in ``.h5``/``.hdf5``/``.keras``): arrays ``w0000``,
  ``w0001``, ... in :attr:`Model.weights` order and ``weight_names`` (the Variables'
  names, for error messages).
- ``.h5`` / ``.hdf5`` (Keras 3 names them ``*.weights.h5``): written in **Keras 3's
  layout**, and read from it. Needs ``h5py``. Keras 3 stores every layer's own
  variables under ``<path>/vars/0``, ``1``, ... (trainable ones first, in creation
  order), where the path of a layer of a ``Sequential`` or functional model is
  ``layers/<class name in snake case>`` with ``_1``, ``_2``, ... for repeated classes
  (``layers/conv2d``, ``layers/conv2d_1``, ``layers/dense``), nested models continue the
  path (``layers/sequential/layers/dense``) and a subclassed model's layers are found
  through its attributes (``<attribute name>``, lists as ``<attribute>/<class name>``),
  visited in sorted order with private attributes last, as Keras's saver does. Layer
  names do not matter, so weights saved by ``keras`` (3.x) for the same architecture
  load into an xlapy model. In a functional model with branches, layers of one class are
  numbered in xlapy's topological order, which may differ from Keras's.
- Reading ``.h5`` also accepts TensorFlow 2 Keras's layout (``model.save_weights('w.h5')``
  or a whole-model ``.h5`` with a ``model_weights`` group: ``layer_names`` and
  ``weight_names`` attributes, matched by the order of the layers that have weights) and
  the ``/weights/w0000`` layout of earlier xlapy versions.
- A ``.keras`` file written by :meth:`Model.save` (or by Keras 3, with h5py) can be read
  by ``load_weights`` too.

Loading checks counts and shapes first and names the first mismatch (``skip_mismatch``
turns mismatched layers into warnings); nothing is assigned unless everything fits.
"""
from __future__ import annotations

import io
import logging
import os
import zipfile
from typing import Any, Iterator

import numpy as np

from ..errors import InvalidArgumentError

logger = logging.getLogger("xlapy.keras")


def _is_h5(path: str) -> bool:
    return path.endswith((".h5", ".hdf5"))


def _h5py() -> Any:
    try:
        import h5py
    except ImportError:
        raise InvalidArgumentError("saving or loading weights as HDF5 (.h5) needs the h5py "
                                   "package, which is not installed (pip install h5py); or "
                                   "use a .npz file name") from None
    return h5py


def _check_built(model: Any, what: str) -> None:
    if not model.built:
        raise InvalidArgumentError(
            f"{what}: model {model.name!r} is not built yet, so it has no weights. Build it "
            "first: give the first layer input_shape= (or start with keras.Input), call "
            "model.build(input_shape), or call the model on a batch of data")


# ------------------------------------------------------------- Keras 3's layer paths
def _name_key(name: str) -> str:
    return "~" + name if name.startswith("_") else name


def _children(layer: Any) -> list[tuple[str, Any]]:
    """``(attribute, layer or container of layers)`` in Keras 3's visiting order."""
    from .layers.base import Layer
    from .models import Functional, Model, Sequential
    if isinstance(layer, (Sequential, Functional)):
        return [("layers", list(layer.layers))]
    attrs = {k: v for k, v in vars(layer).items() if not k.startswith("__") and k != "_layers"}
    if isinstance(layer, Model):
        attrs["layers"] = list(layer.layers)

    def has_layers(v: Any) -> bool:
        if isinstance(v, Layer):
            return True
        items = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else ()
        return any(isinstance(i, Layer) for i in items)
    return [(k, attrs[k]) for k in sorted(attrs, key=_name_key) if has_layers(attrs[k])]


def keras_paths(model: Any) -> Iterator[tuple[str, Any]]:
    """Every layer of ``model`` (the model itself first, path ``""``) with its Keras 3
    weights path, each layer once."""
    from .backend import snake_case
    from .layers.base import Layer
    seen: set[int] = set()

    def walk(layer: Any, path: str) -> Iterator[tuple[str, Any]]:
        if id(layer) in seen:
            return
        seen.add(id(layer))
        yield path, layer
        for attr, child in _children(layer):
            sub = f"{path}/{attr}" if path else attr
            if isinstance(child, Layer):
                yield from walk(child, sub)
                continue
            used: dict[str, int] = {}
            for item in (child.values() if isinstance(child, dict) else child):
                if not isinstance(item, Layer):
                    continue
                name = snake_case(type(item).__name__)
                if name in used:
                    used[name] += 1
                    name = f"{name}_{used[name]}"
                else:
                    used[name] = 0
                yield from walk(item, f"{sub}/{name}")
    yield from walk(model, "")


def own_variables(layer: Any) -> list[Any]:
    """A layer's own weights in Keras's saving order: trainable ones, then the others
    (by how they were created, not the current ``trainable`` flag)."""
    own = list(layer._weights)
    return [v for v in own if layer._own_trainable.get(id(v), True)] + \
        [v for v in own if not layer._own_trainable.get(id(v), True)]


# ------------------------------------------------------------------------- saving
def save_weights(model: Any, filepath: str | os.PathLike, overwrite: bool = True) -> None:
    path = os.fspath(filepath)
    _check_built(model, "save_weights")
    if not overwrite and os.path.exists(path):
        raise InvalidArgumentError(f"save_weights: {path} exists and overwrite=False")
    if path.endswith(".keras"):
        raise InvalidArgumentError("save_weights writes .npz or .h5 (.weights.h5) files; "
                                   "use model.save(path) for a .keras file")
    if _is_h5(path):
        h5py = _h5py()
        with h5py.File(path, "w") as f:
            for inner, layer in keras_paths(model):
                group = f.create_group(f"{inner}/vars" if inner else "vars")
                for i, var in enumerate(own_variables(layer)):
                    group.create_dataset(str(i), data=var.numpy())
        return
    with open(path, "wb") as f:
        write_npz(f, model.weights)


def write_npz(fileobj: Any, variables: list[Any]) -> None:
    """Variables as ``w0000``, ... plus ``weight_names`` (xlapy's npz layout)."""
    np.savez(fileobj, weight_names=np.array([v.name for v in variables]),
             **{f"w{i:04d}": v.numpy() for i, v in enumerate(variables)})


# ------------------------------------------------------------------------ loading
class _Plan:
    """Assignments collected and checked before any is made."""

    def __init__(self, source: str, skip_mismatch: bool) -> None:
        self.source, self.skip_mismatch = source, skip_mismatch
        self.pairs: list[tuple[Any, np.ndarray]] = []

    def fail(self, message: str) -> None:
        if not self.skip_mismatch:
            raise InvalidArgumentError(f"load_weights: {message}")
        logger.warning("load_weights: skipping: %s", message)

    def add(self, variables: list[Any], values: list[np.ndarray], where: str) -> None:
        if len(values) != len(variables):
            self.fail(f"{where} in {self.source!r} holds {len(values)} weights, but the "
                      f"model's layer has {len(variables)}; was it saved from a model with "
                      "the same layers?")
            return
        for var, value in zip(variables, values):
            if tuple(value.shape) != tuple(var.shape):
                self.fail(f"weight {len(self.pairs)} ({where}) in {self.source!r} has shape "
                          f"{tuple(value.shape)}, but the model's weight {var.name!r} has "
                          f"shape {tuple(var.shape)}")
                return
        self.pairs.extend(zip(variables, values))

    def apply(self) -> None:
        for var, value in self.pairs:
            var.assign(np.asarray(value, var.dtype))


def _load_flat(model: Any, names: list[str], values: list[np.ndarray], plan: _Plan) -> None:
    weights = model.weights
    if len(values) != len(weights):
        plan.fail(f"{plan.source!r} holds {len(values)} weights but model {model.name!r} has "
                  f"{len(weights)}; was it saved from a model with the same layers?")
        return
    for var, name, value in zip(weights, names, values):
        plan.add([var], [value], f"weight {name!r}")


def _load_keras3(f: Any, model: Any, plan: _Plan) -> None:
    for path, layer in keras_paths(model):
        variables = own_variables(layer)
        if not variables:
            continue
        key = f"{path}/vars" if path else "vars"
        group = f.get(key)
        if group is None:
            plan.fail(f"{plan.source!r} has no weights for layer {layer.name!r} "
                      f"({type(layer).__name__}) at '{key}' (Keras 3 layout); was it saved "
                      "from a model with the same layers?")
            continue
        values = [np.asarray(group[str(i)]) for i in range(len(group))]
        plan.add(variables, values, f"'{key}'")


def _h5_strings(group: Any, name: str) -> list[str]:
    """An attribute list, possibly split into ``name0``, ``name1``, ... (TF2 Keras)."""
    if name in group.attrs:
        raw = list(group.attrs[name])
    else:
        raw, chunk = [], 0
        while f"{name}{chunk}" in group.attrs:
            raw.extend(group.attrs[f"{name}{chunk}"])
            chunk += 1
    return [n.decode("utf8") if hasattr(n, "decode") else str(n) for n in raw]


def _load_tf2(f: Any, model: Any, plan: _Plan) -> None:
    layers = [l for l in model.layers if l.weights]
    names = [n for n in _h5_strings(f, "layer_names") if _h5_strings(f[n], "weight_names")]
    if len(names) != len(layers):
        plan.fail(f"{plan.source!r} (TF2 Keras layout) has weights for {len(names)} layers, "
                  f"but the model has {len(layers)} layers with weights")
        return
    for layer, name in zip(layers, names):
        group = f[name]
        values = [np.asarray(group[w]) for w in _h5_strings(group, "weight_names")]
        plan.add(layer.trainable_weights + layer.non_trainable_weights, values,
                 f"layer {name!r}")


def _load_h5_file(f: Any, model: Any, plan: _Plan) -> None:
    if "model_weights" in f and "layer_names" in f["model_weights"].attrs:
        _load_tf2(f["model_weights"], model, plan)
    elif "layer_names" in f.attrs or "layer_names0" in f.attrs:
        _load_tf2(f, model, plan)
    elif "weights" in f and "weight_names" in f["weights"].attrs:      # earlier xlapy
        group = f["weights"]
        names = [n.decode() if hasattr(n, "decode") else str(n)
                 for n in group.attrs["weight_names"]]
        _load_flat(model, names, [np.asarray(group[f"w{i:04d}"]) for i in range(len(names))],
                   plan)
    else:
        _load_keras3(f, model, plan)


def read_npz(fileobj: Any, source: str) -> tuple[list[str], list[np.ndarray]]:
    try:
        with np.load(fileobj, allow_pickle=False) as data:
            names = [str(n) for n in data["weight_names"]]
            return names, [data[f"w{i:04d}"] for i in range(len(names))]
    except (KeyError, ValueError, OSError) as e:
        raise InvalidArgumentError(f"load_weights: {source!r} is not a weights file written "
                                   f"by save_weights ({e})") from None


def load_weights(model: Any, filepath: str | os.PathLike, skip_mismatch: bool = False) -> None:
    path = os.fspath(filepath)
    _check_built(model, "load_weights")
    if not os.path.exists(path):
        raise InvalidArgumentError(f"load_weights: no such file {path!r}")
    plan = _Plan(path, skip_mismatch)
    if _is_h5(path):
        with _h5py().File(path, "r") as f:
            _load_h5_file(f, model, plan)
    elif path.endswith(".keras"):
        with zipfile.ZipFile(path) as archive:
            files = archive.namelist()
            if "model.weights.npz" in files:
                with archive.open("model.weights.npz") as member:
                    names, values = read_npz(io.BytesIO(member.read()), path)
                _load_flat(model, names, values, plan)
            elif "model.weights.h5" in files:
                data = io.BytesIO(archive.read("model.weights.h5"))
                with _h5py().File(data, "r") as f:
                    _load_keras3(f, model, plan)
            else:
                raise InvalidArgumentError(f"load_weights: {path!r} holds no model.weights "
                                           "file")
    else:
        names, values = read_npz(path, path)
        _load_flat(model, names, values, plan)
    plan.apply()


__all__ = ["save_weights", "load_weights", "keras_paths", "own_variables", "write_npz",
           "read_npz"]
