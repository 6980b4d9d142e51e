"""Configs as JSON: layers, models, and the objects their arguments hold.

``serialize(obj)`` turns a value into JSON data and ``deserialize(data)`` turns it back:

- plain values (``None``, booleans, numbers, strings) stay as they are; tuples and lists
  become lists, dicts stay dicts, NumPy scalars become Python numbers;
- objects with ``get_config`` -- layers, models, initializers, regularizers,
  constraints, learning-rate schedules, optimizers, losses, metrics -- become
  ``{"class_name": ..., "module": ..., "config": {...}}`` and are rebuilt with the class's
  ``from_config`` (or its constructor);
- functions (activations, losses, metrics given as functions) become
  ``{"class_name": "function", "module": ..., "config": name}``.

Classes and functions are found by name among xlapy.keras's own (``module`` says which
family) or in ``custom_objects`` (``{name: class or function}``), which takes precedence,
as in Keras. Anonymous functions (lambdas, e.g. of a ``Lambda`` layer) cannot be saved.

``model_config(model)`` / ``model_from_config(data)`` handle ``Sequential`` models (a
list of layer configs and the input shape), functional models (the layers, then the
layer calls in topological order, each naming the calls whose outputs it consumes) and
any other layer or model class with ``get_config`` / ``from_config``.
"""
from __future__ import annotations

import types
from typing import Any, Mapping

import numpy as np

from ..errors import InvalidArgumentError

_TENSOR = "__keras_tensor__"


def _families() -> dict[str, dict[str, Any]]:
    """Name -> class or function, per family (imported lazily: models import us)."""
    from . import (activations, constraints, initializers, layers, losses, metrics, models,
                   optimizers, regularizers)
    from .optimizers import schedules

    def public(module: Any, kinds: tuple = (type,)) -> dict[str, Any]:
        names = getattr(module, "__all__", dir(module))
        return {n: getattr(module, n) for n in names
                if isinstance(getattr(module, n, None), kinds)}
    layer_classes = public(layers)
    layer_classes.update(Sequential=models.Sequential, Functional=models.Functional,
                         Model=models.Functional)
    fns = (types.FunctionType, types.BuiltinFunctionType, type)
    return {
        "layers": layer_classes,
        "initializers": public(initializers),
        "regularizers": public(regularizers),
        "constraints": public(constraints),
        "schedules": public(schedules),
        "optimizers": public(optimizers),
        "losses": public(losses),
        "metrics": public(metrics),
        "activations": {n: activations.get(n) for n in activations._BY_NAME},
        "loss_functions": {k: v for k, v in losses._BY_NAME.items() if isinstance(v, fns)},
        "metric_functions": {k: v for k, v in metrics._BY_NAME.items() if isinstance(v, fns)},
    }


def _family_of(obj: Any) -> str | None:
    from . import constraints, initializers, losses, metrics, optimizers, regularizers
    from .layers.base import Layer
    from .optimizers.schedules import LearningRateSchedule
    for family, base in (("layers", Layer), ("initializers", initializers.Initializer),
                         ("regularizers", regularizers.Regularizer),
                         ("constraints", constraints.Constraint),
                         ("schedules", LearningRateSchedule),
                         ("optimizers", optimizers.Optimizer), ("losses", losses.Loss),
                         ("metrics", metrics.Metric)):
        if isinstance(obj, base):
            return family
    return None


def _function_name(fn: Any) -> tuple[str, str]:
    """``(family, name)`` of a function that can be saved by name."""
    fams = _families()
    for family in ("activations", "loss_functions", "metric_functions"):
        for name, f in fams[family].items():
            if f is fn:
                return family, name
    name = getattr(fn, "__name__", None)
    if not name or name == "<lambda>":
        raise InvalidArgumentError(
            f"cannot save the anonymous function {fn!r}: use a named function, and give it "
            "to load_model(custom_objects={name: function})")
    return "custom", name


def serialize(value: Any) -> Any:
    """JSON data for ``value`` (see the module docstring)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, (list, tuple)):
        return [serialize(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): serialize(v) for k, v in value.items()}
    family = _family_of(value)
    if family is not None or hasattr(value, "get_config"):
        if not hasattr(value, "get_config"):
            raise InvalidArgumentError(f"cannot save {value!r}: it has no get_config()")
        config = model_config(value) if family == "layers" else value.get_config()
        return {"class_name": type(value).__name__, "module": family or "custom",
                "config": serialize(config)}
    if callable(value):
        family, name = _function_name(value)
        return {"class_name": "function", "module": family, "config": name}
    raise InvalidArgumentError(f"cannot save a value of type {type(value).__name__}: "
                               f"{value!r}")


def _lookup(name: str, family: str, custom_objects: Mapping[str, Any] | None) -> Any:
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    found = _families().get(family, {}).get(name)
    if found is None:
        for table in _families().values():       # a custom family or a moved object
            if name in table:
                return table[name]
        raise InvalidArgumentError(
            f"unknown {family} object {name!r} in the saved config; pass it as "
            f"custom_objects={{{name!r}: ...}}")
    return found


def deserialize(data: Any, custom_objects: Mapping[str, Any] | None = None) -> Any:
    """The value that :func:`serialize` encoded as ``data``."""
    if isinstance(data, list):
        return [deserialize(v, custom_objects) for v in data]
    if not isinstance(data, dict):
        return data
    if not {"class_name", "config", "module"} <= set(data):
        return {k: deserialize(v, custom_objects) for k, v in data.items()}
    name, family, config = data["class_name"], data["module"], data["config"]
    if name == "function":
        return _lookup(config, family, custom_objects)
    if family == "layers":
        return model_from_config(data, custom_objects)
    target = _lookup(name, family, custom_objects)
    config = deserialize(config, custom_objects)
    if hasattr(target, "from_config"):
        return target.from_config(config)
    return target(**config)


# ----------------------------------------------------------------------------- models
def model_config(layer: Any) -> dict:
    """The config of a layer or model (Sequential and functional graphs included)."""
    from .models import Functional, Sequential
    if isinstance(layer, Sequential):
        return {"name": layer.name, "trainable": layer.trainable,
                "layers": [serialize(l) for l in layer.layers],
                "build_input_shape": None if layer._declared_input is None
                else list(layer._declared_input)}
    if isinstance(layer, Functional):
        return _functional_config(layer)
    return layer.get_config()


def _functional_config(model: Any) -> dict:
    from .layers.base import InputLayer, KerasTensor
    node_ids = {id(n): i for i, n in enumerate(model._nodes)}

    def encode(x: Any) -> Any:
        if isinstance(x, KerasTensor):
            return {_TENSOR: [node_ids[id(x.node)], x.index]}
        if isinstance(x, (list, tuple)):
            return [encode(v) for v in x]
        if isinstance(x, dict):
            return {k: encode(v) for k, v in x.items()}
        return serialize(x)
    nodes = []
    for node in model._nodes:
        entry: dict = {"layer": node.layer.name}
        if not isinstance(node.layer, InputLayer):
            entry["args"] = encode(node.inputs)
            entry["kwargs"] = serialize(dict(node.kwargs))
        nodes.append(entry)
    return {"name": model.name, "trainable": model.trainable,
            "layers": [serialize(l) for l in model.layers], "nodes": nodes,
            "inputs": encode(model._input_struct), "outputs": encode(model._output_struct)}


def model_from_config(data: dict, custom_objects: Mapping[str, Any] | None = None) -> Any:
    """A new layer or model from ``{"class_name", "config"}`` data."""
    from .models import Functional, Sequential
    cls = _lookup(data["class_name"], "layers", custom_objects)
    config = data["config"]
    if isinstance(cls, type) and issubclass(cls, Sequential):
        model = cls(name=config.get("name"), trainable=config.get("trainable", True))
        for layer in config["layers"]:
            model.add(deserialize(layer, custom_objects))
        if config.get("build_input_shape") is not None and not model.built:
            model.build(tuple(config["build_input_shape"]))
        return model
    if isinstance(cls, type) and issubclass(cls, Functional):
        return _functional_from_config(config, custom_objects)
    config = deserialize(config, custom_objects)
    if hasattr(cls, "from_config"):
        return cls.from_config(config)
    return cls(**config)


def _functional_from_config(config: dict, custom_objects: Mapping[str, Any] | None) -> Any:
    from .layers.base import InputLayer
    from .models import Functional
    by_name = {}
    for entry in config["layers"]:
        layer = deserialize(entry, custom_objects)
        by_name[entry["config"]["name"]] = layer
    outputs: list[list[Any]] = []

    def decode(x: Any) -> Any:
        if isinstance(x, dict) and _TENSOR in x:
            node, index = x[_TENSOR]
            return outputs[node][index]
        if isinstance(x, list):
            return [decode(v) for v in x]
        if isinstance(x, dict):
            return {k: decode(v) for k, v in x.items()}
        return deserialize(x, custom_objects)
    for entry in config["nodes"]:
        layer = by_name.get(entry["layer"])
        if layer is None:
            raise InvalidArgumentError(f"the saved graph calls layer {entry['layer']!r}, "
                                       "which is not among its layers")
        if isinstance(layer, InputLayer):
            outputs.append([layer.output])
            continue
        out = layer(decode(entry["args"]), **deserialize(entry.get("kwargs") or {},
                                                          custom_objects))
        outputs.append(list(out) if isinstance(out, list) else [out])
    return Functional(decode(config["inputs"]), decode(config["outputs"]),
                      name=config.get("name"), trainable=config.get("trainable", True))


__all__ = ["serialize", "deserialize", "model_config", "model_from_config"]
